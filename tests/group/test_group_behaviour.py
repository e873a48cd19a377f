"""Consumer group behaviour against the embedded cluster: rebalance listeners, commits,
coordinator errors, pattern subscriptions, unsubscribe and ``max_poll_interval_ms``.

Each test runs against librdkafka's mock group coordinator (classic protocol); the faults
are injected with ``push_request_errors``.  Every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import struct
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition, errors
from rackafka.errors import CommitFailedError
from rackafka.protocol import frames
from rackafka.protocol.apis.join_group import JOIN_GROUP
from rackafka.protocol.apis.metadata import METADATA
from rackafka.protocol.apis.sync_group import SYNC_GROUP
from rackafka.testing import EmbeddedCluster
from tests.group.test_group_consumer import wait_until

pytestmark = pytest.mark.fault_injection

NOT_COORDINATOR = errors.NotCoordinatorForGroupError.errno
COORDINATOR_LOAD_IN_PROGRESS = errors.GroupLoadInProgressError.errno
REBALANCE_IN_PROGRESS = errors.RebalanceInProgressError.errno
UNKNOWN_MEMBER_ID = errors.UnknownMemberIdError.errno
ILLEGAL_GENERATION = errors.IllegalGenerationError.errno


# -- helpers ---------------------------------------------------------------------------


def group_consumer(
    cluster: EmbeddedCluster, group: str, *, bootstrap: str | None = None, **kw: Any
) -> AIOKafkaConsumer:
    """A group member.

    The mock group coordinator waits ``session_timeout_ms - 1 s`` for the members to rejoin
    whenever a rebalance starts: a short session keeps rebalances short.  Group requests go
    over their own connection, so the default 500 ms long-poll fetches never delay them.
    """
    kw.setdefault("auto_offset_reset", "earliest")
    kw.setdefault("session_timeout_ms", 1500)
    kw.setdefault("heartbeat_interval_ms", 200)
    kw.setdefault("retry_backoff_ms", 50)
    return AIOKafkaConsumer(
        bootstrap_servers=bootstrap or cluster.bootstrap_servers, group_id=group, **kw
    )


@dataclass
class Call:
    """One listener call: which callback, with what, when it started and ended."""

    kind: str
    tps: frozenset[TopicPartition]
    start: float
    end: float = -1.0


@dataclass
class Recorder:
    """Shared bookkeeping of the listeners below."""

    calls: list[Call] = field(default_factory=list)
    running: int = 0
    overlapped: bool = False

    def begin(self, kind: str, tps: set[TopicPartition]) -> Call:
        if self.running:
            self.overlapped = True
        self.running += 1
        call = Call(kind, frozenset(tps), time.monotonic())
        self.calls.append(call)
        return call

    def finish(self, call: Call) -> None:
        call.end = time.monotonic()
        self.running -= 1

    def kinds(self) -> list[str]:
        return [c.kind for c in self.calls]


class SyncListener(ConsumerRebalanceListener):
    """Plain-function callbacks; ``on_assigned`` runs inside on_partitions_assigned."""

    def __init__(self, on_assigned: Callable[[set[TopicPartition]], None] | None = None) -> None:
        self.rec = Recorder()
        self._on_assigned = on_assigned
        #: Revokes of nothing (before a member's first eager rebalance, as aiokafka).
        self.empty_revokes = 0

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if not revoked:
            self.empty_revokes += 1
            return
        self.rec.finish(self.rec.begin("revoked", revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        call = self.rec.begin("assigned", assigned)
        if self._on_assigned is not None:
            self._on_assigned(assigned)
        self.rec.finish(call)


class AsyncListener(ConsumerRebalanceListener):
    """Coroutine callbacks: revoking takes 0.2 s, then (with a consumer) commits positions."""

    def __init__(
        self,
        consumer: AIOKafkaConsumer | None = None,
        on_assigned: Callable[[set[TopicPartition]], None] | None = None,
    ) -> None:
        self.rec = Recorder()
        self.consumer = consumer
        self._on_assigned = on_assigned
        self.committed_on_revoke: dict[TopicPartition, int] = {}
        self.empty_revokes = 0

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if not revoked:
            self.empty_revokes += 1
            return
        call = self.rec.begin("revoked", revoked)
        try:
            await asyncio.sleep(0.2)
            if self.consumer is not None and revoked:
                positions = {tp: await self.consumer.position(tp) for tp in revoked}
                await self.consumer.commit(positions)
                self.committed_on_revoke.update(positions)
        finally:
            self.rec.finish(call)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        call = self.rec.begin("assigned", assigned)
        try:
            await asyncio.sleep(0.01)  # (the fetcher gets its chance to run meanwhile)
            if self._on_assigned is not None:
                self._on_assigned(assigned)
        finally:
            self.rec.finish(call)


def tps(topic: str, partitions: Iterable[int]) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in partitions}


class Poller:
    """Polls a consumer in the background and keeps every (topic, partition, offset)."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.consumer = consumer
        self.seen: list[tuple[str, int, int]] = []
        self.errors: list[BaseException] = []
        self._task: asyncio.Task[None] | None = None

    def start(self) -> Poller:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        while True:
            try:
                batch = await self.consumer.getmany(timeout_ms=100)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # recorded: the tests assert there are none
                self.errors.append(exc)
                await asyncio.sleep(0.05)
                continue
            for tp, records in batch.items():
                self.seen.extend((tp.topic, tp.partition, r.offset) for r in records)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def first_offsets(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for topic, p, offset in self.seen:
            out.setdefault((topic, p), offset)
        return out


def expected(result: Any, topic: str) -> set[tuple[str, int, int]]:
    """Every (topic, partition, offset) that a produce() call delivered."""
    return {
        (topic, p, off)
        for p, first in result.first_offsets.items()
        for off in range(first, result.last_offsets[p] + 1)
    }


async def stop_all(*items: Poller | AIOKafkaConsumer) -> None:
    for item in items:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(item.stop(), 15)


class GroupErrorProxy:
    """A TCP proxy in front of the mock brokers that makes their group error responses valid.

    The mock answers a failed JoinGroup (v0-5) or SyncGroup (v0-3) with null in fields that
    are not nullable in those versions (``protocol_name``/``leader``/``member_id``,
    ``assignment``); rackafka, like Kafka's Java client, rejects such a response as
    malformed, so the error code in it would never be seen.  A real broker writes empty
    values there: this proxy does the same, forwards every other byte untouched, and points
    Metadata at itself so that the consumer keeps talking through it.
    """

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self._brokers = {b.node_id: (b.host, b.port) for b in cluster.brokers.values()}
        self._ports: dict[int, int] = {}
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.fixed = 0

    async def start(self) -> GroupErrorProxy:
        for node_id in self._brokers:
            server = await asyncio.start_server(
                functools.partial(self._accept, node_id), "127.0.0.1", 0
            )
            self._servers.append(server)
            self._ports[node_id] = server.sockets[0].getsockname()[1]
        return self

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self._ports.values())

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    def _accept(self, node_id: int, reader: Any, writer: Any) -> None:
        task = asyncio.ensure_future(self._serve(node_id, reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, node_id: int, client_r: Any, client_w: Any) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection(*self._brokers[node_id])
        except OSError:
            client_w.close()
            return
        pending: dict[int, tuple[int, int]] = {}
        pumps = [
            asyncio.ensure_future(self._requests(client_r, broker_w, pending)),
            asyncio.ensure_future(self._responses(broker_r, client_w, pending)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for pump in pumps:
                with contextlib.suppress(BaseException):
                    await pump
            client_w.close()
            broker_w.close()

    async def _requests(
        self, reader: Any, writer: Any, pending: dict[int, tuple[int, int]]
    ) -> None:
        buffer = frames.FrameBuffer()
        while data := await reader.read(65536):
            buffer.feed(data)
            for frame in buffer.frames():
                header, _ = frames.decode_request_header(frame)
                pending[header.correlation_id] = (header.api_key, header.api_version)
                writer.write(struct.pack(">i", len(frame)) + frame)
            await writer.drain()

    async def _responses(
        self, reader: Any, writer: Any, pending: dict[int, tuple[int, int]]
    ) -> None:
        buffer = frames.FrameBuffer()
        while data := await reader.read(65536):
            buffer.feed(data)
            for frame in buffer.frames():
                corr = frames.peek_correlation_id(frame)
                api, version = pending.pop(corr, (-1, -1))
                if api == METADATA.key:
                    response = frames.decode_response(METADATA, version, frame)
                    for broker in response.brokers:
                        broker.host, broker.port = "127.0.0.1", self._ports[broker.node_id]
                    writer.write(frames.encode_response(METADATA, version, corr, response))
                    continue
                if api == JOIN_GROUP.key:
                    assert version <= 5, "the mock's JoinGroup is capped at v5"
                    # error_code, generation_id, protocol_name, leader, member_id, members
                    frame = self._fix(frame, 8 if version >= 2 else 4, 4, (2, 2, 2))
                elif api == SYNC_GROUP.key:
                    assert version <= 3, "the mock's SyncGroup is capped at v3"
                    # error_code, assignment
                    frame = self._fix(frame, 8 if version >= 1 else 4, 0, (4,))
                writer.write(struct.pack(">i", len(frame)) + frame)
            await writer.drain()

    def _fix(self, frame: bytes, error_at: int, skip: int, widths: tuple[int, ...]) -> bytes:
        """After a non-zero error code and ``skip`` bytes, turn null strings (width 2) or
        bytes (width 4) into empty ones."""
        (error,) = struct.unpack_from(">h", frame, error_at)
        if not error:
            return frame
        pos = error_at + 2 + skip
        out = bytearray(frame[:pos])
        for width in widths:
            (size,) = struct.unpack_from(">h" if width == 2 else ">i", frame, pos)
            pos += width
            if size < 0:
                out += bytes(width)
                self.fixed += 1
            else:
                out += frame[pos - width : pos + size]
                pos += size
        out += frame[pos:]
        return bytes(out)


# -- 1. rebalance listeners -------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_eager_listener_revokes_everything_before_assigning(
    embedded_cluster: EmbeddedCluster, kind: str
) -> None:
    c = embedded_cluster
    c.create_topic("rb", partitions=4, replication_factor=3)
    first = await c.aproduce("rb", 400, value_size=10, partition="spread")
    kw: dict[str, Any] = {"partition_assignment_strategy": "roundrobin"}
    a = group_consumer(c, f"g-rb-{kind}", **kw)
    b = group_consumer(c, f"g-rb-{kind}", **kw)
    listener: SyncListener | AsyncListener = SyncListener() if kind == "sync" else AsyncListener()
    a.subscribe(["rb"], listener=listener)
    b.subscribe(["rb"])
    await a.start()
    pa, pb = Poller(a), Poller(b)
    try:
        pa.start()
        await wait_until(lambda: len(pa.seen) >= 400, 15, "a reads the first records")
        assert listener.rec.kinds() == ["assigned"]
        assert listener.rec.calls[0].tps == tps("rb", range(4))
        # As aiokafka: before the first eager rebalance, a revoke of nothing.
        assert listener.empty_revokes == 1
        await b.start()
        pb.start()
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a and b share"
        )
        await wait_until(lambda: len(listener.rec.calls) == 3, 5, "a's listener")
        second = await c.aproduce("rb", 200, value_size=10, partition="spread")
        want = expected(first, "rb") | expected(second, "rb")
        await wait_until(lambda: set(pa.seen) | set(pb.seen) >= want, 15, "every record")
        final_a = a.assignment()
    finally:
        await stop_all(pa, pb, a, b)
    rec = listener.rec
    assert not pa.errors and not pb.errors
    assert not rec.overlapped
    assert rec.kinds() == ["assigned", "revoked", "assigned"]
    _, revoked, assigned = rec.calls
    assert revoked.tps == tps("rb", range(4))  # eager: everything goes back
    assert assigned.tps == final_a and len(final_a) == 2
    assert revoked.start >= rec.calls[0].end and assigned.start >= revoked.end
    if kind == "async":
        assert revoked.end - revoked.start >= 0.2  # the consumer waited for the coroutine


async def test_async_revoke_commit_is_awaited_before_the_new_assignment(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # on_partitions_revoked sleeps 0.2 s and then commits the positions.  The new assignment
    # looks its committed offsets up after that: the consumer resumes at the positions it had
    # (no commit was made otherwise and auto_offset_reset="earliest" would start over at 0).
    # The rebalance comes from the member itself (a new subscription), when the mock group
    # coordinator accepts commits (it refuses them while it waits for members to rejoin).
    c = embedded_cluster
    c.create_topic("rv", partitions=3, replication_factor=3)
    c.create_topic("rv2", partitions=1, replication_factor=3)
    first = await c.aproduce("rv", 300, value_size=10, partition="spread")
    consumer = group_consumer(c, "g-rv", enable_auto_commit=False)
    listener = AsyncListener(consumer)
    consumer.subscribe(["rv"], listener=listener)
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 300, 15, "the first records")
        consumer.subscribe(["rv", "rv2"], listener=listener)
        await wait_until(lambda: len(consumer.assignment()) == 4, 15, "the new assignment")
        await wait_until(lambda: len(listener.rec.calls) == 3, 5, "the listener")
        second = await c.aproduce("rv", 300, value_size=10, partition="spread")
        await wait_until(lambda: len(poller.seen) >= 600, 15, "the new records")
        await asyncio.sleep(0.3)
        committed = {tp: await consumer.committed(tp) for tp in tps("rv", range(3))}
    finally:
        await stop_all(poller, consumer)
    assert not poller.errors
    assert listener.rec.kinds() == ["assigned", "revoked", "assigned"]
    assert not listener.rec.overlapped
    _, revoked, assigned = listener.rec.calls
    assert revoked.end - revoked.start >= 0.2 and assigned.start >= revoked.end
    assert listener.committed_on_revoke == dict.fromkeys(tps("rv", range(3)), 100)
    assert committed == dict.fromkeys(tps("rv", range(3)), 100)
    assert sorted(poller.seen) == sorted(expected(first, "rv") | expected(second, "rv"))


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_seek_in_on_partitions_assigned_wins_over_committed(
    embedded_cluster: EmbeddedCluster, kind: str
) -> None:
    c = embedded_cluster
    c.create_topic("sk", partitions=2, replication_factor=3)
    await c.aproduce("sk", 40, value_size=10, partition="spread")
    group = f"g-sk-{kind}"
    async with group_consumer(c, group, enable_auto_commit=False) as setup:
        setup.assign(tps("sk", range(2)))
        await setup.commit(dict.fromkeys(tps("sk", range(2)), 3))
    consumer = group_consumer(c, group, enable_auto_commit=False)
    seeks = {TopicPartition("sk", 0): 7, TopicPartition("sk", 1): 12}

    def seek(assigned: set[TopicPartition]) -> None:
        for tp in assigned:
            consumer.seek(tp, seeks[tp])

    listener = SyncListener(seek) if kind == "sync" else AsyncListener(None, seek)
    consumer.subscribe(["sk"], listener=listener)
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 40 - 7 - 12, 15, "records after the seeks")
        await asyncio.sleep(0.2)
    finally:
        await stop_all(poller, consumer)
    assert not poller.errors
    assert listener.rec.kinds() == ["assigned"]
    assert poller.first_offsets() == {("sk", 0): 7, ("sk", 1): 12}
    assert sorted(poller.seen) == sorted(
        [("sk", 0, o) for o in range(7, 20)] + [("sk", 1, o) for o in range(12, 20)]
    )


async def test_cooperative_revokes_only_what_moves(embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("coop", partitions=6, replication_factor=3)
    first = await c.aproduce("coop", 600, value_size=10, partition="spread")
    kw: dict[str, Any] = {"partition_assignment_strategy": "cooperative-sticky"}
    a = group_consumer(c, "g-coop", **kw)
    b = group_consumer(c, "g-coop", **kw)
    la, lb = AsyncListener(), SyncListener()
    a.subscribe(["coop"], listener=la)
    b.subscribe(["coop"], listener=lb)
    overlaps: list[set[TopicPartition]] = []
    snapshots = 0

    async def watch() -> None:
        nonlocal snapshots
        while True:
            both = a.assignment() & b.assignment()
            snapshots += 1
            if both:
                overlaps.append(both)
            await asyncio.sleep(0.002)

    watcher = asyncio.ensure_future(watch())
    pa, pb = Poller(a), Poller(b)
    try:
        await a.start()
        pa.start()
        await wait_until(lambda: len(a.assignment()) == 6, 15, "a owns everything")
        await wait_until(lambda: len(pa.seen) >= 300, 15, "a consumes")
        await b.start()
        pb.start()
        await wait_until(
            lambda: len(a.assignment()) == 3 and len(b.assignment()) == 3, 20, "a and b share"
        )
        await wait_until(lambda: bool(lb.rec.calls), 5, "b's listener")
        await asyncio.sleep(0.5)  # no further movement
        second = await c.aproduce("coop", 600, value_size=10, partition="spread")
        want = expected(first, "coop") | expected(second, "coop")
        await wait_until(lambda: set(pa.seen) | set(pb.seen) >= want, 15, "every record")
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        final_a, final_b = a.assignment(), b.assignment()
        rebalances_a = a._coordinator.rebalances  # type: ignore[union-attr]
        rebalances_b = b._coordinator.rebalances  # type: ignore[union-attr]
        await stop_all(pa, pb, a, b)
    assert not pa.errors and not pb.errors
    assert snapshots > 100 and not overlaps, overlaps[:3]
    assert not la.rec.overlapped and not lb.rec.overlapped
    # a: everything, then gives back exactly the 3 that move; it never loses the others.
    # on_partitions_assigned follows every rebalance (KIP-429, as in Kafka's Java consumer):
    # after the first one, with nothing added, it gets the empty set.
    assert rebalances_a >= 3  # alone; b joins (a revokes); the follow-up (b gets them)
    assert la.rec.kinds() == ["assigned", "revoked"] + ["assigned"] * (rebalances_a - 1)
    got, revoked, *later = la.rec.calls
    assert got.tps == tps("coop", range(6))
    assert len(revoked.tps) == 3 and revoked.tps.isdisjoint(final_a)
    assert final_a == tps("coop", range(6)) - revoked.tps
    assert all(call.tps == frozenset() for call in later)
    # b gets exactly what a gave up, and only after a gave it up.
    assert lb.rec.kinds() == ["assigned"] * rebalances_b
    (added,) = [call for call in lb.rec.calls if call.tps]
    assert added.tps == revoked.tps == final_b
    assert added.start >= revoked.end


async def test_nothing_is_handed_out_of_partitions_being_revoked(
    embedded_cluster: EmbeddedCluster,
) -> None:
    """A getmany() running beside a rebalance gets no record while the partitions given
    up are committed (auto commit): the next owner starts where that commit says, so no
    record is read twice. A slow OffsetCommit keeps the window open for a second; small
    fetches make the member read both partitions before one of them moves.

    Cooperative only: with an eager assignor the mock coordinator refuses the commit of
    the member that rejoins (CommitFailedError), so the moved records are read again
    whatever the client does."""
    c = embedded_cluster
    c.create_topic("rv", partitions=2, replication_factor=3)
    total = 6000
    await c.aproduce("rv", total, value_size=10, partition="spread", batch_size=500)
    c.set_coordinator("group", "g-rv", 1)
    kw: dict[str, Any] = {
        "partition_assignment_strategy": "cooperative-sticky",
        "max_partition_fetch_bytes": 1024,
    }
    a, b = group_consumer(c, "g-rv", **kw), group_consumer(c, "g-rv", **kw)
    seen: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}
    pause = {"a": 0.01, "b": 0.0}  # a reads slowly until b is in
    stop = asyncio.Event()

    async def drain(name: str, consumer: AIOKafkaConsumer) -> None:
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=50, max_records=5)
            for tp, records in batch.items():
                seen[name].extend((tp.partition, r.offset) for r in records)
            await asyncio.sleep(pause[name])

    def union() -> set[tuple[int, int]]:
        return set(seen["a"]) | set(seen["b"])

    tasks: list[asyncio.Future[None]] = []
    try:
        a.subscribe(["rv"])
        await a.start()
        tasks.append(asyncio.ensure_future(drain("a", a)))
        await wait_until(lambda: len(seen["a"]) >= 100, 15, "a reading")
        c.push_broker_request_errors(1, "OffsetCommit", (0, 1000), (0, 1000))
        b.subscribe(["rv"])
        await b.start()
        tasks.append(asyncio.ensure_future(drain("b", b)))
        await wait_until(lambda: bool(a.assignment()) and bool(b.assignment()), 20, "sharing")
        pause["a"] = 0.0
        await wait_until(lambda: len(union()) >= total, 60, "every record")
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(a.stop(), b.stop())
    assert len(union()) == total
    assert seen["b"], "b read nothing: the rebalance was not exercised"
    twice = len(seen["a"]) + len(seen["b"]) - total
    assert twice == 0, f"{twice} records read twice"


# -- 2. auto commit ----------------------------------------------------------------------


async def test_auto_commit_on_interval_and_on_stop(embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("ac", partitions=1, replication_factor=3)
    tp = TopicPartition("ac", 0)
    await c.aproduce("ac", 300, value_size=10, partition=0, batch_size=1)
    consumer = group_consumer(c, "g-ac", auto_commit_interval_ms=200)
    consumer.subscribe(["ac"])
    await consumer.start()
    samples: list[int | None] = []
    consumed = 0
    try:
        deadline = time.monotonic() + 15
        while consumed < 250:  # slowly: ~10 records per 50 ms
            assert time.monotonic() < deadline, "consuming took too long"
            batch = await consumer.getmany(timeout_ms=200, max_records=10)
            consumed += sum(len(r) for r in batch.values())
            await asyncio.sleep(0.05)
            if consumed and len(samples) < consumed // 40:
                samples.append(await consumer.committed(tp))
        position = await consumer.position(tp)
    finally:
        await asyncio.wait_for(consumer.stop(), 15)
    grown = [s for s in samples if s is not None]
    assert len(set(grown)) >= 3, samples  # commits happened while consuming
    assert grown == sorted(grown) and grown[-1] <= position
    # On stop(): a member whose timer never fires (60 s) reads the rest, then stops.
    last = group_consumer(c, "g-ac", auto_commit_interval_ms=60000)
    last.subscribe(["ac"])
    await last.start()
    poller = Poller(last).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 300 - position, 15, "the rest")
        await poller.stop()
        assert sorted(poller.seen) == [("ac", 0, o) for o in range(position, 300)]
        assert await last.committed(tp) == position  # no commit yet ...
    finally:
        await stop_all(poller, last)
    async with group_consumer(c, "g-ac") as check:
        assert await check.committed(tp) == 300  # ... until stop()


async def test_no_auto_commit_commits_nothing(embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("nac", partitions=2, replication_factor=3)
    await c.aproduce("nac", 100, value_size=10, partition="spread")
    parts = tps("nac", range(2))
    consumer = group_consumer(c, "g-nac", enable_auto_commit=False, auto_commit_interval_ms=100)
    consumer.subscribe(["nac"])
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 100, 15, "every record")
        await asyncio.sleep(0.5)  # five auto commit intervals
        for tp in parts:
            assert await consumer.committed(tp) is None
    finally:
        await poller.stop()
        await asyncio.wait_for(consumer.stop(), 15)
    async with group_consumer(c, "g-nac", enable_auto_commit=False) as check:
        for tp in parts:
            assert await check.committed(tp) is None  # not on stop() either
    again = group_consumer(c, "g-nac", enable_auto_commit=False)
    again.subscribe(["nac"])
    await again.start()
    poller = Poller(again).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 100, 15, "every record again")
        await poller.stop()
        await again.commit()
        for tp in parts:
            assert await again.committed(tp) == await again.position(tp) == 50
    finally:
        await stop_all(poller, again)


# -- 3. CommitFailedError -----------------------------------------------------------------


@pytest.mark.parametrize("code", [ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID])
async def test_commit_failed_then_rejoin_and_continue(
    embedded_cluster: EmbeddedCluster, code: int
) -> None:
    # The coordinator says the member is not in the generation it still has: the commit
    # cannot succeed (CommitFailedError, as Java's and aiokafka's); the member joins
    # again, keeping its member id after ILLEGAL_GENERATION (as Java: no ghost for the
    # coordinator to wait for), as a new member after UNKNOWN_MEMBER_ID.
    c = embedded_cluster
    c.create_topic("cf", partitions=2, replication_factor=3)
    first = await c.aproduce("cf", 100, value_size=10, partition="spread")
    consumer = group_consumer(c, f"g-cf-{code}", enable_auto_commit=False)
    consumer.subscribe(["cf"])
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 100, 15, "the first records")
        member = consumer._coordinator.state.member_id  # type: ignore[union-attr]
        c.start_request_tracking()
        c.push_request_errors("OffsetCommit", code)
        with pytest.raises(CommitFailedError):
            await asyncio.wait_for(consumer.commit(), 10)
        await wait_until(
            lambda: consumer._coordinator.state.generation_id >= 0,  # type: ignore[union-attr]
            10,
            "a new generation",
        )
        after = consumer._coordinator.state.member_id  # type: ignore[union-attr]
        assert (after == member) is (code == ILLEGAL_GENERATION), (member, after)
        # The member joins again (a new JoinGroup/SyncGroup round) ...
        await wait_until(lambda: bool(c.requests("SyncGroup")), 10, "a new join round")
        await wait_until(lambda: len(consumer.assignment()) == 2, 10, "the assignment back")
        # ... and keeps consuming; commits work again.
        second = await c.aproduce("cf", 100, value_size=10, partition="spread")
        want = expected(first, "cf") | expected(second, "cf")
        await wait_until(lambda: set(poller.seen) >= want, 15, "the new records")
        await poller.stop()
        await asyncio.wait_for(consumer.commit(), 10)
        for tp in tps("cf", range(2)):
            assert await consumer.committed(tp) == await consumer.position(tp) == 100
    finally:
        await stop_all(poller, consumer)
    assert not poller.errors
    assert c.requests("JoinGroup")


async def test_commit_answered_rebalance_in_progress_commits_after_the_rebalance(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # REBALANCE_IN_PROGRESS: the group rebalances; the member joins the new generation and
    # the commit goes through with it (nothing reaches the application).
    c = embedded_cluster
    c.create_topic("cr", partitions=2, replication_factor=3)
    await c.aproduce("cr", 100, value_size=10, partition="spread")
    consumer = group_consumer(c, "g-cr", enable_auto_commit=False)
    consumer.subscribe(["cr"])
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: len(poller.seen) >= 100, 15, "the first records")
        await poller.stop()
        generation = consumer._coordinator.state.generation_id  # type: ignore[union-attr]
        c.start_request_tracking()
        c.push_request_errors("OffsetCommit", REBALANCE_IN_PROGRESS)
        await asyncio.wait_for(consumer.commit(), 15)
        assert consumer._coordinator.state.generation_id > generation  # type: ignore[union-attr]
        assert len(c.requests("OffsetCommit")) == 2  # refused, then sent again
        assert c.requests("JoinGroup") and c.requests("SyncGroup")
        for tp in tps("cr", range(2)):
            assert await consumer.committed(tp) == 50  # the positions when commit() was called
    finally:
        await stop_all(poller, consumer)
    assert not poller.errors


# -- 4. coordinator errors -----------------------------------------------------------------


@pytest.mark.parametrize("api", ["Heartbeat", "JoinGroup", "SyncGroup"])
async def test_coordinator_errors_recovered(embedded_cluster: EmbeddedCluster, api: str) -> None:
    # NOT_COORDINATOR: find the coordinator again; COORDINATOR_LOAD_IN_PROGRESS: retry;
    # REBALANCE_IN_PROGRESS: join again; UNKNOWN_MEMBER_ID: join again as a new member.
    c = embedded_cluster
    c.create_topic("ce", partitions=3, replication_factor=3)
    results = [await c.aproduce("ce", 300, value_size=10, partition="spread")]
    proxy = await GroupErrorProxy(c).start()
    consumer = group_consumer(c, f"g-ce-{api}", bootstrap=proxy.bootstrap_servers)
    consumer.subscribe(["ce"])
    await consumer.start()
    poller = Poller(consumer).start()
    codes = (
        NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS,
        REBALANCE_IN_PROGRESS,
        UNKNOWN_MEMBER_ID,
    )
    try:
        await wait_until(lambda: len(poller.seen) >= 300, 15, "the first records")
        member = consumer._coordinator.state.member_id  # type: ignore[union-attr]
        c.start_request_tracking()
        c.push_request_errors(api, *codes)
        if api != "Heartbeat":
            c.push_request_errors("Heartbeat", REBALANCE_IN_PROGRESS)  # start a join round
        results.append(await c.aproduce("ce", 300, value_size=10, partition="spread"))
        # every pushed error was answered, and one more request of that API went through
        await wait_until(lambda: len(c.requests(api)) > len(codes), 15, f"{api} retries")
        await wait_until(lambda: len(consumer.assignment()) == 3, 15, "the assignment back")
        results.append(await c.aproduce("ce", 300, value_size=10, partition="spread"))
        want = set().union(*(expected(r, "ce") for r in results))
        await wait_until(lambda: set(poller.seen) >= want, 20, "every record")
        assert c.requests("FindCoordinator")  # NOT_COORDINATOR
        assert len(c.requests("JoinGroup")) >= 2  # REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID
        # UNKNOWN_MEMBER_ID: the member id was given up for a new one
        assert consumer._coordinator.state.member_id != member  # type: ignore[union-attr]
        if api != "Heartbeat":
            assert proxy.fixed > 0  # the proxy had error responses to repair
        before = {name: len(c.requests(name)) for name in ("JoinGroup", "Heartbeat")}
        await asyncio.sleep(0.6)  # stable: heartbeats, no more join rounds
        assert len(c.requests("JoinGroup")) == before["JoinGroup"]
        assert len(c.requests("Heartbeat")) > before["Heartbeat"]
        assert consumer.assignment() == tps("ce", range(3))
    finally:
        await stop_all(poller, consumer)
        await proxy.close()
    assert not poller.errors


# -- 5. pattern subscription ------------------------------------------------------------------


async def test_pattern_picks_up_new_topic_and_rebalances(
    embedded_cluster: EmbeddedCluster,
) -> None:
    c = embedded_cluster
    c.create_topic("pat-1", partitions=2, replication_factor=3)
    c.create_topic("other-1", partitions=2, replication_factor=3)
    kw: dict[str, Any] = {"metadata_max_age_ms": 300}
    a = group_consumer(c, "g-pat", **kw)
    b = group_consumer(c, "g-pat", **kw)
    a.subscribe(pattern="^pat-.*")
    b.subscribe(pattern="^pat-.*")
    pa, pb = Poller(a), Poller(b)
    try:
        await a.start()
        await b.start()
        pa.start()
        pb.start()
        await wait_until(
            lambda: a.assignment() | b.assignment() == tps("pat-1", range(2)), 15, "pat-1"
        )
        c.create_topic("pat-2", partitions=4, replication_factor=3)
        c.create_topic("other-2", partitions=1, replication_factor=3)
        everything = tps("pat-1", range(2)) | tps("pat-2", range(4))
        await wait_until(
            lambda: (
                a.assignment() | b.assignment() == everything
                and not a.assignment() & b.assignment()
                and len(a.assignment()) == len(b.assignment()) == 3
            ),
            15,
            "pat-2 in the assignment",
        )
        assert a.subscription() == b.subscription() == {"pat-1", "pat-2"}
        results = [
            await c.aproduce(t, 60, value_size=10, partition="spread")
            for t in ("pat-1", "pat-2", "other-1", "other-2")
        ]
        want = expected(results[0], "pat-1") | expected(results[1], "pat-2")
        await wait_until(lambda: set(pa.seen) | set(pb.seen) >= want, 15, "every record")
        await asyncio.sleep(0.3)
    finally:
        await stop_all(pa, pb, a, b)
    assert set(pa.seen) | set(pb.seen) == want  # nothing from other-*
    assert not pa.errors and not pb.errors


async def test_pattern_matches_from_the_start_like_aiokafka(
    embedded_cluster: EmbeddedCluster,
) -> None:
    # aiokafka matches a subscription pattern with re.match (anchored at the start only).
    c = embedded_cluster
    c.create_topic("pfx-a", partitions=1, replication_factor=3)
    c.create_topic("xpfx-b", partitions=1, replication_factor=3)
    consumer = group_consumer(c, "g-pfx")
    consumer.subscribe(pattern="pfx")
    await consumer.start()
    poller = Poller(consumer).start()
    try:
        await wait_until(lambda: bool(consumer.assignment()), 15, "an assignment")
        assert consumer.assignment() == {TopicPartition("pfx-a", 0)}
        assert consumer.subscription() == {"pfx-a"}
    finally:
        await stop_all(poller, consumer)


# -- 6. unsubscribe ------------------------------------------------------------------------------


async def test_unsubscribe_and_subscribe_again(embedded_cluster: EmbeddedCluster) -> None:
    c = embedded_cluster
    c.create_topic("un", partitions=4, replication_factor=3)
    a = group_consumer(c, "g-un")
    b = group_consumer(c, "g-un")
    for m in (a, b):
        m.subscribe(["un"])
    pa, pb = Poller(a), Poller(b)
    try:
        await a.start()
        await b.start()
        pa.start()
        pb.start()
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a and b share"
        )
        a.unsubscribe()
        assert a.assignment() == set() and a.subscription() == set()
        await wait_until(lambda: len(b.assignment()) == 4, 15, "b takes everything")
        await asyncio.sleep(0.5)
        assert a.assignment() == set() and len(b.assignment()) == 4
        first = await c.aproduce("un", 80, value_size=10, partition="spread")
        await wait_until(lambda: set(pb.seen) >= expected(first, "un"), 15, "b reads")
        assert not pa.seen
        a.subscribe(["un"])
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a is back"
        )
        assert a.assignment().isdisjoint(b.assignment())
        second = await c.aproduce("un", 80, value_size=10, partition="spread")
        want = expected(first, "un") | expected(second, "un")
        await wait_until(lambda: set(pa.seen) | set(pb.seen) >= want, 15, "every record")
        assert any(topic == "un" and off > 0 for topic, _, off in pa.seen)
    finally:
        await stop_all(pa, pb, a, b)
    assert not pa.errors and not pb.errors


# -- 7. max_poll_interval_ms -----------------------------------------------------------------------


async def test_member_that_stops_polling_leaves_and_rejoins(
    embedded_cluster: EmbeddedCluster,
) -> None:
    c = embedded_cluster
    c.create_topic("mp", partitions=4, replication_factor=3)
    a = group_consumer(c, "g-mp", max_poll_interval_ms=1000)
    b = group_consumer(c, "g-mp")
    for m in (a, b):
        m.subscribe(["mp"])
    pa, pb = Poller(a), Poller(b)
    results = []
    try:
        await a.start()
        await b.start()
        pa.start()
        pb.start()
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a and b share"
        )
        results.append(await c.aproduce("mp", 80, value_size=10, partition="spread"))
        await wait_until(
            lambda: set(pa.seen) | set(pb.seen) >= expected(results[0], "mp"), 15, "records"
        )
        await pa.stop()  # a stops polling (its heartbeats go on in the background)
        stopped = time.monotonic()
        await wait_until(lambda: len(b.assignment()) == 4, 10, "b takes a's partitions")
        assert time.monotonic() - stopped >= 0.9  # not before max_poll_interval_ms
        assert a.assignment() == set()
        results.append(await c.aproduce("mp", 80, value_size=10, partition="spread"))
        await asyncio.sleep(1.0)  # a stays out while it does not poll
        assert len(b.assignment()) == 4 and a.assignment() == set()
        pa.start()  # polls again: joins again
        await wait_until(
            lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "a is back"
        )
        results.append(await c.aproduce("mp", 80, value_size=10, partition="spread"))
        want = set().union(*(expected(r, "mp") for r in results))
        await wait_until(lambda: set(pa.seen) | set(pb.seen) >= want, 15, "every record")
    finally:
        await stop_all(pa, pb, a, b)
    assert not pa.errors and not pb.errors
