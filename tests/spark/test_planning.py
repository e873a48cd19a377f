"""Offset planning of the ``rackafka`` source: pure functions, and ``describe`` on a cluster.

The pure functions decide which records every Spark task reads, so they are checked for
exact outcomes and, where a property must hold for any input (splitting, rate limiting),
with hypothesis. ``describe`` asks the embedded cluster.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Mapping
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.errors import KafkaError
from rackafka.spark.options import (
    EARLIEST,
    LATEST,
    InvalidOptionError,
    OffsetSpec,
    SourceOptions,
    parse_options,
)
from rackafka.spark.planning import (
    DataLossError,
    OffsetRange,
    Snapshot,
    describe,
    group_ranges,
    limit_range_size,
    offsets_from_json,
    offsets_to_json,
    plan_ranges,
    rate_limit,
    resolve_offsets,
    split_ranges,
)
from rackafka.structs import TopicPartition
from rackafka.testing import EmbeddedCluster

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)

SNAPSHOT = Snapshot(earliest={A0: 10, A1: 0, B0: 5}, latest={A0: 100, A1: 40, B0: 5})


# -- resolve_offsets ------------------------------------------------------------------------------


def test_resolve_earliest_and_latest() -> None:
    assert resolve_offsets(OffsetSpec("earliest"), SNAPSHOT, "startingOffsets") == {
        A0: 10,
        A1: 0,
        B0: 5,
    }
    assert resolve_offsets(OffsetSpec("latest"), SNAPSHOT, "endingOffsets") == {
        A0: 100,
        A1: 40,
        B0: 5,
    }


def test_resolve_json_offsets_with_placeholders() -> None:
    spec = OffsetSpec("offsets", {("a", 0): 42, ("a", 1): EARLIEST, ("b", 0): LATEST})
    assert resolve_offsets(spec, SNAPSHOT, "startingOffsets") == {A0: 42, A1: 0, B0: 5}


def test_resolve_returns_a_copy() -> None:
    out = resolve_offsets(OffsetSpec("latest"), SNAPSHOT, "endingOffsets")
    out[A0] = 0
    assert SNAPSHOT.latest[A0] == 100


def test_resolve_json_offsets_missing_a_partition() -> None:
    spec = OffsetSpec("offsets", {("a", 0): 42, ("b", 0): 1})
    with pytest.raises(InvalidOptionError, match=r"startingOffsets.*missing: a-1"):
        resolve_offsets(spec, SNAPSHOT, "startingOffsets")


def test_resolve_json_offsets_naming_unknown_partitions() -> None:
    spec = OffsetSpec(
        "offsets", {("a", 0): 1, ("a", 1): 1, ("b", 0): 1, ("a", 7): 3, ("zzz", 0): 0}
    )
    with pytest.raises(InvalidOptionError, match=r"endingOffsets.*a-7, zzz-0"):
        resolve_offsets(spec, SNAPSHOT, "endingOffsets")


TIMED = Snapshot(
    earliest=SNAPSHOT.earliest,
    latest=SNAPSHOT.latest,
    by_time={(A0, 500): 60, (A1, 500): None, (B0, 500): 5, (A0, 7): 120, (A1, 9): 3},
)


def test_resolve_one_timestamp_for_every_partition() -> None:
    spec = OffsetSpec("timestamp", timestamp=500)
    # A partition without a record that late: its latest offset, or an error (the strategy).
    assert resolve_offsets(spec, TIMED, "startingTimestamp", "latest") == {A0: 60, A1: 40, B0: 5}
    with pytest.raises(InvalidOptionError, match=r"startingTimestamp: a-1 .*500.*Strategy"):
        resolve_offsets(spec, TIMED, "startingTimestamp", "error")
    # The end of a batch read takes the latest offset (Spark's endingTimestamp).
    assert resolve_offsets(spec, TIMED, "endingTimestamp") == {A0: 60, A1: 40, B0: 5}


def test_resolve_offsets_by_timestamp() -> None:
    spec = OffsetSpec("timestamps", {("a", 0): 7, ("a", 1): 9, ("b", 0): 500})
    # An answer past the latest (stable) offset is cut to it.
    assert resolve_offsets(spec, TIMED, "startingOffsetsByTimestamp", "error") == {
        A0: 100,
        A1: 3,
        B0: 5,
    }
    partial = OffsetSpec("timestamps", {("a", 0): 7, ("b", 0): 500})
    with pytest.raises(InvalidOptionError, match=r"a timestamp for every partition.*a-1"):
        resolve_offsets(partial, TIMED, "startingOffsetsByTimestamp")
    unknown = OffsetSpec("timestamps", {("a", 0): 7, ("a", 1): 9, ("b", 0): 500, ("c", 0): 1})
    with pytest.raises(InvalidOptionError, match=r"endingOffsetsByTimestamp.*c-0"):
        resolve_offsets(unknown, TIMED, "endingOffsetsByTimestamp")


def test_offsets_behind_latest() -> None:
    from rackafka.spark.planning import offsets_behind_latest

    latest = {A0: 100, A1: 40, B0: 5}
    assert offsets_behind_latest({A0: 90, A1: 40, B0: 5}, latest) == {
        "avgOffsetsBehindLatest": str(10 / 3),
        "maxOffsetsBehindLatest": "10",
        "minOffsetsBehindLatest": "0",
    }
    # A partition not consumed yet is behind by all of it; ahead counts as zero.
    assert offsets_behind_latest({A0: 120}, {A0: 100, A1: 40})["maxOffsetsBehindLatest"] == "40"
    assert offsets_behind_latest({A0: 1}, {}) == {}


def test_source_metrics_from_a_progress() -> None:
    from rackafka.spark import source_metrics

    progress = {
        "endOffset": '{"a":{"0":90,"1":40}}',
        "latestOffset": {"a": {"0": 100, "1": 40}},
    }
    assert source_metrics(progress) == {
        "avgOffsetsBehindLatest": "5.0",
        "maxOffsetsBehindLatest": "10",
        "minOffsetsBehindLatest": "0",
    }
    assert source_metrics({"endOffset": '{"a":{"0":1}}', "latestOffset": None}) == {}
    assert source_metrics({}) == {}


# -- plan_ranges ----------------------------------------------------------------------------------


def test_plan_ranges_simple() -> None:
    start = {A0: 20, A1: 0, B0: 5}
    end = {A0: 60, A1: 40, B0: 5}
    assert plan_ranges(start, end, SNAPSHOT.earliest, True) == [
        OffsetRange("a", 0, 20, 60),
        OffsetRange("a", 1, 0, 40),
        # b-0 is empty: no task for it.
    ]


def test_offset_range_properties() -> None:
    r = OffsetRange("a", 1, 5, 25)
    assert r.tp == A1
    assert r.size == 20
    assert OffsetRange("a", 1, EARLIEST, 25).size == 0


def test_plan_ranges_new_partition_with_earliest_known() -> None:
    # a-1 appeared since the start offsets were taken: it is read from its earliest offset.
    assert plan_ranges({A0: 20}, {A0: 30, A1: 40}, {A0: 10, A1: 3}, True) == [
        OffsetRange("a", 0, 20, 30),
        OffsetRange("a", 1, 3, 40),
    ]


def test_plan_ranges_new_partition_without_earliest() -> None:
    # A stream does not ask the cluster when planning: the task resolves EARLIEST itself.
    assert plan_ranges({A0: 20}, {A0: 30, A1: 40}, None, True) == [
        OffsetRange("a", 0, 20, 30),
        OffsetRange("a", 1, EARLIEST, 40),
    ]


def test_plan_ranges_records_gone_below_the_start_fail() -> None:
    with pytest.raises(DataLossError, match=r"offsets 2 to 9 of a-0 are gone.*failOnDataLoss"):
        plan_ranges({A0: 2}, {A0: 30}, {A0: 10}, True)


def test_plan_ranges_records_gone_below_the_start_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="rackafka.spark"):
        ranges = plan_ranges({A0: 2, A1: 0}, {A0: 30, A1: 5}, {A0: 10, A1: 0}, False)
    assert ranges == [OffsetRange("a", 0, 10, 30), OffsetRange("a", 1, 0, 5)]
    assert "offsets 2 to 9 of a-0 are gone" in caplog.text


def test_plan_ranges_everything_gone_go_on() -> None:
    # Retention removed more than the range: nothing is left to read in it.
    assert plan_ranges({A0: 2}, {A0: 8}, {A0: 10}, False) == []


def test_plan_ranges_gone_partition_fails() -> None:
    with pytest.raises(DataLossError, match=r"partition b-0 is gone.*from offset 7"):
        plan_ranges({A0: 0, B0: 7}, {A0: 3}, None, True)


def test_plan_ranges_gone_partition_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="rackafka.spark"):
        assert plan_ranges({A0: 0, B0: 7}, {A0: 3}, None, False) == [OffsetRange("a", 0, 0, 3)]
    assert "partition b-0 is gone" in caplog.text


def test_plan_ranges_truncated_partition_fails() -> None:
    with pytest.raises(DataLossError, match=r"a-0 ends at offset 50, before offset 80"):
        plan_ranges({A0: 80}, {A0: 50}, None, True)
    with pytest.raises(DataLossError, match=r"a-0 ends at offset 50, before offset 80"):
        plan_ranges({A0: 80}, {A0: 50}, {A0: 0}, True)


def test_plan_ranges_truncated_partition_without_earliest_reads_from_the_beginning() -> None:
    # Re-created partition in a stream: what it holds now up to the end is read.
    assert plan_ranges({A0: 80}, {A0: 50}, None, False) == [OffsetRange("a", 0, EARLIEST, 50)]


def test_plan_ranges_truncated_partition_with_earliest() -> None:
    assert plan_ranges({A0: 80}, {A0: 50}, {A0: 20}, False) == [OffsetRange("a", 0, 20, 50)]
    # Nothing left between its earliest offset and the end.
    assert plan_ranges({A0: 80}, {A0: 50}, {A0: 50}, False) == []


def test_plan_ranges_no_loss_at_the_earliest_offset() -> None:
    # Starting exactly at the earliest offset is not data loss.
    assert plan_ranges({A0: 10}, {A0: 12}, {A0: 10}, True) == [OffsetRange("a", 0, 10, 12)]


def test_plan_ranges_are_sorted() -> None:
    tps = [TopicPartition(t, p) for t in ("z", "b", "m") for p in (2, 0, 1)]
    ranges = plan_ranges(dict.fromkeys(tps, 0), dict.fromkeys(tps, 3), None, True)
    assert [(r.topic, r.partition) for r in ranges] == sorted(
        (tp.topic, tp.partition) for tp in tps
    )


# -- split_ranges ---------------------------------------------------------------------------------


def test_split_ranges_no_minimum() -> None:
    ranges = [OffsetRange("a", 0, 0, 100)]
    assert split_ranges(ranges, None) == ranges
    assert split_ranges(ranges, 1) == ranges


def test_split_ranges_example() -> None:
    ranges = [OffsetRange("a", 0, 0, 90), OffsetRange("a", 1, 100, 130)]
    assert split_ranges(ranges, 4) == [
        OffsetRange("a", 0, 0, 30),
        OffsetRange("a", 0, 30, 60),
        OffsetRange("a", 0, 60, 90),
        OffsetRange("a", 1, 100, 130),
    ]


def test_split_ranges_equal_sizes_reach_the_minimum() -> None:
    ranges = [OffsetRange("a", p, 0, 10) for p in range(3)]
    assert len(split_ranges(ranges, 4)) >= 4


def test_split_ranges_leaves_unknown_starts_alone() -> None:
    ranges = [OffsetRange("a", 0, EARLIEST, 100), OffsetRange("a", 1, 0, 10)]
    out = split_ranges(ranges, 5)
    assert out[0] == ranges[0]
    assert len(out) >= 5
    assert out[1].start == 0 and out[-1].end == 10
    assert all(a.end == b.start and a.size > 0 for a, b in pairwise(out[1:]))


ranges_strategy = st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(0, 200)), min_size=0, max_size=8
).map(lambda rs: [OffsetRange("t", i, s, s + n) for i, (s, n) in enumerate(rs)])


@settings(max_examples=100, deadline=None)
@given(ranges=ranges_strategy, min_partitions=st.one_of(st.none(), st.integers(1, 300)))
def test_split_ranges_property(ranges: list[OffsetRange], min_partitions: int | None) -> None:
    out = split_ranges(ranges, min_partitions)
    # Each range becomes contiguous pieces that cover it exactly, in order, none empty
    # unless the range itself was empty.
    pieces: dict[int, list[OffsetRange]] = {}
    for r in out:
        pieces.setdefault(r.partition, []).append(r)
    assert sorted(pieces) == [r.partition for r in ranges]
    for r in ranges:
        mine = pieces[r.partition]
        assert mine[0].start == r.start and mine[-1].end == r.end
        for a, b in pairwise(mine):
            assert a.end == b.start
        if len(mine) > 1:
            assert all(p.size >= 1 for p in mine)
        assert sum(p.size for p in mine) == r.size
    # Order of the input kept.
    assert [r.partition for r in out] == sorted(r.partition for r in out)
    # At least min_partitions pieces when the sizes allow it.
    if min_partitions:
        most = sum(max(1, r.size) for r in ranges)
        assert len(out) >= min(min_partitions, most)
    else:
        assert out == ranges


# -- limit_range_size (maxRecordsPerPartition) ---------------------------------------------------


def test_limit_range_size_example() -> None:
    ranges = [
        OffsetRange("a", 0, 0, 100),
        OffsetRange("a", 1, 5, 35),
        OffsetRange("b", 0, EARLIEST, 500),
    ]
    assert limit_range_size(ranges, None) == ranges
    assert limit_range_size(ranges, 30) == [
        OffsetRange("a", 0, 0, 25),
        OffsetRange("a", 0, 25, 50),
        OffsetRange("a", 0, 50, 75),
        OffsetRange("a", 0, 75, 100),
        OffsetRange("a", 1, 5, 35),
        # Its size is not known before the task starts: left whole.
        OffsetRange("b", 0, EARLIEST, 500),
    ]


@settings(max_examples=100, deadline=None)
@given(ranges=ranges_strategy, max_records=st.integers(1, 250))
def test_limit_range_size_property(ranges: list[OffsetRange], max_records: int) -> None:
    out = limit_range_size(ranges, max_records)
    for r in ranges:
        mine = [p for p in out if p.partition == r.partition]
        assert mine[0].start == r.start and mine[-1].end == r.end
        assert all(a.end == b.start for a, b in pairwise(mine))
        assert all(p.size <= max_records for p in mine)
        # As few pieces as the limit allows, none empty.
        assert len(mine) == max(1, -(-r.size // max_records))
        if len(mine) > 1:
            assert all(p.size >= 1 for p in mine)


# -- group_ranges (rackafka.offsetsPerTask) -------------------------------------------------------


def test_group_ranges_packs_small_ranges_together() -> None:
    ranges = [OffsetRange("t", p, 0, 10) for p in range(6)]
    tasks = group_ranges(ranges, 1_000_000)
    assert tasks == [tuple(ranges)]
    assert group_ranges([], 10) == []


def test_group_ranges_never_puts_one_partition_twice_in_a_task() -> None:
    pieces = [OffsetRange("t", 0, 0, 10), OffsetRange("t", 0, 10, 20), OffsetRange("t", 1, 0, 5)]
    tasks = group_ranges(pieces, 1_000_000)
    assert len(tasks) == 2
    for task in tasks:
        assert len({r.tp for r in task}) == len(task)
    assert sorted((r for task in tasks for r in task), key=repr) == sorted(pieces, key=repr)


def test_group_ranges_min_tasks() -> None:
    ranges = [OffsetRange("t", p, 0, 10) for p in range(6)]
    assert len(group_ranges(ranges, 1_000_000, 4)) == 4
    # Never more tasks than ranges.
    assert len(group_ranges(ranges, 1_000_000, 40)) == 6


def test_group_ranges_offsets_per_task() -> None:
    ranges = [OffsetRange("t", p, 0, 100) for p in range(10)]
    tasks = group_ranges(ranges, 250)
    assert len(tasks) == 4  # ceil(1000 / 250)
    assert sorted(sum(r.size for r in task) for task in tasks) == [200, 200, 300, 300]


def test_group_ranges_many_pieces_of_one_partition() -> None:
    # maxRecordsPerPartition on one big partition: one task per piece.
    pieces = limit_range_size([OffsetRange("t", 0, 0, 2_000_000)], 1000)
    tasks = group_ranges(pieces, 1_000_000)
    assert len(tasks) == 2000
    assert sorted(t[0].start for t in tasks) == list(range(0, 2_000_000, 1000))


grouped_strategy = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 10**6), st.integers(0, 300)),
    min_size=0,
    max_size=12,
).map(lambda rs: [OffsetRange("t", p, EARLIEST if s % 7 == 0 else s, s + n) for p, s, n in rs])


@settings(max_examples=100, deadline=None)
@given(
    ranges=grouped_strategy,
    offsets_per_task=st.integers(1, 2000),
    min_tasks=st.one_of(st.none(), st.integers(1, 20)),
)
def test_group_ranges_property(
    ranges: list[OffsetRange], offsets_per_task: int, min_tasks: int | None
) -> None:
    # Pieces of one partition never overlap (as the planner makes them).
    seen: set[tuple[int, int]] = set()
    distinct = []
    for r in ranges:
        if (r.partition, r.start) not in seen:
            seen.add((r.partition, r.start))
            distinct.append(r)
    tasks = group_ranges(distinct, offsets_per_task, min_tasks)
    # Every range in exactly one task.
    flat = [r for task in tasks for r in task]
    assert sorted(flat, key=repr) == sorted(distinct, key=repr)
    for task in tasks:
        assert task  # no empty task
        assert len({r.tp for r in task}) == len(task)
    if not distinct:
        assert tasks == []
        return
    sizes = [max(1, r.size) for r in distinct]
    wanted = max(-(-sum(sizes) // offsets_per_task), min_tasks or 1)
    assert len(tasks) >= min(len(distinct), wanted)
    # More tasks than wanted only when a partition has more pieces than that.
    most_pieces = max(sum(1 for r in distinct if r.tp == tp) for tp in {r.tp for r in distinct})
    assert len(tasks) <= max(min(len(distinct), wanted), most_pieces)


# -- rate_limit -----------------------------------------------------------------------------------


def test_rate_limit_everything_fits() -> None:
    start = {A0: 0, A1: 10}
    latest = {A0: 5, A1: 12}
    assert rate_limit(start, latest, 7) == latest
    assert rate_limit(start, latest, 100) == latest


def test_rate_limit_in_proportion_to_lag() -> None:
    start = {A0: 0, A1: 100, B0: 7}
    latest = {A0: 300, A1: 200, B0: 7}
    # Lags 300 and 100, 40 rows: 30 and 10.
    assert rate_limit(start, latest, 40) == {A0: 30, A1: 110, B0: 7}


def test_rate_limit_largest_remainders() -> None:
    start = {A0: 0, A1: 0, B0: 0}
    latest = {A0: 10, A1: 10, B0: 10}
    out = rate_limit(start, latest, 2)
    assert sum(out.values()) == 2
    assert all(v in (0, 1) for v in out.values())


def test_rate_limit_truncated_partition_ends_at_latest() -> None:
    # start above latest (truncated): no lag, the end is latest and planning reports the loss.
    assert rate_limit({A0: 50, A1: 0}, {A0: 20, A1: 100}, 10) == {A0: 20, A1: 10}


def test_rate_limit_ignores_gone_partitions() -> None:
    assert rate_limit({A0: 0, B0: 3}, {A0: 100}, 10) == {A0: 10}


def test_rate_limit_is_exact_with_huge_numbers() -> None:
    # A float quotient rounds 2**54 * 2**54 / (2**54 + 1) up to 2**54 and admitted one
    # offset too many; shares are worked out in integers.
    big = 2**54
    start = {A0: 0, A1: 0}
    out = rate_limit(start, {A0: 1, A1: big}, big)
    assert out == {A0: 1, A1: big - 1}


lags_strategy = st.dictionaries(
    st.builds(TopicPartition, st.sampled_from(["a", "b", "c"]), st.integers(0, 5)),
    st.tuples(st.integers(0, 2**62), st.integers(0, 10**12)),
    min_size=1,
    max_size=10,
)


@settings(max_examples=100, deadline=None)
@given(positions=lags_strategy, max_rows=st.integers(1, 10**12))
def test_rate_limit_property(
    positions: dict[TopicPartition, tuple[int, int]], max_rows: int
) -> None:
    start = {tp: s for tp, (s, _lag) in positions.items()}
    latest = {tp: s + lag for tp, (s, lag) in positions.items()}
    out = rate_limit(start, latest, max_rows)
    assert set(out) == set(latest)
    total_lag = sum(latest[tp] - start[tp] for tp in latest)
    admitted = sum(out[tp] - start[tp] for tp in latest)
    assert admitted == min(max_rows, total_lag)
    for tp in latest:
        assert start[tp] <= out[tp] <= latest[tp]
    # Progress: a trigger with lag admits something, and a later one goes on from there
    # until everything is read.
    if total_lag:
        assert admitted >= 1


@settings(max_examples=50, deadline=None)
@given(
    lags=st.lists(st.integers(0, 500), min_size=1, max_size=6),
    max_rows=st.integers(1, 100),
)
def test_rate_limit_triggers_reach_the_latest_offsets(lags: list[int], max_rows: int) -> None:
    latest = {TopicPartition("t", p): lag for p, lag in enumerate(lags)}
    position = dict.fromkeys(latest, 0)
    triggers = 0
    while position != latest:
        nxt = rate_limit(position, latest, max_rows)
        assert sum(nxt[tp] - position[tp] for tp in latest) == min(
            max_rows, sum(latest[tp] - position[tp] for tp in latest)
        )
        position = nxt
        triggers += 1
    # Each trigger but the last admitted exactly max_rows.
    assert triggers == -(-sum(lags) // max_rows)


# -- JSON offsets ---------------------------------------------------------------------------------


def test_offsets_json_shape() -> None:
    assert offsets_to_json({A1: 7, B0: 0, A0: 12}) == {"a": {"0": 12, "1": 7}, "b": {"0": 0}}
    assert offsets_to_json({}) == {}


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.builds(TopicPartition, st.text(min_size=1, max_size=20), st.integers(0, 10**4)),
        st.integers(EARLIEST, 2**63 - 1),
        max_size=20,
    )
)
def test_offsets_json_round_trip(offsets: dict[TopicPartition, int]) -> None:
    data = offsets_to_json(offsets)
    # Through real JSON text, as Spark keeps it in the checkpoint.
    assert offsets_from_json(json.loads(json.dumps(data))) == offsets


@pytest.mark.parametrize(
    "data",
    [{"a": 5}, {"a": {"x": 1}}, {"a": {"0": "many"}}, {"a": [0, 1]}, {"a": {"0": None}}],
)
def test_offsets_from_json_refuses_other_data(data: Mapping[str, Mapping[str, int]]) -> None:
    with pytest.raises(ValueError, match="not offsets per partition"):
        offsets_from_json(data)


def test_offsets_from_json_refuses_a_list() -> None:
    with pytest.raises(ValueError, match="not offsets per partition"):
        offsets_from_json([1, 2])  # type: ignore[arg-type]


# -- describe against the embedded cluster --------------------------------------------------------


def options(cluster: EmbeddedCluster, **extra: str) -> SourceOptions:
    return parse_options(
        {"kafka.bootstrap.servers": cluster.bootstrap_servers, **extra}, streaming=False
    )


@pytest.fixture
def cluster(embedded_cluster: EmbeddedCluster) -> EmbeddedCluster:
    """Topics ``ev-1`` (3 partitions), ``ev-2`` (1), ``ev-x`` and ``pre-ev-1`` with data."""
    c = embedded_cluster
    c.create_topic("ev-1", 3)
    c.create_topic("ev-2", 1)
    c.create_topic("ev-x", 1)
    c.create_topic("pre-ev-1", 1)
    c.produce("ev-1", 30, partition="spread")  # 10 per partition
    c.produce("ev-2", 7, partition=0)
    c.produce("ev-x", 2, partition=0)
    c.produce("pre-ev-1", 1, partition=0)
    c.delete_records("ev-1", 1, 4)
    return c


def tps(topic: str, *partitions: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in partitions]


async def test_describe_subscribe(cluster: EmbeddedCluster) -> None:
    snap = await describe(options(cluster, subscribe="ev-2,ev-1,does-not-exist"))
    expected = [*tps("ev-1", 0, 1, 2), *tps("ev-2", 0)]
    assert sorted(snap.latest) == expected
    assert dict(snap.latest) == dict(zip(expected, [10, 10, 10, 7]))
    assert dict(snap.earliest) == dict(zip(expected, [0, 4, 0, 0]))


async def test_describe_subscribe_to_missing_topic_only(cluster: EmbeddedCluster) -> None:
    snap = await describe(options(cluster, subscribe="nothing-here"))
    assert dict(snap.latest) == {} and dict(snap.earliest) == {}


async def test_describe_subscribe_pattern_matches_whole_names(cluster: EmbeddedCluster) -> None:
    snap = await describe(options(cluster, subscribePattern=r"ev-\d"))
    assert sorted(snap.latest) == [*tps("ev-1", 0, 1, 2), *tps("ev-2", 0)]
    assert snap.latest[TopicPartition("ev-2", 0)] == 7
    assert snap.earliest[TopicPartition("ev-1", 1)] == 4


async def test_describe_assign(cluster: EmbeddedCluster) -> None:
    snap = await describe(options(cluster, assign='{"ev-1":[1,2],"ev-x":[0]}'))
    expected = [*tps("ev-1", 1, 2), *tps("ev-x", 0)]
    assert sorted(snap.latest) == expected
    assert dict(snap.latest) == dict(zip(expected, [10, 10, 2]))
    assert dict(snap.earliest) == dict(zip(expected, [4, 0, 0]))


async def test_describe_assign_of_a_missing_partition(cluster: EmbeddedCluster) -> None:
    opts = options(
        cluster, assign='{"ev-1":[0,5],"nope":[0]}', **{"fetchOffset.retryIntervalMs": "0"}
    )
    with pytest.raises(InvalidOptionError, match=r"assign.*ev-1-5.*nope-0") as info:
        await describe(opts)
    assert "ev-1-0" not in str(info.value)


async def test_describe_then_plan_a_batch(cluster: EmbeddedCluster) -> None:
    opts = options(cluster, subscribe="ev-1", startingOffsets='{"ev-1":{"0":3,"1":-2,"2":-2}}')
    snap = await describe(opts)
    start = resolve_offsets(opts.starting_or("earliest"), snap, "startingOffsets")
    end = resolve_offsets(opts.ending_or("latest"), snap, "endingOffsets")
    assert plan_ranges(start, end, snap.earliest, True) == [
        OffsetRange("ev-1", 0, 3, 10),
        OffsetRange("ev-1", 1, 4, 10),
        OffsetRange("ev-1", 2, 0, 10),
    ]


async def test_describe_unreachable_cluster_gives_up_after_the_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A port nothing listens on: the look-up fails and is retried fetchOffset.numRetries times.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    opts = parse_options(
        {
            "kafka.bootstrap.servers": f"127.0.0.1:{port}",
            "subscribe": "t",
            "fetchOffset.numRetries": "1",
            "fetchOffset.retryIntervalMs": "10",
            "kafka.request.timeout.ms": "500",
        },
        streaming=False,
    )
    with caplog.at_level(logging.WARNING, logger="rackafka.spark"), pytest.raises(KafkaError):
        await describe(opts)
    assert "retry 1 of 1" in caplog.text
    assert "retry 2" not in caplog.text
