"""benchmarks/consume.py: confluent-tuned's librdkafka settings and the ratio columns."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "consume.py"


@pytest.fixture(scope="module")
def consume() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_consume", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_confluent_tuned_reads_with_throughput_settings(consume: ModuleType) -> None:
    plain = consume.confluent_config({"bootstrap": "127.0.0.1:9092"})
    tuned = consume.confluent_config({"bootstrap": "127.0.0.1:9092", "tuned": True})
    # the same work: CRC checks, no group, from the beginning
    for conf in (plain, tuned):
        assert conf["check.crcs"] is True
        assert conf["enable.auto.commit"] is False
        assert conf["auto.offset.reset"] == "earliest"
    assert "queued.max.messages.kbytes" not in plain
    # above librdkafka's defaults: 64 MiB queue, 1 MiB per partition, 50 MiB per Fetch
    assert tuned["queued.max.messages.kbytes"] > 65536
    assert tuned["max.partition.fetch.bytes"] > 1048576
    assert tuned["fetch.max.bytes"] > 52428800
    assert tuned["fetch.min.bytes"] > 1
    clients = {c.name: c for c in consume.CLIENTS}
    assert clients["confluent-tuned"].tuned and not clients["confluent"].tuned
    assert clients["confluent-tuned"].library == "confluent"


def test_confluent_tuned_asks_for_more_records_a_call(consume: ModuleType) -> None:
    for ds in consume._datasets(quick=True):
        assert ds.tuned_max_records > ds.max_records
        # the first call leaves most of the dataset in the measured window
        assert ds.tuned_max_records <= ds.records / 8


def _ok(rate: float) -> dict[str, Any]:
    return {
        "status": "ok",
        "records": 1000,
        "msgs_per_s": rate,
        "mb_per_s": rate / 10_000,
        "cpu_s": 1.0,
        "rss_mb": 50.0,
        "first_record_s": 0.1,
        "total_s": 1.0,
    }


def test_ratios_to_both_references(consume: ModuleType) -> None:
    summary = {
        "rackafka/events": _ok(300_000.0),
        "aiokafka-c/events": _ok(250_000.0),
        "confluent-tuned/events": _ok(600_000.0),
        "rackafka/10KB": _ok(50_000.0),
        "confluent-tuned/10KB": {"status": "error", "error": "boom"},
    }
    consume.add_ratios(summary)
    assert summary["rackafka/events"]["vs_aiokafka_c"] == pytest.approx(1.2)
    assert summary["rackafka/events"]["vs_confluent_tuned"] == pytest.approx(0.5)
    assert summary["confluent-tuned/events"]["vs_confluent_tuned"] == pytest.approx(1.0)
    # a reference that did not run or failed gives no ratio
    assert summary["rackafka/10KB"]["vs_aiokafka_c"] is None
    assert summary["rackafka/10KB"]["vs_confluent_tuned"] is None
    assert "vs_confluent_tuned" not in summary["confluent-tuned/10KB"]


def test_table_shows_the_vs_cft_column(consume: ModuleType) -> None:
    summary = {
        "rackafka/events": _ok(300_000.0),
        "aiokafka-c/events": _ok(250_000.0),
        "confluent-tuned/events": _ok(600_000.0),
    }
    clients = [c for c in consume.CLIENTS if c.name in ("rackafka", "confluent-tuned")]
    events = [ds for ds in consume._datasets(quick=True) if ds.name == "events"]
    lines = consume.table(clients, events, summary).splitlines()
    head = lines[0].split()
    assert "cfT" in head
    ours = next(line for line in lines if line.startswith("rackafka "))
    cells = ours.split()
    # vs akC, vs cfT, vs API (rackafka's getmany against aiokafka-c's)
    assert cells[-3:] == ["1.20", "0.50", "1.20"]
