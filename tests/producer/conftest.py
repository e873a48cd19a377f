"""Fixtures of the producer tests: a factory of producers that are stopped after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from rackafka import AIOKafkaProducer
from rackafka.testing import EmbeddedCluster

MakeProducer = Callable[..., AIOKafkaProducer[Any, Any]]


@pytest.fixture
async def make_producer(embedded_cluster: EmbeddedCluster) -> AsyncIterator[MakeProducer]:
    made: list[AIOKafkaProducer[Any, Any]] = []

    def make(**kwargs: Any) -> AIOKafkaProducer[Any, Any]:
        kwargs.setdefault("bootstrap_servers", embedded_cluster.bootstrap_servers)
        producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**kwargs)
        made.append(producer)
        return producer

    try:
        yield make
    finally:
        for producer in made:
            await producer.stop()
