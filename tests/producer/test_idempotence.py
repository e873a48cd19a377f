"""The idempotent producer: retries after broker errors store every record exactly once."""

from __future__ import annotations

import asyncio

import pytest

from rackafka.producer import ProduceStats
from rackafka.testing import EmbeddedCluster

from ._helpers import raw_batches, read_rackafka, unique
from .conftest import MakeProducer

NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
NOT_ENOUGH_REPLICAS = 19
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
UNKNOWN_PRODUCER_ID = 59

pytestmark = pytest.mark.fault_injection


async def _produce(
    make_producer: MakeProducer, topic: str, count: int, **kwargs: object
) -> ProduceStats:
    producer = make_producer(retry_backoff_ms=10, linger_ms=2, max_batch_size=600, **kwargs)
    await producer.start()
    futures = []
    for i in range(count):
        futures.append(await producer.send(topic, b"%06d" % i, partition=i % 2))
        if i % 20 == 0:
            await asyncio.sleep(0.005)
    await asyncio.gather(*futures)
    stats = producer.send_stats()
    assert stats.records == count
    await producer.stop()
    return stats


def _check_exactly_once(records: list, count: int) -> None:  # type: ignore[type-arg]
    for p in (0, 1):
        values = [r.value for r in records if r.partition == p]
        assert values == [b"%06d" % i for i in range(p, count, 2)]  # no gap, no duplicate


async def test_retriable_errors_no_duplicates_no_gaps(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("idem")
    embedded_cluster.create_topic(topic, 2)
    embedded_cluster.push_request_errors(
        "Produce",
        NOT_LEADER_OR_FOLLOWER,
        0,
        REQUEST_TIMED_OUT,
        NOT_ENOUGH_REPLICAS,
        0,
        0,
        REQUEST_TIMED_OUT,
    )
    stats = await _produce(make_producer, topic, 400, enable_idempotence=True)
    assert stats.retries >= 4  # one per injected error at least
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 400)
    _check_exactly_once(records, 400)


async def test_lost_responses_are_retried_with_the_same_sequence(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    """The broker stores a batch but its response comes too late: the batch is resent.

    A Kafka broker drops the resent batch as a duplicate because it carries the same
    producer id, epoch and sequence numbers.  librdkafka's mock broker (2.16) does not
    check sequences and stores it twice, so this test reads the stored batch headers
    and checks that every extra copy is an exact duplicate by those fields, and that
    without the copies the log has no gap and no duplicate.
    """
    topic = unique("late")
    embedded_cluster.create_topic(topic, 2)
    for broker in embedded_cluster.brokers:
        embedded_cluster.push_broker_request_errors(broker, "Produce", (0, 0), (0, 1500))
    await _produce(make_producer, topic, 200, enable_idempotence=True, request_timeout_ms=700)
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 200)
    by_offset = {(r.partition, r.offset): r.value for r in records}
    resent = 0
    for p in (0, 1):
        batches = await raw_batches(embedded_cluster, topic, p)
        seen: set[tuple[int, int, int]] = set()
        values: list[bytes | None] = []
        next_seq = 0
        for base_offset, pid, epoch, seq, count in batches:
            assert pid >= 0 and epoch >= 0
            if (pid, epoch, seq) in seen:
                resent += 1
                continue
            assert seq == next_seq  # contiguous sequence numbers
            next_seq += count
            seen.add((pid, epoch, seq))
            values += [by_offset[(p, base_offset + i)] for i in range(count)]
        assert values == [b"%06d" % i for i in range(p, 200, 2)]
    assert resent >= 1  # the late responses did cause resends


async def test_out_of_order_sequence_resets_the_producer_id(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("oos")
    embedded_cluster.create_topic(topic, 2)
    embedded_cluster.push_request_errors("Produce", 0, OUT_OF_ORDER_SEQUENCE_NUMBER, 0)
    embedded_cluster.push_request_errors("Produce", UNKNOWN_PRODUCER_ID)
    stats = await _produce(make_producer, topic, 100, enable_idempotence=True)
    assert stats.retries >= 2
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 100)
    _check_exactly_once(records, 100)
