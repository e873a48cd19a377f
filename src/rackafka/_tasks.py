"""Stopping background tasks for good.

``task.cancel()`` then ``await task`` can wait forever: on Python 3.11 ``asyncio.wait_for``
may swallow a cancellation that arrives as its inner future completes, and the task then
goes on looping. :func:`cancel_and_wait` cancels again until every task has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]], poll: float = 0.1) -> None:
    """Cancel ``tasks`` and wait until each has ended, cancelling again every ``poll``
    seconds a task that swallowed its cancellation; their outcomes are dropped."""
    tasks = list(tasks)
    pending = {t for t in tasks if not t.done()}
    while pending:
        for t in pending:
            t.cancel()
        _done, pending = await asyncio.wait(pending, timeout=poll)
    for t in tasks:
        if t.done() and not t.cancelled():
            t.exception()  # retrieved: no "exception was never retrieved" warning
