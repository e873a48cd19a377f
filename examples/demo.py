"""rackafka demo: read a topic from the closest replica, and prove nothing was lost.

``make demo`` runs this file. It starts an embedded Kafka cluster of three brokers in three
racks (``az-a``, ``az-b``, ``az-c``, one broker each), creates a topic whose partition leaders
are spread over the racks, writes records into it, and reads the whole topic twice with
rackafka's ``AIOKafkaConsumer`` from a consumer that runs in rack ``az-b``:

1. without ``client_rack``: every partition is read from its leader, so only the partitions
   led by the ``az-b`` broker (about a third) are served from the consumer's own rack;
2. with ``client_rack="az-b"``: the leaders name the ``az-b`` replica as the preferred read
   replica (KIP-392), and every byte is served from ``az-b``.

The embedded brokers (librdkafka's mock brokers) have no replica selector of their own;
``EmbeddedCluster.emulate_rack_aware_selector`` makes them answer as Kafka's
``RackAwareReplicaSelector`` does for the given client rack (no hint at all for a consumer
without ``client_rack``).

For each run the demo prints the share of record bytes served from the consumer's rack and
from other racks (from ``consumer.fetch_stats()``), the records per second, and whether every
produced record arrived exactly once: each ``(partition, offset)`` the producer got an
acknowledgement for must be received once, with the value that was written to it. It exits
with status 1 when a record is missing or duplicated, or when the ``client_rack`` run read
anything from another rack.

Run ``python examples/demo.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rackafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from rackafka.testing import (
    ConfluentKafkaMissingError,
    EmbeddedCluster,
    LibrdkafkaNotFoundError,
    default_value,
)

RACKS = ("az-a", "az-b", "az-c")
CLIENT_RACK = "az-b"
TOPIC = "demo-events"
VALUE_SIZE = 100
BATCH_BYTES = 1_000_000
# The embedded brokers keep at most 5 MiB per partition and evict older batches beyond that,
# which the demo would report as missing records: stay well below it.
MAX_PARTITION_BYTES = 4_500_000
# Bytes a record takes in a record batch besides its value (length, attributes, deltas, ...).
_RECORD_OVERHEAD = 12


@dataclass
class RunResult:
    """What one consumer run received, and where the bytes came from.

    Attributes:
        label: how the run is shown (``"without client_rack"``).
        client_rack: the consumer's ``client_rack`` (``None`` for the first run).
        home_rack: the rack the consumer runs in, against which ``same_rack_bytes`` counts.
        expected: records the producer got an acknowledgement for.
        received: records delivered by the consumer, duplicates included.
        unique: distinct ``(partition, offset)`` pairs among them.
        duplicates: ``received - unique``.
        missing: acknowledged ``(partition, offset)`` pairs never received.
        unexpected: received pairs that the producer never wrote.
        bad_values: received records whose value is not the one written at that position.
        seconds: from the consumer's creation (bootstrap included) to its last expected
            record.
        bytes_by_rack: record bytes served per broker rack (``fetch_stats().racks``).
        fetch_requests: Fetch requests each broker received, counted by the brokers.
    """

    label: str
    client_rack: str | None
    home_rack: str
    expected: int
    received: int = 0
    unique: int = 0
    duplicates: int = 0
    missing: int = 0
    unexpected: int = 0
    bad_values: int = 0
    seconds: float = 0.0
    bytes_by_rack: dict[str | None, int] = field(default_factory=dict)
    fetch_requests: dict[int, int] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_rack.values())

    @property
    def same_rack_bytes(self) -> int:
        return self.bytes_by_rack.get(self.home_rack, 0)

    @property
    def cross_rack_bytes(self) -> int:
        return self.total_bytes - self.same_rack_bytes

    @property
    def same_rack_share(self) -> float:
        """Share of the record bytes served from ``home_rack`` (0.0 when nothing was read)."""
        total = self.total_bytes
        return self.same_rack_bytes / total if total else 0.0

    @property
    def records_per_second(self) -> float:
        return self.unique / self.seconds if self.seconds > 0 else 0.0

    @property
    def exactly_once(self) -> bool:
        """Every acknowledged record was received once, with its value, and nothing else."""
        return (
            self.received == self.expected
            and self.unique == self.expected
            and self.duplicates == 0
            and self.missing == 0
            and self.unexpected == 0
            and self.bad_values == 0
        )


@dataclass
class DemoReport:
    """Everything the demo measured.

    Attributes:
        records: records produced (and acknowledged).
        partitions: partitions of the topic.
        produce_seconds: time taken to produce them.
        brokers: broker id -> rack.
        leaders_by_rack: rack -> number of partitions its broker leads.
        runs: the consumer runs, without and with ``client_rack``.
    """

    records: int
    partitions: int
    produce_seconds: float
    brokers: dict[int, str | None]
    leaders_by_rack: dict[str | None, int]
    runs: list[RunResult]

    def failures(self) -> list[str]:
        """Why the demo failed; empty when every check passed."""
        problems: list[str] = []
        for run in self.runs:
            if not run.exactly_once:
                problems.append(
                    f"{run.label}: not exactly once (expected {run.expected:,}, received "
                    f"{run.received:,}, duplicates {run.duplicates:,}, missing {run.missing:,}, "
                    f"unexpected {run.unexpected:,}, wrong values {run.bad_values:,})"
                )
            if run.client_rack is not None and run.cross_rack_bytes != 0:
                problems.append(
                    f"{run.label}: {run.cross_rack_bytes:,} bytes came from other racks "
                    f"than {run.client_rack} ({run.same_rack_share:.1%} same rack, expected 100%)"
                )
            if run.client_rack is not None and run.total_bytes == 0:
                problems.append(f"{run.label}: no record bytes were counted at all")
        return problems

    @property
    def ok(self) -> bool:
        return not self.failures()


def _value_index(value: bytes | None) -> int:
    """The record number that ``EmbeddedCluster.produce`` wrote into a value, or -1.

    -1 when the value is not exactly :func:`~rackafka.testing.default_value` of that number.
    """
    if not value:
        return -1
    end = value.find(b"|")
    try:
        index = int(value[:end]) if end > 0 else -1
    except ValueError:
        return -1
    if index < 0 or value != default_value(index, VALUE_SIZE):
        return -1
    return index


async def consume_all(
    cluster: EmbeddedCluster,
    partitions: int,
    expected_offsets: dict[int, tuple[int, int]],
    *,
    label: str,
    client_rack: str | None,
    home_rack: str,
    timeout: float = 60.0,
    quiet_ms: int = 300,
) -> RunResult:
    """Read every partition of the demo topic from the beginning and check what arrived.

    Arguments:
        cluster: the running cluster.
        partitions: the topic's partition count.
        expected_offsets: partition -> (first, last) offset the producer got acknowledged.
        label: the run's name in the report.
        client_rack: the consumer's ``client_rack``.
        home_rack: the rack the consumer runs in.
        timeout: give up (and report the rest as missing) after this many seconds.
        quiet_ms: after the last expected record, keep polling this long for extra records
            (duplicates would show up there).
    """
    expected = sum(last - first + 1 for first, last in expected_offsets.values())
    result = RunResult(label, client_rack, home_rack, expected)
    offsets: dict[int, list[int]] = {p: [] for p in range(partitions)}
    values: dict[int, list[bytes | None]] = {p: [] for p in range(partitions)}
    remaining = {p for p, (first, last) in expected_offsets.items() if last >= first}
    last_wanted = {p: last for p, (_first, last) in expected_offsets.items()}

    def take(records: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]) -> None:
        # Only collect here, so that records/s measures the consumer, not the checks.
        for tp, recs in records.items():
            p = tp.partition
            offsets[p].extend([r.offset for r in recs])
            values[p].extend([r.value for r in recs])
            if p in remaining and recs[-1].offset >= last_wanted[p]:
                remaining.discard(p)

    cluster.clear_requests()
    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        client_id=f"rackafka-demo-{client_rack or 'no-rack'}",
        client_rack=client_rack,
        auto_offset_reset="earliest",
    )
    started = time.perf_counter()
    async with consumer:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(partitions)])
        deadline = started + timeout
        while remaining and time.perf_counter() < deadline:
            take(await consumer.getmany(timeout_ms=200))
        result.seconds = time.perf_counter() - started
        # Anything that still arrives now is a duplicate or a record nobody wrote.
        quiet_until = time.perf_counter() + quiet_ms / 1000
        while (left := quiet_until - time.perf_counter()) > 0:
            take(await consumer.getmany(timeout_ms=max(1, int(left * 1000))))
        stats = consumer.fetch_stats()
    result.bytes_by_rack = {rack: c.bytes for rack, c in stats.racks.items()}
    result.fetch_requests = dict(cluster.request_counts("Fetch"))

    indices: list[int] = []
    for p, got in offsets.items():
        first, last = expected_offsets.get(p, (0, -1))
        unique = set(got)
        result.received += len(got)
        result.unique += len(unique)
        result.missing += sum(1 for o in range(first, last + 1) if o not in unique)
        result.unexpected += sum(1 for o in unique if not first <= o <= last)
        # Record i was written to partition i % partitions with default_value(i): a value
        # read from the wrong partition, garbled, or delivered twice shows up here.
        seen: dict[int, int] = {}
        for offset, value in zip(got, values[p]):
            index = _value_index(value)
            if index < 0 or index % partitions != p:
                result.bad_values += 1
            elif offset not in seen:
                seen[offset] = index
                indices.append(index)
            elif seen[offset] != index:
                result.bad_values += 1  # the same offset delivered with two values
    # Every record number at most once across the topic (duplicated offsets are counted
    # above; this catches one value stored at two positions).
    result.bad_values += len(indices) - len(set(indices))
    result.duplicates = result.received - result.unique
    return result


async def run_demo(
    records: int = 300_000,
    partitions: int = 12,
    *,
    client_rack: str = CLIENT_RACK,
    echo: Callable[[str], None] | None = None,
) -> DemoReport:
    """Start the cluster, produce, consume twice, and return what was measured.

    Arguments:
        records: records to produce (of 100 bytes each).
        partitions: partitions of the topic (replication factor 3).
        client_rack: the rack the consumer runs in.
        echo: called with progress lines (default: silent).

    Raises:
        ValueError: the arguments do not fit the embedded brokers.
    """
    say = echo or (lambda _line: None)
    if client_rack not in RACKS:
        raise ValueError(f"client_rack must be one of {', '.join(RACKS)}, got {client_rack!r}")
    if records < 1:
        raise ValueError(f"--records must be >= 1, got {records}")
    if partitions < 1:
        raise ValueError(f"--partitions must be >= 1, got {partitions}")
    per_partition = -(-records // partitions) * (VALUE_SIZE + _RECORD_OVERHEAD)
    if per_partition > MAX_PARTITION_BYTES:
        most = MAX_PARTITION_BYTES // (VALUE_SIZE + _RECORD_OVERHEAD) * partitions
        raise ValueError(
            f"{records:,} records over {partitions} partitions is ~{per_partition / 1e6:.1f} MB "
            f"per partition; the embedded brokers keep 5 MiB per partition, so use at most "
            f"{most:,} records or more --partitions"
        )

    with EmbeddedCluster(brokers=len(RACKS), racks=RACKS) as cluster:
        brokers = {b.node_id: b.rack for b in cluster.brokers.values()}
        infos = cluster.create_topic(TOPIC, partitions=partitions, replication_factor=3)
        leaders = Counter(brokers[i.leader] for i in infos)
        say(
            "cluster   "
            + ", ".join(f"broker {n} in {r}" for n, r in sorted(brokers.items()))
            + " (embedded, 127.0.0.1)"
        )
        say(
            f"topic     {TOPIC}: {partitions} partitions, replication factor 3, leaders "
            + ", ".join(f"{r} {leaders.get(r, 0)}" for r in RACKS)
        )
        t0 = time.perf_counter()
        produced = await cluster.aproduce(
            TOPIC, records, value_size=VALUE_SIZE, partition="spread", batch_size=BATCH_BYTES
        )
        produce_seconds = time.perf_counter() - t0
        say(
            f"produced  {produced.count:,} records of {VALUE_SIZE} B "
            f"({produced.count * VALUE_SIZE / 1e6:.1f} MB of values) in {produce_seconds:.1f} s"
        )
        expected = {
            p: (produced.first_offsets[p], produced.last_offsets[p]) for p in produced.counts
        }
        for p, (first, last) in expected.items():
            if last - first + 1 != produced.counts[p]:
                raise RuntimeError(
                    f"partition {p}: {produced.counts[p]} records acknowledged at offsets "
                    f"{first}..{last}, not one offset each"
                )
        cluster.start_request_tracking()
        runs: list[RunResult] = []
        # A consumer without client_rack sends an empty rack id: Kafka's
        # RackAwareReplicaSelector then names no preferred replica, so the leaders serve it.
        cluster.emulate_rack_aware_selector(None)
        say(f"consumer  in {client_rack}: reading everything without client_rack ...")
        runs.append(
            await consume_all(
                cluster, partitions, expected,
                label="without client_rack", client_rack=None, home_rack=client_rack,
            )
        )  # fmt: skip
        cluster.emulate_rack_aware_selector(client_rack)
        say(f'consumer  in {client_rack}: reading everything with client_rack="{client_rack}" ...')
        runs.append(
            await consume_all(
                cluster, partitions, expected,
                label=f'client_rack="{client_rack}"', client_rack=client_rack,
                home_rack=client_rack,
            )
        )  # fmt: skip
        cluster.stop_request_tracking()

    return DemoReport(
        records=produced.count,
        partitions=partitions,
        produce_seconds=produce_seconds,
        brokers=brokers,
        leaders_by_rack=dict(leaders),
        runs=runs,
    )


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n else "0 B"


def format_report(report: DemoReport) -> str:
    """The results as a small table, with the verdict."""
    home = report.runs[0].home_rack if report.runs else CLIENT_RACK
    header = (
        "run",
        f"from {home}",
        "other racks",
        "records/s",
        "received",
        "duplicates",
        "missing",
        "exactly once",
    )
    rows = [
        (
            run.label,
            f"{run.same_rack_share:.1%}",
            f"{1 - run.same_rack_share:.1%}" if run.total_bytes else "0.0%",
            f"{run.records_per_second:,.0f}",
            f"{run.received:,}",
            f"{run.duplicates:,}",
            f"{run.missing:,}",
            "yes" if run.exactly_once else "NO",
        )
        for run in report.runs
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [
            c.rjust(w) if i < 7 else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells[1:], widths[1:]), start=1)
        ]
        return "  ".join([first, *rest]).rstrip()

    out = ["", line(header), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    out.append("")
    racks = sorted(report.brokers.items())
    for run in report.runs:
        per_rack = ", ".join(f"{rack} {_mb(run.bytes_by_rack.get(rack, 0))}" for rack in RACKS)
        fetches = ", ".join(f"{rack} {run.fetch_requests.get(n, 0)}" for n, rack in racks)
        out.append(f"{run.label}:")
        out.append(f"  record bytes by rack    {per_rack}  (consumer.fetch_stats())")
        out.append(f"  Fetch requests by rack  {fetches}  (counted by the brokers)")
    with_rack = [r for r in report.runs if r.client_rack is not None]
    if with_rack and with_rack[0].total_bytes and not with_rack[0].cross_rack_bytes:
        out.append(
            "  (the Fetch requests to other racks are the first ones to the leaders, answered\n"
            f"   with no records and the name of the replica in {home})"
        )
    out.append("")
    failures = report.failures()
    if failures:
        out += [f"FAILED: {f}" for f in failures]
    else:
        before = report.runs[0].cross_rack_bytes if report.runs else 0
        out.append(
            f"OK: all {report.records:,} records arrived exactly once in both runs; with "
            f"client_rack the\n    record bytes read across racks went from {_mb(before)} to "
            f"{_mb(with_rack[0].cross_rack_bytes if with_rack else 0)}."
        )
    return "\n".join(out)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python examples/demo.py",
        description=(
            "Read a topic from an embedded 3-rack Kafka cluster with and without client_rack, "
            "and show where the bytes came from and that every record arrived exactly once."
        ),
    )
    parser.add_argument(
        "--records", type=int, default=300_000, help="records to produce (default: 300000)"
    )
    parser.add_argument(
        "--partitions", type=int, default=12, help="partitions of the topic (default: 12)"
    )
    parser.add_argument(
        "--show-routing",
        action="store_true",
        help="print the consumer's DEBUG routing lines (logger rackafka.consumer.fetcher)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the exit status (0 ok, 1 a check failed, 2 cannot run)."""
    args = parse_args(argv)
    if args.show_routing:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("  [%(name)s] %(message)s"))
        fetch_log = logging.getLogger("rackafka.consumer.fetcher")
        fetch_log.addHandler(handler)
        fetch_log.setLevel(logging.DEBUG)
    print(
        f"rackafka demo: fetch from the closest replica (KIP-392), consumer in rack {CLIENT_RACK}\n"
    )
    try:
        report = asyncio.run(
            run_demo(args.records, args.partitions, echo=lambda s: print(s, flush=True))
        )
    except (ConfluentKafkaMissingError, LibrdkafkaNotFoundError) as exc:
        print(f"cannot start the embedded cluster: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_report(report))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
