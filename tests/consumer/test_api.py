"""AIOKafkaConsumer's public methods behave as aiokafka 0.14's, against a real Kafka peer.

Covers manual assignment and topic/pattern subscription without ``group_id``. Tests use
the ``kafka_cluster`` fixture (the embedded mock brokers by default, real Kafka with
``--kafka=compose``), so every topic name is unique; the few that need the mock's fault
injection use ``embedded_cluster`` and are marked ``fault_injection``.

Every wait is bounded (``asyncio.wait_for``): a stuck consumer fails, it never hangs.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.abc import ConsumerRebalanceListener
from rackafka.errors import (
    ConsumerStoppedError,
    IllegalOperation,
    IllegalStateError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
)
from rackafka.structs import ConsumerRecord, OffsetAndTimestamp
from rackafka.testing import EmbeddedCluster, default_value

#: Seconds before a consumer that should have delivered something fails the test.
WAIT = 15.0

Records = dict[TopicPartition, list[ConsumerRecord[Any, Any]]]
Make = Callable[..., AIOKafkaConsumer[Any, Any]]


def unique(base: str) -> str:
    """A topic name of its own (one real cluster serves a whole session in compose mode)."""
    return f"{base}-{uuid.uuid4().hex[:8]}"


async def _factory(cluster: Any) -> AsyncIterator[Make]:
    made: list[AIOKafkaConsumer[Any, Any]] = []

    def make(*topics: str, **kwargs: Any) -> AIOKafkaConsumer[Any, Any]:
        kwargs.setdefault("bootstrap_servers", cluster.bootstrap_servers)
        kwargs.setdefault("auto_offset_reset", "earliest")
        # The mock answers an empty fetch only after the full MaxWait.
        kwargs.setdefault("fetch_max_wait_ms", 100)
        consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(*topics, **kwargs)
        made.append(consumer)
        return consumer

    try:
        yield make
    finally:
        for consumer in made:
            await consumer.stop()


@pytest.fixture
async def make(kafka_cluster: Any) -> AsyncIterator[Make]:
    """Consumers of ``kafka_cluster``, stopped after the test."""
    async for factory in _factory(kafka_cluster):
        yield factory


@pytest.fixture
async def make_embedded(embedded_cluster: EmbeddedCluster) -> AsyncIterator[Make]:
    """Consumers of ``embedded_cluster``, stopped after the test."""
    async for factory in _factory(embedded_cluster):
        yield factory


async def collect(
    consumer: AIOKafkaConsumer[Any, Any],
    count: int,
    *partitions: TopicPartition,
    timeout: float = WAIT,
    **getmany_kwargs: Any,
) -> Records:
    """getmany() until ``count`` records arrived; fails after ``timeout`` seconds."""
    got: Records = {}
    total = 0

    async def run() -> None:
        nonlocal total
        while total < count:
            batch = await consumer.getmany(*partitions, timeout_ms=200, **getmany_kwargs)
            for tp, records in batch.items():
                assert records, "getmany() must not return empty lists"
                got.setdefault(tp, []).extend(records)
                total += len(records)

    try:
        await asyncio.wait_for(run(), timeout)
    except asyncio.TimeoutError:
        pytest.fail(f"only {total} of {count} records within {timeout} s: {offsets(got)}")
    return got


def offsets(records: Records) -> dict[TopicPartition, list[int]]:
    return {tp: [r.offset for r in recs] for tp, recs in records.items()}


async def assert_no_more(consumer: AIOKafkaConsumer[Any, Any], timeout_ms: int = 300) -> None:
    extra = await consumer.getmany(timeout_ms=timeout_ms)
    assert extra == {}, f"unexpected records: {offsets(extra)}"


async def until(predicate: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


# -- imports -----------------------------------------------------------------------------


def test_public_names_import_like_aiokafka() -> None:
    from rackafka import (
        AIOKafkaConsumer,
        ConsumerRebalanceListener,
        ConsumerRecord,
        ConsumerStoppedError,
        IllegalOperation,
        OffsetAndMetadata,
        OffsetAndTimestamp,
        TopicPartition,
        errors,
        structs,
    )
    from rackafka.consumer.consumer import AIOKafkaConsumer as Impl

    assert AIOKafkaConsumer is Impl
    assert errors.ConsumerStoppedError is ConsumerStoppedError
    assert errors.IllegalOperation is IllegalOperation
    for cls in (TopicPartition, ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp):
        assert getattr(structs, cls.__name__) is cls
    assert issubclass(errors.OffsetOutOfRangeError, errors.KafkaError)
    assert issubclass(errors.CorruptRecordException, errors.KafkaError)
    with pytest.raises(TypeError):
        ConsumerRebalanceListener()  # type: ignore[abstract]
    assert TopicPartition("t", 1) == ("t", 1)
    assert OffsetAndMetadata(5, "") == (5, "")
    assert OffsetAndTimestamp(5, 100).timestamp == 100


# -- lifecycle -------------------------------------------------------------------------


async def test_start_stop_and_async_with(kafka_cluster: Any, make: Make) -> None:
    consumer = make()
    await consumer.start()
    await consumer.stop()
    await consumer.stop()  # idempotent
    with pytest.raises(ConsumerStoppedError):
        await consumer.getone()
    with pytest.raises(ConsumerStoppedError):
        await consumer.getmany()
    with pytest.raises(ConsumerStoppedError):
        consumer.__aiter__()

    async with make() as entered:
        assert isinstance(entered, AIOKafkaConsumer)
        assert await entered.getmany() == {}
    with pytest.raises(ConsumerStoppedError):
        await entered.getmany(timeout_ms=100)

    never_started = make()
    await never_started.stop()
    with pytest.raises(ConsumerStoppedError):
        await never_started.getmany()


async def test_stop_leaves_no_tasks_behind(kafka_cluster: Any, make: Make) -> None:
    topic = unique("tasks")
    kafka_cluster.create_topic(topic, 2)
    await kafka_cluster.aproduce(topic, 4, partition="spread")
    before = asyncio.all_tasks()
    consumer = make(metadata_max_age_ms=100)
    consumer.subscribe([topic, unique("not-yet")])
    await consumer.start()
    await collect(consumer, 4)
    await consumer.stop()
    await asyncio.sleep(0)
    left = asyncio.all_tasks() - before
    assert not left, [t.get_coro() for t in left]


# -- assignment --------------------------------------------------------------------------


async def test_assign_and_assignment(kafka_cluster: Any, make: Make) -> None:
    topic = unique("assign")
    kafka_cluster.create_topic(topic, 3)
    tp0, tp1, tp2 = (TopicPartition(topic, p) for p in range(3))
    consumer = make()
    consumer.assign([tp0, tp1])  # before start is allowed
    assert consumer.assignment() == {tp0, tp1}
    await consumer.start()
    assert consumer.assignment() == {tp0, tp1}
    consumer.assign([tp2])  # replaces
    assert consumer.assignment() == {tp2}
    consumer.assign([])
    assert consumer.assignment() == set()
    with pytest.raises(TypeError):
        consumer.assign([(topic, 0)])  # type: ignore[list-item]

    consumer.assign([tp0])
    with pytest.raises(IllegalStateError):
        consumer.subscribe([topic])
    consumer.unsubscribe()
    consumer.subscribe([topic])
    with pytest.raises(IllegalStateError):
        consumer.assign([tp0])


async def test_subscribe_argument_errors(kafka_cluster: Any, make: Make) -> None:
    consumer = make()
    with pytest.raises(TypeError):  # aiokafka's code raises TypeError ...
        consumer.subscribe()
    with pytest.raises(ValueError):  # ... and documents ValueError
        consumer.subscribe(["a"], pattern="b")
    with pytest.raises(TypeError):
        consumer.subscribe("a-topic-name-not-a-list")
    with pytest.raises(TypeError):
        consumer.subscribe(["a"], listener=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        consumer.subscribe(pattern="([")
    assert consumer.subscription() == set()


# -- seeking and positions ---------------------------------------------------------------


async def test_seek(kafka_cluster: Any, make: Make) -> None:
    topic = unique("seek")
    kafka_cluster.create_topic(topic, 1)
    await kafka_cluster.aproduce(topic, 10, partition=0)
    tp = TopicPartition(topic, 0)
    consumer = make()
    await consumer.start()
    with pytest.raises(IllegalStateError):
        consumer.seek(tp, 0)  # not assigned
    consumer.assign([tp])
    for bad in (-1, "3", 2.0, None):
        with pytest.raises(ValueError):
            consumer.seek(tp, bad)  # type: ignore[arg-type]
    consumer.seek(tp, 2)
    consumer.seek(tp, 7)  # the last seek wins
    assert await consumer.position(tp) == 7
    got = await collect(consumer, 3)
    assert offsets(got) == {tp: [7, 8, 9]}
    assert await consumer.position(tp) == 10
    consumer.seek(tp, 4)  # backwards, after consuming
    got = await collect(consumer, 6)
    assert offsets(got) == {tp: [4, 5, 6, 7, 8, 9]}
    await assert_no_more(consumer)


async def test_seek_to_beginning_and_end(kafka_cluster: Any, make: Make) -> None:
    topic = unique("seekto")
    kafka_cluster.create_topic(topic, 2)
    await kafka_cluster.aproduce(topic, 10, partition=0)
    await kafka_cluster.aproduce(topic, 4, partition=1)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = make(auto_offset_reset="latest")
    await consumer.start()
    consumer.assign([tp0, tp1])
    assert await consumer.position(tp0) == 10

    assert await consumer.seek_to_beginning() is True  # all assigned partitions
    assert await consumer.position(tp0) == 0
    assert await consumer.position(tp1) == 0
    got = await collect(consumer, 14)
    assert offsets(got) == {tp0: list(range(10)), tp1: list(range(4))}

    assert await consumer.seek_to_beginning(tp1) is True
    assert await consumer.position(tp1) == 0
    assert await consumer.seek_to_end(tp1) is True
    assert await consumer.position(tp1) == 4
    assert await consumer.seek_to_end() is True
    assert (await consumer.position(tp0), await consumer.position(tp1)) == (10, 4)
    await kafka_cluster.aproduce(topic, 2, partition=1)
    got = await collect(consumer, 2)
    assert offsets(got) == {tp1: [4, 5]}

    with pytest.raises(TypeError):
        await consumer.seek_to_beginning((topic, 0))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await consumer.seek_to_end(0)  # type: ignore[arg-type]
    with pytest.raises(IllegalStateError):
        await consumer.seek_to_end(TopicPartition(topic, 9))


@pytest.mark.fault_injection
async def test_seek_to_beginning_follows_the_log_start(
    embedded_cluster: EmbeddedCluster, make_embedded: Make
) -> None:
    embedded_cluster.create_topic("trimmed", 1)
    await embedded_cluster.aproduce("trimmed", 10, partition=0, batch_size=1)
    embedded_cluster.delete_records("trimmed", 0, 6)
    tp = TopicPartition("trimmed", 0)
    consumer = make_embedded()
    await consumer.start()
    assert await consumer.beginning_offsets([tp]) == {tp: 6}
    consumer.assign([tp])
    assert await consumer.seek_to_beginning(tp) is True
    assert await consumer.position(tp) == 6
    assert offsets(await collect(consumer, 4)) == {tp: [6, 7, 8, 9]}


async def test_group_only_methods_raise_illegal_operation(kafka_cluster: Any, make: Make) -> None:
    topic = unique("nogroup")
    kafka_cluster.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)
    consumer = make()
    await consumer.start()
    consumer.assign([tp])
    with pytest.raises(IllegalOperation):
        await consumer.commit()
    with pytest.raises(IllegalOperation):
        await consumer.commit({tp: 1})
    with pytest.raises(IllegalOperation):
        await consumer.committed(tp)
    with pytest.raises(IllegalOperation):
        await consumer.seek_to_committed()
    with pytest.raises(IllegalOperation):
        await consumer.seek_to_committed(tp)


async def test_position_waits_for_the_offset_reset(kafka_cluster: Any, make: Make) -> None:
    topic = unique("position")
    kafka_cluster.create_topic(topic, 1)
    await kafka_cluster.aproduce(topic, 5, partition=0)
    tp = TopicPartition(topic, 0)
    earliest = make(auto_offset_reset="earliest")
    latest = make(auto_offset_reset="latest")
    for consumer in (earliest, latest):
        await consumer.start()
        consumer.assign([tp])
    # Right after assign() no position is known: position() waits for the reset.
    assert await asyncio.wait_for(earliest.position(tp), WAIT) == 0
    assert await asyncio.wait_for(latest.position(tp), WAIT) == 5
    with pytest.raises(IllegalStateError):
        await earliest.position(TopicPartition(topic, 1))


async def test_highwater_lso_and_poll_timestamp(kafka_cluster: Any, make: Make) -> None:
    topic = unique("hw")
    kafka_cluster.create_topic(topic, 1)
    await kafka_cluster.aproduce(topic, 6, partition=0)
    tp = TopicPartition(topic, 0)
    consumer = make()
    await consumer.start()
    consumer.assign([tp])
    # Not known before the first fetch response.
    assert consumer.highwater(tp) is None
    assert consumer.last_stable_offset(tp) is None
    assert consumer.last_poll_timestamp(tp) is None
    before_ms = int(time.time() * 1000)
    await collect(consumer, 6)
    after_ms = int(time.time() * 1000)
    assert consumer.highwater(tp) == 6
    stamp = consumer.last_poll_timestamp(tp)
    assert stamp is not None and before_ms - 5 <= stamp <= after_ms + 5
    if isinstance(kafka_cluster, EmbeddedCluster):
        assert consumer.last_stable_offset(tp) == 6  # no open transaction: LSO = HW
    await kafka_cluster.aproduce(topic, 2, partition=0)
    await collect(consumer, 2)
    assert consumer.highwater(tp) == 8
    for method in (consumer.highwater, consumer.last_stable_offset, consumer.last_poll_timestamp):
        with pytest.raises(IllegalStateError):
            method(TopicPartition(topic, 3))


# -- offsets without a position ------------------------------------------------------------


async def test_beginning_and_end_offsets(kafka_cluster: Any, make: Make) -> None:
    topic = unique("ends")
    kafka_cluster.create_topic(topic, 3)
    await kafka_cluster.aproduce(topic, 7, partition=0)
    await kafka_cluster.aproduce(topic, 3, partition=2)
    tps = [TopicPartition(topic, p) for p in range(3)]
    consumer = make()
    await consumer.start()
    # No assignment needed.
    assert await consumer.beginning_offsets(tps) == dict.fromkeys(tps, 0)
    assert await consumer.end_offsets(tps) == {tps[0]: 7, tps[1]: 0, tps[2]: 3}
    assert await consumer.end_offsets([]) == {}
    # They do not move the position.
    consumer.assign([tps[0]])
    consumer.seek(tps[0], 3)
    assert await consumer.end_offsets([tps[0]]) == {tps[0]: 7}
    assert await consumer.beginning_offsets([tps[0]]) == {tps[0]: 0}
    assert await consumer.position(tps[0]) == 3
    assert offsets(await collect(consumer, 4)) == {tps[0]: [3, 4, 5, 6]}


async def test_offsets_for_times(kafka_cluster: Any, make: Make) -> None:
    topic = unique("times")
    kafka_cluster.create_topic(topic, 1)
    t0 = (int(time.time()) - 3600) * 1000
    await kafka_cluster.aproduce(topic, 5, partition=0, timestamp_ms=t0)
    await kafka_cluster.aproduce(topic, 5, partition=0, timestamp_ms=t0 + 60_000)
    tp = TopicPartition(topic, 0)
    consumer = make()
    await consumer.start()
    found = await consumer.offsets_for_times({tp: t0 + 30_000})
    future = await consumer.offsets_for_times({tp: int(time.time() * 1000) + 3_600_000})
    assert future == {tp: None}  # no record that late
    if isinstance(kafka_cluster, EmbeddedCluster):
        # Documented quirk of the mock broker: a timestamp look-up answers offset -1,
        # which the consumer reports as "no such record" (None), as aiokafka does.
        assert found == {tp: None}
    else:
        assert found == {tp: OffsetAndTimestamp(5, t0 + 60_000)}
    # Floats are accepted (aiokafka converts with int()).
    assert set(await consumer.offsets_for_times({tp: float(t0)})) == {tp}  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="negative"):
        await consumer.offsets_for_times({tp: -1})
    assert await consumer.offsets_for_times({}) == {}


# -- metadata ------------------------------------------------------------------------------


async def test_topics_and_partitions_for_topic(kafka_cluster: Any, make: Make) -> None:
    a, b = unique("meta-a"), unique("meta-b")
    kafka_cluster.create_topic(a, 3)
    kafka_cluster.create_topic(b, 1)
    consumer = make(metadata_max_age_ms=200)
    await consumer.start()
    names = await consumer.topics()
    assert {a, b} <= names
    assert not any(n.startswith("__") for n in names)  # internal topics excluded
    assert consumer.partitions_for_topic(a) == {0, 1, 2}
    assert consumer.partitions_for_topic(b) == {0}
    unknown = unique("meta-unknown")
    assert consumer.partitions_for_topic(unknown) is None
    later = unique("meta-later")
    assert consumer.partitions_for_topic(later) is None
    kafka_cluster.create_topic(later, 2)
    # A topic asked about is added to the metadata requests: once it exists, a call
    # after the next refresh knows it.
    await until(lambda: consumer.partitions_for_topic(later) == {0, 1}, "the new topic")


# -- getmany / getone ---------------------------------------------------------------------------


async def test_getmany_timeout(kafka_cluster: Any, make: Make) -> None:
    topic = unique("timeout")
    kafka_cluster.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)
    consumer = make()
    await consumer.start()
    consumer.assign([tp])
    assert await consumer.position(tp) == 0
    start = time.monotonic()
    assert await consumer.getmany(timeout_ms=0) == {}
    assert await consumer.getmany(timeout_ms=400) == {}
    assert time.monotonic() - start >= 0.35  # it did wait for data

    # A record produced while getmany() waits is returned before the timeout.
    waiting = asyncio.ensure_future(consumer.getmany(timeout_ms=int(WAIT * 1000)))
    await asyncio.sleep(0.1)
    assert not waiting.done()
    await kafka_cluster.aproduce(topic, 1, partition=0)
    got = await asyncio.wait_for(waiting, WAIT)
    assert offsets(got) == {tp: [0]}


async def test_getmany_max_records_and_partition_filter(kafka_cluster: Any, make: Make) -> None:
    topic = unique("many")
    kafka_cluster.create_topic(topic, 2)
    await kafka_cluster.aproduce(topic, 20, partition="spread")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = make()
    await consumer.start()
    consumer.assign([tp0, tp1])
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError):
            await consumer.getmany(max_records=bad)  # type: ignore[arg-type]

    only_tp1 = await collect(consumer, 10, tp1)
    assert offsets(only_tp1) == {tp1: list(range(10))}

    got: Records = {}
    sizes = []
    while sum(map(len, got.values())) < 10:
        batch = await asyncio.wait_for(consumer.getmany(timeout_ms=200, max_records=3), WAIT)
        sizes.append(sum(map(len, batch.values())))
        for tp, recs in batch.items():
            got.setdefault(tp, []).extend(recs)
    assert max(sizes) == 3
    assert offsets(got) == {tp0: list(range(10))}
    await assert_no_more(consumer)


async def test_max_poll_records(kafka_cluster: Any, make: Make) -> None:
    topic = unique("maxpoll")
    kafka_cluster.create_topic(topic, 1)
    await kafka_cluster.aproduce(topic, 20, partition=0)
    tp = TopicPartition(topic, 0)
    consumer = make(max_poll_records=4)
    await consumer.start()
    consumer.assign([tp])
    got: list[int] = []
    sizes = []
    while len(got) < 12:
        batch = await asyncio.wait_for(consumer.getmany(timeout_ms=200), WAIT)
        sizes.append(len(batch.get(tp, [])))
        got += [r.offset for r in batch.get(tp, [])]
    assert max(sizes) == 4
    # An explicit max_records overrides max_poll_records.
    while len(got) < 20:
        batch = await asyncio.wait_for(consumer.getmany(timeout_ms=200, max_records=8), WAIT)
        assert len(batch.get(tp, [])) <= 8
        got += [r.offset for r in batch.get(tp, [])]
    assert got == list(range(20))


async def test_getone(kafka_cluster: Any, make: Make) -> None:
    topic = unique("one")
    kafka_cluster.create_topic(topic, 2)
    await kafka_cluster.aproduce(topic, 6, partition="spread")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = make()
    await consumer.start()
    consumer.assign([tp0, tp1])
    from_tp1 = [await asyncio.wait_for(consumer.getone(tp1), WAIT) for _ in range(3)]
    assert [(r.partition, r.offset) for r in from_tp1] == [(1, 0), (1, 1), (1, 2)]
    rest = [await asyncio.wait_for(consumer.getone(), WAIT) for _ in range(3)]
    assert [(r.partition, r.offset) for r in rest] == [(0, 0), (0, 1), (0, 2)]
    assert all(isinstance(r, ConsumerRecord) for r in from_tp1 + rest)


async def test_async_for_ends_when_stopped_from_another_task(
    kafka_cluster: Any, make: Make
) -> None:
    topic = unique("iter")
    kafka_cluster.create_topic(topic, 1)
    await kafka_cluster.aproduce(topic, 5, partition=0)
    consumer = make()
    await consumer.start()
    consumer.assign([TopicPartition(topic, 0)])
    seen: list[int] = []
    all_seen = asyncio.Event()

    async def iterate() -> str:
        async for record in consumer:
            seen.append(record.offset)
            if len(seen) == 5:
                all_seen.set()
        return "ended"

    task = asyncio.ensure_future(iterate())
    await asyncio.wait_for(all_seen.wait(), WAIT)
    await asyncio.sleep(0.1)  # the loop now waits in getone() for more
    assert not task.done()
    await consumer.stop()
    assert await asyncio.wait_for(task, WAIT) == "ended"
    assert seen == [0, 1, 2, 3, 4]


async def test_waiting_getone_raises_when_stopped(kafka_cluster: Any, make: Make) -> None:
    topic = unique("waitstop")
    kafka_cluster.create_topic(topic, 1)
    consumer = make()
    await consumer.start()
    consumer.assign([TopicPartition(topic, 0)])
    waiting = asyncio.ensure_future(consumer.getone())
    await asyncio.sleep(0.2)
    assert not waiting.done()
    await consumer.stop()
    with pytest.raises(ConsumerStoppedError):
        await asyncio.wait_for(waiting, WAIT)
    with pytest.raises(ConsumerStoppedError):
        await consumer.getone()


# -- pause / resume ------------------------------------------------------------------------------


async def test_pause_and_resume_lose_nothing(kafka_cluster: Any, make: Make) -> None:
    topic = unique("pause")
    kafka_cluster.create_topic(topic, 2)
    await kafka_cluster.aproduce(topic, 10, partition=0)
    await kafka_cluster.aproduce(topic, 10, partition=1)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    consumer = make()
    await consumer.start()
    consumer.assign([tp0, tp1])
    first = await collect(consumer, 1, tp0, max_records=1)  # the rest of tp0's data is buffered
    assert offsets(first) == {tp0: [0]}

    consumer.pause(tp0)
    assert consumer.paused() == {tp0}
    await kafka_cluster.aproduce(topic, 5, partition=0)  # produced while paused
    got = await collect(consumer, 10)
    assert offsets(got) == {tp1: list(range(10))}
    assert await consumer.getmany(tp0, timeout_ms=300) == {}  # even when asked for
    await assert_no_more(consumer)

    consumer.resume(tp0)
    assert consumer.paused() == set()
    got = await collect(consumer, 14)
    assert offsets(got) == {tp0: list(range(1, 15))}
    await assert_no_more(consumer)

    with pytest.raises(TypeError):
        consumer.pause((topic, 0))  # type: ignore[arg-type]
    with pytest.raises(IllegalStateError):
        consumer.pause(TopicPartition(topic, 7))


# -- records -------------------------------------------------------------------------------------


async def test_deserializers_are_applied_to_none_too(kafka_cluster: Any, make: Make) -> None:
    topic = unique("deser")
    kafka_cluster.create_topic(topic, 1)
    await kafka_cluster.aproduce(
        topic,
        4,
        partition=0,
        key=lambda i: None if i % 2 else f"k{i}".encode(),
        value=lambda i: None if i % 2 else f"v{i}".encode(),
        # Records without key and value: aiokafka's producer (and so rackafka's) refuses them.
        client="confluent-kafka",
    )
    consumer = make(
        key_deserializer=lambda k: ("key", k),
        value_deserializer=lambda v: ("value", v),
    )
    await consumer.start()
    consumer.assign([TopicPartition(topic, 0)])
    records = (await collect(consumer, 4))[TopicPartition(topic, 0)]
    assert [(r.key, r.value) for r in records] == [
        (("key", b"k0"), ("value", b"v0")),
        (("key", None), ("value", None)),
        (("key", b"k2"), ("value", b"v2")),
        (("key", None), ("value", None)),
    ]
    # Sizes are those of the serialized bytes, -1 for None.
    assert [(r.serialized_key_size, r.serialized_value_size) for r in records] == [
        (2, 2),
        (-1, -1),
        (2, 2),
        (-1, -1),
    ]


async def test_consumer_record_fields(kafka_cluster: Any, make: Make) -> None:
    topic = unique("fields")
    kafka_cluster.create_topic(topic, 2)
    stamp = (int(time.time()) - 60) * 1000 + 123
    headers = [("trace", b"abc"), ("empty", b""), ("trace", b"second"), ("none", None)]
    await kafka_cluster.aproduce(
        topic,
        3,
        partition=1,
        key=lambda i: f"key-{i}".encode(),
        value_size=50,
        headers=headers,
        timestamp_ms=stamp,
    )
    tp = TopicPartition(topic, 1)
    consumer = make()
    await consumer.start()
    consumer.assign([tp])
    records = (await collect(consumer, 3))[tp]
    for i, r in enumerate(records):
        assert isinstance(r, ConsumerRecord)
        assert (r.topic, r.partition, r.offset) == (topic, 1, i)
        assert r.timestamp == stamp
        assert r.timestamp_type == 0  # CreateTime
        assert r.key == f"key-{i}".encode()
        assert r.value == default_value(i, 50)
        assert r.checksum is None  # record batches v2 have no per-record CRC
        assert r.serialized_key_size == len(r.key)
        assert r.serialized_value_size == 50
        assert list(r.headers) == headers
        assert isinstance(r.headers, tuple)  # as aiokafka


# -- subscription without a group --------------------------------------------------------------


async def test_subscribe_assigns_all_partitions_and_picks_up_new_topics(
    kafka_cluster: Any, make: Make
) -> None:
    a, b = unique("sub-a"), unique("sub-b")
    kafka_cluster.create_topic(a, 2)
    await kafka_cluster.aproduce(a, 6, partition="spread")
    consumer = make(metadata_max_age_ms=200, allow_auto_create_topics=False)
    consumer.subscribe([a, b])  # b does not exist yet (and the consumer does not make it)
    assert consumer.subscription() == {a, b}
    await consumer.start()
    assert consumer.assignment() == {TopicPartition(a, 0), TopicPartition(a, 1)}
    got = await collect(consumer, 6)
    assert offsets(got) == {TopicPartition(a, p): [0, 1, 2] for p in (0, 1)}

    kafka_cluster.create_topic(b, 3)
    await kafka_cluster.aproduce(b, 3, partition="spread")
    await kafka_cluster.aproduce(a, 2, partition=0)
    want = {TopicPartition(a, p) for p in (0, 1)} | {TopicPartition(b, p) for p in range(3)}
    await until(lambda: consumer.assignment() == want, "the new topic's partitions")
    got = await collect(consumer, 5)
    # The new partitions start at auto_offset_reset; the kept ones keep their position.
    assert offsets(got) == {
        TopicPartition(a, 0): [3, 4],
        TopicPartition(b, 0): [0],
        TopicPartition(b, 1): [0],
        TopicPartition(b, 2): [0],
    }
    await assert_no_more(consumer)


async def test_subscribe_after_start(kafka_cluster: Any, make: Make) -> None:
    topic = unique("sub-late")
    kafka_cluster.create_topic(topic, 2)
    await kafka_cluster.aproduce(topic, 4, partition="spread")
    consumer = make()
    await consumer.start()
    consumer.subscribe([topic])
    got = await collect(consumer, 4)
    assert offsets(got) == {TopicPartition(topic, p): [0, 1] for p in (0, 1)}


async def test_pattern_subscription(kafka_cluster: Any, make: Make) -> None:
    prefix = unique("pat")
    first, later, other = f"{prefix}-one", f"{prefix}-two", unique("other")
    kafka_cluster.create_topic(first, 2)
    kafka_cluster.create_topic(other, 1)
    await kafka_cluster.aproduce(first, 2, partition="spread")
    await kafka_cluster.aproduce(other, 2, partition=0)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            pass

        def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            pass

    consumer = make(metadata_max_age_ms=200)
    consumer.subscribe(pattern=rf"^{prefix}-.*", listener=Listener())
    await consumer.start()
    assert consumer.assignment() == {TopicPartition(first, 0), TopicPartition(first, 1)}
    assert consumer.subscription() == {first}
    got = await collect(consumer, 2)
    assert set(got) == {TopicPartition(first, 0), TopicPartition(first, 1)}

    kafka_cluster.create_topic(later, 1)
    await kafka_cluster.aproduce(later, 3, partition=0)
    await until(lambda: TopicPartition(later, 0) in consumer.assignment(), "the matching topic")
    assert consumer.subscription() == {first, later}
    got = await collect(consumer, 3)
    assert offsets(got) == {TopicPartition(later, 0): [0, 1, 2]}
    await assert_no_more(consumer)


async def test_unsubscribe(kafka_cluster: Any, make: Make) -> None:
    topic = unique("unsub")
    kafka_cluster.create_topic(topic, 2)
    await kafka_cluster.aproduce(topic, 4, partition="spread")
    consumer = make()
    consumer.subscribe([topic])
    await consumer.start()
    await collect(consumer, 4)
    consumer.unsubscribe()
    assert consumer.assignment() == set()
    assert consumer.subscription() == set()
    await kafka_cluster.aproduce(topic, 4, partition="spread")
    assert await consumer.getmany(timeout_ms=300) == {}
    # Manual assignment is allowed again.
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek(TopicPartition(topic, 0), 2)
    assert offsets(await collect(consumer, 2)) == {TopicPartition(topic, 0): [2, 3]}


async def test_constructor_topics_subscribe(kafka_cluster: Any, make: Make) -> None:
    topic = unique("ctor")
    kafka_cluster.create_topic(topic, 3)
    await kafka_cluster.aproduce(topic, 6, partition="spread")
    consumer = make(topic)
    assert consumer.subscription() == {topic}
    await consumer.start()
    assert consumer.assignment() == {TopicPartition(topic, p) for p in range(3)}
    got = await collect(consumer, 6)
    assert offsets(got) == {TopicPartition(topic, p): [0, 1] for p in range(3)}


# -- auto_offset_reset -------------------------------------------------------------------------


async def test_auto_offset_reset_latest_starts_at_the_end(kafka_cluster: Any, make: Make) -> None:
    topic = unique("latest")
    kafka_cluster.create_topic(topic, 1)
    await kafka_cluster.aproduce(topic, 5, partition=0, value=b"before")
    tp = TopicPartition(topic, 0)
    consumer = make(auto_offset_reset="latest")
    await consumer.start()
    consumer.assign([tp])
    assert await consumer.position(tp) == 5
    await kafka_cluster.aproduce(topic, 3, partition=0, value=b"after")
    records = (await collect(consumer, 3))[tp]
    assert [(r.offset, r.value) for r in records] == [(5, b"after"), (6, b"after"), (7, b"after")]
    await assert_no_more(consumer)


async def test_auto_offset_reset_none(kafka_cluster: Any, make: Make) -> None:
    topic = unique("none")
    kafka_cluster.create_topic(topic, 1)
    await kafka_cluster.aproduce(topic, 10, partition=0)
    tp = TopicPartition(topic, 0)
    consumer = make(auto_offset_reset="none")
    await consumer.start()
    consumer.assign([tp])
    # No position and no reset policy: aiokafka raises NoOffsetForPartitionError.
    with pytest.raises(NoOffsetForPartitionError, match=f"{topic}-0"):
        await asyncio.wait_for(consumer.getmany(timeout_ms=int(WAIT * 1000)), WAIT)

    consumer.seek(tp, 1000)  # out of range on the leader
    for _ in range(2):  # raised again until the user seeks (never a silent stall)
        with pytest.raises(OffsetOutOfRangeError) as info:
            await asyncio.wait_for(consumer.getmany(timeout_ms=int(WAIT * 1000)), WAIT)
        assert topic in str(info.value) and "1000" in str(info.value)  # partition, offset
    consumer.seek(tp, 8)
    assert offsets(await collect(consumer, 2)) == {tp: [8, 9]}
