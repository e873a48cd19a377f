"""Other event loops than asyncio's own: their transports have asyncio.Transport's methods
without deriving from it (uvloop's do not), and the connection takes them all the same.
FastStream's CLI, for one, runs the application on uvloop when it is installed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, AIOKafkaProducer
from rackafka.net.connection import Connection
from rackafka.testing import EmbeddedCluster


class _DuckTransport:
    """A transport as another event loop gives one: no asyncio.Transport base class."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


async def test_a_transport_of_another_loop_is_taken() -> None:
    conn = Connection(host="127.0.0.1", port=9)
    transport = _DuckTransport()
    assert not isinstance(transport, asyncio.BaseTransport)
    conn.connection_made(transport)  # type: ignore[arg-type]
    assert conn.connected
    conn.connection_lost(None)
    assert not conn.connected


def test_producer_and_consumer_run_on_uvloop() -> None:
    uvloop = pytest.importorskip("uvloop", reason="uvloop is another event loop")

    async def main() -> list[bytes | None]:
        async with EmbeddedCluster(brokers=1, racks=None) as cluster:
            cluster.create_topic("loops", partitions=1)
            producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers)
            await producer.start()
            try:
                await producer.send_and_wait("loops", b"on uvloop")
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(
                "loops", bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest"
            )
            await consumer.start()
            try:
                record = await asyncio.wait_for(consumer.getone(), 30)
            finally:
                await consumer.stop()
            return [record.value]

    loop = uvloop.new_event_loop()
    try:
        assert loop.run_until_complete(main()) == [b"on uvloop"]
    finally:
        loop.close()
