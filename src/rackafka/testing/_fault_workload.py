"""The workload of a fault scenario (:mod:`rackafka.testing.faults`): an idempotent
producer of numbered records, group members that commit after each batch, and members of a
transactional consume-transform-produce pipeline.

Everything a member sees goes to the scenario's :class:`~._fault_checks.Ledger` and to the
member's :class:`~._fault_checks.MemberStats`; nothing here decides whether it was right.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from rackafka import AIOKafkaConsumer, AIOKafkaProducer
from rackafka.abc import ConsumerRebalanceListener
from rackafka.errors import (
    CommitFailedError,
    ConsumerStoppedError,
    ProducerFenced,
    RebalanceInProgressError,
)
from rackafka.structs import ConsumerRecord, TopicPartition

from ._clients import default_value
from ._fault_checks import Ledger, MemberStats

log = logging.getLogger("rackafka.testing.faults")

#: Seconds a member's or the writer's task has to end when stopped.
_STOP_WAIT = 60.0


def parse_seq(value: bytes | None) -> int | None:
    """The number a value written by :class:`SequenceWriter` starts with (None: none)."""
    if not value:
        return None
    head = value.split(b"|", 1)[0]
    return int(head) if head.isdigit() else None


class SequenceWriter:
    """An idempotent producer (``acks="all"``) writing numbered records at about ``rate``
    records a second: record ``seq`` to partition ``seq % partitions``, value
    ``default_value(seq, value_size)``; each acknowledgement goes to the ledger."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        ledger: Ledger,
        *,
        rate: float,
        value_size: int,
    ) -> None:
        self.topic = topic
        self.ledger = ledger
        self.value_size = value_size
        self._rate = rate
        self._producer: AIOKafkaProducer[bytes, bytes] = AIOKafkaProducer(
            bootstrap_servers=bootstrap_servers,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            request_timeout_ms=120000,
        )
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start(self) -> SequenceWriter:
        await self._producer.start()
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        tick = 0.05
        burst = max(1, round(self._rate * tick))
        partitions = self.ledger.partitions
        while not self._stop.is_set():
            began = time.monotonic()
            futures: list[asyncio.Future[Any] | None] = []
            seqs = []
            for _ in range(burst):
                seq = self.ledger.sent
                self.ledger.sent += 1
                seqs.append(seq)
                value = default_value(seq, self.value_size)
                try:
                    futures.append(
                        await self._producer.send(self.topic, value, partition=seq % partitions)
                    )
                except Exception as exc:  # the send itself failed: counted, not retried
                    self.ledger.send_failed(exc)
                    futures.append(None)
            for seq, fut in zip(seqs, futures):
                if fut is None:
                    continue
                try:
                    md = await fut
                except Exception as exc:
                    self.ledger.send_failed(exc)
                    continue
                self.ledger.ack(seq, md.partition, md.offset)
            await asyncio.sleep(max(0.0, tick - (time.monotonic() - began)))

    @property
    def failed(self) -> BaseException | None:
        """What the writing task died of, if it died."""
        if self._task is not None and self._task.done() and not self._task.cancelled():
            return self._task.exception()
        return None

    async def stop(self) -> None:
        """Stop after the burst in flight (every send answered) and close the producer."""
        self._stop.set()
        try:
            if self._task is not None:
                await asyncio.wait_for(asyncio.shield(self._task), _STOP_WAIT)
        finally:
            if self._task is not None and not self._task.done():
                self._task.cancel()
            await self._producer.stop()


def membership(consumer: AIOKafkaConsumer[Any, Any]) -> tuple[str, int] | None:
    """``(member id, generation or member epoch)`` as the consumer's group code holds it,
    for the report only (None when it cannot be seen: the group code is private)."""
    state = getattr(getattr(consumer, "_coordinator", None), "state", None)
    if state is None:
        return None
    try:
        return str(state.member_id or ""), int(state.generation_id)
    except (AttributeError, TypeError, ValueError):
        return None


class _Listener(ConsumerRebalanceListener):
    """Counts the callbacks and passes them to the member."""

    def __init__(self, member: GroupMember) -> None:
        self._m = member

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._m.stats.revoked_calls += 1
        await self._m.revoked(set(revoked))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self._m.stats.assigned_calls += 1
        self._m.ledger.owned(self._m.name, sorted(tp.partition for tp in assigned))
        await self._m.assigned(set(assigned))

    async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self._m.stats.lost_calls += 1
        await self._m.revoked(set(lost))


class GroupMember:
    """One member of the group: ``getmany(max_records=...)``, every record checked and
    put in the ledger, then ``commit()`` after each non-empty batch. Exceptions are
    counted by kind, never raised: the member goes on as an application would."""

    def __init__(
        self,
        name: str,
        rack: str | None,
        make_consumer: Callable[[], AIOKafkaConsumer[Any, Any]],
        topic: str,
        ledger: Ledger,
        *,
        max_records: int,
        value_size: int,
    ) -> None:
        self.name = name
        self.topic = topic
        self.ledger = ledger
        self.max_records = max_records
        self.value_size = value_size
        self.stats = MemberStats(name, rack, started_at=ledger.clock())
        self.consumer = make_consumer()
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        #: start() returned (or raised): the loop polls.
        self.running = False
        self.stopped = False

    async def start(self) -> GroupMember:
        """Subscribe and start the consumer and the loop in a task (``consumer.start()``
        waits for the first assignment: the scenario does not wait for it here)."""
        self.consumer.subscribe([self.topic], listener=_Listener(self))
        self._task = asyncio.ensure_future(self._run())
        return self

    # -- the rebalance listener's calls (overridden by the transactional member) ----------
    async def assigned(self, tps: set[TopicPartition]) -> None:
        """The group gave these partitions to this member."""

    async def revoked(self, tps: set[TopicPartition]) -> None:
        """These partitions are no longer this member's (revoked or lost)."""

    # -- the loop ------------------------------------------------------------------------
    def observe(self) -> None:
        """Note the member id and generation the group code holds now (for the report)."""
        seen = membership(self.consumer)
        if seen is None:
            return
        member_id, generation = seen
        st = self.stats
        if member_id and (not st.member_ids or st.member_ids[-1] != member_id):
            st.member_ids.append(member_id)
        if generation >= 0 and (not st.generations or st.generations[-1] != generation):
            st.generations.append(generation)
        if st.generations and generation < 0 and st.member_ids and not member_id:
            if not getattr(self, "_was_reset", False):
                st.resets += 1
            self._was_reset = True
        else:
            self._was_reset = False

    async def _run(self) -> None:
        st = self.stats
        try:
            await self.consumer.start()
            self.running = True
        except Exception as exc:  # counted; getmany() is tried all the same
            self.running = True
            st.start_errors[type(exc).__name__] += 1
            st.incident(self.ledger.clock(), "start()", exc)
        while not self._stop.is_set():
            try:
                batch = await self.consumer.getmany(timeout_ms=300, max_records=self.max_records)
            except ConsumerStoppedError:
                return
            except Exception as exc:
                st.poll_errors[type(exc).__name__] += 1
                st.incident(self.ledger.clock(), "getmany()", exc)
                await asyncio.sleep(0.2)
                continue
            if not batch:
                continue
            st.batches += 1
            for tp, records in batch.items():
                self._record(tp, records)
            await self.handle(batch)

    def _record(self, tp: TopicPartition, records: list[ConsumerRecord[Any, Any]]) -> None:
        partitions = self.ledger.partitions
        for r in records:
            seq = parse_seq(r.value)
            ok = (
                seq is not None
                and seq % partitions == tp.partition
                and r.value == default_value(seq, self.value_size)
            )
            self.ledger.deliver(tp.partition, r.offset, seq, ok)
        self.stats.records += len(records)

    async def handle(self, batch: dict[TopicPartition, list[ConsumerRecord[Any, Any]]]) -> None:
        """What the member does with a batch: commit it."""
        st = self.stats
        try:
            await self.consumer.commit()
            st.commits += 1
        except (CommitFailedError, RebalanceInProgressError) as exc:
            st.commit_failures[type(exc).__name__] += 1
            st.incident(self.ledger.clock(), "commit()", exc)
        except Exception as exc:
            st.commit_errors[type(exc).__name__] += 1
            st.incident(self.ledger.clock(), "commit()", exc)

    @property
    def crashed(self) -> BaseException | None:
        """What the loop died of (it catches every exception: a harness bug)."""
        if self._task is not None and self._task.done() and not self._task.cancelled():
            return self._task.exception()
        return None

    async def stop(self) -> None:
        """Stop the loop after its batch, then the consumer (it leaves the group)."""
        if self.stopped:
            return
        self.stopped = True
        self._stop.set()
        if self._task is not None and not self.running:  # still in start(): no more
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        try:
            if self._task is not None:
                await asyncio.wait_for(asyncio.shield(self._task), _STOP_WAIT)
        except asyncio.TimeoutError:
            self._task.cancel() if self._task is not None else None
        finally:
            try:
                await asyncio.wait_for(self.consumer.stop(), _STOP_WAIT)
            except Exception as exc:
                self.stats.incident(self.ledger.clock(), "stop()", exc)
            await self.closed()
            self.stats.stopped_at = self.ledger.clock()

    async def closed(self) -> None:
        """After the consumer stopped (the transactional member closes its producers)."""


def output_value(value: bytes) -> bytes:
    """What the pipeline writes for an input value."""
    return b"out|" + value


class TransactionalMember(GroupMember):
    """A member of a consume-transform-produce pipeline (read with
    ``isolation_level="read_committed"``): each partition of a batch is transformed into
    ``output`` (same partition) and its offsets sent, in one transaction of that
    partition's own transactional producer.

    One transactional id per input partition (``{prefix}-{p}``), as before KIP-447: the new
    owner of a partition starts its producer when the partition is assigned, which fences
    the former owner (its open transaction is aborted, its next commit fails), and then
    seeks to the offset committed for the group, so no record is written twice. A failed
    transaction is aborted and its partition read again from the batch's first offset.
    """

    def __init__(
        self,
        name: str,
        rack: str | None,
        make_consumer: Callable[[], AIOKafkaConsumer[Any, Any]],
        topic: str,
        ledger: Ledger,
        *,
        max_records: int,
        value_size: int,
        output: str,
        group_id: str,
        bootstrap_servers: str,
        tid_prefix: str,
    ) -> None:
        super().__init__(
            name,
            rack,
            make_consumer,
            topic,
            ledger,
            max_records=max_records,
            value_size=value_size,
        )
        self.output = output
        self.group_id = group_id
        self._bootstrap = bootstrap_servers
        self._tid_prefix = tid_prefix
        self._producers: dict[int, AIOKafkaProducer[bytes, bytes]] = {}
        #: Held while a batch's transactions run: a revocation waits for them (in Java's
        #: consumer the listener runs inside poll(), between two batches).
        self._lock = asyncio.Lock()

    def _new_producer(self, partition: int) -> AIOKafkaProducer[bytes, bytes]:
        return AIOKafkaProducer(
            bootstrap_servers=self._bootstrap,
            transactional_id=f"{self._tid_prefix}-{partition}",
            linger_ms=5,
            request_timeout_ms=60000,
        )

    async def assigned(self, tps: set[TopicPartition]) -> None:
        async with self._lock:
            for tp in sorted(tps):
                old = self._producers.pop(tp.partition, None)
                if old is not None:
                    await self._close_producer(old)
                producer = self._new_producer(tp.partition)
                try:
                    await producer.start()
                    # The producer id is asked for here: the former owner is fenced.
                    await producer.begin_transaction()
                    await producer.abort_transaction()
                    committed = await self.consumer.committed(tp)
                    if committed is not None:
                        self.consumer.seek(tp, committed)
                except Exception as exc:
                    self.stats.txn_errors[type(exc).__name__] += 1
                    self.stats.incident(self.ledger.clock(), f"taking p{tp.partition}", exc)
                    await self._close_producer(producer)
                    with contextlib.suppress(Exception):
                        self.consumer.pause(tp)
                    continue
                self._producers[tp.partition] = producer
                with contextlib.suppress(Exception):
                    self.consumer.resume(tp)

    async def revoked(self, tps: set[TopicPartition]) -> None:
        async with self._lock:
            for tp in tps:
                producer = self._producers.pop(tp.partition, None)
                if producer is not None:
                    await self._close_producer(producer)

    async def _close_producer(self, producer: AIOKafkaProducer[bytes, bytes]) -> None:
        try:
            await asyncio.wait_for(producer.stop(), _STOP_WAIT)
        except Exception as exc:
            log.debug("closing a transactional producer: %s", exc)

    async def handle(self, batch: dict[TopicPartition, list[ConsumerRecord[Any, Any]]]) -> None:
        async with self._lock:
            await asyncio.gather(*(self._transact(tp, rs) for tp, rs in batch.items()))

    async def _transact(self, tp: TopicPartition, records: list[ConsumerRecord[Any, Any]]) -> None:
        st = self.stats
        producer = self._producers.get(tp.partition)
        if producer is None:  # not (or no longer) ours: read it again if it comes back
            self._rewind(tp, records[0].offset)
            with contextlib.suppress(Exception):
                self.consumer.pause(tp)
            return
        try:
            await producer.begin_transaction()
            for r in records:
                await producer.send(
                    self.output, output_value(r.value or b""), partition=tp.partition
                )
            await producer.send_offsets_to_transaction({tp: records[-1].offset + 1}, self.group_id)
            await producer.commit_transaction()
            st.transactions += 1
            st.commits += 1
        except Exception as exc:
            st.txn_errors[type(exc).__name__] += 1
            st.incident(self.ledger.clock(), f"transaction p{tp.partition}", exc)
            if isinstance(exc, ProducerFenced):
                # Another member took the partition: stop reading it until it is revoked.
                self._producers.pop(tp.partition, None)
                await self._close_producer(producer)
                with contextlib.suppress(Exception):
                    self.consumer.pause(tp)
            else:
                with contextlib.suppress(Exception):
                    await producer.abort_transaction()
            self._rewind(tp, records[0].offset)

    def _rewind(self, tp: TopicPartition, offset: int) -> None:
        with contextlib.suppress(Exception):  # (no longer assigned: nothing to rewind)
            self.consumer.seek(tp, offset)

    async def closed(self) -> None:
        producers, self._producers = list(self._producers.values()), {}
        for producer in producers:
            await self._close_producer(producer)
