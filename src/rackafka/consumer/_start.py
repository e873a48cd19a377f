"""What the consumer's ``start()`` waits for before it returns: the topics it reads, when a
broker creates topics on demand (aiokafka 0.14's ``start()`` waits for them too), and the
positions of a ``"latest"`` consumer's partitions."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rackafka.client import KafkaClient
from rackafka.subscription import LATEST, SubscriptionState

__all__ = ["SETTLE_SECONDS", "settle_positions", "wait_for_topics"]


async def wait_for_topics(
    client: KafkaClient, subs: SubscriptionState, pattern: object, timeout: float
) -> None:
    """Wait until the subscribed topics, or the topics of the partitions given to
    ``assign()``, have partitions in metadata (a broker with ``auto.create.topics.enable``
    makes them meanwhile), so that a record produced right after ``start()`` is read with
    ``auto_offset_reset="latest"``. Nothing to wait for with a pattern, or when the consumer
    does not let the broker create topics (``allow_auto_create_topics=False``).

    Raises:
        TopicAuthorizationFailedError: a topic may not be described.
        UnknownTopicOrPartitionError: a topic still has no partitions after ``timeout``
            seconds (``request_timeout_ms``).
    """
    if not client.allow_auto_topic_creation or pattern is not None:
        return
    topics = subs.topics or {tp.topic for tp in subs.assigned()}
    if topics:
        await client.wait_for_topics(topics, timeout)


#: At most this long ``start()`` waits for the positions of its partitions (a leader that
#: does not answer makes it return without them, as it did before; the reset goes on).
SETTLE_SECONDS = 5.0


async def settle_positions(subs: SubscriptionState, wakeup: Callable[[], None]) -> None:
    """With ``auto_offset_reset="latest"``, wait until the partitions assigned when
    ``start()`` returns have their positions (the group's committed offsets, else the
    ListOffsets answer), for up to :data:`SETTLE_SECONDS`: a record produced after
    ``start()`` returns is then read, where an offset reset answered after the record would
    start past it. A partition whose reset failed is not waited for (the next poll raises
    the error); with ``"earliest"`` or ``"none"`` there is nothing to wait for."""
    if subs.default_reset != LATEST:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_SECONDS
    while True:
        waiting = [s for s in subs.states() if s.reset is not None and s.error is None]
        left = deadline - loop.time()
        if not waiting or left <= 0:
            return
        wakeup()
        known = [asyncio.ensure_future(s.position_known.wait()) for s in waiting]
        try:
            # In slices: a failed reset sets the state's error, not the event.
            await asyncio.wait(known, timeout=min(left, 0.05))
        finally:
            for waiter in known:
                waiter.cancel()
