"""What the parts of one group member share: its coordinator, its membership, its timers.

A consumer's group membership is made of small parts that work on one
:class:`GroupSession`:

* the membership loop (:class:`rackafka.group.coordinator.GroupCoordinator`): finds the
  coordinator, times heartbeats and polls, leaves, surfaces fatal errors;
* a protocol strategy (:class:`GroupProtocol`): the classic protocol
  (:mod:`rackafka.group.classic`: JoinGroup, SyncGroup, Heartbeat and the assignors) or
  KIP-848's (:mod:`rackafka.group.consumer_group`: ConsumerGroupHeartbeat);
* the partitions and the rebalance listener calls (:mod:`rackafka.group.listeners`);
* the offsets (:mod:`rackafka.group.offsets`: commits, auto commit, committed offsets).

The session holds the state they share (the coordinator's node, the member id and
generation or epoch, whether the member must join again, when the next heartbeat is
due) and the requests to the coordinator: finding it, sending to it, and the reaction to
the group errors every group request shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rackafka._backoff import BackoffPolicy
from rackafka.client import KafkaClient
from rackafka.cluster import ClusterMetadata
from rackafka.errors import (
    BrokerResponseError,
    FencedInstanceIdError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    for_code,
    is_retriable,
)
from rackafka.structs import OffsetAndMetadata, TopicPartition
from rackafka.subscription import SubscriptionState

log = logging.getLogger("rackafka.group")

#: The client connection channel of group traffic (never behind a Fetch).
GROUP_CHANNEL = "group"


class Rejoin(Exception):
    """Internal: the current join round is over, start another."""


class CoordinatorGone(Exception):
    """Internal: find the coordinator again."""


class StaleEpoch(Exception):
    """Internal: a commit carried an older member epoch (KIP-848): retry with the current one."""


@dataclass(frozen=True)
class GroupState:
    """Membership as the coordinator last told it (a value: a new one replaces it).

    Every request to the coordinator is sent with the state current then and its answer
    is judged against that state (:meth:`GroupSession.current`): an answer about an older
    generation never changes a newer one.
    """

    member_id: str = ""
    generation_id: int = -1
    protocol: str | None = None
    leader_id: str | None = None

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.member_id == self.leader_id


@dataclass
class PendingLeave:
    """An unsubscribe() not yet carried out by the membership loop."""

    #: The positions when the application unsubscribed (to commit, with auto commit).
    offsets: dict[TopicPartition, OffsetAndMetadata]
    #: The rebalance listener of the subscription that ended.
    listener: Any


class GroupProtocol(Protocol):
    """How a member joins, keeps and leaves its place: one per group protocol.

    The membership loop holds one and calls it; the strategy reads and updates the
    :class:`GroupSession` (membership state, ``need_rejoin``, the heartbeat timer) and
    hands partitions out and back through the listeners.
    """

    @property
    def sends_leave(self) -> bool:
        """Whether close() and unsubscribe() tell the coordinator that the member leaves."""
        ...

    async def join(self) -> None:
        """One join round (the loop calls it while ``session.need_rejoin``)."""
        ...

    async def heartbeat(self) -> None:
        """One heartbeat, when it is due, and what its answer asks for."""
        ...

    def heartbeat_due_now(self) -> bool:
        """After a join: whether the next heartbeat must go at once."""
        ...

    async def leave(self) -> None:
        """Tell the coordinator that the member leaves (if it is one); forget the membership."""
        ...

    async def leave_on_poll_timeout(self) -> None:
        """``max_poll_interval_ms`` passed without a poll: give the partitions up, leave."""
        ...

    def subscription_changed(self) -> None:
        """The application's subscription changed (join again, or say so)."""
        ...

    def on_metadata(self, cluster: ClusterMetadata) -> None:
        """New metadata while the member is in the group with a subscription."""
        ...

    def offset_fetch_member(self) -> dict[str, Any]:
        """The member fields of an OffsetFetch (v9+)."""
        ...


class GroupSession:
    """The coordinator, the membership and the timers one group member's parts share."""

    def __init__(
        self,
        client: KafkaClient,
        subscriptions: SubscriptionState,
        *,
        group_id: str,
        group_instance_id: str | None,
        client_rack: str | None,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        heartbeat_interval_ms: float,
        retry: BackoffPolicy,
        pattern: Callable[[], Any] | None,
    ) -> None:
        self.client = client
        self.subs = subscriptions
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.client_rack = client_rack
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        #: Seconds between heartbeats (KIP-848: as the coordinator says).
        self.heartbeat_interval = heartbeat_interval_ms / 1000
        #: The pauses between retries of group requests.
        self.retry = retry
        #: Matches the subscription's pattern against the cluster's topics; returns whether
        #: the consumer has a pattern subscription (None: it never has one).
        self.pattern = pattern
        self.state = GroupState()
        self.coordinator_id: int | None = None
        self.need_rejoin = True
        #: When the next heartbeat is due (monotonic clock; 0: now).
        self.next_heartbeat = 0.0
        #: Wakes the membership loop (a subscription, a poll, an assignment to acknowledge).
        self.wakeup = asyncio.Event()
        #: unsubscribe(): a leave to carry out, then no membership until a subscription.
        self.pending_leave: PendingLeave | None = None
        #: Clear from unsubscribe() until the member has left (LeaveGroup answered):
        #: commits of manually assigned partitions wait for it (the coordinator takes
        #: them from a simple consumer only once the member is gone).
        self.left = asyncio.Event()
        self.left.set()
        self.unsubscribed = False
        #: Set when another consumer with our group_instance_id took our place: raised
        #: by every later poll and commit, the membership stops for good.
        self.fenced: FencedInstanceIdError | None = None
        #: The topics (and their partition counts) of the last join.
        self.joined_topics: dict[str, int] = {}
        #: As leader: every member's topics and the partition counts it assigned from
        #: (a change makes it join again, as Java's leader watches the group's topics).
        self.assigned_topics: dict[str, int] = {}
        self.rebalances = 0
        #: A join round is under way: from its start (revocation, JoinGroup) until the
        #: assignment it brought is taken (or the member gives the group up).
        self.rebalancing = False
        #: Between a JoinGroup answered and its SyncGroup answered: the coordinator refuses
        #: commits then (REBALANCE_IN_PROGRESS), so commits wait for the round's end.
        self.completing = False
        #: Set whenever no join round is under way (commits waiting for one wake up).
        self.settled = asyncio.Event()
        self.settled.set()
        #: The membership loop's task (requests it sends never wait for a round to end).
        self.loop_task: asyncio.Task[None] | None = None
        #: What an answer saying that the member is not in the generation it sent
        #: (``UNKNOWN_MEMBER_ID``, ``ILLEGAL_GENERATION``, ``FENCED_MEMBER_EPOCH``) does:
        #: set by the group protocol (classic: :meth:`reset_generation`).
        self.member_gone: Callable[[GroupState, type[BrokerResponseError]], None] = (
            self._reset_on_answer
        )

    # -- the membership's generations ----------------------------------------------------------

    def current(self, sent: GroupState) -> bool:
        """Whether ``sent`` (the state a request was sent with) is still the membership."""
        state = self.state
        return sent.generation_id == state.generation_id and sent.member_id == state.member_id

    @property
    def managed(self) -> bool:
        """Whether the group assigns this member's partitions (a membership loop runs)."""
        task = self.loop_task
        return task is not None and not task.done() and not self.unsubscribed

    def in_loop(self) -> bool:
        """Whether the caller is the membership loop (or a listener it calls)."""
        return self.loop_task is not None and asyncio.current_task() is self.loop_task

    def begin_rebalance(self) -> None:
        """A join round starts."""
        self.rebalancing = True
        self.settled.clear()

    def end_rebalance(self) -> None:
        """The join round is over: its assignment is taken, or the member is out of the
        group (left, fenced, a fatal error)."""
        self.rebalancing = False
        self.completing = False
        self.settled.set()

    def reset_generation(self, sent: GroupState, *, keep_member_id: bool, why: str) -> bool:
        """Forget the generation ``sent`` was part of and join again, if it is still the
        current one; an answer about an older generation changes nothing.

        The member id is kept unless the coordinator does not know it (as Kafka's Java
        client: the coordinator would otherwise wait for the old id until the rebalance
        timeout). Returns whether the membership was reset.
        """
        if not self.current(sent) or (sent.generation_id < 0 and not sent.member_id):
            log.debug(
                "group %s: %s about generation %d of %s ignored (now generation %d of %s)",
                self.group_id,
                why,
                sent.generation_id,
                sent.member_id,
                self.state.generation_id,
                self.state.member_id,
            )
            return False
        log.info(
            "group %s: %s: member %s is out of generation %d, joining again%s",
            self.group_id,
            why,
            sent.member_id,
            sent.generation_id,
            " with the same member id" if keep_member_id else " as a new member",
        )
        self.state = GroupState(sent.member_id if keep_member_id else "")
        self.rejoin_soon()
        return True

    def _reset_on_answer(self, sent: GroupState, err: type[BrokerResponseError]) -> None:
        self.reset_generation(
            sent,
            keep_member_id=not issubclass(err, UnknownMemberIdError),
            why=f"{err.__name__}",
        )

    def rejoin_soon(self) -> None:
        """Join again at the membership loop's next turn (commits wait for that round)."""
        self.need_rejoin = True
        self.settled.clear()
        self.wakeup.set()

    def heartbeat_now(self) -> None:
        """Send the next heartbeat at once."""
        self.next_heartbeat = 0.0
        self.wakeup.set()

    def raise_if_fenced(self) -> None:
        """Raise :class:`~rackafka.errors.FencedInstanceIdError` if another consumer with
        this ``group_instance_id`` took this member's place."""
        if self.fenced is not None:
            raise self.fenced

    # -- the coordinator ---------------------------------------------------------------

    def coordinator_dead(self) -> None:
        if self.coordinator_id is not None:
            log.info("group %s: coordinator %s is gone", self.group_id, self.coordinator_id)
        self.coordinator_id = None

    async def ensure_coordinator(self) -> int:
        """The coordinator's node, looked up (FindCoordinator) until one is found."""
        backoff = self.retry.start()
        first = True
        while self.coordinator_id is None:
            if not first:
                # Growing pauses with jitter while no coordinator can be found (KIP-580).
                await asyncio.sleep(backoff.next())
            first = False
            self.client.any_node()  # raises when no broker is known at all
            try:
                node_id = await self.client.lookup_coordinator(self.group_id, 0)
            except BrokerResponseError as exc:
                if not is_retriable(exc):
                    raise
                continue
            except KafkaError as exc:
                log.debug("FindCoordinator for group %s failed: %s", self.group_id, exc)
                with contextlib.suppress(KafkaError):
                    await self.client.refresh_metadata()
                continue
            self.coordinator_id = node_id
            log.debug("group %s: coordinator is node %d", self.group_id, node_id)
        return self.coordinator_id

    async def send(self, api: Any, request: Any, *, timeout: float | None = None) -> Any:
        """Send ``request`` to the coordinator (:class:`CoordinatorGone` when it is not
        known or cannot be reached)."""
        node = self.coordinator_id
        if node is None:
            raise CoordinatorGone()
        try:
            version = await self.client.api_version(node, api, channel=GROUP_CHANNEL)
            return await self.client.send(
                node, api, request, version=version, timeout=timeout, channel=GROUP_CHANNEL
            )
        except (KafkaConnectionError, KafkaTimeoutError) as exc:
            log.debug("group %s: %s to coordinator failed: %s", self.group_id, api.name, exc)
            raise CoordinatorGone() from exc

    def check(self, code: int, what: str, sent: GroupState | None = None) -> None:
        """Turn a group error code into the right reaction (raises).

        ``sent``: the membership the request was sent with (default: the current one);
        a member error about it resets the membership only if it is still current.
        """
        if code == 0:
            return
        err = for_code(code)
        if err.coordinator_moved:
            raise CoordinatorGone()
        if issubclass(err, RebalanceInProgressError):
            raise Rejoin()
        if issubclass(err, FencedInstanceIdError):
            raise FencedInstanceIdError(
                f"{what} for group {self.group_id}: another consumer with "
                f"group_instance_id {self.group_instance_id!r} took this member's place"
            )
        if err.member_fenced:
            self.member_gone(self.state if sent is None else sent, err)
            raise Rejoin()
        raise err(f"{what} for group {self.group_id}")

    # -- the subscription --------------------------------------------------------------

    async def subscribed_topics(self) -> list[str]:
        """The subscribed topics (the pattern matched again), known to metadata if they can
        be; remembered with their partition counts in :attr:`joined_topics`."""
        client = self.client
        if self.pattern is not None and self.pattern():  # (True: a pattern subscription)
            await client.fetch_all_metadata()
            self.pattern()
        topics = sorted(self.subs.topics)
        client.add_topics(topics)
        if any(client.cluster.partitions_for_topic(t) is None for t in topics):
            with contextlib.suppress(KafkaError):
                await client.refresh_metadata()
        self.joined_topics = {t: len(client.cluster.partitions_for_topic(t) or ()) for t in topics}
        return topics
