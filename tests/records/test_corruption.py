"""Truncated and corrupt record data: silent skip of a cut last batch, clear errors otherwise."""

from __future__ import annotations

import signal
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackafka.errors import CorruptRecordException, UnsupportedCodecError
from rackafka.records import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    encode_batch,
    encode_control_batch,
    encode_legacy_message_set,
    iter_batches,
)
from rackafka.records._columns import Run

from .refcodec import batch_bytes, record_bytes

ALL_CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]
TS = 1_700_000_000_000
ALLOWED = (CorruptRecordException, UnsupportedCodecError)


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail instead of hanging (the decoders must never loop forever)."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"decoding took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def decode_all(data: bytes, check_crcs: bool = True) -> list[Any]:
    """Decode everything the consumer would look at."""
    out: list[Any] = []
    with time_limit(20):
        for batch in iter_batches(data, check_crcs=check_crcs, topic="fuzz", partition=7):
            out.append((batch.base_offset, batch.next_offset, batch.is_control, batch.producer_id))
            records = batch.records()
            out.append(records)
            out.append(batch.control_type)
            if batch.magic == 2:
                # The runs path (the Spark source's) decodes the same records.
                pieces = batch.records(None, True)
                got = [r for p in pieces for r in (p.tuples() if type(p) is Run else [p])]
                assert got == records
    return out


def test_runs_path_raises_what_the_records_path_raises() -> None:
    """A corrupt run is found as corrupt by the runs path, with the same message."""
    raw = b"".join(record_bytes(i, 1, None, b"%03d" % i * 10) for i in range(80))
    for cut in range(0, len(raw), 7):
        bad = raw[:cut] + bytes([raw[cut] ^ 0x41]) + raw[cut + 1 :]
        (batch,) = iter_batches(batch_bytes(bad, count=80, base_timestamp=TS), check_crcs=False)
        try:
            expected = batch.records()
        except CorruptRecordException as exc:
            with pytest.raises(CorruptRecordException) as info:
                batch.records(None, True)
            assert str(info.value) == str(exc)
        else:
            pieces = batch.records(None, True)
            got = [r for p in pieces for r in (p.tuples() if type(p) is Run else [p])]
            assert got == expected


def two_batches(codec: int = CODEC_NONE) -> tuple[bytes, bytes]:
    b1 = encode_batch(
        [
            (TS + i, b"key%d" % i, b"value-%d" % i, [("h", b"x")] if i == 1 else [])
            for i in range(3)
        ],
        base_offset=10,
        compression=codec,
    )
    b2 = encode_batch(
        [(TS + 5, None, b"second" * 20), (TS + 6, b"", None)], base_offset=13, compression=codec
    )
    return b1, b2


# -- truncation ----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_ZSTD])
def test_truncated_last_batch_is_skipped_at_every_cut(codec: int) -> None:
    b1, b2 = two_batches(codec)
    data = b1 + b2
    first = [r[:5] for r in next(iter_batches(b1)).records()]
    second = [r[:5] for r in next(iter_batches(b2)).records()]
    for cut in range(len(data) + 1):
        batches = list(iter_batches(data[:cut], topic="t", partition=0))
        got = [r[:5] for b in batches for r in b.records()]
        if cut < len(b1):
            assert got == [], cut
        elif cut < len(data):
            assert got == first, cut
            assert batches[0].next_offset == 13
        else:
            assert got == first + second


def test_truncated_legacy_message_is_skipped_at_every_cut() -> None:
    m1 = encode_legacy_message_set([(TS, b"k", b"v1"), (TS + 1, None, b"v2")], magic=1)
    m2 = encode_legacy_message_set(
        [(TS + 2, b"a", b"b"), (TS + 3, b"c", b"d")], magic=1, base_offset=2, compression=CODEC_GZIP
    )
    data = m1 + m2
    full = [r[:5] for b in iter_batches(data) for r in b.records()]
    assert [r[0] for r in full] == [0, 1, 2, 3]
    for cut in range(len(data) + 1):
        got = [r[:5] for b in iter_batches(data[:cut]) for r in b.records()]
        assert got == full[: len(got)]
        if cut == len(data):
            assert got == full


def test_truncated_buffer_after_legacy_then_v2() -> None:
    legacy = encode_legacy_message_set([(TS, b"k", b"v")], magic=0)
    v2 = encode_batch([(TS, b"k2", b"v2")], base_offset=1)
    data = legacy + v2
    got = [r[:5] for b in iter_batches(data) for r in b.records()]
    assert got == [(0, None, None, b"k", b"v"), (1, TS, 0, b"k2", b"v2")]
    got = [r[0] for b in iter_batches(data[:-1]) for r in b.records()]
    assert got == [0]


# -- corruption ----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_any_flipped_byte_under_the_crc_is_detected(codec: int) -> None:
    b1, b2 = two_batches(codec)
    for pos in range(21, len(b1)):
        for flip in (0x01, 0x80, 0xFF):
            bad = bytearray(b1)
            bad[pos] ^= flip
            with pytest.raises(CorruptRecordException, match=r"t-2 at offset 10: .*CRC"):
                list(iter_batches(bytes(bad) + b2, topic="t", partition=2))


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_flipped_bytes_without_crc_check_never_escape(codec: int) -> None:
    b1, b2 = two_batches(codec)
    data = b1 + b2
    for pos in range(len(data)):
        for flip in (0x01, 0x40, 0x80, 0xFF):
            bad = bytearray(data)
            bad[pos] ^= flip
            try:
                decode_all(bytes(bad), check_crcs=False)
            except ALLOWED:
                pass


def test_crc_field_mismatch() -> None:
    b1, _ = two_batches()
    bad = bytearray(b1)
    bad[17] ^= 0x01
    with pytest.raises(CorruptRecordException, match="CRC mismatch"):
        list(iter_batches(bytes(bad)))
    (batch,) = iter_batches(bytes(bad), check_crcs=False)
    assert len(batch.records()) == 3


def test_bad_magic() -> None:
    b1, b2 = two_batches()
    bad = bytearray(b1)
    bad[16] = 3
    with pytest.raises(CorruptRecordException, match=r"x-0 at offset 10: unknown .*magic 3"):
        list(iter_batches(bytes(bad) + b2, topic="x", partition=0))


@pytest.mark.parametrize("length", [-1, -(2**31), 0, 13])
def test_negative_or_tiny_batch_length(length: int) -> None:
    b1, _ = two_batches()
    bad = bytearray(b1)
    struct.pack_into(">i", bad, 8, length)
    with pytest.raises(CorruptRecordException, match="t-5 at offset 10: record batch size"):
        list(iter_batches(bytes(bad), topic="t", partition=5))


def test_batch_length_too_small_for_v2_header() -> None:
    data = struct.pack(">qi", 3, 40) + b"\x00" * 4 + b"\x02" + b"\x00" * 35
    with pytest.raises(CorruptRecordException, match="smaller than a v2 batch header"):
        list(iter_batches(data))


def test_a_batch_cut_in_the_middle_is_corrupt_when_not_last() -> None:
    """A batch whose length field is complete but shorter than its records."""
    rec = b"".join(record_bytes(i, 0, None, b"abc") for i in range(3))
    data = batch_bytes(rec[:-2], count=3)  # correct CRC over a cut records section
    (batch,) = iter_batches(data, topic="t", partition=0)
    with pytest.raises(CorruptRecordException, match="t-0 at offset 0"):
        batch.records()


@pytest.mark.parametrize(
    ("count", "match"),
    [(2, "remain after the last of 2 records"), (4, "past the end"), (-1, "cannot hold")],
)
def test_record_count_mismatch(count: int, match: str) -> None:
    rec = b"".join(record_bytes(i, 0, None, b"abc") for i in range(3))
    data = batch_bytes(rec, count=count)
    with pytest.raises(CorruptRecordException, match=match):
        decode_all(data)


def test_record_count_larger_than_the_batch_can_hold() -> None:
    rec = record_bytes(0, 0, None, b"abc")
    data = batch_bytes(rec, count=2**31 - 1)
    with pytest.raises(CorruptRecordException, match="cannot hold"):
        list(iter_batches(data))


def test_compressed_record_count_larger_than_the_data() -> None:
    rec = record_bytes(0, 0, None, b"abc")
    data = batch_bytes(encode_compressed(CODEC_ZSTD, rec), count=2**30, attributes=CODEC_ZSTD)
    (batch,) = iter_batches(data)
    with pytest.raises(CorruptRecordException, match="cannot fit"):
        batch.records()


def encode_compressed(codec: int, data: bytes) -> bytes:
    from rackafka.records import compress

    return compress(codec, data)


def raw_record(body: bytes, length: int | None = None) -> bytes:
    from .refcodec import zigzag_varint

    return zigzag_varint(len(body) if length is None else length) + body


@pytest.mark.parametrize(
    ("body", "length", "match"),
    [
        # value length runs past the record
        (b"\x00\x00\x00\x01\x40abc\x00", None, "past the end"),
        # key length -2
        (b"\x00\x00\x00\x03\x02ab\x00", None, "key length -2"),
        # value length -5
        (b"\x00\x00\x00\x01\x09\x00", None, "value length -5"),
        # record length larger than its fields
        (b"\x00\x00\x00\x01\x04ab\x00", 12, ""),
        # record length smaller than its fields
        (b"\x00\x00\x00\x01\x04ab\x00", 5, ""),
        # negative record length
        (b"\x00\x00\x00\x01\x04ab\x00", -3, ""),
        # negative header count
        (b"\x00\x00\x00\x01\x04ab\x03", None, "header count -2"),
        # header count larger than the record
        (b"\x00\x00\x00\x01\x04ab\x7e", None, "header count 63"),
        # header key of negative length
        (b"\x00\x00\x00\x01\x04ab\x02\x03\x00", None, "header key of length -2"),
        # header value length past the record
        (b"\x00\x00\x00\x01\x04ab\x02\x02h\x20", None, "header value of length 16"),
        # header value length -3
        (b"\x00\x00\x00\x01\x04ab\x02\x02h\x05", None, "header value of length -3"),
        # an endless varint
        (b"\x00" + b"\xff" * 20, None, ""),
    ],
)
def test_invalid_record_fields(body: bytes, length: int | None, match: str) -> None:
    if body[2:3] == b"\x00":
        body = body[:2] + b"\x02" + body[3:]  # offset delta 1: after the good record
    good = record_bytes(0, 0, b"k", b"v")
    data = batch_bytes(good + raw_record(body, length), count=2, base_offset=40)
    (batch,) = iter_batches(data, topic="t", partition=9)
    with pytest.raises(CorruptRecordException, match=f"t-9 at offset 40: .*{match}"):
        batch.records()


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
@pytest.mark.parametrize(
    "payload", [b"", b"\x00", b"garbage that is not compressed data" * 3, b"\xff" * 64]
)
def test_compressed_garbage(codec: int, payload: bytes) -> None:
    data = batch_bytes(payload, count=1, attributes=codec, base_offset=99)
    (batch,) = iter_batches(data, topic="t", partition=4)
    with pytest.raises(CorruptRecordException, match=r"t-4 at offset 99: .*compressed"):
        batch.records()


@pytest.mark.parametrize("codec", [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_truncated_compressed_payload(codec: int) -> None:
    payload = encode_compressed(codec, record_bytes(0, 0, None, b"x" * 1000))
    data = batch_bytes(payload[: len(payload) // 2], count=1, attributes=codec)
    (batch,) = iter_batches(data)
    with pytest.raises(CorruptRecordException):
        batch.records()


def test_compressed_payload_with_wrong_records() -> None:
    payload = encode_compressed(CODEC_LZ4, b"\x00" * 50)
    data = batch_bytes(payload, count=1, attributes=CODEC_LZ4)
    (batch,) = iter_batches(data)
    with pytest.raises(CorruptRecordException, match="offset 0"):
        batch.records()


# -- fuzzing -------------------------------------------------------------------------------


def valid_buffers() -> list[bytes]:
    out = []
    for codec in ALL_CODECS:
        b1, b2 = two_batches(codec)
        out.append(b1 + b2)
    uniform = encode_batch([(TS + i % 3, None, b"%03d" % i * 10) for i in range(80)])
    out.append(uniform + encode_control_batch(0, base_offset=80))
    out.append(
        encode_legacy_message_set([(TS, b"k", b"v"), (TS, None, b"w")], magic=1)
        + encode_legacy_message_set([(TS, b"k", b"v")] * 3, magic=0, compression=CODEC_SNAPPY)
    )
    return out


VALID = valid_buffers()


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=300), check_crcs=st.booleans())
def test_fuzz_random_bytes(data: bytes, check_crcs: bool) -> None:
    try:
        decode_all(data, check_crcs)
    except ALLOWED:
        pass


@settings(max_examples=100, deadline=None)
@given(
    attributes=st.integers(min_value=0, max_value=0x7F),
    count=st.integers(min_value=0, max_value=12),
    records=st.one_of(
        st.binary(max_size=200),
        st.lists(
            st.tuples(st.binary(max_size=12), st.integers(min_value=-3, max_value=40)), max_size=6
        ).map(lambda parts: b"".join(raw_record(body, length) for body, length in parts)),
    ),
)
def test_fuzz_random_v2_batches(attributes: int, count: int, records: bytes) -> None:
    """Random records in a batch with a valid framing and CRC, so the decoders see them."""
    data = batch_bytes(records, count=count, attributes=attributes, base_timestamp=TS)
    try:
        decode_all(data, True)
    except ALLOWED:
        pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(min_value=0, max_value=len(VALID) - 1),
    edits=st.lists(
        st.tuples(
            st.sampled_from(["flip", "set", "insert", "delete"]),
            st.integers(min_value=0, max_value=10_000),
            st.integers(min_value=0, max_value=255),
        ),
        min_size=1,
        max_size=4,
    ),
    fix_crc=st.booleans(),
)
def test_fuzz_mutated_valid_buffers(which: int, edits: list[Any], fix_crc: bool) -> None:
    data = bytearray(VALID[which])
    for kind, where, value in edits:
        where %= len(data) + 1
        if kind == "insert":
            data[where:where] = bytes([value])
        elif where < len(data):
            if kind == "flip":
                data[where] ^= value or 1
            elif kind == "set":
                data[where] = value
            else:
                del data[where]
    if fix_crc and len(data) >= 61 and data[16] == 2:
        # make the first batch pass the CRC check so that its records get decoded
        (length,) = struct.unpack_from(">i", data, 8)
        end = min(len(data), 12 + max(length, 0))
        struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:end])))
    for check in (True, False):
        try:
            decode_all(bytes(data), check)
        except ALLOWED:
            pass
