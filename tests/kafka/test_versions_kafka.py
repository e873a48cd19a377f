"""The Kafka release of the real-Kafka tier (``RACKAFKA_KAFKA_VERSION``, default the pin)
against what :func:`rackafka.testing.kafka_versions.kafka_features` says of it: the brokers'
API versions agree with the answer, and a client asking an older release for a feature it
lacks gets the clear error (``make test-kafka KAFKA_VERSION=3.7.2`` runs these on 3.7.2)."""

from __future__ import annotations

import asyncio
import time

import pytest

from rackafka import AIOKafkaConsumer
from rackafka.errors import UnsupportedVersionError
from rackafka.testing import KafkaCluster
from rackafka.testing._kafka_metadata import await_leaders_seen, leaders_seen_by

from ._flow import unique

FETCH = 1
END_TXN = 26
CONSUMER_GROUP_HEARTBEAT = 68


def test_features_agree_with_the_brokers_api_versions(kafka: KafkaCluster) -> None:
    features = kafka.features
    for broker in sorted(kafka.brokers):
        versions = kafka.api_versions(broker)
        assert versions[FETCH][1] >= 11  # KIP-392 on every release the engine runs
        assert features.supports("rack_aware_fetch")
        heartbeat = versions.get(CONSUMER_GROUP_HEARTBEAT)
        # 3.7 to 3.9 advertise v0 even with KIP-848's early access off (they refuse it
        # then, UNSUPPORTED_VERSION): advertised is necessary, not sufficient.
        if features.supports("consumer_group_protocol"):
            assert heartbeat is not None, kafka.kafka_version
        if heartbeat is not None:
            assert (heartbeat[1] >= 1) == features.supports("subscription_pattern")
        assert (versions[END_TXN][1] >= 5) == features.supports("transactions_v2")


async def test_consumer_protocol_on_a_release_without_it_is_one_clear_error(
    kafka: KafkaCluster,
) -> None:
    """As Java's consumer (UnsupportedVersionException): start() raises, naming KIP-848,
    the ConsumerGroupHeartbeat API and the coordinator broker."""
    if kafka.features.supports("consumer_group_protocol"):
        pytest.skip(f"Kafka {kafka.kafka_version} has KIP-848: nothing to refuse")
    topic = unique("no848")
    kafka.create_topic(topic, 1, 3)
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=unique("g-no848"),
        group_protocol="consumer",
    )
    try:
        with pytest.raises(UnsupportedVersionError) as info:
            await asyncio.wait_for(consumer.start(), 60)
        text = str(info.value)
        assert "KIP-848" in text and "ConsumerGroupHeartbeat" in text
        assert any(f"broker {b} (127.0.0.1:" in text for b in kafka.brokers), text
    finally:
        await consumer.stop()


def test_each_broker_tells_its_own_view_of_the_leaders(kafka: KafkaCluster) -> None:
    """The engine's per-broker Metadata (v12, every release from 3.7) that broker_up()
    waits on: once all see the leaders, each answers them."""
    topic = unique("seen")
    kafka.create_topic(topic, 3, 3)
    leaders = {p.partition: p.leader for p in kafka.partitions(topic)}
    brokers = [(b.host, b.port) for b in kafka.brokers.values()]
    assert await_leaders_seen(brokers, {topic: leaders}, time.monotonic() + 30)
    for host, port in brokers:
        assert leaders_seen_by(host, port, topic) == leaders
        assert leaders_seen_by(host, port, unique("absent")) == {}
