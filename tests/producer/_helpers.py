"""Shared helpers of the producer tests: read topics back with rackafka and confluent-kafka."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from typing import Any

from rackafka import AIOKafkaConsumer
from rackafka.structs import ConsumerRecord

WAIT = 20.0


def unique(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:8]}"


async def started_producer(
    cluster: Any, make_producer: Any, name: str, partitions: int, **settings: Any
) -> tuple[str, Any]:
    """A new topic of ``cluster`` and a started producer (made by ``make_producer`` with
    ``settings``) that knows its partitions already."""
    topic = unique(name)
    cluster.create_topic(topic, partitions)
    producer = make_producer(**settings)
    await producer.start()
    await producer.partitions_for(topic)
    return topic, producer


def full_batch(producer: Any, value_size: int = 10_000) -> Any:
    """A batch of ``producer`` filled with values of ``value_size`` zero bytes."""
    batch = producer.create_batch()
    while batch.append(key=None, value=bytes(value_size), timestamp=None) is not None:
        pass
    return batch


async def read_rackafka(
    bootstrap: str, topic: str, count: int, *, timeout: float = WAIT, **kwargs: Any
) -> list[ConsumerRecord[Any, Any]]:
    """Read ``count`` records of ``topic`` (all partitions) with rackafka's consumer."""
    out: list[ConsumerRecord[Any, Any]] = []
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        **kwargs,
    )
    await consumer.start()
    try:
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                out.extend(records)
        # A little longer: more records than expected (duplicates) must show up.
        extra_until = time.monotonic() + 0.3
        while time.monotonic() < extra_until:
            batches = await consumer.getmany(timeout_ms=100)
            for records in batches.values():
                out.extend(records)
    finally:
        await consumer.stop()
    return out


def read_confluent(bootstrap: str, topic: str, count: int, timeout: float = WAIT) -> list[Any]:
    """Read ``count`` messages of ``topic`` with confluent-kafka (the reference client)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("ref"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                continue
            out.append(msg)
    finally:
        consumer.close()
    return out


async def read_confluent_async(bootstrap: str, topic: str, count: int) -> list[Any]:
    return await asyncio.get_running_loop().run_in_executor(
        None, read_confluent, bootstrap, topic, count
    )


async def raw_batches(
    cluster: Any,
    topic: str,
    partition: int,
    *,
    attributes: list[tuple[int, int, int]] | None = None,
) -> list[tuple[int, int, int, int, int]]:
    """``(base_offset, producer_id, producer_epoch, base_sequence, count)`` of every stored
    batch of a partition, read with raw Fetch requests from its leader; ``attributes``
    collects ``(base_offset, attributes, control_type)`` of each batch."""
    from rackafka.net.connection import Connection
    from rackafka.protocol.apis.fetch import FETCH, partition_fetch
    from rackafka.records.default_records import HEADER

    leader = cluster.partition_info(topic, partition).leader
    host, port = cluster.brokers[leader].address.rsplit(":", 1)
    conn = await Connection.open(host, int(port))
    out: list[tuple[int, int, int, int, int]] = []
    offset = 0
    try:
        while True:
            response = await conn.request(
                FETCH, partition_fetch(topic, partition, offset, max_wait_ms=10), version=11
            )
            data = bytes(response.responses[0].partitions[0].records or b"")
            if not data:
                return out
            pos = 0
            while pos + HEADER.size <= len(data):
                fields = HEADER.unpack_from(data, pos)
                base_offset, length = fields[0], fields[1]
                if pos + 12 + length > len(data):
                    break
                pid, epoch, seq, count = fields[9], fields[10], fields[11], fields[12]
                out.append((base_offset, pid, epoch, seq, count))
                if attributes is not None:
                    # (base offset, attributes, control type): the control record's key
                    # (version, type) sits 5 bytes into a one-record uncompressed batch.
                    ctype = -1
                    if fields[5] & 0x20:
                        (ctype,) = struct.unpack_from(">h", data, pos + HEADER.size + 7)
                    attributes.append((base_offset, fields[5], ctype))
                offset = base_offset + fields[6] + 1
                pos += 12 + length
    finally:
        await conn.aclose()
