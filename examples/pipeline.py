"""rackafka pipeline demo: Spark reads Kafka from its own zone, aggregates, writes Parquet.

``make demo`` runs this file after ``examples/demo.py``. It starts an embedded Kafka cluster
of three brokers in three racks (``az-a``, ``az-b``, ``az-c``) whose brokers select replicas
per client rack as Kafka's ``RackAwareReplicaSelector`` does, in a process of its own
(``ServedCluster(replica_selector="rack-aware")``: ``python -m rackafka.testing serve``),
fills a topic with JSON events whose partition leaders are spread over the racks (written
with rackafka's producer), and runs a Spark job that:

1. reads the topic with the ``rackafka`` source (``spark.read.format("rackafka")``, the
   options of Spark's Kafka source);
2. parses each value (``{"user": ..., "action": ..., "amount": ..., "ts": ...}``);
3. counts the events and sums ``amount`` per user (the record key) and minute;
4. writes the result to Parquet.

Where do the executors live? By default (``--executors standalone``) the job runs on a
Spark standalone cluster on 127.0.0.1: a master and two workers, one started with
``RACKAFKA_CLIENT_RACK=az-a`` and one with ``RACKAFKA_CLIENT_RACK=az-b``, as the start-up
scripts of nodes in two zones would. ``kafka.client.rack`` is left unset: every task takes
the rack of the executor it runs on, so the tasks on the az-a executor read from the az-a
replicas and those on the az-b executor from the az-b replicas, at the same time, from the
same brokers. ``--executors local`` runs Spark's ``local[N]`` instead: its executor threads
share the driver's JVM and environment, so all of them are in one rack (az-b).

The run prints the rows in, the rows out, and, from the reports each task writes
(``rackafka.metricsPath``), the racks the tasks ran in, the bytes read per broker rack and
the share read from the executors' own rack. It exits with status 1 when rows went missing
or were duplicated, when the aggregates do not match the events, when a byte was read from
another rack, or when an executor rack did no reading.

Run ``python examples/pipeline.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rackafka.testing import (
    EmbeddedCluster,
    ServedCluster,
    ServedClusterError,
    SparkStandaloneCluster,
    SparkUnavailableError,
    loopback_spark_conf,
)

RACKS = ("az-a", "az-b", "az-c")
#: The rack of the executors of ``local[N]`` (one JVM, one environment).
EXECUTOR_RACK = "az-b"
#: The racks of the standalone cluster's workers, one worker each.
WORKER_RACKS = ("az-a", "az-b")
TOPIC = "pipeline-events"
ACTIONS = ("view", "click", "buy")
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def event(i: int, users: int, minutes: int) -> dict[str, Any]:
    """Event ``i``: deterministic, so the expected aggregates can be computed."""
    rnd = random.Random(i)
    return {
        "user": f"user-{rnd.randrange(users):03d}",
        "action": ACTIONS[rnd.randrange(len(ACTIONS))],
        "amount": round(rnd.uniform(0, 100), 2),
        "ts": START_MS + rnd.randrange(minutes * 60_000),
    }


def expected_aggregates(events: int, users: int, minutes: int) -> dict[tuple[str, int], Any]:
    """``(user, minute start in ms)`` -> ``(events, total amount)``, computed in Python."""
    out: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0, 0.0])
    for i in range(events):
        e = event(i, users, minutes)
        minute = e["ts"] - e["ts"] % 60_000
        agg = out[(e["user"], minute)]
        agg[0] += 1
        agg[1] += e["amount"]
    return {k: (int(v[0]), v[1]) for k, v in out.items()}


@dataclass
class PipelineReport:
    events: int
    rows_in: int = 0
    distinct_offsets: int = 0
    rows_out: int = 0
    aggregates_ok: bool = False
    seconds: float = 0.0
    tasks: int = 0
    client_racks: list[str] = field(default_factory=list)
    #: The racks the executors are in: each must have read.
    expected_racks: list[str] = field(default_factory=list)
    bytes_by_rack: dict[str, int] = field(default_factory=dict)
    same_rack_bytes: int = 0
    cross_rack_bytes: int = 0
    parquet: str = ""

    @property
    def same_rack_share(self) -> float:
        total = self.same_rack_bytes + self.cross_rack_bytes
        return self.same_rack_bytes / total if total else 0.0

    @property
    def ok(self) -> bool:
        return (
            self.rows_in == self.events
            and self.distinct_offsets == self.events
            and self.aggregates_ok
            and self.cross_rack_bytes == 0
            and self.same_rack_bytes > 0
            and set(self.client_racks) == set(self.expected_racks)
        )


def fill_topic(
    cluster: EmbeddedCluster | ServedCluster, events: int, partitions: int, users: int, minutes: int
) -> float:
    """Create the topic (leaders spread over the racks) and write the events, keyed by user;
    return the seconds producing took."""
    cluster.create_topic(TOPIC, partitions, 3)

    made = [event(i, users, minutes) for i in range(events)]  # once, not once per callable
    values = [json.dumps(e, separators=(",", ":")).encode() for e in made]
    keys = [e["user"].encode() for e in made]

    def value(i: int) -> bytes:
        return values[i]

    def key(i: int) -> bytes:
        return keys[i]

    started = time.perf_counter()
    result = cluster.produce(TOPIC, events, key=key, value=value, partition="spread")
    seconds = time.perf_counter() - started
    if result.count != events:
        raise RuntimeError(f"produced {result.count} of {events} events")
    return seconds


def run_pipeline(
    spark: Any,
    cluster: EmbeddedCluster | ServedCluster,
    out_dir: Path,
    events: int,
    users: int,
    minutes: int,
    tasks: int = 2,
    expected_racks: Sequence[str] = (EXECUTOR_RACK,),
) -> PipelineReport:
    """Read, parse, aggregate per user and minute, write Parquet; check and report.

    ``tasks``: at least this many read tasks (``minPartitions``), so that every executor
    core reads; the source would otherwise read a small topic in one task.
    ``expected_racks``: the racks of the executors, each of which must have read.
    """
    from pyspark.sql import functions as sf
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    from rackafka.spark import rack_summary, read_task_reports

    metrics = out_dir / "task-metrics"
    parquet = out_dir / "per-user-minute.parquet"
    for path in (metrics, parquet):
        shutil.rmtree(path, ignore_errors=True)
    schema = StructType(
        [
            StructField("user", StringType()),
            StructField("action", StringType()),
            StructField("amount", DoubleType()),
            StructField("ts", LongType()),
        ]
    )
    started = time.perf_counter()
    raw = (
        spark.read.format("rackafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("rackafka.metricsPath", str(metrics))
        .option("minPartitions", str(tasks))
        .load()
    )
    raw.cache()
    parsed = raw.select(
        sf.col("key").cast("string").alias("user_key"),
        sf.from_json(sf.col("value").cast("string"), schema).alias("e"),
    ).select("user_key", "e.*")
    aggregated = (
        parsed.withColumn("minute", sf.timestamp_millis(sf.col("ts") - sf.col("ts") % 60_000))
        .groupBy("user_key", "minute")
        .agg(sf.count("*").alias("events"), sf.sum("amount").alias("amount"))
    )
    aggregated.write.mode("overwrite").parquet(str(parquet))
    report = PipelineReport(
        events=events, parquet=str(parquet), expected_racks=sorted(expected_racks)
    )
    counts = raw.agg(
        sf.count("*").alias("n"),
        sf.count_distinct("partition", "offset").alias("distinct"),
    ).first()
    report.seconds = time.perf_counter() - started
    report.rows_in = int(counts["n"])
    report.distinct_offsets = int(counts["distinct"])
    raw.unpersist()

    written = spark.read.parquet(str(parquet)).collect()
    report.rows_out = len(written)
    got = {
        (r.user_key, int(r.minute.timestamp() * 1000)): (int(r.events), float(r.amount))
        for r in written
    }
    want = expected_aggregates(events, users, minutes)
    report.aggregates_ok = set(got) == set(want) and all(
        got[k][0] == want[k][0] and abs(got[k][1] - want[k][1]) < 1e-6 for k in want
    )

    summary = rack_summary(read_task_reports(metrics))
    report.tasks = summary["tasks"]
    report.client_racks = summary["client_racks"]
    report.bytes_by_rack = summary["bytes_by_rack"]
    report.same_rack_bytes = summary["same_rack_bytes"]
    report.cross_rack_bytes = summary["cross_rack_bytes"]
    return report


def print_report(report: PipelineReport) -> None:
    print(f"rows in (Kafka records read):   {report.rows_in:>10,}  of {report.events:,} produced")
    print(f"distinct (partition, offset):   {report.distinct_offsets:>10,}")
    print(f"rows out (user x minute):       {report.rows_out:>10,}  -> {report.parquet}")
    print(f"aggregates match the events:    {'yes' if report.aggregates_ok else 'NO':>10}")
    print(f"Spark job time:                 {report.seconds:>10.1f} s")
    print(f"tasks, executor racks:          {report.tasks:>10}  {', '.join(report.client_racks)}")
    idle = sorted(set(report.expected_racks) - set(report.client_racks))
    if idle:
        print(f"executor racks that read nothing: {', '.join(idle)}")
    for rack in sorted(report.bytes_by_rack):
        print(f"  bytes served by {rack:<12}  {report.bytes_by_rack[rack]:>12,}")
    print(
        f"same-rack share of bytes read:  {report.same_rack_share:>10.1%}  "
        f"({report.cross_rack_bytes:,} bytes from other racks)"
    )
    print("OK" if report.ok else "FAILED")


def spark_session(cores: int, standalone: SparkStandaloneCluster | None = None) -> Any:
    """A SparkSession: on ``standalone``'s workers, else ``local[cores]`` in ``EXECUTOR_RACK``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import rackafka.spark

    builder = SparkSession.builder
    # Loopback only: the driver binds and advertises 127.0.0.1 (SPARK_LOCAL_IP for its JVM).
    for key, value in loopback_spark_conf().items():
        builder = builder.config(key, value)
    builder = (
        builder.appName("rackafka-pipeline")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(cores * 2))
    )
    if standalone is not None:
        # Each executor has the RACKAFKA_CLIENT_RACK its worker was started with.
        for key, value in standalone.spark_conf().items():
            builder = builder.config(key, value)
    else:
        # local mode: the executors are threads of the JVM started here, with this
        # environment.
        os.environ["RACKAFKA_CLIENT_RACK"] = EXECUTOR_RACK
        builder = builder.master(f"local[{cores}]").config(
            "spark.executorEnv.RACKAFKA_CLIENT_RACK", EXECUTOR_RACK
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    rackafka.spark.register(spark)
    return spark


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=200_000, help="events to write (200000)")
    parser.add_argument("--partitions", type=int, default=12, help="topic partitions (12)")
    parser.add_argument("--users", type=int, default=200, help="distinct users/keys (200)")
    parser.add_argument("--minutes", type=int, default=30, help="minutes the events span (30)")
    parser.add_argument(
        "--executors",
        choices=("standalone", "local"),
        default="standalone",
        help="standalone: a Spark master and two workers in az-a and az-b on 127.0.0.1 "
        "(default); local: Spark's local[N], every executor in az-b",
    )
    parser.add_argument(
        "--cores", type=int, default=2, help="cores: local[N], or per standalone worker (2)"
    )
    parser.add_argument("--out", type=Path, default=None, help="output directory (a temp dir)")
    parser.add_argument(
        "--engine",
        default=None,
        help="the cluster's engine, passed to 'python -m rackafka.testing serve --engine' "
        "(default: the embedded librdkafka mock brokers)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        print("pyspark is not installed: pip install 'rackafka[spark]'", file=sys.stderr)
        return 2
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        print("Spark needs a Java runtime (17 or newer) on PATH or in JAVA_HOME", file=sys.stderr)
        return 2
    out_dir = args.out or Path(tempfile.mkdtemp(prefix="rackafka-pipeline-"))
    standalone = args.executors == "standalone"
    racks = WORKER_RACKS if standalone else (EXECUTOR_RACK,)
    try:
        with contextlib.ExitStack() as stack:
            # The brokers and the front that plays the replica selector run in a process
            # of their own, not in the driver's.
            cluster = stack.enter_context(
                ServedCluster(
                    brokers=3, racks=RACKS, replica_selector="rack-aware", engine=args.engine
                )
            )
            produce_seconds = fill_topic(
                cluster, args.events, args.partitions, args.users, args.minutes
            )
            leaders = Counter(cluster.rack_of(p.leader) for p in cluster.partitions(TOPIC))
            print(
                f"topic {TOPIC}: {args.events:,} JSON events in {args.partitions} partitions, "
                "leaders per rack: "
                + ", ".join(f"{rack} {leaders[rack]}" for rack in sorted(leaders))
            )
            print(
                f"produced {args.events:,} events in {produce_seconds:.1f} s "
                f"({args.events / max(produce_seconds, 1e-9):,.0f} records/s, rackafka's "
                "AIOKafkaProducer)"
            )
            sc = None
            if standalone:
                print(
                    "starting a Spark standalone master and workers in "
                    + ", ".join(racks)
                    + " on 127.0.0.1 ..."
                )
                sc = stack.enter_context(
                    SparkStandaloneCluster(
                        [{"RACKAFKA_CLIENT_RACK": rack} for rack in racks], cores=args.cores
                    )
                )
                print(f"Spark {sc.master_url}: {len(racks)} workers of {args.cores} cores")
            else:
                print(f"Spark local[{args.cores}], executors in rack {EXECUTOR_RACK}")
            spark = spark_session(args.cores, sc)
            stack.callback(spark.stop)
            cores = args.cores * len(racks)
            report = run_pipeline(
                spark,
                cluster,
                out_dir,
                args.events,
                args.users,
                args.minutes,
                tasks=cores * 2,
                expected_racks=racks,
            )
    except ServedClusterError as exc:
        print(f"the cluster failed: {exc}", file=sys.stderr)
        return 2
    except SparkUnavailableError as exc:
        print(f"Spark cannot run here: {exc}", file=sys.stderr)
        return 2
    print_report(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
