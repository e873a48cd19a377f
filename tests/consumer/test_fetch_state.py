"""The fetcher's state objects: a partition's state lives and dies with its assignment."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from rackafka._backoff import BackoffPolicy
from rackafka.client import KafkaClient
from rackafka.cluster import PartitionInfo
from rackafka.consumer.fetch_state import Buffered, FetchState
from rackafka.consumer.fetcher import Fetcher
from rackafka.consumer.routing import ReadReplicaPolicy
from rackafka.errors import ReplicaNotAvailableError
from rackafka.protocol.apis.fetch import FETCH
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


class _RecordingConn:
    """A connection that keeps the Fetch requests sent (never answered)."""

    request_timeout = 30.0

    def __init__(self, version: int) -> None:
        self._version = version
        self.sent: list[tuple[Any, int]] = []

    def version(self, api: Any) -> int:
        return self._version

    def send(self, api: Any, request: Any, *, version: int) -> asyncio.Future[Any]:
        self.sent.append((request, version))
        return asyncio.get_running_loop().create_future()


async def test_a_session_restarted_for_a_topic_without_id_lists_every_partition() -> None:
    # The session holds a-0, a-1 and b-0; b is revoked and its topic id is gone: the
    # forgotten topic cannot be named, so the request becomes a new full fetch by name,
    # which must list every partition wanted (a-1 too, unchanged since the last request).
    a0, a1, b0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
    client = KafkaClient("127.0.0.1:9")
    fetcher = Fetcher(client, SubscriptionState("earliest"))
    cluster = client.cluster
    for tp in (a0, a1, b0):
        cluster.partitions.setdefault(tp.topic, {})[tp.partition] = PartitionInfo(
            tp.topic, tp.partition, 1, 0, (1,), (1,)
        )
    cluster.topic_ids.update(a=uuid.uuid4(), b=uuid.uuid4())
    loop, fs = fetcher._loop, fetcher._fs
    conn = _RecordingConn(13)
    try:
        fs.subs.assign([a0, a1, b0])
        for part in fs.sync().values():
            part.state.set_position(0)
        broker = fs.broker(1)
        loop._send_fetch(broker, conn, list(fs.parts.values()))
        broker.session.handle_response(0, session_id=9)
        assert broker.session.established
        for part in fs.parts.values():
            part.fetching = False
        del cluster.topic_ids["b"]
        fs.subs.assign([a0, a1])
        fs.sync()[a0].state.set_position(5)
        loop._send_fetch(broker, conn, list(fs.parts.values()))
        request, version = conn.sent[-1]
        assert version == 12
        # As the broker reads it.
        request = FETCH.decode_request(version, FETCH.encode_request(version, request))
        assert (request.session_id, request.session_epoch) == (0, 0)
        assert request.forgotten_topics_data == []
        listed = {
            (t.topic, p.partition, p.fetch_offset) for t in request.topics for p in t.partitions
        }
        assert listed == {("a", 0, 5), ("a", 1, 0)}
    finally:
        await fetcher.close()
        await client.close()
