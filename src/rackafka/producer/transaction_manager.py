"""Transactions of the producer: coordinator, partitions in the transaction, commit/abort.

Drives AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn with the
transaction coordinator; the sender asks it which partitions may be sent.  It never
builds record batches.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from rackafka.client import KafkaClient
from rackafka.errors import (
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
_CONCURRENT_TRANSACTIONS = 51
_COORDINATOR_GONE = (15, 16)  # COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_FENCED = (47, 90)  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED

READY = "ready"
IN_TRANSACTION = "in_transaction"
ENDING = "ending"


class TransactionManager:
    """The state of one transactional producer."""

    def __init__(
        self,
        client: KafkaClient,
        pid: ProducerIdState,
        *,
        retry_backoff: float,
        request_timeout: float,
    ) -> None:
        assert pid.transactional_id is not None
        self.client = client
        self.pid = pid
        self.transactional_id: str = pid.transactional_id
        self.retry_backoff = retry_backoff
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

    async def _request(self, api: Any, build: Callable[[], Any], node: int | None = None) -> Any:
        """Send to the transaction coordinator (or ``node``), retrying while it moves."""
        deadline = time.monotonic() + self.request_timeout
        delay = self.retry_backoff
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
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_backoff * 10)

    def _check(self, code: int, what: str) -> bool:
        """``True`` to retry; raises for fatal codes."""
        if code == 0:
            return False
        if code in _FENCED:
            self.error = ProducerFenced()
            raise self.error
        if code in _COORDINATOR_GONE:
            self.coordinator = None
            return True
        err = for_code(code)
        if err.retriable or code == _CONCURRENT_TRANSACTIONS:
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
        self._adding.add_done_callback(lambda _t: wakeup())

    async def _add(self, tps: set[TopicPartition]) -> None:
        topics: dict[str, list[int]] = {}
        for tp in sorted(tps):
            topics.setdefault(tp.topic, []).append(tp.partition)
        delay = self.retry_backoff
        deadline = time.monotonic() + self.request_timeout
        try:
            while True:
                resp = await self._request(
                    ADD_PARTITIONS_TO_TXN,
                    lambda: ADD_PARTITIONS_TO_TXN.Request(
                        transactional_id=self.transactional_id,
                        producer_id=self.pid.producer_id,
                        producer_epoch=self.pid.producer_epoch,
                        topics=[{"name": t, "partitions": p} for t, p in topics.items()],
                    ),
                )
                retry = False
                for topic in resp.results:
                    for part in topic.results:
                        if self._check(part.error_code, "AddPartitionsToTxn"):
                            retry = True
                        else:
                            self.added.add(TopicPartition(topic.name, part.partition_index))
                if not retry:
                    return
                if time.monotonic() > deadline:
                    raise KafkaTimeoutError("AddPartitionsToTxn did not succeed in time")
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.retry_backoff * 10)
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
                    lambda: END_TXN.Request(
                        transactional_id=self.transactional_id,
                        producer_id=self.pid.producer_id,
                        producer_epoch=self.pid.producer_epoch,
                        committed=commit,
                    ),
                    "EndTxn",
                )
        except BaseException:
            self.state = IN_TRANSACTION
            raise
        self.state = READY
        self.added.clear()

    async def _retrying(self, api: Any, build: Callable[[], Any], what: str) -> Any:
        delay = self.retry_backoff
        deadline = time.monotonic() + self.request_timeout
        while True:
            resp = await self._request(api, build)
            if not self._check(resp.error_code, what):
                return resp
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"{what} did not succeed in time")
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.retry_backoff * 10)

    async def send_offsets(
        self, offsets: dict[TopicPartition, int | OffsetAndMetadata], group_id: str
    ) -> None:
        """AddOffsetsToTxn, then TxnOffsetCommit to the group's coordinator."""
        if self.state != IN_TRANSACTION:
            raise IllegalOperation("Not in the middle of a transaction")
        await self._retrying(
            ADD_OFFSETS_TO_TXN,
            lambda: ADD_OFFSETS_TO_TXN.Request(
                transactional_id=self.transactional_id,
                producer_id=self.pid.producer_id,
                producer_epoch=self.pid.producer_epoch,
                group_id=group_id,
            ),
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
        delay = self.retry_backoff
        deadline = time.monotonic() + self.request_timeout
        while True:
            group_node = await self.client.find_coordinator(
                group_id, KEY_TYPE_GROUP, self.request_timeout
            )
            resp = await self._request(
                TXN_OFFSET_COMMIT,
                lambda: TXN_OFFSET_COMMIT.Request(
                    transactional_id=self.transactional_id,
                    group_id=group_id,
                    producer_id=self.pid.producer_id,
                    producer_epoch=self.pid.producer_epoch,
                    topics=[{"name": t, "partitions": p} for t, p in topics.items()],
                ),
                node=group_node,
            )
            retry = False
            for topic in resp.topics:
                for part in topic.partitions:
                    if part.error_code:
                        err = for_code(part.error_code)
                        if part.error_code in _FENCED:
                            self.error = ProducerFenced()
                            raise self.error
                        if not (err.retriable or part.error_code in _COORDINATOR_GONE):
                            raise err(f"TxnOffsetCommit for group {group_id!r}")
                        retry = True
            if not retry:
                return
            if time.monotonic() > deadline:
                raise KafkaTimeoutError("TxnOffsetCommit did not succeed in time")
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.retry_backoff * 10)
