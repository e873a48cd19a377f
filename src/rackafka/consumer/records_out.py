"""Handing out records: decode buffered record data when getmany()/getone() asks.

Fetched record data is buffered undecoded per partition (:class:`~.fetch_state.Buffered`)
and decoded here, when the user asks for records, so no work is spent on records nobody
reads. Errors met on the way (a corrupt batch, a deserializer that raises) are recorded for
the partition after the records before them are handed out, and raised by
:meth:`RecordsOut.raise_pending_errors`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import partial
from operator import attrgetter, itemgetter
from typing import Any

from rackafka.client import KafkaClient
from rackafka.consumer.fetch_state import Buffered, FetchState
from rackafka.errors import KafkaError, RecordDeserializationError
from rackafka.records import CONTROL_ABORT
from rackafka.records._columns import count_records, pieces_from
from rackafka.structs import ConsumerRecord, TopicPartition
from rackafka.subscription import PartitionState

__all__ = ["RecordsOut"]


class RecordsOut:
    """The records of the buffered data, for getmany()/getone(), and the errors to raise.

    Arguments:
        fs: the fetcher's shared state.
        client: for authentication failures of connections.
        task: the fetch loop's task, whose failure is raised (a callable, as it starts later).
        key_deserializer, value_deserializer: applied to each record.
        record_tuples: records as the decoder's plain 9-tuples instead of ConsumerRecord.
    """

    def __init__(
        self,
        fs: FetchState,
        client: KafkaClient,
        task: Callable[[], Any],
        *,
        key_deserializer: Callable[[Any], Any] | None,
        value_deserializer: Callable[[Any], Any] | None,
        record_tuples: bool,
    ) -> None:
        self._fs = fs
        self._subs = fs.subs
        self._buffered = fs.buffered  # the same deque for the fetcher's whole life
        self._client = client
        self._task = task
        self._key_deser = key_deserializer
        self._value_deser = value_deserializer
        self._record_tuples = record_tuples
        self._offset_of: Callable[[Any], int] = (
            itemgetter(0) if record_tuples else attrgetter("offset")
        )
        #: The sticky error raised last (see :meth:`raise_pending_errors`).
        self._last_raised: BaseException | None = None
        self._runs = False
        #: Whether a run was handed out yet (until then, every piece is one record).
        self._saw_runs = False

    def hand_out_runs(self) -> None:
        """Internal, for bulk readers of record tuples (the Spark source): runs of
        same-layout records are handed out as one :class:`~rackafka.records._columns.Run`
        each, among the tuples of the other records (``getone`` is not for them)."""
        if not self._record_tuples:
            raise ValueError("runs are handed out only with record_tuples=True")
        self._runs = True

    def has_buffered(self, partitions: set[TopicPartition] | None = None) -> bool:
        if not self._buffered:
            return False
        if partitions is None:
            return True
        parts = self._fs.parts
        return any(tp in parts and parts[tp].buffers > 0 for tp in partitions)

    # -- errors ----------------------------------------------------------------------------

    def raise_pending_errors(
        self, partitions: set[TopicPartition] | None = None, *, repeat: bool = True
    ) -> None:
        """Raise an error recorded for a partition, or the fetch loop's own failure.

        An authentication failure of a connection (SASL, TLS) is raised once; the
        client keeps trying after ``reconnect_backoff_ms``.  A sticky error (bad record
        data at the position) stays until the position changes.  With ``repeat=False``
        the sticky error raised last is not raised again
        (so that other partitions' records can be delivered in between); call with
        ``repeat=True`` when there is nothing else to give.
        """
        task = self._task()
        if task is not None and task.done() and not task.cancelled():
            exc = task.exception()
            if exc is not None:
                raise exc
        auth_failure = self._client.take_auth_failure()
        if auth_failure is not None:
            raise auth_failure  # as Java's poll(): raised once, the client retries later
        fs = self._fs
        if not fs.errors_pending:
            return
        found = False
        for state in self._subs.states():
            error = state.error
            if error is not None:
                found = True
                if partitions is None or state.tp in partitions:
                    if state.error_sticky:
                        if not repeat and error is self._last_raised:
                            continue
                        self._last_raised = error
                        raise error
                    # As aiokafka: the partition is fetched again, so the error comes
                    # back on the next poll until the user seeks somewhere valid.
                    state.error = None
                    raise error
        fs.errors_pending = found

    def has_sticky_error(self, partitions: set[TopicPartition] | None = None) -> bool:
        """Whether a partition of ``partitions`` holds an error raised before."""
        if not self._fs.errors_pending:
            return False
        return any(
            s.error is not None and s.error_sticky and (partitions is None or s.tp in partitions)
            for s in self._subs.states()
        )

    # -- records -----------------------------------------------------------------------------

    def next_record(self, partitions: set[TopicPartition] | None) -> Any:
        """One record for :meth:`AIOKafkaConsumer.getone`, or ``None``.

        The common case (the next record of the head buffer is decoded already)
        costs a few attribute look-ups; everything else goes through :meth:`drain`.
        """
        if self._buffered:
            buf = self._buffered[0]
            pos = buf.pending_pos
            if pos < len(buf.pending) - 1 and (partitions is None or buf.tp in partitions):
                state = self._subs.state(buf.tp)
                if (
                    state is not None
                    and not state.paused
                    and not state.pending_revocation
                    and state.position is not None
                ):
                    record = buf.pending[pos]
                    buf.pending_pos = pos + 1
                    state.position = self._offset_of(record) + 1
                    buf.counters.records += 1
                    return record
        for records in self.drain(partitions, 1).values():
            return records[0]
        return None

    def _factory(self, buf: Buffered) -> Callable[..., Any] | None:
        if self._record_tuples:
            return None  # the decoder's own tuples
        part = buf.part
        factory = part.factory
        if factory is not None:
            return factory
        kd, vd = self._key_deser, self._value_deser
        tp = buf.tp
        if kd is None and vd is None:
            factory = partial(ConsumerRecord, tp.topic, tp.partition)
        else:
            topic, partition = tp.topic, tp.partition

            def factory(
                offset: int,
                timestamp: int,
                timestamp_type: int,
                key: Any,
                value: Any,
                checksum: int | None,
                key_size: int,
                value_size: int,
                headers: Any,
            ) -> ConsumerRecord[Any, Any]:
                return ConsumerRecord(
                    topic,
                    partition,
                    offset,
                    timestamp,
                    timestamp_type,
                    kd(key) if kd is not None else key,
                    vd(value) if vd is not None else value,
                    checksum,
                    key_size,
                    value_size,
                    headers,
                )

        part.factory = factory
        return factory

    def drain(
        self, partitions: set[TopicPartition] | None, max_records: int | None
    ) -> dict[TopicPartition, list[Any]]:
        """Take up to ``max_records`` buffered records, advancing positions.

        Raises:
            CorruptRecordException: a corrupt batch was reached before any
                record was taken in this call (records before it are returned
                first; the position stays at the corrupt batch).
        """
        out: dict[TopicPartition, list[Any]] = {}
        budget = max_records if max_records is not None else 1 << 62
        skipped: deque[Buffered] = deque()
        buffered = self._buffered
        fs = self._fs
        while buffered and budget > 0:
            buf = buffered[0]
            tp = buf.tp
            if partitions is not None and tp not in partitions:
                skipped.append(buffered.popleft())
                continue
            state = self._subs.state(tp)
            if state is None or state.paused or state.pending_revocation or state.position is None:
                if state is not None and (state.paused or state.pending_revocation):
                    skipped.append(buffered.popleft())
                else:
                    fs.pop_buffer()
                continue
            taken = self._take(buf, state, budget)
            if state.error is not None:
                # A corrupt batch: nothing after it may be delivered or skipped.
                fs.drop_buffered(buf.part)
            if taken:
                existing = out.get(tp)
                if existing is None:
                    out[tp] = taken
                else:
                    existing.extend(taken)
                # With runs, the budget is in records: one buffer's runs may pass it.
                n = count_records(taken) if self._saw_runs else len(taken)
                budget -= n
                buf.counters.records += n
            if (
                buffered
                and buffered[0] is buf
                and buf.pending_pos >= len(buf.pending)
                and buf.batches is None
                and buf.failure is None
            ):
                fs.pop_buffer()
        if skipped:
            buffered.extendleft(reversed(skipped))
        if not buffered:
            fs.data_ready.clear()
            fs.wakeup_event.set()
        return out

    def _take(self, buf: Buffered, state: PartitionState, budget: int) -> list[Any]:
        """Records of ``buf`` from the partition's position, at most ``budget``.

        A batch that cannot be decoded, or a record a deserializer rejects, ends the
        buffer: the records before it are handed out first, then the error is recorded
        for the partition with the position at the failing batch or record.  Nothing
        after it is delivered or skipped.
        """
        taken: list[Any] = []
        position = state.position
        assert position is not None
        buf.part.served_by = buf.node  # where these records came from (tracing)
        while True:
            pending = buf.pending
            if buf.pending_pos < len(pending):
                start = buf.pending_pos
                end = min(len(pending), start + budget - len(taken))
                chunk = pending[start:end]
                buf.pending_pos = end
                if chunk:
                    taken.extend(chunk)
                    position = self._offset_of(chunk[-1]) + 1
                if buf.pending_pos < len(pending):
                    break  # budget reached mid-batch
                position = max(position, buf.pending_next)
                if len(taken) >= budget:
                    break
            if buf.failure is not None:
                # Never skipped: the position stays at the failing batch or record and
                # the error is raised on every poll until the user seeks past it. Bad
                # record data stays bad (sticky: not fetched again); a deserializer's
                # failure may be transient (a schema registry): as in Java, the record
                # is fetched again and given to the deserializer on the next poll.
                deserializer = isinstance(buf.failure, RecordDeserializationError)
                self._fs.fail(state, buf.failure, sticky=not deserializer)
                buf.failure = None
                state.position = position
                state.fetch_position = position
                state.fetch_epoch = state.position_epoch
                return taken
            if buf.batches is None:
                break
            batch = None
            try:
                batch = next(buf.batches, None)
                if batch is None:
                    buf.batches = None
                    break
                next_offset = batch.next_offset
                if next_offset <= position:
                    continue  # already consumed
                if _skip_batch(buf, batch):
                    position = next_offset
                    continue
                if self._runs and batch.magic == 2:
                    records = batch.records(None, True)
                    if len(records) != batch.record_count:  # a run holds 16 or more
                        self._saw_runs = True
                    records = pieces_from(records, position)
                else:
                    records = batch.records(self._factory(buf))
            except Exception as exc:
                self._failed_batch(buf, batch, position, exc)
                continue
            if records and self._offset_of(records[0]) < position:
                offset_of = self._offset_of
                records = [r for r in records if offset_of(r) >= position]
            buf.pending = records
            buf.pending_pos = 0
            buf.pending_next = next_offset
            epoch = getattr(batch, "partition_leader_epoch", -1)
            state.position_epoch = epoch
            if not records:
                position = next_offset
        state.position = position
        return taken

    def _failed_batch(self, buf: Buffered, batch: Any, position: int, exc: Exception) -> None:
        """Decoding ``batch`` raised ``exc``: keep what precedes the failure, then fail.

        When the records decode without the deserializers, it was a deserializer that
        raised: the records before the failing one are kept (KIP-334) and the error
        names the failing record.  Anything else fails at the batch.
        """
        remaining = buf.batches
        buf.batches = None
        buf.pending = []
        buf.pending_pos = 0
        buf.pending_next = position
        buf.failure = exc
        factory = self._factory(buf)
        if batch is None or factory is None or isinstance(exc, KafkaError):
            return
        try:
            raw = batch.records(None)
        except Exception as decode_exc:
            buf.failure = decode_exc
            return
        good: list[Any] = []
        for values in raw:
            offset = values[0]
            if offset < position:
                continue
            try:
                good.append(factory(*values))
            except Exception as deser_exc:
                error = RecordDeserializationError(
                    buf.tp, offset, f"{type(deser_exc).__name__}: {deser_exc}"
                )
                error.__cause__ = deser_exc
                buf.failure = error
                buf.pending = good
                buf.pending_next = offset
                return
        # Only records before the position failed (a seek into the batch): go on.
        buf.failure = None
        buf.batches = remaining
        buf.pending = good
        buf.pending_next = batch.next_offset


def _skip_batch(buf: Buffered, batch: Any) -> bool:
    """Control batches and, under read_committed, aborted transactions."""
    if buf.aborted is not None and batch.producer_id >= 0:
        aborted = buf.aborted
        last = batch.last_offset
        while aborted and aborted[0][0] <= last:
            buf.aborted_pids.add(aborted.popleft()[1])
        if batch.is_control:
            if batch.control_type == CONTROL_ABORT:
                buf.aborted_pids.discard(batch.producer_id)
            return True
        if batch.is_transactional and batch.producer_id in buf.aborted_pids:
            return True
    return bool(batch.is_control)
