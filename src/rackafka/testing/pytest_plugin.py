"""pytest plugin: Kafka test clusters as fixtures.

Enable it with ``pytest -p rackafka.testing.pytest_plugin`` or, in a root ``conftest.py``,
``pytest_plugins = ["rackafka.testing.pytest_plugin"]``.

Fixtures:
    ``embedded_cluster``: a started 3-broker :class:`~rackafka.testing.EmbeddedCluster` in
    racks ``az-a``/``az-b``/``az-c``, closed after the test.

    ``embedded_cluster_factory``: call it with :class:`~rackafka.testing.EmbeddedCluster`'s
    arguments to get more (started) clusters; all are closed after the test.

    ``kafka_cluster``: the cluster selected by ``--kafka`` (or ``RACKAFKA_TEST_KAFKA``):
    ``embedded`` (default) gives a fresh embedded cluster per test; ``compose`` gives the
    project's ``docker-compose.yml`` cluster (:class:`~rackafka.testing.ComposeCluster`),
    started once per session with testcontainers, or skips the test when no Docker engine
    answers; ``real`` gives real Apache Kafka brokers (:class:`~rackafka.testing.KafkaCluster`,
    3 brokers in racks az-a/az-b/az-c), started once per session, or skips the test when
    Java 17+ or the Kafka jars are missing. In compose and real modes, tests marked
    ``fault_injection`` are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .cluster import EmbeddedCluster
from .compose import ComposeCluster, DockerUnavailableError, docker_engine_error
from .kafka import KafkaCluster

ENV_MODE = "RACKAFKA_TEST_KAFKA"
ENV_COMPOSE_FILE = "RACKAFKA_COMPOSE_FILE"
MODES = ("embedded", "compose", "real")

_FAULT_SKIP_REASON = (
    "fault_injection test: needs the embedded cluster's fault injection, "
    "not available against real Kafka (--kafka=compose or --kafka=real)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rackafka", "rackafka test clusters")
    group.addoption(
        "--kafka",
        action="store",
        choices=MODES,
        default=None,
        help=(
            "cluster behind the kafka_cluster fixture: 'embedded' (librdkafka mock brokers, "
            "default), 'compose' (docker-compose.yml via testcontainers) or 'real' (Apache "
            f"Kafka brokers as JVMs, rackafka.testing.KafkaCluster); env {ENV_MODE}"
        ),
    )
    group.addoption(
        "--kafka-compose-file",
        action="store",
        default=None,
        help=f"compose file for --kafka=compose (default: <rootdir>/docker-compose.yml); "
        f"env {ENV_COMPOSE_FILE}",
    )


def kafka_mode(config: pytest.Config) -> str:
    """The selected mode: the ``--kafka`` option, else ``RACKAFKA_TEST_KAFKA``, else embedded."""
    mode = config.getoption("--kafka", default=None)
    if mode is None:
        mode = os.environ.get(ENV_MODE, "").strip().lower() or "embedded"
    if mode not in MODES:
        raise pytest.UsageError(
            f"{ENV_MODE}={mode!r} is not a valid Kafka test mode; use one of {', '.join(MODES)}"
        )
    return str(mode)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fault_injection: needs the embedded cluster's fault injection "
        "(skipped against real Kafka)",
    )
    kafka_mode(config)  # reject a bad RACKAFKA_TEST_KAFKA early


def pytest_report_header(config: pytest.Config) -> str:
    return f"rackafka kafka_cluster: {kafka_mode(config)}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if kafka_mode(config) == "embedded":
        return
    skip = pytest.mark.skip(reason=_FAULT_SKIP_REASON)
    for item in items:
        if item.get_closest_marker("fault_injection") is not None:
            item.add_marker(skip)


@pytest.fixture
def embedded_cluster() -> Iterator[EmbeddedCluster]:
    """A started 3-broker embedded cluster in racks az-a, az-b, az-c."""
    with EmbeddedCluster(brokers=3, racks=("az-a", "az-b", "az-c")) as cluster:
        yield cluster


@pytest.fixture
def embedded_cluster_factory() -> Iterator[Callable[..., EmbeddedCluster]]:
    """Make started embedded clusters: ``embedded_cluster_factory(brokers=6, racks=...)``."""
    created: list[EmbeddedCluster] = []

    def make(**kwargs: Any) -> EmbeddedCluster:
        cluster = EmbeddedCluster(**kwargs)
        created.append(cluster)
        return cluster.start()

    try:
        yield make
    finally:
        for cluster in reversed(created):
            cluster.close()


def _compose_file(config: pytest.Config) -> Path:
    option = config.getoption("--kafka-compose-file", default=None) or os.environ.get(
        ENV_COMPOSE_FILE
    )
    if option:
        return Path(option)
    return Path(str(config.rootpath)) / "docker-compose.yml"


@pytest.fixture(scope="session")
def _rackafka_compose_cluster(request: pytest.FixtureRequest) -> Iterator[ComposeCluster]:
    error = docker_engine_error()
    if error is not None:
        pytest.skip(f"compose mode needs a Docker engine: {error}")
    cluster = ComposeCluster(_compose_file(request.config))
    try:
        cluster.start()
    except DockerUnavailableError as exc:
        pytest.skip(str(exc))
    except ImportError as exc:
        pytest.skip(f"compose mode: {exc}")
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def _rackafka_real_cluster() -> Iterator[KafkaCluster]:
    from .kafka_dist import JavaNotFoundError, KafkaJarsError, find_java, kafka_libs

    try:
        find_java()
        kafka_libs()
    except (JavaNotFoundError, KafkaJarsError) as exc:
        pytest.skip(f"--kafka=real needs Java 17+ and Apache Kafka's jars: {exc}")
    with KafkaCluster(brokers=3, racks=("az-a", "az-b", "az-c")) as cluster:
        yield cluster


@pytest.fixture
def kafka_cluster(
    request: pytest.FixtureRequest,
) -> Iterator[EmbeddedCluster | ComposeCluster | KafkaCluster]:
    """The cluster chosen with ``--kafka``: embedded (per test), compose or real (per
    session)."""
    mode = kafka_mode(request.config)
    if mode in ("compose", "real"):
        yield request.getfixturevalue(f"_rackafka_{mode}_cluster")
        return
    with EmbeddedCluster(brokers=3, racks=("az-a", "az-b", "az-c")) as cluster:
        yield cluster
