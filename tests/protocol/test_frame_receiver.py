"""FrameReceiver: frames split from a stream written straight into its buffers.

The receiver is driven here the way a transport drives an ``asyncio.BufferedProtocol``:
ask for a buffer, write at most its length into it, report the count.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.errors import KafkaProtocolError
from rackafka.protocol.frames import FIRST_FRAME_BUFFER, FrameReceiver


def framed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def deliver(
    receiver: FrameReceiver, data: bytes, reads: list[int] | None = None
) -> list[bytes | bytearray]:
    """Write ``data`` through the receiver, reads of the sizes in ``reads`` (then as much as
    each buffer takes); returns the frames it gave."""
    got: list[bytes | bytearray] = []
    steps = iter(reads or [])
    pos = 0
    while pos < len(data):
        view = receiver.get_buffer()
        assert len(view) > 0
        n = min(len(view), len(data) - pos, next(steps, len(data)))
        view[:n] = data[pos : pos + n]
        del view  # as a transport drops it
        pos += n
        got += receiver.buffer_updated(n)
    return got


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(0, 300_000), min_size=1, max_size=5),
    st.lists(st.integers(1, 150_000), max_size=20),
    st.sampled_from([8, 100, 4096, 65536]),
)
def test_frames_in_any_reads(sizes: list[int], reads: list[int], buffer_size: int) -> None:
    payloads = [os.urandom(n) for n in sizes]
    receiver = FrameReceiver(buffer_size=buffer_size)
    got = deliver(receiver, b"".join(framed(p) for p in payloads), reads)
    assert [bytes(f) for f in got] == payloads
    assert receiver.pending == 0
    assert receiver.allocated == 0


def test_small_frames_are_copied_out_of_the_fixed_buffer() -> None:
    receiver = FrameReceiver(buffer_size=64)
    got = deliver(receiver, framed(b"a" * 10) + framed(b"b" * 20))
    assert got == [b"a" * 10, b"b" * 20]
    assert all(type(f) is bytes for f in got)


def test_a_big_frame_is_its_own_buffer_handed_over() -> None:
    receiver = FrameReceiver(buffer_size=64)
    payload = os.urandom(5000)
    got = deliver(receiver, framed(payload) + framed(b"next"), reads=[30, 100])
    assert got == [bytearray(payload), b"next"]
    assert type(got[0]) is bytearray
    # The frame's bytes were received into it: its size is the frame's, not more.
    assert len(got[0]) == 5000


def test_memory_follows_the_bytes_received_not_the_size_prefix() -> None:
    """A prefix that claims 200 MB and 3 MB that follow: the buffer stays near 3 MB."""
    receiver = FrameReceiver()
    claimed = 200 * 1024 * 1024
    got = deliver(receiver, claimed.to_bytes(4, "big") + os.urandom(3 * 1024 * 1024))
    assert got == []
    assert receiver.pending == 3 * 1024 * 1024
    assert receiver.allocated <= 2 * receiver.pending
    assert receiver.allocated >= FIRST_FRAME_BUFFER


def test_the_buffer_grows_only_when_full() -> None:
    receiver = FrameReceiver(buffer_size=64)
    size = 3 * FIRST_FRAME_BUFFER
    deliver(receiver, size.to_bytes(4, "big") + b"x" * 100)
    assert receiver.allocated == FIRST_FRAME_BUFFER
    deliver(receiver, b"x" * (FIRST_FRAME_BUFFER - 100))
    assert receiver.allocated == FIRST_FRAME_BUFFER  # full, grown at the next request
    assert len(receiver.get_buffer()) == FIRST_FRAME_BUFFER
    assert receiver.allocated == 2 * FIRST_FRAME_BUFFER
    got = deliver(receiver, b"y" * (2 * FIRST_FRAME_BUFFER))
    assert len(got) == 1 and len(got[0]) == size  # capped at the frame's size
    assert receiver.allocated == 0


@pytest.mark.parametrize("size", [-1, 1001])
def test_an_invalid_size_prefix_raises(size: int) -> None:
    receiver = FrameReceiver(max_frame_size=1000, buffer_size=64)
    with pytest.raises(KafkaProtocolError, match=f"invalid frame size {size}"):
        deliver(receiver, framed(b"ok") + size.to_bytes(4, "big", signed=True))


def test_buffer_size_is_checked() -> None:
    with pytest.raises(ValueError, match="buffer_size"):
        FrameReceiver(buffer_size=4)
