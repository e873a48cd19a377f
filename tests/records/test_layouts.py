"""Record layouts: records of a learned size are cut up by one struct call, and checked.

The decoder learns the layout of a record body (key length to the end of the headers) the
second time it sees its size, folding header values that were equal both times into the
structure it checks.  Whatever the records, the result must be the reference decoder's,
and a record that differs from the learned layout in any byte must be decoded (or
rejected) as the general path would.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.errors import CorruptRecordException
from rackafka.records import CODEC_LZ4, CODEC_NONE, compress, iter_batches
from rackafka.records import default_records as dr
from rackafka.structs import ConsumerRecord

from .refcodec import batch_bytes, decode_records, record_bytes

TS = 1_700_000_000_000
TRACE = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

Headers = list[tuple[str, bytes | None]]


@pytest.fixture(autouse=True)
def fresh_layouts() -> Iterator[None]:
    """Each test learns its layouts from scratch."""
    saved = dict(dr._RECORD_LAYOUTS), dict(dr._RECORD_SEEN)
    dr._RECORD_LAYOUTS.clear()
    dr._RECORD_SEEN.clear()
    yield
    dr._RECORD_LAYOUTS.clear()
    dr._RECORD_SEEN.clear()
    dr._RECORD_LAYOUTS.update(saved[0])
    dr._RECORD_SEEN.update(saved[1])


def simple(records: list[Any]) -> list[tuple[Any, ...]]:
    return [(r[0], r[1], r[3], r[4], r[8]) for r in records]


def batch_of(raw: bytes, count: int, codec: int = CODEC_NONE, last: int | None = None) -> Any:
    payload = compress(codec, raw) if codec else raw
    data = batch_bytes(
        payload,
        count=count,
        base_offset=500,
        attributes=codec,
        base_timestamp=TS,
        last_offset_delta=last,
    )
    (batch,) = iter_batches(data, topic="t", partition=1)
    return batch


def check(raw: bytes, count: int, codec: int = CODEC_NONE, last: int | None = None) -> None:
    """Decode three times (the layouts are learned on the way): always the reference."""
    expected = decode_records(raw, count, 500, TS)
    for _ in range(3):
        batch = batch_of(raw, count, codec, last)
        records = batch.records()
        assert simple(records) == expected
        assert [(r[6], r[7]) for r in records] == [
            (-1 if k is None else len(k), -1 if v is None else len(v)) for _, _, k, v, _ in expected
        ]
        built = batch.records(partial(ConsumerRecord, "t", 1))
        assert built == [ConsumerRecord("t", 1, *r) for r in records]


# Header blocks of every kind a layout knows, and some it does not.
HEADER_SETS: list[Headers] = [
    [],
    [("traceparent", TRACE)],
    [("content-type", b"application/json")],
    [("traceparent", TRACE), ("content-type", b"application/json")],
    [("content-type", b"application/json"), ("traceparent", TRACE)],
    [("a", TRACE), ("b", TRACE[::-1])],
    [("a", b"1"), ("b", b"2"), ("c", TRACE)],
    [("a", None)],
    [("a", None), ("b", TRACE)],
    [("a", b"x"), ("b", None), ("c", b"y")],
    [("", b"")],
    [("k\xe9", b"v")],
]


def vary(headers: Headers, i: int) -> Headers:
    """``headers`` with the values that are not constants changed for record ``i``."""
    out: Headers = []
    for key, value in headers:
        if value is not None and len(value) > 8:
            value = b"%02d" % (i % 100) + value[2:]  # same length, other bytes
        out.append((key, value))
    return out


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=120),
    sizes=st.lists(st.integers(min_value=0, max_value=70), min_size=1, max_size=4),
    key=st.sampled_from(["none", "empty", "fixed", "varying"]),
    header_picks=st.lists(
        st.integers(min_value=0, max_value=len(HEADER_SETS) - 1), min_size=1, max_size=3
    ),
    null_values=st.booleans(),
    gaps=st.booleans(),
    codec=st.sampled_from([CODEC_NONE, CODEC_LZ4]),
)
def test_records_of_repeated_sizes_match_the_reference(
    n: int,
    sizes: list[int],
    key: str,
    header_picks: list[int],
    null_values: bool,
    gaps: bool,
    codec: int,
) -> None:
    parts = []
    od = last = 0
    for i in range(n):
        size = sizes[i % len(sizes)]
        value: bytes | None = bytes([65 + i % 26]) * size
        if null_values and i % 5 == 3:
            value = None
        k: bytes | None = {
            "none": None,
            "empty": b"",
            "fixed": b"user-%06d" % i,
            "varying": b"u" * (i % 3),
        }[key]
        headers = vary(HEADER_SETS[header_picks[i % len(header_picks)]], i)
        parts.append(record_bytes(od, i % 60 - 30, k, value, headers))
        last = od
        od += 1 + (i % 4 == 1 and gaps)
    check(b"".join(parts), n, codec, last)


def test_a_constant_header_value_that_changes_is_learned_again() -> None:
    # The first two records have the same "type": it is folded into the layout.
    types = [b"aaaa", b"aaaa", b"bbbb", b"bbbb", b"cccc"] + [b"dddd"] * 5
    raw = b"".join(
        record_bytes(i, 0, b"key", b"value", [("type", t), ("trace", b"%055d" % i)])
        for i, t in enumerate(types)
    )
    check(raw, len(types))
    (layout,) = dr._RECORD_LAYOUTS.values()
    # "type" turned out not to be constant: the layout was learned again without folding.
    assert layout and layout[4] == dr._H_VAR_VAR and not layout[7]


def test_a_size_whose_records_differ_is_given_up() -> None:
    # Same body size, different split between key and value: the layout learned from
    # the first two does not fit the third, which is decoded by the general path.
    h = [("h", b"1")]
    raw = b"".join(
        [
            record_bytes(0, 0, b"k1", b"value1", h),
            record_bytes(1, 0, b"k2", b"value2", h),
            record_bytes(2, 0, b"key3", b"valu", h),
            record_bytes(3, 0, b"k4", b"value4", h),
        ]
    )
    check(raw, 4)
    assert list(dr._RECORD_LAYOUTS.values()) == [False]


def test_records_without_headers_have_no_layouts() -> None:
    raw = b"".join(record_bytes(i, 0, b"k", b"v" * (i % 3)) for i in range(30))
    check(raw, 30)
    assert not dr._RECORD_LAYOUTS


def test_a_record_without_headers_that_fails_a_layout_gives_its_size_up() -> None:
    h = [("h", b"xy")]
    same_size = record_bytes(2, 0, b"k", b"v" * 6)  # the size of b"v" with a header
    raw = b"".join(
        [record_bytes(0, 0, b"k", b"v", h), record_bytes(1, 0, b"k", b"w", h), same_size]
    )
    assert len(same_size) == len(record_bytes(2, 0, b"k", b"v", h))
    check(raw, 3)
    assert list(dr._RECORD_LAYOUTS.values()) == [False]


def test_large_bodies_have_no_layout() -> None:
    big = dr._RECORD_LAYOUT_LIMIT
    raw = b"".join(record_bytes(i, 0, None, b"v" * big, [("h", b"1")]) for i in range(3))
    check(raw, 3)
    assert not dr._RECORD_LAYOUTS and not dr._RECORD_SEEN


def events(n: int) -> list[bytes]:
    return [
        record_bytes(
            i,
            i % 50,
            b"user-%06d" % (i * 7919 % 1_000_000),
            b'{"n":%d,"pad":"%s"}' % (i, b"x" * (i % 3)),
            [("traceparent", b"00-%032x-%016x-01" % (i, i)), ("content-type", b"application/json")],
        )
        for i in range(n)
    ]


def test_events_use_their_layouts() -> None:
    raw = b"".join(events(60))
    check(raw, 60)
    layouts = [v for v in dr._RECORD_LAYOUTS.values() if v]
    assert layouts and all(v[4] == dr._H_VAR_CONST for v in layouts)


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_LZ4])
def test_every_corrupt_byte_of_a_record_with_a_learned_layout_is_caught(codec: int) -> None:
    """Change each byte of the last record: the decoder says what the reference says."""
    records = events(30)
    good = b"".join(records)
    batch_of(good, 30, codec).records()
    batch_of(good, 30, codec).records()  # every size seen twice: layouts learned
    last = records[-1]
    for at in range(len(last)):
        for flip in (0x01, 0x40, 0x80):
            bad = bytearray(last)
            bad[at] ^= flip
            raw = b"".join(records[:-1]) + bytes(bad)
            try:
                expected: Any = decode_records(raw, 30, 500, TS)
            except UnicodeDecodeError:
                continue  # a header key that is not UTF-8: the reference cannot say
            except Exception:  # the reference rejects it: so must the decoder
                expected = None
            batch = batch_of(raw, 30, codec, last=29)
            if expected is None or expected[-1][0] != 529:
                with pytest.raises(CorruptRecordException):
                    batch.records()
            else:
                assert simple(batch.records()) == expected


def test_consumer_records_built_inline_are_dataclass_instances() -> None:
    raw = b"".join(events(40))
    batch = batch_of(raw, 40)
    batch.records()
    for _ in range(2):
        built = batch.records(partial(ConsumerRecord, "t", 1))
        plain = [ConsumerRecord("t", 1, *r) for r in batch.records()]
        assert [type(r) for r in built] == [ConsumerRecord] * 40
        assert built == plain
        assert [list(vars(r).items()) for r in built] == [list(vars(r).items()) for r in plain]
        built[0].extra = 1  # extra attributes, as aiokafka's records take
        assert built[0].extra == 1


def test_other_factories_get_the_values() -> None:
    raw = b"".join(events(20))
    batch = batch_of(raw, 20)
    tuples = batch.records()

    class Sub(ConsumerRecord[Any, Any]):
        pass

    assert batch.records(partial(Sub, "t", 1)) == [Sub("t", 1, *r) for r in tuples]
    assert all(type(r) is Sub for r in batch.records(partial(Sub, "t", 1)))
    assert batch.records(lambda *v: v) == tuples
