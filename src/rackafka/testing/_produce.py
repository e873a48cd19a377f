"""Test data written with rackafka's own producer (``EmbeddedCluster.aproduce``).

The same arguments and result as the confluent-kafka path of
:meth:`rackafka.testing.EmbeddedCluster.produce`, run on the caller's event loop instead of
a worker thread; confluent-kafka stays the reference client the tests compare with.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from rackafka.errors import KafkaError

from ._clients import (
    STALL_SECONDS,
    PartitionArg,
    ProduceError,
    ProduceResult,
    _check_compression,
    _check_partition_arg,
    missing_message,
    record_at,
)

# librdkafka's batch.size default: the confluent path fills batches up to this too.
_DEFAULT_BATCH_BYTES = 1_000_000
_GATHER_EVERY = 10_000


def _as_bytes(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


async def produce_with_rackafka(bootstrap_servers: str, call: Mapping[str, Any]) -> ProduceResult:
    """Produce ``count`` numbered records with :class:`rackafka.AIOKafkaProducer` and wait
    for every acknowledgement (``acks="all"``).

    ``call``: the arguments of ``EmbeddedCluster.produce`` by name, every one given
    (:func:`~rackafka.testing._base.produce_arguments` fills in the defaults); they mean
    what they mean there, except that without a ``timeout`` there is no total limit and
    the call gives up when no record was sent or acknowledged for :data:`STALL_SECONDS`
    (a slow machine, or many records, is not a failure; a stall is).

    Raises:
        ProduceError: some records were not delivered; it says which (record numbers, and
            how many per partition).
    """
    from rackafka.producer.producer import AIOKafkaProducer

    topic: str = call["topic"]
    count: int = call["count"]
    partition: PartitionArg = call["partition"]
    batch_size: int | None = call["batch_size"]
    linger_ms: float | None = call["linger_ms"]
    timeout: float | None = call["timeout"]
    _check_partition_arg(partition)
    codec = _check_compression(call["compression"])
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batch = batch_size if batch_size is not None else _DEFAULT_BATCH_BYTES
    if linger_ms is None:
        linger_ms = 5 if batch_size is None else 50
    producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
        bootstrap_servers=bootstrap_servers,
        client_id="rackafka-testing",
        acks="all",
        enable_idempotence=call["idempotent"],
        compression_type=None if codec == "none" else codec,
        max_batch_size=batch,
        max_request_size=max(1_048_576, batch + 65_536),
        linger_ms=int(linger_ms),
        request_timeout_ms=max(1000, int(min(timeout or STALL_SECONDS, 120.0) * 1000)),
    )
    result = ProduceResult(topic)
    errors: list[BaseException] = []
    delivered = bytearray(count)
    partitions = 0
    pending: list[tuple[int, asyncio.Future[Any]]] = []
    progress = [0, 0]  # records sent, acknowledgements collected

    async def run() -> None:
        nonlocal partitions
        partitions = len(await producer.partitions_for(topic)) if partition == "spread" else 0
        for i in range(count):
            k, v, h = record_at(
                i,
                value_size=call["value_size"],
                key=call["key"],
                value=call["value"],
                headers=call["headers"],
            )
            if partition == "spread":
                p: int | None = i % partitions
            else:
                p = partition if isinstance(partition, int) else None
            future = await producer.send(
                topic,
                _as_bytes(v),
                key=_as_bytes(k),
                partition=p,
                timestamp_ms=call["timestamp_ms"],
                headers=[(n, _as_bytes(hv)) for n, hv in h] if h is not None else None,
            )
            pending.append((i, future))
            progress[0] = i + 1
            if len(pending) >= _GATHER_EVERY:
                await _collect(pending, result, errors, delivered)
                progress[1] = result.count + len(errors)
        await _collect(pending, result, errors, delivered)
        progress[1] = result.count + len(errors)

    async def start_and_run() -> None:
        await producer.start()
        await run()

    def partition_of(i: int) -> int | None:
        if partition == "spread":
            return i % partitions if partitions else None
        return partition if isinstance(partition, int) else None

    def failure(why: str) -> ProduceError:
        # Acknowledgements that arrived but were not collected yet count as delivered.
        for i, future in pending:
            if future.done() and not future.cancelled() and future.exception() is None:
                delivered[i] = 1
        missing = [i for i in range(count) if not delivered[i]]
        first = errors[0] if errors else None
        return ProduceError(
            missing_message(topic, count, missing, why, partition_of, first), missing
        )

    async def supervised() -> None:
        """``start_and_run``, given up after ``timeout`` or when it stalls."""
        task = asyncio.ensure_future(start_and_run())
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        last: tuple[int, int] = (-1, -1)
        since = loop.time()
        try:
            while not task.done():
                wait = 1.0 if deadline is None else max(0.0, min(1.0, deadline - loop.time()))
                await asyncio.wait({task}, timeout=wait)
                if task.done():
                    break
                now = loop.time()
                if deadline is not None and now >= deadline:
                    raise _GaveUp(f" within {timeout:.1f}s")
                acks = progress[1] + sum(1 for _i, f in pending if f.done())
                if (progress[0], acks) != last:
                    last, since = (progress[0], acks), now
                elif deadline is None and now - since >= STALL_SECONDS:
                    raise _GaveUp(f" (none sent or acknowledged for {STALL_SECONDS:.0f}s)")
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        task.result()

    try:
        await supervised()
    except _GaveUp as gave_up:
        raise failure(str(gave_up)) from None
    except KafkaError as exc:
        errors.insert(0, exc)
        raise failure("") from exc
    finally:
        await producer.stop()
    if errors:
        raise failure("")
    return result


class _GaveUp(Exception):
    """The produce call ran out of time or stalled (its message says which)."""


async def _collect(
    pending: list[tuple[int, asyncio.Future[Any]]],
    result: ProduceResult,
    errors: list[BaseException],
    delivered: bytearray,
) -> None:
    outcomes = await asyncio.gather(*(f for _i, f in pending), return_exceptions=True)
    for (i, _f), outcome in zip(pending, outcomes):
        if isinstance(outcome, BaseException):
            errors.append(outcome)
        else:
            delivered[i] = 1
            result._record(outcome.partition, outcome.offset)
    pending.clear()
