"""The real-Kafka engine itself: layout, start and stop, no JVM left behind, and one clear
error for each thing that can be missing (Java, the jars, a free port)."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rackafka.testing import (
    JavaNotFoundError,
    KafkaCluster,
    KafkaJarsError,
    KafkaPortInUseError,
    probe_api_versions,
)
from rackafka.testing import kafka as kafka_module
from rackafka.testing.kafka_dist import DEFAULT_KAFKA_VERSION, find_java, kafka_libs

from .conftest import check_prerequisites


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def wait_dead(pids: list[int], timeout: float = 60.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return [p for p in pids if alive(p)]


def test_session_cluster_layout(kafka: KafkaCluster) -> None:
    assert kafka.kafka_version == os.environ.get("RACKAFKA_KAFKA_VERSION", DEFAULT_KAFKA_VERSION)
    described = kafka.describe_cluster()
    assert {n.id: n.rack for n in described.nodes} == {1: "az-a", 2: "az-b", 3: "az-c"}
    assert {b: kafka.rack_of(b) for b in kafka.brokers} == {1: "az-a", 2: "az-b", 3: "az-c"}
    for broker in kafka.brokers.values():
        versions = probe_api_versions(broker.host, broker.port)
        assert versions[1][1] >= 12  # Fetch with rack_id (v11) and diverging epochs (v12)
        assert 68 in versions  # ConsumerGroupHeartbeat: KIP-848's protocol is on
        pid = kafka.broker_pid(broker.node_id)
        assert pid is not None and alive(pid)
    assert kafka.log_file(1).is_file()


def test_start_and_close_leave_nothing_behind() -> None:
    check_prerequisites()
    cluster = KafkaCluster(brokers=1, racks=("az-a",))
    with cluster:
        assert cluster.start_seconds is not None
        work = cluster.work_dir
        assert work is not None and work.is_dir()
        pid = cluster.broker_pid(1)
        assert pid is not None and alive(pid)
        cluster.create_topic("one", 2, 1)
        assert cluster.produce("one", 10).count == 10
    assert not alive(pid)
    assert not work.exists()
    with pytest.raises(RuntimeError, match="closed"):
        cluster.start()


def test_jvms_end_when_the_python_process_is_killed(tmp_path: Path) -> None:
    check_prerequisites()
    script = (
        "import os, sys\n"
        "from rackafka.testing import KafkaCluster\n"
        "c = KafkaCluster(brokers=1, racks=None).start()\n"
        "print(c.broker_pid(1), flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        pid = int(line)
        assert alive(pid)
        proc.kill()  # SIGKILL: no atexit, no finalizer
        proc.wait(30)
        assert wait_dead([pid], timeout=60) == [], "the broker JVM outlived its Python process"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_port_in_use_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    check_prerequisites()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        real = kafka_module._free_ports
        monkeypatch.setattr(kafka_module, "_free_ports", lambda n: [port, *real(n - 1)])
        cluster = KafkaCluster(brokers=1, racks=None)
        with pytest.raises(KafkaPortInUseError, match=f"port {port} on 127.0.0.1 is in use"):
            cluster.start()
    assert not cluster.running


def test_no_java_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(JavaNotFoundError, match="need Java 17"):
        KafkaCluster(java=str(tmp_path / "no-java")).start()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match="no Java runtime"):
        KafkaCluster().start()
    old = tmp_path / "java"
    old.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    old.chmod(old.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(JavaNotFoundError, match="Java 11; real Kafka brokers need Java 17"):
        find_java(str(old))


def test_no_cache_and_no_network_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.skip("needs Maven to play a machine without network")
    # Maven offline, with an empty local repository: what a machine without network has.
    offline = tmp_path / "mvn-offline"
    offline.write_text(f'#!/bin/sh\nexec "{mvn}" -o -Dmaven.repo.local="{tmp_path}/m2" "$@"\n')
    offline.chmod(offline.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("RACKAFKA_MAVEN", str(offline))
    with pytest.raises(KafkaJarsError, match="not cached and Maven could not download") as info:
        kafka_libs(cache_dir=tmp_path / "cache")
    assert "\n" not in str(info.value)
    assert not (tmp_path / "cache" / DEFAULT_KAFKA_VERSION).exists()
    with pytest.raises(KafkaJarsError, match="not in the cache"):
        kafka_libs(cache_dir=tmp_path / "cache", download=False)


def test_cached_jars_are_checked(tmp_path: Path) -> None:
    check_prerequisites()
    libs = kafka_libs(DEFAULT_KAFKA_VERSION)
    copy = tmp_path / DEFAULT_KAFKA_VERSION
    shutil.copytree(libs.parent, copy)
    jar = copy / "libs" / f"kafka-clients-{DEFAULT_KAFKA_VERSION}.jar"
    with open(jar, "ab") as f:
        f.write(b"tampered")
    with pytest.raises(KafkaJarsError, match=f"checksum mismatch for {jar.name}"):
        kafka_libs(DEFAULT_KAFKA_VERSION, tmp_path)
    jar.unlink()
    with pytest.raises(KafkaJarsError, match=f"missing: {jar.name}"):
        kafka_libs(DEFAULT_KAFKA_VERSION, tmp_path)
