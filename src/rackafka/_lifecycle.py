"""What the consumer and the producer share as long-lived roles: ``async with`` and the
``ResourceWarning`` of one that is dropped while started, as aiokafka's clients do."""

from __future__ import annotations

import asyncio
import contextlib
import warnings
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from typing_extensions import Self

__all__ = ["AsyncRole", "on_abandon", "weak_method"]

#: Clean-ups of roles collected without stop(), kept until they end.
_ABANDONED: set[asyncio.Task[None]] = set()


class AsyncRole:
    """``async with`` calls ``start()`` and ``stop()``; a role collected after ``start()``
    without ``stop()`` warns (``_started`` and ``_closed`` are the subclass's state)."""

    _started: bool
    _closed: bool

    async def start(self) -> None:  # pragma: no cover - every role defines it
        raise NotImplementedError

    async def stop(self) -> None:  # pragma: no cover - every role defines it
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __del__(self, _warnings: Any = warnings) -> None:
        if getattr(self, "_started", False) and not getattr(self, "_closed", True):
            _warnings.warn(
                f"Unclosed {type(self).__name__} {self!r}", ResourceWarning, stacklevel=1
            )


def weak_method(method: Callable[..., Any]) -> Callable[..., Any]:
    """A function that calls bound ``method`` while its object lives (else does nothing).

    Background tasks and callbacks hold these instead of bound methods of a role, so a
    role dropped without ``stop()`` can still be collected (and warn)."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any, **kwargs: Any) -> Any:
        bound = ref()
        return bound(*args, **kwargs) if bound is not None else None

    return call


def on_abandon(role: object, cleanup: Callable[[], Awaitable[None]]) -> weakref.finalize[Any, Any]:
    """Run ``cleanup()`` on the running loop once ``role`` is garbage-collected (a started
    role dropped without ``stop()``): its connections are closed then, as aiokafka's are,
    not left open until the loop closes (``ResourceWarning: unclosed socket`` in whatever
    code collects them). ``cleanup`` must not reference the role. Detach the returned
    finalizer in ``stop()``."""
    loop = asyncio.get_running_loop()

    def schedule() -> None:
        task: asyncio.Task[None] = loop.create_task(cleanup())  # type: ignore[arg-type]
        _ABANDONED.add(task)
        task.add_done_callback(_ABANDONED.discard)

    def collected() -> None:
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(schedule)

    finalizer = weakref.finalize(role, collected)
    finalizer.atexit = False  # at exit the loop is gone: nothing to clean up
    return finalizer
