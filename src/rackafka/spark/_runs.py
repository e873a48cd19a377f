"""Arrow columns cut in bulk from runs of same-layout records (a task's hot path).

The consumer hands the source's tasks a run of records that all have the same layout
(most producers write them: same key and value sizes, no headers) as one
:class:`~rackafka.records._columns.Run`: checked like any record, but not cut into a
bytes object per value. Its records lie at a fixed stride in the batch's buffer, so the
buffer is an Arrow fixed-size binary array of whole records, and a key or value column
is one Arrow slice of it (``binary_slice``, in C++): no Python object per record. Short
runs (where a few Arrow calls would cost more than the records) are cut in Python into
record tuples, as the consumer's own decoder does.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from rackafka.records._columns import Run, runs_in
from rackafka.records._varint import ZIGZAG1

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["cut_pieces", "pieces_to_arrow"]

#: Runs shorter than this are cut into record tuples: a run costs ~12 Arrow calls (~70 us),
#: about what ~50 record tuples cost cut and converted.
MIN_ARROW_RUN = 48

_get_offset = itemgetter(0)


def cut_pieces(pieces: list[Any], end: int) -> list[Any]:
    """The records of ``pieces`` (record tuples and runs, in offset order) before the
    offset ``end``: a run that goes past it is cut."""
    i = bisect_left(pieces, end, key=_get_offset)
    if i < len(pieces):
        piece = pieces[i]
        if type(piece) is Run and piece.first < end:
            return [*pieces[:i], piece.before_offset(end)]
    return pieces[:i]


def pieces_to_arrow(
    parts: Sequence[tuple[str, int, Sequence[Any]]], schema: pa.Schema, to_arrow: Any
) -> pa.RecordBatch:
    """The records of several partitions, ``(topic, partition, pieces)`` each, as one
    Arrow record batch, where ``pieces`` are record tuples and runs; ``to_arrow`` builds
    a batch of record tuples (the reader's ``parts_to_arrow``)."""
    import pyarrow as pa

    batches: list[pa.RecordBatch] = []
    tuples: list[tuple[str, int, list[Any]]] = []
    for topic, partition, pieces in parts:
        if not runs_in(pieces):
            tuples.append((topic, partition, list(pieces)))
            continue
        records: list[Any] = []
        for piece in pieces:
            if type(piece) is not Run:
                records.append(piece)
            elif piece.records < MIN_ARROW_RUN:
                records.extend(piece.tuples())
            else:
                if records:
                    tuples.append((topic, partition, records))
                    records = []
                if tuples:
                    batches.append(to_arrow(tuples, schema))
                    tuples = []
                batches.append(_run_batch(topic, partition, piece, schema))
        if records:
            tuples.append((topic, partition, records))
    if tuples:
        batches.append(to_arrow(tuples, schema))
    if len(batches) == 1:
        return batches[0]
    return pa.RecordBatch.from_arrays(
        [pa.concat_arrays([b.column(i) for b in batches]) for i in range(len(schema))],
        schema=schema,
    )


def _run_batch(topic: str, partition: int, run: Run, schema: pa.Schema) -> pa.RecordBatch:
    """The records of ``run`` as an Arrow record batch of ``schema``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    m = run.records
    whole = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(run.size), m, [None, pa.py_buffer(run.buf).slice(run.start, m * run.size)]
    )
    offsets = pc.call_function("add", [_steps(1, m, pa.int64()), pa.scalar(run.first, pa.int64())])
    ts_type = schema.field("timestamp").type
    base = pa.scalar(run.ts_base * 1000, pa.int64())
    if run.ts_deltas is None:
        micros = pa.repeat(base, m)
    else:
        # the deltas (one-byte zig-zag varints) in microseconds, taken by index
        deltas = pa.Array.from_buffers(pa.uint8(), m, [None, pa.py_buffer(run.ts_deltas)])
        micros = pc.call_function("add", [_zigzag_micros().take(deltas), base])
    columns = [
        _slice(whole, run.key_at, run.key_size, run),
        _slice(whole, run.value_at, run.value_size, run),
        _same(topic, m, pa.string()),
        _same(partition, m, pa.int32()),
        offsets,
        micros.view(ts_type),
        _same(run.timestamp_type, m, pa.int32()),
    ]
    if len(schema) > len(columns):
        columns.append(pa.nulls(m, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _slice(whole: pa.Array, at: int, size: int, run: Run) -> pa.Array:
    """The ``size`` bytes at ``at`` of each record of ``whole`` as a binary array: the
    bytes cut by ``binary_slice`` (one copy, in C++), with offsets ``0, size, 2 * size``..."""
    import pyarrow as pa
    import pyarrow.compute as pc

    m = len(whole)
    if size < 0:
        return pa.nulls(m, pa.binary())
    try:
        sliced = pc.call_function("binary_slice", [whole], pc.SliceOptions(at, at + size))
    except pa.ArrowNotImplementedError:  # an older pyarrow: cut in Python
        buf = run.buf
        stops = range(run.start + at, run.start + at + m * run.size, run.size)
        return pa.array([buf[s : s + size] for s in stops], pa.binary())
    starts = _steps(size, m + 1, pa.int32())
    return pa.Array.from_buffers(
        pa.binary(), m, [None, starts.buffers()[1], sliced.buffers()[1]], offset=0
    )


#: ``0, step, 2 * step, ...`` as Arrow arrays, by step and type, grown as needed.
_STEPS: dict[tuple[int, Any], pa.Array] = {}
_MAX_STEPS = 16


def _steps(step: int, n: int, kind: pa.DataType) -> pa.Array:
    """The ``n`` numbers ``0, step, 2 * step, ...`` of type ``kind`` (a slice of a
    cached array: no work per item)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    key = (step, kind)
    steps = _STEPS.get(key)
    if steps is None or len(steps) < n:
        # Entries past what a run needs may wrap in int32; never used (a run fits a batch).
        size = max(n, 16_384)
        counts = pc.call_function("cumulative_sum", [pa.repeat(pa.scalar(step, kind), size - 1)])
        steps = pa.concat_arrays([pa.array([0], kind), counts])
        if len(_STEPS) >= _MAX_STEPS:
            _STEPS.clear()
        _STEPS[key] = steps
    return steps.slice(0, n)


#: The same value ``n`` times, by value and type, grown as needed.
_SAME: dict[tuple[Any, Any], pa.Array] = {}


def _same(value: Any, n: int, kind: pa.DataType) -> pa.Array:
    """``value`` ``n`` times as an Arrow array of ``kind`` (a slice of a cached array)."""
    import pyarrow as pa

    key = (value, kind)
    same = _SAME.get(key)
    if same is None or len(same) < n:
        same = pa.repeat(pa.scalar(value, kind), max(n, 16_384))
        if len(_SAME) >= _MAX_STEPS:
            _SAME.clear()
        _SAME[key] = same
    return same.slice(0, n)


_ZIGZAG_MICROS: list[pa.Array] = []


def _zigzag_micros() -> pa.Array:
    """The values of the 128 one-byte zig-zag varints, times 1000, as an Arrow array."""
    import pyarrow as pa

    if not _ZIGZAG_MICROS:
        _ZIGZAG_MICROS.append(pa.array([d * 1000 for d in ZIGZAG1], pa.int64()))
    return _ZIGZAG_MICROS[0]
