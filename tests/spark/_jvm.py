"""JVM settings of the Spark tests.

The tests' JVMs run briefly: the C1 compiler alone and the serial collector take about a
quarter less CPU than the defaults (measured on the Spark tests), which the tests running
beside them in parallel get instead.
"""

from __future__ import annotations

TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def jvm_test_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a process that starts Spark JVMs of its own, with ``TEST_JVM_OPTIONS``
    for every JVM it starts (``JAVA_TOOL_OPTIONS``)."""
    return {**env, "JAVA_TOOL_OPTIONS": TEST_JVM_OPTIONS}
