"""group_protocol="consumer" (KIP-848) against brokers older than Kafka 4.0, played by the
embedded cluster with its API versions capped: without ConsumerGroupHeartbeat (Kafka before
3.7, or KIP-848 not enabled) start() raises naming the feature, the API and the broker; with
only v0 (3.7 to 3.9's early access) a regex subscription raises so; advertised but refused
(UNSUPPORTED_VERSION: 3.x with the early access off) raises as absent. (That v0 serves a topic
subscription was checked by hand on real Kafka 3.7.2 with the early access on: the mock
cannot play it, it reads v1's fields in a v0 heartbeat.)"""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from rackafka import AIOKafkaConsumer, SubscriptionPattern
from rackafka.errors import UnsupportedVersionError

pytestmark = pytest.mark.fault_injection

CONSUMER_GROUP_HEARTBEAT = 68


def member(cluster, group: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        group_protocol="consumer",
        auto_offset_reset="earliest",
        retry_backoff_ms=50,
    )


@pytest.fixture
def cluster(embedded_cluster):
    embedded_cluster.set_consumer_group_timing(heartbeat_interval_ms=200, session_timeout_ms=6000)
    yield embedded_cluster
    with contextlib.suppress(ValueError):  # not capped by this test
        embedded_cluster.restore_api_version(CONSUMER_GROUP_HEARTBEAT)


async def test_no_consumer_group_heartbeat_names_feature_api_and_broker(cluster) -> None:
    cluster.create_topic("old-none", partitions=1, replication_factor=3)
    cluster.cap_api_version(CONSUMER_GROUP_HEARTBEAT, -1, -1)
    c = member(cluster, "g-old-none")
    c.subscribe(["old-none"])
    try:
        with pytest.raises(UnsupportedVersionError) as info:
            await asyncio.wait_for(c.start(), 20)
        text = str(info.value)
        assert "KIP-848" in text and "ConsumerGroupHeartbeat" in text
        brokers = {f"broker {b.node_id} ({b.host}:{b.port})" for b in cluster.brokers.values()}
        assert any(b in text for b in brokers), text
        assert "group_protocol='classic'" in text
    finally:
        await c.stop()


async def test_early_access_v0_refuses_a_regex_naming_the_broker(cluster) -> None:
    cluster.create_topic("oldre-a", partitions=1, replication_factor=3)
    cluster.cap_api_version(CONSUMER_GROUP_HEARTBEAT, 0, 0)
    c = member(cluster, "g-old-regex")
    c.subscribe(pattern=SubscriptionPattern("^oldre-.*"))
    try:
        with pytest.raises(UnsupportedVersionError) as info:
            await asyncio.wait_for(c.start(), 20)
        text = str(info.value)
        assert "ConsumerGroupHeartbeat v1" in text and "speaks only v0" in text
        assert any(f"broker {b}," in text for b in cluster.brokers), text
    finally:
        await c.stop()


async def test_an_advertised_but_refused_heartbeat_names_feature_api_and_broker(cluster) -> None:
    """Kafka 3.7 to 3.9 advertise ConsumerGroupHeartbeat v0 even with KIP-848's early
    access off, and answer it UNSUPPORTED_VERSION: the same clear error at start()."""
    cluster.create_topic("old-refused", partitions=1, replication_factor=3)
    cluster.push_request_errors("ConsumerGroupHeartbeat", *[UnsupportedVersionError.errno] * 3)
    c = member(cluster, "g-old-refused")
    c.subscribe(["old-refused"])
    try:
        with pytest.raises(UnsupportedVersionError) as info:
            await asyncio.wait_for(c.start(), 20)
        text = str(info.value)
        assert "KIP-848" in text and "ConsumerGroupHeartbeat" in text
        assert "advertises but refuses" in text
        brokers = {f"broker {b.node_id} ({b.host}:{b.port})" for b in cluster.brokers.values()}
        assert any(b in text for b in brokers), text
    finally:
        await c.stop()
