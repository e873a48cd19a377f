"""A broker really stopped and restarted under a reading consumer (exactly once, no reset),
and a broker frozen (SIGSTOP) and thawed.

The consumer sits in rack az-c and reads from broker 3 there (Kafka's selector names it).
Broker 3's JVM is then stopped: the controller moves its leaderships, the consumer must go
back to the leaders and lose nothing; when broker 3 is back in the in-sync replicas, the
leaders name it again and the consumer returns to its own rack.
"""

from __future__ import annotations

import time
import uuid

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.testing import KafkaCluster, KafkaClusterError, default_value

PARTITIONS = 3
ROUND = 300  # records per production round
VALUE_SIZE = 100


def seq(value: bytes) -> int:
    return int(value.split(b"|", 1)[0])


async def drain(
    consumer: AIOKafkaConsumer, seen: dict[tuple[int, int], int], until: int, timeout: float = 120
) -> int:
    """Read until ``until`` distinct records were seen; returns the deliveries."""
    deliveries = 0
    deadline = time.monotonic() + timeout
    while len(seen) < until and time.monotonic() < deadline:
        batch = await consumer.getmany(timeout_ms=500)
        for tp, records in batch.items():
            for r in records:
                deliveries += 1
                assert (tp.partition, r.offset) not in seen, f"duplicate {tp} @{r.offset}"
                seen[(tp.partition, r.offset)] = seq(r.value)
                assert r.value == default_value(seq(r.value), VALUE_SIZE)
    assert len(seen) == until, f"read {len(seen)} of {until} records"
    return deliveries


async def test_follower_in_own_rack_stopped_and_restarted_mid_read(
    all_brokers_up: KafkaCluster,
) -> None:
    kafka = all_brokers_up
    topic = f"restart-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, PARTITIONS, 3)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=kafka.bootstrap_servers,
        client_rack="az-c",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        metadata_max_age_ms=2000,
        request_timeout_ms=15000,
    )
    await consumer.start()
    seen: dict[tuple[int, int], int] = {}
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])

        async def produce_round(n: int) -> None:
            await kafka.aproduce(
                topic,
                ROUND,
                value=lambda i: default_value(n * ROUND + i, VALUE_SIZE),
                partition="spread",
                # Exactly once in the log: a batch appended by a leader that is losing its
                # leadership is answered NOT_LEADER and retried; only an idempotent producer
                # has the broker drop the second copy (seen on Kafka 3.7.2).
                idempotent=True,
            )

        await produce_round(0)
        await drain(consumer, seen, ROUND)
        before = consumer.fetch_stats()
        assert before.cross_rack_bytes == 0, before.to_dict()

        kafka.broker_down(3)
        assert all(p.leader != 3 for p in kafka.partitions(topic))
        await produce_round(1)
        await drain(consumer, seen, 2 * ROUND)
        during = consumer.fetch_stats()
        assert during.cross_rack_bytes > 0, "with az-c down the data must come from elsewhere"

        kafka.broker_up(3)
        assert [p.leader for p in kafka.partitions(topic)] == [1, 2, 3]
        await produce_round(2)
        await drain(consumer, seen, 3 * ROUND)
        # back in its own rack: the newest round is read from broker 3 again
        crossed = consumer.fetch_stats().cross_rack_bytes
        await produce_round(3)
        await drain(consumer, seen, 4 * ROUND)
        after = consumer.fetch_stats()
        assert after.cross_rack_bytes == crossed, after.to_dict()
        # The route is the one of the moment: when the preferred replica's lease ends
        # (metadata_max_age_ms) one fetch goes to the leader, which names broker 3 again.
        # So it is looked at until every partition is seen on broker 3 at once.
        deadline = time.monotonic() + 30
        while True:
            routes = consumer.fetch_stats().partitions
            read_from = [routes[TopicPartition(topic, p)].read_from for p in range(PARTITIONS)]
            if read_from == [3] * PARTITIONS or time.monotonic() > deadline:
                break
            assert not await consumer.getmany(timeout_ms=200)  # nothing new was produced
        assert read_from == [3] * PARTITIONS, consumer.fetch_stats().to_dict()
        assert consumer.fetch_stats().cross_rack_bytes == crossed
    finally:
        await consumer.stop()
    # exactly once, nothing skipped, no offset reset: offsets 0..N-1 of each partition
    assert sorted(seen.values()) == list(range(4 * ROUND))
    for p in range(PARTITIONS):
        offsets = sorted(o for (q, o) in seen if q == p)
        assert offsets == list(range(len(offsets)))


def process_state(pid: int) -> str:
    """The state letter of ``/proc/PID/stat`` (``T``: stopped by a signal)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1][0]


def wait_state(pid: int, stopped: bool, timeout: float = 10.0) -> None:
    """Wait until the process is stopped (state ``T``) or, ``stopped=False``, not."""
    deadline = time.monotonic() + timeout
    while (process_state(pid) == "T") != stopped:
        assert time.monotonic() < deadline, f"pid {pid}: state {process_state(pid)}"
        time.sleep(0.05)


def shrunk(kafka: KafkaCluster, topic: str, broker_id: int) -> bool:
    """Whether ``broker_id`` is out of the in-sync replicas of every partition of
    ``topic``. The harness's admin client may have asked the frozen broker itself, which
    never answers: then it is made again and False is returned (ask again)."""
    try:
        return all(broker_id not in isr for isr in kafka.in_sync_replicas(topic).values())
    except Exception:
        kafka._clients().reset_admin()
        return False


async def test_a_frozen_broker_is_fenced_and_comes_back_when_thawed(
    all_brokers_up: KafkaCluster,
) -> None:
    """freeze_broker: SIGSTOP, the JVM stops (state T), the controller fences it and the
    leaders shrink it out of the in-sync replicas while acks=all writes go on with the two
    others; thaw_broker: SIGCONT, and it returns once the broker is back in sync and
    leading its partitions. A frozen broker can also be stopped (broker_down)."""
    kafka = all_brokers_up
    topic = f"freeze-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, PARTITIONS, 3)
    pid = kafka.broker_pid(2)
    assert pid is not None
    with kafka.frozen_broker(2):
        assert kafka.frozen_brokers == frozenset({2})
        wait_state(pid, stopped=True)
        kafka.freeze_broker(2)  # again: nothing happens
        deadline = time.monotonic() + 60
        while not shrunk(kafka, topic, 2):
            assert time.monotonic() < deadline, "broker 2 stayed in the in-sync replicas"
            time.sleep(0.2)
        result = await kafka.aproduce(topic, ROUND, partition="spread", idempotent=True)
        assert result.count == ROUND
        assert all(p.leader != 2 for p in kafka.partitions(topic))
    assert kafka.frozen_brokers == frozenset()
    wait_state(pid, stopped=False)
    assert all(2 in isr for isr in kafka.in_sync_replicas(topic).values())
    assert [p.leader for p in kafka.partitions(topic)] == [1, 2, 3]

    kafka.freeze_broker(2)
    kafka.broker_down(2)  # a frozen JVM still acts on SIGTERM: it is resumed for it
    assert kafka.broker_pid(2) is None and kafka.frozen_brokers == frozenset()
    with pytest.raises(KafkaClusterError, match="not running"):
        kafka.freeze_broker(2)
    kafka.broker_up(2)
    kafka.thaw_broker(2)  # not frozen: nothing happens
