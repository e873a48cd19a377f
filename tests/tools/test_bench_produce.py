"""benchmarks/produce.py keeps the rows of earlier runs: a run replaces only the cases it
measures."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "produce.py"


@pytest.fixture(scope="module")
def produce() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_produce", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(dataset: str, acks: str, compression: str, rate: float) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "records": 10,
        "acks": acks,
        "compression": compression,
        "rackafka": {"records_per_s": rate},
    }


def test_a_run_replaces_its_cases_and_keeps_the_others(produce: ModuleType) -> None:
    old = [_row("100B", "1", "none", 1.0), _row("100B", "1", "lz4", 2.0)]
    new = [_row("100B", "1", "lz4", 3.0), _row("10KB", "all", "none", 4.0)]
    merged = produce.merge_rows(old, new)
    assert merged == [old[0], new[0], new[1]]
    assert old == [_row("100B", "1", "none", 1.0), _row("100B", "1", "lz4", 2.0)]


def test_results_file_is_read_back(produce: ModuleType, tmp_path: Path) -> None:
    path = tmp_path / "produce.json"
    assert produce.load_results(path) == []
    rows = [_row("events", "all", "lz4", 5.0)]
    path.write_text(json.dumps(rows))
    assert produce.load_results(path) == rows
    path.write_text("{not json")
    assert produce.load_results(path) == []


def test_latency_and_batch_rows_are_cases_of_their_own(produce: ModuleType) -> None:
    throughput = _row("100B", "1", "none", 1.0)
    latency = [
        {
            **_row("100B", "1", "none", 0.0),
            "suite": "latency",
            "linger_ms": linger,
            "max_batch_size": 16384,
        }
        for linger in (0, 5)
    ]
    batch = {
        **_row("100B", "1", "none", 2.0),
        "suite": "batch",
        "linger_ms": "default",
        "max_batch_size": "default",
    }
    merged = produce.merge_rows([throughput], [*latency, batch])
    assert merged == [throughput, *latency, batch]
    again = {**latency[1], "rackafka": {"p99_ms": 7.0}}
    assert produce.merge_rows(merged, [again]) == [throughput, latency[0], again, batch]


def test_engines_keep_rows_of_their_own(produce: ModuleType) -> None:
    old_mock = _row("events", "1", "none", 1.0)  # written before rows named their engine
    kafka = {**_row("events", "1", "none", 2.0), "engine": "kafka"}
    merged = produce.merge_rows([old_mock], [kafka])
    assert merged == [old_mock, kafka]
    mock = {**_row("events", "1", "none", 3.0), "engine": "mock"}
    assert produce.merge_rows(merged, [mock]) == [mock, kafka]


def test_confluent_tuned_batches_for_throughput(produce: ModuleType) -> None:
    spec = {
        "bootstrap": "127.0.0.1:9092",
        "acks": "all",
        "compression": "lz4",
        "linger_ms": 5,
        "max_batch_size": 65536,
    }
    plain = produce._confluent_config({**spec, "client": "confluent"})
    tuned = produce._confluent_config({**spec, "client": "confluent-tuned"})
    assert (plain["linger.ms"], plain["batch.size"]) == (5, 65536)
    # the run's acks and compression; librdkafka's throughput advice for the rest
    assert (tuned["acks"], tuned["compression.type"]) == ("all", "lz4")
    assert tuned["linger.ms"] > 50
    assert tuned["batch.size"] > 65536
    assert tuned["batch.num.messages"] > 10_000
    assert tuned["queue.buffering.max.messages"] > 100_000
    none = produce._confluent_config({**spec, "acks": 1, "compression": None, "client": "x"})
    assert (none["acks"], none["compression.type"]) == ("1", "none")


def test_ratios_and_summary_table(produce: ModuleType) -> None:
    row: dict[str, Any] = {
        **_row("100B", "1", "none", 300_000.0),
        "engine": "mock",
        "rackafka-tuned": {"records_per_s": 420_000.0},
        "rackafka-batch": {"records_per_s": 450_000.0},
        "aiokafka-c": {"records_per_s": 150_000.0},
        "confluent-tuned": {"records_per_s": 600_000.0},
        "confluent": {"error": ["boom"]},
    }
    produce.add_ratios(row)
    assert row["rackafka"]["vs_aiokafka_c"] == pytest.approx(2.0)
    assert row["rackafka"]["vs_confluent_tuned"] == pytest.approx(0.5)
    assert row["rackafka-batch"]["vs_aiokafka_c"] == pytest.approx(3.0)
    assert row["rackafka-batch"]["vs_confluent_tuned"] == pytest.approx(0.75)
    assert row["aiokafka-c"]["vs_aiokafka_c"] is None  # not against itself
    assert "vs_aiokafka_c" not in row["confluent"]
    lone = {**_row("10KB", "all", "lz4", 1.0), "engine": "mock"}
    produce.add_ratios(lone)
    assert lone["rackafka"]["vs_confluent_tuned"] is None
    text = produce.summary_table([row, lone], list(produce.CLIENTS))
    lines = text.splitlines()
    assert lines[1].split()[-12:] == [
        *("vs", "akC", "vs", "cfT"),
        *("tuned", "akC", "tuned", "cfT"),
        *("batch", "akC", "batch", "cfT"),
    ]
    first = lines[3].split()
    assert first[:4] == ["mock", "100B", "1", "none"]
    assert first[4:] == [
        "300,000",
        "420,000",
        "450,000",
        "150,000",
        "-",
        "600,000",
        "2.00",
        "0.50",
        "2.80",
        "0.70",
        "3.00",
        "0.75",
    ]
    assert lines[4].split()[-6:] == ["-"] * 6
    # without the batch client, only send()'s ratios
    plain = produce.summary_table([row], ["rackafka", "aiokafka-c", "confluent-tuned"])
    assert plain.splitlines()[1].split()[-4:] == ["vs", "akC", "vs", "cfT"]
    assert plain.splitlines()[3].split()[-2:] == ["2.00", "0.50"]


def test_batch_client_uses_the_batch_api(produce: ModuleType) -> None:
    """rackafka-batch fills batches until append() returns None, sends each to the next
    partition round-robin and awaits every batch's future: every record is sent once."""
    import asyncio

    class Batch:
        def __init__(self) -> None:
            self.records: list[Any] = []

        def append(self, *, timestamp: Any, key: Any, value: Any, headers: Any) -> Any:
            if len(self.records) == 3:
                return None
            self.records.append((key, value, headers))
            return object()

        def record_count(self) -> int:
            return len(self.records)

    class Producer:
        def __init__(self) -> None:
            self.sent: list[tuple[int, list[Any]]] = []

        async def partitions_for(self, topic: str) -> set[int]:
            return {0, 1}

        def create_batch(self) -> Batch:
            return Batch()

        async def send_batch(self, batch: Batch, topic: str, *, partition: int) -> Any:
            self.sent.append((partition, batch.records))
            fut = asyncio.get_running_loop().create_future()
            fut.set_result(None)
            return fut

    records = [(None, bytes([i]), []) for i in range(8)]
    producer = Producer()
    seconds = asyncio.run(produce._send_batches(producer, "t", records))
    assert seconds >= 0
    assert [p for p, _ in producer.sent] == [0, 1, 0]
    assert [r for _, batch in producer.sent for r in batch] == records
    assert "rackafka-batch" in produce.CLIENTS
    assert "rackafka-batch" in produce.SKIPPED["latency"]


def test_tuned_clients_take_confluent_tuned_batching(produce: ModuleType) -> None:
    """rackafka-tuned and rackafka-batch batch as confluent-tuned does in the throughput
    suite (librdkafka's linger.ms and batch.size); the other suites keep their settings."""
    spec = {"linger_ms": 5, "max_batch_size": 65536}
    tuned_conf = produce._confluent_config(
        {
            **spec,
            "acks": 1,
            "compression": None,
            "client": "confluent-tuned",
            "bootstrap": "127.0.0.1:9092",
        }
    )
    for client in ("rackafka-tuned", "rackafka-batch"):
        settings = produce._asyncio_batching({**spec, "client": client})
        assert settings == {
            "linger_ms": tuned_conf["linger.ms"],
            "max_batch_size": tuned_conf["batch.size"],
        }
        latency = produce._asyncio_batching({**spec, "client": client, "suite": "latency"})
        assert latency == spec
        assert client in produce.SKIPPED["latency"]
    assert produce._asyncio_batching({**spec, "client": "rackafka"}) == spec
    assert produce._asyncio_batching({**spec, "client": "aiokafka-c"}) == spec
