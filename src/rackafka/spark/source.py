"""The ``rackafka`` source for PySpark's Python Data Source API (pyspark 4)."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rackafka.spark.options import InvalidOptionError, OffsetSpec, SourceOptions, parse_options
from rackafka.spark.planning import (
    OffsetRange,
    Snapshot,
    describe,
    group_ranges,
    limit_range_size,
    offsets_from_json,
    offsets_to_json,
    plan_ranges,
    rate_limit,
    resolve_offsets,
    split_ranges,
)
from rackafka.spark.reader import arrow_schema, read_ranges
from rackafka.spark.sink import SinkOptions, check_sink_columns, parse_sink_options, write_rows

if TYPE_CHECKING:
    import pyarrow as pa

    from rackafka.structs import TopicPartition

__all__ = ["RackafkaDataSource", "RangePartition", "kafka_schema", "source_for"]


def kafka_schema(include_headers: bool = False) -> StructType:
    """The schema of the rows: the same as Spark's Kafka source."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField("headers", ArrayType(header)))
    return StructType(fields)


class RangePartition(InputPartition):
    """One Spark task: offset ranges ``[start, end)`` of topic partitions."""

    def __init__(self, ranges: tuple[OffsetRange, ...]) -> None:
        super().__init__(ranges)
        self.ranges = ranges

    def __repr__(self) -> str:
        inner = ", ".join(f"{r.topic}-{r.partition} [{r.start}, {r.end})" for r in self.ranges)
        return f"RangePartition({inner})"


def _tasks(ranges: list[OffsetRange], opts: SourceOptions) -> list[InputPartition]:
    ranges = limit_range_size(ranges, opts.max_records_per_partition)
    ranges = split_ranges(ranges, opts.min_partitions)
    # Every core gets a task (Spark's source: one per topic-partition), but ranges beyond
    # that are read together when they are small: a task costs tens of milliseconds.
    parallelism = opts.default_parallelism or len({r.tp for r in ranges})
    min_tasks = max(opts.min_partitions or 0, parallelism)
    if opts.max_records_per_partition:
        # Spark's meaning: no task reads more than that many records.
        min_tasks = len(ranges)
    return [RangePartition(task) for task in group_ranges(ranges, opts.offsets_per_task, min_tasks)]


class RackafkaDataSource(DataSource):
    """Kafka topics as a Spark source, read with rackafka from each executor's own rack.

    Register it with :func:`rackafka.spark.register`, then::

        df = (
            spark.read.format("rackafka")
            .option("kafka.bootstrap.servers", "broker1:9092,broker2:9092")
            .option("subscribe", "events")
            .load()
        )

    The options are those of Spark's Kafka source (``subscribe``, ``subscribePattern``,
    ``assign``, ``startingOffsets``, ``endingOffsets``, ``maxOffsetsPerTrigger``,
    ``minPartitions``, ``includeHeaders``, ``failOnDataLoss``, ``kafka.*``), plus
    ``kafka.client.rack`` (unset or ``env``, the default: each task takes the
    ``RACKAFKA_CLIENT_RACK`` environment variable of its executor, no rack when it is unset,
    and asks nothing else; ``auto``: that variable when set, else the zone the executor
    detects, metadata services included; any other value: that rack for every task) and
    ``rackafka.metricsPath`` (a directory where each task writes what it read from which
    rack).
    """

    #: Spark's ``defaultParallelism`` where the source was registered (see :func:`source_for`).
    default_parallelism: int | None = None

    @classmethod
    def name(cls) -> str:
        return "rackafka"

    def _options(self, streaming: bool) -> SourceOptions:
        opts = parse_options(dict(self.options), streaming=streaming)
        return dataclasses.replace(opts, default_parallelism=self.default_parallelism)

    def schema(self) -> StructType:
        value = str(self.options.get("includeHeaders", "false")).strip().lower()
        if value not in ("true", "false"):
            raise InvalidOptionError(
                f"option includeHeaders must be 'true' or 'false', not {value!r}"
            )
        return kafka_schema(value == "true")

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return BatchWriter(self._sink_options(schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802 (Spark API)
        return StreamWriter(self._sink_options(schema, overwrite))

    def _sink_options(self, schema: StructType, overwrite: bool) -> SinkOptions:
        if overwrite:
            raise InvalidOptionError(
                "Kafka cannot be overwritten: write with mode 'append' (as Spark's Kafka sink)"
            )
        opts = parse_sink_options(dict(self.options))
        check_sink_columns({f.name: f.dataType.simpleString() for f in schema.fields}, opts.topic)
        return opts

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(self._options(streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        return StreamReader(self._options(streaming=True), schema)


def source_for(default_parallelism: int | None) -> type[RackafkaDataSource]:
    """The source class to register with a session whose ``defaultParallelism`` is given.

    Spark plans a Python source's reads in worker processes that cannot ask the session,
    so the number travels in the class: a subclass pickled by value.
    """
    if not default_parallelism or default_parallelism < 1:
        return RackafkaDataSource
    name = f"RackafkaDataSource_{int(default_parallelism)}"
    return type(
        name,
        (RackafkaDataSource,),
        {
            "default_parallelism": int(default_parallelism),
            "__module__": __name__,
            # Not an attribute of this module: cloudpickle sends the class by value.
            "__qualname__": name,
            "__doc__": RackafkaDataSource.__doc__,
        },
    )


class _Written(WriterCommitMessage):
    """What one task wrote (Spark hands these to ``commit``)."""

    def __init__(self, records: int) -> None:
        self.records = records


class BatchWriter(DataSourceWriter):
    """``df.write``: each task produces its rows and waits for every acknowledgement."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _Written(write_rows(self.opts, iterator).records)


class StreamWriter(DataSourceStreamWriter):
    """``writeStream``: each micro-batch is written as a batch write is (at least once)."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return _Written(write_rows(self.opts, iterator).records)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 (Spark API)
        """Nothing to do: the records are in Kafka once the tasks return."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 (Spark API)
        """Nothing to undo: what was written stays (at least once, as Spark's sink)."""


def _read(opts: SourceOptions, schema: StructType, partition: InputPartition) -> Iterator[Any]:
    ranges = getattr(partition, "ranges", None)
    if not ranges:  # Spark's placeholder when there is nothing to read
        return iter(())
    return read_ranges(opts, ranges, _arrow(schema))


def _arrow(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _check_schema(schema: StructType, opts: SourceOptions) -> None:
    expected = kafka_schema(opts.include_headers)
    if [f.name for f in schema.fields] != [f.name for f in expected.fields]:
        raise InvalidOptionError(
            "the rackafka source has a fixed schema (that of Spark's Kafka source): "
            f"{expected.simpleString()}; cast or select columns in the query instead of "
            "passing a schema"
        )
    # Our Arrow batches must match what Spark expects exactly.
    if not arrow_schema(opts.include_headers).equals(_arrow(schema)):
        raise InvalidOptionError(
            f"the schema {schema.simpleString()} does not match the rackafka source's "
            f"{expected.simpleString()}"
        )


def _option(side: str, spec: OffsetSpec | None) -> str:
    """The option a start or end came from, for messages."""
    suffix = {"timestamp": "Timestamp", "timestamps": "OffsetsByTimestamp"}
    return side + suffix.get(spec.kind if spec else "", "Offsets")


class BatchReader(DataSourceReader):
    """``spark.read``: offset ranges fixed when the query is planned."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        _check_schema(schema, opts)
        self.opts = opts
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.opts
        snapshot = asyncio.run(describe(opts, (opts.starting, opts.ending)))
        start = resolve_offsets(
            opts.starting_or("earliest"),
            snapshot,
            _option("starting", opts.starting),
            opts.by_timestamp_strategy,
        )
        end = resolve_offsets(opts.ending_or("latest"), snapshot, _option("ending", opts.ending))
        for tp in sorted(end):
            if start[tp] > end[tp]:
                raise InvalidOptionError(
                    f"startingOffsets ({start[tp]}) is after endingOffsets ({end[tp]}) "
                    f"for {tp.topic}-{tp.partition}"
                )
        ranges = plan_ranges(start, end, snapshot.earliest, opts.fail_on_data_loss)
        return _tasks(ranges, opts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.opts, self.schema, partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: micro-batches of offset ranges; offsets in the checkpoint."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        _check_schema(schema, opts)
        self.opts = opts
        self.schema = schema
        # Trigger.AvailableNow: the latest offsets when the query started.
        self.target: dict[TopicPartition, int] | None = None
        # The newest offsets seen by latestOffset(), for Spark's progress reports.
        self.seen_latest: dict[str, Any] | None = None
        # minOffsetsPerTrigger: when the last micro-batch was let through (monotonic s).
        self.last_trigger = 0.0

    def _snapshot(self) -> Snapshot:
        return asyncio.run(describe(self.opts))

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 (Spark API)
        opts = self.opts
        snapshot = asyncio.run(describe(opts, (opts.starting,)))
        start = resolve_offsets(
            opts.starting_or("latest"),
            snapshot,
            _option("starting", opts.starting),
            opts.by_timestamp_strategy,
        )
        return offsets_to_json(start)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark API)
        self.target = dict(self._snapshot().latest)

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark API)
        # Spark's Python sources take one limit; latestOffset applies both options.
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger is not None:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802 (Spark API)
        begin = offsets_from_json(start)
        snapshot = self._snapshot()
        self.seen_latest = offsets_to_json(snapshot.latest)
        # Partitions that are gone are left out: partitions() reports their loss.
        latest = dict(snapshot.latest)
        if self.target is not None:
            # Nothing after what was there when the AvailableNow query started.
            target = self.target
            latest = {
                tp: min(off, target[tp]) if tp in target else begin[tp]
                for tp, off in latest.items()
                if tp in target or tp in begin
            }
        known = {tp: begin.get(tp, snapshot.earliest.get(tp, 0)) for tp in latest}
        if isinstance(limit, ReadAllAvailable):
            return offsets_to_json(latest)
        # The source's own limits (Spark passes back the default one, whichever it is).
        opts = self.opts
        if opts.min_offsets_per_trigger is not None and self.target is None:
            now = time.monotonic()
            waited_ms = (now - self.last_trigger) * 1000 if self.last_trigger else math.inf
            if waited_ms < opts.max_trigger_delay_ms:
                new = sum(max(0, off - known[tp]) for tp, off in latest.items())
                if new < opts.min_offsets_per_trigger:
                    return start  # wait for more records or for maxTriggerDelay
            self.last_trigger = now
        if opts.max_offsets_per_trigger is not None:
            latest = rate_limit(known, latest, opts.max_offsets_per_trigger)
        return offsets_to_json(latest)

    def reportLatestOffset(self) -> dict[str, Any] | None:  # noqa: N802 (Spark API)
        """The newest offsets of the topics when the last micro-batch was planned (Spark shows
        them as the source's ``latestOffset`` in the query's progress)."""
        return self.seen_latest

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = plan_ranges(
            offsets_from_json(start), offsets_from_json(end), None, self.opts.fail_on_data_loss
        )
        return _tasks(ranges, self.opts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.opts, self.schema, partition)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in Kafka."""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["target"] = None
        state["seen_latest"] = None
        return state
