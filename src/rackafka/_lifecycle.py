"""What the consumer and the producer share as long-lived roles: ``async with`` and the
``ResourceWarning`` of one that is dropped while started, as aiokafka's clients do."""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable
from typing import Any

from typing_extensions import Self

__all__ = ["AsyncRole", "weak_method"]


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
