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
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ElectionType,
    LogDirDescription,
    NewTopic,
    PartitionReassignment,
)
from rackafka.errors import (
    BrokerNotAvailableError,
    ElectionNotNeededError,
    InvalidConfigurationError,
    InvalidReplicationAssignmentError,
    InvalidRequestError,
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


async def test_cancel_a_throttled_reassignment_in_progress(
    kafka: KafkaCluster, admin: AIOKafkaAdminClient
) -> None:
    """A partition moving from broker 1 to broker 2 under a replication throttle of 1 byte
    per second (of this topic's replicas only: the other topics replicate as before) stays
    in progress long enough to be listed and cancelled: the partition is back on broker 1
    alone."""
    topic = unique("replicas-throttled")
    await create(admin, NewTopic(topic, -1, -1, replica_assignments={0: [1]}))
    tp = TopicPartition(topic, 0)
    async with AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, linger_ms=5) as p:
        # 6 MB: the follower fetches 1 MB, then waits out the throttle (some seconds).
        for _ in range(60):
            await asyncio.gather(
                *[await p.send(topic, b"x" * 10_000, partition=0) for _ in range(10)]
            )
    rates = {
        ConfigResource("broker", 1): "leader.replication.throttled.rate",
        ConfigResource("broker", 2): "follower.replication.throttled.rate",
    }
    await admin.incremental_alter_configs(
        {
            ConfigResource("topic", topic): [
                AlterConfigOp("leader.replication.throttled.replicas", "0:1"),
                AlterConfigOp("follower.replication.throttled.replicas", "0:2"),
            ]
        }
    )
    try:
        await admin.incremental_alter_configs(
            {res: [AlterConfigOp(key, "1")] for res, key in rates.items()}
        )
        await admin.alter_partition_reassignments({tp: [2]})
        ongoing = await admin.list_partition_reassignments()
        assert ongoing[tp].adding_replicas == [2] and ongoing[tp].removing_replicas == [1]
        assert sorted(ongoing[tp].replicas) == [1, 2]
        assert await admin.list_partition_reassignments([tp]) == {tp: ongoing[tp]}

        await admin.cancel_partition_reassignments([tp])

        async def back() -> bool:
            state = await partition_state(admin, topic)
            return state[0]["replicas"] == [1] and not await admin.list_partition_reassignments(
                [tp]
            )

        await eventually(back, f"{tp} back on broker 1 alone")
        with pytest.raises(NoReassignmentInProgressError, match=topic):
            await admin.cancel_partition_reassignments([tp])
    finally:
        await admin.incremental_alter_configs(
            {res: [AlterConfigOp(key, op=AlterConfigOpType.DELETE)] for res, key in rates.items()}
        )
        await admin.delete_topics([topic])


# -- leader elections ----------------------------------------------------------------------


async def test_elect_preferred_leader_after_the_order_changed(admin: AIOKafkaAdminClient) -> None:
    topic = unique("replicas-elect")
    await create(admin, NewTopic(topic, -1, -1, replica_assignments={0: [1, 2]}))
    tp = TopicPartition(topic, 0)
    # The same replicas in the other order: broker 2 is now the preferred leader, but the
    # leader stays 1 until an election.
    await admin.alter_partition_reassignments({tp: [2, 1]})

    async def reordered() -> bool:
        state = await partition_state(admin, topic)
        return state[0]["replicas"] == [2, 1] and sorted(state[0]["isr"]) == [1, 2]

    await eventually(reordered, f"{tp}'s replicas to be [2, 1]")
    assert (await partition_state(admin, topic))[0]["leader"] == 1

    assert await admin.elect_leaders(ElectionType.PREFERRED, [tp]) == {tp: None}

    async def led_by_2() -> bool:
        return (await partition_state(admin, topic))[0]["leader"] == 2

    await eventually(led_by_2, f"broker 2 to lead {tp}")
    # Nothing to do: ELECTION_NOT_NEEDED is a success, reported per partition.
    again = await admin.elect_leaders(ElectionType.PREFERRED, [tp], timeout_ms=30000)
    assert again == {tp: ElectionNotNeededError}
    unclean = await admin.elect_leaders(ElectionType.UNCLEAN, [tp])
    assert unclean == {tp: ElectionNotNeededError}
    everything = await admin.elect_leaders(ElectionType.PREFERRED)
    assert tp not in everything or everything[tp] is ElectionNotNeededError

    missing = TopicPartition(topic, 7)
    with pytest.raises(UnknownTopicOrPartitionError, match=rf"{topic}.*7") as info:
        await admin.elect_leaders(ElectionType.PREFERRED, [tp, missing])
    assert "ElectLeaders" in str(info.value)


# -- incremental configs -------------------------------------------------------------------


async def described(
    admin: AIOKafkaAdminClient, kind: str, name: str, *keys: str
) -> dict[str, tuple[str | None, int]]:
    """``{config: (value, config_source)}`` of a resource, as broker ``name`` or any
    broker describes it."""
    [resp] = await admin.describe_configs([ConfigResource(kind, name, dict.fromkeys(keys, ""))])
    [(code, _msg, _type, _name, entries)] = resp.resources
    assert code == 0
    return {e.config_names: (e.config_value, e.config_source) for e in entries}


DYNAMIC_TOPIC, DYNAMIC_BROKER, DEFAULT = 1, 2, 5


async def test_incremental_alter_topic_configs(admin: AIOKafkaAdminClient) -> None:
    topic = unique("replicas-configs")
    await create(admin, NewTopic(topic, 1, 1))
    res = ConfigResource(ConfigResourceType.TOPIC, topic)
    keys = ("retention.ms", "cleanup.policy", "max.message.bytes")
    await admin.incremental_alter_configs({res: [AlterConfigOp("max.message.bytes", "200000")]})
    before = await described(admin, "topic", topic, *keys)
    assert before["max.message.bytes"] == ("200000", DYNAMIC_TOPIC)
    assert before["cleanup.policy"] == ("delete", DEFAULT)

    # Each call changes only the configs it names; the call returns once they show.
    await admin.incremental_alter_configs(
        {
            res: [
                AlterConfigOp("retention.ms", "3600000"),
                AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.APPEND),
            ]
        }
    )
    now = await described(admin, "topic", topic, *keys)
    assert now["retention.ms"] == ("3600000", DYNAMIC_TOPIC)
    assert now["cleanup.policy"] == ("delete,compact", DYNAMIC_TOPIC)
    assert now["max.message.bytes"] == ("200000", DYNAMIC_TOPIC)  # kept (AlterConfigs drops it)

    await admin.incremental_alter_configs(
        {
            res: [
                AlterConfigOp("retention.ms", op=AlterConfigOpType.DELETE),
                AlterConfigOp("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT),
            ]
        }
    )
    now = await described(admin, "topic", topic, *keys)
    assert now["retention.ms"] == ("604800000", DEFAULT)
    assert now["cleanup.policy"] == ("compact", DYNAMIC_TOPIC)

    # validate_only: checked, not changed.
    await admin.incremental_alter_configs(
        {res: [AlterConfigOp("retention.ms", "1000")]}, validate_only=True
    )
    assert (await described(admin, "topic", topic, "retention.ms"))["retention.ms"][0] == (
        "604800000"
    )

    # Errors name the resource, after every resource was answered: the good one changed.
    missing = unique("replicas-missing")
    with pytest.raises(InvalidConfigurationError, match=rf"topic '{topic}'.*no\.such") as info:
        await admin.incremental_alter_configs(
            {
                res: [AlterConfigOp("no.such.config", "1")],
                ConfigResource("topic", missing): [AlterConfigOp("retention.ms", "1")],
            }
        )
    assert missing in str(info.value) and "UnknownTopicOrPartitionError" in str(info.value)
    with pytest.raises(InvalidConfigurationError, match=topic):
        # APPEND to a config that is not a list.
        await admin.incremental_alter_configs(
            {res: [AlterConfigOp("retention.ms", "5", AlterConfigOpType.APPEND)]}
        )
    with pytest.raises(UnknownTopicOrPartitionError, match=missing):
        await admin.incremental_alter_configs(
            {ConfigResource("topic", missing): [AlterConfigOp("retention.ms", "1")]}
        )


async def test_incremental_alter_broker_configs(admin: AIOKafkaAdminClient) -> None:
    # Dynamic configs of broker 3 only, harmless while set, deleted again at the end (the
    # cluster is shared: it is left as found).
    res = ConfigResource(ConfigResourceType.BROKER, 3)
    key, listed = "log.cleaner.threads", "log.cleanup.policy"
    before = await described(admin, "broker", "3", key, listed)
    assert before[key][1] != DYNAMIC_BROKER and before[listed] == ("delete", DEFAULT)
    try:
        await admin.incremental_alter_configs({res: [AlterConfigOp(key, "2")]})
        assert (await described(admin, "broker", "3", key))[key] == ("2", DYNAMIC_BROKER)
        # Broker 3 only: broker 2 keeps its value.
        assert (await described(admin, "broker", "2", key))[key] == before[key]
        await admin.incremental_alter_configs(
            {res: [AlterConfigOp(listed, "compact", AlterConfigOpType.APPEND)]}
        )
        assert (await described(admin, "broker", "3", listed))[listed] == (
            "delete,compact",
            DYNAMIC_BROKER,
        )
        # Kafka answers INVALID_REQUEST for a broker config's bad value.
        with pytest.raises(InvalidRequestError, match=f"broker '3'.*{key}"):
            await admin.incremental_alter_configs({res: [AlterConfigOp(key, "many")]})
    finally:
        await admin.incremental_alter_configs(
            {
                res: [
                    AlterConfigOp(key, op=AlterConfigOpType.DELETE),
                    AlterConfigOp(listed, op=AlterConfigOpType.DELETE),
                ]
            }
        )
    assert await described(admin, "broker", "3", key, listed) == before
