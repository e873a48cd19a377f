"""Answers judged against the generation they were sent with.

A commit (or any group request) is sent with the membership current then; its answer may
arrive after the member has joined a newer generation. Such a late answer must never reset
the newer membership: the member keeps its id and generation, and a commit refused for the
old generation is sent again with the new one, for the partitions the member still owns.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from rackafka.errors import CommitFailedError, IllegalGenerationError, UnknownMemberIdError
from rackafka.group.session import GroupSession, GroupState, Rejoin
from rackafka.protocol.apis.offset_commit import OFFSET_COMMIT
from rackafka.testing import EmbeddedCluster
from tests.group.test_group_behaviour import Poller, group_consumer, stop_all, tps
from tests.group.test_group_consumer import wait_until

ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27


def session() -> GroupSession:
    from rackafka._backoff import BackoffPolicy

    return GroupSession(
        client=None,  # type: ignore[arg-type]  (the generation logic never sends)
        subscriptions=None,  # type: ignore[arg-type]
        group_id="g",
        group_instance_id=None,
        client_rack=None,
        session_timeout_ms=10000,
        rebalance_timeout_ms=10000,
        heartbeat_interval_ms=3000,
        retry=BackoffPolicy(100, 1000),
        pattern=None,
    )


async def test_a_late_answer_about_an_older_generation_changes_nothing() -> None:
    s = session()
    old = GroupState("m-1", 2, "range", "m-1")
    s.state = GroupState("m-1", 3, "range", "m-1")
    s.need_rejoin = False
    for err in (IllegalGenerationError, UnknownMemberIdError):
        s.member_gone(old, err)
        assert s.state == GroupState("m-1", 3, "range", "m-1")
        assert not s.need_rejoin
    with pytest.raises(Rejoin):
        s.check(ILLEGAL_GENERATION, "Heartbeat", old)
    assert s.state.generation_id == 3


@pytest.mark.parametrize(
    ("err", "member_after"),
    [(IllegalGenerationError, "m-1"), (UnknownMemberIdError, "")],
)
async def test_an_answer_about_the_current_generation_resets_it(
    err: Any, member_after: str
) -> None:
    # As Java: ILLEGAL_GENERATION keeps the member id (the coordinator still knows it and
    # would wait for it until the rebalance timeout), UNKNOWN_MEMBER_ID drops it.
    s = session()
    s.state = current = GroupState("m-1", 3, "range", None)
    s.need_rejoin = False
    s.member_gone(current, err)
    assert s.state == GroupState(member_after, -1)
    assert s.need_rejoin
    assert not s.settled.is_set()  # commits wait for the join round that follows


class Revokes(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.revoked: list[set[TopicPartition]] = []
        self.lost: list[set[TopicPartition]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked.append(set(revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.lost.append(set(lost))


def refuse_first_commit_after_a_rejoin(consumer: AIOKafkaConsumer, code: int) -> dict[str, Any]:
    """The next OffsetCommit is answered ``code``, but only after the member has joined a
    newer generation (the answer of a slow coordinator, seen as it arrives late)."""
    coordinator = consumer._coordinator
    assert coordinator is not None
    sess = coordinator.session
    original = sess.send
    seen: dict[str, Any] = {"commits": [], "late": False}

    async def send(api: Any, request: Any, **kw: Any) -> Any:
        if api is not OFFSET_COMMIT:
            return await original(api, request, **kw)
        seen["commits"].append(request.generation_id_or_member_epoch)
        if seen["late"]:
            return await original(api, request, **kw)
        seen["late"] = True
        generation = sess.state.generation_id
        coordinator.session.need_rejoin = True  # (a rebalance the member takes part in)
        coordinator.session.wakeup.set()
        while sess.state.generation_id <= generation or sess.rebalancing:
            await asyncio.sleep(0.02)
        seen["joined"] = sess.state
        return SimpleNamespace(
            topics=[
                SimpleNamespace(
                    name=t.name,
                    partitions=[
                        SimpleNamespace(partition_index=p.partition_index, error_code=code)
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ]
        )

    sess.send = send  # type: ignore[method-assign]
    return seen


@pytest.mark.parametrize("code", [ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS])
async def test_a_commit_refused_late_goes_again_with_the_new_generation(
    embedded_cluster: EmbeddedCluster, code: int
) -> None:
    c = embedded_cluster
    c.create_topic("late", partitions=2, replication_factor=3)
    await c.aproduce("late", 100, value_size=10, partition="spread")
    listener = Revokes()
    consumer = group_consumer(
        c, f"g-late-{code}", enable_auto_commit=False, partition_assignment_strategy="sticky"
    )
    consumer.subscribe(["late"], listener=listener)
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 100, 15, "the first records")
        await poller.stop()
        seen = refuse_first_commit_after_a_rejoin(consumer, code)
        coordinator = consumer._coordinator
        assert coordinator is not None
        before = coordinator.state
        await asyncio.wait_for(consumer.commit(), 20)  # no error reaches the application
        joined = seen["joined"]
        # The late answer did not reset the newer membership ...
        assert coordinator.state == joined, (before, joined, coordinator.state)
        assert joined.member_id == before.member_id
        assert joined.generation_id > before.generation_id
        # ... the commit went again with the new generation ...
        assert seen["commits"] == [before.generation_id, joined.generation_id]
        for tp in tps("late", range(2)):
            assert await consumer.committed(tp) == 50
        # ... and no partition was lost (only the eager protocol's revocation of the round).
        assert not listener.lost
        await asyncio.sleep(0.5)
        assert coordinator.state == joined  # no other round followed
    finally:
        await stop_all(poller, consumer)


async def test_a_commit_refused_for_the_current_generation_fails(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # The coordinator removed the member from the generation it still has: the commit truly
    # cannot succeed; the member joins again with its id and loses (not revokes) its
    # partitions, which may be someone else's already.
    c = embedded_cluster
    c.create_topic("gone", partitions=2, replication_factor=3)
    await c.aproduce("gone", 100, value_size=10, partition="spread")
    listener = Revokes()
    consumer = group_consumer(
        c, "g-gone", enable_auto_commit=False, partition_assignment_strategy="cooperative-sticky"
    )
    consumer.subscribe(["gone"], listener=listener)
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 100, 15, "the first records")
        coordinator = consumer._coordinator
        assert coordinator is not None
        member = coordinator.state.member_id
        c.push_request_errors("OffsetCommit", ILLEGAL_GENERATION)
        with pytest.raises(CommitFailedError):
            await asyncio.wait_for(consumer.commit(), 10)
        await wait_until(lambda: bool(listener.lost), 10, "the partitions lost")
        assert listener.lost == [tps("gone", range(2))]
        await wait_until(lambda: len(consumer.assignment()) == 2, 10, "the assignment back")
        assert coordinator.state.member_id == member
        assert not poller.errors
    finally:
        await stop_all(poller, consumer)


async def test_a_coordinator_that_is_down_is_looked_up_with_backoff(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # The coordinator is down but still named by FindCoordinator (until the cluster moves
    # its groups): the member looks it up again after growing pauses, not in a tight
    # loop, and carries on in its generation once it is back.
    c = embedded_cluster
    c.create_topic("cdown", partitions=2, replication_factor=3)
    c.set_coordinator("group", "g-cdown", 2)
    # (The session outlasts the outage and the look-ups after it with room to spare: the
    # mock coordinator's session clock runs on while the broker is down.)
    consumer = group_consumer(c, "g-cdown", retry_backoff_ms=100, session_timeout_ms=12000)
    consumer.subscribe(["cdown"])
    await consumer.start()
    coordinator = consumer._coordinator
    assert coordinator is not None
    try:
        await wait_until(lambda: coordinator.coordinator_id == 2, 10, "the coordinator")
        generation = coordinator.state
        c.start_request_tracking()
        c.broker_down(2)
        down = time.monotonic()
        await asyncio.sleep(5)
        # Once the pauses have grown (100 ms doubling to retry_backoff_max_ms, 1 s), a
        # few look-ups a second at most (the membership loop, the committed-offsets look-up).
        lookups = [r for r in c.requests("FindCoordinator") if r.timestamp >= down + 2]
        assert 1 <= len(lookups) <= 8, [round(r.timestamp - down, 2) for r in lookups]
        c.broker_up(2)
        await wait_until(lambda: coordinator.coordinator_id == 2, 15, "the coordinator back")
        await asyncio.sleep(1)
        assert coordinator.state == generation  # no rebalance for a coordinator outage
    finally:
        c.broker_up(2)
        await consumer.stop()
