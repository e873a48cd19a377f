"""AIOKafkaProducer end to end against the embedded cluster, read back by two clients."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from rackafka import RecordMetadata, TopicPartition
from rackafka.errors import (
    ClusterAuthorizationFailedError,
    IllegalOperation,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    ProducerClosed,
    UnknownTopicOrPartitionError,
)
from rackafka.testing import EmbeddedCluster

from ._helpers import read_confluent_async, read_rackafka, unique
from .conftest import MakeProducer

MESSAGE_TOO_LARGE = 10
CLUSTER_AUTHORIZATION_FAILED = 31


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
async def test_round_trip_every_codec(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, compression: str | None
) -> None:
    topic = unique("rt")
    embedded_cluster.create_topic(topic, 3)
    producer = make_producer(compression_type=compression, linger_ms=5)
    await producer.start()
    sent: list[tuple[bytes | None, bytes | None, int, list[tuple[str, bytes | None]]]] = []
    futures = []
    for i in range(60):
        key = f"key-{i % 7}".encode() if i % 5 else None
        value = None if i == 3 else (f"value-{i}-".encode() * (i % 9 + 1))
        headers = [("n", str(i).encode()), ("empty", None)] if i % 2 else []
        ts = 1_700_000_000_000 + i
        sent.append((key, value, ts, headers))
        futures.append(
            await producer.send(topic, value, key=key or b"k3", timestamp_ms=ts, headers=headers)
        )
    metas: list[RecordMetadata] = await asyncio.gather(*futures)
    assert all(m.topic == topic and m.offset >= 0 for m in metas)
    assert all(m.topic_partition == TopicPartition(topic, m.partition) for m in metas)

    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 60)
    assert len(records) == 60
    by_pos = {(r.partition, r.offset): r for r in records}
    for (key, value, ts, headers), meta in zip(sent, metas):
        r = by_pos[(meta.partition, meta.offset)]
        assert r.key == (key or b"k3")
        assert r.value == value
        assert r.timestamp == ts
        assert list(r.headers) == headers

    ref = await read_confluent_async(embedded_cluster.bootstrap_servers, topic, 60)
    assert len(ref) == 60
    ref_pos = {(m.partition(), m.offset()): m for m in ref}
    for (key, value, ts, headers), meta in zip(sent, metas):
        m = ref_pos[(meta.partition, meta.offset)]
        assert m.key() == (key or b"k3")
        assert m.value() == value
        assert m.timestamp()[1] == ts
        assert (m.headers() or []) == headers


@pytest.mark.parametrize("acks", [0, 1, "all", -1])
async def test_acks(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, acks: Any
) -> None:
    topic = unique("acks")
    embedded_cluster.create_topic(topic, 2)
    producer = make_producer(acks=acks)
    await producer.start()
    futures = [await producer.send(topic, b"v%d" % i, partition=i % 2) for i in range(40)]
    metas = await asyncio.gather(*futures)
    if acks == 0:
        assert metas == [None] * 40  # no offset is known without acknowledgement (as aiokafka)
    else:
        assert sorted(m.offset for m in metas if m.partition == 0) == list(range(20))
    await producer.flush()
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 40)
    assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(40))


async def test_linger_collects_records_into_one_batch(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("linger")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(linger_ms=300)
    await producer.start()
    futures = []
    for i in range(50):
        futures.append(await producer.send(topic, b"x%d" % i))
        if i % 10 == 0:
            await asyncio.sleep(0.01)  # the sender runs, but the batch lingers
    await asyncio.gather(*futures)
    stats = producer.send_stats()
    assert stats.records == 50
    assert stats.batches == 1
    assert stats.requests == 1


async def test_max_batch_size_splits_batches(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("split")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(max_batch_size=1024, linger_ms=50)
    await producer.start()
    futures = [await producer.send(topic, bytes(100), key=b"k%d" % i) for i in range(100)]
    metas = await asyncio.gather(*futures)
    assert [m.offset for m in metas] == list(range(100))
    stats = producer.send_stats()
    assert stats.batches >= 10  # 100 records of > 100 bytes in batches of at most 1 KiB
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 100)
    assert [r.key for r in records] == [b"k%d" % i for i in range(100)]


async def test_send_batch(embedded_cluster: EmbeddedCluster, make_producer: MakeProducer) -> None:
    topic = unique("batch")
    embedded_cluster.create_topic(topic, 2)
    producer = make_producer(max_batch_size=2000, value_serializer=lambda v: json.dumps(v).encode())
    await producer.start()
    batch = producer.create_batch()
    n = 0
    while True:
        meta = batch.append(key=None, value={"n": n}, timestamp=None, headers=[("h", b"1")])
        if meta is None:
            break
        assert meta.offset == n
        n += 1
    assert 20 < n == batch.record_count()
    assert batch.size() <= 2000
    first = await (await producer.send_batch(batch, topic, partition=1))
    assert first.partition == 1 and first.offset == 0
    await producer.send_and_wait(topic, {"n": "after"}, partition=1)
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, n + 1)
    assert [json.loads(r.value) for r in records] == [{"n": i} for i in range(n)] + [{"n": "after"}]
    assert all(list(r.headers) == [("h", b"1")] for r in records[:n])


async def test_send_batch_without_a_partition_lets_the_partitioner_pick(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    # As aiokafka: send_batch(..., partition=None) goes to the partition the partitioner
    # picks for a record without a key (FastStream sends its batches so).
    topic = unique("batch-any")
    embedded_cluster.create_topic(topic, 3)
    picked: list[tuple[bytes | None, list[int], list[int]]] = []

    def partitioner(key: bytes | None, all_parts: list[int], available: list[int]) -> int:
        picked.append((key, list(all_parts), list(available)))
        return 2

    for kwargs in ({}, {"partitioner": partitioner}):
        producer = make_producer(**kwargs)
        await producer.start()
        batch = producer.create_batch()
        assert batch.append(key=None, value=b"v", timestamp=None) is not None
        meta = await (await producer.send_batch(batch, topic, partition=None))
        assert meta.topic == topic and meta.partition in (0, 1, 2) and meta.offset >= 0
        if kwargs:
            assert meta.partition == 2
            assert picked == [(None, [0, 1, 2], [0, 1, 2])]
        await producer.stop()
    bad = make_producer()
    await bad.start()
    with pytest.raises(UnknownTopicOrPartitionError):
        await bad.send_batch(bad.create_batch(), topic, partition=7)


async def test_record_larger_than_max_request_size(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("big")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(max_request_size=2000)
    await producer.start()
    with pytest.raises(MessageSizeTooLargeError):
        await producer.send(topic, bytes(3000))
    # A record larger than max_batch_size but within max_request_size goes alone.
    meta = await producer.send_and_wait(topic, bytes(1900 - 100))
    assert meta.offset == 0


async def test_broker_refuses_a_batch_as_too_large(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("refused")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer()
    await producer.start()
    await producer.send_and_wait(topic, b"first")
    embedded_cluster.push_request_errors("Produce", MESSAGE_TOO_LARGE)
    with pytest.raises(MessageSizeTooLargeError):
        await producer.send_and_wait(topic, b"refused")
    meta = await producer.send_and_wait(topic, b"next")
    assert meta.offset == 1


async def test_unknown_topic(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    producer = make_producer(request_timeout_ms=600)
    await producer.start()
    # Brokers create unknown topics (auto.create.topics.enable); this one stays unknown.
    embedded_cluster.create_topic("hidden", 1)
    embedded_cluster.set_topic_error("hidden", 3)  # UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(UnknownTopicOrPartitionError):
        await producer.send("hidden", b"x")
    embedded_cluster.create_topic("known", 2)
    assert await producer.partitions_for("known") == {0, 1}
    with pytest.raises(UnknownTopicOrPartitionError):
        await producer.send("known", b"x", partition=5)


async def test_use_before_start_and_after_stop(make_producer: MakeProducer) -> None:
    producer = make_producer()
    with pytest.raises(IllegalOperation):
        await producer.send("t", b"x")
    await producer.start()
    await producer.stop()
    with pytest.raises(ProducerClosed):
        await producer.send("t", b"x")


async def test_sender_failure_surfaces_from_next_send(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("dead")
    embedded_cluster.create_topic(topic, 1)
    embedded_cluster.push_request_errors("InitProducerId", CLUSTER_AUTHORIZATION_FAILED)
    producer = make_producer(enable_idempotence=True)
    await producer.start()
    with pytest.raises(ClusterAuthorizationFailedError):  # from send() or its future
        await (await producer.send(topic, b"x"))
    with pytest.raises(ClusterAuthorizationFailedError):
        await producer.send(topic, b"y")
    with pytest.raises(ClusterAuthorizationFailedError):
        await producer.send_and_wait(topic, b"z")


async def test_keyless_records_stick_to_a_partition_per_batch(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("sticky")
    embedded_cluster.create_topic(topic, 6)
    producer = make_producer(linger_ms=1000, max_batch_size=4000)
    await producer.start()
    futures = [await producer.send(topic, bytes(100)) for _ in range(60)]
    first = {m.partition for m in await asyncio.gather(*futures[:20])}
    # Every record before the batch filled went to one partition; the full batch
    # moved the sticky partition elsewhere.
    metas = await asyncio.gather(*futures)
    parts = [m.partition for m in metas]
    assert len(first) <= 2
    switch = next(i for i, p in enumerate(parts) if p != parts[0])
    assert switch > 20
    assert all(p == parts[0] for p in parts[:switch])
    assert parts[switch] != parts[0]


async def test_leader_move_during_produce(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("move")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(enable_idempotence=True, retry_backoff_ms=20)
    await producer.start()
    futures = []
    leader = embedded_cluster.partition_info(topic, 0).leader
    for i in range(300):
        futures.append(await producer.send(topic, b"%d" % i, key=b"k"))
        if i == 100:
            others = [b for b in embedded_cluster.partition_info(topic, 0).replicas if b != leader]
            embedded_cluster.move_leader(topic, 0, others[0])
        if i % 25 == 0:
            await asyncio.sleep(0.01)
    await asyncio.gather(*futures)
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 300)
    assert [r.value for r in records] == [b"%d" % i for i in range(300)]


async def test_aiokafka_program_runs_with_the_import_changed(
    embedded_cluster: EmbeddedCluster,
) -> None:
    """A producer program written for aiokafka 0.14, with only the import changed."""
    from rackafka import AIOKafkaProducer as ImportedProducer  # was: from aiokafka import ...

    topic = unique("prog")
    embedded_cluster.create_topic(topic, 4)

    async def program(bootstrap: str) -> list[RecordMetadata]:
        results = []
        producer = ImportedProducer(
            bootstrap_servers=bootstrap,
            client_id="orders-service",
            acks="all",
            compression_type="lz4",
            linger_ms=10,
            key_serializer=lambda k: k.encode("utf-8"),
            value_serializer=lambda v: json.dumps(v).encode("utf-8"),
        )
        await producer.start()
        try:
            partitions = await producer.partitions_for(topic)
            for order_id in range(20):
                md = await producer.send_and_wait(
                    topic,
                    {"order": order_id},
                    key=f"customer-{order_id % 3}",
                    headers=[("source", b"web")],
                )
                assert md.partition in partitions
                results.append(md)
            fut = await producer.send(topic, {"order": "last"}, key="customer-0")
            await producer.flush()
            results.append(fut.result())
        finally:
            await producer.stop()
        async with ImportedProducer(bootstrap_servers=bootstrap) as p2:
            results.append(await p2.send_and_wait(topic, b"raw", partition=0))
        return results

    results = await program(embedded_cluster.bootstrap_servers)
    assert len(results) == 22
    same_key = {r.partition for i, r in enumerate(results[:20]) if i % 3 == 0}
    assert len(same_key) == 1 and results[20].partition in same_key
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 22)
    assert len(records) == 22


async def test_send_waits_for_room_then_times_out(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("room")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(request_timeout_ms=800, max_batch_size=200, linger_ms=0)
    await producer.start()
    await producer.send_and_wait(topic, b"warm")
    leader = embedded_cluster.partition_info(topic, 0).leader
    embedded_cluster.broker_down(leader)
    with pytest.raises((KafkaTimeoutError, Exception)) as info:
        futures = [await producer.send(topic, bytes(150)) for _ in range(50)]
        await asyncio.gather(*futures)
    assert isinstance(info.value, KafkaTimeoutError)
    embedded_cluster.broker_up(leader)


async def test_a_topic_that_does_not_exist_is_created_by_the_broker(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    """As the Java client's and aiokafka's producers: Metadata asks the broker to create the
    topic (the embedded cluster's brokers have auto.create.topics.enable); a consumer with
    ``allow_auto_create_topics=False`` never does."""
    from rackafka import AIOKafkaConsumer

    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=embedded_cluster.bootstrap_servers, allow_auto_create_topics=False
    )
    await consumer.start()
    try:
        assert "not-yet-consumed" not in await consumer.topics()
        consumer.assign([TopicPartition("not-yet-consumed", 0)])
        await consumer._client.refresh_metadata()
        assert "not-yet-consumed" not in await consumer.topics()
    finally:
        await consumer.stop()
    topic = unique("auto")
    producer = make_producer()
    await producer.start()
    md = await producer.send_and_wait(topic, b"first")
    assert md.topic == topic and md.offset == 0
    assert md.partition in await producer.partitions_for(topic)
    assert topic in embedded_cluster.metadata().topics  # seen by confluent-kafka too


@pytest.mark.parametrize("max_batch_size", [16384, 1 << 20])
async def test_linger_is_honoured_by_an_idle_sender(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, max_batch_size: int
) -> None:
    """A record sent to an idle producer leaves after ``linger_ms``, not at the sender's
    next planned wake (it used to sleep up to a second when nothing was queued)."""
    topic = unique("linger")
    embedded_cluster.create_topic(topic, 3)
    producer = make_producer(linger_ms=50, max_batch_size=max_batch_size)
    await producer.start()
    try:
        await (await producer.send(topic, b"warm-up"))
        loop = asyncio.get_running_loop()
        delays = []
        for _ in range(5):
            await asyncio.sleep(0.05)  # the sender is idle again
            t0 = loop.time()
            await (await producer.send(topic, b"x" * 100))
            delays.append(loop.time() - t0)
        delays.sort()
        # 50 ms of linger plus a round trip; a sleeping sender took about 1 s.
        assert delays[2] < 0.5, delays
        assert delays[0] >= 0.045, delays
    finally:
        await producer.stop()


async def test_headers_of_any_iterable_and_their_size_counts(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("hdrs")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(max_request_size=2000)
    await producer.start()
    given: list[Any] = [
        (("a", b"1"), ("é", None)),
        (h for h in [("gen", b"x" * 70), ("a", b"")]),
        [("a", b"2")] * 3,
    ]
    expected = [[("a", b"1"), ("é", None)], [("gen", b"x" * 70), ("a", b"")], [("a", b"2")] * 3]
    for headers in given:
        await producer.send_and_wait(topic, b"v", headers=headers)
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 3)
    assert [list(r.headers) for r in records] == expected
    # A small value with large headers is too large: the headers count.
    with pytest.raises(MessageSizeTooLargeError):
        await producer.send(topic, b"v", headers=[("big", bytes(1000)), ("big", bytes(1000))])
    with pytest.raises(TypeError):
        await producer.send(topic, b"v", headers=[("a", "not bytes")])
