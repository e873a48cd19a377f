"""Rack-aware fetching (KIP-392) end to end, against the embedded cluster's fault injection.

Every test here runs a real consumer against librdkafka's mock brokers (3 brokers in racks
az-a, az-b and az-c: broker 1 in az-a, 2 in az-b, 3 in az-c) and checks exact outcomes: every
record exactly once, in order per partition, and where the bytes came from.

Records carry a global sequence number (``default_value(seq, 100)``) and are spread so that
record ``seq`` lands in partition ``seq % partitions``: a test can tell a lost, duplicated or
reordered record from its value alone.

The mock leader names its configured follower as preferred read replica in every Fetch v11+
answer, without checking that the follower is alive or caught up (a real leader only names
an in-sync replica whose log end is at least the fetch offset). Where a test needs the real
leader's judgement, it emulates it by changing the hint, and says so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.errors import OffsetOutOfRangeError
from rackafka.testing import EmbeddedCluster, default_value

pytestmark = pytest.mark.fault_injection

RACK_OF = {1: "az-a", 2: "az-b", 3: "az-c"}
VALUE_SIZE = 100
BATCH_SIZE = 16 * 1024  # ~130 records per batch: several batches per partition
PARTITIONS = 6


# -- helpers -----------------------------------------------------------------------------------


async def produce(
    cluster: EmbeddedCluster, topic: str, count: int, base: int, partitions: int = PARTITIONS
) -> None:
    """Write records ``base .. base + count - 1``, record ``seq`` to partition ``seq % partitions``.

    Every call spreads whole rounds over the partitions, so ``seq == offset * partitions + p``.
    """
    assert base % partitions == 0 and count % partitions == 0
    await cluster.aproduce(
        topic,
        count,
        value=lambda i: default_value(base + i, VALUE_SIZE),
        partition="spread",
        batch_size=BATCH_SIZE,
        linger_ms=5,
    )


def seq_of(value: bytes) -> int:
    return int(value.split(b"|", 1)[0])


class Ledger:
    """Everything a consumer delivered, to check exactly-once and order."""

    def __init__(self, partitions: int = PARTITIONS) -> None:
        self.partitions = partitions
        self.deliveries = 0
        self.seen: set[tuple[int, int]] = set()
        self.by_partition: dict[int, list[tuple[int, int]]] = defaultdict(list)  # (offset, seq)

    @property
    def unique(self) -> int:
        return len(self.seen)

    @property
    def duplicates(self) -> int:
        return self.deliveries - len(self.seen)

    def add(self, records: dict[TopicPartition, list[Any]]) -> None:
        for tp, recs in records.items():
            for r in recs:
                self.deliveries += 1
                self.seen.add((tp.partition, r.offset))
                self.by_partition[tp.partition].append((r.offset, seq_of(r.value)))
                assert len(r.value) == VALUE_SIZE
                assert r.value == default_value(seq_of(r.value), VALUE_SIZE)

    def check(self, total: int, first_offset: int = 0) -> None:
        """Exactly the records from offset ``first_offset`` of each partition up to record
        ``total - 1``, each once, in offset order, without a gap."""
        assert self.duplicates == 0, f"{self.duplicates} duplicate deliveries"
        wanted = range(first_offset * self.partitions, total)
        seqs = sorted(s for recs in self.by_partition.values() for _o, s in recs)
        assert seqs == list(wanted), self._describe_gaps(wanted, seqs)
        for p, recs in self.by_partition.items():
            offsets = [o for o, _s in recs]
            assert offsets == list(range(first_offset, first_offset + len(offsets))), (
                f"partition {p}: offsets out of order or with a gap"
            )
            # Every produce call spreads whole rounds over the partitions, in order.
            assert all(s == o * self.partitions + p for o, s in recs)

    def _describe_gaps(self, wanted: range, seqs: list[int]) -> str:
        missing = sorted(set(wanted) - set(seqs))
        extra = sorted(set(seqs) - set(wanted))
        return f"{len(missing)} missing (first {missing[:10]}), unexpected {extra[:10]}"


async def consume_until(
    consumer: AIOKafkaConsumer[Any, Any], ledger: Ledger, total: int, timeout: float = 15.0
) -> float:
    """Consume until ``ledger`` holds ``total`` unique records; returns the seconds it took.

    A consumer that gets stuck fails the test after ``timeout`` seconds, showing what it had.
    """
    start = time.monotonic()

    async def run() -> None:
        while ledger.unique < total:
            ledger.add(await consumer.getmany(timeout_ms=100))

    try:
        await asyncio.wait_for(run(), timeout)
    except asyncio.TimeoutError:
        pytest.fail(
            f"consumer stuck: {ledger.unique}/{total} records after {timeout} s; "
            f"stats {consumer.fetch_stats().to_dict()}"
        )
    return time.monotonic() - start


async def settle(consumer: AIOKafkaConsumer[Any, Any], ledger: Ledger, seconds: float) -> None:
    """Keep polling for a while (nothing more is expected: extra records are duplicates)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ledger.add(await consumer.getmany(timeout_ms=50))


async def wait_for_routes(
    consumer: AIOKafkaConsumer[Any, Any],
    ledger: Ledger,
    wanted: dict[TopicPartition, int],
    timeout: float,
) -> float:
    """Poll until every partition in ``wanted`` is read from the given node; returns seconds."""
    start = time.monotonic()
    while True:
        routes = consumer.fetch_stats().partitions
        if all(routes[tp].read_from == node for tp, node in wanted.items()):
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            got = {tp.partition: routes[tp].read_from for tp in wanted}
            pytest.fail(f"routes not reached within {timeout} s: {got}")
        ledger.add(await consumer.getmany(timeout_ms=50))


def tps(topic: str, partitions: Iterable[int] = range(PARTITIONS)) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in partitions]


def node_records(consumer: AIOKafkaConsumer[Any, Any]) -> dict[int, int]:
    """Records handed out per node (nodes that served none left out)."""
    return {n: c.records for n, c in consumer.fetch_stats().nodes.items() if c.records}


def node_bytes(consumer: AIOKafkaConsumer[Any, Any]) -> dict[int, int]:
    return {n: c.bytes for n, c in consumer.fetch_stats().nodes.items()}


def delta(after: dict[int, int], before: dict[int, int]) -> dict[int, int]:
    return {n: after.get(n, 0) - before.get(n, 0) for n in (1, 2, 3)}


class CpuMeter:
    """CPU time this process used over a stretch of wall time (catches a silent busy loop)."""

    def __init__(self) -> None:
        self.cpu = time.process_time()
        self.wall = time.monotonic()

    def share(self) -> float:
        return (time.process_time() - self.cpu) / (time.monotonic() - self.wall)


def fetch_rate(cluster: EmbeddedCluster, since: float, until: float) -> float:
    n = sum(1 for r in cluster.requests("Fetch") if since <= r.timestamp <= until)
    return n / (until - since)


def make_consumer(cluster: EmbeddedCluster, **kwargs: Any) -> AIOKafkaConsumer[Any, Any]:
    kwargs.setdefault("auto_offset_reset", "earliest")
    return AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, **kwargs)


def setup_topic(cluster: EmbeddedCluster, topic: str, **kwargs: Any) -> None:
    infos = cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3, **kwargs)
    assert all(len(i.replicas) == 3 for i in infos)
    assert cluster.rack_of(1) == "az-a" and cluster.rack_of(2) == "az-b"


# -- 1. same-rack reads after the first redirect -------------------------------------------------


async def test_reads_stay_in_client_rack_after_first_redirect(
    embedded_cluster: EmbeddedCluster,
) -> None:
    cluster, topic, total = embedded_cluster, "same-rack", 6000
    setup_topic(cluster, topic)
    leaders = {i.partition: i.leader for i in cluster.partitions(topic)}
    assert sorted(leaders.values()) == [1, 1, 2, 2, 3, 3]
    await produce(cluster, topic, total, 0)
    hints = cluster.emulate_rack_aware_selector("az-b")
    # The az-b replica is the follower to read from, except where az-b leads.
    assert {p: h for (_t, p), h in hints.items()} == {
        p: (-1 if leaders[p] == 2 else 2) for p in range(PARTITIONS)
    }
    cluster.start_request_tracking()

    consumer = make_consumer(cluster, client_rack="az-b")
    await consumer.start()
    try:
        consumer.assign(tps(topic))
        ledger = Ledger()
        await consume_until(consumer, ledger, total)
        await settle(consumer, ledger, 0.3)
        ledger.check(total)

        stats = consumer.fetch_stats()
        assert stats.client_rack == "az-b"
        assert stats.cross_rack_bytes == 0
        assert stats.same_rack_bytes == stats.total_bytes > total * VALUE_SIZE
        assert {n: c.records for n, c in stats.nodes.items() if c.records} == {2: total}
        for tp, route in stats.partitions.items():
            assert route.read_from == 2 and route.read_from_rack == "az-b", (tp, route)
            assert route.leader == leaders[tp.partition]
            assert route.preferred_read_replica == (None if leaders[tp.partition] == 2 else 2)

        # Brokers 1 and 3 each lead two partitions: at most one redirecting fetch for each of
        # them (one when both are redirected in the same request), and nothing after.
        fetches = cluster.request_counts("Fetch")
        for node in (1, 3):
            assert 1 <= fetches[node] <= 2, fetches
        assert fetches[2] >= 2
        assert stats.routing_changes == 4  # leader -> broker 2, once per followed partition

        # Broker 2 serves the partitions of leaders 1 and 3 in a fetch lane each, on
        # connections of their own, beside its own fetch: as many fetches in flight as
        # reading from the leaders.
        assert consumer._fetcher is not None
        fs = consumer._fetcher._fs
        assert sorted(fs.lanes) == [(2, 1), (2, 3)]
        for (_node, leader), lane in fs.lanes.items():
            assert lane.channel == f"fetch-{leader}" and lane.counters is fs.brokers[2].counters
            assert lane.version == fs.brokers[2].version >= 11
    finally:
        await consumer.stop()


async def test_lease_expiry_asks_the_leader_once_per_lease(
    embedded_cluster: EmbeddedCluster,
) -> None:
    """The lease (metadata_max_age_ms) starts when the replica is named, not on every answer."""
    cluster, topic, total = embedded_cluster, "lease", 3000
    setup_topic(cluster, topic)
    await produce(cluster, topic, total, 0)
    cluster.emulate_rack_aware_selector("az-b")

    consumer = make_consumer(cluster, client_rack="az-b", metadata_max_age_ms=1000)
    await consumer.start()
    try:
        consumer.assign(tps(topic))
        ledger = Ledger()
        await consume_until(consumer, ledger, total)
        cluster.start_request_tracking()
        start = time.monotonic()
        await produce(cluster, topic, total, total)
        await consume_until(consumer, ledger, 2 * total)
        await settle(consumer, ledger, 3.0 - (time.monotonic() - start))
        ledger.check(2 * total)
        # ~3 s of 1 s leases: each leader (1 and 3) is asked again about once a second, and
        # only to be redirected again (redirects carry no records).
        fetches = cluster.request_counts("Fetch")
        for node in (1, 3):
            assert 2 <= fetches[node] <= 5, fetches
        assert node_records(consumer) == {2: 2 * total}
    finally:
        await consumer.stop()


# -- 2. no client_rack, no hints: read from the leaders ------------------------------------------


async def test_without_client_rack_reads_leaders_evenly(embedded_cluster: EmbeddedCluster) -> None:
    cluster, topic, total = embedded_cluster, "no-rack", 6000
    setup_topic(cluster, topic)
    leaders = {i.partition: i.leader for i in cluster.partitions(topic)}
    await produce(cluster, topic, total, 0)

    consumer = make_consumer(cluster)
    await consumer.start()
    try:
        consumer.assign(tps(topic))
        ledger = Ledger()
        await consume_until(consumer, ledger, total)
        await settle(consumer, ledger, 0.2)
        ledger.check(total)

        stats = consumer.fetch_stats()
        assert stats.client_rack is None
        assert stats.same_rack_bytes == 0
        assert stats.cross_rack_bytes == stats.total_bytes > total * VALUE_SIZE
        # Each broker leads 2 of the 6 equally filled partitions.
        assert {n: c.records for n, c in stats.nodes.items()} == {1: 2000, 2: 2000, 3: 2000}
        for rack in ("az-a", "az-b", "az-c"):
            share = stats.racks[rack].bytes / stats.total_bytes
            assert 0.31 < share < 0.36, (rack, share)
        for tp, route in stats.partitions.items():
            assert route.read_from == route.leader == leaders[tp.partition]
            assert route.preferred_read_replica is None
            assert route.read_from_rack == RACK_OF[leaders[tp.partition]]
    finally:
        await consumer.stop()


# -- 3. a hint is followed without client_rack ---------------------------------------------------


async def test_hint_followed_without_client_rack(embedded_cluster: EmbeddedCluster) -> None:
    cluster, topic, total = embedded_cluster, "hinted", 6000
    setup_topic(cluster, topic)
    leaders = {i.partition: i.leader for i in cluster.partitions(topic)}
    await produce(cluster, topic, total, 0)
    # A custom selector naming the "next" broker: every broker serves two partitions it follows.
    follower = {p: leaders[p] % 3 + 1 for p in range(PARTITIONS)}
    for p, f in follower.items():
        cluster.set_preferred_read_replica(topic, p, f)

    consumer = make_consumer(cluster)
    await consumer.start()
    try:
        consumer.assign(tps(topic))
        ledger = Ledger()
        await consume_until(consumer, ledger, total)
        await settle(consumer, ledger, 0.3)
        ledger.check(total)

        stats = consumer.fetch_stats()
        # Redirects carry no records: every record came from the hinted follower.
        expected: dict[int, int] = defaultdict(int)
        for f in follower.values():
            expected[f] += total // PARTITIONS
        assert {n: c.records for n, c in stats.nodes.items() if c.records} == dict(expected)
        for tp, route in stats.partitions.items():
            assert route.read_from == route.preferred_read_replica == follower[tp.partition]
            assert route.leader == leaders[tp.partition]
        # One routing change per partition (leader -> hinted follower), no flapping.
        assert stats.routing_changes == PARTITIONS
    finally:
        await consumer.stop()


# -- 4. a lagging follower: OFFSET_OUT_OF_RANGE from a follower is never a reset ----------------


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
async def test_lagging_follower_is_not_a_reset(
    embedded_cluster: EmbeddedCluster, reset: str, caplog: pytest.LogCaptureFixture
) -> None:
    cluster, topic, per_phase = embedded_cluster, "lagging", 3000
    per_partition = per_phase // PARTITIONS
    setup_topic(cluster, topic)
    leaders = {i.partition: i.leader for i in cluster.partitions(topic)}
    lagging = [p for p in range(PARTITIONS) if leaders[p] != 2]  # followed by broker 2
    assert lagging == [0, 2, 3, 5]
    await produce(cluster, topic, per_phase, 0)
    cluster.emulate_rack_aware_selector("az-b")
    caplog.set_level(logging.DEBUG, logger="rackafka.consumer.fetcher")

    consumer = make_consumer(cluster, client_rack="az-b", auto_offset_reset=reset)
    await consumer.start()
    try:
        consumer.assign(tps(topic))
        for tp in tps(topic):
            consumer.seek(tp, 0)  # "latest"/"none" would not start at 0 by themselves
        ledger = Ledger()

        # Phase 1: caught up, every partition read in az-b.
        await consume_until(consumer, ledger, per_phase)
        await wait_for_routes(consumer, ledger, {tp: 2 for tp in tps(topic)}, 5.0)
        assert node_records(consumer) == {2: per_phase}

        # Phase 2a: broker 2's copy of the lagging partitions falls behind the consumer's
        # position (per_partition) while more records arrive. The mock leaders keep naming
        # broker 2, so the consumer gets OFFSET_OUT_OF_RANGE from it again and again: never a
        # reset, never an error (even with "none"), no duplicate, and no hot loop.
        for p in lagging:
            cluster.set_follower_watermarks(topic, p, -1, per_partition // 2)
        cluster.start_request_tracking()
        lag_at = time.monotonic()
        await produce(cluster, topic, per_phase, per_phase)
        # Broker 2 leads partitions 1 and 4: those go on.
        await consume_until(consumer, ledger, per_phase + per_partition * 2)
        cpu = CpuMeter()
        await settle(consumer, ledger, 1.5)
        rate = fetch_rate(cluster, lag_at, time.monotonic())
        assert rate < 50, f"{rate:.0f} fetches/s against a lagging follower"
        assert cpu.share() < 0.5, f"{cpu.share():.0%} of a core against a lagging follower"
        assert ledger.duplicates == 0
        assert ledger.unique == per_phase + per_partition * 2
        for p in lagging:
            tp = TopicPartition(topic, p)
            assert await asyncio.wait_for(consumer.position(tp), 5.0) == per_partition
        refetches = [
            r.getMessage()
            for r in caplog.records
            if "OFFSET_OUT_OF_RANGE from read replica 2" in r.getMessage()
        ]
        for p in lagging:
            assert any(m.startswith(f"{topic}-{p}:") for m in refetches), (p, refetches)
        assert not any("resetting" in r.getMessage() for r in caplog.records)
        assert cluster.requests("ListOffsets") == []  # no reset was even looked up

        # Phase 2b: a real leader names only a replica whose log end is at least the fetch
        # offset; emulate it by clearing the hints (the mock leader does not check). The
        # lagging partitions are read on from their leaders, from the same positions.
        before = node_records(consumer)
        for p in lagging:
            cluster.set_preferred_read_replica(topic, p, None)
        await consume_until(consumer, ledger, 2 * per_phase)
        await settle(consumer, ledger, 0.3)
        ledger.check(2 * per_phase)
        moved = delta(node_records(consumer), before)
        assert moved == {
            1: per_partition * sum(leaders[p] == 1 for p in lagging),
            2: 0,
            3: per_partition * sum(leaders[p] == 3 for p in lagging),
        }
        for tp, route in consumer.fetch_stats().partitions.items():
            assert route.read_from == (leaders[tp.partition] if tp.partition in lagging else 2)

        # Phase 3: the follower catches up and the leaders name it again: back to az-b.
        for p in lagging:
            cluster.set_follower_watermarks(topic, p, -1, -1)
        cluster.emulate_rack_aware_selector("az-b")
        before, bytes_before = node_records(consumer), node_bytes(consumer)
        await produce(cluster, topic, per_phase, 2 * per_phase)
        await consume_until(consumer, ledger, 3 * per_phase)
        await wait_for_routes(consumer, ledger, {tp: 2 for tp in tps(topic)}, 5.0)
        await settle(consumer, ledger, 0.3)
        ledger.check(3 * per_phase)
        assert delta(node_records(consumer), before) == {1: 0, 2: per_phase, 3: 0}
        moved_bytes = delta(node_bytes(consumer), bytes_before)
        assert moved_bytes[1] == moved_bytes[3] == 0  # redirects carry no data
    finally:
        await consumer.stop()


# -- 4b. ... while OFFSET_OUT_OF_RANGE from the leader still applies auto_offset_reset ---------


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
async def test_out_of_range_on_leader_applies_reset(
    embedded_cluster: EmbeddedCluster, reset: str, caplog: pytest.LogCaptureFixture
) -> None:
    cluster, topic, total, log_start = embedded_cluster, "truncated", 3000, 200
    per_partition = total // PARTITIONS
    # Broker 2 (az-b) leads nothing, so where ListOffsets goes is visible (rule 7).
    setup_topic(cluster, topic, leaders=[1, 3, 1, 3, 1, 3])
    await produce(cluster, topic, total, 0)
    for p in range(PARTITIONS):
        cluster.delete_records(topic, p, log_start)
    cluster.emulate_rack_aware_selector("az-b")
    cluster.start_request_tracking()
    caplog.set_level(logging.INFO, logger="rackafka.consumer.fetcher")
    all_tps = tps(topic)

    consumer = make_consumer(cluster, client_rack="az-b", auto_offset_reset=reset)
    await consumer.start()
    try:
        consumer.assign(all_tps)
        for tp in all_tps:
            consumer.seek(tp, 0)  # deleted: out of range on the leader
        ledger = Ledger()
        if reset == "none":
            errors: dict[TopicPartition, int] = {}

            async def collect() -> None:
                while len(errors) < PARTITIONS:
                    try:
                        ledger.add(await consumer.getmany(timeout_ms=100))
                    except OffsetOutOfRangeError as err:
                        # As aiokafka: the argument maps the partition to the fetch offset.
                        errors.update(err.args[0])

            await asyncio.wait_for(collect(), 10.0)
            assert errors == {tp: 0 for tp in all_tps}
            assert ledger.deliveries == 0
            for tp in all_tps:
                consumer.seek(tp, log_start)
            await consume_until(consumer, ledger, total - log_start * PARTITIONS)
            first = log_start
        elif reset == "earliest":
            await consume_until(consumer, ledger, total - log_start * PARTITIONS)
            first = log_start
        else:
            # The reset to the end shows in the positions; nothing is delivered.
            deadline = time.monotonic() + 10.0
            while [await asyncio.wait_for(consumer.position(tp), 5.0) for tp in all_tps] != [
                per_partition
            ] * PARTITIONS:
                assert time.monotonic() < deadline, "no reset to the end"
                ledger.add(await consumer.getmany(timeout_ms=50))
            assert ledger.deliveries == 0
            await produce(cluster, topic, total, total)
            await consume_until(consumer, ledger, total)
            first, total = per_partition, 2 * total
        await settle(consumer, ledger, 0.3)
        ledger.check(total, first_offset=first)

        resets = [r.getMessage() for r in caplog.records if "resetting to" in r.getMessage()]
        if reset == "none":
            assert resets == []
        else:
            assert sorted(resets) == sorted(
                f"{topic}-{p}: offset 0 out of range on the leader, resetting to {reset}"
                for p in range(PARTITIONS)
            )
        # Offsets are looked up on the leaders only, and the data came from az-b.
        assert set(cluster.request_counts("ListOffsets")) == ({1, 3} if reset != "none" else set())
        assert node_records(consumer) == {2: ledger.deliveries}
        assert consumer.fetch_stats().cross_rack_bytes == 0
    finally:
        await consumer.stop()


# -- 5. a follower goes down and comes back ------------------------------------------------------


async def test_follower_down_and_back(embedded_cluster: EmbeddedCluster) -> None:
    cluster, topic, per_phase = embedded_cluster, "follower-down", 3000
    # Broker 2 (az-b) leads nothing: it is only the az-b follower of every partition.
    setup_topic(cluster, topic, leaders=[1, 3, 1, 3, 1, 3])
    await produce(cluster, topic, per_phase, 0)
    hints = cluster.emulate_rack_aware_selector("az-b")
    assert set(hints.values()) == {2}
    all_tps = tps(topic)

    consumer = make_consumer(cluster, client_rack="az-b")
    await consumer.start()
    try:
        consumer.assign(all_tps)
        ledger = Ledger()
        await consume_until(consumer, ledger, per_phase)
        await wait_for_routes(consumer, ledger, {tp: 2 for tp in all_tps}, 5.0)
        assert node_records(consumer) == {2: per_phase}

        # Broker 2 goes down. Until the test says otherwise, the mock leaders keep naming it
        # (a real leader does so until the ISR shrinks): the consumer must not spin.
        cluster.start_request_tracking()
        cluster.broker_down(2)
        down_at = time.monotonic()
        await produce(cluster, topic, per_phase, per_phase)
        cpu = CpuMeter()
        await settle(consumer, ledger, 2.0)
        rate = fetch_rate(cluster, down_at, time.monotonic())
        assert rate < 50, f"{rate:.0f} fetches/s while the leaders name a dead replica"
        assert cpu.share() < 0.5, f"{cpu.share():.0%} of a core while the follower is down"
        metadata_rate = sum(1 for r in cluster.requests("Metadata") if r.timestamp >= down_at) / (
            time.monotonic() - down_at
        )
        assert metadata_rate < 20, f"{metadata_rate:.0f} metadata requests/s"
        ledger.check(ledger.unique)  # nothing delivered twice meanwhile

        # The ISR shrinks: the leaders stop naming broker 2. Records flow from the leaders.
        before = node_records(consumer)
        cluster.emulate_rack_aware_selector("az-b")  # skips the down broker: no hint
        assert all(i.preferred_read_replica == -1 for i in cluster.partitions(topic))
        took = await consume_until(consumer, ledger, 2 * per_phase, timeout=10.0)
        assert took < 5.0, f"fallback to the leaders took {took:.1f} s"
        ledger.check(2 * per_phase)
        got = delta(node_records(consumer), before)
        assert got[2] == 0 and got[1] + got[3] == 2 * per_phase - sum(before.values())
        # A redirect to broker 2 sent before the ISR shrank can still arrive after it; the
        # route it sets lasts until the next attempt at broker 2 fails. Routes must settle on
        # the leaders quickly, without another record from broker 2.
        routes = consumer.fetch_stats().partitions.items()
        leaders = {tp: r.leader for tp, r in routes if r.leader is not None}
        assert set(leaders) == set(all_tps)
        await wait_for_routes(consumer, ledger, leaders, 5.0)
        assert delta(node_records(consumer), before)[2] == 0

        # Broker 2 comes back and rejoins the ISR: reads go back to it within seconds.
        cluster.broker_up(2)
        cluster.emulate_rack_aware_selector("az-b")
        up_at = time.monotonic()
        before = node_records(consumer)
        await produce(cluster, topic, per_phase, 2 * per_phase)
        await consume_until(consumer, ledger, 3 * per_phase, timeout=10.0)
        took = await wait_for_routes(consumer, ledger, {tp: 2 for tp in all_tps}, 5.0)
        assert time.monotonic() - up_at < 6.0
        await settle(consumer, ledger, 0.3)
        ledger.check(3 * per_phase)
        # Redirects carry no records: everything produced after the return came from broker 2.
        assert delta(node_records(consumer), before) == {1: 0, 2: per_phase, 3: 0}
    finally:
        await consumer.stop()


# -- 6. leader moves during consumption ----------------------------------------------------------


@pytest.mark.parametrize("client_rack", [None, "az-b"])
async def test_leader_move_during_consumption(
    embedded_cluster: EmbeddedCluster, client_rack: str | None
) -> None:
    cluster, topic, per_phase = embedded_cluster, "moving", 3000
    setup_topic(cluster, topic)
    if client_rack:
        cluster.emulate_rack_aware_selector(client_rack)
    await produce(cluster, topic, per_phase, 0)
    all_tps = tps(topic)

    consumer = make_consumer(cluster, client_rack=client_rack)
    await consumer.start()
    try:
        consumer.assign(all_tps)
        ledger = Ledger()
        # Stop half-way through the first batch of records.
        await consume_until(consumer, ledger, per_phase // 2)

        # Every partition moves to the next broker (epoch 1 -> 2), mid-consumption.
        new_leaders: dict[int, int] = {}
        for info in cluster.partitions(topic):
            target = info.leader % 3 + 1
            moved = cluster.move_leader(topic, info.partition, target)
            assert moved.leader == target and moved.leader_epoch == 2
            new_leaders[info.partition] = target
        await produce(cluster, topic, per_phase, per_phase)
        await consume_until(consumer, ledger, 2 * per_phase)

        # And once more while idle (epoch 3): consumption continues.
        for p in range(PARTITIONS):
            target = new_leaders[p] % 3 + 1
            assert cluster.move_leader(topic, p, target).leader_epoch == 3
            new_leaders[p] = target
        await produce(cluster, topic, per_phase, 2 * per_phase)
        await consume_until(consumer, ledger, 3 * per_phase)
        await settle(consumer, ledger, 0.3)
        ledger.check(3 * per_phase)

        stats = consumer.fetch_stats()
        for tp, route in stats.partitions.items():
            assert route.leader == new_leaders[tp.partition], (tp, route)
            if client_rack:
                assert route.read_from == 2
        if client_rack:
            assert stats.cross_rack_bytes == 0
    finally:
        await consumer.stop()


# -- 7. brokers too old for rack-aware fetching ---------------------------------------------------


async def test_fetch_below_v11_reads_leaders_with_one_warning(
    embedded_cluster: EmbeddedCluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster, topic, total = embedded_cluster, "old-brokers", 6000
    setup_topic(cluster, topic)
    leaders = {i.partition: i.leader for i in cluster.partitions(topic)}
    await produce(cluster, topic, total, 0)
    cluster.emulate_rack_aware_selector("az-b")  # v11+ fetches would be redirected
    cluster.cap_api_version("Fetch", 0, 10)
    assert cluster.api_versions()[1] == (0, 10)
    caplog.set_level(logging.WARNING, logger="rackafka")

    consumer = make_consumer(cluster, client_rack="az-b")
    await consumer.start()
    try:
        consumer.assign(tps(topic))
        ledger = Ledger()
        await consume_until(consumer, ledger, total)
        await settle(consumer, ledger, 1.2)  # idle fetches to every broker: no more warnings
        ledger.check(total)

        stats = consumer.fetch_stats()
        assert {n: c.records for n, c in stats.nodes.items()} == {1: 2000, 2: 2000, 3: 2000}
        for tp, route in stats.partitions.items():
            assert route.read_from == route.leader == leaders[tp.partition]
            assert route.preferred_read_replica is None
        assert stats.cross_rack_bytes > 0
        warnings = [
            r
            for r in caplog.records
            if r.levelno >= logging.WARNING and r.name.startswith("rackafka")
        ]
        # One line per old broker (all three are capped), each naming its broker once.
        assert len(warnings) == 3, [r.getMessage() for r in warnings]
        assert sorted(r.getMessage().split()[1] for r in warnings) == ["1", "2", "3"]
        assert all("v10" in r.getMessage() and "v11" in r.getMessage() for r in warnings)
        assert all("KIP-392" in r.getMessage() and "2.4" in r.getMessage() for r in warnings)
    finally:
        await consumer.stop()


# -- 8. an idle consumer respects MaxWait ---------------------------------------------------------


@pytest.mark.parametrize("client_rack", [None, "az-b"])
async def test_idle_fetch_rate_is_bounded(
    embedded_cluster: EmbeddedCluster, client_rack: str | None
) -> None:
    cluster, topic, total = embedded_cluster, "quiet", 600
    setup_topic(cluster, topic)
    if client_rack:
        cluster.emulate_rack_aware_selector(client_rack)
    await produce(cluster, topic, total, 0)

    consumer = make_consumer(cluster, client_rack=client_rack, fetch_max_wait_ms=500)
    await consumer.start()
    try:
        consumer.assign(tps(topic))
        ledger = Ledger()
        await consume_until(consumer, ledger, total)
        await settle(consumer, ledger, 0.6)  # let the redirects and catch-up fetches pass
        cluster.start_request_tracking()
        start = time.monotonic()
        cpu = CpuMeter()
        await settle(consumer, ledger, 2.0)
        end = time.monotonic()
        assert cpu.share() < 0.25, f"{cpu.share():.0%} of a core when idle"
        ledger.check(total)

        fetches = [r for r in cluster.requests("Fetch") if start <= r.timestamp <= end]
        # One fetch per stream per MaxWait (500 ms): 2/s per stream. A stream is a broker
        # read as leader or, for a read replica, one lane per leader it serves for: as many
        # streams (3) either way, all on the same-rack broker with client_rack.
        brokers_used = {r.broker_id for r in fetches}
        assert brokers_used == ({2} if client_rack else {1, 2, 3})
        streams = len({i.leader for i in cluster.partitions(topic)})
        assert streams == 3
        rate = len(fetches) / (end - start)
        assert rate <= 2.5 * streams, f"{rate:.1f} fetches/s when idle"
        assert rate >= 1.0 * streams, f"{rate:.1f} fetches/s: fetching stalled"
    finally:
        await consumer.stop()
