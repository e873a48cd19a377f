"""Fetched data is not kept alive by the tasks that move it.

The connection's frame receiver and the fetcher's loop live as long as the consumer; a
buffer of the receiver, or a local variable of the fetcher's loop, that still refers to the
last frame or response keeps that data (up to a whole fetch response per broker) in memory
after the consumer is done with it. These tests look at what they hold between responses,
against a real Kafka protocol peer.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.client import KafkaClient
from rackafka.consumer.fetch_state import InFlight as _InFlight
from rackafka.protocol.apis.fetch import FETCH, partition_fetch
from rackafka.protocol.frames import RECEIVE_BUFFER_SIZE

WAIT = 15.0
#: Values of this size make every fetch response far bigger than any local a waiting task
#: may legitimately hold.
VALUE_SIZE = 2000
COUNT = 300


def unique(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:8]}"


def waiting_locals(task: asyncio.Task[Any]) -> list[tuple[str, str, Any]]:
    """``(function, name, value)`` of every local along the chain of awaits of ``task``."""
    out: list[tuple[str, str, Any]] = []
    awaiting: Any = task.get_coro()
    while awaiting is not None:
        frame = getattr(awaiting, "cr_frame", None) or getattr(awaiting, "gi_frame", None)
        if frame is None:
            break
        out += [(frame.f_code.co_name, k, v) for k, v in frame.f_locals.items()]
        awaiting = getattr(awaiting, "cr_await", None) or getattr(awaiting, "gi_yieldfrom", None)
    return out


def big_buffers(task: asyncio.Task[Any]) -> list[str]:
    return [
        f"{function}:{name} ({len(value)} bytes)"
        for function, name, value in waiting_locals(task)
        if isinstance(value, (bytes, bytearray, memoryview)) and len(value) > 1024
    ]


async def settle() -> None:
    """Let every task run until it waits again."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_connection_holds_no_frame_between_responses(kafka_cluster: Any) -> None:
    topic = unique("read-loop")
    kafka_cluster.create_topic(topic, 1, 1)
    kafka_cluster.produce(topic, COUNT, value_size=VALUE_SIZE, partition=0)
    client = KafkaClient(kafka_cluster.bootstrap_servers)
    try:
        await client.bootstrap_cluster()
        client.add_topics([topic])
        await client.refresh_metadata()
        leader = client.cluster.leader_for(TopicPartition(topic, 0))
        assert leader is not None
        request = partition_fetch(topic, 0, 0, max_bytes=1 << 24)
        response = await asyncio.wait_for(client.send(leader, FETCH, request, version=11), WAIT)
        records = response.responses[0].partitions[0].records
        assert len(records) > COUNT * VALUE_SIZE // 2  # a big response did arrive
        conn = client.connection_if_ready(leader)
        assert conn is not None
        await settle()
        receiver = conn._receiver
        # The response came through a buffer of its own, handed over and not kept; the
        # fixed buffer is all that stays.
        assert receiver.allocated == 0
        assert receiver.pending == 0
        assert len(receiver._buf) == RECEIVE_BUFFER_SIZE
        del response, records
        held = [v for v in vars(receiver).values() if isinstance(v, (bytes, bytearray))]
        assert held == [receiver._buf]
    finally:
        await client.close()


async def test_fetch_loop_holds_no_response_between_fetches(kafka_cluster: Any) -> None:
    topic = unique("fetch-loop")
    kafka_cluster.create_topic(topic, 2, 1)
    for p in (0, 1):
        kafka_cluster.produce(topic, COUNT, value_size=VALUE_SIZE, partition=p)
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=kafka_cluster.bootstrap_servers,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in (0, 1)])
        total = 0

        async def read_all() -> None:
            nonlocal total
            while total < 2 * COUNT:
                batch = await consumer.getmany(timeout_ms=200)
                total += sum(len(records) for records in batch.values())

        await asyncio.wait_for(read_all(), WAIT)
        fetcher = consumer._fetcher
        assert fetcher is not None and fetcher._task is not None
        # Let more fetches (empty ones now) come and go, then look while the loop waits.
        await asyncio.sleep(0.3)
        await settle()
        assert not fetcher._task.done()
        held = [
            f"{function}:{name}"
            for function, name, value in waiting_locals(fetcher._task)
            if isinstance(value, _InFlight) or hasattr(value, "responses")
        ]
        assert held == []
        assert big_buffers(fetcher._task) == []
    finally:
        await consumer.stop()
