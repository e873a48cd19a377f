"""The planner of the reassignment that gives every partition a replica in a rack."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.structs import TopicPartition
from rackafka.zones.reassign import plan_rack_reassignment

RACKS = {1: "az-a", 2: "az-b", 3: "az-c"}


def test_the_example_gives_kafkas_file_exactly() -> None:
    replicas = {
        TopicPartition("events", 0): [2, 3],  # no az-a, one per rack: RF 2 -> 3
        TopicPartition("events", 1): [3, 1],  # has az-a: left alone
        TopicPartition("events", 2): [3, 2, 5],  # az-c twice: 5 makes room, RF stays
        TopicPartition("orders", 0): [2],
    }
    racks = {**RACKS, 4: "az-a", 5: "az-c"}
    sizes = {
        TopicPartition("events", 0): 1000,
        TopicPartition("events", 1): 1000,
        TopicPartition("events", 2): 300,
    }
    plan = plan_rack_reassignment(replicas, racks, "az-a", sizes)
    # broker 1 holds events[1] (1000 B), broker 4 nothing: events[0] goes to 4; then 1 and 4
    # hold 1000 B and one replica each: events[2] to the lower id, 1 (now 1300 B); orders[0]
    # (size unknown) to 4, which holds fewer bytes.
    assert json.dumps(plan.kafka_json(), sort_keys=True) == json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": "events", "partition": 0, "replicas": [2, 3, 4]},
                {"topic": "events", "partition": 2, "replicas": [3, 2, 1]},
                {"topic": "orders", "partition": 0, "replicas": [2, 4]},
            ],
        },
        sort_keys=True,
    )
    assert plan.bytes_moved == 1300
    assert plan.grown == (TopicPartition("events", 0), TopicPartition("orders", 0))
    assert plan.unknown_sizes == (TopicPartition("orders", 0),)
    assert [c.removed for c in plan.changes] == [(), (5,), ()]
    assert plan.rollback_json()["partitions"][1] == {
        "topic": "events",
        "partition": 2,
        "replicas": [3, 2, 5],
    }
    assert plan.unfixable_racks == () and plan.unfixed == ()


def test_the_leader_never_makes_room() -> None:
    # az-b holds two replicas, the first and the current leader: no room, RF grows.
    tp = TopicPartition("t", 0)
    plan = plan_rack_reassignment({tp: [2, 4, 3]}, {**RACKS, 4: "az-b"}, "az-a", leaders={tp: 4})
    assert plan.reassignments() == {tp: [2, 4, 3, 1]}
    # without the leader given, 4 makes room (the first one, 2, never does)
    plan = plan_rack_reassignment({tp: [2, 4, 3]}, {**RACKS, 4: "az-b"}, "az-a")
    assert plan.reassignments() == {tp: [2, 1, 3]}


def test_a_rack_without_brokers_cannot_be_fixed() -> None:
    tp = TopicPartition("t", 0)
    plan = plan_rack_reassignment({tp: [2, 3]}, RACKS, ["az-a", "az-x"])
    assert plan.unfixable_racks == ("az-x",)
    assert plan.unfixed == (tp,)
    assert plan.reassignments() == {tp: [2, 3, 1]}


def test_the_load_spreads_over_the_racks_brokers() -> None:
    replicas = {TopicPartition("t", p): [2, 3] for p in range(6)}
    plan = plan_rack_reassignment(replicas, {**RACKS, 4: "az-a", 6: "az-a"}, "az-a")
    added = [c.added[0] for c in plan.changes]
    assert sorted(added) == [1, 1, 4, 4, 6, 6]
    # with sizes the bytes decide: the large partition alone on one broker
    sizes = {TopicPartition("t", p): 10 for p in range(6)}
    sizes[TopicPartition("t", 0)] = 1000
    plan = plan_rack_reassignment(replicas, {**RACKS, 4: "az-a"}, "az-a", sizes)
    assert [c.added[0] for c in plan.changes] == [1, 4, 4, 4, 4, 4]


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (([], RACKS, "az-a"), TypeError, "replicas"),
        (({("t", 0): [1]}, RACKS, "az-a"), TypeError, "TopicPartition"),
        (({TopicPartition("t", 0): []}, RACKS, "az-a"), ValueError, r"t\[0\]"),
        (({TopicPartition("t", 0): [1, 1]}, RACKS, "az-a"), ValueError, "distinct"),
        (({}, RACKS, []), ValueError, "racks"),
        (({}, RACKS, [""]), ValueError, "racks"),
    ],
)
def test_invalid_arguments_are_named(args: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        plan_rack_reassignment(*args)


# -- properties ----------------------------------------------------------------------------

rack_names = st.sampled_from(["az-a", "az-b", "az-c", "az-d"])


@st.composite
def clusters(draw: Any) -> tuple[Any, ...]:
    brokers = draw(
        st.dictionaries(
            st.integers(0, 12), st.one_of(st.none(), rack_names), min_size=1, max_size=8
        )
    )
    ids = sorted(brokers)
    partitions = {}
    sizes = {}
    leaders = {}
    for p in range(draw(st.integers(0, 12))):
        tp = TopicPartition(draw(st.sampled_from(["a", "b"])), p)
        # replicas may name a broker that is gone (not in the metadata's broker list)
        pool = [*ids, 99]
        replicas = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True))
        partitions[tp] = replicas
        if draw(st.booleans()):
            sizes[tp] = draw(st.integers(0, 10**9))
        if draw(st.booleans()):
            leaders[tp] = draw(st.sampled_from(replicas))
    wanted = draw(st.lists(rack_names, min_size=1, max_size=2, unique=True))
    return partitions, brokers, wanted, sizes, leaders


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_properties_of_every_plan(cluster: tuple[Any, ...]) -> None:
    partitions, brokers, wanted, sizes, leaders = cluster
    plan = plan_rack_reassignment(partitions, brokers, wanted, sizes, leaders=leaders)
    fixable = [r for r in wanted if any(v == r for v in brokers.values())]
    assert set(plan.unfixable_racks) == set(wanted) - set(fixable)

    def lacks(ids: Any, rack: str) -> bool:
        return not any(brokers.get(b) == rack for b in ids)

    changed = {c.tp: c for c in plan.changes}
    # only the partitions that lack a fixable rack are in the plan, each at most once
    assert set(changed) == {
        tp for tp, ids in partitions.items() if any(lacks(ids, r) for r in fixable)
    }
    assert len(changed) == len(plan.changes)
    assert set(plan.unfixed) == {
        tp for tp, ids in partitions.items() if any(lacks(ids, r) for r in plan.unfixable_racks)
    }
    for tp, c in changed.items():
        before, after = partitions[tp], list(c.replicas)
        assert list(c.current) == before
        # every fixable rack is there now
        assert not any(lacks(after, r) for r in fixable)
        # the leader stays first; the current leader stays
        assert after[0] == before[0]
        if tp in leaders:
            assert leaders[tp] in after
        # no duplicate; the new brokers exist and are in the racks that lacked one
        assert len(set(after)) == len(after)
        assert set(c.added) == set(after) - set(before)
        assert all(b in brokers for b in c.added)
        lacking = [r for r in fixable if lacks(before, r)]
        assert sorted(brokers[b] for b in c.added) == sorted(lacking)
        # one replica added or replaced per lacking rack
        assert len(c.added) == len(lacking)
        assert set(c.removed) == set(before) - set(after)
        assert len(after) == len(before) + len(c.added) - len(c.removed)
        # a replica makes room only from a rack that keeps another one
        for b in c.removed:
            assert brokers.get(b) is not None and not lacks(after, brokers[b])
        # the brokers that stayed keep their places (replaced ones are swapped in place)
        kept = [b for b in after if b in before]
        assert kept == [b for b in before if b in after]
    assert plan.bytes_moved == sum(sizes.get(c.tp, 0) * len(c.added) for c in plan.changes)
    for entry in plan.kafka_json()["partitions"]:
        assert changed[TopicPartition(entry["topic"], entry["partition"])].replicas == tuple(
            entry["replicas"]
        )
