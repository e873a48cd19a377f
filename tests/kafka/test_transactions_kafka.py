"""Transactions on Apache Kafka's own transaction coordinator.

librdkafka's mock never fences a second producer with the same transactional id, never
makes offsets committed in a transaction visible and keeps no last stable offset; here
each of those is checked against the real coordinator.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rackafka.errors import ProducerFenced
from rackafka.testing import KafkaCluster

from ._readback import read_to_end, unique, values

WAIT = 120.0


def txn_producer(
    kafka: KafkaCluster, transactional_id: str, **kw: Any
) -> AIOKafkaProducer[Any, Any]:
    return AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers,
        transactional_id=transactional_id,
        linger_ms=5,
        **kw,
    )


async def test_commit_is_visible_abort_and_open_are_not(kafka: KafkaCluster) -> None:
    """read_committed sees committed transactions only, and nothing of an open one until it
    commits; read_uncommitted sees aborted records too."""
    topic = unique("txn")
    kafka.create_topic(topic, 2, 3)
    producer = txn_producer(kafka, unique("tx"))
    await producer.start()
    try:
        async with producer.transaction():
            for i in range(10):
                await producer.send(topic, b"c1-%d" % i, partition=i % 2)
        await producer.begin_transaction()
        aborted = [await producer.send(topic, b"a-%d" % i, partition=i % 2) for i in range(6)]
        await asyncio.gather(*aborted)  # stored in the log, then aborted
        await producer.abort_transaction()
        async with producer.transaction():
            for i in range(4):
                await producer.send(topic, b"c2-%d" % i, partition=i % 2)
        # An open transaction: its records are in the log but past the last stable offset.
        await producer.begin_transaction()
        pending = [await producer.send(topic, b"open-%d" % i, partition=i % 2) for i in range(4)]
        await asyncio.gather(*pending)

        committed = values(await read_to_end(kafka.bootstrap_servers, topic, 2,
                                             isolation_level="read_committed"))  # fmt: skip
        expected = {
            p: [b"c1-%d" % i for i in range(10) if i % 2 == p]
            + [b"c2-%d" % i for i in range(4) if i % 2 == p]
            for p in range(2)
        }
        assert committed == expected

        await producer.commit_transaction()
    finally:
        await producer.stop()
    committed = values(
        await read_to_end(
            kafka.bootstrap_servers, topic, 2, isolation_level="read_committed", settled=True
        )
    )
    assert committed == {
        p: expected[p] + [b"open-%d" % i for i in range(4) if i % 2 == p] for p in range(2)
    }
    everything = values(await read_to_end(kafka.bootstrap_servers, topic, 2))
    assert everything == {
        p: [b"c1-%d" % i for i in range(10) if i % 2 == p]
        + [b"a-%d" % i for i in range(6) if i % 2 == p]
        + [b"c2-%d" % i for i in range(4) if i % 2 == p]
        + [b"open-%d" % i for i in range(4) if i % 2 == p]
        for p in range(2)
    }


async def test_a_zombie_is_fenced(kafka: KafkaCluster) -> None:
    """A second producer with the same transactional id fences the first: the first one's
    open transaction is aborted by the coordinator, its next send and its commit raise
    ProducerFenced (aiokafka's error), and the new producer's transactions commit."""
    topic = unique("zombie")
    kafka.create_topic(topic, 1, 3)
    tid = unique("tx-zombie")
    zombie = txn_producer(kafka, tid)
    successor = txn_producer(kafka, tid)
    await zombie.start()
    try:
        await zombie.begin_transaction()
        await zombie.send_and_wait(topic, b"zombie-1")
        await successor.start()
        # InitProducerId (awaited by begin_transaction): a new epoch, the zombie's
        # transaction is aborted.
        async with successor.transaction():
            await successor.send_and_wait(topic, b"successor-1")
        with pytest.raises(ProducerFenced):
            await zombie.send_and_wait(topic, b"zombie-2")
        with pytest.raises(ProducerFenced):
            await zombie.commit_transaction()
        async with successor.transaction():
            await successor.send_and_wait(topic, b"successor-2")
    finally:
        await zombie.stop()
        await successor.stop()
    committed = values(
        await read_to_end(
            kafka.bootstrap_servers, topic, 1, isolation_level="read_committed", settled=True
        )
    )
    assert committed == {0: [b"successor-1", b"successor-2"]}


async def test_a_zombie_is_fenced_when_it_adds_a_partition(kafka: KafkaCluster) -> None:
    """The zombie's first record of a transaction needs AddPartitionsToTxn, which the
    coordinator refuses: the send fails with ProducerFenced at once (no request loop until
    the delivery timeout), and so do the commit and the next transaction."""
    topic = unique("zombie-add")
    kafka.create_topic(topic, 2, 3)
    tid = unique("tx-zombie-add")
    zombie = txn_producer(kafka, tid, request_timeout_ms=30000)
    successor = txn_producer(kafka, tid)
    await zombie.start()
    try:
        async with zombie.transaction():
            await zombie.send_and_wait(topic, b"zombie-committed", partition=0)
        await zombie.begin_transaction()
        await successor.start()
        # begin_transaction() waits for the producer id: the zombie is fenced from here.
        await successor.begin_transaction()
        began = time.monotonic()
        with pytest.raises(ProducerFenced):
            await zombie.send_and_wait(topic, b"zombie-2", partition=1)
        assert time.monotonic() - began < 25  # not the 60 s delivery timeout
        with pytest.raises(ProducerFenced):
            await zombie.commit_transaction()
        with pytest.raises(ProducerFenced):
            await zombie.begin_transaction()
        await successor.send_and_wait(topic, b"successor", partition=1)
        await successor.commit_transaction()
    finally:
        await zombie.stop()
        await successor.stop()
    committed = values(
        await read_to_end(
            kafka.bootstrap_servers, topic, 2, isolation_level="read_committed", settled=True
        )
    )
    assert committed == {0: [b"zombie-committed"], 1: [b"successor"]}


async def test_send_offsets_to_transaction(kafka: KafkaCluster) -> None:
    """Offsets sent in a transaction are what OffsetFetch (``committed()``) returns once
    it commits; an aborted transaction's offsets never show."""
    topic = unique("txn-offsets")
    kafka.create_topic(topic, 2, 3)
    group = unique("txn-group")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    producer = txn_producer(kafka, unique("tx-offsets"))
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers, group_id=group, enable_auto_commit=False
    )
    await producer.start()
    await consumer.start()
    try:
        consumer.assign([tp0, tp1])
        async with producer.transaction():
            await producer.send(topic, b"x", partition=0)
            await producer.send_offsets_to_transaction({tp0: 10, tp1: 7}, group)
        assert await committed_soon(consumer, tp0, 10) == 10
        assert await consumer.committed(tp1) == 7

        await producer.begin_transaction()
        await producer.send_offsets_to_transaction({tp0: 20, tp1: 21}, group)
        await producer.abort_transaction()
        assert await consumer.committed(tp0) == 10
        assert await consumer.committed(tp1) == 7

        # Offsets alone (no records) commit too.
        async with producer.transaction():
            await producer.send_offsets_to_transaction({tp1: 30}, group)
        assert await committed_soon(consumer, tp1, 30) == 30
        assert await consumer.committed(tp0) == 10
    finally:
        await consumer.stop()
        await producer.stop()


async def committed_soon(
    consumer: AIOKafkaConsumer[Any, Any], tp: TopicPartition, want: int
) -> int | None:
    """``committed(tp)`` once it equals ``want`` (the markers of a just committed
    transaction reach __consumer_offsets asynchronously), or the last value after WAIT."""
    deadline = time.monotonic() + WAIT
    while True:
        got = await consumer.committed(tp)
        if got == want or time.monotonic() > deadline:
            return got
        await asyncio.sleep(0.1)


async def caught_up(consumer: AIOKafkaConsumer[Any, Any]) -> bool:
    """Whether the consumer has read every assigned partition to its high watermark."""
    assigned = consumer.assignment()
    if not assigned:
        return False
    for tp in assigned:
        highwater = consumer.highwater(tp)
        if highwater is None or await consumer.position(tp) < highwater:
            return False
    return True


async def transform_worker(
    kafka: KafkaCluster,
    source: str,
    sink: str,
    group: str,
    tid: str,
    *,
    stop_after: int | None,
) -> int:
    """A consume-transform-produce loop: each batch read from ``source`` is written
    upper-cased to ``sink`` with the consumed offsets, in one transaction. With
    ``stop_after`` it crashes after that many transactions: it writes the next batch's
    output and vanishes without committing (a zombie). Returns the records processed."""
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        source,
        bootstrap_servers=kafka.bootstrap_servers,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        max_poll_records=40,
    )
    producer = txn_producer(kafka, tid)
    await consumer.start()
    await producer.start()
    processed = 0
    transactions = 0
    try:
        deadline = time.monotonic() + WAIT
        while True:
            assert time.monotonic() < deadline, f"the worker did not finish in {WAIT} s"
            batch = await consumer.getmany(timeout_ms=500)
            if not batch:
                if await caught_up(consumer):
                    return processed
                continue
            await producer.begin_transaction()
            for tp, records in batch.items():
                for r in records:
                    await producer.send(sink, r.value.upper(), partition=tp.partition)
            if stop_after is not None and transactions == stop_after:
                await producer.flush()  # the output is in the log, uncommitted
                return processed
            offsets = {tp: records[-1].offset + 1 for tp, records in batch.items()}
            await producer.send_offsets_to_transaction(offsets, group)
            await producer.commit_transaction()
            transactions += 1
            processed += sum(len(rs) for rs in batch.values())
    finally:
        # After a crash too: stop() ends no transaction (the successor's InitProducerId
        # aborts it) and the consumer commits nothing (no auto-commit).
        await producer.stop()
        await consumer.stop()


async def test_consume_transform_produce_exactly_once(kafka: KafkaCluster) -> None:
    """A worker that dies mid-transaction, replaced by one with the same transactional id
    and group: every source record is in the sink exactly once (read_committed), in order
    per partition, and the group's committed offsets are at the end of the source."""
    source, sink = unique("etl-in"), unique("etl-out")
    kafka.create_topic(source, 2, 3)
    kafka.create_topic(sink, 2, 3)
    n = 600
    result = kafka.produce(source, n, value_size=20, partition="spread")
    assert result.count == n
    group, tid = unique("etl-group"), unique("etl-tx")
    first = await transform_worker(kafka, source, sink, group, tid, stop_after=3)
    assert 0 < first < n
    second = await transform_worker(kafka, source, sink, group, tid, stop_after=None)
    assert first + second == n
    source_values = values(await read_to_end(kafka.bootstrap_servers, source, 2))
    sink_values = values(
        await read_to_end(
            kafka.bootstrap_servers, sink, 2, isolation_level="read_committed", settled=True
        )
    )
    assert sink_values == {p: [v.upper() for v in vs] for p, vs in source_values.items()}
    # The zombie's uncommitted output is in the log, aborted: read_uncommitted sees it.
    everything = values(await read_to_end(kafka.bootstrap_servers, sink, 2))
    assert sum(map(len, everything.values())) > n
