"""The admin calls beyond aiokafka's (Java's ``Admin``: list_offsets, the group deletions,
altering and deleting committed offsets, describe_groups) against rackafka's fake broker:
the arguments checked naming them, what each call sends and to whom, how per-group and
per-partition errors come back, what is retried. The real-Kafka tier
(tests/kafka/test_admin_groups_kafka.py) is the authority on behaviour."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from rackafka.admin import (
    AIOKafkaAdminClient,
    ConsumerGroupDescription,
    ListOffsetsResultInfo,
    MemberDescription,
    OffsetSpec,
)
from rackafka.errors import (
    CoordinatorLoadInProgressError,
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    NotCoordinatorError,
    NotLeaderForPartitionError,
    TopicAuthorizationFailedError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from rackafka.protocol.apis import consumer_protocol
from rackafka.protocol.registry import API_BY_KEY
from rackafka.structs import OffsetAndMetadata, TopicPartition
from rackafka.testing.fake_broker import FakeBroker, FakeRequest

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


# -- arguments -----------------------------------------------------------------------------


def test_offset_spec() -> None:
    assert OffsetSpec.earliest().timestamp == -2
    assert OffsetSpec.latest().timestamp == -1
    assert OffsetSpec.max_timestamp().timestamp == -3
    assert OffsetSpec.for_timestamp(1234).timestamp == 1234
    assert OffsetSpec.for_timestamp(5) == OffsetSpec.for_timestamp(5)
    assert repr(OffsetSpec.latest()) == "OffsetSpec.latest()"
    assert repr(OffsetSpec.for_timestamp(7)) == "OffsetSpec.for_timestamp(7)"
    with pytest.raises(TypeError, match="timestamp_ms"):
        OffsetSpec.for_timestamp("1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timestamp_ms"):
        OffsetSpec.for_timestamp(-1)
    info = ListOffsetsResultInfo(3, 10, None)
    assert (info.offset, info.timestamp, info.leader_epoch) == (3, 10, None)


BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], type[Exception], str]] = [
    ("list_offsets", ([TP0],), {}, TypeError, "topic_partitions"),
    ("list_offsets", ({"t": OffsetSpec.latest()},), {}, TypeError, "topic_partitions"),
    ("list_offsets", ({TP0: -1},), {}, TypeError, "topic_partitions"),
    ("list_offsets", ({TP0: OffsetSpec.latest()},), {"isolation_level": 1}, TypeError, "isolation"),
    (
        "list_offsets",
        ({TP0: OffsetSpec.latest()},),
        {"isolation_level": "committed"},
        ValueError,
        "isolation_level",
    ),
    ("delete_consumer_groups", ("g",), {}, TypeError, "group_ids"),
    ("delete_consumer_groups", ([""],), {}, ValueError, "group_ids"),
    ("delete_consumer_groups", (["g"], "1"), {}, TypeError, "group_coordinator_id"),
    ("alter_consumer_group_offsets", (None, {TP0: 1}), {}, TypeError, "group_id"),
    ("alter_consumer_group_offsets", ("", {TP0: 1}), {}, ValueError, "group_id"),
    ("alter_consumer_group_offsets", ("g", [TP0]), {}, TypeError, "offsets"),
    ("alter_consumer_group_offsets", ("g", {TP0: "1"}), {}, TypeError, "offsets"),
    ("alter_consumer_group_offsets", ("g", {TP0: -1}), {}, ValueError, "offsets"),
    ("alter_consumer_group_offsets", ("g", {TP0: (1, 2)}), {}, TypeError, "metadata"),
    ("alter_consumer_group_offsets", ("g", {("t", -1): 1}), {}, ValueError, "offsets"),
    ("alter_consumer_group_offsets", ("g", {TP0: 1}, -1), {}, ValueError, "group_coordinator"),
    ("delete_consumer_group_offsets", (1, [TP0]), {}, TypeError, "group_id"),
    ("delete_consumer_group_offsets", ("g", TP0), {}, TypeError, "partitions"),
    ("delete_consumer_group_offsets", ("g", ["t"]), {}, TypeError, "partitions"),
    ("describe_groups", ("g",), {}, TypeError, "group_ids"),
    ("describe_groups", ([1],), {}, TypeError, "group_ids"),
]


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "exc", "named"),
    BAD_CALLS,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)],
)
async def test_invalid_arguments_raise_naming_them(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any], exc: type[Exception], named: str
) -> None:
    admin = AIOKafkaAdminClient()  # never started: the checks come first
    with pytest.raises(exc, match=named):
        await getattr(admin, method)(*args, **kwargs)


# -- list_offsets ----------------------------------------------------------------------------


async def test_list_offsets_asks_each_leader(broker: FakeBroker) -> None:
    async with FakeBroker(node_id=2, topics={"t": 2}) as other:
        broker.extra_brokers.append((2, other.host, other.port, "az-b"))
        broker.leaders[("t", 1)] = 2
        other.extra_brokers.append((1, broker.host, broker.port, "az-a"))
        other.leaders[("t", 0)] = 1

        def answer(b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
            return {
                "topics": [
                    {
                        "name": t.name,
                        "partitions": [
                            {
                                "partition_index": p.partition_index,
                                "error_code": 0,
                                "timestamp": 77 if p.timestamp >= 0 else -1,
                                "offset": 10 * b.node_id + p.partition_index,
                                "leader_epoch": -1 if b.node_id == 2 else 4,
                            }
                            for p in t.partitions
                        ],
                    }
                    for t in request.body.topics
                ]
            }

        broker.handlers["ListOffsets"] = other.handlers["ListOffsets"] = answer
        async with AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
            got = await admin.list_offsets(
                {TP0: OffsetSpec.for_timestamp(5), TP1: OffsetSpec.earliest()},
                isolation_level="read_committed",
            )
        assert got == {
            TP0: ListOffsetsResultInfo(10, 77, 4),
            TP1: ListOffsetsResultInfo(21, -1, None),
        }
        [to1] = [r for r in broker.requests if r.api_name == "ListOffsets"]
        [to2] = [r for r in other.requests if r.api_name == "ListOffsets"]
        for sent, (partition, ts) in ((to1, (0, 5)), (to2, (1, -2))):
            assert (sent.body.replica_id, sent.body.isolation_level) == (-1, 1)
            [topic] = sent.body.topics
            assert [(p.partition_index, p.timestamp) for p in topic.partitions] == [(partition, ts)]


async def test_list_offsets_retries_a_leader_change_and_raises_naming_the_partition(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    codes = {0: [NotLeaderForPartitionError.errno, 0], 1: [0, 0]}

    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [t] = request.body.topics
        return {
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": codes[p.partition_index].pop(0),
                            "timestamp": -1,
                            "offset": 8,
                            "leader_epoch": 0,
                        }
                        for p in t.partitions
                    ],
                }
            ]
        }

    broker.handlers["ListOffsets"] = answer
    got = await admin.list_offsets({TP0: OffsetSpec.latest(), TP1: OffsetSpec.latest()})
    assert got == {TP0: ListOffsetsResultInfo(8, -1, 0), TP1: ListOffsetsResultInfo(8, -1, 0)}
    sent = [r for r in broker.requests if r.api_name == "ListOffsets"]
    assert len(sent) == 2  # the second only for the partition that failed
    assert [p.partition_index for p in sent[1].body.topics[0].partitions] == [0]

    broker.handlers["ListOffsets"] = lambda _b, request: {
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 1, "error_code": TopicAuthorizationFailedError.errno}
                ],
            }
        ]
    }
    with pytest.raises(TopicAuthorizationFailedError, match="partition=1"):
        await admin.list_offsets({TP1: OffsetSpec.earliest()})
    with pytest.raises(UnknownTopicOrPartitionError, match="partition=9"):
        await admin.list_offsets({TopicPartition("t", 9): OffsetSpec.earliest()})


async def test_max_timestamp_needs_list_offsets_v7(broker: FakeBroker) -> None:
    def versions(_b: FakeBroker, _r: FakeRequest) -> dict[str, Any]:
        keys = [
            {
                "api_key": api.key,
                "min_version": api.min_version,
                "max_version": 6 if api.name == "ListOffsets" else api.max_version,
            }
            for api in API_BY_KEY.values()
        ]
        return {"error_code": 0, "api_keys": keys}

    broker.handlers["ApiVersions"] = versions
    async with AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        assert (await admin.list_offsets({TP0: OffsetSpec.latest()}))[TP0].offset == 0
        with pytest.raises(UnsupportedVersionError, match="v7"):
            await admin.list_offsets({TP0: OffsetSpec.max_timestamp()})
    assert broker.count("ListOffsets") == 1


# -- deleting groups, altering and deleting offsets --------------------------------------------


async def test_delete_groups_tries_every_group_and_raises_the_first_refusal(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    moved = [NotCoordinatorError.errno]
    codes = {"a": NonEmptyGroupError.errno, "b": 0, "c": GroupIdNotFoundError.errno}

    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [group] = request.body.groups_names
        code = moved.pop() if group == "b" and moved else codes[group]
        return {"throttle_time_ms": 0, "results": [{"group_id": group, "error_code": code}]}

    broker.handlers["DeleteGroups"] = answer
    with pytest.raises(NonEmptyGroupError, match="'a'"):
        await admin.delete_consumer_groups(["a", "b", "c"])
    asked = [r.body.groups_names[0] for r in broker.requests if r.api_name == "DeleteGroups"]
    assert sorted(asked) == ["a", "b", "b", "c"]  # b again after NOT_COORDINATOR
    with pytest.raises(GroupIdNotFoundError, match="'c'"):
        await admin.delete_consumer_groups(["b", "c"], group_coordinator_id=1)
    await admin.delete_consumer_groups(["b"])


async def test_alter_offsets_commits_as_a_simple_group(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    codes = [CoordinatorLoadInProgressError.errno, 0]

    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        code = codes.pop(0) if codes else UnknownMemberIdError.errno
        return {
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p.partition_index, "error_code": code}
                        for p in t.partitions
                    ],
                }
                for t in request.body.topics
            ]
        }

    broker.handlers["OffsetCommit"] = answer
    await admin.alter_consumer_group_offsets("g", {TP0: 5, TP1: OffsetAndMetadata(9, "meta")})
    sent = [r for r in broker.requests if r.api_name == "OffsetCommit"]
    assert len(sent) == 2  # again after COORDINATOR_LOAD_IN_PROGRESS
    body = sent[-1].body
    assert (body.group_id, body.generation_id_or_member_epoch, body.member_id) == ("g", -1, "")
    [t] = body.topics
    got = [(p.partition_index, p.committed_offset, p.committed_metadata) for p in t.partitions]
    assert got == [(0, 5, ""), (1, 9, "meta")]
    with pytest.raises(UnknownMemberIdError, match="partition=1"):
        await admin.alter_consumer_group_offsets("g", {TP1: 3})
    assert broker.count("OffsetCommit") == 3  # UNKNOWN_MEMBER_ID is not retried


async def test_delete_offsets_raises_naming_the_group_or_partition(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    group_code = [GroupIdNotFoundError.errno]

    def answer(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [t] = request.body.topics
        return {
            "error_code": group_code.pop() if group_code else 0,
            "throttle_time_ms": 0,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "error_code": GroupSubscribedToTopicError.errno
                            if p.partition_index == 1
                            else 0,
                        }
                        for p in t.partitions
                    ],
                }
            ],
        }

    broker.handlers["OffsetDelete"] = answer
    with pytest.raises(GroupIdNotFoundError, match="'g'"):
        await admin.delete_consumer_group_offsets("g", [TP0])
    await admin.delete_consumer_group_offsets("g", [TP0, TP0])
    with pytest.raises(GroupSubscribedToTopicError, match="partition=1"):
        await admin.delete_consumer_group_offsets("g", [TP0, TP1])
    sent = [r for r in broker.requests if r.api_name == "OffsetDelete"]
    assert [[p.partition_index for p in r.body.topics[0].partitions] for r in sent] == [
        [0],
        [0],
        [0, 1],
    ]


# -- describe_groups -----------------------------------------------------------------------------


def described_classic(group: str, state: str = "Stable") -> dict[str, Any]:
    members = []
    if state == "Stable":
        sub = consumer_protocol.encode_subscription(3, {"topics": ["t"], "rack_id": "az-c"})
        assignment = consumer_protocol.encode_assignment(
            3, {"assigned_partitions": [{"topic": "t", "partitions": [0, 1]}], "user_data": None}
        )
        members.append(
            {
                "member_id": "m1",
                "group_instance_id": "static-1",
                "client_id": "c",
                "client_host": "/127.0.0.1",
                "member_metadata": sub,
                "member_assignment": assignment,
            }
        )
    return {
        "groups": [
            {
                "error_code": 0,
                "group_id": group,
                "group_state": state,
                "protocol_type": "consumer" if members else "",
                "protocol_data": "range" if members else "",
                "members": members,
            }
        ]
    }


def described_consumer_group(group: str) -> dict[str, Any]:
    topic_id = uuid.uuid4()

    def assignment(*partitions: int) -> dict[str, Any]:
        return {
            "topic_partitions": [
                {"topic_id": topic_id, "topic_name": "t", "partitions": list(partitions)}
            ]
        }

    return {
        "error_code": 0,
        "group_id": group,
        "group_state": "Reconciling",
        "group_epoch": 5,
        "assignment_epoch": 4,
        "assignor_name": "uniform",
        "members": [
            {
                "member_id": "k1",
                "rack_id": "az-b",
                "member_epoch": 4,
                "client_id": "c",
                "client_host": "/127.0.0.1",
                "subscribed_topic_names": ["t"],
                "assignment": assignment(0, 1),
                "target_assignment": assignment(1),
            }
        ],
    }


def not_a_consumer_group(group: str) -> dict[str, Any]:
    return {
        "error_code": GroupIdNotFoundError.errno,
        "error_message": f"Group {group} is not a consumer group.",
        "group_id": group,
        "group_state": "",
        "assignor_name": "",
        "members": [],
    }


async def test_describe_groups_of_both_protocols(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    def consumer_describe(_b: FakeBroker, request: FakeRequest) -> dict[str, Any]:
        [group] = request.body.group_ids
        if group == "new":
            return {"groups": [described_consumer_group(group)]}
        return {"groups": [not_a_consumer_group(group)]}

    broker.handlers["ConsumerGroupDescribe"] = consumer_describe
    broker.handlers["DescribeGroups"] = lambda _b, request: described_classic(
        request.body.groups[0], "Empty" if request.body.groups[0] == "empty" else "Stable"
    )
    got = await admin.describe_groups(["new", "old", "empty"])
    assert list(got) == ["new", "old", "empty"]
    assert got["new"] == ConsumerGroupDescription(
        group_id="new",
        is_simple_consumer_group=False,
        group_type="consumer",
        state="Reconciling",
        partition_assignor="uniform",
        coordinator=1,
        members=[
            MemberDescription(
                member_id="k1",
                group_instance_id=None,
                client_id="c",
                host="/127.0.0.1",
                rack="az-b",
                assignment=frozenset({TP0, TP1}),
                target_assignment=frozenset({TP1}),
                member_epoch=4,
            )
        ],
        group_epoch=5,
        assignment_epoch=4,
    )
    old = got["old"]
    assert (old.group_type, old.state, old.partition_assignor) == ("classic", "Stable", "range")
    assert (old.is_simple_consumer_group, old.group_epoch, old.assignment_epoch) == (
        False,
        None,
        None,
    )
    [m] = old.members
    assert (m.member_id, m.group_instance_id, m.rack) == ("m1", "static-1", "az-c")
    assert (m.assignment, m.target_assignment, m.member_epoch) == ({TP0, TP1}, None, None)
    assert got["empty"].is_simple_consumer_group and got["empty"].members == []
    asked = [r.body.groups[0] for r in broker.requests if r.api_name == "DescribeGroups"]
    assert sorted(asked) == ["empty", "old"]  # "new" was not asked with DescribeGroups


async def test_describe_groups_of_an_unknown_group_raises_naming_it(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    broker.handlers["ConsumerGroupDescribe"] = lambda _b, request: {
        "groups": [not_a_consumer_group(request.body.group_ids[0])]
    }
    broker.handlers["DescribeGroups"] = lambda _b, request: described_classic(
        request.body.groups[0], "Dead"
    )
    with pytest.raises(GroupIdNotFoundError, match="'nope'"):
        await admin.describe_groups(["nope"])
    broker.handlers["ConsumerGroupDescribe"] = lambda _b, request: {
        "groups": [
            {
                **not_a_consumer_group(request.body.group_ids[0]),
                "error_code": GroupAuthorizationFailedError.errno,
            }
        ]
    }
    with pytest.raises(GroupAuthorizationFailedError, match="'secret'"):
        await admin.describe_groups(["secret"])


async def test_describe_groups_without_consumer_group_describe(broker: FakeBroker) -> None:
    """A broker before KIP-848 (no ConsumerGroupDescribe): DescribeGroups for every group."""

    def versions(_b: FakeBroker, _r: FakeRequest) -> dict[str, Any]:
        keys = [
            {"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
            for api in API_BY_KEY.values()
            if api.name != "ConsumerGroupDescribe"
        ]
        return {"error_code": 0, "api_keys": keys}

    broker.handlers["ApiVersions"] = versions
    broker.handlers["DescribeGroups"] = lambda _b, request: described_classic(
        request.body.groups[0]
    )
    async with AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap_servers) as admin:
        got = await admin.describe_groups(["old"])
        assert got["old"].members[0].assignment == {TP0, TP1}
        # aiokafka's describe_consumer_groups keeps a Dead answer as it is.
        broker.handlers["DescribeGroups"] = lambda _b, request: described_classic(
            request.body.groups[0], "Dead"
        )
        [resp] = await admin.describe_consumer_groups(["gone"])
        assert resp.groups[0].state == "Dead"
    assert broker.count("ConsumerGroupDescribe") == 0


async def test_describe_consumer_groups_shows_a_kip848_group_in_aiokafka_shape(
    broker: FakeBroker, admin: AIOKafkaAdminClient
) -> None:
    """Kafka answers DescribeGroups for a group of the consumer protocol as Dead without
    members; the group is described again with ConsumerGroupDescribe."""
    broker.handlers["DescribeGroups"] = lambda _b, request: {
        "groups": [described_classic(g, "Dead")["groups"][0] for g in request.body.groups]
    }
    broker.handlers["ConsumerGroupDescribe"] = lambda _b, request: {
        "groups": [
            described_consumer_group(g) if g == "new" else not_a_consumer_group(g)
            for g in request.body.group_ids
        ]
    }
    [resp] = await admin.describe_consumer_groups(["new", "gone"])
    new, gone = resp.groups
    assert gone.state == "Dead" and gone.members == []
    assert (new.error_code, new.group, new.state, new.protocol_type, new.protocol) == (
        0,
        "new",
        "Reconciling",
        "consumer",
        "uniform",
    )
    [m] = new.members
    assert (m.member_id, m.client_id, m.client_host) == ("k1", "c", "/127.0.0.1")
    sub = consumer_protocol.decode_subscription(m.member_metadata)
    assert (list(sub.topics), sub.rack_id) == (["t"], "az-b")
    assignment = consumer_protocol.decode_assignment(m.member_assignment)
    assert [(t.topic, list(t.partitions)) for t in assignment.assigned_partitions] == [
        ("t", [0, 1])
    ]
