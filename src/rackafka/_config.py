"""The primitive checks of the client settings table (:mod:`rackafka.config`).

Pure validation that raises :exc:`~rackafka.errors.KafkaConfigurationError` naming the
argument; it never echoes a secret and never opens a connection.
"""

from __future__ import annotations

import math
from typing import Any

from rackafka.errors import KafkaConfigurationError

__all__ = ["INT32_MAX", "check_callable", "check_duration_ms", "check_positive"]

#: The largest value of a setting sent as a 32-bit integer on the wire.
INT32_MAX = 2**31 - 1


def check_positive(name: str, value: Any, *, zero: bool = False) -> int:
    """``value`` if it is an int > 0 (>= 0 with ``zero``) that fits in 32 bits, else the
    error naming ``name``. A float such as ``30e3`` is accepted (as aiokafka does) and
    made an int."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise KafkaConfigurationError(f"{name} must be an int, not {value!r}")
    _check_range(name, value, zero)
    return value


def check_duration_ms(name: str, value: Any, *, zero: bool = False) -> float:
    """``value`` if it is a number of milliseconds > 0 (>= 0 with ``zero``), else the error
    naming ``name``. For durations the client only waits for (never sent on the wire): a
    fractional float such as ``1500.5`` is accepted, as aiokafka accepts it. An int
    stays an int."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KafkaConfigurationError(f"{name} must be a number of milliseconds, not {value!r}")
    if not math.isfinite(value):
        raise KafkaConfigurationError(f"{name} must be finite, not {value!r}")
    _check_range(name, value, zero)
    return value


def _check_range(name: str, value: float, zero: bool) -> None:
    """The error naming ``name`` unless ``0 < value <= INT32_MAX`` (``0 <=`` with ``zero``)."""
    if value < 0 or (value == 0 and not zero):
        allowed = ">= 0" if zero else "> 0"
        raise KafkaConfigurationError(f"{name} must be {allowed}, not {value}")
    if value > INT32_MAX:
        # Sent as a 32-bit integer on the wire (or used as one by Kafka clients).
        raise KafkaConfigurationError(f"{name} must be at most {INT32_MAX}, not {value}")


def check_callable(name: str, fn: Any) -> None:
    """Raise unless ``fn`` is ``None`` or callable."""
    if fn is not None and not callable(fn):
        raise KafkaConfigurationError(f"{name} must be callable, not {fn!r}")
