"""Readers of the ``rackafka`` source for the Spark tests: one way to build them."""

from __future__ import annotations

from typing import Any


def rackafka_reader(
    spark: Any, servers: str, topic: str | None = None, *, stream: bool = False, **options: str
) -> Any:
    """``spark.read`` (``spark.readStream`` with ``stream=True``) of the ``rackafka`` format
    on ``servers``, subscribed to ``topic`` when given, with ``options`` set in order."""
    reader = (spark.readStream if stream else spark.read).format("rackafka")
    reader = reader.option("kafka.bootstrap.servers", servers)
    if topic is not None:
        reader = reader.option("subscribe", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader
