"""Transactions against the embedded cluster (librdkafka's mock transaction coordinator).

The mock writes COMMIT/ABORT markers with a CRC of 0 and lists no aborted transactions in
Fetch responses (see tests/consumer/test_corrupt_and_transactions.py): direct
read_committed reads use ``check_crcs=False``, and aborted records are checked in the
stored batches (an ABORT marker after them) and through the consumer tests' TxnProxy,
which adds the aborted transactions a real broker lists. The mock also serves records of
an open transaction to read_committed consumers (it keeps no last stable offset), so that
a transaction stays invisible until it commits cannot be tested here.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rackafka import TopicPartition
from rackafka.errors import IllegalOperation
from rackafka.testing import EmbeddedCluster
from tests.consumer._txn_proxy import TxnProxy

from ._helpers import raw_batches, read_rackafka, unique
from .conftest import MakeProducer

CONTROL_ABORT, CONTROL_COMMIT = 0, 1

pytestmark = pytest.mark.fault_injection


async def test_commit_and_abort(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("txn")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(transactional_id=unique("tx"), linger_ms=2)
    await producer.start()
    with pytest.raises(IllegalOperation):
        await producer.send(topic, b"outside")

    async with producer.transaction():
        committed1 = [await producer.send(topic, b"c1-%d" % i) for i in range(5)]
    await producer.begin_transaction()
    aborted = [await producer.send(topic, b"a-%d" % i) for i in range(4)]
    await asyncio.gather(*aborted)
    await producer.abort_transaction()
    with pytest.raises(RuntimeError):
        async with producer.transaction():
            await producer.send(topic, b"a-raised")
            raise RuntimeError("boom")
    await producer.begin_transaction()
    committed2 = [await producer.send(topic, b"c2-%d" % i) for i in range(3)]
    await producer.commit_transaction()
    c1 = [m.offset for m in await asyncio.gather(*committed1)]
    a = [m.offset for m in await asyncio.gather(*aborted)]
    c2 = [m.offset for m in await asyncio.gather(*committed2)]

    # The stored log: transactional batches, then the right marker after each transaction.
    attrs: list[tuple[int, int, int]] = []
    await raw_batches(embedded_cluster, topic, 0, attributes=attrs)
    markers = [(off, ctype) for off, at, ctype in attrs if at & 0x20]
    assert [t for _, t in markers] == [
        CONTROL_COMMIT,
        CONTROL_ABORT,
        CONTROL_ABORT,
        CONTROL_COMMIT,
    ]
    assert markers[0][0] == c1[-1] + 1 and markers[1][0] == a[-1] + 1
    assert all(at & 0x10 for _, at, _ in attrs)  # every batch is transactional

    # read_uncommitted sees everything; read_committed through a proxy that lists the
    # aborted transactions as a real broker does sees only the committed records.
    everything = await read_rackafka(
        embedded_cluster.bootstrap_servers, topic, 13, check_crcs=False
    )
    assert len(everything) == 13
    aborted_ranges = {topic: {0: [(a[0], markers[1][0]), (markers[1][0] + 1, markers[2][0])]}}
    brokers = {i: (b.host, b.port) for i, b in embedded_cluster.brokers.items()}
    async with TxnProxy(brokers, aborted_ranges) as proxy:
        committed = await read_rackafka(
            proxy.bootstrap_servers, topic, 8, isolation_level="read_committed"
        )
    assert [r.value for r in committed] == [b"c1-%d" % i for i in range(5)] + [
        b"c2-%d" % i for i in range(3)
    ]
    assert c2[0] > markers[2][0]


async def test_send_offsets_to_transaction(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    """AddOffsetsToTxn goes to the transaction coordinator, TxnOffsetCommit to the group's.

    The mock accepts both but never applies transactional offsets to the group (the same
    with confluent-kafka's producer), so the requests are checked, not the group's offsets.
    """
    topic = unique("offsets")
    embedded_cluster.create_topic(topic, 1)
    group = unique("group")
    txn_id = unique("tx")
    embedded_cluster.set_coordinator("transaction", txn_id, 2)
    embedded_cluster.set_coordinator("group", group, 3)
    producer = make_producer(transactional_id=txn_id)
    await producer.start()
    with pytest.raises(IllegalOperation):
        await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, group)
    embedded_cluster.start_request_tracking()
    async with producer.transaction():
        await producer.send(topic, b"out")
        await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 17}, group)
        with pytest.raises(ValueError):
            await producer.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, "")
    by_api = {(r.api_name, r.broker_id) for r in embedded_cluster.requests()}
    embedded_cluster.stop_request_tracking()
    assert ("AddOffsetsToTxn", 2) in by_api
    assert ("TxnOffsetCommit", 3) in by_api
    assert ("EndTxn", 2) in by_api
    assert ("AddPartitionsToTxn", 2) in by_api


async def test_transactions_need_transactional_id(make_producer: MakeProducer) -> None:
    producer = make_producer()
    await producer.start()
    with pytest.raises(IllegalOperation):
        await producer.begin_transaction()


async def _markers(cluster: EmbeddedCluster, topic: str) -> list[int]:
    """The control types of the transaction markers stored in partition 0, in order."""
    attrs: list[tuple[int, int, int]] = []
    await raw_batches(cluster, topic, 0, attributes=attrs)
    return [ctype for _off, at, ctype in attrs if at & 0x20]


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
async def test_sending_while_the_transaction_ends_is_refused(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, commit: bool
) -> None:
    """From the call of commit_transaction()/abort_transaction() on, send() and
    send_batch() raise IllegalOperation (as aiokafka): a record sent then would belong to
    no transaction."""
    topic = unique("ending")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(transactional_id=unique("tx"))
    await producer.start()
    batch = producer.create_batch()
    batch.append(timestamp=None, key=None, value=b"batched")
    await producer.begin_transaction()
    await producer.send(topic, b"in the transaction", partition=0)
    embedded_cluster.set_broker_rtt(None, 300)  # the end takes a while
    ending = asyncio.ensure_future(
        producer.commit_transaction() if commit else producer.abort_transaction()
    )
    await asyncio.sleep(0.05)
    assert not ending.done()
    with pytest.raises(IllegalOperation):
        await producer.send(topic, b"too late", partition=0)
    with pytest.raises(IllegalOperation):
        await producer.send_batch(batch, topic, partition=0)
    await asyncio.wait_for(ending, 30)
    embedded_cluster.set_broker_rtt(None, 0)
    with pytest.raises(IllegalOperation):  # the next transaction is not begun
        await producer.send(topic, b"outside", partition=0)
    assert await _markers(embedded_cluster, topic) == [CONTROL_COMMIT if commit else CONTROL_ABORT]
    records = await read_rackafka(embedded_cluster.bootstrap_servers, topic, 1, check_crcs=False)
    assert [r.value for r in records] == [b"in the transaction"]


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
async def test_a_cancelled_commit_or_abort_still_ends_the_transaction(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer, commit: bool
) -> None:
    """Cancelling the caller of commit_transaction()/abort_transaction() does not leave the
    transaction half-ended: the end goes on, and the next begin_transaction() works."""
    topic = unique("cancelled")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(transactional_id=unique("tx"))
    await producer.start()
    await producer.begin_transaction()
    first = await producer.send(topic, b"first", partition=0)
    embedded_cluster.set_broker_rtt(None, 200)
    ending = asyncio.ensure_future(
        producer.commit_transaction() if commit else producer.abort_transaction()
    )
    await asyncio.sleep(0.02)
    ending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await ending
    await asyncio.wait_for(producer.begin_transaction(), 30)  # waits for the end to finish
    assert first.done()
    embedded_cluster.set_broker_rtt(None, 0)
    await producer.send(topic, b"second", partition=0)
    await asyncio.wait_for(producer.commit_transaction(), 30)
    assert await _markers(embedded_cluster, topic) == [
        CONTROL_COMMIT if commit else CONTROL_ABORT,
        CONTROL_COMMIT,
    ]


async def test_offsets_keyed_by_aiokafkas_topic_partitions(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    """A consume-transform-produce loop that keeps aiokafka's consumer and swaps in our
    producer: the offsets come keyed by aiokafka's TopicPartition (and may be aiokafka's
    OffsetAndMetadata); they reach the group's coordinator in the transaction."""
    aiokafka = pytest.importorskip("aiokafka", reason="aiokafka is not installed")
    topic, out = unique("in"), unique("out")
    embedded_cluster.create_topic(topic, 1)
    embedded_cluster.create_topic(out, 1)
    group, txn_id = unique("group"), unique("tx")
    embedded_cluster.set_coordinator("transaction", txn_id, 2)
    embedded_cluster.set_coordinator("group", group, 3)
    await embedded_cluster.aproduce(topic, 5, partition=0)
    consumer = aiokafka.AIOKafkaConsumer(
        topic,
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        got: dict[Any, list[Any]] = {}
        for _ in range(50):
            got = await consumer.getmany(timeout_ms=200)
            if got:
                break
        assert got, "aiokafka's consumer read nothing"
        producer = make_producer(transactional_id=txn_id)
        await producer.start()
        embedded_cluster.start_request_tracking()
        async with producer.transaction():
            offsets: dict[Any, Any] = {}
            for tp, records in got.items():
                assert type(tp) is aiokafka.TopicPartition
                for record in records:
                    await producer.send(out, record.value, partition=0)
                offsets[tp] = records[-1].offset + 1
            await producer.send_offsets_to_transaction(offsets, group)
            theirs = aiokafka.structs.OffsetAndMetadata(records[-1].offset + 1, "meta")
            await producer.send_offsets_to_transaction({tp: theirs}, group)
        sent = {(r.api_name, r.broker_id) for r in embedded_cluster.requests()}
        embedded_cluster.stop_request_tracking()
    finally:
        await consumer.stop()
    assert ("TxnOffsetCommit", 3) in sent
    assert ("EndTxn", 2) in sent
    with pytest.raises(TypeError):
        async with producer.transaction():
            await producer.send_offsets_to_transaction({(topic, 0): 1}, group)  # type: ignore[dict-item]
