"""Runs of same-layout records cut into Arrow columns in bulk (the source's hot path).

The batches of record tuples that ``parts_to_arrow`` builds are the reference: the
same records handed out as runs (``RecordBatch.records(None, True)``) must give equal
Arrow batches, whatever the layout, the cut points and the mix of runs and tuples.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow", reason="the spark extra (pyarrow) is not installed")

from rackafka.records import iter_batches  # noqa: E402
from rackafka.records._columns import Run, count_records, pieces_from  # noqa: E402
from rackafka.records.builder import BatchBuilder  # noqa: E402
from rackafka.records.compression import CODEC_LZ4, CODEC_NONE  # noqa: E402
from rackafka.spark import _runs  # noqa: E402
from rackafka.spark._runs import cut_pieces, pieces_to_arrow, pieces_to_batches  # noqa: E402
from rackafka.spark.planning import OffsetRange  # noqa: E402
from rackafka.spark.reader import arrow_schema, parts_to_arrow, read_range  # noqa: E402
from rackafka.testing import EmbeddedCluster  # noqa: E402

TS = 1_700_000_000_000


def batch_pieces(
    n: int,
    value_size: int,
    key_size: int | None,
    odd: list[int],
    ts_step: int,
    codec: int,
    log_append: bool,
    base_offset: int = 100,
) -> tuple[list[Any], list[Any]]:
    """A batch of ``n`` records of one layout but at the indexes ``odd`` (a record with
    other sizes, headers, a null value...): its record tuples and its pieces."""
    builder = BatchBuilder(
        base_offset=base_offset,
        compression=codec,
        timestamp_type=1 if log_append else 0,
        log_append_time=TS + 99 if log_append else None,
    )
    kinds = ["bigger", "header", "null", "nullkey", "ts"]
    for i in range(n):
        key = None if key_size is None else bytes([i % 251]) * key_size
        value: bytes | None = b"%05d" % i + b"v" * value_size
        headers: list[tuple[str, bytes | None]] = []
        ts = TS + (i * ts_step) % 60
        if i in odd:
            kind = kinds[i % len(kinds)]
            if kind == "bigger":
                value = (value or b"") + b"+"
            elif kind == "header":
                headers = [("h", b"%d" % i), ("n", None)]
            elif kind == "null":
                value = None
            elif kind == "nullkey":
                key = b"k" if key is None else None
            else:
                ts = TS + 5000
        builder.append(ts, key, value, headers)
    (batch,) = iter_batches(builder.build())
    return batch.records(), batch.records(None, True)


layouts = st.fixed_dictionaries(
    {
        "n": st.integers(min_value=0, max_value=1500),
        "value_size": st.sampled_from([0, 3, 95, 600]),
        "key_size": st.sampled_from([None, 0, 8]),
        "odd": st.lists(st.integers(min_value=0, max_value=1499), max_size=5),
        "ts_step": st.sampled_from([0, 1, 7]),
        "codec": st.sampled_from([CODEC_NONE, CODEC_LZ4]),
        "log_append": st.booleans(),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    layout=layouts,
    cuts=st.tuples(
        st.integers(min_value=0, max_value=1600), st.integers(min_value=0, max_value=1600)
    ),
    min_arrow_run=st.sampled_from([1, 48, 512]),
    headers=st.booleans(),
)
def test_runs_give_the_arrow_batch_of_their_records(
    layout: dict[str, Any], cuts: tuple[int, int], min_arrow_run: int, headers: bool
) -> None:
    records, pieces = batch_pieces(**layout)
    assert count_records(pieces) == len(records)
    start, end = 100 + min(cuts), 100 + max(cuts)
    expected = [r for r in records if start <= r[0] < end]
    got = cut_pieces(pieces_from(pieces, start), end)
    assert count_records(got) == len(expected)
    if not records:
        return
    schema = arrow_schema(headers)
    saved = _runs.MIN_ARROW_RUN
    _runs.MIN_ARROW_RUN = min_arrow_run
    try:
        parts = [("t", 3, got), ("u", 0, pieces)] if got else [("u", 0, pieces)]
        batch = pieces_to_arrow(parts, schema, parts_to_arrow)
    finally:
        _runs.MIN_ARROW_RUN = saved
    reference = [("t", 3, expected), ("u", 0, records)] if got else [("u", 0, records)]
    want = parts_to_arrow(reference, schema)
    batch.validate(full=True)
    assert batch.schema.equals(schema)
    assert in_partition_order(batch.to_pylist()) == want.to_pylist()


def in_partition_order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` by topic and partition, after checking that the rows of each partition
    are in offset order (the batches of several partitions may come in any order)."""
    by_tp: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        by_tp.setdefault((row["topic"], row["partition"]), []).append(row)
    for part in by_tp.values():
        offsets = [row["offset"] for row in part]
        assert offsets == sorted(offsets)
    return [row for tp in sorted(by_tp) for row in by_tp[tp]]


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=400),  # records
            st.integers(min_value=0, max_value=3),  # offsets skipped before the batch
            st.sampled_from([0, 1, 7]),  # timestamp step
            st.sampled_from([None, 4]),  # key size
            st.booleans(),  # one odd record
        ),
        min_size=1,
        max_size=4,
    ),
    codec=st.sampled_from([CODEC_NONE, CODEC_LZ4]),
    cuts=st.tuples(
        st.integers(min_value=0, max_value=1700), st.integers(min_value=0, max_value=1700)
    ),
    min_arrow_run=st.sampled_from([1, 16, 48]),
    huge_buffer=st.booleans(),
)
def test_runs_of_batches_in_one_buffer_give_the_arrow_batch_of_their_records(
    batches: list[tuple[int, int, int, int | None, bool]],
    codec: int,
    cuts: tuple[int, int],
    min_arrow_run: int,
    huge_buffer: bool,
) -> None:
    """Batches one after the other in one buffer (as a fetch gives them): runs of several
    batches, with gaps in their offsets, go into one Arrow batch (``huge_buffer``: as
    if the buffer were too large for int32 positions, cut run by run instead)."""
    data = []
    offset = 100
    for n, skip, ts_step, key_size, odd in batches:
        offset += skip
        builder = BatchBuilder(base_offset=offset, compression=codec)
        for i in range(n):
            key = None if key_size is None else bytes([i % 251]) * key_size
            value = b"%05d" % i + b"v" * (95 + (odd and i == n // 2))
            builder.append(TS + offset + (i * ts_step) % 60, key, value)
        offset += n
        data.append(builder.build())
    records, pieces = [], []
    for batch in iter_batches(b"".join(data)):
        records += batch.records()
        pieces += batch.records(None, True)
    assert count_records(pieces) == len(records)
    start, end = 100 + min(cuts), 100 + max(cuts)
    expected = [r for r in records if start <= r[0] < end]
    got = cut_pieces(pieces_from(pieces, start), end)
    if not expected:
        return
    schema = arrow_schema(False)
    saved = _runs.MIN_ARROW_RUN, _runs._MAX_POSITION
    _runs.MIN_ARROW_RUN = min_arrow_run
    if huge_buffer:
        _runs._MAX_POSITION = 0
    try:
        out = pieces_to_batches([("t", 3, got)], schema, parts_to_arrow)
    finally:
        _runs.MIN_ARROW_RUN, _runs._MAX_POSITION = saved
    for b in out:
        b.validate(full=True)
        assert b.schema.equals(schema)
    rows = [row for b in out for row in b.to_pylist()]
    assert rows == parts_to_arrow([("t", 3, expected)], schema).to_pylist()


def test_partitions_with_few_records_in_runs_share_one_arrow_batch() -> None:
    big, big_pieces = batch_pieces(3000, 95, None, [], 1, CODEC_NONE, False)
    small, small_pieces = batch_pieces(300, 95, 8, [], 1, CODEC_NONE, False)
    other, other_pieces = batch_pieces(12, 95, None, [], 0, CODEC_NONE, False)
    assert len(small_pieces) < len(small) and len(other_pieces) == len(other)
    schema = arrow_schema(False)
    parts = [("s", 1, small_pieces), ("b", 0, big_pieces), ("o", 2, other_pieces)]
    batches = pieces_to_batches(parts, schema, parts_to_arrow)
    # the big partition's runs in a batch of their own, then the two others together
    assert [b.num_rows for b in batches] == [3000, 312]
    assert set(batches[0].column("topic").to_pylist()) == {"b"}
    rows = [row for b in batches for row in b.to_pylist()]
    reference = parts_to_arrow([("b", 0, big), ("o", 2, other), ("s", 1, small)], schema)
    assert in_partition_order(rows) == reference.to_pylist()


def test_the_long_runs_of_a_partition_in_one_buffer_make_one_arrow_batch() -> None:
    data = [BatchBuilder(base_offset=b * 1000, compression=CODEC_NONE) for b in range(3)]
    for b, builder in enumerate(data):
        for i in range(900):
            builder.append(TS + b, None, b"%05d" % i + b"v" * 95)
    records, pieces = [], []
    for batch in iter_batches(b"".join(builder.build() for builder in data)):
        records += batch.records()
        pieces += batch.records(None, True)
    assert [type(p) for p in pieces] == [Run, Run] * 3
    schema = arrow_schema(True)
    (batch,) = pieces_to_batches([("t", 0, pieces)], schema, parts_to_arrow)
    assert batch.to_pylist() == parts_to_arrow([("t", 0, records)], schema).to_pylist()


def test_a_long_uniform_batch_is_one_run_cut_in_arrow() -> None:
    records, pieces = batch_pieces(5000, 95, None, [], 1, CODEC_NONE, False)
    # two runs: offset deltas of one-byte varints (0-63), then of two
    assert [type(p) for p in pieces] == [Run, Run] and pieces[0].records == 64
    schema = arrow_schema(False)
    batch = pieces_to_arrow([("t", 0, pieces)], schema, parts_to_arrow)
    assert batch.to_pylist() == parts_to_arrow([("t", 0, records)], schema).to_pylist()


@pytest.mark.fault_injection
def test_ranges_that_start_and_end_inside_runs(embedded_cluster: EmbeddedCluster) -> None:
    """Large batches of fixed-size records, read from and to offsets inside them."""
    from rackafka.spark.options import parse_options

    cluster = embedded_cluster
    cluster.create_topic("runs", 1)
    count = 6000
    cluster.produce(
        "runs",
        count,
        value=lambda i: b"%06d" % i + b"r" * 94,
        partition=0,
        batch_size=300_000,
        linger_ms=50,
    )
    opts = parse_options(
        {"kafka.bootstrap.servers": cluster.bootstrap_servers, "subscribe": "unused"},
        streaming=False,
    )
    for start, end in ((0, count), (1, 2), (17, 4099), (2500, 5999), (3001, 3002)):
        batches = list(read_range(opts, OffsetRange("runs", 0, start, end), arrow_schema(True)))
        rows = [row for b in batches for row in b.to_pylist()]
        assert [r["offset"] for r in rows] == list(range(start, end))
        assert [r["value"] for r in rows] == [b"%06d" % i + b"r" * 94 for i in range(start, end)]
        assert {r["key"] for r in rows} == {None} and {r["headers"] for r in rows} == {None}


@pytest.mark.fault_injection
def test_runs_are_handed_out_only_as_record_tuples(embedded_cluster: EmbeddedCluster) -> None:
    import asyncio

    from rackafka.consumer.consumer import AIOKafkaConsumer

    async def main() -> None:
        consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
            bootstrap_servers=embedded_cluster.bootstrap_servers
        )
        await consumer.start()
        try:
            with pytest.raises(ValueError, match="record_tuples"):
                consumer._fetcher.hand_out_runs()  # type: ignore[union-attr]
        finally:
            await consumer.stop()

    asyncio.run(main())
