"""The cyclic collector's deferral (``rackafka.records._gc``) on and off, side by side.

Three measurements, each taken with the deferral ON and OFF in alternating order within one
run (``_gc.enabled``), the median of ``--repeat`` rounds reported:

* ``decode``: a ``getmany`` worth of record batches (10 batches of about 1 MB, built as in
  ``records.py``) decoded into ``ConsumerRecord``-like objects, held until all are
  decoded, read once by the "application", then dropped; ns per record.
* ``produce``: ``send()`` of 100 B records to the embedded cluster (librdkafka's mock
  brokers), every future awaited with ``gather``; ns per record.
* ``thread``: another thread makes cyclic garbage steadily while the main thread decodes
  (``--thread-work decode``) or sends (``produce``) for a few seconds; each variant (on,
  off, and "unbounded": on without the ``MAX_SECONDS`` bound) in its own subprocess, so
  that its peak RSS is its own: the peak number of the other thread's garbage objects not
  yet collected, the peak RSS, the young collections, both threads' throughput.

Usage: ``python benchmarks/gc_scope.py [--suites decode,produce,thread] [--repeat 7]``.
Run it with ``PYTHONPATH=src`` to measure this checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from records import CASES, ConsumerRecord, build_case

PARTITION = 0
TOPIC = "bench"


def _collections() -> list[int]:
    seen = [0]

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info["generation"] == 0:
            seen[0] += 1

    gc.callbacks.append(count)
    return seen


def decode_once(batches: list[bytes]) -> int:
    from rackafka.records import iter_batches

    factory = partial(ConsumerRecord, TOPIC, PARTITION)
    out: list[Any] = []
    for data in batches:
        for batch in iter_batches(data, check_crcs=True, topic=TOPIC, partition=PARTITION):
            out += batch.records(factory)
    total = 0
    for record in out:  # the application reads them
        total += record.serialized_value_size
    n = len(out)
    del out
    return n


def suite_decode(repeat: int) -> list[dict[str, Any]]:
    from rackafka.records import _gc

    rows = []
    for case in (c for c in CASES if c.codec == "none" and c.name in ("100 B", "events")):
        batches = build_case(case, 10)
        times: dict[bool, list[float]] = {True: [], False: []}
        young: dict[bool, list[int]] = {True: [], False: []}
        seen = _collections()
        for i in range(repeat):
            for flag in (True, False) if i % 2 == 0 else (False, True):
                _gc.enabled = flag
                gc.collect()
                seen[0] = 0
                start = time.perf_counter()
                n = decode_once(batches)
                times[flag].append((time.perf_counter() - start) / n * 1e9)
                young[flag].append(seen[0])
        _gc.enabled = True
        rows.append(_row("decode", case.name, times, young, n))
    return rows


async def _produce(repeat: int, count: int) -> dict[str, Any]:
    from rackafka import AIOKafkaProducer
    from rackafka.records import _gc
    from rackafka.testing import EmbeddedCluster

    times: dict[bool, list[float]] = {True: [], False: []}
    young: dict[bool, list[int]] = {True: [], False: []}
    seen = _collections()
    with EmbeddedCluster(brokers=3) as cluster:
        cluster.create_topic(TOPIC, 3)
        producer: Any = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, linger_ms=5, max_batch_size=1_000_000
        )
        await producer.start()
        try:
            value = b"x" * 100
            await producer.send_and_wait(TOPIC, value)
            for i in range(repeat):
                for flag in (True, False) if i % 2 == 0 else (False, True):
                    _gc.enabled = flag
                    gc.collect()
                    seen[0] = 0
                    start = time.perf_counter()
                    futures = [await producer.send(TOPIC, value) for _ in range(count)]
                    await asyncio.gather(*futures)
                    times[flag].append((time.perf_counter() - start) / count * 1e9)
                    young[flag].append(seen[0])
                    del futures
        finally:
            _gc.enabled = True
            await producer.stop()
    return _row("produce", "100 B send()", times, young, count)


def _row(
    suite: str,
    case: str,
    times: dict[bool, list[float]],
    young: dict[bool, list[int]],
    n: int,
) -> dict[str, Any]:
    on, off = statistics.median(times[True]), statistics.median(times[False])
    return {
        "suite": suite,
        "case": case,
        "records": n,
        "on_ns": on,
        "off_ns": off,
        "on_range": [min(times[True]), max(times[True])],
        "off_range": [min(times[False]), max(times[False])],
        "off_over_on": off / on,
        "young_on": statistics.median(young[True]),
        "young_off": statistics.median(young[False]),
    }


# -- another thread making garbage ---------------------------------------------------------


class _Garbage:
    """One node of a garbage cycle; counts its finalization."""

    made = 0
    freed = 0

    def __init__(self) -> None:
        self.me = self
        self.payload = [None] * 8

    def __del__(self) -> None:
        _Garbage.freed += 1


def _garbage_thread(stop: threading.Event, peak: list[int]) -> None:
    top = 0
    while not stop.is_set():
        for _ in range(50):
            _Garbage()
        _Garbage.made += 50
        alive = _Garbage.made - _Garbage.freed
        if alive > top:
            top = alive
        time.sleep(0.0002)
    peak[0] = top


def _rss_kib(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak_rss() -> None:
    """Linux: the peak RSS (``VmHWM``) starts again from the current RSS."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def thread_child(variant: str, work: str, seconds: float) -> dict[str, Any]:
    from rackafka.records import _gc

    _gc.enabled = variant != "off"
    if variant == "unbounded":  # as before the time bound
        _gc.MAX_SECONDS = float("inf")
    batches = build_case(next(c for c in CASES if c.events and c.codec == "none"), 10)
    decode_once(batches)
    gc.collect()
    seen = _collections()
    _reset_peak_rss()
    base_rss = _rss_kib()
    stop = threading.Event()
    peak = [0]
    worker = threading.Thread(target=_garbage_thread, args=(stop, peak))
    worker.start()
    done = 0
    start = time.perf_counter()
    if work == "decode":
        while time.perf_counter() - start < seconds:
            done += decode_once(batches)
    else:
        done = asyncio.run(_produce_for(seconds))
    elapsed = time.perf_counter() - start
    stop.set()
    worker.join()
    peak_rss = _rss_kib("VmHWM")
    return {
        "deferral": variant,
        "work": work,
        "records_per_s": done / elapsed,
        "garbage_per_s": _Garbage.made / elapsed,
        "garbage_peak_alive": peak[0],
        "young": seen[0],
        "rss_base_mib": base_rss / 1024,
        "rss_peak_mib": peak_rss / 1024,
    }


async def _produce_for(seconds: float) -> int:
    from rackafka import AIOKafkaProducer
    from rackafka.testing import EmbeddedCluster

    with EmbeddedCluster(brokers=3) as cluster:
        cluster.create_topic(TOPIC, 3)
        producer: Any = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers, linger_ms=5, max_batch_size=1_000_000
        )
        await producer.start()
        done = 0
        try:
            start = time.perf_counter()
            value = b"x" * 100
            while time.perf_counter() - start < seconds:
                futures = [await producer.send(TOPIC, value) for _ in range(50_000)]
                await asyncio.gather(*futures)
                done += len(futures)
        finally:
            await producer.stop()
    return done


def suite_thread(repeat: int, work: str, seconds: float) -> list[dict[str, Any]]:
    variants = ["on", "off", "unbounded"]
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for i in range(repeat):
        for variant in variants[i % 3 :] + variants[: i % 3]:
            cmd = [sys.executable, __file__, "--child", json.dumps([variant, work, seconds])]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            results[variant].append(json.loads(out.splitlines()[-1]))
    rows = []
    for variant in variants:
        keys = results[variant][0].keys() - {"deferral", "work"}
        row = {k: statistics.median(r[k] for r in results[variant]) for k in keys}
        row["max_garbage_peak_alive"] = max(r["garbage_peak_alive"] for r in results[variant])
        rows.append({"suite": f"thread-{work}", "deferral": variant, **row})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suites", default="decode,produce,thread")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--thread-work", default="decode,produce")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        flag, work, seconds = json.loads(args.child)
        print(json.dumps(thread_child(flag, work, seconds)))
        return
    import rackafka

    print(
        f"# {platform.python_implementation()} {platform.python_version()}, rackafka from "
        f"{Path(rackafka.__file__).parent}, load {os.getloadavg()}",
        flush=True,
    )
    suites = args.suites.split(",")
    rows: list[dict[str, Any]] = []
    if "decode" in suites:
        rows += suite_decode(args.repeat)
    if "produce" in suites:
        rows.append(asyncio.run(_produce(args.repeat, 50_000)))
    for row in rows:
        print(json.dumps(row), flush=True)
    if "thread" in suites:
        for work in args.thread_work.split(","):
            for row in suite_thread(max(3, args.repeat // 2), work, args.seconds):
                print(json.dumps(row), flush=True)
    print(f"# load {os.getloadavg()}")


if __name__ == "__main__":
    main()
