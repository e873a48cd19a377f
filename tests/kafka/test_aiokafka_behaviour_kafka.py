"""Behaviours aiokafka's own tests see on a real broker, checked on Kafka.

* ``start()`` of a consumer subscribed to a topic that does not exist yet (the broker
  creates it on demand, ``auto.create.topics.enable``) returns once the topic has
  partitions and they are assigned: ``position()`` works right after it, and with
  ``auto_offset_reset="latest"`` a record produced right after ``start()`` is read;
  a topic that never appears makes ``start()`` raise ``UnknownTopicOrPartitionError``
  after ``request_timeout_ms``, as aiokafka's;
* ``commit()`` of manually assigned partitions right after ``unsubscribe()`` and
  ``assign()`` commits them (the member has left the group first);
* ``commit()`` right after ``subscribe()``, before the member joined, raises
  ``IllegalStateError("No partitions assigned")`` at once;
* a consumer collected without ``stop()`` closes its connections then.
"""

from __future__ import annotations

import asyncio
import gc
import time
import warnings
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.errors import IllegalStateError, UnknownTopicOrPartitionError
from rackafka.net.connection import Connection
from rackafka.testing import KafkaCluster

from ._flow import PATIENCE, unique

AUTO_PARTITIONS = 3  # num.partitions of the test cluster


def consumer(kafka: KafkaCluster, **kw: Any) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap_servers, **kw)


@pytest.mark.parametrize("group", [None, "g-auto"])
async def test_start_waits_for_a_topic_the_broker_creates(
    kafka: KafkaCluster, group: str | None
) -> None:
    topic = unique("auto-created")
    c = consumer(
        kafka,
        group_id=unique(group) if group else None,
        auto_offset_reset="latest",
        enable_auto_commit=False,
    )
    c.subscribe([topic])
    await c.start()
    try:
        want = {TopicPartition(topic, p) for p in range(AUTO_PARTITIONS)}
        assert c.assignment() == want  # right after start(), as aiokafka
        tp = TopicPartition(topic, 0)
        assert await c.position(tp) == 0
        # "latest" was taken before this record: it is read, not skipped.
        await kafka.aproduce(topic, 1, partition=0)
        record = await asyncio.wait_for(c.getone(), PATIENCE)
        assert (record.topic, record.partition, record.offset) == (topic, 0, 0)
    finally:
        await c.stop()


async def test_start_raises_for_a_topic_that_never_appears(kafka: KafkaCluster) -> None:
    # A topic the broker cannot create (an invalid name): aiokafka's start() raises
    # UnknownTopicOrPartitionError after request_timeout_ms.
    c = consumer(kafka, request_timeout_ms=2000)
    c.subscribe(["bad topic name!"])
    try:
        with pytest.raises(UnknownTopicOrPartitionError):
            await asyncio.wait_for(c.start(), 30)
    finally:
        await c.stop()


async def test_commit_of_assigned_partitions_right_after_unsubscribe(
    kafka: KafkaCluster,
) -> None:
    topic = unique("unsub-assign")
    group = unique("g-unsub-assign")
    kafka.create_topic(topic, 2, 3)
    await kafka.aproduce(topic, 20, partition="spread")
    # With auto commit, unsubscribe() commits the positions (10 and 10) as the member
    # leaves, in the background; the commit made after it must not be overwritten by it
    # (nor refused because the leave is under way).
    c = consumer(kafka, group_id=group, auto_offset_reset="earliest")
    c.subscribe([topic])
    await c.start()
    try:
        read = 0
        while read < 20:
            batch = await asyncio.wait_for(c.getmany(timeout_ms=2000), PATIENCE)
            read += sum(len(v) for v in batch.values())
        c.unsubscribe()
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        c.assign(tps)
        await asyncio.wait_for(c.commit({tps[0]: 7, tps[1]: 3}), PATIENCE)
        assert await c.committed(tps[0]) == 7
        assert await c.committed(tps[1]) == 3
    finally:
        await c.stop()


async def test_commit_before_the_first_join_raises_no_partitions_assigned(
    kafka: KafkaCluster,
) -> None:
    topic = unique("commit-before-join")
    kafka.create_topic(topic, 2, 3)
    c = consumer(kafka, group_id=unique("g-commit-before-join"))
    await c.start()
    try:
        c.subscribe([topic])
        began = time.monotonic()
        with pytest.raises(IllegalStateError, match="No partitions assigned"):
            await c.commit({TopicPartition(topic, 0): 1000})
        assert time.monotonic() - began < 1.0
    finally:
        await c.stop()


def _open_connections() -> set[Connection]:
    gc.collect()
    return {c for c in gc.get_objects() if isinstance(c, Connection) and c.connected}


async def test_a_consumer_collected_without_stop_closes_its_connections(
    kafka: KafkaCluster,
) -> None:
    topic = unique("dropped")
    kafka.create_topic(topic, 2, 3)
    before = _open_connections()
    c: AIOKafkaConsumer | None = consumer(kafka, group_id=unique("g-dropped"))
    assert c is not None
    c.subscribe([topic])
    await asyncio.wait_for(c.start(), PATIENCE)
    assert _open_connections() - before
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = None
        gc.collect()
    assert any("Unclosed AIOKafkaConsumer" in str(w.message) for w in caught)
    deadline = time.monotonic() + 10
    while _open_connections() - before:
        assert time.monotonic() < deadline, _open_connections() - before
        await asyncio.sleep(0.1)
