"""``df.write.format("rackafka")`` and ``writeStream``: Spark's Kafka sink contract, written
with rackafka's producer into the embedded cluster and read back with the source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rackafka.spark import read_task_reports
from rackafka.spark.options import InvalidOptionError
from rackafka.spark.sink import SinkWriteError, check_sink_columns, parse_sink_options
from rackafka.testing import EmbeddedCluster

from ._frames import rackafka_reader

pytestmark = pytest.mark.spark


def _read(spark: Any, c: EmbeddedCluster, topic: str, **options: str) -> list[Any]:
    return rackafka_reader(spark, c.bootstrap_servers, topic, **options).load().collect()


def test_write_a_dataframe_and_read_it_back_once(
    spark: Any, embedded_cluster: EmbeddedCluster
) -> None:
    c = embedded_cluster
    c.create_topic("written", 3)
    c.create_topic("other", 1)
    rows = [
        (
            f"k{i}" if i % 7 else None,
            f"value-{i}",
            "written" if i % 10 else "other",
            [("n", str(i).encode())] if i % 2 else None,
        )
        for i in range(300)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value string, topic string, headers array<struct<key:string,value:binary>>",
    )
    df.write.format("rackafka").option("kafka.bootstrap.servers", c.bootstrap_servers).option(
        "kafka.acks", "all"
    ).mode("append").save()
    got = _read(spark, c, "written", includeHeaders="true") + _read(
        spark, c, "other", includeHeaders="true"
    )
    assert len(got) == 300
    by_value = {bytes(r.value).decode(): r for r in got}
    assert set(by_value) == {f"value-{i}" for i in range(300)}
    for i in range(300):
        r = by_value[f"value-{i}"]
        assert r.topic == ("written" if i % 10 else "other")
        assert (bytes(r.key).decode() if r.key is not None else None) == (
            f"k{i}" if i % 7 else None
        )
        assert ([(h.key, bytes(h.value)) for h in r.headers] if r.headers else None) == (
            [("n", str(i).encode())] if i % 2 else None
        )
    # Same key, same partition (murmur2, as Kafka's Java client).
    partitions: dict[str, set[int]] = {}
    for r in got:
        if r.key is not None:
            partitions.setdefault(bytes(r.key).decode(), set()).add(r.partition)
    assert all(len(p) == 1 for p in partitions.values())


def test_topic_option_and_partition_column(spark: Any, embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("fixed", 4)
    df = spark.createDataFrame(
        [(bytes([i]), i % 4, "ignored-topic") for i in range(40)],
        "value binary, partition int, topic string",
    )
    (
        df.write.format("rackafka")
        .option("kafka.bootstrap.servers", c.bootstrap_servers)
        .option("topic", "fixed")  # wins over the column, as in Spark
        .mode("append")  # PySpark's Python sinks take append or overwrite, not the default
        .save()
    )
    got = _read(spark, c, "fixed")
    assert sorted((r.partition, bytes(r.value)[0]) for r in got) == sorted(
        (i % 4, i) for i in range(40)
    )


def test_bad_writes_name_the_problem(spark: Any, embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster

    def write(df: Any, mode: str = "append", **options: str) -> None:
        w = df.write.format("rackafka").option("kafka.bootstrap.servers", c.bootstrap_servers)
        for k, v in options.items():
            w = w.option(k, v)
        w.mode(mode).save()

    no_value = spark.createDataFrame([("a",)], "key string")
    with pytest.raises(Exception, match="'value' column"):
        write(no_value, topic="t")
    no_topic = spark.createDataFrame([("a",)], "value string")
    with pytest.raises(Exception, match="topic"):
        write(no_topic)
    null_topic = spark.createDataFrame([("a", None)], "value string, topic string")
    with pytest.raises(Exception, match="null topic"):
        write(null_topic)
    with pytest.raises(Exception, match="append"):
        write(no_topic, mode="overwrite", topic="t")
    with pytest.raises(Exception, match=r"kafka\.acks"):
        write(no_topic, topic="t", **{"kafka.acks": "most"})


def test_stream_from_one_topic_to_another(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    c = embedded_cluster
    c.create_topic("in", 2)
    c.create_topic("out", 2)
    c.produce("in", 500, partition="spread", key=lambda i: f"k{i}".encode())
    query = (
        spark.readStream.format("rackafka")
        .option("kafka.bootstrap.servers", c.bootstrap_servers)
        .option("subscribe", "in")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "200")
        .load()
        .selectExpr("key", "upper(cast(value as string)) as value")
        .writeStream.format("rackafka")
        .option("kafka.bootstrap.servers", c.bootstrap_servers)
        .option("topic", "out")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    got = _read(spark, c, "out")
    source = _read(spark, c, "in")
    assert len(got) == 500
    assert sorted(bytes(r.value) for r in got) == sorted(bytes(r.value).upper() for r in source)


def test_task_reports_of_a_write(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    """With rackafka.metricsPath each write task reports the offsets it wrote and the bytes
    per leader rack; with rack-aware partitioning they all stay in the task's rack."""
    c = embedded_cluster
    c.create_topic("reported", 6, replication_factor=3)
    led_in_b = {i.partition for i in c.partitions("reported") if c.rack_of(i.leader) == "az-b"}
    df = spark.range(600).repartition(3).selectExpr("CAST(id AS STRING) AS value")
    (
        df.write.format("rackafka")
        .option("kafka.bootstrap.servers", c.bootstrap_servers)
        .option("topic", "reported")
        .option("kafka.client.rack", "az-b")
        .option("rackafka.rackAwarePartitioning", "true")
        .option("rackafka.metricsPath", str(tmp_path / "metrics"))
        .mode("append")
        .save()
    )
    reports = read_task_reports(tmp_path / "metrics")
    assert len(reports) == 3
    assert all(r.kind == "write" and r.finished and r.client_rack == "az-b" for r in reports)
    assert all(r.rack_source == "option" for r in reports)
    assert sum(r.records for r in reports) == 600
    assert sum(r.cross_rack_bytes for r in reports) == 0
    assert {rack for r in reports for rack in r.bytes_by_rack} == {"az-b"}
    # The ranges are what was written: read back, each record is in exactly one of them.
    got = _read(spark, c, "reported")
    assert len(got) == 600 and {r.partition for r in got} <= led_in_b
    for row in got:
        holders = [
            r
            for r in reports
            for _t, p, first, end in r.ranges
            if p == row.partition and first <= row.offset < end
        ]
        assert holders, (row.partition, row.offset)


def test_a_write_with_acks_0_reports_no_offsets(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    """kafka.acks=0: the producer learns no offsets (its futures give None, as aiokafka's),
    so the task reports its records but no written ranges."""
    c = embedded_cluster
    c.create_topic("unacknowledged", 2)
    df = spark.range(50).repartition(2).selectExpr("CAST(id AS STRING) AS value")
    (
        df.write.format("rackafka")
        .option("kafka.bootstrap.servers", c.bootstrap_servers)
        .option("topic", "unacknowledged")
        .option("kafka.acks", "0")
        .option("rackafka.metricsPath", str(tmp_path / "metrics"))
        .mode("append")
        .save()
    )
    reports = read_task_reports(tmp_path / "metrics")
    assert sum(r.records for r in reports) == 50
    assert all(r.finished and r.ranges == [] for r in reports)
    got = _read(spark, c, "unacknowledged")
    assert sorted(int(bytes(r.value)) for r in got) == list(range(50))


def test_sink_options_without_spark() -> None:
    opts = parse_sink_options(
        {
            "kafka.bootstrap.servers": "127.0.0.1:9092",
            "Topic": "t",
            "kafka.acks": "-1",
            "kafka.compression.type": "lz4",
            "kafka.linger.ms": "5",
            "kafka.batch.size": "65536",
            "kafka.enable.idempotence": "true",
            "rackafka.rackAwarePartitioning": "true",
        }
    )
    assert opts.topic == "t" and opts.rack_aware_partitioning
    assert opts.producer_kwargs() == {
        "acks": "all",
        "compression_type": "lz4",
        "linger_ms": 5,
        "max_batch_size": 65536,
        "enable_idempotence": True,
    }
    for bad, name in [
        ({}, "kafka.bootstrap.servers"),
        ({"kafka.linger.ms": "soon"}, "kafka.linger.ms"),
        ({"kafka.compression.type": "brotli"}, "kafka.compression.type"),
        ({"kafka.key.serializer": "x"}, "kafka.key.serializer"),
        ({"kafka.transactional.id": "x"}, "kafka.transactional.id"),
        ({"topic": " "}, "topic"),
    ]:
        base = (
            {"kafka.bootstrap.servers": "127.0.0.1:9092"}
            if name != "kafka.bootstrap.servers"
            else {}
        )
        with pytest.raises(InvalidOptionError, match=name.replace(".", r"\.")):
            parse_sink_options({**base, **bad})
    check_sink_columns({"value": "binary", "key": "string", "partition": "int"}, "t")
    with pytest.raises(SinkWriteError, match="partition"):
        check_sink_columns({"value": "binary", "partition": "bigint"}, "t")
    with pytest.raises(SinkWriteError, match="key"):
        check_sink_columns({"value": "binary", "key": "int"}, "t")
