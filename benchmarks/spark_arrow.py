"""CPU per record of a Spark task's decode and Arrow building, without Spark or a network.

The same record batches (about 1 MB each, built with rackafka's encoder) go through the
two paths of the source's tasks, in one process:

* ``tuples``: decoded into record tuples (as ``getmany(record_tuples=True)`` gives them),
  then Arrow columns built from the tuples (``parts_to_arrow``): the path of records
  with headers or of mixed layouts;
* ``runs``: runs of same-layout records handed out whole and cut into Arrow columns in
  bulk (``RecordBatch.records(None, True)`` + ``pieces_to_batches``, the batches a task
  hands to Spark: one per partition here): the path of the records most producers write.

Both give equal Arrow batches (checked). It prints the median CPU time per record of each
path (decode alone, and decode with Arrow) for a few record shapes.

Usage: ``python benchmarks/spark_arrow.py [--repeat 15]`` (needs pyarrow).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from rackafka.records import iter_batches
from rackafka.records.builder import BatchBuilder
from rackafka.records.compression import CODEC_LZ4, CODEC_NONE
from rackafka.spark._runs import pieces_to_arrow, pieces_to_batches
from rackafka.spark.reader import arrow_schema, parts_to_arrow

TS = 1_700_000_000_000
PER_BATCH = 9000  # ~1 MB of 100 B records, as the producer's batch.size of spark_read.py
SHAPES = {
    "100 B, no key": (None, 100, CODEC_NONE),
    "100 B, 16 B key": (16, 100, CODEC_NONE),
    "100 B, lz4": (None, 100, CODEC_LZ4),
    "1000 B, no key": (None, 1000, CODEC_NONE),
}


def build(key_size: int | None, value_size: int, codec: int, batches: int) -> list[bytes]:
    out = []
    per_batch = PER_BATCH * 100 // value_size
    for b in range(batches):
        builder = BatchBuilder(base_offset=b * per_batch, compression=codec)
        for i in range(per_batch):
            key = None if key_size is None else (b"%016d" % i)[:key_size]
            value = b"%08d" % i + bytes([65 + i % 26]) * (value_size - 8)
            builder.append(TS + i // 300, key, value)
        out.append(builder.build())
    return out


def cpu_per_record(run: Callable[[], Any], records: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        run()
        times.append(time.thread_time() - start)
    return statistics.median(times) / records * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--batches", type=int, default=8, help="batches (partitions) per round")
    args = parser.parse_args()
    schema = arrow_schema(False)
    gc.disable()  # as a task: the collector is paused while it reads
    print(f"{'shape':<18} {'path':<7} {'decode us/rec':>14} {'+ Arrow us/rec':>15}")
    for name, (key_size, value_size, codec) in SHAPES.items():
        data = build(key_size, value_size, codec, args.batches)
        records = sum(len(next(iter_batches(d)).records()) for d in data)

        def decode(runs: bool, data: list[bytes] = data) -> list[Any]:
            parts = []
            for p, d in enumerate(data):
                (batch,) = iter_batches(d)
                parts.append(("t", p, batch.records(None, True) if runs else batch.records()))
            return parts

        def tuples(decode: Callable[[bool], list[Any]] = decode) -> Any:
            return parts_to_arrow(decode(False), schema)

        def runs(decode: Callable[[bool], list[Any]] = decode) -> Any:
            return pieces_to_batches(decode(True), schema, parts_to_arrow)

        if not tuples().equals(pieces_to_arrow(decode(True), schema, parts_to_arrow)):
            raise SystemExit(f"{name}: the two paths differ")
        for path, whole in (("tuples", tuples), ("runs", runs)):
            alone = cpu_per_record(lambda p=path: decode(p == "runs"), records, args.repeat)
            both = cpu_per_record(whole, records, args.repeat)
            print(f"{name:<18} {path:<7} {alone:>14.3f} {both:>15.3f}")


if __name__ == "__main__":
    main()
