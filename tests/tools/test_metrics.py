"""Rack-awareness metrics from a consumer reading the embedded cluster, through
prometheus-client's own registry and text exposition."""

from __future__ import annotations

import builtins
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from rackafka import AIOKafkaConsumer
from rackafka.metrics import PrometheusCollector, consumer_metrics
from rackafka.structs import TopicPartition
from rackafka.testing import EmbeddedCluster

pytestmark = pytest.mark.timeout(120)


async def _read(cluster: EmbeddedCluster, rack: str, count: int) -> AIOKafkaConsumer[Any, Any]:
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        client_rack=rack,
        client_id="metered",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    consumer.assign([TopicPartition("m", p) for p in range(3)])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < count and time.monotonic() < deadline:
        seen += sum(len(v) for v in (await consumer.getmany(timeout_ms=500)).values())
    assert seen == count
    return consumer


async def test_prometheus_exposition_of_a_rack_aware_consumer() -> None:
    async with EmbeddedCluster(brokers=3, replica_selector="rack-aware") as cluster:
        cluster.create_topic("m", partitions=3, replication_factor=3)
        cluster.produce("m", 300, value_size=40, partition="spread")
        consumer = await _read(cluster, "az-c", 300)
        try:
            registry = CollectorRegistry()
            registry.register(PrometheusCollector(consumer))
            text = generate_latest(registry).decode()
            families = {f.name: f for f in text_string_to_metric_families(text)}
            stats = consumer.fetch_stats()
            az_c = next(n for n, b in cluster.brokers.items() if b.rack == "az-c")
            replicas = {
                (s.labels["topic"], s.labels["partition"]): s.value
                for s in families["rackafka_consumer_read_from"].samples
            }
            assert replicas == {("m", str(p)): float(az_c) for p in range(3)}
            preferred = families["rackafka_consumer_preferred_read_replica"].samples
            led_elsewhere = [p for p in range(3) if cluster.partition_info("m", p).leader != az_c]
            assert (
                sorted(int(s.labels["partition"]) for s in preferred if s.value == float(az_c))
                == led_elsewhere
            )
            cross = families["rackafka_consumer_cross_rack_bytes"].samples
            same = families["rackafka_consumer_same_rack_bytes"].samples
            assert [s.value for s in cross] == [0.0]
            assert [s.value for s in same] == [float(stats.same_rack_bytes)] != [0.0]
            assert all(s.labels["client_id"] == "metered" for s in same)
            by_rack = {
                s.labels["broker_rack"]: s.value
                for s in families["rackafka_consumer_fetch_bytes"].samples
                if s.name.endswith("_total")
            }
            assert by_rack.get("az-c") == float(stats.same_rack_bytes)
        finally:
            await consumer.stop()


async def test_the_plain_hook_without_prometheus() -> None:
    async with EmbeddedCluster(brokers=3) as cluster:
        cluster.create_topic("m", partitions=3, replication_factor=3)
        cluster.produce("m", 90, value_size=40, partition="spread")
        consumer = await _read(cluster, "az-a", 90)
        try:
            metrics = {(m.name, m.labels): m for m in consumer_metrics(consumer)}
            cross = next(v for (n, _), v in metrics.items() if n.endswith("cross_rack_bytes"))
            # no replica selector: partitions led from other racks are read across racks
            assert cross.kind == "counter"
            assert cross.value == consumer.fetch_stats().cross_rack_bytes > 0
        finally:
            await consumer.stop()


def test_a_missing_prometheus_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def fake(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("prometheus_client"):
            raise ImportError("no prometheus_client")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"rackafka\[prometheus\]"):
        PrometheusCollector()
