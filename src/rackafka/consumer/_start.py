"""What the consumer's ``start()`` waits for before it returns: the topics it reads, when a
broker creates topics on demand (aiokafka 0.14's ``start()`` waits for them too)."""

from __future__ import annotations

from rackafka.client import KafkaClient
from rackafka.subscription import SubscriptionState

__all__ = ["wait_for_topics"]


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
