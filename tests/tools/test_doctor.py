"""``rackafka-doctor`` against the embedded cluster, with and without a replica selector."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rackafka.doctor import EXIT_CODES, format_report, main, run_doctor
from rackafka.testing import EmbeddedCluster, offline_zone_environ

TOPIC = "doctored"

pytestmark = pytest.mark.timeout(180)


def offline_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Every zone source pointed at a closed loopback port: nothing leaves the machine."""
    return offline_zone_environ(tmp_path, **extra)


def _cluster(**kwargs: Any) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=3, **kwargs) as c:
        c.create_topic(TOPIC, partitions=6, replication_factor=3)
        c.create_topic("two-racks", partitions=3, replication_factor=2)
        c.produce(TOPIC, 600, value_size=50, partition="spread")
        yield c


@pytest.fixture(scope="module")
def selecting() -> Iterator[EmbeddedCluster]:
    yield from _cluster(replica_selector="rack-aware")


@pytest.fixture(scope="module")
def plain() -> Iterator[EmbeddedCluster]:
    yield from _cluster()


async def test_reads_in_zone_exit_0(selecting: EmbeddedCluster, tmp_path: Path) -> None:
    report = await run_doctor(
        selecting.bootstrap_servers,
        [TOPIC],
        environ=offline_env(tmp_path, TOPOLOGY_ZONE="az-b"),
        detect_timeout=0.3,
        sample_seconds=10,
    )
    assert report.problems == [], report.to_dict()
    assert report.exit_code == 0
    assert (report.client_rack, report.rack_source) == ("az-b", "environment TOPOLOGY_ZONE")
    assert report.topics[TOPIC]["share_with_replica_in_rack"] == 1.0
    assert report.selector["status"] == "active"
    assert report.selector["named_a_replica"] > 0
    assert report.sample["records"] == 600
    assert report.sample["cross_rack_bytes"] == 0
    assert report.sample["bytes_by_rack"] == {"az-b": report.sample["bytes"]}


async def test_without_a_selector_exit_3_and_the_sample_shows_cross_rack_reads(
    plain: EmbeddedCluster, tmp_path: Path
) -> None:
    report = await run_doctor(
        plain.bootstrap_servers,
        [TOPIC],
        client_rack="az-b",
        environ=offline_env(tmp_path),
        sample_seconds=10,
    )
    assert report.exit_code == EXIT_CODES["selector-inactive"]
    assert report.selector["status"] == "inactive"
    assert report.sample["cross_rack_bytes"] > 0
    codes = [p["code"] for p in report.problems]
    assert codes == ["selector-inactive", "cross-rack-reads"]
    reasons = {f["reason"] for f in report.sample["partitions_not_read_in_rack"]}
    assert reasons and all("replica.selector.class" in r for r in reasons)


async def test_no_rack_found_exit_2(selecting: EmbeddedCluster, tmp_path: Path) -> None:
    report = await run_doctor(
        selecting.bootstrap_servers,
        [TOPIC],
        environ=offline_env(tmp_path, TOPOLOGY_ZONE="eu-west-9z"),
        detect_timeout=0.3,
    )
    assert report.exit_code == EXIT_CODES["no-rack"]
    assert report.client_rack is None
    assert report.candidates == [{"value": "eu-west-9z", "source": "environment TOPOLOGY_ZONE"}]
    assert "eu-west-9z" in report.problems[0]["message"]


async def test_a_given_rack_that_matches_no_broker_is_named(
    selecting: EmbeddedCluster, tmp_path: Path
) -> None:
    report = await run_doctor(
        selecting.bootstrap_servers,
        [TOPIC],
        client_rack="az-typo",
        environ=offline_env(tmp_path),
        sample_seconds=0,
    )
    assert report.exit_code == EXIT_CODES["no-rack"]
    assert report.client_rack is None and report.requested_rack == "az-typo"
    assert "'az-typo' matches no broker" in report.problems[0]["message"]
    # Nothing counted as "in the rack" (not the brokers without one, as rack None would).
    assert report.topics[TOPIC]["with_in_sync_replica_in_rack"] == 0
    text = format_report(report)
    assert "az-typo" in text.splitlines()[0]
    assert "(none)" not in text and "None" not in text, text


async def test_partitions_without_a_replica_in_the_rack_exit_4(
    selecting: EmbeddedCluster, tmp_path: Path
) -> None:
    racks = {n: b.rack for n, b in selecting.brokers.items()}
    # a rack that some replication-factor-2 partition misses
    missing = next(
        rack
        for p in selecting.partitions("two-racks")
        for rack in set(racks.values())
        if rack not in {racks[r] for r in p.replicas}
    )
    assert missing is not None
    report = await run_doctor(
        selecting.bootstrap_servers,
        ["two-racks"],
        client_rack=missing,
        environ=offline_env(tmp_path),
        sample_seconds=0,
    )
    assert report.exit_code == EXIT_CODES["no-replica-in-rack"]
    assert report.topics["two-racks"]["share_with_replica_in_rack"] < 1.0


def test_the_command_line_prints_json_and_exits_with_the_code(
    plain: EmbeddedCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--bootstrap-servers", plain.bootstrap_servers, "--topic", TOPIC]
    argv += ["--client-rack", "az-a", "--sample-seconds", "3", "--json"]
    code = main(argv, environ=offline_env(tmp_path))
    out = json.loads(capsys.readouterr().out)
    assert code == out["exit_code"] == EXIT_CODES["selector-inactive"]
    assert out["ok"] is False
    assert out["client_rack"] == "az-a"
    assert {b["rack"] for b in out["brokers"]} == {"az-a", "az-b", "az-c"}


def test_python_m_rackafka_doctor_runs(selecting: EmbeddedCluster, tmp_path: Path) -> None:
    env = offline_env(tmp_path, RACKAFKA_CLIENT_RACK="az-c")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rackafka",
            "doctor",
            "--bootstrap-servers",
            selecting.bootstrap_servers,
            "--topic",
            TOPIC,
            "--sample-seconds",
            "5",
        ],
        env={**env, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rack:      az-c  [environment RACKAFKA_CLIENT_RACK]" in proc.stdout
    assert "OK: reads stay in the zone" in proc.stdout
