"""End-to-end producer benchmark: rackafka against aiokafka (C extensions) and confluent-kafka.

One cluster of 3 brokers in racks az-a, az-b, az-c serves the run: librdkafka's mock
brokers in this process (``--engine mock``, the default; see ``docs/testing.rst``) or real
Apache Kafka brokers (``--engine kafka``: three JVMs on 127.0.0.1, replication factor 3, as
in ``consume.py``). Every measurement runs in a fresh child process
(same Python): the client produces a dataset into a fresh 12-partition topic and waits until
every record is acknowledged. Reported: records/s and MB/s from the first ``send`` to the
last acknowledgement, and CPU seconds of the child (user + system, all threads). The median
of ``--repeat`` runs is shown, with the ratios to aiokafka-C and to confluent-tuned.

Every client but the tuned ones (below) gets the same settings: ``linger_ms=5``,
batches of at most 64 KiB (``max_batch_size`` / ``batch.size``), the given ``acks`` and
compression. The asyncio clients
``await send()`` each record and gather the futures every 10,000 records (the way an
application that checks delivery writes it); confluent-kafka calls ``produce()`` and
``poll(0)``, then ``flush()``.

``rackafka-tuned`` is rackafka's ``send()`` with confluent-tuned's batching
(:data:`RACKAFKA_TUNED`: ``linger_ms=100``, ``max_batch_size=1_000_000``, librdkafka's
``linger.ms`` and ``batch.size`` below) and confluent-kafka's loop: ``send()`` every
record, then ``flush()`` and await the futures (a gather every 10,000 records would wait
for the lingering batches each time), so that the two tuned clients compare.

``rackafka-batch`` is rackafka's batch API, the way aiokafka documents it, with the same
tuned batching (a batch holds up to ``max_batch_size`` bytes):
``create_batch()``, ``append()`` records until it returns ``None`` (the batch is full),
``send_batch()`` the batch to the next partition (round-robin over the topic's
partitions, whatever the key), then await the batches' futures. Its ratios are shown
too (``batch akC``, ``batch cfT``; ``tuned akC``, ``tuned cfT`` for rackafka-tuned). The
latency suite leaves both out (one record at a time is ``send()``'s case, with the suite's
own settings), and the batch suite leaves rackafka-tuned out.

``confluent-tuned`` is confluent-kafka set up for throughput as librdkafka documents it
(:data:`CONFLUENT_TUNED`; same ``produce()``/``poll(0)``/``flush()`` loop, the run's
``acks`` and compression): librdkafka's introduction ("High throughput") says batching is
the key, that the default ``linger.ms=5`` is not suited to high throughput and recommends
more than 50 ms (throughput levelling out around 100-1000 ms), batches bounded by
``batch.num.messages`` and ``batch.size``. So: ``linger.ms`` 100, ``batch.size`` 1,000,000
(librdkafka's default; the request limit ``message.max.bytes`` is 1,000,000 too),
``batch.num.messages`` 100,000 (so that ``batch.size``, not the default 10,000 messages,
bounds a batch of small records) and ``queue.buffering.max.messages`` 1,000,000 (10x: the
application is not pushed back while batches linger; ``queue.buffering.max.kbytes`` stays at
its 1 GiB default; ``flush()`` overrides ``linger.ms``, so the last batches do not wait).
Confluent's "Optimize clients for throughput" guide agrees (``batch.size`` 100,000-200,000
or more, ``linger.ms`` 10-100; its lz4 and acks=1 are the run's choice here). ``rackafka``
and aiokafka keep the common settings above. The table shows each rate relative to aiokafka-C
(``akC``) and to confluent-tuned (``cfT``); ``produce.json`` keeps them per client as
``vs_aiokafka_c`` and ``vs_confluent_tuned``. The latency and batch suites, which set
``linger_ms`` and batch sizes themselves, leave confluent-tuned out.

Datasets (``--datasets``):

==========  ==============================================================================
``100B``    keyless 100-byte values
``10KB``    keyless 10 KB values
``events``  keys ``user-NNNNNN``; values of 60-400 B, one in ten 400-1200 B; headers
            ``traceparent`` and ``content-type`` (a realistic event stream)
==========  ==============================================================================

Each runs with acks=1 and acks=all, and with no compression and lz4 (``--acks``,
``--compression``).

Two more suites (``--suites``; the default is ``throughput``, the one above):

``latency``
    Latency from ``send()`` (``produce()``) to the acknowledgement at a low rate: one
    100-byte keyless record every 10 ms (after 20 unmeasured warm-up records), acks=1, for
    ``linger_ms`` 0, 5 and 50 and batches of at most 16 KiB and 1 MiB. Reported: the p50
    and p99 in milliseconds (medians over the runs). The asyncio clients note the time in
    the future's done callback, confluent-kafka in its delivery callback while ``poll()``
    waits for the next send. Also reported: the p99 of how late the sends were against
    their schedule (a busy machine delays the process, and the latencies with it).
``batch``
    The 100B throughput case (acks=1, no compression) with each client's default
    ``linger_ms``/``max_batch_size`` (``linger.ms``/``batch.size``), then with 1 MiB
    batches and ``linger_ms`` 5 and 50: the settings throughput-minded users choose.

Usage::

    python benchmarks/produce.py [--engine mock|kafka] [--quick] [--repeat N]
        [--clients a,b] [--datasets x,y] [--suites throughput,latency,batch]
        [--baseline OTHER_CHECKOUT/src]

The clients take turns, run by run, so that a change of the machine's load falls on each of
them. ``--baseline`` also runs each rackafka client with rackafka from another source tree
(``<client>@base`` in the rows and the table): before and after a change in one run.

Results: a table on stdout and ``benchmarks/results/produce.json``. A run updates that file
row by row: a case it measures (engine, suite, dataset, acks, compression, linger and batch
size) replaces that case's row, and the rows of the cases it does not measure are kept, so
narrowed runs add up and the mock's rows and Kafka's do not overwrite each other. Each row
notes the load average when it was measured (``load_average``: 1, 5, 15 minutes).
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
sys.path.insert(0, str(HERE))

from consume import ENGINES, load_average, open_cluster, rackafka_origin  # noqa: E402

RESULTS = HERE / "results"
CLIENTS = (
    "rackafka",
    "rackafka-tuned",
    "rackafka-batch",
    "aiokafka-c",
    "confluent",
    "confluent-tuned",
)
#: The clients whose ratios the summary table shows (rackafka's three ways), with the
#: prefix of their ratio columns.
#: The suffix of a client run from ``--baseline``'s source tree.
BASE = "@base"
OURS = {"rackafka": "vs", "rackafka-tuned": "tuned", "rackafka-batch": "batch"}
#: librdkafka producer settings of ``confluent-tuned`` (see the module docstring).
CONFLUENT_TUNED: dict[str, Any] = {
    "linger.ms": 100,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "queue.buffering.max.messages": 1_000_000,
}
#: The batching of ``rackafka-tuned`` and ``rackafka-batch`` in the throughput suite:
#: confluent-tuned's (``linger.ms``, ``batch.size``) with rackafka's names.
RACKAFKA_TUNED: dict[str, Any] = {"linger_ms": 100, "max_batch_size": 1_000_000}
#: The clients whose throughput runs take :data:`RACKAFKA_TUNED`.
TUNED_CLIENTS = ("rackafka-tuned", "rackafka-batch")
#: Clients left out of a suite: the tuned clients choose their own batching, and the
#: latency of one record at a time is ``send()``'s, not the batch API's.
SKIPPED = {
    "latency": ("confluent-tuned", "rackafka-tuned", "rackafka-batch"),
    "batch": ("confluent-tuned", "rackafka-tuned"),
}
REFERENCE = "aiokafka-c"
TUNED_REFERENCE = "confluent-tuned"
DATASETS = {"100B": (200_000, 20_000), "10KB": (20_000, 3_000), "events": (100_000, 20_000)}
BATCH_BYTES = 65536
LINGER_MS = 5
SUITES = ("throughput", "latency", "batch")
#: The latency suite: ``linger_ms`` values, batch sizes, records and the pause between them.
LATENCY_LINGERS = (0, 5, 50)
LATENCY_BATCHES = (16384, 1048576)
LATENCY_RECORDS = (300, 100)  # full, --quick
LATENCY_WARMUP = 20
LATENCY_INTERVAL = 0.010
#: How late each send of the latency suite was against its schedule (seconds): a busy
#: machine delays the process, and the latencies with it.
LAGS: list[float] = []
#: The batch suite: ``(linger_ms, max_batch_size)``; ``None`` keeps the client's default.
BIG_BATCH_SETTINGS = ((None, None), (5, 1048576), (50, 1048576))


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


async def run_asyncio(spec: dict[str, Any], records: list[Any]) -> float | list[float]:
    if spec["client"].startswith("rackafka"):
        from rackafka import AIOKafkaProducer
    else:
        from aiokafka import AIOKafkaProducer  # type: ignore[no-redef]
    producer = AIOKafkaProducer(
        bootstrap_servers=spec["bootstrap"],
        acks=spec["acks"],
        compression_type=spec["compression"],
        **_asyncio_batching(spec),
    )
    await producer.start()
    topic = spec["topic"]
    try:
        await producer.partitions_for(topic)
        if spec.get("suite") == "latency":
            return await _asyncio_latencies(producer, topic, spec, records)
        if spec["client"] == "rackafka-batch":
            return await _send_batches(producer, topic, records)
        if spec["client"] == "rackafka-tuned":
            return await _send_then_flush(producer, topic, records)
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


async def _send_then_flush(producer: Any, topic: str, records: list[Any]) -> float:
    """``send()`` every record, then ``flush()`` and await the futures: confluent-kafka's
    ``produce()``/``flush()`` loop (a gather every 10,000 records would wait for the
    lingering batches each time). Returns the seconds from the first send to the last
    acknowledgement."""
    start = time.perf_counter()
    send = producer.send
    futures = [
        await send(topic, value, key=key, headers=headers or None)
        for key, value, headers in records
    ]
    await producer.flush()
    await asyncio.gather(*futures)
    return time.perf_counter() - start


async def _send_batches(producer: Any, topic: str, records: list[Any]) -> float:
    """The batch API as aiokafka documents it: fill a batch with ``create_batch()`` /
    ``append()`` until it is full (``append`` returns ``None``), ``send_batch()`` it to
    the next partition (round-robin), and await the batches' futures at the end.
    Returns the seconds from the first append to the last acknowledgement."""
    partitions = sorted(await producer.partitions_for(topic))
    start = time.perf_counter()
    futures = []
    turn = 0
    batch = producer.create_batch()
    append = batch.append
    for key, value, headers in records:
        if append(timestamp=None, key=key, value=value, headers=headers) is None:
            partition = partitions[turn % len(partitions)]
            turn += 1
            futures.append(await producer.send_batch(batch, topic, partition=partition))
            batch = producer.create_batch()
            append = batch.append
            if append(timestamp=None, key=key, value=value, headers=headers) is None:
                raise RuntimeError("a record larger than an empty batch")
    if batch.record_count():
        futures.append(
            await producer.send_batch(batch, topic, partition=partitions[turn % len(partitions)])
        )
    await asyncio.gather(*futures)
    return time.perf_counter() - start


def _asyncio_batching(spec: dict[str, Any]) -> dict[str, Any]:
    """``linger_ms``/``max_batch_size`` of the spec (absent: the client's defaults);
    :data:`RACKAFKA_TUNED` for the tuned clients' throughput runs."""
    if spec.get("client") in TUNED_CLIENTS and spec.get("suite", "throughput") == "throughput":
        return dict(RACKAFKA_TUNED)
    out: dict[str, Any] = {}
    if spec.get("linger_ms") is not None:
        out["linger_ms"] = spec["linger_ms"]
    if spec.get("max_batch_size") is not None:
        out["max_batch_size"] = spec["max_batch_size"]
    return out


async def _asyncio_latencies(
    producer: Any, topic: str, spec: dict[str, Any], records: list[Any]
) -> list[float]:
    """Send one record every LATENCY_INTERVAL; seconds from send() to acknowledgement of
    each measured record (the warm-up records are not measured)."""
    latencies: list[float] = []
    futures = []
    clock = time.perf_counter
    start = clock()
    for i, (key, value, _headers) in enumerate(records):
        pause = start + i * LATENCY_INTERVAL - clock()
        if pause > 0:
            await asyncio.sleep(pause)
        sent = clock()
        LAGS.append(sent - start - i * LATENCY_INTERVAL)
        fut = await producer.send(topic, value, key=key)
        if i >= LATENCY_WARMUP:
            fut.add_done_callback(lambda _f, sent=sent: latencies.append(clock() - sent))
        futures.append(fut)
    await asyncio.gather(*futures)
    return latencies


def _confluent_config(spec: dict[str, Any]) -> dict[str, Any]:
    """librdkafka's settings: the run's for ``confluent``, :data:`CONFLUENT_TUNED` for
    ``confluent-tuned`` (acks and compression are the run's for both)."""
    conf: dict[str, Any] = {
        "bootstrap.servers": spec["bootstrap"],
        "acks": "all" if spec["acks"] == "all" else str(spec["acks"]),
        "compression.type": spec["compression"] or "none",
    }
    if spec.get("client") == "confluent-tuned":
        conf.update(CONFLUENT_TUNED)
        return conf
    if spec.get("linger_ms") is not None:
        conf["linger.ms"] = spec["linger_ms"]
    if spec.get("max_batch_size") is not None:
        conf["batch.size"] = spec["max_batch_size"]
    return conf


def _confluent_latencies(producer: Any, topic: str, records: list[Any]) -> list[float]:
    """As :func:`_asyncio_latencies`, timed in the delivery callback; ``poll()`` waits for
    callbacks until the next send is due, so they run as soon as librdkafka has them."""
    latencies: list[float] = []
    errors: list[Any] = []
    clock = time.perf_counter
    start = clock()
    for i, (key, value, _headers) in enumerate(records):
        while (pause := start + i * LATENCY_INTERVAL - clock()) > 0:
            producer.poll(pause)
        sent = clock()
        LAGS.append(sent - start - i * LATENCY_INTERVAL)

        def report(err: Any, _msg: Any, sent: float = sent, measured: bool = i >= LATENCY_WARMUP):
            if err is not None:
                errors.append(err)
            elif measured:
                latencies.append(clock() - sent)

        producer.produce(topic, value, key=key, on_delivery=report)
    if producer.flush(120) != 0:
        raise RuntimeError("confluent-kafka did not deliver every record")
    if errors:
        raise RuntimeError(f"delivery errors: {errors[:3]}")
    return latencies


def run_confluent(spec: dict[str, Any], records: list[Any]) -> float | list[float]:
    from confluent_kafka import Producer

    errors: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    producer = Producer(_confluent_config(spec))
    topic = spec["topic"]
    producer.list_topics(topic, timeout=10)
    if spec.get("suite") == "latency":
        return _confluent_latencies(producer, topic, records)
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
    if spec["client"].startswith("confluent"):
        outcome = run_confluent(spec, records)
    else:
        outcome = asyncio.run(run_asyncio(spec, records))
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if isinstance(outcome, list):  # the latency suite
        if len(outcome) != len(records) - LATENCY_WARMUP:
            raise RuntimeError(f"{len(outcome)} latencies for {len(records)} records")
        cuts = statistics.quantiles(outcome, n=100, method="inclusive")
        lag = statistics.quantiles(LAGS, n=100, method="inclusive")[98]
        return {
            "p50_ms": cuts[49] * 1000,
            "p99_ms": cuts[98] * 1000,
            "send_lag_p99_ms": lag * 1000,
            "cpu_s": cpu,
        }
    elapsed = outcome
    return {
        "seconds": elapsed,
        "records_per_s": len(records) / elapsed,
        "mb_per_s": nbytes / elapsed / 1e6,
        "cpu_s": cpu,
    }


def run_child(spec: dict[str, Any], src: Path | None = None) -> dict[str, Any]:
    """Run one measurement in a new interpreter, with rackafka from ``src`` (default:
    this tree's ``src/``)."""
    env = dict(os.environ)
    src = str(src or HERE.parent / "src")
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
    module = {
        "rackafka": "rackafka",
        "rackafka-tuned": "rackafka",
        "rackafka-batch": "rackafka",
        "aiokafka-c": "aiokafka",
        "confluent": "confluent_kafka",
        "confluent-tuned": "confluent_kafka",
    }
    try:
        __import__(module[client])
    except ImportError:
        return False
    return True


def _small_records_spec(
    suite: str, count: int, linger: int | None, batch: int | None
) -> dict[str, Any]:
    """The child's spec of a latency or batch run: 100 B records, acks=1, uncompressed."""
    return {
        "suite": suite,
        "dataset": "100B",
        "count": count,
        "acks": 1,
        "compression": None,
        "linger_ms": linger,
        "max_batch_size": batch,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="mock",
        help="the brokers: librdkafka's mock (default) or real Apache Kafka",
    )
    parser.add_argument("--quick", action="store_true", help="small datasets, 1 repeat")
    parser.add_argument("--repeat", type=int, default=None, help="runs per measurement (3)")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--acks", default="1,all")
    parser.add_argument("--compression", default="none,lz4")
    parser.add_argument("--suites", default="throughput", help=f"of {','.join(SUITES)}")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another rackafka source tree (its src/ folder): each rackafka client runs "
        "from it too, as <client>@base, taking turns with the others (before/after in one "
        "run)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    suites = [x for x in args.suites.split(",") if x]
    unknown = [x for x in suites if x not in SUITES]
    if unknown:
        parser.error(f"unknown suites {unknown}; choose among {', '.join(SUITES)}")
    repeat = args.repeat or (1 if args.quick else 3)
    clients = [c for c in args.clients.split(",") if c]
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        parser.error(f"unknown clients {unknown}; choose among {', '.join(CLIENTS)}")
    skipped = [c for c in clients if not available(c)]
    clients = [c for c in clients if c not in skipped]
    for c in skipped:
        print(f"# {c}: skipped (package not installed)")
    if args.baseline is not None:
        clients += [f"{c}{BASE}" for c in clients if c.startswith("rackafka")]
    out_file = args.out / "produce.json"
    results = load_results(out_file)

    measured: list[dict[str, Any]] = []

    def measure(cluster: Any, row: dict[str, Any], spec: dict[str, Any]) -> None:
        """Run every client ``repeat`` times on ``spec``; medians into ``row``; save."""
        nonlocal results
        skipped = SKIPPED.get(spec.get("suite", "throughput"), ())
        row_clients = [c for c in clients if c not in skipped]
        # The clients take turns, run by run: a change of the machine's load (other
        # processes) falls on every client, not on the one whose runs it met.
        all_runs: dict[str, list[dict[str, Any]]] = {client: [] for client in row_clients}
        for _ in range(repeat):
            for client in row_clients:
                topic = f"bench-{uuid.uuid4().hex[:8]}"
                cluster.create_topic(topic, 12)
                name, base, _ = client.partition(BASE)
                all_runs[client].append(
                    run_child(
                        {
                            **spec,
                            "client": name,
                            "bootstrap": cluster.bootstrap_servers,
                            "topic": topic,
                        },
                        src=args.baseline if base else None,
                    )
                )
        for client, runs in all_runs.items():
            ok = [r for r in runs if "error" not in r]
            if not ok:
                row[client] = {"error": runs[0]["error"]}
                continue
            row[client] = {key: statistics.median(r[key] for r in ok) for key in ok[0]}
        add_ratios(row)
        row["load_average"] = load_average()
        results = merge_rows(results, [row])
        measured.append(row)
        print_row(row, row_clients)
        args.out.mkdir(parents=True, exist_ok=True)
        out_file.write_text(json.dumps(results, indent=2))

    print(f"# engine {args.engine}; {rackafka_origin()}; load average {load_average()}", flush=True)
    with open_cluster(args.engine) as cluster:
        if "throughput" in suites:
            for ds in args.datasets.split(","):
                count = DATASETS[ds][1 if args.quick else 0]
                for acks in args.acks.split(","):
                    for comp in args.compression.split(","):
                        row: dict[str, Any] = {
                            "engine": args.engine,
                            "dataset": ds,
                            "records": count,
                            "acks": acks,
                            "compression": comp,
                        }
                        spec = {
                            "dataset": ds,
                            "count": count,
                            "acks": "all" if acks == "all" else int(acks),
                            "compression": None if comp == "none" else comp,
                            "linger_ms": LINGER_MS,
                            "max_batch_size": BATCH_BYTES,
                        }
                        measure(cluster, row, spec)
        if "latency" in suites:
            count = LATENCY_RECORDS[1 if args.quick else 0] + LATENCY_WARMUP
            for batch in LATENCY_BATCHES:
                for linger in LATENCY_LINGERS:
                    row = {
                        "engine": args.engine,
                        "suite": "latency",
                        "dataset": "100B",
                        "records": count - LATENCY_WARMUP,
                        "acks": "1",
                        "compression": "none",
                        "linger_ms": linger,
                        "max_batch_size": batch,
                    }
                    spec = _small_records_spec("latency", count, linger, batch)
                    measure(cluster, row, spec)
        if "batch" in suites:
            count = DATASETS["100B"][1 if args.quick else 0]
            for linger, batch in BIG_BATCH_SETTINGS:
                row = {
                    "engine": args.engine,
                    "suite": "batch",
                    "dataset": "100B",
                    "records": count,
                    "acks": "1",
                    "compression": "none",
                    "linger_ms": "default" if linger is None else linger,
                    "max_batch_size": "default" if batch is None else batch,
                }
                spec = _small_records_spec("batch", count, linger, batch)
                measure(cluster, row, spec)
    if any(row.get("suite", "throughput") == "throughput" for row in measured):
        print(summary_table(measured, clients), flush=True)
    print(f"# load average {load_average()}", flush=True)
    return 0


def add_ratios(row: dict[str, Any]) -> None:
    """Note in each client's result of ``row`` its records/s relative to aiokafka-C
    (``vs_aiokafka_c``) and to confluent-tuned (``vs_confluent_tuned``), when both ran."""
    for client, r in row.items():
        if not isinstance(r, dict) or "records_per_s" not in r:
            continue
        for name, reference in (
            ("vs_aiokafka_c", REFERENCE),
            ("vs_confluent_tuned", TUNED_REFERENCE),
        ):
            base = row.get(reference, {}).get("records_per_s") if reference != client else None
            r[name] = r["records_per_s"] / base if base else None


def summary_table(rows: list[dict[str, Any]], clients: list[str]) -> str:
    """The throughput rows as a table: records/s per client, then the ratios to aiokafka-C
    and to confluent-tuned of rackafka's ``send()`` (``vs akC``, ``vs cfT``), of ``send()``
    with confluent-tuned's batching (``tuned akC``, ``tuned cfT``) and of its batch API
    (``batch akC``, ``batch cfT``) when they ran."""
    names = [c for c in clients if c.partition(BASE)[0] in CLIENTS]
    ours = [c for c in names if c.partition(BASE)[0] in OURS]
    head = f"{'engine':<6} {'dataset':>7} {'acks':>4} {'comp':<4} " + " ".join(
        f"{c:>15}" for c in names
    )
    for client in ours:
        name, base, _ = client.partition(BASE)
        prefix = OURS[name] + ("@b" if base else "")
        head += f" {prefix + ' akC':>9} {prefix + ' cfT':>9}"
    lines = ["# rackafka against the others (records/s; ratios are rackafka's)", head]
    lines.append("-" * len(head))
    for row in rows:
        if row.get("suite", "throughput") != "throughput":
            continue
        cells = []
        for c in names:
            rate = row.get(c, {}).get("records_per_s")
            cells.append(f"{'-' if rate is None else format(rate, ',.0f'):>15}")
        ratios = []
        for client in ours:
            result = row.get(client, {})
            ratios += [result.get("vs_aiokafka_c"), result.get("vs_confluent_tuned")]
        lines.append(
            f"{row.get('engine', 'mock'):<6} {row['dataset']:>7} {row['acks']:>4} "
            f"{row['compression']:<4} "
            + " ".join(cells)
            + "".join(f" {'-' if x is None else format(x, '.2f'):>9}" for x in ratios)
        )
    return "\n".join(lines)


def row_key(row: dict[str, Any]) -> tuple[str, ...]:
    """The case a result row measures: engine (rows without one are the mock's), suite,
    dataset, acks, compression (and the linger and batch size of the latency and batch
    suites)."""
    return (
        str(row.get("engine", "mock")),
        str(row.get("suite", "throughput")),
        str(row.get("dataset")),
        str(row.get("acks")),
        str(row.get("compression")),
        str(row.get("linger_ms", "")),
        str(row.get("max_batch_size", "")),
    )


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
    suite = row.get("suite", "throughput")
    if suite == "latency":
        parts = [
            f"{row.get('engine', 'mock')} latency linger_ms={row['linger_ms']:<3} "
            f"batch={row['max_batch_size']:<8}"
        ]
        for client in clients:
            r = row.get(client, {})
            if "p99_ms" not in r:
                parts.append(f"{client}: error {r.get('error')}")
                continue
            parts.append(
                f"{client}: p50 {r['p50_ms']:6.1f} ms p99 {r['p99_ms']:6.1f} ms "
                f"(send lag p99 {r['send_lag_p99_ms']:.1f} ms)"
            )
        print(" | ".join(parts) + f" | load {row.get('load_average')}", flush=True)
        return
    parts = [
        f"{row.get('engine', 'mock')} {row['dataset']:>6} acks={row['acks']:<3} "
        f"{row['compression']:<4} n={row['records']}"
    ]
    if suite == "batch":
        parts[0] += f" linger_ms={row['linger_ms']} batch={row['max_batch_size']}"
    for client in clients:
        r = row.get(client, {})
        if "records_per_s" not in r:
            parts.append(f"{client}: error {r.get('error')}")
            continue
        shown = [
            f"{r[key]:.2f}x {label}"
            for key, label in (("vs_aiokafka_c", "akC"), ("vs_confluent_tuned", "cfT"))
            if r.get(key)
        ]
        ratio = f" ({', '.join(shown)})" if shown else ""
        parts.append(
            f"{client}: {r['records_per_s']:>9,.0f} rec/s {r['mb_per_s']:6.1f} MB/s "
            f"cpu {r['cpu_s']:.2f}s{ratio}"
        )
    print(" | ".join(parts) + f" | load {row.get('load_average')}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
