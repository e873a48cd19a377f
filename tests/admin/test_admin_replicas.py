"""The admin client's replica, log directory, election and incremental config calls:
argument checks (raised at the call, naming the argument, before anything is sent), and
on rackafka's fake broker what is sent and how per-partition and per-resource answers
come back. The real-Kafka tier (tests/kafka/test_admin_replicas_kafka.py) is the
authority on behaviour; these pin the edges a real broker seldom gives."""

from __future__ import annotations

from typing import Any

import pytest

from rackafka.admin import (
    AIOKafkaAdminClient,
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ElectionType,
    LogDirDescription,
    PartitionReassignment,
    ReplicaInfo,
)
from rackafka.errors import (
    BrokerNotAvailableError,
    ClusterAuthorizationFailedError,
    ElectionNotNeededError,
    InvalidConfigurationError,
    InvalidReplicationAssignmentError,
    KafkaStorageError,
    NoReassignmentInProgressError,
    NotControllerError,
    PreferredLeaderNotAvailableError,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
)
from rackafka.protocol.registry import API_BY_KEY
from rackafka.structs import TopicPartition
from rackafka.testing.fake_broker import FakeBroker, FakeRequest

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


# -- argument checks -----------------------------------------------------------------------


def _admin() -> AIOKafkaAdminClient:
    # Never started: an argument error must come before the check that it runs.
    return AIOKafkaAdminClient(bootstrap_servers="127.0.0.1:1")


@pytest.mark.parametrize(
    ("method", "args", "exc", "named"),
    [
        ("describe_log_dirs", (1,), TypeError, "broker_ids"),
        ("describe_log_dirs", (["1"],), TypeError, "broker_ids"),
        ("describe_log_dirs", ([-1],), ValueError, "broker_ids"),
        ("alter_partition_reassignments", ([TP0],), TypeError, "reassignments"),
        ("alter_partition_reassignments", ({"t": [1]},), TypeError, "reassignments"),
        ("alter_partition_reassignments", ({TP0: 1},), TypeError, r"reassignments\[.*t"),
        ("alter_partition_reassignments", ({TP0: ["1"]},), TypeError, "reassignments"),
        ("alter_partition_reassignments", ({TP0: []},), ValueError, r"reassignments\[.*empty"),
        ("alter_partition_reassignments", ({TP0: [1, 1]},), ValueError, "twice"),
        ("alter_partition_reassignments", ({TP0: [-1]},), ValueError, "reassignments"),
        ("alter_partition_reassignments", ({TP0: [1]}, -1), ValueError, "timeout_ms"),
        ("cancel_partition_reassignments", (TP0,), TypeError, "partitions"),
        ("cancel_partition_reassignments", ([("t", "0")],), TypeError, "partitions"),
        ("list_partition_reassignments", ("t",), TypeError, "partitions"),
        ("list_partition_reassignments", (None, "5"), TypeError, "timeout_ms"),
        ("elect_leaders", (0, [TP0]), TypeError, "election_type"),
        ("elect_leaders", ("PREFERRED", [TP0]), TypeError, "election_type"),
        ("elect_leaders", (ElectionType.PREFERRED, TP0), TypeError, "partitions"),
        ("elect_leaders", (ElectionType.PREFERRED, [("t", -1)]), ValueError, "partitions"),
        ("elect_leaders", (ElectionType.PREFERRED, None, 2**31), ValueError, "timeout_ms"),
        ("incremental_alter_configs", ([ConfigResource("topic", "t")],), TypeError, "configs"),
        ("incremental_alter_configs", ({"t": []},), TypeError, "configs"),
        (
            "incremental_alter_configs",
            ({ConfigResource("topic", "t"): AlterConfigOp("a", "1")},),
            TypeError,
            "configs",
        ),
        (
            "incremental_alter_configs",
            ({ConfigResource("topic", "t"): [("a", "1")]},),
            TypeError,
            "configs",
        ),
        (
            "incremental_alter_configs",
            ({ConfigResource("topic", "t", {"a": "1"}): []},),
            ValueError,
            "configs.*AlterConfigOp",
        ),
        (
            "incremental_alter_configs",
            ({ConfigResource("broker", "one"): []},),
            ValueError,
            "configs",
        ),
        (
            "incremental_alter_configs",
            ({ConfigResource("topic", "t"): [], ConfigResource("topic", "t"): []},),
            ValueError,
            "configs names TOPIC 't' twice",
        ),
        (
            "incremental_alter_configs",
            ({ConfigResource("topic", "t"): []}, "no"),
            TypeError,
            "validate_only",
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


def test_alter_config_op_checks_its_arguments() -> None:
    assert AlterConfigOp("a", "1") == AlterConfigOp("a", "1", AlterConfigOpType.SET)
    assert AlterConfigOp("a", op=AlterConfigOpType.DELETE).value is None
    with pytest.raises(TypeError, match="name"):
        AlterConfigOp("", "1")
    with pytest.raises(TypeError, match="value"):
        AlterConfigOp("a", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="value"):
        AlterConfigOp("a", None, AlterConfigOpType.APPEND)
    with pytest.raises(ValueError, match="value"):
        AlterConfigOp("a", "1", AlterConfigOpType.DELETE)
    with pytest.raises(TypeError, match="op"):
        AlterConfigOp("a", "1", 0)  # type: ignore[arg-type]


# -- on the fake broker --------------------------------------------------------------------


def partitions_answer(codes: dict[TopicPartition, int]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, code in codes.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "error_code": code, "error_message": f"m{code}"}
        )
    return {"responses": [{"name": t, "partitions": ps} for t, ps in topics.items()]}


async def test_reassignments_request_and_per_partition_errors(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [topic] = request.body.topics
        assert topic.name == "t" and request.body.timeout_ms == 1234
        assert [(p.partition_index, p.replicas) for p in topic.partitions] == [
            (0, [2, 3]),
            (1, None),
        ]
        # A retriable error of one partition and a refusal of the other: the refusal
        # is raised, naming its partition, and the other is named too.
        return partitions_answer(
            {TP0: RequestTimedOutError.errno, TP1: NoReassignmentInProgressError.errno}
        )

    broker.handlers["AlterPartitionReassignments"] = answer
    with pytest.raises(NoReassignmentInProgressError, match=r"partition=1.*m85") as info:
        await admin.alter_partition_reassignments({TP0: [2, 3], TP1: None}, timeout_ms=1234)
    assert "partition=0): RequestTimedOutError" in str(info.value)
    assert broker.count("AlterPartitionReassignments") == 1  # not sent again

    broker.handlers["AlterPartitionReassignments"] = lambda _b, _r: partitions_answer({TP0: 0})
    await admin.alter_partition_reassignments({TP0: [2]})
    await admin.alter_partition_reassignments({})  # nothing: nothing sent
    assert broker.count("AlterPartitionReassignments") == 2


async def test_cancel_sends_null_replicas(broker: FakeBroker, admin: AIOKafkaAdminClient) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [topic] = request.body.topics
        assert [(p.partition_index, p.replicas) for p in topic.partitions] == [(0, None)]
        return partitions_answer({TP0: InvalidReplicationAssignmentError.errno})

    broker.handlers["AlterPartitionReassignments"] = answer
    with pytest.raises(InvalidReplicationAssignmentError, match="partition=0"):
        await admin.cancel_partition_reassignments([TP0])


async def test_reassignments_not_controller_goes_again_once_and_top_level_errors(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    codes = [NotControllerError.errno, 0]

    def answer(_b: FakeBroker, _r: FakeRequest) -> dict[str, Any]:
        code = codes.pop(0)
        return {"error_code": code, **partitions_answer({TP0: code})}

    broker.handlers["AlterPartitionReassignments"] = answer
    await admin.alter_partition_reassignments({TP0: [1]})
    assert broker.count("AlterPartitionReassignments") == 2

    broker.handlers["AlterPartitionReassignments"] = lambda _b, _r: {
        "error_code": ClusterAuthorizationFailedError.errno,
        "error_message": "denied",
    }
    with pytest.raises(ClusterAuthorizationFailedError, match="denied"):
        await admin.alter_partition_reassignments({TP0: [1]})


async def test_list_partition_reassignments(broker: FakeBroker, admin: AIOKafkaAdminClient) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        wanted = request.body.topics
        if wanted is not None:
            assert [(t.name, list(t.partition_indexes)) for t in wanted] == [("t", [1, 0])]
        return {
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 1,
                            "replicas": [1, 2, 3],
                            "adding_replicas": [3],
                            "removing_replicas": [1],
                        }
                    ],
                }
            ]
        }

    broker.handlers["ListPartitionReassignments"] = answer
    expected = {TP1: PartitionReassignment([1, 2, 3], [3], [1])}
    assert await admin.list_partition_reassignments() == expected
    assert await admin.list_partition_reassignments([TP1, TP0]) == expected
    assert await admin.list_partition_reassignments([]) == {}
    broker.handlers["ListPartitionReassignments"] = lambda _b, _r: {
        "error_code": ClusterAuthorizationFailedError.errno
    }
    with pytest.raises(ClusterAuthorizationFailedError):
        await admin.list_partition_reassignments()


def election_answer(codes: dict[TopicPartition, int], top: int = 0) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, code in codes.items():
        topics.setdefault(tp.topic, []).append(
            {"partition_id": tp.partition, "error_code": code, "error_message": f"m{code}"}
        )
    return {
        "error_code": top,
        "replica_election_results": [
            {"topic": t, "partition_result": ps} for t, ps in topics.items()
        ],
    }


async def test_elect_leaders_not_needed_is_success(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        assert request.body.election_type == ElectionType.UNCLEAN
        [topic] = request.body.topic_partitions
        assert (topic.topic, list(topic.partitions)) == ("t", [0, 1])
        return election_answer({TP0: 0, TP1: ElectionNotNeededError.errno})

    broker.handlers["ElectLeaders"] = answer
    result = await admin.elect_leaders(ElectionType.UNCLEAN, [TP0, TP1], timeout_ms=500)
    assert result == {TP0: None, TP1: ElectionNotNeededError}
    [sent] = [r for r in broker.requests if r.api_name == "ElectLeaders"]
    assert sent.body.timeout_ms == 500


async def test_elect_leaders_raises_partition_errors_naming_them(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        assert request.body.topic_partitions is None  # every partition
        return election_answer(
            {
                TP0: ElectionNotNeededError.errno,
                TP1: PreferredLeaderNotAvailableError.errno,
                TopicPartition("u", 0): UnknownTopicOrPartitionError.errno,
            }
        )

    broker.handlers["ElectLeaders"] = answer
    with pytest.raises(PreferredLeaderNotAvailableError, match=r"'t', partition=1.*m80") as info:
        await admin.elect_leaders(ElectionType.PREFERRED)
    assert "'u', partition=0): UnknownTopicOrPartitionError" in str(info.value)
    assert "partition=0): ElectionNotNeeded" not in str(info.value)

    broker.handlers["ElectLeaders"] = lambda _b, _r: election_answer(
        {}, ClusterAuthorizationFailedError.errno
    )
    with pytest.raises(ClusterAuthorizationFailedError, match="ElectLeaders"):
        await admin.elect_leaders(ElectionType.PREFERRED, [TP0])


def log_dirs_answer(version_4: bool) -> dict[str, Any]:
    extra = {"total_bytes": 1000, "usable_bytes": 400} if version_4 else {}
    return {
        "results": [
            {
                "error_code": 0,
                "log_dir": "/data/a",
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {
                                "partition_index": 1,
                                "partition_size": 77,
                                "offset_lag": 3,
                                "is_future_key": True,
                            }
                        ],
                    }
                ],
                **extra,
            },
            {"error_code": KafkaStorageError.errno, "log_dir": "/data/b", "topics": [], **extra},
        ]
    }


@pytest.mark.parametrize("max_version", [4, 3, 1])
async def test_describe_log_dirs_by_version(
    broker: FakeBroker, admin: AIOKafkaAdminClient, max_version: int
) -> None:
    def versions(_b: FakeBroker, _r: FakeRequest) -> dict[str, Any]:
        keys = [
            {
                "api_key": api.key,
                "min_version": api.min_version,
                "max_version": max_version if api.name == "DescribeLogDirs" else api.max_version,
            }
            for api in API_BY_KEY.values()
        ]
        return {"error_code": 0, "api_keys": keys}

    broker.handlers["ApiVersions"] = versions
    await admin.close()
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    await admin.start()
    try:
        broker.handlers["DescribeLogDirs"] = lambda _b, _r: log_dirs_answer(max_version >= 4)
        answer = await admin.describe_log_dirs()
    finally:
        await admin.close()
    [sent] = [r for r in broker.requests if r.api_name == "DescribeLogDirs"]
    assert sent.version == max_version and sent.body.topics is None
    sizes = (1000, 400) if max_version >= 4 else (None, None)
    assert answer == {
        1: {
            "/data/a": LogDirDescription(None, {TP1: ReplicaInfo(77, 3, True)}, sizes[0], sizes[1]),
            "/data/b": LogDirDescription(KafkaStorageError, {}, sizes[0], sizes[1]),
        }
    }


async def test_describe_log_dirs_top_level_error_and_unknown_broker(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    broker.handlers["DescribeLogDirs"] = lambda _b, _r: {
        "error_code": ClusterAuthorizationFailedError.errno
    }
    with pytest.raises(ClusterAuthorizationFailedError, match="broker 1"):
        await admin.describe_log_dirs([1])
    with pytest.raises(BrokerNotAvailableError, match="broker 5 is not in the cluster"):
        await admin.describe_log_dirs([1, 5])


async def test_incremental_alter_configs_request_and_per_resource_errors(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        assert request.body.validate_only is True
        out = []
        for r in request.body.resources:
            ops = [(c.name, c.config_operation, c.value) for c in r.configs]
            if r.resource_type == 2:
                assert ops == [("a", 0, "1"), ("b", 1, None), ("c", 2, "x,y"), ("d", 3, "z")]
                code = InvalidConfigurationError.errno
            else:
                assert (r.resource_name, ops) == ("1", [("e", 0, "2")])
                code = 0
            out.append(
                {
                    "error_code": code,
                    "error_message": "bad" if code else None,
                    "resource_type": r.resource_type,
                    "resource_name": r.resource_name,
                }
            )
        return {"responses": out}

    broker.handlers["IncrementalAlterConfigs"] = answer
    ops = [
        AlterConfigOp("a", "1"),
        AlterConfigOp("b", op=AlterConfigOpType.DELETE),
        AlterConfigOp("c", "x,y", AlterConfigOpType.APPEND),
        AlterConfigOp("d", "z", AlterConfigOpType.SUBTRACT),
    ]
    with pytest.raises(InvalidConfigurationError, match="topic 't': bad"):
        await admin.incremental_alter_configs(
            {
                ConfigResource("topic", "t"): ops,
                ConfigResource("broker", 1): [AlterConfigOp("e", "2")],
            },
            validate_only=True,
        )
    # The topic resource to any broker, the broker resource to its broker (here both the
    # one broker): two requests, both answered before the error was raised.
    assert broker.count("IncrementalAlterConfigs") == 2
    assert broker.count("DescribeConfigs") == 0  # validate_only: nothing to wait for


async def test_incremental_alter_configs_waits_until_the_broker_shows_the_changes(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    broker.handlers["IncrementalAlterConfigs"] = lambda _b, request: {
        "responses": [
            {"resource_type": r.resource_type, "resource_name": r.resource_name}
            for r in request.body.resources
        ]
    }
    # (value, source) of a, b, c, d as the broker describes them: stale twice, then changed.
    views = [
        {"a": ("0", 1), "b": ("9", 1), "c": ("x", 1), "d": ("z,w", 1)},
        {"a": ("1", 1), "b": ("9", 1), "c": ("x,y", 1), "d": ("w", 1)},  # b still set
        {"a": ("1", 1), "b": ("5", 5), "c": ("x,y", 1), "d": ("w", 1)},
    ]

    def describe(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [res] = request.body.resources
        assert sorted(res.configuration_keys) == ["a", "b", "c", "d"]
        view = views.pop(0) if len(views) > 1 else views[0]
        return {
            "results": [
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [
                        {"name": k, "value": v, "config_source": src}
                        for k, (v, src) in view.items()
                    ],
                }
            ]
        }

    broker.handlers["DescribeConfigs"] = describe
    await admin.incremental_alter_configs(
        {
            ConfigResource("topic", "t"): [
                AlterConfigOp("a", "1"),
                AlterConfigOp("b", op=AlterConfigOpType.DELETE),
                AlterConfigOp("c", "y", AlterConfigOpType.APPEND),
                AlterConfigOp("d", "z", AlterConfigOpType.SUBTRACT),
            ]
        }
    )
    assert broker.count("DescribeConfigs") == 3
