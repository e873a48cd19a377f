"""What a fault scenario (:mod:`rackafka.testing.faults`) saw, and the checks made on it.

A :class:`Ledger` holds what the producer had acknowledged and every delivery to the
group's members; each member keeps a :class:`MemberStats`. :func:`evaluate` turns them into
:class:`Check` results, and :class:`ScenarioReport` prints them with the seed.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The errors ``commit()`` may raise under faults: the commit truly cannot succeed (the
#: member lost its partitions) or the group is rebalancing, as Java's consumer raises them.
EXPECTED_COMMIT_ERRORS: tuple[str, ...] = ("CommitFailedError", "RebalanceInProgressError")

#: How many exceptions of each kind a member keeps with their time and message.
_KEEP = 8


def _name(exc: BaseException) -> str:
    return type(exc).__name__


@dataclass
class Incident:
    """One exception a member (or the producer) got: when, where, what."""

    at: float
    where: str
    kind: str
    message: str

    def __str__(self) -> str:
        return f"t={self.at:6.1f}s {self.where}: {self.kind}: {self.message[:200]}"


@dataclass
class MemberStats:
    """What one member of the group did and saw."""

    name: str
    rack: str | None
    started_at: float = 0.0
    stopped_at: float | None = None
    batches: int = 0
    records: int = 0
    commits: int = 0
    #: ``commit()`` failures of the kinds allowed (:data:`EXPECTED_COMMIT_ERRORS`).
    commit_failures: Counter[str] = field(default_factory=Counter)
    #: ``commit()`` failures of other kinds (a client bug: it could have recovered).
    commit_errors: Counter[str] = field(default_factory=Counter)
    #: Exceptions ``start()`` raised (it never should).
    start_errors: Counter[str] = field(default_factory=Counter)
    #: Exceptions ``getmany()`` raised (it never should).
    poll_errors: Counter[str] = field(default_factory=Counter)
    #: Transactions that failed (the transactional pipeline), by exception type.
    txn_errors: Counter[str] = field(default_factory=Counter)
    #: Transactions committed (the transactional pipeline).
    transactions: int = 0
    incidents: list[Incident] = field(default_factory=list)
    _kept: Counter[tuple[str, str]] = field(default_factory=Counter, repr=False)
    #: ``on_partitions_assigned`` / ``on_partitions_revoked`` / ``on_partitions_lost`` calls.
    assigned_calls: int = 0
    revoked_calls: int = 0
    lost_calls: int = 0
    #: Member ids in the order they were seen (a new one: the member was reset).
    member_ids: list[str] = field(default_factory=list)
    #: Generations (classic) or member epochs (KIP-848) in the order they were seen.
    generations: list[int] = field(default_factory=list)
    #: Times the membership was seen to drop (member id or generation back to nothing).
    resets: int = 0

    def incident(self, clock: float, where: str, exc: BaseException) -> None:
        """Keep the first few exceptions of each kind at each place, with their time."""
        key = (where, _name(exc))
        self._kept[key] += 1
        if self._kept[key] <= 3 and len(self.incidents) < _KEEP * 4:
            self.incidents.append(Incident(clock, f"{self.name} {where}", _name(exc), str(exc)))

    @property
    def rebalances(self) -> int:
        """Rebalances the member took part in: listener calls of any kind but the first
        assignment (a rebalance calls at least one of them)."""
        return max(0, self.assigned_calls - 1) + self.lost_calls

    def line(self) -> str:
        life = f"{self.started_at:.0f}-{self.stopped_at:.0f}s" if self.stopped_at else "to the end"
        ids = len(set(self.member_ids))
        gens = self.generations
        gen = f"{gens[0]}..{gens[-1]} ({len(gens)} seen)" if gens else "-"
        extra = f", {self.transactions} txns" if self.transactions else ""
        return (
            f"{self.name} [{self.rack}] {life}: {self.records} records in {self.batches} "
            f"batches, {self.commits} commits{extra}; listener assigned/revoked/lost "
            f"{self.assigned_calls}/{self.revoked_calls}/{self.lost_calls}; member ids {ids}, "
            f"resets {self.resets}, generations {gen}; commit failures "
            f"{dict(self.commit_failures) or 0}, other commit errors "
            f"{dict(self.commit_errors) or 0}, getmany errors {dict(self.poll_errors) or 0}"
            + (f", start errors {dict(self.start_errors)}" if self.start_errors else "")
            + (f", transaction errors {dict(self.txn_errors)}" if self.txn_errors else "")
        )


class Ledger:
    """Every record the producer had acknowledged and every delivery to the group.

    Records are numbered: record ``seq`` goes to partition ``seq % partitions`` with the
    value ``default_value(seq, size)``; the ledger keys both sides by (partition, offset).
    """

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.began = time.monotonic()
        #: (partition, offset) -> seq, of every acknowledged record.
        self.acked: dict[tuple[int, int], int] = {}
        self.sent = 0
        self.send_errors: Counter[str] = Counter()
        self.incidents: list[Incident] = []
        #: (partition, offset) -> deliveries.
        self.delivered: Counter[tuple[int, int]] = Counter()
        #: seqs delivered (any partition, any member).
        self.seqs: set[int] = set()
        #: Values that are not what was written there.
        self.corrupt: list[str] = []
        #: partition -> (time, member) of each assignment of it to a member.
        self.owners: dict[int, list[tuple[float, str]]] = {p: [] for p in range(partitions)}

    def clock(self) -> float:
        """Seconds since the scenario began."""
        return time.monotonic() - self.began

    def ack(self, seq: int, partition: int, offset: int) -> None:
        self.acked[(partition, offset)] = seq

    def send_failed(self, exc: BaseException) -> None:
        self.send_errors[_name(exc)] += 1
        if len(self.incidents) < _KEEP:
            self.incidents.append(Incident(self.clock(), "producer", _name(exc), str(exc)))

    def deliver(self, partition: int, offset: int, seq: int | None, ok: bool) -> None:
        """One record handed to a member: ``seq`` parsed from its value, ``ok`` whether
        the value is the one written for it at that partition."""
        self.delivered[(partition, offset)] += 1
        if seq is not None:
            self.seqs.add(seq)
        if not ok and len(self.corrupt) < 20:
            self.corrupt.append(f"p{partition}@{offset}: seq {seq}")

    def owned(self, member: str, partitions: Iterable[int]) -> None:
        now = self.clock()
        for p in partitions:
            self.owners[p].append((now, member))

    def missing(self) -> list[tuple[int, int]]:
        """Acknowledged records not delivered yet."""
        return [key for key in self.acked if key not in self.delivered]

    def ownership_changes(self, partition: int) -> int:
        """Assignments of ``partition`` after its first one."""
        return max(0, len(self.owners[partition]) - 1)


@dataclass
class Check:
    """One check of a scenario: its name, whether it held, and the numbers."""

    name: str
    ok: bool
    detail: str

    def __str__(self) -> str:
        return f"[{'ok' if self.ok else 'FAILED'}] {self.name}: {self.detail}"


@dataclass
class RackWindow:
    """Bytes a member fetched in the window after recovery, by rack."""

    member: str
    rack: str | None
    same_rack_bytes: int
    cross_rack_bytes: int
    routes: dict[str, Any]


def check_no_loss(ledger: Ledger) -> Check:
    missing = ledger.missing()
    acked = len(ledger.acked)
    detail = f"{acked} acknowledged records, {acked - len(missing)} consumed"
    if missing:
        detail += f", {len(missing)} never consumed, first {sorted(missing)[:8]} (p, offset)"
    if ledger.corrupt:
        detail += f"; {len(ledger.corrupt)} values not the ones written: {ledger.corrupt[:5]}"
    return Check("no loss", not missing and not ledger.corrupt and acked > 0, detail)


def check_duplicates(ledger: Ledger, max_records: int) -> Check:
    """Per partition: re-deliveries <= ownership changes x ``max_records``."""
    total = 0
    bound_total = 0
    over: list[str] = []
    for p in range(ledger.partitions):
        dups = sum(n - 1 for (q, _), n in ledger.delivered.items() if q == p and n > 1)
        bound = ledger.ownership_changes(p) * max_records
        total += dups
        bound_total += bound
        if dups > bound:
            over.append(f"p{p}: {dups} > {bound}")
    deliveries = sum(ledger.delivered.values())
    share = f" ({100 * total / deliveries:.1f} % of {deliveries} deliveries)" if deliveries else ""
    detail = (
        f"{total} duplicate deliveries{share}, bound {bound_total} "
        f"(ownership changes x max_records={max_records}, per partition)"
    )
    if over:
        detail += f"; over the bound: {', '.join(over)}"
    return Check("duplicates within the bound", not over, detail)


def check_exceptions(members: Sequence[MemberStats], ledger: Ledger) -> Check:
    """getmany() never raised; commit() raised only the expected kinds, at most once per
    rebalance the member saw (and once more for one under way at its end); transactions
    failed only by fencing; the producer lost no send."""
    problems: list[str] = []
    expected = 0
    for m in members:
        if m.start_errors:
            problems.append(f"{m.name}: start() raised {dict(m.start_errors)}")
        if m.poll_errors:
            problems.append(f"{m.name}: getmany() raised {dict(m.poll_errors)}")
        if m.commit_errors:
            problems.append(f"{m.name}: commit() raised {dict(m.commit_errors)}")
        # ProducerFenced: the partition moved to another member, whose producer fenced
        # this one's (the pipeline's zombie fencing at work); anything else is a failure.
        txn = {k: v for k, v in m.txn_errors.items() if k != "ProducerFenced"}
        if txn:
            problems.append(f"{m.name}: transactions failed {txn}")
        failures = sum(m.commit_failures.values())
        expected += failures
        # One per rebalance the member went through, and one for a rebalance under way
        # that it never finished (it was closed, or the run ended).
        allowed = m.rebalances + 1
        if failures > allowed:
            problems.append(
                f"{m.name}: {failures} commit failures {dict(m.commit_failures)} > "
                f"{allowed} allowed ({m.rebalances} rebalances seen, + 1)"
            )
    if ledger.send_errors:
        problems.append(f"producer: sends failed {dict(ledger.send_errors)}")
    detail = "; ".join(problems) if problems else f"none ({expected} allowed commit failures)"
    return Check("no exception the client could recover", not problems, detail)


def check_rack(windows: Sequence[RackWindow], seconds: float) -> Check:
    """After recovery every member fetched from its own rack only, and did fetch."""
    bad = [w for w in windows if w.cross_rack_bytes or not w.same_rack_bytes]
    parts = [f"{w.member}[{w.rack}] same {w.same_rack_bytes} B cross {w.cross_rack_bytes} B"
             for w in windows]  # fmt: skip
    detail = f"window of {seconds:.0f} s: " + "; ".join(parts)
    if bad:
        detail += "; routes of the failing members: " + "; ".join(
            f"{w.member}: {w.routes}" for w in bad
        )
    return Check("own-rack reads after recovery", bool(windows) and not bad, detail)


@dataclass
class ScenarioReport:
    """Everything a scenario saw: the checks, the members, the faults, the times."""

    scenario: str
    seed: int
    seconds: float
    faults: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    members: list[MemberStats] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def replay(self) -> str:
        """How to run this scenario again with the same schedule."""
        return f"RACKAFKA_FAULT_SEED={self.seed} (make faults FAULT_SEED={self.seed})"

    def text(self) -> str:
        """The report, seed first."""
        lines = [f"fault scenario {self.scenario!r} seed={self.seed} workload {self.seconds:.0f} s"]
        lines.append("phases: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.phases.items()))
        lines.append("faults:")
        lines.extend(f"  {f}" for f in self.faults)
        lines.append("checks:")
        lines.extend(f"  {c}" for c in self.checks)
        lines.append("members:")
        lines.extend(f"  {m.line()}" for m in self.members)
        incidents = sorted(
            [i for m in self.members for i in m.incidents] + self.incidents, key=lambda i: i.at
        )
        if incidents:
            lines.append(f"first exceptions ({len(incidents)} kept):")
            lines.extend(f"  {i}" for i in incidents[:24])
        lines.extend(f"note: {n}" for n in self.notes)
        lines.append(f"replay: {self.replay}")
        return "\n".join(lines)

    def assert_ok(self) -> None:
        """Raise AssertionError naming the failed checks, the seed and the whole report."""
        if self.failed:
            names = ", ".join(c.name for c in self.failed)
            raise AssertionError(
                f"fault scenario {self.scenario!r} seed={self.seed}: failed {names}\n" + self.text()
            )
