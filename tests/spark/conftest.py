"""A local Spark session for the tests of the rackafka Spark source.

One session (``local[2]``) serves every test of the run: starting Spark takes seconds. Its
executors see ``RACKAFKA_CLIENT_RACK=az-b`` (set before the JVM starts, and as an executor
environment variable), so ``kafka.client.rack=auto`` resolves to ``az-b`` in every task.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ._jvm import TEST_JVM_OPTIONS

SPARK_RACK = "az-b"


def _why_no_spark() -> str | None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        return f"the spark extra is not installed ({exc}); pip install -e '.[spark]'"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (java not on PATH, JAVA_HOME unset): Spark needs Java 17+"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local SparkSession with the ``rackafka`` source registered."""
    reason = _why_no_spark()
    if reason:
        pytest.skip(reason)
    from pyspark.sql import SparkSession

    import rackafka.spark
    from rackafka.testing import loopback_spark_conf

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    previous = os.environ.get("RACKAFKA_CLIENT_RACK")
    os.environ["RACKAFKA_CLIENT_RACK"] = SPARK_RACK
    builder = SparkSession.builder
    # Loopback only: the driver binds and advertises 127.0.0.1 (SPARK_LOCAL_IP for its JVM).
    for key, value in loopback_spark_conf().items():
        builder = builder.config(key, value)
    session = (
        builder.master("local[2]")
        .appName("rackafka-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.RACKAFKA_CLIENT_RACK", SPARK_RACK)
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
        .getOrCreate()
    )
    # The JVM (and so the Python workers it starts) has its copy of the environment now;
    # the tests' own process goes back to what it had.
    if previous is None:
        os.environ.pop("RACKAFKA_CLIENT_RACK", None)
    else:
        os.environ["RACKAFKA_CLIENT_RACK"] = previous
    session.sparkContext.setLogLevel("ERROR")
    rackafka.spark.register(session)
    try:
        yield session
    finally:
        session.stop()
