"""What the consumer is assigned and where it stands in each partition."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from rackafka.structs import TopicPartition

EARLIEST = "earliest"
LATEST = "latest"
NONE = "none"
#: Start from the group's committed offset, else from ``auto_offset_reset``.
COMMITTED = "committed"
#: ListOffsets timestamps of the reset strategies.
RESET_TIMESTAMPS = {EARLIEST: -2, LATEST: -1}


@dataclass
class PartitionState:
    """Position and fetch state of one assigned partition."""

    tp: TopicPartition
    #: Next offset to hand to the user; ``None`` until reset or seek.
    position: int | None = None
    #: Next offset to fetch: the end of the data already buffered (prefetch).
    fetch_position: int | None = None
    #: Leader epoch of the last record consumed (KIP-320), -1 when unknown.
    position_epoch: int = -1
    #: Leader epoch of the last batch fetched, the one that ends at ``fetch_position``
    #: (ahead of ``position_epoch`` while fetched data waits in the buffer): the
    #: ``last_fetched_epoch`` of the next Fetch; -1 when unknown.
    fetch_epoch: int = -1
    #: Pending reset: "earliest", "latest", or None.
    reset: str | None = None
    paused: bool = False
    #: Being revoked by the group (its position is being committed, the listener told):
    #: no record of it is handed out or fetched any more.
    pending_revocation: bool = False
    highwater: int | None = None
    last_stable_offset: int | None = None
    log_start_offset: int | None = None
    #: Wall-clock ms of the last fetch response that updated ``highwater``.
    last_poll_timestamp: int | None = None
    #: An error to raise to the user on the next poll (e.g. reset "none").
    error: BaseException | None = None
    #: ``error`` stays until the position changes (bad record data at the position).
    error_sticky: bool = False
    #: Position must be checked against the leader's log (KIP-320) before fetching.
    awaiting_validation: bool = False
    #: Leader epoch this position was last validated against.
    validated_epoch: int = -1
    #: Woken when a position becomes known.
    position_known: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def set_position(self, offset: int, epoch: int = -1) -> None:
        self.position = offset
        self.fetch_position = offset
        self.position_epoch = epoch
        self.fetch_epoch = epoch
        self.reset = None
        self.error = None
        self.error_sticky = False
        self.position_known.set()

    def request_reset(self, strategy: str) -> None:
        if self.error_sticky:
            self.error = None
            self.error_sticky = False
        self.reset = strategy
        self.position = None
        self.fetch_position = None
        self.fetch_epoch = -1
        self.position_known.clear()

    @property
    def has_valid_position(self) -> bool:
        return self.position is not None and self.reset is None

    @property
    def is_fetchable(self) -> bool:
        return (
            self.has_valid_position
            and not self.paused
            and not self.pending_revocation
            and self.error is None
            and not self.awaiting_validation
        )


class SubscriptionState:
    """The assigned partitions, in assignment order."""

    def __init__(self, default_reset: str) -> None:
        self.default_reset = default_reset
        #: Where newly assigned partitions start: ``COMMITTED`` with a group_id.
        self.initial_reset = default_reset
        self._states: dict[TopicPartition, PartitionState] = {}
        #: Bumped on every assignment change so the fetcher notices.
        self.version = 0
        #: Topics subscribed to (no group: all their partitions are assigned).
        self.topics: set[str] = set()
        self.pattern: str | None = None
        #: A regex the group coordinator evaluates (KIP-848 ``SubscriptionPattern``);
        #: ``topics`` are then the topics of the assigned partitions.
        self.regex: str | None = None
        self._assignment_waiters: list[asyncio.Future[None]] = []

    def assign(self, partitions: Iterable[TopicPartition], *, taken: bool = True) -> None:
        """Replace the assignment; kept partitions keep their state. ``taken``: an
        assignment (resolves :meth:`wait_for_assignment`), not what a revocation left."""
        new: dict[TopicPartition, PartitionState] = {}
        for tp in partitions:
            state = self._states.get(tp)
            if state is None:
                state = PartitionState(tp)
                state.request_reset(self.initial_reset)
            new[tp] = state
        self._states = new
        self.version += 1
        if taken and self._assignment_waiters:
            waiters, self._assignment_waiters = self._assignment_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def wait_for_assignment(self) -> asyncio.Future[None]:
        """aiokafka's name (code written for aiokafka awaits it through a consumer's
        ``_subscription``): a future resolved by the next assignment, the group's or
        ``assign()``'s, even when one is in force now."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._assignment_waiters.append(waiter)
        return waiter

    def unassign(self) -> None:
        self._states = {}
        self.version += 1

    def assigned(self) -> set[TopicPartition]:
        return set(self._states)

    def state(self, tp: TopicPartition) -> PartitionState | None:
        return self._states.get(tp)

    def states(self) -> list[PartitionState]:
        return list(self._states.values())

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._states
