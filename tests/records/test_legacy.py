"""Legacy message sets (magic 0 and 1), plain and compressed."""

from __future__ import annotations

import struct
import zlib
from typing import Any

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
    LegacyRecordBatch,
    compress,
    encode_legacy_message,
    encode_legacy_message_set,
    iter_batches,
)
from rackafka.records.compression import xxh32

ALL_CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]
TS = 1_700_000_000_000


def decoded(data: bytes, **kwargs: Any) -> list[tuple[Any, ...]]:
    return [r for b in iter_batches(data, **kwargs) for r in b.records()]


def hand_built_v1(
    offset: int, ts: int, key: bytes | None, value: bytes, attributes: int = 0
) -> bytes:
    """One v1 message written field by field, with its CRC computed here."""
    body = struct.pack(">bbq", 1, attributes, ts)
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", len(value)) + value
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body


def test_golden_v1_message() -> None:
    data = hand_built_v1(42, TS, b"key", b"hello")
    (batch,) = iter_batches(data, topic="t", partition=1)
    assert isinstance(batch, LegacyRecordBatch)
    assert batch.magic == 1
    assert batch.base_offset == batch.last_offset == 42
    assert batch.next_offset == 43
    assert not batch.is_control and not batch.is_transactional
    assert batch.producer_id == -1
    crc = zlib.crc32(data[16:])
    assert batch.crc == crc
    assert batch.records() == [(42, TS, 0, b"key", b"hello", crc, 3, 5, ())]


def test_golden_v1_message_matches_the_encoder() -> None:
    assert hand_built_v1(42, TS, b"key", b"hello") == encode_legacy_message(
        42, magic=1, key=b"key", value=b"hello", timestamp=TS
    )


def test_golden_v1_gzip_wrapper() -> None:
    m1 = hand_built_v1(0, TS, b"a", b"1")
    m2 = hand_built_v1(1, TS + 1, None, b"2")
    gz = zlib.compressobj(wbits=31)
    wrapper = hand_built_v1(501, TS + 1, None, gz.compress(m1 + m2) + gz.flush(), CODEC_GZIP)
    records = decoded(wrapper)
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in records] == [
        (500, TS, 0, b"a", b"1"),
        (501, TS + 1, 0, None, b"2"),
    ]
    assert [r[5] for r in records] == [zlib.crc32(m1[16:]), zlib.crc32(m2[16:])]


def test_golden_v1_log_append_time_wrapper() -> None:
    inner = hand_built_v1(0, TS, b"a", b"1") + hand_built_v1(1, TS + 1, None, b"2")
    gz = zlib.compressobj(wbits=31)
    wrapper = hand_built_v1(9, TS + 999, None, gz.compress(inner) + gz.flush(), CODEC_GZIP | 0x08)
    records = decoded(wrapper)
    assert [(r[0], r[1], r[2]) for r in records] == [(8, TS + 999, 1), (9, TS + 999, 1)]


def test_golden_v0_message() -> None:
    body = struct.pack(">bb", 0, 0) + struct.pack(">i", -1) + struct.pack(">i", 2) + b"hi"
    data = struct.pack(">qiI", 7, len(body) + 4, zlib.crc32(body)) + body
    (batch,) = iter_batches(data)
    assert batch.magic == 0
    assert batch.timestamp_type is None
    assert batch.records() == [(7, None, None, None, b"hi", zlib.crc32(body), -1, 2, ())]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ALL_CODECS)
def test_legacy_round_trip(magic: int, codec: int) -> None:
    recs = [(TS + i, None if i % 3 == 0 else b"k%d" % i, b"v" * i) for i in range(20)]
    data = encode_legacy_message_set(recs, magic=magic, base_offset=1000, compression=codec)
    batches = list(iter_batches(data))
    assert len(batches) == (20 if codec == CODEC_NONE else 1)
    records = [r for b in batches for r in b.records()]
    assert [r[0] for r in records] == list(range(1000, 1020))
    assert [(r[3], r[4]) for r in records] == [(k, v) for _, k, v in recs]
    if magic == 1:
        assert [r[1] for r in records] == [ts for ts, _, _ in recs]
        assert {r[2] for r in records} == {0}
    else:
        assert {r[1] for r in records} == {None}
        assert {r[2] for r in records} == {None}
    assert batches[0].base_offset == 1000
    assert batches[-1].last_offset == 1019
    assert batches[-1].next_offset == 1020


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4])
def test_v0_wrapper_inner_offsets_are_absolute(codec: int) -> None:
    inner = b"".join(
        encode_legacy_message(70 + i, magic=0, key=None, value=b"x%d" % i) for i in range(3)
    )
    wrapper = encode_legacy_message(
        72, magic=0, key=None, value=compress(codec, inner), attributes=codec
    )
    assert [r[0] for r in decoded(wrapper)] == [70, 71, 72]


def test_v1_wrapper_inner_offsets_are_relative() -> None:
    # inner relative offsets 0, 2, 5 (compacted); the wrapper holds the last absolute offset
    inner = b"".join(
        encode_legacy_message(rel, magic=1, key=None, value=b"x", timestamp=TS) for rel in (0, 2, 5)
    )
    wrapper = encode_legacy_message(
        105, magic=1, key=None, value=compress(CODEC_SNAPPY, inner), attributes=CODEC_SNAPPY
    )
    (batch,) = iter_batches(wrapper)
    assert [r[0] for r in batch.records()] == [100, 102, 105]
    assert batch.base_offset == 100 and batch.next_offset == 106


def test_legacy_log_append_time() -> None:
    recs = [(TS + i, None, b"v") for i in range(3)]
    for codec in (CODEC_NONE, CODEC_LZ4):
        data = encode_legacy_message_set(
            recs, magic=1, compression=codec, timestamp_type=1, log_append_time=TS + 77
        )
        assert [(r[1], r[2]) for r in decoded(data)] == [(TS + 77, 1)] * 3


def test_v0_lz4_with_the_old_kafka_header_checksum() -> None:
    inner = b"".join(
        encode_legacy_message(i, magic=0, key=None, value=b"value %d" % i) for i in range(4)
    )
    frame = bytearray(compress(CODEC_LZ4, inner))
    flg = frame[4]
    desc_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    # the LZ4 encoder's checksum is XXH32 of the descriptor: this checks xxh32 itself
    assert frame[desc_end] == (xxh32(bytes(frame[4:desc_end])) >> 8) & 0xFF
    # Kafka 0.8/0.9 computed it over the magic number too
    frame[desc_end] = (xxh32(bytes(frame[:desc_end])) >> 8) & 0xFF
    assert frame[desc_end] != (xxh32(bytes(frame[4:desc_end])) >> 8) & 0xFF
    wrapper = encode_legacy_message(3, magic=0, key=None, value=bytes(frame), attributes=CODEC_LZ4)
    assert [r[4] for r in decoded(wrapper)] == [b"value %d" % i for i in range(4)]
    # ...which a v1 wrapper must not use
    v1_inner = b"".join(
        encode_legacy_message(i, magic=1, key=None, value=b"v", timestamp=TS) for i in range(2)
    )
    frame = bytearray(compress(CODEC_LZ4, v1_inner))
    frame[desc_end] = (xxh32(bytes(frame[:desc_end])) >> 8) & 0xFF
    v1 = encode_legacy_message(1, magic=1, key=None, value=bytes(frame), attributes=CODEC_LZ4)
    with pytest.raises(CorruptRecordException, match="lz4"):
        decoded(v1)


def test_xxh32_known_values() -> None:
    # reference values of the XXH32 specification's test vectors
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_legacy_crc_mismatch() -> None:
    data = bytearray(encode_legacy_message_set([(TS, b"k", b"v")], magic=1, base_offset=5))
    data[-1] ^= 1
    with pytest.raises(CorruptRecordException, match="t-0 at offset 5: CRC mismatch"):
        decoded(bytes(data), topic="t", partition=0)
    assert decoded(bytes(data), check_crcs=False)[0][4] == b"w"


def test_legacy_inner_crc_mismatch() -> None:
    inner = bytearray(encode_legacy_message(0, magic=1, key=None, value=b"abc", timestamp=TS))
    inner[-1] ^= 1
    wrapper = encode_legacy_message(
        0, magic=1, key=None, value=compress(CODEC_GZIP, bytes(inner)), attributes=CODEC_GZIP
    )
    with pytest.raises(CorruptRecordException, match="gzip compressed message set: CRC"):
        decoded(wrapper)


@pytest.mark.parametrize(
    ("value", "attributes", "match"),
    [
        (None, CODEC_GZIP, "null value"),
        (b"garbage", CODEC_GZIP, "compressed"),
        (b"", CODEC_SNAPPY, "holds no message"),
        (compress(CODEC_GZIP, b"\x00" * 11), CODEC_GZIP, "truncated message header"),
    ],
)
def test_invalid_wrapper(value: bytes | None, attributes: int, match: str) -> None:
    if value == b"":
        value = compress(CODEC_SNAPPY, b"")
    wrapper = encode_legacy_message(3, magic=1, key=None, value=value, attributes=attributes)
    with pytest.raises(CorruptRecordException, match=f"offset 3: .*{match}"):
        decoded(wrapper)


def test_nested_compression_and_magic_mismatch() -> None:
    inner = encode_legacy_message_set([(TS, None, b"x")], magic=1, compression=CODEC_GZIP)
    wrapper = encode_legacy_message(
        0, magic=1, key=None, value=compress(CODEC_GZIP, inner), attributes=CODEC_GZIP
    )
    with pytest.raises(CorruptRecordException, match="nested"):
        decoded(wrapper)
    inner = encode_legacy_message_set([(TS, None, b"x")], magic=0)
    wrapper = encode_legacy_message(
        0, magic=1, key=None, value=compress(CODEC_GZIP, inner), attributes=CODEC_GZIP
    )
    with pytest.raises(CorruptRecordException, match="magic 0"):
        decoded(wrapper)


def test_legacy_unknown_codec() -> None:
    wrapper = encode_legacy_message(3, magic=1, key=None, value=b"x", attributes=6)
    with pytest.raises(UnsupportedCodecError, match="offset 3"):
        decoded(wrapper)


@pytest.mark.parametrize(
    ("key_len", "value_len", "match"),
    [
        (-2, 1, "invalid key length"),
        (50, 1, "key length 50"),
        (0, 9, "value length 9"),
        (0, -4, "invalid value length"),
        (0, -1, "remain after the value"),
    ],
)
def test_invalid_legacy_lengths(key_len: int, value_len: int, match: str) -> None:
    body = struct.pack(">bbq", 1, 0, TS) + struct.pack(">i", key_len)
    body += struct.pack(">i", value_len) + b"v"
    data = struct.pack(">qiI", 4, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(CorruptRecordException, match=f"offset 4: .*{match}"):
        decoded(data)


def test_legacy_message_too_small_for_magic_1() -> None:
    body = struct.pack(">bb", 1, 0) + struct.pack(">ii", -1, -1)
    data = struct.pack(">qiI", 4, len(body) + 4, zlib.crc32(body)) + body
    with pytest.raises(CorruptRecordException, match="too small for magic 1"):
        decoded(data)


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=2**50),
            st.one_of(st.none(), st.binary(max_size=30)),
            st.one_of(st.none(), st.binary(max_size=300)),
        ),
        min_size=1,
        max_size=20,
    ),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(ALL_CODECS),
    base_offset=st.integers(min_value=0, max_value=2**40),
)
def test_legacy_property_round_trip(
    records: list[tuple[int, bytes | None, bytes | None]], magic: int, codec: int, base_offset: int
) -> None:
    data = encode_legacy_message_set(
        records, magic=magic, compression=codec, base_offset=base_offset
    )
    got = decoded(data)
    assert [(r[0], r[3], r[4]) for r in got] == [
        (base_offset + i, k, v) for i, (_, k, v) in enumerate(records)
    ]
    if magic == 1:
        assert [r[1] for r in got] == [ts for ts, _, _ in records]
