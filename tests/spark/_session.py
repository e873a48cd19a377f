"""The local SparkSession of the tests: built the same way for tests/spark and tests/kafka.

``local[N]`` on 127.0.0.1 (``loopback_spark_conf()``), no UI, UTC, the ``rackafka`` source
registered, and ``RACKAFKA_CLIENT_RACK=rack`` for the executors (set before the JVM starts,
and as an executor environment variable), so ``kafka.client.rack=auto`` resolves to
``rack`` in every task; the calling process's own environment is left as it was.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from ._jvm import TEST_JVM_OPTIONS


def why_no_spark() -> str | None:
    """Why a local SparkSession cannot start here (None: it can)."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        return f"the spark extra is not installed ({exc}); pip install -e '.[spark]'"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (java not on PATH, JAVA_HOME unset): Spark needs Java 17+"
    return None


def local_spark_session(rack: str, *, cores: int = 2, app_name: str = "rackafka-tests") -> Any:
    """A new local SparkSession (``local[cores]``) whose executors are in ``rack``."""
    from pyspark.sql import SparkSession

    import rackafka.spark
    from rackafka.testing import loopback_spark_conf

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    previous = os.environ.get("RACKAFKA_CLIENT_RACK")
    os.environ["RACKAFKA_CLIENT_RACK"] = rack
    try:
        builder = SparkSession.builder
        # Loopback only: the driver binds and advertises 127.0.0.1 (SPARK_LOCAL_IP).
        for key, value in loopback_spark_conf().items():
            builder = builder.config(key, value)
        session = (
            builder.master(f"local[{cores}]")
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", str(cores))
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.executorEnv.RACKAFKA_CLIENT_RACK", rack)
            .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
            .config("spark.driver.extraJavaOptions", TEST_JVM_OPTIONS)
            .getOrCreate()
        )
    finally:
        # The JVM (and so the Python workers it starts) has its copy of the environment
        # now; the tests' own process goes back to what it had.
        if previous is None:
            os.environ.pop("RACKAFKA_CLIENT_RACK", None)
        else:
            os.environ["RACKAFKA_CLIENT_RACK"] = previous
    session.sparkContext.setLogLevel("ERROR")
    rackafka.spark.register(session)
    return session
