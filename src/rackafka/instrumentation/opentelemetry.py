"""OpenTelemetry tracing and metrics for rackafka's producer and consumer.

Needs the ``opentelemetry`` extra (``pip install 'rackafka[opentelemetry]'``)::

    from rackafka.instrumentation.opentelemetry import RackafkaInstrumentor

    RackafkaInstrumentor().instrument(tracer_provider=..., meter_provider=...)

``opentelemetry-instrument`` finds it by itself (entry point ``rackafka`` of the group
``opentelemetry_instrumentor``).  :meth:`~RackafkaInstrumentor.instrument` replaces
``send``, ``send_batch``, ``getone`` and ``getmany`` of
:class:`~rackafka.AIOKafkaProducer` and :class:`~rackafka.AIOKafkaConsumer` (for every
client, made before or after) by traced ones, and
:meth:`~RackafkaInstrumentor.uninstrument` puts the originals back: a process that does
not instrument pays nothing, and ``import rackafka`` never imports OpenTelemetry.

The spans and metrics are described in the documentation (:doc:`/opentelemetry`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)

from rackafka._version import __version__
from rackafka.consumer.consumer import AIOKafkaConsumer
from rackafka.instrumentation._otel_metrics import Instruments
from rackafka.instrumentation._otel_trace import traced_consumer, traced_producer
from rackafka.producer.producer import AIOKafkaProducer

__all__ = ["RackafkaInstrumentor"]

#: The semantic conventions the attribute names follow.
SCHEMA_URL = "https://opentelemetry.io/schemas/1.27.0"
_SCOPE = "rackafka.instrumentation.opentelemetry"
_PATCHED: list[tuple[type, str]] = [
    (AIOKafkaProducer, "send"),
    (AIOKafkaProducer, "send_batch"),
    (AIOKafkaConsumer, "getone"),
    (AIOKafkaConsumer, "getmany"),
]


class RackafkaInstrumentor(BaseInstrumentor):
    """Traces and measures rackafka's producers and consumers with OpenTelemetry.

    A singleton, as every ``BaseInstrumentor``: ``RackafkaInstrumentor()`` is always the
    same object.  ``instrument()`` takes these keyword arguments:

    * ``tracer_provider``: the ``TracerProvider`` of the spans (default: the global one).
    * ``meter_provider``: the ``MeterProvider`` of the metrics (default: the global one).
    """

    _originals: dict[tuple[type, str], Callable[..., Any]] | None = None
    _instruments: Instruments | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        """The package instrumented: rackafka itself."""
        return ("rackafka",)

    def _instrument(self, **kwargs: Any) -> None:
        tracer = trace.get_tracer(
            _SCOPE,
            __version__,
            tracer_provider=kwargs.get("tracer_provider"),
            schema_url=SCHEMA_URL,
        )
        meter = metrics.get_meter(
            _SCOPE,
            __version__,
            meter_provider=kwargs.get("meter_provider"),
            schema_url=SCHEMA_URL,
        )
        instruments = Instruments(meter)
        originals = {(cls, name): cls.__dict__[name] for cls, name in _PATCHED}
        send, send_batch = traced_producer(
            tracer,
            instruments,
            originals[AIOKafkaProducer, "send"],
            originals[AIOKafkaProducer, "send_batch"],
        )
        getone, getmany = traced_consumer(
            tracer,
            instruments,
            originals[AIOKafkaConsumer, "getone"],
            originals[AIOKafkaConsumer, "getmany"],
        )
        # Set on the classes: the clients made before instrument() are traced as well.
        AIOKafkaProducer.send = send  # type: ignore[method-assign]
        AIOKafkaProducer.send_batch = send_batch  # type: ignore[method-assign]
        AIOKafkaConsumer.getone = getone  # type: ignore[method-assign]
        AIOKafkaConsumer.getmany = getmany  # type: ignore[method-assign]
        self._originals = originals
        self._instruments = instruments

    def _uninstrument(self, **kwargs: Any) -> None:
        originals, self._originals = self._originals, None
        if originals is not None:
            for (cls, name), method in originals.items():
                setattr(cls, name, method)
        instruments, self._instruments = self._instruments, None
        if instruments is not None:
            instruments.forget()
