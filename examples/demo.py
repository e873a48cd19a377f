"""rackafka demo: read from the closest replica, alone and as a group, and lose nothing.

``make demo`` runs this file. It starts an embedded Kafka cluster, in a process of its own,
of three brokers in three racks (``az-a``, ``az-b``, ``az-c``, one broker each), creates a
topic whose partition leaders are spread over the racks, writes records into it, and reads
the whole topic twice with rackafka's ``AIOKafkaConsumer`` from a consumer that runs in rack
``az-b``:

1. without ``client_rack``: every partition is read from its leader, so only the partitions
   led by the ``az-b`` broker (about a third) are served from the consumer's own rack;
2. with ``client_rack="az-b"``: the leaders name the ``az-b`` replica as the preferred read
   replica (KIP-392), and every byte is served from ``az-b``.

Then comes a 3-rack consumer group reading only from its own racks:

3. a second topic with replication factor 2, so that each partition has replicas in only two
   of the three racks, is read by three consumers in one group (``group_id``), one per rack
   (``client_rack`` ``az-a``, ``az-b``, ``az-c``), with a rack-aware
   ``partition_assignment_strategy`` (``--strategy``: ``cooperative-sticky`` by default,
   ``range`` or ``sticky``). The assignor gives each member only partitions that have a
   replica in its rack (KIP-881), and each member then reads them there (KIP-392).
4. the same group with the KIP-848 protocol (``group_protocol="consumer"``): the group
   coordinator assigns, with an assignor that does not use racks, so some members own
   partitions with no replica in their rack and read those across racks; the demo shows
   both side by side (``--group-protocol``: ``both`` by default, ``classic`` or
   ``consumer``).

The cluster runs in a process of its own, ``python -m rackafka.testing serve`` started and
driven by :class:`rackafka.testing.ServedCluster`, so that the demo's process runs only
rackafka's consumers and producer: the rates it prints are the client's, not the test
harness's. The embedded brokers (librdkafka's mock brokers) have no replica selector of
their own; the server runs them with ``--replica-selector rack-aware``: a protocol-aware
front, in the server's process, answers every Fetch as a broker with Kafka's
``RackAwareReplicaSelector`` does, from the rack id the consumer sends (``client_rack``): the
leader names the in-sync replica in that rack, and names none to a consumer without a rack.
Three consumers in three racks get three answers at once, as from real brokers. Which
brokers the server runs is its ``--engine`` (``--engine`` here passes it on; the default is
the embedded brokers): ``--engine kafka`` runs three real Apache Kafka brokers (JVMs, Java
17+, ``make kafka-jars``) with ``broker.rack`` az-a, az-b, az-c, and Kafka's own
``RackAwareReplicaSelector`` chooses the replica; the demo's group timings become their
settings (``group.initial.rebalance.delay.ms``, ``group.consumer.heartbeat.interval.ms``),
and the bytes counted on the brokers' side (``served-bytes``, a count of the mock's front)
are left out of the report.

For each run the demo prints the share of record bytes served from the consumer's rack and
from other racks (from ``consumer.fetch_stats()``), the records per second, and whether every
produced record arrived exactly once: each ``(partition, offset)`` the producer got an
acknowledgement for must be received once, with the value that was written to it. For the
group it prints each member's rack, partitions, bytes from its own rack and from other racks,
and records, and checks that every record reached exactly one member once. It exits with
status 1 when a record is missing or duplicated, when the ``client_rack`` run or a group
member read anything from another rack, or when a member owned a partition with no replica
in its rack (with the classic protocol; with KIP-848 that is shown, not a failure).

Run ``python examples/demo.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rackafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from rackafka.group.assignors import (
    AssignmentInput,
    MemberSubscription,
    PartitionReplicas,
    assignor_for_name,
)
from rackafka.testing import (
    PartitionInfo,
    ServedCluster,
    ServedClusterError,
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

GROUP_ID = "demo-group"
GROUP_TOPIC = "demo-group-events"
GROUP_LABEL = "3-rack group"
GROUP_PARTITIONS = 12
# Two replicas over three racks: no rack holds every partition, so which member owns which
# partition decides whether it can be read in the member's own rack (KIP-881).
GROUP_REPLICATION = 2
# The rack-aware assignors (KIP-881); roundrobin is not one.
GROUP_STRATEGIES = ("range", "sticky", "cooperative-sticky")
DEFAULT_STRATEGY = "cooperative-sticky"
#: The group protocols of ``--group-protocol``; "both" runs the group part with each.
GROUP_PROTOCOLS = ("classic", "consumer")
# The group has settled when every partition has one owner, every member owns some, and no
# member's assignment has changed for this long.
SETTLE_SECONDS = 1.0
# How long the coordinator waits for more members before a new group's first assignment
# (Kafka's group.initial.rebalance.delay.ms, 3 s by default): the three members start
# together and should all be in the first one.
INITIAL_REBALANCE_DELAY_MS = 500


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
        served_bytes: record bytes each broker served the consumer, counted on the broker
            side (by the brokers' rack-aware front), not by the consumer.
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
    served_bytes: dict[int, int] = field(default_factory=dict)

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
class MemberResult:
    """One member of the demo's consumer group.

    Attributes:
        client_rack: the member's ``client_rack`` (the rack it runs in).
        partitions: the partitions of the group topic it owned while the records were read.
        aligned: how many of them have a replica in ``client_rack``.
        bytes_by_rack: record bytes served per broker rack (``fetch_stats().racks``).
        records: records it received, duplicates included.
    """

    client_rack: str
    partitions: list[int]
    aligned: int = 0
    bytes_by_rack: dict[str | None, int] = field(default_factory=dict)
    records: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_rack.values())

    @property
    def same_rack_bytes(self) -> int:
        return self.bytes_by_rack.get(self.client_rack, 0)

    @property
    def cross_rack_bytes(self) -> int:
        return self.total_bytes - self.same_rack_bytes


@dataclass
class GroupResult:
    """What the demo's 3-rack consumer group did.

    Attributes:
        strategy: the members' ``partition_assignment_strategy``.
        partitions: partitions of the group's topic.
        replica_racks: partition -> the racks of its replicas.
        settle_seconds: from starting the members to a settled assignment.
        unaware_misplaced: partitions that the same assignor, given no racks, would give to
            a member with no replica in its rack (what rack-aware assignment avoids).
        members: one per rack, in rack order.
        total: all members' records checked together: each acknowledged record must
            have reached exactly one member, once.
        stable: no member's assignment changed while the records were read.
        group_protocol: ``"classic"`` (the members assign, rack-aware) or ``"consumer"``
            (KIP-848: the coordinator assigns, without racks). With ``"consumer"`` a member
            may own partitions with no replica in its rack, and read them across racks:
            that is shown, not counted as a failure.
    """

    strategy: str
    partitions: int
    replica_racks: dict[int, tuple[str, ...]]
    settle_seconds: float
    unaware_misplaced: int
    members: list[MemberResult]
    total: RunResult
    stable: bool = True
    group_protocol: str = "classic"

    @property
    def label(self) -> str:
        return GROUP_LABEL if self.group_protocol == "classic" else f"{GROUP_LABEL} (KIP-848)"

    @property
    def aligned(self) -> int:
        """Partitions owned by a member with a replica of them in its rack."""
        return sum(m.aligned for m in self.members)

    @property
    def total_bytes(self) -> int:
        return sum(m.total_bytes for m in self.members)

    @property
    def cross_rack_bytes(self) -> int:
        return sum(m.cross_rack_bytes for m in self.members)

    @property
    def same_rack_bytes(self) -> int:
        return sum(m.same_rack_bytes for m in self.members)

    def failures(self) -> list[str]:
        """Why the group part failed; empty when every check passed."""
        problems: list[str] = []
        if not self.total.exactly_once:
            problems.append(_not_exactly_once(self.total))
        owners = Counter(p for m in self.members for p in m.partitions)
        unowned = [p for p in range(self.partitions) if p not in owners]
        shared = sorted(p for p, n in owners.items() if n > 1)
        if unowned or shared:
            problems.append(
                f"{GROUP_LABEL}: partitions without an owner {unowned}, with several {shared}"
            )
        rack_aware = self.group_protocol == "classic"
        for m in self.members:
            if not m.partitions:
                problems.append(f"{GROUP_LABEL}: the member in {m.client_rack} owned nothing")
            elif rack_aware and m.aligned != len(m.partitions):
                problems.append(
                    f"{GROUP_LABEL}: the member in {m.client_rack} owned "
                    f"{len(m.partitions) - m.aligned} partitions with no replica in its rack"
                )
            if rack_aware and m.cross_rack_bytes:
                problems.append(
                    f"{GROUP_LABEL}: {m.cross_rack_bytes:,} bytes came from other racks than "
                    f"{m.client_rack} to the member there"
                )
        if not self.stable:
            problems.append(f"{GROUP_LABEL}: the assignment changed while the records were read")
        if self.total_bytes == 0:
            problems.append(f"{GROUP_LABEL}: no record bytes were counted at all")
        return problems


@dataclass
class DemoReport:
    """Everything the demo measured.

    Attributes:
        records: records produced (and acknowledged).
        partitions: partitions of the topic.
        produce_seconds: time taken to produce them.
        brokers: broker id -> rack.
        leaders_by_rack: rack -> number of partitions its broker leads.
        runs: the consumer runs, without and with ``client_rack``: of each, the run with the
            median records/s.
        repeats: every consumer run, ``runs`` included (``repeat`` of each, alternating);
            each must pass the checks.
        group: the 3-rack consumer group with the classic protocol and rack-aware
            assignment (None when it was not run).
        kip848_group: the same group with the KIP-848 protocol (None when not run).
    """

    records: int
    partitions: int
    produce_seconds: float
    brokers: dict[int, str | None]
    leaders_by_rack: dict[str | None, int]
    runs: list[RunResult]
    group: GroupResult | None = None
    kip848_group: GroupResult | None = None
    repeats: list[RunResult] = field(default_factory=list)

    def failures(self) -> list[str]:
        """Why the demo failed; empty when every check passed."""
        problems: list[str] = []
        for run in self.runs + [r for r in self.repeats if r not in self.runs]:
            if not run.exactly_once:
                problems.append(_not_exactly_once(run))
            if run.client_rack is not None and run.cross_rack_bytes != 0:
                problems.append(
                    f"{run.label}: {run.cross_rack_bytes:,} bytes came from other racks "
                    f"than {run.client_rack} ({run.same_rack_share:.1%} same rack, expected 100%)"
                )
            if run.client_rack is not None and run.total_bytes == 0:
                problems.append(f"{run.label}: no record bytes were counted at all")
        for group in (self.group, self.kip848_group):
            if group is not None:
                problems += group.failures()
        return problems

    @property
    def ok(self) -> bool:
        return not self.failures()


def _not_exactly_once(run: RunResult) -> str:
    return (
        f"{run.label}: not exactly once (expected {run.expected:,}, received "
        f"{run.received:,}, duplicates {run.duplicates:,}, missing {run.missing:,}, "
        f"unexpected {run.unexpected:,}, wrong values {run.bad_values:,})"
    )


def demo_cluster(engine: str | None = None) -> ServedCluster:
    """The demo's 3-rack cluster, in a process of its own (not started).

    Its brokers select replicas per client rack (``replica_selector="rack-aware"``), a new
    classic group's first rebalance waits ``INITIAL_REBALANCE_DELAY_MS`` for more members,
    and KIP-848 members heartbeat every 200 ms, so that they pick up moves quickly.
    ``engine``: the ``serve`` command's ``--engine`` (None: the embedded brokers).
    """
    return ServedCluster(
        brokers=len(RACKS),
        racks=RACKS,
        replica_selector="rack-aware",
        group_initial_rebalance_delay_ms=INITIAL_REBALANCE_DELAY_MS,
        consumer_group_heartbeat_interval_ms=200,
        engine=engine,
    )


def _engine_label(engine: str | None) -> str:
    """How the report names the brokers of ``engine``."""
    if engine in (None, "mock"):
        return "embedded mock brokers"
    if engine == "kafka":
        return "Apache Kafka brokers, Kafka's RackAwareReplicaSelector"
    return engine


def read_timeout(records: int) -> float:
    """Seconds to wait for ``records`` records to be read: a minute plus 1 s per 5,000
    records (a slow 2-core machine reads well over 50,000 a second)."""
    return 60.0 + records / 5_000


def _served(cluster: ServedCluster) -> Counter[int]:
    """Record bytes each broker has served in Fetch responses so far (counted by the
    cluster's rack-aware front, whatever the client says; empty when the cluster does not
    count them)."""
    served: Counter[int] = Counter()
    for (node, _rack), n in (cluster.served_bytes() or {}).items():
        served[node] += n
    return served


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
    cluster: ServedCluster,
    partitions: int,
    expected_offsets: dict[int, tuple[int, int]],
    *,
    label: str,
    client_rack: str | None,
    home_rack: str,
    timeout: float | None = None,
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
        timeout: give up (and report the rest as missing) after this many seconds
            (default: :func:`read_timeout` of the records expected).
        quiet_ms: after the last expected record, keep polling this long for extra records
            (duplicates would show up there).
    """
    expected = sum(last - first + 1 for first, last in expected_offsets.values())
    if timeout is None:
        timeout = read_timeout(expected)
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

    before = await asyncio.to_thread(_served, cluster)
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
    after = await asyncio.to_thread(_served, cluster)
    result.served_bytes = {n: after[n] - before.get(n, 0) for n in after}
    _tally(result, partitions, expected_offsets, offsets, values)
    return result


def _tally(
    result: RunResult,
    partitions: int,
    expected_offsets: dict[int, tuple[int, int]],
    offsets: dict[int, list[int]],
    values: dict[int, list[bytes | None]],
) -> None:
    """Count what arrived against what was acknowledged, into ``result``.

    Arguments:
        result: where the counts go (``received`` ... ``bad_values``).
        partitions: the topic's partition count.
        expected_offsets: partition -> (first, last) offset the producer got acknowledged.
        offsets: partition -> the offsets received, in arrival order, duplicates included.
        values: partition -> the values received, in the same order.
    """
    indices: list[int] = []
    for p in sorted(set(expected_offsets) | set(offsets)):
        got = offsets.get(p, [])
        first, last = expected_offsets.get(p, (0, -1))
        unique = set(got)
        result.received += len(got)
        result.unique += len(unique)
        result.missing += sum(1 for o in range(first, last + 1) if o not in unique)
        result.unexpected += sum(1 for o in unique if not first <= o <= last)
        # Record i was written to partition i % partitions with default_value(i): a value
        # read from the wrong partition, garbled, or delivered twice shows up here.
        seen: dict[int, int] = {}
        for offset, value in zip(got, values.get(p, [])):
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


class _AssignmentWatch(ConsumerRebalanceListener):
    """A rebalance listener that notes when its member's assignment last changed."""

    def __init__(self) -> None:
        self.changes = 0
        self.last_change = time.monotonic()

    def _changed(self) -> None:
        self.changes += 1
        self.last_change = time.monotonic()

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._changed()

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self._changed()


def _rack_unaware_misplaced(
    strategy: str, infos: Sequence[PartitionInfo], broker_racks: dict[int, str | None]
) -> int:
    """Partitions the assignor, given no racks, gives to a member with no replica in its rack.

    Computed for a new group of one member per rack (member ids in rack order), with
    rackafka's own assignor and the racks left out of the members' subscriptions.
    """
    member_rack = {f"member-{i}": rack for i, rack in enumerate(RACKS)}
    data = AssignmentInput(
        {GROUP_TOPIC: [PartitionReplicas(i.partition, i.replicas) for i in infos]},
        broker_racks,
        [MemberSubscription(member, [GROUP_TOPIC]) for member in member_rack],
    )
    replicas = {i.partition: i.replicas for i in infos}
    return sum(
        1
        for member, tps in assignor_for_name(strategy).assign(data).items()
        for tp in tps
        if member_rack[member] not in {broker_racks.get(r) for r in replicas[tp.partition]}
    )


async def run_group_demo(
    cluster: ServedCluster,
    records: int,
    partitions: int = GROUP_PARTITIONS,
    *,
    strategy: str = DEFAULT_STRATEGY,
    group_protocol: str = "classic",
    echo: Callable[[str], None] | None = None,
    timeout: float | None = None,
    quiet_ms: int = 300,
) -> GroupResult:
    """Read a topic with a consumer group of one member per rack, and check what arrived.

    Creates ``demo-group-events`` with replication factor 2 (each partition has replicas
    in two of the three racks), starts three consumers in group ``demo-group`` with
    ``client_rack`` az-a, az-b and az-c, waits until the group has settled, produces
    ``records`` records and reads them all across the group. Each member's Fetch names its
    rack, and the brokers' rack-aware selector answers it with the replica in that rack.

    Arguments:
        cluster: the running 3-rack cluster of :func:`demo_cluster`
            (``demo-group-events`` must not exist yet).
        records: records to produce (of 100 bytes each).
        partitions: partitions of the group's topic.
        strategy: the members' ``partition_assignment_strategy`` (classic protocol).
        group_protocol: ``"classic"``, or ``"consumer"`` for KIP-848: the coordinator
            assigns (with its server-side assignor, which ignores racks), the topic
            and group names get a ``-kip848`` suffix.
        echo: called with progress lines (default: silent).
        timeout: give up waiting for the group to settle, and for the records, after
            this many seconds each (default: :func:`read_timeout` of ``records``).
        quiet_ms: after the last expected record, keep polling this long for extra records.
    """
    say = echo or (lambda _line: None)
    if timeout is None:
        timeout = read_timeout(records)
    if cluster.replica_selector != "rack-aware":
        raise ValueError("the group demo needs a cluster with replica_selector='rack-aware'")
    if group_protocol not in GROUP_PROTOCOLS:
        raise ValueError(f"group_protocol must be one of {GROUP_PROTOCOLS}, got {group_protocol!r}")
    kip848 = group_protocol == "consumer"
    topic = GROUP_TOPIC + ("-kip848" if kip848 else "")
    group_id = GROUP_ID + ("-kip848" if kip848 else "")
    if kip848:
        # The coordinator's heartbeat interval (200 ms, demo_cluster) makes members
        # acknowledge and pick up moves quickly.
        membership: dict[str, Any] = {"group_protocol": "consumer"}
    else:
        # Short heartbeats and session: a member that joins late is noticed at once,
        # and the embedded coordinator waits (session timeout - 1 s) for the others.
        membership = {
            "partition_assignment_strategy": strategy,
            "heartbeat_interval_ms": 200,
            "session_timeout_ms": 3000,
        }
    infos = await asyncio.to_thread(
        cluster.create_topic, topic, partitions, replication_factor=GROUP_REPLICATION
    )
    broker_racks = {b.node_id: b.rack for b in cluster.brokers.values()}
    replica_racks = {
        i.partition: tuple(sorted({r for b in i.replicas if (r := broker_racks.get(b))}))
        for i in infos
    }
    say(
        f"topic     {topic}: {partitions} partitions, replication factor "
        f"{GROUP_REPLICATION} (replicas in 2 of the 3 racks)"
    )
    watches = [_AssignmentWatch() for _rack in RACKS]
    members: list[AIOKafkaConsumer[bytes, bytes]] = [
        AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            client_id=f"rackafka-demo-group-{rack}",
            group_id=group_id,
            client_rack=rack,
            auto_offset_reset="earliest",
            **membership,
        )
        for rack in RACKS
    ]
    for member, watch in zip(members, watches):
        member.subscribe([topic], listener=watch)
    say(
        f"group     {group_id}: one consumer per rack (client_rack {', '.join(RACKS)}),\n"
        + (
            '          group_protocol="consumer" (KIP-848: the coordinator assigns) ...'
            if kip848
            else f'          partition_assignment_strategy="{strategy}" ...'
        )
    )
    started = time.monotonic()
    await asyncio.gather(*(m.start() for m in members))
    try:

        def settled() -> bool:
            owned = [tp for m in members for tp in m.assignment()]
            return (
                all(m.assignment() for m in members)
                and len(owned) == len(set(owned)) == partitions
                and time.monotonic() - max(w.last_change for w in watches) >= SETTLE_SECONDS
            )

        while not settled() and time.monotonic() - started < timeout:
            await asyncio.sleep(0.05)
        settle_seconds = max(0.0, max(w.last_change for w in watches) - started)
        owned = [sorted(tp.partition for tp in m.assignment()) for m in members]
        unaware = _rack_unaware_misplaced(strategy, infos, broker_racks)
        if kip848:
            aligned = sum(
                1 for rack, ps in zip(RACKS, owned) for p in ps if rack in replica_racks[p]
            )
            say(
                f"assigned  in {settle_seconds:.1f} s by the coordinator: {aligned} of the "
                f"{partitions} partitions went to a member\n          with a replica in its "
                "rack (its assignor does not use racks)"
            )
        else:
            say(
                f"assigned  in {settle_seconds:.1f} s (without racks, {strategy} would give "
                f"{unaware} of the {partitions} partitions\n          to a member with no "
                "replica in its rack)"
            )
        say(
            "selector  each leader names the replica in the rack of the member that fetches "
            "(RackAwareReplicaSelector)"
        )
        changes = [w.changes for w in watches]
        t0 = time.perf_counter()
        produced = await cluster.aproduce(
            topic, records, value_size=VALUE_SIZE, partition="spread", batch_size=BATCH_BYTES
        )
        produce_seconds = time.perf_counter() - t0
        expected = {
            p: (produced.first_offsets[p], produced.last_offsets[p]) for p in produced.counts
        }
        say(
            f"produced  {produced.count:,} records in {produce_seconds:.1f} s "
            f"({produced.count / max(produce_seconds, 1e-9):,.0f} records/s); "
            "the group reads them ..."
        )

        offsets: list[dict[int, list[int]]] = [{} for _m in members]
        values: list[dict[int, list[bytes | None]]] = [{} for _m in members]
        remaining = {p for p, (first, last) in expected.items() if last >= first}
        last_wanted = {p: last for p, (_first, last) in expected.items()}
        all_in = asyncio.Event()
        stop = asyncio.Event()
        if not remaining:
            all_in.set()

        async def drain(i: int) -> None:
            while not stop.is_set():
                batch = await members[i].getmany(timeout_ms=100)
                for tp, recs in batch.items():
                    p = tp.partition
                    offsets[i].setdefault(p, []).extend([r.offset for r in recs])
                    values[i].setdefault(p, []).extend([r.value for r in recs])
                    if p in remaining and recs[-1].offset >= last_wanted[p]:
                        remaining.discard(p)
                        if not remaining:
                            all_in.set()

        tasks = [asyncio.ensure_future(drain(i)) for i in range(len(members))]
        try:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(all_in.wait(), timeout)
            await asyncio.sleep(quiet_ms / 1000)  # duplicates would arrive now
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        stats = [m.fetch_stats() for m in members]
        stable = [w.changes for w in watches] == changes and owned == [
            sorted(tp.partition for tp in m.assignment()) for m in members
        ]
    finally:
        await asyncio.gather(*(m.stop() for m in members))

    total = RunResult(GROUP_LABEL + (" (KIP-848)" if kip848 else ""), None, "", produced.count)
    _tally(
        total,
        partitions,
        expected,
        {p: [o for got in offsets for o in got.get(p, [])] for p in range(partitions)},
        {p: [v for got in values for v in got.get(p, [])] for p in range(partitions)},
    )
    total.bytes_by_rack = dict(
        sum((Counter({r: c.bytes for r, c in st.racks.items()}) for st in stats), Counter())
    )
    results = [
        MemberResult(
            rack,
            ps,
            aligned=sum(1 for p in ps if rack in replica_racks[p]),
            bytes_by_rack={r: c.bytes for r, c in st.racks.items()},
            records=sum(len(got) for got in offs.values()),
        )
        for rack, ps, st, offs in zip(RACKS, owned, stats, offsets)
    ]
    return GroupResult(
        group_protocol=group_protocol,
        strategy=strategy if not kip848 else "",
        partitions=partitions,
        replica_racks=replica_racks,
        settle_seconds=settle_seconds,
        unaware_misplaced=unaware,
        members=results,
        total=total,
        stable=stable,
    )


def _check_fits(records: int, partitions: int, option: str) -> None:
    """Refuse a topic the embedded brokers would not keep whole (ValueError)."""
    if partitions < 1:
        raise ValueError(f"{option} must be >= 1, got {partitions}")
    per_partition = -(-records // partitions) * (VALUE_SIZE + _RECORD_OVERHEAD)
    if per_partition > MAX_PARTITION_BYTES:
        most = MAX_PARTITION_BYTES // (VALUE_SIZE + _RECORD_OVERHEAD) * partitions
        raise ValueError(
            f"{records:,} records over {partitions} partitions is ~{per_partition / 1e6:.1f} MB "
            f"per partition; the embedded brokers keep 5 MiB per partition, so use at most "
            f"{most:,} records or more {option}"
        )


async def run_demo(
    records: int = 300_000,
    partitions: int = 12,
    *,
    client_rack: str = CLIENT_RACK,
    group: bool = True,
    group_partitions: int = GROUP_PARTITIONS,
    strategy: str = DEFAULT_STRATEGY,
    group_protocol: str = "both",
    echo: Callable[[str], None] | None = None,
    engine: str | None = None,
    repeat: int = 1,
) -> DemoReport:
    """Start the cluster, produce, consume twice, then as a group, and return the results.

    Arguments:
        records: records to produce (of 100 bytes each), into each topic.
        partitions: partitions of the first topic (replication factor 3).
        client_rack: the rack the consumer of the first two runs is in.
        group: also run the 3-rack consumer group (:func:`run_group_demo`).
        group_partitions: partitions of the group's topic (replication factor 2).
        strategy: the group members' ``partition_assignment_strategy``.
        group_protocol: the group part's protocol: ``"classic"`` (rack-aware assignors),
            ``"consumer"`` (KIP-848), or ``"both"``, one after the other.
        echo: called with progress lines (default: silent).
        engine: the cluster's engine, ``python -m rackafka.testing serve --engine`` (None:
            the embedded brokers).
        repeat: read the first topic this many times without and with ``client_rack``
            (alternating); the report shows the run with the median records/s of each.

    Raises:
        ValueError: the arguments do not fit the embedded brokers.
        ServedClusterError: the cluster could not start or failed.
    """
    say = echo or (lambda _line: None)
    if client_rack not in RACKS:
        raise ValueError(f"client_rack must be one of {', '.join(RACKS)}, got {client_rack!r}")
    if strategy not in GROUP_STRATEGIES:
        raise ValueError(
            f"strategy must be one of {', '.join(GROUP_STRATEGIES)} (the rack-aware "
            f"assignors), got {strategy!r}"
        )
    if group_protocol not in (*GROUP_PROTOCOLS, "both"):
        raise ValueError(
            f"group_protocol must be classic, consumer or both, got {group_protocol!r}"
        )
    if records < 1:
        raise ValueError(f"--records must be >= 1, got {records}")
    if repeat < 1:
        raise ValueError(f"--repeat must be >= 1, got {repeat}")
    if engine in (None, "mock"):  # real Kafka brokers keep what they are given
        _check_fits(records, partitions, "--partitions")
        if group:
            _check_fits(records, group_partitions, "--group-partitions")

    async with demo_cluster(engine) as cluster:
        brokers = {b.node_id: b.rack for b in cluster.brokers.values()}
        infos = await asyncio.to_thread(cluster.create_topic, TOPIC, partitions, 3)
        leaders = Counter(brokers[i.leader] for i in infos)
        say(
            "cluster   "
            + ", ".join(f"broker {n} in {r}" for n, r in sorted(brokers.items()))
            + f"\n          ({_engine_label(engine)}, 127.0.0.1,"
            "\n          in a process of its own: python -m rackafka.testing serve)"
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
            f"({produced.count * VALUE_SIZE / 1e6:.1f} MB of values) in {produce_seconds:.1f} s\n"
            f"          ({produced.count / max(produce_seconds, 1e-9):,.0f} records/s, rackafka's "
            "AIOKafkaProducer, acks=all)"
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
        without: list[RunResult] = []
        with_rack: list[RunResult] = []
        times = f" ({repeat} times each, alternating)" if repeat > 1 else ""
        say(
            f"consumer  in {client_rack}: reading everything without client_rack, then with\n"
            f'          client_rack="{client_rack}"{times} ...'
        )
        for _round in range(repeat):
            # A consumer without client_rack sends an empty rack id: Kafka's
            # RackAwareReplicaSelector then names no preferred replica, so the leaders
            # serve it.
            without.append(
                await consume_all(
                    cluster, partitions, expected,
                    label="without client_rack", client_rack=None, home_rack=client_rack,
                )
            )  # fmt: skip
            with_rack.append(
                await consume_all(
                    cluster, partitions, expected,
                    label=f'client_rack="{client_rack}"', client_rack=client_rack,
                    home_rack=client_rack,
                )
            )  # fmt: skip
        runs = [_median_run(without), _median_run(with_rack)]
        group_result = kip848_result = None
        if group and group_protocol in ("classic", "both"):
            say("")
            group_result = await run_group_demo(
                cluster, records, group_partitions, strategy=strategy, echo=say
            )
        if group and group_protocol in ("consumer", "both"):
            say("")
            kip848_result = await run_group_demo(
                cluster, records, group_partitions, group_protocol="consumer", echo=say
            )

    return DemoReport(
        records=produced.count,
        partitions=partitions,
        produce_seconds=produce_seconds,
        brokers=brokers,
        leaders_by_rack=dict(leaders),
        runs=runs,
        group=group_result,
        kip848_group=kip848_result,
        repeats=[r for pair in zip(without, with_rack) for r in pair],
    )


def _median_run(runs: Sequence[RunResult]) -> RunResult:
    """The run with the median records/s (of an even number, the lower middle one)."""
    ordered = sorted(runs, key=lambda r: r.records_per_second)
    return ordered[(len(ordered) - 1) // 2]


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
    rounds = len(report.repeats) // max(len(report.runs), 1)
    median = f"median of {rounds} runs each; " if rounds > 1 else ""
    out.append(
        f"(records/s: {median}rackafka's consumer alone in this process, from its creation\n"
        " to its last record; the brokers and the replica selector run in another process)"
    )
    out.append("")
    racks = sorted(report.brokers.items())
    for run in report.runs:
        per_rack = ", ".join(f"{rack} {_mb(run.bytes_by_rack.get(rack, 0))}" for rack in RACKS)
        served = ", ".join(f"{rack} {_mb(run.served_bytes.get(n, 0))}" for n, rack in racks)
        out.append(f"{run.label}:")
        out.append(f"  record bytes by rack    {per_rack}  (consumer.fetch_stats())")
        if run.served_bytes:  # counted by the front; an engine without one counts nothing
            out.append(f"  served by the brokers   {served}  (counted by the brokers)")
    with_rack = [r for r in report.runs if r.client_rack is not None]
    if with_rack and with_rack[0].total_bytes and not with_rack[0].cross_rack_bytes:
        out.append(
            "  (the leaders in other racks answered the first Fetch of their partitions with\n"
            f"   no records and the name of the replica in {home})"
        )
    out.append("")
    for group in (report.group, report.kip848_group):
        if group is not None:
            out += _format_group(group)
            out.append("")
    if report.group is not None and report.kip848_group is not None:
        out += _compare_groups(report.group, report.kip848_group)
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
        for group in (report.group, report.kip848_group):
            if group is not None:
                total = group.total
                out.append(
                    f"OK: {group.label}: all {total.expected:,} records arrived exactly once "
                    f"across the group;\n    cross-rack bytes: {_mb(group.cross_rack_bytes)}."
                )
    return "\n".join(out)


def _compare_groups(classic: GroupResult, kip848: GroupResult) -> list[str]:
    """The two protocols side by side: where the partitions went, what crossed racks."""
    rows = [
        ("group protocol", "partitions in a rack with a replica", "cross-rack bytes"),
        (
            f'classic, "{classic.strategy}" (KIP-881)',
            f"{classic.aligned} of {classic.partitions}",
            _mb(classic.cross_rack_bytes),
        ),
        (
            "consumer (KIP-848, server assignor)",
            f"{kip848.aligned} of {kip848.partitions}",
            _mb(kip848.cross_rack_bytes),
        ),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return [
        "The group part with each protocol (replication factor 2: a member that owns a partition",
        "with no replica in its rack reads it from another rack):",
        lines[0],
        "  ".join("-" * w for w in widths),
        *lines[1:],
        "Kafka's server-side assignors do not use the members' racks (KIP-848 sends them);",
        "rack-aware placement needs the classic protocol with rackafka's assignors.",
    ]


def _format_group(group: GroupResult) -> list[str]:
    """The group part's table: one row per member, then the group's totals."""
    header = ("member in", "partitions owned", "own rack", "other racks", "records")
    rows = [
        (
            m.client_rack,
            " ".join(str(p) for p in m.partitions) or "-",
            _mb(m.same_rack_bytes),
            _mb(m.cross_rack_bytes),
            f"{m.records:,}",
        )
        for m in group.members
    ]
    owned = sum(len(m.partitions) for m in group.members)
    rows.append(
        (
            "group",
            f"{owned} of {group.partitions}",
            _mb(group.same_rack_bytes),
            _mb(group.cross_rack_bytes),
            f"{group.total.received:,}",
        )
    )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        left = [c.ljust(w) for c, w in zip(cells[:2], widths[:2])]
        right = [c.rjust(w) for c, w in zip(cells[2:], widths[2:])]
        return "  ".join(left + right).rstrip()

    rule = "  ".join("-" * w for w in widths)
    how = (
        f'group_id="{GROUP_ID}", partition_assignment_strategy="{group.strategy}"'
        if group.group_protocol == "classic"
        else f'group_id="{GROUP_ID}-kip848", group_protocol="consumer"'
    )
    out = [
        f"{group.label} ({how}):",
        line(header),
        rule,
        *(line(r) for r in rows[:-1]),
        rule,
        line(rows[-1]),
        "",
    ]
    aligned = group.aligned
    total = group.total
    out.append(
        f"  partitions owned in a rack with a replica  {aligned} of {owned} "
        + (
            f"(with no racks: {group.partitions - group.unaware_misplaced} of {group.partitions})"
            if group.group_protocol == "classic"
            else "(assigned by the coordinator, without racks)"
        )
    )
    out.append(
        f"  exactly once across the group            "
        f"{'yes' if total.exactly_once else 'NO'} (received {total.received:,} of "
        f"{total.expected:,}, duplicates {total.duplicates:,}, missing {total.missing:,})"
    )
    out.append(f"  cross-rack bytes                         {_mb(group.cross_rack_bytes)}")
    if not group.stable:
        out.append("  the assignment changed while the records were read")
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python examples/demo.py",
        description=(
            "Read a topic from an embedded 3-rack Kafka cluster with and without client_rack, "
            "then with a consumer group of one member per rack, and show where the bytes came "
            "from and that every record arrived exactly once."
        ),
    )
    parser.add_argument(
        "--records",
        type=int,
        default=300_000,
        help="records to produce into each topic (default: 300000)",
    )
    parser.add_argument(
        "--partitions", type=int, default=12, help="partitions of the first topic (default: 12)"
    )
    parser.add_argument(
        "--group-partitions",
        type=int,
        default=GROUP_PARTITIONS,
        help=f"partitions of the group's topic (default: {GROUP_PARTITIONS})",
    )
    parser.add_argument(
        "--strategy",
        choices=GROUP_STRATEGIES,
        default=DEFAULT_STRATEGY,
        help=f"the group's partition_assignment_strategy (default: {DEFAULT_STRATEGY})",
    )
    parser.add_argument(
        "--group-protocol",
        choices=(*GROUP_PROTOCOLS, "both"),
        default="both",
        help=(
            "the group part's protocol: classic (rack-aware assignors, KIP-881), consumer "
            "(KIP-848, the coordinator assigns), or both side by side (default: both)"
        ),
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="read the first topic this many times without and with client_rack and show "
        "the median records/s of each (default: 3)",
    )
    parser.add_argument("--no-group", action="store_true", help="skip the consumer group part")
    parser.add_argument(
        "--engine",
        default=None,
        help=(
            "the cluster's engine, passed to 'python -m rackafka.testing serve --engine' "
            "(default: the server's own, the embedded librdkafka mock brokers)"
        ),
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
        f"rackafka demo: fetch from the closest replica (KIP-392), consumer in rack {CLIENT_RACK}"
    )
    if not args.no_group:
        print("              then a 3-rack group reading only from its own racks (KIP-881)")
    print()
    try:
        report = asyncio.run(
            run_demo(
                args.records,
                args.partitions,
                group=not args.no_group,
                group_partitions=args.group_partitions,
                strategy=args.strategy,
                group_protocol=args.group_protocol,
                echo=lambda s: print(s, flush=True),
                engine=args.engine,
                repeat=args.repeat,
            )
        )
    except ServedClusterError as exc:
        print(f"the cluster failed: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_report(report))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
