"""A PySpark data source that reads Kafka with rackafka, from each executor's own rack.

Spark's own Kafka source gives every executor the same ``kafka.client.rack``; this one lets
each task find its rack on its executor and read from the replica in that rack (KIP-392).
``kafka.client.rack`` unset or ``env`` (the default): the executor's ``RACKAFKA_CLIENT_RACK``
environment variable, no rack when it is unset, and nothing else is asked. ``auto``: that
variable when it is set, else the zone the executor detects from its environment,
Kubernetes labels and the AWS, GCP and Azure metadata services (HTTP requests to them); the
zone that is one of the brokers' racks wins. Any other value: that rack for every task; an
empty value: no rack. It needs pyspark 4 and pyarrow (``pip install '.[spark]'``)::

    from pyspark.sql import SparkSession
    import rackafka.spark

    spark = SparkSession.builder.getOrCreate()
    rackafka.spark.register(spark)
    df = (
        spark.read.format("rackafka")
        .option("kafka.bootstrap.servers", "localhost:9092")
        .option("subscribe", "events")
        .load()
    )

The options and the schema are those of Spark's Kafka source; see ``docs/spark.rst``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rackafka.spark.options import (
    CLIENT_RACK_ENV,
    InvalidOptionError,
    SourceOptions,
    parse_options,
    resolve_client_rack,
)
from rackafka.spark.planning import (
    DataLossError,
    OffsetRange,
    offsets_behind_latest,
    offsets_from_json,
)
from rackafka.spark.reader import TaskReport, read_task_reports

__all__ = [
    "CLIENT_RACK_ENV",
    "DataLossError",
    "InvalidOptionError",
    "OffsetRange",
    "SourceOptions",
    "TaskReport",
    "parse_options",
    "rack_summary",
    "source_metrics",
    "read_task_reports",
    "register",
    "resolve_client_rack",
]


def register(spark: Any) -> None:
    """Register the ``rackafka`` source with a SparkSession.

    After this, ``spark.read.format("rackafka")`` and ``spark.readStream.format("rackafka")``
    read Kafka through rackafka. (The short name ``kafka`` belongs to Spark's own source.)

    Small reads are planned as at least ``spark.sparkContext.defaultParallelism`` tasks
    (the value when this is called), so that every executor core reads; larger ones get a
    task per ``rackafka.offsetsPerTask`` offsets.

    Arguments:
        spark: a :class:`pyspark.sql.SparkSession` (pyspark 4 or newer).
    """
    from rackafka.spark.source import source_for

    try:  # Spark Connect sessions have no SparkContext: one task per topic-partition then
        parallelism: int | None = int(spark.sparkContext.defaultParallelism)
    except Exception:
        parallelism = None
    spark.dataSource.register(source_for(parallelism))


def source_metrics(source_progress: Mapping[str, Any]) -> dict[str, str]:
    """The "offsets behind latest" metrics of Spark's Kafka source, for a rackafka source.

    Spark's Python data sources cannot add metrics to a query's progress, so this computes
    them from what the progress has: the micro-batch's ``endOffset`` and the
    ``latestOffset`` the source reported. Pass one entry of a progress's ``sources``::

        rackafka.spark.source_metrics(query.lastProgress["sources"][0])
        # {"avgOffsetsBehindLatest": "0.0", "maxOffsetsBehindLatest": "0", ...}

    Returns an empty dict before the first micro-batch or when the offsets are not known.
    """

    def offsets(key: str) -> Any:
        value = source_progress.get(key)
        if isinstance(value, str):
            value = json.loads(value)
        return offsets_from_json(value) if isinstance(value, dict) else None

    end, latest = offsets("endOffset"), offsets("latestOffset")
    if end is None or latest is None:
        return {}
    return offsets_behind_latest(end, latest)


def rack_summary(reports: list[TaskReport]) -> dict[str, Any]:
    """Totals of task reports: records, bytes per rack, same-rack and cross-rack bytes.

    ``same_rack_share`` is the share of bytes served from the reading task's own rack
    (``None`` when nothing was read); ``"null"`` stands for "no rack".
    """
    by_rack: dict[str, int] = {}
    for r in reports:
        for rack, n in r.bytes_by_rack.items():
            by_rack[rack] = by_rack.get(rack, 0) + n
    same = sum(r.same_rack_bytes for r in reports)
    cross = sum(r.cross_rack_bytes for r in reports)
    total = same + cross
    return {
        "tasks": len(reports),
        "records": sum(r.records for r in reports),
        "client_racks": sorted({r.client_rack or "null" for r in reports}),
        "bytes_by_rack": by_rack,
        "same_rack_bytes": same,
        "cross_rack_bytes": cross,
        "same_rack_share": same / total if total else None,
        "lost_offsets": sum(r.lost_offsets for r in reports),
    }
