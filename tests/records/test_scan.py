from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.records import encode_batch
from rackafka.records.scan import next_offset_after


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=5), st.integers(0, 10**6))
def test_next_offset_after_v2_batches(sizes: list[int], base: int) -> None:
    data = b""
    offset = base
    for n in sizes:
        data += encode_batch([(0, None, b"v%d" % i) for i in range(n)], base_offset=offset)
        offset += n
    assert next_offset_after(data) == offset
    # A truncated last batch is not counted.
    last = encode_batch([(0, None, b"x")], base_offset=offset)
    for cut in (1, 12, len(last) - 1):
        assert next_offset_after(data + last[:cut]) == offset
    assert next_offset_after(b"") is None
    assert next_offset_after(last[:30]) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_next_offset_after_never_raises_on_garbage(data: bytes) -> None:
    result = next_offset_after(data)
    assert result is None or isinstance(result, int)


def test_short_tail_with_tiny_length() -> None:
    import struct

    assert next_offset_after(struct.pack(">qi", 0, 1) + b"x") is None


def _with_epoch(batch: bytes, epoch: int) -> bytes:
    # partitionLeaderEpoch sits at bytes 12..16 of a v2 batch, outside the CRC'd part
    return batch[:12] + epoch.to_bytes(4, "big", signed=True) + batch[16:]


def test_last_batch_end_gives_the_last_complete_batch_and_its_epoch() -> None:
    from rackafka.records.scan import last_batch_end

    first = _with_epoch(encode_batch([(0, None, b"a"), (0, None, b"b")], base_offset=100), 0)
    second = _with_epoch(encode_batch([(0, None, b"c")], base_offset=102), 1)
    assert last_batch_end(first) == (102, 0)
    assert last_batch_end(first + second) == (103, 1)
    # a truncated last batch is ignored, with its epoch
    assert last_batch_end(first + second[:20]) == (102, 0)
    assert last_batch_end(b"") is None
    assert last_batch_end(second[:30]) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_last_batch_end_agrees_with_next_offset_after(data: bytes) -> None:
    from rackafka.records.scan import last_batch_end

    end = last_batch_end(data)
    assert (end[0] if end is not None else None) == next_offset_after(data)
