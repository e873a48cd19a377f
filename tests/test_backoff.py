"""The one retry policy (rackafka._backoff) and the error properties it is used with."""

from __future__ import annotations

import pytest

from rackafka import errors
from rackafka._backoff import BackoffPolicy


def test_waits_double_up_to_the_cap_with_jitter() -> None:
    policy = BackoffPolicy(100, 1000)
    for _ in range(200):
        waits = [policy.delay(n) for n in range(8)]
        for n, wait in enumerate(waits):
            nominal = min(0.1 * 2**n, 1.0)
            assert nominal * 0.8 - 1e-9 <= wait <= min(nominal * 1.2, 1.0) + 1e-9
        assert max(waits) <= 1.0


def test_without_jitter_the_waits_are_exact_and_huge_counts_stay_finite() -> None:
    policy = BackoffPolicy(50, 1000, jitter=0)
    assert [policy.delay(n) for n in range(6)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    assert policy.delay(10_000) == 1.0
    # A cap below the first wait wins, as in the Java client.
    assert BackoffPolicy(100, 10, jitter=0).delay(0) == 0.01


def test_progress_resets_the_count() -> None:
    backoff = BackoffPolicy(100, 1000, jitter=0).start()
    assert [backoff.next() for _ in range(3)] == [0.1, 0.2, 0.4]
    assert not backoff.ready()
    assert 0 < backoff.remaining() <= 0.4
    backoff.reset()
    assert backoff.ready() and backoff.remaining() == 0.0
    assert backoff.next() == 0.1


@pytest.mark.parametrize(
    ("initial", "maximum", "kwargs"),
    [(-1, 100, {}), (100, -1, {}), (100, 1000, {"multiplier": 0.5}), (1, 2, {"jitter": 1.0})],
)
def test_bad_settings_are_refused(initial: float, maximum: float, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        BackoffPolicy(initial, maximum, **kwargs)


def test_error_properties_are_defined_once_per_code() -> None:
    assert errors.NotCoordinatorError.coordinator_moved
    assert errors.CoordinatorNotAvailableError.coordinator_moved
    assert errors.RequestTimedOutError.coordinator_moved
    assert errors.CoordinatorLoadInProgressError.coordinator_loading
    assert not errors.CoordinatorLoadInProgressError.coordinator_moved
    assert errors.UnknownMemberIdError.member_fenced
    assert errors.IllegalGenerationError.member_fenced
    assert errors.FencedMemberEpochError.member_fenced
    assert errors.ProducerFencedError.producer_fenced and errors.ProducerFencedError.fatal
    assert errors.InvalidProducerEpoch.producer_fenced
    assert errors.FencedInstanceIdError.fatal and not errors.FencedInstanceIdError.member_fenced
    assert errors.GroupAuthorizationFailedError.fatal
    # Java retries these although aiokafka's flag says no; aiokafka's flag is kept.
    assert errors.ReplicaNotAvailableError.client_retriable
    assert not errors.ReplicaNotAvailableError.retriable
    assert errors.ReplicaNotAvailableError.needs_metadata_refresh
    assert errors.is_retriable(errors.ReplicaNotAvailableError())
    # An unknown code is nothing special; client-side errors keep their own flag.
    unknown = errors.for_code(9999)
    assert not (unknown.client_retriable or unknown.fatal or unknown.coordinator_moved)
    assert errors.is_retriable(errors.KafkaConnectionError())
    for cls in errors.ERROR_CODES.values():
        assert not (cls.fatal and cls.client_retriable), cls
