"""The column decoder of record batch v2: runs of records that all have the same layout.

Most producers write runs of records of the same size, with the same key and value
lengths, no headers, one-byte timestamp deltas and consecutive offset deltas.
:func:`decode_run` checks that layout for a whole run with a few C-level operations on
strided slices of the buffer and hands back the records as columns (built with
``struct``, ``zip`` and ``map``), without a Python-level loop per record.  A run that does
not pass the checks is left to the scalar loop of :mod:`.default_records`, which raises
the precise error.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from itertools import repeat
from typing import Any, NamedTuple

from rackafka.records._varint import ZIGZAG1, read_varint

__all__ = [
    "EMPTY",
    "MIN_RECORD_SIZE",
    "MIN_RUN",
    "Run",
    "count_records",
    "decode_run",
    "pieces_from",
    "runs_in",
]

#: The shared empty headers tuple.
EMPTY: tuple[()] = ()
#: Smallest record: length, attributes, ts delta, offset delta, key, value, headers.
MIN_RECORD_SIZE = 7
#: Shortest run for the column decoder.
MIN_RUN = 16
# Largest offset delta whose zig-zag varint has 1, 2, 3 bytes.
_OD_LIMIT = (0, (1 << 6) - 1, (1 << 13) - 1, (1 << 20) - 1)
_NON_ASCII = re.compile(rb"[\x80-\xff]")
# First byte of the zig-zag varint of offset delta i, for i mod 64, without and with the
# continuation bit.
_OD_BYTE0 = {
    0: bytes((2 * i) & 0x7F for i in range(64)),
    0x80: bytes(((2 * i) & 0x7F) | 0x80 for i in range(64)),
}
_NO_RUN: tuple[int, int, Any] = (0, 0, ())
_BLOCK = 64  # records per struct format in _column
_BLOCK_STRUCTS: dict[tuple[int, int, int], struct.Struct] = {}


class Run(NamedTuple):
    """A checked run of same-layout records, not cut into values: where each value is.

    Record ``i`` (from 0) has offset ``first + i``; it starts at ``start + i * size`` of
    ``buf``, and its key (value) is the ``key_size`` (``value_size``) bytes at
    ``key_at`` (``value_at``) from there, ``None`` for a size of -1. Its timestamp is
    ``ts_base`` plus the zig-zag one-byte varint ``ts_deltas[i]`` (``ts_deltas`` is
    ``None`` when every record has ``ts_base``). No record has headers. Item 0 is the
    offset of the last record, as the offset of a record tuple is.
    """

    last: int
    first: int
    records: int
    buf: bytes
    start: int
    size: int
    key_at: int
    key_size: int
    value_at: int
    value_size: int
    ts_base: int
    ts_deltas: bytes | None
    timestamp_type: int

    def from_offset(self, offset: int) -> Run:
        """The records of the run from ``offset`` on (``first <= offset <= last``)."""
        k = offset - self.first
        if k <= 0:
            return self
        deltas = self.ts_deltas
        return self._replace(
            first=offset,
            records=self.records - k,
            start=self.start + k * self.size,
            ts_deltas=None if deltas is None else deltas[k:],
        )

    def before_offset(self, offset: int) -> Run:
        """The records of the run before ``offset`` (``first < offset <= last + 1``)."""
        keep = offset - self.first
        if keep >= self.records:
            return self
        deltas = self.ts_deltas
        return self._replace(
            last=offset - 1, records=keep, ts_deltas=None if deltas is None else deltas[:keep]
        )

    def tuples(self) -> list[tuple[Any, ...]]:
        """The record tuples of the run (as :meth:`RecordBatch.records` gives them)."""
        buf = self.buf
        m = self.records
        starts = range(self.start, self.start + m * self.size, self.size)
        columns: list[Any] = []
        for at, size in ((self.key_at, self.key_size), (self.value_at, self.value_size)):
            if size < 0:
                columns.append(repeat(None, m))
            else:
                columns.append([buf[s + at : s + at + size] for s in starts])
        deltas = self.ts_deltas
        timestamps: Any = (
            repeat(self.ts_base, m)
            if deltas is None
            else map(self.ts_base.__add__, map(ZIGZAG1.__getitem__, deltas))
        )
        return list(
            zip(
                range(self.first, self.first + m),
                timestamps,
                repeat(self.timestamp_type, m),
                columns[0],
                columns[1],
                repeat(None, m),
                repeat(self.key_size, m),
                repeat(self.value_size, m),
                repeat(EMPTY, m),
            )
        )


def _bytes_field(buf: bytes, pos: int) -> tuple[int, int, int] | None:
    """A record's key or value at ``pos``: ``(size, where its bytes start, the position
    after them)``, the size -1 for null; ``None`` for a negative size other than -1."""
    size, start = read_varint(buf, pos)
    if size < -1:
        return None
    return size, start, start + size if size > 0 else start


def decode_run(
    buf: bytes,
    start: int,
    end: int,
    remaining: int,
    base_offset: int,
    base_ts: int,
    tt: int,
    lat: int | None,
    cut: bool = True,
) -> tuple[int, int, Any]:
    """Decode a run of same-layout records at ``start`` with column operations.

    Return ``(number of records, new position, columns)`` where the columns are iterables
    of the nine record values; ``(0, 0, ())`` when there is no run of at least
    :data:`MIN_RUN` records (the scalar loop then takes over, and raises the errors).
    With ``cut=False``, the third item is a :class:`Run` (the run checked, no value cut).
    """
    # Layout of the first record.
    length, p = read_varint(buf, start)
    len_bytes = p - start
    size = len_bytes + length
    nxt = start + size
    if length < MIN_RECORD_SIZE - 1 or nxt > end:
        return _NO_RUN
    # Cheap rejection: the next record must start with the same length bytes.
    if buf[nxt : nxt + len_bytes] != buf[start:p]:
        return _NO_RUN
    ts_pos = p + 1  # after the attributes, whose value does not matter
    if buf[ts_pos] >= 0x80:
        return _NO_RUN
    od_pos = ts_pos + 1
    od0, p = read_varint(buf, od_pos)
    od_bytes = p - od_pos
    if od0 < 0 or od_bytes > 3:
        return _NO_RUN
    key_len_pos = p
    key_field = _bytes_field(buf, p)
    if key_field is None:
        return _NO_RUN
    key_size, key_pos, p = key_field
    value_len_pos = p
    value_field = _bytes_field(buf, p)
    if value_field is None:
        return _NO_RUN
    value_size, value_pos, p = value_field
    if p + 1 != nxt or buf[p] != 0:
        return _NO_RUN

    m = min(remaining, (end - start) // size, _OD_LIMIT[od_bytes] - od0 + 1)
    if m < MIN_RUN:
        return _NO_RUN
    # Bytes that must be equal in every record of the run: the length, the key and value
    # lengths, and the header count.
    invariant = [
        *range(start, start + len_bytes),
        *range(key_len_pos, key_pos),
        *range(value_len_pos, value_pos),
        p,
    ]
    # Check growing windows, so that the work stays proportional to the run found.
    n = 0
    window = MIN_RUN * 4
    while n < m:
        hi = min(m, n + window)
        good = _run_prefix(buf, start, size, n, hi, invariant, ts_pos, od_pos, od0, od_bytes)
        n += good
        if n < hi:
            break
        window <<= 1
    m = n
    if m < MIN_RUN:
        return _NO_RUN
    ts_column = buf[ts_pos : ts_pos + m * size : size]

    stop = start + m * size
    first = base_offset + od0
    if not cut:
        if lat is not None:
            ts_base, deltas = lat, None
        elif ts_column.count(ts_column[:1]) == m:
            ts_base, deltas = base_ts + ZIGZAG1[ts_column[0]], None
        else:
            ts_base, deltas = base_ts, ts_column
        run = Run(
            first + m - 1,
            first,
            m,
            buf,
            start,
            size,
            key_pos - start,
            key_size,
            value_pos - start,
            value_size,
            ts_base,
            deltas,
            tt,
        )
        return m, stop, run
    offsets = range(first, first + m)
    if lat is not None:
        timestamps: Any = repeat(lat, m)
    elif ts_column.count(ts_column[:1]) == m:
        timestamps = repeat(base_ts + ZIGZAG1[ts_column[0]], m)
    elif m >= 256:
        # a table of the 128 possible timestamps is cheaper than an addition per record
        timestamps = map(list(map(base_ts.__add__, ZIGZAG1)).__getitem__, ts_column)
    else:
        timestamps = map(base_ts.__add__, map(ZIGZAG1.__getitem__, ts_column))
    if key_size < 0:
        keys: Any = repeat(None, m)
    else:
        keys = _column(buf, start, m, size, key_pos - start, key_size)
    if value_size < 0:
        values: Any = repeat(None, m)
    else:
        values = _column(buf, start, m, size, value_pos - start, value_size)
    columns = (
        offsets,
        timestamps,
        repeat(tt, m),
        keys,
        values,
        repeat(None, m),
        repeat(key_size, m),
        repeat(value_size, m),
        repeat(EMPTY, m),
    )
    return m, stop, columns


def _run_prefix(
    buf: bytes,
    start: int,
    size: int,
    lo: int,
    hi: int,
    invariant: list[int],
    ts_pos: int,
    od_pos: int,
    od0: int,
    od_bytes: int,
) -> int:
    """How many of the records ``lo .. hi - 1`` of a run, from ``lo``, have its layout."""
    for j in invariant:
        column = buf[j + lo * size : j + hi * size : size]
        rest = len(column.lstrip(buf[j : j + 1]))
        if rest:
            hi -= rest
            if hi <= lo:
                return 0
    # one-byte timestamp deltas
    column = buf[ts_pos + lo * size : ts_pos + hi * size : size]
    if not column.isascii():
        found = _NON_ASCII.search(column)
        if found is not None:
            hi = lo + found.start()
            if hi <= lo:
                return 0
    # consecutive offset deltas
    for c in range(od_bytes):
        at = od_pos + c
        column = buf[at + lo * size : at + hi * size : size]
        expected = _offset_delta_column(od0 + lo, hi - lo, c, od_bytes)
        if column != expected:
            hi = lo + _common_prefix(column, expected)
            if hi <= lo:
                return 0
    return hi - lo


def _column(buf: bytes, start: int, m: int, size: int, at: int, length: int) -> list[bytes]:
    """The ``length`` bytes at ``at`` in each of ``m`` records of ``size`` bytes from ``start``.

    Whole blocks of :data:`_BLOCK` records are cut by one ``struct`` format (one C call
    per block); the rest with slices.
    """
    out: list[bytes] = []
    blocks = m // _BLOCK
    if blocks:
        key = (at, length, size)
        unpacker = _BLOCK_STRUCTS.get(key)
        if unpacker is None:
            if len(_BLOCK_STRUCTS) >= 64:
                _BLOCK_STRUCTS.clear()
            unpacker = struct.Struct(f"{at}x{length}s{size - at - length}x" * _BLOCK)
            _BLOCK_STRUCTS[key] = unpacker
        stop = start + blocks * _BLOCK * size
        for values in unpacker.iter_unpack(memoryview(buf)[start:stop]):
            out += values
        start = stop
    rest = m - blocks * _BLOCK
    if rest:
        first = start + at
        out += [buf[s : s + length] for s in range(first, first + rest * size, size)]
    return out


def _offset_delta_column(od0: int, m: int, c: int, nbytes: int) -> bytes:
    """Byte ``c`` of the ``nbytes``-byte varints of offset deltas ``od0 .. od0 + m - 1``."""
    hi = 0x80 if c < nbytes - 1 else 0
    if c == 0:
        r = od0 & 63
        return (_OD_BYTE0[hi] * ((r + m) // 64 + 1))[r : r + m]
    shift = 7 * c - 1  # byte c of the zig-zag value 2*i is (i >> (7c - 1)) & 0x7f
    first = od0 >> shift
    last = (od0 + m - 1) >> shift
    block = 1 << shift
    data = b"".join(bytes(((j & 0x7F) | hi,)) * block for j in range(first, last + 1))
    r = od0 - (first << shift)
    return data[r : r + m]


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of ``a`` and ``b``."""
    lo = 0
    hi = min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def pieces_from(pieces: list[Any], offset: int) -> list[Any]:
    """The records of ``pieces`` (record tuples and :class:`Run` s, in offset order) from
    ``offset`` on: a run that starts before it is cut."""
    if not pieces:
        return pieces
    head = pieces[0]
    if (head.first if type(head) is Run else head[0]) >= offset:
        return pieces
    i = 0
    while i < len(pieces) and pieces[i][0] < offset:
        i += 1
    rest = pieces[i:]
    if rest and type(rest[0]) is Run:
        rest[0] = rest[0].from_offset(offset)
    return rest


def count_records(pieces: Sequence[Any]) -> int:
    """The number of records in ``pieces`` (record tuples and :class:`Run` s)."""
    if not runs_in(pieces):  # record tuples only: no Python loop
        return len(pieces)
    return sum([p.records if type(p) is Run else 1 for p in pieces])


def runs_in(pieces: Sequence[Any]) -> int:
    """The number of :class:`Run` s among ``pieces`` (and record tuples), without a
    Python loop: a record tuple has 9 items, a run 13."""
    return (sum(map(len, pieces)) - 9 * len(pieces)) // (len(Run._fields) - 9)
