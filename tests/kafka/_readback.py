"""Reading a topic back on the real cluster: every record up to the end, nothing more.

The producer and transaction tests check exactly what a partition holds, so they read it to
its end offset (the high watermark, or the last stable offset under ``read_committed``)
rather than for a while: a duplicate or a stray record cannot hide after the expected count.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.structs import ConsumerRecord


def unique(base: str) -> str:
    """A name no other test of the shared cluster uses."""
    return f"{base}-{uuid.uuid4().hex[:10]}"


async def read_to_end(
    bootstrap_servers: str,
    topic: str,
    partitions: int,
    *,
    isolation_level: str = "read_uncommitted",
    timeout: float = 120.0,
    at_least: int = 0,
    settled: bool = False,
    **options: Any,
) -> dict[int, list[ConsumerRecord[Any, Any]]]:
    """Every record of ``topic`` from the beginning to its end offset, per partition.

    Under ``read_committed`` the end is the last stable offset: aborted records and
    control records are skipped, an open transaction's records are not reached.
    ``at_least``: wait until the end offsets add up to that many (with ``acks=1`` the high
    watermark moves once the followers have the records).
    ``settled``: every transaction on the topic has ended (committed or aborted), so wait
    until the last stable offset reaches the high watermark: a commit returns once the
    coordinator has decided, and the partitions' commit markers, which move the last stable
    offset, are written after that.
    """
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    if settled:
        probe: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers, **options
        )
        await probe.start()
        try:
            at_least = max(at_least, sum((await probe.end_offsets(tps)).values()))
        finally:
            await probe.stop()
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level=isolation_level,
        fetch_max_wait_ms=200,
        **options,
    )
    await consumer.start()
    try:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        ends = await consumer.end_offsets(tps)
        while sum(ends.values()) < at_least:
            assert time.monotonic() < deadline, f"end offsets {ends} < {at_least}"
            await asyncio.sleep(0.1)
            ends = await consumer.end_offsets(tps)
        out: dict[int, list[ConsumerRecord[Any, Any]]] = {p: [] for p in range(partitions)}
        while True:
            positions = {tp: await consumer.position(tp) for tp in tps}
            if all(positions[tp] >= ends[tp] for tp in tps):
                break
            assert time.monotonic() < deadline, f"read {positions} of {ends} in {timeout} s"
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                out[tp.partition].extend(records)
        return out
    finally:
        await consumer.stop()


def values(records: dict[int, list[ConsumerRecord[Any, Any]]]) -> dict[int, list[bytes]]:
    """The values per partition, in offset order."""
    return {p: [r.value for r in rs] for p, rs in records.items()}
