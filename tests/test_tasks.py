"""cancel_and_wait ends tasks that swallow a cancellation (as asyncio.wait_for can on 3.11)."""

from __future__ import annotations

import asyncio

from rackafka._tasks import cancel_and_wait


async def test_a_task_that_swallows_a_cancellation_still_ends() -> None:
    swallowed = 0

    async def stubborn() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                swallowed += 1
                if swallowed > 2:
                    raise

    async def failing() -> None:
        raise RuntimeError("boom")

    tasks = [asyncio.ensure_future(stubborn()), asyncio.ensure_future(failing())]
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_and_wait(tasks, poll=0.01), 5)
    assert all(t.done() for t in tasks) and swallowed == 3
    # A plain cancel() and await would still be waiting: the task ignores the first ones.
    again = asyncio.ensure_future(stubborn())
    await asyncio.sleep(0)
    swallowed = 0
    again.cancel()
    done, _pending = await asyncio.wait([again], timeout=0.1)
    assert not done
    await cancel_and_wait([again])
    assert again.cancelled()
