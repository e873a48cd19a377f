"""Corrupt record batches and transactions, end to end against Kafka protocol peers.

Corrupt batches are written into librdkafka's mock broker with a raw Produce request (it
stores produced batches as they are; a real broker would refuse them), so those tests use
``embedded_cluster`` and are marked ``fault_injection``.

Transactions come from ``produce_transactional`` (a transactional confluent-kafka
producer). Two quirks of the mock (librdkafka 2.16) shape these tests:

* its Fetch responses carry no ``aborted_transactions``, even with
  ``isolation_level=1`` (docs/testing.rst), so the filtering of aborted records is
  tested through :mod:`tests.consumer._txn_proxy`, a TCP proxy that adds to each
  read_committed Fetch response the aborted transactions a real broker would list;
* the COMMIT/ABORT control batches it writes carry a CRC of 0 (a real broker writes their
  CRC-32C): a consumer that checks CRCs stops there with CorruptRecordException (tested
  below). Direct reads of transactional data from the mock therefore use
  ``check_crcs=False``; the proxy writes the real CRC, so reads through it check CRCs.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import crc32c
import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.errors import CorruptRecordException
from rackafka.net.connection import Connection
from rackafka.protocol.apis.fetch import FETCH, partition_fetch
from rackafka.protocol.apis.produce import PRODUCE
from rackafka.records import CONTROL_ABORT, CONTROL_COMMIT, encode_batch, encode_control_batch
from rackafka.structs import ConsumerRecord
from rackafka.testing import EmbeddedCluster, TransactionalProduceResult, default_value

from ._txn_proxy import TxnProxy

WAIT = 15.0
#: The CRC-32C of a record batch v2 covers everything from the attributes (byte 21) on.
CRC_START = 21

Records = dict[TopicPartition, list[ConsumerRecord[Any, Any]]]
Make = Callable[..., AIOKafkaConsumer[Any, Any]]


def unique(base: str) -> str:
    return f"{base}-{uuid.uuid4().hex[:8]}"


async def _factory(cluster: Any) -> AsyncIterator[Make]:
    made: list[AIOKafkaConsumer[Any, Any]] = []

    def make(**kwargs: Any) -> AIOKafkaConsumer[Any, Any]:
        kwargs.setdefault("bootstrap_servers", cluster.bootstrap_servers)
        kwargs.setdefault("auto_offset_reset", "earliest")
        kwargs.setdefault("fetch_max_wait_ms", 100)
        consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(**kwargs)
        made.append(consumer)
        return consumer

    try:
        yield make
    finally:
        for consumer in made:
            await consumer.stop()


@pytest.fixture
async def make(kafka_cluster: Any) -> AsyncIterator[Make]:
    async for factory in _factory(kafka_cluster):
        yield factory


@pytest.fixture
async def make_embedded(embedded_cluster: EmbeddedCluster) -> AsyncIterator[Make]:
    async for factory in _factory(embedded_cluster):
        yield factory


async def collect(consumer: AIOKafkaConsumer[Any, Any], count: int) -> Records:
    got: Records = {}
    total = 0

    async def run() -> None:
        nonlocal total
        while total < count:
            for tp, recs in (await consumer.getmany(timeout_ms=200)).items():
                got.setdefault(tp, []).extend(recs)
                total += len(recs)

    try:
        await asyncio.wait_for(run(), WAIT)
    except asyncio.TimeoutError:
        pytest.fail(f"only {total} of {count} records within {WAIT} s: {offsets(got)}")
    return got


def offsets(records: Records) -> dict[TopicPartition, list[int]]:
    return {tp: [r.offset for r in recs] for tp, recs in records.items()}


async def assert_no_more(consumer: AIOKafkaConsumer[Any, Any]) -> None:
    extra = await consumer.getmany(timeout_ms=300)
    assert extra == {}, f"unexpected records: {offsets(extra)}"


# -- raw requests to the mock ------------------------------------------------------------------


async def _leader_connection(cluster: EmbeddedCluster, topic: str, partition: int) -> Connection:
    broker = cluster.brokers[cluster.partition_info(topic, partition).leader]
    return await Connection.open(broker.host, broker.port)


async def produce_raw(cluster: EmbeddedCluster, topic: str, partition: int, batch: bytes) -> int:
    """Send ``batch`` as is in a Produce request to the partition leader; its base offset."""
    conn = await _leader_connection(cluster, topic, partition)
    try:
        response = await conn.request(
            PRODUCE,
            PRODUCE.Request(
                transactional_id=None,
                acks=-1,
                timeout_ms=5000,
                topic_data=[
                    {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
                ],
            ),
        )
    finally:
        await conn.aclose()
    result = response.responses[0].partition_responses[0]
    assert result.error_code == 0, result
    return int(result.base_offset)


async def fetch_raw(cluster: EmbeddedCluster, topic: str, partition: int, offset: int) -> bytes:
    """The records bytes a Fetch v11 at ``offset`` returns from the leader."""
    conn = await _leader_connection(cluster, topic, partition)
    try:
        response = await conn.request(
            FETCH, partition_fetch(topic, partition, offset, max_wait_ms=100), version=11
        )
    finally:
        await conn.aclose()
    data = response.responses[0].partitions[0]
    assert data.error_code == 0, data
    return bytes(data.records or b"")


def corrupt_batch(first_index: int, count: int = 3) -> tuple[bytes, bytes]:
    """A good batch of ``count`` records, and a copy whose last value byte is flipped.

    The flipped byte is inside the CRC-covered area and inside a value, so only the CRC
    tells that the batch is corrupt.
    """
    now = int(time.time() * 1000)
    good = encode_batch(
        [
            (now, f"k{first_index + i}".encode(), f"value-{first_index + i}".encode())
            for i in range(count)
        ]
    )
    bad = bytearray(good)
    bad[-2] ^= 0xFF  # the last record ends with its value's last byte, then 0 headers
    return good, bytes(bad)


# -- corrupt batches -----------------------------------------------------------------------------


@pytest.mark.fault_injection
async def test_the_mock_stores_a_corrupt_batch_as_is(embedded_cluster: EmbeddedCluster) -> None:
    embedded_cluster.create_topic("raw", 1)
    good, bad = corrupt_batch(0)
    assert crc32c.crc32c(good[CRC_START:]) == int.from_bytes(good[17:21], "big")
    assert crc32c.crc32c(bad[CRC_START:]) != int.from_bytes(bad[17:21], "big")
    base = await produce_raw(embedded_cluster, "raw", 0, bad)
    assert base == 0
    stored = await fetch_raw(embedded_cluster, "raw", 0, 0)
    # The broker sets the base offset (bytes 0-7) and the leader epoch (12-15); the
    # length, magic, CRC and everything it covers come back exactly as sent.
    assert len(stored) == len(bad)
    assert stored[8:12] == bad[8:12]
    assert stored[16:] == bad[16:]


@pytest.mark.fault_injection
async def test_corrupt_batch_raises_after_the_good_records_until_seek_past_it(
    embedded_cluster: EmbeddedCluster, make_embedded: Make
) -> None:
    embedded_cluster.create_topic("crc", 1)
    await embedded_cluster.aproduce("crc", 5, partition=0)
    _good, bad = corrupt_batch(5)
    assert await produce_raw(embedded_cluster, "crc", 0, bad) == 5  # offsets 5-7
    await embedded_cluster.aproduce("crc", 5, partition=0)  # offsets 8-12
    tp = TopicPartition("crc", 0)
    consumer = make_embedded()
    await consumer.start()
    consumer.assign([tp])

    delivered: list[int] = []

    async def until_error() -> CorruptRecordException:
        while True:
            try:
                batch = await consumer.getmany(timeout_ms=200)
            except CorruptRecordException as exc:
                return exc
            delivered.extend(r.offset for r in batch.get(tp, []))

    error = await asyncio.wait_for(until_error(), WAIT)
    assert delivered == [0, 1, 2, 3, 4]  # every good record before it, nothing after
    assert "crc-0" in str(error) and "offset 5" in str(error)
    assert await consumer.position(tp) == 5
    # Never skipped silently: raised again on every call, by getmany and getone.
    for _ in range(2):
        with pytest.raises(CorruptRecordException, match="offset 5"):
            await asyncio.wait_for(consumer.getmany(timeout_ms=int(WAIT * 1000)), WAIT)
    with pytest.raises(CorruptRecordException, match="offset 5"):
        await asyncio.wait_for(consumer.getone(), WAIT)
    assert await consumer.position(tp) == 5
    # Inside the corrupt batch is still corrupt.
    consumer.seek(tp, 6)
    with pytest.raises(CorruptRecordException):
        await asyncio.wait_for(consumer.getmany(timeout_ms=int(WAIT * 1000)), WAIT)
    # Past it, consumption resumes.
    consumer.seek(tp, 8)
    assert offsets(await collect(consumer, 5)) == {tp: [8, 9, 10, 11, 12]}
    await assert_no_more(consumer)


@pytest.mark.fault_injection
async def test_a_corrupt_partition_does_not_stop_or_lose_the_others(
    embedded_cluster: EmbeddedCluster, make_embedded: Make
) -> None:
    embedded_cluster.create_topic("mixed", 2)
    _good, bad = corrupt_batch(0)
    await produce_raw(embedded_cluster, "mixed", 0, bad)
    await embedded_cluster.aproduce("mixed", 30, partition=1, batch_size=1)
    tp0, tp1 = TopicPartition("mixed", 0), TopicPartition("mixed", 1)
    consumer = make_embedded()
    await consumer.start()
    consumer.assign([tp0, tp1])
    healthy: list[int] = []
    errors = 0

    async def run() -> None:
        nonlocal errors
        while len(healthy) < 30:
            try:
                batch = await consumer.getmany(timeout_ms=200)
            except CorruptRecordException as exc:
                assert "mixed-0" in str(exc)
                errors += 1
                continue
            assert tp0 not in batch
            healthy.extend(r.offset for r in batch.get(tp1, []))

    await asyncio.wait_for(run(), WAIT)
    assert healthy == list(range(30))
    assert errors >= 1


@pytest.mark.fault_injection
async def test_check_crcs_false_delivers_a_batch_with_a_bad_crc(
    embedded_cluster: EmbeddedCluster, make_embedded: Make
) -> None:
    embedded_cluster.create_topic("nocrc", 1)
    await embedded_cluster.aproduce("nocrc", 2, partition=0)
    _good, bad = corrupt_batch(2)
    assert await produce_raw(embedded_cluster, "nocrc", 0, bad) == 2
    await embedded_cluster.aproduce("nocrc", 2, partition=0)
    tp = TopicPartition("nocrc", 0)
    consumer = make_embedded(check_crcs=False)
    await consumer.start()
    consumer.assign([tp])
    records = (await collect(consumer, 7))[tp]
    assert [r.offset for r in records] == list(range(7))
    assert [r.key for r in records[2:5]] == [b"k2", b"k3", b"k4"]
    assert [r.value for r in records[2:4]] == [b"value-2", b"value-3"]
    assert records[4].value == b"value-" + bytes([ord("4") ^ 0xFF])  # the flipped byte
    assert records[5].value == default_value(0, 100)
    await assert_no_more(consumer)


@pytest.mark.fault_injection
async def test_malformed_records_raise_even_without_crc_checks(
    embedded_cluster: EmbeddedCluster, make_embedded: Make
) -> None:
    embedded_cluster.create_topic("malformed", 1)
    good, _bad = corrupt_batch(0)
    broken = bytearray(good)
    broken[61] = 0x7E  # the first record's length varint (61 = batch header size): 63 bytes
    assert await produce_raw(embedded_cluster, "malformed", 0, bytes(broken)) == 0
    tp = TopicPartition("malformed", 0)
    consumer = make_embedded(check_crcs=False)
    await consumer.start()
    consumer.assign([tp])
    for _ in range(2):
        with pytest.raises(CorruptRecordException, match="malformed-0"):
            await asyncio.wait_for(consumer.getmany(timeout_ms=int(WAIT * 1000)), WAIT)
    assert await consumer.position(tp) == 0


# -- transactions --------------------------------------------------------------------------------

TRANSACTIONS = [("commit", 4), ("abort", 3), ("commit", 2), ("abort", 5), ("commit", 3)]
VALUE_SIZE = 40


def produce_transactions(cluster: Any, topic: str) -> TransactionalProduceResult:
    cluster.create_topic(topic, 2)
    result: TransactionalProduceResult = cluster.produce_transactional(
        topic, TRANSACTIONS, partition="spread", value_size=VALUE_SIZE
    )
    return result


def indices(
    result: TransactionalProduceResult, partition: int, committed: bool | None
) -> list[int]:
    """Record numbers (as in default_value) written to ``partition`` ("spread": i % 2)."""
    out = []
    for t in result.transactions:
        if committed is None or t.committed == committed:
            out += [i for i in range(t.first_index, t.first_index + t.count) if i % 2 == partition]
    return sorted(out)


def data_offsets(result: TransactionalProduceResult, partition: int) -> list[int]:
    committed = result.committed_offsets(partition)
    aborted = [
        o for first, last in result.aborted_ranges(partition) for o in range(first, last + 1)
    ]
    return sorted(committed + aborted)


def aborted_map(
    topic: str, result: TransactionalProduceResult
) -> dict[str, dict[int, list[tuple[int, ...]]]]:
    out: dict[int, list[tuple[int, ...]]] = {}
    for t in result.transactions:
        if not t.committed:
            for p, first in t.first_offsets.items():
                out.setdefault(p, []).append((first, t.marker_offsets[p]))
    return {topic: out}


def check_values(records: Records, topic: str, expected: dict[int, list[int]]) -> None:
    """Each partition's records carry exactly the values of these record numbers, in order."""
    for p, numbers in expected.items():
        got = [r.value for r in records.get(TopicPartition(topic, p), [])]
        assert got == [default_value(i, VALUE_SIZE) for i in numbers], f"partition {p}"


@pytest.mark.parametrize("isolation_level", ["read_uncommitted", "read_committed"])
async def test_control_records_are_never_delivered(
    kafka_cluster: Any, make: Make, isolation_level: str
) -> None:
    topic = unique("txn-direct")
    result = produce_transactions(kafka_cluster, topic)
    embedded = isinstance(kafka_cluster, EmbeddedCluster)
    consumer = make(isolation_level=isolation_level, check_crcs=not embedded)
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in (0, 1)]
    consumer.assign(tps)
    if isolation_level == "read_uncommitted" or embedded:
        # read_uncommitted delivers aborted records too, as Kafka does. So does
        # read_committed against the mock, whose Fetch lists no aborted transactions.
        expected = {p: data_offsets(result, p) for p in (0, 1)}
        numbers = {p: indices(result, p, None) for p in (0, 1)}
    else:
        expected = {p: result.committed_offsets(p) for p in (0, 1)}
        numbers = {p: indices(result, p, True) for p in (0, 1)}
    got = await collect(consumer, sum(map(len, expected.values())))
    await assert_no_more(consumer)
    assert offsets(got) == {TopicPartition(topic, p): expected[p] for p in (0, 1)}
    for p in (0, 1):
        markers = set(result.marker_offsets(p))
        assert len(markers) == len(TRANSACTIONS)
        assert not markers & set(expected[p])
        # The position moved past the final marker: nothing is left to read.
        assert await consumer.position(TopicPartition(topic, p)) == max(markers) + 1
    check_values(got, topic, numbers)


@pytest.mark.fault_injection
async def test_the_mocks_control_batches_fail_crc_checks(
    embedded_cluster: EmbeddedCluster, make_embedded: Make
) -> None:
    """Documents the mock's zero CRC on markers, and that it is raised, never skipped."""
    embedded_cluster.create_topic("txn-crc", 1)
    result = embedded_cluster.produce_transactional("txn-crc", [("commit", 3)], partition=0)
    marker = result.marker_offsets(0)[0]
    tp = TopicPartition("txn-crc", 0)
    consumer = make_embedded()  # check_crcs=True
    await consumer.start()
    consumer.assign([tp])
    delivered: list[int] = []

    async def until_error() -> CorruptRecordException:
        while True:
            try:
                batch = await consumer.getmany(timeout_ms=200)
            except CorruptRecordException as exc:
                return exc
            delivered.extend(r.offset for r in batch.get(tp, []))

    error = await asyncio.wait_for(until_error(), WAIT)
    assert delivered == result.committed_offsets(0)
    assert f"offset {marker}" in str(error) and "CRC" in str(error)
    assert await consumer.position(tp) == marker


@pytest.mark.parametrize("isolation_level", ["read_committed", "read_uncommitted"])
async def test_read_committed_hides_exactly_the_aborted_records(
    kafka_cluster: Any, make: Make, isolation_level: str
) -> None:
    topic = unique("txn-proxy")
    result = produce_transactions(kafka_cluster, topic)
    brokers = {i: (b.host, b.port) for i, b in kafka_cluster.brokers.items()}
    async with TxnProxy(brokers, aborted_map(topic, result)) as proxy:
        consumer = make(bootstrap_servers=proxy.bootstrap_servers, isolation_level=isolation_level)
        await consumer.start()
        tps = [TopicPartition(topic, p) for p in (0, 1)]
        consumer.assign(tps)
        if isolation_level == "read_committed":
            expected = {p: result.committed_offsets(p) for p in (0, 1)}
            numbers = {p: indices(result, p, True) for p in (0, 1)}
        else:
            expected = {p: data_offsets(result, p) for p in (0, 1)}
            numbers = {p: indices(result, p, None) for p in (0, 1)}
        got = await collect(consumer, sum(map(len, expected.values())))
        await assert_no_more(consumer)
        for tp in tps:
            assert await consumer.position(tp) == max(result.marker_offsets(tp.partition)) + 1
        await consumer.stop()

    assert offsets(got) == {TopicPartition(topic, p): expected[p] for p in (0, 1)}
    check_values(got, topic, numbers)
    assert proxy.stats.metadata_rewritten > 0
    if isolation_level == "read_committed":
        # The proxy did send the aborted transactions (what the filtering relied on).
        assert proxy.stats.fetches_rewritten > 0
        for p in (0, 1):
            firsts = {first for _pid, first in proxy.stats.aborted_by_partition[(topic, p)]}
            assert firsts == {first for first, _last in result.aborted_ranges(p)}
    else:
        assert proxy.stats.aborted_sent == 0


@pytest.mark.fault_injection
@pytest.mark.parametrize("isolation_level", ["read_committed", "read_uncommitted"])
async def test_read_committed_with_interleaved_producers(
    embedded_cluster: EmbeddedCluster, make: Make, isolation_level: str
) -> None:
    """Producer 1000 aborts while producer 2000 commits, their batches interleaved."""
    embedded_cluster.create_topic("interleaved", 1)
    now = int(time.time() * 1000)
    a, b = 1000, 2000

    def txn(pid: int, seq: int, *values: bytes) -> bytes:
        return encode_batch(
            [(now, None, v) for v in values],
            transactional=True,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=seq,
        )

    log = [
        txn(a, 0, b"A0", b"A1"),  # 0-1
        txn(b, 0, b"B0"),  # 2
        txn(a, 2, b"A2"),  # 3
        encode_batch([(now, None, b"plain-1")]),  # 4
        encode_control_batch(CONTROL_ABORT, producer_id=a, producer_epoch=0, timestamp=now),  # 5
        txn(b, 1, b"B1", b"B2"),  # 6-7
        txn(a, 3, b"A3"),  # 8: a new transaction of producer 1000 ...
        encode_control_batch(CONTROL_COMMIT, producer_id=b, producer_epoch=0, timestamp=now),  # 9
        encode_control_batch(CONTROL_COMMIT, producer_id=a, producer_epoch=0, timestamp=now),  # 10
        encode_batch([(now, None, b"plain-2")]),  # 11
    ]
    for batch in log:
        await produce_raw(embedded_cluster, "interleaved", 0, batch)
    brokers = {i: (x.host, x.port) for i, x in embedded_cluster.brokers.items()}
    # (first offset, marker, producer id)
    aborted: dict[str, dict[int, list[tuple[int, ...]]]] = {"interleaved": {0: [(0, 5, a)]}}
    async with TxnProxy(brokers, aborted) as proxy:
        consumer = make(bootstrap_servers=proxy.bootstrap_servers, isolation_level=isolation_level)
        await consumer.start()
        tp = TopicPartition("interleaved", 0)
        consumer.assign([tp])
        if isolation_level == "read_committed":
            want = [b"B0", b"plain-1", b"B1", b"B2", b"A3", b"plain-2"]
        else:
            want = [b"A0", b"A1", b"B0", b"A2", b"plain-1", b"B1", b"B2", b"A3", b"plain-2"]
        got = (await collect(consumer, len(want)))[tp]
        await assert_no_more(consumer)
        assert await consumer.position(tp) == 12
        await consumer.stop()
    assert [r.value for r in got] == want
    assert [r.offset for r in got] == sorted(r.offset for r in got)
    if isolation_level == "read_committed":
        assert proxy.stats.aborted_sent > 0
