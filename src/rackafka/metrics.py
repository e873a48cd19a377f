"""Rack-awareness metrics: where each partition is read from, and the bytes per rack.

Two ways to export them:

* :func:`consumer_metrics` gives a list of :class:`Metric` (name, labels, value, kind) for
  any metrics system: call it from your exporter's scrape or timer (statsd,
  OpenTelemetry, logs).  It reads :meth:`AIOKafkaConsumer.fetch_stats` and costs nothing
  between calls.
* :class:`PrometheusCollector` registers them with ``prometheus-client`` (the
  ``prometheus`` extra)::

      from prometheus_client import REGISTRY
      from rackafka.metrics import PrometheusCollector

      REGISTRY.register(PrometheusCollector(consumer))

The metrics (labels in brackets):

* ``rackafka_consumer_preferred_read_replica`` (gauge) [client_id, topic, partition]: the
  replica the leader named (KIP-392), -1 for none; Java's ``preferred-read-replica``.
* ``rackafka_consumer_read_from`` (gauge) [client_id, topic, partition]: the broker the
  partition is fetched from now.
* ``rackafka_consumer_fetch_bytes_total`` (counter) [client_id, client_rack, broker_rack,
  same_rack]: record bytes fetched.
* ``rackafka_consumer_fetch_records_total`` (counter) [client_id, client_rack,
  broker_rack]: records handed to the application.
* ``rackafka_consumer_cross_rack_bytes_total`` (counter) [client_id, client_rack]: bytes
  fetched outside ``client_rack`` (the billed ones).
* ``rackafka_consumer_same_rack_bytes_total`` (counter) [client_id, client_rack].
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Metric", "PrometheusCollector", "consumer_metrics"]

_PREFIX = "rackafka_consumer_"


@dataclass(frozen=True)
class Metric:
    """One sample: ``name`` (without the ``_total`` suffix of counters), its labels, its
    value, and whether it is a ``"gauge"`` or a ``"counter"``."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float
    kind: Literal["gauge", "counter"]
    description: str = ""


def consumer_metrics(consumer: Any) -> list[Metric]:
    """The rack-awareness metrics of an :class:`~rackafka.AIOKafkaConsumer` now."""
    stats = consumer.fetch_stats()
    client_id = str(consumer.client_id)
    rack = stats.client_rack or ""
    out: list[Metric] = []
    for tp, route in sorted(stats.partitions.items()):
        labels = (("client_id", client_id), ("topic", tp.topic), ("partition", str(tp.partition)))
        preferred = route.preferred_read_replica
        out.append(
            Metric(
                _PREFIX + "preferred_read_replica",
                labels,
                float(-1 if preferred is None else preferred),
                "gauge",
                "The replica the leader named as preferred read replica, -1 for none",
            )
        )
        out.append(
            Metric(
                _PREFIX + "read_from",
                labels,
                float(-1 if route.read_from is None else route.read_from),
                "gauge",
                "The broker the partition is fetched from",
            )
        )
    for broker_rack, counters in sorted(stats.racks.items(), key=lambda kv: str(kv[0])):
        same = "true" if rack and broker_rack == rack else "false"
        base = (("client_id", client_id), ("client_rack", rack), ("broker_rack", broker_rack or ""))
        out.append(
            Metric(
                _PREFIX + "fetch_bytes",
                (*base, ("same_rack", same)),
                float(counters.bytes),
                "counter",
                "Record bytes fetched, by the rack of the broker that served them",
            )
        )
        out.append(
            Metric(
                _PREFIX + "fetch_records",
                base,
                float(counters.records),
                "counter",
                "Records handed to the application, by the rack of the broker",
            )
        )
    totals: tuple[tuple[str, str], ...] = (("client_id", client_id), ("client_rack", rack))
    out.append(
        Metric(
            _PREFIX + "cross_rack_bytes",
            totals,
            float(stats.cross_rack_bytes),
            "counter",
            "Record bytes fetched from brokers outside client_rack",
        )
    )
    out.append(
        Metric(
            _PREFIX + "same_rack_bytes",
            totals,
            float(stats.same_rack_bytes),
            "counter",
            "Record bytes fetched from brokers in client_rack",
        )
    )
    return out


class PrometheusCollector:
    """A ``prometheus-client`` collector of :func:`consumer_metrics` for some consumers.

    Register it once (``REGISTRY.register(PrometheusCollector(consumer))``); each scrape
    reads the consumers' current numbers.  Add consumers later with :meth:`add`.

    Raises:
        ImportError: ``prometheus-client`` is not installed (``pip install
            'rackafka[prometheus]'``).
    """

    def __init__(self, *consumers: Any) -> None:
        try:
            from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
        except ImportError as exc:
            raise ImportError(
                "PrometheusCollector needs prometheus-client: pip install 'rackafka[prometheus]'"
            ) from exc
        self._gauge = GaugeMetricFamily
        self._counter = CounterMetricFamily
        self._consumers: list[Any] = list(consumers)

    def add(self, consumer: Any) -> None:
        """Also collect the metrics of ``consumer``."""
        self._consumers.append(consumer)

    def remove(self, consumer: Any) -> None:
        """Stop collecting the metrics of ``consumer``."""
        self._consumers.remove(consumer)

    def collect(self) -> Iterator[Any]:
        """The metric families, for ``prometheus-client``."""
        families: dict[str, Any] = {}
        for metric in _all(self._consumers):
            family = families.get(metric.name)
            if family is None:
                kind = self._counter if metric.kind == "counter" else self._gauge
                family = kind(metric.name, metric.description, labels=[k for k, _ in metric.labels])
                families[metric.name] = family
            family.add_metric([v for _, v in metric.labels], metric.value)
        yield from families.values()

    def describe(self) -> list[Any]:
        """Nothing up front: the families depend on the consumers' partitions."""
        return []


def _all(consumers: Iterable[Any]) -> Iterator[Metric]:
    for consumer in consumers:
        yield from consumer_metrics(consumer)
