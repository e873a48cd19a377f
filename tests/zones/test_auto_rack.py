"""``AIOKafkaConsumer(client_rack="auto")`` against the embedded 3-rack cluster, with every
metadata service pointed at a dead loopback port (nothing leaves the machine)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer
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
