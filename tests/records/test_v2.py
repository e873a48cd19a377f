"""Record batch v2: golden bytes, round trips, control and transactional batches."""

from __future__ import annotations

import gc
import struct
from functools import partial
from typing import Any, NamedTuple

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.errors import CorruptRecordException, UnsupportedCodecError
from rackafka.records import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    RECORD_FIELDS,
    BatchBuilder,
    RecordBatch,
    _gc,
    compress,
    encode_batch,
    encode_control_batch,
    iter_batches,
)
from rackafka.records._columns import MIN_RUN, Run, count_records, pieces_from

from .refcodec import batch_bytes, decode_records, record_bytes, zigzag_varint

ALL_CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]
TS = 1_700_000_000_000


def simple(batch: Any) -> list[tuple[Any, ...]]:
    """(offset, timestamp, key, value, headers) of each record."""
    return [(r[0], r[1], r[3], r[4], r[8]) for r in batch.records()]


# -- golden bytes built by hand ------------------------------------------------------------


def golden_batch() -> tuple[bytes, list[tuple[Any, ...]]]:
    """A batch written field by field with struct and crc32c, and its expected records."""
    # record 0: offset delta 0, ts delta 0, key b"k", value b"v0", one header h=x
    r0 = (
        b"\x00"  # attributes
        + b"\x00"  # timestamp delta 0
        + b"\x00"  # offset delta 0
        + b"\x02k"  # key length 1, "k"
        + b"\x04v0"  # value length 2, "v0"
        + b"\x02"  # 1 header
        + b"\x02h"  # header key length 1
        + b"\x02x"  # header value length 1
    )
    # record 1: offset delta 1, ts delta +300 (varint 0xd8 0x04), null key, null value,
    # a header with a null value
    r1 = b"\x00" + b"\xd8\x04" + b"\x02" + b"\x01" + b"\x01" + b"\x02" + b"\x04ab" + b"\x01"
    # record 2: offset delta 3 (a compaction gap), ts delta -1, empty key, 200-byte value
    value2 = bytes(range(200))
    r2 = b"\x00" + b"\x01" + b"\x06" + b"\x00" + b"\x90\x03" + value2 + b"\x00"
    records = (
        bytes([len(r0) * 2])
        + r0
        + bytes([len(r1) * 2])
        + r1
        + bytes([(len(r2) * 2) & 0x7F | 0x80, (len(r2) * 2) >> 7])
        + r2
    )
    base_ts = 1_600_000_000_000
    after_crc = (
        struct.pack(">hiqqqhii", 0x0010, 3, base_ts, base_ts + 300, 4242, 7, 11, 3) + records
    )
    crc = crc32c.crc32c(after_crc)
    body = struct.pack(">ibI", 9, 2, crc) + after_crc
    data = struct.pack(">qi", 1000, len(body)) + body
    expected = [
        (1000, base_ts, b"k", b"v0", (("h", b"x"),)),
        (1001, base_ts + 300, None, None, (("ab", None),)),
        (1003, base_ts - 1, b"", value2, ()),
    ]
    return data, expected


def test_golden_v2_batch() -> None:
    data, expected = golden_batch()
    (batch,) = iter_batches(data, topic="t", partition=3)
    assert isinstance(batch, RecordBatch)
    assert batch.base_offset == 1000
    assert batch.last_offset == 1003
    assert batch.next_offset == 1004
    assert batch.partition_leader_epoch == 9
    assert batch.magic == 2
    assert batch.is_transactional is True
    assert batch.is_control is False
    assert batch.producer_id == 4242
    assert batch.producer_epoch == 7
    assert batch.base_sequence == 11
    assert batch.record_count == 3
    assert batch.compression == CODEC_NONE
    assert batch.timestamp_type == 0
    assert batch.size_in_bytes == len(data)
    assert batch.control_type is None
    assert batch.delete_horizon_ms is None
    assert simple(batch) == expected
    first = batch.records()[0]
    assert dict(zip(RECORD_FIELDS, first)) == {
        "offset": 1000,
        "timestamp": 1_600_000_000_000,
        "timestamp_type": 0,
        "key": b"k",
        "value": b"v0",
        "checksum": None,
        "serialized_key_size": 1,
        "serialized_value_size": 2,
        "headers": (("h", b"x"),),
    }
    sizes = [(r[6], r[7]) for r in batch.records()]
    assert sizes == [(1, 2), (-1, -1), (0, 200)]


def test_golden_batch_matches_the_encoder() -> None:
    """The encoder writes the same bytes as the hand-built batch."""
    data, expected = golden_batch()
    builder = BatchBuilder(
        base_offset=1000,
        transactional=True,
        producer_id=4242,
        producer_epoch=7,
        base_sequence=11,
        partition_leader_epoch=9,
    )
    for offset, ts, key, value, headers in expected:
        builder.append(ts, key, value, list(headers), offset=offset)
    assert builder.build() == data


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    checksum: int | None
    serialized_key_size: int
    serialized_value_size: int
    headers: Any


def test_factory_builds_consumer_records() -> None:
    data, expected = golden_batch()
    (batch,) = iter_batches(data)
    records = batch.records(partial(ConsumerRecord, "topic", 3))
    assert [type(r) for r in records] == [ConsumerRecord] * 3
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == expected
    assert records[2].serialized_value_size == 200
    assert [tuple(r)[2:] for r in records] == batch.records()


@pytest.mark.parametrize("n", [3, 100])  # the scalar and the column decoder
def test_an_error_of_the_factory_is_not_taken_for_corrupt_data(n: int) -> None:
    data = encode_batch([(TS, None, b"v")] * n)
    (batch,) = iter_batches(data)

    def factory(*args: Any) -> Any:
        raise IndexError("a bug in the factory")

    with pytest.raises(IndexError, match="a bug in the factory"):
        batch.records(factory)


@pytest.fixture
def gc_restored() -> Any:
    """Start from the default thresholds, no raise of rackafka's in force (a collection);
    restore the collector's state whatever a test leaves it in."""
    enabled = gc.isenabled()
    threshold = gc.get_threshold()
    gc.set_threshold(*_gc.DEFAULT_THRESHOLD)
    gc.collect()
    yield
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_decoding_pauses_the_collector_and_gives_it_back(gc_restored: None) -> None:
    data = encode_batch([(TS, b"k%d" % i, b"v", [("h", b"x")]) for i in range(300)])
    (batch,) = iter_batches(data)
    seen: list[bool] = []

    def factory(*args: Any) -> tuple[Any, ...]:
        seen.append(gc.isenabled())
        return args

    gc.enable()
    assert len(batch.records(factory)) == 300
    assert seen == [False] * 300  # paused while the batch is decoded
    assert gc.isenabled()

    # An application that turned the collector off keeps it off.
    gc.disable()
    seen.clear()
    batch.records(factory)
    assert seen == [False] * 300 and not gc.isenabled()


def test_the_next_collection_waits_for_the_records_to_be_dropped(
    collections: list[int],
) -> None:
    data = encode_batch([(TS, b"k%d" % i, b"v", [("h", b"x%d" % i)]) for i in range(2000)])
    (batch,) = iter_batches(data)
    gc.collect()  # the encoding's objects do not count
    collections.clear()
    records = batch.records()
    assert gc.isenabled()
    # The records (and their headers) are counted as young objects, far past 700,
    # yet no collection walked them: the threshold is raised by what was counted.
    raised = gc.get_threshold()
    default = _gc.DEFAULT_THRESHOLD[0]
    assert raised[0] >= default + 2 * 2000 and raised[1:] == (10, 10)
    assert raised[0] <= default + _gc.MAX_RAISE
    assert collections == []
    # Another batch decoded meanwhile raises it from the application's threshold.
    batch.records()
    assert gc.get_threshold()[0] >= raised[0] and collections == []
    del records
    # The next collection gives the application its threshold back.
    gc.collect(0)
    assert gc.get_threshold() == _gc.DEFAULT_THRESHOLD


def test_the_application_s_collector_settings_are_kept(gc_restored: None) -> None:
    data = encode_batch([(TS, b"k%d" % i, b"v", [("h", b"x")]) for i in range(500)])
    (batch,) = iter_batches(data)
    default = _gc.DEFAULT_THRESHOLD
    gc.collect()
    gc.enable()
    # A threshold of 0 (no automatic collection) stays 0.
    gc.set_threshold(0, 10, 10)
    batch.records()
    assert gc.get_threshold() == (0, 10, 10)
    # A disabled collector keeps its threshold.
    gc.set_threshold(*default)
    gc.disable()
    batch.records()
    assert gc.get_threshold() == default and not gc.isenabled()
    # A threshold the application tuned is left as it is, even while a raised one of
    # rackafka's is in force: the collector runs during the decoding.
    gc.enable()
    batch.records()
    assert gc.get_threshold()[0] > default[0]
    seen: list[bool] = []

    def factory(*args: Any) -> tuple[Any, ...]:
        seen.append(gc.isenabled())
        return args

    for tuned in [(5000, 10, 10), (default[0], 20, 10), (default[0], 10, 5)]:
        gc.set_threshold(*tuned)
        seen.clear()
        batch.records(factory)
        assert gc.get_threshold() == tuned and seen == [True] * 500
    gc.collect(0)
    assert gc.get_threshold() == (default[0], 10, 5)


@pytest.mark.parametrize("n", [3, 100])
def test_the_collector_comes_back_after_an_error(n: int, gc_restored: None) -> None:
    gc.enable()
    data = encode_batch([(TS, None, b"v")] * n)
    (batch,) = iter_batches(data)

    def factory(*args: Any) -> Any:
        raise ValueError("a deserializer failed")

    with pytest.raises(ValueError, match="a deserializer failed"):
        batch.records(factory)
    assert gc.isenabled()

    (corrupt,) = iter_batches(data[:-1] + b"\x7f", check_crcs=False)
    with pytest.raises(CorruptRecordException):
        corrupt.records()
    assert gc.isenabled()


def test_log_append_time_replaces_record_timestamps() -> None:
    data = encode_batch(
        [(TS + i, None, b"v%d" % i) for i in range(40)],
        timestamp_type=1,
        log_append_time=TS + 5000,
    )
    (batch,) = iter_batches(data)
    assert batch.timestamp_type == 1
    assert {r[1] for r in batch.records()} == {TS + 5000}
    assert {r[2] for r in batch.records()} == {1}


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_ZSTD])
def test_log_append_time_with_all_timestamp_delta_sizes(codec: int) -> None:
    """Varied records (the scalar decoder) with 1, 2, 3 and 5 byte timestamp deltas."""
    deltas = [0, 5, -64, 300, -5000, 70_000, 2**33, 1, 2]
    records = [(TS + d, None, b"v" * (i * 3)) for i, d in enumerate(deltas)]
    data = encode_batch(records, timestamp_type=1, log_append_time=TS + 1, compression=codec)
    (batch,) = iter_batches(data)
    assert [(r[1], r[2], r[4]) for r in batch.records()] == [
        (TS + 1, 1, value) for _, _, value in records
    ]
    create_time = encode_batch(records, compression=codec)
    (batch,) = iter_batches(create_time)
    assert [(r[1], r[2]) for r in batch.records()] == [(ts, 0) for ts, _, _ in records]


def test_delete_horizon() -> None:
    data = encode_batch([(TS, b"k", None), (TS + 10, b"k2", b"v")], delete_horizon_ms=TS + 99)
    (batch,) = iter_batches(data)
    assert batch.has_delete_horizon
    assert batch.delete_horizon_ms == TS + 99
    assert simple(batch) == [(0, TS, b"k", None, ()), (1, TS + 10, b"k2", b"v", ())]


@pytest.mark.parametrize(("kind", "name"), [(CONTROL_ABORT, "abort"), (CONTROL_COMMIT, "commit")])
def test_control_batch(kind: int, name: str) -> None:
    data = encode_control_batch(
        kind, base_offset=77, producer_id=12, producer_epoch=3, coordinator_epoch=5
    )
    (batch,) = iter_batches(data)
    assert batch.is_control and batch.is_transactional
    assert batch.producer_id == 12
    assert batch.base_offset == 77 and batch.next_offset == 78
    assert batch.control_type == kind
    (record,) = batch.records()
    assert record[3] == struct.pack(">hh", 0, kind)
    assert record[4] == struct.pack(">hi", 0, 5)


def test_hand_built_control_batch() -> None:
    key = struct.pack(">hh", 0, 1)
    rec = record_bytes(0, 0, key, struct.pack(">hi", 0, 0))
    data = batch_bytes(rec, count=1, attributes=0x30, producer_id=5, base_offset=10)
    (batch,) = iter_batches(data)
    assert batch.is_control and batch.control_type == CONTROL_COMMIT


@pytest.mark.parametrize("key", [None, b"\x00\x00", b"\xff\xff\x00\x01"])
def test_invalid_control_record_key(key: bytes | None) -> None:
    rec = record_bytes(0, 0, key, b"")
    data = batch_bytes(rec, count=1, attributes=0x30, base_offset=10)
    (batch,) = iter_batches(data, topic="t", partition=1)
    with pytest.raises(CorruptRecordException, match="t-1 at offset 10"):
        batch.control_type  # noqa: B018


def test_empty_control_batch() -> None:
    data = batch_bytes(b"", count=0, attributes=0x30, last_offset_delta=0)
    (batch,) = iter_batches(data)
    with pytest.raises(CorruptRecordException, match="no record"):
        batch.control_type  # noqa: B018


def test_empty_batch_after_compaction() -> None:
    data = batch_bytes(b"", count=0, base_offset=50, last_offset_delta=9)
    (batch,) = iter_batches(data)
    assert batch.records() == []
    assert batch.next_offset == 60


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_hand_built_compressed_batch(codec: int) -> None:
    """A batch whose records section is compressed outside of the batch encoder."""
    recs = [record_bytes(i, i, None, b"value-%d" % i) for i in range(100)]
    payload = b"".join(recs)
    data = batch_bytes(compress(codec, payload), count=100, attributes=codec, base_offset=5)
    (batch,) = iter_batches(data)
    assert batch.compression == codec
    assert simple(batch) == [(5 + i, i, None, b"value-%d" % i, ()) for i in range(100)]


def test_unknown_codec_raises_unsupported_codec_error() -> None:
    rec = record_bytes(0, 0, None, b"x")
    data = batch_bytes(rec, count=1, attributes=5, base_offset=8)
    (batch,) = iter_batches(data, topic="t", partition=0)
    with pytest.raises(UnsupportedCodecError, match="t-0 at offset 8"):
        batch.records()


def test_many_batches_and_mixed_codecs() -> None:
    parts = []
    expected = []
    offset = 0
    for i, codec in enumerate(ALL_CODECS * 3):
        recs = [(TS + j, b"k%d" % j, b"v" * (i * 37 + j)) for j in range(i + 1)]
        parts.append(encode_batch(recs, base_offset=offset, compression=codec))
        expected += [(offset + j, ts, k, v, ()) for j, (ts, k, v) in enumerate(recs)]
        offset += len(recs)
    got = []
    for batch in iter_batches(b"".join(parts)):
        got += simple(batch)
    assert got == expected


def test_accepts_bytearray_and_memoryview() -> None:
    data = encode_batch([(TS, b"k", b"v")])
    for buf in (bytearray(data), memoryview(data)):
        (batch,) = iter_batches(buf)
        assert simple(batch) == [(0, TS, b"k", b"v", ())]


# -- property tests ------------------------------------------------------------------------

blobs = st.one_of(
    st.none(),
    st.binary(max_size=140),
    st.sampled_from([b"", b"x" * 127, b"y" * 128, b"z" * 16383, b"w" * 16384, b"q" * 20000]),
)
# Keys and values both under and over 63 bytes (one-byte lengths: the decoder's fast path,
# else its general one), keys seen before and new.
header_lists = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(["traceparent", "content-type", "é"]), st.text(max_size=40)),
        st.one_of(st.none(), st.binary(max_size=100)),
    ),
    max_size=4,
)
record_lists = st.lists(
    st.tuples(
        st.integers(min_value=-(2**40), max_value=2**40),  # timestamp delta from TS
        blobs,
        blobs,
        header_lists,
    ),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(
    records=record_lists,
    codec=st.sampled_from(ALL_CODECS),
    base_offset=st.integers(min_value=0, max_value=2**62),
    gaps=st.lists(st.integers(min_value=1, max_value=100_000), min_size=40, max_size=40),
    check_crcs=st.booleans(),
    log_append_time=st.one_of(st.none(), st.integers(min_value=0, max_value=2**45)),
)
def test_round_trip(
    records: list[Any],
    codec: int,
    base_offset: int,
    gaps: list[int],
    check_crcs: bool,
    log_append_time: int | None,
) -> None:
    builder = BatchBuilder(
        base_offset=base_offset,
        compression=codec,
        producer_id=3,
        timestamp_type=0 if log_append_time is None else 1,
        log_append_time=log_append_time,
    )
    expected = []
    offset = base_offset
    for i, (dts, key, value, headers) in enumerate(records):
        builder.append(TS + dts, key, value, headers, offset=offset)
        ts = TS + dts if log_append_time is None else log_append_time
        expected.append((offset, ts, key, value, tuple(headers)))
        offset += gaps[i]
    data = builder.build()
    (batch,) = iter_batches(data, check_crcs=check_crcs)
    assert simple(batch) == expected
    assert {r[2] for r in batch.records()} <= {0 if log_append_time is None else 1}
    assert [(r[6], r[7]) for r in batch.records()] == [
        (-1 if k is None else len(k), -1 if v is None else len(v)) for _, _, k, v, _ in expected
    ]
    if records:
        assert batch.last_offset == expected[-1][0]


# Records that mostly share one layout, to exercise the column decoder, with every kind
# of deviation: other sizes, keys, headers, timestamps, offset gaps.
deviations = st.sampled_from(
    ["none", "value", "key", "header", "ts2", "ts_neg", "gap", "nullvalue", "attr"]
)


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=700),
    value_size=st.sampled_from([0, 1, 60, 63, 64, 100, 8000, 8200]),
    key_size=st.sampled_from([None, 0, 5, 70]),
    dev_at=st.lists(st.tuples(st.integers(min_value=0, max_value=699), deviations), max_size=6),
    first_delta=st.integers(min_value=0, max_value=9000),
    ts_spread=st.sampled_from([1, 10, 64, 65, 200]),
    codec=st.sampled_from([CODEC_NONE, CODEC_NONE, CODEC_LZ4]),
    log_append=st.booleans(),
)
def test_uniform_runs_match_reference(
    n: int,
    value_size: int,
    key_size: int | None,
    dev_at: list[tuple[int, str]],
    first_delta: int,
    ts_spread: int,
    codec: int,
    log_append: bool,
) -> None:
    devs = dict(dev_at)
    parts = []
    od = first_delta
    expected_lod = 0
    for i in range(n):
        value: bytes | None = bytes([i & 0xFF]) * value_size
        key = None if key_size is None else bytes([(i * 7) & 0xFF]) * key_size
        ts_delta = i % ts_spread
        headers: list[tuple[str, bytes | None]] = []
        attributes = 0
        dev = devs.get(i, "none")
        if dev == "value":
            value = b"v" * (value_size + 1)
        elif dev == "key":
            key = b"other"
        elif dev == "header":
            headers = [("h", b"1")]
        elif dev == "ts2":
            ts_delta = 1000
        elif dev == "ts_neg":
            ts_delta = -3
        elif dev == "gap":
            od += 2
        elif dev == "nullvalue":
            value = None
        elif dev == "attr":
            attributes = 0x55
        parts.append(record_bytes(od, ts_delta, key, value, headers, attributes))
        expected_lod = od
        od += 1
    raw = b"".join(parts)
    payload = compress(codec, raw) if codec else raw
    data = batch_bytes(
        payload,
        count=n,
        base_offset=1234,
        attributes=codec | (0x08 if log_append else 0),
        base_timestamp=TS,
        max_timestamp=TS + 777,
        last_offset_delta=expected_lod,
    )
    (batch,) = iter_batches(data)
    if not log_append:
        assert simple(batch) == decode_records(raw, n, 1234, TS)
    assert batch.records(lambda *a: a) == batch.records()
    # Runs handed out whole (the Spark source's path) hold the same records, and cut
    # anywhere they still do.
    pieces = batch.records(None, True)
    assert expand_runs(pieces) == batch.records()
    if n >= 2 * MIN_RUN and not devs:
        assert any(type(p) is Run for p in pieces)
    for at in (1234 + first_delta + 1, 1234 + first_delta + n // 2, 1234 + expected_lod):
        assert expand_runs(pieces_from(pieces, at)) == [r for r in batch.records() if r[0] >= at]


def expand_runs(pieces: list[Any]) -> list[Any]:
    """Record tuples and runs (``records(None, True)``) as record tuples."""
    out: list[Any] = []
    for p in pieces:
        if type(p) is Run:
            assert p.records > 0 and p.last == p.first + p.records - 1
            out.extend(p.tuples())
        else:
            out.append(p)
    assert count_records(pieces) == len(out)
    return out


def test_large_uniform_batch_matches_reference() -> None:
    """Offset deltas with one, two and three byte varints in one batch."""
    n = 9000
    raw = b"".join(record_bytes(i, i % 30, None, b"%05d" % i * 20) for i in range(n))
    data = batch_bytes(raw, count=n, base_timestamp=TS)
    (batch,) = iter_batches(data)
    assert simple(batch) == decode_records(raw, n, 0, TS)


def test_zigzag_reference_encoder() -> None:
    """The test's own varint encoder, checked against values from the protocol guide."""
    assert zigzag_varint(0) == b"\x00"
    assert zigzag_varint(-1) == b"\x01"
    assert zigzag_varint(1) == b"\x02"
    assert zigzag_varint(63) == b"\x7e"
    assert zigzag_varint(-64) == b"\x7f"
    assert zigzag_varint(64) == b"\x80\x01"
    assert zigzag_varint(150) == b"\xac\x02"


# Header blocks that all take the same number of bytes but differ in structure: another
# key of the same length, the same total split differently between the values, a null
# value, one or three headers instead of two.  The decoder learns a block's layout from
# its length; a block of a learned length with another structure must still decode as
# the reference decoder says.
_TRACE = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _block_size(headers: list[tuple[str, bytes | None]]) -> int:
    body = b"".join(
        zigzag_varint(len(k.encode()))
        + k.encode()
        + zigzag_varint(-1 if v is None else len(v))
        + (v or b"")
        for k, v in headers
    )
    return len(zigzag_varint(len(headers)) + body)


def _fit(headers: list[tuple[str, bytes | None]], size: int) -> list[tuple[str, bytes | None]]:
    """``headers`` with its last value cut or padded so that the block takes ``size`` bytes."""
    key, value = headers[-1]
    assert value is not None
    while (diff := size - _block_size([*headers[:-1], (key, value)])) != 0:
        value = (value + b"p" * diff)[: len(value) + diff]
    return [*headers[:-1], (key, value)]


_COMMON = [("traceparent", _TRACE), ("content-type", b"application/json")]
_SIZE = _block_size(_COMMON)
SAME_LENGTH_BLOCKS: list[list[tuple[str, bytes | None]]] = [
    _COMMON,
    [("traceparenT", _TRACE), ("content-type", b"application/json")],
    [("traceparent", _TRACE[:-1]), ("content-type", b"application/jsonx")],
    _fit([("content-typ", None), ("traceparent", _TRACE + b"application/json")], _SIZE),
    _fit([("t" * 40, _TRACE)], _SIZE),
    _fit([("a", b"x" * 20), ("b", b"y" * 20), ("traceparent", _TRACE)], _SIZE),
    [("traceparent", _TRACE), ("content-type", b"application/xml\x00")],
    _fit([("traceparent", None), ("content-type", b"application/json" + _TRACE)], _SIZE),
]


def test_same_length_blocks_really_have_the_same_length() -> None:
    sizes = {_block_size(h) for h in SAME_LENGTH_BLOCKS}
    assert sizes == {_block_size(SAME_LENGTH_BLOCKS[0])}


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.integers(min_value=0, max_value=len(SAME_LENGTH_BLOCKS) - 1), max_size=80),
    codec=st.sampled_from([CODEC_NONE, CODEC_LZ4]),
)
def test_header_blocks_of_one_length_and_other_structures(picks: list[int], codec: int) -> None:
    # The first records repeat the common block, so that its layout is learned first.
    picks = [0, 0, 0, *picks]
    raw = b"".join(
        record_bytes(i, i % 7, b"user-%06d" % i, b"v" * (60 + i * 13 % 300), SAME_LENGTH_BLOCKS[p])
        for i, p in enumerate(picks)
    )
    payload = compress(codec, raw) if codec else raw
    data = batch_bytes(payload, count=len(picks), attributes=codec, base_timestamp=TS)
    for _ in range(2):  # the second time every layout is known
        (batch,) = iter_batches(data)
        assert simple(batch) == decode_records(raw, len(picks), 0, TS)


@pytest.mark.parametrize("where", [0, 1, 2, 14, 15, 70, 71, 84, -1])
def test_a_corrupt_byte_in_a_learned_header_block_is_caught(where: int) -> None:
    """The structure bytes of a block of a learned length are checked, never assumed."""
    headers = SAME_LENGTH_BLOCKS[0]
    records = [record_bytes(i, 0, b"k", b"value", headers) for i in range(20)]
    good = b"".join(records)
    (batch,) = iter_batches(batch_bytes(good, count=20, base_timestamp=TS))
    assert len(batch.records()) == 20  # the layout is learned
    size = _block_size(headers)
    last = bytearray(records[-1])
    at = len(last) - size + (where if where >= 0 else size - 1)
    last[at] ^= 0x40
    raw = b"".join(records[:-1]) + bytes(last)
    try:
        expected: Any = decode_records(raw, 20, 0, TS)
    except Exception:  # the reference decoder rejects it: so must we
        expected = None
    (batch,) = iter_batches(batch_bytes(raw, count=20, base_timestamp=TS))
    if expected is None:
        with pytest.raises(CorruptRecordException):
            batch.records()
    else:
        assert simple(batch) == expected
