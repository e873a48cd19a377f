"""The producer on Apache Kafka: idempotence through faults, and broker timestamps.

librdkafka's mock stores a retried idempotent batch twice and answers every Produce with
LogAppendTime 1234; only a real broker shows that a retried batch is stored once (its
sequence numbers deduplicated) and which time the broker stamps.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest

from rackafka import AIOKafkaProducer, TopicPartition
from rackafka.structs import RecordMetadata
from rackafka.testing import KafkaCluster

from ._readback import read_to_end, unique, values

PARTITIONS = 3


def value(partition: int, i: int) -> bytes:
    return b"p%d-%06d" % (partition, i)


async def produce_through(
    producer: AIOKafkaProducer[Any, Any],
    topic: str,
    per_partition: int,
    fault: Any,
    fault_after: int,
) -> list[RecordMetadata]:
    """Send ``per_partition`` numbered records to each partition, a few in flight at a
    time; run ``fault()`` (a coroutine function) once ``fault_after`` were acknowledged
    and keep sending while it runs. Returns every record's metadata, in sending order."""
    futures: list[asyncio.Future[RecordMetadata]] = []
    fault_task: asyncio.Task[None] | None = None
    acked = 0
    for i in range(per_partition):
        for p in range(PARTITIONS):
            futures.append(await producer.send(topic, value(p, i), partition=p))
        if i % 10 == 9:
            # Pace the sender a little so the fault lands in mid-stream, not after it.
            await asyncio.sleep(0.02)
            acked = sum(1 for f in futures if f.done())
        if fault_task is None and acked >= fault_after:
            fault_task = asyncio.create_task(fault())
    assert fault_task is not None, "the fault never ran: too few records"
    results = await asyncio.gather(*futures)
    await fault_task
    return list(results)


def check_exactly_once(
    topic_values: dict[int, list[bytes]], per_partition: int, results: list[RecordMetadata]
) -> None:
    for p in range(PARTITIONS):
        got = topic_values[p]
        want = [value(p, i) for i in range(per_partition)]
        if got != want:
            dups = len(got) - len(set(got))
            missing = sorted(set(want) - set(got))[:5]
            raise AssertionError(
                f"partition {p}: {len(got)} records for {per_partition}, {dups} duplicates, "
                f"missing {missing}, first out of order at "
                f"{next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)}"
            )
    # Every acknowledged offset is the record's own (or -1 for a DuplicateSequenceNumber
    # answer, whose offset the broker no longer knows).
    for meta in results:
        assert meta.offset >= -1
        if meta.offset >= 0:
            assert topic_values[meta.partition][meta.offset].startswith(b"p%d-" % meta.partition)


async def test_idempotent_producer_through_a_leader_crash(all_brokers_up: KafkaCluster) -> None:
    """acks=all and idempotence while the leader of a partition is SIGKILLed mid-send and
    later restarted: every record is stored once, in order, with no gap; the retries that
    the crash caused really happened."""
    kafka = all_brokers_up
    topic = unique("idem-crash")
    layout = kafka.create_topic(topic, PARTITIONS, 3, config={"min.insync.replicas": 2})
    per_partition = 1500
    victim = layout[0].leader

    async def crash_and_restart() -> None:
        await asyncio.to_thread(kafka.broker_down, victim, kill=True)
        await asyncio.sleep(1.0)  # records keep going to the new leaders meanwhile
        await asyncio.to_thread(kafka.broker_up, victim)

    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers,
        enable_idempotence=True,
        linger_ms=5,
        max_batch_size=2048,  # many small batches: several in flight when the broker dies
        request_timeout_ms=60000,
        retry_backoff_ms=100,
        metadata_max_age_ms=5000,
    )
    await producer.start()
    try:
        results = await produce_through(
            producer, topic, per_partition, crash_and_restart, fault_after=300
        )
    finally:
        await producer.stop()
    stats = producer.send_stats()
    assert stats.retries > 0, f"the crash caused no retry: {stats}"
    read = await read_to_end(kafka.bootstrap_servers, topic, PARTITIONS)
    check_exactly_once(values(read), per_partition, results)


async def test_idempotent_producer_through_cut_connections(kafka: KafkaCluster) -> None:
    """Connections cut while Produce requests are in flight (the broker may have stored a
    batch whose answer is lost): the retries are deduplicated by the broker, nothing is
    lost or stored twice, and the order of each partition holds."""
    topic = unique("idem-cut")
    kafka.create_topic(topic, PARTITIONS, 3, config={"min.insync.replicas": 2})
    per_partition = 1500
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers,
        enable_idempotence=True,
        linger_ms=2,
        max_batch_size=2048,
        request_timeout_ms=60000,
    )
    cuts = 0

    async def cut_connections() -> None:
        nonlocal cuts
        # Abort the producer's sockets that have requests in flight, a few times.
        for _ in range(200):
            for conn in list(producer._client._conns.values()):
                if conn.connected and conn.in_flight:
                    conn._transport.abort()
                    cuts += 1
            if cuts >= 5:
                return
            await asyncio.sleep(0.03 if cuts == 0 else 0.2)

    await producer.start()
    try:
        results = await produce_through(
            producer, topic, per_partition, cut_connections, fault_after=200
        )
    finally:
        await producer.stop()
    assert cuts > 0, "no connection had a request in flight to cut"
    assert producer.send_stats().retries > 0
    read = await read_to_end(kafka.bootstrap_servers, topic, PARTITIONS)
    check_exactly_once(values(read), per_partition, results)


@pytest.mark.parametrize("acks", [1, "all"])
async def test_log_append_time_is_the_brokers(kafka: KafkaCluster, acks: Any) -> None:
    """On a LogAppendTime topic the metadata of a sent record carries the time the broker
    stored it (timestamp_type 1), not the producer's timestamp; a consumer reads the same."""
    topic = unique("lat")
    kafka.create_topic(topic, 1, 3, config={"message.timestamp.type": "LogAppendTime"})
    old = 1_000_000_000_000  # 2001: far from any broker's clock
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers, acks=acks, linger_ms=20
    )
    await producer.start()
    try:
        before = int(time.time() * 1000)
        futures = [await producer.send(topic, b"v%d" % i, timestamp_ms=old) for i in range(10)]
        metas = await asyncio.gather(*futures)
        batch = producer.create_batch()
        batch.append(timestamp=old, key=None, value=b"batched")
        batch_meta = await (await producer.send_batch(batch, topic, partition=0))
        after = int(time.time() * 1000)
    finally:
        await producer.stop()
    slack = 60_000  # the broker's clock is this machine's; allow for a slow test
    for meta in [*metas, batch_meta]:
        assert meta.timestamp_type == 1, meta
        assert meta.timestamp is not None and meta.timestamp != old, meta
        assert before - slack <= meta.timestamp <= after + slack, (before, meta, after)
    read = (await read_to_end(kafka.bootstrap_servers, topic, 1, at_least=11))[0]
    assert [r.value for r in read] == [b"v%d" % i for i in range(10)] + [b"batched"]
    by_offset = {r.offset: r for r in read}
    for meta in [*metas, batch_meta]:
        record = by_offset[meta.offset]
        assert record.timestamp_type == 1 and record.timestamp == meta.timestamp, (record, meta)
    # And a CreateTime topic keeps the producer's timestamp.
    plain = unique("createtime")
    kafka.create_topic(plain, 1, 3)
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks=acks)
    await producer.start()
    try:
        meta = await producer.send_and_wait(plain, b"x", timestamp_ms=old)
    finally:
        await producer.stop()
    assert (meta.timestamp, meta.timestamp_type) == (old, 0)
    assert TopicPartition(plain, 0) == meta.topic_partition


@pytest.mark.parametrize("compression", [None, "lz4"])
async def test_large_batches_written_apart_are_stored_once_in_order(
    kafka: KafkaCluster, compression: str | None
) -> None:
    """Batches of hundreds of KB (the producer writes them after the rest of the Produce
    frame, not copied into it), from ``send_batch()`` and from ``send()``, idempotent:
    Kafka checks the frame, the batch CRC and the sequence numbers, and stores every record
    once, in order."""
    topic = unique("large")
    kafka.create_topic(topic, PARTITIONS, 3)
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers,
        enable_idempotence=True,
        compression_type=compression,
        max_batch_size=1_000_000,
        linger_ms=20,
    )
    # Incompressible values, so that lz4 batches stay large too.
    rng = random.Random(11)
    sent: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    await producer.start()
    try:
        futures: list[asyncio.Future[RecordMetadata]] = []
        for _round in range(3):
            for p in range(PARTITIONS):
                batch = producer.create_batch()
                while True:
                    v = b"%d-%d-" % (p, len(sent[p])) + rng.randbytes(rng.randrange(8_000, 30_000))
                    if batch.append(key=None, value=v, timestamp=None) is None:
                        break
                    sent[p].append(v)
                futures.append(await producer.send_batch(batch, topic, partition=p))
            for i in range(60):
                p = i % PARTITIONS
                v = b"%d-%d-" % (p, len(sent[p])) + rng.randbytes(20_000)
                sent[p].append(v)
                futures.append(await producer.send(topic, v, partition=p))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    read = await read_to_end(kafka.bootstrap_servers, topic, PARTITIONS)
    for p in range(PARTITIONS):
        assert [r.value for r in read[p]] == sent[p], f"partition {p}"
