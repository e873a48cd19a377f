"""Helpers of the consumer-side tests on real Kafka: a writer that keeps producing numbered
records, readers that record every delivery, and the exactly-once check.

Everything polls for a condition with a deadline (generous: the machines are slow and
shared), nothing sleeps a fixed time to let something happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from rackafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rackafka.testing import KafkaCluster, default_value

VALUE_SIZE = 100
#: Seconds any one condition may take to come true on a slow 2-core machine.
PATIENCE = 120.0


def unique(prefix: str) -> str:
    """A topic or group name no other test of the shared cluster uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def seq(value: bytes) -> int:
    """The number of a record written by :class:`Writer` (``default_value``'s prefix)."""
    return int(value.split(b"|", 1)[0])


async def wait_for(predicate: Callable[[], bool], what: str, timeout: float = PATIENCE) -> None:
    """Poll ``predicate`` every 50 ms; fail after ``timeout`` seconds naming ``what``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)


class Writer:
    """Writes numbered records (record ``i`` to partition ``i % partitions``, value
    ``default_value(i)``) with an idempotent rackafka producer, in small bursts, until
    stopped or until it has written ``limit``; ``acked`` counts acknowledged records."""

    def __init__(self, kafka: KafkaCluster, topic: str, partitions: int) -> None:
        self.topic = topic
        self.partitions = partitions
        self.sent = 0
        self.acked = 0
        self.limit: int | None = None
        self._producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
            bootstrap_servers=kafka.bootstrap_servers,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            request_timeout_ms=30000,
        )
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self) -> Writer:
        await self._producer.start()
        self._task = asyncio.ensure_future(self._run())
        return self

    async def write(self, count: int) -> None:
        """Let the writer go on until ``count`` more records were acknowledged."""
        self.limit = self.sent + count
        target = self.limit
        await wait_for(lambda: self.acked >= target or self._failed(), f"{count} records written")
        self._raise()

    def _failed(self) -> bool:
        return self._task is not None and self._task.done()

    def _raise(self) -> None:
        if self._task is not None and self._task.done() and not self._task.cancelled():
            exc = self._task.exception()
            if exc is not None:
                raise exc

    async def _run(self) -> None:
        while not self._stop.is_set():
            if self.limit is not None and self.sent >= self.limit:
                await asyncio.sleep(0.02)
                continue
            burst = 40 if self.limit is None else min(40, self.limit - self.sent)
            futures = []
            for _ in range(burst):
                i = self.sent
                self.sent += 1
                futures.append(
                    await self._producer.send(
                        self.topic,
                        default_value(i, VALUE_SIZE),
                        partition=i % self.partitions,
                    )
                )
            await asyncio.gather(*futures)
            self.acked += burst
            await asyncio.sleep(0.02)

    async def pause(self) -> int:
        """Stop writing (after the burst in flight); returns the records acknowledged."""
        self.limit = self.sent
        target = self.sent
        await wait_for(lambda: self.acked >= target or self._failed(), "the writer to pause")
        self._raise()
        return self.acked

    def resume(self) -> None:
        """Write continuously again."""
        self.limit = None

    async def stop(self) -> int:
        """Stop and close the producer; returns the records acknowledged."""
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, PATIENCE)
            finally:
                await self._producer.stop()
        self._raise()
        return self.acked


class Reader:
    """Reads with ``consumer`` in a background task and records every delivery:
    ``seen[(partition, offset)] = seq`` and every repeated ``(partition, offset)``."""

    def __init__(self, consumer: AIOKafkaConsumer, *, name: str = "reader") -> None:
        self.consumer = consumer
        self.name = name
        self.seen: dict[tuple[int, int], int] = {}
        self.duplicates: list[tuple[int, int]] = []
        self.deliveries = 0
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> Reader:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        while not self._stop.is_set():
            batch = await self.consumer.getmany(timeout_ms=200)
            for tp, records in batch.items():
                for r in records:
                    key = (tp.partition, r.offset)
                    self.deliveries += 1
                    if key in self.seen:
                        self.duplicates.append(key)
                    assert r.value is not None
                    n = seq(r.value)
                    assert r.value == default_value(n, VALUE_SIZE), (key, r.value[:40])
                    self.seen[key] = n

    def check(self) -> None:
        """Raise the reading task's exception, if it died."""
        if self._task is not None and self._task.done() and not self._task.cancelled():
            exc = self._task.exception()
            if exc is not None:
                raise exc

    async def wait_count(self, count: int, timeout: float = PATIENCE) -> None:
        """Wait until ``count`` distinct records were read (or the reader died)."""

        def ready() -> bool:
            return len(self.seen) >= count or self.done

        what = f"{self.name} to read {count} records (has {len(self.seen)})"
        await wait_for(ready, what, timeout)
        self.check()

    @property
    def done(self) -> bool:
        """Whether the reading task ended (stopped, or died: :meth:`check` raises why)."""
        return self._task is not None and self._task.done()

    async def stop(self) -> None:
        """Stop reading after the current poll; raises what the reading task died of."""
        self._stop.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, PATIENCE)

    async def close(self) -> None:
        """:meth:`stop` for clean-up code: a failure was reported already, or will be."""
        self._stop.set()
        if self._task is not None and not self._task.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 10)
        if self._task is not None and self._task.done() and not self._task.cancelled():
            self._task.exception()  # (retrieved: no "never retrieved" warning)


def assert_exactly_once(readers: Iterable[Reader], written: int, partitions: int) -> None:
    """Records ``0 .. written-1`` were each delivered once, across ``readers``, at the
    offsets ``0 .. n-1`` of their partitions (nothing skipped, no offset reset)."""
    seen: dict[tuple[int, int], int] = {}
    by: dict[tuple[int, int], str] = {}
    duplicates: list[Any] = []
    for reader in readers:
        duplicates.extend((key, reader.name, reader.name) for key in reader.duplicates)
        for key, n in reader.seen.items():
            if key in seen:
                duplicates.append((key, by[key], reader.name))
            seen[key] = n
            by[key] = reader.name
    assert not duplicates, (
        f"{len(duplicates)} duplicate deliveries ((partition, offset), first reader, "
        f"second reader), first {duplicates[:5]}"
    )
    numbers = sorted(seen.values())
    missing = sorted(set(range(written)) - set(numbers))
    assert not missing, f"{len(missing)} records never read, first {missing[:10]}"
    assert numbers == list(range(written)), "records read that were never written"
    for p in range(partitions):
        offsets = sorted(o for (q, o) in seen if q == p)
        assert offsets == list(range(len(offsets))), f"partition {p}: offsets with gaps"
        # record i went to partition i % partitions, in order
        assert [seen[(p, o)] for o in offsets] == list(range(p, written, partitions))


def assign_from_start(consumer: AIOKafkaConsumer, topic: str, partitions: int) -> None:
    """Assign every partition and seek to offset 0 (with ``auto_offset_reset="none"`` a
    reset would raise instead of silently re-reading or skipping)."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
