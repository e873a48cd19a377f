"""Spans of the OpenTelemetry instrumentation on the embedded cluster: names, kinds,
attributes, parents and links, traces across rackafka, aiokafka and Java-style records,
and nothing left once uninstrumented."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
    TraceState,
)

from rackafka import AIOKafkaConsumer, AIOKafkaProducer
from rackafka.errors import MessageSizeTooLargeError
from rackafka.instrumentation.opentelemetry import RackafkaInstrumentor
from rackafka.testing import EmbeddedCluster
from tests.instrumentation.conftest import Telemetry

WAIT = 10
PASSWORD = "s3cret-pa55word-never-in-a-span"


def producer(cluster: EmbeddedCluster, **kwargs: Any) -> AIOKafkaProducer[Any, Any]:
    return AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, **kwargs)


def consumer(cluster: EmbeddedCluster, *topics: str, **kwargs: Any) -> AIOKafkaConsumer[Any, Any]:
    kwargs.setdefault("auto_offset_reset", "earliest")
    return AIOKafkaConsumer(*topics, bootstrap_servers=cluster.bootstrap_servers, **kwargs)


async def started(clients: list[Any], client: Any) -> Any:
    clients.append(client)
    await asyncio.wait_for(client.start(), WAIT)
    return client


async def read(c: AIOKafkaConsumer[Any, Any], n: int) -> list[Any]:
    out: list[Any] = []
    while len(out) < n:
        batches = await asyncio.wait_for(c.getmany(timeout_ms=500), WAIT)
        for records in batches.values():
            out.extend(records)
    return out


def headers_of(record: Any) -> dict[str, bytes]:
    return {k: v for k, v in record.headers}


# -- without instrumentation -------------------------------------------------------------------


def test_import_rackafka_imports_no_opentelemetry() -> None:
    code = textwrap.dedent(
        """
        import sys
        import rackafka
        from rackafka import AIOKafkaConsumer, AIOKafkaProducer, AIOKafkaAdminClient
        import rackafka.metrics, rackafka.consumer.consumer, rackafka.producer.producer
        AIOKafkaProducer(); AIOKafkaConsumer()
        found = sorted(m for m in sys.modules
                       if m.split(".")[0] == "opentelemetry" or m.startswith("rackafka.instr"))
        print(found)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


async def test_uninstrument_removes_everything(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    originals = {name: AIOKafkaProducer.__dict__[name] for name in ("send", "send_batch")} | {
        name: AIOKafkaConsumer.__dict__[name] for name in ("getone", "getmany")
    }
    RackafkaInstrumentor().uninstrument()
    try:
        # The methods are rackafka's own again: not instrumented costs nothing.
        for name, method in originals.items():
            cls = AIOKafkaProducer if name.startswith("send") else AIOKafkaConsumer
            assert cls.__dict__[name] is method.__wrapped__  # not the instrumented one
        embedded_cluster.create_topic("plain", 1)
        p = await started(clients, producer(embedded_cluster))
        await p.send_and_wait("plain", b"v")
        c = await started(clients, consumer(embedded_cluster, "plain"))
        (record,) = await read(c, 1)
        assert record.headers == ()
        assert telemetry.spans() == []
        telemetry.meter_provider.force_flush()
        points = telemetry.metrics()
        assert not any(p.value for p in points.get("rackafka.producer.sent.bytes", []))
        assert not any(p.value for p in points.get("rackafka.consumer.fetched.bytes", []))
        assert "messaging.client.sent.messages" not in points
    finally:
        RackafkaInstrumentor().instrument(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )


def test_instrumentor_is_an_opentelemetry_instrumentor() -> None:
    from importlib.metadata import EntryPoint, EntryPoints
    from pathlib import Path

    from opentelemetry.instrumentation.instrumentor import BaseInstrumentor

    tomllib = pytest.importorskip("tomllib")
    assert issubclass(RackafkaInstrumentor, BaseInstrumentor)
    assert list(RackafkaInstrumentor().instrumentation_dependencies()) == ["rackafka"]
    # opentelemetry-instrument finds it by its entry point.
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    project = tomllib.loads(pyproject.read_text())["project"]
    group = project["entry-points"]["opentelemetry_instrumentor"]
    assert group == {"rackafka": "rackafka.instrumentation.opentelemetry:RackafkaInstrumentor"}
    (entry_point,) = EntryPoints(
        [EntryPoint("rackafka", group["rackafka"], "opentelemetry_instrumentor")]
    )
    assert entry_point.load() is RackafkaInstrumentor
    # The extra claims the lower bounds the `test` extra installs, so that the oldest-
    # dependencies cell of the CI matrix (make matrix-oldest) runs them.
    extras = project["optional-dependencies"]
    assert {"opentelemetry-api", "opentelemetry-instrumentation"} == {
        req.split(">=")[0] for req in extras["opentelemetry"]
    }
    assert set(extras["opentelemetry"]) <= set(extras["test"])


# -- producer ------------------------------------------------------------------------------------


async def test_send_makes_a_producer_span_and_injects_its_context(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("t1", 3)
    p = await started(clients, producer(embedded_cluster, client_id="p1"))
    meta = await p.send_and_wait("t1", b"v", key=b"k1", headers=[("h", b"x")])
    await p.send_and_wait("t1", None, key=b"\xff\xfe", partition=2)  # a tombstone
    first, tombstone = telemetry.spans("t1 send")
    assert first.kind is SpanKind.PRODUCER
    assert first.status.status_code is StatusCode.UNSET
    attributes = dict(first.attributes or {})
    port = attributes.pop("server.port")
    assert isinstance(port, int) and f":{port}" in embedded_cluster.bootstrap_servers
    leader = embedded_cluster.partition_info("t1", meta.partition).leader
    assert attributes == {
        "messaging.system": "kafka",
        "messaging.destination.name": "t1",
        "messaging.destination.partition.id": str(meta.partition),
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
        "messaging.client.id": "p1",
        "messaging.kafka.message.key": "k1",
        "messaging.kafka.offset": meta.offset,
        "server.address": "127.0.0.1",
        "rackafka.broker.id": leader,
        "rackafka.broker.rack": ("az-a", "az-b", "az-c")[leader - 1],
    }
    extra = dict(tombstone.attributes or {})
    assert extra["messaging.kafka.message.tombstone"] is True
    assert extra["messaging.destination.partition.id"] == "2"
    assert "messaging.kafka.message.key" not in extra  # no text form: left out
    # The span covers the send up to the broker's answer.
    assert first.end_time is not None and first.start_time is not None
    # The record carries the span's context, W3C trace context as bytes, after the
    # caller's headers.
    c = await started(clients, consumer(embedded_cluster, "t1"))
    records = await read(c, 2)
    record = next(r for r in records if r.value == b"v")
    assert record.headers[0] == ("h", b"x")
    ctx = first.context
    assert headers_of(record)["traceparent"] == (
        f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{ctx.trace_flags:02x}".encode()
    )


async def test_send_replaces_a_traceparent_and_passes_tracestate(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("t2", 1)
    p = await started(clients, producer(embedded_cluster))
    parent = SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("vendor", "abc")]),
    )
    stale = b"00-11111111111111111111111111111111-2222222222222222-01"
    with trace.use_span(NonRecordingSpan(parent)):
        await p.send_and_wait("t2", b"v", headers=[("traceparent", stale), ("k", b"1")])
    (span,) = telemetry.spans("t2 send")
    assert span.parent is not None and span.parent.span_id == parent.span_id
    assert span.context.trace_id == parent.trace_id
    c = await started(clients, consumer(embedded_cluster, "t2"))
    (record,) = await read(c, 1)
    names = [k for k, _ in record.headers]
    assert names.count("traceparent") == 1 and names[0] == "k"
    assert headers_of(record)["traceparent"] == (
        f"00-{parent.trace_id:032x}-{span.context.span_id:016x}-{span.context.trace_flags:02x}".encode()
    )
    assert headers_of(record)["tracestate"] == b"vendor=abc"


async def test_a_failed_send_ends_its_span_with_the_error(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("big", 1)
    p = await started(clients, producer(embedded_cluster, max_request_size=1000))
    with pytest.raises(MessageSizeTooLargeError):
        await p.send("big", b"x" * 2000)
    (span,) = telemetry.spans("big send")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "MessageSizeTooLargeError"
    assert span.events[0].name == "exception"
    (sent,) = telemetry.metrics()["messaging.client.sent.messages"]
    assert sent.attributes["error.type"] == "MessageSizeTooLargeError"


async def test_send_batch_makes_one_span_with_the_batch_size(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("tb", 2)
    p = await started(clients, producer(embedded_cluster))
    batch = p.create_batch()
    for i in range(5):
        batch.append(key=None, value=b"%d" % i, timestamp=None)
    future = await p.send_batch(batch, "tb", partition=1)
    meta = await future
    (span,) = telemetry.spans("tb send")
    attributes = span.attributes or {}
    assert span.kind is SpanKind.PRODUCER
    assert attributes["messaging.batch.message_count"] == 5
    assert attributes["messaging.destination.partition.id"] == "1"
    assert attributes["messaging.kafka.offset"] == meta.offset
    (sent,) = telemetry.metrics()["messaging.client.sent.messages"]
    assert sent.value == 5


# -- consumer ------------------------------------------------------------------------------------


async def test_getone_continues_the_trace_of_the_record(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("g1", 1)
    p = await started(clients, producer(embedded_cluster))
    await p.send_and_wait("g1", b"v", key=b"k")
    c = await started(clients, consumer(embedded_cluster, "g1", group_id="grp", client_id="c1"))
    record = await asyncio.wait_for(c.getone(), WAIT)
    (send,) = telemetry.spans("g1 send")
    (receive,) = telemetry.spans("g1 receive")
    assert receive.kind is SpanKind.CONSUMER
    assert receive.parent is not None and receive.parent.span_id == send.context.span_id
    assert receive.context.trace_id == send.context.trace_id
    attributes = dict(receive.attributes or {})
    node = attributes.pop("rackafka.broker.id")
    attributes.pop("server.port")
    assert node == embedded_cluster.partition_info("g1", 0).leader  # no client_rack
    assert attributes == {
        "messaging.system": "kafka",
        "messaging.destination.name": "g1",
        "messaging.destination.partition.id": "0",
        "messaging.operation.name": "receive",
        "messaging.operation.type": "receive",
        "messaging.client.id": "c1",
        "messaging.consumer.group.name": "grp",
        "messaging.kafka.offset": record.offset,
        "messaging.kafka.message.offset": record.offset,
        "messaging.message.id": f"g1.0.{record.offset}",
        "messaging.kafka.message.key": "k",
        "server.address": "127.0.0.1",
        "rackafka.broker.rack": ("az-a", "az-b", "az-c")[node - 1],
    }


async def test_getmany_spans_as_aiokafka_instrumentation(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("m1", 2)
    p = await started(clients, producer(embedded_cluster))
    for i in range(4):
        await p.send_and_wait("m1", b"v%d" % i, partition=i % 2)
    c = await started(clients, consumer(embedded_cluster, "m1", max_poll_records=4))
    records = await read(c, 4)
    sends = {s.context.span_id: s for s in telemetry.spans("m1 send")}
    receives = telemetry.spans("m1 receive")
    polls = [
        s
        for s in receives
        if s.parent is None
        and "messaging.batch.message_count" in (s.attributes or {})
        and "messaging.destination.partition.id" not in (s.attributes or {})
    ]
    assert polls, [dict(s.attributes or {}) for s in receives]
    partition_spans = [
        s
        for s in receives
        if "messaging.batch.message_count" in (s.attributes or {})
        and "messaging.destination.partition.id" in (s.attributes or {})
    ]
    record_spans = [s for s in receives if "messaging.kafka.offset" in (s.attributes or {})]
    assert len(record_spans) == 4
    poll_ids = {s.context.span_id for s in polls}
    assert all(s.parent is not None and s.parent.span_id in poll_ids for s in partition_spans)
    assert sum((s.attributes or {})["messaging.batch.message_count"] for s in partition_spans) == 4
    # Each record's span is a child of its send span; its partition's span links to it.
    linked = {link.context.span_id for s in partition_spans for link in s.links}
    for span in record_spans:
        assert span.parent is not None and span.parent.span_id in sends
        assert span.context.trace_id == sends[span.parent.span_id].context.trace_id
        assert span.context.span_id in linked
    assert len(records) == 4
    consumed = telemetry.metrics()["messaging.client.consumed.messages"]
    assert sum(point.value for point in consumed) == 4


async def test_a_java_style_traceparent_is_continued(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    # As Java's OpenTelemetry agent writes it: W3C trace context, UTF-8 bytes.
    embedded_cluster.create_topic("java", 1)
    trace_id, span_id = 0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7
    header = f"00-{trace_id:032x}-{span_id:016x}-01".encode()
    RackafkaInstrumentor().uninstrument()  # a producer that is not rackafka's instrumented one
    try:
        p = await started(clients, producer(embedded_cluster))
        await p.send_and_wait("java", b"v", headers=[("traceparent", header)])
    finally:
        RackafkaInstrumentor().instrument(
            tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
        )
    c = await started(clients, consumer(embedded_cluster, "java"))
    await asyncio.wait_for(c.getone(), WAIT)
    (span,) = telemetry.spans("java receive")
    assert span.context.trace_id == trace_id
    assert span.parent is not None and span.parent.span_id == span_id
    assert span.parent.is_remote


async def test_a_record_without_context_starts_a_trace(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    embedded_cluster.create_topic("bare", 1)
    embedded_cluster.produce("bare", 1)
    c = await started(clients, consumer(embedded_cluster, "bare"))
    await asyncio.wait_for(c.getone(), WAIT)
    (span,) = telemetry.spans("bare receive")
    assert span.parent is None


# -- across clients ------------------------------------------------------------------------------


async def test_aiokafka_instrumented_producer_to_rackafka_consumer(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor

    embedded_cluster.create_topic("x1", 1)
    AIOKafkaInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    try:
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=embedded_cluster.bootstrap_servers)
        await started(clients, p)
        await p.send_and_wait("x1", b"from aiokafka")
    finally:
        AIOKafkaInstrumentor().uninstrument()
    (send,) = telemetry.spans("x1 send")
    assert send.instrumentation_scope is not None
    assert send.instrumentation_scope.name == "opentelemetry.instrumentation.aiokafka"
    c = await started(clients, consumer(embedded_cluster, "x1"))
    records = await read(c, 1)
    assert records[0].value == b"from aiokafka"
    (record_span,) = [
        s
        for s in telemetry.spans("x1 receive")
        if s.parent is not None and (s.parent.span_id == send.context.span_id)
    ]
    assert record_span.context.trace_id == send.context.trace_id


async def test_rackafka_producer_to_aiokafka_instrumented_consumer(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    from opentelemetry.instrumentation.aiokafka import AIOKafkaInstrumentor

    embedded_cluster.create_topic("x2", 1)
    p = await started(clients, producer(embedded_cluster))
    await p.send_and_wait("x2", b"from rackafka")
    (send,) = telemetry.spans("x2 send")
    AIOKafkaInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    try:
        c = aiokafka.AIOKafkaConsumer(
            "x2", bootstrap_servers=embedded_cluster.bootstrap_servers, auto_offset_reset="earliest"
        )
        await started(clients, c)
        record = await asyncio.wait_for(c.getone(), WAIT)
    finally:
        AIOKafkaInstrumentor().uninstrument()
    assert record.value == b"from rackafka"
    (receive,) = [
        s
        for s in telemetry.spans("x2 receive")
        if s.instrumentation_scope is not None
        and s.instrumentation_scope.name == "opentelemetry.instrumentation.aiokafka"
    ]
    assert receive.context.trace_id == send.context.trace_id
    assert receive.parent is not None and receive.parent.span_id == send.context.span_id


# -- no secrets ------------------------------------------------------------------------------------


async def test_no_credential_in_spans_or_metrics(telemetry: Telemetry) -> None:
    async with EmbeddedCluster(
        brokers=1, racks=None, security_protocol="SASL_PLAINTEXT", users={"alice": PASSWORD}
    ) as cluster:
        cluster.create_topic("sec", 1)
        options = cluster.front.client_options("PLAIN")
        assert options["sasl_plain_password"] == PASSWORD
        async with AIOKafkaProducer(**options) as p:
            await p.send_and_wait("sec", b"v", key=b"k")
        async with AIOKafkaConsumer(
            "sec", group_id="gsec", auto_offset_reset="earliest", **options
        ) as c:
            await asyncio.wait_for(c.getone(), WAIT)
            await asyncio.wait_for(c.getmany(timeout_ms=100), WAIT)
            metrics = telemetry.metrics()
    spans = telemetry.spans()
    assert {s.name for s in spans} == {"sec send", "sec receive"}
    text = repr(
        [(s.name, dict(s.attributes or {}), [e.attributes for e in s.events]) for s in spans]
    ) + repr(metrics)
    assert "alice" in repr(options)
    assert PASSWORD not in text
    assert "bootstrap" not in text and "sasl" not in text


# -- racks ---------------------------------------------------------------------------------------


async def test_record_spans_and_metrics_name_the_replica_and_rack_read_from(
    embedded_cluster: EmbeddedCluster, telemetry: Telemetry, clients: list[Any]
) -> None:
    cluster = embedded_cluster
    cluster.create_topic("r1", 1, 3, leaders=[1])  # led in az-a, replicas in every rack
    p = await started(clients, producer(cluster, client_rack="az-c"))
    for i in range(20):
        await p.send_and_wait("r1", b"%d" % i)
    cluster.emulate_rack_aware_selector("az-b")
    c = await started(clients, consumer(cluster, "r1", client_rack="az-b", client_id="cb"))
    await read(c, 20)
    record_spans = [
        s for s in telemetry.spans("r1 receive") if "messaging.kafka.offset" in (s.attributes or {})
    ]
    assert len(record_spans) == 20
    for span in record_spans:
        attributes = span.attributes or {}
        assert attributes["rackafka.broker.id"] == 2  # the follower in az-b, not the leader
        assert attributes["rackafka.broker.rack"] == "az-b"
        assert attributes["rackafka.client.rack"] == "az-b"
        assert attributes["rackafka.same_rack"] is True
    for span in telemetry.spans("r1 send"):  # to the leader in az-a from az-c
        attributes = span.attributes or {}
        assert attributes["rackafka.broker.id"] == 1
        assert attributes["rackafka.same_rack"] is False
    metrics = telemetry.metrics()
    fetched = {
        (p.attributes.get("rackafka.broker.rack"), p.attributes.get("rackafka.same_rack")): p.value
        for p in metrics["rackafka.consumer.fetched.bytes"]
        if p.attributes["messaging.client.id"] == "cb"
    }
    assert fetched[("az-b", True)] == c.fetch_stats().same_rack_bytes > 0
    assert not any(v for (rack, _), v in fetched.items() if rack != "az-b")
    (sent,) = metrics["rackafka.producer.sent.bytes"]
    assert sent.attributes["rackafka.broker.rack"] == "az-a"
    assert sent.attributes["rackafka.same_rack"] is False
    assert sent.value == p.send_stats().cross_rack_bytes > 0


async def test_a_failure_of_tracing_never_loses_records(
    embedded_cluster: EmbeddedCluster,
    telemetry: Telemetry,
    clients: list[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rackafka.instrumentation import _otel_trace

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracing broke")

    monkeypatch.setattr(_otel_trace, "_record_span", broken)
    embedded_cluster.create_topic("lose", 1)
    embedded_cluster.produce("lose", 3)
    c = await started(clients, consumer(embedded_cluster, "lose"))
    first = await asyncio.wait_for(c.getone(), WAIT)
    rest = await read(c, 2)
    assert [r.offset for r in [first, *rest]] == [0, 1, 2]
