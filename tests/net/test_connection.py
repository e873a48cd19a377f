"""Connections and the client against the embedded cluster (a real Kafka protocol peer)."""

from __future__ import annotations

import asyncio
import random
import socket

import pytest

from rackafka.client import KafkaClient, parse_bootstrap_servers
from rackafka.errors import (
    KafkaConfigurationError,
    KafkaConnectionError,
    KafkaTimeoutError,
    OffsetOutOfRangeError,
)
from rackafka.net.connection import _COPY_BELOW, Connection, _splice
from rackafka.protocol.apis.fetch import FETCH, partition_fetch
from rackafka.protocol.apis.list_offsets import LIST_OFFSETS
from rackafka.protocol.apis.metadata import METADATA
from rackafka.records import iter_batches

pytestmark = pytest.mark.fault_injection


def first_address(cluster) -> tuple[str, int]:
    host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
    return host, int(port)


async def open_client(cluster, **kw) -> KafkaClient:
    client = KafkaClient(cluster.bootstrap_servers, **kw)
    await client.bootstrap_cluster()
    return client


def fetch_request(
    topic: str,
    partition: int,
    offset: int,
    *,
    rack: str = "",
    epoch: int = -1,
    max_wait_ms: int = 0,
):
    return partition_fetch(
        topic, partition, offset, max_wait_ms=max_wait_ms, leader_epoch=epoch, rack_id=rack
    )


async def test_negotiation_falls_back_from_a_malformed_v3_reply(embedded_cluster) -> None:
    host, port = first_address(embedded_cluster)
    conn = await Connection.open(host, port)
    try:
        assert conn.versions is not None
        # The mock advertises Fetch 0-16 and Metadata 0-13; we speak 4-17 and 1-12.
        assert conn.version(FETCH) == 16
        assert conn.version(METADATA) == 12
    finally:
        await conn.aclose()


async def test_capped_fetch_version_is_picked_up(embedded_cluster) -> None:
    embedded_cluster.cap_api_version(1, 0, 10)
    host, port = first_address(embedded_cluster)
    conn = await Connection.open(host, port)
    try:
        assert conn.version(FETCH) == 10
    finally:
        await conn.aclose()


async def test_racks_leaders_and_epochs_in_metadata(embedded_cluster) -> None:
    embedded_cluster.create_topic("events", partitions=6, replication_factor=3)
    client = await open_client(embedded_cluster)
    try:
        client.add_topics(["events"])
        await client.refresh_metadata()
        racks = {b.node_id: b.rack for b in client.cluster.brokers.values()}
        assert racks == {1: "az-a", 2: "az-b", 3: "az-c"}
        from rackafka.structs import TopicPartition

        tp = TopicPartition("events", 0)
        info = client.cluster.partition(tp)
        assert info is not None and len(info.replicas) == 3
        new_leader = next(r for r in info.replicas if r != info.leader)
        version_before = client.cluster.version
        embedded_cluster.move_leader("events", 0, new_leader)
        await client.refresh_metadata()
        moved = client.cluster.partition(tp)
        assert moved is not None
        assert moved.leader == new_leader
        assert moved.leader_epoch > info.leader_epoch
        assert client.cluster.version > version_before
    finally:
        await client.close()


async def test_raw_fetch_v11_redirect_follower_and_lagging_follower(embedded_cluster) -> None:
    from rackafka.structs import TopicPartition

    embedded_cluster.create_topic("redir", partitions=3, replication_factor=3)
    embedded_cluster.produce("redir", 30, value_size=50, partition=0)
    client = await open_client(embedded_cluster)
    try:
        client.add_topics(["redir"])
        await client.refresh_metadata()
        info = client.cluster.partition(TopicPartition("redir", 0))
        assert info is not None
        leader = info.leader
        # Kafka's RackAwareReplicaSelector for a client in the rack of a non-leader replica.
        follower = next(r for r in info.replicas if r != leader)
        rack = client.cluster.rack_of(follower)
        embedded_cluster.emulate_rack_aware_selector(rack, topics=["redir"])

        resp = await client.send(leader, FETCH, fetch_request("redir", 0, 0, rack=rack), version=11)
        part = resp.responses[0].partitions[0]
        assert part.error_code == 0
        assert part.preferred_read_replica == follower
        assert not part.records  # a redirect carries no records

        resp = await client.send(
            follower, FETCH, fetch_request("redir", 0, 0, rack=rack), version=11
        )
        part = resp.responses[0].partitions[0]
        assert part.error_code == 0
        assert part.preferred_read_replica == -1  # followers never redirect
        records = [r for b in iter_batches(part.records) for r in b.records()]
        assert len(records) > 0

        # A follower lagging behind the fetch offset answers OFFSET_OUT_OF_RANGE.
        embedded_cluster.set_follower_watermarks("redir", 0, 0, 5)
        resp = await client.send(
            follower, FETCH, fetch_request("redir", 0, 20, rack=rack), version=11
        )
        part = resp.responses[0].partitions[0]
        assert part.error_code == OffsetOutOfRangeError.errno
    finally:
        await client.close()


async def test_pipelined_requests_reach_the_right_waiters(embedded_cluster) -> None:
    names = [f"t{i}" for i in range(12)]
    for i, name in enumerate(names):
        embedded_cluster.create_topic(name, partitions=1 + i % 4, replication_factor=1)
    host, port = first_address(embedded_cluster)
    conn = await Connection.open(host, port)
    try:
        rng = random.Random(7)
        asked = [rng.choice(names) for _ in range(300)]
        futures = [
            conn.send(
                METADATA, METADATA.Request(topics=[{"name": n}], allow_auto_topic_creation=False)
            )
            for n in asked
        ]
        assert conn.in_flight > 1
        responses = await asyncio.gather(*(conn.wait(f) for f in futures))
        for name, resp in zip(asked, responses):
            assert [t.name for t in resp.topics] == [name]
            assert len(resp.topics[0].partitions) == 1 + names.index(name) % 4
        assert conn.in_flight == 0
    finally:
        await conn.aclose()


async def test_broker_down_fails_in_flight_and_client_recovers(embedded_cluster) -> None:
    from rackafka.structs import TopicPartition

    embedded_cluster.create_topic("quiet", partitions=1, replication_factor=1)
    client = await open_client(embedded_cluster, retry_backoff_ms=50)
    try:
        client.add_topics(["quiet"])
        await client.refresh_metadata()
        leader = client.cluster.leader_for(TopicPartition("quiet", 0))
        assert leader is not None
        # An empty partition: the broker holds the fetch for max_wait_ms.
        conn = await client.connect(leader)
        pending = conn.send(FETCH, fetch_request("quiet", 0, 0, max_wait_ms=5000))
        await asyncio.sleep(0.2)
        embedded_cluster.broker_down(leader)
        with pytest.raises(KafkaConnectionError):
            await conn.wait(pending, timeout=10)
        assert not conn.connected
        embedded_cluster.broker_up(leader)
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            try:
                await client.refresh_metadata()
                if client.cluster.broker(leader) is None:
                    raise KafkaConnectionError("broker not back in metadata yet")
                resp = await client.send(
                    leader,
                    LIST_OFFSETS,
                    LIST_OFFSETS.Request(
                        replica_id=-1,
                        isolation_level=0,
                        topics=[
                            {
                                "name": "quiet",
                                "partitions": [{"partition_index": 0, "timestamp": -1}],
                            }
                        ],
                    ),
                )
                break
            except KafkaConnectionError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.1)
        assert resp.topics[0].partitions[0].error_code == 0
    finally:
        await client.close()


async def test_request_timeout_closes_the_connection(embedded_cluster) -> None:
    host, port = first_address(embedded_cluster)
    conn = await Connection.open(host, port, request_timeout_ms=2000)
    try:
        broker_id = conn.node_id
        for b in embedded_cluster.brokers.values():
            if (b.host, b.port) == (host, port):
                broker_id = b.node_id
        embedded_cluster.set_broker_rtt(broker_id, 1500)
        with pytest.raises(KafkaTimeoutError):
            await conn.request(METADATA, METADATA.Request(topics=[]), timeout=0.3)
        assert not conn.connected
    finally:
        embedded_cluster.set_broker_rtt(broker_id, 0)
        await conn.aclose()


async def test_bootstrap_failure_names_every_server() -> None:
    ports = []
    for _ in range(2):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        ports.append(s.getsockname()[1])
        s.close()
    servers = [f"127.0.0.1:{p}" for p in ports]
    client = KafkaClient(servers, request_timeout_ms=1000)
    with pytest.raises(KafkaConnectionError) as info:
        await client.bootstrap_cluster()
    for s in servers:
        assert s in str(info.value)
    await client.close()


async def test_no_tasks_left_after_close(embedded_cluster) -> None:
    before = asyncio.all_tasks()
    client = await open_client(embedded_cluster)
    await client.refresh_metadata()
    for node in list(client.cluster.brokers):
        await client.connect(node)
    await client.close()
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        ("a:1,b:2", [("a", 1), ("b", 2)]),
        (["localhost"], [("localhost", 9092)]),
        ("[::1]:9093, [fe80::1]", [("::1", 9093), ("fe80::1", 9092)]),
        ("::1", [("::1", 9092)]),
    ],
)
def test_parse_bootstrap_servers(servers, expected) -> None:
    assert parse_bootstrap_servers(servers) == expected


@pytest.mark.parametrize("bad", ["", "host:abc", "[::1", "host:70000", ":9092"])
def test_bad_bootstrap_servers_name_the_argument(bad) -> None:
    with pytest.raises(KafkaConfigurationError, match="bootstrap_servers"):
        parse_bootstrap_servers(bad)


def test_short_parts_are_joined_and_long_ones_written_alone() -> None:
    frame = bytearray(b"\x00\x00\x00\x00header-and-placeholder")
    long_part = bytes(_COPY_BELOW)
    writes = _splice(frame, len(b"placeholder"), (b"L", long_part, b"", b"x", b"y"))
    assert writes == [b"\x00\x00\x10\x0eheader-and-L", long_part, b"xy"]
    assert writes[1] is long_part
    assert int.from_bytes(writes[0][:4], "big") == sum(map(len, writes)) - 4
