"""The cyclic collector while records are sent: the futures of records waiting for their
batch are not walked by young collections over and over (as the consumer's records, see
``rackafka.records._gc``); an application's collector settings are kept."""

from __future__ import annotations

import asyncio
import gc

import pytest

from rackafka.producer.accumulator import ProducerBatch
from rackafka.records import _gc
from rackafka.records.builder import NO_HEADERS
from rackafka.structs import TopicPartition
from rackafka.testing import EmbeddedCluster

from ._helpers import started_producer
from .conftest import MakeProducer

only_where_it_pays = pytest.mark.skipif(
    not _gc.pending, reason="the producer's deferral is off (Python 3.13+ or RACKAFKA_DEFER_GC=0)"
)


@only_where_it_pays
async def test_records_waiting_for_their_batch_are_not_walked_by_young_collections(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, collections: list[int]
) -> None:
    topic, producer = await started_producer(
        embedded_cluster, make_producer, "gc", 3, linger_ms=1000, max_batch_size=1_000_000
    )
    collections.clear()
    # 20,000 pending futures: without the deferral, a young collection every 700 of them.
    futures = [await producer.send(topic, b"v%d" % i) for i in range(20_000)]
    assert collections == []
    assert gc.isenabled()
    default = _gc.DEFAULT_THRESHOLD
    assert default[0] + 20_000 <= gc.get_threshold()[0] <= default[0] + _gc.MAX_RAISE
    # The next collection gives the application its threshold back.
    gc.collect(0)
    assert gc.get_threshold() == default
    await producer.flush()
    metas = await asyncio.gather(*futures)
    assert sorted((m.partition, m.offset) for m in metas)[-1][1] >= 0
    assert len({(m.partition, m.offset) for m in metas}) == 20_000


@only_where_it_pays
async def test_a_completed_batch_sets_its_futures_without_a_young_collection(
    collections: list[int],
) -> None:
    loop = asyncio.get_running_loop()
    batch = ProducerBatch(TopicPartition("t", 0), 1 << 30, 0.0)
    for _ in range(5000):
        assert batch.try_append(1_700_000_000_000, None, b"v", NO_HEADERS)
        batch.futures.append(loop.create_future())
    futures = list(batch.futures)
    gc.collect(0)
    collections.clear()
    batch.done(100, -1, -1)
    assert collections == []
    assert gc.isenabled()
    assert gc.get_threshold()[0] >= _gc.DEFAULT_THRESHOLD[0] + 5000
    assert [f.result().offset for f in futures] == list(range(100, 5100))


async def test_the_application_s_collector_settings_are_kept(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, collections: list[int]
) -> None:
    topic, producer = await started_producer(
        embedded_cluster, make_producer, "gc-off", 1, linger_ms=50
    )
    gc.disable()
    futures = [await producer.send(topic, b"v%d" % i) for i in range(3000)]
    await asyncio.gather(*futures)
    assert not gc.isenabled()
    assert gc.get_threshold() == _gc.DEFAULT_THRESHOLD
    gc.enable()
    gc.set_threshold(0, 10, 10)  # collections off by a zero threshold: left so
    futures = [await producer.send(topic, b"w%d" % i) for i in range(3000)]
    await asyncio.gather(*futures)
    assert gc.isenabled() and gc.get_threshold() == (0, 10, 10)


async def test_the_producer_s_part_can_be_off_alone(
    embedded_cluster: EmbeddedCluster,
    make_producer: MakeProducer,
    collections: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_gc, "pending", False)
    topic, producer = await started_producer(
        embedded_cluster, make_producer, "gc-pending", 1, linger_ms=1000
    )
    collections.clear()
    futures = [await producer.send(topic, b"v%d" % i) for i in range(20_000)]
    # Young collections as without rackafka: the threshold stays the default.
    assert collections and gc.get_threshold() == _gc.DEFAULT_THRESHOLD
    await producer.flush()
    await asyncio.gather(*futures)
