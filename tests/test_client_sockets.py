"""No socket left for the garbage collector when a client's bootstrap is given up or the
client is closed while it bootstraps (aiokafka's own suite runs with ResourceWarning as an
error: an unclosed socket fails whichever test happens to collect it)."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

from rackafka.client import KafkaClient
from rackafka.errors import KafkaConnectionError
from rackafka.net.connection import Connection
from rackafka.testing.fake_broker import FakeBroker, FakeRequest


def _resource_warnings_at_collection() -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    return [w for w in caught if issubclass(w.category, ResourceWarning)]


def _open_connections(broker: FakeBroker) -> list[Connection]:
    """Connections to ``broker`` still open: while the loop runs, the loop holds their
    sockets, so the leak shows only when the loop is closed (in the test that happens to
    collect it). (Only this test's broker: another test's clients may still be closing.)"""
    gc.collect()
    return [
        c
        for c in gc.get_objects()
        if isinstance(c, Connection) and c.connected and c.port == broker.port
    ]


async def _held_metadata(broker: FakeBroker, release: asyncio.Event) -> asyncio.Event:
    """Hold the broker's Metadata answers until ``release`` is set; the returned event is
    set when the first Metadata request arrives."""
    asked = asyncio.Event()

    async def metadata(_broker: FakeBroker, _request: FakeRequest) -> Any:
        asked.set()
        await release.wait()
        return None  # the default answer

    broker.handlers["Metadata"] = metadata
    return asked


async def test_a_bootstrap_cancelled_while_awaiting_metadata_closes_its_connection() -> None:
    async with FakeBroker(topics={"t": 1}) as broker:
        release = asyncio.Event()
        asked = await _held_metadata(broker, release)
        client = KafkaClient(broker.bootstrap_servers)
        starting = asyncio.ensure_future(client.bootstrap_cluster())
        await asyncio.wait_for(asked.wait(), 5)
        starting.cancel()  # a start() given up (asyncio.wait_for, a cancelled task)
        with pytest.raises(asyncio.CancelledError):
            await starting
        await client.close()
        assert _open_connections(broker) == []
        release.set()
        for _ in range(3):
            await asyncio.sleep(0)  # the transport's close callbacks run
        del starting
        assert _resource_warnings_at_collection() == []


async def test_a_client_closed_while_it_bootstraps_keeps_no_connection() -> None:
    async with FakeBroker(topics={"t": 1}) as broker:
        release = asyncio.Event()
        asked = await _held_metadata(broker, release)
        client = KafkaClient(broker.bootstrap_servers)
        starting = asyncio.ensure_future(client.bootstrap_cluster())
        await asyncio.wait_for(asked.wait(), 5)
        await client.close()  # while the bootstrap waits for its answer
        release.set()
        with pytest.raises(KafkaConnectionError, match="closed"):
            await starting
        assert client._bg is None  # no background work started after close()
        assert _open_connections(broker) == []
        for _ in range(3):
            await asyncio.sleep(0)
        del starting, client
        assert _resource_warnings_at_collection() == []
