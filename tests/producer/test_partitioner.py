"""Partitioning: murmur2 as Kafka's Java client and librdkafka, sticky and rack-aware choice."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from rackafka.producer.partitioner import (
    DefaultPartitioner,
    StickyPartitioner,
    murmur2,
    murmur2_partition,
)
from rackafka.testing import EmbeddedCluster

from ._helpers import unique
from .conftest import MakeProducer

# Values of Kafka's Java Utils.murmur2 for these inputs.
JAVA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), JAVA_VECTORS)
def test_murmur2_matches_java(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_murmur2_partition_is_positive_modulo() -> None:
    for data, h in JAVA_VECTORS:
        for n in (1, 2, 3, 7, 100):
            assert murmur2_partition(data, n) == (h & 0x7FFFFFFF) % n


def test_default_partitioner_interface() -> None:
    part = DefaultPartitioner()
    assert part(b"foobar", [3, 0, 2, 1], [0]) == murmur2_partition(b"foobar", 4)
    assert part(None, [0, 1, 2], [2]) == 2


def test_sticky_changes_partition_when_the_batch_closes() -> None:
    sticky = StickyPartitioner()
    first = sticky.partition("t", [0, 1, 2], [0, 1, 2])
    assert all(sticky.partition("t", [0, 1, 2], [0, 1, 2]) == first for _ in range(20))
    sticky.batch_closed("t", first)
    second = sticky.partition("t", [0, 1, 2], [0, 1, 2])
    assert second != first
    sticky.batch_closed("t", first)  # not the current one: no change
    assert sticky.partition("t", [0, 1, 2], [0, 1, 2]) == second


def test_sticky_rack_aware_prefers_local_leaders() -> None:
    racks = {0: "az-a", 1: "az-b", 2: "az-c", 3: "az-a"}
    sticky = StickyPartitioner("az-a", lambda topic, p: racks[p])
    seen = set()
    for _ in range(50):
        p = sticky.partition("t", [0, 1, 2, 3], [0, 1, 2, 3])
        seen.add(p)
        sticky.batch_closed("t", p)
    assert seen == {0, 3}
    nowhere = StickyPartitioner("az-z", lambda topic, p: racks[p])
    assert nowhere.partition("t", [0, 1, 2, 3], [0, 1, 2, 3]) in {0, 1, 2, 3}


def _confluent_partitions(bootstrap: str, topic: str, keys: list[bytes]) -> list[int]:
    from confluent_kafka import Producer

    out: dict[int, int] = {}
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})

    def report(index: int) -> Any:
        def cb(err: Any, msg: Any) -> None:
            assert err is None, err
            out[index] = msg.partition()

        return cb

    for i, key in enumerate(keys):
        producer.produce(topic, b"ref", key=key, on_delivery=report(i))
        producer.poll(0)
    assert producer.flush(30) == 0
    return [out[i] for i in range(len(keys))]


@pytest.mark.parametrize("partitions", [1, 2, 3, 5, 8, 13, 32])
async def test_keys_land_where_librdkafka_murmur2_puts_them(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, partitions: int
) -> None:
    topic = unique("keys")
    embedded_cluster.create_topic(topic, partitions)
    rng = random.Random(partitions)
    keys = [f"user-{i:06d}".encode() for i in range(150)]
    keys += [rng.randbytes(rng.randrange(1, 40)) for _ in range(150)]
    expected = await asyncio.get_running_loop().run_in_executor(
        None, _confluent_partitions, embedded_cluster.bootstrap_servers, topic, keys
    )
    producer = make_producer(linger_ms=5)
    await producer.start()
    futures = [await producer.send(topic, b"ours", key=k) for k in keys]
    ours = [m.partition for m in await asyncio.gather(*futures)]
    assert ours == expected
    if partitions > 1:
        assert len(set(ours)) > 1


async def test_rack_aware_keyless_records_stay_in_rack(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("rack")
    embedded_cluster.create_topic(topic, 6)  # leaders spread over brokers 1-3 (az-a/b/c)
    local = {p.partition for p in embedded_cluster.partitions(topic) if p.leader == 1}
    assert local and len(local) < 6
    producer = make_producer(
        client_rack=embedded_cluster.rack_of(1),
        rack_aware_partitioning=True,
        max_batch_size=1000,
        linger_ms=2,
    )
    await producer.start()
    futures = [await producer.send(topic, bytes(50)) for _ in range(300)]
    parts = [m.partition for m in await asyncio.gather(*futures)]
    assert set(parts) <= local
    keyed = [
        m.partition
        for m in await asyncio.gather(
            *[await producer.send(topic, b"v", key=b"%d" % i) for i in range(60)]
        )
    ]
    assert not set(keyed) <= local  # keys keep their hash partition anywhere
    stats = producer.send_stats()
    assert stats.same_rack_bytes > 0 and stats.cross_rack_bytes > 0
    assert stats.unknown_rack_bytes == 0
    assert stats.total_bytes == stats.same_rack_bytes + stats.cross_rack_bytes

    plain = make_producer(client_rack=embedded_cluster.rack_of(1), max_batch_size=1000)
    await plain.start()
    futures = [await plain.send(topic, bytes(50)) for _ in range(600)]
    spread = {m.partition for m in await asyncio.gather(*futures)}
    assert not spread <= local  # without the option keyless records use every partition


def test_murmur2_of_any_bytes_like_object() -> None:
    for data, expected in JAVA_VECTORS:
        assert murmur2(bytearray(data)) == expected
        assert murmur2(memoryview(data)) == expected


async def test_repeated_keys_use_the_remembered_partition_within_bounds(
    embedded_cluster: EmbeddedCluster,
    make_producer: MakeProducer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rackafka.producer import producer as producer_module

    monkeypatch.setattr(producer_module, "_KEY_CACHE_SIZE", 5)
    topic = unique("keycache")
    embedded_cluster.create_topic(topic, 7)
    producer = make_producer(linger_ms=5)
    await producer.start()
    keys = [f"k{i}".encode() for i in range(12)] * 3
    futures = [await producer.send(topic, b"v", key=k) for k in keys]
    futures.append(await producer.send(topic, b"v", key=bytearray(b"k1")))
    metas = await asyncio.gather(*futures)
    for key, meta in zip([*keys, b"k1"], metas):
        assert meta.partition == murmur2_partition(key, 7)
    info = producer._parts[topic]
    assert 0 < len(info.by_key) <= 5
