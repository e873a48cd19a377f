"""Consumer group membership with the classic protocol, and committed offsets.

One background task per consumer keeps the membership alive: it finds the
group coordinator (FindCoordinator), joins (JoinGroup), computes the assignment
when it is the leader, takes its assignment (SyncGroup), heartbeats, commits
offsets on a timer, and rejoins when the coordinator asks for it, when the
subscription's topics change, or when the coordinator moves.  Errors are
handled as the Java client handles them:

* ``REBALANCE_IN_PROGRESS``: rejoin, keeping the member id;
* ``UNKNOWN_MEMBER_ID``, ``ILLEGAL_GENERATION``: forget the member id/generation,
  rejoin;
* ``FENCED_INSTANCE_ID``: another consumer with the same ``group_instance_id`` took this
  static member's place (KIP-345).  Fatal, as in the Java client: the partitions are lost
  (nothing committed), the member sends nothing more to the group (rejoining would fence
  the other one in turn), and every later poll and commit raises
  :class:`~rackafka.errors.FencedInstanceIdError`;
* ``NOT_COORDINATOR``, ``COORDINATOR_NOT_AVAILABLE``, a connection failure:
  find the coordinator again;
* ``COORDINATOR_LOAD_IN_PROGRESS``: retry after ``retry_backoff_ms``.

With the eager protocol every partition is revoked before joining; with the
cooperative one (KIP-429) only partitions that move are revoked, after the
assignment, followed by one more rebalance that hands them to their new owner.
``on_partitions_assigned`` is called after every rebalance (with the cooperative
protocol: with the partitions added, an empty set when none were).

``unsubscribe()`` leaves the group as Kafka's Java consumer does: the partitions
are revoked (auto commit first), LeaveGroup is sent (not by a static member),
the member id and generation are forgotten, and heartbeats stop until the next
subscription joins the group again as a new member.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rackafka._tasks import cancel_and_wait
from rackafka.client import KafkaClient
from rackafka.cluster import ClusterMetadata
from rackafka.errors import (
    BrokerResponseError,
    CommitFailedError,
    FencedInstanceIdError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    for_code,
    is_retriable,
)
from rackafka.protocol.apis.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from rackafka.protocol.apis.heartbeat import HEARTBEAT
from rackafka.protocol.apis.join_group import JOIN_GROUP
from rackafka.protocol.apis.leave_group import LEAVE_GROUP
from rackafka.protocol.apis.offset_commit import OFFSET_COMMIT
from rackafka.protocol.apis.offset_fetch import OFFSET_FETCH
from rackafka.protocol.apis.sync_group import SYNC_GROUP
from rackafka.structs import OffsetAndMetadata, TopicPartition
from rackafka.subscription import SubscriptionState

log = logging.getLogger("rackafka.group")

COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
REQUEST_TIMED_OUT = 7
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
UNSTABLE_OFFSET_COMMIT = 88
STALE_MEMBER_EPOCH = 113

_COORDINATOR_GONE = (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT)
_MEMBER_GONE = (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION)

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3
PROTOCOL_TYPE = "consumer"
#: The client connection channel of group traffic (never behind a Fetch).
GROUP_CHANNEL = "group"


class _Rejoin(Exception):
    """Internal: the current join round is over, start another."""


class _CoordinatorGone(Exception):
    """Internal: find the coordinator again."""


class _StaleEpoch(Exception):
    """Internal: a commit carried an older member epoch (KIP-848): retry with the current one."""


@dataclass
class GroupState:
    """Membership as the coordinator last told it."""

    member_id: str = ""
    generation_id: int = -1
    protocol: str | None = None
    leader_id: str | None = None

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id


@dataclass
class _Leave:
    """An unsubscribe() not yet carried out by the membership loop."""

    #: The positions when the application unsubscribed (to commit, with auto commit).
    offsets: dict[TopicPartition, OffsetAndMetadata]
    #: The rebalance listener of the subscription that ended.
    listener: Any


class GroupCoordinator:
    """Keeps one consumer in its group and commits its offsets."""

    def __init__(
        self,
        client: KafkaClient,
        subscriptions: SubscriptionState,
        *,
        group_id: str,
        group_instance_id: str | None,
        assignors: list[Any],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: float,
        max_poll_interval_ms: float,
        retry_backoff_ms: float,
        enable_auto_commit: bool,
        auto_commit_interval_ms: float,
        client_rack: str | None,
        on_assignment: Callable[[set[TopicPartition], set[TopicPartition]], Any],
        listener: Callable[[], Any],
        exclude_internal_topics: bool = True,
        pattern: Callable[[], Any] | None = None,
    ) -> None:
        self._client = client
        self._subs = subscriptions
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self._assignors = {a.name: a for a in assignors}
        self._assignor_order = [a.name for a in assignors]
        self._session_timeout_ms = session_timeout_ms
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._heartbeat_interval = heartbeat_interval_ms / 1000
        self._next_heartbeat = 0.0
        self._max_poll_interval = max_poll_interval_ms / 1000
        self._backoff = retry_backoff_ms / 1000
        self._auto_commit = enable_auto_commit
        self._auto_commit_interval = auto_commit_interval_ms / 1000
        self._client_rack = client_rack
        self._on_assignment = on_assignment
        self._listener = listener
        self._exclude_internal = exclude_internal_topics
        self._pattern = pattern
        self.state = GroupState()
        self.coordinator_id: int | None = None
        self._need_rejoin = True
        self._joined_topics: dict[str, int] = {}
        self._committed_positions: dict[TopicPartition, int] = {}
        self._last_poll = time.monotonic()
        self._poll_timed_out = False
        self._listener_idle = asyncio.Event()
        self._listener_idle.set()
        self._wakeup = asyncio.Event()
        self._assigned_event = asyncio.Event()
        # unsubscribe(): a leave to carry out, then no membership until request_rejoin().
        self._pending_leave: _Leave | None = None
        self._unsubscribed = False
        self._leave_done = asyncio.Event()
        self._leave_done.set()
        #: The partitions the group gave this member (what an unsubscribe revokes).
        self._group_owned: set[TopicPartition] = set()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._fatal: BaseException | None = None
        #: Set when another consumer with our group_instance_id took our place: raised
        #: by every later poll and commit, the membership stops for good.
        self._fenced: FencedInstanceIdError | None = None
        self.rebalances = 0
        client.cluster.add_listener(self._on_metadata)

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def close(self, timeout: float = 10.0) -> None:
        """Commit (with auto commit), leave the group (unless static), stop."""
        self._closing = True
        self._client.cluster.remove_listener(self._on_metadata)
        if self._task is not None:
            await cancel_and_wait([self._task])
        leave, self._pending_leave = self._pending_leave, None
        commit: Coroutine[Any, Any, None] | None = None
        if self._auto_commit and self.state.generation_id >= 0:
            if leave is not None:  # an unsubscribe() not carried out yet: what it saw
                offsets = self._offsets_to_commit(leave)
                commit = self.commit(offsets) if offsets else None
            elif self._subs.assigned():
                commit = self.commit_positions()
        if commit is not None:
            with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                await asyncio.wait_for(commit, timeout)
        if leave is not None:
            self._assign(set(), set())
        self._leave_done.set()
        if self.state.member_id and self._leaves_on_close():
            with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                await asyncio.wait_for(self._leave(), timeout)

    def request_rejoin(self) -> None:
        """The subscription changed: join again (after an unsubscribe, as a new member)."""
        self._unsubscribed = False
        self._need_rejoin = True
        self._wakeup.set()

    def unsubscribe(self) -> bool:
        """The application unsubscribed from every topic: leave the group.

        Carried out by the membership task, as Kafka's Java consumer does it: the
        positions of the owned partitions are committed (with auto commit), the
        listener's ``on_partitions_revoked`` is called with them, the assignment is
        cleared, LeaveGroup is sent (not by a static member, whose
        ``group_instance_id`` keeps its place until the session times out), and the
        member id and generation are forgotten.  Heartbeats and auto commits stop
        until :meth:`request_rejoin` (a new subscription) joins the group again.
        Records are not handed out until the partitions are revoked
        (:meth:`wait_for_listener`), and :attr:`leaving` is True until then.

        Returns:
            False when no membership task runs (nothing to leave): the caller
            clears the assignment itself.
        """
        if self._task is None or self._task.done() or self._closing:
            return False
        self._unsubscribed = True
        if self._pending_leave is None:
            owned = self._group_owned
            offsets = self.consumed_offsets(owned) if self._auto_commit and owned else {}
            self._pending_leave = _Leave(offsets, self._listener())
            self._leave_done.clear()
        self._wakeup.set()
        return True

    @property
    def leaving(self) -> bool:
        """True from :meth:`unsubscribe` until the group's partitions are revoked."""
        return self._pending_leave is not None

    def raise_if_fenced(self) -> None:
        """Raise :class:`~rackafka.errors.FencedInstanceIdError` if another consumer with
        this ``group_instance_id`` took this member's place."""
        if self._fenced is not None:
            raise self._fenced

    def polled(self) -> None:
        """The application polled (``max_poll_interval_ms`` is counted from here)."""
        self._last_poll = time.monotonic()
        if self._poll_timed_out:
            # Left the group on max_poll_interval_ms: join again now.
            self._poll_timed_out = False
            self._wakeup.set()
        self.raise_if_fenced()
        self.raise_fatal()

    def raise_fatal(self) -> None:
        """Raise (once) the error that stopped the membership's progress, if any."""
        if self._fatal is not None:
            error, self._fatal = self._fatal, None
            raise error

    async def wait_for_listener(self, timeout: float | None) -> bool:
        """Wait while partitions are revoked or a rebalance listener runs: no records are
        handed out meanwhile.

        Returns:
            False if the listener still runs after ``timeout`` seconds.
        """
        if asyncio.current_task() is self._task or self._idle():
            return True  # (a listener that polls is not kept waiting on itself)
        try:
            await asyncio.wait_for(self._until_idle(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    def in_listener(self) -> bool:
        """Whether the caller runs inside a rebalance listener called by this coordinator."""
        return self._task is not None and asyncio.current_task() is self._task

    def _idle(self) -> bool:
        return self._listener_idle.is_set() and self._leave_done.is_set()

    async def _until_idle(self) -> None:
        while not self._idle():
            await self._listener_idle.wait()
            await self._leave_done.wait()

    async def _call_listener(
        self, fn: Callable[[set[TopicPartition]], Any], tps: set[TopicPartition]
    ) -> None:
        self._listener_idle.clear()
        try:
            await _call(fn, tps)
        finally:
            self._listener_idle.set()

    async def wait_for_assignment(self, timeout: float | None) -> bool:
        try:
            await asyncio.wait_for(self._assigned_event.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    # -- the membership loop -------------------------------------------------------

    async def _run(self) -> None:
        self._next_heartbeat = 0.0
        next_commit = time.monotonic() + self._auto_commit_interval
        while not self._closing:
            try:
                if self._fenced is not None:
                    # Fenced: nothing more is sent to the group (see _fenced_out).
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                if self._pending_leave is not None:
                    await self._leave_on_unsubscribe()
                    continue
                if self._unsubscribed:
                    # Out of the group with nothing subscribed: no heartbeats, no commits,
                    # until request_rejoin() (subscribe()) wakes us.
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    self._last_poll = time.monotonic()  # (the poll timer starts again)
                    continue
                if self._poll_timed_out:
                    # Out of the group until the application polls again (polled() wakes us).
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                await self._ensure_coordinator()
                if self._pending_leave is not None or self._unsubscribed:
                    continue  # (unsubscribed while the coordinator was looked up)
                if self._need_rejoin:
                    await self._rebalance()
                    self._next_heartbeat = time.monotonic() + self._heartbeat_interval
                    if self._heartbeat_due_now():
                        self._next_heartbeat = 0.0
                    continue
                now = time.monotonic()
                if now - self._last_poll > self._max_poll_interval:
                    log.warning(
                        "group %s: no poll for %.1f s (max_poll_interval_ms); leaving the "
                        "group so that its partitions go to live members",
                        self.group_id,
                        now - self._last_poll,
                    )
                    self._poll_timed_out = True
                    self._need_rejoin = True
                    await self._leave_on_poll_timeout()
                    continue
                if now >= self._next_heartbeat:
                    self._next_heartbeat = time.monotonic() + self._heartbeat_interval
                    await self._heartbeat()
                if self._auto_commit and time.monotonic() >= next_commit:
                    try:
                        await self.commit_positions()
                    except CommitFailedError as exc:
                        log.warning("group %s: auto commit failed: %s", self.group_id, exc)
                    next_commit = time.monotonic() + self._auto_commit_interval
                deadline = self._next_heartbeat
                if self._auto_commit:
                    deadline = min(deadline, next_commit)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(
                        self._wakeup.wait(), max(0.0, deadline - time.monotonic())
                    )
                self._wakeup.clear()
            except asyncio.CancelledError:
                raise
            except _CoordinatorGone:
                self._coordinator_dead()
            except _Rejoin:
                self._need_rejoin = True
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("group %s: coordinator connection failed: %s", self.group_id, exc)
                self._coordinator_dead()
                await asyncio.sleep(self._backoff)
            except FencedInstanceIdError as exc:
                await self._fenced_out(exc)
            except KafkaError as exc:
                if is_retriable(exc):
                    log.debug("group %s: retriable error: %s", self.group_id, exc)
                    await asyncio.sleep(self._backoff)
                else:
                    log.error("group %s: %s", self.group_id, exc)
                    self._fatal = exc
                    self._assigned_event.set()
                    await asyncio.sleep(max(self._backoff, 1.0))
            except Exception as exc:
                # Not a wire error: the assignor raised, or a member's subscription or
                # the assignment could not be used. Never a silent stall: the next
                # getmany()/getone()/commit() raises it, and the group is joined again.
                log.error("group %s: rebalance failed: %r", self.group_id, exc)
                self._fatal = exc
                self._need_rejoin = True
                self._assigned_event.set()
                await asyncio.sleep(max(self._backoff, 1.0))

    async def _fenced_out(self, exc: FencedInstanceIdError) -> None:
        """Another member with this ``group_instance_id`` took the place: lose the
        partitions (nothing committed: they are someone else's) and stop for good."""
        log.error("group %s: %s; this consumer is fenced and must be closed", self.group_id, exc)
        self._fenced = exc
        self.state = GroupState()
        self._need_rejoin = False
        owned = set(self._group_owned)
        if owned:
            await self._lose(owned)
        self._assigned_event.set()  # (waiters for an assignment get the error)

    async def _lose(self, lost: set[TopicPartition]) -> None:
        """The partitions are no longer ours (fenced): nothing is committed."""
        listener = self._listener()
        if listener is not None:
            fn = getattr(listener, "on_partitions_lost", None)
            if fn is None:
                fn = listener.on_partitions_revoked
            await self._call_listener(fn, set(lost))
        self._assign(set(self._group_owned) - lost, set())
        self._assigned_event.clear()

    async def _leave_on_poll_timeout(self) -> None:
        """``max_poll_interval_ms`` passed without a poll: give the partitions up, leave."""
        owned = self._subs.assigned()
        if owned:
            await self._revoke(owned)  # commits (auto commit), tells the listener
        await self._leave()

    def _heartbeat_due_now(self) -> bool:
        """Whether the next heartbeat must go at once (not with the classic protocol)."""
        return False

    def _leaves_on_close(self) -> bool:
        """Whether close() and unsubscribe() send a leave (not a static member's, classic)."""
        return self.group_instance_id is None

    def _coordinator_dead(self) -> None:
        if self.coordinator_id is not None:
            log.info("group %s: coordinator %s is gone", self.group_id, self.coordinator_id)
        self.coordinator_id = None

    async def _ensure_coordinator(self) -> int:
        attempts = 0
        while self.coordinator_id is None:
            if attempts:
                # Doubling pauses with jitter while no coordinator can be found (KIP-580).
                delay = min(self._backoff * 2 ** (attempts - 1), max(self._backoff * 10, 1.0))
                await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            attempts += 1
            self._client.any_node()  # raises when no broker is known at all
            try:
                node_id = await self._client.lookup_coordinator(self.group_id, 0)
            except BrokerResponseError as exc:
                if not is_retriable(exc):
                    raise
                continue
            except KafkaError as exc:
                log.debug("FindCoordinator for group %s failed: %s", self.group_id, exc)
                with contextlib.suppress(KafkaError):
                    await self._client.refresh_metadata()
                continue
            self.coordinator_id = node_id
            log.debug("group %s: coordinator is node %d", self.group_id, node_id)
        return self.coordinator_id

    async def _send(self, api: Any, request: Any) -> Any:
        node = self.coordinator_id
        if node is None:
            raise _CoordinatorGone()
        try:
            version = await self._client.api_version(node, api, channel=GROUP_CHANNEL)
            return await self._client.send(
                node, api, request, version=version, channel=GROUP_CHANNEL
            )
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            log.debug("group %s: %s to coordinator failed: %s", self.group_id, api.name, exc)
            raise _CoordinatorGone() from exc

    def _check(self, code: int, what: str) -> None:
        """Turn a group error code into the right reaction (raises)."""
        if code == 0:
            return
        if code in _COORDINATOR_GONE:
            raise _CoordinatorGone()
        if code == REBALANCE_IN_PROGRESS:
            raise _Rejoin()
        if code == FENCED_INSTANCE_ID:
            raise FencedInstanceIdError(
                f"{what} for group {self.group_id}: another consumer with "
                f"group_instance_id {self.group_instance_id!r} took this member's place"
            )
        if code in _MEMBER_GONE:
            log.info(
                "group %s: %s: member %s is gone (error %d), rejoining",
                self.group_id,
                what,
                self.state.member_id,
                code,
            )
            self.state = GroupState()
            raise _Rejoin()
        err = for_code(code)
        raise err(f"{what} for group {self.group_id}")

    # -- heartbeat and leave -------------------------------------------------------

    async def _heartbeat(self) -> None:
        resp = await self._send(
            HEARTBEAT,
            HEARTBEAT.Request(
                group_id=self.group_id,
                generation_id=self.state.generation_id,
                member_id=self.state.member_id,
                group_instance_id=self.group_instance_id,
            ),
        )
        if resp.error_code == COORDINATOR_LOAD_IN_PROGRESS:
            return
        self._check(resp.error_code, "Heartbeat")

    async def _leave(self) -> None:
        if not self.state.member_id or self.coordinator_id is None:
            self.state = GroupState()
            return
        log.info("group %s: member %s leaves", self.group_id, self.state.member_id)
        request = LEAVE_GROUP.Request(
            group_id=self.group_id,
            member_id=self.state.member_id,
            members=[
                {"member_id": self.state.member_id, "group_instance_id": self.group_instance_id}
            ],
        )
        try:
            await self._send(LEAVE_GROUP, request)
        except _CoordinatorGone:
            pass
        self.state = GroupState()

    async def _leave_on_unsubscribe(self) -> None:
        """Carry out unsubscribe(): revoke (commit first), leave, forget the membership."""
        leave = self._pending_leave
        assert leave is not None
        try:
            revoked = set(self._group_owned)
            if revoked:
                offsets = self._offsets_to_commit(leave) if self.state.generation_id >= 0 else {}
                if offsets:
                    try:
                        await self.commit(offsets)
                    except KafkaError as exc:
                        log.warning(
                            "group %s: commit on unsubscribe failed: %s", self.group_id, exc
                        )
                if leave.listener is not None:
                    await self._call_listener(leave.listener.on_partitions_revoked, revoked)
                self._assign(set(), set())
            self._assigned_event.clear()
        finally:
            self._pending_leave = None
            self._leave_done.set()
        log.info("group %s: unsubscribed from all topics, leaving the group", self.group_id)
        if self._leaves_on_close():
            with contextlib.suppress(KafkaError):
                await self._leave()
        # (a static member keeps its place until its session times out, as in Java)
        self.state = GroupState()
        self._joined_topics = {}
        self._committed_positions.clear()
        self._poll_timed_out = False
        self._need_rejoin = True  # whenever a subscription comes back

    def _offsets_to_commit(self, leave: _Leave) -> dict[TopicPartition, OffsetAndMetadata]:
        """The positions seen by unsubscribe() that are still the group's and not committed."""
        return {
            tp: meta
            for tp, meta in leave.offsets.items()
            if tp in self._group_owned and self._committed_positions.get(tp) != meta.offset
        }

    # -- rebalance -----------------------------------------------------------------

    def _cooperative(self) -> bool:
        name = self.state.protocol or self._assignor_order[0]
        assignor = self._assignors.get(name)
        return assignor is not None and _is_cooperative(assignor)

    async def _rebalance(self) -> None:
        owned = self._subs.assigned()
        if not self._cooperative():
            if owned:
                # Eager: give everything back before joining.
                await self._revoke(owned)
            else:
                # As aiokafka (and Java's eager protocol): the listener hears of every
                # rebalance before it starts, with nothing to give back the first time.
                listener = self._listener()
                if listener is not None:
                    await self._call_listener(listener.on_partitions_revoked, set())
        topics = await self._subscribed_topics()
        join = await self._join(topics)
        if join.leader == join.member_id:
            assignments = await self._lead(join)
        else:
            assignments = {}
        assigned = await self._sync(join, assignments)
        if self._pending_leave is not None:
            return  # unsubscribed meanwhile: this assignment is not taken, the loop leaves
        self._need_rejoin = False
        self.rebalances += 1
        await self._apply(assigned)

    async def _subscribed_topics(self) -> list[str]:
        if self._pattern is not None:
            await self._client.fetch_all_metadata()
            self._pattern()
        topics = sorted(self._subs.topics)
        self._client.add_topics(topics)
        if any(self._client.cluster.partitions_for_topic(t) is None for t in topics):
            with contextlib.suppress(KafkaError):
                await self._client.refresh_metadata()
        self._joined_topics = {
            t: len(self._client.cluster.partitions_for_topic(t) or ()) for t in topics
        }
        return topics

    async def _join(self, topics: list[str]) -> Any:
        owned = self._subs.assigned() if self._cooperative() else set()
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(owned):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        owned_field = [{"topic": t, "partitions": p} for t, p in by_topic.items()]
        protocols = [
            {
                "name": name,
                "metadata": encode_subscription(
                    SUBSCRIPTION_VERSION,
                    {
                        "topics": topics,
                        "user_data": self._user_data(name, topics),
                        "owned_partitions": owned_field,
                        "generation_id": self.state.generation_id,
                        "rack_id": self._client_rack,
                    },
                ),
            }
            for name in self._assignor_order
        ]
        while True:
            request = JOIN_GROUP.Request(
                group_id=self.group_id,
                session_timeout_ms=self._session_timeout_ms,
                rebalance_timeout_ms=self._rebalance_timeout_ms,
                member_id=self.state.member_id,
                group_instance_id=self.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=protocols,
                reason=None,
            )
            # JoinGroup may legitimately wait for the whole rebalance.
            node = self.coordinator_id
            if node is None:
                raise _CoordinatorGone()
            try:
                version = await self._client.api_version(node, JOIN_GROUP, channel=GROUP_CHANNEL)
                resp = await self._client.send(
                    node,
                    JOIN_GROUP,
                    request,
                    version=version,
                    timeout=self._rebalance_timeout_ms / 1000 + 5,
                    channel=GROUP_CHANNEL,
                )
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                raise _CoordinatorGone() from exc
            if resp.error_code == MEMBER_ID_REQUIRED:
                self.state.member_id = resp.member_id
                continue
            if resp.error_code == COORDINATOR_LOAD_IN_PROGRESS:
                await asyncio.sleep(self._backoff)
                continue
            if resp.error_code == UNKNOWN_MEMBER_ID:
                self.state = GroupState()
                raise _Rejoin()
            self._check(resp.error_code, "JoinGroup")
            self.state = GroupState(
                resp.member_id, resp.generation_id, resp.protocol_name, resp.leader
            )
            log.info(
                "group %s: joined generation %d as %s%s with protocol %s",
                self.group_id,
                resp.generation_id,
                resp.member_id,
                " (leader)" if resp.leader == resp.member_id else "",
                resp.protocol_name,
            )
            return resp

    def _user_data(self, name: str, topics: list[str]) -> bytes | None:
        fn = getattr(self._assignors[name], "subscription_user_data", None)
        return fn(topics) if fn is not None else None

    async def _lead(self, join: Any) -> dict[str, bytes]:
        from rackafka.group.assignors import (
            AssignmentInput,
            MemberSubscription,
            PartitionReplicas,
        )

        assignor = self._assignors.get(join.protocol_name)
        if assignor is None:
            raise IllegalStateError(f"the group chose unknown assignor {join.protocol_name!r}")
        members = []
        all_topics: set[str] = set()
        for m in join.members:
            try:
                sub = decode_subscription(m.metadata)
            except KafkaError as exc:
                # Retrying cannot help (the member sends the same bytes): fatal, raised
                # to the application (a protocol error would be retried silently).
                raise IllegalStateError(
                    f"group {self.group_id}: the subscription of member {m.member_id!r} "
                    f"cannot be decoded: {exc}"
                ) from exc
            owned = [TopicPartition(o.topic, p) for o in sub.owned_partitions for p in o.partitions]
            members.append(
                MemberSubscription(
                    member_id=m.member_id,
                    topics=list(sub.topics),
                    rack_id=sub.rack_id,
                    owned_partitions=owned,
                    generation_id=sub.generation_id,
                    group_instance_id=m.group_instance_id,
                    user_data=sub.user_data,
                )
            )
            all_topics.update(sub.topics)
        self._client.add_topics(all_topics)
        with contextlib.suppress(KafkaError):
            await self._client.refresh_metadata()
        cluster = self._client.cluster
        partitions = {
            t: [
                PartitionReplicas(p, list(info.replicas))
                for p, info in sorted(cluster.partitions.get(t, {}).items())
            ]
            for t in sorted(all_topics)
            if t in cluster.partitions
        }
        racks = {b.node_id: b.rack for b in cluster.brokers.values()}
        result = assignor.assign(AssignmentInput(partitions, racks, members))
        out = {}
        for m in members:
            tps = sorted(result.get(m.member_id, []))
            by_topic: dict[str, list[int]] = {}
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            out[m.member_id] = encode_assignment(
                ASSIGNMENT_VERSION,
                {
                    "assigned_partitions": [
                        {"topic": t, "partitions": p} for t, p in by_topic.items()
                    ],
                    "user_data": None,
                },
            )
        return out

    async def _sync(self, join: Any, assignments: Mapping[str, bytes]) -> set[TopicPartition]:
        while True:
            request = SYNC_GROUP.Request(
                group_id=self.group_id,
                generation_id=self.state.generation_id,
                member_id=self.state.member_id,
                group_instance_id=self.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=self.state.protocol,
                assignments=[{"member_id": m, "assignment": a} for m, a in assignments.items()],
            )
            resp = await self._send(SYNC_GROUP, request)
            if resp.error_code == COORDINATOR_LOAD_IN_PROGRESS:
                await asyncio.sleep(self._backoff)
                continue
            self._check(resp.error_code, "SyncGroup")
            assigned: set[TopicPartition] = set()
            if resp.assignment:
                try:
                    value = decode_assignment(resp.assignment)
                except KafkaError as exc:
                    raise IllegalStateError(
                        f"group {self.group_id}: the assignment sent by the group leader "
                        f"cannot be decoded: {exc}"
                    ) from exc
                assigned = {
                    TopicPartition(a.topic, p)
                    for a in value.assigned_partitions
                    for p in a.partitions
                }
            assignor = self._assignors.get(self.state.protocol or "")
            if assignor is not None and hasattr(assignor, "on_assignment"):
                assignor.on_assignment(sorted(assigned), self.state.generation_id)
            return assigned

    async def _apply(self, assigned: set[TopicPartition]) -> None:
        owned = self._subs.assigned()
        revoked = owned - assigned
        added = assigned - owned
        if revoked:
            await self._revoke(revoked)
            if self._cooperative():
                # KIP-429: the partitions given up go to their new owner in a follow-up round.
                self._need_rejoin = True
        # New partitions start from their committed offsets (the fetcher looks them up).
        self._assign(assigned, added)
        self._assigned_event.set()
        log.info(
            "group %s generation %d: assigned %s",
            self.group_id,
            self.state.generation_id,
            sorted(assigned),
        )
        listener = self._listener()
        if listener is not None:
            # After every rebalance, as Kafka's Java consumer: with the cooperative protocol
            # only the partitions added, an empty set when there are none (KIP-429).
            await self._call_listener(
                listener.on_partitions_assigned, added if self._cooperative() else assigned
            )

    def _assign(self, assigned: set[TopicPartition], added: set[TopicPartition]) -> None:
        """Hand the group's assignment to the consumer."""
        self._group_owned = set(assigned)
        self._on_assignment(assigned, added)

    async def _revoke(self, revoked: set[TopicPartition]) -> None:
        # From here on no record of these partitions reaches the application (as the
        # Java consumer's pending revocation): a getmany() running beside the commit
        # below cannot move their positions past the offsets committed, so the next
        # owner starts right after the last record handed out.
        for tp in revoked:
            state = self._subs.state(tp)
            if state is not None:
                state.pending_revocation = True
        if self._auto_commit and self.state.generation_id >= 0:
            try:
                await self.commit_positions(revoked)
            except (CommitFailedError, KafkaError) as exc:
                log.warning("group %s: commit on revoke failed: %s", self.group_id, exc)
        listener = self._listener()
        if listener is not None:
            await self._call_listener(listener.on_partitions_revoked, set(revoked))
        remaining = self._subs.assigned() - revoked
        self._assign(remaining, set())
        self._assigned_event.clear()

    def _on_metadata(self, cluster: ClusterMetadata) -> None:
        if self._need_rejoin or self.state.generation_id < 0:
            return
        if self._unsubscribed or self._pending_leave is not None:
            return  # (no rejoin with an empty subscription: unsubscribe() leaves)
        if self._pattern is not None:
            self._pattern()
        current = {t: len(cluster.partitions_for_topic(t) or ()) for t in self._subs.topics}
        if current != self._joined_topics:
            log.info("group %s: subscribed topics changed, rejoining", self.group_id)
            self.request_rejoin()

    # -- offsets -------------------------------------------------------------------

    def consumed_offsets(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The positions of the assigned partitions, as offsets to commit."""
        out = {}
        for state in self._subs.states():
            if partitions is not None and state.tp not in partitions:
                continue
            if state.position is not None and state.reset is None:
                out[state.tp] = OffsetAndMetadata(state.position, "")
        return out

    async def commit_positions(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Commit the positions that changed since the last commit."""
        offsets = {
            tp: meta
            for tp, meta in self.consumed_offsets(partitions).items()
            if self._committed_positions.get(tp) != meta.offset
        }
        if offsets:
            await self.commit(offsets)

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Commit ``offsets`` for the current generation.

        Raises:
            CommitFailedError: the generation is gone (a rebalance happened);
                the partitions may belong to another member now.
        """
        self.raise_if_fenced()
        deadline = time.monotonic() + 30
        while True:
            try:
                await self._ensure_coordinator()
                await self._commit_once(offsets)
                for tp, meta in offsets.items():
                    self._committed_positions[tp] = meta.offset
                return
            except _CoordinatorGone:
                self._coordinator_dead()
            except _StaleEpoch:
                # The member's epoch moved on between the request and the answer; while
                # the member is still in the group the commit is retried with its new
                # epoch (as Kafka's Java consumer does), else it is too late.
                if self.state.generation_id < 0:
                    raise CommitFailedError(
                        "Commit cannot be completed since the member left the group"
                    ) from None
            except _Rejoin:
                self._need_rejoin = True
                self._wakeup.set()
                raise CommitFailedError(
                    "Commit cannot be completed since the group has already rebalanced "
                    "and assigned the partitions to another member"
                ) from None
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"commit for group {self.group_id} timed out")
            await asyncio.sleep(self._backoff)

    async def _commit_once(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        epochs = {s.tp: s.position_epoch for s in self._subs.states()}
        for tp, meta in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": meta.offset,
                    "committed_leader_epoch": epochs.get(tp, -1),
                    "committed_metadata": meta.metadata or "",
                }
            )
        in_group = self.state.generation_id >= 0
        request = OFFSET_COMMIT.Request(
            group_id=self.group_id,
            generation_id_or_member_epoch=self.state.generation_id if in_group else -1,
            member_id=self.state.member_id if in_group else "",
            group_instance_id=self.group_instance_id if in_group else None,
            topics=[{"name": t, "partitions": p} for t, p in by_topic.items()],
        )
        resp = await self._send(OFFSET_COMMIT, request)
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code == COORDINATOR_LOAD_IN_PROGRESS:
                    raise _CoordinatorGone()
                if p.error_code == STALE_MEMBER_EPOCH:
                    raise _StaleEpoch()
                if p.error_code in _MEMBER_GONE or p.error_code == REBALANCE_IN_PROGRESS:
                    if p.error_code in _MEMBER_GONE:
                        self.state = GroupState()
                    raise _Rejoin()
                self._check(p.error_code, f"OffsetCommit of {t.name}-{p.partition_index}")

    async def fetch_committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The committed offsets of ``partitions`` (None where nothing is committed)."""
        tps = sorted(set(partitions))
        if not tps:
            return {}
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": p} for t, p in by_topic.items()]
        deadline = time.monotonic() + 30
        while True:
            try:
                await self._ensure_coordinator()
                node = self.coordinator_id
                assert node is not None
                version = await self._client.api_version(node, OFFSET_FETCH, channel=GROUP_CHANNEL)
                request = OFFSET_FETCH.Request(
                    group_id=self.group_id,
                    topics=topics,
                    groups=[{"group_id": self.group_id, "topics": topics, **self._fetch_member()}],
                    require_stable=True,
                )
                resp = await self._send(OFFSET_FETCH, request)
                if version >= 8:
                    group = resp.groups[0]
                    self._check_fetch(group.error_code)
                    rows = [(t.name, p) for t in group.topics for p in t.partitions]
                else:
                    self._check_fetch(resp.error_code)
                    rows = [(t.name, p) for t in resp.topics for p in t.partitions]
                out: dict[TopicPartition, OffsetAndMetadata | None] = dict.fromkeys(tps)
                for name, p in rows:
                    if p.error_code:
                        self._check_fetch(p.error_code)
                    tp = TopicPartition(name, p.partition_index)
                    if p.committed_offset >= 0:
                        out[tp] = OffsetAndMetadata(p.committed_offset, p.metadata or "")
                return out
            except (_CoordinatorGone, KafkaConnectionError):
                self._coordinator_dead()
            except _Rejoin:
                pass
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"committed offsets of group {self.group_id} not found")
            await asyncio.sleep(self._backoff)

    def _fetch_member(self) -> dict[str, Any]:
        """The member fields of an OffsetFetch (v9+); a classic member sends none."""
        return {}

    def _check_fetch(self, code: int) -> None:
        if code in (COORDINATOR_LOAD_IN_PROGRESS, UNSTABLE_OFFSET_COMMIT, STALE_MEMBER_EPOCH):
            raise _Rejoin()  # retried by the caller's loop
        if code in _COORDINATOR_GONE:
            raise _CoordinatorGone()
        if code:
            raise for_code(code)(f"OffsetFetch for group {self.group_id}")


def _is_cooperative(assignor: Any) -> bool:
    protocols = getattr(assignor, "supported_protocols", None)
    if protocols is None:
        return False
    return "COOPERATIVE" in {str(getattr(p, "name", p)).upper() for p in protocols} and (
        str(getattr(protocols[-1], "name", protocols[-1])).upper() == "COOPERATIVE"
    )


async def _call(fn: Callable[[set[TopicPartition]], Any], tps: set[TopicPartition]) -> None:
    try:
        result = fn(set(tps))
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("rebalance listener %s failed", getattr(fn, "__qualname__", fn))
