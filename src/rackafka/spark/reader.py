"""What one Spark task does: read an offset range with rackafka, as Arrow record batches.

Runs on the executors, in Spark's Python workers: it needs the options and the range it
was given and nothing from the driver. Each task resolves its own rack
(``kafka.client.rack`` unset or ``env``: the executor's ``RACKAFKA_CLIENT_RACK``; ``auto``:
that variable, else the zone the executor detects), reads from the
closest replica, and reports the bytes it read per broker rack.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from itertools import chain, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from rackafka.errors import KafkaError, KafkaTimeoutError, OffsetOutOfRangeError
from rackafka.records import _gc
from rackafka.spark._runs import cut_pieces, pieces_to_batches
from rackafka.spark.options import (
    CLIENT_RACK_ENV,
    EARLIEST,
    RACK_AUTO,
    RACK_FROM_ENV,
    SourceOptions,
    resolve_client_rack,
)
from rackafka.spark.planning import DataLossError, OffsetRange
from rackafka.structs import TopicPartition

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "TaskReport",
    "arrow_schema",
    "read_range",
    "read_ranges",
    "read_task_reports",
    "parts_to_arrow",
    "to_arrow",
]

log = logging.getLogger("rackafka.spark")

# Records asked of each getmany (its runs come whole, so it may give more); they become
# one Arrow batch, or a few (see _runs.pieces_to_batches).
_MAX_BATCH_RECORDS = 20_000
# Average value size from which a binary column is joined rather than built value by
# value (see _binary), and the most bytes one binary array holds (int32 offsets).
_JOIN_FROM_BYTES = 512
_MAX_BINARY_BYTES = (1 << 31) - 1
# getmany rounds between collections of the young generations, and of all (_Collector).
_GC_YOUNG_EVERY = 8
_GC_FULL_EVERY = 512
# Below this many records per partition on average, a batch's partition and offset
# columns are built from the rows in one pass rather than part by part in Arrow (a few
# Arrow calls per part, ~10 us each; the two cost the same at ~300 records a part).
_MIN_PART_ROWS = 400
# A task's records exist already, so brokers need not hold a fetch long; a long hold would
# delay partitions redirected (KIP-392) to a broker whose previous fetch is still held.
TASK_FETCH_MAX_WAIT_MS = 50
# How long one wait for records may take before the task checks its time limit again.
_WAIT_MS = 500

_get_offset = itemgetter(0)
_get_timestamp = itemgetter(1)
_get_type = itemgetter(2)
_get_key = itemgetter(3)
_get_value = itemgetter(4)
_get_headers = itemgetter(8)


def _same_or_array(values: list[int], kind: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array; a repeated value without converting each item."""
    import pyarrow as pa

    if values.count(values[0]) == len(values):
        return pa.repeat(pa.scalar(values[0], kind), len(values))
    return pa.array(values, kind)


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema of the source's rows: Spark's Kafka source schema, as Spark's
    Arrow conversion expects it (timestamps in microseconds, UTC)."""
    import pyarrow as pa

    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        fields.append(pa.field("headers", pa.list_(pa.field("element", header))))
    return pa.schema(fields)


def to_arrow(
    records: Sequence[tuple[Any, ...]],
    topic: str,
    partition: int,
    schema: pa.Schema,
) -> pa.RecordBatch:
    """The rows of ``records`` (all of one partition) as an Arrow record batch.

    ``records`` are the consumer's record tuples (``record_tuples=True``: offset,
    timestamp, timestamp type, key, value, checksum, key size, value size, headers).
    """
    return parts_to_arrow([(topic, partition, records)], schema)


def parts_to_arrow(
    parts: Sequence[tuple[str, int, Sequence[tuple[Any, ...]]]], schema: pa.Schema
) -> pa.RecordBatch:
    """The records of several partitions, ``(topic, partition, records)`` each, as one
    Arrow record batch (in that order): one batch per fetch instead of one per partition,
    since each batch costs Spark a fixed amount whatever its size."""
    import pyarrow as pa

    if len(parts) == 1:
        records = parts[0][2]
    else:
        records = list(chain.from_iterable(part[2] for part in parts))
    n = len(records)
    topics = _topics(parts, n)
    if n < len(parts) * _MIN_PART_ROWS:
        # Many small parts: a column each in one pass costs less than arrays per part.
        partitions = pa.array(
            list(chain.from_iterable(repeat(p, len(rs)) for _t, p, rs in parts)), pa.int32()
        )
        offsets = pa.array(list(map(_get_offset, records)), pa.int64())
    else:
        # Partition and offset columns part by part, in Arrow: a repeated value, and a
        # count from the first offset when the part's offsets have no gap.
        partitions = _concat([pa.repeat(pa.scalar(p, pa.int32()), len(rs)) for _t, p, rs in parts])
        offsets = _concat([_offsets(rs) for _t, _p, rs in parts])
    keys = list(map(_get_key, records))
    columns = [
        pa.nulls(n, pa.binary()) if keys.count(None) == n else _binary(keys),
        _binary(list(map(_get_value, records))),
        topics,
        partitions,
        offsets,
        _call(
            "multiply",
            [
                _same_or_array(list(map(_get_timestamp, records)), pa.int64()),
                pa.scalar(1000, pa.int64()),
            ],
        ).view(schema.field("timestamp").type),
        _same_or_array(list(map(_get_type, records)), pa.int32()),
    ]
    if len(schema) > len(columns):
        columns.append(_headers(records, schema.field("headers").type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _headers(records: Sequence[tuple[Any, ...]], kind: pa.ListType) -> pa.Array:
    """The headers column: a list of ``(key, value)`` structs per record, null for a
    record without headers (as Spark's Kafka source), built from flat arrays of every
    key and value and of the number of headers of each record."""
    import pyarrow as pa

    per_record = list(map(_get_headers, records))
    flat = list(chain.from_iterable(per_record))
    if not flat:
        return pa.nulls(len(records), kind)
    keys, values = zip(*flat)
    key_field, value_field = kind.value_type
    pairs = pa.StructArray.from_arrays(
        [pa.array(keys, key_field.type), pa.array(values, value_field.type)],
        fields=[key_field, value_field],
    )
    counts = pa.array(list(map(len, per_record)), pa.int32())
    return pa.ListArray.from_arrays(
        _starts(counts),
        pairs,
        type=kind,
        mask=_call("equal", [counts, pa.scalar(0, pa.int32())]),
    )


def _starts(counts: pa.Array) -> pa.Array:
    """Arrow offsets (int32) of items whose lengths are ``counts``: 0, then running sums."""
    import pyarrow as pa

    return pa.concat_arrays([pa.array([0], pa.int32()), _call("cumulative_sum", [counts])])


def _binary(values: list[Any]) -> pa.Array:
    """``values`` (bytes or None) as an Arrow binary array.

    ``pa.array`` copies each value in turn into a growing buffer; from about 500 B a
    value (measured at the bytes of a sample), one ``b"".join`` and the lengths cost less
    (~150 instead of ~220 ns a value of 1 KB, ~840 instead of ~1,470 at 10 KB).
    """
    import pyarrow as pa

    sample = values[:: max(1, len(values) // 16)]
    if sum(len(v) for v in sample if v is not None) < _JOIN_FROM_BYTES * len(sample):
        return pa.array(values, pa.binary())
    try:
        data = b"".join(values)
    except TypeError:  # a null value (a tombstone)
        return pa.array(values, pa.binary())
    if len(data) > _MAX_BINARY_BYTES:
        return pa.array(values, pa.binary())
    starts = _starts(pa.array(list(map(len, values)), pa.int32()))
    return pa.Array.from_buffers(
        pa.binary(), len(values), [None, starts.buffers()[1], pa.py_buffer(data)]
    )


def _call(name: str, args: list[Any]) -> pa.Array:
    """An Arrow compute function: ``pc.call_function``, as the generated wrappers
    (``pc.add``, ...) cost ~80 us a call."""
    import pyarrow.compute as pc

    return pc.call_function(name, args)


def _concat(arrays: list[pa.Array]) -> pa.Array:
    import pyarrow as pa

    return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)


def _offsets(records: Sequence[tuple[Any, ...]]) -> pa.Array:
    """The offsets of ``records`` (of one partition, increasing) as an Arrow array."""
    import pyarrow as pa

    n = len(records)
    first = records[0][0]
    if records[-1][0] - first == n - 1:  # no gap, the common case: first, first + 1, ...
        ones = pa.repeat(pa.scalar(1, pa.int64()), n)
        return _call("add", [_call("cumulative_sum", [ones]), pa.scalar(first - 1, pa.int64())])
    return pa.array(list(map(_get_offset, records)), pa.int64())


def _topics(parts: Sequence[tuple[str, int, Sequence[tuple[Any, ...]]]], n: int) -> pa.Array:
    import pyarrow as pa

    topic = parts[0][0]
    if all(part[0] == topic for part in parts):
        return pa.repeat(pa.scalar(topic, pa.string()), n)
    return pa.concat_arrays([pa.repeat(pa.scalar(t, pa.string()), len(rs)) for t, _p, rs in parts])


@dataclass
class TaskReport:
    """What one task read, and from which racks (one JSON object per task)."""

    #: ``[topic, partition, start, end]`` of each offset range the task read.
    ranges: list[list[Any]]
    #: The rack the task read from (``None``: no ``client_rack``).
    client_rack: str | None
    records: int = 0
    #: Record bytes received per broker rack (``"null"``: brokers without a rack).
    bytes_by_rack: dict[str, int] = field(default_factory=dict)
    same_rack_bytes: int = 0
    cross_rack_bytes: int = 0
    #: Offsets that were to be read but were gone (``failOnDataLoss=false``).
    lost_offsets: int = 0
    seconds: float = 0.0
    #: False when the task failed or Spark stopped it before the end of its ranges.
    finished: bool = False
    host: str = ""
    pid: int = 0
    #: How the task found its rack: ``option``, ``environment RACKAFKA_CLIENT_RACK``, or
    #: the source of the zone ``kafka.client.rack=auto`` detected (``none``: no rack found).
    rack_source: str = ""
    #: ``read`` (the source) or ``write`` (the sink: ``ranges`` are the offsets it wrote,
    #: the bytes are by rack of the leader they went to).
    kind: str = "read"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def read_task_reports(path: str | os.PathLike[str]) -> list[TaskReport]:
    """The reports the tasks of queries wrote to ``rackafka.metricsPath``."""
    reports = []
    for name in sorted(os.listdir(path)):
        if name.endswith(".json"):
            with open(os.path.join(path, name), encoding="utf-8") as f:
                reports.append(TaskReport(**json.load(f)))
    return reports


def read_range(
    opts: SourceOptions, rng: OffsetRange, schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """:func:`read_ranges` of one range."""
    return read_ranges(opts, [rng], schema)


class _Range:
    """Progress through one offset range."""

    __slots__ = ("end", "position", "progress_at", "rng", "tp")

    def __init__(self, rng: OffsetRange, now: float) -> None:
        self.rng = rng
        self.tp = TopicPartition(rng.topic, rng.partition)
        self.position = rng.start
        self.end = rng.end
        self.progress_at = now


def read_ranges(
    opts: SourceOptions, ranges: Sequence[OffsetRange], schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """Read the records of ``ranges`` (one per partition at most) with one consumer, and
    yield them as Arrow record batches of ``schema``: for each ``getmany``, a batch of the
    runs of same-layout records of each partition (see
    :func:`~rackafka.spark._runs.pieces_to_batches`) and one of the other records.

    The partitions are fetched together, as ``getmany`` does. Offsets that do not hold a
    record (transaction markers, compacted or aborted records under ``read_committed``)
    are passed over. Records that are gone raise
    :class:`~rackafka.spark.planning.DataLossError`, or are logged and skipped with
    ``failOnDataLoss=false``.  A range that makes no progress for
    ``kafkaConsumer.pollTimeoutMs`` is checked against the partition's offsets: records
    that are gone are data loss; records that exist but do not come raise
    :exc:`~rackafka.errors.KafkaTimeoutError` (the task fails and Spark retries it).
    """
    from rackafka.consumer.consumer import AIOKafkaConsumer

    rack = resolve_client_rack(opts.client_rack)
    report = TaskReport(
        [[r.topic, r.partition, r.start, r.end] for r in ranges],
        None if rack == RACK_AUTO else rack,
        host=socket.gethostname(),
        pid=os.getpid(),
        rack_source=rack_source(opts.client_rack, rack),
    )
    started = time.monotonic()
    todo: dict[TopicPartition, _Range] = {}
    for rng in ranges:
        if rng.tp in todo:
            raise ValueError(f"two ranges of {rng.topic}-{rng.partition} in one task")
        if rng.start == EARLIEST or rng.end > rng.start:
            todo[rng.tp] = _Range(rng, started)
    if not todo:
        report.finished = True
        publish_report(report, opts.metrics_path)
        return
    loop = asyncio.new_event_loop()
    consumer: AIOKafkaConsumer[bytes, bytes] | None = None
    run = loop.run_until_complete
    limit_s = opts.poll_timeout_ms / 1000
    collector = _Collector()
    try:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=opts.bootstrap_servers,
            client_rack=rack,
            enable_auto_commit=False,
            auto_offset_reset="none",
            record_tuples=True,
            **{"fetch_max_wait_ms": TASK_FETCH_MAX_WAIT_MS, **opts.consumer_kwargs()},
        )
        run(_open(consumer, todo))
        for tp in [tp for tp, r in todo.items() if r.position >= r.end]:
            r = todo[tp]
            if r.rng.start == EARLIEST and r.position > r.end:
                # A new partition whose records up to the planned end are gone already.
                _data_loss(
                    opts,
                    report,
                    f"{tp.topic}-{tp.partition} now starts at offset {r.position}, after "
                    f"offset {r.end - 1} where reading was to end",
                    r.end - _start_guess(r),
                )
            del todo[tp]
        while todo:
            try:
                batches, came = _next_batches(run, consumer, todo, report, schema)
            except OffsetOutOfRangeError as exc:
                lost = exc.args[0] if exc.args and isinstance(exc.args[0], dict) else {}
                for tp in [tp for tp in lost if tp in todo] or list(todo):
                    r = todo[tp]
                    r.position = run(_after_loss(consumer, tp, r.position, r.end, opts, report))
                    r.progress_at = time.monotonic()
                    if r.position >= r.end:
                        _finish(consumer, todo, tp)
                continue
            now = time.monotonic()
            # The records of the batch are gone now: the quiet point to collect.
            collector.tick()
            while batches:
                yield batches.pop(0)
            # Ranges that got nothing: the position may still move past offsets without
            # records (checked when nothing came at all), or the range may be stalled.
            for tp in list(todo):
                r = todo[tp]
                if came and now - r.progress_at <= limit_s:
                    continue
                moved = run(consumer.position(tp))
                if moved > r.position:
                    r.position = moved
                    r.progress_at = now
                    if r.position >= r.end:
                        _finish(consumer, todo, tp)
                elif now - r.progress_at > limit_s:
                    run(_stalled(consumer, tp, r, opts, report))
                    if r.position >= r.end:
                        _finish(consumer, todo, tp)
        report.finished = True
    finally:
        try:
            if consumer is not None:
                _fill_report(report, consumer, started)
                run(consumer.stop())
        finally:
            loop.close()
            collector.restore()
            publish_report(report, opts.metrics_path)


def _next_batches(
    run: Callable[[Any], Any],
    consumer: Any,
    todo: dict[TopicPartition, _Range],
    report: TaskReport,
    schema: pa.Schema,
) -> tuple[list[pa.RecordBatch], bool]:
    """The next records of the ranges as Arrow batches (none: no record came), and
    whether ``getmany`` returned anything. The records exist only inside this call."""
    # record_tuples=True and runs (see _open): the records are plain tuples, offset
    # first, and runs of same-layout records, offset of the last first.
    got: dict[TopicPartition, list[Any]] = run(
        consumer.getmany(*todo, timeout_ms=_WAIT_MS, max_records=_MAX_BATCH_RECORDS)
    )
    now = time.monotonic()
    parts = []
    for tp, records in got.items():
        got_range = todo.get(tp)
        if got_range is None or not records:
            continue
        if records[-1][0] >= got_range.end:
            records = cut_pieces(records, got_range.end)
            got_range.position = got_range.end
        else:
            got_range.position = records[-1][0] + 1
        got_range.progress_at = now
        if records:
            parts.append((tp.topic, tp.partition, records))
        if got_range.position >= got_range.end:
            _finish(consumer, todo, tp)
    if not parts:
        return [], bool(got)
    batches = pieces_to_batches(parts, schema, parts_to_arrow)
    report.records += sum(batch.num_rows for batch in batches)
    return batches, bool(got)


class _Collector:
    """Python's cyclic garbage collector, paused while a task reads.

    The decoded records are tuples of plain values that die as soon as their Arrow batch
    is built; a collection that runs while they exist walks every one of them (about
    0.1 us a record, a tenth of the task's work). Paused, the collector instead runs at
    the task's quiet points (:meth:`tick`, after each ``getmany`` and the batch built of
    its records): the young generations every :data:`_GC_YOUNG_EVERY` rounds or
    :data:`rackafka.records._gc.MAX_SECONDS`, whichever comes first, everything every
    :data:`_GC_FULL_EVERY` rounds, so that memory stays bounded and garbage another thread
    makes waits about as long as under the decoder's own pause. Left exactly as it is: a
    collector the process disabled or tuned (thresholds other than the interpreter's
    default), and any collector with ``RACKAFKA_DEFER_GC=0``.
    """

    __slots__ = ("last", "paused", "rounds")

    def __init__(self) -> None:
        self.paused = _gc.enabled and gc.isenabled() and gc.get_threshold() == _gc.DEFAULT_THRESHOLD
        self.rounds = 0
        self.last = time.monotonic()
        if self.paused:
            gc.disable()

    def tick(self) -> None:
        if not self.paused:
            return
        self.rounds += 1
        now = time.monotonic()
        if self.rounds % _GC_FULL_EVERY == 0:
            gc.collect()
        elif self.rounds % _GC_YOUNG_EVERY == 0 or now - self.last >= _gc.MAX_SECONDS:
            gc.collect(1)
        else:
            return
        self.last = time.monotonic()

    def restore(self) -> None:
        if self.paused:
            self.paused = False
            gc.enable()


async def _stalled(
    consumer: Any, tp: TopicPartition, r: _Range, opts: SourceOptions, report: TaskReport
) -> None:
    """Nothing arrived for ``tp`` within ``kafkaConsumer.pollTimeoutMs``: lost, or slow?

    As Spark's Kafka source: records that no longer exist (the log now starts after the
    position, or ends before it) are data loss; records that exist but did not come in
    time fail the task (Spark runs it again), whatever ``failOnDataLoss`` says.
    """
    begin = (await consumer.beginning_offsets([tp]))[tp]
    end = (await consumer.end_offsets([tp]))[tp]
    where = f"{tp.topic}-{tp.partition}"
    if begin > r.position:
        _data_loss(
            opts,
            report,
            f"offsets {r.position} to {min(begin, r.end) - 1} of {where} are gone: "
            f"the partition now starts at offset {begin}",
            min(begin, r.end) - r.position,
        )
        r.position = min(begin, r.end)
        if r.position < r.end:
            consumer.seek(tp, r.position)
    elif end <= r.position:
        _data_loss(
            opts,
            report,
            f"no record of {where} at offsets {r.position} to {r.end - 1} arrived within "
            f"kafkaConsumer.pollTimeoutMs ({opts.poll_timeout_ms} ms): they may be gone "
            f"(the partition ends at offset {end})",
            r.end - r.position,
        )
        r.position = r.end
    else:
        raise KafkaTimeoutError(
            f"no record of {where} at offset {r.position} arrived within "
            f"kafkaConsumer.pollTimeoutMs ({opts.poll_timeout_ms} ms), though the partition "
            f"holds offsets {begin} to {end - 1}: a slow or unreachable broker, not data "
            "loss; the task fails so that Spark runs it again"
        )
    r.progress_at = time.monotonic()


def _start_guess(r: _Range) -> int:
    return r.rng.start if r.rng.start >= 0 else 0


def _data_loss(opts: SourceOptions, report: TaskReport, message: str, lost: int) -> None:
    if opts.fail_on_data_loss:
        raise DataLossError(
            f"{message}. Set the option failOnDataLoss to false to go on without them."
        )
    log.warning("%s; going on as failOnDataLoss is false", message)
    report.lost_offsets += max(0, lost)


def _finish(consumer: Any, todo: dict[TopicPartition, _Range], tp: TopicPartition) -> None:
    """``tp`` is read to its end: stop fetching it."""
    del todo[tp]
    consumer.pause(tp)


async def _open(consumer: Any, todo: dict[TopicPartition, _Range]) -> None:
    """Start ``consumer`` on the ranges and set their start positions."""
    await consumer.start()
    # Runs of same-layout records come whole, to be cut into Arrow columns in bulk.
    consumer._fetcher.hand_out_runs()
    consumer.assign(list(todo))
    for tp, r in todo.items():
        if r.position == EARLIEST:
            await consumer.seek_to_beginning(tp)
            r.position = int(await consumer.position(tp))
        else:
            consumer.seek(tp, r.position)


async def _after_loss(
    consumer: Any,
    tp: TopicPartition,
    position: int,
    end: int,
    opts: SourceOptions,
    report: TaskReport,
) -> int:
    """The position to go on from after OFFSET_OUT_OF_RANGE at ``position``."""
    earliest = (await consumer.beginning_offsets([tp]))[tp]
    latest = (await consumer.end_offsets([tp]))[tp]
    if earliest <= position < latest:
        # A replica that had not caught up; the consumer went back to the leader.
        consumer.seek(tp, position)
        return position
    if position < earliest:
        what = (
            f"offsets {position} to {min(earliest, end) - 1} of {tp.topic}-{tp.partition} are gone"
        )
    else:
        what = (
            f"{tp.topic}-{tp.partition} now ends at offset {latest}, before offset {position} "
            "that was to be read (truncated or re-created partition)"
        )
    resume = min(max(earliest, position), end) if position < earliest else end
    _data_loss(opts, report, what, resume - position)
    if resume < end:
        consumer.seek(tp, resume)
    return resume


def rack_source(setting: str | None, rack: str | None) -> str:
    """How a task found its rack, for :attr:`TaskReport.rack_source`."""
    if setting in (RACK_FROM_ENV, RACK_AUTO):
        if rack is None:
            return "none"
        return "detected" if rack == RACK_AUTO else f"environment {CLIENT_RACK_ENV}"
    return "option" if rack is not None else "none"


def _fill_report(report: TaskReport, consumer: Any, started: float) -> None:
    decision = getattr(consumer, "rack_decision", None)
    if decision is not None:  # kafka.client.rack=auto detected the zone on this executor
        report.client_rack = decision.rack
        report.rack_source = decision.source
    try:
        stats = consumer.fetch_stats()
    except KafkaError:
        return
    report.bytes_by_rack = {
        str(rack) if rack is not None else "null": c.bytes for rack, c in stats.racks.items()
    }
    report.same_rack_bytes = stats.same_rack_bytes
    report.cross_rack_bytes = stats.cross_rack_bytes
    report.seconds = round(time.monotonic() - started, 6)


def publish_report(report: TaskReport, path: str | None) -> None:
    """Log one INFO line of a task's report; with ``path`` (``rackafka.metricsPath``), also
    write it there as a JSON file (atomically: readers never see half a report)."""
    log.info(
        "rackafka %s task %s: rack %s, %d records, bytes by rack %s",
        report.kind,
        ", ".join(f"{t}-{p} [{a}, {b})" for t, p, a, b in report.ranges),
        report.client_rack,
        report.records,
        report.bytes_by_rack,
    )
    if not path:
        return
    os.makedirs(path, exist_ok=True)
    name = f"task-{uuid.uuid4().hex}.json"
    tmp = os.path.join(path, "." + name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(report.to_json())
    os.replace(tmp, os.path.join(path, name))
