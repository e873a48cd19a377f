"""The fetch loop: one background task that keeps a fetch in flight to every broker.

Each turn of :meth:`FetchLoop.run` routes every fetchable partition (the
:class:`~rackafka.consumer.routing.ReadReplicaPolicy` says leader or read replica), builds
one request per broker that has none in flight (with the broker's incremental fetch
session, KIP-227) and, for a broker read as a replica, one per *lane*: the partitions it
serves for one leader, with a connection and a session of their own (see
:class:`~rackafka.consumer.fetch_state.BrokerFetch`), so that reading every partition
from one same-rack broker keeps as many fetches in flight as reading from the leaders. It
then waits for whichever comes first: a response, a connection, an offset
lookup, or a change made by the user. Responses to different brokers are in flight at the
same time.

Memory stays bounded: a partition with buffered data is not fetched again, and no fetch is
sent while the buffers hold ``fetch_max_bytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from rackafka.client import KafkaClient
from rackafka.cluster import Broker, ClusterMetadata
from rackafka.consumer.fetch_session import SESSION_ERRORS, FetchSession, PartitionFetchState
from rackafka.consumer.fetch_state import (
    BrokerFetch,
    Buffered,
    FetchState,
    InFlight,
    PartitionFetch,
)
from rackafka.consumer.offsets import OffsetLookups
from rackafka.consumer.routing import FetchErrorAction, RoutingChange
from rackafka.errors import (
    CorruptRecordException,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    NotLeaderForPartitionError,
    OffsetOutOfRangeError,
    UnsupportedVersionError,
    for_code,
)
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.schema import UUID_ZERO
from rackafka.records.scan import last_batch_end
from rackafka.structs import TopicPartition
from rackafka.subscription import NONE

__all__ = ["READ_COMMITTED", "READ_UNCOMMITTED", "FetchLoop"]

log = logging.getLogger("rackafka.consumer.fetcher")

READ_UNCOMMITTED = 0
READ_COMMITTED = 1
_RACK_AWARE_FETCH_VERSION = 11
_TOPIC_ID_FETCH_VERSION = 13
#: Fetch v12+ reports a log divergence itself (diverging_epoch): no KIP-320 lookup.
_DIVERGING_EPOCH_FETCH_VERSION = 12
_MIN_BATCH_LENGTH = 14  # the smallest batch after its length field (a v0 message)
#: Fetches in a row that may return only an incomplete batch before it is corrupt.
_INCOMPLETE_FETCHES = 3
#: A compressed batch may inflate to this many times the larger of ``fetch_max_bytes``
#: and ``max_partition_fetch_bytes`` (and to MIN_DECOMPRESSED_LIMIT in any case).
DECOMPRESSED_LIMIT_FACTOR = 2
MIN_DECOMPRESSED_LIMIT = 64 * 1024 * 1024


class FetchLoop:
    """Sends fetches, takes in their responses, and runs the offset lookups beside.

    Arguments: the fetcher's shared state, the client, the offset lookups, and the
    consumer's fetch settings (see :class:`~rackafka.consumer.fetcher.Fetcher`).
    """

    def __init__(
        self,
        fs: FetchState,
        client: KafkaClient,
        lookups: OffsetLookups,
        *,
        client_rack: str | None,
        fetch_min_bytes: int,
        fetch_max_bytes: int,
        fetch_max_wait_ms: int,
        max_partition_fetch_bytes: int,
        check_crcs: bool,
        isolation_level: int,
        retry_backoff_ms: float,
        idle: float,
    ) -> None:
        self._fs = fs
        self._client = client
        self._cluster: ClusterMetadata = client.cluster
        self._lookups = lookups
        self.policy = fs.policy
        self.client_rack = client_rack
        self._min_bytes = fetch_min_bytes
        self._max_bytes = fetch_max_bytes
        self._max_wait_ms = fetch_max_wait_ms
        self._partition_max_bytes = max_partition_fetch_bytes
        self._check_crcs = check_crcs
        self._isolation = isolation_level
        #: The pace of a broker that answers at once without data.
        self._pace = retry_backoff_ms / 1000
        self._idle = idle
        #: A compressed batch may inflate to this many bytes at most.
        self._max_decompressed = max(
            MIN_DECOMPRESSED_LIMIT,
            DECOMPRESSED_LIMIT_FACTOR * max(fetch_max_bytes, max_partition_fetch_bytes),
        )
        self.closed = False

    # -- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        fs = self._fs
        wakeup_task: asyncio.Task[Any] | None = None
        try:
            while not self.closed:
                now = time.monotonic()
                deadline = now + self._idle
                deadline = min(deadline, self._lookups.start(now))
                if fs.buffered_bytes < self._max_bytes:
                    deadline = min(deadline, self._send_fetches(now))
                waiters: set[asyncio.Future[Any]] = set(self._lookups.tasks())
                for broker in fs.fetchers():
                    if broker.inflight is not None:
                        waiters.add(broker.inflight.future)
                    if broker.side is not None:
                        waiters.add(broker.side.future)
                    if broker.connecting is not None:
                        waiters.add(broker.connecting)
                    if broker.side_connecting is not None:
                        waiters.add(broker.side_connecting)
                if wakeup_task is None or wakeup_task.done():
                    fs.wakeup_event.clear()
                    wakeup_task = asyncio.ensure_future(fs.wakeup_event.wait())
                waiters.add(wakeup_task)
                timeout = max(0.0, deadline - time.monotonic())
                await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                self._handle_done()
        except asyncio.CancelledError:
            raise
        except Exception:
            # A bug here must be loud, not a silent stall: getmany()/getone() raise it.
            log.exception("fetch loop failed")
            fs.data_ready.set()
            raise
        finally:
            if wakeup_task is not None:
                wakeup_task.cancel()

    def _handle_done(self) -> None:
        """Handle the fetch responses that arrived.

        A method of its own so that no local of :meth:`run` keeps a response (and
        with it every partition's record data) alive while the loop waits.
        """
        for broker in self._fs.fetchers():
            for entry in (broker.inflight, broker.side):
                if entry is not None and entry.future.done():
                    if entry.side:
                        broker.side = None
                    else:
                        broker.inflight = None
                    self._release(entry)
                    self._handle_fetch(broker, entry)

    def _release(self, entry: InFlight) -> None:
        """The partitions of a finished request may be fetched again."""
        parts = self._fs.parts
        for tp in entry.offsets:
            part = parts.get(tp)
            if part is None:
                continue
            if entry.side:
                part.side = False
            else:
                part.fetching = part.seeked = False

    def tasks(self) -> list[asyncio.Future[Any]]:
        """The connections being opened."""
        return [
            task
            for broker in self._fs.fetchers()
            for task in (broker.connecting, broker.side_connecting)
            if task is not None
        ]

    def cancel_fetches(self) -> None:
        for broker in self._fs.fetchers():
            for entry in (broker.inflight, broker.side):
                if entry is not None:
                    entry.future.cancel()
            broker.inflight = broker.side = None

    # -- routing and metadata --------------------------------------------------------------

    def on_metadata(self, cluster: ClusterMetadata) -> None:
        """Apply metadata changes to routing, and validate positions after leader moves."""
        leaders: dict[TopicPartition, int] = {}
        fs = self._fs
        for part in fs.sync().values():
            tp = part.tp
            info = cluster.partition(tp)
            if info is None:
                continue
            if info.leader >= 0:
                leaders[tp] = info.leader
            previous = part.leader_epoch
            part.leader_epoch = info.leader_epoch
            state = part.state
            if (
                previous is not None
                and info.leader_epoch > previous
                and state.has_valid_position
                and state.position_epoch >= 0
                and self._fetch_version(info.leader) < _DIVERGING_EPOCH_FETCH_VERSION
            ):
                state.awaiting_validation = True
        for change in self.policy.on_metadata(set(cluster.brokers), leaders):
            self.log_change(change)
        fs.wakeup_event.set()

    def _fetch_version(self, node: int) -> int:
        broker = self._fs.brokers.get(node)
        return broker.version if broker is not None else 0

    def log_change(self, change: RoutingChange[TopicPartition] | None) -> None:
        if change is None:
            return
        self._fs.routing_changes += 1
        if log.isEnabledFor(logging.DEBUG):
            state = self._fs.subs.state(change.tp)
            leader = self._cluster.leader_for(change.tp)
            target = change.new if change.new is not None else leader
            log.debug(
                "%s-%d at offset %s -> node %s (rack %s), leader %s: %s",
                change.tp.topic,
                change.tp.partition,
                state.position if state is not None else None,
                target,
                self._cluster.rack_of(target) if target is not None else None,
                leader,
                change.reason,
            )

    # -- fetch requests --------------------------------------------------------------------

    def _send_fetches(self, now: float) -> float:
        fs = self._fs
        deadline = now + self._idle
        # By (node, lane): the lane is the node itself for the partitions it leads, their
        # leader for those it serves as a read replica (see BrokerFetch).
        by_lane: dict[tuple[int, int], list[PartitionFetch]] = {}
        side_by_node: dict[int, list[PartitionFetch]] = {}
        cluster = self._cluster
        leader_for = cluster.leader_for
        node_known = self._node_known
        select = self.policy.select
        max_bytes = self._partition_max_bytes
        # A node's backoff, asked once per round (not once per partition).
        backing: dict[int, bool] = {}

        def backing_off(node: int) -> bool:
            known = backing.get(node)
            if known is None:
                known = backing[node] = self._node_backing_off(node)
            return known

        for part in fs.sync().values():
            side = False
            if part.fetching:
                # Seeked while the broker holds its fetch (a long poll): fetch the new
                # position on the side instead of waiting for the poll to end.
                if not part.seeked or part.side:
                    continue
                side = True
            if not part.state.is_fetchable or part.bytes >= max_bytes or part.lookup:
                continue
            retry_at = part.backoff.until
            if retry_at > now:
                deadline = min(deadline, retry_at)
                continue
            tp = part.tp
            leader = leader_for(tp)
            route = select(tp, leader, now, node_known=node_known, node_backing_off=backing_off)
            if route.change is not None:
                self.log_change(route.change)
            if route.refresh_metadata or leader is None:
                self._client.request_update()
            node = route.node
            if node is None:
                if route.retry_at is not None:
                    deadline = min(deadline, route.retry_at)
                continue
            if side:
                parts = side_by_node.get(node)
                if parts is None:
                    side_by_node[node] = [part]
                else:
                    parts.append(part)
                continue
            key = (node, node if leader is None else leader)
            parts = by_lane.get(key)
            if parts is None:
                by_lane[key] = [part]
            else:
                parts.append(part)
        for node, parts in side_by_node.items():
            broker = fs.broker(node)
            if broker.side is not None:
                continue
            conn = self._client.connection_if_ready(node, channel="seek")
            if conn is None:
                if broker.side_connecting is None:
                    broker.side_connecting = asyncio.ensure_future(self._connect(broker, side=True))
                continue
            with contextlib.suppress(KafkaError):  # the regular fetch comes anyway
                self._send_fetch(broker, conn, parts, side=True)
                for part in parts:
                    part.seeked = False
        for (node, lane), parts in by_lane.items():
            broker = fs.broker(node) if lane == node else fs.lane(node, lane)
            if broker.inflight is not None:
                continue
            if broker.pace_until > now:
                deadline = min(deadline, broker.pace_until)
                continue
            if broker.backoff.until > now:  # a lane's own failure (the node's: select)
                deadline = min(deadline, broker.backoff.until)
                continue
            conn = self._client.connection_if_ready(node, channel=broker.channel)
            if conn is None:
                if broker.connecting is None:
                    broker.connecting = asyncio.ensure_future(self._connect(broker))
                continue
            try:
                self._send_fetch(broker, conn, parts)
            except UnsupportedVersionError as exc:
                # No Fetch version in common: retrying cannot help, the user must know.
                self._node_failed(broker, exc)
                for part in parts:
                    if part.state.error is None:
                        fs.fail(part.state, exc)
            except KafkaError as exc:
                self._node_failed(broker, exc)
        return deadline

    def _node_known(self, node: int) -> bool:
        return node in self._cluster.brokers

    def _node_backing_off(self, node: int) -> bool:
        broker = self._fs.brokers.get(node)
        return (
            broker is not None and broker.backing_off(time.monotonic())
        ) or self._client.is_backing_off(node)

    async def _connect(self, broker: BrokerFetch, *, side: bool = False) -> None:
        try:
            await self._client.connect(broker.node, channel="seek" if side else broker.channel)
        except KafkaError as exc:
            if not side:
                self._node_failed(broker, exc)
        finally:
            if side:
                broker.side_connecting = None
            else:
                broker.connecting = None
            self._fs.wakeup_event.set()

    def _node_failed(self, broker: BrokerFetch, exc: BaseException) -> None:
        now = time.monotonic()
        node = broker.node
        # A broker that answers what cannot be decoded is worth a warning; the rest
        # (connections coming and going) is routine and retried.
        level = logging.WARNING if isinstance(exc, KafkaProtocolError) else logging.DEBUG
        log.log(level, "fetch from node %d failed: %s", node, exc)
        broker.failed(now)
        for change in self.policy.on_node_failure(node, now):
            self.log_change(change)
        broker.session.handle_failure()
        self._client.request_update()

    def _send_fetch(
        self, broker: BrokerFetch, conn: Any, parts: list[PartitionFetch], *, side: bool = False
    ) -> None:
        node = broker.node
        version = conn.version(FETCH)
        if version < _RACK_AWARE_FETCH_VERSION and self.policy.note_old_broker(node):
            # Only worth a warning for a consumer that asked for rack-aware reads.
            log.log(
                logging.WARNING if self.client_rack else logging.DEBUG,
                "broker %d speaks Fetch up to v%d (< v11, Apache Kafka before 2.4): it "
                "cannot send consumers to the closest replica (KIP-392), so partitions it "
                "leads are read from it whatever client_rack says",
                node,
                version,
            )
        cluster = self._cluster
        topic_ids: dict[str, Any] = {}
        if version >= _TOPIC_ID_FETCH_VERSION:
            ids = cluster.topic_ids
            for topic in {part.tp.topic for part in parts}:
                tid = ids.get(topic)
                if tid is None or tid == UUID_ZERO:
                    version = min(version, _TOPIC_ID_FETCH_VERSION - 1)
                    break
                topic_ids[topic] = tid
        partition_info = cluster.partition
        max_bytes = self._partition_max_bytes
        wanted: dict[TopicPartition, PartitionFetchState] = {}
        offsets: dict[TopicPartition, int] = {}
        for part in parts:
            tp = part.tp
            state = part.state
            info = partition_info(tp)
            offset = state.fetch_position
            assert offset is not None
            offsets[tp] = offset
            wanted[tp] = PartitionFetchState(
                offset,
                info.leader_epoch if info is not None else -1,
                state.fetch_epoch,
                max_bytes,
            )
        # A side fetch is a full fetch outside the broker's session.
        session: FetchSession[TopicPartition] = FetchSession(node) if side else broker.session
        plan = session.build(wanted)
        if version >= _TOPIC_ID_FETCH_VERSION and plan.forgotten:
            ids = cluster.topic_ids
            for tp in plan.forgotten:
                name = tp.topic
                if name not in topic_ids:
                    tid = ids.get(name)
                    if tid is None or tid == UUID_ZERO:
                        # A forgotten topic without an id: start a fresh full session.
                        session.reset()
                        version = _TOPIC_ID_FETCH_VERSION - 1
                        plan = session.build(wanted)
                        break
                    topic_ids[name] = tid
        # Each partition as the tuple FETCH writes in one go: (partition,
        # current_leader_epoch, fetch_offset, last_fetched_epoch, log_start_offset,
        # partition_max_bytes).
        topics: dict[str, list[tuple[int, int, int, int, int, int]]] = {}
        for tp, (offset, leader_epoch, last_epoch, part_max) in plan.partitions.items():
            item = (tp.partition, leader_epoch, offset, last_epoch, -1, part_max)
            items = topics.get(tp.topic)
            if items is None:
                topics[tp.topic] = [item]
            else:
                items.append(item)
        forgotten: dict[str, list[int]] = {}
        for tp in plan.forgotten:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
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
        fs = self._fs
        if node not in fs.node_counters:
            fs.node_counters[node] = broker.counters
        broker.counters.requests += 1
        names = {tid: name for name, tid in topic_ids.items()}
        entry = InFlight(node, fut, version, offsets, names, time.monotonic(), side)
        if side:
            broker.side = entry
            for part in parts:
                part.side = True
        else:
            broker.inflight = entry
            for part in parts:
                part.fetching = True
        broker.version = fs.broker(node).version = version
        timeout = conn.request_timeout + self._max_wait_ms / 1000
        timer = asyncio.get_running_loop().call_later(timeout, _expire, fut, conn, node, timeout)
        fut.add_done_callback(lambda _f: timer.cancel())

    # -- fetch responses -------------------------------------------------------------------

    def _handle_fetch(self, broker: BrokerFetch, entry: InFlight) -> None:
        node = broker.node
        session = None if entry.side else broker.session
        try:
            response = entry.future.result()
        except asyncio.CancelledError:
            return
        except KafkaError as exc:
            self._node_failed(broker, exc)
            return
        now = time.monotonic()
        if response.error_code:
            log.debug("fetch from node %d: top-level error %d", node, response.error_code)
            if session is not None:
                session.handle_response(response.error_code, response.session_id)
            if not issubclass(for_code(response.error_code), SESSION_ERRORS):
                broker.failed(now)
            return
        if session is not None:
            session.handle_response(0, response.session_id)
        # KIP-951: brokers named in the response, for leader moves below.
        if response.node_endpoints:
            self._cluster.add_brokers(
                Broker(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints
            )
        fs = self._fs
        parts = fs.parts
        wall_ms = int(time.time() * 1000)
        counters = broker.counters
        got_data = False
        errors = False
        for topic in response.responses:
            name = topic.topic or entry.topic_names.get(topic.topic_id)
            if not name:
                continue
            for p in topic.partitions:
                tp = TopicPartition(name, p.partition_index)
                sent_offset = entry.offsets.get(tp)
                part = parts.get(tp)
                if part is None or sent_offset is None:
                    continue  # unassigned or not asked
                state = part.state
                if state.fetch_position != sent_offset:
                    continue  # seeked since: stale
                if p.error_code:
                    errors = True
                    self._partition_error(part, node, p, now)
                    continue
                if p.high_watermark >= 0:
                    state.highwater = p.high_watermark
                    state.last_poll_timestamp = wall_ms
                if p.last_stable_offset >= 0:
                    state.last_stable_offset = p.last_stable_offset
                if p.log_start_offset >= 0:
                    state.log_start_offset = p.log_start_offset
                hint = p.preferred_read_replica
                # The leader matters only to a hint (a change of read replica).
                leader = self._cluster.leader_for(tp) if hint >= 0 else None
                change = self.policy.on_fetch_response(tp, node, leader, hint, now)
                if change is not None:
                    self.log_change(change)
                diverging = p.diverging_epoch
                if diverging is not None and diverging.end_offset >= 0:
                    self._truncated(part, diverging.epoch, diverging.end_offset)
                    continue
                records = p.records
                if records:
                    counters.bytes += len(records)
                    batch_end = last_batch_end(records)
                    if batch_end is None:
                        # No complete batch: a batch cut by the response size limit is
                        # fetched again; one that never arrives whole is an error.
                        self._incomplete_batch(part, broker, sent_offset, records)
                        continue
                    part.incomplete = None
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
                        part.backoff.next(now)
                        continue
                    part.backoff.reset()  # progress: the next error waits the least
                    state.fetch_position = end
                    state.fetch_epoch = end_epoch
                    aborted = None
                    if self._isolation == READ_COMMITTED:
                        aborted = [
                            (a.first_offset, a.producer_id) for a in (p.aborted_transactions or [])
                        ]
                    fs.buffer(
                        Buffered(
                            part, broker, records, aborted, self._check_crcs, self._max_decompressed
                        )
                    )
                    got_data = True
        if got_data:
            fs.data_ready.set()
        elif not errors and now - entry.sent_at < self._pace and not _has_records(response):
            # Nothing fetched and nothing wrong, yet answered at once: a broker that does
            # not wait for data (or keeps redirecting to itself).  Do not ask it again
            # before retry_backoff_ms, or the loop would spin.
            broker.pace_until = entry.sent_at + self._pace

    def _incomplete_batch(
        self, part: PartitionFetch, broker: BrokerFetch, offset: int, records: bytes
    ) -> None:
        """A fetch at ``offset`` returned record data without one complete batch.

        A broker cuts the batches of a partition when the response reaches its size
        limit, and serves the first one whole when it is asked again; a batch whose size
        is impossible, or that stays incomplete, is corrupt: the error is raised in turn,
        after the records before it.
        """
        length = int.from_bytes(records[8:12], "big", signed=True) if len(records) >= 12 else 0
        seen_offset, count = part.incomplete or (offset, 0)
        count = count + 1 if seen_offset == offset else 1
        part.incomplete = (offset, count)
        if len(records) >= 12 and length < _MIN_BATCH_LENGTH:
            reason = f"record batch size {length} is impossible"
        elif count >= _INCOMPLETE_FETCHES:
            reason = (
                f"{count} fetches returned only an incomplete batch ({len(records)} of "
                f"{length + 12} bytes)"
            )
        else:
            broker.pace_until = time.monotonic() + self._pace / 4
            return
        part.incomplete = None
        part.state.fetch_position = offset
        buf = Buffered(part, broker, b"", None, self._check_crcs, self._max_decompressed)
        buf.batches = None
        buf.pending_next = offset
        tp = part.tp
        buf.failure = CorruptRecordException(
            f"{tp.topic}-{tp.partition} at offset {offset}: {reason}"
        )
        self._fs.buffer(buf)
        self._fs.data_ready.set()

    def _truncated(self, part: PartitionFetch, epoch: int, end: int) -> None:
        state = part.state
        position = state.position
        if position is not None and end < position:
            log.warning(
                "log truncation detected on %s-%d: the leader's log diverges at offset %d "
                "(epoch %d), before position %d; continuing from %d",
                part.tp.topic,
                part.tp.partition,
                end,
                epoch,
                position,
                end,
            )
            self._fs.drop_buffered(part)
            state.set_position(end, epoch)
        elif position is not None:
            # The divergence is in fetched data not handed out yet: drop it and fetch
            # again from the position.
            self._fs.drop_buffered(part)
            state.fetch_position = position
            state.fetch_epoch = state.position_epoch

    def _partition_error(self, part: PartitionFetch, node: int, p: Any, now: float) -> None:
        tp, state = part.tp, part.state
        error = for_code(p.error_code)
        new_leader = None
        responder_is_leader = node == self._cluster.leader_for(tp)
        if error is NotLeaderForPartitionError:
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
        outcome = self.policy.on_partition_error(
            tp, p.error_code, node, leader, now, new_leader=new_leader
        )
        self.log_change(outcome.change)
        if outcome.refresh_metadata and new_leader is None:
            self._client.request_update()
        if outcome.action is FetchErrorAction.RESET:
            strategy = self._fs.subs.default_reset
            if strategy == NONE:
                self._fs.fail(
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
                self._fs.drop_buffered(part)
                state.request_reset(strategy)
        elif outcome.action is FetchErrorAction.RAISE:
            self._fs.fail(state, error(f"fetch of {tp.topic}-{tp.partition} from node {node}"))
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
            part.backoff.next(now)


def _expire(fut: asyncio.Future[Any], conn: Any, node: int, timeout: float) -> None:
    """A fetch got no answer in time: the connection is stuck, close it."""
    if not fut.done():
        conn.close(KafkaTimeoutError(f"fetch from node {node} got no response in {timeout:.3g} s"))


def _has_records(response: Any) -> bool:
    return any(p.records for t in response.responses for p in t.partitions)
