"""``pytest --kafka=real``: the plugin's ``kafka_cluster`` fixture on real Kafka brokers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.testing.test_pytest_plugin import USER_TESTS

from .conftest import check_prerequisites


def run_user_tests(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    env = {k: v for k, v in env.items() if k != "RACKAFKA_TEST_KAFKA"}
    return subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "rackafka.testing.pytest_plugin",
            "-p", "no:cacheprovider", "-p", "no:asyncio", "-rs", "-s", "--kafka=real",
            str(tmp_path / "test_user.py"),
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_real_mode_runs_the_shared_tests_on_kafka(tmp_path: Path) -> None:
    check_prerequisites()
    proc = run_user_tests(tmp_path, dict(os.environ))
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "4 passed, 1 skipped" in out
    assert "MODE KafkaCluster" in out
    assert "rackafka kafka_cluster: real" in out
    assert "fault_injection test: needs the embedded cluster" in out


def test_real_mode_without_java_skips_with_the_reason(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java here
    proc = run_user_tests(tmp_path, env)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "3 passed, 2 skipped" in out
    assert "--kafka=real needs Java 17+" in out
