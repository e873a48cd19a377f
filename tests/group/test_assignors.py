"""Tests of the partition assignors: Kafka's own examples, then properties.

The examples mirror the cases of Kafka's ``RangeAssignorTest`` and
``AbstractStickyAssignorTest`` (same topics, replica placement and racks), and
the examples in Kafka's and aiokafka's documentation. Where Kafka's rack-aware
greedy algorithm is best-effort, rackafka's is optimal, so those cases check
that rackafka does at least as well as the mismatch count Kafka's tests expect.
"""

from __future__ import annotations

import itertools
import os
import random
import struct
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackafka.cluster import Broker, ClusterMetadata, PartitionInfo
from rackafka.errors import KafkaProtocolError
from rackafka.group.assignors import (
    ASSIGNORS,
    AssignmentInput,
    CooperativeStickyAssignor,
    MemberSubscription,
    PartitionAssignor,
    PartitionReplicas,
    RangePartitionAssignor,
    RebalanceProtocol,
    RoundRobinPartitionAssignor,
    StickyPartitionAssignor,
    assignor_for_name,
    common_rebalance_protocol,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from rackafka.structs import TopicPartition

TP = TopicPartition

Assignment = Mapping[str, Sequence[TP]]
# ASSIGNOR_EXAMPLES raises the number of examples, for a longer search.
PROPS = settings(
    max_examples=int(os.environ.get("ASSIGNOR_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# -- helpers -----------------------------------------------------------------------------


def kafka_partitions(
    topics: Mapping[str, int], replication: int, broker_racks: Sequence[str | None]
) -> tuple[dict[str, list[PartitionReplicas]], dict[int, str | None]]:
    """Replica placement of Kafka's assignor tests.

    Partition i of a topic has its replicas on brokers ``(i + j + offset) % brokers``
    for ``j < replication``, where ``offset`` counts the partitions of the topics
    before it.
    """
    parts: dict[str, list[PartitionReplicas]] = {}
    offset = 0
    n = len(broker_racks)
    for topic, count in topics.items():
        parts[topic] = [
            PartitionReplicas(i, [(i + j + offset) % n for j in range(replication)])
            for i in range(count)
        ]
        offset += count
    return parts, dict(enumerate(broker_racks))


def kafka_members(
    consumer_topics: Sequence[Sequence[str]],
    consumer_racks: Sequence[str | None],
    owned: Sequence[str] | None = None,
    generation: int = -1,
) -> list[MemberSubscription]:
    return [
        MemberSubscription(
            f"consumer{i}",
            topics,
            rack_id=consumer_racks[i],
            owned_partitions=parse(owned[i]) if owned else (),
            generation_id=generation,
        )
        for i, topics in enumerate(consumer_topics)
    ]


def parse(text: str) -> list[TP]:
    """``"t1-0, t2-3"`` (Kafka's notation) to partitions."""
    out = []
    for item in text.split(", "):
        if item:
            topic, _, p = item.rpartition("-")
            out.append(TP(topic, int(p)))
    return out


def kafka_input(
    topics: Mapping[str, int],
    replication: int,
    broker_racks: Sequence[str | None],
    consumer_racks: Sequence[str | None],
    consumer_topics: Sequence[Sequence[str]],
    owned: Sequence[str] | None = None,
) -> AssignmentInput:
    parts, racks = kafka_partitions(topics, replication, broker_racks)
    return AssignmentInput(parts, racks, kafka_members(consumer_topics, consumer_racks, owned))


def as_sets(assignment: Assignment) -> list[set[TP]]:
    return [set(assignment[f"consumer{i}"]) for i in range(len(assignment))]


def expected_sets(expected: Sequence[str]) -> list[set[TP]]:
    return [set(parse(e)) for e in expected]


def replica_racks(data: AssignmentInput, tp: TP) -> set[str]:
    for p in data.partitions[tp.topic]:
        if p.partition == tp.partition:
            return {r for b in p.replicas if (r := data.broker_racks.get(b)) is not None}
    raise AssertionError(f"{tp} is not in the input")


def matched(data: AssignmentInput, assignment: Assignment) -> int:
    """Partitions on a member whose rack holds one of their replicas."""
    return sum(
        1
        for m, tps in assignment.items()
        for tp in tps
        if data.member(m).rack in replica_racks(data, tp)
    )


def kafka_mismatches(data: AssignmentInput, assignment: Assignment) -> int:
    """Kafka's count: partitions on a member with a rack that holds no replica of them."""
    return sum(
        1
        for m, tps in assignment.items()
        if (rack := data.member(m).rack) is not None
        for tp in tps
        if rack not in replica_racks(data, tp)
    )


def subscribed_partitions(data: AssignmentInput) -> dict[TP, set[str]]:
    """Every partition that must be assigned, with the members subscribed to its topic."""
    out: dict[TP, set[str]] = {}
    for m in data.members:
        for t in m.topics:
            for p in data.partitions.get(t, ()):
                out.setdefault(TP(t, p.partition), set()).add(m.member_id)
    return out


def check_valid(data: AssignmentInput, assignment: Assignment) -> None:
    assert set(assignment) == {m.member_id for m in data.members}
    wanted = subscribed_partitions(data)
    seen: Counter[TP] = Counter()
    for m, tps in assignment.items():
        assert list(tps) == sorted(tps), f"{m}'s partitions are not sorted"
        for tp in tps:
            assert tp in wanted, f"{tp} is not subscribed"
            assert m in wanted[tp], f"{tp} went to {m}, which does not subscribe to it"
        seen.update(tps)
    assert set(seen) == set(wanted), f"unassigned: {set(wanted) - set(seen)}"
    assert all(c == 1 for c in seen.values()), f"assigned twice: {seen.most_common(3)}"


def strip_member_racks(data: AssignmentInput) -> AssignmentInput:
    members = [
        MemberSubscription(
            m.member_id,
            m.topics,
            None,
            m.owned_partitions,
            m.generation_id,
            m.group_instance_id,
            m.user_data,
        )
        for m in data.members
    ]
    return AssignmentInput(data.partitions, data.broker_racks, members)


def with_owned(data: AssignmentInput, owned: Assignment, generation: int = 1) -> AssignmentInput:
    members = [
        MemberSubscription(
            m.member_id,
            m.topics,
            m.rack_id,
            owned.get(m.member_id, ()),
            generation,
            m.group_instance_id,
        )
        for m in data.members
    ]
    return AssignmentInput(data.partitions, data.broker_racks, members)


def loads(assignment: Assignment) -> dict[str, int]:
    return {m: len(tps) for m, tps in assignment.items()}


def improving_chain(data: AssignmentInput, assignment: Assignment) -> tuple[str, str] | None:
    """A member u and a member v holding at least two fewer partitions, such that a
    chain of moves (each member passing on a partition of a topic the next one
    subscribes to) takes one partition from u to v; ``None`` if there is none.
    """
    subs = {m.member_id: set(m.topics) & set(data.partitions) for m in data.members}
    load = loads(assignment)
    gives: dict[str, set[str]] = {
        a: {b for b in subs if b != a and any(tp.topic in subs[b] for tp in assignment[a])}
        for a in subs
    }
    for u in subs:
        reach, todo = {u}, [u]
        while todo:
            a = todo.pop()
            for b in gives[a] - reach:
                reach.add(b)
                todo.append(b)
        for v in reach:
            if load[u] >= load[v] + 2:
                return u, v
    return None


def kept(data: AssignmentInput, assignment: Assignment) -> int:
    return sum(
        1 for m in data.members for tp in m.owned_partitions if tp in set(assignment[m.member_id])
    )


# -- round robin -------------------------------------------------------------------------


def test_roundrobin_kafka_example() -> None:
    parts, racks = kafka_partitions({"t0": 3, "t1": 3}, 1, [None])
    data = AssignmentInput(parts, racks, kafka_members([["t0", "t1"]] * 2, [None, None]))
    result = RoundRobinPartitionAssignor().assign(data)
    assert as_sets(result) == expected_sets(["t0-0, t0-2, t1-1", "t0-1, t1-0, t1-2"])


def test_roundrobin_unequal_subscriptions() -> None:
    # Kafka's and aiokafka's documented example: members skip topics they do not want.
    parts, racks = kafka_partitions({"t0": 1, "t1": 2, "t2": 3}, 1, [None])
    topics = [["t0"], ["t0", "t1"], ["t0", "t1", "t2"]]
    data = AssignmentInput(parts, racks, kafka_members(topics, [None] * 3))
    result = RoundRobinPartitionAssignor().assign(data)
    assert as_sets(result) == expected_sets(["t0-0", "t1-0", "t1-1, t2-0, t2-1, t2-2"])


def test_roundrobin_static_members_come_first() -> None:
    parts, racks = kafka_partitions({"t": 3}, 1, [None])
    members = [
        MemberSubscription("a", ["t"]),
        MemberSubscription("z", ["t"], group_instance_id="i0"),
        MemberSubscription("m", ["t"], group_instance_id="i1"),
    ]
    result = RoundRobinPartitionAssignor().assign(AssignmentInput(parts, racks, members))
    assert result == {"z": [TP("t", 0)], "m": [TP("t", 1)], "a": [TP("t", 2)]}


def test_roundrobin_ignores_racks() -> None:
    data = kafka_input({"t1": 6, "t2": 7}, 1, ["a", "b", "c"], ["c", "a", "b"], [["t1", "t2"]] * 3)
    assignor = RoundRobinPartitionAssignor()
    assert assignor.assign(data) == assignor.assign(strip_member_racks(data))


# -- range -------------------------------------------------------------------------------

UNIFORM = {"t1": 6, "t2": 7, "t3": 2}
ALL3 = ["t1", "t2", "t3"]
NONE3: list[str | None] = [None, None, None]
ABC: list[str | None] = ["a", "b", "c"]

# Broker racks, consumer racks and replication for which Kafka does not use
# rack-aware assignment: no broker racks, no consumer racks, every partition on
# every rack, consumer racks without brokers.
NON_RACK_CASES = [
    (3, NONE3, ABC),
    (3, ABC, NONE3),
    (3, ABC, ABC),
    (4, ["a", "b", "c", "d"], ABC),
    (3, ABC, ["d", "e", "f"]),
    (3, ABC, [None, "e", "f"]),
]


def test_range_kafka_example() -> None:
    data = kafka_input({"t0": 3, "t1": 3}, 1, [None], [None, None], [["t0", "t1"]] * 2)
    result = RangePartitionAssignor().assign(data)
    assert as_sets(result) == expected_sets(["t0-0, t0-1, t1-0, t1-1", "t0-2, t1-2"])


@pytest.mark.parametrize(
    ("topics", "consumer_topics", "expected"),
    [
        (
            UNIFORM,
            [ALL3] * 3,
            [
                "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
                "t1-2, t1-3, t2-3, t2-4, t3-1",
                "t1-4, t1-5, t2-5, t2-6",
            ],
        ),
        (
            UNIFORM,
            [ALL3, ALL3, ["t1", "t3"]],
            [
                "t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
                "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1",
                "t1-4, t1-5",
            ],
        ),
        (
            {"t1": 5, "t2": 5, "t3": 5},
            [ALL3] * 3,
            [
                "t1-0, t1-1, t2-0, t2-1, t3-0, t3-1",
                "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3",
                "t1-4, t2-4, t3-4",
            ],
        ),
    ],
)
@pytest.mark.parametrize(("replication", "brokers", "consumers"), NON_RACK_CASES)
def test_range_without_useful_racks_is_plain_range(
    topics: dict[str, int],
    consumer_topics: list[list[str]],
    expected: list[str],
    replication: int,
    brokers: list[str | None],
    consumers: list[str | None],
) -> None:
    data = kafka_input(topics, replication, brokers, consumers, consumer_topics)
    assert as_sets(RangePartitionAssignor().assign(data)) == expected_sets(expected)


@pytest.mark.parametrize(
    ("topics", "consumer_topics", "replication", "brokers", "kafka_mismatched"),
    [
        # Kafka's expected mismatch counts (RangeAssignorTest); rackafka's must not exceed them.
        (UNIFORM, [ALL3] * 3, 1, ABC, 0),
        (UNIFORM, [ALL3] * 3, 2, ABC, 1),
        (UNIFORM, [ALL3] * 3, 3, ["a", "b"], 4),
        (UNIFORM, [ALL3, ALL3, ["t1", "t3"]], 1, ABC, 2),
        (UNIFORM, [ALL3, ALL3, ["t1", "t3"]], 2, ABC, 0),
        (UNIFORM, [ALL3, ALL3, ["t1", "t3"]], 3, ["a", "b"], 2),
        ({"t1": 5, "t2": 5, "t3": 5}, [ALL3] * 3, 1, ABC, 10),
        ({"t1": 5, "t2": 5, "t3": 5}, [ALL3] * 3, 2, ABC, 5),
        ({"t1": 5, "t2": 5, "t3": 5}, [ALL3, ALL3, ["t1", "t3"]], 1, ABC, 9),
        ({"t1": 5, "t2": 5, "t3": 5}, [ALL3, ALL3, ["t1", "t3"]], 2, ABC, 0),
    ],
)
def test_range_rack_aware_kafka_cases(
    topics: dict[str, int],
    consumer_topics: list[list[str]],
    replication: int,
    brokers: list[str | None],
    kafka_mismatched: int,
) -> None:
    data = kafka_input(topics, replication, brokers, ABC, consumer_topics)
    result = RangePartitionAssignor().assign(data)
    plain = RangePartitionAssignor().assign(strip_member_racks(data))
    check_valid(data, result)
    assert_range_shape(data, result, plain)
    assert kafka_mismatches(data, result) <= kafka_mismatched
    assert matched(data, result) >= matched(data, plain)


def test_range_rack_aware_lower_replication_is_fully_aligned() -> None:
    # RangeAssignorTest: replication 1, each rack holds a third of the partitions.
    data = kafka_input(UNIFORM, 1, ABC, ABC, [ALL3] * 3)
    result = RangePartitionAssignor().assign(data)
    assert as_sets(result) == expected_sets(
        [
            "t1-0, t1-3, t2-0, t2-3, t2-6",
            "t1-1, t1-4, t2-1, t2-4, t3-0",
            "t1-2, t1-5, t2-2, t2-5, t3-1",
        ]
    )
    assert kafka_mismatches(data, result) == 0


def test_range_rack_aware_co_partitioning() -> None:
    # RangeAssignorTest.testRackAwareAssignmentWithCoPartitioning, replication 1 on two racks.
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    consumer_racks: list[str | None] = ["a", "b", "b", "a"]
    for consumer_topics in (
        [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]],
        [["t1", "t2", "t3", "t4"]] * 4,
    ):
        data = kafka_input(topics, 1, ["a", "b"], consumer_racks, consumer_topics)
        result = RangePartitionAssignor().assign(data)
        check_valid(data, result)
        assert_range_shape(data, result, RangePartitionAssignor().assign(strip_member_racks(data)))
        assert kafka_mismatches(data, result) == 0


def test_range_rack_aware_static_members_keep_their_ranges() -> None:
    # RangeAssignorTest.testRackAwareStaticMemberRangeAssignmentPersistentAfterMemberIdChanges
    brokers: list[str | None] = ["a", "b", "c"] * 2
    parts = {
        t: [PartitionReplicas(i, [i % 6, (i + 1) % 6]) for i in range(5)] for t in ("t1", "t2")
    }
    racks = dict(enumerate(brokers))

    def members(ids: Sequence[str]) -> list[MemberSubscription]:
        return [
            MemberSubscription(mid, ["t1", "t2"], rack_id=rack, group_instance_id=f"instance{i}")
            for i, (mid, rack) in enumerate(zip(ids, "abc"))
        ]

    def by_instance(ids: Sequence[str]) -> dict[str, set[TP]]:
        data = AssignmentInput(parts, racks, members(ids))
        result = RangePartitionAssignor().assign(data)
        check_valid(data, result)
        assert kafka_mismatches(data, result) == 0
        return {m.group_instance_id or "": set(result[m.member_id]) for m in data.members}

    first = by_instance(["consumer1", "consumer2", "consumer3"])
    assert first == {
        "instance0": set(parse("t1-0, t1-2, t2-0, t2-2")),
        "instance1": set(parse("t1-1, t1-3, t2-1, t2-3")),
        "instance2": set(parse("t1-4, t2-4")),
    }
    assert by_instance(["consumer1", "consumer5", "consumer4"]) == first


def test_range_prefers_racked_member_for_the_extra_partition() -> None:
    # All replicas on rack a: Kafka would keep plain range (the extra partition to the
    # member on rack b); rackafka gives the extra one to the member on rack a.
    parts = {"t": [PartitionReplicas(i, [0]) for i in range(3)]}
    members = [MemberSubscription("m0", ["t"], rack_id="b"), MemberSubscription("m1", ["t"], "a")]
    data = AssignmentInput(parts, {0: "a"}, members)
    result = RangePartitionAssignor().assign(data)
    assert loads(result) == {"m0": 1, "m1": 2}


def assert_range_shape(data: AssignmentInput, result: Assignment, plain: Assignment) -> None:
    """Per-topic counts as in plain range, and co-partitioning kept."""
    owner = {tp: m for m, tps in result.items() for tp in tps}
    for topic, parts in data.partitions.items():
        subs = [m.member_id for m in data.members if topic in m.topics]
        if not subs or not parts:
            continue
        count = Counter({m: 0 for m in subs})
        count.update(owner[TP(topic, p.partition)] for p in parts)
        plain_count = Counter({m: 0 for m in subs})
        plain_count.update(tp.topic for m, tps in plain.items() for tp in tps if tp.topic == topic)
        plain_sizes = sorted(sum(1 for tp in plain[m] if tp.topic == topic) for m in subs)
        assert sorted(count.values()) == plain_sizes, topic
    topics = [t for t in data.partitions if any(t in m.topics for m in data.members)]
    for t1, t2 in itertools.combinations(topics, 2):
        subs1 = {m.member_id for m in data.members if t1 in m.topics}
        subs2 = {m.member_id for m in data.members if t2 in m.topics}
        p1 = sorted(p.partition for p in data.partitions[t1])
        p2 = sorted(p.partition for p in data.partitions[t2])
        if subs1 == subs2 and len(p1) == len(p2):
            for a, b in zip(p1, p2):
                assert owner[TP(t1, a)] == owner[TP(t2, b)], f"{t1}-{a} and {t2}-{b} split"


# -- sticky ------------------------------------------------------------------------------

STICKY = [StickyPartitionAssignor, CooperativeStickyAssignor]
UNIFORM_STICKY = [
    "t1-0, t1-3, t2-0, t2-3, t2-6",
    "t1-1, t1-4, t2-1, t2-4, t3-0",
    "t1-2, t1-5, t2-2, t2-5, t3-1",
]


@pytest.mark.parametrize("cls", STICKY)
@pytest.mark.parametrize(
    ("replication", "brokers", "consumers"), [*NON_RACK_CASES, (1, ABC, ABC), (2, ABC, ABC)]
)
def test_sticky_uniform_kafka_cases(
    cls: type[PartitionAssignor],
    replication: int,
    brokers: list[str | None],
    consumers: list[str | None],
) -> None:
    # AbstractStickyAssignorTest.testRackAwareAssignmentWithUniformSubscription: the same
    # assignment, fresh and when it is already owned; aligned on racks where they differ.
    data = kafka_input(UNIFORM, replication, brokers, consumers, [ALL3] * 3)
    assert as_sets(cls().assign(data)) == expected_sets(UNIFORM_STICKY)
    again = kafka_input(UNIFORM, replication, brokers, consumers, [ALL3] * 3, UNIFORM_STICKY)
    assert as_sets(cls().assign(again)) == expected_sets(UNIFORM_STICKY)
    if replication < 3:
        assert kafka_mismatches(data, cls().assign(data)) == 0


def test_sticky_consumer_on_rack_without_replicas_keeps_its_share() -> None:
    data = kafka_input(UNIFORM, 3, ["a", "b"], ABC, [ALL3] * 3)
    result = StickyPartitionAssignor().assign(data)
    assert as_sets(result) == expected_sets(UNIFORM_STICKY)
    assert kafka_mismatches(data, result) == 5  # balance comes first


MISALIGNED = [
    "t1-0, t1-1, t1-2, t1-3, t1-4",
    "t1-5, t2-0, t2-1, t2-2, t2-3",
    "t2-4, t2-5, t2-6, t3-0, t3-1",
]


def test_sticky_moves_misaligned_partitions_to_their_rack() -> None:
    data = kafka_input(UNIFORM, 1, ABC, ABC, [ALL3] * 3, MISALIGNED)
    result = StickyPartitionAssignor().assign(data)
    assert as_sets(result) == expected_sets(UNIFORM_STICKY)
    assert kafka_mismatches(data, result) == 0


def test_cooperative_revokes_misaligned_partitions_first() -> None:
    # Kafka's expected intermediate assignment: only what each member owns and keeps.
    data = kafka_input(UNIFORM, 1, ABC, ABC, [ALL3] * 3, MISALIGNED)
    first = CooperativeStickyAssignor().assign(data)
    assert as_sets(first) == expected_sets(["t1-0, t1-3", "t2-1", "t2-5, t3-1"])
    # After the members revoked what they lost, the follow-up rebalance completes it.
    second = CooperativeStickyAssignor().assign(with_owned(data, first))
    assert as_sets(second) == expected_sets(UNIFORM_STICKY)


def test_sticky_non_equal_subscription_kafka_cases() -> None:
    # AbstractStickyAssignorTest.testRackAwareAssignmentWithNonEqualSubscription.
    consumer_topics = [ALL3, ALL3, ["t1", "t3"]]
    for replication, brokers, kafka_mismatched in ((1, ABC, 4), (2, ABC, 0), (3, ["a", "b"], 5)):
        data = kafka_input(UNIFORM, replication, brokers, ABC, consumer_topics)
        for cls in STICKY:
            result = cls().assign(data)
            check_valid(data, result)
            assert sorted(loads(result).values()) == [5, 5, 5]
            assert kafka_mismatches(data, result) <= kafka_mismatched
    data = kafka_input(UNIFORM, 1, ABC, ABC, consumer_topics, MISALIGNED)
    target = StickyPartitionAssignor().assign(data)
    assert kafka_mismatches(data, target) <= 4
    first = CooperativeStickyAssignor().assign(data)
    second = CooperativeStickyAssignor().assign(with_owned(data, first, 2))
    check_valid(data, second)
    assert kafka_mismatches(data, second) == kafka_mismatches(data, target)


def test_sticky_aiokafka_example_one() -> None:
    parts, racks = kafka_partitions({f"t{i}": 2 for i in range(4)}, 1, [None])
    topics = [f"t{i}" for i in range(4)]
    members = [MemberSubscription(f"C{i}", topics) for i in range(3)]
    data = AssignmentInput(parts, racks, members)
    first = StickyPartitionAssignor().assign(data)
    assert {m: set(v) for m, v in first.items()} == {
        "C0": set(parse("t0-0, t1-1, t3-0")),
        "C1": set(parse("t0-1, t2-0, t3-1")),
        "C2": set(parse("t1-0, t2-1")),
    }
    # C1 leaves: every partition C0 and C2 had stays, C1's are shared out 4/4.
    rest = [
        MemberSubscription(
            m.member_id, topics, owned_partitions=first[m.member_id], generation_id=1
        )
        for m in members
        if m.member_id != "C1"
    ]
    second = StickyPartitionAssignor().assign(AssignmentInput(parts, racks, rest))
    assert set(first["C0"]) <= set(second["C0"])
    assert set(first["C2"]) <= set(second["C2"])
    assert loads(second) == {"C0": 4, "C2": 4}


def test_sticky_aiokafka_example_two_unequal_subscriptions() -> None:
    parts, racks = kafka_partitions({"t0": 1, "t1": 2, "t2": 3}, 1, [None])
    topics = [["t0"], ["t0", "t1"], ["t0", "t1", "t2"]]
    members = [MemberSubscription(f"C{i}", t) for i, t in enumerate(topics)]
    first = StickyPartitionAssignor().assign(AssignmentInput(parts, racks, members))
    assert first == {
        "C0": parse("t0-0"),
        "C1": parse("t1-0, t1-1"),
        "C2": parse("t2-0, t2-1, t2-2"),
    }
    rest = [
        MemberSubscription(m.member_id, m.topics, owned_partitions=first[m.member_id])
        for m in members[1:]
    ]
    second = StickyPartitionAssignor().assign(AssignmentInput(parts, racks, rest))
    assert second == {"C1": parse("t0-0, t1-0, t1-1"), "C2": parse("t2-0, t2-1, t2-2")}


def two_topic_input(
    sizes: Mapping[str, int], owned: Mapping[str, tuple[list[TP], int]], topics: Sequence[str]
) -> AssignmentInput:
    parts, racks = kafka_partitions(sizes, 1, [None])
    members = [
        MemberSubscription(m, topics, owned_partitions=o, generation_id=g)
        for m, (o, g) in owned.items()
    ]
    return AssignmentInput(parts, racks, members)


@pytest.mark.parametrize("cls", STICKY)
def test_sticky_owner_of_min_quota_gets_max_quota(cls: type[PartitionAssignor]) -> None:
    data = two_topic_input(
        {"t1": 2, "t2": 3},
        {"c1": (parse("t1-0, t2-1"), 1), "c2": (parse("t1-1, t2-2"), 1)},
        ["t1", "t2"],
    )
    assert cls().assign(data) == {"c1": parse("t1-0, t2-0, t2-1"), "c2": parse("t1-1, t2-2")}


def test_sticky_more_max_quota_owners_than_slots() -> None:
    # Two members own 2 of 4 partitions, a third joins: one of them keeps 2 (which one
    # depends on Java's HashMap order in Kafka; rackafka takes members by id), the
    # other keeps its lowest partition and the newcomer gets the other one.
    owned = {"c1": parse("t1-0, t2-0"), "c2": parse("t1-1, t2-1")}
    data = two_topic_input(
        {"t1": 2, "t2": 2},
        {"c1": (owned["c1"], 1), "c2": (owned["c2"], 1), "c3": ([], 1)},
        ["t1", "t2"],
    )
    target = StickyPartitionAssignor().assign(data)
    assert target == {"c1": parse("t1-0, t2-0"), "c2": parse("t1-1"), "c3": parse("t2-1")}
    # t2-1 moves from c2 to c3: c2 revokes it first, c3 gets it in the next rebalance.
    assert CooperativeStickyAssignor().assign(data) == {**target, "c3": []}


def test_sticky_all_under_min_quota() -> None:
    data = two_topic_input(
        {"t1": 2, "t2": 3},
        {"c1": (parse("t1-0"), 1), "c2": (parse("t1-1"), 1), "c3": ([], 1)},
        ["t1", "t2"],
    )
    expected = {"c1": parse("t1-0, t2-1"), "c2": parse("t1-1, t2-2"), "c3": parse("t2-0")}
    for cls in STICKY:
        assert cls().assign(data) == expected


def test_sticky_partition_claimed_twice_in_one_generation() -> None:
    data = two_topic_input(
        {"t": 3},
        {"c1": (parse("t-0, t-1"), 1), "c2": (parse("t-0, t-2"), 1), "c3": ([], 1)},
        ["t"],
    )
    target = {"c1": parse("t-1"), "c2": parse("t-2"), "c3": parse("t-0")}
    assert StickyPartitionAssignor().assign(data) == target
    # Both claimers must give t-0 up before c3 may have it.
    assert CooperativeStickyAssignor().assign(data) == {**target, "c3": []}


@pytest.mark.parametrize("cls", STICKY)
@pytest.mark.parametrize(
    ("owned", "expected"),
    [
        # A stale generation loses the partitions claimed by both.
        (
            {"c1": ("t-0, t-2, t2-1", 10), "c2": ("t-0, t-2, t2-1", 9)},
            {"c1": "t-0, t-2, t2-1", "c2": "t-1, t2-0, t2-2"},
        ),
        # So does a member without generation.
        (
            {"c1": ("t-0, t-2, t2-1", 10), "c2": ("t-0, t-2, t2-1", -1)},
            {"c1": "t-0, t-2, t2-1", "c2": "t-1, t2-0, t2-2"},
        ),
        # Two older generations.
        (
            {"c1": ("t-0, t2-1, t-1", 10), "c2": ("t-0, t2-1, t2-2", 8)},
            {"c1": "t-0, t-1, t2-1", "c2": "t-2, t2-0, t2-2"},
        ),
    ],
)
def test_sticky_highest_generation_wins(
    cls: type[PartitionAssignor], owned: dict[str, tuple[str, int]], expected: dict[str, str]
) -> None:
    data = two_topic_input(
        {"t": 3, "t2": 3}, {m: (parse(o), g) for m, (o, g) in owned.items()}, ["t", "t2"]
    )
    result = cls().assign(data)
    assert {m: set(v) for m, v in result.items()} == {m: set(parse(e)) for m, e in expected.items()}


@pytest.mark.parametrize("cls", STICKY)
def test_sticky_three_generations(cls: type[PartitionAssignor]) -> None:
    topics = ["t", "t2", "t3"]
    data = two_topic_input(
        {"t": 3, "t2": 3, "t3": 3},
        {
            "c1": (parse("t-0, t2-0, t3-0"), 10),
            "c2": (parse("t-1, t2-1, t3-1"), 9),
            "c3": (parse("t2-1, t3-0, t3-2"), 8),
        },
        topics,
    )
    result = cls().assign(data)
    assert {m: set(v) for m, v in result.items()} == {
        "c1": set(parse("t-0, t2-0, t3-0")),
        "c2": set(parse("t-1, t2-1, t3-1")),
        "c3": set(parse("t-2, t2-2, t3-2")),
    }


@pytest.mark.parametrize("cls", STICKY)
def test_sticky_no_reassignment_of_current_members(cls: type[PartitionAssignor]) -> None:
    topics = ["t", "t1", "t2", "t3"]
    data = two_topic_input(
        {"t": 3, "t1": 3, "t2": 3, "t3": 3},
        {
            "c1": ([], -1),
            "c2": (parse("t-0, t2-0, t1-0"), 9),
            "c3": (parse("t3-2, t2-2, t1-1"), 8),
            "c4": (parse("t3-1, t-1, t-2"), 7),
        },
        topics,
    )
    result = cls().assign(data)
    assert set(result["c1"]) == set(parse("t1-2, t2-1, t3-0"))
    for m in ("c2", "c3", "c4"):
        assert set(result[m]) == set(data.member(m).owned_partitions)


def test_cooperative_two_rebalances_when_a_member_joins() -> None:
    parts, racks = kafka_partitions({"t": 6}, 1, [None])
    old = {"c1": parse("t-0, t-1, t-2"), "c2": parse("t-3, t-4, t-5")}
    members = [
        MemberSubscription("c1", ["t"], owned_partitions=old["c1"], generation_id=3),
        MemberSubscription("c2", ["t"], owned_partitions=old["c2"], generation_id=3),
        MemberSubscription("c3", ["t"], generation_id=-1),
    ]
    data = AssignmentInput(parts, racks, members)
    first = CooperativeStickyAssignor().assign(data)
    assert first["c3"] == []
    assert len(first["c1"]) == len(first["c2"]) == 2
    assert set(first["c1"]) <= set(old["c1"]) and set(first["c2"]) <= set(old["c2"])
    second = CooperativeStickyAssignor().assign(with_owned(data, first, 4))
    check_valid(data, second)
    assert loads(second) == {"c1": 2, "c2": 2, "c3": 2}
    assert second["c1"] == first["c1"] and second["c2"] == first["c2"]


# -- user data and assignor state ------------------------------------------------------


def kafka_string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def test_sticky_user_data_layouts() -> None:
    # Kafka's StickyAssignor user data: [topic (string), partitions ([int32])], then
    # generation (int32) in V1; built by hand from that layout.
    body = struct.pack(">i", 2)
    body += kafka_string("a") + struct.pack(">iii", 2, 0, 3)
    body += kafka_string("b") + struct.pack(">ii", 1, 7)
    v1 = body + struct.pack(">i", 42)
    assert decode_sticky_user_data(v1) == ([TP("a", 0), TP("a", 3), TP("b", 7)], 42)
    assert decode_sticky_user_data(body) == ([TP("a", 0), TP("a", 3), TP("b", 7)], None)
    assert encode_sticky_user_data([TP("b", 7), TP("a", 3), TP("a", 0)], 42) == v1
    for bad in (b"", b"\x00\x00\x00\x05", body[:-2]):
        with pytest.raises(KafkaProtocolError):
            decode_sticky_user_data(bad)


def test_cooperative_user_data_layout() -> None:
    assert decode_cooperative_user_data(struct.pack(">i", 7)) == 7
    assert encode_cooperative_user_data(-1) == struct.pack(">i", -1)
    with pytest.raises(KafkaProtocolError):
        decode_cooperative_user_data(b"\x00\x01")


def test_sticky_reads_previous_assignment_from_user_data() -> None:
    parts, racks = kafka_partitions({"t": 4}, 1, [None])
    previous = StickyPartitionAssignor()
    assert previous.subscription_user_data(["t"]) is None
    previous.on_assignment(parse("t-2, t-3"), 5)
    user_data = previous.subscription_user_data(["t"])
    assert user_data is not None
    members = [
        # Eager members own nothing while they rejoin: the user data says what they had.
        MemberSubscription("a", ["t"], user_data=user_data),
        MemberSubscription("b", ["t"], user_data=b"\x00garbage"),
    ]
    result = StickyPartitionAssignor().assign(AssignmentInput(parts, racks, members))
    assert result == {"a": parse("t-2, t-3"), "b": parse("t-0, t-1")}


def test_cooperative_generation_from_user_data() -> None:
    parts, racks = kafka_partitions({"t": 2}, 1, [None])
    members = [
        MemberSubscription(
            "a",
            ["t"],
            owned_partitions=parse("t-0, t-1"),
            user_data=encode_cooperative_user_data(4),
        ),
        MemberSubscription("b", ["t"], owned_partitions=parse("t-0, t-1"), generation_id=3),
    ]
    result = StickyPartitionAssignor().assign(AssignmentInput(parts, racks, members))
    assert len(result["a"]) == len(result["b"]) == 1
    coop = CooperativeStickyAssignor()
    assert coop.subscription_user_data(["t"]) == encode_cooperative_user_data(-1)
    coop.on_assignment([], 9)
    assert coop.subscription_user_data(["t"]) == encode_cooperative_user_data(9)
    # a's generation 4 (from its user data) beats b's 3: a keeps one, b gets none yet.
    first = coop.assign(AssignmentInput(parts, racks, members))
    assert len(first["a"]) == 1 and first["b"] == []


# -- input, registry, protocols ---------------------------------------------------------


def test_input_validation() -> None:
    with pytest.raises(ValueError, match="more than once"):
        AssignmentInput({}, {}, [MemberSubscription("a", ["t"]), MemberSubscription("a", [])])
    with pytest.raises(ValueError, match="more than once"):
        AssignmentInput({"t": [PartitionReplicas(0), PartitionReplicas(0)]}, {}, [])
    with pytest.raises(ValueError, match="partition"):
        PartitionReplicas(-1)
    with pytest.raises(TypeError, match="topics"):
        MemberSubscription("a", "topic")


@pytest.mark.parametrize("cls", list(ASSIGNORS.values()))
def test_edge_inputs(cls: type[PartitionAssignor]) -> None:
    assert cls().assign(AssignmentInput({}, {}, [])) == {}
    members = [MemberSubscription("a", ["missing", "empty"]), MemberSubscription("b", [])]
    data = AssignmentInput({"empty": [], "other": [PartitionReplicas(0, [1])]}, {1: "x"}, members)
    assert cls().assign(data) == {"a": [], "b": []}
    # More members than partitions; member racks without any broker rack.
    members = [MemberSubscription(f"m{i}", ["t"], rack_id="r") for i in range(4)]
    data = AssignmentInput({"t": [PartitionReplicas(0, [5]), PartitionReplicas(1)]}, {}, members)
    result = cls().assign(data)
    check_valid(data, result)
    assert sorted(loads(result).values()) == [0, 0, 1, 1]


@pytest.mark.parametrize("same_topics", [True, False])
def test_larger_group(same_topics: bool) -> None:
    # 40 topics of 24 partitions, 30 members on 3 racks, replication 2 on 9 brokers.
    rng = random.Random(7)
    parts = {
        f"topic{i:02d}": [PartitionReplicas(p, rng.sample(range(9), 2)) for p in range(24)]
        for i in range(40)
    }
    names = sorted(parts)
    members = [
        MemberSubscription(
            f"member{i:02d}",
            names if same_topics else rng.sample(names, rng.randint(1, 40)),
            rack_id="abc"[i % 3],
        )
        for i in range(30)
    ]
    data = AssignmentInput(parts, {b: "abc"[b % 3] for b in range(9)}, members)
    plain_data = strip_member_racks(data)
    first = StickyPartitionAssignor().assign(data)
    plain = StickyPartitionAssignor().assign(plain_data)
    for input_, result in ((data, first), (plain_data, plain)):
        check_valid(input_, result)
        assert improving_chain(input_, result) is None
    assert matched(data, first) >= matched(data, plain)
    # Three members leave: the others keep what they had when racks play no part
    # and the quota grows (identical subscriptions).
    survivors = with_owned(plain_data, plain)
    survivors = AssignmentInput(parts, data.broker_racks, survivors.members[:-3])
    second = StickyPartitionAssignor().assign(survivors)
    check_valid(survivors, second)
    assert improving_chain(survivors, second) is None
    if same_topics:
        assert kept(survivors, second) == sum(len(plain[m.member_id]) for m in survivors.members)
    ranges = RangePartitionAssignor().assign(data)
    check_valid(data, ranges)
    assert_range_shape(data, ranges, RangePartitionAssignor().assign(plain_data))


def test_from_cluster() -> None:
    cluster = ClusterMetadata()
    cluster.add_brokers([Broker(1, "h1", 9092, "a"), Broker(2, "h2", 9092, None)])
    cluster.partitions["t"] = {
        1: PartitionInfo("t", 1, 2, 0, (2, 1), (2, 1)),
        0: PartitionInfo("t", 0, 1, 0, (1, 2), (1,)),
    }
    cluster.partitions["unsubscribed"] = {0: PartitionInfo("unsubscribed", 0, 1, 0, (1,), (1,))}
    data = AssignmentInput.from_cluster(cluster, [MemberSubscription("m", ["t", "nope"], "a")])
    assert data.partitions == {"t": [PartitionReplicas(0, (1, 2)), PartitionReplicas(1, (2, 1))]}
    assert data.broker_racks == {1: "a", 2: None}
    assert RangePartitionAssignor().assign(data) == {"m": parse("t-0, t-1")}


def test_registry_and_protocols() -> None:
    assert set(ASSIGNORS) == {"roundrobin", "range", "sticky", "cooperative-sticky"}
    for name, cls in ASSIGNORS.items():
        assert cls.name == name
        assert isinstance(assignor_for_name(name), cls)
    with pytest.raises(ValueError, match="unknown partition assignor"):
        assignor_for_name("fair")
    coop, rng = CooperativeStickyAssignor(), RangePartitionAssignor()
    assert coop.supported_protocols[-1] is RebalanceProtocol.COOPERATIVE
    assert common_rebalance_protocol([coop]) is RebalanceProtocol.COOPERATIVE
    assert common_rebalance_protocol([coop, rng]) is RebalanceProtocol.EAGER
    with pytest.raises(ValueError):
        common_rebalance_protocol([])


# -- properties --------------------------------------------------------------------------

RACK_NAMES = ("r0", "r1", "r2")


@st.composite
def scenarios(
    draw: st.DrawFn,
    *,
    homogeneous: bool | None = None,
    owned: bool = False,
    broker_racks: bool = True,
    max_members: int = 6,
    max_partitions: int = 12,
    max_topics: int = 4,
) -> AssignmentInput:
    """A random cluster and group: 1-6 brokers on 0-3 racks (and none), replication
    1-3, 1-4 topics of 1-12 partitions, 1-6 members on those racks (and none, and
    one without brokers), subscriptions identical or random, owned partitions valid
    and disjoint."""
    rack_names = RACK_NAMES[: draw(st.integers(0, 3))]
    brokers = draw(st.integers(1, 6))
    racks = {
        b: (draw(st.sampled_from((None, *rack_names))) if broker_racks else None)
        for b in range(brokers)
    }
    replication = draw(st.integers(1, min(3, brokers)))
    topics = [f"t{i}" for i in range(draw(st.integers(1, max_topics)))]
    partitions = {
        t: [
            PartitionReplicas(
                p,
                draw(
                    st.lists(
                        st.integers(0, brokers - 1),
                        min_size=replication,
                        max_size=replication,
                        unique=True,
                    )
                ),
            )
            for p in range(draw(st.integers(1, max_partitions)))
        ]
        for t in topics
    }
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    common = draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
    count = draw(st.integers(1, max_members))
    members = []
    for i in range(count):
        subs = common if same else draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
        members.append(
            MemberSubscription(
                f"m{i}",
                subs,
                rack_id=draw(st.sampled_from((None, "", *rack_names, "nobroker"))),
                group_instance_id=f"g{count - i}" if draw(st.booleans()) else None,
                generation_id=1,
            )
        )
    data = AssignmentInput(partitions, racks, members)
    if not owned:
        return data
    holders: dict[str, list[TP]] = {m.member_id: [] for m in members}
    for tp, subs_of in sorted(subscribed_partitions(data).items()):
        choice = draw(st.sampled_from([None, *sorted(subs_of)]))
        if choice is not None:
            holders[choice].append(tp)
    return with_owned(data, holders)


RACK_AWARE = [RangePartitionAssignor, StickyPartitionAssignor, CooperativeStickyAssignor]


@PROPS
@given(data=scenarios(owned=True))
def test_property_every_partition_once_to_a_subscriber(data: AssignmentInput) -> None:
    for cls in (RoundRobinPartitionAssignor, RangePartitionAssignor, StickyPartitionAssignor):
        check_valid(data, cls().assign(data))
    coop = CooperativeStickyAssignor().assign(data)
    target = StickyPartitionAssignor().assign(data)
    owner = {tp: m.member_id for m in data.members for tp in m.owned_partitions}
    for m, tps in coop.items():
        # Only what the target gives; left out: exactly what another member still owns.
        assert set(tps) <= set(target[m])
        for tp in set(target[m]) - set(tps):
            assert owner.get(tp) not in (None, m)
        for tp in tps:
            assert owner.get(tp) in (None, m)


@PROPS
@given(data=scenarios(owned=True))
def test_property_balance(data: AssignmentInput) -> None:
    plain = strip_member_racks(data)
    result = RangePartitionAssignor().assign(data)
    assert_range_shape(data, result, RangePartitionAssignor().assign(plain))
    sticky = StickyPartitionAssignor().assign(data)
    sticky_plain = StickyPartitionAssignor().assign(plain)
    assert sorted(loads(sticky).values()) == sorted(loads(sticky_plain).values())
    assert improving_chain(data, sticky) is None
    assert improving_chain(data, sticky_plain) is None
    subscriptions = {frozenset(m.topics) & set(data.partitions) for m in data.members}
    if len(subscriptions) == 1:
        counts = loads(sticky).values()
        assert max(counts) - min(counts) <= 1


@PROPS
@given(data=scenarios(owned=True))
def test_property_rack_matching_never_worse(data: AssignmentInput) -> None:
    plain = strip_member_racks(data)
    for cls in (RangePartitionAssignor, StickyPartitionAssignor):
        assert matched(data, cls().assign(data)) >= matched(data, cls().assign(plain))
    rr = RoundRobinPartitionAssignor()
    assert rr.assign(data) == rr.assign(plain)


@st.composite
def aligned_scenarios(draw: st.DrawFn) -> tuple[AssignmentInput, str]:
    """A group for which a balanced, fully rack-aligned assignment exists.

    Members all have racks; a balanced assignment is drawn first (per topic and
    co-partitioned for range; balanced overall for sticky) and each partition gets
    a replica on its member's rack, plus random other replicas.
    """
    kind = draw(st.sampled_from(["range", "sticky"]))
    rack_names = RACK_NAMES[: draw(st.integers(1, 3))]
    brokers = {f"{r}-{i}": r for r in rack_names for i in range(2)}
    broker_ids = {name: i for i, name in enumerate(brokers)}
    by_rack = {r: [broker_ids[n] for n, rr in brokers.items() if rr == r] for r in rack_names}
    count = draw(st.integers(1, 6))
    members = [
        MemberSubscription(f"m{i}", [], rack_id=draw(st.sampled_from(rack_names)))
        for i in range(count)
    ]
    topics = {f"t{i}": draw(st.integers(1, 12)) for i in range(draw(st.integers(1, 4)))}
    ids = [m.member_id for m in members]
    owner: dict[TP, str] = {}
    if kind == "range":
        per_count: dict[int, list[str]] = {}
        for t, n in topics.items():
            if n not in per_count:
                per, extra = divmod(n, count)
                slots = [m for i, m in enumerate(ids) for _ in range(per + (i < extra))]
                per_count[n] = draw(st.permutations(slots))
            for p in range(n):
                owner[TP(t, p)] = per_count[n][p]
    else:
        total = sum(topics.values())
        per, extra = divmod(total, count)
        slots = draw(
            st.permutations([m for i, m in enumerate(ids) for _ in range(per + (i < extra))])
        )
        tps = [TP(t, p) for t, n in topics.items() for p in range(n)]
        owner = dict(zip(tps, slots))
    rack_of = {m.member_id: m.rack_id for m in members}
    partitions = {}
    for t, n in topics.items():
        partitions[t] = []
        for p in range(n):
            home = draw(st.sampled_from(by_rack[str(rack_of[owner[TP(t, p)]])]))
            others = draw(st.lists(st.sampled_from(sorted(broker_ids.values())), max_size=2))
            partitions[t].append(PartitionReplicas(p, list(dict.fromkeys([home, *others]))))
    members = [MemberSubscription(m.member_id, list(topics), m.rack_id) for m in members]
    racks = {i: brokers[name] for name, i in broker_ids.items()}
    return AssignmentInput(partitions, racks, members), kind


@PROPS
@given(case=aligned_scenarios())
def test_property_fully_aligned_when_possible(case: tuple[AssignmentInput, str]) -> None:
    data, kind = case
    assignor = RangePartitionAssignor() if kind == "range" else StickyPartitionAssignor()
    result = assignor.assign(data)
    check_valid(data, result)
    assert matched(data, result) == sum(len(p) for p in data.partitions.values())


@PROPS
@given(data=scenarios(owned=True, broker_racks=False))
def test_property_no_broker_racks_means_plain_assignment(data: AssignmentInput) -> None:
    plain = strip_member_racks(data)
    for cls in RACK_AWARE:
        assert cls().assign(data) == cls().assign(plain)


@PROPS
@given(data=scenarios(owned=True), disjoint=st.booleans())
def test_property_unmatched_or_uniform_racks_mean_plain_assignment(
    data: AssignmentInput, disjoint: bool
) -> None:
    if disjoint:
        # Members on racks that hold no replica.
        members = [
            MemberSubscription(
                m.member_id, m.topics, "elsewhere", m.owned_partitions, m.generation_id
            )
            for m in data.members
        ]
        data = AssignmentInput(data.partitions, data.broker_racks, members)
    else:
        # Every partition has a replica on every member's rack.
        broker_racks = {0: "r0", 1: "r1", 2: "r2"}
        partitions = {
            t: [PartitionReplicas(p.partition, [0, 1, 2]) for p in ps]
            for t, ps in data.partitions.items()
        }
        members = [
            MemberSubscription(
                m.member_id, m.topics, RACK_NAMES[i % 3], m.owned_partitions, m.generation_id
            )
            for i, m in enumerate(data.members)
        ]
        data = AssignmentInput(partitions, broker_racks, members)
    plain = strip_member_racks(data)
    for cls in RACK_AWARE:
        assert cls().assign(data) == cls().assign(plain)


@PROPS
@given(data=scenarios(owned=True))
def test_property_sticky_rebalance_with_same_members_moves_nothing(data: AssignmentInput) -> None:
    for input_ in (data, strip_member_racks(data)):
        first = StickyPartitionAssignor().assign(input_)
        again = with_owned(input_, first, 2)
        assert StickyPartitionAssignor().assign(again) == first
        assert CooperativeStickyAssignor().assign(again) == first


@PROPS
@given(data=scenarios(owned=True, homogeneous=True))
def test_property_sticky_keeps_as_many_owned_as_balance_allows(data: AssignmentInput) -> None:
    data = strip_member_racks(data)
    result = StickyPartitionAssignor().assign(data)
    total = sum(len(v) for v in result.values())
    quota, extra = divmod(total, len(data.members))
    owned = [len(m.owned_partitions) for m in data.members]
    best = sum(min(o, quota) for o in owned) + min(sum(1 for o in owned if o > quota), extra)
    assert kept(data, result) == best


@PROPS
@given(data=scenarios(owned=True))
def test_property_cooperative_follow_up_completes(data: AssignmentInput) -> None:
    target = StickyPartitionAssignor().assign(data)
    first = CooperativeStickyAssignor().assign(data)
    second = CooperativeStickyAssignor().assign(with_owned(data, first, 2))
    check_valid(data, second)
    for m, tps in first.items():
        assert set(tps) <= set(second[m])
    assert sorted(loads(second).values()) == sorted(loads(target).values())
    if sticky_rack_aware(data):  # both optimal for racks; else plain sticky decides
        assert matched(data, second) == matched(data, target)


def brute_force_best(data: AssignmentInput, rack_aware: bool) -> tuple[tuple[int, ...], int, int]:
    """The best (balance, rack matches, kept owned) over every possible assignment."""
    wanted = subscribed_partitions(data)
    tps = sorted(wanted)
    best: tuple[tuple[int, ...], int, int] | None = None
    for choice in itertools.product(*(sorted(wanted[tp]) for tp in tps)):
        assignment: dict[str, list[TP]] = {m.member_id: [] for m in data.members}
        for tp, m in zip(tps, choice):
            assignment[m].append(tp)
        score = objective(data, assignment, rack_aware)
        if best is None or score < best:
            best = score
    assert best is not None
    return best


def objective(
    data: AssignmentInput, assignment: Assignment, rack_aware: bool
) -> tuple[tuple[int, ...], int, int]:
    balance = tuple(sorted(loads(assignment).values(), reverse=True))
    return balance, -matched(data, assignment) if rack_aware else 0, -kept(data, assignment)


def sticky_rack_aware(data: AssignmentInput) -> bool:
    consumer = {m.rack for m in data.members if m.rack}
    per_partition = [replica_racks(data, tp) for tp in subscribed_partitions(data)]
    every = set().union(*per_partition) if per_partition else set()
    if not consumer or consumer.isdisjoint(every):
        return False
    return any(r != every or not consumer <= r for r in per_partition)


@PROPS
@given(data=scenarios(owned=True, max_members=3, max_partitions=3, max_topics=2))
def test_property_sticky_is_optimal_on_small_groups(data: AssignmentInput) -> None:
    if len(subscribed_partitions(data)) > 7:
        data = AssignmentInput(
            {t: list(p)[:2] for t, p in data.partitions.items()}, data.broker_racks, data.members
        )
        data = with_owned(
            data,
            {
                m.member_id: [tp for tp in m.owned_partitions if tp.partition < 2]
                for m in data.members
            },
        )
    result = StickyPartitionAssignor().assign(data)
    rack_aware = sticky_rack_aware(data)
    assert objective(data, result, rack_aware) == brute_force_best(data, rack_aware)


def co_partitioned_single_group_best(data: AssignmentInput, topics: Iterable[str]) -> int:
    """Most rack matches over range-shaped assignments of co-partitioned ``topics``."""
    topics = list(topics)
    subs = [m for m in data.members if set(topics) <= set(m.topics)]
    count = len(data.partitions[topics[0]])
    per, extra = divmod(count, len(subs))
    best = -1
    for choice in itertools.product(range(len(subs)), repeat=count):
        sizes = sorted(Counter(choice)[i] for i in range(len(subs)))
        if sizes != sorted([per + 1] * extra + [per] * (len(subs) - extra)):
            continue
        assignment = {m.member_id: [] for m in data.members}
        for p, i in enumerate(choice):
            for t in topics:
                assignment[subs[i].member_id].append(TP(t, p))
        best = max(best, matched(data, assignment))
    return best


@PROPS
@given(
    data=scenarios(homogeneous=True, max_members=3, max_partitions=5, max_topics=2),
    same_count=st.booleans(),
)
def test_property_range_is_optimal_on_small_groups(data: AssignmentInput, same_count: bool) -> None:
    topics = sorted({t for m in data.members for t in m.topics})
    if same_count:
        n = len(data.partitions[topics[0]])
        parts = {t: list(data.partitions[t])[:n] for t in topics}
        if any(len(p) != n for p in parts.values()):
            return
    else:
        topics = topics[:1]
        parts = {topics[0]: list(data.partitions[topics[0]])}
    members = [MemberSubscription(m.member_id, topics, m.rack_id) for m in data.members]
    data = AssignmentInput(parts, data.broker_racks, members)
    result = RangePartitionAssignor().assign(data)
    plain = RangePartitionAssignor().assign(strip_member_racks(data))
    needs = any(
        sticky_rack_aware(AssignmentInput({t: parts[t]}, data.broker_racks, members))
        for t in topics
    )
    if needs:
        assert matched(data, result) == co_partitioned_single_group_best(data, topics)
    else:
        assert result == plain
