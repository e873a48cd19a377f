"""What frameworks built on aiokafka read from a consumer besides its public API.

FastStream's Kafka broker logs every assignment with a rebalance listener of its own (on by
default) that reads three of aiokafka's private attributes of the consumer: ``_group_id``,
``_coordinator.member_id`` and ``_subscription.topics``. Without them the listener raised
at every rebalance (logged as a failed listener) and its warnings never came."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from rackafka.testing import EmbeddedCluster

WAIT = 20.0


class _FrameworkListener(ConsumerRebalanceListener):
    """Reads what FastStream's logging listener reads."""

    def __init__(self, consumer: AIOKafkaConsumer[Any, Any]) -> None:
        self.consumer = consumer
        self.seen: list[tuple[str | None, str, set[str], set[TopicPartition]]] = []

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        pass

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        c = self.consumer
        self.seen.append(
            (c._group_id, c._coordinator.member_id, set(c._subscription.topics), set(assigned))
        )


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
async def test_the_attributes_a_frameworks_listener_reads(
    embedded_cluster: EmbeddedCluster, group_protocol: str, caplog: pytest.LogCaptureFixture
) -> None:
    embedded_cluster.create_topic("fw", 2)
    classic = {"session_timeout_ms": 3000, "heartbeat_interval_ms": 200}
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        group_id="g-fw",
        group_protocol=group_protocol,
        **(classic if group_protocol == "classic" else {}),
    )
    listener = _FrameworkListener(consumer)
    consumer.subscribe(["fw"], listener=listener)
    with caplog.at_level(logging.ERROR, logger="rackafka"):
        await asyncio.wait_for(consumer.start(), WAIT)
        try:
            assert [(g, bool(m), t, a) for g, m, t, a in listener.seen] == [
                ("g-fw", True, {"fw"}, {TopicPartition("fw", 0), TopicPartition("fw", 1)})
            ]
            assert listener.seen[0][1] == consumer._coordinator.member_id
        finally:
            await consumer.stop()
    assert [r.getMessage() for r in caplog.records] == []


@pytest.mark.parametrize("group", [None, "g-latest"])
async def test_a_record_produced_once_start_returns_is_read_with_latest(
    embedded_cluster: EmbeddedCluster, group: str | None
) -> None:
    # What a framework's tests (and a request/response over Kafka) do: start the consumer,
    # then produce. The produce below blocks the event loop, so the consumer's offset
    # lookup cannot answer before the record is written unless start() waited for it.
    embedded_cluster.create_topic("latest-fw", 1)
    embedded_cluster.produce("latest-fw", 3, partition=0)
    kw: dict[str, Any] = {"group_id": group, "heartbeat_interval_ms": 200} if group else {}
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        "latest-fw",
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        auto_offset_reset="latest",
        **kw,
    )
    await asyncio.wait_for(consumer.start(), WAIT)
    try:
        embedded_cluster.produce("latest-fw", 1, partition=0)
        record = await asyncio.wait_for(consumer.getone(), WAIT)
        assert (record.partition, record.offset) == (0, 3)
    finally:
        await consumer.stop()


async def test_start_without_a_group_does_not_wait_for_a_metadata_refresh_it_just_made(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # Frameworks start a consumer per subscriber (FastStream's tests, hundreds of times):
    # start() of a consumer without a group refreshed metadata once more after loading the
    # subscribed topics, and a refresh right after another waits retry_backoff_ms.
    embedded_cluster.create_topic("quick-start", 1)
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        "quick-start",
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        retry_backoff_ms=2000,
        retry_backoff_max_ms=2000,
    )
    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(consumer.start(), WAIT)
    try:
        assert loop.time() - began < 1.0
        assert consumer.assignment() == {TopicPartition("quick-start", 0)}
    finally:
        await consumer.stop()


async def test_a_group_member_starts_without_metadata_refreshes_it_does_not_need(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # Each join fetched the metadata of every topic of the cluster (as for a pattern
    # subscription); refreshes in a row wait retry_backoff_ms, so a group member's start()
    # (and every rebalance) took hundreds of milliseconds more than aiokafka's. (The
    # leader's refresh before assigning is left: one pause of retry_backoff_ms.)
    embedded_cluster.create_topic("quick-group", 1)
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        "quick-group",
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        group_id="g-quick",
        auto_offset_reset="earliest",
        retry_backoff_ms=2000,
        retry_backoff_max_ms=2000,
        heartbeat_interval_ms=200,
    )
    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(consumer.start(), WAIT)
    try:
        assert loop.time() - began < 3.0  # one pause of 1.6-2 s, not two
        assert consumer.assignment() == {TopicPartition("quick-group", 0)}
    finally:
        await consumer.stop()


async def test_the_client_names_applications_read(embedded_cluster: EmbeddedCluster) -> None:
    """aiokafka's ``client.force_metadata_update()`` (a future of True once metadata came)
    and ``client.cluster._brokers`` (node id -> broker), reached through a consumer's or an
    admin client's ``_client`` by code written for aiokafka."""
    embedded_cluster.create_topic("fw-md", 1)
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        "fw-md", bootstrap_servers=embedded_cluster.bootstrap_servers
    )
    await asyncio.wait_for(consumer.start(), WAIT)
    try:
        client = consumer._client
        before = client.metadata_requests
        assert await asyncio.wait_for(client.force_metadata_update(), WAIT) is True
        assert client.metadata_requests == before + 1
        brokers = client.cluster._brokers
        assert brokers is client.cluster.brokers
        assert sorted(brokers) == sorted(b.node_id for b in client.cluster.brokers.values())
        assert brokers
    finally:
        await consumer.stop()
    # Closed: False, not an exception.
    assert await asyncio.wait_for(client.force_metadata_update(), WAIT) is False


async def test_wait_for_assignment_resolves_on_the_next_assignment(
    embedded_cluster: EmbeddedCluster,
) -> None:
    """aiokafka's ``_subscription.wait_for_assignment()``: a future resolved by the next
    assignment (a rebalance's or ``assign()``'s), not by the revocation before it."""
    embedded_cluster.create_topic("fw-wa", 2)
    embedded_cluster.create_topic("fw-wb", 1)
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        group_id="g-fw-wait",
        session_timeout_ms=3000,
        heartbeat_interval_ms=200,
        partition_assignment_strategy="range",  # (eager: everything is revoked first)
    )
    consumer.subscribe(["fw-wa"])
    await asyncio.wait_for(consumer.start(), WAIT)
    try:
        waiter = consumer._subscription.wait_for_assignment()
        await asyncio.sleep(0.3)
        assert not waiter.done()  # the assignment in force does not resolve it
        consumer.subscribe(["fw-wa", "fw-wb"])
        await asyncio.wait_for(waiter, WAIT)
        assert TopicPartition("fw-wb", 0) in consumer.assignment()
    finally:
        await consumer.stop()
    manual: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=embedded_cluster.bootstrap_servers
    )
    await manual.start()
    try:
        waiter = manual._subscription.wait_for_assignment()
        manual.assign([TopicPartition("fw-wb", 0)])
        assert waiter.done()
    finally:
        await manual.stop()
