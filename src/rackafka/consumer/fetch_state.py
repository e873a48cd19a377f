"""The fetcher's state: one object per broker, one per assigned partition, and the buffers.

:class:`FetchState` is shared by the fetcher's parts (the fetch loop, the offset lookups,
the hand-out of records, the statistics). It holds

* a :class:`BrokerFetch` per broker: its fetch session (KIP-227), the fetch in flight, the
  side fetch for seeked partitions, the connection being opened, the offset lookup running,
  its backoff, its pace, its Fetch version and its traffic counters;
* a :class:`PartitionFetch` per assigned partition: its position and pending error (the
  subscription's :class:`~rackafka.subscription.PartitionState`), where it is read from
  (the routing's :class:`~rackafka.consumer.routing.ReplicaLease`), its buffered bytes, its
  backoff, whether a fetch or lookup of it is in flight, its record factory. A partition's
  state is made when it is assigned and dropped, buffers included, when it is revoked, both
  in :meth:`FetchState.sync`;
* the undecoded record data (:class:`Buffered`), in arrival order across partitions.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rackafka._backoff import Backoff, BackoffPolicy
from rackafka.consumer.fetch_session import FetchSession
from rackafka.consumer.routing import ReadReplicaPolicy, ReplicaLease
from rackafka.records import iter_batches
from rackafka.structs import TopicPartition
from rackafka.subscription import PartitionState, SubscriptionState

__all__ = [
    "BrokerFetch",
    "Buffered",
    "FetchState",
    "InFlight",
    "NodeCounters",
    "PartitionFetch",
]


@dataclass
class NodeCounters:
    """Fetch traffic served by one node (or one rack)."""

    requests: int = 0
    records: int = 0
    bytes: int = 0


@dataclass
class InFlight:
    """A Fetch request sent to one broker, waiting for its response."""

    node: int
    future: asyncio.Future[Any]
    version: int
    offsets: dict[TopicPartition, int]
    topic_names: dict[Any, str]
    sent_at: float
    #: A sessionless fetch on the "seek" channel, for partitions seeked while the
    #: broker held their fetch (see :meth:`Fetcher.seek`).
    side: bool = False


class BrokerFetch:
    """What the fetcher holds for one broker, or for one extra fetch lane to it.

    The broker's own object (:meth:`FetchState.broker`) fetches the partitions it leads on
    the broker's connection; a *lane* (:meth:`FetchState.lane`) fetches those it serves as
    a read replica for another leader, on a connection (``channel``) and in a fetch
    session of its own, beside it: so a broker that serves every partition (KIP-392) gets
    as many fetches in flight as the leaders would, each up to ``fetch_max_bytes``.
    """

    __slots__ = (
        "backoff",
        "channel",
        "connecting",
        "counters",
        "inflight",
        "lookup",
        "lookup_tps",
        "node",
        "pace_until",
        "session",
        "side",
        "side_connecting",
        "version",
    )

    def __init__(self, node: int, retry: BackoffPolicy, channel: str = "") -> None:
        self.node = node
        #: The connection's channel ("" for the broker's own connection).
        self.channel = channel
        #: The incremental fetch session (KIP-227).
        self.session: FetchSession[TopicPartition] = FetchSession(node)
        #: The regular fetch in flight, and the side fetch for seeked partitions.
        self.inflight: InFlight | None = None
        self.side: InFlight | None = None
        #: The connections being opened (regular, and the "seek" channel).
        self.connecting: asyncio.Task[Any] | None = None
        self.side_connecting: asyncio.Task[Any] | None = None
        #: The offset lookup (reset or KIP-320 validation) running on this leader.
        self.lookup: asyncio.Task[None] | None = None
        self.lookup_tps: tuple[TopicPartition, ...] = ()
        #: No fetch or lookup before ``backoff.until``; lookups that fail in a row wait
        #: longer each time (reset when one gives every answer).
        self.backoff: Backoff = retry.start()
        #: No fetch before then (it answered without data, at once).
        self.pace_until = 0.0
        #: The Fetch version of the last request sent (0 before any).
        self.version = 0
        #: Fetch traffic served (in :class:`FetchStats` once a request is sent).
        self.counters = NodeCounters()

    def failed(self, now: float) -> None:
        """A request failed: no fetch or lookup before the policy's first wait."""
        self.backoff.until = now + self.backoff.policy.delay(0)

    def backing_off(self, now: float) -> bool:
        return now < self.backoff.until


class PartitionFetch:
    """What the fetcher holds for one assigned partition."""

    __slots__ = (
        "backoff",
        "buffers",
        "bytes",
        "factory",
        "fetching",
        "incomplete",
        "leader_epoch",
        "lookup",
        "route",
        "seeked",
        "served_by",
        "side",
        "state",
        "tp",
    )

    def __init__(self, state: PartitionState, route: ReplicaLease, retry: BackoffPolicy) -> None:
        self.tp = state.tp
        #: Position, pending error, reset, pause: the subscription's state.
        self.state = state
        #: Where the partition is read from (KIP-392).
        self.route = route
        #: Buffered record data (:class:`Buffered` in :attr:`FetchState.buffered`); the
        #: partition is fetched ahead while it holds less than max_partition_fetch_bytes.
        self.buffers = 0
        self.bytes = 0
        #: Fetch errors in a row: no fetch (nor reset) before ``backoff.until``.
        self.backoff: Backoff = retry.start()
        #: ``(offset, count)``: fetches in a row at ``offset`` that gave an incomplete batch.
        self.incomplete: tuple[int, int] | None = None
        #: The leader epoch of the last metadata seen (KIP-320: a rise asks validation).
        self.leader_epoch: int | None = None
        #: Builds a record from the decoder's values (made on first use).
        self.factory: Callable[..., Any] | None = None
        #: In the regular fetch in flight; in a side fetch; seeked while in flight.
        self.fetching = False
        self.side = False
        self.seeked = False
        #: In an offset lookup (committed, reset or validation).
        self.lookup = False
        #: The node whose fetch response the records handed out last came from.
        self.served_by: int | None = None


class Buffered:
    """Undecoded record data of one partition from one fetch response."""

    __slots__ = (
        "aborted",
        "aborted_pids",
        "batches",
        "counters",
        "failure",
        "node",
        "part",
        "pending",
        "pending_next",
        "pending_pos",
        "size",
        "tp",
    )

    def __init__(
        self,
        part: PartitionFetch,
        broker: BrokerFetch,
        data: bytes,
        aborted: list[tuple[int, int]] | None,
        check_crcs: bool,
        max_decompressed_size: int,
    ) -> None:
        tp = part.tp
        self.tp = tp
        self.part = part
        self.node = broker.node
        self.counters = broker.counters
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
class FetchState:
    """The state the fetcher's parts share (see the module's docstring)."""

    subs: SubscriptionState
    policy: ReadReplicaPolicy[TopicPartition]
    #: ``retry_backoff_ms`` doubling up to ``retry_backoff_max_ms``, with jitter.
    retry: BackoffPolicy
    parts: dict[TopicPartition, PartitionFetch] = field(default_factory=dict)
    brokers: dict[int, BrokerFetch] = field(default_factory=dict)
    #: The extra fetch lanes, by (node, leader of the partitions it serves as replica).
    lanes: dict[tuple[int, int], BrokerFetch] = field(default_factory=dict)
    #: Undecoded record data, oldest first (always this deque: parts keep a reference).
    buffered: deque[Buffered] = field(default_factory=deque)
    buffered_bytes: int = 0
    #: Set when records or an error wait for getmany()/getone().
    data_ready: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set to make the fetch loop look at everything again now.
    wakeup_event: asyncio.Event = field(default_factory=asyncio.Event)
    #: Some partition may hold an error to raise.
    errors_pending: bool = False
    #: The committed-offsets lookup running, and its partitions.
    committed_lookup: asyncio.Task[None] | None = None
    committed_tps: tuple[TopicPartition, ...] = ()
    #: Counters per node, for :class:`FetchStats`; changes of read replica.
    node_counters: dict[int, NodeCounters] = field(default_factory=dict)
    routing_changes: int = 0
    _version: int = -1

    # -- brokers and partitions ----------------------------------------------------------

    def broker(self, node: int) -> BrokerFetch:
        broker = self.brokers.get(node)
        if broker is None:
            broker = self.brokers[node] = BrokerFetch(node, self.retry)
        return broker

    def lane(self, node: int, leader: int) -> BrokerFetch:
        """The fetch lane to ``node`` for the partitions it serves for ``leader``."""
        lane = self.lanes.get((node, leader))
        if lane is None:
            lane = self.lanes[node, leader] = BrokerFetch(node, self.retry, f"fetch-{leader}")
            lane.counters = self.broker(node).counters  # one node, one set of counters
        return lane

    def fetchers(self) -> list[BrokerFetch]:
        """Every broker and every lane: what may have a fetch or a connection under way."""
        return [*self.brokers.values(), *self.lanes.values()]

    def sync(self) -> dict[TopicPartition, PartitionFetch]:
        """The assigned partitions' states, in assignment order, after the assignment
        changed: the one place where a partition's state is made and dropped."""
        if self.subs.version != self._version:
            self._version = self.subs.version
            old = self.parts
            new: dict[TopicPartition, PartitionFetch] = {}
            for state in self.subs.states():
                part = old.pop(state.tp, None)
                if part is not None and part.state is not state:
                    self._drop(part)
                    part = None
                new[state.tp] = part if part is not None else self._new(state)
            self.parts = new
            for part in old.values():
                self._drop(part)
        return self.parts

    def _new(self, state: PartitionState) -> PartitionFetch:
        tp = state.tp
        part = PartitionFetch(state, self.policy.track(tp), self.retry)
        # A request or lookup sent before it was revoked may still be out.
        for broker in self.fetchers():
            if broker.inflight is not None and tp in broker.inflight.offsets:
                part.fetching = True
            if broker.side is not None and tp in broker.side.offsets:
                part.side = True
            if broker.lookup is not None and tp in broker.lookup_tps:
                part.lookup = True
        if self.committed_lookup is not None and tp in self.committed_tps:
            part.lookup = True
        return part

    def _drop(self, part: PartitionFetch) -> None:
        self.drop_buffered(part)
        self.policy.forget(part.tp)

    # -- buffered record data ------------------------------------------------------------

    def buffer(self, buf: Buffered) -> None:
        self.buffered.append(buf)
        part = buf.part
        part.buffers += 1
        part.bytes += buf.size
        self.buffered_bytes += buf.size

    def pop_buffer(self) -> None:
        """Drop the oldest buffer (handed out, or of a partition gone)."""
        buf = self.buffered.popleft()
        self.buffered_bytes -= buf.size
        part = buf.part
        part.buffers -= 1
        part.bytes -= buf.size
        self.wakeup_event.set()

    def drop_buffered(self, part: PartitionFetch) -> None:
        """Drop every buffer of a partition (seek, reset, truncation, revocation)."""
        if not part.buffers:
            return
        self.buffered_bytes -= part.bytes
        part.buffers = 0
        part.bytes = 0
        kept = [b for b in self.buffered if b.part is not part]
        self.buffered.clear()
        self.buffered.extend(kept)
        self.wakeup_event.set()

    # -- errors ----------------------------------------------------------------------

    def fail(self, state: PartitionState, error: BaseException, *, sticky: bool = False) -> None:
        """Record an error to raise to the user on the next poll of the partition.

        A ``sticky`` error (bad record data at the position) is raised on every poll
        until the position changes (seek, reset, reassignment); the partition is not
        fetched meanwhile.
        """
        state.error = error
        state.error_sticky = sticky
        self.errors_pending = True
        self.data_ready.set()  # wake a waiting getmany()/getone() to raise it now
