"""How records end when they cannot be delivered, and a producer that is never stopped.

As aiokafka: a record that cannot be delivered fails after ``request_timeout_ms`` with the
error that stopped it (the broker's, or the partition's missing leader), and a producer
dropped while started warns and is garbage-collected.
"""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from typing import Any

import pytest

from rackafka import AIOKafkaProducer
from rackafka.errors import (
    LeaderNotAvailableError,
    ProducerClosed,
    RequestTimedOutError,
)
from rackafka.testing import EmbeddedCluster

from ._helpers import read_rackafka, unique
from .conftest import MakeProducer

REQUEST_TIMED_OUT = 7

pytestmark = pytest.mark.fault_injection


async def test_a_partition_without_leader_fails_its_records_with_leader_not_available(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("leaderless")
    embedded_cluster.create_topic(topic, 2)
    producer = make_producer(request_timeout_ms=300, retry_backoff_ms=20)
    await producer.start()
    await producer.send_and_wait(topic, b"warm-up", partition=0)
    embedded_cluster.move_leader(topic, 0, None)
    started = time.monotonic()
    fut = await producer.send(topic, b"lost", partition=0)
    with pytest.raises(LeaderNotAvailableError):
        await fut
    assert time.monotonic() - started >= 0.25  # it waited request_timeout_ms for a leader
    # The other partition is not held up.
    meta = await producer.send_and_wait(topic, b"fine", partition=1)
    assert meta.partition == 1


async def test_a_record_the_broker_keeps_refusing_fails_with_the_brokers_error(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    """Retriable errors are retried until ``request_timeout_ms`` has passed; then the record
    fails with the broker's error itself (it used to be a KafkaTimeoutError)."""
    topic = unique("refused")
    embedded_cluster.create_topic(topic, 2)
    producer = make_producer(request_timeout_ms=400, retry_backoff_ms=50, linger_ms=5)
    await producer.start()
    await producer.send_and_wait(topic, b"warm-up", partition=0)
    embedded_cluster.push_partition_request_errors(topic, 0, "Produce", *[REQUEST_TIMED_OUT] * 200)
    started = time.monotonic()
    refused = await producer.send(topic, b"refused", partition=0)
    accepted = await producer.send(topic, b"accepted", partition=1)
    assert (await accepted).partition == 1
    with pytest.raises(RequestTimedOutError):
        await refused
    assert time.monotonic() - started >= 0.35
    assert producer.send_stats().retries >= 1  # it was retried before giving up


async def test_a_producer_dropped_without_stop_warns_and_is_collected(
    embedded_cluster: EmbeddedCluster,
) -> None:
    topic = unique("dropped")
    embedded_cluster.create_topic(topic, 1)
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=embedded_cluster.bootstrap_servers, linger_ms=60_000
    )
    await producer.start()
    delivered = await producer.send(topic, b"delivered")
    await producer.flush()  # sent at once, whatever linger_ms
    assert delivered.done()
    waiting = await producer.send(topic, b"still lingering")
    sender_task = producer._sender_task
    assert sender_task is not None
    ref = weakref.ref(producer)
    with pytest.warns(ResourceWarning, match="Unclosed AIOKafkaProducer"):
        del producer
        gc.collect()
    assert ref() is None
    # Its background work ends: the sender stops and what it held fails.
    with pytest.raises(ProducerClosed):
        await asyncio.wait_for(waiting, 10)
    await asyncio.wait_for(asyncio.wait([sender_task]), 10)
    assert sender_task.done()
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 1)
    assert [r.value for r in records] == [b"delivered"]


async def test_a_stopped_producer_is_collected_without_warning(
    embedded_cluster: EmbeddedCluster,
) -> None:
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=embedded_cluster.bootstrap_servers
    )
    await producer.start()
    await producer.stop()
    ref = weakref.ref(producer)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        del producer
        gc.collect()
    assert ref() is None


async def test_an_unexpected_error_while_sending_fails_records_with_a_kafka_error(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, monkeypatch: Any
) -> None:
    """A bug of ours while building a request fails the records with a KafkaError (the
    original as its cause), as aiokafka, so ``except KafkaError`` handlers see it; the
    producer goes on."""
    from rackafka.errors import KafkaError
    from rackafka.producer.sender import Sender

    topic = unique("unexpected")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer()
    await producer.start()

    def broken(self: Sender, batch: Any) -> bytes:
        raise KeyError("boom")

    with monkeypatch.context() as patch:
        patch.setattr(Sender, "_build", broken)
        with pytest.raises(KafkaError, match="Unexpected error during batch delivery") as info:
            await producer.send_and_wait(topic, b"x")
    assert isinstance(info.value.__cause__, KeyError)
    assert (await producer.send_and_wait(topic, b"y")).offset == 0
