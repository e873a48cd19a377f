"""What one Spark task does: read an offset range with rackafka, as Arrow record batches.

Runs on the executors, in Spark's Python workers: it needs the options and the range it
was given and nothing from the driver. Each task resolves its own rack
(``kafka.client.rack=auto``: the executor's ``RACKAFKA_CLIENT_RACK``), reads from the
closest replica, and reports the bytes it read per broker rack.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from rackafka.errors import KafkaError, OffsetOutOfRangeError
from rackafka.spark.options import EARLIEST, SourceOptions, resolve_client_rack
from rackafka.spark.planning import DataLossError, OffsetRange
from rackafka.structs import ConsumerRecord, TopicPartition

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["TaskReport", "arrow_schema", "read_range", "read_task_reports", "to_arrow"]

log = logging.getLogger("rackafka.spark")

# Records per Arrow batch handed to Spark (at most; one decoded fetch may give fewer).
_MAX_BATCH_RECORDS = 20_000
# How long one wait for records may take before the task checks its time limit again.
_WAIT_MS = 500

_get_key = attrgetter("key")
_get_value = attrgetter("value")
_get_offset = attrgetter("offset")
_get_timestamp = attrgetter("timestamp")
_get_timestamp_type = attrgetter("timestamp_type")
_get_headers = attrgetter("headers")


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
    records: list[ConsumerRecord[bytes, bytes]],
    topic: str,
    partition: int,
    schema: pa.Schema,
) -> pa.RecordBatch:
    """The rows of ``records`` (all of one partition) as an Arrow record batch."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(records)
    millis = pa.array(list(map(_get_timestamp, records)), pa.int64())
    columns = [
        pa.array(list(map(_get_key, records)), pa.binary()),
        pa.array(list(map(_get_value, records)), pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.array(list(map(_get_offset, records)), pa.int64()),
        pc.multiply(millis, 1000).cast(schema.field("timestamp").type),
        pa.array(list(map(_get_timestamp_type, records)), pa.int32()),
    ]
    if len(schema) > len(columns):
        columns.append(
            pa.array(
                [
                    [{"key": k, "value": v} for k, v in hs] if hs else None
                    for hs in map(_get_headers, records)
                ],
                schema.field("headers").type,
            )
        )
    return pa.RecordBatch.from_arrays(columns, schema=schema)


@dataclass
class TaskReport:
    """What one task read, and from which racks (one JSON object per task)."""

    topic: str
    partition: int
    start: int
    end: int
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
    host: str = ""
    pid: int = 0

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
    """Read the records of ``rng`` and yield them as Arrow record batches of ``schema``.

    Offsets that do not hold a record (transaction markers, compacted or aborted records
    under ``read_committed``) are passed over. Records that are gone raise
    :class:`~rackafka.spark.planning.DataLossError`, or are logged and skipped with
    ``failOnDataLoss=false``; so is a range that makes no progress for
    ``kafkaConsumer.pollTimeoutMs``.
    """
    from rackafka.consumer.consumer import AIOKafkaConsumer

    rack = resolve_client_rack(opts.client_rack)
    report = TaskReport(
        rng.topic,
        rng.partition,
        rng.start,
        rng.end,
        rack,
        host=socket.gethostname(),
        pid=os.getpid(),
    )
    started = time.monotonic()
    loop = asyncio.new_event_loop()
    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=opts.bootstrap_servers,
        client_rack=rack,
        enable_auto_commit=False,
        auto_offset_reset="none",
        **opts.consumer,
    )
    tp = TopicPartition(rng.topic, rng.partition)
    run = loop.run_until_complete
    try:
        position = run(_open(consumer, tp, rng.start))
        end = rng.end
        progress_at = time.monotonic()
        limit_s = opts.poll_timeout_ms / 1000
        while position < end:
            try:
                got = run(consumer.getmany(tp, timeout_ms=_WAIT_MS, max_records=_MAX_BATCH_RECORDS))
            except OffsetOutOfRangeError:
                position = run(_after_loss(consumer, tp, position, end, opts, report))
                progress_at = time.monotonic()
                continue
            records = got.get(tp)
            if records:
                if records[-1].offset >= end:
                    records = records[: bisect.bisect_left(records, end, key=_get_offset)]
                    position = end
                else:
                    position = records[-1].offset + 1
                if records:
                    report.records += len(records)
                    yield to_arrow(records, rng.topic, rng.partition, schema)
                progress_at = time.monotonic()
                continue
            # Nothing returned: the position may still move past offsets without records.
            moved = run(consumer.position(tp))
            if moved > position:
                position = moved
                progress_at = time.monotonic()
            elif time.monotonic() - progress_at > limit_s:
                message = (
                    f"no record of {rng.topic}-{rng.partition} at offsets {position} to "
                    f"{end - 1} arrived within kafkaConsumer.pollTimeoutMs "
                    f"({opts.poll_timeout_ms} ms): they may be gone"
                )
                if opts.fail_on_data_loss:
                    raise DataLossError(
                        message + ". Set the option failOnDataLoss to false to go on without them."
                    )
                log.warning("%s; going on as failOnDataLoss is false", message)
                report.lost_offsets += end - position
                break
    finally:
        try:
            _fill_report(report, consumer, started)
            run(consumer.stop())
        finally:
            loop.close()
    _publish(report, opts.metrics_path)


async def _open(consumer: Any, tp: TopicPartition, start: int) -> int:
    """Start ``consumer`` on ``tp`` at ``start``; the position it reads from."""
    await consumer.start()
    consumer.assign([tp])
    if start == EARLIEST:
        await consumer.seek_to_beginning(tp)
        return int(await consumer.position(tp))
    consumer.seek(tp, start)
    return start


async def _after_loss(
    consumer: Any, tp: TopicPartition, position: int, end: int, opts: SourceOptions, report: Any
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
    if opts.fail_on_data_loss:
        raise DataLossError(
            f"{what}. Set the option failOnDataLoss to false to go on without them."
        )
    log.warning("%s; going on as failOnDataLoss is false", what)
    resume = min(max(earliest, position), end) if position < earliest else end
    report.lost_offsets += resume - position
    if resume < end:
        consumer.seek(tp, resume)
    return resume


def _fill_report(report: TaskReport, consumer: Any, started: float) -> None:
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


def _publish(report: TaskReport, path: str | None) -> None:
    log.info(
        "rackafka task %s-%d [%d, %d): rack %s, %d records, bytes by rack %s",
        report.topic,
        report.partition,
        report.start,
        report.end,
        report.client_rack,
        report.records,
        report.bytes_by_rack,
    )
    if not path:
        return
    os.makedirs(path, exist_ok=True)
    name = f"task-{report.topic}-{report.partition}-{report.start}-{uuid.uuid4().hex}.json"
    tmp = os.path.join(path, "." + name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(report.to_json())
    os.replace(tmp, os.path.join(path, name))
