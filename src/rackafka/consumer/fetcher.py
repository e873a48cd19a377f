"""The fetcher: one background task that keeps a fetch in flight to every broker.

Each loop of :meth:`Fetcher._run` routes every fetchable partition (the
:class:`~rackafka.consumer.routing.ReadReplicaPolicy` says leader or read
replica), builds one request per broker that has none in flight (with the
broker's incremental fetch session, KIP-227), and waits for whichever comes
first: a response, a connection, an offset lookup, or a change made by the
user.  Responses to different brokers are in flight at the same time.

Fetched record data is buffered undecoded per partition and decoded when the
user asks for records (:meth:`Fetcher.drain`), so no work is spent on records
nobody reads and memory stays bounded: a partition with buffered data is not
fetched again, and no fetch is sent while the buffers hold ``fetch_max_bytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter, itemgetter
from typing import Any

from rackafka._tasks import cancel_and_wait
from rackafka.client import KafkaClient
from rackafka.cluster import Broker, ClusterMetadata
from rackafka.consumer.fetch_session import (
    FETCH_SESSION_ID_NOT_FOUND,
    FETCH_SESSION_TOPIC_ID_ERROR,
    INVALID_FETCH_SESSION_EPOCH,
    FetchSession,
    PartitionFetchState,
)
from rackafka.consumer.routing import FetchErrorAction, ReadReplicaPolicy, RoutingChange
from rackafka.errors import (
    CorruptRecordException,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    RecordDeserializationError,
    UnsupportedVersionError,
    for_code,
    is_invalid_metadata,
    is_retriable,
)
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.apis.list_offsets import LIST_OFFSETS
from rackafka.protocol.apis.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from rackafka.protocol.schema import UUID_ZERO
from rackafka.records import CONTROL_ABORT, iter_batches
from rackafka.records.scan import last_batch_end
from rackafka.structs import ConsumerRecord, TopicPartition
from rackafka.subscription import (
    COMMITTED,
    NONE,
    RESET_TIMESTAMPS,
    PartitionState,
    SubscriptionState,
)

log = logging.getLogger("rackafka.consumer.fetcher")

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
_RACK_AWARE_FETCH_VERSION = 11
_TOPIC_ID_FETCH_VERSION = 13
_NOT_LEADER_OR_FOLLOWER = 6
_COMMITTED_LOOKUP = -100  # key of the committed-offsets lookup among the per-leader lookups
_MIN_BATCH_LENGTH = 14  # the smallest batch after its length field (a v0 message)
#: Fetches in a row that may return only an incomplete batch before it is corrupt.
_INCOMPLETE_FETCHES = 3
#: A compressed batch may inflate to this many times the larger of ``fetch_max_bytes``
#: and ``max_partition_fetch_bytes`` (and to MIN_DECOMPRESSED_LIMIT in any case).
DECOMPRESSED_LIMIT_FACTOR = 2
MIN_DECOMPRESSED_LIMIT = 64 * 1024 * 1024


@dataclass
class NodeCounters:
    """Fetch traffic served by one node (or one rack)."""

    requests: int = 0
    records: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class PartitionRoute:
    """Where one assigned partition is read from."""

    read_from: int | None
    read_from_rack: str | None
    leader: int | None
    leader_rack: str | None
    preferred_read_replica: int | None


@dataclass
class FetchStats:
    """Where fetched data came from: per node, per rack, and per partition.

    ``bytes`` count record data received in Fetch responses; ``records``
    count records handed to the application.
    """

    client_rack: str | None
    nodes: dict[int, NodeCounters] = field(default_factory=dict)
    racks: dict[str | None, NodeCounters] = field(default_factory=dict)
    partitions: dict[TopicPartition, PartitionRoute] = field(default_factory=dict)
    routing_changes: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.nodes.values())

    @property
    def same_rack_bytes(self) -> int:
        """Bytes served by brokers in ``client_rack`` (0 when it is unset)."""
        if self.client_rack is None:
            return 0
        return self.racks.get(self.client_rack, NodeCounters()).bytes

    @property
    def cross_rack_bytes(self) -> int:
        """Bytes served by brokers outside ``client_rack``."""
        return self.total_bytes - self.same_rack_bytes

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for logs and JSON."""
        return {
            "client_rack": self.client_rack,
            "nodes": {n: vars(c).copy() for n, c in self.nodes.items()},
            "racks": {r: vars(c).copy() for r, c in self.racks.items()},
            "partitions": {
                f"{tp.topic}-{tp.partition}": vars(r).copy() for tp, r in self.partitions.items()
            },
            "routing_changes": self.routing_changes,
            "same_rack_bytes": self.same_rack_bytes,
            "cross_rack_bytes": self.cross_rack_bytes,
        }


class _Buffered:
    """Undecoded record data of one partition from one fetch response."""

    __slots__ = (
        "aborted",
        "aborted_pids",
        "batches",
        "failure",
        "node",
        "pending",
        "pending_next",
        "pending_pos",
        "size",
        "tp",
    )

    def __init__(
        self,
        tp: TopicPartition,
        node: int,
        data: bytes,
        aborted: list[tuple[int, int]] | None,
        check_crcs: bool,
        max_decompressed_size: int,
    ) -> None:
        self.tp = tp
        self.node = node
        self.size = len(data)
        self.batches: Iterator[Any] | None = iter_batches(
            data,
            check_crcs=check_crcs,
            topic=tp.topic,
            partition=tp.partition,
            max_decompressed_size=max_decompressed_size,
        )
        # (first_offset, producer_id), ascending, for read_committed.
        self.aborted: deque[tuple[int, int]] | None = (
            deque(sorted(aborted)) if aborted is not None else None
        )
        self.aborted_pids: set[int] = set()
        self.pending: list[Any] = []
        self.pending_pos = 0
        self.pending_next = -1
        #: An error to record for the partition once ``pending`` is handed out.
        self.failure: Exception | None = None


@dataclass
class _InFlight:
    node: int
    future: asyncio.Future[Any]
    version: int
    offsets: dict[TopicPartition, int]
    topic_names: dict[Any, str]
    sent_at: float
    #: A sessionless fetch on the "seek" channel, for partitions seeked while the
    #: broker held their fetch (see :meth:`Fetcher.seek`).
    side: bool = False


class Fetcher:
    """Fetches records for the assigned partitions in the background."""

    def __init__(
        self,
        client: KafkaClient,
        subscriptions: SubscriptionState,
        *,
        client_rack: str | None = None,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52428800,
        fetch_max_wait_ms: int = 500,
        max_partition_fetch_bytes: int = 1048576,
        check_crcs: bool = True,
        isolation_level: int = READ_UNCOMMITTED,
        retry_backoff_ms: float = 100,
        metadata_max_age_ms: float = 300000,
        consumer_timeout_ms: float = 200,
        key_deserializer: Callable[[Any], Any] | None = None,
        value_deserializer: Callable[[Any], Any] | None = None,
        record_tuples: bool = False,
    ) -> None:
        self._client = client
        self._cluster: ClusterMetadata = client.cluster
        self._subs = subscriptions
        self.client_rack = client_rack
        self._min_bytes = fetch_min_bytes
        self._max_bytes = fetch_max_bytes
        self._max_wait_ms = fetch_max_wait_ms
        self._partition_max_bytes = max_partition_fetch_bytes
        self._check_crcs = check_crcs
        self._isolation = isolation_level
        self._backoff = retry_backoff_ms / 1000
        self._idle = consumer_timeout_ms / 1000
        self._key_deser = key_deserializer
        self._value_deser = value_deserializer
        self._backoff_max = max(self._backoff * 10, 1.0)
        self.policy: ReadReplicaPolicy[TopicPartition] = ReadReplicaPolicy(
            lease_s=metadata_max_age_ms / 1000,
            backoff_s=self._backoff,
            max_backoff_s=self._backoff_max,
        )
        self._sessions: dict[int, FetchSession[TopicPartition]] = {}
        self._inflight: dict[int, _InFlight] = {}
        self._inflight_tps: set[TopicPartition] = set()
        #: Partitions seeked while a fetch of theirs was in flight, and the side fetches
        #: sent for them (so that a seek does not wait for a long poll to end).
        self._seeked: set[TopicPartition] = set()
        self._side: dict[int, _InFlight] = {}
        self._side_tps: set[TopicPartition] = set()
        self._connecting: dict[int | tuple[int, str], asyncio.Task[Any]] = {}
        self._lookups: dict[int, asyncio.Task[None]] = {}
        self._lookup_tps: set[TopicPartition] = set()
        self._buffered: deque[_Buffered] = deque()
        #: Bytes buffered per partition (a partition is fetched ahead while it
        #: holds less than max_partition_fetch_bytes).
        self._tp_bytes: dict[TopicPartition, int] = {}
        self._buffered_bytes = 0
        self._node_backoff_until: dict[int, float] = {}
        #: Offset lookups in a row that failed, per leader.
        self._lookup_failures: dict[int, int] = {}
        #: A partition whose fetch failed is not fetched (or reset) again before this time;
        #: errors in a row double the pause (see :meth:`_partition_backoff`).
        self._tp_retry_at: dict[TopicPartition, float] = {}
        self._tp_error_streak: dict[TopicPartition, int] = {}
        #: No fetch to a node before this time (it answered without data, at once).
        self._node_pace_until: dict[int, float] = {}
        #: Consecutive fetches of a partition that gave only an incomplete batch.
        self._incomplete: dict[TopicPartition, tuple[int, int]] = {}
        #: A compressed batch may inflate to this many bytes at most.
        self._max_decompressed = max(
            MIN_DECOMPRESSED_LIMIT,
            DECOMPRESSED_LIMIT_FACTOR * max(fetch_max_bytes, max_partition_fetch_bytes),
        )
        self._fetch_versions: dict[int, int] = {}
        self._leader_epochs: dict[TopicPartition, int] = {}
        self._stats = FetchStats(client_rack)
        self._factories: dict[TopicPartition, Callable[..., Any]] = {}
        #: Records as the decoder's plain 9-tuples (offset first) instead of ConsumerRecord.
        self._record_tuples = record_tuples
        self._offset_of: Callable[[Any], int] = (
            itemgetter(0) if record_tuples else attrgetter("offset")
        )
        self._wakeup = asyncio.Event()
        #: Looks up committed offsets (set by the consumer when it has a group_id).
        self.committed_lookup: Callable[[list[TopicPartition]], Awaitable[Any]] | None = None
        self._errors_pending = False
        #: The sticky error raised last (see :meth:`raise_pending_errors`).
        self._last_raised: BaseException | None = None
        self.data_ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._cluster.add_listener(self._on_metadata)

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self) -> None:
        self._closed = True
        self._cluster.remove_listener(self._on_metadata)
        tasks: list[asyncio.Future[Any]] = []
        if self._task is not None:
            tasks.append(self._task)
        tasks += list(self._connecting.values()) + list(self._lookups.values())
        await cancel_and_wait(tasks)
        for entry in [*self._inflight.values(), *self._side.values()]:
            entry.future.cancel()
        self._inflight.clear()
        self._side.clear()

    def wakeup(self) -> None:
        """Make the fetch loop look at the assignment again now."""
        self._wakeup.set()

    # -- user-facing state changes ---------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        state = self._subs.state(tp)
        if state is None:
            return
        state.set_position(offset)
        state.awaiting_validation = False
        self._tp_retry_at.pop(tp, None)  # the user moved: try at once
        if tp in self._inflight_tps:
            self._seeked.add(tp)
        self._drop_buffered(tp)
        self.wakeup()

    def request_reset(self, tps: list[TopicPartition], strategy: str) -> None:
        for tp in tps:
            state = self._subs.state(tp)
            if state is not None:
                state.request_reset(strategy)
                self._drop_buffered(tp)
        self.wakeup()

    def on_assignment(self) -> None:
        """The assignment changed: drop what belongs to revoked partitions."""
        assigned = self._subs.assigned()
        for tp in [tp for tp in self._tp_bytes if tp not in assigned]:
            self._drop_buffered(tp)
        gone = [tp for tp in self.policy.snapshot() if tp not in assigned]
        self.policy.forget_all(gone)
        for tp in list(self._factories):
            if tp not in assigned:
                del self._factories[tp]
        self._client.add_topics({tp.topic for tp in assigned})
        self.wakeup()

    def _drop_buffered(self, tp: TopicPartition) -> None:
        size = self._tp_bytes.pop(tp, None)
        if size is None:
            return
        self._buffered_bytes -= size
        self._buffered = deque(b for b in self._buffered if b.tp != tp)
        self.wakeup()

    # -- stats -------------------------------------------------------------------

    def stats(self) -> FetchStats:
        """A snapshot of where data was read from, per node, rack and partition."""
        now = time.monotonic()
        out = FetchStats(self.client_rack, routing_changes=self._stats.routing_changes)
        for node, c in self._stats.nodes.items():
            out.nodes[node] = NodeCounters(c.requests, c.records, c.bytes)
            rack = self._rack(node)
            agg = out.racks.setdefault(rack, NodeCounters())
            agg.requests += c.requests
            agg.records += c.records
            agg.bytes += c.bytes
        for state in self._subs.states():
            tp = state.tp
            leader = self._cluster.leader_for(tp)
            preferred = self.policy.preferred(tp, now)
            read_from = preferred if preferred is not None else leader
            out.partitions[tp] = PartitionRoute(
                read_from,
                self._rack(read_from) if read_from is not None else None,
                leader,
                self._rack(leader) if leader is not None else None,
                preferred,
            )
        return out

    def _on_metadata(self, cluster: ClusterMetadata) -> None:
        """Apply metadata changes to routing, and validate positions after leader moves."""
        leaders: dict[TopicPartition, int] = {}
        for state in self._subs.states():
            tp = state.tp
            info = cluster.partition(tp)
            if info is None:
                continue
            if info.leader >= 0:
                leaders[tp] = info.leader
            previous = self._leader_epochs.get(tp)
            self._leader_epochs[tp] = info.leader_epoch
            if (
                previous is not None
                and info.leader_epoch > previous
                and state.has_valid_position
                and state.position_epoch >= 0
                # Fetch v12+ reports divergence itself (diverging_epoch).
                and self._fetch_versions.get(info.leader, 0) < 12
            ):
                state.awaiting_validation = True
        for change in self.policy.on_metadata(set(cluster.brokers), leaders):
            self._log_change(change)
        self.wakeup()

    def _rack(self, node: int) -> str | None:
        return self._cluster.rack_of(node)

    def _count(self, node: int) -> NodeCounters:
        c = self._stats.nodes.get(node)
        if c is None:
            c = self._stats.nodes[node] = NodeCounters()
        return c

    def _log_change(self, change: RoutingChange[TopicPartition] | None) -> None:
        if change is None:
            return
        self._stats.routing_changes += 1
        if log.isEnabledFor(logging.DEBUG):
            state = self._subs.state(change.tp)
            leader = self._cluster.leader_for(change.tp)
            target = change.new if change.new is not None else leader
            log.debug(
                "%s-%d at offset %s -> node %s (rack %s), leader %s: %s",
                change.tp.topic,
                change.tp.partition,
                state.position if state is not None else None,
                target,
                self._rack(target) if target is not None else None,
                leader,
                change.reason,
            )

    # -- draining ------------------------------------------------------------------

    def has_buffered(self, partitions: set[TopicPartition] | None = None) -> bool:
        if not self._buffered:
            return False
        if partitions is None:
            return True
        return any(tp in self._tp_bytes for tp in partitions)

    def _fail(self, state: PartitionState, error: BaseException, *, sticky: bool = False) -> None:
        """Record an error to raise to the user on the next poll of the partition.

        A ``sticky`` error (bad record data at the position) is raised on every poll
        until the position changes (seek, reset, reassignment); the partition is not
        fetched meanwhile.
        """
        state.error = error
        state.error_sticky = sticky
        self._errors_pending = True
        self.data_ready.set()  # wake a waiting getmany()/getone() to raise it now

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
        task = self._task
        if task is not None and task.done() and not task.cancelled():
            exc = task.exception()
            if exc is not None:
                raise exc
        auth_failure = self._client.take_auth_failure()
        if auth_failure is not None:
            raise auth_failure  # as Java's poll(): raised once, the client retries later
        if not self._errors_pending:
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
        self._errors_pending = found

    def has_sticky_error(self, partitions: set[TopicPartition] | None = None) -> bool:
        """Whether a partition of ``partitions`` holds an error raised before."""
        if not self._errors_pending:
            return False
        return any(
            s.error is not None and s.error_sticky and (partitions is None or s.tp in partitions)
            for s in self._subs.states()
        )

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
                    self._count(buf.node).records += 1
                    return record
        for records in self.drain(partitions, 1).values():
            return records[0]
        return None

    def _factory(self, tp: TopicPartition) -> Callable[..., Any] | None:
        if self._record_tuples:
            return None  # the decoder's own tuples
        factory = self._factories.get(tp)
        if factory is not None:
            return factory
        kd, vd = self._key_deser, self._value_deser
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

        self._factories[tp] = factory
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
        skipped: deque[_Buffered] = deque()
        while self._buffered and budget > 0:
            buf = self._buffered[0]
            tp = buf.tp
            if partitions is not None and tp not in partitions:
                skipped.append(self._buffered.popleft())
                continue
            state = self._subs.state(tp)
            if state is None or state.paused or state.pending_revocation or state.position is None:
                if state is not None and (state.paused or state.pending_revocation):
                    skipped.append(self._buffered.popleft())
                else:
                    self._pop_buffer()
                continue
            taken = self._take(buf, state, budget)
            if state.error is not None:
                # A corrupt batch: nothing after it may be delivered or skipped.
                self._drop_buffered(tp)
            if taken:
                existing = out.get(tp)
                if existing is None:
                    out[tp] = taken
                else:
                    existing.extend(taken)
                budget -= len(taken)
                self._count(buf.node).records += len(taken)
            if (
                self._buffered
                and self._buffered[0] is buf
                and buf.pending_pos >= len(buf.pending)
                and buf.batches is None
                and buf.failure is None
            ):
                self._pop_buffer()
        self._requeue(skipped)
        if not self._buffered:
            self.data_ready.clear()
            self.wakeup()
        return out

    def _requeue(self, skipped: deque[_Buffered]) -> None:
        if skipped:
            skipped.extend(self._buffered)
            self._buffered = skipped

    def _pop_buffer(self) -> None:
        buf = self._buffered.popleft()
        self._buffered_bytes -= buf.size
        left = self._tp_bytes.get(buf.tp, 0) - buf.size
        if left > 0:
            self._tp_bytes[buf.tp] = left
        else:
            self._tp_bytes.pop(buf.tp, None)
        self.wakeup()

    def _take(self, buf: _Buffered, state: PartitionState, budget: int) -> list[Any]:
        """Records of ``buf`` from the partition's position, at most ``budget``.

        A batch that cannot be decoded, or a record a deserializer rejects, ends the
        buffer: the records before it are handed out first, then the error is recorded
        for the partition with the position at the failing batch or record.  Nothing
        after it is delivered or skipped.
        """
        taken: list[Any] = []
        position = state.position
        assert position is not None
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
                self._fail(state, buf.failure, sticky=not deserializer)
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
                if self._skip_batch(buf, batch):
                    position = next_offset
                    continue
                records = batch.records(self._factory(buf.tp))
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

    def _failed_batch(self, buf: _Buffered, batch: Any, position: int, exc: Exception) -> None:
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
        factory = self._factory(buf.tp)
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

    def _skip_batch(self, buf: _Buffered, batch: Any) -> bool:
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

    # -- the loop --------------------------------------------------------------------

    async def _run(self) -> None:
        wakeup_task: asyncio.Task[Any] | None = None
        try:
            while not self._closed:
                now = time.monotonic()
                deadline = now + self._idle
                deadline = min(deadline, self._start_lookups(now))
                if self._buffered_bytes < self._max_bytes:
                    deadline = min(deadline, self._send_fetches(now))
                waiters: set[asyncio.Future[Any]] = {e.future for e in self._inflight.values()}
                waiters.update(e.future for e in self._side.values())
                waiters.update(self._connecting.values())
                waiters.update(self._lookups.values())
                if wakeup_task is None or wakeup_task.done():
                    self._wakeup.clear()
                    wakeup_task = asyncio.ensure_future(self._wakeup.wait())
                waiters.add(wakeup_task)
                timeout = max(0.0, deadline - time.monotonic())
                await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                self._handle_done()
        except asyncio.CancelledError:
            raise
        except Exception:
            # A bug here must be loud, not a silent stall: getmany()/getone() raise it.
            log.exception("fetch loop failed")
            self.data_ready.set()
            raise
        finally:
            if wakeup_task is not None:
                wakeup_task.cancel()

    def _handle_done(self) -> None:
        """Handle the fetch responses that arrived.

        A method of its own so that no local of :meth:`_run` keeps a response (and
        with it every partition's record data) alive while the loop waits.
        """
        for node, entry in list(self._inflight.items()):
            if entry.future.done():
                del self._inflight[node]
                self._inflight_tps.difference_update(entry.offsets)
                self._seeked.difference_update(entry.offsets)
                self._handle_fetch(entry)
        for node, entry in list(self._side.items()):
            if entry.future.done():
                del self._side[node]
                self._side_tps.difference_update(entry.offsets)
                self._handle_fetch(entry)

    # -- offset lookups (resets and KIP-320 validation), always to the leader ------------

    def _start_lookups(self, now: float) -> float:
        deadline = now + self._idle
        resets: dict[int, dict[TopicPartition, str]] = {}
        validations: dict[int, list[PartitionState]] = {}
        committed: list[TopicPartition] = []
        for state in self._subs.states():
            tp = state.tp
            if tp in self._lookup_tps or (state.error is not None and state.reset != NONE):
                continue  # looked up now, or an error to raise first
            retry_at = self._tp_retry_at.get(tp, 0.0)
            if retry_at > now:
                deadline = min(deadline, retry_at)
                continue
            if state.reset == COMMITTED:
                if self.committed_lookup is None:
                    state.request_reset(self._subs.default_reset)
                else:
                    committed.append(tp)
                    continue
            wants_reset = state.reset is not None and state.reset != NONE
            if state.reset == NONE and state.error is None:
                # No position and auto_offset_reset="none" (aiokafka raises this too).
                self._fail(
                    state,
                    NoOffsetForPartitionError(
                        f"{tp.topic}-{tp.partition} has no position and auto_offset_reset "
                        "is 'none': seek() to an offset first"
                    ),
                )
                continue
            if not wants_reset and not state.awaiting_validation:
                continue
            leader = self._cluster.leader_for(tp)
            if leader is None or self._cluster.broker(leader) is None:
                self._client.request_update()
                continue
            if self._node_backoff_until.get(leader, 0) > now:
                deadline = min(deadline, self._node_backoff_until[leader])
                continue
            if wants_reset:
                resets.setdefault(leader, {})[tp] = state.reset  # type: ignore[assignment]
            else:
                validations.setdefault(leader, []).append(state)
        if committed and _COMMITTED_LOOKUP not in self._lookups:
            self._lookup_tps.update(committed)
            self._lookups[_COMMITTED_LOOKUP] = asyncio.ensure_future(self._committed(committed))
        for leader, tps in resets.items():
            if leader not in self._lookups:
                self._lookup_tps.update(tps)
                self._lookups[leader] = asyncio.ensure_future(self._reset(leader, tps))
        for leader, states in validations.items():
            if leader not in self._lookups:
                self._lookup_tps.update(s.tp for s in states)
                self._lookups[leader] = asyncio.ensure_future(self._validate(leader, states))
        return deadline

    def _lookup_done(self, leader: int, tps: Any) -> None:
        self._lookups.pop(leader, None)
        self._lookup_tps.difference_update(tps)
        self.wakeup()

    async def _committed(self, tps: list[TopicPartition]) -> None:
        """Positions from the group's committed offsets, else ``auto_offset_reset``."""
        assert self.committed_lookup is not None
        try:
            found = await self.committed_lookup(tps)
            for tp in tps:
                state = self._subs.state(tp)
                if state is None or state.reset != COMMITTED:
                    continue
                meta = found.get(tp)
                if meta is not None and meta.offset >= 0:
                    log.debug(
                        "%s-%d starts at committed offset %d", tp.topic, tp.partition, meta.offset
                    )
                    state.set_position(meta.offset)
                else:
                    state.request_reset(self._subs.default_reset)
        except KafkaError as exc:
            if not _retriable(exc):
                # GROUP_AUTHORIZATION_FAILED and the like: every poll raises it (the
                # lookup is tried again after the backoff), never a silent stall.
                log.error("committed offsets lookup failed: %s", exc)
                for tp in tps:
                    state = self._subs.state(tp)
                    if state is not None and state.reset == COMMITTED:
                        self._fail(state, exc)
            else:
                log.debug("committed offsets lookup failed: %s", exc)
            await asyncio.sleep(self._backoff)
        finally:
            self._lookup_done(_COMMITTED_LOOKUP, tps)

    async def _reset(self, leader: int, tps: dict[TopicPartition, str]) -> None:
        done = 0
        try:
            timestamps = {tp: RESET_TIMESTAMPS[s] for tp, s in tps.items()}
            failed: dict[TopicPartition, KafkaError] = {}
            results = await self.list_offsets_from(leader, timestamps, errors=failed)
            for tp, (offset, _ts, epoch) in results.items():
                state = self._subs.state(tp)
                if state is None or state.reset != tps[tp]:
                    continue  # unassigned or reset/seeked again meanwhile
                if offset < 0:
                    log.warning(
                        "%s-%d: ListOffsets from node %d gave offset %d; retrying",
                        tp.topic,
                        tp.partition,
                        leader,
                        offset,
                    )
                    continue
                log.debug("reset %s-%d to offset %d (%s)", tp.topic, tp.partition, offset, tps[tp])
                state.set_position(offset, -1)
                state.validated_epoch = epoch
                done += 1
            for tp, error in failed.items():
                state = self._subs.state(tp)
                if state is not None and state.reset == tps[tp] and state.error is None:
                    self._fail(state, error)  # raised by the next poll, then retried
        except KafkaError as exc:
            log.debug("offset reset via node %d failed: %s", leader, exc)
            if not _retriable(exc):
                for tp in tps:
                    state = self._subs.state(tp)
                    if state is not None and state.reset == tps[tp] and state.error is None:
                        self._fail(state, exc)
            self._client.request_update()
        finally:
            self._lookup_failed(leader, done < len(tps))
            self._lookup_done(leader, tps)

    def _lookup_failed(self, leader: int, failed: bool) -> None:
        """Back off from ``leader`` after a lookup that did not give every answer,
        doubling on failures in a row (as the routing policy does)."""
        if not failed:
            self._lookup_failures.pop(leader, None)
            return
        n = self._lookup_failures.get(leader, 0)
        self._lookup_failures[leader] = n + 1
        delay = min(self._backoff * 2**n, self._backoff_max)
        self._node_backoff_until[leader] = time.monotonic() + delay

    async def _validate(self, leader: int, states: list[PartitionState]) -> None:
        """KIP-320: check positions against the leader's log after a leader change."""
        tps = [s.tp for s in states]
        try:
            version = await self._client.api_version(leader, OFFSET_FOR_LEADER_EPOCH)
            topics: dict[str, list[dict[str, int]]] = {}
            sent: dict[TopicPartition, tuple[int | None, int]] = {}
            for s in states:
                info = self._cluster.partition(s.tp)
                current = info.leader_epoch if info is not None else -1
                sent[s.tp] = (s.position, current)
                topics.setdefault(s.tp.topic, []).append(
                    {
                        "partition": s.tp.partition,
                        "current_leader_epoch": current,
                        "leader_epoch": s.position_epoch,
                    }
                )
            request = OFFSET_FOR_LEADER_EPOCH.Request(
                replica_id=-1,
                topics=[{"topic": t, "partitions": p} for t, p in topics.items()],
            )
            response = await self._client.send(
                leader, OFFSET_FOR_LEADER_EPOCH, request, version=version
            )
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, p.partition)
                    state = self._subs.state(tp)
                    if state is None or tp not in sent or state.position != sent[tp][0]:
                        continue
                    if p.error_code:
                        err = for_code(p.error_code)
                        if is_invalid_metadata(err):
                            self._client.request_update()
                        if is_retriable(err) or is_invalid_metadata(err):
                            self._node_backoff_until[leader] = time.monotonic() + self._backoff
                        else:
                            state.awaiting_validation = False  # cannot validate: go on
                        continue
                    state.awaiting_validation = False
                    state.validated_epoch = sent[tp][1]
                    position = state.position
                    if position is not None and 0 <= p.end_offset < position:
                        log.warning(
                            "log truncation detected on %s-%d: position %d is past the end "
                            "offset %d of epoch %d; continuing from %d",
                            tp.topic,
                            tp.partition,
                            position,
                            p.end_offset,
                            p.leader_epoch,
                            p.end_offset,
                        )
                        self._drop_buffered(tp)
                        state.set_position(p.end_offset, p.leader_epoch)
        except UnsupportedVersionError:
            for s in states:
                s.awaiting_validation = False
        except KafkaError as exc:
            log.debug("offset validation via node %d failed: %s", leader, exc)
            self._node_backoff_until[leader] = time.monotonic() + self._backoff
        finally:
            self._lookup_done(leader, tps)

    async def list_offsets_from(
        self,
        leader: int,
        timestamps: dict[TopicPartition, int],
        *,
        errors: dict[TopicPartition, KafkaError] | None = None,
    ) -> dict[TopicPartition, tuple[int, int, int]]:
        """ListOffsets to one leader: ``tp -> (offset, timestamp, leader_epoch)``.

        Partitions with a retriable error are left out of the result (the
        caller retries); a non-retriable one raises, or goes into ``errors``
        when it is given.
        """
        version = await self._client.api_version(leader, LIST_OFFSETS)
        topics: dict[str, list[dict[str, int]]] = {}
        for tp, ts in timestamps.items():
            info = self._cluster.partition(tp)
            topics.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "current_leader_epoch": info.leader_epoch if info is not None else -1,
                    "timestamp": ts,
                }
            )
        request = LIST_OFFSETS.Request(
            replica_id=-1,
            isolation_level=self._isolation,
            topics=[{"name": t, "partitions": p} for t, p in topics.items()],
        )
        response = await self._client.send(leader, LIST_OFFSETS, request, version=version)
        out: dict[TopicPartition, tuple[int, int, int]] = {}
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.error_code:
                    err = for_code(p.error_code)
                    if is_invalid_metadata(err) or is_retriable(err):
                        self._client.request_update()
                        continue
                    error = err(f"ListOffsets for {tp.topic}-{tp.partition} from node {leader}")
                    if errors is None:
                        raise error
                    errors[tp] = error
                    continue
                out[tp] = (p.offset, p.timestamp, p.leader_epoch)
        return out

    async def list_offsets(
        self, timestamps: dict[TopicPartition, int], timeout: float
    ) -> dict[TopicPartition, tuple[int, int, int]]:
        """ListOffsets for any partitions, each from its leader, retried until ``timeout``."""
        deadline = time.monotonic() + timeout
        remaining = dict(timestamps)
        out: dict[TopicPartition, tuple[int, int, int]] = {}
        self._client.add_topics({tp.topic for tp in remaining})
        while remaining:
            by_leader: dict[int, dict[TopicPartition, int]] = {}
            missing = False
            for tp, ts in remaining.items():
                leader = self._cluster.leader_for(tp)
                if leader is None:
                    missing = True
                else:
                    by_leader.setdefault(leader, {})[tp] = ts
            try:
                results = await asyncio.wait_for(
                    asyncio.gather(
                        *(self.list_offsets_from(n, tps) for n, tps in by_leader.items()),
                        return_exceptions=True,
                    ),
                    max(0.01, deadline - time.monotonic()),
                )
            except asyncio.TimeoutError:
                raise KafkaTimeoutError(
                    f"offsets of {sorted(remaining)} not found within {timeout:.3g} s"
                ) from None
            for res in results:
                if isinstance(res, BaseException):
                    if isinstance(res, KafkaError) and _retriable(res):
                        continue
                    raise res
                out.update(res)
                for tp in res:
                    remaining.pop(tp, None)
            if not remaining:
                break
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(
                    f"offsets of {sorted(remaining)} not found within {timeout:.3g} s"
                )
            if missing or results:
                # The deadline is checked above: a refresh cut short is just retried.
                with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                    await asyncio.wait_for(
                        self._client.refresh_metadata(), max(0.01, deadline - time.monotonic())
                    )
            await asyncio.sleep(max(0.0, min(self._backoff, deadline - time.monotonic())))
        return out

    # -- fetch requests --------------------------------------------------------------

    def _send_fetches(self, now: float) -> float:
        deadline = now + self._idle
        by_node: dict[int, list[PartitionState]] = {}
        side_by_node: dict[int, list[PartitionState]] = {}
        cluster = self._cluster
        node_known = self._node_known
        backing_off = self._node_backing_off
        for state in self._subs.states():
            tp = state.tp
            side = False
            if tp in self._inflight_tps:
                # Seeked while the broker holds its fetch (a long poll): fetch the new
                # position on the side instead of waiting for the poll to end.
                if tp not in self._seeked or tp in self._side_tps:
                    continue
                side = True
            if (
                not state.is_fetchable
                or self._tp_bytes.get(tp, 0) >= self._partition_max_bytes
                or tp in self._lookup_tps
            ):
                continue
            if tp in self._tp_retry_at:
                retry_at = self._tp_retry_at[tp]
                if retry_at > now:
                    deadline = min(deadline, retry_at)
                    continue
                del self._tp_retry_at[tp]
            leader = cluster.leader_for(tp)
            route = self.policy.select(
                tp, leader, now, node_known=node_known, node_backing_off=backing_off
            )
            self._log_change(route.change)
            if route.refresh_metadata or leader is None:
                self._client.request_update()
            if route.node is None:
                if route.retry_at is not None:
                    deadline = min(deadline, route.retry_at)
                continue
            (side_by_node if side else by_node).setdefault(route.node, []).append(state)
        for node, states in side_by_node.items():
            if node in self._side:
                continue
            conn = self._client.connection_if_ready(node, channel="seek")
            if conn is None:
                if (node, "seek") not in self._connecting:
                    self._connecting[(node, "seek")] = asyncio.ensure_future(
                        self._connect(node, "seek")
                    )
                continue
            with contextlib.suppress(KafkaError):  # the regular fetch comes anyway
                self._send_fetch(node, conn, states, side=True)
                self._seeked.difference_update(s.tp for s in states)
        for node, states in by_node.items():
            if node in self._inflight:
                continue
            pace = self._node_pace_until.get(node, 0.0)
            if pace > now:
                deadline = min(deadline, pace)
                continue
            conn = self._client.connection_if_ready(node)
            if conn is None:
                if node not in self._connecting:
                    self._connecting[node] = asyncio.ensure_future(self._connect(node))
                continue
            try:
                self._send_fetch(node, conn, states)
            except UnsupportedVersionError as exc:
                # No Fetch version in common: retrying cannot help, the user must know.
                self._node_failed(node, exc)
                for state in states:
                    if state.error is None:
                        self._fail(state, exc)
            except KafkaError as exc:
                self._node_failed(node, exc)
        return deadline

    def _node_known(self, node: int) -> bool:
        return node in self._cluster.brokers

    def _node_backing_off(self, node: int) -> bool:
        return self._node_backoff_until.get(
            node, 0
        ) > time.monotonic() or self._client.is_backing_off(node)

    async def _connect(self, node: int, channel: str = "") -> None:
        try:
            await self._client.connect(node, channel=channel)
        except KafkaError as exc:
            if not channel:
                self._node_failed(node, exc)
        finally:
            self._connecting.pop((node, channel) if channel else node, None)
            self.wakeup()

    def _node_failed(self, node: int, exc: BaseException) -> None:
        now = time.monotonic()
        # A broker that answers what cannot be decoded is worth a warning; the rest
        # (connections coming and going) is routine and retried.
        level = logging.WARNING if isinstance(exc, KafkaProtocolError) else logging.DEBUG
        log.log(level, "fetch from node %d failed: %s", node, exc)
        self._node_backoff_until[node] = now + self._backoff
        for change in self.policy.on_node_failure(node, now):
            self._log_change(change)
        session = self._sessions.get(node)
        if session is not None:
            session.handle_failure()
        self._client.request_update()

    def _send_fetch(
        self, node: int, conn: Any, states: list[PartitionState], *, side: bool = False
    ) -> None:
        version = conn.version(FETCH)
        if version < _RACK_AWARE_FETCH_VERSION and self.policy.note_old_broker(node):
            # Only worth a warning for a consumer that asked for rack-aware reads.
            log.log(
                logging.WARNING if self.client_rack else logging.DEBUG,
                "broker %d speaks Fetch up to v%d (< v11): it cannot name a closer replica, "
                "so partitions it leads are read from it whatever client_rack says",
                node,
                version,
            )
        topic_ids: dict[str, Any] = {}
        if version >= _TOPIC_ID_FETCH_VERSION:
            for s in states:
                tid = self._cluster.topic_ids.get(s.tp.topic)
                if tid is None or tid == UUID_ZERO:
                    version = min(version, _TOPIC_ID_FETCH_VERSION - 1)
                    break
                topic_ids[s.tp.topic] = tid
        wanted: dict[TopicPartition, PartitionFetchState] = {}
        for s in states:
            info = self._cluster.partition(s.tp)
            assert s.fetch_position is not None
            wanted[s.tp] = PartitionFetchState(
                s.fetch_position,
                info.leader_epoch if info is not None else -1,
                s.fetch_epoch,
                self._partition_max_bytes,
            )
        session: FetchSession[TopicPartition]
        if side:
            session = FetchSession(node)  # a full fetch outside the broker's session
        elif node in self._sessions:
            session = self._sessions[node]
        else:
            session = self._sessions[node] = FetchSession(node)
        plan = session.build(wanted)
        use_ids = version >= _TOPIC_ID_FETCH_VERSION
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, ps in plan.partitions.items():
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": ps.current_leader_epoch,
                    "fetch_offset": ps.fetch_offset,
                    "last_fetched_epoch": ps.last_fetched_epoch,
                    "log_start_offset": -1,
                    "partition_max_bytes": ps.max_bytes,
                }
            )
        forgotten: dict[str, list[int]] = {}
        for tp in plan.forgotten:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        if use_ids:
            for name in list(topics) + list(forgotten):
                if name not in topic_ids:
                    tid = self._cluster.topic_ids.get(name)
                    if tid is None or tid == UUID_ZERO:
                        # A forgotten topic without an id: start a fresh full session.
                        session.reset()
                        version = _TOPIC_ID_FETCH_VERSION - 1
                        use_ids = False
                        plan = session.build(wanted)
                        break
                    topic_ids[name] = tid
        request = FETCH.Request(
            replica_id=-1,
            max_wait_ms=self._max_wait_ms,
            min_bytes=self._min_bytes,
            max_bytes=self._max_bytes,
            isolation_level=self._isolation,
            session_id=0 if side else plan.session_id,
            session_epoch=-1 if side else plan.epoch,
            topics=[
                {"topic": t, "topic_id": topic_ids.get(t, UUID_ZERO), "partitions": p}
                for t, p in topics.items()
            ],
            forgotten_topics_data=[
                {"topic": t, "topic_id": topic_ids.get(t, UUID_ZERO), "partitions": p}
                for t, p in forgotten.items()
            ],
            rack_id=self.client_rack or "",
        )
        fut = conn.send(FETCH, request, version=version)
        self._count(node).requests += 1
        offsets = {tp: ps.fetch_offset for tp, ps in wanted.items()}
        names = {tid: name for name, tid in topic_ids.items()}
        entry = _InFlight(node, fut, version, offsets, names, time.monotonic(), side)
        if side:
            self._side[node] = entry
            self._side_tps.update(offsets)
        else:
            self._inflight[node] = entry
            self._inflight_tps.update(offsets)
        self._fetch_versions[node] = version
        timeout = conn.request_timeout + self._max_wait_ms / 1000
        timer = asyncio.get_running_loop().call_later(timeout, _expire, fut, conn, node, timeout)
        fut.add_done_callback(lambda _f: timer.cancel())

    # -- fetch responses -------------------------------------------------------------

    def _handle_fetch(self, entry: _InFlight) -> None:
        node = entry.node
        session = None if entry.side else self._sessions.get(node)
        try:
            response = entry.future.result()
        except asyncio.CancelledError:
            return
        except KafkaError as exc:
            self._node_failed(node, exc)
            return
        now = time.monotonic()
        if response.error_code:
            log.debug("fetch from node %d: top-level error %d", node, response.error_code)
            if session is not None:
                session.handle_response(response.error_code, response.session_id)
            if response.error_code not in (
                FETCH_SESSION_ID_NOT_FOUND,
                INVALID_FETCH_SESSION_EPOCH,
                FETCH_SESSION_TOPIC_ID_ERROR,
            ):
                self._node_backoff_until[node] = now + self._backoff
            return
        if session is not None:
            session.handle_response(0, response.session_id)
        # KIP-951: brokers named in the response, for leader moves below.
        if response.node_endpoints:
            self._cluster.add_brokers(
                Broker(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints
            )
        wall_ms = int(time.time() * 1000)
        counters = self._count(node)
        got_data = False
        errors = False
        for topic in response.responses:
            name = topic.topic or entry.topic_names.get(topic.topic_id)
            if not name:
                continue
            for p in topic.partitions:
                tp = TopicPartition(name, p.partition_index)
                sent_offset = entry.offsets.get(tp)
                state = self._subs.state(tp)
                if state is None or sent_offset is None or state.fetch_position != sent_offset:
                    continue  # unassigned, not asked, or seeked since: stale
                if p.error_code:
                    errors = True
                    self._partition_error(tp, state, node, p, now)
                    continue
                if p.high_watermark >= 0:
                    state.highwater = p.high_watermark
                    state.last_poll_timestamp = wall_ms
                if p.last_stable_offset >= 0:
                    state.last_stable_offset = p.last_stable_offset
                if p.log_start_offset >= 0:
                    state.log_start_offset = p.log_start_offset
                leader = self._cluster.leader_for(tp)
                self._log_change(
                    self.policy.on_fetch_response(tp, node, leader, p.preferred_read_replica, now)
                )
                diverging = p.diverging_epoch
                if diverging is not None and diverging.end_offset >= 0:
                    self._truncated(tp, state, diverging.epoch, diverging.end_offset)
                    continue
                records = p.records
                if records:
                    counters.bytes += len(records)
                    batch_end = last_batch_end(records)
                    if batch_end is None:
                        # No complete batch: a batch cut by the response size limit is
                        # fetched again; one that never arrives whole is an error.
                        self._incomplete_batch(tp, state, node, sent_offset, records)
                        continue
                    self._incomplete.pop(tp, None)
                    end, end_epoch = batch_end
                    if end <= sent_offset:
                        # Only records below the fetch offset (a broker that ignores it):
                        # nothing to give, no progress. Asking again at once would spin:
                        # back off as for an error, longer on each repeat.
                        log.debug(
                            "%s-%d: node %d answered a fetch at offset %d with records "
                            "ending at %d only",
                            tp.topic,
                            tp.partition,
                            node,
                            sent_offset,
                            end,
                        )
                        self._partition_backoff(tp, now)
                        continue
                    self._tp_error_streak.pop(tp, None)
                    if end > sent_offset:
                        state.fetch_position = end
                        state.fetch_epoch = end_epoch
                    aborted = None
                    if self._isolation == READ_COMMITTED:
                        aborted = [
                            (a.first_offset, a.producer_id) for a in (p.aborted_transactions or [])
                        ]
                    self._buffer(
                        _Buffered(
                            tp, node, records, aborted, self._check_crcs, self._max_decompressed
                        )
                    )
                    got_data = True
        if got_data:
            self.data_ready.set()
        elif not errors and now - entry.sent_at < self._backoff and not _has_records(response):
            # Nothing fetched and nothing wrong, yet answered at once: a broker that does
            # not wait for data (or keeps redirecting to itself).  Do not ask it again
            # before retry_backoff_ms, or the loop would spin.
            self._node_pace_until[node] = entry.sent_at + self._backoff

    def _buffer(self, buf: _Buffered) -> None:
        self._buffered.append(buf)
        self._tp_bytes[buf.tp] = self._tp_bytes.get(buf.tp, 0) + buf.size
        self._buffered_bytes += buf.size

    def _incomplete_batch(
        self, tp: TopicPartition, state: PartitionState, node: int, offset: int, records: bytes
    ) -> None:
        """A fetch at ``offset`` returned record data without one complete batch.

        A broker cuts the batches of a partition when the response reaches its size
        limit, and serves the first one whole when it is asked again; a batch whose size
        is impossible, or that stays incomplete, is corrupt: the error is raised in turn,
        after the records before it.
        """
        length = int.from_bytes(records[8:12], "big", signed=True) if len(records) >= 12 else 0
        seen_offset, count = self._incomplete.get(tp, (offset, 0))
        count = count + 1 if seen_offset == offset else 1
        self._incomplete[tp] = (offset, count)
        if len(records) >= 12 and length < _MIN_BATCH_LENGTH:
            reason = f"record batch size {length} is impossible"
        elif count >= _INCOMPLETE_FETCHES:
            reason = (
                f"{count} fetches returned only an incomplete batch ({len(records)} of "
                f"{length + 12} bytes)"
            )
        else:
            self._node_pace_until[node] = time.monotonic() + self._backoff / 4
            return
        self._incomplete.pop(tp, None)
        state.fetch_position = offset
        buf = _Buffered(tp, node, b"", None, self._check_crcs, self._max_decompressed)
        buf.batches = None
        buf.pending_next = offset
        buf.failure = CorruptRecordException(
            f"{tp.topic}-{tp.partition} at offset {offset}: {reason}"
        )
        self._buffer(buf)
        self.data_ready.set()

    def _truncated(self, tp: TopicPartition, state: PartitionState, epoch: int, end: int) -> None:
        position = state.position
        if position is not None and end < position:
            log.warning(
                "log truncation detected on %s-%d: the leader's log diverges at offset %d "
                "(epoch %d), before position %d; continuing from %d",
                tp.topic,
                tp.partition,
                end,
                epoch,
                position,
                end,
            )
            self._drop_buffered(tp)
            state.set_position(end, epoch)
        elif position is not None:
            # The divergence is in fetched data not handed out yet: drop it and fetch
            # again from the position.
            self._drop_buffered(tp)
            state.fetch_position = position
            state.fetch_epoch = state.position_epoch

    def _partition_error(
        self, tp: TopicPartition, state: PartitionState, node: int, p: Any, now: float
    ) -> None:
        code = p.error_code
        new_leader = None
        responder_is_leader = node == self._cluster.leader_for(tp)
        if code == _NOT_LEADER_OR_FOLLOWER:
            current = p.current_leader
            # KIP-951: move the partition now, no metadata round trip.
            if (
                current is not None
                and current.leader_id >= 0
                and self._cluster.broker(current.leader_id) is not None
                and self._cluster.update_leader(tp, current.leader_id, current.leader_epoch)
            ):
                new_leader = current.leader_id
                log.debug(
                    "%s-%d: new leader %d (epoch %d) from the fetch response",
                    tp.topic,
                    tp.partition,
                    current.leader_id,
                    current.leader_epoch,
                )
        leader = self._cluster.leader_for(tp)
        outcome = self.policy.on_partition_error(tp, code, node, leader, now, new_leader=new_leader)
        self._log_change(outcome.change)
        if outcome.refresh_metadata and new_leader is None:
            self._client.request_update()
        if outcome.action is FetchErrorAction.RESET:
            strategy = self._subs.default_reset
            if strategy == NONE:
                self._fail(
                    state,
                    # As aiokafka: the argument maps the partition to the fetch offset.
                    OffsetOutOfRangeError({tp: state.fetch_position}),
                )
            else:
                log.info(
                    "%s-%d: offset %s out of range on the leader, resetting to %s",
                    tp.topic,
                    tp.partition,
                    state.position,
                    strategy,
                )
                self._drop_buffered(tp)
                state.request_reset(strategy)
        elif outcome.action is FetchErrorAction.RAISE:
            error = for_code(code)(f"fetch of {tp.topic}-{tp.partition} from node {node}")
            self._fail(state, error)
        elif outcome.action is FetchErrorAction.REFETCH_FROM_LEADER:
            log.debug(
                "%s-%d: %s from read replica %d at offset %s; fetching it from the leader",
                tp.topic,
                tp.partition,
                outcome.error_name,
                node,
                state.position,
            )
        if responder_is_leader or outcome.action is not FetchErrorAction.REFETCH_FROM_LEADER:
            # The same answer again right away would spin: wait, longer on each repeat.
            self._partition_backoff(tp, now)

    def _partition_backoff(self, tp: TopicPartition, now: float) -> None:
        n = self._tp_error_streak.get(tp, 0)
        self._tp_error_streak[tp] = n + 1
        self._tp_retry_at[tp] = now + min(self._backoff * 2**n, self._backoff_max)


def _expire(fut: asyncio.Future[Any], conn: Any, node: int, timeout: float) -> None:
    """A fetch got no answer in time: the connection is stuck, close it."""
    if not fut.done():
        conn.close(KafkaTimeoutError(f"fetch from node {node} got no response in {timeout:.3g} s"))


def _has_records(response: Any) -> bool:
    return any(p.records for t in response.responses for p in t.partitions)


def _retriable(exc: KafkaError) -> bool:
    """Whether trying again may help: retriable codes, connections, timeouts."""
    return bool(
        is_retriable(exc)
        or is_invalid_metadata(exc)
        or isinstance(exc, KafkaTimeoutError)
        or _is_connection_error(exc)
    )


def _is_connection_error(exc: BaseException) -> bool:
    from rackafka.errors import KafkaConnectionError

    return isinstance(exc, KafkaConnectionError)
