"""The ``make demo`` script (examples/demo.py), run for real on a small topic.

The demo starts its own embedded 3-rack cluster, produces, and consumes twice with rackafka;
these tests check what it reports, and that its checks do fail when something is wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("confluent_kafka", reason="the demo's embedded cluster needs confluent-kafka")

DEMO_PATH = Path(__file__).resolve().parents[1] / "examples" / "demo.py"
RECORDS = 6_000
PARTITIONS = 6


def _load_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rackafka_examples_demo", DEMO_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


demo = _load_demo()


@pytest.fixture(scope="module")
def report() -> Any:
    return asyncio.run(demo.run_demo(RECORDS, PARTITIONS))


def test_main_prints_exactly_once_and_all_bytes_from_own_rack(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = demo.main(["--records", str(RECORDS), "--partitions", str(PARTITIONS)])
    out = capsys.readouterr().out
    assert status == 0, out
    rows = {
        line.split("  ")[0].strip(): line.split()
        for line in out.splitlines()
        if line.startswith(("without client_rack ", 'client_rack="az-b" '))
    }
    assert set(rows) == {"without client_rack", 'client_rack="az-b"'}, out
    # run | from az-b | other racks | records/s | received | duplicates | missing | exactly once
    with_rack = rows['client_rack="az-b"'][1:]
    assert with_rack[0] == "100.0%" and with_rack[1] == "0.0%", out
    assert with_rack[3:] == [f"{RECORDS:,}", "0", "0", "yes"], out
    without = rows["without client_rack"][2:]
    assert without[3:] == [f"{RECORDS:,}", "0", "0", "yes"], out
    assert f"OK: all {RECORDS:,} records arrived exactly once" in out


def test_every_record_exactly_once_in_both_runs(report: Any) -> None:
    assert report.records == RECORDS
    assert [r.client_rack for r in report.runs] == [None, "az-b"]
    for run in report.runs:
        assert run.expected == RECORDS
        assert run.received == RECORDS and run.unique == RECORDS
        assert (run.duplicates, run.missing, run.unexpected, run.bad_values) == (0, 0, 0, 0)
        assert run.exactly_once
        assert run.records_per_second > 0
    assert report.ok and report.failures() == []


def test_client_rack_reads_only_from_own_rack(report: Any) -> None:
    run = report.runs[1]
    assert run.total_bytes > RECORDS * 100  # record batches: values plus framing
    assert run.same_rack_bytes == run.total_bytes and run.cross_rack_bytes == 0
    assert run.same_rack_share == 1.0
    # Counted by the brokers, not by the consumer: each partition led outside az-b is asked
    # at most once at its leader (which redirects with no records); the rest goes to az-b.
    outside = [n for n, rack in report.brokers.items() if rack != "az-b"]
    led_outside = sum(n for rack, n in report.leaders_by_rack.items() if rack != "az-b")
    assert sum(run.fetch_requests.get(n, 0) for n in outside) <= led_outside
    assert run.fetch_requests.get(2, 0) >= 1


def test_without_client_rack_about_a_third_from_own_rack(report: Any) -> None:
    assert report.leaders_by_rack == {"az-a": 2, "az-b": 2, "az-c": 2}
    run = report.runs[0]
    # Records are spread evenly over the partitions and each partition is read from its
    # leader, so every rack serves a third of the bytes.
    assert run.same_rack_share == pytest.approx(1 / 3, abs=0.02)
    assert all(run.bytes_by_rack.get(rack, 0) > 0 for rack in ("az-a", "az-b", "az-c"))
    assert all(run.fetch_requests.get(n, 0) >= 1 for n in (1, 2, 3))


def test_failures_are_reported(report: Any) -> None:
    good = report.runs[1]
    duplicated = dataclasses.replace(good, received=good.received + 1, duplicates=1)
    lost = dataclasses.replace(report.runs[0], unique=good.unique - 1, missing=1)
    leaked = dataclasses.replace(good, bytes_by_rack={**good.bytes_by_rack, "az-a": 10})
    for runs, reason in (
        ([report.runs[0], duplicated], "not exactly once"),
        ([lost, good], "not exactly once"),
        ([report.runs[0], leaked], "10 bytes came from other racks"),
    ):
        bad = dataclasses.replace(report, runs=runs)
        assert not bad.ok
        assert any(reason in f for f in bad.failures())
        assert "FAILED" in demo.format_report(bad)


def test_arguments_that_do_not_fit_the_cluster_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert demo.main(["--records", "1000000", "--partitions", "1"]) == 2
    assert "5 MiB per partition" in capsys.readouterr().err
    assert demo.main(["--records", "0"]) == 2
