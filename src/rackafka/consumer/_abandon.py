"""A started consumer garbage-collected without ``stop()``: its connections are closed then,
as aiokafka's are, instead of staying open until the event loop closes (where the sockets
would reach the garbage collector: ``ResourceWarning: unclosed socket`` in unrelated code)."""

from __future__ import annotations

import functools
import weakref
from typing import Any

from rackafka._lifecycle import on_abandon

__all__ = ["abandon_when_collected"]


async def _close_parts(parts: list[Any]) -> None:
    """The sockets first (the client), then the group membership (with the client closed,
    no commit nor leave gets through) and the fetcher."""
    client, fetcher, *membership = parts
    await client.close()
    for member in membership:
        await member.close(timeout=0.5)
    await fetcher.close()


def abandon_when_collected(consumer: object, parts: list[Any]) -> weakref.finalize[Any, Any]:
    """Close ``parts`` (``[client, fetcher, group member...]``, a list the consumer may
    extend, never referencing the consumer) once ``consumer`` is collected unstopped."""
    return on_abandon(consumer, functools.partial(_close_parts, parts))
