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

from rackafka.records._columns import Run
from rackafka.records._varint import ZIGZAG1

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["cut_pieces", "pieces_to_arrow"]

#: Runs shorter than this are cut into record tuples (a run costs ~15 Arrow calls).
MIN_ARROW_RUN = 512

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
        if Run not in set(map(type, pieces)):
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
    ones = pa.repeat(pa.scalar(1, pa.int64()), m)
    offsets = pc.call_function(
        "add", [pc.call_function("cumulative_sum", [ones]), pa.scalar(run.first - 1, pa.int64())]
    )
    if run.ts_deltas is None:
        millis = pa.repeat(pa.scalar(run.ts_base, pa.int64()), m)
    else:
        table = pa.array([run.ts_base + d for d in ZIGZAG1], pa.int64())
        deltas = pa.Array.from_buffers(pa.uint8(), m, [None, pa.py_buffer(run.ts_deltas)])
        millis = table.take(deltas)
    columns = [
        _slice(whole, run.key_at, run.key_size, run),
        _slice(whole, run.value_at, run.value_size, run),
        pa.repeat(pa.scalar(topic, pa.string()), m),
        pa.repeat(pa.scalar(partition, pa.int32()), m),
        offsets,
        pc.call_function("multiply", [millis, pa.scalar(1000, pa.int64())]).view(
            schema.field("timestamp").type
        ),
        pa.repeat(pa.scalar(run.timestamp_type, pa.int32()), m),
    ]
    if len(schema) > len(columns):
        columns.append(pa.nulls(m, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _slice(whole: pa.Array, at: int, size: int, run: Run) -> pa.Array:
    """The ``size`` bytes at ``at`` of each record of ``whole`` as a binary array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if size < 0:
        return pa.nulls(len(whole), pa.binary())
    try:
        sliced = pc.call_function("binary_slice", [whole], pc.SliceOptions(at, at + size))
        return sliced.cast(pa.binary())
    except pa.ArrowNotImplementedError:  # an older pyarrow: cut in Python
        buf = run.buf
        stops = range(run.start + at, run.start + at + run.records * run.size, run.size)
        return pa.array([buf[s : s + size] for s in stops], pa.binary())
