"""The producer's retries wait by the client's retry policy (retry_backoff_ms doubling up to
retry_backoff_max_ms, as the Java producer): transaction requests, InitProducerId and the
batches a broker refused. Waits are checked by the values the policy gave, never by timing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rackafka import errors
from rackafka.client import KafkaClient
from rackafka.producer.sender import ProducerIdState
from rackafka.producer.transaction_manager import TransactionManager
from rackafka.structs import TopicPartition
from rackafka.testing import EmbeddedCluster
from rackafka.testing.fake_broker import FakeBroker, FakeRequest
from tests._policies import RecordingPolicy

from ._helpers import unique
from .conftest import MakeProducer

TP = TopicPartition("t", 0)


class TxnBroker(FakeBroker):
    """A fake transaction coordinator that answers EndTxn and AddPartitionsToTxn with the
    error codes queued in :attr:`end_txn` and :attr:`add_partitions` (0 once empty)."""

    def __init__(self) -> None:
        super().__init__(topics={"t": 2})
        self.end_txn: list[int] = []
        self.add_partitions: list[int] = []

    def _default_EndTxn(self, request: FakeRequest) -> Any:
        return {"error_code": self.end_txn.pop(0) if self.end_txn else 0}

    def _default_AddPartitionsToTxn(self, request: FakeRequest) -> Any:
        code = self.add_partitions.pop(0) if self.add_partitions else 0
        return {
            "results": [
                {
                    "name": t.name,
                    "results": [{"partition_index": p, "error_code": code} for p in t.partitions],
                }
                for t in request.body.topics
            ]
        }


@pytest.fixture
async def coordinator() -> AsyncIterator[tuple[TxnBroker, KafkaClient]]:
    async with TxnBroker() as broker:
        client = KafkaClient(
            broker.bootstrap_servers, retry_backoff_ms=10, retry_backoff_max_ms=250
        )
        await client.bootstrap_cluster()
        try:
            yield broker, client
        finally:
            await client.close()


def manager(client: KafkaClient, policy: RecordingPolicy | None = None) -> TransactionManager:
    pid = ProducerIdState("tx", 60000)
    pid.producer_id, pid.producer_epoch = 7, 0
    return TransactionManager(client, pid, request_timeout=30.0, retry_policy=policy)


async def commit(txn: TransactionManager, broker: TxnBroker, *end_txn_errors: int) -> None:
    """Commit a transaction whose EndTxn is first answered with ``end_txn_errors``."""
    broker.end_txn = list(end_txn_errors)
    txn.begin()
    txn.added.add(TP)
    txn.start_end(True)
    await txn.end(True)


async def test_the_transaction_manager_waits_by_the_clients_retry_policy(
    coordinator: tuple[TxnBroker, KafkaClient],
) -> None:
    _broker, client = coordinator
    txn = manager(client)
    # retry_backoff_max_ms caps its waits (it used to be ten times retry_backoff_ms).
    assert txn.retry_policy is client.retry_policy
    assert (txn.retry_policy.initial, txn.retry_policy.maximum) == (0.01, 0.25)
    assert (txn.completing_policy.initial, txn.completing_policy.maximum) == (0.01, 0.25)
    slow = KafkaClient("127.0.0.1:1", retry_backoff_ms=100, retry_backoff_max_ms=1000)
    # The first wait after CONCURRENT_TRANSACTIONS on a transaction's first partitions.
    completing = manager(slow).completing_policy
    assert (completing.initial, completing.maximum, completing.jitter) == (0.02, 1.0, 0.2)


async def test_end_txn_retries_back_off_by_the_policy_and_start_over_per_request(
    coordinator: tuple[TxnBroker, KafkaClient],
) -> None:
    broker, client = coordinator
    policy = RecordingPolicy(10, 25)
    txn = manager(client, policy)
    await commit(txn, broker, *[errors.ConcurrentTransactions.errno] * 4)
    assert policy.waits == [(0, 0.01), (1, 0.02), (2, 0.025), (3, 0.025)]
    assert broker.count("EndTxn") == 5
    policy.waits.clear()
    await commit(txn, broker, errors.CoordinatorLoadInProgressError.errno)
    assert policy.waits == [(0, 0.01)]  # a new request starts from the first wait


async def test_request_timed_out_looks_the_coordinator_up_again_and_commits(
    coordinator: tuple[TxnBroker, KafkaClient],
) -> None:
    """REQUEST_TIMED_OUT counts as "the coordinator moved" (errors.py, as for groups): the
    retry follows one more FindCoordinator, which finds the same coordinator: harmless."""
    broker, client = coordinator
    txn = manager(client, RecordingPolicy(1, 5))
    await commit(txn, broker, errors.RequestTimedOutError.errno, errors.NotCoordinatorError.errno)
    assert broker.count("FindCoordinator") == 3  # the first look-up, then one per error
    assert broker.count("EndTxn") == 3
    assert txn.coordinator == broker.node_id
    assert txn.state == "ready"


async def test_a_fenced_producer_is_not_retried(
    coordinator: tuple[TxnBroker, KafkaClient],
) -> None:
    broker, client = coordinator
    txn = manager(client, RecordingPolicy(1, 5))
    with pytest.raises(errors.ProducerFenced):
        await commit(txn, broker, errors.ProducerFencedError.errno)
    assert txn.retry_policy.waits == []  # type: ignore[attr-defined]
    assert broker.count("EndTxn") == 1
    with pytest.raises(errors.ProducerFenced):
        txn.begin()  # the producer cannot go on


async def test_the_first_add_partitions_after_a_commit_retries_soon(
    coordinator: tuple[TxnBroker, KafkaClient],
) -> None:
    """CONCURRENT_TRANSACTIONS on the first partitions of a transaction: the previous one is
    still completing; the first retry comes after 20 ms, not retry_backoff_ms (as Java)."""
    broker, client = coordinator
    txn = manager(client, RecordingPolicy(100, 1000))
    completing = txn.completing_policy = RecordingPolicy(20, 1000)
    broker.add_partitions = [errors.ConcurrentTransactions.errno] * 2
    txn.begin()
    await txn._add({TP})
    assert txn.added == {TP}
    assert completing.waits == [(0, 0.02), (1, 0.04)]
    assert txn.retry_policy.waits == []  # type: ignore[attr-defined]
    # Partitions added later in the same transaction wait by the usual policy.
    broker.add_partitions = [errors.ConcurrentTransactions.errno]
    await txn._add({TopicPartition("t", 1)})
    assert txn.retry_policy.waits == [(0, 0.1)]  # type: ignore[attr-defined]
    assert completing.waits == [(0, 0.02), (1, 0.04)]


async def test_a_refused_batch_waits_longer_on_each_retry(
    embedded_cluster: EmbeddedCluster, make_producer: MakeProducer
) -> None:
    topic = unique("retried")
    embedded_cluster.create_topic(topic, 1)
    producer = make_producer(linger_ms=0, request_timeout_ms=30000)
    await producer.start()
    await producer.send_and_wait(topic, b"warm-up")
    sender = producer._sender
    assert sender is not None and sender.retry_policy is producer._client.retry_policy
    policy = sender.retry_policy = RecordingPolicy(5, 1000)
    refused = errors.NotEnoughReplicasError.errno
    embedded_cluster.push_partition_request_errors(topic, 0, "Produce", *[refused] * 3)
    meta = await producer.send_and_wait(topic, b"retried")
    assert meta.offset == 1
    assert policy.attempts() == [0, 1, 2]  # the batch's failures in a row
    assert producer.send_stats().retries == 3
