"""The KIP-848 consumer group protocol (group_protocol="consumer") against the embedded cluster.

librdkafka's mock brokers speak ConsumerGroupHeartbeat v1 and assign with a range
assignor of their own; they take the member's rack and ignore it.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from rackafka import AIOKafkaConsumer, SubscriptionPattern, TopicPartition, errors
from rackafka.abc import ConsumerRebalanceListener
from rackafka.errors import IllegalStateError, KafkaConfigurationError
from rackafka.group.consumer_group import ConsumerGroupProtocol

from ._util import drain, wait_shared, wait_until


def member_id(consumer: AIOKafkaConsumer) -> str:
    """The KIP-848 member id of ``consumer`` (its own, kept when it is fenced)."""
    group = consumer._coordinator
    assert group is not None
    protocol = group.protocol
    assert isinstance(protocol, ConsumerGroupProtocol)
    return protocol.member_id


pytestmark = pytest.mark.fault_injection

FENCED_MEMBER_EPOCH = errors.FencedMemberEpochError.errno
UNKNOWN_MEMBER_ID = errors.UnknownMemberIdError.errno
CONSUMER_GROUP_HEARTBEAT = 68


def member(cluster, group: str, **kw) -> AIOKafkaConsumer:
    kw.setdefault("auto_offset_reset", "earliest")
    kw.setdefault("retry_backoff_ms", 50)
    return AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers,
        group_id=group,
        group_protocol="consumer",
        **kw,
    )


@pytest.fixture
def cluster(embedded_cluster):
    embedded_cluster.set_consumer_group_timing(heartbeat_interval_ms=200, session_timeout_ms=6000)
    return embedded_cluster


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    async def on_partitions_revoked(self, revoked):
        self.calls.append(("revoked", set(revoked)))

    async def on_partitions_assigned(self, assigned):
        self.calls.append(("assigned", set(assigned)))


async def test_one_member_gets_every_partition(cluster) -> None:
    cluster.create_topic("cp-one", partitions=4, replication_factor=3)
    cluster.produce("cp-one", 400, value_size=10, partition="spread")
    c = member(cluster, "g-cp-one")
    c.subscribe(["cp-one"])
    await c.start()
    try:
        assert c.assignment() == {TopicPartition("cp-one", p) for p in range(4)}
        seen: list = []
        stop = asyncio.Event()
        task = asyncio.ensure_future(drain(c, seen, stop))
        await wait_until(lambda: len(seen) >= 400, 10, "all records")
        stop.set()
        await task
        assert sorted(seen) == sorted(set(seen))
        assert len(seen) == 400
    finally:
        await c.stop()


async def test_three_members_read_every_record_once_as_members_join_and_leave(cluster) -> None:
    c = cluster
    c.create_topic("cp-flow", partitions=6, replication_factor=3)
    c.produce("cp-flow", 3000, value_size=20, partition="spread", batch_size=4000)
    produced = 3000
    seen: list = []
    stop = asyncio.Event()
    members: dict[str, AIOKafkaConsumer] = {}
    tasks: dict[str, asyncio.Future] = {}

    async def join(name: str) -> None:
        m = member(c, "g-cp-flow", client_rack=f"az-{name}")
        m.subscribe(["cp-flow"])
        members[name] = m
        # Bounded, so that a member that never gets its assignment fails here, named.
        await asyncio.wait_for(m.start(), 30)
        tasks[name] = asyncio.ensure_future(drain(m, seen, stop))

    def sizes() -> list[int]:
        return sorted(len(m.assignment()) for m in members.values())

    try:
        await join("a")
        await wait_until(lambda: sizes() == [6], 10, "a owns all partitions")
        await join("b")
        await wait_until(lambda: sizes() == [3, 3], 15, "a and b share")
        c.produce("cp-flow", 1500, value_size=20, partition="spread", batch_size=4000)
        produced += 1500
        await join("c")
        await wait_until(lambda: sizes() == [2, 2, 2], 15, "three members share")
        c.produce("cp-flow", 1500, value_size=20, partition="spread", batch_size=4000)
        produced += 1500
        # a leaves: the others take its partitions, from where it committed.
        leaving = members.pop("a")
        task = tasks.pop("a")
        await wait_until(lambda: len(seen) >= 2000, 15, "reading before a leaves")
        stop_a = asyncio.Event()
        stop_a.set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await leaving.stop()
        await wait_until(lambda: sizes() == [3, 3], 15, "b and c share after a left")
        c.produce("cp-flow", 1500, value_size=20, partition="spread", batch_size=4000)
        produced += 1500
        await wait_until(lambda: len(set(seen)) >= produced, 30, "every record")
        await asyncio.sleep(0.5)
    finally:
        stop.set()
        for t in tasks.values():
            await asyncio.wait_for(t, 30)
        for m in members.values():
            await asyncio.wait_for(m.stop(), 30)
    assert len(set(seen)) == produced
    assert len(seen) == produced, "a record was read twice"
    owners = [set(m.assignment()) for m in members.values()]
    assert not owners[0] & owners[1]


async def test_listener_hears_revocation_then_assignment_of_what_was_added(cluster) -> None:
    cluster.create_topic("cp-listen", partitions=4, replication_factor=3)
    rec_a, rec_b = Recorder(), Recorder()
    a = member(cluster, "g-cp-listen")
    a.subscribe(["cp-listen"], listener=rec_a)
    await a.start()
    b = member(cluster, "g-cp-listen")
    try:
        all4 = {TopicPartition("cp-listen", p) for p in range(4)}
        assert rec_a.calls == [("assigned", all4)]
        b.subscribe(["cp-listen"], listener=rec_b)
        await b.start()
        await wait_shared(a, b, 2)
        kept = set(a.assignment())
        moved = all4 - kept
        # a gives up what moved (it keeps reading the rest), then hears of an empty addition.
        assert rec_a.calls == [("assigned", all4), ("revoked", moved), ("assigned", set())]
        # b never had to give anything back.
        assert ("assigned", moved) in rec_b.calls
        assert all(kind == "assigned" for kind, _ in rec_b.calls)
    finally:
        await b.stop()
        await a.stop()


async def test_revoked_partitions_are_committed_before_they_move(cluster) -> None:
    cluster.create_topic("cp-commit", partitions=2, replication_factor=3)
    cluster.produce("cp-commit", 200, value_size=10, partition="spread")
    a = member(cluster, "g-cp-commit", auto_commit_interval_ms=600000)
    a.subscribe(["cp-commit"])
    await a.start()
    b = member(cluster, "g-cp-commit", auto_commit_interval_ms=600000)
    try:
        seen: list = []
        while len(seen) < 200:
            for records in (await a.getmany(timeout_ms=200)).values():
                seen.extend(records)
        b.subscribe(["cp-commit"])
        await b.start()
        await wait_until(lambda: len(b.assignment()) == 1, 15, "b takes a partition")
        (tp,) = b.assignment()
        # Committed by a on revocation (the interval is far away), with its member epoch.
        assert (await b.committed(tp)) == 100
        assert await b.getmany(timeout_ms=300) == {}
    finally:
        await b.stop()
        await a.stop()


class LostRecorder(Recorder):
    async def on_partitions_lost(self, lost):
        self.calls.append(("lost", set(lost)))


@pytest.mark.parametrize("error", [FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID])
async def test_a_fenced_member_loses_its_partitions_and_joins_again(cluster, error, caplog) -> None:
    topic = f"cp-fence-{error}"
    cluster.create_topic(topic, partitions=3, replication_factor=3)
    cluster.produce(topic, 300, value_size=10, partition="spread")
    rec = LostRecorder()
    c = member(cluster, f"g-{topic}")
    c.subscribe([topic], listener=rec)
    await c.start()
    try:
        all3 = {TopicPartition(topic, p) for p in range(3)}
        first_id = member_id(c)
        cluster.push_request_errors(CONSUMER_GROUP_HEARTBEAT, error)
        with caplog.at_level(logging.INFO, logger="rackafka.group"):
            await wait_until(lambda: any(k == "lost" for k, _ in rec.calls), 10, "lost")
            await wait_until(lambda: rec.calls[-1] == ("assigned", all3), 10, "assigned again")
        assert rec.calls == [("assigned", all3), ("lost", all3), ("assigned", all3)]
        assert member_id(c) == first_id  # the same member id, epoch 0
        assert "fenced" in caplog.text
        # Reading and committing work after the new join.
        got = 0
        while got < 300:
            got += sum(len(r) for r in (await c.getmany(timeout_ms=200)).values())
        await c.commit()
        assert await c.committed(TopicPartition(topic, 0)) == 100
    finally:
        await c.stop()


async def test_a_commit_with_a_stale_epoch_is_retried(cluster) -> None:
    cluster.create_topic("cp-stale", partitions=1, replication_factor=3)
    cluster.produce("cp-stale", 10, value_size=10)
    c = member(cluster, "g-cp-stale", enable_auto_commit=False)
    c.subscribe(["cp-stale"])
    await c.start()
    try:
        tp = TopicPartition("cp-stale", 0)
        await c.getmany(tp, timeout_ms=2000)
        stale = errors.StaleMemberEpochError.errno
        cluster.push_request_errors("OffsetCommit", stale, stale)
        await c.commit({tp: 7})
        assert await c.committed(tp) == 7
    finally:
        await c.stop()


async def test_brokers_without_the_protocol_are_a_clear_error(cluster) -> None:
    cluster.create_topic("cp-old", partitions=1, replication_factor=3)
    cluster.cap_api_version(CONSUMER_GROUP_HEARTBEAT, -1, -1)
    c = member(cluster, "g-cp-old")
    c.subscribe(["cp-old"])
    try:
        with pytest.raises(Exception, match="KIP-848") as info:
            await asyncio.wait_for(c.start(), 20)
        assert "group_protocol='classic'" in str(info.value)
    finally:
        await c.stop()
        cluster.restore_api_version(CONSUMER_GROUP_HEARTBEAT)


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"session_timeout_ms": 30000}, "session_timeout_ms"),
        ({"heartbeat_interval_ms": 1000}, "heartbeat_interval_ms"),
        ({"partition_assignment_strategy": ["range"]}, "partition_assignment_strategy"),
    ],
)
def test_classic_settings_are_refused_with_the_consumer_protocol(kw, name) -> None:
    with pytest.raises(KafkaConfigurationError, match=name):
        AIOKafkaConsumer(group_id="g", group_protocol="consumer", **kw)
    AIOKafkaConsumer(group_id="g", group_protocol="classic", **kw)  # fine with classic


def test_group_protocol_values() -> None:
    AIOKafkaConsumer(group_id="g", group_protocol="CONSUMER")  # any case, as Java
    AIOKafkaConsumer(group_id="g", group_protocol="consumer", group_remote_assignor="uniform")
    with pytest.raises(KafkaConfigurationError, match="group_protocol"):
        AIOKafkaConsumer(group_id="g", group_protocol="kip848")
    with pytest.raises(KafkaConfigurationError, match="group_remote_assignor"):
        AIOKafkaConsumer(group_id="g", group_remote_assignor="uniform")
    with pytest.raises(KafkaConfigurationError, match="group_remote_assignor"):
        AIOKafkaConsumer(group_id="g", group_protocol="consumer", group_remote_assignor="")


async def test_the_rack_goes_in_the_heartbeat_auto_included(
    embedded_cluster_factory, monkeypatch
) -> None:
    cluster = embedded_cluster_factory(
        brokers=3, racks=("az-a", "az-b", "az-c"), replica_selector="rack-aware"
    )
    cluster.set_consumer_group_timing(heartbeat_interval_ms=200)
    cluster.create_topic("cp-rack", partitions=3, replication_factor=3)
    cluster.produce("cp-rack", 300, value_size=10, partition="spread")
    monkeypatch.setenv("RACKAFKA_CLIENT_RACK", "az-b")
    a = member(cluster, "g-cp-rack", client_rack="az-c")
    b = member(cluster, "g-cp-rack", client_rack="auto")
    a.subscribe(["cp-rack"])
    b.subscribe(["cp-rack"])
    await a.start()
    await b.start()
    try:
        racks = cluster.front.stats.member_racks
        assert racks[member_id(a)] == "az-c"
        assert racks[member_id(b)] == "az-b"
        await wait_until(
            lambda: (
                len(a.assignment()) + len(b.assignment()) == 3 and a.assignment() and b.assignment()
            ),
            15,
            "a and b share",
        )
        got = 0
        while got < 300:
            for c in (a, b):
                got += sum(len(r) for r in (await c.getmany(timeout_ms=100)).values())
        # Whatever the coordinator assigned, each member read from its own rack (KIP-392).
        brokers = {bid: info.rack for bid, info in cluster.brokers.items()}
        assert cluster.front.stats.cross_rack_bytes(brokers) == 0
    finally:
        await b.stop()
        await a.stop()


async def test_a_static_member_keeps_its_partitions_across_a_restart(cluster) -> None:
    cluster.create_topic("cp-static", partitions=4, replication_factor=3)
    a = member(cluster, "g-cp-static", group_instance_id="host-a")
    a.subscribe(["cp-static"])
    await a.start()
    b = member(cluster, "g-cp-static")
    b.subscribe(["cp-static"])
    await b.start()
    try:
        await wait_shared(a, b, 2)
        a_parts, b_parts = set(a.assignment()), set(b.assignment())
        await a.stop()  # epoch -2: its place is kept
        await asyncio.sleep(1.0)  # five heartbeats of b
        await b.getmany(timeout_ms=10)
        assert set(b.assignment()) == b_parts, "b was given the static member's partitions"
        a = member(cluster, "g-cp-static", group_instance_id="host-a")
        a.subscribe(["cp-static"])
        await a.start()
        await wait_until(lambda: set(a.assignment()) == a_parts, 15, "a back with its partitions")
        assert set(b.assignment()) == b_parts
    finally:
        await b.stop()
        await a.stop()


async def test_a_dynamic_member_that_stops_hands_its_partitions_over(cluster) -> None:
    cluster.create_topic("cp-dyn", partitions=4, replication_factor=3)
    a = member(cluster, "g-cp-dyn")
    b = member(cluster, "g-cp-dyn")
    for c in (a, b):
        c.subscribe(["cp-dyn"])
        await c.start()
    try:
        await wait_shared(a, b, 2)
        await a.stop()  # epoch -1: the group rebalances at once, not after a session
        await wait_until(lambda: len(b.assignment()) == 4, 5, "b takes everything")
    finally:
        await b.stop()
        await a.stop()


async def test_unsubscribe_leaves_and_subscribe_joins_again(cluster) -> None:
    cluster.create_topic("cp-unsub", partitions=2, replication_factor=3)
    cluster.create_topic("cp-unsub-2", partitions=2, replication_factor=3)
    rec = Recorder()
    a = member(cluster, "g-cp-unsub")
    b = member(cluster, "g-cp-unsub")
    a.subscribe(["cp-unsub"], listener=rec)
    b.subscribe(["cp-unsub"])
    await a.start()
    await b.start()
    try:
        await wait_shared(a, b, 1)
        owned = set(a.assignment())
        a.unsubscribe()
        assert await a.getmany(timeout_ms=10) == {}
        # (revoked by the membership task, after the auto commit's round trip)
        await wait_until(lambda: ("revoked", owned) in rec.calls, 5, "a's partition revoked")
        assert a.assignment() == set()
        await wait_until(lambda: len(b.assignment()) == 2, 5, "b takes a's partition")
        # A new subscription: the same member id joins again.
        a.subscribe(["cp-unsub", "cp-unsub-2"])
        await wait_until(
            lambda: (
                {tp.topic for tp in a.assignment()} == {"cp-unsub", "cp-unsub-2"}
                or {tp.topic for tp in a.assignment()} == {"cp-unsub-2"}
            ),
            15,
            "a subscribed again",
        )
        await wait_until(
            lambda: len(a.assignment()) + len(b.assignment()) == 4, 15, "all four owned"
        )
        assert not set(a.assignment()) & set(b.assignment())
    finally:
        await b.stop()
        await a.stop()


async def test_a_subscription_change_is_sent_without_rejoining(cluster) -> None:
    cluster.create_topic("cp-change-1", partitions=2, replication_factor=3)
    cluster.create_topic("cp-change-2", partitions=2, replication_factor=3)
    rec = Recorder()
    a = member(cluster, "g-cp-change")
    a.subscribe(["cp-change-1"], listener=rec)
    await a.start()
    try:
        epoch_id = member_id(a)
        a.subscribe(["cp-change-1", "cp-change-2"], listener=rec)
        await wait_until(lambda: len(a.assignment()) == 4, 10, "both topics")
        added = {TopicPartition("cp-change-2", p) for p in range(2)}
        assert rec.calls[-1] == ("assigned", added)
        assert not any(kind == "revoked" for kind, _ in rec.calls)
        assert member_id(a) == epoch_id
    finally:
        await a.stop()


async def test_pattern_subscription_picks_up_a_new_topic(cluster) -> None:
    cluster.create_topic("cpp-one", partitions=2, replication_factor=3)
    a = member(cluster, "g-cp-pattern", metadata_max_age_ms=500)
    a.subscribe(pattern="^cpp-.*")
    await a.start()
    try:
        assert {tp.topic for tp in a.assignment()} == {"cpp-one"}
        cluster.create_topic("cpp-two", partitions=2, replication_factor=3)
        await wait_until(lambda: len(a.assignment()) == 4, 15, "the new topic assigned")
    finally:
        await a.stop()


async def test_a_member_that_stops_polling_leaves_and_comes_back(cluster) -> None:
    cluster.create_topic("cp-poll", partitions=2, replication_factor=3)
    rec = LostRecorder()
    a = member(cluster, "g-cp-poll", max_poll_interval_ms=1500)
    b = member(cluster, "g-cp-poll")
    a.subscribe(["cp-poll"], listener=rec)
    b.subscribe(["cp-poll"])
    await a.start()
    await b.start()
    stop = asyncio.Event()
    keep_b = asyncio.ensure_future(drain(b, [], stop))
    try:
        await wait_shared(a, b, 1)
        owned = set(a.assignment())
        # a does not poll: after max_poll_interval_ms it leaves, b takes over.
        await wait_until(lambda: len(b.assignment()) == 2, 10, "b takes a's partition")
        assert ("lost", owned) in rec.calls
        await a.getmany(timeout_ms=10)  # polling again joins again
        await wait_until(
            lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, 15, "shared again"
        )
    finally:
        stop.set()
        await keep_b
        await b.stop()
        await a.stop()


async def test_a_pattern_that_stops_matching_gives_everything_back(cluster) -> None:
    cluster.create_topic("cpe-one", partitions=2, replication_factor=3)
    rec = Recorder()
    a = member(cluster, "g-cp-empty")
    b = member(cluster, "g-cp-empty")
    a.subscribe(pattern="^cpe-.*", listener=rec)
    b.subscribe(["cpe-one"])
    await a.start()
    await b.start()
    try:
        await wait_shared(a, b, 1)
        owned = set(a.assignment())
        a.subscribe(pattern="^nothing-matches-.*", listener=rec)
        await wait_until(lambda: len(b.assignment()) == 2, 15, "b takes everything")
        await a.getmany(timeout_ms=10)
        assert a.assignment() == set()
        assert ("revoked", owned) in rec.calls
    finally:
        await b.stop()
        await a.stop()


async def test_the_member_follows_a_coordinator_that_moves(cluster) -> None:
    cluster.create_topic("cp-move", partitions=2, replication_factor=3)
    cluster.produce("cp-move", 100, value_size=10, partition="spread")
    rec = LostRecorder()
    a = member(cluster, "g-cp-move", enable_auto_commit=False)
    a.subscribe(["cp-move"], listener=rec)
    await a.start()
    try:
        before = a._coordinator.coordinator_id
        other = next(b for b in cluster.brokers if b != before)
        cluster.set_coordinator("group", "g-cp-move", other)
        await wait_until(lambda: a._coordinator.coordinator_id == other, 10, "the new coordinator")
        got = 0
        while got < 100:
            got += sum(len(r) for r in (await a.getmany(timeout_ms=200)).values())
        await a.commit()
        assert await a.committed(TopicPartition("cp-move", 1)) == 50
        assert len(a.assignment()) == 2
        assert [kind for kind, _ in rec.calls] == ["assigned"]  # nothing lost or revoked
    finally:
        await a.stop()


async def test_a_subscription_pattern_is_matched_by_the_coordinator(cluster) -> None:
    cluster.create_topic("cpr-a", partitions=2, replication_factor=3)
    cluster.create_topic("cpr-b", partitions=1, replication_factor=3)
    cluster.create_topic("other-cpr", partitions=2, replication_factor=3)
    cluster.produce("cpr-b", 10, value_size=10)
    a = member(cluster, "g-cp-regex")
    a.subscribe(pattern=SubscriptionPattern("^cpr-.*"))
    await a.start()
    try:
        assert {tp.topic for tp in a.assignment()} == {"cpr-a", "cpr-b"}
        assert len(a.assignment()) == 3
        assert a.subscription() == {"cpr-a", "cpr-b"}
        got = 0
        while got < 10:
            got += sum(len(r) for r in (await a.getmany(timeout_ms=200)).values())
        # A topic created later matches too: the coordinator assigns it.
        cluster.create_topic("cpr-c", partitions=2, replication_factor=3)
        await wait_until(lambda: len(a.assignment()) == 5, 15, "cpr-c assigned")
        assert a.subscription() == {"cpr-a", "cpr-b", "cpr-c"}
    finally:
        await a.stop()


def test_a_subscription_pattern_needs_the_consumer_protocol() -> None:
    with pytest.raises(IllegalStateError, match="group_protocol='consumer'"):
        AIOKafkaConsumer(group_id="g").subscribe(pattern=SubscriptionPattern("x.*"))
    with pytest.raises(IllegalStateError, match="group_id"):
        AIOKafkaConsumer().subscribe(pattern=SubscriptionPattern("x.*"))
    with pytest.raises(ValueError, match="non-empty"):
        SubscriptionPattern("")
