"""Transactions of the producer: coordinator, partitions in the transaction, commit/abort.

Drives AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn with the
transaction coordinator; the sender asks it which partitions may be sent.  It never
builds record batches.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rackafka._backoff import Backoff, BackoffPolicy
from rackafka.client import KafkaClient
from rackafka.errors import (
    ConcurrentTransactions,
    IllegalOperation,
    KafkaError,
    KafkaTimeoutError,
    ProducerFenced,
    for_code,
)
from rackafka.producer.sender import ProducerIdState
from rackafka.protocol.apis.transactions import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
)
from rackafka.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger("rackafka.producer")

__all__ = ["ENDING", "IN_TRANSACTION", "READY", "TransactionManager"]

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
#: The first wait when the first AddPartitionsToTxn of a transaction meets
#: CONCURRENT_TRANSACTIONS: the previous transaction is still being completed, which takes
#: milliseconds (the Java producer retries after 20 ms rather than retry_backoff_ms).
_PREVIOUS_TXN_COMPLETING_MS = 20

READY = "ready"
IN_TRANSACTION = "in_transaction"
ENDING = "ending"


class TransactionManager:
    """The state of one transactional producer.

    Every retry (a request that failed, a response with a retriable error) waits by
    ``retry_policy`` (default: the client's, ``retry_backoff_ms`` doubling up to
    ``retry_backoff_max_ms``) and gives up after ``request_timeout`` seconds.
    """

    def __init__(
        self,
        client: KafkaClient,
        pid: ProducerIdState,
        *,
        request_timeout: float,
        retry_policy: BackoffPolicy | None = None,
    ) -> None:
        assert pid.transactional_id is not None
        self.client = client
        self.pid = pid
        self.transactional_id: str = pid.transactional_id
        self.retry_policy = retry_policy if retry_policy is not None else client.retry_policy
        #: The policy of the first AddPartitionsToTxn of a transaction refused with
        #: CONCURRENT_TRANSACTIONS: a short first wait, then as ``retry_policy``.
        self.completing_policy = BackoffPolicy(
            min(_PREVIOUS_TXN_COMPLETING_MS, self.retry_policy.initial * 1000),
            self.retry_policy.maximum * 1000,
            multiplier=self.retry_policy.multiplier,
            jitter=self.retry_policy.jitter,
        )
        self.request_timeout = request_timeout
        self.state = READY
        self.coordinator: int | None = None
        #: Partitions the coordinator knows to be in the current transaction.
        self.added: set[TopicPartition] = set()
        self._adding: asyncio.Task[None] | None = None
        self.error: BaseException | None = None

    # -- coordinator -------------------------------------------------------------

    async def coordinator_node(self) -> int:
        if self.coordinator is None:
            self.coordinator = await self.client.find_coordinator(
                self.transactional_id, KEY_TYPE_TRANSACTION, self.request_timeout
            )
        return self.coordinator

    def _in_txn(self, api: Any, **fields: Any) -> Any:
        """A request of ``api`` naming this producer's transaction, with ``fields``."""
        return api.Request(
            transactional_id=self.transactional_id,
            producer_id=self.pid.producer_id,
            producer_epoch=self.pid.producer_epoch,
            **fields,
        )

    async def _request(self, api: Any, build: Callable[[], Any], node: int | None = None) -> Any:
        """Send to the transaction coordinator (or ``node``), retrying while it moves."""
        deadline = time.monotonic() + self.request_timeout
        backoff = self.retry_policy.start()
        while True:
            target = node if node is not None else await self.coordinator_node()
            try:
                return await self.client.send(target, api, build())
            except KafkaError as exc:
                if time.monotonic() > deadline:
                    raise
                log.debug("%s failed (%s); retrying", api.name, exc)
                if node is None:
                    self.coordinator = None
                await asyncio.sleep(backoff.next())

    async def _until_done(
        self,
        what: str,
        attempt: Callable[[], Awaitable[bool]],
        policy: Callable[[], BackoffPolicy] | None = None,
    ) -> None:
        """Run ``attempt`` until it returns ``True`` (done), waiting between attempts by
        :attr:`retry_policy` (or by the one ``policy()`` picks after the first attempt).

        Raises:
            KafkaTimeoutError: not done within ``request_timeout``.
        """
        backoff: Backoff | None = None
        deadline = time.monotonic() + self.request_timeout
        while not await attempt():
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"{what} did not succeed in time")
            if backoff is None:
                backoff = (self.retry_policy if policy is None else policy()).start()
            await asyncio.sleep(backoff.next())

    def _check(self, code: int, what: str) -> bool:
        """``True`` to retry; raises for fatal codes."""
        if not code:
            return False
        err = for_code(code)
        if err.producer_fenced:
            self.error = ProducerFenced()
            raise self.error
        if err.coordinator_moved:
            # NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT: look the
            # coordinator up again before the retry (after a time-out it is most often
            # the same one: one FindCoordinator more).
            self.coordinator = None
            return True
        if err.client_retriable:  # CONCURRENT_TRANSACTIONS among them
            return True
        raise err(f"{what} failed for transactional_id {self.transactional_id!r}")

    # -- transaction lifecycle ---------------------------------------------------

    def begin(self) -> None:
        if self.error is not None:
            raise self.error
        if self.state != READY:
            raise IllegalOperation(f"Invalid state transition {self.state} -> in_transaction")
        self.state = IN_TRANSACTION
        self.added.clear()

    def can_send(self, tp: TopicPartition) -> bool:
        return tp in self.added

    def add_partitions(self, tps: set[TopicPartition], wakeup: Callable[[], None]) -> None:
        """Start adding ``tps`` to the transaction (once at a time); ``wakeup`` when done."""
        if self._adding is not None and not self._adding.done():
            return
        self._adding = asyncio.get_running_loop().create_task(self._add(set(tps)))

        def added(task: asyncio.Task[None]) -> None:
            if not task.cancelled():
                task.exception()  # kept in self.error, raised by the producer's next call
            wakeup()

        self._adding.add_done_callback(added)

    async def _add(self, tps: set[TopicPartition]) -> None:
        topics: dict[str, list[int]] = {}
        for tp in sorted(tps):
            topics.setdefault(tp.topic, []).append(tp.partition)
        # The first partitions of a transaction refused with CONCURRENT_TRANSACTIONS: the
        # previous transaction is still completing, retry soon (completing_policy).
        completing = False
        first = not self.added

        async def attempt() -> bool:
            nonlocal completing, first
            resp = await self._request(
                ADD_PARTITIONS_TO_TXN,
                lambda: self._in_txn(
                    ADD_PARTITIONS_TO_TXN,
                    topics=[{"name": t, "partitions": p} for t, p in topics.items()],
                ),
            )
            done = True
            for topic in resp.results:
                for part in topic.results:
                    if self._check(part.error_code, "AddPartitionsToTxn"):
                        done = False
                        if first and for_code(part.error_code) is ConcurrentTransactions:
                            completing = True
                    else:
                        self.added.add(TopicPartition(topic.name, part.partition_index))
            first = False
            return done

        def policy() -> BackoffPolicy:
            return self.completing_policy if completing else self.retry_policy

        try:
            await self._until_done("AddPartitionsToTxn", attempt, policy)
        except BaseException as exc:
            if not isinstance(exc, asyncio.CancelledError):
                self.error = self.error or exc
            raise

    def start_end(self, commit: bool) -> None:
        """The transaction is ending (no more records): :meth:`end` follows once every
        batch is delivered; :meth:`end_failed` if it cannot be ended.

        Raises:
            IllegalOperation: no transaction is open.
        """
        if self.error is not None and commit:
            raise self.error
        if self.state != IN_TRANSACTION:
            raise IllegalOperation(
                f"Invalid state transition {self.state} -> {'commit' if commit else 'abort'}"
            )
        self.state = ENDING

    def end_failed(self) -> None:
        """Ending failed: the transaction is open again (to be aborted or retried)."""
        if self.state == ENDING:
            self.state = IN_TRANSACTION

    async def end(self, commit: bool) -> None:
        """EndTxn (commit or abort), after :meth:`start_end` and the last delivery."""
        if self.state != ENDING:
            raise IllegalOperation(
                f"Invalid state transition {self.state} -> {'commit' if commit else 'abort'}"
            )
        try:
            if self.added:
                await self._retrying(
                    END_TXN,
                    lambda: self._in_txn(END_TXN, committed=commit),
                    "EndTxn",
                )
        except BaseException:
            self.state = IN_TRANSACTION
            raise
        self.state = READY
        self.added.clear()

    async def _retrying(self, api: Any, build: Callable[[], Any], what: str) -> None:
        async def attempt() -> bool:
            resp = await self._request(api, build)
            return not self._check(resp.error_code, what)

        await self._until_done(what, attempt)

    async def send_offsets(
        self, offsets: dict[TopicPartition, int | OffsetAndMetadata], group_id: str
    ) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit to the group's coordinator."""
        if self.state != IN_TRANSACTION:
            raise IllegalOperation("Not in the middle of a transaction")
        await self._retrying(
            ADD_OFFSETS_TO_TXN,
            lambda: self._in_txn(ADD_OFFSETS_TO_TXN, group_id=group_id),
            "AddOffsetsToTxn",
        )
        # The coordinator now has a partition of __consumer_offsets in the transaction.
        self.added.add(TopicPartition("__consumer_offsets", -1))
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, value in sorted(offsets.items()):
            if isinstance(value, OffsetAndMetadata):
                offset, metadata = value.offset, value.metadata
            else:
                offset, metadata = int(value), ""
            topics.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": offset,
                    "committed_metadata": metadata,
                }
            )

        async def attempt() -> bool:
            # The group's coordinator is looked up for every attempt.
            group_node = await self.client.find_coordinator(
                group_id, KEY_TYPE_GROUP, self.request_timeout
            )
            resp = await self._request(
                TXN_OFFSET_COMMIT,
                lambda: self._in_txn(
                    TXN_OFFSET_COMMIT,
                    group_id=group_id,
                    topics=[{"name": t, "partitions": p} for t, p in topics.items()],
                ),
                node=group_node,
            )
            done = True
            for topic in resp.topics:
                for part in topic.partitions:
                    if part.error_code:
                        err = for_code(part.error_code)
                        if err.producer_fenced:
                            self.error = ProducerFenced()
                            raise self.error
                        if not (err.client_retriable or err.coordinator_moved):
                            raise err(f"TxnOffsetCommit for group {group_id!r}")
                        done = False
            return done

        await self._until_done("TxnOffsetCommit", attempt)
