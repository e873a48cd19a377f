"""``AIOKafkaConsumer(client_rack="auto")`` against the embedded 3-rack cluster, with every
metadata service pointed at a dead loopback port (nothing leaves the machine)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, AIOKafkaProducer
from rackafka.testing import EmbeddedCluster, offline_zone_environ


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in offline_zone_environ(tmp_path).items():
        monkeypatch.setenv(name, value)


async def _start(cluster: EmbeddedCluster) -> AIOKafkaConsumer[Any, Any]:
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, client_rack="auto"
    )
    await consumer.start()
    return consumer


async def test_the_environment_variable_wins(
    embedded_cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RACKAFKA_CLIENT_RACK", "az-b")
    consumer = await _start(embedded_cluster)
    try:
        assert consumer.client_rack == "az-b"
        assert consumer.rack_decision.source == "environment RACKAFKA_CLIENT_RACK"
    finally:
        await consumer.stop()


async def test_a_detected_zone_that_is_a_broker_rack_is_chosen(
    embedded_cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KAFKA_CLIENT_RACK", "az-c")
    consumer = await _start(embedded_cluster)
    try:
        assert consumer.client_rack == "az-c"
        assert consumer.rack_decision.broker_racks == ("az-a", "az-b", "az-c")
        assert consumer.fetch_stats().client_rack == "az-c"
    finally:
        await consumer.stop()


async def test_no_match_reads_leaders_with_one_clear_warning(
    embedded_cluster: EmbeddedCluster,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("KAFKA_CLIENT_RACK", "europe-west1-b")
    caplog.set_level(logging.WARNING, logger="rackafka")
    consumer = await _start(embedded_cluster)
    try:
        assert consumer.client_rack is None
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "europe-west1-b" in warnings[0] and "az-a, az-b, az-c" in warnings[0]
    finally:
        await consumer.stop()


# -- the producer ---------------------------------------------------------------------------


async def test_a_producer_finds_its_rack_and_keeps_keyless_records_in_it(
    embedded_cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = embedded_cluster
    cluster.create_topic("auto-produce", partitions=6, replication_factor=3)
    led_in_c = {
        i.partition
        for i in cluster.partitions("auto-produce")
        if cluster.rack_of(i.leader) == "az-c"
    }
    assert led_in_c and len(led_in_c) < 6
    monkeypatch.setenv("KAFKA_CLIENT_RACK", "az-c")
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers,
        client_rack="auto",
        rack_aware_partitioning=True,
        max_batch_size=2000,
    )
    assert producer.client_rack == "auto"  # found at start(), not before
    await producer.start()
    try:
        assert producer.client_rack == "az-c"
        assert producer.rack_decision is not None
        assert producer.rack_decision.source == "environment KAFKA_CLIENT_RACK"
        futures = [await producer.send("auto-produce", b"x" * 100) for _ in range(300)]
        partitions = {(await f).partition for f in futures}
        assert partitions <= led_in_c
        stats = producer.send_stats()
        assert stats.same_rack_bytes == stats.total_bytes > 0
        assert stats.bytes_by_rack == {"az-c": stats.total_bytes}
    finally:
        await producer.stop()


async def test_a_producer_without_a_matching_zone_sends_anywhere_and_says_so(
    embedded_cluster: EmbeddedCluster,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    embedded_cluster.create_topic("auto-nomatch", partitions=3, replication_factor=3)
    monkeypatch.setenv("KAFKA_CLIENT_RACK", "europe-west1-b")
    caplog.set_level(logging.WARNING, logger="rackafka")
    async with AIOKafkaProducer(
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        client_rack="auto",
        rack_aware_partitioning=True,
    ) as producer:
        assert producer.client_rack is None
        md = await producer.send_and_wait("auto-nomatch", b"v")
        assert md.topic == "auto-nomatch"
        assert producer.send_stats().unknown_rack_bytes == producer.send_stats().total_bytes
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "europe-west1-b" in warnings[0] and "any partition" in warnings[0]
