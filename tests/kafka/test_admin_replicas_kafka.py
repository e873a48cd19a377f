"""The admin client's replica, log directory, leader election and incremental config calls
on Apache Kafka (Java's ``Admin`` calls that aiokafka lacks), against the real 3-broker
KRaft cluster. Each test uses its own topics and leaves the cluster's configs as it
found them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from rackafka import AIOKafkaAdminClient, AIOKafkaProducer, TopicPartition
from rackafka.admin import (
    LogDirDescription,
    NewTopic,
    PartitionReassignment,
)
from rackafka.errors import (
    BrokerNotAvailableError,
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from rackafka.testing import KafkaCluster

from ._flow import PATIENCE, unique


@pytest.fixture
async def admin(kafka: KafkaCluster) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``check()`` every 200 ms until it is true; fail after PATIENCE naming ``what``."""
    deadline = time.monotonic() + PATIENCE
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


async def create(admin: AIOKafkaAdminClient, topic: NewTopic) -> None:
    resp = await admin.create_topics([topic])
    assert resp.topic_errors == [(topic.name, 0, None)]


async def partition_state(admin: AIOKafkaAdminClient, topic: str) -> dict[int, Any]:
    [desc] = await admin.describe_topics([topic])
    return {p["partition"]: p for p in desc["partitions"]}


# -- log directories -----------------------------------------------------------------------


async def test_describe_log_dirs_sizes_grow(
    kafka: KafkaCluster, admin: AIOKafkaAdminClient
) -> None:
    topic = unique("replicas-logdirs")
    await create(admin, NewTopic(topic, -1, -1, replica_assignments={0: [2, 3]}))
    tp = TopicPartition(topic, 0)

    every = await admin.describe_log_dirs()
    assert sorted(every) == [1, 2, 3]
    for dirs in every.values():
        assert dirs  # each broker has at least one log directory
        for path, d in dirs.items():
            assert isinstance(d, LogDirDescription) and path.startswith("/")
            assert d.error is None
            # Kafka 3.3+ answers v4: the volume's size and free space.
            assert d.total_bytes is not None and d.usable_bytes is not None
            assert 0 < d.usable_bytes <= d.total_bytes

    def replica(answer: dict[int, dict[str, LogDirDescription]], broker: int) -> Any:
        found = [d.replicas[tp] for d in answer[broker].values() if tp in d.replicas]
        return found[0] if found else None

    before = await admin.describe_log_dirs([2, 3])
    assert sorted(before) == [2, 3]
    assert replica(before, 2) is not None and replica(before, 3) is not None
    assert replica(every, 1) is None  # broker 1 holds no replica of it
    assert replica(before, 2).size == 0 and replica(before, 2).is_future is False

    async with AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks="all") as p:
        for _ in range(20):
            await p.send_and_wait(topic, b"x" * 1000, partition=0)

    async def grown() -> bool:
        now = await admin.describe_log_dirs([2, 3])
        return all(replica(now, b).size > 20000 for b in (2, 3))

    await eventually(grown, "the replicas' sizes to grow")
    after = await admin.describe_log_dirs([2])
    assert replica(after, 2).offset_lag == 0

    with pytest.raises(BrokerNotAvailableError, match="broker 99"):
        await admin.describe_log_dirs([99])


# -- partition reassignments ---------------------------------------------------------------


async def test_reassign_a_partition_to_another_broker(admin: AIOKafkaAdminClient) -> None:
    topic = unique("replicas-move")
    await create(admin, NewTopic(topic, -1, -1, replica_assignments={0: [1], 1: [1]}))
    tp = TopicPartition(topic, 0)
    await admin.alter_partition_reassignments({tp: [2]})

    seen: list[PartitionReassignment] = []

    async def moved() -> bool:
        ongoing = await admin.list_partition_reassignments([tp])
        seen.extend(ongoing.values())
        state = await partition_state(admin, topic)
        return not ongoing and state[0]["replicas"] == [2] and state[0]["leader"] == 2

    await eventually(moved, f"{tp} to move to broker 2")
    for r in seen:  # while in progress (if ever seen): 2 added, 1 to remove
        assert (r.adding_replicas, r.removing_replicas) == ([2], [1]) and 2 in r.replicas
    state = await partition_state(admin, topic)
    assert state[1]["replicas"] == [1]  # the other partition stayed
    logdirs = await admin.describe_log_dirs([2])
    assert any(tp in d.replicas for d in logdirs[2].values())
    assert all(t.topic != topic for t in await admin.list_partition_reassignments())

    # Errors name the partition, after every partition of the request was answered: the
    # good one was reassigned.
    other = TopicPartition(topic, 1)
    with pytest.raises(InvalidReplicationAssignmentError, match=rf"{topic}.*0"):
        await admin.alter_partition_reassignments({tp: [42], other: [3]})

    async def other_moved() -> bool:
        state = await partition_state(admin, topic)
        return state[1]["replicas"] == [3] and not await admin.list_partition_reassignments([other])

    await eventually(other_moved, f"{other} to move to broker 3")
    missing = TopicPartition(unique("replicas-missing"), 0)
    with pytest.raises(UnknownTopicOrPartitionError, match=missing.topic):
        await admin.alter_partition_reassignments({missing: [1]})


async def test_cancel_of_nothing_raises(admin: AIOKafkaAdminClient) -> None:
    topic = unique("replicas-cancel")
    await create(admin, NewTopic(topic, 1, 1))
    tp = TopicPartition(topic, 0)
    with pytest.raises(NoReassignmentInProgressError, match=topic):
        await admin.cancel_partition_reassignments([tp])
    with pytest.raises(NoReassignmentInProgressError, match=topic):
        await admin.alter_partition_reassignments({tp: None})
    assert await admin.list_partition_reassignments([tp]) == {}
    assert isinstance(await admin.list_partition_reassignments(), dict)
