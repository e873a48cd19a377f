"""Leader epochs against the embedded cluster: KIP-951 leader switch and KIP-320 validation."""

from __future__ import annotations

import asyncio

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition

pytestmark = pytest.mark.fault_injection

FETCH, METADATA, OFFSET_FOR_LEADER_EPOCH = 1, 3, 23


async def consume_until(consumer: AIOKafkaConsumer, seen: dict, total: int, timeout: float = 20):
    async def loop() -> None:
        while sum(len(v) for v in seen.values()) < total:
            batch = await consumer.getmany(timeout_ms=500)
            for tp, records in batch.items():
                seen.setdefault(tp, []).extend(r.offset for r in records)

    await asyncio.wait_for(loop(), timeout)


def assert_exactly_once(seen: dict, expected: dict) -> None:
    for tp, offsets in expected.items():
        assert seen.get(tp, []) == offsets, tp


async def test_kip951_moves_the_partition_without_a_metadata_refresh(embedded_cluster) -> None:
    c = embedded_cluster
    c.create_topic("moves", partitions=1, replication_factor=3)
    c.produce("moves", 200, value_size=50, partition=0, batch_size=2000)
    tp = TopicPartition("moves", 0)
    old = c.partition_info("moves", 0).leader
    new = next(r for r in c.partition_info("moves", 0).replicas if r != old)
    async with AIOKafkaConsumer(
        bootstrap_servers=c.bootstrap_servers, auto_offset_reset="earliest"
    ) as consumer:
        consumer.assign([tp])
        seen: dict = {}
        await consume_until(consumer, seen, 200)
        # A refresh asked for by assign() may still be waiting out its backoff (KIP-580).
        pending = consumer._client._refresh
        if pending is not None:
            await asyncio.wait([pending], timeout=5)
        refreshes = consumer._client.metadata_requests
        c.start_request_tracking()
        c.move_leader("moves", 0, new)
        c.produce("moves", 200, value_size=50, partition=0, batch_size=2000)
        await consume_until(consumer, seen, 400)
        requests = c.requests()
        assert_exactly_once(seen, {tp: list(range(400))})
        assert consumer.fetch_stats().partitions[tp].leader == new
        # The NOT_LEADER_OR_FOLLOWER answer of the old leader named the new one
        # (Fetch v16 CurrentLeader): no Metadata request was needed to get there.
        assert consumer._client.metadata_requests == refreshes
    fetches = [r.broker_id for r in requests if r.api_key == FETCH]
    assert old in fetches and new in fetches
    assert fetches.index(old) < fetches.index(new)


async def test_kip320_positions_are_validated_after_a_leader_change_below_fetch_v12(
    embedded_cluster,
) -> None:
    c = embedded_cluster
    c.cap_api_version("Fetch", 4, 11)  # no diverging_epoch in fetch responses
    c.create_topic("valid", partitions=1, replication_factor=3)
    c.produce("valid", 300, value_size=50, partition=0, batch_size=2000)
    tp = TopicPartition("valid", 0)
    old = c.partition_info("valid", 0).leader
    new = next(r for r in c.partition_info("valid", 0).replicas if r != old)
    async with AIOKafkaConsumer(
        bootstrap_servers=c.bootstrap_servers,
        auto_offset_reset="earliest",
        retry_backoff_ms=20,
    ) as consumer:
        consumer.assign([tp])
        seen: dict = {}
        await consume_until(consumer, seen, 300)
        c.start_request_tracking()
        c.move_leader("valid", 0, new)
        c.produce("valid", 300, value_size=50, partition=0, batch_size=2000)
        await consume_until(consumer, seen, 600)
        requests = c.requests()
    assert_exactly_once(seen, {tp: list(range(600))})
    validations = [r for r in requests if r.api_key == OFFSET_FOR_LEADER_EPOCH]
    assert validations, "no OffsetForLeaderEpoch after the leader change"
    assert {r.broker_id for r in validations} == {new}  # always the leader
