"""What one Spark task does, without Spark: ``read_range`` against the embedded cluster.

Every test reads an offset range with the task reader and checks the Arrow rows exactly:
the records of the range and nothing else, with Spark's Kafka schema; data loss raises
``DataLossError`` or, with ``failOnDataLoss=false``, is reported in the task's metrics.
"""

from __future__ import annotations

import datetime as dt
import gc
import http.server
import os
import threading
import warnings
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, cast

import pytest

pa = pytest.importorskip("pyarrow", reason="the spark extra (pyarrow) is not installed")

from rackafka.consumer.consumer import AIOKafkaConsumer  # noqa: E402
from rackafka.errors import KafkaTimeoutError  # noqa: E402
from rackafka.spark import rack_summary  # noqa: E402
from rackafka.spark.options import CLIENT_RACK_ENV, EARLIEST, SourceOptions, parse_options  # noqa: E402
from rackafka.spark.planning import DataLossError, OffsetRange  # noqa: E402
from rackafka.spark.reader import (  # noqa: E402
    TaskReport,
    arrow_schema,
    read_range,
    read_ranges,
    read_task_reports,
)
from rackafka.testing import EmbeddedCluster, default_value, offline_zone_environ  # noqa: E402

pytestmark = pytest.mark.fault_injection

TS_MS = 1_700_000_000_123
COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def options(cluster: EmbeddedCluster, **extra: str) -> SourceOptions:
    return parse_options(
        {"kafka.bootstrap.servers": cluster.bootstrap_servers, "subscribe": "unused", **extra},
        streaming=False,
    )


def read(opts: SourceOptions, rng: OffsetRange, include_headers: bool = False) -> list[Any]:
    """Every Arrow batch of the task, checked for the schema and non-emptiness."""
    schema = arrow_schema(include_headers)
    batches = list(read_range(opts, rng, schema))
    for b in batches:
        assert isinstance(b, pa.RecordBatch)
        assert b.schema.equals(schema)
        assert b.num_rows > 0
    return batches


def rows(batches: list[Any]) -> list[dict[str, Any]]:
    return [row for b in batches for row in b.to_pylist()]


def offsets(batches: list[Any]) -> list[int]:
    return [r["offset"] for r in rows(batches)]


def reports(path: Path) -> list[TaskReport]:
    return read_task_reports(path)


def only_report(path: Path) -> TaskReport:
    found = reports(path)
    assert len(found) == 1
    return found[0]


def nonzero(by_rack: dict[str, int]) -> dict[str, int]:
    return {rack: n for rack, n in by_rack.items() if n}


def key(i: int) -> bytes:
    return b"k%d" % i


def value(i: int) -> bytes:
    return b"v%d-" % i + b"x" * (i % 13)


def headers(i: int) -> list[tuple[str, bytes]] | None:
    if i % 3 == 2:
        return None
    return [("n", str(i).encode()), ("parity", b"even" if i % 2 == 0 else b"odd")]


def expected_headers(i: int) -> list[dict[str, Any]] | None:
    hs = headers(i)
    return None if hs is None else [{"key": k, "value": v} for k, v in hs]


@pytest.fixture
def cluster(embedded_cluster: EmbeddedCluster) -> EmbeddedCluster:
    return embedded_cluster


def produce_numbered(
    cluster: EmbeddedCluster, topic: str, count: int, batch_size: int = 700
) -> None:
    """``count`` records of ``default_value(i, 40)`` to partition 0, ~10 per batch."""
    cluster.create_topic(topic, 1)
    result = cluster.produce(
        topic,
        count,
        value=lambda i: default_value(i, 40),
        partition=0,
        batch_size=batch_size,
        linger_ms=5,
    )
    assert result.count == count and result.last_offsets[0] == count - 1


def check_numbered(batches: list[Any], first: int, end: int) -> None:
    got = rows(batches)
    assert [r["offset"] for r in got] == list(range(first, end))
    assert [r["value"] for r in got] == [default_value(i, 40) for i in range(first, end)]


# -- records -----------------------------------------------------------------------------------


@pytest.mark.parametrize("include_headers", [False, True])
def test_exact_records(cluster: EmbeddedCluster, include_headers: bool) -> None:
    cluster.create_topic("recs", 2)
    cluster.produce(
        "recs",
        60,
        key=key,
        value=value,
        headers=headers,
        partition=1,
        timestamp_ms=TS_MS,
        batch_size=600,
        linger_ms=5,
    )
    # A tombstone with a null key, and a record with a key but an empty value.
    cluster.produce("recs", 1, key=None, value=lambda i: None, partition=1, timestamp_ms=TS_MS)
    cluster.produce("recs", 1, key=b"empty", value=b"", partition=1, timestamp_ms=TS_MS + 1)
    cluster.produce("recs", 5, partition=0)  # another partition: not read

    opts = options(cluster, includeHeaders=str(include_headers).lower())
    batches = read(opts, OffsetRange("recs", 1, 0, 62), include_headers)
    assert len(batches) > 1  # several fetches, several Arrow batches
    got = rows(batches)
    assert len(got) == 62
    utc = dt.timezone.utc
    stamp = dt.datetime.fromtimestamp(TS_MS / 1000, utc)
    for i, row in enumerate(got[:60]):
        assert list(row) == COLUMNS + (["headers"] if include_headers else [])
        assert row["key"] == key(i)
        assert row["value"] == value(i)
        assert row["topic"] == "recs"
        assert row["partition"] == 1
        assert row["offset"] == i
        assert row["timestamp"] == stamp
        assert row["timestampType"] == 0  # CreateTime
        if include_headers:
            assert row["headers"] == expected_headers(i)
    tomb, empty = got[60], got[61]
    assert tomb["key"] is None and tomb["value"] is None and tomb["offset"] == 60
    assert empty["key"] == b"empty" and empty["value"] == b"" and empty["offset"] == 61
    assert empty["timestamp"] == dt.datetime.fromtimestamp((TS_MS + 1) / 1000, utc)
    if include_headers:
        assert tomb["headers"] is None

    # Timestamps are microseconds since the epoch, in UTC, as Spark's Arrow conversion wants.
    table = pa.Table.from_batches(batches)
    ts_type = table.schema.field("timestamp").type
    assert ts_type.unit == "us" and ts_type.tz == "UTC"
    micros = table.column("timestamp").cast(pa.int64()).to_pylist()
    assert micros[:61] == [TS_MS * 1000] * 61 and micros[61] == (TS_MS + 1) * 1000


@pytest.mark.parametrize("include_headers", [False, True])
def test_schema_is_what_spark_expects(cluster: EmbeddedCluster, include_headers: bool) -> None:
    pytest.importorskip("pyspark", reason="the spark extra (pyspark) is not installed")
    from pyspark.sql.pandas.types import to_arrow_schema

    from rackafka.spark.source import kafka_schema

    spark_schema = to_arrow_schema(kafka_schema(include_headers), timezone="UTC")
    assert arrow_schema(include_headers).equals(spark_schema)
    cluster.create_topic("schema", 1)
    cluster.produce("schema", 3, key=key, headers=headers, partition=0)
    batches = list(read_range(options(cluster), OffsetRange("schema", 0, 0, 3), spark_schema))
    assert sum(b.num_rows for b in batches) == 3
    for b in batches:
        assert b.schema.equals(spark_schema)


def test_no_headers_column_without_include_headers(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("nohdr", 1)
    cluster.produce("nohdr", 2, headers=[("h", b"1")], partition=0)
    batches = read(options(cluster), OffsetRange("nohdr", 0, 0, 2))
    assert batches[0].schema.names == COLUMNS


# -- ranges ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end"),
    [(13, 58), (0, 1), (7, 8), (99, 100), (0, 100), (41, 42), (5, 95), (90, 100)],
)
def test_sub_ranges(cluster: EmbeddedCluster, start: int, end: int) -> None:
    produce_numbered(cluster, "ranged", 100)
    batches = read(options(cluster), OffsetRange("ranged", 0, start, end))
    check_numbered(batches, start, end)


def test_empty_range_reads_nothing(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    produce_numbered(cluster, "ranged", 20)
    opts = options(cluster, **{"rackafka.metricsPath": str(tmp_path)})
    assert read(opts, OffsetRange("ranged", 0, 10, 10)) == []
    report = only_report(tmp_path)
    assert report.ranges == [["ranged", 0, 10, 10]]
    assert (report.records, report.lost_offsets) == (0, 0)


def test_earliest_start(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    produce_numbered(cluster, "early", 40)
    cluster.delete_records("early", 0, 10)
    opts = options(cluster, **{"rackafka.metricsPath": str(tmp_path)})
    check_numbered(read(opts, OffsetRange("early", 0, EARLIEST, 30)), 10, 30)
    report = only_report(tmp_path)
    assert report.ranges == [["early", 0, EARLIEST, 30]]
    assert report.records == 20 and report.lost_offsets == 0


def test_ranges_split_by_the_planner_read_each_record_once(cluster: EmbeddedCluster) -> None:
    from rackafka.spark.planning import split_ranges

    produce_numbered(cluster, "split", 100)
    pieces = split_ranges([OffsetRange("split", 0, 3, 97)], 7)
    assert len(pieces) >= 7
    got = [o for piece in pieces for o in offsets(read(options(cluster), piece))]
    assert got == list(range(3, 97))


# -- several ranges in one task -----------------------------------------------------------------


def produce_spread(cluster: EmbeddedCluster, topic: str, partitions: int, count: int) -> None:
    """Record ``i`` (``default_value(i, 40)``) to partition ``i % partitions``."""
    cluster.create_topic(topic, partitions)
    cluster.produce(
        topic,
        count,
        value=lambda i: default_value(i, 40),
        partition="spread",
        batch_size=500,
        linger_ms=5,
    )


def by_partition(batches: list[Any]) -> dict[int, list[tuple[int, bytes]]]:
    out: dict[int, list[tuple[int, bytes]]] = {}
    for b in batches:  # a batch holds what one fetch brought, of one or more partitions
        for row in b.to_pylist():
            out.setdefault(row["partition"], []).append((row["offset"], row["value"]))
    return out


def test_parts_to_arrow_equals_the_batches_of_each_part() -> None:
    from rackafka.spark.reader import parts_to_arrow, to_arrow

    def recs(first: int, n: int, gap: bool = False, ts: int = 5) -> list[tuple[Any, ...]]:
        offs = [first + i * (2 if gap else 1) for i in range(n)]
        return [
            (
                o,
                ts + (o % 3 if gap else 0),
                0,
                None if o % 4 == 0 else b"k%d" % o,
                None if o % 5 == 0 else b"v%d" % o,
                None,
                2,
                2,
                (("h", b"x"),) if o % 2 else (),
            )
            for o in offs
        ]

    parts = [("a", 0, recs(10, 7)), ("b", 3, recs(0, 5, gap=True)), ("a", 1, recs(3, 1))]
    for headers in (False, True):
        schema = arrow_schema(headers)
        merged = parts_to_arrow(parts, schema)
        one_by_one = [to_arrow(rs, t, p, schema) for t, p, rs in parts]
        expected = [row for b in one_by_one for row in b.to_pylist()]
        assert merged.schema.equals(schema) and merged.num_rows == 13
        assert merged.to_pylist() == expected
        # One topic, several partitions: the topic column is one repeated value.
        same = parts_to_arrow([parts[0], parts[2]], schema)
        assert same.column("topic").to_pylist() == ["a"] * 8
        assert same.column("partition").to_pylist() == [0] * 7 + [1]


def test_headers_column_of_records_with_and_without_headers() -> None:
    from rackafka.spark.reader import parts_to_arrow

    schema = arrow_schema(True)

    def rec(o: int, hs: tuple[tuple[str, bytes | None], ...]) -> tuple[Any, ...]:
        return (o, 5, 0, None, b"v", None, -1, 1, hs)

    cases = [
        [(), ()],  # no record has headers: every row null
        [(("a", b"1"),), (("b", None), ("c", b""))],  # every record has some; a null value
        [(), (("é", b"\xff"),), (), (("x", b"1"), ("x", b"2")), ()],
    ]
    for headers in cases:
        batch = parts_to_arrow([("t", 0, [rec(i, hs) for i, hs in enumerate(headers)])], schema)
        assert batch.schema.equals(schema)
        assert batch.column("headers").to_pylist() == [
            [{"key": k, "value": v} for k, v in hs] if hs else None for hs in headers
        ]


def test_read_ranges_of_several_partitions(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    produce_spread(cluster, "multi", 3, 150)  # 50 per partition, seq = offset * 3 + p
    cluster.delete_records("multi", 2, 20)
    ranges = [
        OffsetRange("multi", 0, 10, 40),
        OffsetRange("multi", 1, 0, 50),
        OffsetRange("multi", 2, EARLIEST, 25),
    ]
    opts = options(cluster, **{"rackafka.metricsPath": str(tmp_path)})
    batches = list(read_ranges(opts, ranges, arrow_schema(False)))
    assert batches
    got = by_partition(batches)
    expected = {0: range(10, 40), 1: range(0, 50), 2: range(20, 25)}
    assert got == {
        p: [(o, default_value(o * 3 + p, 40)) for o in offs] for p, offs in expected.items()
    }
    report = only_report(tmp_path)
    assert report.ranges == [[r.topic, r.partition, r.start, r.end] for r in ranges]
    assert report.records == 30 + 50 + 5 and report.lost_offsets == 0


def test_read_ranges_with_one_empty_range(cluster: EmbeddedCluster) -> None:
    produce_spread(cluster, "multi", 2, 40)
    ranges = [OffsetRange("multi", 0, 5, 5), OffsetRange("multi", 1, 3, 7)]
    got = by_partition(list(read_ranges(options(cluster), ranges, arrow_schema(False))))
    assert {p: [o for o, _ in rows] for p, rows in got.items()} == {1: [3, 4, 5, 6]}


def test_read_ranges_with_data_loss_in_one_partition(
    cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    produce_spread(cluster, "multi", 2, 60)  # 30 per partition
    cluster.delete_records("multi", 0, 12)
    ranges = [OffsetRange("multi", 0, 2, 20), OffsetRange("multi", 1, 0, 30)]
    opts = lossy_options(cluster, False, tmp_path)
    got = by_partition(list(read_ranges(opts, ranges, arrow_schema(False))))
    assert {p: [o for o, _ in rows] for p, rows in got.items()} == {
        0: list(range(12, 20)),
        1: list(range(30)),
    }
    report = only_report(tmp_path)
    assert report.lost_offsets == 10 and report.records == 8 + 30
    with pytest.raises(DataLossError, match=r"offsets 2 to 11 of multi-0 are gone"):
        list(read_ranges(lossy_options(cluster, True, tmp_path), ranges, arrow_schema(False)))


def test_read_ranges_with_one_stalled_range(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    produce_spread(cluster, "multi", 2, 40)  # 20 per partition
    ranges = [OffsetRange("multi", 0, 15, 30), OffsetRange("multi", 1, 5, 20)]
    opts = lossy_options(cluster, False, tmp_path, **{"kafkaConsumer.pollTimeoutMs": "300"})
    got = by_partition(list(read_ranges(opts, ranges, arrow_schema(False))))
    assert {p: [o for o, _ in rows] for p, rows in got.items()} == {
        0: list(range(15, 20)),
        1: list(range(5, 20)),
    }
    report = only_report(tmp_path)
    assert report.lost_offsets == 10 and report.records == 20


# -- transactions ------------------------------------------------------------------------------

TRANSACTIONS = [("commit", 4), ("abort", 3), ("commit", 2), ("abort", 2)]


@pytest.mark.parametrize("isolation_level", ["read_uncommitted", "read_committed"])
def test_transactional_data_passes_over_control_markers(
    cluster: EmbeddedCluster, isolation_level: str
) -> None:
    cluster.create_topic("txn", 1)
    result = cluster.produce_transactional("txn", TRANSACTIONS, partition=0, value_size=30)
    markers = result.marker_offsets(0)
    assert len(markers) == len(TRANSACTIONS)
    data = sorted(
        set(range(markers[-1] + 1)) - set(markers)
    )  # every record offset, committed or aborted
    assert len(data) == sum(n for _, n in TRANSACTIONS)
    # The mock's control batches carry no CRC, and it has no read_committed for Fetch
    # (no aborted transactions listed): aborted records come through under both levels.
    opts = options(
        cluster,
        **{
            "kafka.check.crcs": "false",
            "kafka.isolation.level": isolation_level,
            # A task that stalls on a marker fails instead of hanging the test.
            "kafkaConsumer.pollTimeoutMs": "5000",
        },
    )
    # The whole log, ending with a marker: the task ends after passing over it.
    assert offsets(read(opts, OffsetRange("txn", 0, 0, markers[-1] + 1))) == data
    # A range ending right after a marker in the middle of the log.
    first_marker = markers[0]
    assert offsets(read(opts, OffsetRange("txn", 0, 0, first_marker + 1))) == list(
        range(first_marker)
    )
    # A range starting on a marker.
    assert offsets(read(opts, OffsetRange("txn", 0, markers[1], markers[2]))) == [
        o for o in data if markers[1] < o < markers[2]
    ]
    # A range of a marker alone holds no record.
    assert read(opts, OffsetRange("txn", 0, markers[0], markers[0] + 1)) == []


# -- data loss ---------------------------------------------------------------------------------


def lossy_options(cluster: EmbeddedCluster, fail: bool, path: Path, **extra: str) -> SourceOptions:
    return options(
        cluster,
        failOnDataLoss=str(fail).lower(),
        **{"rackafka.metricsPath": str(path), **extra},
    )


def test_records_deleted_below_the_start_fail(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    produce_numbered(cluster, "gone", 30)
    cluster.delete_records("gone", 0, 10)
    opts = lossy_options(cluster, True, tmp_path)
    with pytest.raises(DataLossError, match=r"offsets 5 to 9 of gone-0 are gone.*failOnDataLoss"):
        read(opts, OffsetRange("gone", 0, 5, 25))


def test_records_deleted_below_the_start_go_on(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    produce_numbered(cluster, "gone", 30)
    cluster.delete_records("gone", 0, 10)
    opts = lossy_options(cluster, False, tmp_path)
    check_numbered(read(opts, OffsetRange("gone", 0, 5, 25)), 10, 25)
    report = only_report(tmp_path)
    assert report.records == 15 and report.lost_offsets == 5
    assert report.ranges == [["gone", 0, 5, 25]]


def test_whole_range_deleted_go_on(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    produce_numbered(cluster, "gone", 30)
    cluster.delete_records("gone", 0, 25)
    opts = lossy_options(cluster, False, tmp_path)
    assert read(opts, OffsetRange("gone", 0, 5, 20)) == []
    report = only_report(tmp_path)
    assert report.records == 0 and report.lost_offsets == 15


def test_range_past_the_end_times_out(cluster: EmbeddedCluster) -> None:
    produce_numbered(cluster, "short", 30)
    opts = options(cluster, **{"kafkaConsumer.pollTimeoutMs": "300"})
    got: list[int] = []
    with pytest.raises(DataLossError, match=r"short-0 at offsets 30 to 49.*pollTimeoutMs"):
        for batch in read_range(opts, OffsetRange("short", 0, 20, 50), arrow_schema(False)):
            got.extend(batch.column("offset").to_pylist())
    # What was there was delivered before the task gave up.
    assert got == list(range(20, 30))


def test_a_slow_leader_fails_the_task_it_is_not_data_loss(
    cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    # As Spark's Kafka source: records that exist but do not come within pollTimeoutMs
    # fail the task (Spark retries it), even with failOnDataLoss=false.
    produce_numbered(cluster, "slow", 30)
    opts = lossy_options(cluster, False, tmp_path, **{"kafkaConsumer.pollTimeoutMs": "500"})
    cluster.set_broker_rtt(None, 1500)
    try:
        with pytest.raises(KafkaTimeoutError, match=r"slow-0 at offset 0 .*not data loss"):
            read(opts, OffsetRange("slow", 0, 0, 30))
    finally:
        cluster.set_broker_rtt(None, 0)
    report = only_report(tmp_path)
    assert report.lost_offsets == 0 and not report.finished


def test_range_past_the_end_stops_without_fail(cluster: EmbeddedCluster, tmp_path: Path) -> None:
    produce_numbered(cluster, "short", 30)
    opts = lossy_options(cluster, False, tmp_path, **{"kafkaConsumer.pollTimeoutMs": "300"})
    check_numbered(read(opts, OffsetRange("short", 0, 20, 50)), 20, 30)
    report = only_report(tmp_path)
    assert report.records == 10 and report.lost_offsets == 20


@pytest.mark.parametrize("fail", [True, False])
def test_range_beyond_the_log_end(cluster: EmbeddedCluster, tmp_path: Path, fail: bool) -> None:
    # The partition now ends before the range starts (truncated or re-created).
    produce_numbered(cluster, "short", 30)
    opts = lossy_options(cluster, fail, tmp_path, **{"kafkaConsumer.pollTimeoutMs": "2000"})
    rng = OffsetRange("short", 0, 40, 50)
    if fail:
        with pytest.raises(DataLossError, match=r"short-0 now ends at offset 30, before offset 40"):
            read(opts, rng)
        return
    assert read(opts, rng) == []
    report = only_report(tmp_path)
    assert report.records == 0 and report.lost_offsets == 10


# -- racks and metrics -------------------------------------------------------------------------


def test_client_rack_auto_reads_from_the_executors_rack(
    cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLIENT_RACK_ENV, "az-b")
    cluster.create_topic("racked", 1)  # led by broker 1 (az-a)
    assert cluster.partition_info("racked", 0).leader == 1
    hint = cluster.emulate_rack_aware_selector("az-b", topics=["racked"])
    assert hint == {("racked", 0): 2}
    cluster.produce("racked", 200, partition=0, batch_size=4000, value_size=100)

    metrics = tmp_path / "metrics"
    opts = options(cluster, **{"rackafka.metricsPath": str(metrics)})
    assert opts.client_rack == "env"
    assert len(offsets(read(opts, OffsetRange("racked", 0, 0, 200)))) == 200

    files = sorted(os.listdir(metrics))
    assert len(files) == 1 and files[0].endswith(".json") and not files[0].startswith(".")
    report = only_report(metrics)
    assert report.client_rack == "az-b"
    assert report.rack_source == "environment RACKAFKA_CLIENT_RACK"
    assert report.ranges == [["racked", 0, 0, 200]]
    assert report.records == 200
    assert report.same_rack_bytes > 200 * 100
    assert report.cross_rack_bytes == 0
    # The leader (az-a) only named the replica: it may be listed, with no bytes.
    assert nonzero(report.bytes_by_rack) == {"az-b": report.same_rack_bytes}
    assert report.lost_offsets == 0
    assert report.pid == os.getpid() and report.host
    assert report.seconds > 0

    summary = rack_summary(reports(metrics))
    assert nonzero(summary.pop("bytes_by_rack")) == {"az-b": report.same_rack_bytes}
    assert summary == {
        "tasks": 1,
        "records": 200,
        "client_racks": ["az-b"],
        "same_rack_bytes": report.same_rack_bytes,
        "cross_rack_bytes": 0,
        "same_rack_share": 1.0,
        "lost_offsets": 0,
    }


class _GceMetadata(http.server.BaseHTTPRequestHandler):
    """GCE's metadata server on 127.0.0.1: the executor's zone is ``az-c``."""

    def do_GET(self) -> None:
        ok = self.path == "/computeMetadata/v1/instance/zone"
        ok = ok and self.headers.get("Metadata-Flavor") == "Google"
        body = b"projects/1/zones/az-c" if ok else b""
        self.send_response(200 if ok else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_client_rack_auto_detects_the_executors_zone(
    cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kafka.client.rack=auto`` with no variable: the task asks the metadata services
    (fakes on 127.0.0.1 here), keeps the zone that is a broker rack, and reads there."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GceMetadata)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        environ = offline_zone_environ(tmp_path / "zones")
        environ["GCE_METADATA_HOST"] = f"127.0.0.1:{server.server_address[1]}"
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv(CLIENT_RACK_ENV, raising=False)
        cluster.create_topic("detected", 1)  # led by broker 1 (az-a)
        cluster.emulate_rack_aware_selector("az-c", topics=["detected"])
        cluster.produce("detected", 80, partition=0, value_size=100)
        metrics = tmp_path / "metrics"
        opts = options(
            cluster, **{"kafka.client.rack": "auto", "rackafka.metricsPath": str(metrics)}
        )
        assert len(offsets(read(opts, OffsetRange("detected", 0, 0, 80)))) == 80
    finally:
        server.shutdown()
        server.server_close()
    report = only_report(metrics)
    assert report.client_rack == "az-c"
    assert report.rack_source == "gce metadata instance/zone"
    assert set(nonzero(report.bytes_by_rack)) == {"az-c"} and report.cross_rack_bytes == 0


def test_fixed_client_rack_wins_over_the_environment(
    cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CLIENT_RACK_ENV, "az-b")
    cluster.create_topic("fixed", 1)
    cluster.emulate_rack_aware_selector("az-c", topics=["fixed"])
    cluster.produce("fixed", 50, partition=0)
    opts = options(cluster, **{"kafka.client.rack": "az-c", "rackafka.metricsPath": str(tmp_path)})
    assert len(offsets(read(opts, OffsetRange("fixed", 0, 0, 50)))) == 50
    report = only_report(tmp_path)
    assert report.client_rack == "az-c"
    assert set(nonzero(report.bytes_by_rack)) == {"az-c"} and report.cross_rack_bytes == 0


def test_no_rack_reads_from_the_leader(
    cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CLIENT_RACK_ENV, raising=False)
    cluster.create_topic("norack", 1)
    cluster.produce("norack", 50, partition=0)
    opts = options(cluster, **{"rackafka.metricsPath": str(tmp_path)})
    assert len(offsets(read(opts, OffsetRange("norack", 0, 0, 50)))) == 50
    report = only_report(tmp_path)
    assert report.client_rack is None
    assert set(report.bytes_by_rack) == {"az-a"}  # the leader, broker 1
    assert report.same_rack_bytes == 0
    assert report.cross_rack_bytes == report.bytes_by_rack["az-a"] > 0
    # Without a rack every byte counts as cross-rack.
    assert rack_summary([report])["same_rack_share"] == 0.0


def test_rack_summary_of_several_tasks(
    cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster.create_topic("multi", 2)
    cluster.produce("multi", 40, partition="spread")
    cluster.emulate_rack_aware_selector("az-c", topics=["multi"])
    metrics = str(tmp_path)
    monkeypatch.setenv(CLIENT_RACK_ENV, "az-c")
    opts = options(cluster, **{"rackafka.metricsPath": metrics})
    read(opts, OffsetRange("multi", 0, 0, 20))
    read(opts, OffsetRange("multi", 1, 5, 20))
    found = reports(tmp_path)
    assert sorted((r.ranges[0][1], r.records) for r in found) == [(0, 20), (1, 15)]
    summary = rack_summary(found)
    assert summary["tasks"] == 2 and summary["records"] == 35
    assert summary["same_rack_share"] == 1.0
    assert nonzero(summary["bytes_by_rack"]) == {"az-c": sum(r.same_rack_bytes for r in found)}


def test_rack_summary_of_nothing() -> None:
    assert rack_summary([])["same_rack_share"] is None


# -- closing early -----------------------------------------------------------------------------


def test_generator_closed_early_closes_the_consumer(
    cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    produce_numbered(cluster, "early-close", 300, batch_size=500)
    stopped: list[AIOKafkaConsumer[Any, Any]] = []
    original_stop: Callable[..., Any] = AIOKafkaConsumer.stop

    async def spy_stop(self: AIOKafkaConsumer[Any, Any]) -> None:
        await original_stop(self)
        stopped.append(self)

    monkeypatch.setattr(AIOKafkaConsumer, "stop", spy_stop)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gen = cast(
            "Generator[Any, None, None]",
            read_range(
                options(cluster), OffsetRange("early-close", 0, 0, 300), arrow_schema(False)
            ),
        )
        got = []
        for batch in gen:
            got.extend(batch.column("offset").to_pylist())
            break
        assert got and got == list(range(len(got))) and len(got) < 300
        assert stopped == []
        gen.close()  # what Spark does when it needs no more rows
        assert len(stopped) == 1
        gen.close()  # closing twice is harmless
        del gen
        gc.collect()
    assert len(stopped) == 1
    leaks = [
        w
        for w in caught
        if issubclass(w.category, ResourceWarning)
        or "never awaited" in str(w.message)
        or "unclosed" in str(w.message).lower()
    ]
    assert leaks == []


def test_generator_never_started_opens_nothing(
    cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    opts = options(cluster)  # parsing checks the kafka.* values with a consumer
    created: list[object] = []
    original_init = AIOKafkaConsumer.__init__

    def spy_init(self: AIOKafkaConsumer[Any, Any], *args: Any, **kwargs: Any) -> None:
        created.append(self)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(AIOKafkaConsumer, "__init__", spy_init)
    gen = cast(
        "Generator[Any, None, None]",
        read_range(opts, OffsetRange("x", 0, 0, 10), arrow_schema(False)),
    )
    gen.close()
    assert created == []


# -- the cyclic garbage collector ------------------------------------------------------------


def test_the_collector_is_paused_while_a_task_reads_and_restored_after(
    cluster: EmbeddedCluster,
) -> None:
    produce_numbered(cluster, "gc-pause", 300, batch_size=500)
    rng = OffsetRange("gc-pause", 0, 0, 300)
    assert gc.isenabled()
    states = []
    for batch in read_range(options(cluster), rng, arrow_schema(False)):
        states.append((batch.num_rows, gc.isenabled()))
    assert states and all(not enabled for _n, enabled in states)
    assert sum(n for n, _e in states) == 300
    assert gc.isenabled()
    # Closed early, as Spark does when it needs no more rows.
    gen = cast("Generator[Any, None, None]", read_range(options(cluster), rng, arrow_schema(False)))
    next(gen)
    assert not gc.isenabled()
    gen.close()
    assert gc.isenabled()
    # A task that fails (records 300 to 399 never come).
    opts = options(cluster, **{"kafkaConsumer.pollTimeoutMs": "300"})
    with pytest.raises(DataLossError):
        list(read_range(opts, OffsetRange("gc-pause", 0, 0, 400), arrow_schema(False)))
    assert gc.isenabled()


def test_a_collector_the_process_disabled_stays_disabled(cluster: EmbeddedCluster) -> None:
    produce_numbered(cluster, "gc-off", 50)
    gc.disable()
    try:
        got = read(options(cluster), OffsetRange("gc-off", 0, 0, 50))
        assert sum(b.num_rows for b in got) == 50
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("how", ["tuned", "RACKAFKA_DEFER_GC=0"])
def test_a_collector_the_process_tuned_or_kept_is_left_alone(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rackafka.records import _gc
    from rackafka.spark import reader

    before = gc.get_threshold()
    was = gc.isenabled()
    gc.enable()
    try:
        if how == "tuned":
            gc.set_threshold(5000, 20, 20)
        else:
            monkeypatch.setattr(_gc, "enabled", False)
        collector = reader._Collector()
        assert gc.isenabled()
        collector.tick()
        collector.restore()
        assert gc.isenabled()
        assert gc.get_threshold() == ((5000, 20, 20) if how == "tuned" else before)
    finally:
        gc.set_threshold(*before)
        if not was:
            gc.disable()


def test_the_paused_collector_collects_young_garbage_after_half_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """However slow the rounds (a long poll), garbage waits about as long as under the
    decoder's own pause, not :data:`_GC_YOUNG_EVERY` rounds."""
    import weakref

    from rackafka.records import _gc
    from rackafka.spark import reader

    class Node:
        def __init__(self) -> None:
            self.me = self

    clock = [1000.0]
    monkeypatch.setattr(reader.time, "monotonic", lambda: clock[0])
    freed: list[str] = []
    was = gc.isenabled()
    gc.enable()
    collector = reader._Collector()
    try:
        node = Node()
        weakref.finalize(node, freed.append, "node")
        del node
        collector.tick()  # round 1, at once: nothing collected
        assert freed == []
        clock[0] += _gc.MAX_SECONDS
        collector.tick()  # round 2, half a second later
        assert freed == ["node"]
    finally:
        collector.restore()
        if not was:
            gc.disable()


def test_the_paused_collector_still_frees_cycles() -> None:
    """Memory stays bounded: cycles die at the quiet points, in the young generations and,
    for those that lived long enough to be old, at the full collections."""
    import weakref

    from rackafka.spark import reader

    class Node:
        def __init__(self) -> None:
            self.me = self

    freed: list[str] = []
    was = gc.isenabled()
    gc.enable()
    collector = reader._Collector()
    try:
        assert not gc.isenabled()
        young, old = Node(), Node()
        weakref.finalize(young, freed.append, "young")
        weakref.finalize(old, freed.append, "old")
        del young
        for _ in range(reader._GC_YOUNG_EVERY):
            assert freed == []
            collector.tick()
        assert freed == ["young"]
        del old  # a cycle that was alive at the young collections: now in the oldest
        ticks = reader._GC_YOUNG_EVERY
        while ticks < reader._GC_FULL_EVERY:
            assert freed == ["young"]
            collector.tick()
            ticks += 1
        assert freed == ["young", "old"]
    finally:
        collector.restore()
        assert gc.isenabled()
        if not was:
            gc.disable()


@pytest.mark.parametrize(
    "values",
    [
        [b"small", b"", None, b"x" * 100],  # built value by value
        [b"%d|" % i + b"y" * 2000 for i in range(40)],  # joined: large values
        [b"z" * 3000, None, b"", b"w" * 700, None],  # large with nulls: value by value
        [b"" for _ in range(5)] + [b"q" * 10_000],  # joined: empty values and one large
        [b"q" * 10_000] + [b"" for _ in range(40)],  # the sample's average is small
    ],
)
def test_binary_columns_of_any_value_sizes(values: list[bytes | None]) -> None:
    from rackafka.spark import reader

    got = reader._binary(values)
    assert got.type == pa.binary() and got.to_pylist() == values
    got.validate(full=True)
    records = [(i, 5, 0, v, v, None, -1, -1, ()) for i, v in enumerate(values)]
    batch = reader.parts_to_arrow([("t", 0, records)], arrow_schema(False))
    assert batch.column("value").to_pylist() == values
    assert batch.column("key").to_pylist() == values
