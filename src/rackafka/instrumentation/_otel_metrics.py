"""The OpenTelemetry instruments of :class:`~.opentelemetry.RackafkaInstrumentor`.

The messaging client metrics of the semantic conventions, counted as records are sent and
handed out, and rackafka's bytes per rack, read from ``send_stats()`` / ``fetch_stats()``
of the clients seen since :meth:`instrument` at each collection (as the Prometheus
collector of :mod:`rackafka.metrics` does).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation

__all__ = ["Instruments"]

#: The buckets the semantic conventions advise for ``messaging.client.operation.duration``.
DURATION_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
)

SENT_MESSAGES = "messaging.client.sent.messages"
CONSUMED_MESSAGES = "messaging.client.consumed.messages"
OPERATION_DURATION = "messaging.client.operation.duration"
FETCHED_BYTES = "rackafka.consumer.fetched.bytes"
SENT_BYTES = "rackafka.producer.sent.bytes"


#: The clients seen since instrument(), held weakly (a client collected is no longer
#: reported).  One set for the process: a meter asked again for the same observable
#: instrument keeps its first callback, which must see the clients of a new instrument().
CONSUMERS: weakref.WeakSet[Any] = weakref.WeakSet()
PRODUCERS: weakref.WeakSet[Any] = weakref.WeakSet()


class Instruments:
    """The instruments made from one ``meter``, and the clients whose bytes they report."""

    def __init__(self, meter: Meter) -> None:
        self.sent = meter.create_counter(
            SENT_MESSAGES, unit="{message}", description="Messages a producer sent"
        )
        self.consumed = meter.create_counter(
            CONSUMED_MESSAGES,
            unit="{message}",
            description="Messages handed to the application by a consumer",
        )
        try:
            self.duration = meter.create_histogram(
                OPERATION_DURATION,
                unit="s",
                description="Duration of a messaging operation (send, receive)",
                explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
            )
        except TypeError:  # an API before bucket advice
            self.duration = meter.create_histogram(
                OPERATION_DURATION, unit="s", description="Duration of a messaging operation"
            )
        self.consumers = CONSUMERS
        self.producers = PRODUCERS
        meter.create_observable_counter(
            FETCHED_BYTES,
            callbacks=[self._fetched],
            unit="By",
            description="Record bytes a consumer fetched, by the rack of the broker serving them",
        )
        meter.create_observable_counter(
            SENT_BYTES,
            callbacks=[self._sent_bytes],
            unit="By",
            description="Record batch bytes a producer sent, by the rack of the partition leader",
        )

    def forget(self) -> None:
        """Report no client any more (after ``uninstrument()``)."""
        self.consumers.clear()
        self.producers.clear()

    def _fetched(self, options: CallbackOptions) -> Iterable[Observation]:
        return list(_fetched(list(CONSUMERS)))

    def _sent_bytes(self, options: CallbackOptions) -> Iterable[Observation]:
        return list(_sent(list(PRODUCERS)))


def rack_attributes(client_rack: str | None, broker_rack: str | None) -> dict[str, Any]:
    """``rackafka.client.rack``, ``rackafka.broker.rack`` and ``rackafka.same_rack`` (the
    last only when both racks are known)."""
    out: dict[str, Any] = {}
    if client_rack:
        out["rackafka.client.rack"] = client_rack
    if broker_rack:
        out["rackafka.broker.rack"] = broker_rack
    if client_rack and broker_rack:
        out["rackafka.same_rack"] = client_rack == broker_rack
    return out


def _fetched(consumers: list[Any]) -> Iterator[Observation]:
    for consumer in consumers:
        stats = consumer.fetch_stats()
        client_id = consumer.client_id
        for broker_rack, counters in stats.racks.items():
            attributes = {
                "messaging.system": "kafka",
                "messaging.client.id": client_id,
                **rack_attributes(stats.client_rack, broker_rack),
            }
            if stats.client_rack and not broker_rack:
                attributes["rackafka.same_rack"] = False
            yield Observation(counters.bytes, attributes)


def _sent(producers: list[Any]) -> Iterator[Observation]:
    for producer in producers:
        stats = producer.send_stats()
        client_id = producer._client.client_id
        client_rack = producer.client_rack
        for broker_rack, sent in stats.bytes_by_rack.items():
            rack = None if broker_rack == "null" else broker_rack
            attributes = {
                "messaging.system": "kafka",
                "messaging.client.id": client_id,
                **rack_attributes(client_rack, rack),
            }
            yield Observation(sent, attributes)
