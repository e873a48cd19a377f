"""The Spark source and sink against real Apache Kafka brokers, exactly once.

The source's tasks read with ``client_rack`` and real brokers' ``RackAwareReplicaSelector``
decides where they read: the task reports (``rackafka.metricsPath``) must show every byte
from the tasks' own rack. The sink writes a DataFrame with ``acks=all``; reading the topic
back to its end must give every row once.

Spark here: these tests run in the xdist group ``spark`` (tests/conftest.py), so that two
Spark JVMs never run side by side; that worker starts the ``kafka`` fixture's cluster for
them. When the process already runs a Spark context (the tests/spark session, whose
executors are in the same rack), it is used and left running; otherwise a small local
session (``local[2]``, the tests/spark builder) is started for this module and stopped
after its last test.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rackafka.spark import rack_summary, read_task_reports
from rackafka.testing import KafkaCluster, default_value

from ..spark._session import local_spark_session, why_no_spark
from ._readback import read_to_end, unique

pytestmark = pytest.mark.spark

#: The rack the executors' environment names (RACKAFKA_CLIENT_RACK): what tasks read from
#: when ``kafka.client.rack`` is not set.
EXECUTOR_RACK = "az-b"
RECORDS = 3_000
PARTITIONS = 6
VALUE_SIZE = 200


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local SparkSession for this module (see the module's docstring)."""
    reason = why_no_spark()
    if reason:
        pytest.skip(reason)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None and SparkContext._active_spark_context is not None:
        active = SparkSession.builder.getOrCreate()
    if active is not None:  # one SparkContext per process: share it, leave it running
        yield active
        return
    session = local_spark_session(EXECUTOR_RACK, cores=2, app_name="rackafka-kafka-tests")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def events(kafka: KafkaCluster) -> tuple[str, dict[int, tuple[int, int]]]:
    """A topic of ``RECORDS`` numbered records over ``PARTITIONS`` partitions, replication
    factor 3 (a replica in every rack), leaders spread over the racks; with the first and
    last offset each partition got."""
    topic = unique("spark-events")
    kafka.create_topic(topic, PARTITIONS, 3)
    produced = kafka.produce(topic, RECORDS, value_size=VALUE_SIZE, partition="spread")
    assert produced.count == RECORDS
    return topic, {
        p: (produced.first_offsets[p], produced.last_offsets[p]) for p in produced.counts
    }


def _read(spark: Any, kafka: KafkaCluster, topic: str, **options: str) -> list[Any]:
    reader = (
        spark.read.format("rackafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("minPartitions", "4")  # several tasks, both executor threads read
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load().select("partition", "offset", "value").collect()


def _check_exactly_once(rows: list[Any], offsets: dict[int, tuple[int, int]]) -> None:
    """Every produced (partition, offset) once, with the value written there."""
    positions = Counter((r.partition, r.offset) for r in rows)
    duplicated = [pos for pos, n in positions.items() if n > 1]
    assert not duplicated, f"read more than once: {duplicated[:5]}"
    expected = {(p, o) for p, (first, last) in offsets.items() for o in range(first, last + 1)}
    assert set(positions) == expected, (
        f"missing {sorted(expected - set(positions))[:5]}, "
        f"extra {sorted(set(positions) - expected)[:5]}"
    )
    # Record i went to partition i % PARTITIONS with default_value(i): each value once, at
    # a position of its partition.
    indices = []
    for r in rows:
        value = bytes(r.value)
        index = int(value[: value.index(b"|")])
        assert value == default_value(index, VALUE_SIZE), (r.partition, r.offset)
        assert index % PARTITIONS == r.partition, (index, r.partition)
        indices.append(index)
    assert sorted(indices) == list(range(RECORDS))


@pytest.mark.parametrize(
    ("options", "rack"),
    [
        pytest.param({"kafka.client.rack": "az-c"}, "az-c", id="kafka.client.rack"),
        pytest.param({}, EXECUTOR_RACK, id="executor-environment"),
    ],
)
def test_batch_read_with_a_client_rack_reads_every_record_once_from_that_rack(
    spark: Any,
    kafka: KafkaCluster,
    events: tuple[str, dict[int, tuple[int, int]]],
    tmp_path: Path,
    options: dict[str, str],
    rack: str,
) -> None:
    topic, offsets = events
    metrics = tmp_path / "reports"
    rows = _read(spark, kafka, topic, **options, **{"rackafka.metricsPath": str(metrics)})
    _check_exactly_once(rows, offsets)

    reports = read_task_reports(metrics)
    assert reports and all(r.finished and r.kind == "read" for r in reports), reports
    summary = rack_summary(reports)
    assert summary["client_racks"] == [rack]
    assert summary["records"] == RECORDS
    assert summary["lost_offsets"] == 0
    # The leaders in the other racks named the replica in the task's rack (KIP-392), and
    # that replica served every byte.
    assert summary["cross_rack_bytes"] == 0, summary
    assert summary["same_rack_bytes"] > RECORDS * VALUE_SIZE
    assert {r: n for r, n in summary["bytes_by_rack"].items() if n} == {
        rack: summary["same_rack_bytes"]
    }, summary


def test_batch_read_without_a_rack_is_served_by_the_leaders(
    spark: Any,
    kafka: KafkaCluster,
    events: tuple[str, dict[int, tuple[int, int]]],
    tmp_path: Path,
) -> None:
    # The same read with no rack at all (an empty RACKAFKA_CLIENT_RACK is not one): Kafka's
    # selector names no replica, every partition is read from its leader, one per rack.
    topic, offsets = events
    metrics = tmp_path / "reports"
    rows = _read(
        spark, kafka, topic, **{"kafka.client.rack": "", "rackafka.metricsPath": str(metrics)}
    )
    _check_exactly_once(rows, offsets)
    summary = rack_summary(read_task_reports(metrics))
    assert summary["client_racks"] == ["null"]
    per_rack = summary["bytes_by_rack"]
    assert set(per_rack) == {"az-a", "az-b", "az-c"}, per_rack
    total = sum(per_rack.values())
    assert all(abs(n / total - 1 / 3) < 0.05 for n in per_rack.values()), per_rack


def test_sink_writes_every_row_once(spark: Any, kafka: KafkaCluster, tmp_path: Path) -> None:
    topic = unique("spark-sink")
    partitions = 4
    kafka.create_topic(topic, partitions, 3)
    rows = [(f"user-{i % 37}", f"value-{i}") for i in range(2_000)]
    df = spark.createDataFrame(rows, "key string, value string").repartition(3)
    metrics = tmp_path / "write-reports"
    (
        df.write.format("rackafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("topic", topic)
        .option("kafka.acks", "all")
        .option("kafka.enable.idempotence", "true")
        .option("rackafka.metricsPath", str(metrics))
        .mode("append")
        .save()
    )
    back = asyncio.run(read_to_end(kafka.bootstrap_servers, topic, partitions, at_least=len(rows)))
    got = [(r.key.decode(), r.value.decode(), p) for p, recs in back.items() for r in recs]
    values = Counter(v for _k, v, _p in got)
    assert [v for v, n in values.items() if n > 1] == [], "a row was written twice"
    assert set(values) == {v for _k, v in rows}, "a row is missing"
    assert len(got) == len(rows)
    # Same key, same partition (murmur2, as Kafka's Java client), keys kept.
    key_of = dict((v, k) for k, v in rows)
    assert all(key_of[v] == k for k, v, _p in got)
    assert all(len({p for k2, _v, p in got if k2 == k}) == 1 for k in set(key_of.values()))
    # The tasks' own accounts: the offsets they were acknowledged are the ones read back.
    written = [r for r in read_task_reports(metrics) if r.kind == "write"]
    assert written and all(r.finished for r in written), written
    acknowledged = Counter(
        (p, o) for r in written for t, p, start, end in r.ranges if t == topic
        for o in range(start, end)
    )  # fmt: skip
    assert sum(acknowledged.values()) == len(rows)
    assert set(acknowledged) == {(p, r.offset) for p, recs in back.items() for r in recs}
