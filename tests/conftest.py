"""Test configuration: the embedded cluster fixtures come from our own pytest plugin.

``make test`` runs the suite in parallel with pytest-xdist (``--dist loadgroup``): each test
goes to whichever worker is free, except the tests of a directory whose tests share a heavy
session-scoped resource, which all run on one worker (one group of ``XDIST_GROUPS``):

- ``tests/spark/``: a local SparkSession per worker that runs one, a Spark standalone
  cluster, Spark executors in two racks. Spark's JVMs take most of the CPU they run on, and
  Spark gives a Python worker 10 s to connect back, which a starved CPU can miss;
- ``tests/kafka/``: one real Kafka cluster (JVM brokers) for the whole run. Its Spark tests
  (``test_spark_kafka.py``) run in the Spark group instead, so that two Spark JVMs never
  run side by side; that worker starts a real Kafka cluster of its own for them (the
  starts take turns, see ``tests/kafka/conftest.py``).

The groups are made here, by path, in the scheduler: pytest-xdist's own ``xdist_group``
mark renames the tests' node ids, which pytest 9.2 no longer lets it do (the mark is then
silently ignored); a group by path also covers every test a directory will ever hold.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

pytest_plugins = ["rackafka.testing.pytest_plugin"]

# No per-example deadline for the property tests: on a loaded 2-core machine one example
# can take a second (a collection, a busy neighbour) and Hypothesis would fail the test as
# flaky; their speed is measured by the benchmarks, never by tests. (Hypothesis is in the
# ``test`` extra; .ci/wheel-check runs a few test files without it.)
try:
    from hypothesis import settings
except ImportError:  # pragma: no cover - only outside the development environment
    pass
else:
    settings.register_profile("rackafka", deadline=None)
    settings.load_profile("rackafka")

#: Node id prefix -> xdist group: the tests of each run on a single worker.
XDIST_GROUPS = {
    "tests/spark/": "spark",
    # Spark on real Kafka: with the other Spark tests (never two Spark JVMs side by side);
    # the worker of the spark group starts its own real Kafka cluster for this module.
    "tests/kafka/test_spark_kafka.py": "spark",
    "tests/kafka/": "kafka",
}


def xdist_group_of(nodeid: str) -> str | None:
    """The group a test must run in (by its node id), or None when any worker may take it."""
    for prefix, group in XDIST_GROUPS.items():
        if nodeid.startswith(prefix):
            return group
    return None


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with the groups of ``XDIST_GROUPS`` (and ``xdist_group`` marks
    where pytest-xdist can still apply them)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class DirectoryGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            group = xdist_group_of(nodeid)
            return f"group:{group}" if group else super()._split_scope(nodeid)

    return DirectoryGroups(config, log)


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations the cyclic collector collects during the test, started enabled from
    the interpreter's default threshold (its state is restored afterwards)."""
    from rackafka.records._gc import DEFAULT_THRESHOLD

    enabled = gc.isenabled()
    threshold = gc.get_threshold()
    gc.set_threshold(*DEFAULT_THRESHOLD)
    gc.collect()
    gc.enable()
    seen: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)
        gc.collect(0)
        gc.set_threshold(*threshold)
        if enabled:
            gc.enable()
        else:
            gc.disable()
