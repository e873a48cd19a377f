"""What frameworks built on aiokafka (FastStream) do with a consumer, on a real broker that
creates topics on demand: ``assign()`` before ``start()`` of a partition of a topic that does
not exist yet waits in ``start()`` for the topic, as aiokafka 0.14's does (and as for a
subscribed topic), so that a record produced right after ``start()`` is read with
``auto_offset_reset="latest"``; without the wait the consumer met the topic after the record
and started past it. (The librdkafka mock creates a topic in the first answer that names it:
the difference does not show there.)"""

from __future__ import annotations

import asyncio
from typing import Any

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.testing import KafkaCluster

from ._flow import PATIENCE, unique


async def test_assign_before_start_waits_for_the_topic_the_broker_creates(
    kafka: KafkaCluster,
) -> None:
    # Without a group: with one, the position waits for the group's committed offsets
    # first and may be taken after the record, with aiokafka's consumer as with ours.
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers, auto_offset_reset="latest"
    )
    tp = TopicPartition(unique("assigned-on-demand"), 0)
    consumer.assign([tp])
    await consumer.start()
    try:
        assert consumer.partitions_for_topic(tp.topic)  # known when start() returns
        await kafka.aproduce(tp.topic, 1, partition=0)
        record = await asyncio.wait_for(consumer.getone(), PATIENCE)
        assert (record.topic, record.partition, record.offset) == (tp.topic, 0, 0)
    finally:
        await consumer.stop()
