"""Batch and streaming reads on a Spark standalone cluster, in a process of their own.

Run by ``test_distributed.py``: starts an embedded 3-rack Kafka cluster whose brokers
select replicas per client rack, and a Spark master with two workers on 127.0.0.1 in racks
az-a and az-b; reads a topic in a batch query, writes a DataFrame to another topic and
reads it back, then reads in a streaming query that stops and restarts from its
checkpoint while records arrive; prints one JSON object of what it saw.
Everything it starts is stopped before it exits.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from rackafka.testing import EmbeddedCluster, SparkStandaloneCluster

TOPIC = "orders"
PARTITIONS = 6
FIRST, MORE = 3000, 1200
WRITE_TOPIC, WRITTEN = "enriched", 2000
WORKER_RACKS = ("az-a", "az-b")


def _session(standalone: SparkStandaloneCluster) -> Any:
    from pyspark.sql import SparkSession

    import rackafka.spark
    from rackafka.testing import loopback_spark_conf

    loopback_spark_conf()  # SPARK_LOCAL_IP for the driver's JVM (spark_conf() sets the rest)
    builder = (
        SparkSession.builder.appName("rackafka-distributed-test")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
    )
    for key, value in standalone.spark_conf().items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rackafka.spark.register(spark)
    return spark


def _reports(path: Path) -> list[dict[str, Any]]:
    from dataclasses import asdict

    from rackafka.spark import read_task_reports

    return [asdict(r) for r in read_task_reports(path)] if path.exists() else []


async def _end_offsets(kafka: EmbeddedCluster) -> dict[Any, int]:
    from rackafka import AIOKafkaConsumer, TopicPartition

    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers
    )
    await consumer.start()
    try:
        return await consumer.end_offsets([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    finally:
        await consumer.stop()


def run(out: Path, kafka: EmbeddedCluster, spark: Any) -> dict[str, Any]:
    kafka.create_topic(TOPIC, PARTITIONS, replication_factor=3)
    kafka.create_topic(WRITE_TOPIC, PARTITIONS, replication_factor=3)
    kafka.produce(TOPIC, FIRST, partition="spread", key=lambda i: f"k{i}".encode())

    def source(stream: bool, metrics: Path) -> Any:
        reader = spark.readStream if stream else spark.read
        return (
            reader.format("rackafka")
            .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
            .option("subscribe", TOPIC)
            .option("startingOffsets", "earliest")
            .option("rackafka.metricsPath", str(metrics))
        )

    # Batch: the whole topic.
    batch_ends = {tp.partition: end for tp, end in asyncio.run(_end_offsets(kafka)).items()}
    batch_rows = [
        [r.partition, r.offset]
        for r in source(False, out / "batch-metrics").load().select("partition", "offset").collect()
    ]

    # Write: keyless rows from both executors, kept in each executor's rack, read back.
    (
        spark.range(WRITTEN)
        .repartition(8)
        .selectExpr("CONCAT('w-', CAST(id AS STRING)) AS value")
        .write.format("rackafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("topic", WRITE_TOPIC)
        .option("rackafka.rackAwarePartitioning", "true")
        .option("rackafka.metricsPath", str(out / "write-metrics"))
        .mode("append")
        .save()
    )
    written = [
        [r.partition, bytes(r.value).decode()]
        for r in spark.read.format("rackafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", WRITE_TOPIC)
        .load()
        .collect()
    ]
    leader_racks = {
        str(i.partition): kafka.rack_of(i.leader) for i in kafka.partitions(WRITE_TOPIC)
    }

    # Streaming: a first run with a rate limit, more records, a restart from the checkpoint.
    checkpoint, sink = out / "checkpoint", out / "stream-out"

    def stream(max_per_trigger: int) -> list[int]:
        query = (
            source(True, out / "stream-metrics")
            .option("maxOffsetsPerTrigger", str(max_per_trigger))
            .load()
            .select("partition", "offset")
            .writeStream.format("parquet")
            .option("path", str(sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        if not query.awaitTermination(300):
            query.stop()
            raise RuntimeError("the streaming query did not finish within 300 s")
        if query.exception() is not None:
            raise RuntimeError(f"the streaming query failed: {query.exception()}")
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]

    first_batches = stream(1000)
    kafka.produce(TOPIC, MORE, partition="spread")
    second_batches = stream(100_000)
    stream_rows = [[r.partition, r.offset] for r in spark.read.parquet(str(sink)).collect()]
    ends = {tp.partition: end for tp, end in asyncio.run(_end_offsets(kafka)).items()}
    return {
        "ends": ends,
        "batch_ends": batch_ends,
        "batch_rows": batch_rows,
        "batch_reports": _reports(out / "batch-metrics"),
        "stream_rows": stream_rows,
        "stream_batches": [first_batches, second_batches],
        "stream_reports": _reports(out / "stream-metrics"),
        "written": written,
        "write_reports": _reports(out / "write-metrics"),
        "write_leader_racks": leader_racks,
        "served": {
            f"{node}/{rack}": n for (node, rack), n in kafka.front.stats.fetch_bytes.items()
        },
        "broker_racks": {str(n): b.rack for n, b in kafka.brokers.items()},
    }


def main() -> int:
    out = Path(sys.argv[1])
    os.environ.pop("RACKAFKA_CLIENT_RACK", None)  # each worker has its own
    # PySpark runs Python functions (the source's planning too) with PYSPARK_PYTHON.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    workers = [{"RACKAFKA_CLIENT_RACK": rack} for rack in WORKER_RACKS]
    with (
        EmbeddedCluster(3, ("az-a", "az-b", "az-c"), replica_selector="rack-aware") as kafka,
        SparkStandaloneCluster(workers, cores=1, work_dir=out / "spark") as standalone,
    ):
        spark = _session(standalone)
        try:
            result = run(out, kafka, spark)
        finally:
            spark.stop()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
