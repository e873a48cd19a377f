"""The traced ``send()``/``send_batch()``/``getone()``/``getmany()`` of the instrumentor.

Spans, their names, kinds, parents and links are those of
``opentelemetry-instrumentation-aiokafka`` (so that what was built on an aiokafka
service's traces keeps working), with the attributes of the messaging semantic
conventions for Kafka and rackafka's own in the ``rackafka.`` namespace:

* ``send()``: a PRODUCER span ``"<topic> send"`` per record, from the call to the
  broker's acknowledgement (or the failure); its context goes into the record's headers
  through the global propagator (W3C ``traceparent``/``tracestate`` as bytes, replacing
  any the caller passed), as aiokafka's and Java's instrumentations do.
* ``send_batch()``: one PRODUCER span per batch, with ``messaging.batch.message_count``.
* ``getone()``: a CONSUMER span ``"<topic> receive"`` per record, child of the context
  in its headers (a root span without one).
* ``getmany()``: a CONSUMER span ``"<topics> receive"`` for the call, a child
  ``"<topic> receive"`` per partition linking to a span per record made as ``getone()``'s.

Nothing of a client's settings but its ``client_id`` and group goes into a span: no
credentials, no bootstrap list.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, MutableSequence, Sequence
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter, Setter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from rackafka.instrumentation._otel_metrics import Instruments, rack_attributes
from rackafka.structs import ConsumerRecord, TopicPartition

__all__ = ["HeadersGetter", "HeadersSetter", "traced_consumer", "traced_producer"]

log = logging.getLogger("rackafka.instrumentation")

_SYSTEM = "kafka"
_clock = time.perf_counter

Headers = Sequence[tuple[str, bytes | None]]


class HeadersGetter(Getter[Headers]):
    """Reads a propagation field from record headers (the last header of that name, as
    Java's instrumentation); values that are not UTF-8 are ignored."""

    def get(self, carrier: Headers, key: str) -> list[str] | None:
        found = None
        for name, value in carrier or ():
            if name == key and value is not None:
                found = value
        if found is None:
            return None
        try:
            return [bytes(found).decode()]
        except UnicodeDecodeError:
            return None

    def keys(self, carrier: Headers) -> list[str]:
        return [name for name, _ in carrier or ()]


class HeadersSetter(Setter[MutableSequence[tuple[str, bytes | None]]]):
    """Writes a propagation field into record headers as UTF-8 bytes, replacing the
    headers of that name (a record sent on with the headers it came with gets the new
    context, not two)."""

    def set(self, carrier: MutableSequence[tuple[str, bytes | None]], key: str, value: str) -> None:
        carrier[:] = [(name, v) for name, v in carrier if name != key]
        carrier.append((key, value.encode()))


GETTER = HeadersGetter()
SETTER = HeadersSetter()


def key_text(key: Any) -> str | None:
    """``messaging.kafka.message.key``: the key as text, omitted when it has none."""
    if key is None:
        return None
    if isinstance(key, (bytes, bytearray, memoryview)):
        try:
            return bytes(key).decode()
        except UnicodeDecodeError:
            return None
    if isinstance(key, (str, int)):
        return str(key)
    return None


def broker_attributes(cluster: Any, node: int | None, client_rack: str | None) -> dict[str, Any]:
    """``server.address``/``server.port`` of ``node`` and rackafka's rack attributes."""
    if node is None:
        return {}
    out: dict[str, Any] = {"rackafka.broker.id": node}
    broker = cluster.broker(node)
    if broker is not None:
        out["server.address"] = broker.host
        out["server.port"] = broker.port
    out.update(rack_attributes(client_rack, cluster.rack_of(node)))
    return out


def _error_type(exc: BaseException) -> str:
    return type(exc).__qualname__


def _fail(span: Span, exc: BaseException) -> None:
    span.set_attribute("error.type", _error_type(exc))
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, type(exc).__name__))


# -- producer --------------------------------------------------------------------------------


def traced_producer(
    tracer: Tracer,
    instruments: Instruments,
    send: Callable[..., Any],
    send_batch: Callable[..., Any],
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The traced ``send`` and ``send_batch`` of :class:`~rackafka.AIOKafkaProducer`."""

    @functools.wraps(send)
    async def traced_send(
        self: Any,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> Any:
        attributes = _send_attributes(self, topic, partition)
        text = key_text(key)
        if text is not None:
            attributes["messaging.kafka.message.key"] = text
        if value is None:
            attributes["messaging.kafka.message.tombstone"] = True
        span = tracer.start_span(f"{topic} send", kind=SpanKind.PRODUCER, attributes=attributes)
        carrier: list[tuple[str, bytes | None]] = list(headers) if headers else []
        propagate.inject(carrier, context=trace.set_span_in_context(span), setter=SETTER)
        return await _sending(
            self,
            span,
            instruments,
            topic,
            1,
            send(self, topic, value, key, partition, timestamp_ms, carrier),
        )

    @functools.wraps(send_batch)
    async def traced_send_batch(self: Any, batch: Any, topic: str, *, partition: int | None) -> Any:
        attributes = _send_attributes(self, topic, partition)
        count = batch.record_count()
        attributes["messaging.batch.message_count"] = count
        span = tracer.start_span(f"{topic} send", kind=SpanKind.PRODUCER, attributes=attributes)
        return await _sending(
            self,
            span,
            instruments,
            topic,
            count,
            send_batch(self, batch, topic, partition=partition),
        )

    return traced_send, traced_send_batch


def _send_attributes(producer: Any, topic: str, partition: int | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": _SYSTEM,
        "messaging.destination.name": topic,
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
        "messaging.client.id": producer._client.client_id,
    }
    if partition is not None:
        attributes["messaging.destination.partition.id"] = str(partition)
    return attributes


async def _sending(
    producer: Any, span: Span, instruments: Instruments, topic: str, count: int, call: Any
) -> Any:
    """Await ``send()``/``send_batch()``; end ``span`` when the broker answered."""
    instruments.producers.add(producer)
    started = _clock()
    try:
        future = await call
    except BaseException as exc:
        _sent(producer, span, instruments, topic, count, started, None, exc)
        raise
    future.add_done_callback(
        functools.partial(_delivered, producer, span, instruments, topic, count, started)
    )
    return future


def _delivered(
    producer: Any,
    span: Span,
    instruments: Instruments,
    topic: str,
    count: int,
    started: float,
    future: Any,
) -> None:
    if future.cancelled():
        _sent(producer, span, instruments, topic, count, started, None, None, cancelled=True)
        return
    exc = future.exception()
    _sent(producer, span, instruments, topic, count, started, None if exc else future.result(), exc)


def _sent(
    producer: Any,
    span: Span,
    instruments: Instruments,
    topic: str,
    count: int,
    started: float,
    metadata: Any,
    exc: BaseException | None,
    *,
    cancelled: bool = False,
) -> None:
    """The end of a send: the span's last attributes, the metrics."""
    elapsed = _clock() - started
    metric: dict[str, Any] = {
        "messaging.system": _SYSTEM,
        "messaging.destination.name": topic,
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
    }
    if metadata is not None:
        partition = str(metadata.partition)
        metric["messaging.destination.partition.id"] = partition
        if span.is_recording():
            span.set_attribute("messaging.destination.partition.id", partition)
            if metadata.offset is not None and metadata.offset >= 0:
                span.set_attribute("messaging.kafka.offset", metadata.offset)
            try:
                cluster = producer._cluster
                leader = cluster.leader_for(TopicPartition(topic, metadata.partition))
                span.set_attributes(broker_attributes(cluster, leader, producer.client_rack))
            except Exception:  # the span ends all the same
                log.exception("reading the leader of a sent record failed")
    if exc is not None:
        metric["error.type"] = _error_type(exc)
        _fail(span, exc)
    elif cancelled:
        metric["error.type"] = "cancelled"
        span.set_attribute("error.type", "cancelled")
        span.set_status(Status(StatusCode.ERROR, "cancelled"))
    span.end()
    instruments.sent.add(count, metric)
    instruments.duration.record(elapsed, metric)


# -- consumer --------------------------------------------------------------------------------


def traced_consumer(
    tracer: Tracer,
    instruments: Instruments,
    getone: Callable[..., Any],
    getmany: Callable[..., Any],
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The traced ``getone`` and ``getmany`` of :class:`~rackafka.AIOKafkaConsumer`."""

    @functools.wraps(getone)
    async def traced_getone(self: Any, *partitions: TopicPartition) -> Any:
        instruments.consumers.add(self)
        started = _clock()
        try:
            record = await getone(self, *partitions)
        except BaseException as exc:
            _polled(instruments, self, started, exc)
            raise
        _polled(instruments, self, started, None)
        if isinstance(record, ConsumerRecord):
            try:
                view = _ConsumerView(self)
                _record_span(tracer, view, record).end()
                instruments.consumed.add(1, view.metric(record.topic, record.partition))
            except Exception:  # the record is taken: it is returned whatever happens here
                log.exception("tracing a record failed")
        return record

    @functools.wraps(getmany)
    async def traced_getmany(
        self: Any, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> Any:
        instruments.consumers.add(self)
        started = _clock()
        try:
            records = await getmany(
                self, *partitions, timeout_ms=timeout_ms, max_records=max_records
            )
        except BaseException as exc:
            _polled(instruments, self, started, exc)
            raise
        _polled(instruments, self, started, None)
        if records:
            try:
                _getmany_spans(tracer, instruments, _ConsumerView(self), records)
            except Exception:  # the records are taken: they are returned whatever happens
                log.exception("tracing records failed")
        return records

    return traced_getone, traced_getmany


def _polled(
    instruments: Instruments, consumer: Any, started: float, exc: BaseException | None
) -> None:
    attributes: dict[str, Any] = {
        "messaging.system": _SYSTEM,
        "messaging.operation.name": "receive",
        "messaging.operation.type": "receive",
    }
    group = consumer._group_id
    if group is not None:
        attributes["messaging.consumer.group.name"] = group
    if exc is not None:
        attributes["error.type"] = _error_type(exc)
    instruments.duration.record(_clock() - started, attributes)


class _ConsumerView:
    """What the spans of one ``getone()``/``getmany()`` read of the consumer."""

    __slots__ = ("base", "client_rack", "cluster", "fetcher", "group")

    def __init__(self, consumer: Any) -> None:
        self.group = consumer._group_id
        self.base: dict[str, Any] = {
            "messaging.system": _SYSTEM,
            "messaging.client.id": consumer.client_id,
            "messaging.operation.name": "receive",
            "messaging.operation.type": "receive",
        }
        if self.group is not None:
            self.base["messaging.consumer.group.name"] = self.group
        self.cluster = consumer._client.cluster
        self.fetcher = consumer._fetcher
        self.client_rack = consumer.client_rack

    def partition(self, tp: TopicPartition) -> dict[str, Any]:
        attributes = {
            **self.base,
            "messaging.destination.name": tp.topic,
            "messaging.destination.partition.id": str(tp.partition),
        }
        node = self.fetcher.served_by(tp) if self.fetcher is not None else None
        attributes.update(broker_attributes(self.cluster, node, self.client_rack))
        return attributes

    def metric(self, topic: str, partition: int) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "messaging.system": _SYSTEM,
            "messaging.operation.name": "receive",
            "messaging.operation.type": "receive",
            "messaging.destination.name": topic,
            "messaging.destination.partition.id": str(partition),
        }
        if self.group is not None:
            attributes["messaging.consumer.group.name"] = self.group
        return attributes


def _record_span(
    tracer: Tracer, view: _ConsumerView, record: Any, partition: dict[str, Any] | None = None
) -> Span:
    """The span of one record, child of the context in its headers (not ended)."""
    topic, offset = record.topic, record.offset
    if partition is None:
        partition = view.partition(TopicPartition(topic, record.partition))
    attributes = {
        **partition,
        "messaging.kafka.offset": offset,
        "messaging.kafka.message.offset": offset,  # the older name, aiokafka's
        "messaging.message.id": f"{topic}.{record.partition}.{offset}",
    }
    text = key_text(record.key)
    if text is not None:
        attributes["messaging.kafka.message.key"] = text
    if record.value is None:
        attributes["messaging.kafka.message.tombstone"] = True
    parent = propagate.extract(record.headers, getter=GETTER)
    return tracer.start_span(
        f"{topic} receive", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    )


def _getmany_spans(
    tracer: Tracer,
    instruments: Instruments,
    view: _ConsumerView,
    records: dict[TopicPartition, list[Any]],
) -> None:
    traced = {tp: rs for tp, rs in records.items() if rs and isinstance(rs[0], ConsumerRecord)}
    if not traced:
        return  # record tuples (bulk readers) are not traced
    topics = ", ".join(sorted({tp.topic for tp in traced}))
    poll_attributes = {
        **view.base,
        "messaging.batch.message_count": sum(len(rs) for rs in traced.values()),
    }
    with tracer.start_as_current_span(
        f"{topics} receive", kind=SpanKind.CONSUMER, attributes=poll_attributes
    ):
        for tp, batch in traced.items():
            partition = view.partition(tp)
            with tracer.start_as_current_span(
                f"{tp.topic} receive",
                kind=SpanKind.CONSUMER,
                attributes={**partition, "messaging.batch.message_count": len(batch)},
            ) as partition_span:
                for record in batch:
                    span = _record_span(tracer, view, record, partition)
                    span.end()
                    partition_span.add_link(span.get_span_context())
            instruments.consumed.add(len(batch), view.metric(tp.topic, tp.partition))
