"""The embedded cluster's per-client-rack replica selector (``replica_selector="rack-aware"``).

Kafka's ``RackAwareReplicaSelector`` answers every consumer by the ``rack_id`` of its own
Fetch requests; librdkafka's mock names one replica for everyone.  The front plays the
broker's part: these tests check its answers byte by byte with an independent Fetch client,
and that consumers in three racks at once each read only their own rack.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from rackafka import AIOKafkaConsumer
from rackafka.structs import TopicPartition
from rackafka.testing import EmbeddedCluster

from . import _rawkafka

TOPIC = "racked"
PARTITIONS = 6
COUNT = 1200

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=3, replica_selector="rack-aware") as c:
        c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
        c.produce(TOPIC, COUNT, value_size=100, partition="spread")
        yield c


def racks_of(cluster: EmbeddedCluster) -> dict[int, str | None]:
    return {n: b.rack for n, b in cluster.brokers.items()}


def raw_fetch(
    cluster: EmbeddedCluster, node: int, partition: int, rack: str, version: int = 11
) -> _rawkafka.FetchedPartition:
    host, port = cluster.front.address_of(node)
    return _rawkafka.fetch(host, port, TOPIC, partition, 0, rack=rack, version=version)


def test_the_leader_names_the_replica_in_the_clients_rack(cluster: EmbeddedCluster) -> None:
    racks = racks_of(cluster)
    for p in range(PARTITIONS):
        info = cluster.partition_info(TOPIC, p)
        plain = raw_fetch(cluster, info.leader, p, "")
        assert plain.batches
        for node, rack in racks.items():
            assert rack is not None
            answer = raw_fetch(cluster, info.leader, p, rack)
            assert answer.error_code == 0
            if node == info.leader:
                # a client in the leader's rack reads the leader: no hint, records
                assert answer.preferred_read_replica == -1
                assert answer.batches
            else:
                assert answer.preferred_read_replica == node
                assert not answer.records  # the leader sends none with a hint, as Kafka
                assert answer.high_watermark == plain.high_watermark


def test_no_hint_without_a_rack_an_unknown_rack_or_before_fetch_v11(
    cluster: EmbeddedCluster,
) -> None:
    info = cluster.partition_info(TOPIC, 0)
    other = next(n for n in info.replicas if n != info.leader)
    other_rack = racks_of(cluster)[other]
    assert other_rack is not None
    for rack, version in (("", 11), ("az-elsewhere", 11), (other_rack, 10)):
        answer = raw_fetch(cluster, info.leader, 0, rack, version=version)
        assert answer.error_code == 0
        assert answer.preferred_read_replica == -1
        assert answer.batches


def test_every_replica_serves_consumers(cluster: EmbeddedCluster) -> None:
    info = cluster.partition_info(TOPIC, 1)
    leader_data = raw_fetch(cluster, info.leader, 1, "").records
    for node in info.replicas:
        answer = raw_fetch(cluster, node, 1, racks_of(cluster)[node] or "")
        assert answer.error_code == 0
        assert answer.preferred_read_replica == -1
        assert answer.records == leader_data


async def read_all(cluster: EmbeddedCluster, rack: str | None) -> tuple[int, AIOKafkaConsumer]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        client_rack=rack,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    seen = 0
    deadline = time.monotonic() + 60
    while seen < COUNT and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=500)
        seen += sum(len(records) for records in batches.values())
    return seen, consumer


async def test_consumers_in_three_racks_each_read_their_own_rack(
    cluster: EmbeddedCluster,
) -> None:
    racks = racks_of(cluster)
    before = dict(cluster.front.stats.fetch_bytes)
    results = await asyncio.gather(*(read_all(cluster, r) for r in ("az-a", "az-b", "az-c")))
    try:
        for (seen, consumer), rack in zip(results, ("az-a", "az-b", "az-c"), strict=True):
            assert seen == COUNT
            stats = consumer.fetch_stats()
            assert stats.cross_rack_bytes == 0, stats.to_dict()
            assert stats.same_rack_bytes > 0
            # ... and the brokers agree: only this rack's broker served this client
            served = {
                node: n - before.get((node, r), 0)
                for (node, r), n in cluster.front.stats.fetch_bytes.items()
                if r == rack
            }
            assert {node for node, n in served.items() if n > 0} == {
                node for node, nr in racks.items() if nr == rack
            }
            # partitions led elsewhere were redirected by a hint
            hinted = {
                tp for tp, r in stats.partitions.items() if r.preferred_read_replica is not None
            }
            assert hinted, stats.to_dict()
    finally:
        for _seen, consumer in results:
            await consumer.stop()
    after = cluster.front.stats.fetch_bytes
    cross = {
        (node, rack): n - before.get((node, rack), 0)
        for (node, rack), n in after.items()
        if rack in ("az-a", "az-b", "az-c") and racks[node] != rack
    }
    assert not any(cross.values()), cross


async def test_a_down_replica_is_never_named(cluster: EmbeddedCluster) -> None:
    racks = racks_of(cluster)
    down = next(n for n, r in racks.items() if r == "az-c")
    cluster.broker_down(down)
    try:
        for p in range(PARTITIONS):
            info = cluster.partition_info(TOPIC, p)
            if info.leader == down:
                continue
            answer = raw_fetch(cluster, info.leader, p, "az-c")
            assert answer.preferred_read_replica == -1
            assert answer.batches
    finally:
        cluster.broker_up(down)


def test_the_front_answers_look_ups_by_timestamp(cluster: EmbeddedCluster) -> None:
    """The mock brokers answer -1 to every ListOffsets by time; the front finds the first
    record at or after the timestamp, as a broker's time index does, batch by batch and
    inside compressed batches."""
    topic = "timed"
    cluster.create_topic(topic, partitions=2, replication_factor=3)
    t0 = (int(time.time()) - 7200) * 1000
    for step in range(4):  # offsets 10*step .. 10*step+9 at t0 + step minutes
        cluster.produce(topic, 10, partition=0, timestamp_ms=t0 + step * 60_000, compression="lz4")
    cluster.produce(topic, 3, partition=1, timestamp_ms=t0)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)

    async def look_up() -> list[dict[TopicPartition, tuple[int, int] | None]]:
        consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers
        )
        await consumer.start()
        try:
            out = []
            for ts in (t0, t0 + 1, t0 + 120_000, t0 + 180_000, t0 + 180_001):
                found = await consumer.offsets_for_times({tp0: ts, tp1: ts})
                out.append({tp: (f.offset, f.timestamp) if f else None for tp, f in found.items()})
            return out
        finally:
            await consumer.stop()

    answers = asyncio.run(look_up())
    assert [a[tp0] for a in answers] == [
        (0, t0),
        (10, t0 + 60_000),
        (20, t0 + 120_000),
        (30, t0 + 180_000),
        None,
    ]
    assert [a[tp1] for a in answers] == [(0, t0), None, None, None, None]


async def test_records_are_not_held_back_by_a_leader_with_nothing_new() -> None:
    # The front splits a Fetch over the partitions' leaders. A broker answers at once when
    # any partition has records: a leader whose partitions are all read must not make the
    # others wait for fetch_max_wait_ms (here far longer than the test's limit).
    with EmbeddedCluster(brokers=3, replica_selector="rack-aware") as c:
        c.create_topic("held", partitions=3, replication_factor=3)
        led = {p.leader: p.partition for p in c.partitions("held")}
        assert sorted(led) == [1, 2, 3]
        # One record per batch in one partition (a Fetch returns one batch of it), ten
        # records in the other, read by the first Fetch: from then on that partition has
        # nothing new while the first still has records for many Fetches.
        c.produce("held", 100, partition=led[1], batch_size=150, linger_ms=0)
        c.produce("held", 10, partition=led[3])
        rack = c.rack_of(2)  # both partitions are read from broker 2, a follower of both
        async with AIOKafkaConsumer(
            bootstrap_servers=c.bootstrap_servers,
            client_rack=rack,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=60_000,
        ) as consumer:
            consumer.assign([TopicPartition("held", led[1]), TopicPartition("held", led[3])])
            received = 0
            deadline = time.monotonic() + 30  # generous: a held Fetch waits 60 s
            while received < 110 and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=1000)
                received += sum(len(r) for r in batches.values())
            assert received == 110
            stats = consumer.fetch_stats()
            assert stats.nodes[2].records == 110 and stats.cross_rack_bytes == 0
