"""The consumer: the public API, the fetcher and the read-replica routing policy.

``from rackafka.consumer import AIOKafkaConsumer`` works as aiokafka's import path does.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AIOKafkaConsumer"]


def __getattr__(name: str) -> Any:
    # Lazily, so that importing a submodule (the fetcher, the routing policy) does not
    # import the whole consumer.
    if name == "AIOKafkaConsumer":
        from rackafka.consumer.consumer import AIOKafkaConsumer

        return AIOKafkaConsumer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
