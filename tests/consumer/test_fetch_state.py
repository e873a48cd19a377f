"""The fetcher's state objects: a partition's state lives and dies with its assignment."""

from __future__ import annotations

import pytest

from rackafka._backoff import BackoffPolicy
from rackafka.client import KafkaClient
from rackafka.consumer.fetch_state import Buffered, FetchState
from rackafka.consumer.fetcher import Fetcher
from rackafka.consumer.routing import ReadReplicaPolicy
from rackafka.errors import ReplicaNotAvailableError
from rackafka.structs import TopicPartition
from rackafka.subscription import SubscriptionState

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
TP2 = TopicPartition("t", 2)


def make_state() -> FetchState:
    policy = ReadReplicaPolicy[TopicPartition](300.0, 0.1, 1.0)
    return FetchState(SubscriptionState("earliest"), policy, BackoffPolicy(100, 1000))


def buffer(fs: FetchState, tp: TopicPartition, size: int) -> Buffered:
    buf = Buffered(fs.parts[tp], fs.broker(1), b"\0" * size, None, True, 1 << 20)
    fs.buffer(buf)
    return buf


def test_partitions_are_made_on_assignment_in_its_order() -> None:
    fs = make_state()
    fs.subs.assign([TP2, TP0])
    parts = fs.sync()
    assert list(parts) == [TP2, TP0]
    assert parts[TP0].state is fs.subs.state(TP0)
    assert fs.sync() is parts  # nothing changed: the same objects


def test_revoked_partition_is_dropped_with_its_buffers_and_route() -> None:
    fs = make_state()
    fs.subs.assign([TP0, TP1])
    fs.sync()
    kept = buffer(fs, TP1, 30)
    buffer(fs, TP0, 10)
    buffer(fs, TP0, 20)
    assert fs.buffered_bytes == 60
    assert (fs.parts[TP0].buffers, fs.parts[TP0].bytes) == (2, 30)
    fs.policy.on_fetch_response(TP0, 1, 1, 2, 0.0)  # read replica 2 for TP0
    assert fs.policy.snapshot().keys() == {TP0}
    old = fs.parts[TP0]
    old.backoff.next()

    fs.subs.assign([TP1])
    fs.sync()
    assert list(fs.parts) == [TP1]
    assert list(fs.buffered) == [kept]
    assert fs.buffered_bytes == 30
    assert fs.policy.snapshot() == {}

    fs.subs.assign([TP1, TP0])
    again = fs.sync()[TP0]
    assert again is not old
    assert (again.buffers, again.bytes, again.backoff.attempts) == (0, 0, 0)
    assert again.route is not old.route


def test_pop_and_drop_keep_the_byte_counts() -> None:
    fs = make_state()
    fs.subs.assign([TP0, TP1])
    fs.sync()
    buffer(fs, TP0, 10)
    buffer(fs, TP1, 5)
    buffer(fs, TP0, 7)
    fs.pop_buffer()
    assert (fs.parts[TP0].buffers, fs.parts[TP0].bytes, fs.buffered_bytes) == (1, 7, 12)
    fs.drop_buffered(fs.parts[TP0])
    assert [b.tp for b in fs.buffered] == [TP1]
    assert (fs.parts[TP0].buffers, fs.parts[TP0].bytes, fs.buffered_bytes) == (0, 0, 5)


def test_broker_failure_waits_the_first_backoff_and_lookups_double() -> None:
    fs = make_state()
    broker = fs.broker(3)
    assert fs.broker(3) is broker
    broker.failed(100.0)
    assert broker.backing_off(100.0)
    assert 100.08 <= broker.backoff.until <= 100.12  # 100 ms, 20 % jitter
    assert not broker.backing_off(100.13)
    waits = [broker.backoff.next(0.0) for _ in range(6)]
    assert waits[0] == pytest.approx(0.1, rel=0.21)
    assert waits[2] == pytest.approx(0.4, rel=0.21)
    assert waits[-1] <= 1.0  # capped at retry_backoff_max_ms
    broker.backoff.reset()
    wait = broker.backoff.next(50.0)  # from the time given, not the clock
    assert wait == pytest.approx(0.1, rel=0.21)
    assert broker.backoff.until == 50.0 + wait


def test_a_partition_revoked_while_in_a_request_stays_marked_until_it_ends() -> None:
    fs = make_state()
    fs.subs.assign([TP0])
    fs.sync()
    broker = fs.broker(1)
    broker.lookup_tps = (TP0,)
    broker.lookup = object()  # type: ignore[assignment]  # any running lookup
    fs.subs.assign([])
    fs.sync()
    fs.subs.assign([TP0])
    assert fs.sync()[TP0].lookup


@pytest.mark.parametrize(
    ("backoff_ms", "max_ms", "first", "longest"),
    [(50, 400, 0.05, 0.4), (100, 1000, 0.1, 1.0), (500, 200, 0.5, 0.5)],
)
async def test_fetcher_backs_off_by_retry_backoff_ms_up_to_its_max(
    backoff_ms: int, max_ms: int, first: float, longest: float
) -> None:
    client = KafkaClient("127.0.0.1:9")
    fetcher = Fetcher(
        client,
        SubscriptionState("earliest"),
        retry_backoff_ms=backoff_ms,
        retry_backoff_max_ms=max_ms,
    )
    try:
        retry = fetcher._fs.retry
        assert (retry.initial, retry.maximum, retry.jitter) == (first, longest, 0.2)
        # The routing policy (rule 8) waits by the same numbers.
        outcomes = [
            fetcher.policy.on_partition_error(
                TP0, ReplicaNotAvailableError.errno, 1, 1, 0.0
            ).retry_at
            for _ in range(12)
        ]
        assert outcomes[0] == pytest.approx(first, rel=0.21)
        assert outcomes[-1] == pytest.approx(longest, rel=0.21)
        assert max(o for o in outcomes if o is not None) <= longest
    finally:
        await fetcher.close()
        await client.close()
