"""Fault scenarios on real Kafka: a consumer group under broker and member faults.

A scenario runs a workload on a :class:`~rackafka.testing.KafkaCluster` of three racks
while a seeded :class:`FaultSchedule` plays, then checks what the group did:

* an idempotent producer writes numbered records (record ``n`` to partition ``n % 12``,
  value ``default_value(n, 100)``) to a topic with 12 partitions, replication factor 3 and
  ``min.insync.replicas=2``;
* a group of three members, one per rack (``client_rack``), reads with ``getmany()`` and
  ``commit()`` after each batch (classic ``cooperative-sticky``, classic eager ``range``,
  or KIP-848), or runs a transactional consume-transform-produce pipeline;
* the faults, drawn from the seed: a broker killed with SIGKILL and started again, one
  restarted gracefully, one frozen with SIGSTOP for about ten seconds, all three restarted
  in turn, a member closed and replaced, a member joining and another leaving.

The checks (:mod:`._fault_checks`): no acknowledged record lost; exactly once on the
pipeline's output (``read_committed``); duplicates at most ``max_records`` per ownership
change of a partition; ``getmany()`` never raises and ``commit()`` raises only
``CommitFailedError`` or ``RebalanceInProgressError``, at most once per rebalance the
member saw; after the last fault and a settle period every member reads from its own rack
only. :func:`run_scenario` returns a :class:`ScenarioReport` whose :meth:`~ScenarioReport.
assert_ok` raises with the seed and the whole report. ``tests/kafka/test_group_faults.py``
runs the short version; ``make faults`` the long one. See ``docs/testing.rst``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rackafka import AIOKafkaConsumer
from rackafka.structs import TopicPartition

from ._clients import default_value
from ._fault_checks import (
    Check,
    Ledger,
    RackWindow,
    ScenarioReport,
    check_duplicates,
    check_exceptions,
    check_no_loss,
    check_rack,
)
from ._fault_workload import GroupMember, SequenceWriter, TransactionalMember, output_value
from .kafka import KafkaCluster

__all__ = [
    "FAULT_KINDS",
    "SCENARIOS",
    "Fault",
    "FaultSchedule",
    "Scenario",
    "ScenarioReport",
    "WorkloadSettings",
    "run_scenario",
    "seed_from_env",
]

log = logging.getLogger("rackafka.testing.faults")

KILL = "kill"
RESTART = "restart"
FREEZE = "freeze"
ROLLING = "rolling"
REPLACE = "replace"
JOIN_LEAVE = "join-leave"
#: The kinds of fault: SIGKILL a broker (then start it), restart one gracefully (SIGTERM),
#: freeze one (SIGSTOP, then SIGCONT), restart all three in turn, close a member and start
#: another in its rack, a member joining and another leaving.
FAULT_KINDS: tuple[str, ...] = (KILL, RESTART, FREEZE, ROLLING, REPLACE, JOIN_LEAVE)

#: Rough seconds each kind takes on a small machine (to fill a long run with faults).
_COST = {KILL: 20.0, RESTART: 18.0, FREEZE: 18.0, ROLLING: 50.0, REPLACE: 6.0, JOIN_LEAVE: 12.0}

#: The default seed of the short scenarios (``RACKAFKA_FAULT_SEED`` overrides it).
DEFAULT_SEED = 37


def seed_from_env(environ: Mapping[str, str], default: int = DEFAULT_SEED) -> int:
    """``RACKAFKA_FAULT_SEED`` as an int (``random``: a new one), else ``default``."""
    text = environ.get("RACKAFKA_FAULT_SEED", "").strip()
    if not text:
        return default
    if text.lower() == "random":
        return random.SystemRandom().randrange(1, 10**6)
    return int(text)


@dataclass(frozen=True)
class Fault:
    """One fault of a schedule.

    Attributes:
        kind: one of :data:`FAULT_KINDS`.
        gap: seconds to wait before it, after the fault before it ended.
        broker: the broker to hit; None: the group coordinator's at that moment.
        fallback: the broker hit when the coordinator cannot be told.
        hold: seconds the broker stays down or frozen, or the newcomer stays.
        member: which member (index among the live ones, modulo their number).
        rack: the rack of a member that joins.
        order: the brokers of a rolling restart, in turn.
    """

    kind: str
    gap: float
    broker: int | None = None
    fallback: int = 1
    hold: float = 0.0
    member: int = 0
    rack: str = ""
    order: tuple[int, ...] = ()

    def __str__(self) -> str:
        target = "the coordinator" if self.broker is None else f"broker {self.broker}"
        what = {
            KILL: f"SIGKILL {target}, start it {self.hold:.0f} s later",
            RESTART: f"restart {target} gracefully ({self.hold:.0f} s down)",
            FREEZE: f"SIGSTOP {target} for {self.hold:.0f} s, then SIGCONT",
            ROLLING: f"rolling restart of brokers {list(self.order)}",
            REPLACE: f"close member #{self.member}, start another in its rack",
            JOIN_LEAVE: f"a member joins in {self.rack}, {self.hold:.0f} s later "
            f"member #{self.member} of the others leaves",
        }[self.kind]
        return f"after {self.gap:.0f} s: {what}"


@dataclass(frozen=True)
class FaultSchedule:
    """The faults of a run, in order, drawn from a seed."""

    seed: int
    faults: tuple[Fault, ...]

    @classmethod
    def draw(
        cls,
        seed: int,
        kinds: Sequence[str],
        *,
        seconds: float = 0.0,
        brokers: Sequence[int] = (1, 2, 3),
        racks: Sequence[str] = ("az-a", "az-b", "az-c"),
    ) -> FaultSchedule:
        """Each of ``kinds`` once, in an order drawn from ``seed``; then, while their
        rough cost is under ``seconds``, more drawn from ``kinds``. Brokers (or the
        coordinator), holds, members and gaps are drawn from the seed too, fault by fault:
        a longer run of the same seed begins with the faults of the shorter one."""
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown or not kinds:
            raise ValueError(f"fault kinds must be some of {FAULT_KINDS}, got {list(kinds)}")
        rng = random.Random(seed)
        chosen = rng.sample(list(kinds), len(kinds))
        cost = sum(_COST[k] + 6 for k in chosen)
        while cost < seconds:
            kind = rng.choice(list(kinds))
            chosen.append(kind)
            cost += _COST[kind] + 6
        faults = []
        for i, kind in enumerate(chosen):
            rng = random.Random(f"{seed}/{i}")
            order = tuple(rng.sample(list(brokers), len(brokers)))
            faults.append(
                Fault(
                    kind,
                    gap=round(rng.uniform(3.0, 8.0), 1),
                    broker=rng.choice([None, *brokers]),
                    fallback=rng.choice(list(brokers)),
                    hold=round(rng.uniform(*((8.0, 12.0) if kind == FREEZE else (3.0, 8.0))), 1),
                    member=rng.randrange(3),
                    rack=rng.choice(list(racks)),
                    order=order,
                )
            )
        return cls(seed, tuple(faults))

    def __iter__(self) -> Iterator[Fault]:
        return iter(self.faults)


@dataclass(frozen=True)
class Scenario:
    """A group under faults.

    Attributes:
        name: the scenario's name.
        consumer_options: the members' consumer options (beyond the common ones).
        short_faults: the fault kinds of the short (CI) run, each once.
        transactional: a consume-transform-produce pipeline instead of plain members.
    """

    name: str
    consumer_options: Mapping[str, Any]
    short_faults: tuple[str, ...]
    transactional: bool = False


_CLASSIC = {"session_timeout_ms": 10000, "heartbeat_interval_ms": 500}

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "cooperative-sticky",
            {**_CLASSIC, "partition_assignment_strategy": "cooperative-sticky"},
            (KILL, JOIN_LEAVE),
        ),
        Scenario(
            "eager", {**_CLASSIC, "partition_assignment_strategy": "range"}, (FREEZE, REPLACE)
        ),
        Scenario("kip848", {"group_protocol": "consumer"}, (RESTART, JOIN_LEAVE)),
        Scenario(
            "transactional",
            {
                **_CLASSIC,
                "partition_assignment_strategy": "cooperative-sticky",
                "isolation_level": "read_committed",
            },
            (KILL, REPLACE),
            transactional=True,
        ),
    )
}


@dataclass
class WorkloadSettings:
    """The sizes of a run.

    Attributes:
        seconds: the workload's length while faults play (at least until the last
            fault ends).
        long: every fault kind, drawn until ``seconds`` is filled (else the scenario's
            short kinds, once each).
        partitions: the topic's partitions.
        rate: records a second the producer aims at.
        value_size: bytes of each value.
        max_records: ``getmany(max_records=...)`` (the duplicates' bound per change).
        settle: seconds after the group settled before the rack window (longer than
            the consumers' ``metadata_max_age_ms``).
        window: seconds of the rack window.
        drain_timeout: seconds the group has to read every acknowledged record.
        settle_timeout: seconds the group has to form, and to settle after the faults.
        metadata_max_age_ms: the members' ``metadata_max_age_ms``.
    """

    seconds: float = 45.0
    long: bool = False
    partitions: int = 12
    rate: float = 250.0
    value_size: int = 100
    max_records: int = 50
    settle: float = 8.0
    window: float = 6.0
    drain_timeout: float = 60.0
    settle_timeout: float = 40.0
    metadata_max_age_ms: int = 5000


class _Run:
    """One scenario's run: the cluster, the workload, the faults, the report."""

    def __init__(
        self,
        kafka: KafkaCluster,
        scenario: Scenario,
        seed: int,
        settings: WorkloadSettings,
        out: Callable[[str], Any],
    ) -> None:
        self.kafka = kafka
        self.scenario = scenario
        self.seed = seed
        self.cfg = settings
        self.out = out
        tag = f"{scenario.name}-{seed}-{uuid.uuid4().hex[:6]}"
        self.topic = f"faults-{tag}"
        self.output = f"faults-out-{tag}"
        self.group = f"g-faults-{tag}"
        self.ledger = Ledger(settings.partitions)
        self.members: list[GroupMember] = []
        self.retired: list[GroupMember] = []
        self.report = ScenarioReport(scenario.name, seed, settings.seconds)
        self._count = 0
        self._rng = random.Random(seed)

    # -- members -------------------------------------------------------------------------
    def _consumer(self, rack: str) -> AIOKafkaConsumer[Any, Any]:
        return AIOKafkaConsumer(
            bootstrap_servers=self.kafka.bootstrap_servers,
            group_id=self.group,
            client_rack=rack,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=self.cfg.max_records,
            metadata_max_age_ms=self.cfg.metadata_max_age_ms,
            **self.scenario.consumer_options,
        )

    async def add_member(self, rack: str) -> GroupMember:
        self._count += 1
        name = f"m{self._count}"
        common: dict[str, Any] = {
            "max_records": self.cfg.max_records,
            "value_size": self.cfg.value_size,
        }
        member: GroupMember
        if self.scenario.transactional:
            member = TransactionalMember(
                name, rack, lambda: self._consumer(rack), self.topic, self.ledger,
                output=self.output, group_id=self.group,
                bootstrap_servers=self.kafka.bootstrap_servers,
                tid_prefix=f"tx-{self.group}", **common,
            )  # fmt: skip
        else:
            member = GroupMember(
                name, rack, lambda: self._consumer(rack), self.topic, self.ledger, **common
            )
        self.members.append(member)
        await member.start()
        return member

    async def retire(self, member: GroupMember) -> None:
        if member in self.members:
            self.members.remove(member)
            self.retired.append(member)
        await member.stop()

    def owned(self) -> dict[str, list[int]]:
        """Each live member's partitions."""
        return {
            m.name: sorted(tp.partition for tp in m.consumer.assignment()) for m in self.members
        }

    def split(self) -> bool:
        """Every partition owned by exactly one live member."""
        sets = [set(m.consumer.assignment()) for m in self.members]
        owned = [tp.partition for s in sets for tp in s]
        return len(owned) == self.cfg.partitions and set(owned) == set(range(len(owned)))

    async def settled(self, timeout: float, steady: float = 3.0) -> bool:
        """Wait until the partitions are split and stay so for ``steady`` seconds."""
        deadline = time.monotonic() + timeout
        since: float | None = None
        last: list[frozenset[Any]] = []
        while time.monotonic() < deadline:
            now = [m.consumer.assignment() for m in self.members]
            if self.split() and now == last:
                since = since or time.monotonic()
                if time.monotonic() - since >= steady:
                    return True
            else:
                since = None
            last = now
            await asyncio.sleep(0.1)
        return False

    async def observe(self) -> None:
        while True:
            for m in self.members:
                m.observe()
            await asyncio.sleep(0.1)

    # -- faults --------------------------------------------------------------------------
    def coordinator(self, fallback: int) -> int:
        """The group coordinator's broker, as a live member knows it (else ``fallback``)."""
        for m in self.members:
            node = getattr(getattr(m.consumer, "_coordinator", None), "coordinator_id", None)
            if isinstance(node, int) and node in self.kafka.brokers:
                return node
        return fallback

    async def play(self, fault: Fault) -> str:
        """Run one fault; returns what was done."""
        kafka = self.kafka
        broker = fault.broker if fault.broker is not None else self.coordinator(fault.fallback)

        def call(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
            return asyncio.to_thread(fn, *args, **kw)

        if fault.kind in (KILL, RESTART):
            await call(kafka.broker_down, broker, kill=fault.kind == KILL)
            await asyncio.sleep(fault.hold)
            await call(kafka.broker_up, broker)
            return f"broker {broker}"
        if fault.kind == FREEZE:
            await call(kafka.freeze_broker, broker)
            await asyncio.sleep(fault.hold)
            await call(kafka.thaw_broker, broker)
            return f"broker {broker}"
        if fault.kind == ROLLING:
            for b in fault.order:
                await call(kafka.restart_broker, b)
            return f"brokers {list(fault.order)}"
        if fault.kind == REPLACE:
            old = self.members[fault.member % len(self.members)]
            rack = old.stats.rack or fault.rack
            await self.retire(old)
            new = await self.add_member(rack)
            return f"{old.name} closed, {new.name} started in {rack}"
        # JOIN_LEAVE
        others = list(self.members)
        new = await self.add_member(fault.rack)
        await asyncio.sleep(fault.hold)
        leaving = others[fault.member % len(others)]
        await self.retire(leaving)
        return f"{new.name} joined in {fault.rack}, {leaving.name} left"

    async def play_all(self, schedule: FaultSchedule) -> None:
        for fault in schedule:
            await asyncio.sleep(fault.gap)
            began = self.ledger.clock()
            try:
                done = await self.play(fault)
            except Exception as exc:
                self.report.faults.append(f"t={began:5.1f}s {fault}: HARNESS ERROR {exc!r}")
                raise
            end = self.ledger.clock()
            self.report.faults.append(f"t={began:5.1f}-{end:5.1f}s {fault} ({done})")
            self.out(self.report.faults[-1])

    def restore(self) -> None:
        """Every broker thawed and up (after a failure too)."""
        for b in sorted(self.kafka.frozen_brokers):
            self.kafka.thaw_broker(b)
        for b in sorted(self.kafka.down_brokers):
            self.kafka.broker_up(b)

    # -- the phases ----------------------------------------------------------------------
    async def rack_window(self) -> list[RackWindow]:
        before = {m.name: m.consumer.fetch_stats() for m in self.members}
        await asyncio.sleep(self.cfg.window)
        windows = []
        for m in self.members:
            after = m.consumer.fetch_stats()
            b = before.get(m.name)
            same = after.same_rack_bytes - (b.same_rack_bytes if b else 0)
            cross = after.cross_rack_bytes - (b.cross_rack_bytes if b else 0)
            routes = {
                f"p{tp.partition}": (r.read_from, r.read_from_rack)
                for tp, r in sorted(after.partitions.items())
            }
            windows.append(RackWindow(m.name, m.stats.rack, same, cross, routes))
        return windows

    async def drain(self) -> None:
        deadline = time.monotonic() + self.cfg.drain_timeout
        while self.ledger.missing() and time.monotonic() < deadline:
            await asyncio.sleep(0.5)

    async def exactly_once_output(self) -> Check:
        """Every acknowledged input record once in the output, read_committed."""
        values = await read_committed(
            self.kafka.bootstrap_servers, self.output, self.cfg.partitions
        )
        expected = {seq for seq in self.ledger.acked.values()}
        counts: dict[int, int] = {}
        strange = 0
        for p, vs in values.items():
            for v in vs:
                seq = _output_seq(v)
                if (
                    seq is None
                    or seq % self.cfg.partitions != p
                    or v != output_value(default_value(seq, self.cfg.value_size))
                ):
                    strange += 1
                    continue
                counts[seq] = counts.get(seq, 0) + 1
        missing = sorted(expected - set(counts))
        dups = {s: n for s, n in counts.items() if n > 1}
        detail = (
            f"{sum(counts.values())} output records for {len(expected)} acknowledged inputs: "
            f"{len(missing)} missing (first {missing[:8]}), {len(dups)} written more than "
            f"once (first {sorted(dups.items())[:8]}), {strange} not of any input"
        )
        return Check(
            "exactly once on the output (read_committed)",
            not missing and not dups and not strange,
            detail,
        )

    async def run(self) -> ScenarioReport:
        cfg = self.cfg
        kinds = FAULT_KINDS if cfg.long else self.scenario.short_faults
        schedule = FaultSchedule.draw(
            self.seed, kinds, seconds=cfg.seconds if cfg.long else 0.0,
            racks=self.kafka.racks,
        )  # fmt: skip
        self.out(
            f"fault scenario {self.scenario.name!r}: seed={self.seed} "
            f"({'long' if cfg.long else 'short'}, {cfg.seconds:.0f} s; "
            f"replay with RACKAFKA_FAULT_SEED={self.seed}); faults: "
            + "; ".join(str(f) for f in schedule)
        )
        phases = self.report.phases
        began = time.monotonic()
        mark = began

        def phase(name: str) -> None:
            nonlocal mark
            now = time.monotonic()
            phases[name] = now - mark
            mark = now

        observer: asyncio.Task[None] | None = None
        player: asyncio.Task[None] | None = None
        writer: SequenceWriter | None = None
        try:
            self.kafka.create_topic(
                self.topic, cfg.partitions, 3, config={"min.insync.replicas": 2}
            )
            if self.scenario.transactional:
                self.kafka.create_topic(
                    self.output, cfg.partitions, 3, config={"min.insync.replicas": 2}
                )
            writer = await SequenceWriter(
                self.kafka.bootstrap_servers, self.topic, self.ledger,
                rate=cfg.rate, value_size=cfg.value_size,
            ).start()  # fmt: skip
            for rack in self.kafka.racks:
                await self.add_member(rack)
            observer = asyncio.ensure_future(self.observe())
            formed = await self.settled(cfg.settle_timeout)
            self.report.checks.append(
                Check(
                    "the group forms",
                    formed,
                    f"partitions split among the 3 members in {self.ledger.clock():.0f} s"
                    if formed
                    else f"not split among the 3 members after {cfg.settle_timeout:.0f} s: "
                    f"{self.owned()}",
                )
            )
            phase("group formed")
            player = asyncio.ensure_future(self.play_all(schedule))
            await asyncio.sleep(cfg.seconds)
            await player  # (raises a harness error)
            phase("workload and faults")
            ok = await self.settled(cfg.settle_timeout)
            self.report.checks.append(
                Check(
                    "the group settles after the faults",
                    ok,
                    f"{'' if ok else 'NOT '}every partition owned by one of "
                    f"{len(self.members)} members (in {cfg.settle_timeout:.0f} s): "
                    f"{self.owned()}",
                )
            )
            await asyncio.sleep(cfg.settle)
            phase("settle")
            windows = await self.rack_window()
            self.report.checks.append(check_rack(windows, cfg.window))
            phase("rack window")
            await writer.stop()
            await self.drain()
            phase("drain")
        finally:
            if player is not None and not player.done():
                player.cancel()
                with contextlib.suppress(BaseException):
                    await player
            if writer is not None:
                with contextlib.suppress(Exception):
                    await writer.stop()
            for m in list(self.members):
                await self.retire(m)
            if observer is not None:
                observer.cancel()
            await asyncio.to_thread(self.restore)
        phase("close")
        everyone = self.retired
        for m in everyone:
            if m.crashed is not None:
                self.report.notes.append(f"{m.name}'s loop died: {m.crashed!r}")
        checks = self.report.checks
        checks.insert(0, check_no_loss(self.ledger))
        checks.insert(1, check_duplicates(self.ledger, cfg.max_records))
        checks.insert(2, check_exceptions([m.stats for m in everyone], self.ledger))
        if self.scenario.transactional:
            checks.insert(1, await self.exactly_once_output())
            phase("output read")
        self.report.members = [m.stats for m in everyone]
        self.report.incidents = list(self.ledger.incidents)
        self.report.notes.extend(self.broker_notes())
        phases["total"] = time.monotonic() - began
        self.out(self.report.text())
        return self.report

    def broker_notes(self) -> list[str]:
        """What the brokers' logs say of the group: expirations and rebalances."""
        words = {"expired": 0, "rebalance": 0, "session timeout": 0, "fenced": 0}
        samples: list[str] = []
        for b in self.kafka.brokers:
            try:
                text = self.kafka.log_file(b).read_text(errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                if self.group not in line:
                    continue
                low = line.lower()
                for w in words:
                    if w in low:
                        words[w] += 1
                if ("expired" in low or "session timeout" in low) and len(samples) < 3:
                    samples.append(line[:300])
        notes = [
            "broker logs, lines of the group with "
            + ", ".join(f"{w!r}: {n}" for w, n in words.items())
        ]
        notes.extend(f"broker log: {s}" for s in samples)
        return notes


def _output_seq(value: bytes | None) -> int | None:
    if not value or not value.startswith(b"out|"):
        return None
    head = value[4:].split(b"|", 1)[0]
    return int(head) if head.isdigit() else None


async def read_committed(
    bootstrap_servers: str, topic: str, partitions: int, timeout: float = 120.0
) -> dict[int, list[bytes]]:
    """Every committed value of ``topic`` per partition, once every transaction on it has
    ended (the last stable offsets have reached the high watermarks)."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level="read_committed",
        fetch_max_wait_ms=200,
    )
    probe: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(bootstrap_servers=bootstrap_servers)
    await consumer.start()
    await probe.start()
    try:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        high = await probe.end_offsets(tps)
        ends = await consumer.end_offsets(tps)
        while ends != high:
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: last stable offsets {ends} < {high}")
            await asyncio.sleep(0.2)
            ends = await consumer.end_offsets(tps)
        out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        while True:
            positions = {tp: await consumer.position(tp) for tp in tps}
            if all(positions[tp] >= ends[tp] for tp in tps):
                return out
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: read {positions} of {ends} in {timeout} s")
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                out[tp.partition].extend(r.value or b"" for r in records)
    finally:
        await consumer.stop()
        await probe.stop()


async def run_scenario(
    kafka: KafkaCluster,
    scenario: str | Scenario,
    *,
    seed: int = DEFAULT_SEED,
    settings: WorkloadSettings | None = None,
    out: Callable[[str], Any] = print,
) -> ScenarioReport:
    """Run a fault scenario on ``kafka`` (three brokers in three racks) and return its
    report; every broker is up and thawed again when it returns or raises.

    Arguments:
        kafka: a running cluster of three brokers, one per rack.
        scenario: a :class:`Scenario` or the name of one of :data:`SCENARIOS`.
        seed: draws the faults, their targets and timings (printed first).
        settings: the sizes (default :class:`WorkloadSettings`: the short run).
        out: where the seed, each fault as it ends, and the report are written.

    Raises:
        KafkaClusterError: the harness could not play a fault (a broker did not come back).
    """
    chosen = SCENARIOS[scenario] if isinstance(scenario, str) else scenario
    return await _Run(kafka, chosen, seed, settings or WorkloadSettings(), out).run()
