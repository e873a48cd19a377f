"""Record accumulation: one queue of batches per partition, filled by ``send()``.

Records are encoded as they are appended (so a batch knows its exact size); the
sender drains ready batches.  No network here: the sender owns the wire.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import time
from collections.abc import Callable
from itertools import repeat
from typing import Any

from rackafka.errors import KafkaTimeoutError
from rackafka.records import _gc
from rackafka.records._varint import encode_varint
from rackafka.records.builder import (  # _VARINTS: the list varint_table() fills
    _VARINTS,
    VARINT_TABLE_SIZE,
    encode_record_raw,
    finish_batch_in_place,
    varint_table,
)
from rackafka.records.default_records import HEADER_SIZE
from rackafka.structs import RecordMetadata, TopicPartition

__all__ = ["Accumulator", "ProducerBatch"]

#: Batches waiting per partition before ``send()`` waits for the sender.
MAX_QUEUED_BATCHES = 4
_TABLE_SIZE = VARINT_TABLE_SIZE
#: Values at least this long are appended to the batch by themselves (one copy), not
#: joined with the record's other fields first (two copies).
_LARGE_VALUE = 1024
_new_tuple = tuple.__new__
#: Varints of lengths past the lookup table (large values and their records), kept as
#: they are met (sizes repeat) up to :data:`_LONG_VARINTS_MAX` of them: a dict lookup
#: instead of an encoding per record.
_LONG_VARINTS: dict[int, bytes] = {}
_LONG_VARINTS_MAX = 1024


def _long_varint(n: int) -> bytes:
    """The varint of ``n`` (past the lookup table), kept for the next record while
    :data:`_LONG_VARINTS` has room."""
    encoded = encode_varint(n)
    if len(_LONG_VARINTS) < _LONG_VARINTS_MAX:
        _LONG_VARINTS[n] = encoded
    return encoded


#: Records appended between two deferrals of the young collection (a power of 2, less 1).
_DEFER_EVERY = 0x3F


def _defer_collection() -> None:
    """The objects counted by the cyclic collector since its last collection (the pending
    futures of the records sent, mostly) do not count towards the next young collection:
    alive until their batch is acknowledged, a young collection would only walk them and
    move them to an older generation, to be walked again there (and again by the full
    collections that a growing older generation triggers).  Bounded as the consumer's
    (:mod:`rackafka.records._gc`): at most ``MAX_RAISE`` allocations more, undone by the
    next collection; a disabled or tuned collector is left alone; only on Python 3.10 to
    3.12, where it pays (``_gc.pending``)."""
    if _gc.pause_pending():
        _gc.resume()


def _nothing() -> None:
    """The wake-up of an accumulator not yet connected to a sender."""


def _future_factory(loop: asyncio.AbstractEventLoop) -> Callable[[], asyncio.Future[Any]]:
    """``loop.create_future``, or the same done without a Python call for asyncio's loops."""
    if type(loop).create_future is asyncio.BaseEventLoop.create_future:
        return functools.partial(asyncio.Future, loop=loop)
    return loop.create_future


class ProducerBatch:
    """Records for one partition, encoded, with the futures of their senders.

    ``futures`` holds one future per record and ``timestamps`` the records' timestamps;
    a batch from :meth:`AIOKafkaProducer.send_batch` has one future for the whole batch
    (``batch_future``) instead.  ``size`` is the encoded size in bytes (uncompressed),
    header included: ``buffer`` starts with :data:`HEADER_SIZE` bytes left for the
    header, written there when the batch is built (no copy of the records).
    """

    __slots__ = (
        "tp",
        "buffer",
        "count",
        "size",
        "first_ts",
        "max_ts",
        "futures",
        "timestamps",
        "batch_future",
        "created",
        "deadline",
        "closed",
        "limit",
        "built",
        "base_sequence",
        "attempts",
        "retry_at",
        "drained_at",
        "producer_epoch",
        "generation",
        "last_error",
    )

    def __init__(self, tp: TopicPartition, limit: int, deadline: float) -> None:
        if not _VARINTS:
            varint_table()
        self.tp = tp
        self.buffer = bytearray(HEADER_SIZE)
        self.count = 0
        self.size = HEADER_SIZE
        self.first_ts = -1
        self.max_ts = -1
        self.futures: list[asyncio.Future[RecordMetadata]] = []
        self.timestamps: list[int] = []
        self.batch_future: asyncio.Future[RecordMetadata] | None = None
        self.created = time.monotonic()
        self.deadline = deadline
        self.closed = False
        self.limit = limit
        self.built: bytes | bytearray | None = None
        self.base_sequence = -1
        self.attempts = 0
        self.retry_at = 0.0
        self.drained_at = 0.0
        self.producer_epoch = -1
        self.generation = -1
        #: The error of the last failed attempt (the batch fails with it at its deadline).
        self.last_error: BaseException | None = None

    def try_append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: bytes,
    ) -> bool:
        """Encode a record into the batch; ``False`` if it does not fit (the batch closes).

        ``headers`` are encoded already (:func:`~rackafka.records.builder.encode_headers`,
        or :data:`~rackafka.records.builder.NO_HEADERS`).  The first record always goes
        in: a record larger than the batch size gets a batch of its own
        (``max_request_size`` bounds it).
        """
        if self.closed:
            return False
        count = self.count
        if count:
            delta = timestamp - self.first_ts
            slow = not (0 <= delta < _TABLE_SIZE and count < _TABLE_SIZE)
        else:
            delta = 0
            slow = False
        if slow:
            record = encode_record_raw(count, delta, key, value, headers)
            size = self.size + len(record)
            if count and size > self.limit:
                self.closed = True
                return False
            self.buffer += record
        else:
            # Nearly every record: deltas in the lookup table, the record (without its
            # length) made in one join, whose length is the record's.  A large value is
            # left out of the join and appended after it: copied once, not twice.
            varints = _VARINTS
            if key is None:
                vklen = b"\x01"  # the varint of -1
            else:
                n = len(key)
                vklen = varints[n] if n < _TABLE_SIZE else encode_varint(n)
            large = None
            if value is None:
                vvlen = b"\x01"
            else:
                n = len(value)
                if n < _LARGE_VALUE:
                    vvlen = varints[n]
                else:
                    vvlen = _LONG_VARINTS.get(n) or _long_varint(n)
                    large, value, tail, headers = value, None, headers, b""
            record = b"".join(
                (
                    b"\x00",  # attributes
                    varints[delta],
                    varints[count],
                    vklen,
                    key or b"",
                    vvlen,
                    value or b"",
                    headers,
                )
            )
            body = len(record)
            if large is not None:
                body += n + len(tail)
            if body < _TABLE_SIZE:
                vbody = varints[body]
            else:
                vbody = _LONG_VARINTS.get(body) or _long_varint(body)
            size = self.size + len(vbody) + body
            if count and size > self.limit:
                self.closed = True
                return False
            buffer = self.buffer
            buffer += vbody
            buffer += record
            if large is not None:
                buffer += large
                buffer += tail
        self.size = size
        self.count = count + 1
        self.timestamps.append(timestamp)
        if not count:
            self.first_ts = self.max_ts = timestamp
        elif timestamp > self.max_ts:
            self.max_ts = timestamp
        return True

    def build(
        self,
        *,
        compression: int,
        producer_id: int,
        producer_epoch: int,
        transactional: bool,
    ) -> bytes | bytearray:
        """The encoded batch; built once, so that retries resend the same bytes (never
        changed once built: without compression, the batch's own buffer)."""
        if self.built is None:
            self.closed = True
            self.producer_epoch = producer_epoch
            self.built = finish_batch_in_place(
                self.buffer,
                count=self.count,
                last_offset_delta=self.count - 1,
                first_timestamp=self.first_ts,
                max_timestamp=self.max_ts,
                compression=compression,
                transactional=transactional,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=self.base_sequence,
            )
        return self.built

    def reset_build(self) -> None:
        """Forget the encoded form (the producer id or sequence changed)."""
        self.built = None

    def done(self, base_offset: int, log_append_time: int, log_start_offset: int) -> None:
        """Complete every future: the broker stored the batch at ``base_offset``."""
        tp = self.tp
        topic, partition = tp
        lat = log_append_time if log_append_time is not None and log_append_time >= 0 else None
        ts_type = 0 if lat is None else 1
        lso = log_start_offset if log_start_offset is not None and log_start_offset >= 0 else None
        if self.batch_future is not None:
            if not self.batch_future.done():
                self.batch_future.set_result(
                    RecordMetadata(
                        topic,
                        partition,
                        tp,
                        base_offset,
                        lat if lat is not None else self.max_ts,
                        ts_type,
                        lso,
                    )
                )
            return
        futures = self.futures
        if not futures:
            return
        self.futures = []
        n = len(futures)
        offsets = range(base_offset, base_offset + n) if base_offset >= 0 else repeat(-1, n)
        stamps = self.timestamps if lat is None else repeat(lat, n)
        # The metadata tuples are made in C: zip builds each one's fields.
        metadata = map(
            _new_tuple,
            repeat(RecordMetadata),
            zip(
                repeat(topic),
                repeat(partition),
                repeat(tp),
                offsets,
                stamps,
                repeat(ts_type),
                repeat(lso),
            ),
        )
        # The metadata tuples and the futures' callbacks, made in bulk, do not count
        # towards the next young collection (see _defer_collection).
        paused = _gc.pause_pending()
        try:
            for fut, meta in zip(futures, metadata):
                if not fut.done():
                    fut.set_result(meta)
        finally:
            if paused:
                _gc.resume()

    def done_unacknowledged(self) -> None:
        """Complete every future with ``None``: sent with ``acks=0``, no offset is known
        (as aiokafka)."""
        futures: list[asyncio.Future[Any]] = list(self.futures)
        if self.batch_future is not None:
            futures.append(self.batch_future)
        self.futures = []
        for fut in futures:
            if not fut.done():
                fut.set_result(None)

    def fail(self, exc: BaseException) -> None:
        """Fail every future with ``exc``."""
        if self.batch_future is not None:
            if not self.batch_future.done():
                self.batch_future.set_exception(exc)
            return
        futures = self.futures
        self.futures = []
        for fut in futures:
            if not fut.done():
                fut.set_exception(exc)


class Accumulator:
    """Per-partition queues of :class:`ProducerBatch`.

    Arguments:
        max_batch_size: a batch closes when the next record would make it larger.
        linger: seconds a non-full batch waits for more records.
        delivery_timeout: seconds from a batch's creation until it fails if it could
            not be delivered (with the error of its last attempt, see
            :meth:`drop_expired`).
        on_batch_closed: called with the partition whose open batch closed (the
            sticky partitioner moves on).

    The sender's wake-ups are connected with :meth:`connect`.
    """

    def __init__(
        self,
        *,
        max_batch_size: int,
        linger: float,
        delivery_timeout: float,
        on_batch_closed: Callable[[TopicPartition], None],
    ) -> None:
        self.max_batch_size = max_batch_size
        self.linger = linger
        self.delivery_timeout = delivery_timeout
        self._wakeup: Callable[[], None] = _nothing
        self._wake_at: Callable[[float], None] | None = None
        self._on_batch_closed = on_batch_closed
        self.batches: dict[TopicPartition, collections.deque[ProducerBatch]] = {}
        self._drained = asyncio.Event()
        self.flushing = 0
        self.closing = False
        #: Batches created since the last drain (the sender's fast check).
        self.pending = 0
        #: Set when the sender died: every later append raises it.
        self.error: BaseException | None = None
        self._new_future = _future_factory(asyncio.get_running_loop())

    def connect(self, wakeup: Callable[[], None], wake_at: Callable[[float], None]) -> None:
        """Wake the sender: ``wakeup()`` when a batch may have become ready, and
        ``wake_at(t)`` with the monotonic time ``t`` at which a new lingering batch becomes
        ready, so a sleeping sender wakes for it (not only at its next planned wake)."""
        self._wakeup = wakeup
        self._wake_at = wake_at

    def open_batch(self, tp: TopicPartition) -> ProducerBatch | None:
        """The batch of ``tp`` still taking records, if any."""
        dq = self.batches.get(tp)
        if dq:
            last = dq[-1]
            if not last.closed:
                return last
        return None

    def append_nowait(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: bytes,
    ) -> asyncio.Future[RecordMetadata] | None:
        """Add a record to ``tp``'s open batch; its future, or ``None`` when there is no
        open batch or the record does not fit in it (then :meth:`append` it)."""
        dq = self.batches.get(tp)
        if dq:
            last = dq[-1]
            if last.try_append(timestamp, key, value, headers):
                fut = self._new_future()
                last.futures.append(fut)
                if last.size >= self.max_batch_size:
                    self._close(last)
                elif not last.count & _DEFER_EVERY:
                    _defer_collection()
                return fut
        return None

    async def append(
        self,
        tp: TopicPartition,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: bytes,
        timeout: float,
    ) -> asyncio.Future[RecordMetadata]:
        """Add a record to ``tp``'s open batch (a new one if it is full); its future.

        Waits while ``tp`` has :data:`MAX_QUEUED_BATCHES` batches queued.

        Raises:
            KafkaTimeoutError: no room within ``timeout`` seconds.
        """
        if self.error is not None:
            raise self.error
        dq = self.batches.get(tp)
        if dq is None:
            dq = self.batches[tp] = collections.deque()
        elif dq:
            appended = self.append_nowait(tp, timestamp, key, value, headers)
            if appended is not None:
                return appended
            last = dq[-1]
            if last.closed:
                self._close(last)
        await self._wait_room(dq, timeout)
        if self.error is not None:
            raise self.error
        _defer_collection()
        batch = ProducerBatch(tp, self.max_batch_size, time.monotonic() + self.delivery_timeout)
        batch.try_append(timestamp, key, value, headers)
        fut = self._new_future()
        batch.futures.append(fut)
        dq.append(batch)
        self.pending += 1
        if batch.size >= self.max_batch_size:
            self._close(batch)
        elif self.linger <= 0:
            self._wakeup()
        elif self._wake_at is not None:
            self._wake_at(batch.created + self.linger)
        return fut

    async def add_batch(
        self, tp: TopicPartition, batch: ProducerBatch, timeout: float, *, eager: bool = False
    ) -> asyncio.Future[RecordMetadata]:
        """Queue a whole batch (``send_batch``); the future of the batch.

        ``eager`` (a batch about as large as a request): when ``tp``'s queue is empty,
        the sender runs first, so that the batches queued before go out while the
        caller fills the next one (without it the caller runs until a queue is full,
        and the network waits).
        """
        if self.error is not None:
            raise self.error
        dq = self.batches.get(tp)
        if dq is None:
            dq = self.batches[tp] = collections.deque()
        if eager and not dq:
            await asyncio.sleep(0)
            if self.error is not None:
                raise self.error
        open_batch = self.open_batch(tp)
        if open_batch is not None:
            self._close(open_batch)
        await self._wait_room(dq, timeout)
        batch.tp = tp
        batch.closed = True
        batch.created = time.monotonic()
        batch.deadline = batch.created + self.delivery_timeout
        fut = self._new_future()
        batch.batch_future = fut
        dq.append(batch)
        self.pending += 1
        self._wakeup()
        return fut

    async def _wait_room(self, dq: collections.deque[ProducerBatch], timeout: float) -> None:
        if len(dq) < MAX_QUEUED_BATCHES:
            return
        deadline = time.monotonic() + timeout
        while len(dq) >= MAX_QUEUED_BATCHES:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaTimeoutError(
                    f"no room for the record in {timeout:.3g} s: the partition's batches "
                    "are not being delivered"
                )
            self._drained.clear()
            try:
                await asyncio.wait_for(self._drained.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def _close(self, batch: ProducerBatch) -> None:
        batch.closed = True
        self._on_batch_closed(batch.tp)
        self._wakeup()

    def notify_drained(self) -> None:
        """A batch left a queue: wake ``send()`` calls waiting for room."""
        self._drained.set()

    def ready(self, batch: ProducerBatch, now: float) -> bool:
        """Whether ``batch`` (the head of its queue) should be sent now."""
        if batch.retry_at > now:
            return False
        return (
            batch.closed or self.flushing > 0 or self.closing or now - batch.created >= self.linger
        )

    def next_ready_time(self, now: float) -> float | None:
        """When the next lingering head batch becomes ready (``None``: nothing waits)."""
        best: float | None = None
        for dq in self.batches.values():
            if dq:
                b = dq[0]
                t = max(b.retry_at, b.created + self.linger) if not b.closed else b.retry_at
                if best is None or t < best:
                    best = t
        return best

    def has_unsent(self) -> bool:
        return any(self.batches.values())

    def fail_all(self, exc: BaseException) -> None:
        """Fail every queued batch (the producer is closing or broken)."""
        for dq in self.batches.values():
            while dq:
                dq.popleft().fail(exc)
        self.notify_drained()

    def expired(self, batch: ProducerBatch) -> None:
        """The sender took ``batch`` off its queue to fail it (no leader in time)."""
        if not batch.closed:
            batch.closed = True
            self._on_batch_closed(batch.tp)
        self.notify_drained()
