"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and the assignors.

The member joins (JoinGroup), computes the assignment when it is the leader (with the
assignor the group chose), takes its assignment (SyncGroup) and heartbeats.  It joins
again when the coordinator asks for it, or when the subscription's topics or their
partition counts change.  Errors, as the Java client handles them:

* ``REBALANCE_IN_PROGRESS``: rejoin, keeping the member id;
* ``UNKNOWN_MEMBER_ID``, ``ILLEGAL_GENERATION``: forget the member id/generation, rejoin;
* ``MEMBER_ID_REQUIRED`` (KIP-394): join again with the member id the coordinator gave;
* ``COORDINATOR_LOAD_IN_PROGRESS``: retry after a backoff.

With the eager protocol every partition is revoked before joining; with the cooperative
one (KIP-429) only partitions that move are revoked, after the assignment, followed by one
more rebalance that hands them to their new owner.  ``on_partitions_assigned`` is called
after every rebalance (with the cooperative protocol: with the partitions added, an empty
set when none were).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from rackafka.cluster import ClusterMetadata
from rackafka.errors import (
    IllegalStateError,
    InconsistentGroupProtocolError,
    KafkaError,
    MemberIdRequired,
    RebalanceInProgressError,
    UnknownMemberIdError,
    for_code,
)
from rackafka.group.assignors import AssignmentInput, MemberSubscription, PartitionReplicas
from rackafka.group.listeners import Listeners
from rackafka.group.session import CoordinatorGone, GroupSession, GroupState, Rejoin
from rackafka.protocol.apis.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from rackafka.protocol.apis.heartbeat import HEARTBEAT
from rackafka.protocol.apis.join_group import JOIN_GROUP
from rackafka.protocol.apis.leave_group import LEAVE_GROUP
from rackafka.protocol.apis.sync_group import SYNC_GROUP
from rackafka.structs import TopicPartition

log = logging.getLogger("rackafka.group")

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3
PROTOCOL_TYPE = "consumer"


class ClassicProtocol:
    """The classic group protocol, as a strategy of the membership loop."""

    def __init__(
        self, session: GroupSession, listeners: Listeners, *, assignors: list[Any]
    ) -> None:
        self._session = session
        self._listeners = listeners
        self._assignors = {a.name: a for a in assignors}
        self._assignor_order = [a.name for a in assignors]
        #: The next join round starts by revoking (eager) or telling the listener.
        self._needs_prepare = True

    @property
    def sends_leave(self) -> bool:
        """A static member keeps its place until its session times out (KIP-345)."""
        return self._session.group_instance_id is None

    def heartbeat_due_now(self) -> bool:
        return False

    def offset_fetch_member(self) -> dict[str, Any]:
        return {}  # a classic member sends none

    def subscription_changed(self) -> None:
        self._session.rejoin_soon()

    def on_metadata(self, cluster: ClusterMetadata) -> None:
        session = self._session
        if session.state.generation_id < 0:
            return
        if session.pattern is not None:
            session.pattern()
        current = {t: len(cluster.partitions_for_topic(t) or ()) for t in session.subs.topics}
        leading = session.state.is_leader
        if leading and session.assigned_topics:
            counts = session.assigned_topics
            if any(len(cluster.partitions_for_topic(t) or ()) != n for t, n in counts.items()):
                log.info("group %s: partition counts changed, rejoining", session.group_id)
                session.rejoin_soon()
                return
        if current == session.joined_topics:
            return
        if set(current) != set(session.joined_topics):
            log.info("group %s: subscribed topics changed, rejoining", session.group_id)
            session.rejoin_soon()
        elif leading:
            # As Java: the leader, who assigned the partitions it knew of, joins again when
            # a topic's partition count changes (one rebalance, not one per member).
            log.info("group %s: partition counts changed, rejoining", session.group_id)
            session.rejoin_soon()

    # -- heartbeat and leave ---------------------------------------------------------------

    async def heartbeat(self) -> None:
        session = self._session
        sent = session.state
        resp = await session.send(
            HEARTBEAT,
            HEARTBEAT.Request(
                group_id=session.group_id,
                generation_id=sent.generation_id,
                member_id=sent.member_id,
                group_instance_id=session.group_instance_id,
            ),
            # As Java's session timer: a coordinator that does not answer within the
            # session is looked up again (it may have moved while this one froze).
            timeout=session.session_timeout_ms / 1000,
        )
        if resp.error_code:
            err = for_code(resp.error_code)
            if err.coordinator_loading:
                return
            if err.member_fenced and not session.current(sent):
                return  # about a generation the member has already left: ignored
        session.check(resp.error_code, "Heartbeat", sent)

    async def leave(self) -> None:
        session = self._session
        if not session.state.member_id or session.coordinator_id is None:
            session.state = GroupState()
            return
        log.info("group %s: member %s leaves", session.group_id, session.state.member_id)
        request = LEAVE_GROUP.Request(
            group_id=session.group_id,
            member_id=session.state.member_id,
            members=[
                {
                    "member_id": session.state.member_id,
                    "group_instance_id": session.group_instance_id,
                }
            ],
        )
        with contextlib.suppress(CoordinatorGone):
            await session.send(LEAVE_GROUP, request)
        session.state = GroupState()

    async def leave_on_poll_timeout(self) -> None:
        owned = self._session.subs.assigned()
        if owned:
            await self._listeners.revoke(owned)  # commits (auto commit), tells the listener
        if self.sends_leave:
            await self.leave()
        else:
            # As Java's consumer: a static member sends no LeaveGroup (its place is kept
            # until its session times out) and forgets its member id; when the
            # application polls again it joins with its instance id and takes it back.
            self._session.state = GroupState()

    # -- a rebalance -----------------------------------------------------------------------

    def _cooperative(self) -> bool:
        name = self._session.state.protocol or self._assignor_order[0]
        assignor = self._assignors.get(name)
        return assignor is not None and _is_cooperative(assignor)

    async def join(self) -> None:
        """Revoke (eager), JoinGroup, assign (leader), SyncGroup, take the assignment.

        A round that fails part-way (the coordinator moved, the group started another
        rebalance) is started again by the loop without revoking or telling the listener
        a second time.
        """
        session = self._session
        session.begin_rebalance()
        if self._needs_prepare or (session.state.generation_id < 0 and session.subs.assigned()):
            await self._prepare()
            self._needs_prepare = False
        topics = await session.subscribed_topics()
        join = await self._join(topics)
        joined = session.state
        session.completing = True  # (the coordinator refuses commits until SyncGroup)
        try:
            if join.leader == join.member_id:
                assignments = await self._lead(join)
            else:
                assignments = {}
            assigned = await self._sync(joined, assignments)
        finally:
            session.completing = False
        if session.pending_leave is not None:
            self._needs_prepare = True
            return  # unsubscribed meanwhile: this assignment is not taken, the loop leaves
        if not session.current(joined):
            raise Rejoin()  # (the membership changed under the round: another one)
        session.need_rejoin = False
        session.rebalances += 1
        await self._apply(joined, assigned)
        self._needs_prepare = True
        # (a cooperative follow-up round, if any, starts its own: commits meanwhile go
        # with this generation, which the coordinator accepts until that round's JoinGroup)
        session.end_rebalance()

    async def _prepare(self) -> None:
        """Before a join round: give up what the member cannot keep through it."""
        session = self._session
        owned = session.subs.assigned()
        if owned and session.state.generation_id < 0:
            # The member lost its generation (the coordinator said so): its partitions
            # may belong to others already; nothing is committed (as Java: lost).
            log.info(
                "group %s: partitions lost with the generation: %s", session.group_id, sorted(owned)
            )
            await self._listeners.lose(owned)
        elif not self._cooperative():
            if owned:
                # Eager: give everything back before joining.
                await self._listeners.revoke(owned)
            else:
                # As aiokafka (and Java's eager protocol): the listener hears of every
                # rebalance before it starts, with nothing to give back the first time.
                await self._listeners.tell_revoked(set())

    async def _join(self, topics: list[str]) -> Any:
        session = self._session
        owned = session.subs.assigned() if self._cooperative() else set()
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
                        "generation_id": session.state.generation_id,
                        "rack_id": session.client_rack,
                    },
                ),
            }
            for name in self._assignor_order
        ]
        backoff = session.retry.start()
        unknown = False
        while True:
            request = JOIN_GROUP.Request(
                group_id=session.group_id,
                session_timeout_ms=session.session_timeout_ms,
                rebalance_timeout_ms=session.rebalance_timeout_ms,
                member_id=session.state.member_id,
                group_instance_id=session.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=protocols,
                reason=None,
            )
            # JoinGroup may legitimately wait for the whole rebalance.
            resp = await session.send(
                JOIN_GROUP, request, timeout=session.rebalance_timeout_ms / 1000 + 5
            )
            if resp.error_code:
                err = for_code(resp.error_code)
                if issubclass(err, MemberIdRequired):
                    # KIP-394: join again at once with the id the coordinator gave.
                    session.state = GroupState(resp.member_id)
                    continue
                if issubclass(err, UnknownMemberIdError) and session.state.member_id:
                    # The coordinator forgot this id: join again at once as a new member.
                    session.reset_generation(
                        session.state, keep_member_id=False, why="JoinGroup UNKNOWN_MEMBER_ID"
                    )
                    if unknown:
                        await asyncio.sleep(backoff.next())
                    unknown = True
                    continue
                if issubclass(err, RebalanceInProgressError):
                    # The coordinator could not complete the round yet (as Java: retry).
                    await asyncio.sleep(backoff.next())
                    continue
                if err.coordinator_loading:
                    await asyncio.sleep(backoff.next())
                    continue
                session.check(resp.error_code, "JoinGroup")
            session.state = GroupState(
                resp.member_id, resp.generation_id, resp.protocol_name, resp.leader
            )
            log.info(
                "group %s: joined generation %d as %s%s with protocol %s",
                session.group_id,
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
        session = self._session
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
                    f"group {session.group_id}: the subscription of member {m.member_id!r} "
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
        client = session.client
        # The leader assigns from fresh metadata (one request per rebalance, without the
        # pause of refreshes in a row), and, as Java's, watches every member's topics
        # afterwards: a change of their partition counts makes it join again (on_metadata).
        client.add_topics(all_topics)
        with contextlib.suppress(KafkaError):
            await client.refresh_metadata(at_once=True)
        cluster = client.cluster
        session.assigned_topics = {
            t: len(cluster.partitions_for_topic(t) or ()) for t in sorted(all_topics)
        }
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

    async def _sync(
        self, joined: GroupState, assignments: Mapping[str, bytes]
    ) -> set[TopicPartition]:
        """SyncGroup for the generation ``joined`` (the JoinGroup's answer): its member
        id, generation and protocol name, whatever happens to the session meanwhile."""
        session = self._session
        backoff = session.retry.start()
        while True:
            request = SYNC_GROUP.Request(
                group_id=session.group_id,
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                group_instance_id=session.group_instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=joined.protocol,
                assignments=[{"member_id": m, "assignment": a} for m, a in assignments.items()],
            )
            resp = await session.send(SYNC_GROUP, request)
            if resp.error_code and for_code(resp.error_code).coordinator_loading:
                await asyncio.sleep(backoff.next())
                continue
            session.check(resp.error_code, "SyncGroup", joined)
            # SyncGroup v5+ names the protocol: one the member did not join with is a
            # group of members with different assignors (fatal, as in Java).
            protocol_type = getattr(resp, "protocol_type", None)
            protocol_name = getattr(resp, "protocol_name", None)
            if (protocol_type is not None and protocol_type != PROTOCOL_TYPE) or (
                protocol_name is not None and protocol_name != joined.protocol
            ):
                raise InconsistentGroupProtocolError(
                    f"SyncGroup for group {session.group_id}: the coordinator chose "
                    f"{protocol_type}/{protocol_name}, the member joined with "
                    f"{PROTOCOL_TYPE}/{joined.protocol}"
                )
            assigned: set[TopicPartition] = set()
            if resp.assignment:
                try:
                    value = decode_assignment(resp.assignment)
                except KafkaError as exc:
                    raise IllegalStateError(
                        f"group {session.group_id}: the assignment sent by the group leader "
                        f"cannot be decoded: {exc}"
                    ) from exc
                assigned = {
                    TopicPartition(a.topic, p)
                    for a in value.assigned_partitions
                    for p in a.partitions
                }
            assignor = self._assignors.get(joined.protocol or "")
            if assignor is not None and hasattr(assignor, "on_assignment"):
                assignor.on_assignment(sorted(assigned), joined.generation_id)
            return assigned

    async def _apply(self, joined: GroupState, assigned: set[TopicPartition]) -> None:
        session = self._session
        listeners = self._listeners
        owned = session.subs.assigned()
        revoked = owned - assigned
        added = assigned - owned
        cooperative = self._cooperative()
        if revoked:
            await listeners.revoke(revoked)
            if cooperative:
                # KIP-429: the partitions given up go to their new owner in a follow-up round.
                session.need_rejoin = True
        # New partitions start from their committed offsets (the fetcher looks them up).
        listeners.assign(assigned, added, taken=True)
        listeners.assigned_event.set()
        log.info(
            "group %s generation %d: assigned %s",
            session.group_id,
            joined.generation_id,
            sorted(assigned),
        )
        # After every rebalance, as Kafka's Java consumer: with the cooperative protocol
        # only the partitions added, an empty set when there are none (KIP-429).
        await listeners.tell_assigned(added if cooperative else assigned)


def _is_cooperative(assignor: Any) -> bool:
    protocols = getattr(assignor, "supported_protocols", None)
    if protocols is None:
        return False
    return "COOPERATIVE" in {str(getattr(p, "name", p)).upper() for p in protocols} and (
        str(getattr(protocols[-1], "name", protocols[-1])).upper() == "COOPERATIVE"
    )
