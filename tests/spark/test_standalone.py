"""The Spark pipeline of ``make demo`` on a real Spark standalone cluster: a master and two
workers on 127.0.0.1, started with ``RACKAFKA_CLIENT_RACK`` az-a and az-b.

Each task takes the rack of the executor it runs on, the embedded brokers select replicas per
client rack (``replica_selector="rack-aware"``), and the run must read every record exactly
once, on both executors, with no byte from another rack. The pipeline runs in its own
process: one process holds one SparkContext, and the other Spark tests hold theirs.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rackafka.testing import SparkStandaloneCluster, SparkUnavailableError

from ._jvm import jvm_test_env

pytestmark = pytest.mark.spark

PIPELINE = Path(__file__).resolve().parents[2] / "examples" / "pipeline.py"
PIPELINE_ARGS = ["--events", "6000", "--partitions", "6", "--cores", "1"]
PIPELINE_ARGS += ["--users", "30", "--minutes", "5"]


def _why_not() -> str | None:
    for module in ("pyspark", "pyarrow", "confluent_kafka"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[test,spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (java not on PATH, JAVA_HOME unset): Spark needs Java 17+"
    return None


def test_pipeline_on_a_standalone_cluster_reads_each_rack_from_its_own_executor(
    tmp_path: Path,
) -> None:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    env = jvm_test_env({k: v for k, v in os.environ.items() if k != "RACKAFKA_CLIENT_RACK"})
    done = subprocess.run(
        [sys.executable, str(PIPELINE), *PIPELINE_ARGS, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-4000:]
    assert re.search(r"rows in \(Kafka records read\):\s+6,000\s+of 6,000", out), out
    assert re.search(r"distinct \(partition, offset\):\s+6,000", out), out
    assert re.search(r"aggregates match the events:\s+yes", out), out
    # Both executors read, each in its own rack, and nothing crossed racks.
    assert re.search(r"tasks, executor racks:\s+\d+\s+az-a, az-b\n", out), out
    served = dict(re.findall(r"bytes served by (az-\w)\s+([\d,]+)", out))
    assert int(served["az-a"].replace(",", "")) > 0, out
    assert int(served["az-b"].replace(",", "")) > 0, out
    assert int(served.get("az-c", "0").replace(",", "")) == 0, out
    assert "same-rack share of bytes read:      100.0%  (0 bytes from other racks)" in out
    assert out.rstrip().endswith("OK"), out
    assert (tmp_path / "per-user-minute.parquet").exists()


def test_the_cluster_checks_its_arguments_and_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="workers"):
        SparkStandaloneCluster([])
    with pytest.raises(ValueError, match="cores"):
        SparkStandaloneCluster(cores=0)
    with pytest.raises(ValueError, match="startup_timeout"):
        SparkStandaloneCluster(startup_timeout=0)
    with pytest.raises(RuntimeError, match="start"):
        SparkStandaloneCluster().spark_conf()
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed: nothing more to check")
    # No Java anywhere: a clear error, and nothing left behind.
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    cluster = SparkStandaloneCluster(work_dir=tmp_path / "work")
    with pytest.raises(SparkUnavailableError, match="Java"):
        cluster.start()
    assert cluster.master_url is None
