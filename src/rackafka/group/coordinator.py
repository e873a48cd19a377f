"""Consumer group membership: the one membership loop, holding a group protocol strategy.

One background task per consumer keeps the membership alive: it finds the group
coordinator (FindCoordinator), joins and heartbeats by its group protocol, commits
offsets on a timer, leaves the group when the application stops polling for
``max_poll_interval_ms`` (and joins again on its next poll), and surfaces the errors
that stop progress from the application's next call.  The protocol is a strategy
(:class:`~rackafka.group.session.GroupProtocol`) the loop holds: the classic one
(:class:`~rackafka.group.classic.ClassicProtocol`, the default) or KIP-848's
(:class:`~rackafka.group.consumer_group.ConsumerGroupProtocol`).  The listener calls are
in :mod:`rackafka.group.listeners`, the offsets in :mod:`rackafka.group.offsets`.

Errors the loop handles for both protocols, as the Java client does:

* ``NOT_COORDINATOR``, ``COORDINATOR_NOT_AVAILABLE``, ``REQUEST_TIMED_OUT``, a
  connection failure: find the coordinator again;
* other retriable errors: retry after a backoff (``retry_backoff_ms``, growing to
  ``retry_backoff_max_ms``);
* ``FENCED_INSTANCE_ID``: another consumer with the same ``group_instance_id`` took this
  static member's place (KIP-345).  Fatal, as in the Java client: the partitions are lost
  (nothing committed), the member sends nothing more to the group (rejoining would fence
  the other one in turn), and every later poll and commit raises
  :class:`~rackafka.errors.FencedInstanceIdError`;
* any other error: raised by the application's next poll or commit, and the loop goes
  on after a pause.

``unsubscribe()`` leaves the group as Kafka's Java consumer does: the partitions
are revoked (auto commit first), the member leaves (LeaveGroup, not by a static classic
member), the member id and generation are forgotten, and heartbeats stop until the next
subscription joins the group again as a new member.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from rackafka._backoff import BackoffPolicy
from rackafka._tasks import cancel_and_wait
from rackafka.client import KafkaClient
from rackafka.cluster import ClusterMetadata
from rackafka.errors import (
    FencedInstanceIdError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    is_retriable,
)
from rackafka.group.classic import ClassicProtocol
from rackafka.group.listeners import Listeners
from rackafka.group.offsets import GroupOffsets
from rackafka.group.session import (
    CoordinatorGone,
    GroupProtocol,
    GroupSession,
    GroupState,
    PendingLeave,
    Rejoin,
)
from rackafka.structs import OffsetAndMetadata, TopicPartition
from rackafka.subscription import SubscriptionState

log = logging.getLogger("rackafka.group")

#: The shortest pause after an error that stops progress (raised to the application).
_FATAL_PAUSE_S = 1.0


class GroupCoordinator:
    """Keeps one consumer in its group and commits its offsets.

    Arguments (besides the consumer's settings of the same names):
        client: the consumer's client.
        subscriptions: the consumer's subscription state.
        assignors: the classic protocol's partition assignors, in order of preference.
        on_assignment: called with the member's partitions, those added, and whether it
            is a rebalance's assignment (False: what a revocation or a leave left),
            whenever they change.
        listener: returns the application's current rebalance listener (or None).
        pattern: matches the subscription's pattern against the cluster's topics.
        protocol: makes the group protocol strategy (default: the classic protocol with
            ``assignors``).
    """

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
        on_assignment: Callable[[set[TopicPartition], set[TopicPartition], bool], Any],
        listener: Callable[[], Any],
        exclude_internal_topics: bool = True,
        pattern: Callable[[], Any] | None = None,
        retry_backoff_max_ms: float = 1000,
        protocol: Callable[[GroupSession, Listeners], GroupProtocol] | None = None,
    ) -> None:
        self._client = client
        self._subs = subscriptions
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        retry = BackoffPolicy(retry_backoff_ms, retry_backoff_max_ms)
        self.session = session = GroupSession(
            client,
            subscriptions,
            group_id=group_id,
            group_instance_id=group_instance_id,
            client_rack=client_rack,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            retry=retry,
            pattern=pattern,
        )
        self.offsets = GroupOffsets(
            session,
            enable_auto_commit=enable_auto_commit,
            auto_commit_interval_ms=auto_commit_interval_ms,
            member_fields=self._offset_fetch_member,
        )
        self.listeners = Listeners(
            session, self.offsets, on_assignment=on_assignment, listener=listener
        )
        self.protocol: GroupProtocol = (
            protocol(session, self.listeners)
            if protocol is not None
            else ClassicProtocol(session, self.listeners, assignors=assignors)
        )
        self._exclude_internal = exclude_internal_topics
        self._max_poll_interval = max_poll_interval_ms / 1000
        self._last_poll = time.monotonic()
        #: getmany()/getone() calls running (the member is polling while one waits).
        self._polling = 0
        self._poll_timed_out = False
        #: The pauses after errors of the membership loop (reset by a join or heartbeat).
        self._errors = retry.start()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._fatal: BaseException | None = None
        client.cluster.add_listener(self._on_metadata)

    # -- what the membership looks like ------------------------------------------------------

    @property
    def state(self) -> GroupState:
        """Membership as the coordinator last told it."""
        return self.session.state

    @property
    def member_id(self) -> str:
        """The member id the coordinator gave this member (``""`` before the first join),
        under aiokafka's name: frameworks' rebalance listeners log it."""
        return self.session.state.member_id

    @property
    def coordinator_id(self) -> int | None:
        """The coordinator's node (None while it is looked up)."""
        return self.session.coordinator_id

    @property
    def rebalances(self) -> int:
        """How many times the member joined (classic) or joined again (KIP-848)."""
        return self.session.rebalances

    def _offset_fetch_member(self) -> dict[str, Any]:
        return self.protocol.offset_fetch_member()

    # -- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
            self.session.loop_task = self._task

    async def close(self, timeout: float = 10.0) -> None:
        """Commit (with auto commit), leave the group (unless static), stop."""
        session = self.session
        self._closing = True
        self._client.cluster.remove_listener(self._on_metadata)
        if self._task is not None:
            await cancel_and_wait([self._task])
        session.end_rebalance()
        session.left.set()
        leave, session.pending_leave = session.pending_leave, None
        commit: Coroutine[Any, Any, None] | None = None
        if self.offsets.auto_commit and session.state.generation_id >= 0:
            if leave is not None:  # an unsubscribe() not carried out yet: what it saw
                offsets = self.offsets.uncommitted(leave.offsets, self.listeners.owned)
                commit = self.offsets.commit(offsets) if offsets else None
            elif self._subs.assigned():
                commit = self.offsets.commit_positions()
        if commit is not None:
            with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                await asyncio.wait_for(commit, timeout)
        if leave is not None:
            self.listeners.assign(set(), set())
        self.listeners.leave_done.set()
        if session.state.member_id and self.protocol.sends_leave:
            with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                await asyncio.wait_for(self.protocol.leave(), timeout)

    def request_rejoin(self) -> None:
        """The subscription changed: join again (after an unsubscribe, as a new member)."""
        self.session.unsubscribed = False
        self.protocol.subscription_changed()

    def unsubscribe(self) -> bool:
        """The application unsubscribed from every topic: leave the group.

        Carried out by the membership task, as Kafka's Java consumer does it: the
        positions of the owned partitions are committed (with auto commit), the
        listener's ``on_partitions_revoked`` is called with them, the assignment is
        cleared, the member leaves (not a static member of the classic protocol, whose
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
        session = self.session
        session.unsubscribed = True
        if session.pending_leave is None:
            owned = self.listeners.owned
            offsets = (
                self.offsets.consumed_offsets(owned) if self.offsets.auto_commit and owned else {}
            )
            session.pending_leave = PendingLeave(offsets, self.listeners.listener())
            self.listeners.leave_done.clear()
            session.left.clear()
        session.wakeup.set()
        return True

    @property
    def leaving(self) -> bool:
        """True from :meth:`unsubscribe` until the group's partitions are revoked."""
        return self.session.pending_leave is not None

    def raise_if_fenced(self) -> None:
        """Raise :class:`~rackafka.errors.FencedInstanceIdError` if another consumer with
        this ``group_instance_id`` took this member's place."""
        self.session.raise_if_fenced()

    def poll_started(self) -> None:
        """A ``getmany()``/``getone()`` starts: the member polls until :meth:`poll_ended`."""
        self.polled()
        self._polling += 1

    def poll_ended(self) -> None:
        """A poll returned: ``max_poll_interval_ms`` is counted from now."""
        self._polling -= 1
        self._last_poll = time.monotonic()

    def polled(self) -> None:
        """The application polled (``max_poll_interval_ms`` is counted from here)."""
        self._last_poll = time.monotonic()
        if self._poll_timed_out:
            # Left the group on max_poll_interval_ms: join again now.
            self._poll_timed_out = False
            self.session.wakeup.set()
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
        if asyncio.current_task() is self._task or self.listeners.idle():
            return True  # (a listener that polls is not kept waiting on itself)
        try:
            await asyncio.wait_for(self.listeners.until_idle(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    def in_listener(self) -> bool:
        """Whether the caller runs inside a rebalance listener called by this coordinator."""
        return self._task is not None and asyncio.current_task() is self._task

    async def wait_for_assignment(self, timeout: float | None) -> bool:
        try:
            await asyncio.wait_for(self.listeners.assigned_event.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    # -- offsets (see rackafka.group.offsets) ------------------------------------------------

    def consumed_offsets(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The positions of the assigned partitions, as offsets to commit."""
        return self.offsets.consumed_offsets(partitions)

    async def commit_positions(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Commit the positions that changed since the last commit."""
        await self.offsets.commit_positions(partitions)

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], *, positions: bool = False
    ) -> None:
        """Commit ``offsets`` for the current generation (see :meth:`GroupOffsets.commit`)."""
        await self.offsets.commit(offsets, positions=positions)

    @property
    def rebalancing(self) -> bool:
        """Whether a join round is under way or due (commits wait for its end)."""
        session = self.session
        return session.managed and (session.rebalancing or not session.settled.is_set())

    async def fetch_committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The committed offsets of ``partitions`` (None where nothing is committed)."""
        return await self.offsets.fetch_committed(partitions)

    # -- the membership loop -------------------------------------------------------

    async def _sleep_until_woken(self) -> None:
        self.session.wakeup.clear()
        await self.session.wakeup.wait()

    async def _run(self) -> None:
        session = self.session
        protocol = self.protocol
        session.next_heartbeat = 0.0
        self.offsets.restart_timer()
        while not self._closing:
            try:
                if session.fenced is not None:
                    # Fenced: nothing more is sent to the group (see _fenced_out).
                    session.end_rebalance()
                    await self._sleep_until_woken()
                    continue
                if session.pending_leave is not None:
                    await self._leave_on_unsubscribe()
                    continue
                if session.unsubscribed:
                    # Out of the group with nothing subscribed: no heartbeats, no commits,
                    # until request_rejoin() (subscribe()) wakes us.
                    session.end_rebalance()
                    await self._sleep_until_woken()
                    self._last_poll = time.monotonic()  # (the poll timer starts again)
                    continue
                if self._poll_timed_out:
                    # Out of the group until the application polls again (polled() wakes us).
                    session.end_rebalance()
                    await self._sleep_until_woken()
                    continue
                await session.ensure_coordinator()
                if session.pending_leave is not None or session.unsubscribed:
                    continue  # (unsubscribed while the coordinator was looked up)
                if session.need_rejoin:
                    await protocol.join()
                    self._errors.reset()
                    # An assignment taken counts as a poll: a member is not judged stuck
                    # for the time a rebalance took (as aiokafka's test sees it).
                    self._last_poll = max(self._last_poll, time.monotonic())
                    session.next_heartbeat = time.monotonic() + session.heartbeat_interval
                    if protocol.heartbeat_due_now():
                        session.next_heartbeat = 0.0
                    continue
                now = time.monotonic()
                if not self._polling and now - self._last_poll > self._max_poll_interval:
                    log.warning(
                        "group %s: no poll for %.1f s (max_poll_interval_ms); %s",
                        self.group_id,
                        now - self._last_poll,
                        "leaving the group so that its partitions go to live members"
                        if protocol.sends_leave
                        else "giving the partitions up (a static member keeps its place "
                        "until its session times out)",
                    )
                    self._poll_timed_out = True
                    session.need_rejoin = True
                    await protocol.leave_on_poll_timeout()
                    continue
                if now >= session.next_heartbeat:
                    session.next_heartbeat = time.monotonic() + session.heartbeat_interval
                    await protocol.heartbeat()
                    self._errors.reset()
                await self.offsets.auto_commit_if_due()
                deadline = session.next_heartbeat
                if self.offsets.auto_commit:
                    deadline = min(deadline, self.offsets.next_auto_commit)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(
                        session.wakeup.wait(), max(0.0, deadline - time.monotonic())
                    )
                session.wakeup.clear()
            except asyncio.CancelledError:
                raise
            except CoordinatorGone:
                session.coordinator_dead()
                # A coordinator that is down may still be the one FindCoordinator names
                # until the cluster moves its groups: look again after a growing pause.
                await asyncio.sleep(self._errors.next())
            except Rejoin:
                session.need_rejoin = True
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                log.debug("group %s: coordinator connection failed: %s", self.group_id, exc)
                session.coordinator_dead()
                await asyncio.sleep(self._errors.next())
            except FencedInstanceIdError as exc:
                await self._fenced_out(exc)
            except KafkaError as exc:
                if is_retriable(exc):
                    log.debug("group %s: retriable error: %s", self.group_id, exc)
                    await asyncio.sleep(self._errors.next())
                else:
                    log.error("group %s: %s", self.group_id, exc)
                    self._fatal = exc
                    session.end_rebalance()
                    self.listeners.assigned_event.set()
                    await asyncio.sleep(max(self._errors.next(), _FATAL_PAUSE_S))
            except Exception as exc:
                # Not a wire error: the assignor raised, or a member's subscription or
                # the assignment could not be used. Never a silent stall: the next
                # getmany()/getone()/commit() raises it, and the group is joined again.
                log.error("group %s: rebalance failed: %r", self.group_id, exc)
                self._fatal = exc
                session.need_rejoin = True
                session.end_rebalance()
                self.listeners.assigned_event.set()
                await asyncio.sleep(max(self._errors.next(), _FATAL_PAUSE_S))

    async def _fenced_out(self, exc: FencedInstanceIdError) -> None:
        """Another member with this ``group_instance_id`` took the place: lose the
        partitions (nothing committed: they are someone else's) and stop for good."""
        log.error("group %s: %s; this consumer is fenced and must be closed", self.group_id, exc)
        session = self.session
        session.fenced = exc
        session.state = GroupState()
        session.need_rejoin = False
        session.end_rebalance()
        owned = set(self.listeners.owned)
        if owned:
            await self.listeners.lose(owned)
        self.listeners.assigned_event.set()  # (waiters for an assignment get the error)

    async def _leave_on_unsubscribe(self) -> None:
        """Carry out unsubscribe(): revoke (commit first), leave, forget the membership."""
        session = self.session
        listeners = self.listeners
        leave = session.pending_leave
        assert leave is not None
        try:
            revoked = set(listeners.owned)
            if revoked:
                offsets = (
                    self.offsets.uncommitted(leave.offsets, listeners.owned)
                    if session.state.generation_id >= 0
                    else {}
                )
                if offsets:
                    try:
                        await self.offsets.commit(offsets)
                    except KafkaError as exc:
                        log.warning(
                            "group %s: commit on unsubscribe failed: %s", self.group_id, exc
                        )
                if leave.listener is not None:
                    await listeners.call(leave.listener.on_partitions_revoked, revoked)
                listeners.assign(set(), set())
            listeners.assigned_event.clear()
        finally:
            session.pending_leave = None
            listeners.leave_done.set()
        log.info("group %s: unsubscribed from all topics, leaving the group", self.group_id)
        if self.protocol.sends_leave:
            with contextlib.suppress(KafkaError):
                await self.protocol.leave()
        # (a static classic member keeps its place until its session times out, as in Java)
        session.state = GroupState()
        session.end_rebalance()
        session.left.set()
        session.joined_topics = {}
        session.assigned_topics = {}
        self.offsets.committed.clear()
        self._poll_timed_out = False
        session.need_rejoin = True  # whenever a subscription comes back

    def _on_metadata(self, cluster: ClusterMetadata) -> None:
        session = self.session
        if session.need_rejoin or session.unsubscribed or session.pending_leave is not None:
            return  # (no rejoin with an empty subscription: unsubscribe() leaves)
        self.protocol.on_metadata(cluster)
