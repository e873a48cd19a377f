"""Options of Spark's Kafka source that need more than offsets: timestamps and admission
control, in a real local Spark session against the embedded cluster.

Look-ups by timestamp need brokers with a time index: the embedded cluster answers them
through its front (``replica_selector="rack-aware"``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rackafka.testing import EmbeddedCluster

from ._frames import rackafka_reader

pytestmark = pytest.mark.spark

MINUTE = 60_000


@pytest.fixture
def timed(embedded_cluster_factory: Callable[..., EmbeddedCluster]) -> tuple[EmbeddedCluster, int]:
    """Topic ``timed``: partition 0 has 10 records at each of t0, t0+1m, t0+2m (offsets
    0-9, 10-19, 20-29); partition 1 has 10 at t0 and 10 at t0+2m (0-9, 10-19)."""
    c = embedded_cluster_factory(racks=("az-a", "az-b", "az-c"), replica_selector="rack-aware")
    c.create_topic("timed", 2)
    t0 = (int(time.time()) - 3600) * 1000
    for step in range(3):
        c.produce("timed", 10, partition=0, timestamp_ms=t0 + step * MINUTE)
    for step in (0, 2):
        c.produce("timed", 10, partition=1, timestamp_ms=t0 + step * MINUTE)
    return c, t0


def _load(spark: Any, cluster: EmbeddedCluster, stream: bool = False, **options: str) -> Any:
    return rackafka_reader(
        spark, cluster.bootstrap_servers, "timed", stream=stream, **options
    ).load()


def _rows(df: Any) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


def _span(p: int, start: int, end: int) -> list[tuple[int, int]]:
    return [(p, o) for o in range(start, end)]


def test_batch_read_between_timestamps(spark: Any, timed: tuple[EmbeddedCluster, int]) -> None:
    c, t0 = timed
    # One timestamp for every partition: from t0+1m to t0+2m.
    df = _load(spark, c, startingTimestamp=str(t0 + MINUTE), endingTimestamp=str(t0 + 2 * MINUTE))
    assert _rows(df) == _span(0, 10, 20)  # partition 1 has nothing in between
    # A timestamp per partition; an end after the last record is the latest offset.
    starts = {"timed": {"0": t0 + 1, "1": t0 + 2 * MINUTE}}
    ends = {"timed": {"0": t0 + 10 * MINUTE, "1": t0 + 2 * MINUTE + 1}}
    df = _load(
        spark,
        c,
        startingOffsetsByTimestamp=json.dumps(starts),
        endingOffsetsByTimestamp=json.dumps(ends),
    )
    assert _rows(df) == _span(0, 10, 30) + _span(1, 10, 20)
    # startingTimestamp wins over the other two, as in Spark.
    df = _load(
        spark,
        c,
        startingTimestamp=str(t0 + 2 * MINUTE),
        startingOffsetsByTimestamp=json.dumps(starts),
        startingOffsets="earliest",
    )
    assert _rows(df) == _span(0, 20, 30) + _span(1, 10, 20)


def test_start_after_the_last_record(spark: Any, timed: tuple[EmbeddedCluster, int]) -> None:
    c, t0 = timed
    late = str(t0 + 5 * MINUTE)
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy"):
        _load(spark, c, startingTimestamp=late).collect()
    # "latest": such partitions start at their end, the others where the time says.
    df = _load(
        spark,
        c,
        startingOffsetsByTimestamp=json.dumps({"timed": {"0": t0 + 2 * MINUTE, "1": int(late)}}),
        startingOffsetsByTimestampStrategy="latest",
    )
    assert _rows(df) == _span(0, 20, 30)
    with pytest.raises(Exception, match=r"startingOffsetsByTimestamp.*timed-1"):
        _load(spark, c, startingOffsetsByTimestamp=json.dumps({"timed": {"0": 1}})).collect()


def test_stream_starts_at_a_timestamp(
    spark: Any, timed: tuple[EmbeddedCluster, int], tmp_path: Path
) -> None:
    c, t0 = timed
    df = _load(spark, c, stream=True, startingTimestamp=str(t0 + MINUTE), maxOffsetsPerTrigger="12")
    q = (
        df.select("partition", "offset")
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert q.awaitTermination(120)
    assert q.exception() is None
    got = sorted(
        (r.partition, r.offset) for r in spark.read.parquet(str(tmp_path / "out")).collect()
    )
    assert got == _span(0, 10, 30) + _span(1, 10, 20)
    # Spark's "offsets behind latest" metrics, from the progress of each micro-batch.
    from rackafka.spark import source_metrics

    read = 0
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in progress] == [12, 12, 6]
    for p in progress:
        read += p["numInputRows"]
        metrics = source_metrics(p["sources"][0])
        behind = float(metrics["avgOffsetsBehindLatest"]) * 2  # two partitions
        assert behind == 30 - read
        assert int(metrics["minOffsetsBehindLatest"]) <= int(metrics["maxOffsetsBehindLatest"])
    assert metrics == {
        "avgOffsetsBehindLatest": "0.0",
        "maxOffsetsBehindLatest": "0",
        "minOffsetsBehindLatest": "0",
    }


def _batches(q: Any) -> list[int]:
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"] > 0]


def _wait_batches(q: Any, count: int, timeout: float = 90) -> list[int]:
    deadline = time.monotonic() + timeout
    while len(_batches(q)) < count:
        assert q.exception() is None, q.exception()
        assert time.monotonic() < deadline, f"fewer than {count} micro-batches: {_batches(q)}"
        time.sleep(0.2)
    return _batches(q)


def test_min_offsets_per_trigger_waits_for_records_or_the_delay(
    spark: Any, embedded_cluster: EmbeddedCluster
) -> None:
    c = embedded_cluster
    c.create_topic("trickle", 2)
    c.produce("trickle", 100, partition="spread")

    def start(**options: str) -> Any:
        df = rackafka_reader(
            spark,
            c.bootstrap_servers,
            "trickle",
            stream=True,
            **{"startingOffsets": "earliest", "minOffsetsPerTrigger": "150", **options},
        )
        return (
            df.load().writeStream.format("noop").trigger(processingTime="100 milliseconds").start()
        )

    q = start(maxTriggerDelay="1h", maxOffsetsPerTrigger="1000")
    try:
        # As Spark: the first micro-batch does not wait.
        assert _wait_batches(q, 1) == [100]
        c.produce("trickle", 100, partition="spread")
        time.sleep(3)  # ~30 triggers: 100 new offsets are fewer than 150, no micro-batch
        assert _batches(q) == [100]
        c.produce("trickle", 60, partition="spread")
        assert _wait_batches(q, 2) == [100, 160]
    finally:
        q.stop()

    # maxTriggerDelay: fewer records than the minimum go once the delay is over.
    q = start(startingOffsets="latest", maxTriggerDelay="2s")
    try:
        deadline = time.monotonic() + 60
        while not q.recentProgress:  # the start ("latest") is fixed by the first trigger
            assert time.monotonic() < deadline and q.exception() is None
            time.sleep(0.1)
        c.produce("trickle", 10, partition="spread")
        began = time.monotonic()
        assert _wait_batches(q, 1) == [10]
        assert time.monotonic() - began < 30
    finally:
        q.stop()


def test_small_reads_keep_every_core_busy(spark: Any, embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("small", 6)
    c.produce("small", 60, partition="spread")
    cores = spark.sparkContext.defaultParallelism
    assert cores >= 2

    def tasks(**options: str) -> int:
        df = rackafka_reader(spark, c.bootstrap_servers, "small", **options).load()
        assert df.count() == 60
        return int(df.rdd.getNumPartitions())

    # 60 offsets are far below rackafka.offsetsPerTask, yet every core gets a task; the six
    # partitions are grouped onto them.
    assert tasks() == min(6, cores)
    assert tasks(minPartitions="5") == 5
    assert tasks(maxRecordsPerPartition="5") == 12  # 12 pieces, one task each at most
    assert tasks(**{"rackafka.offsetsPerTask": "20"}) == 3
    # Registered without a known parallelism (a Spark Connect session): a task per
    # topic-partition, as Spark's Kafka source.
    from rackafka.spark.source import RackafkaDataSource

    spark.dataSource.register(RackafkaDataSource)
    try:
        assert tasks() == 6
    finally:
        import rackafka.spark

        rackafka.spark.register(spark)


def test_the_registered_class_carries_the_parallelism() -> None:
    from pyspark import cloudpickle

    from rackafka.spark.source import RackafkaDataSource, source_for

    assert source_for(None) is RackafkaDataSource
    cls = source_for(7)
    assert issubclass(cls, RackafkaDataSource) and cls.name() == "rackafka"
    copy = cloudpickle.loads(cloudpickle.dumps(cls))
    assert copy.default_parallelism == 7 and copy.name() == "rackafka"


def test_pattern_assign_and_passed_through_options(
    spark: Any, embedded_cluster: EmbeddedCluster
) -> None:
    c = embedded_cluster
    for topic in ("logs-web", "logs-db", "logsx"):
        c.create_topic(topic, 2)
        c.produce(topic, 20, partition="spread")

    def read(**options: str) -> list[tuple[str, int, int]]:
        rows = (
            rackafka_reader(spark, c.bootstrap_servers, **options)
            .load()
            .select("topic", "partition", "offset")
            .collect()
        )
        return sorted((x.topic, x.partition, x.offset) for x in rows)

    every = {t: [(t, p, o) for p in range(2) for o in range(10)] for t in ("logs-web", "logs-db")}
    # Whole names only: "logsx" does not match.
    assert read(subscribePattern=r"logs-(web|db)") == sorted(every["logs-web"] + every["logs-db"])
    assert read(subscribePattern="logs-.*") == read(subscribePattern=r"logs-\w+")
    with pytest.raises(Exception, match=r"subscribePattern.*\\p\{"):
        read(subscribePattern=r"logs-\p{Alpha}+")
    assert read(assign='{"logs-db":[1]}') == [("logs-db", 1, o) for o in range(10)]
    # Spark accepts these; the source ignores the group ones and uses the consumer ones.
    accepted = {
        "groupIdPrefix": "etl",
        "kafka.group.id": "etl-1",
        "kafka.session.timeout.ms": "10000",
        "kafka.max.poll.records": "3",
        "kafka.fetch.max.bytes": "2048",
        "kafka.client.id": "spark-etl",
    }
    assert read(subscribe="logs-web", **accepted) == every["logs-web"]
