"""The Spark pipeline of ``make demo`` (examples/pipeline.py), on a small topic."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rackafka.testing import EmbeddedCluster

pytestmark = pytest.mark.spark

PIPELINE_PATH = Path(__file__).resolve().parents[2] / "examples" / "pipeline.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rackafka_examples_pipeline", PIPELINE_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


pipeline = _load()


def test_pipeline_reads_everything_from_its_own_rack(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    c = embedded_cluster
    pipeline.fill_topic(c, 3000, 6, users=20, minutes=5)
    c.emulate_rack_aware_selector("az-b", [pipeline.TOPIC])
    report = pipeline.run_pipeline(spark, c, tmp_path, 3000, users=20, minutes=5)
    assert report.rows_in == report.distinct_offsets == 3000
    assert report.aggregates_ok
    assert 0 < report.rows_out <= 20 * 5
    assert report.client_racks == ["az-b"]
    assert report.tasks >= 2  # minPartitions: both executor cores read
    assert report.cross_rack_bytes == 0 and report.same_rack_share == 1.0
    assert report.ok
    assert Path(report.parquet).exists()


def test_pipeline_reports_cross_rack_reads(
    spark: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    # Without the rack-aware selector every partition is read from its leader: two thirds
    # of the bytes come from other racks, and the pipeline's check fails.
    c = embedded_cluster
    pipeline.fill_topic(c, 3000, 6, users=20, minutes=5)
    report = pipeline.run_pipeline(spark, c, tmp_path, 3000, users=20, minutes=5)
    assert report.rows_in == 3000 and report.aggregates_ok
    assert report.cross_rack_bytes > 0
    assert 0.2 < report.same_rack_share < 0.5
    assert not report.ok
