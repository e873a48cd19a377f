"""Spark batch read through the rackafka source, against rackafka's own ``getmany``.

One embedded 3-rack cluster is started and filled once (default: 2,000,000 records of
100 B in 64 partitions). Then, in one run:

1. ``getmany``: rackafka's ``AIOKafkaConsumer.getmany()`` reads the whole topic in a child
   process (the ``rackafka`` client of ``benchmarks/consume.py``): records/s from the first
   record to the last, one process, one core at most.
2. ``spark``: a SparkSession on ``local[N]`` (default ``local[2]``) reads the whole topic
   with ``spark.read.format("rackafka")`` and writes it to Spark's ``noop`` sink, so that
   every row is produced and handed to the JVM. Records/s from the action's start to its
   end: planning (offset look-ups), task start-up, reading, Arrow conversion, all included.
   Two warm-up reads come first and are not counted: a small topic (starts Spark's Python
   workers) and the dataset itself (a cold JVM is slower by about half: class loading and
   JIT; it is printed as the "cold read").

It prints both rates, Spark's rate per core (rate / N) and the ratio
``spark per core / getmany``; the target of the Spark source is at least 0.6. On Linux it
also prints the CPU time each side spent per record during the Spark read (from
``/proc``): Spark's Python workers (the source's tasks: fetch, decode, Arrow), the JVM
(Arrow to rows, the noop sink), and this process (the embedded brokers, the driver).

Usage::

    .venv-bench/bin/python benchmarks/spark_read.py               # 2M records, 3 runs
    .venv-bench/bin/python benchmarks/spark_read.py --records 500000 --repeat 1
    .venv-bench/bin/python benchmarks/spark_read.py --cores 1
    .venv-bench/bin/python benchmarks/spark_read.py --shape events --records 300000
    .venv-bench/bin/python benchmarks/spark_read.py --shape events --include-headers ...

Results go to ``benchmarks/results/spark_read.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from consume import (
    EVENT_SIZE,
    RESULTS,
    Dataset,
    event_record,
    log,
    produce_dataset,
    run_child,
)

RACKS = ("az-a", "az-b", "az-c")
TARGET = 0.6  # issue 31: the source reads at >= 0.6x getmany per core


def cpu_by_side() -> dict[str, float] | None:
    """CPU seconds so far of this process (brokers, driver), of the JVMs it started and of
    their Python children (Spark's workers); ``None`` where ``/proc`` is missing."""
    if not os.path.isdir("/proc/self/task"):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    procs: dict[int, tuple[int, float, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                exe = f.read().split(b"\0", 1)[0].decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        # ppid, utime + stime (and those of waited-for children, the workers that ended)
        cpu = sum(int(v) for v in fields[11:15]) / tick
        procs[int(name)] = (int(fields[1]), cpu, os.path.basename(exe))
    me = os.getpid()
    out = {"python_workers": 0.0, "jvm": 0.0, "this_process": procs.get(me, (0, 0.0, ""))[1]}
    for pid, (ppid, cpu, exe) in procs.items():
        up = ppid
        while up > 1 and up != me and up in procs:
            up = procs[up][0]
        if up != me or pid == me:
            continue
        out["jvm" if exe == "java" else "python_workers"] += cpu
    return out


def getmany_rate(cluster: Any, ds: Dataset, highs: list[int], total_bytes: int) -> dict[str, Any]:
    spec = {
        "client": "rackafka",
        "library": "rackafka",
        "api": "getmany",
        "extension": None,
        "rack": None,
        "bootstrap": cluster.bootstrap_servers,
        "topic": ds.topic,
        "partitions": ds.partitions,
        "value_size": ds.value_size,
        "shape": ds.shape,
        "total_bytes": total_bytes,
        "compression": ds.compression,
        "total": ds.records,
        "target": ds.records,
        "high": highs,
        "max_records": ds.max_records,
    }
    return run_child(spec, {}, timeout=600)


def spark_session(cores: int) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import rackafka.spark
    from rackafka.testing import loopback_spark_conf

    builder = SparkSession.builder
    for key, value in loopback_spark_conf().items():  # the driver on 127.0.0.1 only
        builder = builder.config(key, value)
    spark = (
        builder.master(f"local[{cores}]")
        .appName("rackafka-spark-read-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rackafka.spark.register(spark)
    return spark


def spark_read(
    spark: Any, cluster: Any, topic: str, metrics: Path | None = None, headers: bool = False
) -> float:
    reader = (
        spark.read.format("rackafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
        .option("subscribe", topic)
        .option("includeHeaders", str(headers).lower())
    )
    if metrics is not None:
        reader = reader.option("rackafka.metricsPath", str(metrics))
    started = time.perf_counter()
    reader.load().write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def cpu_per_record(before: dict[str, float] | None, records: int) -> dict[str, float]:
    """Microseconds of CPU per record of each side since ``before``."""
    after = cpu_by_side()
    if before is None or after is None:
        return {}
    return {k: (after[k] - before[k]) / records * 1e6 for k in after}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=64)
    parser.add_argument("--compression", default="none")
    parser.add_argument(
        "--shape",
        choices=("fixed", "events"),
        default="fixed",
        help="fixed: values of --value-size, no key, no headers; events: the events records "
        "of consume.py (keys, 60-1200 B values, two headers; at most ~300,000 records fit "
        "the mock's retention in 64 partitions)",
    )
    parser.add_argument(
        "--include-headers", action="store_true", help="the source's includeHeaders option"
    )
    parser.add_argument("--cores", type=int, default=2, help="Spark's local[N]")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    from rackafka.spark import rack_summary, read_task_reports
    from rackafka.testing import EmbeddedCluster

    per_partition = -(-args.records // args.partitions)
    events = args.shape == "events"
    ds = Dataset(
        "spark-events" if events else f"spark-{args.value_size}B",
        EVENT_SIZE if events else args.value_size,
        args.compression,
        args.partitions,
        per_partition,
        0,
        0,
        args.shape,
    )
    ds.check()
    total_bytes = sum(len(event_record(n)[1]) for n in range(ds.records)) if events else 0
    results: dict[str, Any] = {
        "records": ds.records,
        "cores": args.cores,
        "shape": args.shape,
        "include_headers": args.include_headers,
        "runs": [],
    }
    with EmbeddedCluster(brokers=3, racks=RACKS) as cluster:
        t = time.monotonic()
        highs = produce_dataset(cluster, ds)
        log(f"produced {ds.records:,} records of {ds.value_size} B ({time.monotonic() - t:.1f}s)")
        cluster.create_topic("warm-up", args.cores)
        cluster.produce("warm-up", 1000, partition="spread")

        spark = spark_session(args.cores)
        try:
            spark_read(spark, cluster, "warm-up")
            # The first read of the dataset runs on a cold JVM (classes loading, JIT): it is
            # reported apart, as in a long-running pipeline it is paid once.
            cold = spark_read(spark, cluster, ds.topic, headers=args.include_headers)
            results["cold_spark_seconds"] = cold
            log(f"cold read (not counted): {ds.records / cold:,.0f} msgs/s in {cold:.2f}s")
            for run in range(args.repeat):
                base = getmany_rate(cluster, ds, highs, total_bytes)
                if "error" in base:
                    raise SystemExit(f"getmany run failed: {base['error']}")
                metrics = args.out / f"spark-tasks-{run}"
                if metrics.exists():
                    for f in metrics.iterdir():
                        f.unlink()
                cpu_before = cpu_by_side()
                seconds = spark_read(spark, cluster, ds.topic, metrics, args.include_headers)
                cpu_us = cpu_per_record(cpu_before, ds.records)
                summary = rack_summary(read_task_reports(metrics))
                if summary["records"] != ds.records:
                    raise SystemExit(f"spark read {summary['records']} records, not {ds.records}")
                rate = ds.records / seconds
                entry = {
                    "getmany_msgs_per_s": base["msgs_per_s"],
                    "getmany_problems": base["problems"],
                    "spark_seconds": seconds,
                    "spark_msgs_per_s": rate,
                    "spark_msgs_per_s_per_core": rate / args.cores,
                    "ratio_per_core": rate / args.cores / base["msgs_per_s"],
                    "task_seconds": sum(r.seconds for r in read_task_reports(metrics)),
                    "getmany_cpu_s": base["cpu_s"],
                    "spark_cpu_us_per_record": cpu_us,
                }
                results["runs"].append(entry)
                log(
                    f"[{run + 1}/{args.repeat}] getmany {base['msgs_per_s']:,.0f} msgs/s; "
                    f"spark local[{args.cores}] {rate:,.0f} msgs/s in {seconds:.2f}s "
                    f"({rate / args.cores:,.0f} per core) = "
                    f"{entry['ratio_per_core']:.2f}x getmany per core"
                    + (
                        "; CPU us/record: "
                        + ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in cpu_us.items())
                        if cpu_us
                        else ""
                    )
                )
        finally:
            spark.stop()

    def med(key: str) -> float:
        return statistics.median(r[key] for r in results["runs"])

    results["median"] = {
        k: med(k)
        for k in (
            "getmany_msgs_per_s",
            "spark_msgs_per_s",
            "spark_msgs_per_s_per_core",
            "ratio_per_core",
        )
    }
    sides = results["runs"][0]["spark_cpu_us_per_record"].keys()
    cpu = {
        k: statistics.median(r["spark_cpu_us_per_record"][k] for r in results["runs"])
        for k in sides
    }
    results["median"]["spark_cpu_us_per_record"] = cpu
    m = results["median"]
    cpu_line = ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in cpu.items())
    print(
        f"{ds.records:,} records "
        + ("(events" if events else f"(of {ds.value_size} B")
        + (", includeHeaders" if args.include_headers else "")
        + f"), {ds.partitions} partitions, median of {args.repeat}:\n"
        f"  rackafka getmany (1 process):  {m['getmany_msgs_per_s']:>12,.0f} msgs/s\n"
        f"  spark local[{args.cores}] rackafka source: {m['spark_msgs_per_s']:>10,.0f} msgs/s "
        f"({m['spark_msgs_per_s_per_core']:,.0f} per core)\n"
        f"  spark per core / getmany:      {m['ratio_per_core']:>12.2f}x  (target >= {TARGET})\n"
        + (f"  spark CPU us/record:           {cpu_line}\n" if cpu else "")
        + f"  (cold first read, not counted: {ds.records / results['cold_spark_seconds']:,.0f} "
        "msgs/s)"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "spark_read.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
