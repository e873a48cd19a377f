"""The admin client on the wire, against rackafka's fake broker (hostile and rare answers
that a real broker gives seldom or never): what each call sends, how per-topic errors
come back, what is retried and what is raised. The real-Kafka tier
(tests/kafka/test_admin_kafka.py) is the authority on behaviour; these pin the edges."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from rackafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from rackafka.admin.config_resource import ConfigResource
from rackafka.errors import (
    BrokerNotAvailableError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidPartitionsError,
    KafkaProtocolError,
    NotControllerError,
    PolicyViolationError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from rackafka.protocol import frames
from rackafka.protocol.registry import API_BY_KEY
from rackafka.structs import TopicPartition
from rackafka.testing.fake_broker import FakeBroker, FakeRequest


def truncated(api_name: str, response: dict[str, Any]) -> Any:
    """A handler answering ``response`` with its last bytes cut off (the frame's size
    says so: the frame is whole, its body is not)."""

    def handler(_broker: FakeBroker, request: FakeRequest) -> bytes:
        api = next(a for a in API_BY_KEY.values() if a.name == api_name)
        frame = bytearray(
            frames.encode_response(api, request.version, request.correlation_id, response)
        )
        del frame[-3:]
        struct.pack_into(">i", frame, 0, len(frame) - 4)
        return bytes(frame)

    return handler


async def test_create_topics_request_and_per_topic_answers(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "topics": [
                {"name": "a", "error_code": 0, "error_message": None},
                {
                    "name": "b",
                    "error_code": PolicyViolationError.errno,
                    "error_message": "no",
                },
            ],
        }

    broker.handlers["CreateTopics"] = answer
    resp = await admin.create_topics(
        [
            NewTopic("a", 3, 2, topic_configs={"retention.ms": "10"}),
            NewTopic("b", -1, -1, replica_assignments={0: [1, 2]}),
        ],
        timeout_ms=1234,
        validate_only=True,
    )
    assert resp.topic_errors == [("a", 0, None), ("b", PolicyViolationError.errno, "no")]
    [sent] = [r for r in broker.requests if r.api_name == "CreateTopics"]
    body = sent.body
    assert (body.timeout_ms, body.validate_only) == (1234, True)
    a, b = body.topics
    assert (a.name, a.num_partitions, a.replication_factor) == ("a", 3, 2)
    assert [(c.name, c.value) for c in a.configs] == [("retention.ms", "10")]
    assert (b.num_partitions, b.replication_factor) == (-1, -1)
    assert [(x.partition_index, list(x.broker_ids)) for x in b.assignments] == [(0, [1, 2])]


async def test_not_controller_goes_again_once(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    codes = [NotControllerError.errno, 0]

    def answer(_b: FakeBroker, _r: FakeRequest) -> dict[str, Any]:
        return {"responses": [{"name": "x", "error_code": codes.pop(0)}]}

    broker.handlers["DeleteTopics"] = answer
    resp = await admin.delete_topics(["x"])
    assert resp.topic_error_codes == [("x", 0)]
    assert broker.count("DeleteTopics") == 2


async def test_create_partitions_raises_the_topic_error(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [topic] = request.body.topics
        assert (topic.name, topic.count) == ("t", 4)
        assert [list(a.broker_ids) for a in topic.assignments] == [[1], [1]]
        return {
            "results": [
                {"name": "t", "error_code": InvalidPartitionsError.errno, "error_message": "x"}
            ]
        }

    broker.handlers["CreatePartitions"] = answer
    with pytest.raises(InvalidPartitionsError, match="Could not create partitions for t"):
        await admin.create_partitions({"t": NewPartitions(4, [[1], [1]])})


async def test_a_truncated_answer_raises_the_protocol_error(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    broker.handlers["CreateTopics"] = truncated(
        "CreateTopics",
        {"topics": [{"name": "a", "error_code": 0, "error_message": "some text here"}]},
    )
    with pytest.raises(KafkaProtocolError):
        await admin.create_topics([NewTopic("a", 1, 1)])
    assert broker.count("CreateTopics") == 1  # not sent again


async def test_find_coordinator_retries_then_raises_the_broker_error(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def unavailable(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        code = CoordinatorNotAvailableError.errno
        return {
            "error_code": code,
            "node_id": -1,
            "host": "",
            "port": -1,
            "coordinators": [
                {"key": "g", "node_id": -1, "host": "", "port": -1, "error_code": code}
            ],
        }

    broker.handlers["FindCoordinator"] = unavailable
    with pytest.raises(CoordinatorNotAvailableError):
        await admin.find_coordinator("g")
    assert broker.count("FindCoordinator") > 1  # retried within request_timeout_ms
    del broker.handlers["FindCoordinator"]
    assert await admin.find_coordinator("g") == 1


async def test_list_group_offsets_raises_a_group_error(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        code = GroupAuthorizationFailedError.errno
        return {"error_code": code, "groups": [{"group_id": "g", "error_code": code}]}

    broker.handlers["OffsetFetch"] = answer
    with pytest.raises(GroupAuthorizationFailedError):
        await admin.list_consumer_group_offsets("g", partitions=[TopicPartition("t", 0)])


async def test_delete_records_goes_to_the_leader_and_raises_per_partition(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [topic] = request.body.topics
        return {
            "topics": [
                {
                    "name": topic.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "low_watermark": p.offset,
                            "error_code": 0
                            if p.partition_index == 0
                            else TopicAuthorizationFailedError.errno,
                        }
                        for p in topic.partitions
                    ],
                }
            ]
        }

    broker.handlers["DeleteRecords"] = answer
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert await admin.delete_records({tp0: RecordsToDelete(7)}) == {tp0: 7}
    with pytest.raises(TopicAuthorizationFailedError):
        await admin.delete_records({tp0: RecordsToDelete(7), tp1: RecordsToDelete(3)})
    # A partition or topic that does not exist: raised at once, not retried.
    for missing in (TopicPartition("t", 5), TopicPartition("nope", 0)):
        before = broker.count("Metadata")
        with pytest.raises(UnknownTopicOrPartitionError, match=str(missing.partition)):
            await admin.delete_records({missing: RecordsToDelete(1)})
        assert broker.count("Metadata") == before + 1


async def test_config_requests(broker: FakeBroker, admin: AIOKafkaAdminClient) -> None:
    seen: list[Any] = []

    def describe(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        seen.append(request.body)
        return {
            "results": [
                {
                    "error_code": 0,
                    "resource_type": r.resource_type,
                    "resource_name": r.resource_name,
                    "configs": [
                        {
                            "name": "cleanup.policy",
                            "value": "delete",
                            "config_source": 5,
                            "synonyms": [{"name": "log.cleanup.policy", "value": "delete"}],
                        }
                    ],
                }
                for r in request.body.resources
            ]
        }

    broker.handlers["DescribeConfigs"] = describe
    answers = await admin.describe_configs(
        [ConfigResource("broker", 1), ConfigResource("topic", "t", {"cleanup.policy": None})],
        include_synonyms=True,
    )
    assert [a.resources[0][3] for a in answers] == ["1", "t"]
    entry = answers[1].resources[0].config_entries[0]
    assert entry[:2] == ("cleanup.policy", "delete")
    assert entry.config_synonyms[0][:2] == ("log.cleanup.policy", "delete")
    broker_req, topic_req = seen
    assert broker_req.resources[0].configuration_keys is None
    assert list(topic_req.resources[0].configuration_keys) == ["cleanup.policy"]
    assert topic_req.include_synonyms is True
    assert answers[1].to_object()["resources"][0]["config_entries"][0]["config_names"] == (
        "cleanup.policy"
    )


async def test_alter_configs_waits_until_the_broker_shows_the_values(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    shown = ["delete", "delete", "compact"]

    def alter(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [res] = request.body.resources
        assert [(c.name, c.value) for c in res.configs] == [("cleanup.policy", "compact")]
        return {
            "responses": [{"error_code": 0, "resource_type": 2, "resource_name": res.resource_name}]
        }

    def describe(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [res] = request.body.resources
        return {
            "results": [
                {
                    "error_code": 0,
                    "resource_type": 2,
                    "resource_name": res.resource_name,
                    "configs": [{"name": "cleanup.policy", "value": shown.pop(0)}],
                }
            ]
        }

    broker.handlers["AlterConfigs"] = alter
    broker.handlers["DescribeConfigs"] = describe
    [resp] = await admin.alter_configs(
        [ConfigResource("topic", "t", {"cleanup.policy": "compact"})]
    )
    assert resp.resources == [(0, None, 2, "t")]
    assert shown == [] and broker.count("DescribeConfigs") == 3


async def test_a_broker_not_in_the_cluster_is_refused_at_once(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    before = broker.count("Metadata")
    with pytest.raises(BrokerNotAvailableError, match="broker 9"):
        await admin.describe_configs([ConfigResource("broker", 9)])
    with pytest.raises(BrokerNotAvailableError, match="broker 9"):
        await admin.list_consumer_groups([9])
    assert broker.count("Metadata") - before == 2  # one refresh each, no retries
