"""Tests of the ``rackafka.testing.pytest_plugin`` fixtures and ``--kafka`` modes.

Each case runs pytest in a subprocess on a small test file, with the plugin enabled by
``-p`` as a user would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rackafka.testing import ComposeCluster, DockerUnavailableError
from rackafka.testing.compose import FaultInjectionUnsupportedError, docker_engine_error

pytest.importorskip("confluent_kafka", reason="the embedded cluster needs confluent-kafka")

USER_TESTS = """
import pytest

created = []


def test_embedded_cluster(embedded_cluster):
    assert embedded_cluster.running
    assert [b.rack for b in embedded_cluster.brokers.values()] == ["az-a", "az-b", "az-c"]
    created.append(embedded_cluster)


def test_factory(embedded_cluster_factory):
    assert not created[0].running  # the function-scoped fixture was closed
    one = embedded_cluster_factory(brokers=1, racks=None)
    six = embedded_cluster_factory(brokers=6, racks=("x", "y"))
    assert len(one.brokers) == 1 and len(six.brokers) == 6
    assert six.rack_of(6) == "y"
    created.extend([one, six])


def test_factory_cleaned_up():
    assert len(created) == 3 and not any(c.running for c in created)


def test_kafka_cluster(kafka_cluster):
    kafka_cluster.create_topic("plugin-t", 2, 3)
    assert kafka_cluster.produce("plugin-t", 4, partition="spread").count == 4
    print("MODE", type(kafka_cluster).__name__)


@pytest.mark.fault_injection
def test_fault(kafka_cluster):
    kafka_cluster.create_topic("plugin-f", 1, 3)
    kafka_cluster.broker_down(2)
    kafka_cluster.broker_up(2)
"""


def _run(
    tmp_path: Path, *args: str, env_mode: str | None = None
) -> subprocess.CompletedProcess[str]:
    test_file = tmp_path / "test_user.py"
    test_file.write_text(USER_TESTS)
    env = dict(os.environ)
    env.pop("RACKAFKA_TEST_KAFKA", None)
    if env_mode is not None:
        env["RACKAFKA_TEST_KAFKA"] = env_mode
    return subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "rackafka.testing.pytest_plugin",
            "-p", "no:cacheprovider", "-p", "no:asyncio", "-rs", "-s", str(test_file), *args,
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_embedded_mode_is_the_default(tmp_path: Path) -> None:
    proc = _run(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "5 passed" in proc.stdout
    assert "MODE EmbeddedCluster" in proc.stdout
    assert "rackafka kafka_cluster: embedded" in proc.stdout


def test_compose_mode_without_docker_skips_with_reasons(tmp_path: Path) -> None:
    error = docker_engine_error()
    if error is None:
        pytest.skip("a Docker engine answers here; this checks the behaviour without one")
    for args, env_mode in ((("--kafka=compose",), None), ((), "compose")):
        proc = _run(tmp_path, *args, env_mode=env_mode)
        out = proc.stdout
        assert proc.returncode == 0, out + proc.stderr
        assert "3 passed, 2 skipped" in out
        assert "compose mode needs a Docker engine: " in out
        assert "fault_injection test: needs the embedded cluster" in out
        assert "MODE" not in out


def test_bad_mode_is_a_usage_error(tmp_path: Path) -> None:
    proc = _run(tmp_path, env_mode="kraft")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "RACKAFKA_TEST_KAFKA='kraft' is not a valid Kafka test mode" in proc.stderr
    proc = _run(tmp_path, "--kafka=zookeeper")
    assert proc.returncode == 4
    assert "invalid choice" in proc.stderr


def test_compose_cluster_refuses_fault_injection() -> None:
    cluster = ComposeCluster("docker-compose.yml")
    with pytest.raises(FaultInjectionUnsupportedError, match="needs the embedded cluster"):
        cluster.broker_down(1)
    with pytest.raises(AttributeError):
        cluster.no_such_method()
    assert cluster.supports_fault_injection is False


def test_compose_cluster_without_docker() -> None:
    error = docker_engine_error()
    if error is None:
        pytest.skip("a Docker engine answers here; this checks the behaviour without one")
    with pytest.raises(DockerUnavailableError, match=r"^compose mode needs a Docker engine: "):
        ComposeCluster("docker-compose.yml").start()


COMPOSE_FILE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def test_compose_file_settings() -> None:
    """Line-level checks that need no YAML parser."""
    text = COMPOSE_FILE.read_text()
    assert "image: apache/kafka:4.1.0" in text  # KIP-848 is GA from 4.0
    for node, rack, port in ((1, "az-a", 19092), (2, "az-b", 29092), (3, "az-c", 39092)):
        service = text.split(f"  kafka-{node}:\n", 1)[1].split("\n\n", 1)[0]
        assert f'KAFKA_NODE_ID: "{node}"' in service
        assert f'KAFKA_BROKER_RACK: "{rack}"' in service
        assert f'- "{port}:{port}"' in service
        assert f"PLAINTEXT://localhost:{port}" in service
        assert f"PLAINTEXT://:{port}" in service
    for line in (
        'KAFKA_REPLICA_SELECTOR_CLASS: "org.apache.kafka.common.replica.RackAwareReplicaSelector"',
        'KAFKA_CONTROLLER_QUORUM_VOTERS: "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"',
        'KAFKA_DEFAULT_REPLICATION_FACTOR: "3"',
        'KAFKA_MIN_INSYNC_REPLICAS: "2"',
        'KAFKA_AUTO_CREATE_TOPICS_ENABLE: "true"',
        'KAFKA_GROUP_COORDINATOR_REBALANCE_PROTOCOLS: "classic,consumer"',
    ):
        assert line in text


def test_compose_file_is_valid_yaml() -> None:
    yaml = pytest.importorskip("yaml", reason="parsing docker-compose.yml needs PyYAML")
    path = COMPOSE_FILE
    spec = yaml.safe_load(path.read_text())
    services = spec["services"]
    brokers = {
        name: s for name, s in services.items() if name.startswith("kafka-") and "environment" in s
    }
    assert len(brokers) == 3
    assert "kafka-users" in services  # creates the SCRAM user of the SASL_SSL listener
    racks = set()
    ports = set()
    secured = set()
    for service in brokers.values():
        env = service["environment"]
        sasl = [
            a for a in env["KAFKA_ADVERTISED_LISTENERS"].split(",") if a.startswith("SASL_SSL://")
        ]
        assert len(sasl) == 1
        secured.add(sasl[0].removeprefix("SASL_SSL://"))
        assert env["KAFKA_SASL_ENABLED_MECHANISMS"] == "SCRAM-SHA-512"
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert (
            env["KAFKA_REPLICA_SELECTOR_CLASS"]
            == "org.apache.kafka.common.replica.RackAwareReplicaSelector"
        )
        racks.add(env["KAFKA_BROKER_RACK"])
        advertised = env["KAFKA_ADVERTISED_LISTENERS"]
        external = [a for a in advertised.split(",") if a.startswith("PLAINTEXT://")]
        assert len(external) == 1
        host_port = external[0].removeprefix("PLAINTEXT://")
        ports.add(host_port)
        assert f"{host_port.split(':')[1]}:{host_port.split(':')[1]}" in service["ports"]
    assert racks == {"az-a", "az-b", "az-c"}
    assert ports == {"localhost:19092", "localhost:29092", "localhost:39092"}
    assert secured == {"localhost:19094", "localhost:29094", "localhost:39094"}
