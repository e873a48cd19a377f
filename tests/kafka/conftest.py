"""The real-Kafka tier: one Apache Kafka cluster per test run, for the tests in tests/kafka.

The ``kafka`` fixture starts three KRaft brokers (ids 1, 2, 3 in racks az-a, az-b, az-c,
Kafka's ``RackAwareReplicaSelector``) once per test run (stopped after the last test of
this directory), with a PLAINTEXT listener (``kafka.bootstrap_servers``) and a SASL_SSL
listener (``kafka.front``: SCRAM-SHA-256/512 and PLAIN users :data:`USERS`, OAUTHBEARER
with Kafka's unsecured tokens, sessions of :data:`SESSION_LIFETIME_MS` for KIP-368).
Tests must leave it as they found it: every broker up and running (the ``all_brokers_up``
fixture thaws any a test froze and restarts any a test stopped).

Without Java 17+ or the Kafka jars the tests skip with the reason, unless
``RACKAFKA_REQUIRE_KAFKA=1`` (set by CI): then they fail. When a test that used the cluster
fails, the brokers' logs are kept and their directory is printed at the end of the run.

pytest-xdist: each worker that runs tests of this directory starts its own cluster (the
starts are serialized by a file lock); run them in one group (``--dist loadgroup``: every
test here carries ``xdist_group("kafka")``) to start only one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rackafka.testing import KafkaCluster
from rackafka.testing.kafka_dist import (
    DEFAULT_KAFKA_VERSION,
    JavaNotFoundError,
    KafkaJarsError,
    find_java,
    kafka_libs,
)

ENV_REQUIRE = "RACKAFKA_REQUIRE_KAFKA"
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SESSION_LIFETIME_MS = 8000
_HERE = Path(__file__).parent


class _State:
    cluster: KafkaCluster | None = None
    failed: bool = False
    start_seconds: float | None = None
    work_dir: Path | None = None


def required() -> bool:
    """Whether the tier must run (CI): ``RACKAFKA_REQUIRE_KAFKA`` set to a true value."""
    return os.environ.get(ENV_REQUIRE, "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> None:
    """Skip (a developer's machine) or fail (CI) because the tier cannot run."""
    if required():
        pytest.fail(f"{ENV_REQUIRE} is set but real Kafka cannot run: {reason}", pytrace=False)
    pytest.skip(f"real Kafka tests need Java 17+ and Apache Kafka's jars: {reason}")


def check_prerequisites() -> None:
    try:
        find_java()
        kafka_libs()
    except (JavaNotFoundError, KafkaJarsError, ValueError) as exc:
        unavailable(str(exc))


def require_feature(cluster: KafkaCluster, feature: str) -> None:
    """Skip, naming the reason, when the cluster's Kafka release lacks ``feature`` (see
    :func:`rackafka.testing.kafka_versions.kafka_features`); on the default release every
    feature must be there, so a missing one fails rather than skips silently."""
    reason = cluster.features.missing(feature)
    if reason is None:
        return
    if cluster.kafka_version == DEFAULT_KAFKA_VERSION:
        pytest.fail(f"the default Kafka release must have {feature}: {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): pytest-xdist --dist loadgroup group")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.kafka)
            item.add_marker(pytest.mark.xdist_group("kafka"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and "kafka" in getattr(item, "fixturenames", ()):
        _State.failed = True
        if _State.cluster is not None:
            _State.cluster.mark_failed()
            report.sections.append(
                ("real Kafka", f"broker logs: {_State.cluster.work_dir}/broker-*/logs")
            )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _State.start_seconds is not None:
        terminalreporter.write_line(
            f"real Kafka: 3 brokers started in {_State.start_seconds:.1f} s"
        )
    if _State.failed and _State.work_dir is not None:
        terminalreporter.write_line(f"real Kafka broker logs kept in {_State.work_dir}")


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# Package scope: started by the first test of tests/kafka that needs it, stopped after the
# last test of the directory (not at the end of the whole run).
@pytest.fixture(scope="package")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """The test run's real Kafka cluster (see the module's docstring)."""
    check_prerequisites()
    work = tmp_path_factory.mktemp("kafka-cluster")
    _State.work_dir = work
    cluster = KafkaCluster(
        brokers=3,
        racks=("az-a", "az-b", "az-c"),
        work_dir=work,
        keep_work_dir=True,
        security_protocol="SASL_SSL",
        users=USERS,
        session_lifetime_ms=SESSION_LIFETIME_MS,
        plaintext_bootstrap=True,
    )
    # Under pytest-xdist the workers share the base temp's parent: one start at a time.
    lock = tmp_path_factory.getbasetemp().parent / "rackafka-kafka-start.lock"
    began = time.monotonic()
    try:
        with _file_lock(lock):
            cluster.start()
    except Exception:
        _State.failed = True
        raise
    _State.start_seconds = time.monotonic() - began
    _State.cluster = cluster
    try:
        yield cluster
    finally:
        _State.cluster = None
        cluster.close(keep_logs=True)
        if not _State.failed:  # keep the logs, drop the data
            for data in work.glob("broker-*/data"):
                shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def all_brokers_up(kafka: KafkaCluster) -> Iterator[KafkaCluster]:
    """The session cluster, with every broker a test froze thawed and every broker a test
    stopped started again afterwards."""
    try:
        yield kafka
    finally:
        for broker_id in sorted(kafka.frozen_brokers):
            kafka.thaw_broker(broker_id)
        for broker_id in sorted(kafka.down_brokers):
            kafka.broker_up(broker_id)
