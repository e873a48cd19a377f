"""ProducerBatch without a broker: the records it encodes (against the reference codec of
the records tests), its size limit, and the metadata its futures get."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.producer import accumulator
from rackafka.producer.accumulator import ProducerBatch
from rackafka.records import iter_batches
from rackafka.records._varint import encode_varint
from rackafka.records.builder import NO_HEADERS, encode_headers
from rackafka.records.default_records import HEADER_SIZE
from rackafka.structs import RecordMetadata, TopicPartition

from ..records.refcodec import record_bytes

TP = TopicPartition("t", 3)
TS = 1_700_000_000_000

# Lengths around the one- and two-byte varint limits, the producer's lookup table and the
# values it appends by themselves (1024 bytes and more).
sizes = st.sampled_from([0, 1, 63, 64, 100, 1023, 1024, 8191, 8192, 8193, 20_000])
data = st.one_of(st.none(), sizes.map(lambda n: bytes(n % 251 for n in range(n))))
headers = st.lists(st.tuples(st.sampled_from(["h", "trace", "é"]), data), max_size=2)
timestamps = st.one_of(
    st.integers(min_value=0, max_value=70),
    st.sampled_from([8191, 8192, 10**7]),
    st.integers(min_value=-5000, max_value=-1),
)
records = st.lists(
    st.tuples(timestamps, data, data, st.one_of(st.just([]), headers)), min_size=1, max_size=30
)


@settings(max_examples=200, deadline=None)
@given(records=records, first_offset_delta=st.sampled_from([0, 60, 8180, 9000]))
def test_records_are_encoded_as_the_reference_codec_does(
    records: list[Any], first_offset_delta: int
) -> None:
    batch = ProducerBatch(TP, 1 << 30, 0.0)
    expected = b""
    # Offset deltas past the lookup table: fill the batch with small records first.
    for i in range(first_offset_delta):
        assert batch.try_append(TS, None, b"x", NO_HEADERS)
        expected += record_bytes(i, 0, None, b"x")
    for dts, key, value, hdrs in records:
        assert batch.try_append(TS + dts, key, value, encode_headers(hdrs) if hdrs else NO_HEADERS)
        first = TS if first_offset_delta else TS + records[0][0]
        expected += record_bytes(batch.count - 1, TS + dts - first, key, value, hdrs)
    # the records follow the room left for the batch header
    assert bytes(batch.buffer[HEADER_SIZE:]) == expected
    assert batch.size == HEADER_SIZE + len(expected)
    assert batch.timestamps[first_offset_delta:] == [TS + r[0] for r in records]
    assert batch.max_ts == max(batch.timestamps)


@pytest.mark.parametrize("value_size", [10, 100, 5000])
def test_a_batch_closes_before_it_grows_past_its_limit(value_size: int) -> None:
    batch = ProducerBatch(TP, 16384, 0.0)
    while batch.try_append(TS, None, bytes(value_size), NO_HEADERS):
        assert batch.size <= 16384
    assert batch.closed
    assert not batch.try_append(TS, None, b"", NO_HEADERS)
    built = batch.build(compression=0, producer_id=-1, producer_epoch=-1, transactional=False)
    (decoded,) = iter_batches(built)
    assert len(decoded.records()) == batch.count
    assert len(built) == batch.size


def test_the_varints_of_long_values_are_kept_up_to_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past the lookup table the varints of value and record lengths are kept as met, at
    # most _LONG_VARINTS_MAX of them; records read back the same either way.
    monkeypatch.setattr(accumulator, "_LONG_VARINTS", {})
    monkeypatch.setattr(accumulator, "_LONG_VARINTS_MAX", 8)
    batch = ProducerBatch(TP, 1 << 30, 0.0)
    values = [bytes(range(256)) * 40 + bytes(n) for n in (*range(20), 3, 0)]
    expected = b""
    for i, value in enumerate(values):
        assert batch.try_append(TS, None, value, NO_HEADERS)
        expected += record_bytes(i, 0, None, value)
    assert len(accumulator._LONG_VARINTS) == 8
    assert all(v == encode_varint(n) for n, v in accumulator._LONG_VARINTS.items())
    assert bytes(batch.buffer[HEADER_SIZE:]) == expected


def test_the_first_record_always_goes_in() -> None:
    batch = ProducerBatch(TP, 100, 0.0)
    assert batch.try_append(TS, b"k", bytes(1000), NO_HEADERS)
    assert not batch.try_append(TS, None, b"", NO_HEADERS)
    assert batch.count == 1


async def test_futures_get_their_records_metadata() -> None:
    loop = asyncio.get_running_loop()
    batch = ProducerBatch(TP, 1 << 20, 0.0)
    for i in range(5):
        assert batch.try_append(TS + 10 - i, None, b"v", NO_HEADERS)
        batch.futures.append(loop.create_future())
    futures = list(batch.futures)
    futures[1].cancel()
    batch.done(500, -1, 7)
    assert futures[1].cancelled()
    got = [f.result() for i, f in enumerate(futures) if i != 1]
    assert got == [RecordMetadata("t", 3, TP, 500 + i, TS + 10 - i, 0, 7) for i in (0, 2, 3, 4)]
    assert all(type(m) is RecordMetadata for m in got)
    assert batch.futures == []


async def test_log_append_time_and_unknown_offsets() -> None:
    loop = asyncio.get_running_loop()
    batch = ProducerBatch(TP, 1 << 20, 0.0)
    for _ in range(3):
        batch.try_append(TS, None, b"v", NO_HEADERS)
        batch.futures.append(loop.create_future())
    futures = list(batch.futures)
    batch.done(-1, TS + 99, -1)
    assert [f.result() for f in futures] == [RecordMetadata("t", 3, TP, -1, TS + 99, 1, None)] * 3
