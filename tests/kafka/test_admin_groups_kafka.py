"""The admin calls beyond aiokafka's (Java's ``Admin``) on Apache Kafka: list_offsets,
deleting groups, altering and deleting committed offsets, describe_groups for groups of
both protocols (classic and KIP-848), against the real 3-broker KRaft cluster (racks
az-a, az-b, az-c). Each test uses its own topic and group names."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rackafka import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rackafka.admin import ConsumerGroupDescription, ListOffsetsResultInfo, NewTopic, OffsetSpec
from rackafka.errors import (
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    UnknownMemberIdError,
)
from rackafka.structs import OffsetAndMetadata
from rackafka.testing import KafkaCluster

from ._flow import PATIENCE, unique

# Recent, on a whole minute: records older than the topic's retention (7 days) may be
# deleted by the broker at any moment, the active segment included.
BASE_TS = (int(time.time()) // 60 - 10) * 60_000


@pytest.fixture
async def admin(kafka: KafkaCluster) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


async def new_topic(admin: AIOKafkaAdminClient, prefix: str, partitions: int = 2) -> str:
    topic = unique(prefix)
    resp = await admin.create_topics([NewTopic(topic, partitions, 3)])
    assert resp.topic_errors[0][1] == 0
    return topic


def member(kafka: KafkaCluster, topic: str, group: str, **kw: Any) -> AIOKafkaConsumer:
    kw.setdefault("auto_offset_reset", "earliest")
    kw.setdefault("metadata_max_age_ms", 5000)
    if kw.get("group_protocol") != "consumer":
        kw.setdefault("session_timeout_ms", 10000)
        kw.setdefault("heartbeat_interval_ms", 300)
    return AIOKafkaConsumer(topic, bootstrap_servers=kafka.bootstrap_servers, group_id=group, **kw)


async def described_when(
    admin: AIOKafkaAdminClient, group: str, ready: Any
) -> ConsumerGroupDescription:
    """describe_groups until ``ready(description)`` holds (the group settles)."""
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            got = (await admin.describe_groups([group]))[group]
        except GroupIdNotFoundError:
            got = None
        if got is not None and ready(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"group {group} did not settle: {got}")
        await asyncio.sleep(0.2)


# -- list_offsets --------------------------------------------------------------------------


async def test_list_offsets_by_spec(kafka: KafkaCluster, admin: AIOKafkaAdminClient) -> None:
    topic = await new_topic(admin, "admin-offsets")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    async with AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks="all") as p:
        for i in range(5):  # timestamps BASE_TS + 0 s .. 4 s, the largest in the middle
            ts = BASE_TS + (4 if i == 2 else i if i < 2 else i - 1) * 1000
            await p.send_and_wait(topic, b"%d" % i, partition=0, timestamp_ms=ts)

    def ask(spec: OffsetSpec) -> Any:
        return admin.list_offsets({tp0: spec, tp1: spec})

    got = await ask(OffsetSpec.earliest())
    assert [got[tp0].offset, got[tp1].offset] == [0, 0]
    assert got[tp0].timestamp == -1
    got = await ask(OffsetSpec.latest())
    assert [got[tp0].offset, got[tp1].offset] == [5, 0]
    assert got[tp0].leader_epoch is not None and got[tp0].leader_epoch >= 0
    # The first record at or after 1.5 s is offset 2 (its timestamp is 4 s).
    got = await ask(OffsetSpec.for_timestamp(BASE_TS + 1500))
    assert got[tp0] == ListOffsetsResultInfo(2, BASE_TS + 4000, got[tp0].leader_epoch)
    assert got[tp1] == ListOffsetsResultInfo(-1, -1, None)  # an empty partition
    got = await ask(OffsetSpec.for_timestamp(BASE_TS + 3000))
    assert (got[tp0].offset, got[tp0].timestamp) == (2, BASE_TS + 4000)
    got = await ask(OffsetSpec.for_timestamp(BASE_TS))
    assert (got[tp0].offset, got[tp0].timestamp) == (0, BASE_TS)
    # After every record's timestamp: offset -1, as Java.
    got = await ask(OffsetSpec.for_timestamp(BASE_TS + 60_000))
    assert got[tp0] == ListOffsetsResultInfo(-1, -1, None)
    got = await ask(OffsetSpec.max_timestamp())
    assert (got[tp0].offset, got[tp0].timestamp) == (2, BASE_TS + 4000)
    assert got[tp1].offset == -1


async def test_list_offsets_read_committed_stops_at_an_open_transaction(
    kafka: KafkaCluster, admin: AIOKafkaAdminClient
) -> None:
    topic = await new_topic(admin, "admin-lso", 1)
    tp = TopicPartition(topic, 0)
    async with AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks="all") as p:
        await p.send_and_wait(topic, b"plain", partition=0)
    txn = AIOKafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers, transactional_id=unique("admin-txn")
    )
    await txn.start()
    try:
        await txn.begin_transaction()
        for _ in range(2):
            await txn.send_and_wait(topic, b"open", partition=0)
        uncommitted = await admin.list_offsets({tp: OffsetSpec.latest()})
        committed = await admin.list_offsets(
            {tp: OffsetSpec.latest()}, isolation_level="read_committed"
        )
        assert uncommitted[tp].offset == 3  # the high watermark
        assert committed[tp].offset == 1  # the last stable offset: the open transaction's
        await txn.commit_transaction()
    finally:
        await txn.stop()
    # The coordinator writes the commit marker after it answered: the last stable offset
    # moves past it (to the high watermark) a little later.
    deadline = time.monotonic() + PATIENCE
    while True:
        committed = await admin.list_offsets(
            {tp: OffsetSpec.latest()}, isolation_level="read_committed"
        )
        if committed[tp].offset == 4 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert committed[tp].offset == 4


# -- deleting groups, altering and deleting offsets --------------------------------------------


async def test_delete_consumer_groups(kafka: KafkaCluster, admin: AIOKafkaAdminClient) -> None:
    topic = await new_topic(admin, "admin-delgroups")
    tp0 = TopicPartition(topic, 0)
    empty, busy = unique("admin-empty"), unique("admin-busy")
    await admin.alter_consumer_group_offsets(empty, {tp0: 1})
    consumer = member(kafka, topic, busy)
    await consumer.start()
    try:
        await described_when(admin, busy, lambda d: d.state == "Stable" and d.members)
        # Every group is tried: the empty one is deleted although the busy one is refused.
        with pytest.raises(NonEmptyGroupError, match=busy):
            await admin.delete_consumer_groups([busy, empty])
        assert await admin.list_consumer_group_offsets(empty) == {}
        assert empty not in [g for g, _ in await admin.list_consumer_groups()]
        with pytest.raises(GroupIdNotFoundError, match=empty):
            await admin.delete_consumer_groups([empty])
    finally:
        await consumer.stop()
    await admin.delete_consumer_groups([busy])  # empty once its member left
    assert busy not in [g for g, _ in await admin.list_consumer_groups()]


async def test_alter_offsets_then_a_consumer_starts_there(
    kafka: KafkaCluster, admin: AIOKafkaAdminClient
) -> None:
    topic = await new_topic(admin, "admin-alter")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    async with AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks="all") as p:
        for i in range(6):
            await p.send_and_wait(topic, b"%d" % i, partition=i % 2)
    group = unique("admin-alter")
    await admin.alter_consumer_group_offsets(group, {tp0: 2, tp1: OffsetAndMetadata(1, "set")})
    assert await admin.list_consumer_group_offsets(group) == {
        tp0: OffsetAndMetadata(2, ""),
        tp1: OffsetAndMetadata(1, "set"),
    }
    consumer = member(kafka, topic, group, enable_auto_commit=False)
    await consumer.start()
    try:
        seen: dict[TopicPartition, list[int]] = {tp0: [], tp1: []}
        deadline = time.monotonic() + PATIENCE
        while len(seen[tp0]) < 1 or len(seen[tp1]) < 2:
            assert time.monotonic() < deadline, seen
            batches = await consumer.getmany(timeout_ms=500)
            for tp, records in batches.items():
                seen[tp] += [r.offset for r in records]
        assert seen == {tp0: [2], tp1: [1, 2]}
        # An active group: the coordinator refuses a commit from outside it.
        with pytest.raises(UnknownMemberIdError, match=group):
            await admin.alter_consumer_group_offsets(group, {tp0: 0})
    finally:
        await consumer.stop()


async def test_delete_consumer_group_offsets(
    kafka: KafkaCluster, admin: AIOKafkaAdminClient
) -> None:
    topic = await new_topic(admin, "admin-deloff")
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    group = unique("admin-deloff")
    await admin.alter_consumer_group_offsets(group, {tp0: 3, tp1: 4})
    await admin.delete_consumer_group_offsets(group, [tp1])
    assert await admin.list_consumer_group_offsets(group) == {tp0: OffsetAndMetadata(3, "")}
    with pytest.raises(GroupIdNotFoundError, match="admin-none"):
        await admin.delete_consumer_group_offsets(unique("admin-none"), [tp0])
    consumer = member(kafka, topic, group)
    await consumer.start()
    try:
        await described_when(admin, group, lambda d: d.state == "Stable" and d.members)
        with pytest.raises(GroupSubscribedToTopicError, match="partition=0"):
            await admin.delete_consumer_group_offsets(group, [tp0])
    finally:
        await consumer.stop()


# -- describing groups ---------------------------------------------------------------------------


def settled(d: ConsumerGroupDescription, partitions: int) -> bool:
    owned = [tp for m in d.members for tp in m.assignment]
    return (
        d.state == "Stable"
        and len(d.members) == 2
        and all(m.assignment for m in d.members)
        and len(owned) == len(set(owned)) == partitions
    )


async def test_describe_a_classic_group(kafka: KafkaCluster, admin: AIOKafkaAdminClient) -> None:
    topic = await new_topic(admin, "admin-classic", 4)
    group = unique("admin-classic")
    consumers = [member(kafka, topic, group, client_rack=r) for r in ("az-a", "az-c")]
    for c in consumers:
        await c.start()
    try:
        d = await described_when(admin, group, lambda d: settled(d, 4))
        assert (d.group_type, d.is_simple_consumer_group) == ("classic", False)
        assert d.partition_assignor and d.group_epoch is None and d.assignment_epoch is None
        assert d.coordinator == await admin.find_coordinator(group)
        assert sorted(m.rack or "" for m in d.members) == ["az-a", "az-c"]
        for m in d.members:
            assert m.target_assignment is None and m.member_epoch is None
            assert m.client_id and m.host and m.group_instance_id is None
        [resp] = await admin.describe_consumer_groups([group])
        assert resp.groups[0].state == "Stable" and len(resp.groups[0].members) == 2
    finally:
        for c in consumers:
            await c.stop()


async def test_describe_a_kip848_group(kafka: KafkaCluster, admin: AIOKafkaAdminClient) -> None:
    topic = await new_topic(admin, "admin-kip848", 4)
    group = unique("admin-kip848")
    consumers = [
        member(kafka, topic, group, group_protocol="consumer", client_rack=r)
        for r in ("az-a", "az-b")
    ]
    for c in consumers:
        await c.start()
    try:
        d = await described_when(
            admin,
            group,
            lambda d: settled(d, 4) and all(m.assignment == m.target_assignment for m in d.members),
        )
        assert (d.group_type, d.is_simple_consumer_group) == ("consumer", False)
        assert d.partition_assignor in ("uniform", "range")
        assert d.group_epoch is not None and d.assignment_epoch is not None
        assert d.group_epoch >= d.assignment_epoch >= 1
        assert sorted(m.rack or "" for m in d.members) == ["az-a", "az-b"]
        for m in d.members:
            assert m.member_epoch is not None and m.member_epoch >= 1
        assert group in [g for g, _ in await admin.list_consumer_groups()]
        # aiokafka's describe_consumer_groups: the group, not a Dead one.
        [resp] = await admin.describe_consumer_groups([group])
        [g] = resp.groups
        assert (g.state, g.protocol_type, g.protocol) == (
            "Stable",
            "consumer",
            d.partition_assignor,
        )
        assert sorted(m.member_id for m in g.members) == sorted(m.member_id for m in d.members)
        with pytest.raises(NonEmptyGroupError):
            await admin.delete_consumer_groups([group])
    finally:
        for c in consumers:
            await c.stop()


async def test_describe_an_unknown_group(admin: AIOKafkaAdminClient) -> None:
    group = unique("admin-unknown")
    with pytest.raises(GroupIdNotFoundError, match=group):
        await admin.describe_groups([group])
    [resp] = await admin.describe_consumer_groups([group])
    assert resp.groups[0].state == "Dead"  # aiokafka's answer, kept
