"""Two group behaviours first seen on real Kafka (tests/kafka), pinned here on the mock.

* A static member fenced by another consumer with its ``group_instance_id``
  (``FENCED_INSTANCE_ID``) stops: it raises ``FencedInstanceIdError`` from every poll and
  commit and never rejoins (a rejoin would fence the other one in turn, for ever).
* While a partition is being revoked (its position committed), no record of it reaches
  the application: the next owner starts right after the last record handed out.
"""

from __future__ import annotations

import asyncio

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.abc import ConsumerRebalanceListener
from rackafka.errors import FencedInstanceIdError

from ._util import wait_until

pytestmark = pytest.mark.fault_injection

HEARTBEAT = 12
FENCED_INSTANCE_ID = FencedInstanceIdError.errno


class Lost(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", set(revoked)))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", set(assigned)))

    async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.calls.append(("lost", set(lost)))


async def test_fenced_static_member_stops_and_raises(embedded_cluster) -> None:
    c = embedded_cluster
    c.create_topic("fenced", partitions=2, replication_factor=3)
    listener = Lost()
    a = AIOKafkaConsumer(
        bootstrap_servers=c.bootstrap_servers,
        group_id="g-fenced",
        group_instance_id="instance-1",
        heartbeat_interval_ms=100,
        session_timeout_ms=3000,
        auto_offset_reset="earliest",
    )
    a.subscribe(["fenced"], listener=listener)
    await a.start()
    try:
        both = {TopicPartition("fenced", p) for p in range(2)}
        await wait_until(lambda: a.assignment() == both, 15, "a owns both partitions")
        rebalances = a._coordinator.rebalances
        c.push_request_errors(HEARTBEAT, FENCED_INSTANCE_ID)
        with pytest.raises(FencedInstanceIdError):
            for _ in range(100):
                await a.getmany(timeout_ms=100)
        assert a.assignment() == set()
        assert listener.calls[-1] == ("lost", both)  # lost, not revoked: nothing committed
        # it stays out: every poll and commit raises, it never joins again
        for _ in range(3):
            with pytest.raises(FencedInstanceIdError):
                await a.getmany(timeout_ms=100)
        with pytest.raises(FencedInstanceIdError):
            await a.commit({TopicPartition("fenced", 0): 0})
        await asyncio.sleep(0.5)  # five heartbeat intervals: a rejoin would show
        assert a._coordinator.rebalances == rebalances
        assert a._coordinator.state.member_id == ""
        assert listener.calls[-1] == ("lost", both)
    finally:
        await a.stop()


def _revoking_member(c) -> AIOKafkaConsumer:
    """A cooperative member of the revoking test's group."""
    return AIOKafkaConsumer(
        bootstrap_servers=c.bootstrap_servers,
        group_id="g-revoking",
        partition_assignment_strategy="cooperative-sticky",
        heartbeat_interval_ms=100,
        session_timeout_ms=3000,
        auto_offset_reset="earliest",
    )


async def test_no_record_of_a_partition_being_revoked_is_handed_out(embedded_cluster) -> None:
    c = embedded_cluster
    c.create_topic("revoking", partitions=4, replication_factor=3)
    c.produce("revoking", 4000, value_size=50, partition="spread")
    a = _revoking_member(c)
    a.subscribe(["revoking"])
    await a.start()
    b = None
    try:
        await wait_until(lambda: len(a.assignment()) == 4, 15, "a owns every partition")
        await a.getmany(timeout_ms=2000, max_records=1)
        everything = {TopicPartition("revoking", p) for p in range(4)}
        await wait_until(
            lambda: {buf.tp for buf in a._fetcher._buffered} == everything,
            15,
            "records of every partition buffered",
        )
        # Hold a's commit on revocation until the test has polled.
        offsets = a._coordinator.offsets
        committing: asyncio.Event = asyncio.Event()
        release: asyncio.Event = asyncio.Event()
        revoked: set[TopicPartition] = set()
        commit_positions = offsets.commit_positions

        async def slow_commit(partitions=None) -> None:
            if partitions is not None:
                revoked.update(partitions)
                committing.set()
                await release.wait()
            await commit_positions(partitions)

        offsets.commit_positions = slow_commit
        b = _revoking_member(c)
        b.subscribe(["revoking"])
        await b.start()
        await asyncio.wait_for(committing.wait(), 30)
        assert revoked
        kept = 0
        for _ in range(20):
            batch = await a.getmany(timeout_ms=50)
            assert not set(batch) & revoked, "records of a partition being revoked"
            kept += sum(len(v) for v in batch.values())
        assert kept > 0  # the partitions a keeps are still read meanwhile
        release.set()
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 30, "a and b share"
        )
    finally:
        if b is not None:
            await b.stop()
        await a.stop()
