"""FrameBuffer with big frames, and decoding a frame handed over as a bytearray."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.errors import KafkaProtocolError
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.frames import FrameBuffer, decode_response
from tests.protocol._wire import NO_TAGS, carray, cblob, cstring, i16, i32, i64, tags


def framed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 300_000), min_size=1, max_size=4),
    st.lists(st.integers(1, 200_000), max_size=12),
    st.booleans(),
)
def test_big_frames_in_any_chunking(
    sizes: list[int], chunk_sizes: list[int], read_each: bool
) -> None:
    payloads = [os.urandom(n) for n in sizes]
    stream = b"".join(framed(p) for p in payloads)
    fb = FrameBuffer()
    got: list[bytes | bytearray] = []
    pos = 0
    chunks = iter(chunk_sizes)
    while pos < len(stream):
        step = next(chunks, len(stream))
        fb.feed(stream[pos : pos + step])
        pos += step
        if read_each:
            got.extend(fb.frames())
    got.extend(fb.frames())
    assert got == payloads
    assert all(isinstance(f, (bytes, bytearray)) for f in got)
    assert fb.pending == 0


def test_a_frame_that_fills_the_buffer_is_handed_over() -> None:
    payload = os.urandom(1 << 20)
    data = framed(payload)
    fb = FrameBuffer()
    for start in range(0, len(data), 65536):
        fb.feed(data[start : start + 65536])
        if start + 65536 < len(data):
            assert fb.frames() == []
    (frame,) = fb.frames()
    # The buffer itself, without its size prefix, not a copy of it.
    assert isinstance(frame, bytearray)
    assert frame == payload
    # The next frame goes into a new buffer: the one handed over is never written again.
    fb.feed(framed(b"next"))
    assert fb.frames() == [b"next"]
    assert frame == payload


def test_frames_after_one_in_the_same_buffer_are_copied_out() -> None:
    first, second = os.urandom(100_000), os.urandom(10)
    fb = FrameBuffer()
    fb.feed(framed(first) + framed(second) + b"\x00\x00")
    assert fb.frames() == [first, second]
    assert fb.pending == 2


def test_oversized_frame_that_fills_the_buffer_is_refused() -> None:
    fb = FrameBuffer(max_frame_size=10)
    fb.feed(framed(b"x" * 11))
    with pytest.raises(KafkaProtocolError):
        fb.frames()


def _fetch_v12_response(correlation_id: int, records: bytes) -> bytes:
    partition = (
        i32(3)  # partition_index
        + i16(0)  # error_code
        + i64(1000)  # high_watermark
        + i64(1000)  # last_stable_offset
        + i64(0)  # log_start_offset
        + carray(None)  # aborted_transactions
        + i32(-1)  # preferred_read_replica
        + cblob(records)
        + NO_TAGS
    )
    topic = cstring("t") + carray([partition]) + NO_TAGS
    body = i32(0) + i16(0) + i32(77) + carray([topic]) + NO_TAGS  # throttle, error, session
    # Response header v1: correlation id and a tagged section (one unknown tag here).
    return i32(correlation_id) + tags((5, b"abc")) + body


def test_decode_response_from_a_bytearray_frame() -> None:
    records = os.urandom(200_000)
    wire = _fetch_v12_response(42, records)
    from_bytes = decode_response(FETCH, 12, wire)
    frame = bytearray(wire)
    from_bytearray = decode_response(FETCH, 12, frame)
    part = from_bytearray.responses[0].partitions[0]
    assert part.records == records
    assert type(part.records) is bytes
    assert from_bytearray.session_id == 77
    assert from_bytearray == from_bytes
    # No view of the frame is left behind: it can still be resized.
    frame += b"x"


@pytest.mark.parametrize("cut", ["body", "header"])
def test_truncated_bytearray_frame_raises_protocol_error(cut: str) -> None:
    wire = _fetch_v12_response(1, os.urandom(1000))
    frame = bytearray(wire[:-600] if cut == "body" else wire[:5])
    with pytest.raises(KafkaProtocolError):
        decode_response(FETCH, 12, frame)
    frame += b"x"  # the view used to read it was released
