"""Helpers shared by the group tests: waiting on a condition, draining a consumer."""

from __future__ import annotations

import asyncio
from typing import Any


async def wait_until(predicate: Any, timeout: float, what: str) -> None:
    """Poll ``predicate`` every 50 ms; fail the test after ``timeout`` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def drain(consumer: Any, sink: list, stop: asyncio.Event) -> None:
    """Read until ``stop`` is set, appending ``(partition, offset)`` of every record."""
    while not stop.is_set():
        batch = await consumer.getmany(timeout_ms=100)
        for tp, records in batch.items():
            sink.extend((tp.partition, r.offset) for r in records)


async def wait_shared(a: Any, b: Any, each: int, timeout: float = 15) -> None:
    """Wait until consumers ``a`` and ``b`` own ``each`` partitions each."""
    await wait_until(
        lambda: len(a.assignment()) == each and len(b.assignment()) == each,
        timeout,
        f"a and b owning {each} partitions each",
    )
