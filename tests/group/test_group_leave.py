"""Leaving a consumer group on ``unsubscribe()``, and ``on_partitions_assigned`` after every
cooperative rebalance, against the embedded cluster (librdkafka's mock group coordinator).

Kafka's Java consumer leaves the group when it unsubscribes (``maybeLeaveGroup``): the
partitions are revoked, a LeaveGroup request hands them to the other members at once, the
member id and generation are reset and heartbeats stop.  With the cooperative protocol it
calls ``onPartitionsAssigned`` after every rebalance, with an empty set when nothing was
added (KIP-429).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer
from rackafka.group.coordinator import GroupCoordinator
from rackafka.testing import EmbeddedCluster
from tests.group.test_group_behaviour import (
    AsyncListener,
    Poller,
    SyncListener,
    expected,
    group_consumer,
    stop_all,
    tps,
)
from tests.group.test_group_consumer import wait_until

pytestmark = pytest.mark.fault_injection

GROUP_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit")


def coordinator(consumer: AIOKafkaConsumer) -> GroupCoordinator:
    group = consumer._coordinator
    assert group is not None
    return group


def after(cluster: EmbeddedCluster, api: str, since: float) -> int:
    """How many ``api`` requests the brokers received after ``since`` (monotonic clock)."""
    return sum(1 for r in cluster.requests(api) if r.timestamp > since)


# -- unsubscribe() leaves the group --------------------------------------------------------


async def test_unsubscribe_hands_partitions_over_at_once(embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("lv", partitions=4, replication_factor=3)
    # The mock coordinator starts a rebalance when a member leaves and always waits
    # session_timeout_ms - 1 s for the others to rejoin (a real broker ends the wait once
    # they have).  Without a LeaveGroup it would first have to notice that a's session
    # expired (session_timeout_ms after a's last heartbeat, checked once a second): b
    # could not get a's partitions before 2 * session_timeout_ms - 1 s.  With it, b has
    # them before a's session could even have expired.
    session_ms = 3000
    kw: dict[str, Any] = {
        "session_timeout_ms": session_ms,
        "partition_assignment_strategy": "roundrobin",
        "auto_commit_interval_ms": 60000,  # the only commits: on revoke
    }
    a = group_consumer(c, "g-lv", **kw)
    b = group_consumer(c, "g-lv", **kw)
    la = SyncListener()
    a.subscribe(["lv"], listener=la)
    b.subscribe(["lv"])
    pa, pb = Poller(a), Poller(b)
    try:
        await a.start()
        await b.start()
        pa.start()
        pb.start()
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a and b share"
        )
        await asyncio.sleep(0.3)
        first = await c.aproduce("lv", 80, value_size=10, partition="spread")  # 20 each
        await wait_until(lambda: set(pa.seen) | set(pb.seen) >= expected(first, "lv"), 15, "all")
        a_parts = a.assignment()
        assert {tp: await a.position(tp) for tp in a_parts} == dict.fromkeys(a_parts, 20)
        old_member = coordinator(a).state.member_id
        assert old_member and coordinator(a).state.generation_id >= 0
        seen_by_a = len(pa.seen)
        calls = len(la.rec.calls)
        c.start_request_tracking()
        started = time.monotonic()
        a.unsubscribe()
        assert a.assignment() == set() and a.subscription() == set()
        await wait_until(lambda: len(b.assignment()) == 4, 2 * session_ms / 1000, "b takes all")
        took = time.monotonic() - started
        # a was revoked (auto commit first), sent one LeaveGroup and forgot its membership.
        assert la.rec.kinds()[calls:] == ["revoked"]
        assert la.rec.calls[calls].tps == a_parts
        assert len(c.requests("LeaveGroup")) == 1
        assert coordinator(a).state.member_id == ""
        assert coordinator(a).state.generation_id == -1
        assert {tp: await b.committed(tp) for tp in a_parts} == dict.fromkeys(a_parts, 20)
        second = await c.aproduce("lv", 80, value_size=10, partition="spread")
        await wait_until(lambda: set(pb.seen) >= expected(second, "lv"), 15, "b reads")
        assert len(pa.seen) == seen_by_a  # nothing for a after unsubscribe()
        # b resumed a's partitions where a's commit left them: nothing read twice.
        a_ids = {tp.partition for tp in a_parts}
        assert not [r for r in pb.seen if r[1] in a_ids and r[2] < 20]
        # subscribe() again: a joins as a new member and gets its share back.
        a.subscribe(["lv"], listener=la)
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a is back"
        )
        assert coordinator(a).state.member_id not in ("", old_member)
        assert la.rec.kinds()[calls:] == ["revoked", "assigned"]
        assert la.rec.calls[calls + 1].tps == a.assignment()
        third = await c.aproduce("lv", 80, value_size=10, partition="spread")
        want = expected(first, "lv") | expected(second, "lv") | expected(third, "lv")
        await wait_until(lambda: set(pa.seen) | set(pb.seen) >= want, 15, "every record")
        assert {(t, p) for t, p, off in pa.seen if off >= 40} == {
            ("lv", tp.partition) for tp in a.assignment()
        }
    finally:
        await stop_all(pa, pb, a, b)
    assert not pa.errors and not pb.errors
    assert took < session_ms / 1000, took


async def test_unsubscribed_member_sends_nothing_until_it_subscribes(
    embedded_cluster: EmbeddedCluster,
) -> None:
    c = embedded_cluster
    c.create_topic("hb", partitions=2, replication_factor=3)
    # Heartbeats and auto commits every 100 ms: a member still in the group shows at once.
    a = group_consumer(c, "g-hb", heartbeat_interval_ms=100, auto_commit_interval_ms=100)
    a.subscribe(["hb"])
    poller = Poller(a)
    try:
        await a.start()
        poller.start()
        await wait_until(lambda: len(a.assignment()) == 2, 15, "the assignment")
        c.start_request_tracking()
        await wait_until(lambda: bool(c.requests("Heartbeat")), 5, "heartbeats")
        a.unsubscribe()
        await wait_until(lambda: bool(c.requests("LeaveGroup")), 5, "the LeaveGroup")
        left = c.requests("LeaveGroup")[0].timestamp
        await asyncio.sleep(1.5)  # fifteen heartbeat and auto commit intervals
        assert {api: after(c, api, left) for api in GROUP_APIS} == dict.fromkeys(GROUP_APIS, 0)
        assert a.assignment() == set()
        assert coordinator(a).state.member_id == ""
        a.subscribe(["hb"])
        await wait_until(lambda: len(a.assignment()) == 2, 15, "the assignment again")
        assert after(c, "JoinGroup", left) >= 1
        await wait_until(lambda: after(c, "Heartbeat", left) >= 3, 5, "heartbeats again")
        result = await c.aproduce("hb", 20, value_size=10, partition="spread")
        await wait_until(lambda: set(poller.seen) >= expected(result, "hb"), 15, "records")
    finally:
        await stop_all(poller, a)
    assert not poller.errors


async def test_listener_commits_in_revoke_and_buffered_records_stay_back(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # The partitions are still there while on_partitions_revoked runs (position() and
    # commit() work in it, as in Java); getmany() hands nothing out from unsubscribe() on,
    # even records the fetcher had already buffered.
    c = embedded_cluster
    c.create_topic("rc", partitions=2, replication_factor=3)
    first = await c.aproduce("rc", 40, value_size=10, partition="spread")
    consumer = group_consumer(c, "g-rc", enable_auto_commit=False)
    listener = AsyncListener(consumer)  # sleeps 0.2 s, then commits the positions
    consumer.subscribe(["rc"], listener=listener)
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: set(poller.seen) >= expected(first, "rc"), 15, "the records")
        await poller.stop()
        await c.aproduce("rc", 40, value_size=10, partition="spread")
        await asyncio.sleep(1.0)  # the fetcher buffers them
        consumer.unsubscribe()
        assert await consumer.getmany(timeout_ms=1000) == {}
        assert listener.rec.kinds() == ["assigned", "revoked"]
        assert listener.committed_on_revoke == dict.fromkeys(tps("rc", range(2)), 20)
        for tp in tps("rc", range(2)):
            assert await consumer.committed(tp) == 20
        assert consumer.assignment() == set()
    finally:
        await stop_all(poller, consumer)
    assert not poller.errors


async def test_stop_right_after_unsubscribe_commits_the_positions(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # stop() before the membership task got to the unsubscribe: stop() commits what
    # unsubscribe() saw and leaves.
    c = embedded_cluster
    c.create_topic("su", partitions=2, replication_factor=3)
    first = await c.aproduce("su", 40, value_size=10, partition="spread")
    consumer = group_consumer(c, "g-su", auto_commit_interval_ms=60000)
    consumer.subscribe(["su"])
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: set(poller.seen) >= expected(first, "su"), 15, "the records")
        await poller.stop()
        c.start_request_tracking()
        consumer.unsubscribe()
        await asyncio.wait_for(consumer.stop(), 15)
    finally:
        await stop_all(poller, consumer)
    assert len(c.requests("LeaveGroup")) == 1
    async with group_consumer(c, "g-su") as check:
        for tp in tps("su", range(2)):
            assert await check.committed(tp) == 20


@pytest.mark.parametrize("how", ["unsubscribe", "no poll"])
async def test_static_member_gives_partitions_up_without_leave_group(
    embedded_cluster: EmbeddedCluster, how: str
) -> None:
    # As Kafka's Java consumer: a static member (group_instance_id) that unsubscribes, or
    # does not poll for max_poll_interval_ms, revokes its partitions and resets its
    # membership, but sends no LeaveGroup (its place is kept until the session times
    # out; a dynamic member leaves: test_member_that_stops_polling_leaves_and_rejoins).
    # It joins again, with its instance id, when it subscribes again or polls again.
    c = embedded_cluster
    name = "st-" + how.replace(" ", "-")
    c.create_topic(name, partitions=2, replication_factor=3)
    consumer = group_consumer(
        c, "g-" + name, group_instance_id="static-" + name, max_poll_interval_ms=1000
    )
    listener = SyncListener()
    consumer.subscribe([name], listener=listener)
    poller = Poller(consumer)
    try:
        await consumer.start()
        poller.start()
        await wait_until(lambda: len(consumer.assignment()) == 2, 15, "the assignment")
        c.start_request_tracking()
        if how == "unsubscribe":
            consumer.unsubscribe()
        else:
            await poller.stop()  # no poll from here
        await wait_until(lambda: listener.rec.kinds() == ["assigned", "revoked"], 10, "revoke")
        await wait_until(lambda: coordinator(consumer).state.member_id == "", 5, "the reset")
        revoked = listener.rec.calls[1].end
        await asyncio.sleep(1.0)
        assert not c.requests("LeaveGroup")
        assert after(c, "Heartbeat", revoked + 0.2) == 0
        assert consumer.assignment() == set()
        assert listener.rec.calls[1].tps == tps(name, range(2))
        if how == "unsubscribe":
            consumer.subscribe([name], listener=listener)
        else:
            poller.start()
        await wait_until(lambda: len(consumer.assignment()) == 2, 15, "the assignment again")
        assert coordinator(consumer).state.member_id
        assert not c.requests("LeaveGroup")
    finally:
        await stop_all(poller, consumer)
    assert not poller.errors
    assert listener.rec.kinds() == ["assigned", "revoked", "assigned"]


async def test_unsubscribe_without_group_membership_clears_manual_assignment(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # A consumer with a group_id that only assign()s never joins: unsubscribe() clears the
    # assignment at once and sends no group request.
    c = embedded_cluster
    c.create_topic("ma", partitions=2, replication_factor=3)
    async with group_consumer(c, "g-ma") as consumer:
        consumer.assign(tps("ma", range(2)))
        c.start_request_tracking()
        consumer.unsubscribe()
        assert consumer.assignment() == set()
        await asyncio.sleep(0.3)
        assert not [r for r in c.requests() if r.api_name in GROUP_APIS]


# -- on_partitions_assigned after every cooperative rebalance ---------------------------------


async def test_cooperative_assigned_callback_with_nothing_added(
    embedded_cluster: EmbeddedCluster,
) -> None:
    c = embedded_cluster
    c.create_topic("ce", partitions=4, replication_factor=3)
    kw: dict[str, Any] = {"partition_assignment_strategy": "cooperative-sticky"}
    a = group_consumer(c, "g-ce", **kw)
    b = group_consumer(c, "g-ce", **kw)
    la, lb = SyncListener(), AsyncListener()
    a.subscribe(["ce"], listener=la)
    b.subscribe(["ce"], listener=lb)
    pa, pb = Poller(a), Poller(b)
    try:
        await a.start()
        pa.start()
        await wait_until(lambda: len(a.assignment()) == 4, 15, "a owns everything")
        await wait_until(lambda: len(la.rec.calls) == 1, 5, "a's first callback")
        await b.start()
        pb.start()
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a and b share"
        )
        await asyncio.sleep(0.5)  # settled
        rebalances_a = coordinator(a).rebalances
        rebalances_b = coordinator(b).rebalances
        final_a, final_b = a.assignment(), b.assignment()
    finally:
        await stop_all(pa, pb, a, b)
    assert not pa.errors and not pb.errors
    # a's share only shrank: every rebalance after the first still calls
    # on_partitions_assigned, with the empty set.
    assert rebalances_a >= 3
    assert la.rec.kinds() == ["assigned", "revoked"] + ["assigned"] * (rebalances_a - 1)
    first, revoked, *later = la.rec.calls
    assert first.tps == tps("ce", range(4))
    assert revoked.tps == tps("ce", range(4)) - final_a
    assert [call.tps for call in later] == [frozenset()] * (rebalances_a - 1)
    assert later[0].start >= revoked.end
    # b: one callback per rebalance (coroutines too), the partitions when they come.
    assert lb.rec.kinds() == ["assigned"] * rebalances_b
    assert [call.tps for call in lb.rec.calls if call.tps] == [final_b]
    assert not la.rec.overlapped and not lb.rec.overlapped
