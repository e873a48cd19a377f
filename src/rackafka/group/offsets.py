"""A group member's offsets: commits (OffsetCommit), auto commit, committed offsets
(OffsetFetch).

Commits carry the member's generation (classic) or member epoch (KIP-848, OffsetCommit
v9+); a member outside the group commits as a simple consumer (generation -1, no member
id).  The errors of a commit, as the Java client reacts to them:

* ``COORDINATOR_LOAD_IN_PROGRESS``, ``NOT_COORDINATOR``, ``COORDINATOR_NOT_AVAILABLE``,
  ``REQUEST_TIMED_OUT``, a connection failure: find the coordinator again and retry;
* ``STALE_MEMBER_EPOCH`` (KIP-848): the member's epoch moved on; retried with the new one
  while the member is in the group;
* ``UNKNOWN_MEMBER_ID``, ``ILLEGAL_GENERATION``, ``REBALANCE_IN_PROGRESS``: the group
  rebalanced; :class:`~rackafka.errors.CommitFailedError`, and the member joins again.

Retries wait by the group's backoff policy, for 30 seconds at the most.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rackafka.errors import (
    BrokerResponseError,
    CommitFailedError,
    KafkaConnectionError,
    KafkaTimeoutError,
    RebalanceInProgressError,
    StaleMemberEpochError,
    UnstableOffsetCommitError,
    for_code,
)
from rackafka.group.session import (
    GROUP_CHANNEL,
    CoordinatorGone,
    GroupSession,
    GroupState,
    Rejoin,
    StaleEpoch,
)
from rackafka.protocol.apis.offset_commit import OFFSET_COMMIT
from rackafka.protocol.apis.offset_fetch import OFFSET_FETCH
from rackafka.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger("rackafka.group")


class _Refused(Exception):
    """Internal: the coordinator refused a commit for the generation it was sent with."""

    def __init__(self, error: type[BrokerResponseError]) -> None:
        super().__init__(error.__name__)
        self.error = error
        self.rebalancing = issubclass(error, RebalanceInProgressError)


#: How long commit() and fetch_committed() retry before they give up, in seconds.
_RETRY_FOR_S = 30


class GroupOffsets:
    """Commits the member's offsets and looks committed offsets up.

    Arguments:
        session: the member's session (coordinator, membership).
        enable_auto_commit: commit the positions on a timer, before partitions are
            revoked, on unsubscribe and on close.
        auto_commit_interval_ms: the auto commit timer.
        member_fields: the member fields an OffsetFetch carries (KIP-848), from the
            group protocol.
    """

    def __init__(
        self,
        session: GroupSession,
        *,
        enable_auto_commit: bool,
        auto_commit_interval_ms: float,
        member_fields: Callable[[], dict[str, Any]],
    ) -> None:
        self._session = session
        self.auto_commit = enable_auto_commit
        self._interval = auto_commit_interval_ms / 1000
        self._member_fields = member_fields
        #: The offsets last committed by this member, by partition.
        self.committed: dict[TopicPartition, int] = {}
        #: When the next auto commit is due (monotonic clock).
        self.next_auto_commit = time.monotonic() + self._interval

    # -- auto commit ---------------------------------------------------------------------

    def restart_timer(self) -> None:
        """The next auto commit is one interval from now."""
        self.next_auto_commit = time.monotonic() + self._interval

    async def auto_commit_if_due(self) -> None:
        """With auto commit, commit the positions that changed if the timer is up."""
        if self.auto_commit and time.monotonic() >= self.next_auto_commit:
            try:
                await self.commit_positions()
            except CommitFailedError as exc:
                log.warning("group %s: auto commit failed: %s", self._session.group_id, exc)
            self.restart_timer()

    def uncommitted(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], owned: set[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Those of ``offsets`` of partitions still ``owned`` that are not committed yet."""
        return {
            tp: meta
            for tp, meta in offsets.items()
            if tp in owned and self.committed.get(tp) != meta.offset
        }

    # -- commits ---------------------------------------------------------------------------

    def consumed_offsets(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The positions of the assigned partitions, as offsets to commit."""
        out = {}
        for state in self._session.subs.states():
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
            if self.committed.get(tp) != meta.offset
        }
        if offsets:
            await self.commit(offsets)

    async def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], *, positions: bool = False
    ) -> None:
        """Commit ``offsets`` for the member's generation.

        While the group rebalances the commit is not lost: sent before the member's
        JoinGroup is answered it carries the generation the coordinator still accepts;
        between JoinGroup and SyncGroup (when the coordinator refuses commits) it waits
        for the round's end; answered for a generation the member has already left
        (``ILLEGAL_GENERATION``, ``UNKNOWN_MEMBER_ID``, ``REBALANCE_IN_PROGRESS``, a stale
        KIP-848 epoch) it is sent again, once the round is over, with the partitions the
        member still owns. A late answer never resets a newer membership.

        Arguments:
            offsets: the offsets to commit.
            positions: the offsets are the member's positions (``commit()`` without
                arguments): those of partitions revoked meanwhile are left out without
                an error (their new owner reads on from the last commit).

        Raises:
            CommitFailedError: the member is no longer in the generation it committed
                for and is not in a newer one (it was removed from the group), or
                (``positions`` False) some partitions are no longer its own (the others
                are committed first).
            RebalanceInProgressError: the group was still rebalancing when the commit's
                time (30 s) ran out.
            KafkaTimeoutError: the coordinator could not be reached in that time.
        """
        session = self._session
        session.raise_if_fenced()
        deadline = time.monotonic() + _RETRY_FOR_S
        backoff = session.retry.start()
        if not session.left.is_set() and not session.in_loop():
            # unsubscribe() then assign(): the coordinator takes the commit of a simple
            # consumer once the member has left the group.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(session.left.wait(), _RETRY_FOR_S)
        pending = dict(offsets)
        not_owned: set[TopicPartition] = set()
        # The membership loop (auto commit, a revocation, a listener) never waits for a
        # round to end: it is the one that would end it.
        waits = session.managed and not session.in_loop()
        while True:
            if waits and session.completing:
                pending = await self._after_rebalance(pending, not_owned, deadline)
            if not pending:
                break
            sent = session.state
            if session.managed and sent.generation_id < 0 and not session.in_loop():
                if not session.rebalancing:
                    raise CommitFailedError(
                        "Commit cannot be completed since the consumer is not part of an "
                        "active group; it will join again at its next poll"
                    )
                pending = await self._after_rebalance(pending, not_owned, deadline)
                continue
            try:
                await session.ensure_coordinator()
                await self._commit_once(pending, sent)
                for tp, meta in pending.items():
                    self.committed[tp] = meta.offset
                break
            except CoordinatorGone:
                session.coordinator_dead()
            except StaleEpoch:
                # The member's epoch moved on between the request and the answer; while
                # the member is still in the group the commit is retried with its new
                # epoch (as Kafka's Java consumer does), else it is too late.
                if session.state.generation_id < 0:
                    raise CommitFailedError(
                        "Commit cannot be completed since the member left the group"
                    ) from None
                if not session.current(sent):
                    continue  # (the new epoch is known: at once; else after a pause)
            except _Refused as refused:
                moved = not session.current(sent) or session.rebalancing
                if not moved and refused.rebalancing:
                    # The group started a rebalance this member has not heard of yet:
                    # join it, then commit what the member still owns.
                    session.rejoin_soon()
                    moved = True
                if not moved:
                    # Removed from the group in the generation it still has.
                    session.member_gone(sent, refused.error)
                    raise CommitFailedError(
                        "Commit cannot be completed since the group has already rebalanced "
                        "and assigned the partitions to another member"
                    ) from None
                if not waits:
                    raise CommitFailedError(
                        "Commit cannot be completed since the group is rebalancing"
                    ) from None
                pending = await self._after_rebalance(pending, not_owned, deadline)
                continue
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"commit for group {session.group_id} timed out")
            await asyncio.sleep(backoff.next())
        if not_owned and not positions:
            raise CommitFailedError(
                f"Commit of {sorted(not_owned)} cannot be completed since the group has "
                "rebalanced and assigned them to another member"
            )

    async def _after_rebalance(
        self,
        pending: dict[TopicPartition, OffsetAndMetadata],
        not_owned: set[TopicPartition],
        deadline: float,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Wait for the join round under way (or due) to end, then keep the offsets of
        partitions the member still owns (the others go to ``not_owned``)."""
        session = self._session
        while not session.settled.is_set() and session.managed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RebalanceInProgressError(
                    f"Offset commit for group {session.group_id} cannot be completed since "
                    "the group is executing a rebalance at the moment; call getmany() and "
                    "commit again"
                )
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(session.settled.wait(), min(remaining, 1.0))
        if session.state.generation_id < 0 or not session.managed:
            raise CommitFailedError(
                "Commit cannot be completed since the member left the group while it rebalanced"
            )
        owned = session.subs.assigned()
        kept = {tp: meta for tp, meta in pending.items() if tp in owned}
        lost = set(pending) - set(kept)
        if lost:
            log.info(
                "group %s: commit of %s left out: no longer this member's after the rebalance",
                session.group_id,
                sorted(lost),
            )
            not_owned.update(lost)
        return kept

    async def _commit_once(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], sent: GroupState
    ) -> None:
        session = self._session
        by_topic: dict[str, list[dict[str, Any]]] = {}
        epochs = {s.tp: s.position_epoch for s in session.subs.states()}
        for tp, meta in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": meta.offset,
                    "committed_leader_epoch": epochs.get(tp, -1),
                    "committed_metadata": meta.metadata or "",
                }
            )
        in_group = sent.generation_id >= 0
        request = OFFSET_COMMIT.Request(
            group_id=session.group_id,
            generation_id_or_member_epoch=sent.generation_id if in_group else -1,
            member_id=sent.member_id if in_group else "",
            group_instance_id=session.group_instance_id if in_group else None,
            topics=[{"name": t, "partitions": p} for t, p in by_topic.items()],
        )
        resp = await session.send(OFFSET_COMMIT, request)
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    err = for_code(p.error_code)
                    if err.coordinator_loading:
                        raise CoordinatorGone()
                    if issubclass(err, StaleMemberEpochError):
                        raise StaleEpoch()
                    if err.member_fenced or issubclass(err, RebalanceInProgressError):
                        raise _Refused(err)
                session.check(p.error_code, f"OffsetCommit of {t.name}-{p.partition_index}", sent)

    # -- committed offsets -----------------------------------------------------------------

    async def fetch_committed(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The committed offsets of ``partitions`` (None where nothing is committed)."""
        session = self._session
        tps = sorted(set(partitions))
        if not tps:
            return {}
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": p} for t, p in by_topic.items()]
        deadline = time.monotonic() + _RETRY_FOR_S
        backoff = session.retry.start()
        while True:
            try:
                node = await session.ensure_coordinator()
                version = await session.client.api_version(
                    node, OFFSET_FETCH, channel=GROUP_CHANNEL
                )
                request = OFFSET_FETCH.Request(
                    group_id=session.group_id,
                    topics=topics,
                    groups=[
                        {"group_id": session.group_id, "topics": topics, **self._member_fields()}
                    ],
                    require_stable=True,
                )
                resp = await session.send(OFFSET_FETCH, request)
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
            except (CoordinatorGone, KafkaConnectionError):
                session.coordinator_dead()
            except Rejoin:
                pass
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"committed offsets of group {session.group_id} not found")
            await asyncio.sleep(backoff.next())

    def _check_fetch(self, code: int) -> None:
        if not code:
            return
        err = for_code(code)
        if (
            err.coordinator_loading
            or err.member_fenced
            or issubclass(err, (UnstableOffsetCommitError, StaleMemberEpochError))
        ):
            # Retried by the caller's loop: a KIP-848 member's epoch or id changed since
            # the request (it goes again with the member's current ones).
            raise Rejoin()
        if err.coordinator_moved:
            raise CoordinatorGone()
        raise err(f"OffsetFetch for group {self._session.group_id}")
