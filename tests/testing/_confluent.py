"""Reading a topic back with the reference client (confluent-kafka) in the tests of
``rackafka.testing``."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any


def consume_with_confluent(
    conf: Mapping[str, Any], topic: str, count: int, timeout: float = 30.0
) -> list[Any]:
    """The records of ``topic`` (``confluent_kafka.Message``, errors left out) that a
    ``confluent_kafka.Consumer`` with ``conf`` reads from the earliest offset, until it
    has ``count`` of them or ``timeout`` seconds have passed."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer(
        {**conf, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            got.extend(m for m in consumer.consume(num_messages=500, timeout=0.5) if not m.error())
    finally:
        consumer.close()
    return got
