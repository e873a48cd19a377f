"""A long poll does not hold up partitions that were left out of it."""

from __future__ import annotations

import asyncio
import time

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.testing import EmbeddedCluster

WAIT = 60.0
MAX_WAIT_MS = 5000
SHARE = 16384  # max_partition_fetch_bytes


async def test_a_partition_that_holds_its_share_does_not_wait_for_a_long_poll(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # One leader for both partitions. "busy" is written in batches of about 1.3 times
    # max_partition_fetch_bytes (a broker sends a first batch whole), so that each batch
    # fetched leaves it holding its share; "idle" stays empty. Once a batch of busy is
    # buffered, the fetch to the leader would ask for idle alone, at the end of its log: a
    # long poll of fetch_max_wait_ms, during which busy, read by the user, could not be
    # fetched again. Busy joins the poll instead, and is read without waiting for it.
    embedded_cluster.create_topic("hol", 2, leaders=[1, 1])
    await embedded_cluster.aproduce(
        "hol", 42, value_size=3000, partition=0, batch_size=21_500, linger_ms=50
    )
    busy = TopicPartition("hol", 0)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=MAX_WAIT_MS,
        max_partition_fetch_bytes=SHARE,
    )
    await consumer.start()
    try:
        consumer.assign([busy, TopicPartition("hol", 1)])
        offsets: list[int] = []
        started = time.monotonic()
        while len(offsets) < 42 and time.monotonic() - started < WAIT:
            got = await consumer.getmany(timeout_ms=int(WAIT * 1000), max_records=3)
            offsets += [r.offset for r in got.get(busy, [])]
            await asyncio.sleep(0)  # an application that awaits between its reads
        elapsed = time.monotonic() - started
        assert offsets == list(range(42))
        stats = consumer.fetch_stats()
        # Several batches (each one fetch of busy's), and no wait for a poll to end.
        assert stats.nodes[1].requests >= 4
        assert elapsed < MAX_WAIT_MS / 1000, elapsed
    finally:
        await consumer.stop()
