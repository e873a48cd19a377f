"""The consumer's polls as its group sees them (``max_poll_interval_ms``).

A member is polling while a ``getmany()``/``getone()`` runs, however long it waits for
records; ``max_poll_interval_ms`` counts from the end of the last poll (as aiokafka's
idle time and Java's poll timer). Never imports the consumer: it decorates its methods.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def polling(
    method: Callable[Concatenate[Any, P], Awaitable[R]],
) -> Callable[Concatenate[Any, P], Awaitable[R]]:
    """Run a consumer's ``getmany()``/``getone()`` as a poll of its group member: a fatal
    group error is raised first, and the member counts as polling until it returns."""

    @functools.wraps(method)
    async def poll(consumer: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        group = consumer._coordinator
        if group is None:
            return await method(consumer, *args, **kwargs)
        consumer._check_running()
        group.poll_started()  # (raises the error that stopped the group, if any)
        try:
            return await method(consumer, *args, **kwargs)
        finally:
            group.poll_ended()

    return poll
