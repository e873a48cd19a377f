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
from collections.abc import Callable, Sequence
from itertools import pairwise
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from rackafka.records._columns import Run, runs_in
from rackafka.records._varint import ZIGZAG1

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["cut_pieces", "pieces_to_arrow", "pieces_to_batches"]

#: Runs shorter than this are cut into record tuples: a run costs ~12 Arrow calls (~70 us),
#: about what ~50 record tuples cost cut and converted.
MIN_ARROW_RUN = 48

#: Records in long runs from which a partition's records get Arrow batches of their own
#: (see :func:`pieces_to_batches`).
OWN_BATCH_RECORDS = 2048

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
    Arrow record batch: :func:`pieces_to_batches` put together (a copy of every column)."""
    import pyarrow as pa

    batches = pieces_to_batches(parts, schema, to_arrow)
    if len(batches) == 1:
        return batches[0]
    return pa.RecordBatch.from_arrays(
        [pa.concat_arrays([b.column(i) for b in batches]) for i in range(len(schema))],
        schema=schema,
    )


def pieces_to_batches(
    parts: Sequence[tuple[str, int, Sequence[Any]]], schema: pa.Schema, to_arrow: Any
) -> list[pa.RecordBatch]:
    """The records of several partitions, ``(topic, partition, pieces)`` each, as Arrow
    record batches, where ``pieces`` are record tuples and runs; ``to_arrow`` builds a
    batch of record tuples (the reader's ``parts_to_arrow``).

    A partition with at least :data:`OWN_BATCH_RECORDS` records in long runs has batches
    of its own: one for its runs that lie in one buffer, their key and value columns
    gathered in one copy (:func:`_gather`), and one for each stretch of its other
    records. The other partitions share one batch, put together at the end (a batch
    costs PySpark and the JVM a fixed amount, about what copying 2,000 records costs).
    The records of a partition are all in one batch or in batches of their own, in order.
    """
    import pyarrow as pa

    batches: list[pa.RecordBatch] = []
    shared: list[pa.RecordBatch] = []
    tuples: list[tuple[str, int, list[Any]]] = []
    for topic, partition, pieces in parts:
        if not runs_in(pieces):
            tuples.append((topic, partition, list(pieces)))
        else:
            in_runs = sum(
                [p.records for p in pieces if type(p) is Run and p.records >= MIN_ARROW_RUN]
            )
            out = batches if in_runs >= OWN_BATCH_RECORDS else shared
            out += _part_batches(topic, partition, pieces, schema, to_arrow)
    if tuples:
        shared.append(to_arrow(tuples, schema))
    if len(shared) > 1:
        columns = range(len(schema))
        shared = [
            pa.RecordBatch.from_arrays(
                [pa.concat_arrays([b.column(i) for b in shared]) for i in columns], schema=schema
            )
        ]
    return batches + shared


def _part_batches(
    topic: str, partition: int, pieces: Sequence[Any], schema: pa.Schema, to_arrow: Any
) -> list[pa.RecordBatch]:
    """The records of one partition (record tuples and runs) as Arrow record batches, in
    order: long runs in one buffer together (see :func:`_same_group`), the records
    between them cut into record tuples."""
    batches: list[pa.RecordBatch] = []
    records: list[Any] = []
    group: list[Run] = []
    for piece in pieces:
        if type(piece) is Run and piece.records >= MIN_ARROW_RUN:
            if records:
                batches.append(to_arrow([(topic, partition, records)], schema))
                records = []
            elif group and not _same_group(group[0], piece):
                batches.append(_runs_batch(topic, partition, group, schema))
                group = []
            group.append(piece)
            continue
        if group:
            batches.append(_runs_batch(topic, partition, group, schema))
            group = []
        if type(piece) is Run:
            records.extend(piece.tuples())
        else:
            records.append(piece)
    if group:
        batches.append(_runs_batch(topic, partition, group, schema))
    if records:
        batches.append(to_arrow([(topic, partition, records)], schema))
    return batches


def _same_group(first: Run, run: Run) -> bool:
    """Whether ``run`` can go into one batch with the runs from ``first``: the same
    buffer, null keys (values) in both or in neither, and one timestamp type."""
    return (
        run.buf is first.buf
        and (run.key_size < 0) == (first.key_size < 0)
        and (run.value_size < 0) == (first.value_size < 0)
        and run.timestamp_type == first.timestamp_type
    )


def _runs_batch(topic: str, partition: int, runs: list[Run], schema: pa.Schema) -> pa.RecordBatch:
    """The records of ``runs`` (of one partition, in offset order, in one buffer, see
    :func:`_same_group`) as one Arrow record batch of ``schema``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    first = runs[0]
    m = sum(run.records for run in runs)
    if all(r.first == p.last + 1 for p, r in pairwise(runs)):  # no gap
        offsets = pc.call_function(
            "add", [_steps(1, m, pa.int64()), pa.scalar(first.first, pa.int64())]
        )
    else:
        offsets = _concat([_offsets(run) for run in runs])
    ts_type = schema.field("timestamp").type
    if all(run.ts_deltas is None and run.ts_base == first.ts_base for run in runs):
        micros = pa.repeat(pa.scalar(first.ts_base * 1000, pa.int64()), m)
    else:
        micros = _concat([_micros(run) for run in runs])
    columns = [
        _gather(runs, m, True),
        _gather(runs, m, False),
        _same(topic, m, pa.string()),
        _same(partition, m, pa.int32()),
        offsets,
        micros.view(ts_type),
        _same(first.timestamp_type, m, pa.int32()),
    ]
    if len(schema) > len(columns):
        columns.append(_same(None, m, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _offsets(run: Run) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.call_function(
        "add", [_steps(1, run.records, pa.int64()), pa.scalar(run.first, pa.int64())]
    )


def _micros(run: Run) -> pa.Array:
    """The timestamps of the records of ``run`` in microseconds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    base = pa.scalar(run.ts_base * 1000, pa.int64())
    if run.ts_deltas is None:
        return pa.repeat(base, run.records)
    # the deltas (one-byte zig-zag varints) in microseconds, taken by index
    deltas = pa.Array.from_buffers(pa.uint8(), run.records, [None, pa.py_buffer(run.ts_deltas)])
    return pc.call_function("add", [_zigzag_micros().take(deltas), base])


def _concat(arrays: list[pa.Array]) -> pa.Array:
    import pyarrow as pa

    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


def _gather(runs: list[Run], m: int, keys: bool) -> pa.Array:
    """The keys (values) of the ``m`` records of ``runs`` as an Arrow binary array, in
    one copy.

    The buffer of the runs is seen as a binary array whose items are, in turn, the key
    of a record and the bytes up to the key of the next one (whatever lies between:
    the rest of the record, the next record's head, the header of the next batch); the
    keys are its even items, taken in C++ (``take``). Null keys (values) are a null
    column: :func:`_same_group` puts runs of null and of non-null keys apart.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    first = runs[0]
    if (first.key_size if keys else first.value_size) < 0:
        return _same(None, m, pa.binary())
    if not _NO_BOUNDS_CHECK:
        _NO_BOUNDS_CHECK.append(pc.TakeOptions(boundscheck=False))
    buf = first.buf
    if len(buf) > _MAX_POSITION:  # positions in int32
        return _concat([_slice(run, keys) for run in runs])
    bounds = []
    for run in runs:
        at, size = (run.key_at, run.key_size) if keys else (run.value_at, run.value_size)
        bounds.append(
            pc.call_function(
                "add",
                [_bounds(run.size, size, 2 * run.records), pa.scalar(run.start + at, pa.int32())],
            )
        )
    positions = _concat(bounds)
    items = pa.Array.from_buffers(
        pa.binary(), 2 * m - 1, [None, positions.buffers()[1], pa.py_buffer(buf)]
    )
    # in bounds: the even items of 2m - 1
    return pc.call_function("take", [items, _steps(2, m, pa.int32())], _NO_BOUNDS_CHECK[0])


_NO_BOUNDS_CHECK: list[Any] = []
#: The most a position in a run's buffer may be for :func:`_gather` (int32 offsets).
_MAX_POSITION = (1 << 31) - 1


def _slice(run: Run, keys: bool) -> pa.Array:
    """The keys (values) of ``run`` cut by ``binary_slice`` from its records seen as a
    fixed-size binary array (the way of a buffer too large for :func:`_gather`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    m = run.records
    at, size = (run.key_at, run.key_size) if keys else (run.value_at, run.value_size)
    whole = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(run.size), m, [None, pa.py_buffer(run.buf).slice(run.start, m * run.size)]
    )
    sliced = pc.call_function("binary_slice", [whole], pc.SliceOptions(at, at + size))
    starts = _steps(size, m + 1, pa.int32())
    return pa.Array.from_buffers(pa.binary(), m, [None, starts.buffers()[1], sliced.buffers()[1]])


#: ``0, size, size + length, 2 * size, 2 * size + length, ...`` by ``(size, length)``.
_BOUNDS: dict[tuple[int, int], pa.Array] = {}


def _cached(
    cache: dict[Any, pa.Array], key: Any, n: int, limit: int, build: Callable[[int], pa.Array]
) -> pa.Array:
    """The first ``n`` items of ``cache[key]`` (a slice: no work per item), built by
    ``build(n)`` when missing or too short; the least recently used entry goes first when
    the cache holds ``limit``."""
    array = cache.pop(key, None)
    if array is None or len(array) < n:
        array = build(n)
        if len(cache) >= limit:
            del cache[next(iter(cache))]
    cache[key] = array
    return array.slice(0, n)


def _bounds(size: int, length: int, n: int) -> pa.Array:
    """The first ``n`` of the starts and ends of items of ``length`` bytes every ``size``
    bytes, in turn, as an int32 Arrow array (a slice of a cached array)."""

    def build(n: int) -> pa.Array:
        import pyarrow as pa
        import pyarrow.compute as pc

        # Entries past what a run needs may wrap in int32; never used (see _gather).
        count = _steps(1, max(n, 32_768), pa.int32())
        call = pc.call_function
        one = pa.scalar(1, pa.int32())
        halves = call("multiply", [call("shift_right", [count, one]), pa.scalar(size, pa.int32())])
        odd = call("multiply", [call("bit_wise_and", [count, one]), pa.scalar(length, pa.int32())])
        return call("add", [halves, odd])

    return _cached(_BOUNDS, (size, length), n, _MAX_STEPS, build)


#: ``0, step, 2 * step, ...`` as Arrow arrays, by step and type, grown as needed.
_STEPS: dict[tuple[int, Any], pa.Array] = {}
_MAX_STEPS = 16


def _steps(step: int, n: int, kind: pa.DataType) -> pa.Array:
    """The ``n`` numbers ``0, step, 2 * step, ...`` of type ``kind`` (a slice of a
    cached array: no work per item)."""

    def build(n: int) -> pa.Array:
        import pyarrow as pa
        import pyarrow.compute as pc

        # Entries past what a run needs may wrap in int32; never used (a run fits a batch).
        size = max(n, 16_384)
        counts = pc.call_function("cumulative_sum", [pa.repeat(pa.scalar(step, kind), size - 1)])
        return pa.concat_arrays([pa.array([0], kind), counts])

    return _cached(_STEPS, (step, kind), n, _MAX_STEPS, build)


#: The same value ``n`` times, by value and type, grown as needed; the least recently
#: used goes first when there are :data:`_MAX_SAME` (a task reads tens of partitions).
_SAME: dict[tuple[Any, Any], pa.Array] = {}
_MAX_SAME = 128


def _same(value: Any, n: int, kind: pa.DataType) -> pa.Array:
    """``value`` ``n`` times as an Arrow array of ``kind`` (a slice of a cached array):
    for the values that come back (topic, partition, timestamp type, null)."""

    def build(n: int) -> pa.Array:
        import pyarrow as pa

        return pa.repeat(pa.scalar(value, kind), max(n, 8192))

    return _cached(_SAME, (value, kind), n, _MAX_SAME, build)


_ZIGZAG_MICROS: list[pa.Array] = []


def _zigzag_micros() -> pa.Array:
    """The values of the 128 one-byte zig-zag varints, times 1000, as an Arrow array."""
    import pyarrow as pa

    if not _ZIGZAG_MICROS:
        _ZIGZAG_MICROS.append(pa.array([d * 1000 for d in ZIGZAG1], pa.int64()))
    return _ZIGZAG_MICROS[0]
