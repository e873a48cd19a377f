"""A consumer reading while real brokers stop, restart and hand leadership over.

Records keep flowing the whole time (an idempotent writer), the consumer reads them as
they come, with ``auto_offset_reset="none"``: an offset reset would raise
``OffsetOutOfRangeError`` instead of silently re-reading or skipping. Every test checks
exactly once: each record delivered once, at consecutive offsets, none missing.
"""

from __future__ import annotations

import asyncio

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.testing import KafkaCluster

from ._flow import Reader, Writer, assert_exactly_once, assign_from_start, unique, wait_for

PARTITIONS = 4


def consumer_for(kafka: KafkaCluster, rack: str | None) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers,
        client_rack=rack,
        auto_offset_reset="none",
        enable_auto_commit=False,
        metadata_max_age_ms=3000,
        request_timeout_ms=15000,
        # small fetches: the consumer is in the middle of a read when the broker goes
        max_partition_fetch_bytes=8192,
    )


async def test_follower_in_own_rack_stopped_and_restarted_mid_read(
    all_brokers_up: KafkaCluster,
) -> None:
    """Broker 3 (az-c) follows every partition and leads none; the consumer in az-c reads
    everything from it, keeps reading from the leaders while it is down, and returns to it
    once it is back."""
    kafka = all_brokers_up
    topic = unique("follower-restart")
    kafka.create_topic(topic, PARTITIONS, 3, leaders=[1, 2, 1, 2])
    writer = await Writer(kafka, topic, PARTITIONS).start()
    consumer = consumer_for(kafka, "az-c")
    await consumer.start()
    reader = None
    try:
        assign_from_start(consumer, topic, PARTITIONS)
        reader = Reader(consumer).start()
        await reader.wait_count(800)
        stats = consumer.fetch_stats()
        assert stats.cross_rack_bytes == 0, stats.to_dict()
        assert {r.read_from for r in stats.partitions.values()} == {3}, stats.to_dict()

        # stop broker 3 while records flow and the consumer reads from it
        await asyncio.to_thread(kafka.broker_down, 3)
        read_at_stop = len(reader.seen)
        await reader.wait_count(read_at_stop + 800)
        stats = consumer.fetch_stats()
        assert stats.cross_rack_bytes > 0, "with az-c down the records come from the leaders"
        await wait_for(
            lambda: all(r.read_from in (1, 2) for r in consumer.fetch_stats().partitions.values()),
            "every partition read from its leader",
        )

        await asyncio.to_thread(kafka.broker_up, 3)
        # back in the ISR: the leaders name broker 3 again and the consumer goes back
        await wait_for(
            lambda: all(r.read_from == 3 for r in consumer.fetch_stats().partitions.values()),
            "the consumer back on broker 3",
        )
        crossed = consumer.fetch_stats().cross_rack_bytes
        same = consumer.fetch_stats().same_rack_bytes
        await reader.wait_count(len(reader.seen) + 800)
        after = consumer.fetch_stats()
        assert after.same_rack_bytes > same
        assert after.cross_rack_bytes == crossed, after.to_dict()

        written = await writer.pause()
        await reader.wait_count(written)
        await reader.stop()
        assert_exactly_once([reader], written, PARTITIONS)
    finally:
        if reader is not None:
            await reader.close()
        await consumer.stop()
        await writer.stop()


async def test_leader_stopped_and_preferred_leader_elected_mid_read(
    all_brokers_up: KafkaCluster,
) -> None:
    """Broker 1 leads every partition; the consumer (no rack) reads from it. Broker 1 is
    stopped (Kafka moves the leadership to broker 2 with a new leader epoch), then started
    again and elected preferred leader once more: two leader changes under the reader."""
    kafka = all_brokers_up
    topic = unique("leader-change")
    kafka.create_topic(topic, PARTITIONS, 3, leaders=[1] * PARTITIONS)
    writer = await Writer(kafka, topic, PARTITIONS).start()
    consumer = consumer_for(kafka, None)
    await consumer.start()
    reader = None
    try:
        assign_from_start(consumer, topic, PARTITIONS)
        reader = Reader(consumer).start()
        await reader.wait_count(800)
        assert {r.read_from for r in consumer.fetch_stats().partitions.values()} == {1}

        await asyncio.to_thread(kafka.broker_down, 1)
        assert {p.leader for p in kafka.partitions(topic)} == {2}
        await reader.wait_count(len(reader.seen) + 800)
        await wait_for(
            lambda: all(r.read_from == 2 for r in consumer.fetch_stats().partitions.values()),
            "every partition read from the new leader",
        )

        # back, caught up, and the preferred leader again (a second leader change)
        await asyncio.to_thread(kafka.broker_up, 1)
        assert {p.leader for p in kafka.partitions(topic)} == {1}
        await wait_for(
            lambda: all(r.read_from == 1 for r in consumer.fetch_stats().partitions.values()),
            "every partition read from broker 1 again",
        )
        await reader.wait_count(len(reader.seen) + 800)

        written = await writer.pause()
        await reader.wait_count(written)
        await reader.stop()
        assert_exactly_once([reader], written, PARTITIONS)
        for p in range(PARTITIONS):
            assert await consumer.position(TopicPartition(topic, p)) == written // PARTITIONS + (
                1 if p < written % PARTITIONS else 0
            )
    finally:
        if reader is not None:
            await reader.close()
        await consumer.stop()
        await writer.stop()
