"""Record decoding benchmark: rackafka against aiokafka 0.14, side by side in one run.

The same record batches (built with rackafka's encoder, about 1 MB each) are decoded by

* rackafka (``iter_batches`` + ``RecordBatch.records``), with CRC checks and without,
* aiokafka's record reader with its C extension (``MemoryRecords`` + ``validate_crc()``),
* aiokafka's record reader in pure-Python mode (``AIOKAFKA_NO_EXTENSIONS=1``).

CRC checking is ON for every column except "rk no-crc": aiokafka's fetcher calls
``validate_crc()`` on each batch (``check_crcs=True`` is its default), and so does
rackafka's reader with ``check_crcs=True``.  Each aiokafka mode runs in its own
subprocess because the switch is read when aiokafka is imported.

Two workloads are measured:

* ``decode``: one object per record holding all its fields (aiokafka's record objects,
  rackafka's tuples);
* ``consumer``: what a fetcher does, building one ``ConsumerRecord`` dataclass (aiokafka's
  fields, defined here and used by both) per record; aiokafka the way its fetcher does,
  rackafka with ``records(factory)``.

Usage: ``python benchmarks/records.py [--quick]``.  aiokafka is optional: without it, its
columns say "skipped".
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

TOPIC = "bench"
PARTITION = 0
BATCH_BYTES = 1_000_000
TS = 1_700_000_000_000


@dataclass
class ConsumerRecord:
    """The fields of aiokafka's ``ConsumerRecord``; used by both libraries here."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    checksum: Any
    serialized_key_size: int
    serialized_value_size: int
    headers: Any


# -- input data ----------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    value_size: int  # average
    codec: str
    varied: bool = False
    events: bool = False  # keys, varying sizes, two headers (see event_record)


CASES = [
    Case("100 B", 100, "none"),
    Case("100 B", 100, "lz4"),
    Case("100 B", 100, "zstd"),
    Case("50-150 B", 100, "none", varied=True),
    Case("events", 250, "none", events=True),
    Case("events", 250, "lz4", events=True),
    Case("10 KB", 10_000, "none"),
    Case("10 KB", 10_000, "lz4"),
    Case("10 KB", 10_000, "zstd"),
]


def event_record(rnd: random.Random, corpus: bytes, i: int) -> tuple[bytes, bytes, list[Any]]:
    """A record shaped like application events: key ``user-NNNNNN``, a value of 60-400 B
    (one in ten 400-1200 B), and two headers (W3C ``traceparent``, ``content-type``)."""
    key = b"user-%06d" % rnd.randrange(1_000_000)
    n = rnd.randint(400, 1200) if rnd.random() < 0.1 else rnd.randint(60, 400)
    start = rnd.randrange(len(corpus) - n)
    value = corpus[start : start + n]
    trace = f"00-{rnd.getrandbits(128):032x}-{rnd.getrandbits(64):016x}-01"
    headers = [("traceparent", trace.encode()), ("content-type", b"application/json")]
    return key, value, headers


def build_case(case: Case, batches: int) -> list[bytes]:
    """Batches of about 1 MB of uncompressed records: null keys and no headers, or the
    ``events`` shape (:func:`event_record`)."""
    from rackafka.records import CODEC_LZ4, CODEC_NONE, CODEC_ZSTD, BatchBuilder

    codec = {"none": CODEC_NONE, "lz4": CODEC_LZ4, "zstd": CODEC_ZSTD}[case.codec]
    rnd = random.Random(42)
    words = [bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(8)) for _ in range(500)]
    # text-like values: compressible, but not trivially
    corpus = b" ".join(rnd.choice(words) for _ in range(400_000))
    out = []
    offset = 0
    for _ in range(batches):
        builder = BatchBuilder(base_offset=offset, compression=codec, producer_id=1000)
        size = 0
        i = 0
        while size < BATCH_BYTES:
            if case.events:
                key, value, headers = event_record(rnd, corpus, i)
                builder.append(TS + i // 200, key, value, headers)
                size += len(key) + len(value) + 90
                i += 1
                continue
            n = (
                rnd.randint(case.value_size // 2, case.value_size * 3 // 2)
                if case.varied
                else case.value_size
            )
            start = rnd.randrange(len(corpus) - n)
            builder.append(TS + i // 200, None, corpus[start : start + n])
            size += n + 8
            i += 1
        out.append(builder.build())
        offset += len(builder)
    return out


def summary(values: list[Any]) -> tuple[int, int]:
    return len(values), sum(len(v) for v in values if v is not None)


# -- the decoders --------------------------------------------------------------------------


def rackafka_runner(batches: list[bytes], mode: str, check_crcs: bool) -> Callable[[], list[Any]]:
    from rackafka.records import iter_batches

    factory = partial(ConsumerRecord, TOPIC, PARTITION) if mode == "consumer" else None

    def run() -> list[Any]:
        out: list[Any] = []
        for data in batches:
            for batch in iter_batches(
                data, check_crcs=check_crcs, topic=TOPIC, partition=PARTITION
            ):
                if batch.is_control:
                    continue
                out += batch.records(factory)
        return out

    return run


def aiokafka_runner(batches: list[bytes], mode: str) -> Callable[[], list[Any]]:
    from aiokafka.record.memory_records import MemoryRecords

    def run_decode() -> list[Any]:
        out: list[Any] = []
        for data in batches:
            records = MemoryRecords(data)
            while records.has_next():
                batch = records.next_batch()
                if not batch.validate_crc():
                    raise RuntimeError("CRC")
                if batch.is_control_batch:
                    continue
                out += batch
        return out

    def run_consumer() -> list[Any]:
        # as aiokafka's fetcher (_unpack_records / _consumer_record) does it
        out: list[Any] = []
        append = out.append
        for data in batches:
            records = MemoryRecords(data)
            while records.has_next():
                batch = records.next_batch()
                if not batch.validate_crc():
                    raise RuntimeError("CRC")
                if batch.is_control_batch:
                    continue
                for record in batch:
                    key = record.key
                    value = record.value
                    append(
                        ConsumerRecord(
                            TOPIC,
                            PARTITION,
                            record.offset,
                            record.timestamp,
                            record.timestamp_type,
                            key,
                            value,
                            record.checksum,
                            len(key) if key is not None else -1,
                            len(value) if value is not None else -1,
                            record.headers,
                        )
                    )
        return out

    return run_consumer if mode == "consumer" else run_decode


def values_of(records: list[Any]) -> list[Any]:
    first = records[0] if records else None
    if isinstance(first, tuple):
        return [r[4] for r in records]
    return [r.value for r in records]


def measure(run: Callable[[], list[Any]], budget: float) -> tuple[float, tuple[int, int]]:
    """Best time of one run, repeated for about ``budget`` seconds; and a result summary."""
    result = run()
    check = summary(values_of(result))
    del result
    best = float("inf")
    spent = 0.0
    rounds = 0
    while rounds < 2 or spent < budget:
        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        best = min(best, elapsed)
        spent += elapsed
        rounds += 1
        if rounds >= 2 and spent + elapsed > budget * 1.5:
            break
    return best, check


# -- subprocess workers --------------------------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    """Measure aiokafka on request: one JSON command per stdin line, one JSON answer each."""
    try:
        import aiokafka
        from aiokafka.record import default_records
    except ImportError as exc:
        print(json.dumps({"skipped": f"aiokafka is not installed ({exc})"}), flush=True)
        return
    implementation = default_records.DefaultRecordBatch.__module__
    if args.worker == "aiokafka-c" and "_crecords" not in implementation:
        print(json.dumps({"skipped": "aiokafka's C extension is not available"}), flush=True)
        return
    with open(args.data, "rb") as f:
        cases = pickle.load(f)
    hello = {"version": aiokafka.__version__, "impl": implementation}
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        gc.collect()
        best, check = measure(
            aiokafka_runner(cases[request["case"]], request["mode"]), request["budget"]
        )
        print(json.dumps({"best": best, "check": list(check)}), flush=True)


class Worker:
    """An aiokafka worker subprocess (C extension or pure-Python mode)."""

    def __init__(self, kind: str, data_file: str) -> None:
        self.kind = kind
        self.info: dict[str, Any] = {}
        env = dict(os.environ)
        if kind == "aiokafka-py":
            env["AIOKAFKA_NO_EXTENSIONS"] = "1"
        else:
            env.pop("AIOKAFKA_NO_EXTENSIONS", None)
        cmd = [sys.executable, __file__, "--worker", kind, "--data", data_file]
        self.proc = subprocess.Popen(
            cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.info = self._read() or {"skipped": "the worker did not start"}

    def _read(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    @property
    def skipped(self) -> str | None:
        return self.info.get("skipped")

    def measure(self, case: str, mode: str, budget: float) -> tuple[float, tuple[int, int]] | None:
        if self.skipped:
            return None
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"case": case, "mode": mode, "budget": budget}) + "\n")
        self.proc.stdin.flush()
        answer = self._read()
        if answer is None:
            self.info = {"skipped": "the worker failed"}
            return None
        return answer["best"], tuple(answer["check"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


# -- main ----------------------------------------------------------------------------------


def fmt_rate(value: float | None) -> str:
    if value is None:
        return "skipped"
    return f"{value / 1e6:6.2f} M/s" if value >= 1e5 else f"{value / 1e3:6.1f} k/s"


def fmt_ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None:
        return "-"
    return f"{a / b:6.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer and shorter runs")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    budget = 0.25 if args.quick else 0.8
    n_batches = 1 if args.quick else 2
    started = time.perf_counter()
    print(f"Building inputs ({n_batches} x ~1 MB batches per case) with rackafka's encoder...")
    cases = {f"{c.name}|{c.codec}": build_case(c, n_batches) for c in CASES}
    counts = {key: sum(1 for _ in _records(b)) for key, b in cases.items()}

    with tempfile.TemporaryDirectory() as tmp:
        data_file = os.path.join(tmp, "cases.pickle")
        with open(data_file, "wb") as f:
            pickle.dump(cases, f)
        workers = [Worker("aiokafka-c", data_file), Worker("aiokafka-py", data_file)]
        for w in workers:
            if w.skipped:
                print(f"{w.kind}: skipped: {w.skipped}")
            else:
                print(f"{w.kind}: aiokafka {w.info['version']} ({w.info['impl']})")
        print()
        print(
            "Records per second (best run; CRC checks ON except 'rk no-crc'; "
            "ratios = rackafka with CRC / aiokafka)"
        )
        header = (
            f"{'mode':9} {'records':9} {'codec':5} {'n':>6} | {'rackafka':>10} "
            f"{'rk no-crc':>10} {'aiokafka-C':>10} {'aiokafka-py':>11} | {'rk/C':>7} {'rk/py':>7}"
        )
        print(header)
        print("-" * len(header))
        mismatches = []
        try:
            for mode in ("decode", "consumer"):
                for case in CASES:
                    key = f"{case.name}|{case.codec}"
                    n = counts[key]
                    # rackafka and the aiokafka workers one after the other, per case
                    gc.collect()
                    t_crc, check = measure(rackafka_runner(cases[key], mode, True), budget)
                    gc.collect()
                    t_nocrc, _ = measure(rackafka_runner(cases[key], mode, False), budget)
                    rates: dict[str, float | None] = {}
                    for w in workers:
                        # the pure-Python mode is slow: one or two runs are enough
                        got = w.measure(
                            key, mode, budget / 4 if w.kind == "aiokafka-py" else budget
                        )
                        if got is None:
                            rates[w.kind] = None
                            continue
                        if got[1] != check:
                            mismatches.append(f"{w.kind} {key} {mode}: {got[1]} != {check}")
                        rates[w.kind] = n / got[0]
                    rate = n / t_crc
                    print(
                        f"{mode:9} {case.name:9} {case.codec:5} {n:6} | {fmt_rate(rate):>10} "
                        f"{fmt_rate(n / t_nocrc):>10} {fmt_rate(rates['aiokafka-c']):>10} "
                        f"{fmt_rate(rates['aiokafka-py']):>11} | "
                        f"{fmt_ratio(rate, rates['aiokafka-c']):>7} "
                        f"{fmt_ratio(rate, rates['aiokafka-py']):>7}",
                        flush=True,
                    )
        finally:
            for w in workers:
                w.close()
    if mismatches:
        print("\nRESULT MISMATCH between the libraries:")
        for line in mismatches:
            print("  " + line)
        sys.exit(1)
    print(f"\n(all libraries decoded the same records; {time.perf_counter() - started:.0f} s)")


def _records(batches: list[bytes]) -> Any:
    from rackafka.records import iter_batches

    for data in batches:
        for batch in iter_batches(data):
            yield from batch.records()


if __name__ == "__main__":
    main()
