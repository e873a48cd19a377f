"""Fixtures of the OpenTelemetry tests: in-memory spans and metrics, instrumented clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from rackafka.instrumentation.opentelemetry import RackafkaInstrumentor
from rackafka.testing import EmbeddedCluster


@dataclass
class Telemetry:
    """What the instrumented clients reported."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        found = list(self.exporter.get_finished_spans())
        return [s for s in found if name is None or s.name == name]

    def metrics(self) -> dict[str, list[Any]]:
        """Data points by metric name."""
        out: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        if data is None:
            return out
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    out.setdefault(metric.name, []).extend(metric.data.data_points)
        return out


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    instrumentor = RackafkaInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield Telemetry(exporter, reader, tracer_provider, meter_provider)
    finally:
        instrumentor.uninstrument()
        meter_provider.shutdown()
        tracer_provider.shutdown()


@pytest.fixture
async def clients(embedded_cluster: EmbeddedCluster) -> AsyncIterator[list[Any]]:
    """Started clients to stop after the test (append them)."""
    made: list[Any] = []
    try:
        yield made
    finally:
        for client in reversed(made):
            await client.stop()
