"""The group's partitions as the member holds them, and the calls to the rebalance listener.

Every change of the member's partitions, whatever the group protocol, goes through
:class:`Listeners`: partitions are handed to the consumer (:meth:`Listeners.assign`),
revoked (:meth:`Listeners.revoke`: no record of them reaches the application any more,
their positions are committed with auto commit, then ``on_partitions_revoked``) or lost
(:meth:`Listeners.lose`: nothing committed, ``on_partitions_lost`` when the listener has
it).  While a listener runs, or partitions wait to be revoked, no records are handed out
(:meth:`Listeners.idle`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

from rackafka.errors import CommitFailedError, KafkaError
from rackafka.group.offsets import GroupOffsets
from rackafka.group.session import GroupSession
from rackafka.structs import TopicPartition

log = logging.getLogger("rackafka.group")


class Listeners:
    """The member's partitions, and the calls to the rebalance listener about them."""

    def __init__(
        self,
        session: GroupSession,
        offsets: GroupOffsets,
        *,
        on_assignment: Callable[[set[TopicPartition], set[TopicPartition], bool], Any],
        listener: Callable[[], Any],
    ) -> None:
        self._session = session
        self._offsets = offsets
        self._on_assignment = on_assignment
        #: The application's current rebalance listener (None: none).
        self.listener = listener
        #: The partitions the group gave this member (what an unsubscribe revokes).
        self.owned: set[TopicPartition] = set()
        #: Set once an assignment is known (or an error ends the wait for one).
        self.assigned_event = asyncio.Event()
        self._listener_idle = asyncio.Event()
        self._listener_idle.set()
        #: Clear from unsubscribe() until its partitions are revoked.
        self.leave_done = asyncio.Event()
        self.leave_done.set()

    def idle(self) -> bool:
        """No listener runs and no unsubscribe waits to revoke partitions."""
        return self._listener_idle.is_set() and self.leave_done.is_set()

    async def until_idle(self) -> None:
        while not self.idle():
            await self._listener_idle.wait()
            await self.leave_done.wait()

    def assign(
        self, assigned: set[TopicPartition], added: set[TopicPartition], *, taken: bool = False
    ) -> None:
        """Hand the group's partitions to the consumer: ``taken`` for a rebalance's
        assignment, not for what is left after a revocation or a leave."""
        self.owned = set(assigned)
        self._on_assignment(assigned, added, taken)

    async def call(
        self, fn: Callable[[set[TopicPartition]], Any], tps: set[TopicPartition]
    ) -> None:
        """Call a listener method (records are held back meanwhile); its errors are logged."""
        self._listener_idle.clear()
        try:
            result = fn(set(tps))
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("rebalance listener %s failed", getattr(fn, "__qualname__", fn))
        finally:
            self._listener_idle.set()

    async def tell_revoked(self, tps: set[TopicPartition]) -> None:
        """``on_partitions_revoked`` of the current listener, if any."""
        listener = self.listener()
        if listener is not None:
            await self.call(listener.on_partitions_revoked, tps)

    async def tell_assigned(self, tps: set[TopicPartition]) -> None:
        """``on_partitions_assigned`` of the current listener, if any."""
        listener = self.listener()
        if listener is not None:
            await self.call(listener.on_partitions_assigned, tps)

    async def revoke(self, revoked: set[TopicPartition]) -> None:
        """Give partitions back: commit their positions (auto commit), tell the listener."""
        # From here on no record of these partitions reaches the application (as the
        # Java consumer's pending revocation): a getmany() running beside the commit
        # below cannot move their positions past the offsets committed, so the next
        # owner starts right after the last record handed out.
        subs = self._session.subs
        for tp in revoked:
            state = subs.state(tp)
            if state is not None:
                state.pending_revocation = True
        if self._offsets.auto_commit and self._session.state.generation_id >= 0:
            try:
                await self._offsets.commit_positions(revoked)
            except (CommitFailedError, KafkaError) as exc:
                log.warning("group %s: commit on revoke failed: %s", self._session.group_id, exc)
        await self.tell_revoked(set(revoked))
        self.assign(subs.assigned() - revoked, set())
        self.assigned_event.clear()

    async def lose(self, lost: set[TopicPartition]) -> None:
        """The partitions are no longer ours (fenced): nothing is committed."""
        listener = self.listener()
        if listener is not None:
            fn = getattr(listener, "on_partitions_lost", None)
            if fn is None:
                fn = listener.on_partitions_revoked
            await self.call(fn, set(lost))
        self.assign(set(self.owned) - lost, set())
        self.assigned_event.clear()
