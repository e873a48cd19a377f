"""Batch and streaming reads on a Spark standalone cluster: a master and two workers on
127.0.0.1, in racks az-a and az-b (``RACKAFKA_CLIENT_RACK`` of each worker).

The job runs in its own process (``_distributed_job.py``: one process holds one
SparkContext, and the other Spark tests hold theirs). Checked here: every record read
exactly once by the batch query and by the streaming query across a restart from its
checkpoint; every task read in the rack of its executor, both executors read, and no byte
came from a broker in another rack; nothing the job started is left running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ._jvm import jvm_test_env
from .test_standalone import _why_not

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("_distributed_job.py")


def _left_running(work_dir: Path) -> list[str]:
    """Processes whose working directory or command line is under ``work_dir``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cwd.startswith(str(work_dir)) or str(work_dir) in cmdline:
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def _exactly_once(rows: list[list[int]], ends: dict[str, int]) -> None:
    counts = Counter((p, o) for p, o in rows)
    twice = [k for k, n in counts.items() if n > 1]
    assert not twice, f"read more than once: {twice[:5]}"
    expected = {(int(p), o) for p, end in ends.items() for o in range(end)}
    assert set(counts) == expected, (
        f"missing {sorted(expected - set(counts))[:5]}, extra {sorted(set(counts) - expected)[:5]}"
    )


def _check_racks(reports: list[dict[str, Any]], kind: str = "read") -> None:
    assert reports and all(r["finished"] and r["kind"] == kind for r in reports)
    # Each executor (a process) read in one rack, the one of its worker.
    racks_of_executor: dict[int, set[str]] = {}
    for r in reports:
        racks_of_executor.setdefault(r["pid"], set()).add(r["client_rack"])
        assert r["rack_source"] == "environment RACKAFKA_CLIENT_RACK", r
        other = {rack: n for rack, n in r["bytes_by_rack"].items() if rack != r["client_rack"]}
        assert r["cross_rack_bytes"] == 0 and not any(other.values()), r
    assert all(len(racks) == 1 for racks in racks_of_executor.values()), racks_of_executor
    assert {r["client_rack"] for r in reports} == {"az-a", "az-b"}, f"both executors {kind}"


@pytest.mark.timeout(600)
def test_batch_and_streaming_on_two_racks_of_executors(tmp_path: Path) -> None:
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    env = jvm_test_env({k: v for k, v in os.environ.items() if k != "RACKAFKA_CLIENT_RACK"})
    done = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=540,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-6000:]
    assert not _left_running(tmp_path / "spark"), _left_running(tmp_path / "spark")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    ends = result["ends"]
    assert sum(ends.values()) == 4200

    assert sum(result["batch_ends"].values()) == 3000
    _exactly_once(result["batch_rows"], result["batch_ends"])
    _check_racks(result["batch_reports"])

    # The sink: every row once; each executor wrote only to leaders in its own rack.
    values = sorted(v for _p, v in result["written"])
    assert values == sorted(f"w-{i}" for i in range(2000))
    _check_racks(result["write_reports"], "write")
    assert sum(r["records"] for r in result["write_reports"]) == 2000
    leader_racks = result["write_leader_racks"]
    for r in result["write_reports"]:
        assert r["ranges"] and r["same_rack_bytes"] > 0, r
        for _topic, partition, _first, _end in r["ranges"]:
            assert leader_racks[str(partition)] == r["client_rack"], (r, leader_racks)

    _exactly_once(result["stream_rows"], ends)
    first, second = result["stream_batches"]
    assert sum(first) == 3000 and all(n <= 1000 for n in first) and len(first) >= 3
    assert sum(second) == 1200, "the restart read exactly the new records"
    _check_racks(result["stream_reports"])

    # The brokers' side: bytes were served to az-a and az-b clients by brokers in their rack.
    served: dict[str, int] = {}
    for key, n in result["served"].items():
        node, rack = key.split("/")
        if rack:
            assert result["broker_racks"][node] == rack, (key, n)
            served[rack] = served.get(rack, 0) + n
    assert served.get("az-a", 0) > 0 and served.get("az-b", 0) > 0
    assert served.get("az-c", 0) == 0
