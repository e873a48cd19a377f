"""Writing a DataFrame to Kafka: the ``rackafka`` sink, with the contract of Spark's Kafka sink.

The rows are those Spark's Kafka sink takes: a ``value`` column (string or binary, required),
and optionally ``key`` (string or binary), ``topic`` (string), ``partition`` (int) and
``headers`` (``array<struct<key: string, value: binary>>``). The ``topic`` option, when
given, is the topic of every row (as in Spark, it wins over the column). Each Spark task
produces its rows with rackafka's producer and waits until every one is acknowledged;
a task that fails is retried by Spark, so a record may be written twice: at least once,
as with Spark's sink.

The options parsed here need neither Spark nor a broker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rackafka.errors import KafkaConfigurationError
from rackafka.producer.config import PRODUCER
from rackafka.spark.errors import InvalidOptionError
from rackafka.spark.options import (
    CLIENT_OPTIONS,
    RACK_AUTO,
    RACK_FROM_ENV,
    checked_security,
    client_rack_option,
    kafka_option,
    kafka_options,
    lower_options,
    required_servers,
    resolve_client_rack,
    warn_ignored,
    with_security,
)
from rackafka.spark.reader import TaskReport, publish_report, rack_source
from rackafka.spark.security import SECURITY_OPTIONS, SecuritySettings

__all__ = ["SinkOptions", "check_sink_columns", "parse_sink_options", "write_rows"]

log = logging.getLogger("rackafka.spark")

# Kafka producer settings that the tasks' producers take: the common ones and these.
_PRODUCER_OPTIONS = {
    **CLIENT_OPTIONS,
    **kafka_options(
        PRODUCER,
        (
            "acks",
            "compression_type",
            "max_batch_size",
            "linger_ms",
            "max_request_size",
            "enable_idempotence",
        ),
    ),
}

# Refused as Spark's sink refuses them: the sink writes bytes and owns the serializers.
_OWNED_BY_SINK = {
    "kafka.key.serializer": "keys are written as the bytes of the key column",
    "kafka.value.serializer": "values are written as the bytes of the value column",
    "kafka.transactional.id": "the sink writes at least once, without transactions",
}

_SINK_OPTIONS = (
    "kafka.bootstrap.servers",
    "kafka.client.rack",
    "topic",
    "includeheaders",
    "rackafka.rackawarepartitioning",
    "rackafka.metricspath",
)


class SinkWriteError(KafkaConfigurationError, ValueError):
    """A row cannot be written: no topic, no value column, a column of the wrong type."""


@dataclass(frozen=True)
class SinkOptions:
    """The checked options of one write; plain data, picklable."""

    bootstrap_servers: str
    #: The ``topic`` option: the topic of every row (else each row's ``topic`` column).
    topic: str | None = None
    #: As the source's: :data:`~rackafka.spark.options.RACK_FROM_ENV` by default.
    client_rack: str | None = RACK_FROM_ENV
    #: ``rackafka.rackAwarePartitioning``: keyless rows go to partitions led in the
    #: executor's rack (the producer's ``rack_aware_partitioning``).
    rack_aware_partitioning: bool = False
    #: Keywords for :class:`~rackafka.AIOKafkaProducer` from the ``kafka.*`` options.
    producer: Mapping[str, Any] = field(default_factory=dict)
    security: SecuritySettings | None = None
    ignored: tuple[tuple[str, str], ...] = ()
    #: ``rackafka.metricsPath``: where each task writes its report, as the source's tasks.
    metrics_path: str | None = None

    def producer_kwargs(self) -> dict[str, Any]:
        """Keywords for the producer of a task (TLS context and credentials built here)."""
        return with_security(self.producer, self.security)


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Check the options of a write (any case) and turn them into :class:`SinkOptions`.

    Raises:
        InvalidOptionError: an option is missing or has an invalid value; the message
            names it.
    """
    opts = lower_options(options)
    producer: dict[str, Any] = {}
    ignored: dict[str, str] = {}
    for key in sorted(opts):
        if key in _SINK_OPTIONS or key in SECURITY_OPTIONS:
            continue
        if key in _OWNED_BY_SINK:
            raise InvalidOptionError(f"option {key} is not supported: {_OWNED_BY_SINK[key]}")
        if key in _PRODUCER_OPTIONS:
            keyword = _PRODUCER_OPTIONS[key]
            producer[keyword] = kafka_option(PRODUCER, keyword, key, opts[key])
        elif key.startswith("kafka."):
            ignored[key] = "not a Kafka producer setting rackafka knows"
        else:
            ignored[key] = "not an option of the rackafka sink (nor of Spark's Kafka sink)"
    servers = required_servers(opts)
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise InvalidOptionError("option topic must not be empty")
    aware = opts.get("rackafka.rackawarepartitioning", "false").strip().lower()
    if aware not in ("true", "false"):
        raise InvalidOptionError(
            f"option rackafka.rackAwarePartitioning must be 'true' or 'false', not {aware!r}"
        )
    security = checked_security(PRODUCER, opts, servers, producer)
    warn_ignored(ignored)
    return SinkOptions(
        bootstrap_servers=servers,
        topic=topic.strip() if topic else None,
        client_rack=client_rack_option(opts),
        rack_aware_partitioning=aware == "true",
        producer=producer,
        security=security,
        ignored=tuple(sorted(ignored.items())),
        metrics_path=opts.get("rackafka.metricspath", "").strip() or None,
    )


# Spark's SQL type names of the columns the sink takes.
_COLUMN_TYPES = {
    "key": ("string", "binary"),
    "value": ("string", "binary"),
    "topic": ("string",),
    "partition": ("int",),
    "headers": ("array<struct<key:string,value:binary>>",),
}


def check_sink_columns(columns: Mapping[str, str], topic_option: str | None) -> None:
    """Check the columns of a DataFrame to write: ``{name: simpleString type}``.

    Raises:
        SinkWriteError: ``value`` is missing, there is neither a ``topic`` column nor the
            ``topic`` option, or a known column has a type Spark's sink refuses.
    """
    if "value" not in columns:
        raise SinkWriteError(
            "the rows to write need a 'value' column (string or binary), as for Spark's "
            f"Kafka sink; the columns are {sorted(columns)}"
        )
    if topic_option is None and "topic" not in columns:
        raise SinkWriteError("the rows to write need a 'topic' column, or set the option topic")
    for name, allowed in _COLUMN_TYPES.items():
        kind = columns.get(name)
        if kind is not None and kind.replace(" ", "") not in allowed:
            raise SinkWriteError(f"column {name!r} must be {' or '.join(allowed)}, not {kind}")


def _bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise SinkWriteError(f"a key or value must be string or binary, not {type(value).__name__}")


def write_rows(opts: SinkOptions, rows: Iterable[Any]) -> TaskReport:
    """Produce ``rows`` (Spark Rows or mappings with the sink's columns) and wait until the
    brokers have every one; the task's producer takes the executor's rack.

    Returns the task's report (``kind="write"``), also published as the source's are
    (an INFO line, and a file in ``rackafka.metricsPath`` when set), finished or not.

    Raises:
        SinkWriteError: a row has no topic, or a column of the wrong type.
        KafkaError: a record could not be written (the task fails; Spark retries it).
    """
    rack = resolve_client_rack(opts.client_rack)  # a name, "auto" or None
    report = TaskReport(
        [],
        None if rack == RACK_AUTO else rack,
        host=socket.gethostname(),
        pid=os.getpid(),
        rack_source=rack_source(opts.client_rack, rack),
        kind="write",
    )
    started = time.monotonic()
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_write(opts, iter(rows), rack, report))
        report.finished = True
    finally:
        loop.close()
        report.seconds = round(time.monotonic() - started, 3)
        publish_report(report, opts.metrics_path)
    return report


async def _write(
    opts: SinkOptions, rows: Iterator[Any], rack: str | None, report: TaskReport
) -> None:
    from rackafka.producer.producer import AIOKafkaProducer

    kwargs = opts.producer_kwargs()
    if opts.rack_aware_partitioning and rack is not None:
        kwargs["rack_aware_partitioning"] = True
    producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
        bootstrap_servers=opts.bootstrap_servers, client_rack=rack, **kwargs
    )
    # Per partition: [topic, partition, first offset, last offset + 1] of what was written.
    written: dict[tuple[str, int], list[Any]] = {}
    try:
        await producer.start()
        if producer.rack_decision is not None:  # kafka.client.rack=auto on this executor
            report.client_rack = producer.rack_decision.rack
            report.rack_source = producer.rack_decision.source
        pending: list[asyncio.Future[Any]] = []
        for row in rows:
            get = row.asDict() if hasattr(row, "asDict") else dict(row)
            topic = opts.topic or get.get("topic")
            if not topic:
                raise SinkWriteError(
                    "null topic present in the data: give every row a topic, or set the "
                    "option topic"
                )
            headers = get.get("headers")
            pending.append(
                await producer.send(
                    topic,
                    _bytes(get.get("value")),
                    key=_bytes(get.get("key")),
                    partition=get.get("partition"),
                    headers=[(h["key"], _bytes(h["value"])) for h in headers] if headers else None,
                )
            )
            if len(pending) >= 10_000:
                _note_written(await asyncio.gather(*pending), written, report)
                pending.clear()
        _note_written(await asyncio.gather(*pending), written, report)
        await producer.flush()
    finally:
        report.ranges = sorted(written.values())
        stats = producer.send_stats()
        report.bytes_by_rack = dict(stats.bytes_by_rack)
        report.same_rack_bytes = stats.same_rack_bytes
        report.cross_rack_bytes = stats.cross_rack_bytes
        await producer.stop()


def _note_written(
    results: list[Any], written: dict[tuple[str, int], list[Any]], report: TaskReport
) -> None:
    for md in results:
        if md is None:  # kafka.acks=0: written, at offsets nobody acknowledged
            continue
        span = written.get((md.topic, md.partition))
        if span is None:
            written[md.topic, md.partition] = [md.topic, md.partition, md.offset, md.offset + 1]
        else:
            span[2] = min(span[2], md.offset)
            span[3] = max(span[3], md.offset + 1)
    report.records += len(results)
