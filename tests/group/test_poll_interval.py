"""``max_poll_interval_ms``: when a member counts as stuck.

As aiokafka and Java: a member is polling while a ``getmany()``/``getone()`` waits for
records, however long; ``max_poll_interval_ms`` counts from the end of the last poll (or
the last assignment taken: a rebalance's time is not held against the member), and a
member leaves no sooner than that.
"""

from __future__ import annotations

import asyncio
import time

from rackafka.testing import EmbeddedCluster
from tests.group.test_group_behaviour import group_consumer, stop_all
from tests.group.test_group_consumer import wait_until


async def test_a_long_getmany_is_a_poll(embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("longpoll", partitions=2, replication_factor=3)
    consumer = group_consumer(c, "g-longpoll", max_poll_interval_ms=1000)
    consumer.subscribe(["longpoll"])
    await consumer.start()
    try:
        coordinator = consumer._coordinator
        assert coordinator is not None
        generation = coordinator.state
        c.start_request_tracking()
        # Waits 3 s for records that never come: three max_poll_interval_ms, all polling.
        assert await consumer.getmany(timeout_ms=3000) == {}
        assert not c.requests("LeaveGroup")
        assert coordinator.state == generation
        assert len(consumer.assignment()) == 2
    finally:
        await consumer.stop()


async def test_a_member_that_never_polls_leaves_after_max_poll_interval_from_its_assignment(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # aiokafka's test_max_poll_interval_ms: the other member takes over about
    # max_poll_interval_ms after the partitions were shared, not sooner.
    c = embedded_cluster
    c.create_topic("nopoll", partitions=4, replication_factor=3)
    a = group_consumer(c, "g-nopoll", max_poll_interval_ms=2500)
    b = group_consumer(c, "g-nopoll")
    for m in (a, b):
        m.subscribe(["nopoll"])
    try:
        await a.start()
        await asyncio.sleep(1.0)  # (a's last poll, if start() counted, is long before)
        await b.start()
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a and b share"
        )
        shared = time.monotonic()

        async def b_polls() -> None:
            while len(b.assignment()) < 4:
                await b.getmany(timeout_ms=100)

        await asyncio.wait_for(b_polls(), 20)
        took = time.monotonic() - shared
        assert took >= 2.2, took  # a never polled: out after max_poll_interval_ms
        assert a.assignment() == set()
    finally:
        await stop_all(a, b)
