"""The ``rackafka`` source in a real local Spark session against the embedded cluster."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rackafka.testing import EmbeddedCluster

from ._frames import rackafka_reader

pytestmark = pytest.mark.spark

TS_MS = 1_700_000_000_123


def _key(i: int) -> bytes:
    return f"k{i}".encode()


def _value(i: int) -> bytes:
    return json.dumps({"i": i, "pad": "x" * (i % 17)}).encode()


def _headers(i: int) -> list[tuple[str, bytes]]:
    return [("n", str(i).encode()), ("even", b"1" if i % 2 == 0 else b"0")]


def _reader(spark: Any, cluster: EmbeddedCluster, topic: str, **options: str) -> Any:
    return rackafka_reader(spark, cluster.bootstrap_servers, topic, **options)


def _stream(spark: Any, cluster: EmbeddedCluster, topic: str, **options: str) -> Any:
    return rackafka_reader(spark, cluster.bootstrap_servers, topic, stream=True, **options).load()


def test_batch_read_equals_what_was_produced(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    from pyspark.sql import functions as sf

    c = embedded_cluster
    c.create_topic("events", 3)
    produced = c.produce(
        "events",
        900,
        key=_key,
        value=_value,
        headers=_headers,
        timestamp_ms=TS_MS,
        partition="spread",
        batch_size=4000,
    )
    assert produced.count == 900
    # A tombstone: null value (and a null key) must come through as nulls.
    c.produce("events", 1, key=None, value=lambda i: None, partition=0)

    df = _reader(spark, c, "events", includeHeaders="true").load()
    assert df.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    rows = df.select(
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        sf.unix_millis("timestamp").alias("ms"),
        "timestampType",
        "headers",
    ).collect()
    assert len(rows) == 901
    by_key = {}
    tombstones = []
    for row in rows:
        assert row.topic == "events"
        if row.key is None:
            tombstones.append(row)
            continue
        by_key[bytes(row.key)] = row
    assert len(by_key) == 900 and len(tombstones) == 1
    assert tombstones[0].value is None and tombstones[0].partition == 0
    assert tombstones[0].offset == 300
    for i in range(900):
        row = by_key[_key(i)]
        assert bytes(row.value) == _value(i)
        assert row.partition == i % 3
        assert row.offset == i // 3  # each partition got every third record, in order
        assert row.ms == TS_MS
        assert row.timestampType == 0  # CreateTime
        assert [(h.key, bytes(h.value)) for h in row.headers] == _headers(i)
    # Offsets per partition: no gap, no duplicate.
    for p in range(3):
        offsets = sorted(r.offset for r in rows if r.partition == p)
        assert offsets == list(range(301 if p == 0 else 300))


def test_batch_offsets_json_and_min_partitions(
    spark: Any, embedded_cluster: EmbeddedCluster
) -> None:
    c = embedded_cluster
    c.create_topic("ranges", 2)
    c.produce("ranges", 400, key=_key, partition="spread", batch_size=2000)
    df = _reader(
        spark,
        c,
        "ranges",
        startingOffsets=json.dumps({"ranges": {"0": 10, "1": -2}}),
        endingOffsets=json.dumps({"ranges": {"0": 150, "1": -1}}),
        minPartitions="8",
    ).load()
    assert df.rdd.getNumPartitions() >= 8
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    expected = sorted([(0, o) for o in range(10, 150)] + [(1, o) for o in range(200)])
    assert got == expected


def test_invalid_options_name_the_option(spark: Any, embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("opts", 1)
    c.produce("opts", 5, partition=0)
    with pytest.raises(Exception, match="startingOffsets"):
        _reader(spark, c, "opts", startingOffsets="first").load().collect()
    with pytest.raises(Exception, match=r"kafka\.auto\.offset\.reset"):
        _reader(spark, c, "opts", **{"kafka.auto.offset.reset": "earliest"}).load().collect()
    # As in Spark: a batch query ignores maxOffsetsPerTrigger, kafka.group.id is accepted,
    # and an unknown option is ignored (rackafka warns).
    lenient = {"maxOffsetsPerTrigger": "2", "kafka.group.id": "g", "startingOffsetz": "x"}
    assert _reader(spark, c, "opts", **lenient).load().count() == 5
    with pytest.raises(Exception, match=r"kafka\.fetch\.max\.bytes"):
        _reader(spark, c, "opts", **{"kafka.fetch.max.bytes": "0"}).load().collect()
    # A streaming query checks its options when its stream thread starts.
    q = _stream(spark, c, "opts", endingOffsets="latest").writeStream.format("noop").start()
    with pytest.raises(Exception, match=r"(?i)endingOffsets"):
        q.awaitTermination(60)
    assert not q.isActive


def test_auto_rack_comes_from_the_executor_environment(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    from rackafka.spark import rack_summary, read_task_reports

    c = embedded_cluster
    c.create_topic("racks", 6)
    # The brokers answer as Kafka's RackAwareReplicaSelector does for a client in az-b.
    c.emulate_rack_aware_selector("az-b")
    c.produce("racks", 3000, partition="spread", value_size=200)

    auto_dir = tmp_path / "auto"
    n = _reader(spark, c, "racks", **{"rackafka.metricsPath": str(auto_dir)}).load().count()
    assert n == 3000
    summary = rack_summary(read_task_reports(auto_dir))
    assert summary["client_racks"] == ["az-b"]  # from RACKAFKA_CLIENT_RACK on the executor
    assert summary["records"] == 3000
    assert summary["cross_rack_bytes"] == 0
    assert summary["same_rack_share"] == 1.0

    # A fixed rack applies everywhere (and here az-c reads cross-rack: the brokers name
    # the az-b replicas, the consumer follows the hint as Kafka clients do).
    fixed_dir = tmp_path / "fixed"
    n = (
        _reader(
            spark,
            c,
            "racks",
            **{"rackafka.metricsPath": str(fixed_dir), "kafka.client.rack": "az-c"},
        )
        .load()
        .count()
    )
    assert n == 3000
    summary = rack_summary(read_task_reports(fixed_dir))
    assert summary["client_racks"] == ["az-c"]
    assert summary["same_rack_bytes"] == 0 and summary["cross_rack_bytes"] > 0


def _written(spark: Any, path: Path) -> list[tuple[int, int]]:
    if not path.exists():
        return []
    return [(r.partition, r.offset) for r in spark.read.parquet(str(path)).collect()]


def _assert_exactly_once(rows: list[tuple[int, int]], ends: dict[int, int]) -> None:
    assert len(rows) == len(set(rows)), "a record was written twice"
    expected = {(p, o) for p, end in ends.items() for o in range(end)}
    assert set(rows) == expected, (
        f"missing {sorted(expected - set(rows))[:5]}, extra {sorted(set(rows) - expected)[:5]}"
    )


def test_streaming_restart_from_checkpoint_exactly_once(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    c = embedded_cluster
    c.create_topic("stream", 3)
    c.produce("stream", 600, partition="spread", batch_size=2000)
    out = tmp_path / "out"
    checkpoint = tmp_path / "checkpoint"

    def query(**options: str) -> Any:
        df = _stream(spark, c, "stream", startingOffsets="earliest", **options)
        return (
            df.select("partition", "offset")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
        )

    # 1. A continuous query with admission control, stopped after a few micro-batches.
    q = query(maxOffsetsPerTrigger="90").trigger(processingTime="100 milliseconds").start()
    deadline = time.monotonic() + 120
    while len([p for p in q.recentProgress if p["numInputRows"] > 0]) < 2:
        assert q.exception() is None, q.exception()
        assert time.monotonic() < deadline, "no micro-batch within 120 s"
        time.sleep(0.2)
    q.stop()
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert all(p["numInputRows"] <= 90 for p in progress)
    first_rows = _written(spark, out)
    assert 0 < len(first_rows) < 600, "the first run was to stop part way"
    assert len(first_rows) == len(set(first_rows))

    # 2. More data arrives while the query is down.
    c.produce("stream", 300, partition="spread", batch_size=2000)

    # 3. Restarted from the checkpoint: continues exactly where it stopped.
    q = query(maxOffsetsPerTrigger="250").trigger(availableNow=True).start()
    assert q.awaitTermination(180)
    assert q.exception() is None
    batches = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"] > 0]
    assert all(n <= 250 for n in batches) and len(batches) >= 3
    _assert_exactly_once(_written(spark, out), {0: 300, 1: 300, 2: 300})
    # The progress shows how far the topic goes (reportLatestOffset).
    latest = q.lastProgress["sources"][0]["latestOffset"]
    latest = json.loads(latest) if isinstance(latest, str) else latest
    assert latest == {"stream": {"0": 300, "1": 300, "2": 300}}

    # 4. Nothing new: a restart reads nothing and writes nothing.
    q = query().trigger(availableNow=True).start()
    assert q.awaitTermination(120)
    assert sum(p["numInputRows"] for p in q.recentProgress) == 0
    _assert_exactly_once(_written(spark, out), {0: 300, 1: 300, 2: 300})


def test_streaming_fail_on_data_loss(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    c = embedded_cluster
    c.create_topic("lossy", 1)
    c.produce("lossy", 100, partition=0, batch_size=1000)
    out = tmp_path / "out"
    checkpoint = tmp_path / "checkpoint"

    def run(**options: str) -> Any:
        df = _stream(spark, c, "lossy", startingOffsets="earliest", **options)
        q = (
            df.select("partition", "offset")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        try:
            q.awaitTermination(120)
        except Exception as exc:  # the query's failure, raised by awaitTermination
            return exc
        return q.exception()

    assert run() is None
    assert len(_written(spark, out)) == 100
    # Records 100..199 arrive, then retention removes everything below 150 before the
    # query runs again: offsets 100..149 are lost.
    c.produce("lossy", 100, partition=0, batch_size=1000)
    c.delete_records("lossy", 0, 150)
    error = run()
    assert error is not None and "failOnDataLoss" in str(error)
    assert len(_written(spark, out)) == 100  # nothing was written by the failed batch

    assert run(failOnDataLoss="false") is None
    rows = _written(spark, out)
    assert len(rows) == len(set(rows)) == 150
    assert {o for _p, o in rows} == set(range(100)) | set(range(150, 200))


def test_batch_read_through_sasl_ssl_with_java_style_options(
    spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Spark's security options (PEM truststore, SCRAM in a JAAS line) through the
    TLS/SASL front; a wrong password fails the query with the mechanism named and the
    password nowhere in the error, the task reports or the output."""
    pytest.importorskip("trustme", reason="trustme (testing extra) makes the certificates")
    pytest.importorskip("scramp", reason="scramp (testing extra) is the front's SCRAM")
    secret = "sp4rk-s3cret-never-shown"
    with EmbeddedCluster(brokers=3, security_protocol="SASL_SSL", users={"etl": secret}) as cluster:
        cluster.create_topic("secure-events", 3)
        cluster.produce("secure-events", 600, value=_value, partition="spread")

        def jaas(password: str) -> str:
            return (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="etl" password="{password}";'
            )

        options = {
            "kafka.security.protocol": "SASL_SSL",
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": cluster.front.ca_file,
            "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "rackafka.metricsPath": str(tmp_path / "reports"),
        }
        df = _reader(
            spark, cluster, "secure-events", **options, **{"kafka.sasl.jaas.config": jaas(secret)}
        ).load()
        got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
        assert len(got) == 600 and len(set(got)) == 600
        assert cluster.front.stats.authentications["SCRAM-SHA-512"] >= 2
        # Spark's plans redact the JAAS line (its value contains "password").
        assert secret not in df._jdf.queryExecution().toString()
        with pytest.raises(Exception, match="SCRAM-SHA-512") as info:
            _reader(
                spark,
                cluster,
                "secure-events",
                **options,
                **{"kafka.sasl.jaas.config": jaas("wrong-" + secret)},
            ).load().collect()
        assert secret not in str(info.value)
    reports = "".join(p.read_text() for p in (tmp_path / "reports").rglob("*") if p.is_file())
    assert reports and secret not in reports
    out, err = capfd.readouterr()
    assert secret not in out and secret not in err
