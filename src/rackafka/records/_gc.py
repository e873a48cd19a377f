"""The cyclic garbage collector around record decoding (and the producer's pending futures).

Decoding allocates a few container objects per record (the record, its headers tuples),
all alive when the batch is handed over.  CPython's collector counts them as young objects:
left alone, it would walk every young record a few hundred records into the batch and again
right after it (the count being far past the young generation's threshold), find them all
alive, and promote them, to walk them again in the older generations while the user still
holds them.  Measured with ``benchmarks/gc_scope.py`` on CPython 3.10 to 3.13, that is
a fifth or more of the decoding time and of the producer's ``send()`` (see "Python's
garbage collector" in ``docs/consumer.rst``).

So :func:`pause` stops the collector while a batch is decoded, and :func:`resume` starts it
again with the young generation's threshold raised by the objects counted so far: the
next collection comes after as many allocations as the default threshold allows, counted
from the end of the decoding.  By then the user has usually dropped the records (a freed
object lowers the count again), and the collection walks only what is still alive.

This is process-wide (the collector is the interpreter's), so it is bounded:

* the raise is undone by the next collection (:func:`_restore`, a ``gc.callbacks`` hook);
* it is at most :data:`MAX_RAISE` objects above the default threshold;
* it is renewed for at most :data:`MAX_SECONDS`: a decoding that starts later than that
  after the raise began gives the default threshold back and runs with the collector on,
  so that it collects as without rackafka, and the garbage other threads make meanwhile
  waits about that long at most (or that many objects);
* a collector the application disabled or tuned (any threshold other than the
  interpreter's default) is left exactly as it is;
* ``RACKAFKA_DEFER_GC=0`` in the environment (read once, at import) turns it all off; it is
  off on Python 3.14 and later (an incremental collector, not measured), and the
  producer's part (:func:`pause_pending`) is off from 3.13 on (it did not pay there).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from typing import Any

__all__ = [
    "DEFAULT_THRESHOLD",
    "MAX_RAISE",
    "MAX_SECONDS",
    "enabled",
    "pause",
    "pause_pending",
    "pending",
    "resume",
]

#: The most the young generation's threshold is raised above the default.
MAX_RAISE = 200_000

#: The longest a raised threshold is renewed without a collection, in seconds.
MAX_SECONDS = 0.5

#: The interpreter's default thresholds: the only ones this module ever raises.
DEFAULT_THRESHOLD = (2000 if sys.version_info >= (3, 13) else 700, 10, 10)

#: Whether :func:`pause` touches the collector at all (``RACKAFKA_DEFER_GC=0``: never).
enabled = sys.version_info < (3, 14) and os.environ.get(
    "RACKAFKA_DEFER_GC", "1"
).strip().lower() not in ("0", "false", "no", "off")

#: Whether the producer's pending futures are kept out of young collections too
#: (:func:`pause_pending`): it pays on 3.10 to 3.12, not measurably on 3.13, whose default
#: threshold of 2,000 spares them most of the walks already.
pending = enabled and sys.version_info < (3, 13)

#: The threshold set by :func:`resume` while it is in force (``-1``: none).
_raised = -1
#: When the raise in force began (:func:`time.monotonic`).
_since = 0.0


def pause() -> bool:
    """Stop the collector for a decoding; ``True`` if it ran (then call :func:`resume`).

    Only an enabled collector at the default thresholds (or at ours) is stopped.  A raise
    in force for more than :data:`MAX_SECONDS` is undone instead, and the collector left
    running: the decoding that follows collects as it would without rackafka.
    """
    global _raised
    if not enabled or not gc.isenabled():
        return False
    t0, t1, t2 = gc.get_threshold()
    if (t1, t2) != DEFAULT_THRESHOLD[1:] or (t0 != DEFAULT_THRESHOLD[0] and t0 != _raised):
        return False
    if t0 == _raised and time.monotonic() - _since > MAX_SECONDS:
        gc.set_threshold(DEFAULT_THRESHOLD[0], t1, t2)
        _raised = -1
        return False
    gc.disable()
    return True


def pause_pending() -> bool:
    """:func:`pause` for the producer's pending futures, where :data:`pending`."""
    return pending and pause()


def resume() -> None:
    """Start the collector again after a decoding, the objects counted so far not counting."""
    global _raised, _since
    t0, t1, t2 = gc.get_threshold()
    if t0 != _raised:
        if t0 != DEFAULT_THRESHOLD[0]:  # set meanwhile by the application: its own
            gc.enable()
            return
        _since = time.monotonic()
    _raised = DEFAULT_THRESHOLD[0] + min(gc.get_count()[0], MAX_RAISE)
    if _raised != t0:
        gc.set_threshold(_raised, t1, t2)
    gc.enable()


def _restore(phase: str, _info: dict[str, Any]) -> None:
    """After a collection, the default threshold again (unless the application set one)."""
    global _raised
    if phase == "stop" and _raised >= 0:
        t0, t1, t2 = gc.get_threshold()
        if t0 == _raised:
            gc.set_threshold(DEFAULT_THRESHOLD[0], t1, t2)
        _raised = -1


gc.callbacks.append(_restore)
