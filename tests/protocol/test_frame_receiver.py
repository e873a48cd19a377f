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
from rackafka.protocol.frames import UPFRONT_LIMIT, FrameReceiver


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
    assert len(got[0]) == 5000  # the frame's size, nothing more
    assert receiver.allocated == 0


def test_a_frame_is_received_in_reads_of_any_size_into_one_buffer() -> None:
    receiver = FrameReceiver(buffer_size=64)
    payload = os.urandom(300_000)
    deliver(receiver, framed(payload)[:1000])
    assert receiver.allocated == 300_000
    assert receiver.pending == 996
    rest = receiver.get_buffer()
    assert len(rest) == 300_000 - 996  # the rest of the frame, and no byte past it
    del rest
    got = deliver(receiver, payload[996:], reads=[1, 7, 50_000])
    assert got == [bytearray(payload)]


def test_a_frame_claimed_past_the_upfront_limit_grows_as_it_fills() -> None:
    receiver = FrameReceiver(buffer_size=64, upfront_limit=1000)
    payload = os.urandom(3500)
    deliver(receiver, framed(payload)[:104])
    assert receiver.allocated == 1000
    deliver(receiver, payload[100:1000])
    assert receiver.allocated == 1000  # full: grown when more room is asked for
    assert len(receiver.get_buffer()) == 1000
    assert receiver.allocated == 2000
    got = deliver(receiver, payload[1000:])
    assert got == [bytearray(payload)]  # the last step stopped at the frame's size
    assert len(got[0]) == 3500


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(
    not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc (Linux)"
)
def test_memory_follows_the_bytes_received_not_the_size_prefix() -> None:
    """A prefix that claims 250 MB and 3 MB that follow: the buffer is the upfront limit
    (or twice what arrived), and the process grows by that, not by 250 MB."""
    receiver = FrameReceiver(max_frame_size=256 * 1024 * 1024)
    claimed = 250 * 1024 * 1024
    data = claimed.to_bytes(4, "big") + b"\x01" * (3 * 1024 * 1024)
    before = rss()
    got = deliver(receiver, data)
    grown = rss() - before
    assert got == []
    assert receiver.pending == 3 * 1024 * 1024
    assert receiver.allocated == UPFRONT_LIMIT
    assert grown < UPFRONT_LIMIT + 32 * 1024 * 1024, f"grew by {grown} bytes"


@pytest.mark.parametrize("size", [-1, 1001])
def test_an_invalid_size_prefix_raises(size: int) -> None:
    receiver = FrameReceiver(max_frame_size=1000, buffer_size=64)
    with pytest.raises(KafkaProtocolError, match=f"invalid frame size {size}"):
        deliver(receiver, framed(b"ok") + size.to_bytes(4, "big", signed=True))


def test_sizes_are_checked() -> None:
    with pytest.raises(ValueError, match="buffer_size"):
        FrameReceiver(buffer_size=4)
    with pytest.raises(ValueError, match="upfront_limit"):
        FrameReceiver(buffer_size=4096, upfront_limit=1000)
