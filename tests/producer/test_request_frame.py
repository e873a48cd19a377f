"""Produce requests whose last batch is written after the rest of the frame, not copied
into it: the bytes on the wire are the schema's, for every Produce version."""

from __future__ import annotations

import asyncio
import copy
import random
from typing import Any

import pytest

from rackafka import TopicPartition
from rackafka.net import connection
from rackafka.producer.sender import WRITE_APART, _records_apart
from rackafka.protocol import frames
from rackafka.protocol.apis.produce import PRODUCE
from rackafka.testing import EmbeddedCluster

from ._helpers import full_batch, read_rackafka, started_producer, unique
from .conftest import MakeProducer


def _request(shape: list[tuple[str, list[int]]], txn: str | None) -> dict[str, Any]:
    """A Produce request with a batch of the given size per partition (stand-in bytes:
    the frame does not look inside them)."""
    rng = random.Random(7)
    return {
        "transactional_id": txn,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [
            {
                "name": name,
                "partition_data": [
                    {"index": i, "records": rng.randbytes(size)} for i, size in enumerate(sizes)
                ],
            }
            for name, sizes in shape
        ],
    }


SHAPES = [
    [("t", [WRITE_APART])],
    [("t", [10, 200_000])],
    [("a", [300, 5]), ("topic-é", [70, WRITE_APART + 1])],
    [("a", [WRITE_APART * 2]), ("b", [200, 1 << 20])],
]


@pytest.mark.parametrize("version", range(PRODUCE.min_version, PRODUCE.max_version + 1))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("txn", [None, "txn-1"])
def test_records_written_apart_make_the_schemas_frame(
    version: int, shape: list[tuple[str, list[int]]], txn: str | None
) -> None:
    full = _request(shape, txn)
    expected = frames.encode_request(PRODUCE, version, 42, "client-é", full)
    placeholder = copy.deepcopy(full)
    last = placeholder["topic_data"][-1]["partition_data"][-1]
    records = last["records"]
    tail = _records_apart(last, PRODUCE.is_flexible(version))
    frame = frames.encode_request(PRODUCE, version, 42, "client-é", placeholder)
    writes = connection._splice(frame, *tail)
    assert b"".join(writes) == expected
    # The records go out as they are (no copy), the rest in one write before them and
    # the few bytes after them (flexible versions) in one after.
    assert [w is records for w in writes] == [False, True] + [False] * (len(writes) - 2)
    assert len(writes) == (3 if PRODUCE.is_flexible(version) else 2)


@pytest.mark.parametrize("compression", [None, "lz4"])
async def test_large_batches_are_written_apart_and_read_back(
    embedded_cluster: EmbeddedCluster,
    make_producer: MakeProducer,
    monkeypatch: pytest.MonkeyPatch,
    compression: str | None,
) -> None:
    spliced: list[int] = []
    splice = connection._splice

    def counting_splice(frame: bytearray, cut: int, parts: Any) -> Any:
        writes = splice(frame, cut, parts)
        spliced.append(sum(map(len, writes)))
        return writes

    monkeypatch.setattr(connection, "_splice", counting_splice)
    topic = unique("apart")
    embedded_cluster.create_topic(topic, 2)
    producer = make_producer(max_batch_size=1_000_000, linger_ms=5, compression_type=compression)
    await producer.start()
    rng = random.Random(3)
    values = [rng.randbytes(rng.randrange(5_000, 20_000)) for _ in range(120)]
    sent = []
    for partition in (0, 1):
        batch = producer.create_batch()
        for value in values[partition::2]:
            assert batch.append(key=None, value=value, timestamp=None) is not None
        assert batch.size() >= WRITE_APART
        sent.append(await producer.send_batch(batch, topic, partition=partition))
    # Records sent one by one into a large batch go the same way.
    futures = [await producer.send(topic, v, partition=0) for v in values[:30]]
    await producer.flush()
    await asyncio.gather(*sent, *futures)
    assert len(spliced) >= 3
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 150)
    by_partition: dict[int, list[bytes]] = {0: [], 1: []}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        by_partition[r.partition].append(r.value)
    assert by_partition == {0: values[0::2] + values[:30], 1: values[1::2]}


async def test_a_large_batch_lets_the_sender_write_the_ones_queued_before(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    # send_batch() of a batch about as large as a request, to a partition with nothing
    # queued, first lets the sender take what is queued: the network works while the
    # caller fills the next batch (the caller does not run until the queues are full).
    topic, producer = await started_producer(
        embedded_cluster, make_producer, "eager", 3, max_batch_size=1_000_000
    )
    acc = producer._accumulator
    assert acc is not None
    futures = []
    for partition in range(3):
        batch = full_batch(producer)
        count = batch.record_count()
        futures.append(await producer.send_batch(batch, topic, partition=partition))
        # Every batch but the last one queued was taken by the sender already.
        queued = [len(acc.batches.get(TopicPartition(topic, p), ())) for p in range(3)]
        assert queued == [0] * partition + [1] + [0] * (2 - partition)
    small = producer.create_batch()
    small.append(key=None, value=b"v", timestamp=None)
    futures.append(await producer.send_batch(small, topic, partition=2))
    # A small batch queues without letting the sender run (it may share a request).
    assert len(acc.batches[TopicPartition(topic, 2)]) == 2
    metas = await asyncio.gather(*futures)
    assert [m.offset for m in metas] == [0, 0, 0, count]


async def test_a_send_batch_cancelled_while_the_sender_runs_queues_nothing(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic, producer = await started_producer(
        embedded_cluster, make_producer, "eager-cancel", 1, max_batch_size=1_000_000
    )
    batch = full_batch(producer)
    task = asyncio.get_running_loop().create_task(producer.send_batch(batch, topic, partition=0))
    await asyncio.sleep(0)  # the task runs until it lets the sender run
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert producer._accumulator is not None
    assert not producer._accumulator.batches[TopicPartition(topic, 0)]
    # Nothing was queued: the same batch can be sent again.
    meta = await (await producer.send_batch(batch, topic, partition=0))
    assert meta.offset == 0
