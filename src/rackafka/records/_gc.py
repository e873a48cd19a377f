"""The cyclic garbage collector around record decoding.

Decoding allocates a few container objects per record (the record, its headers tuples),
all alive when the batch is handed over.  CPython's collector counts them as young objects:
left alone, it would walk every young record a few hundred records into the batch and again
right after it (the count being far past the young generation's threshold), find them all
alive, and promote them, to walk them again in the older generations while the user still
holds them.  In the consumer benchmark that was 15% of the time.

So :func:`pause` stops the collector while a batch is decoded, and :func:`resume` starts it
again with the young generation's threshold raised by the objects counted so far: the
next collection comes after as many allocations as the application's threshold allows,
counted from the end of the decoding.  By then the user has usually dropped the records
(a freed object lowers the count again), and the collection walks only what is still alive.
The raise is undone by the next collection (:func:`_restore`, a ``gc.callbacks`` hook) and
is at most :data:`MAX_RAISE`, so garbage cycles of the application wait at most that many
more allocations.  A collector the application disabled, or a threshold of ``0``, are left
as they are; a threshold the application sets in between becomes the base.
"""

from __future__ import annotations

import gc
from typing import Any

__all__ = ["MAX_RAISE", "pause", "resume"]

#: The most the young generation's threshold is raised above the application's.
MAX_RAISE = 200_000

#: Whether :func:`pause` touches the collector at all.
enabled = True

#: The application's young-generation threshold while a raised one of ours is in force.
_base: int | None = None
#: The threshold set by :func:`resume`.
_raised = -1


def pause() -> bool:
    """Stop the collector for a decoding; ``True`` if it ran (then call :func:`resume`)."""
    if enabled and gc.isenabled():
        gc.disable()
        return True
    return False


def resume() -> None:
    """Start the collector again after a decoding, the objects counted so far not counting."""
    global _base, _raised
    t0, t1, t2 = gc.get_threshold()
    base = _base if _base is not None and t0 == _raised else t0
    if base > 0:
        raised = base + min(gc.get_count()[0], MAX_RAISE)
        if raised != t0:
            gc.set_threshold(raised, t1, t2)
        _base = base
        _raised = raised
    else:
        _base = None
    gc.enable()


def _restore(phase: str, _info: dict[str, Any]) -> None:
    """After a collection, the application's threshold again."""
    global _base
    if phase == "stop" and _base is not None:
        t0, t1, t2 = gc.get_threshold()
        if t0 == _raised:
            gc.set_threshold(_base, t1, t2)
        _base = None


gc.callbacks.append(_restore)
