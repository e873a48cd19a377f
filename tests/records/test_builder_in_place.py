"""The producer's encoding helpers: varints (the unrolled two- and three-byte forms), and
batches sealed in place (the header written into the room the records left for it)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.records import iter_batches
from rackafka.records._varint import encode_varint, read_varint
from rackafka.records.builder import encode_record, finish_batch, finish_batch_in_place
from rackafka.records.compression import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    LZ4_LEVEL,
)
from rackafka.records.default_records import HEADER_SIZE

from .refcodec import zigzag_varint

EDGES = [0, 63, 64, 8191, 8192, (1 << 20) - 1, 1 << 20, 1 << 31, (1 << 63) - 1]


@pytest.mark.parametrize("value", EDGES + [-v for v in EDGES] + [-(1 << 63)])
def test_varint_edges(value: int) -> None:
    encoded = encode_varint(value)
    assert encoded == zigzag_varint(value)
    assert read_varint(encoded, 0) == (value, len(encoded))


@settings(max_examples=500, deadline=None)
@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_varint_round_trip(value: int) -> None:
    encoded = encode_varint(value)
    assert encoded == zigzag_varint(value)
    assert read_varint(encoded, 0) == (value, len(encoded))


FIELDS = {
    "count": 3,
    "last_offset_delta": 2,
    "first_timestamp": 1_700_000_000_000,
    "max_timestamp": 1_700_000_000_009,
}
RECORDS = [
    encode_record(0, 0, b"k", b"v" * 100),
    encode_record(1, 4, None, bytes(range(256)) * 8, [("h", b"x")]),
    encode_record(2, 9, b"key", None),
]


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_a_batch_sealed_in_place_is_the_batch_finish_batch_makes(codec: int) -> None:
    records = b"".join(RECORDS)
    buffer = bytearray(HEADER_SIZE) + records
    producer = {"producer_id": 7, "producer_epoch": 2, "base_sequence": 40}
    sealed = finish_batch_in_place(
        buffer, compression=codec, transactional=True, **producer, **FIELDS
    )
    expected = finish_batch(records, compression=codec, transactional=True, **producer, **FIELDS)
    assert bytes(sealed) == expected
    if codec == CODEC_NONE:
        assert sealed is buffer  # no copy of the records
    else:
        assert bytes(buffer[HEADER_SIZE:]) == records  # the records are left as they were
    (batch,) = iter_batches(bytes(sealed))
    assert [r[0] for r in batch.records()] == [0, 1, 2]  # the offsets, checked by CRC
    assert batch.base_sequence == 40


def test_sealing_again_rewrites_the_header_only() -> None:
    # A retry under a new producer id: the same buffer, new producer fields, a new CRC.
    records = b"".join(RECORDS)
    buffer = bytearray(HEADER_SIZE) + records
    finish_batch_in_place(buffer, producer_id=1, producer_epoch=0, base_sequence=0, **FIELDS)
    again = finish_batch_in_place(
        buffer, producer_id=9, producer_epoch=3, base_sequence=5, **FIELDS
    )
    assert bytes(again) == finish_batch(
        records, producer_id=9, producer_epoch=3, base_sequence=5, **FIELDS
    )
    (batch,) = iter_batches(bytes(again))
    assert (batch.producer_id, batch.producer_epoch) == (9, 3)


def test_lz4_batches_use_the_fast_level() -> None:
    # The fast mode of the frame format (LZ4's level 0), as librdkafka and aiokafka write.
    assert LZ4_LEVEL == 0
    import cramjam

    from rackafka.records.compression import compress

    data = (b"".join(RECORDS) * 50)[: 1 << 16]  # one block
    fast = bytes(cramjam.lz4.compress_block(data, store_size=False))  # LZ4_compress_default
    assert compress(CODEC_LZ4, data)[7:-4] == len(fast).to_bytes(4, "little") + fast
