"""KIP-392 against Kafka's own ``RackAwareReplicaSelector``: where the bytes come from.

The session cluster has one broker per rack (1: az-a, 2: az-b, 3: az-c); a topic of six
partitions with replication factor 3 has a replica of every partition in every rack, and
each broker leads two partitions. A consumer with ``client_rack`` must be told by each
leader in another rack to read from the replica in its own rack, and get every byte there;
without ``client_rack`` it reads every partition from its leader, a third of them in any
one rack.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.testing import KafkaCluster, default_value

PARTITIONS = 6
PER_PARTITION = 200
VALUE_SIZE = 200
TOTAL = PARTITIONS * PER_PARTITION


@pytest.fixture(scope="module")
def rack_topic(kafka: KafkaCluster) -> str:
    name = f"racks-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, PARTITIONS, 3)
    result = kafka.produce(name, TOTAL, value_size=VALUE_SIZE, partition="spread")
    assert result.count == TOTAL
    assert all(n == PER_PARTITION for n in result.counts.values())
    return name


async def read_all(kafka: KafkaCluster, topic: str, rack: str | None) -> AIOKafkaConsumer:
    """Read the whole topic once with a consumer in ``rack``; returns the stopped consumer
    after checking every record arrived exactly once."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers,
        client_rack=rack,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        metadata_max_age_ms=5000,
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        seen: dict[tuple[int, int], bytes] = {}
        deliveries = 0
        deadline = time.monotonic() + 120
        while len(seen) < TOTAL and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for tp, records in batch.items():
                for r in records:
                    deliveries += 1
                    seen[(tp.partition, r.offset)] = r.value
        assert len(seen) == TOTAL, f"read {len(seen)} of {TOTAL} records"
        assert deliveries == TOTAL, f"{deliveries - TOTAL} duplicate deliveries"
        for p in range(PARTITIONS):
            # record i went to partition i % PARTITIONS, in order
            values = [seen[(p, o)] for o in range(PER_PARTITION)]
            assert values == [
                default_value(o * PARTITIONS + p, VALUE_SIZE) for o in range(PER_PARTITION)
            ]
        return consumer
    finally:
        await consumer.stop()


@pytest.mark.parametrize("rack", ["az-a", "az-b", "az-c"])
async def test_client_rack_reads_every_byte_in_its_rack(
    kafka: KafkaCluster, rack_topic: str, rack: str
) -> None:
    consumer = await read_all(kafka, rack_topic, rack)
    stats = consumer.fetch_stats()
    assert stats.total_bytes > TOTAL * VALUE_SIZE * 0.9
    assert stats.same_rack_bytes == stats.total_bytes, stats.to_dict()
    assert stats.cross_rack_bytes == 0
    (local,) = kafka.brokers_in_rack(rack)
    for p in range(PARTITIONS):
        route = stats.partitions[TopicPartition(rack_topic, p)]
        assert route.read_from == local, stats.to_dict()
        if route.leader != local:
            # the hint came from Kafka's selector on the leader
            assert route.preferred_read_replica == local, stats.to_dict()


async def test_without_client_rack_a_third_is_local(kafka: KafkaCluster, rack_topic: str) -> None:
    consumer = await read_all(kafka, rack_topic, None)
    stats = consumer.fetch_stats()
    total = stats.total_bytes
    assert total > TOTAL * VALUE_SIZE * 0.9
    for rack in kafka.racks:
        share = stats.racks[rack].bytes / total
        # two of the six partitions are led in each rack, all of the same size
        assert 0.25 <= share <= 0.42, (rack, share, stats.to_dict())
    for p in range(PARTITIONS):
        route = stats.partitions[TopicPartition(rack_topic, p)]
        assert route.read_from == route.leader, stats.to_dict()


async def test_consumers_in_three_racks_at_once(kafka: KafkaCluster, rack_topic: str) -> None:
    consumers = await asyncio.gather(*(read_all(kafka, rack_topic, r) for r in kafka.racks))
    for consumer in consumers:
        stats = consumer.fetch_stats()
        assert stats.cross_rack_bytes == 0 and stats.same_rack_bytes > 0, stats.to_dict()
