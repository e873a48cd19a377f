"""A PySpark data source that reads Kafka with rackafka, from each executor's own rack.

Spark's own Kafka source gives every executor the same ``kafka.client.rack``; this one lets
each task find its rack on its executor (``kafka.client.rack=auto``, the default: the
``RACKAFKA_CLIENT_RACK`` environment variable) and read from the replica in that rack
(KIP-392). It needs pyspark 4 and pyarrow (``pip install 'rackafka[spark]'``)::

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

from typing import Any

from rackafka.spark.options import (
    CLIENT_RACK_ENV,
    InvalidOptionError,
    SourceOptions,
    parse_options,
    resolve_client_rack,
)
from rackafka.spark.planning import DataLossError, OffsetRange
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
    "read_task_reports",
    "register",
    "resolve_client_rack",
]


def register(spark: Any) -> None:
    """Register the ``rackafka`` source with a SparkSession.

    After this, ``spark.read.format("rackafka")`` and ``spark.readStream.format("rackafka")``
    read Kafka through rackafka. (The short name ``kafka`` belongs to Spark's own source.)

    Arguments:
        spark: a :class:`pyspark.sql.SparkSession` (pyspark 4 or newer).
    """
    from rackafka.spark.source import RackafkaDataSource

    spark.dataSource.register(RackafkaDataSource)


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
