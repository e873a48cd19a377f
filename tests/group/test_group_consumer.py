"""Consumer groups against the embedded cluster (classic protocol)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.errors import IllegalOperation

from ._util import drain, wait_until

pytestmark = pytest.mark.fault_injection


def group_consumer(cluster, group: str, **kw) -> AIOKafkaConsumer:
    kw.setdefault("auto_offset_reset", "earliest")
    kw.setdefault("session_timeout_ms", 6000)
    kw.setdefault("heartbeat_interval_ms", 200)
    kw.setdefault("retry_backoff_ms", 50)
    return AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group, **kw)


async def test_members_join_and_leave_while_records_flow(embedded_cluster) -> None:
    c = embedded_cluster
    c.create_topic("flow", partitions=6, replication_factor=3)
    c.produce("flow", 3000, value_size=20, partition="spread", batch_size=4000)
    produced = 3000
    seen: list = []
    stop = asyncio.Event()
    a = group_consumer(c, "g-flow")
    a.subscribe(["flow"])
    await a.start()
    task_a = asyncio.ensure_future(drain(a, seen, stop))
    await wait_until(lambda: len(a.assignment()) == 6, 10, "a owns all partitions")
    b = group_consumer(c, "g-flow")
    b.subscribe(["flow"])
    await b.start()
    task_b = asyncio.ensure_future(drain(b, seen, stop))
    await wait_until(
        lambda: len(a.assignment()) == 3 and len(b.assignment()) == 3, 15, "a and b share"
    )
    assert a.assignment().isdisjoint(b.assignment())
    c.produce("flow", 3000, value_size=20, partition="spread", batch_size=4000)
    produced += 3000
    await b.stop()  # leaves the group: a takes everything back
    await wait_until(lambda: len(a.assignment()) == 6, 15, "a owns all partitions again")
    c.produce("flow", 600, value_size=20, partition="spread", batch_size=4000)
    produced += 600
    await wait_until(lambda: len(set(seen)) >= produced, 20, "every record")
    stop.set()
    await asyncio.gather(task_a, task_b, return_exceptions=True)
    await a.commit()
    await a.stop()
    assert len(set(seen)) == produced  # at least once, nothing lost
    # Commits resume where they left off: a new member starts at the committed offsets.
    c.produce("flow", 60, value_size=20, partition="spread", batch_size=4000)
    d = group_consumer(c, "g-flow")
    d.subscribe(["flow"])
    await d.start()
    fresh: list = []
    stop2 = asyncio.Event()
    task_d = asyncio.ensure_future(drain(d, fresh, stop2))
    await wait_until(lambda: len(fresh) >= 60, 15, "the new records")
    await asyncio.sleep(0.3)
    stop2.set()
    await task_d
    await d.stop()
    assert len(fresh) == 60
    assert set(fresh).isdisjoint(seen)


async def test_commit_committed_and_seek_to_committed(embedded_cluster) -> None:
    c = embedded_cluster
    c.create_topic("offs", partitions=2, replication_factor=3)
    c.produce("offs", 100, value_size=10, partition=0)
    tp = TopicPartition("offs", 0)
    async with group_consumer(c, "g-offs", enable_auto_commit=False) as consumer:
        consumer.assign([tp])  # manual assignment with a group: commits still work
        assert await consumer.committed(tp) is None
        # (a fetch from the mock returns one stored batch: as many calls as it takes)
        got: list[Any] = []
        while len(got) < 40:
            more = await consumer.getmany(tp, timeout_ms=5000, max_records=40 - len(got))
            assert more, "no records within 5 s"
            got += more[tp]
        assert [r.offset for r in got] == list(range(40))
        await consumer.commit()
        assert await consumer.committed(tp) == 40
        await consumer.commit({tp: 75})
        assert await consumer.committed(tp) == 75
        assert await consumer.seek_to_committed(tp) == {tp: 75}
        assert await consumer.position(tp) == 75
    async with group_consumer(c, "g-offs") as again:
        again.assign([tp])
        assert await again.position(tp) == 75  # starts from the committed offset


async def test_commit_without_group_raises(embedded_cluster) -> None:
    embedded_cluster.create_topic("nog", partitions=1)
    async with AIOKafkaConsumer(bootstrap_servers=embedded_cluster.bootstrap_servers) as c:
        with pytest.raises(IllegalOperation):
            await c.commit()


async def test_coordinator_moved(embedded_cluster) -> None:
    c = embedded_cluster
    c.create_topic("coord", partitions=3, replication_factor=3)
    c.produce("coord", 300, value_size=10, partition="spread")
    consumer = group_consumer(c, "g-coord", enable_auto_commit=False)
    consumer.subscribe(["coord"])
    await consumer.start()
    try:
        seen: list = []
        stop = asyncio.Event()
        task = asyncio.ensure_future(drain(consumer, seen, stop))
        await wait_until(lambda: len(seen) >= 300, 15, "first records")
        first = consumer._coordinator.coordinator_id
        other = next(b for b in c.brokers if b != first)
        c.set_coordinator("group", "g-coord", other)
        await consumer.commit()  # NOT_COORDINATOR from the old one: find the new one
        await wait_until(
            lambda: consumer._coordinator.coordinator_id == other, 10, "new coordinator"
        )
        c.produce("coord", 300, value_size=10, partition="spread")
        await wait_until(lambda: len(set(seen)) >= 600, 15, "records after the move")
        stop.set()
        await task
        await consumer.commit()
        committed = {tp: await consumer.committed(tp) for tp in consumer.assignment()}
        assert sum(committed.values()) == 600
    finally:
        await consumer.stop()


async def test_static_member_stop_sends_no_leave_group(embedded_cluster) -> None:
    c = embedded_cluster
    c.create_topic("leave", partitions=2, replication_factor=3)
    for instance_id, expect_leave in ((None, True), ("static-1", False)):
        consumer = group_consumer(c, f"g-leave-{expect_leave}", group_instance_id=instance_id)
        consumer.subscribe(["leave"])
        await consumer.start()
        await wait_until(lambda consumer=consumer: len(consumer.assignment()) == 2, 15, "join")
        c.start_request_tracking()
        await consumer.stop()
        leaves = [r for r in c.requests() if r.api_key == 13]
        assert bool(leaves) is expect_leave, instance_id


KILLED_MEMBER = textwrap.dedent(
    """
    import asyncio, sys
    from rackafka import AIOKafkaConsumer
    async def main():
        c = AIOKafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[2],
                             session_timeout_ms=3000, heartbeat_interval_ms=200,
                             auto_offset_reset="earliest")
        c.subscribe([sys.argv[3]])
        await c.start()
        while True:
            await c.getmany(timeout_ms=100)
            print("ASSIGNED", len(c.assignment()), flush=True)
    asyncio.run(main())
    """
)


async def test_killed_member_partitions_taken_over(embedded_cluster) -> None:
    c = embedded_cluster
    c.create_topic("killed", partitions=4, replication_factor=3)
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_MEMBER, c.bootstrap_servers, "g-killed", "killed"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    survivor = group_consumer(c, "g-killed", session_timeout_ms=3000)
    survivor.subscribe(["killed"])
    try:
        loop = asyncio.get_running_loop()
        line = await asyncio.wait_for(loop.run_in_executor(None, proc.stdout.readline), 20)
        assert line.startswith("ASSIGNED")
        await survivor.start()

        async def poll() -> None:
            while True:
                await survivor.getmany(timeout_ms=100)

        poller = asyncio.ensure_future(poll())
        await wait_until(lambda: len(survivor.assignment()) == 2, 20, "a split with the other")
        proc.kill()  # no LeaveGroup: only the session timeout tells the coordinator
        proc.wait()
        await wait_until(lambda: len(survivor.assignment()) == 4, 20, "partitions taken over")
        poller.cancel()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        await survivor.stop()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
async def test_rack_aware_group_reads_only_from_its_own_racks(
    embedded_cluster_factory, strategy: str
) -> None:
    # Replicas on 2 of 3 racks: the assignment must put each partition where a replica is
    # (KIP-881); fetching then finds the replica in the member's rack (KIP-392).
    c = embedded_cluster_factory(brokers=3, racks=("az-a", "az-b", "az-c"))
    c.create_topic("zones", partitions=6, replication_factor=2)
    racks = ("az-a", "az-b", "az-c")
    members = [
        group_consumer(
            c, f"g-zones-{strategy}", client_rack=rack, partition_assignment_strategy=strategy
        )
        for rack in racks
    ]
    for m in members:
        m.subscribe(["zones"])
    # start() waits for the member's first assignment (as aiokafka): start them together,
    # as a deployment does, so that they meet in one rebalance.
    await asyncio.gather(*(m.start() for m in members))
    try:
        await wait_until(
            lambda: (
                sum(len(m.assignment()) for m in members) == 6
                and all(m.assignment() for m in members)
            ),
            30,
            "a stable assignment",
        )
        await asyncio.sleep(1.0)
        owner_rack = {}
        for m in members:
            for tp in m.assignment():
                owner_rack[tp] = m.client_rack
        assert len(owner_rack) == 6
        # Each partition is owned in a rack that holds one of its replicas ...
        for tp, rack in owner_rack.items():
            replicas = c.partition_info("zones", tp.partition).replicas
            assert rack in {c.rack_of(r) for r in replicas}, (tp, rack, replicas)
        # ... and Kafka's RackAwareReplicaSelector, per member rack, names that replica.
        for tp, rack in owner_rack.items():
            info = c.partition_info("zones", tp.partition)
            local = next(r for r in info.replicas if c.rack_of(r) == rack)
            c.set_preferred_read_replica(
                "zones", tp.partition, None if local == info.leader else local
            )
        c.produce("zones", 1200, value_size=50, partition="spread", batch_size=4000)
        seen: list = []
        stop = asyncio.Event()
        tasks = [asyncio.ensure_future(drain(m, seen, stop)) for m in members]
        await wait_until(lambda: len(seen) >= 1200, 20, "every record")
        await asyncio.sleep(0.3)
        stop.set()
        await asyncio.gather(*tasks)
        assert len(seen) == len(set(seen)) == 1200
        for m in members:
            stats = m.fetch_stats()
            assert stats.cross_rack_bytes == 0, (m.client_rack, stats.to_dict())
            assert stats.same_rack_bytes > 0
    finally:
        for m in members:
            await m.stop()
