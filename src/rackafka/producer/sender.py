"""The producer's background sender: drains ready batches into Produce requests.

One request per leader per round, at most five in flight per broker, one batch per
partition in flight (so order holds through retries).  It owns the idempotent
producer id, epoch and sequence numbers; it never encodes records itself.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from rackafka._backoff import BackoffPolicy
from rackafka._tasks import cancel_and_wait
from rackafka.client import KafkaClient
from rackafka.errors import (
    DuplicateSequenceNumber,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LeaderNotAvailableError,
    NotLeaderForPartitionError,
    OutOfOrderSequenceNumber,
    ProducerFenced,
    UnknownProducerId,
    for_code,
    is_retriable,
)
from rackafka.producer.accumulator import Accumulator, ProducerBatch
from rackafka.protocol.apis.init_producer_id import INIT_PRODUCER_ID
from rackafka.protocol.apis.produce import PRODUCE
from rackafka.protocol.primitives import write_length
from rackafka.structs import TopicPartition

log = logging.getLogger("rackafka.producer")

#: Produce requests in flight per broker (Kafka's max.in.flight.requests.per.connection).
MAX_IN_FLIGHT = 5
_SEQ_MASK = 0x7FFFFFFF
#: A request's last batch of at least this many bytes is written after the rest of the
#: request as it is, not copied into the request's frame.
WRITE_APART = 64 * 1024
#: The tagged fields (none) of the last partition, of its topic and of the request, that
#: end a flexible Produce request after the last partition's records.
_FLEXIBLE_END = b"\x00\x00\x00"


def _records_apart(
    part: dict[str, Any], flexible: bool
) -> tuple[int, tuple[bytes | bytearray, ...]]:
    """Take the records out of ``part``, the last partition of a Produce request, to be
    written after the encoded request (``Connection.send``'s ``tail``): the request then
    encodes them empty, and its last bytes (the empty length, the tagged fields that
    follow in a flexible version) are replaced by the records' length, the records and
    the same tagged fields."""
    records = part["records"]
    part["records"] = b""
    empty = bytearray()
    write_length(empty, 0, flexible)
    length = bytearray()
    write_length(length, len(records), flexible)
    end = _FLEXIBLE_END if flexible else b""
    return len(empty) + len(end), (length, records, end)


@dataclass
class ProduceStats:
    """What the producer sent, and how much of it crossed racks.

    Bytes are the encoded (compressed) record batches of every Produce attempt,
    classified by the rack of the partition leader they went to against the
    producer's ``client_rack``.
    """

    records: int = 0
    batches: int = 0
    requests: int = 0
    retries: int = 0
    same_rack_bytes: int = 0
    cross_rack_bytes: int = 0
    #: Bytes to a leader whose rack, or the producer's, is unknown.
    unknown_rack_bytes: int = 0
    #: Bytes per rack of the leader they went to (``"null"``: a leader without a rack).
    bytes_by_rack: dict[str, int] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        return self.same_rack_bytes + self.cross_rack_bytes + self.unknown_rack_bytes


def _retriable(exc: BaseException) -> bool:
    """Whether sending again may succeed: an error the Java client retries, a broken
    connection or a request that timed out."""
    if isinstance(exc, (KafkaConnectionError, KafkaTimeoutError)):
        return True
    return isinstance(exc, KafkaError) and is_retriable(exc)


class ProducerIdState:
    """Producer id, epoch and the next sequence number of every partition."""

    def __init__(self, transactional_id: str | None, transaction_timeout_ms: int) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[TopicPartition, int] = {}
        self.generation = 0

    @property
    def has_pid(self) -> bool:
        return self.producer_id >= 0

    def reset(self) -> None:
        """Forget the producer id: a new one is fetched before the next send."""
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences.clear()
        self.generation += 1

    def assign(self, batch: ProducerBatch) -> None:
        """Give ``batch`` its base sequence (once per producer id)."""
        tp = batch.tp
        seq = self.sequences.get(tp, 0)
        batch.base_sequence = seq
        self.sequences[tp] = (seq + batch.count) & _SEQ_MASK

    def rollback(self, batch: ProducerBatch) -> None:
        """``batch`` was refused and is dropped: its sequence numbers are free again."""
        if batch.base_sequence >= 0:
            self.sequences[batch.tp] = batch.base_sequence


class Sender:
    """Moves batches from the :class:`Accumulator` to the partition leaders.

    Retries (of a batch, of InitProducerId) wait by ``retry_policy`` (default: the
    client's, ``retry_backoff_ms`` doubling up to ``retry_backoff_max_ms``): the ``n``-th
    attempt of a batch waits ``retry_policy.delay(n - 1)`` after its failure, as the Java
    producer does.
    """

    def __init__(
        self,
        client: KafkaClient,
        accumulator: Accumulator,
        *,
        acks: int,
        compression: int,
        request_timeout_ms: int,
        max_request_size: int,
        pid_state: ProducerIdState | None,
        client_rack: str | None,
        stats: ProduceStats,
        retry_policy: BackoffPolicy | None = None,
    ) -> None:
        self.client = client
        self.acc = accumulator
        self.acks = acks
        self.compression = compression
        self.request_timeout_ms = request_timeout_ms
        self.retry_policy = retry_policy if retry_policy is not None else client.retry_policy
        #: How soon the loop looks again for a partition without a leader.
        self.retry_backoff = self.retry_policy.initial
        self.max_request_size = max_request_size
        self.pid = pid_state
        self.client_rack = client_rack
        self.stats = stats
        self._wake = asyncio.Event()
        #: The monotonic time the sleeping loop wakes at, and the timer that wakes it.
        self._sleep_until = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._progress = asyncio.Event()
        self._muted: set[TopicPartition] = set()
        self._in_flight: dict[int, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None
        #: The TransactionManager of a transactional producer (set by the producer).
        self.txn: Any = None

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self._task

    def wakeup(self) -> None:
        self._wake.set()

    def wake_at(self, when: float) -> None:
        """Make the sleeping loop wake no later than ``when`` (``time.monotonic()``)."""
        timer = self._timer
        if timer is None or when >= self._sleep_until:
            return
        timer.cancel()
        self._sleep_until = when
        self._timer = asyncio.get_running_loop().call_later(
            max(when - time.monotonic(), 0.0), self._wake.set
        )

    @property
    def busy(self) -> bool:
        """Whether a batch is in flight."""
        return bool(self._muted)

    async def wait_progress(self, timeout: float) -> None:
        """Wait until a request completes (or ``timeout`` seconds)."""
        self._progress.clear()
        timer = asyncio.get_running_loop().call_later(timeout, self._progress.set)
        try:
            await self._progress.wait()
        finally:
            timer.cancel()

    async def close(self) -> None:
        tasks = [t for t in (self._task, *self._tasks) if t is not None]
        await cancel_and_wait(tasks)

    # -- the loop ----------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            if self.pid is not None and not self.pid.has_pid:
                await self._init_producer_id()
                continue
            now = time.monotonic()
            requests, need_metadata = self._drain(now)
            if need_metadata:
                self.client.request_update()
            for node, batches in requests.items():
                self._in_flight[node] = self._in_flight.get(node, 0) + 1
                task = asyncio.get_running_loop().create_task(self._send(node, batches))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            nxt = self.acc.next_ready_time(now)
            delay = 1.0 if nxt is None else max(nxt - now, 0.001)
            if need_metadata:
                delay = max(min(delay, self.retry_backoff), 0.01)
            if self._wake.is_set():
                continue
            # Not asyncio.wait_for: before Python 3.12 it can swallow a cancellation
            # that races with the event, and the sender would never stop.
            self._sleep_until = now + delay
            self._timer = asyncio.get_running_loop().call_later(delay, self._wake.set)
            try:
                await self._wake.wait()
            finally:
                self._timer.cancel()
                self._timer = None

    def _expired_error(self, batch: ProducerBatch) -> BaseException:
        """Why ``batch``, still without a leader at its deadline, was not delivered: the
        partition has no leader, or is not in the metadata (as aiokafka)."""
        tp = batch.tp
        where = f"{batch.count} record(s) for {tp.topic}[{tp.partition}]"
        info = self.client.cluster.partition(tp)
        if info is None:
            return NotLeaderForPartitionError(f"{where}: the partition is not in the metadata")
        if info.leader < 0:
            return LeaderNotAvailableError(f"{where}: the partition has no leader")
        return KafkaTimeoutError(
            f"{where} not sent within request_timeout_ms ({self.request_timeout_ms} ms)"
        )

    def _drain(self, now: float) -> tuple[dict[int, list[ProducerBatch]], bool]:
        """Take the ready head batches, grouped by leader."""
        out: dict[int, list[ProducerBatch]] = {}
        sizes: dict[int, int] = {}
        cluster = self.client.cluster
        acc = self.acc
        need_metadata = False
        txn = self.txn
        need_add: set[TopicPartition] = set()
        for tp, dq in acc.batches.items():
            if not dq or tp in self._muted:
                continue
            batch = dq[0]
            if not acc.ready(batch, now):
                continue
            if txn is not None and not txn.can_send(tp):
                if txn.error is not None:
                    # The transaction failed (fenced: AddPartitionsToTxn refused): these
                    # records can never be sent; fail them now, not at their deadline
                    # after a loop of refused requests.
                    while dq:
                        failed = dq.popleft()
                        acc._on_batch_closed(tp)
                        failed.fail(txn.error)
                    acc.notify_drained()
                    continue
                need_add.add(tp)
                continue
            leader = cluster.leader_for(tp)
            if leader is None:
                need_metadata = True
                if now >= self._deadline(batch):
                    # Still no leader at its deadline: fail it (the only batches that
                    # expire unsent; the others fail by the outcome of their requests).
                    dq.popleft()
                    acc.expired(batch)
                    self._give_up(batch, self._expired_error(batch), self._generation())
                continue
            if self._in_flight.get(leader, 0) >= MAX_IN_FLIGHT or self.client.is_backing_off(
                leader
            ):
                continue
            size = sizes.get(leader, 0)
            if size and size + batch.size > self.max_request_size:
                continue
            dq.popleft()
            if not batch.closed:
                batch.closed = True
                acc._on_batch_closed(tp)
            acc.notify_drained()
            self._muted.add(tp)
            sizes[leader] = size + batch.size
            out.setdefault(leader, []).append(batch)
        if need_add:
            txn.add_partitions(need_add, self.wakeup)
        if out:
            acc.pending = 0
        return out, need_metadata

    # -- producer id -------------------------------------------------------------

    async def _init_producer_id(self) -> None:
        pid = self.pid
        assert pid is not None
        backoff = self.retry_policy.start()
        while True:
            nodes = sorted(self.client.cluster.brokers)
            if self.txn is not None:
                nodes = [await self.txn.coordinator_node()]
            err: BaseException | None = None
            for node in nodes:
                if self.client.is_backing_off(node):
                    continue
                try:
                    resp = await self.client.send(
                        node,
                        INIT_PRODUCER_ID,
                        INIT_PRODUCER_ID.Request(
                            transactional_id=pid.transactional_id,
                            transaction_timeout_ms=pid.transaction_timeout_ms,
                        ),
                    )
                except KafkaError as exc:
                    err = exc
                    if self.txn is not None:
                        self.txn.coordinator = None
                    continue
                if resp.error_code:
                    exc_cls = for_code(resp.error_code)
                    if self.txn is not None and exc_cls.coordinator_moved:
                        self.txn.coordinator = None  # look the coordinator up again
                    elif not exc_cls.client_retriable:
                        raise exc_cls(f"InitProducerId failed (error {resp.error_code})")
                    err = exc_cls()
                    break
                pid.producer_id = resp.producer_id
                pid.producer_epoch = resp.producer_epoch
                log.debug("producer id %d epoch %d", pid.producer_id, pid.producer_epoch)
                return
            log.debug("InitProducerId failed, retrying: %s", err)
            if not nodes:
                self.client.request_update()
            await asyncio.sleep(backoff.next())

    # -- one request -------------------------------------------------------------

    def _build(self, batch: ProducerBatch) -> bytes | bytearray:
        pid = self.pid
        if pid is None:
            return batch.build(
                compression=self.compression,
                producer_id=-1,
                producer_epoch=-1,
                transactional=False,
            )
        if batch.generation != pid.generation:
            batch.base_sequence = -1
        if batch.base_sequence < 0:
            batch.reset_build()
            pid.assign(batch)
            batch.generation = pid.generation
        return batch.build(
            compression=self.compression,
            producer_id=pid.producer_id,
            producer_epoch=pid.producer_epoch,
            transactional=pid.transactional_id is not None,
        )

    def _count_bytes(self, node: int, nbytes: int) -> None:
        stats = self.stats
        rack = self.client.cluster.rack_of(node)
        key = "null" if rack is None else rack
        stats.bytes_by_rack[key] = stats.bytes_by_rack.get(key, 0) + nbytes
        if rack is None or self.client_rack is None:
            stats.unknown_rack_bytes += nbytes
        elif rack == self.client_rack:
            stats.same_rack_bytes += nbytes
        else:
            stats.cross_rack_bytes += nbytes

    async def _send(self, node: int, batches: list[ProducerBatch]) -> None:
        generation = self.pid.generation if self.pid is not None else 0
        try:
            topics: dict[str, list[dict[str, Any]]] = {}
            by_tp: dict[TopicPartition, ProducerBatch] = {}
            nbytes = 0
            for batch in batches:
                data = self._build(batch)
                nbytes += len(data)
                topics.setdefault(batch.tp.topic, []).append(
                    {"index": batch.tp.partition, "records": data}
                )
                by_tp[batch.tp] = batch
                if batch.attempts:
                    self.stats.retries += 1
                batch.attempts += 1
            # A mapping, as the schema writes one: no struct objects made per request.
            request = {
                "transactional_id": self.pid.transactional_id if self.pid is not None else None,
                "acks": self.acks,
                "timeout_ms": self.request_timeout_ms,
                "topic_data": [{"name": t, "partition_data": p} for t, p in topics.items()],
            }
            try:
                conn = await self.client.connect(node)
                version = conn.version(PRODUCE)
                tail = None
                last = next(reversed(topics.values()))[-1]  # the request's last partition
                if len(last["records"]) >= WRITE_APART:
                    tail = _records_apart(last, PRODUCE.is_flexible(version))
                fut = conn.send(
                    PRODUCE, request, version=version, expect_response=self.acks != 0, tail=tail
                )
                self.stats.requests += 1
                self._count_bytes(node, nbytes)
                if self.acks == 0:
                    await conn.drain()
                    for batch in batches:
                        self.stats.records += batch.count
                        self.stats.batches += 1
                        batch.done_unacknowledged()
                    return
                response = await conn.wait(fut, what="Produce")
            except KafkaError as exc:
                log.debug("Produce to node %d failed: %s", node, exc)
                self.client.request_update()
                for batch in batches:
                    self._retry_or_fail(batch, exc, generation)
                return
            for topic in response.responses:
                for part in topic.partition_responses:
                    batch_or_none = by_tp.pop(TopicPartition(topic.name, part.index), None)
                    if batch_or_none is None:
                        continue
                    self._handle(batch_or_none, part, generation)
            for batch in by_tp.values():  # the broker did not answer for these
                self._retry_or_fail(
                    batch, KafkaConnectionError("no response for the partition"), generation
                )
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # never leave futures hanging
            log.exception("sending to node %d failed", node)
            error: BaseException = exc
            if not isinstance(exc, KafkaError):
                # A KafkaError, as aiokafka: code that catches KafkaError sees it too.
                error = KafkaError(f"Unexpected error during batch delivery: {exc!r}")
                error.__cause__ = exc
            for batch in batches:
                batch.fail(error)
        finally:
            for batch in batches:
                self._muted.discard(batch.tp)
            self._in_flight[node] = self._in_flight.get(node, 1) - 1
            self._progress.set()
            self._wake.set()

    def _complete(self, batch: ProducerBatch, base_offset: int, lat: int, lso: int) -> None:
        self.stats.records += batch.count
        self.stats.batches += 1
        batch.done(base_offset, lat, lso)

    def _handle(self, batch: ProducerBatch, part: Any, generation: int) -> None:
        code = part.error_code
        if code == 0:
            self._complete(batch, part.base_offset, part.log_append_time_ms, part.log_start_offset)
            return
        exc_cls = for_code(code)
        message = part.error_message or None
        if exc_cls is DuplicateSequenceNumber and self.pid is not None:
            # An earlier attempt was stored: success, offsets unknown (as Java's client).
            self._complete(batch, -1, -1, -1)
            return
        if exc_cls.producer_fenced and self.pid is not None and self.pid.transactional_id:
            # A newer producer with this transactional id bumped the epoch: fatal, as
            # aiokafka's and Java's ProducerFenced; the transaction cannot commit either.
            fenced = ProducerFenced()
            if self.txn is not None and self.txn.error is None:
                self.txn.error = fenced
            batch.fail(fenced)
            return
        exc = exc_cls(message) if message else exc_cls()
        if exc_cls.needs_metadata_refresh:
            self.client.request_update()
        if (
            exc_cls in (OutOfOrderSequenceNumber, UnknownProducerId)
            and self.pid is not None
            and self.pid.transactional_id is None
            and time.monotonic() < batch.deadline
        ):
            # The broker lost or refused this producer's state; this batch was not
            # stored (its predecessors were acknowledged): start over with a new id.
            if self.pid.generation == generation:
                self.pid.reset()
            batch.base_sequence = -1
            batch.reset_build()
            self._requeue(batch)
            return
        self._retry_or_fail(batch, exc, generation)

    def _retry_or_fail(self, batch: ProducerBatch, exc: BaseException, generation: int) -> None:
        if _retriable(exc):
            batch.last_error = exc
            if time.monotonic() < self._deadline(batch):
                self._requeue(batch)
                return
        self._give_up(batch, exc, generation)

    def _generation(self) -> int:
        return self.pid.generation if self.pid is not None else 0

    def _deadline(self, batch: ProducerBatch) -> float:
        """When ``batch`` stops being retried: ``request_timeout_ms`` after its linger (as
        aiokafka); an idempotent batch already sent gets one more ``request_timeout_ms``
        (aiokafka retries it for ever): failing it costs the producer id."""
        if self.pid is not None and batch.base_sequence >= 0:
            return batch.deadline + self.request_timeout_ms / 1000
        return batch.deadline

    def _give_up(self, batch: ProducerBatch, exc: BaseException, generation: int) -> None:
        """Fail ``batch`` with ``exc``: the broker's error itself (as aiokafka), also for a
        retriable one whose time is up."""
        if _retriable(exc) and self.pid is not None and batch.base_sequence >= 0:
            # Whether the broker stored it is unknown: later batches cannot follow its
            # sequence numbers, so the next batch starts a new producer id.
            if self.pid.generation == generation:
                self.pid.reset()
        elif self.pid is not None and self.pid.generation == generation:
            self.pid.rollback(batch)
        batch.fail(exc)

    def _requeue(self, batch: ProducerBatch) -> None:
        # The batch's attempts so far count its failures in a row (KIP-580).
        batch.retry_at = time.monotonic() + self.retry_policy.delay(batch.attempts - 1)
        dq = self.acc.batches.get(batch.tp)
        if dq is None:
            dq = self.acc.batches[batch.tp] = collections.deque()
        dq.appendleft(batch)
