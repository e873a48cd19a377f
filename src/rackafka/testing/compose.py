"""A real three-rack Kafka cluster in Docker, for running the same tests against Apache Kafka.

:class:`ComposeCluster` starts the project's ``docker-compose.yml`` (three KRaft brokers in
racks ``az-a``/``az-b``/``az-c`` with ``RackAwareReplicaSelector``) through ``testcontainers``
and offers the part of :class:`~rackafka.testing.EmbeddedCluster`'s API that a real cluster
allows: topics, data and layout, but no fault injection.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from ._base import (
    BrokerInfo,
    PartitionInfo,
    _BrokerMetadataMixin,
    _Lifecycle,
    _TopicRequest,
)
from ._clients import ClientPool

__all__ = [
    "COMPOSE_BOOTSTRAP_SERVERS",
    "ComposeCluster",
    "DockerUnavailableError",
    "FaultInjectionUnsupportedError",
    "docker_engine_error",
]

#: The client listeners that ``docker-compose.yml`` publishes on the host.
COMPOSE_BOOTSTRAP_SERVERS = "localhost:19092,localhost:29092,localhost:39092"

_FAULT_INJECTION_METHODS = frozenset(
    {
        "move_leader",
        "set_preferred_read_replica",
        "emulate_rack_aware_selector",
        "clear_preferred_read_replicas",
        "set_follower_watermarks",
        "broker_down",
        "broker_up",
        "set_broker_rtt",
        "set_coordinator",
        "set_group_initial_rebalance_delay",
        "push_request_errors",
        "push_broker_request_errors",
        "pending_broker_request_errors",
        "push_partition_request_errors",
        "clear_request_errors",
        "cap_api_version",
        "restore_api_version",
        "start_request_tracking",
        "stop_request_tracking",
        "clear_requests",
        "requests",
        "request_counts",
        "delete_records",
        "set_topic_error",
    }
)


class DockerUnavailableError(RuntimeError):
    """No Docker engine answers, so the compose cluster cannot run."""


class FaultInjectionUnsupportedError(NotImplementedError):
    """The fault-injection call needs the embedded cluster; a real cluster cannot do it."""


class _WithoutFaultInjection:
    """A cluster of real brokers: the embedded cluster's fault-injection methods raise
    :class:`FaultInjectionUnsupportedError` (``supports_fault_injection`` is False)."""

    supports_fault_injection = False
    #: The methods of the embedded cluster this cluster cannot offer.
    _unsupported_methods: frozenset[str] = _FAULT_INJECTION_METHODS
    #: Said after "NAME() needs the embedded cluster".
    _why_no_faults = ""

    def __getattr__(self, name: str) -> Any:
        if name in self._unsupported_methods:
            raise FaultInjectionUnsupportedError(
                f"{name}() needs the embedded cluster{self._why_no_faults}"
            )
        raise AttributeError(name)


def _make_compose_certs(project: Path) -> None:
    """Run the project's ``compose/make_certs.py`` when its certificates are missing (the
    SASL_SSL listener of docker-compose.yml needs them to start)."""
    script = project / "compose" / "make_certs.py"
    if script.is_file() and not (project / "compose" / "certs" / "broker.pem").is_file():
        import subprocess
        import sys

        subprocess.run([sys.executable, str(script)], check=True)


def docker_engine_error(timeout: float = 10.0) -> str | None:
    """Why no Docker engine can be used, or None when one answers.

    Asks with the ``docker`` Python SDK when installed, else with ``docker info``.
    """
    try:
        import docker
    except ImportError:
        docker = None
    if docker is not None:
        try:
            client = docker.from_env(timeout=int(timeout))
            try:
                client.ping()
            finally:
                client.close()
            return None
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
    exe = shutil.which("docker")
    if exe is None:
        return "neither the docker Python SDK nor a docker command is installed"
    try:
        proc = subprocess.run(
            [exe, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker info: {exc}"
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        return "docker info: " + (lines[-1] if lines else f"exit status {proc.returncode}")
    return None


class ComposeCluster(_WithoutFaultInjection, _BrokerMetadataMixin, _Lifecycle):
    """The project's ``docker-compose.yml`` Kafka cluster, started with testcontainers.

    Arguments:
        compose_file: path of the compose file (default: ``docker-compose.yml`` in the
            current directory).
        bootstrap_servers: the client listeners the compose file publishes.
        start_compose: False to use a cluster that is already running (started with
            ``docker compose up -d``): nothing is started or stopped.
        startup_timeout: seconds to wait for all brokers to show up in metadata.
        expected_brokers: how many brokers the cluster has.
    """

    _why_no_faults = (
        "; a real Kafka cluster cannot do it (mark the test with @pytest.mark.fault_injection)"
    )

    def __init__(
        self,
        compose_file: str | os.PathLike[str] | None = None,
        *,
        bootstrap_servers: str = COMPOSE_BOOTSTRAP_SERVERS,
        start_compose: bool = True,
        startup_timeout: float = 180.0,
        expected_brokers: int = 3,
    ) -> None:
        self.compose_file = Path(compose_file or "docker-compose.yml").resolve()
        self._bootstrap = bootstrap_servers
        self._start_compose = start_compose
        self._startup_timeout = startup_timeout
        self._expected_brokers = expected_brokers
        self._metadata_timeout = 30.0
        self._compose: Any = None
        self._pool: ClientPool | None = None
        self._brokers: dict[int, BrokerInfo] = {}

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> ComposeCluster:
        """Start the containers (when ``start_compose``) and wait until all brokers are up.

        Raises:
            DockerUnavailableError: no Docker engine answers.
            ImportError: testcontainers is not installed.
        """
        if self._pool is not None:
            return self
        if self._start_compose:
            error = docker_engine_error()
            if error is not None:
                raise DockerUnavailableError(f"compose mode needs a Docker engine: {error}")
            try:
                from testcontainers.compose import DockerCompose
            except ImportError as exc:
                raise ImportError(
                    "compose mode needs testcontainers: pip install testcontainers"
                ) from exc
            if not self.compose_file.is_file():
                raise FileNotFoundError(f"no compose file at {self.compose_file}")
            _make_compose_certs(self.compose_file.parent)
            self._compose = DockerCompose(
                context=str(self.compose_file.parent),
                compose_file_name=self.compose_file.name,
                wait=True,
            )
            self._compose.start()
        self._pool = ClientPool(self._bootstrap)
        try:
            self._wait_ready()
        except BaseException:
            self.close()
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._pool is not None
        deadline = time.monotonic() + self._startup_timeout
        last: Exception | str = "no answer"
        while time.monotonic() < deadline:
            try:
                result = self._pool.describe_cluster(timeout=10.0)
                nodes = list(result.nodes)
                if len(nodes) >= self._expected_brokers:
                    self._brokers = {
                        n.id: BrokerInfo(n.id, n.host, n.port, n.rack or None) for n in nodes
                    }
                    return
                last = f"{len(nodes)} of {self._expected_brokers} brokers up"
            except Exception as exc:
                last = exc
            time.sleep(1.0)
        raise TimeoutError(f"the compose cluster did not come up: {last}")

    def close(self) -> None:
        """Close the clients and take the containers down (when this object started them)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        compose, self._compose = self._compose, None
        if compose is not None:
            compose.stop()

    stop = close

    def _require_running(self) -> None:
        self._clients()

    def _clients(self) -> ClientPool:
        if self._pool is None:
            raise RuntimeError("the ComposeCluster is not running: call start()")
        return self._pool

    # -- layout ----------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """The published client listeners."""
        return self._bootstrap

    @property
    def racks(self) -> tuple[str, ...]:
        """The racks of the brokers, in broker-id order (without repeats)."""
        out: list[str] = []
        for node_id in sorted(self._brokers):
            rack = self._brokers[node_id].rack
            if rack is not None and rack not in out:
                out.append(rack)
        return tuple(out)

    def _create_topic(self, request: _TopicRequest) -> list[PartitionInfo]:
        name, timeout = request.name, request.timeout
        topic, assignment = self._assigned_topic(request)
        futures = self._clients().admin().create_topics([topic], request_timeout=30)
        futures[name].result()
        deadline = time.monotonic() + (self._metadata_timeout if timeout is None else timeout)
        parts = self._await_leaders(name, assignment, deadline, 0.2)
        if parts is None:
            raise TimeoutError(f"topic {name!r} did not get its leaders in time")
        return parts
