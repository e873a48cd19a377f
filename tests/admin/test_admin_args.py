"""The admin client's argument checks: invalid arguments raise at the call (or when the
argument object is made), naming the argument, before anything is sent; and the shapes
of the answers (aiokafka's: attributes, tuples, ``to_object()``)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import rackafka
from rackafka.admin import (
    AIOKafkaAdminClient,
    ConfigResource,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    RecordsToDelete,
)
from rackafka.admin.responses import Response, TopicError
from rackafka.errors import IllegalArgumentError, IllegalStateError, KafkaConfigurationError
from rackafka.structs import TopicPartition


def test_importable_from_both_paths() -> None:
    assert rackafka.AIOKafkaAdminClient is AIOKafkaAdminClient
    from rackafka.admin import config_resource, new_partitions, new_topic, records_to_delete

    assert config_resource.ConfigResource is ConfigResource
    assert new_partitions.NewPartitions is NewPartitions
    assert new_topic.NewTopic is NewTopic
    assert records_to_delete.RecordsToDelete is RecordsToDelete


# -- the argument types ------------------------------------------------------------------


def test_new_topic_needs_counts_or_assignments() -> None:
    t = NewTopic("t", 3, 2, topic_configs={"cleanup.policy": "compact"})
    assert (t.num_partitions, t.replication_factor, t.replica_assignments) == (3, 2, {})
    assert t.topic_configs == {"cleanup.policy": "compact"}
    a = NewTopic("t", -1, -1, replica_assignments={0: [1, 2], 1: [2, 3]})
    assert a.replica_assignments == {0: [1, 2], 1: [2, 3]}
    with pytest.raises(IllegalArgumentError):
        NewTopic("t", 3, 2, replica_assignments={0: [1]})
    with pytest.raises(IllegalArgumentError):
        NewTopic("t", -1, -1)


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "named"),
    [
        ((None, 1, 1), {}, TypeError, "name"),
        (("", 1, 1), {}, TypeError, "name"),
        (("t", "3", 1), {}, TypeError, "num_partitions"),
        (("t", 0, 1), {}, ValueError, "num_partitions"),
        (("t", 1, -2), {}, ValueError, "replication_factor"),
        (("t", 1, True), {}, TypeError, "replication_factor"),
        (("t", -1, -1), {"replica_assignments": [[1]]}, TypeError, "replica_assignments"),
        (("t", -1, -1), {"replica_assignments": {0: 1}}, TypeError, "replica_assignments"),
        (("t", 1, 1), {"topic_configs": {"retention.ms": 1000}}, TypeError, "topic_configs"),
        (("t", 1, 1), {"topic_configs": ["a"]}, TypeError, "topic_configs"),
    ],
)
def test_new_topic_refuses(args: Any, kwargs: Any, exc: type[Exception], named: str) -> None:
    with pytest.raises(exc, match=named):
        NewTopic(*args, **kwargs)


def test_new_partitions_and_records_to_delete() -> None:
    assert NewPartitions(4).total_count == 4
    assert NewPartitions(4, [[1, 2]]).new_assignments == [[1, 2]]
    with pytest.raises(TypeError, match="total_count"):
        NewPartitions("4")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="total_count"):
        NewPartitions(0)
    with pytest.raises(TypeError, match="new_assignments"):
        NewPartitions(4, [1, 2])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="new_assignments"):
        NewPartitions(4, [["1"]])  # type: ignore[list-item]
    assert RecordsToDelete(10).before_offset == 10
    assert RecordsToDelete(-1).before_offset == -1
    with pytest.raises(TypeError, match="before_offset"):
        RecordsToDelete(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="before_offset"):
        RecordsToDelete(-2)


def test_config_resource_takes_the_type_or_its_name() -> None:
    assert ConfigResource("topic", "t").resource_type is ConfigResourceType.TOPIC
    assert ConfigResource("BROKER", 1).resource_type is ConfigResourceType.BROKER
    assert ConfigResourceType.TOPIC == 2 and ConfigResourceType.BROKER == 4
    with pytest.raises(KeyError, match="resource_type"):
        ConfigResource("group", "g")
    with pytest.raises(TypeError, match="configs"):
        ConfigResource("topic", "t", ["a"])  # type: ignore[arg-type]


# -- the client ----------------------------------------------------------------------------


def test_constructor_checks_with_the_settings_table() -> None:
    with pytest.raises(KafkaConfigurationError, match="request_timeout_ms"):
        AIOKafkaAdminClient(request_timeout_ms=-1)
    with pytest.raises(KafkaConfigurationError, match="bootstrap_servers"):
        AIOKafkaAdminClient(bootstrap_servers="host:notaport")
    with pytest.raises(KafkaConfigurationError, match="security_protocol"):
        AIOKafkaAdminClient(security_protocol="TLS")
    with pytest.raises(TypeError):
        AIOKafkaAdminClient(group_id="g")  # type: ignore[call-arg]


def test_same_parameters_as_aiokafka() -> None:
    aiokafka_admin = pytest.importorskip("aiokafka.admin", reason="aiokafka is the reference")
    theirs_cls = aiokafka_admin.AIOKafkaAdminClient
    ours = inspect.signature(AIOKafkaAdminClient.__init__).parameters
    theirs = inspect.signature(theirs_cls.__init__).parameters
    assert list(ours) == list(theirs)
    public = {n for n in dir(theirs_cls) if not n.startswith("_")}
    assert public <= set(dir(AIOKafkaAdminClient))
    for name in public:
        a = inspect.signature(getattr(AIOKafkaAdminClient, name)).parameters
        b = inspect.signature(getattr(theirs_cls, name)).parameters
        assert list(a) == list(b), name
        for p in b:
            assert a[p].default == b[p].default, (name, p)


async def test_calls_before_start_and_after_close_raise() -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:1")
    with pytest.raises(IllegalStateError, match="start"):
        await admin.list_topics()
    await admin.close()
    await admin.close()  # again: nothing
    with pytest.raises(IllegalStateError, match="closed"):
        await admin.start()
    with pytest.raises(IllegalStateError, match="closed"):
        await admin.create_topics([NewTopic("t", 1, 1)])


def _admin() -> AIOKafkaAdminClient:
    # Never started: an argument error must come before the check that it runs.
    return AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:1")


@pytest.mark.parametrize(
    ("method", "args", "exc", "named"),
    [
        ("create_topics", (NewTopic("t", 1, 1),), TypeError, "new_topics"),
        ("create_topics", (["t"],), TypeError, "new_topics"),
        ("create_topics", ([NewTopic("t", 1, 1)], -5), ValueError, "timeout_ms"),
        ("create_topics", ([NewTopic("t", 1, 1)], "5"), TypeError, "timeout_ms"),
        ("create_topics", ([NewTopic("t", 1, 1)], None, "yes"), TypeError, "validate_only"),
        ("delete_topics", ("topic",), TypeError, "topics"),
        ("delete_topics", ([""],), ValueError, "topics"),
        ("delete_topics", (["t"], 2**31), ValueError, "timeout_ms"),
        ("describe_topics", ("topic",), TypeError, "topics"),
        ("describe_topics", ([1],), TypeError, "topics"),
        ("create_partitions", ([NewPartitions(2)],), TypeError, "topic_partitions"),
        ("create_partitions", ({"t": 2},), TypeError, "topic_partitions"),
        ("create_partitions", ({1: NewPartitions(2)},), TypeError, "topic_partitions"),
        ("describe_configs", (ConfigResource("topic", "t"),), TypeError, "config_resources"),
        ("describe_configs", ([("topic", "t")],), TypeError, "config_resources"),
        (
            "describe_configs",
            ([ConfigResource("broker", "one")],),
            ValueError,
            "config_resources",
        ),
        (
            "describe_configs",
            ([ConfigResource("topic", "t")], 1),
            TypeError,
            "include_synonyms",
        ),
        (
            "alter_configs",
            ([ConfigResource("topic", "t", {"retention.ms": 1000})],),
            TypeError,
            "config_resources",
        ),
        ("alter_configs", ([ConfigResource("topic", "t")],), ValueError, "config_resources"),
        ("find_coordinator", (1,), TypeError, "group_id"),
        ("find_coordinator", ("g", 2), ValueError, "coordinator_type"),
        ("list_consumer_groups", ("1",), TypeError, "broker_ids"),
        ("describe_consumer_groups", ("g",), TypeError, "group_ids"),
        ("describe_consumer_groups", (["g"], "1"), TypeError, "group_coordinator_id"),
        ("list_consumer_group_offsets", (None,), TypeError, "group_id"),
        ("list_consumer_group_offsets", ("g", None, [("t", "0")]), TypeError, "partitions"),
        ("list_consumer_group_offsets", ("g", None, [("t", -1)]), ValueError, "partitions"),
        ("delete_records", ([TopicPartition("t", 0)],), TypeError, "records_to_delete"),
        ("delete_records", ({TopicPartition("t", 0): 5},), TypeError, "records_to_delete"),
        ("delete_records", ({"t": RecordsToDelete(5)},), TypeError, "records_to_delete"),
        (
            "delete_records",
            ({TopicPartition("t", 0): RecordsToDelete(5)}, -1),
            ValueError,
            "timeout_ms",
        ),
    ],
)
async def test_invalid_arguments_raise_at_the_call(
    method: str, args: tuple[Any, ...], exc: type[Exception], named: str
) -> None:
    admin = _admin()
    with pytest.raises(exc, match=named):
        await getattr(admin, method)(*args)
    await admin.close()


def test_response_shape() -> None:
    r = Response(
        "CreateTopicsResponse", throttle_time_ms=0, topic_errors=[TopicError("t", 0, None)]
    )
    topic, code, message = r.topic_errors[0]
    assert (topic, code, message) == ("t", 0, None)
    assert r.topic_errors[0].error_code == 0
    assert r.to_object() == {
        "throttle_time_ms": 0,
        "topic_errors": [{"topic": "t", "error_code": 0, "error_message": None}],
    }
    assert "topic_errors" in repr(r)
    with pytest.raises(AttributeError, match="nothing"):
        _ = r.nothing
