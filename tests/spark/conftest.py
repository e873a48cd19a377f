"""A local Spark session for the tests of the rackafka Spark source.

One session (``local[2]``) serves every test of the run: starting Spark takes seconds. Its
executors see ``RACKAFKA_CLIENT_RACK=az-b`` (set before the JVM starts, and as an executor
environment variable), so ``kafka.client.rack=auto`` resolves to ``az-b`` in every task.
The session is built by ``_session.local_spark_session``, which tests/kafka uses too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ._session import local_spark_session, why_no_spark

SPARK_RACK = "az-b"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local SparkSession with the ``rackafka`` source registered."""
    reason = why_no_spark()
    if reason:
        pytest.skip(reason)
    session = local_spark_session(SPARK_RACK)
    try:
        yield session
    finally:
        session.stop()
