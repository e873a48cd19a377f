"""Metrics of the OpenTelemetry instrumentation: the messaging client metrics of the
semantic conventions and rackafka's bytes by rack, through the meter provider."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from rackafka import AIOKafkaConsumer, AIOKafkaProducer
from rackafka.testing import EmbeddedCluster
from tests.instrumentation.conftest import Telemetry

WAIT = 10


async def test_messaging_client_metrics(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("mt", 2)
    p = AIOKafkaProducer(bootstrap_servers=embedded_cluster.bootstrap_servers)
    clients.append(p)
    await p.start()
    for i in range(3):
        await p.send_and_wait("mt", b"%d" % i, partition=0)
    c = AIOKafkaConsumer(
        "mt",
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        group_id="gm",
        auto_offset_reset="earliest",
    )
    clients.append(c)
    await c.start()
    await asyncio.wait_for(c.getone(), WAIT)
    seen = 1
    while seen < 3:
        batches = await asyncio.wait_for(c.getmany(timeout_ms=500), WAIT)
        seen += sum(len(rs) for rs in batches.values())
    metrics = telemetry.metrics()
    send = {
        "messaging.system": "kafka",
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
        "messaging.destination.name": "mt",
        "messaging.destination.partition.id": "0",
    }
    (sent,) = metrics["messaging.client.sent.messages"]
    assert dict(sent.attributes) == send and sent.value == 3
    receive = {
        "messaging.system": "kafka",
        "messaging.operation.name": "receive",
        "messaging.operation.type": "receive",
        "messaging.consumer.group.name": "gm",
    }
    (consumed,) = metrics["messaging.client.consumed.messages"]
    assert dict(consumed.attributes) == {
        **receive,
        "messaging.destination.name": "mt",
        "messaging.destination.partition.id": "0",
    }
    assert consumed.value == 3
    durations = {
        tuple(sorted(point.attributes.items())): point
        for point in metrics["messaging.client.operation.duration"]
    }
    send_duration = durations[tuple(sorted(send.items()))]
    assert send_duration.count == 3 and send_duration.sum > 0
    assert durations[tuple(sorted(receive.items()))].count >= 2  # getone(), getmany()s
    # The bytes by rack, read from send_stats() and fetch_stats().
    (sent_bytes,) = metrics["rackafka.producer.sent.bytes"]
    assert sent_bytes.value == p.send_stats().total_bytes > 0
    fetched = sum(point.value for point in metrics["rackafka.consumer.fetched.bytes"])
    assert fetched == c.fetch_stats().total_bytes > 0
