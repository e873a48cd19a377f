"""Spans of the OpenTelemetry instrumentation on the embedded cluster."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import SpanKind

from rackafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rackafka.testing import EmbeddedCluster
from tests.instrumentation.conftest import Telemetry

WAIT = 10


def producer(cluster: EmbeddedCluster, **kwargs: Any) -> AIOKafkaProducer[Any, Any]:
    return AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, **kwargs)


def consumer(cluster: EmbeddedCluster, *topics: str, **kwargs: Any) -> AIOKafkaConsumer[Any, Any]:
    kwargs.setdefault("auto_offset_reset", "earliest")
    return AIOKafkaConsumer(*topics, bootstrap_servers=cluster.bootstrap_servers, **kwargs)


async def test_send_and_getone_make_one_trace(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("t1", 2)
    p = producer(embedded_cluster, client_id="p1")
    clients.append(p)
    await p.start()
    meta = await p.send_and_wait("t1", b"v", key=b"k1", headers=[("h", b"x")])
    c = consumer(embedded_cluster, "t1", client_id="c1", group_id="g1")
    clients.append(c)
    await c.start()
    record = await asyncio.wait_for(c.getone(), WAIT)
    assert record.headers[0] == ("h", b"x")
    assert record.headers[1][0] == "traceparent"
    (send,) = telemetry.spans("t1 send")
    (receive,) = telemetry.spans("t1 receive")
    print(dict(send.attributes), dict(receive.attributes))
    assert send.kind is SpanKind.PRODUCER
    assert receive.kind is SpanKind.CONSUMER
    assert receive.parent is not None
    assert receive.parent.span_id == send.context.span_id
    assert receive.context.trace_id == send.context.trace_id
    print(telemetry.metrics())
