"""Fault injection on real Kafka: a consumer group under broker and member faults.

The short version of :mod:`rackafka.testing.faults` for CI: each scenario runs about 45 s
of workload while two faults drawn from the seed play (each scenario its own kinds, so that
together they cover a SIGKILLed, a gracefully restarted and a frozen broker, and member
churn), then checks no loss, exactly once where promised, duplicates within the bound, no
exception the client could recover, and own-rack reads after recovery. The seed is
``RACKAFKA_FAULT_SEED`` (default 37, ``random`` for a new one) and is printed first;
``RACKAFKA_FAULT_SECONDS`` and ``RACKAFKA_FAULT_LONG=1`` make the long version
(``make faults``).
"""

from __future__ import annotations

import os

import pytest

from rackafka.testing import KafkaCluster
from rackafka.testing.faults import SCENARIOS, WorkloadSettings, run_scenario, seed_from_env


def settings() -> WorkloadSettings:
    long = os.environ.get("RACKAFKA_FAULT_LONG", "").strip() not in ("", "0")
    seconds = float(os.environ.get("RACKAFKA_FAULT_SECONDS") or (180 if long else 45))
    return WorkloadSettings(seconds=seconds, long=long, drain_timeout=max(60.0, seconds / 2))


# On a broken group the checks wait out their timeouts to report the numbers: more than
# the tier's 300 s per test (a passing short scenario takes about 70 s).
@pytest.mark.timeout(420 + 4 * settings().seconds)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_group_under_faults(
    all_brokers_up: KafkaCluster, scenario: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = seed_from_env(os.environ)
    with capsys.disabled():
        print(f"\n[{scenario}] RACKAFKA_FAULT_SEED={seed}")
    report = await run_scenario(all_brokers_up, scenario, seed=seed, settings=settings())
    assert all_brokers_up.down_brokers == frozenset()
    assert all_brokers_up.frozen_brokers == frozenset()
    report.assert_ok()
