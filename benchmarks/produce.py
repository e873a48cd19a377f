"""End-to-end producer benchmark: rackafka against aiokafka (C extensions) and confluent-kafka.

One embedded cluster (3 brokers in racks az-a, az-b, az-c; librdkafka's mock brokers, see
``docs/testing.rst``) runs in this process. Every measurement runs in a fresh child process
(same Python): the client produces a dataset into a fresh 12-partition topic and waits until
every record is acknowledged. Reported: records/s and MB/s from the first ``send`` to the
last acknowledgement, and CPU seconds of the child (user + system, all threads). The median
of ``--repeat`` runs is shown, with the ratio to aiokafka-C.

Every client gets the same settings: ``linger_ms=5``, batches of at most 64 KiB
(``max_batch_size`` / ``batch.size``), the given ``acks`` and compression. The asyncio clients
``await send()`` each record and gather the futures every 10,000 records (the way an
application that checks delivery writes it); confluent-kafka calls ``produce()`` and
``poll(0)``, then ``flush()``.

Datasets (``--datasets``):

==========  ==============================================================================
``100B``    keyless 100-byte values
``10KB``    keyless 10 KB values
``events``  keys ``user-NNNNNN``; values of 60-400 B, one in ten 400-1200 B; headers
            ``traceparent`` and ``content-type`` (a realistic event stream)
==========  ==============================================================================

Each runs with acks=1 and acks=all, and with no compression and lz4 (``--acks``,
``--compression``).

Usage::

    python benchmarks/produce.py [--quick] [--repeat N] [--clients a,b] [--datasets x,y]

Results: a table on stdout and ``benchmarks/results/produce.json``. A run updates that file
row by row: a case it measures (dataset, acks, compression) replaces that case's row, and
the rows of the cases it does not measure are kept, so narrowed runs add up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CLIENTS = ("rackafka", "aiokafka-c", "confluent")
DATASETS = {"100B": (200_000, 20_000), "10KB": (20_000, 3_000), "events": (100_000, 20_000)}
BATCH_BYTES = 65536
LINGER_MS = 5


def make_records(
    name: str, count: int
) -> list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]]:
    """The dataset's ``(key, value, headers)`` records (deterministic)."""
    rng = random.Random(42)
    corpus = bytes(rng.randrange(32, 127) for _ in range(1 << 16))
    out: list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]] = []
    if name == "100B":
        for i in range(count):
            start = (i * 131) % (len(corpus) - 100)
            out.append((None, corpus[start : start + 100], []))
    elif name == "10KB":
        for i in range(count):
            start = (i * 977) % (len(corpus) - 10_000)
            out.append((None, corpus[start : start + 10_000], []))
    else:
        for i in range(count):
            size = rng.randrange(400, 1200) if i % 10 == 9 else rng.randrange(60, 400)
            start = rng.randrange(0, len(corpus) - size)
            headers = [
                (
                    "traceparent",
                    f"00-{rng.getrandbits(128):032x}-{rng.getrandbits(64):016x}-01".encode(),
                ),
                ("content-type", b"application/json"),
            ]
            key = f"user-{rng.randrange(1_000_000):06d}".encode()
            out.append((key, corpus[start : start + size], headers))
    return out


async def run_asyncio(spec: dict[str, Any], records: list[Any]) -> float:
    if spec["client"] == "rackafka":
        from rackafka import AIOKafkaProducer
    else:
        from aiokafka import AIOKafkaProducer  # type: ignore[no-redef]
    producer = AIOKafkaProducer(
        bootstrap_servers=spec["bootstrap"],
        acks=spec["acks"],
        compression_type=spec["compression"],
        linger_ms=LINGER_MS,
        max_batch_size=BATCH_BYTES,
    )
    await producer.start()
    topic = spec["topic"]
    try:
        await producer.partitions_for(topic)
        start = time.perf_counter()
        futures = []
        send = producer.send
        for key, value, headers in records:
            futures.append(await send(topic, value, key=key, headers=headers or None))
            if len(futures) >= 10_000:
                await asyncio.gather(*futures)
                futures = []
        await asyncio.gather(*futures)
        return time.perf_counter() - start
    finally:
        await producer.stop()


def run_confluent(spec: dict[str, Any], records: list[Any]) -> float:
    from confluent_kafka import Producer

    errors: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    producer = Producer(
        {
            "bootstrap.servers": spec["bootstrap"],
            "acks": "all" if spec["acks"] == "all" else str(spec["acks"]),
            "compression.type": spec["compression"] or "none",
            "linger.ms": LINGER_MS,
            "batch.size": BATCH_BYTES,
        }
    )
    topic = spec["topic"]
    producer.list_topics(topic, timeout=10)
    start = time.perf_counter()
    for i, (key, value, headers) in enumerate(records):
        while True:
            try:
                producer.produce(topic, value, key=key, headers=headers or None, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.005)
        if i % 1000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("confluent-kafka did not deliver every record")
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"delivery errors: {errors[:3]}")
    return elapsed


def child(spec: dict[str, Any]) -> dict[str, Any]:
    records = make_records(spec["dataset"], spec["count"])
    nbytes = sum(len(v) + len(k or b"") for k, v, _ in records)
    before = resource.getrusage(resource.RUSAGE_SELF)
    if spec["client"] == "confluent":
        elapsed = run_confluent(spec, records)
    else:
        elapsed = asyncio.run(run_asyncio(spec, records))
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "seconds": elapsed,
        "records_per_s": len(records) / elapsed,
        "mb_per_s": nbytes / elapsed / 1e6,
        "cpu_s": cpu,
    }


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ)
    src = str(HERE.parent / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def available(client: str) -> bool:
    module = {"rackafka": "rackafka", "aiokafka-c": "aiokafka", "confluent": "confluent_kafka"}
    try:
        __import__(module[client])
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small datasets, 1 repeat")
    parser.add_argument("--repeat", type=int, default=None, help="runs per measurement (3)")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--acks", default="1,all")
    parser.add_argument("--compression", default="none,lz4")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    from rackafka.testing import EmbeddedCluster

    repeat = args.repeat or (1 if args.quick else 3)
    clients = [c for c in args.clients.split(",") if c]
    skipped = [c for c in clients if not available(c)]
    clients = [c for c in clients if c not in skipped]
    for c in skipped:
        print(f"# {c}: skipped (package not installed)")
    out_file = args.out / "produce.json"
    results = load_results(out_file)
    with EmbeddedCluster(brokers=3, racks=("az-a", "az-b", "az-c")) as cluster:
        for ds in args.datasets.split(","):
            count = DATASETS[ds][1 if args.quick else 0]
            for acks in args.acks.split(","):
                for comp in args.compression.split(","):
                    compression = None if comp == "none" else comp
                    row: dict[str, Any] = {
                        "dataset": ds,
                        "records": count,
                        "acks": acks,
                        "compression": comp,
                    }
                    for client in clients:
                        runs = []
                        for _ in range(repeat):
                            topic = f"bench-{uuid.uuid4().hex[:8]}"
                            cluster.create_topic(topic, 12)
                            spec = {
                                "client": client,
                                "bootstrap": cluster.bootstrap_servers,
                                "topic": topic,
                                "dataset": ds,
                                "count": count,
                                "acks": "all" if acks == "all" else int(acks),
                                "compression": compression,
                            }
                            runs.append(run_child(spec))
                        ok = [r for r in runs if "error" not in r]
                        if not ok:
                            row[client] = {"error": runs[0]["error"]}
                            continue
                        row[client] = {
                            key: statistics.median(r[key] for r in ok)
                            for key in ("records_per_s", "mb_per_s", "cpu_s", "seconds")
                        }
                    results = merge_rows(results, [row])
                    print_row(row, clients)
                    args.out.mkdir(parents=True, exist_ok=True)
                    out_file.write_text(json.dumps(results, indent=2))
    return 0


def row_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """The case a result row measures: ``(dataset, acks, compression)``."""
    return (str(row.get("dataset")), str(row.get("acks")), str(row.get("compression")))


def merge_rows(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``old`` with each row of ``new`` replacing the row of the same case, in place;
    rows of new cases come last."""
    merged = list(old)
    index = {row_key(row): i for i, row in enumerate(merged)}
    for row in new:
        key = row_key(row)
        if key in index:
            merged[index[key]] = row
        else:
            index[key] = len(merged)
            merged.append(row)
    return merged


def load_results(path: Path) -> list[dict[str, Any]]:
    """The rows of an earlier run's ``produce.json`` (none if it is missing or unreadable)."""
    try:
        rows = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        print(f"# {path}: unreadable ({exc}); it will be replaced", file=sys.stderr)
        return []
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        print(f"# {path}: not a list of rows; it will be replaced", file=sys.stderr)
        return []
    return rows


def print_row(row: dict[str, Any], clients: list[str]) -> None:
    base = row.get("aiokafka-c", {}).get("records_per_s")
    parts = [
        f"{row['dataset']:>6} acks={row['acks']:<3} {row['compression']:<4} n={row['records']}"
    ]
    for client in clients:
        r = row.get(client, {})
        if "records_per_s" not in r:
            parts.append(f"{client}: error {r.get('error')}")
            continue
        ratio = f" ({r['records_per_s'] / base:.2f}x)" if base else ""
        parts.append(
            f"{client}: {r['records_per_s']:>9,.0f} rec/s {r['mb_per_s']:6.1f} MB/s "
            f"cpu {r['cpu_s']:.2f}s{ratio}"
        )
    print(" | ".join(parts), flush=True)


if __name__ == "__main__":
    sys.exit(main())
