"""Test configuration: the embedded cluster fixtures come from our own pytest plugin.

``make test`` runs the suite in parallel with pytest-xdist (``--dist loadgroup``): each test
goes to whichever worker is free, except the tests that share a heavy session-scoped
resource, which are put in one ``xdist_group`` here so that a single worker starts it:

- ``spark``: every test marked ``spark`` (one local SparkSession in each worker that runs
  one; the Spark standalone cluster and the two-rack executors): Spark's JVMs take most of
  the CPU they run on, and Spark gives a Python worker 10 s to connect back, which a
  starved CPU can miss;
- ``kafka``: every test under ``tests/kafka/`` (one real Kafka cluster, JVM brokers).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["rackafka.testing.pytest_plugin"]

TESTS = Path(__file__).resolve().parent


def xdist_group_of(item: pytest.Item) -> str | None:
    """The xdist group an item must run in, or None to let any worker take it."""
    path = Path(str(item.path)).resolve()
    if path.is_relative_to(TESTS / "kafka"):
        return "kafka"
    if item.get_closest_marker("spark") is not None:
        return "spark"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        group = xdist_group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
