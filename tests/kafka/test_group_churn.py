"""Member churn on Kafka's own group coordinator: answers judged by the generation they
were sent with.

Members join and leave a classic group while every member commits after each batch: the
commits race the rebalances, and late answers (``ILLEGAL_GENERATION``,
``REBALANCE_IN_PROGRESS`` for a generation the member has already left) must not reset a
newer membership. Checked: no error reaches ``getmany()`` or ``commit()``, each member
keeps one member id for its whole life (the coordinator never waits for a ghost), the
group goes through a few generations per change (not dozens), nothing is lost, and a
record is read twice only around a change of its partition's owner.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer
from rackafka.testing import KafkaCluster

from ._flow import PATIENCE, Writer, seq, unique, wait_for

MAX_RECORDS = 50


class Member:
    """A group member as an application runs it: ``getmany()``, then ``commit()``.

    Every exception is recorded by the call that raised it, every member id the member
    had, and every delivery as ``(partition, offset, name)`` in ``log`` (shared).
    """

    def __init__(
        self, kafka: KafkaCluster, group: str, topic: str, name: str, log: list[Any], **kw: Any
    ) -> None:
        self.name = name
        self.topic = topic
        self.log = log
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=kafka.bootstrap_servers,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            max_poll_records=MAX_RECORDS,
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
            metadata_max_age_ms=5000,
            **kw,
        )
        self.errors: dict[str, list[BaseException]] = {"getmany": [], "commit": []}
        self.member_ids: list[str] = []
        #: The newest generation the member was in.
        self.generation = -1
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> Member:
        self.consumer.subscribe([self.topic])
        await self.consumer.start()
        self._task = asyncio.ensure_future(self._run())
        return self

    def _note_member_id(self) -> None:
        coordinator = self.consumer._coordinator
        member_id = coordinator.state.member_id if coordinator is not None else ""
        if coordinator is not None:
            self.generation = max(self.generation, coordinator.state.generation_id)
        if member_id and (not self.member_ids or self.member_ids[-1] != member_id):
            self.member_ids.append(member_id)

    async def _run(self) -> None:
        while not self._stop.is_set():
            self._note_member_id()
            try:
                batch = await self.consumer.getmany(timeout_ms=200)
            except Exception as exc:
                self.errors["getmany"].append(exc)
                await asyncio.sleep(0.1)
                continue
            for tp, records in batch.items():
                for r in records:
                    assert r.value is not None
                    self.log.append((tp.partition, r.offset, seq(r.value), self.name))
            if batch:
                try:
                    await self.consumer.commit()
                except Exception as exc:
                    self.errors["commit"].append(exc)

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, PATIENCE)
        await self.consumer.stop()


def check_deliveries(log: list[Any], written: int, partitions: int) -> tuple[int, int]:
    """No record lost; each duplicate within the batch in flight at a change of owner.

    Returns ``(duplicates, bound)``.
    """
    numbers = {n for _p, _o, n, _who in log}
    missing = sorted(set(range(written)) - numbers)
    assert not missing, f"{len(missing)} records never read, first {missing[:10]}"
    duplicates = 0
    bound = 0
    by_partition: dict[int, list[tuple[int, str]]] = collections.defaultdict(list)
    for p, o, _n, who in log:
        by_partition[p].append((o, who))
    for p, deliveries in by_partition.items():
        handovers = sum(1 for a, b in itertools.pairwise(deliveries) if a[1] != b[1])
        seen: set[int] = set()
        dup = 0
        for o, _who in deliveries:
            if o in seen:
                dup += 1
            seen.add(o)
        # With a commit after each batch, a new owner re-reads at most the batch its
        # previous owner had not committed yet.
        assert dup <= handovers * MAX_RECORDS, (
            f"partition {p}: {dup} records read twice for {handovers} changes of owner"
        )
        duplicates += dup
        bound += handovers * MAX_RECORDS
    return duplicates, bound


@pytest.mark.parametrize("strategy", ["cooperative-sticky", "range"])
async def test_members_join_and_leave_while_committing_after_each_batch(
    kafka: KafkaCluster, strategy: str
) -> None:
    partitions = 12
    topic = unique("churn")
    group = unique("g-churn")
    kafka.create_topic(topic, partitions, 3)
    log: list[Any] = []
    writer = await Writer(kafka, topic, partitions).start()
    writer.resume()
    members: list[Member] = []

    def join(name: str) -> Any:
        m = Member(kafka, group, topic, name, log, partition_assignment_strategy=strategy)
        members.append(m)
        return m.start()

    try:
        await join("m1")
        await wait_for(lambda: len(log) > 200, "m1 to read")
        # Three members join and one leaves within a few seconds of each other, all
        # committing after every batch while the group rebalances.
        await join("m2")
        await asyncio.sleep(1.5)
        await join("m3")
        await asyncio.sleep(1.0)
        await join("m4")
        await asyncio.sleep(2.0)
        await members[0].stop()
        live = members[1:]

        def settled() -> bool:
            sets = [m.consumer.assignment() for m in live]
            return (
                sum(len(s) for s in sets) == partitions
                and len(set().union(*sets)) == partitions
                and all(sets)
            )

        await wait_for(settled, "the three members left to share the partitions")
        written = await writer.stop()
        await wait_for(
            lambda: {n for _p, _o, n, _w in log} >= set(range(written)),
            "every record written to be read",
        )
    finally:
        await writer.stop()
        for m in members:
            if m._task is not None and not m._task.done():
                await m.stop()
    for m in members:
        assert not m.errors["getmany"], (m.name, m.errors["getmany"][:3])
        assert not m.errors["commit"], (m.name, m.errors["commit"][:3])
        # One member id for its whole life: never reset by a late answer.
        assert len(m.member_ids) == 1, (m.name, m.member_ids)
    # A handful of generations for four changes (the cooperative protocol takes two
    # rounds per change), not a rebalance storm.
    generations = max(m.generation for m in members[1:])
    assert generations <= 14, generations
    duplicates, bound = check_deliveries(log, written, partitions)
    print(
        f"{strategy}: {written} records, {len(log)} deliveries, {duplicates} duplicates "
        f"(bound {bound}), generation {generations}"
    )
