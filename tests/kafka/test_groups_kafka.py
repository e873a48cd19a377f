"""Consumer groups against Kafka's own group coordinator.

* a 3-rack group with the classic protocol and a rack-aware assignor (KIP-881): each member
  owns only partitions with a replica in its rack and reads 0 bytes across racks (KIP-392);
* KIP-848 groups (``group_protocol="consumer"``): the coordinator assigns; members join,
  leave, the group rebalances, commits are seen by a new member, exactly once throughout;
* static membership (KIP-345): a static member restarting within its session gets its
  partitions back without a rebalance of the others; a second member with the same
  ``group_instance_id`` fences the first, which gets ``FencedInstanceIdError``;
* static membership with KIP-848: the place waits for a member that left with epoch -2,
  and a second live member with the same id is refused (``UnreleasedInstanceIdError``).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.abc import ConsumerRebalanceListener
from rackafka.errors import FencedInstanceIdError, UnreleasedInstanceIdError
from rackafka.testing import KafkaCluster

from ._flow import PATIENCE, Reader, Writer, assert_exactly_once, unique, wait_for
from .conftest import require_feature


class Moves(ConsumerRebalanceListener):
    """Records every rebalance callback: ``(kind, partitions)``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", set(revoked)))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", set(assigned)))


def member(kafka: KafkaCluster, group: str, **kw: Any) -> AIOKafkaConsumer:
    kw.setdefault("auto_offset_reset", "earliest")
    kw.setdefault("metadata_max_age_ms", 5000)
    if kw.get("group_protocol") != "consumer":
        kw.setdefault("session_timeout_ms", 10000)
        kw.setdefault("heartbeat_interval_ms", 300)
    return AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap_servers, group_id=group, **kw)


def owned(*consumers: AIOKafkaConsumer) -> list[set[TopicPartition]]:
    return [set(c.assignment()) for c in consumers]


def split_among(consumers: list[AIOKafkaConsumer], partitions: int, each: int | None = None):
    """A predicate: every partition owned by exactly one of ``consumers``, each owning some
    (``each`` when given)."""

    def ready() -> bool:
        sets = owned(*consumers)
        union = set().union(*sets)
        if len(union) != partitions or sum(len(s) for s in sets) != partitions:
            return False
        return all(len(s) == each if each is not None else s for s in sets)

    return ready


async def test_three_rack_group_reads_nothing_across_racks(kafka: KafkaCluster) -> None:
    """KIP-881 + KIP-392: replicas in 2 of 3 racks, one member per rack, 0 bytes crossing."""
    partitions = 12
    topic = unique("kip881")
    group = unique("g-kip881")
    infos = kafka.create_topic(topic, partitions, 2)
    replica_racks = {i.partition: {kafka.rack_of(b) for b in i.replicas} for i in infos}
    assert all(len(r) == 2 for r in replica_racks.values())
    members = [
        member(
            kafka,
            group,
            client_rack=rack,
            partition_assignment_strategy="cooperative-sticky",
            enable_auto_commit=False,
        )
        for rack in kafka.racks
    ]
    for m in members:
        m.subscribe([topic])
    await asyncio.gather(*(m.start() for m in members))
    readers = [Reader(m, name=f"member in {m.client_rack}").start() for m in members]
    try:

        def settled() -> bool:
            if not split_among(members, partitions)():
                return False
            return all(
                m.client_rack in replica_racks[tp.partition]
                for m in members
                for tp in m.assignment()
            )

        await wait_for(settled, "the 3 members to own only partitions in their racks")
        # record i to partition i % partitions (default_value(i), as the Writer's)
        written = 12 * 150
        result = await kafka.aproduce(topic, written, partition="spread")
        assert result.count == written
        await wait_for(
            lambda: sum(len(r.seen) for r in readers) >= written or any(r.done for r in readers),
            "the group to read every record",
        )
        for r in readers:
            r.check()
        for m in members:
            stats = m.fetch_stats()
            assert stats.same_rack_bytes > 0, stats.to_dict()
            assert stats.cross_rack_bytes == 0, stats.to_dict()
            for tp in m.assignment():
                assert stats.partitions[tp].read_from in kafka.brokers_in_rack(m.client_rack)
        for r in readers:
            await r.stop()
    finally:
        for r in readers:
            await r.close()
        await asyncio.gather(*(m.stop() for m in members))
    assert_exactly_once(readers, written, partitions)


async def test_kip848_group_join_leave_rebalance_commit(kafka: KafkaCluster) -> None:
    """Members join and leave while records flow; the coordinator rebalances; every record
    is read once across the group; a new member sees the group's commits."""
    require_feature(kafka, "consumer_group_protocol")
    partitions = 6
    topic = unique("kip848")
    group = unique("g-kip848")
    kafka.create_topic(topic, partitions, 3)
    writer = await Writer(kafka, topic, partitions).start()

    def new_member() -> AIOKafkaConsumer:
        return member(
            kafka, group, group_protocol="consumer", enable_auto_commit=True,
            auto_commit_interval_ms=1000,
        )  # fmt: skip

    a = new_member()
    b = new_member()
    readers: list[Reader] = []
    try:
        a.subscribe([topic])
        await a.start()
        readers.append(ra := Reader(a, name="a").start())
        await wait_for(split_among([a], partitions), "a alone to own every partition")
        await ra.wait_count(300)

        b.subscribe([topic])
        await b.start()
        readers.append(rb := Reader(b, name="b").start())
        await wait_for(split_among([a, b], partitions, 3), "a and b to share the partitions")
        await rb.wait_count(200)
        await ra.wait_count(len(ra.seen) + 200)

        # b leaves (commits on the way out): a gets everything back
        await rb.stop()
        await b.stop()
        await wait_for(split_among([a], partitions), "a to own every partition again")
        await ra.wait_count(len(ra.seen) + 300)

        written = await writer.pause()
        await wait_for(
            lambda: sum(len(r.seen) for r in readers) >= written or ra.done,
            "the group to read every record",
        )
        await ra.stop()
        await a.commit()
        committed = {p: await a.committed(TopicPartition(topic, p)) for p in range(partitions)}
        await a.stop()
        counts = {p: len(range(p, written, partitions)) for p in range(partitions)}
        assert committed == counts

        # a new member starts from the group's commits: it reads only what comes next
        c = new_member()
        c.subscribe([topic])
        await c.start()
        try:
            await wait_for(split_among([c], partitions), "c to own every partition")
            for p in range(partitions):
                assert await c.committed(TopicPartition(topic, p)) == counts[p]
            readers.append(rc := Reader(c, name="c").start())
            writer.resume()
            await rc.wait_count(300)
            written = await writer.pause()
            await rc.wait_count(written - sum(counts.values()))
            await rc.stop()
        finally:
            await c.stop()
    finally:
        for r in readers:
            await r.close()
        for m in (a, b):
            await m.stop()
        await writer.stop()
    assert_exactly_once(readers, written, partitions)


async def test_static_member_restarts_without_rebalance_and_is_fenced(
    kafka: KafkaCluster,
) -> None:
    """KIP-345 with the classic protocol on Kafka's coordinator."""
    partitions = 4
    topic = unique("static")
    group = unique("g-static")
    kafka.create_topic(topic, partitions, 3)
    instance_a = f"a-{uuid.uuid4().hex[:6]}"
    heartbeat_ms = 300

    def static(instance: str) -> AIOKafkaConsumer:
        return member(
            kafka, group, group_instance_id=instance, session_timeout_ms=30000,
            heartbeat_interval_ms=heartbeat_ms, partition_assignment_strategy="range",
        )  # fmt: skip

    a = static(instance_a)
    b = static(f"b-{uuid.uuid4().hex[:6]}")
    a2 = a3 = None
    try:
        for m in (a, b):
            m.subscribe([topic])
        await asyncio.gather(a.start(), b.start())
        await wait_for(split_among([a, b], partitions, 2), "a and b to own 2 partitions each")
        before_a = owned(a)[0]
        generation = b._coordinator.state.generation_id
        rebalances = b._coordinator.rebalances

        # a restarts: a static member does not leave, its place waits for it
        await a.stop()
        a2 = static(instance_a)
        a2.subscribe([topic])
        await a2.start()
        await wait_for(lambda: owned(a2)[0] == before_a, "a's partitions back to a")
        # b heartbeats several times meanwhile: a rebalance would reach it
        await asyncio.sleep(5 * heartbeat_ms / 1000)
        assert b._coordinator.rebalances == rebalances
        assert b._coordinator.state.generation_id == generation
        assert owned(b)[0] == set(TopicPartition(topic, p) for p in range(partitions)) - before_a

        # a second member with the same instance id takes the place: a2 is fenced
        a3 = static(instance_a)
        a3.subscribe([topic])
        await a3.start()
        await wait_for(lambda: owned(a3)[0] == before_a, "a's partitions to the new member")

        async def fenced() -> None:
            assert a2 is not None
            while True:
                await a2.getmany(timeout_ms=200)

        with pytest.raises(FencedInstanceIdError):
            await asyncio.wait_for(fenced(), PATIENCE)
        # the fenced member stays out: a3 keeps the place, b is not disturbed
        await asyncio.sleep(5 * heartbeat_ms / 1000)
        assert owned(a3)[0] == before_a
        assert a3._coordinator.state.member_id
        assert b._coordinator.state.generation_id == generation
        assert b._coordinator.rebalances == rebalances
    finally:
        for m in (a, b, a2, a3):
            if m is not None:
                await m.stop()


async def test_static_member_that_stops_polling_keeps_its_place(kafka: KafkaCluster) -> None:
    """KIP-345 on ``max_poll_interval_ms``, as Java's consumer: a static member that stops
    polling gives its partitions up but sends no LeaveGroup, so the group does not
    rebalance; when it polls again it takes its partitions back under its instance id."""
    partitions = 4
    topic = unique("static-mp")
    group = unique("g-static-mp")
    kafka.create_topic(topic, partitions, 3)
    heartbeat_ms = 300
    moves = Moves()

    def static(instance: str, **kw: Any) -> AIOKafkaConsumer:
        return member(
            kafka, group, group_instance_id=instance, session_timeout_ms=30000,
            heartbeat_interval_ms=heartbeat_ms, partition_assignment_strategy="range", **kw
        )  # fmt: skip

    a = static(f"a-{uuid.uuid4().hex[:6]}", max_poll_interval_ms=4000)
    b = static(f"b-{uuid.uuid4().hex[:6]}")
    try:
        a.subscribe([topic], listener=moves)
        b.subscribe([topic])
        await asyncio.gather(a.start(), b.start())

        async def poll_until_split() -> None:
            while not split_among([a, b], partitions, 2)():
                await a.getmany(timeout_ms=100)

        await asyncio.wait_for(poll_until_split(), PATIENCE)
        before_a = owned(a)[0]
        generation = b._coordinator.state.generation_id
        rebalances = b._coordinator.rebalances
        # a stops polling: after max_poll_interval_ms it revokes its partitions and forgets
        # its member id, without a LeaveGroup
        await wait_for(lambda: ("revoked", before_a) in moves.calls, "a to give its partitions up")
        await wait_for(lambda: a._coordinator.state.member_id == "", "a to forget its member id")
        assert owned(a)[0] == set()
        # b heartbeats several times meanwhile: a LeaveGroup would have started a rebalance
        await asyncio.sleep(5 * heartbeat_ms / 1000)
        assert b._coordinator.rebalances == rebalances
        assert b._coordinator.state.generation_id == generation
        assert owned(b)[0] == set(TopicPartition(topic, p) for p in range(partitions)) - before_a

        async def poll_until_back() -> None:
            while owned(a)[0] != before_a:
                await a.getmany(timeout_ms=100)

        await asyncio.wait_for(poll_until_back(), PATIENCE)
        await asyncio.sleep(5 * heartbeat_ms / 1000)
        assert b._coordinator.rebalances == rebalances
        assert b._coordinator.state.generation_id == generation
    finally:
        for m in (a, b):
            await m.stop()


async def test_kip848_static_member_restarts_and_a_duplicate_is_refused(
    kafka: KafkaCluster,
) -> None:
    """Static membership with the KIP-848 protocol: a static member leaves with epoch -2,
    its place (and partitions) wait for it, and it comes back to them without the other
    member's assignment moving. A second live member with the same instance id is not
    let in (UNRELEASED_INSTANCE_ID): here the newcomer fails, the running one keeps going."""
    require_feature(kafka, "consumer_group_protocol")
    partitions = 4
    topic = unique("static848")
    group = unique("g-static848")
    kafka.create_topic(topic, partitions, 3)
    instance_a = f"a-{uuid.uuid4().hex[:6]}"

    def static(instance: str) -> AIOKafkaConsumer:
        return member(kafka, group, group_protocol="consumer", group_instance_id=instance)

    a = static(instance_a)
    b = static(f"b-{uuid.uuid4().hex[:6]}")
    b_moves = Moves()
    a2 = dup = None
    try:
        a.subscribe([topic])
        b.subscribe([topic], listener=b_moves)
        await asyncio.gather(a.start(), b.start())
        await wait_for(split_among([a, b], partitions, 2), "a and b to own 2 partitions each")
        before_a, before_b = owned(a, b)
        settled = len(b_moves.calls)

        await a.stop()  # leaves with epoch -2: the place is kept
        a2 = static(instance_a)
        a2.subscribe([topic])
        await a2.start()
        await wait_for(lambda: owned(a2)[0] == before_a, "a's partitions back to a")
        assert owned(b)[0] == before_b
        # nothing of b's moved meanwhile: nothing revoked, nothing added
        assert all(kind == "assigned" and not tps for kind, tps in b_moves.calls[settled:])

        dup = static(instance_a)
        dup.subscribe([topic])

        async def refused() -> None:
            assert dup is not None
            await dup.start()  # (raises here, or from the first poll)
            while True:
                await dup.getmany(timeout_ms=200)

        with pytest.raises(UnreleasedInstanceIdError):
            await asyncio.wait_for(refused(), PATIENCE)
        assert owned(a2)[0] == before_a and owned(b)[0] == before_b
        assert all(kind == "assigned" and not tps for kind, tps in b_moves.calls[settled:])
        assert await a2.getmany(timeout_ms=100) is not None  # a2 still a working member
    finally:
        for m in (a, b, a2, dup):
            if m is not None:
                await m.stop()


async def test_the_leader_watches_every_members_topics(kafka: KafkaCluster) -> None:
    """As Java's leader: partitions added to a topic only another member subscribes to make
    the leader join again and assign them (the other member sees no change of its own
    subscription, and does not lead)."""
    from rackafka.admin import AIOKafkaAdminClient, NewPartitions

    first, second = unique("lead-a"), unique("lead-b")
    kafka.create_topic(first, 2, 1)
    kafka.create_topic(second, 2, 1)
    group = unique("g-lead")
    a = member(kafka, group, metadata_max_age_ms=500)
    a.subscribe([first])
    await a.start()
    b = member(kafka, group, metadata_max_age_ms=500)
    b.subscribe([second])
    await b.start()
    polls = [asyncio.create_task(poll_forever(c)) for c in (a, b)]
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await admin.start()
    try:
        await wait_for(
            lambda: (
                set(a.assignment()) | set(b.assignment())
                == {TopicPartition(t, p) for t in (first, second) for p in (0, 1)}
            ),
            "both topics assigned",
        )
        leader, other, other_topic = (a, b, second) if leads(a) else (b, a, first)
        assert leads(leader) and not leads(other)
        await admin.create_partitions({other_topic: NewPartitions(total_count=3)})
        await wait_for(
            lambda: TopicPartition(other_topic, 2) in other.assignment(),
            f"the new partition of {other_topic} assigned to the member subscribing to it",
        )
    finally:
        for t in polls:
            t.cancel()
        await asyncio.gather(*polls, return_exceptions=True)
        await admin.close()
        await asyncio.gather(a.stop(), b.stop())


def leads(consumer: AIOKafkaConsumer) -> bool:
    coordinator = consumer._coordinator
    assert coordinator is not None
    return bool(coordinator.session.state.is_leader)


async def poll_forever(consumer: AIOKafkaConsumer) -> None:
    while True:
        await consumer.getmany(timeout_ms=200)
