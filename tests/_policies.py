"""A backoff policy that records the waits it gives, for tests of who waits by a policy."""

from __future__ import annotations

from rackafka._backoff import BackoffPolicy


class RecordingPolicy(BackoffPolicy):
    """A :class:`BackoffPolicy` (no jitter by default) that keeps ``(attempt, wait)`` of every
    wait it computes in :attr:`waits`."""

    def __init__(self, initial_ms: float, max_ms: float, *, jitter: float = 0.0) -> None:
        super().__init__(initial_ms, max_ms, jitter=jitter)
        self.waits: list[tuple[int, float]] = []

    def delay(self, attempt: int) -> float:
        wait = super().delay(attempt)
        self.waits.append((attempt, wait))
        return wait

    def attempts(self) -> list[int]:
        """The attempt numbers asked for, in order."""
        return [attempt for attempt, _wait in self.waits]
