"""OpenTelemetry on Apache Kafka: a producer over SASL_SSL and a consumer with
``client_rack`` make one trace per record, and the spans and metrics name the replica in
the consumer's rack that served each record (KIP-392), without a credential anywhere."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from rackafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rackafka.instrumentation.opentelemetry import RackafkaInstrumentor
from rackafka.testing import KafkaCluster

from ._readback import unique
from .conftest import USERS

RECORDS = 40


@pytest.fixture
def otel() -> Iterator[tuple[InMemorySpanExporter, InMemoryMetricReader]]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    RackafkaInstrumentor().instrument(
        tracer_provider=tracer_provider, meter_provider=meter_provider
    )
    try:
        yield exporter, reader
    finally:
        RackafkaInstrumentor().uninstrument()
        meter_provider.shutdown()
        tracer_provider.shutdown()


def points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    data = reader.get_metrics_data()
    assert data is not None
    return [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.data.data_points
    ]


async def test_spans_follow_records_to_the_replica_in_the_consumer_rack(
    kafka: KafkaCluster, otel: tuple[InMemorySpanExporter, InMemoryMetricReader]
) -> None:
    exporter, reader = otel
    topic = unique("otel")
    kafka.create_topic(topic, 2, 3, leaders=[1, 1])  # led in az-a, a replica in each rack
    assert kafka.front is not None
    options = kafka.front.client_options("SCRAM-SHA-512", "alice")
    async with AIOKafkaProducer(client_id="otel-p", client_rack="az-c", **options) as producer:
        futures = [await producer.send(topic, b"v%d" % i, key=b"k%d" % i) for i in range(RECORDS)]
        await asyncio.gather(*futures)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers,
        client_id="otel-c",
        client_rack="az-b",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    async with consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(2)])
        seen = 0
        while seen < RECORDS:
            batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 30)
            seen += sum(len(records) for records in batches.values())
        stats = consumer.fetch_stats()
        fetched = points(reader, "rackafka.consumer.fetched.bytes")
        sent = points(reader, "rackafka.producer.sent.bytes")
    spans = exporter.get_finished_spans()
    sends = {s.context.span_id: s for s in spans if s.name == f"{topic} send"}
    assert len(sends) == RECORDS
    for span in sends.values():
        attributes = span.attributes or {}
        assert span.kind is SpanKind.PRODUCER
        assert attributes["rackafka.broker.id"] == 1  # the leader, in az-a
        assert attributes["rackafka.broker.rack"] == "az-a"
        assert attributes["rackafka.client.rack"] == "az-c"
        assert attributes["rackafka.same_rack"] is False
        assert attributes["messaging.client.id"] == "otel-p"
    records = [
        s
        for s in spans
        if s.name == f"{topic} receive" and "messaging.kafka.offset" in (s.attributes or {})
    ]
    assert len(records) == RECORDS
    for span in records:
        attributes = span.attributes or {}
        # One trace from the send to the record handed out.
        assert span.parent is not None and span.parent.span_id in sends
        assert span.context.trace_id == sends[span.parent.span_id].context.trace_id
        # Fetched from the follower in the consumer's rack, not from the leader.
        assert attributes["rackafka.broker.id"] == 2, dict(attributes)
        assert attributes["rackafka.broker.rack"] == "az-b"
        assert attributes["rackafka.same_rack"] is True
        assert attributes["server.address"] == "127.0.0.1"
    assert stats.cross_rack_bytes == 0, stats.to_dict()
    by_rack = {
        (p.attributes.get("rackafka.broker.rack"), p.attributes.get("rackafka.same_rack")): p.value
        for p in fetched
        if p.attributes["messaging.client.id"] == "otel-c" and p.value
    }
    assert by_rack == {("az-b", True): stats.same_rack_bytes}
    (produced,) = [p for p in sent if p.attributes["messaging.client.id"] == "otel-p"]
    assert produced.attributes["rackafka.broker.rack"] == "az-a" and produced.value > 0
    # No credential in any span or metric.
    text = repr([(s.name, dict(s.attributes or {})) for s in spans]) + repr(fetched + sent)
    for password in USERS.values():
        assert password not in text
