"""The one retry policy of rackafka: exponential backoff with jitter, a cap, and a reset.

Every retry loop of the client (metadata refreshes, reconnects, fetch errors per broker and
per partition, coordinator look-ups and group requests, produce retries, transaction
requests) waits by this policy, so one change here changes them all.

The semantics are those of the Java client (KIP-144 for reconnects, KIP-580 for requests):
the ``n``-th retry in a row waits ``initial * multiplier ** n`` (``n`` from 0), at most
``maximum``, times a random factor in ``[1 - jitter, 1 + jitter]`` (20 % by default), and the
result never exceeds ``maximum``. Progress resets the count. The settings carry the Java
client's names: ``retry_backoff_ms`` / ``retry_backoff_max_ms`` and ``reconnect_backoff_ms``
/ ``reconnect_backoff_max_ms``.
"""

from __future__ import annotations

import random
import time

__all__ = ["Backoff", "BackoffPolicy"]

#: The Java client's jitter: each wait is its nominal value times a factor in 0.8 .. 1.2.
DEFAULT_JITTER = 0.2
#: Enough doublings to reach any cap from a millisecond; keeps ``multiplier ** n`` finite.
_MAX_EXPONENT = 62


class BackoffPolicy:
    """How long the ``n``-th retry in a row waits, in seconds.

    Arguments:
        initial_ms: the first wait (``retry_backoff_ms`` or ``reconnect_backoff_ms``).
        max_ms: the longest wait (``retry_backoff_max_ms`` / ``reconnect_backoff_max_ms``).
            A value below ``initial_ms`` makes every wait ``initial_ms``-sized but capped at
            ``max_ms``, as the Java client does.
        multiplier: growth per retry (2, as in the Java client).
        jitter: the share by which a wait is randomly shortened or lengthened (0 for none).
    """

    __slots__ = ("initial", "maximum", "multiplier", "jitter")

    def __init__(
        self,
        initial_ms: float,
        max_ms: float,
        *,
        multiplier: float = 2.0,
        jitter: float = DEFAULT_JITTER,
    ) -> None:
        if initial_ms < 0 or max_ms < 0:
            raise ValueError(f"backoff must be >= 0, not {initial_ms!r} / {max_ms!r}")
        if multiplier < 1 or not 0 <= jitter < 1:
            raise ValueError(f"bad multiplier {multiplier!r} or jitter {jitter!r}")
        self.initial = initial_ms / 1000
        self.maximum = max_ms / 1000
        self.multiplier = multiplier
        self.jitter = jitter

    def delay(self, attempt: int) -> float:
        """The wait before retry number ``attempt`` (0 for the first retry), in seconds."""
        nominal = self.initial * self.multiplier ** min(max(attempt, 0), _MAX_EXPONENT)
        if self.jitter:
            nominal *= random.uniform(1 - self.jitter, 1 + self.jitter)
        return min(nominal, self.maximum)

    def start(self) -> Backoff:
        """A fresh :class:`Backoff` (a count of retries in a row) following this policy."""
        return Backoff(self)

    def __repr__(self) -> str:
        return (
            f"BackoffPolicy(initial_ms={self.initial * 1000:g}, max_ms={self.maximum * 1000:g}, "
            f"multiplier={self.multiplier:g}, jitter={self.jitter:g})"
        )


class Backoff:
    """The retries in a row of one thing (a broker, a partition, a request), by a policy.

    ``next()`` gives the wait before the next retry and counts it; ``reset()`` on progress
    starts over from the first wait. ``until`` is the monotonic time before which the thing
    should not be retried (0 when it may be retried now), for loops that poll rather than
    sleep.
    """

    __slots__ = ("policy", "attempts", "until")

    def __init__(self, policy: BackoffPolicy) -> None:
        self.policy = policy
        self.attempts = 0
        self.until = 0.0

    def next(self, now: float | None = None) -> float:
        """The wait before the next retry, in seconds; counts one more failure in a row and
        sets :attr:`until` to ``now`` (the monotonic clock when not given) plus that wait."""
        delay = self.policy.delay(self.attempts)
        self.attempts += 1
        self.until = (time.monotonic() if now is None else now) + delay
        return delay

    def reset(self) -> None:
        """Progress: the next failure waits the policy's first wait again."""
        self.attempts = 0
        self.until = 0.0

    def ready(self, now: float | None = None) -> bool:
        """Whether the wait set by the last :meth:`next` is over."""
        return (time.monotonic() if now is None else now) >= self.until

    def remaining(self, now: float | None = None) -> float:
        """Seconds left of the wait set by the last :meth:`next` (0 when over)."""
        return max(0.0, self.until - (time.monotonic() if now is None else now))

    def __repr__(self) -> str:
        return f"Backoff(attempts={self.attempts}, remaining={self.remaining():.3f}s)"
