"""The fake broker and the admin client the wire tests of the admin client share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from rackafka.admin import AIOKafkaAdminClient
from rackafka.testing.fake_broker import FakeBroker


@pytest.fixture
async def broker() -> AsyncIterator[FakeBroker]:
    """One fake broker (node 1, rack az-a) with topic ``t`` of 2 partitions."""
    async with FakeBroker(node_id=1, rack="az-a", topics={"t": 2}) as b:
        yield b


@pytest.fixture
async def admin(broker: FakeBroker) -> AsyncIterator[AIOKafkaAdminClient]:
    """A started admin client of :func:`broker` (short timeouts and backoff)."""
    client = AIOKafkaAdminClient(
        bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=3000, retry_backoff_ms=10
    )
    await client.start()
    try:
        yield client
    finally:
        await client.close()
