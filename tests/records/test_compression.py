"""Compression codecs: framings written by other clients, and invalid data."""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.errors import CorruptRecordException, RecordTooLargeError, UnsupportedCodecError
from rackafka.records import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    compress,
    decompress,
    iter_batches,
)

from .refcodec import batch_bytes, decode_records, record_bytes

ALL_CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]


def xerial(data: bytes, block: int) -> bytes:
    """xerial snappy framing as the Java client writes it, built by hand."""
    out = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for start in range(0, len(data), block):
        raw = bytes(cramjam.snappy.compress_raw(data[start : start + block]))
        out += struct.pack(">i", len(raw)) + raw
    return out


PAYLOAD = b"".join(b"record %d of the test payload; " % i for i in range(3000))


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=5000), codec=st.sampled_from(ALL_CODECS))
def test_round_trip(data: bytes, codec: int) -> None:
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("block", [1000, 32 * 1024, 10**6])
def test_xerial_snappy(block: int) -> None:
    assert decompress(CODEC_SNAPPY, xerial(PAYLOAD, block)) == PAYLOAD


def test_our_snappy_output_is_xerial_framed() -> None:
    out = compress(CODEC_SNAPPY, PAYLOAD)
    assert out.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
    assert out == xerial(PAYLOAD, 32 * 1024)


def test_raw_snappy() -> None:
    raw = bytes(cramjam.snappy.compress_raw(PAYLOAD))
    assert decompress(CODEC_SNAPPY, raw) == PAYLOAD


def test_raw_snappy_batch() -> None:
    records = b"".join(record_bytes(i, 0, None, b"v%d" % i) for i in range(50))
    data = batch_bytes(
        bytes(cramjam.snappy.compress_raw(records)), count=50, attributes=CODEC_SNAPPY
    )
    (batch,) = iter_batches(data)
    assert [r[4] for r in batch.records()] == [b"v%d" % i for i in range(50)]


@pytest.mark.parametrize(
    "data",
    [
        b"\x82SNAPPY\x00\x00\x00",  # short header
        b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + b"\x00\x00",  # short block length
        b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, -5) + b"abc",  # negative block length
        b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 100) + b"abc",  # block past the end
        b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 3) + b"abc",  # invalid block
        b"\xff\xff\xff\xff\x0f",  # raw snappy with a huge length and no data
    ],
)
def test_invalid_snappy(data: bytes) -> None:
    with pytest.raises(CorruptRecordException, match="snappy"):
        decompress(CODEC_SNAPPY, data)


def test_gzip_with_several_members() -> None:
    data = gzip.compress(PAYLOAD[:1000]) + gzip.compress(PAYLOAD[1000:])
    assert decompress(CODEC_GZIP, data) == PAYLOAD


def test_gzip_from_stdlib() -> None:
    assert decompress(CODEC_GZIP, gzip.compress(PAYLOAD, compresslevel=1)) == PAYLOAD


def test_gzip_ignores_trailing_bytes_that_are_not_a_member() -> None:
    assert decompress(CODEC_GZIP, gzip.compress(PAYLOAD) + b"\x00\x00junk") == PAYLOAD


@pytest.mark.parametrize(
    "data",
    [
        # mtime=0: on Python 3.10 the header holds the time, and pytest-xdist's workers
        # must collect the same test ids.
        gzip.compress(PAYLOAD, mtime=0)[:-10],
        gzip.compress(PAYLOAD, mtime=0) + gzip.compress(b"second", mtime=0)[:-3],
        b"\x1f\x8b",
        b"not gzip at all",
    ],
    ids=["truncated", "truncated-second-member", "header-only", "not-gzip"],
)
def test_invalid_gzip(data: bytes) -> None:
    with pytest.raises(CorruptRecordException, match="gzip"):
        decompress(CODEC_GZIP, data)


def test_zstd_streaming_frame_without_content_size() -> None:
    compressor = cramjam.zstd.Compressor()
    compressor.compress(PAYLOAD)
    frame = bytes(compressor.finish())
    assert decompress(CODEC_ZSTD, frame) == PAYLOAD


def test_lz4_frame() -> None:
    frame = bytes(cramjam.lz4.compress(PAYLOAD))
    assert frame.startswith(b"\x04\x22\x4d\x18")
    assert decompress(CODEC_LZ4, frame) == PAYLOAD


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(UnsupportedCodecError):
        decompress(codec, b"abc")
    with pytest.raises(UnsupportedCodecError):
        compress(codec, b"abc")


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_compressed_batch_from_a_hand_built_payload(codec: int) -> None:
    records = b"".join(record_bytes(i, i, b"k", b"v" * i) for i in range(300))
    data = batch_bytes(compress(codec, records), count=300, attributes=codec, base_timestamp=5)
    (batch,) = iter_batches(data)
    got = [(r[0], r[1], r[3], r[4], r[8]) for r in batch.records()]
    assert got == decode_records(records, 300, 0, 5)


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_decompression_stops_at_the_limit(codec: int) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB
    packed = compress(codec, data)
    assert decompress(codec, packed, max_size=len(data)) == data
    with pytest.raises(RecordTooLargeError, match=f"more than {len(data) - 1} bytes"):
        decompress(codec, packed, max_size=len(data) - 1)


def test_a_snappy_length_no_data_can_hold_is_corrupt_not_too_large() -> None:
    with pytest.raises(CorruptRecordException, match="cannot hold"):
        decompress(CODEC_SNAPPY, b"\xff\xff\xff\x7f" + b"\x00" * 10, max_size=1 << 40)


def test_lz4_frames_have_independent_blocks_as_kafka_reads_them() -> None:
    # Kafka's Java reader decompresses every block of an LZ4 frame on its own: a frame with
    # linked blocks (the LZ4 default) fails there as soon as a batch spans two 64 KiB blocks.
    import random
    import struct

    import cramjam

    from rackafka.records.compression import CODEC_LZ4, compress, decompress

    rnd = random.Random(7)
    words = [bytes(rnd.choices(b"abcdefghij", k=rnd.randint(3, 12))) for _ in range(300)]
    data = b" ".join(rnd.choice(words) for _ in range(60_000))  # ~450 KB, compressible
    frame = compress(CODEC_LZ4, data)
    assert frame[:4] == b"\x04\x22\x4d\x18"
    flg = frame[4]
    assert flg & 0x20, "block independence flag not set"
    assert not flg & 0x04, "content checksum (Kafka's writer sets none)"
    pos = 7 + (8 if flg & 0x08 else 0)
    out = bytearray()
    blocks = 0
    while True:
        (size,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if size == 0:
            break
        raw, size = bool(size & 0x80000000), size & 0x7FFFFFFF
        block = frame[pos : pos + size]
        pos += size + (4 if flg & 0x10 else 0)
        expected = min(1 << 16, len(data) - len(out))  # 64 KiB blocks, the last one shorter
        out += (
            block
            if raw
            else bytes(cramjam.lz4.decompress_block(block, output_len=expected))[:expected]
        )
        blocks += 1
    assert blocks > 2
    assert bytes(out) == data
    assert decompress(CODEC_LZ4, frame) == data


@pytest.mark.parametrize("size", [0, 1, 65535, 65536, 65537, 450_000])
def test_an_lz4_frame_without_a_content_size_is_sized_by_its_blocks(size: int) -> None:
    # Kafka's writers (librdkafka's, ours) declare no content size: the first output
    # buffer is sized by the count of blocks, each holding at most the block size.
    from rackafka.records.compression import _lz4_content_size

    data = (PAYLOAD * (size // len(PAYLOAD) + 1))[:size]
    for frame in (compress(CODEC_LZ4, data), bytes(cramjam.lz4.compress(data))):
        assert not frame[4] & 0x08  # no content size
        block_max = {4: 1 << 16, 5: 1 << 18, 6: 1 << 20, 7: 1 << 22}[frame[5] >> 4 & 7]
        hint = _lz4_content_size(frame)
        assert hint is not None and size <= hint
        if len(lz4_block_sizes(frame)) == -(-size // block_max):
            # A writer that fills its blocks (Kafka's, librdkafka's, ours): a close bound.
            assert hint < size + block_max
        else:
            # cramjam 2.11's frame writer (Python 3.10) flushes a block every 8 KiB.
            assert frame is not None and hint == len(lz4_block_sizes(frame)) * block_max
        assert decompress(CODEC_LZ4, frame) == data


def lz4_block_sizes(frame: bytes) -> list[int]:
    """The stored size of each block of an LZ4 frame (raw blocks flagged negative)."""
    flg = frame[4]
    pos = 7 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    sizes = []
    while True:
        (size,) = struct.unpack_from("<I", frame, pos)
        if size == 0:
            return sizes
        sizes.append(-(size & 0x7FFFFFFF) if size & 0x80000000 else size)
        pos += 4 + (size & 0x7FFFFFFF) + (4 if flg & 0x10 else 0)


@pytest.mark.parametrize("size", [0, 1, 8192, 65536, 65537, 300_000])
@pytest.mark.parametrize("compressible", [True, False])
def test_lz4_frames_are_written_as_kafkas_writer_writes_them(size: int, compressible: bool) -> None:
    # Whatever the cramjam version (2.11, the newest for Python 3.10, has a frame writer
    # that cuts a block every 8 KiB): version 1, independent blocks, no block or content
    # checksum, no content size, 64 KiB blocks all full but the last, the fast mode.
    from rackafka.records.compression import xxh32

    rnd = __import__("random").Random(size)
    data = (PAYLOAD * (size // len(PAYLOAD) + 1))[:size] if compressible else rnd.randbytes(size)
    frame = compress(CODEC_LZ4, data)
    assert frame[:6] == b"\x04\x22\x4d\x18\x60\x40"
    assert frame[6] == (xxh32(frame[4:6]) >> 8) & 0xFF
    sizes = lz4_block_sizes(frame)
    assert len(sizes) == -(-size // (1 << 16))
    # Stored raw where compression does not shrink it (random bytes, a 1-byte last block).
    assert all(s > 0 for s in sizes[:-1]) if compressible else all(s < 0 for s in sizes)
    pos = 7
    for i, stored in enumerate(sizes):
        chunk = data[i << 16 : (i + 1) << 16]
        block = frame[pos + 4 : pos + 4 + abs(stored)]
        if stored < 0:
            assert block == chunk
        else:
            assert block == bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        pos += 4 + abs(stored)
    assert frame[pos:] == b"\x00\x00\x00\x00"
    assert decompress(CODEC_LZ4, frame) == data


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(0, 2000), at=st.integers(0, 2000), flip=st.integers(1, 255))
def test_a_damaged_lz4_frame_is_corrupt_whatever_its_hint(cut: int, at: int, flip: int) -> None:
    from rackafka.records.compression import _lz4_content_size

    data = PAYLOAD * 3
    frame = bytearray(compress(CODEC_LZ4, data))
    at %= len(frame)
    frame[at] ^= flip
    damaged = bytes(frame[: len(frame) - cut % len(frame)])
    hint = _lz4_content_size(damaged)
    assert hint is None or hint >= 0
    try:
        out = decompress(CODEC_LZ4, damaged, max_size=1 << 22)
    except (CorruptRecordException, RecordTooLargeError):
        return
    assert isinstance(out, bytes)
