"""The admin client on Apache Kafka: every call against the real 3-broker KRaft cluster.

The cluster has no controller a client can reach (KRaft): the calls that change topics go
to any broker, which forwards them. Each test uses its own topic and group names.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rackafka import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rackafka.admin import NewPartitions, NewTopic, RecordsToDelete
from rackafka.admin.config_resource import ConfigResource, ConfigResourceType
from rackafka.errors import (
    InvalidPartitionsError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from rackafka.testing import KafkaCluster

from ._flow import unique

TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REPLICATION_FACTOR = 38


@pytest.fixture
async def admin(kafka: KafkaCluster) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


async def test_start_close_and_async_with(kafka: KafkaCluster) -> None:
    async with AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers) as admin:
        await admin.start()  # again: nothing
        cluster = await admin.describe_cluster()
    assert sorted(b["node_id"] for b in cluster["brokers"]) == [1, 2, 3]
    await admin.close()


async def test_create_list_describe_delete_topics(admin: AIOKafkaAdminClient) -> None:
    names = [unique("admin-create"), unique("admin-create")]
    resp = await admin.create_topics(
        [
            NewTopic(names[0], 3, 2, topic_configs={"cleanup.policy": "compact"}),
            NewTopic(names[1], -1, -1, replica_assignments={0: [1, 2], 1: [2, 3]}),
        ]
    )
    assert sorted(resp.topic_errors) == sorted((n, 0, None) for n in names)
    _topic, code, message = resp.topic_errors[0]
    assert code == 0 and message is None

    assert set(names) <= set(await admin.list_topics())
    described = {t["topic"]: t for t in await admin.describe_topics(names)}
    first = described[names[0]]
    assert first["error_code"] == 0 and first["is_internal"] is False
    assert sorted(p["partition"] for p in first["partitions"]) == [0, 1, 2]
    for p in first["partitions"]:
        assert len(p["replicas"]) == 2 and p["leader"] in p["replicas"]
        assert set(p["isr"]) <= set(p["replicas"]) and p["offline_replicas"] == []
    second = {p["partition"]: p["replicas"] for p in described[names[1]]["partitions"]}
    assert second == {0: [1, 2], 1: [2, 3]}

    # Kafka answers per topic: the error is in the response (as aiokafka), not raised.
    again = await admin.create_topics([NewTopic(names[0], 1, 1)])
    assert again.topic_errors[0][:2] == (names[0], TOPIC_ALREADY_EXISTS)
    assert again.topic_errors[0][2]  # the broker's message
    too_many = await admin.create_topics([NewTopic(unique("admin-rf"), 1, 5)])
    assert too_many.topic_errors[0][1] == INVALID_REPLICATION_FACTOR

    only = unique("admin-validate")
    checked = await admin.create_topics([NewTopic(only, 1, 1)], validate_only=True)
    assert checked.topic_errors[0][1] == 0
    assert only not in await admin.list_topics()

    deleted = await admin.delete_topics(names, timeout_ms=30000)
    assert sorted(deleted.topic_error_codes) == sorted((n, 0) for n in names)

    # The call returned once the broker asked next no longer lists them.
    assert not set(names) & set(await admin.list_topics())
    missing = await admin.delete_topics([unique("admin-missing")])
    assert missing.topic_error_codes[0][1] == UNKNOWN_TOPIC_OR_PARTITION


async def test_describe_topics_all_and_unknown(admin: AIOKafkaAdminClient) -> None:
    name = unique("admin-describe")
    await admin.create_topics([NewTopic(name, 2, 3)])
    every = await admin.describe_topics()
    assert name in {t["topic"] for t in every}
    unknown = unique("admin-unknown")
    [answer] = await admin.describe_topics([unknown])
    assert answer["topic"] == unknown
    assert answer["error_code"] == UNKNOWN_TOPIC_OR_PARTITION and answer["partitions"] == []
    assert unknown not in await admin.list_topics()  # describing does not create it


async def test_describe_cluster(admin: AIOKafkaAdminClient) -> None:
    cluster = await admin.describe_cluster()
    assert set(cluster) == {"throttle_time_ms", "brokers", "cluster_id", "controller_id"}
    brokers = {b["node_id"]: b for b in cluster["brokers"]}
    assert sorted(brokers) == [1, 2, 3]
    assert {b["rack"] for b in brokers.values()} == {"az-a", "az-b", "az-c"}
    assert cluster["controller_id"] in brokers
    assert cluster["cluster_id"]


async def test_create_partitions(admin: AIOKafkaAdminClient) -> None:
    name = unique("admin-partitions")
    await admin.create_topics([NewTopic(name, 1, 2)])
    resp = await admin.create_partitions({name: NewPartitions(3, [[2, 3], [3, 1]])})
    assert resp.topic_errors == [(name, 0, None)]

    [topic] = await admin.describe_topics([name])  # visible when the call returns
    replicas = {p["partition"]: p["replicas"] for p in topic["partitions"]}
    assert replicas[1] == [2, 3] and replicas[2] == [3, 1]

    checked = await admin.create_partitions({name: NewPartitions(5)}, validate_only=True)
    assert checked.topic_errors[0][1] == 0
    [topic] = await admin.describe_topics([name])
    assert len(topic["partitions"]) == 3

    with pytest.raises(InvalidPartitionsError, match=name):
        await admin.create_partitions({name: NewPartitions(2)})
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.create_partitions({unique("admin-missing"): NewPartitions(2)})


async def test_describe_and_alter_configs(admin: AIOKafkaAdminClient) -> None:
    name = unique("admin-configs")
    await admin.create_topics([NewTopic(name, 1, 1, topic_configs={"retention.ms": "3600000"})])
    [resp] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    [resource] = resp.resources
    error_code, error_message, resource_type, resource_name, entries = resource
    assert (error_code, resource_type, resource_name) == (0, ConfigResourceType.TOPIC, name)
    assert not error_message
    configs = {e[0]: e for e in entries}
    assert configs["retention.ms"][1] == "3600000"
    assert configs["cleanup.policy"][1] == "delete"
    assert configs["retention.ms"].config_synonyms == []

    # The configs' keys filter the answer; synonyms on request.
    cr = ConfigResource("topic", name, {"cleanup.policy": "compact"})
    altered = await admin.alter_configs([cr])
    assert [r.resources for r in altered] == [[(0, None, ConfigResourceType.TOPIC, name)]]
    [resp] = await admin.describe_configs([cr], include_synonyms=True)
    [entry] = resp.resources[0][4]
    name_, value, *_rest = entry
    assert (name_, value) == ("cleanup.policy", "compact")
    assert entry.config_synonyms and entry.config_synonyms[0].config_value == "compact"
    # AlterConfigs replaces the whole dynamic config: retention.ms went back to its default.
    [resp] = await admin.describe_configs([ConfigResource("topic", name, {"retention.ms": ""})])
    assert resp.resources[0][4][0][1] != "3600000"

    # A broker resource goes to that broker; its name is its id.
    answers = await admin.describe_configs(
        [ConfigResource(ConfigResourceType.BROKER, 2), ConfigResource("topic", name)]
    )
    assert len(answers) == 2
    broker = answers[0].resources[0]
    assert broker[:4] == (0, None, ConfigResourceType.BROKER, "2") or broker[:4] == (
        0,
        "",
        ConfigResourceType.BROKER,
        "2",
    )
    assert any(e[0] == "broker.rack" and e[1] == "az-b" for e in broker[4])

    # Per-resource errors are answered, as aiokafka returns them.
    [resp] = await admin.describe_configs([ConfigResource("topic", unique("admin-missing"))])
    assert resp.resources[0][0] == UNKNOWN_TOPIC_OR_PARTITION
    bad = await admin.alter_configs([ConfigResource("topic", name, {"no.such.config": "1"})])
    assert bad[0].resources[0][0] != 0
    # Broker configs: a dynamic, cluster-safe one set on broker 3 and removed again.
    key = "log.cleaner.threads"
    res = await admin.alter_configs([ConfigResource("broker", "3", {key: "2"})])
    assert [r.resources for r in res] == [[], [(0, None, ConfigResourceType.BROKER, "3")]]
    res = await admin.alter_configs([ConfigResource("broker", "3", {})])
    assert res[1].resources[0][0] == 0


async def consumer_in_group(
    kafka: KafkaCluster, topic: str, group: str
) -> AIOKafkaConsumer[Any, Any]:
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        topic,
        group_id=group,
        bootstrap_servers=kafka.bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    deadline = time.monotonic() + 60
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer got no assignment"
        await asyncio.sleep(0.1)
    return consumer


async def test_consumer_groups(kafka: KafkaCluster, admin: AIOKafkaAdminClient) -> None:
    topic, group = unique("admin-groups"), unique("admin-group")
    await admin.create_topics([NewTopic(topic, 2, 3)])
    async with AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers) as producer:
        for i in range(4):
            await producer.send_and_wait(topic, b"v%d" % i, partition=i % 2)
    consumer = await consumer_in_group(kafka, topic, group)
    try:
        coordinator = await admin.find_coordinator(group)
        assert coordinator in (1, 2, 3)
        assert await admin.find_coordinator(group, 0) == coordinator

        listed = await admin.list_consumer_groups()
        assert (group, "consumer") in listed
        group_names = [g for g, *_ in listed]
        assert group in group_names
        on_coordinator = await admin.list_consumer_groups([coordinator])
        assert group in [g for g, _ in on_coordinator]
        elsewhere = [b for b in (1, 2, 3) if b != coordinator]
        assert group not in [g for g, _ in await admin.list_consumer_groups(elsewhere)]

        [resp] = await admin.describe_consumer_groups([group])
        [described] = resp.groups
        error_code, group_id, state, protocol_type, protocol, members, _ops = described
        assert (error_code, group_id, state, protocol_type) == (0, group, "Stable", "consumer")
        assert protocol and len(members) == 1
        member_id, _client_id, client_host, _metadata, assignment = members[0]
        assert member_id and client_host and isinstance(assignment, bytes) and assignment
        [by_id] = await admin.describe_consumer_groups([group], group_coordinator_id=coordinator)
        assert by_id.groups[0][:3] == (0, group, "Stable")
        # Groups of other coordinators: one answer per coordinator, each group once.
        missing = [unique("admin-nogroup") for _ in range(4)]
        answers = await admin.describe_consumer_groups([group, *missing])
        described_by_name = {g[1]: g for a in answers for g in a.groups}
        assert sorted(described_by_name) == sorted([group, *missing])
        assert len(answers) == len({await admin.find_coordinator(g) for g in [group, *missing]})
        for name in missing:
            assert described_by_name[name][0] == 0 and described_by_name[name][2] == "Dead"

        # Committed offsets: none yet; then the consumer commits.
        assert await admin.list_consumer_group_offsets(group) == {}
        records = await consumer.getmany(timeout_ms=10000)
        while sum(len(v) for v in records.values()) < 4:
            more = await consumer.getmany(timeout_ms=10000)
            assert more, "the consumer read nothing more"
            for tp, recs in more.items():
                records.setdefault(tp, []).extend(recs)
        await consumer.commit({TopicPartition(topic, 0): (2, "meta")})
        offsets = await admin.list_consumer_group_offsets(group)
        assert offsets == {TopicPartition(topic, 0): (2, "meta")}
        tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
        asked = await admin.list_consumer_group_offsets(
            group, group_coordinator_id=coordinator, partitions=[tp0, tp1]
        )
        assert asked[tp0].offset == 2 and asked[tp0].metadata == "meta"
        assert asked[tp1].offset == -1
    finally:
        await consumer.stop()
    # A group without members is still listed (with its offsets) and described Empty.
    [resp] = await admin.describe_consumer_groups([group])
    assert resp.groups[0][2] == "Empty" and resp.groups[0][5] == []


async def test_find_coordinator_of_a_transactional_id(
    kafka: KafkaCluster, admin: AIOKafkaAdminClient
) -> None:
    assert await admin.find_coordinator(unique("admin-txn"), coordinator_type=1) in (1, 2, 3)


async def test_delete_records(kafka: KafkaCluster, admin: AIOKafkaAdminClient) -> None:
    topic = unique("admin-delete-records")
    await admin.create_topics([NewTopic(topic, 2, 3)])
    async with AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks="all") as p:
        for i in range(5):
            await p.send_and_wait(topic, b"a%d" % i, partition=0)
            await p.send_and_wait(topic, b"b%d" % i, partition=1)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    low = await admin.delete_records({tp0: RecordsToDelete(3), tp1: RecordsToDelete(-1)})
    assert low == {tp0: 3, tp1: 5}

    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        consumer.assign([tp0])
        assert (await consumer.beginning_offsets([tp0, tp1])) == {tp0: 3, tp1: 5}
        record = await asyncio.wait_for(consumer.getone(), 30)
        assert (record.offset, record.value) == (3, b"a3")
    finally:
        await consumer.stop()

    with pytest.raises(OffsetOutOfRangeError):
        await admin.delete_records({tp0: RecordsToDelete(100)})
    with pytest.raises(UnknownTopicOrPartitionError):
        await admin.delete_records({TopicPartition(topic, 7): RecordsToDelete(1)})


async def test_admin_over_sasl_ssl(kafka: KafkaCluster) -> None:
    assert kafka.front is not None
    opts = kafka.front.client_options("SCRAM-SHA-512", "alice")
    name = unique("admin-sasl")
    async with AIOKafkaAdminClient(**opts) as admin:
        resp = await admin.create_topics([NewTopic(name, 1, 3)])
        assert resp.topic_errors == [(name, 0, None)]
        assert name in await admin.list_topics()
        assert (await admin.delete_topics([name])).topic_error_codes == [(name, 0)]


async def test_calls_go_on_through_other_brokers_when_one_is_down(
    all_brokers_up: KafkaCluster,
) -> None:
    kafka = all_brokers_up
    async with AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers) as admin:
        assert await admin.list_topics() is not None  # a connection to broker 1 now
        kafka.broker_down(1)
        try:
            name = unique("admin-down")
            resp = await admin.create_topics([NewTopic(name, 2, 2)])
            assert resp.topic_errors == [(name, 0, None)]
            assert name in await admin.list_topics()
            cluster = await admin.describe_cluster()
            assert sorted(b["node_id"] for b in cluster["brokers"]) == [2, 3]
            [topic] = await admin.describe_topics([name])
            assert all(p["leader"] in (2, 3) for p in topic["partitions"])
            assert (await admin.delete_topics([name])).topic_error_codes == [(name, 0)]
        finally:
            kafka.broker_up(1)
