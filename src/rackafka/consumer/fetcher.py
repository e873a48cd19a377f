"""The fetcher: records for the assigned partitions, fetched in the background.

:class:`Fetcher` is what the consumer holds; it puts together the fetcher's parts, one job
each:

* :mod:`~rackafka.consumer.fetch_loop`: the background task that keeps a fetch in flight to
  every broker (routing by :mod:`~rackafka.consumer.routing`, KIP-392; fetch sessions by
  :mod:`~rackafka.consumer.fetch_session`, KIP-227) and buffers the responses' record data;
* :mod:`~rackafka.consumer.offsets`: where partitions start (committed offsets,
  ListOffsets resets) and KIP-320 validation after leader moves;
* :mod:`~rackafka.consumer.records_out`: decodes the buffered data when getmany()/getone()
  asks, and raises the errors recorded for partitions;
* :mod:`~rackafka.consumer.fetch_stats`: where data came from (``fetch_stats()``);
* :mod:`~rackafka.consumer.fetch_state`: the state they share, one object per broker and
  one per assigned partition.

Fetched record data is buffered undecoded per partition and decoded when the user asks for
records, so no work is spent on records nobody reads and memory stays bounded: a partition
is fetched ahead only while it holds less than ``max_partition_fetch_bytes``, and no fetch is
sent while the buffers hold ``fetch_max_bytes``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from rackafka._backoff import DEFAULT_JITTER, BackoffPolicy
from rackafka._tasks import cancel_and_wait
from rackafka.client import KafkaClient
from rackafka.consumer.fetch_loop import (
    DECOMPRESSED_LIMIT_FACTOR,
    MIN_DECOMPRESSED_LIMIT,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchLoop,
)
from rackafka.consumer.fetch_state import FetchState, NodeCounters
from rackafka.consumer.fetch_stats import FetchStats, PartitionRoute, snapshot
from rackafka.consumer.offsets import OffsetLookups
from rackafka.consumer.records_out import RecordsOut
from rackafka.consumer.routing import ReadReplicaPolicy
from rackafka.structs import TopicPartition
from rackafka.subscription import SubscriptionState

__all__ = [
    "DECOMPRESSED_LIMIT_FACTOR",
    "MIN_DECOMPRESSED_LIMIT",
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "FetchStats",
    "Fetcher",
    "NodeCounters",
    "PartitionRoute",
]


class Fetcher:
    """Fetches records for the assigned partitions in the background.

    Errors met while fetching wait ``retry_backoff_ms``, doubling on each error in a row up
    to ``retry_backoff_max_ms`` (at least ``retry_backoff_ms``), with 20 % jitter, per
    broker and per partition.
    """

    def __init__(
        self,
        client: KafkaClient,
        subscriptions: SubscriptionState,
        *,
        client_rack: str | None = None,
        fetch_min_bytes: int = 1,
        fetch_max_bytes: int = 52428800,
        fetch_max_wait_ms: int = 500,
        max_partition_fetch_bytes: int = 1048576,
        check_crcs: bool = True,
        isolation_level: int = READ_UNCOMMITTED,
        retry_backoff_ms: float = 100,
        retry_backoff_max_ms: float = 1000,
        metadata_max_age_ms: float = 300000,
        consumer_timeout_ms: float = 200,
        key_deserializer: Callable[[Any], Any] | None = None,
        value_deserializer: Callable[[Any], Any] | None = None,
        record_tuples: bool = False,
    ) -> None:
        self._client = client
        self._cluster = client.cluster
        self._subs = subscriptions
        self.client_rack = client_rack
        # As the client's metadata refreshes: never a longest wait below the first.
        max_ms = max(retry_backoff_ms, retry_backoff_max_ms)
        self.policy: ReadReplicaPolicy[TopicPartition] = ReadReplicaPolicy(
            lease_s=metadata_max_age_ms / 1000,
            backoff_s=retry_backoff_ms / 1000,
            max_backoff_s=max_ms / 1000,
            jitter=DEFAULT_JITTER,
        )
        retry = BackoffPolicy(retry_backoff_ms, max_ms)
        self._fs = fs = FetchState(subscriptions, self.policy, retry)
        idle = consumer_timeout_ms / 1000
        self._lookups = OffsetLookups(fs, client, isolation_level=isolation_level, idle=idle)
        self._loop = FetchLoop(
            fs,
            client,
            self._lookups,
            client_rack=client_rack,
            fetch_min_bytes=fetch_min_bytes,
            fetch_max_bytes=fetch_max_bytes,
            fetch_max_wait_ms=fetch_max_wait_ms,
            max_partition_fetch_bytes=max_partition_fetch_bytes,
            check_crcs=check_crcs,
            isolation_level=isolation_level,
            retry_backoff_ms=retry_backoff_ms,
            idle=idle,
        )
        out = RecordsOut(
            fs,
            client,
            lambda: self._task,
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
            record_tuples=record_tuples,
        )
        #: Set when records or an error wait for getmany()/getone().
        self.data_ready = fs.data_ready
        self._buffered = fs.buffered
        # The hand-out of records is called once per getmany()/getone(): bound here, so
        # that the facade costs no call of its own.
        self.next_record = out.next_record
        self.drain = out.drain
        self.raise_pending_errors = out.raise_pending_errors
        self.has_sticky_error = out.has_sticky_error
        self.has_buffered = out.has_buffered
        self.hand_out_runs = out.hand_out_runs
        self.list_offsets = self._lookups.list_offsets
        self.list_offsets_from = self._lookups.list_offsets_from
        self._task: asyncio.Task[None] | None = None
        self._cluster.add_listener(self._loop.on_metadata)

    @property
    def committed_lookup(self) -> Callable[[list[TopicPartition]], Awaitable[Any]] | None:
        """Looks up committed offsets (set by the consumer when it has a group_id)."""
        return self._lookups.committed_lookup

    @committed_lookup.setter
    def committed_lookup(self, lookup: Callable[[list[TopicPartition]], Awaitable[Any]]) -> None:
        self._lookups.committed_lookup = lookup

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop.run())

    async def close(self) -> None:
        self._loop.closed = True
        self._cluster.remove_listener(self._loop.on_metadata)
        tasks: list[asyncio.Future[Any]] = []
        if self._task is not None:
            tasks.append(self._task)
        tasks += self._loop.tasks()
        tasks += self._lookups.tasks()
        await cancel_and_wait(tasks)
        self._loop.cancel_fetches()

    def wakeup(self) -> None:
        """Make the fetch loop look at the assignment again now."""
        self._fs.wakeup_event.set()

    # -- user-facing state changes ---------------------------------------------------------

    def seek(self, tp: TopicPartition, offset: int) -> None:
        part = self._fs.sync().get(tp)
        if part is None:
            return
        state = part.state
        state.set_position(offset)
        state.awaiting_validation = False
        part.backoff.until = 0.0  # the user moved: try at once
        if part.fetching:
            part.seeked = True
        self._fs.drop_buffered(part)
        self.wakeup()

    def request_reset(self, tps: list[TopicPartition], strategy: str) -> None:
        parts = self._fs.sync()
        for tp in tps:
            part = parts.get(tp)
            if part is not None:
                part.state.request_reset(strategy)
                self._fs.drop_buffered(part)
        self.wakeup()

    def on_assignment(self) -> None:
        """The assignment changed: drop what belongs to revoked partitions."""
        self._fs.sync()
        self._client.add_topics({tp.topic for tp in self._subs.assigned()})
        self.wakeup()

    # -- stats -----------------------------------------------------------------------------

    def served_by(self, tp: TopicPartition) -> int | None:
        """The node whose fetch response the records of ``tp`` handed out last came from."""
        part = self._fs.parts.get(tp)
        return None if part is None else part.served_by

    def stats(self) -> FetchStats:
        """A snapshot of where data was read from, per node, rack and partition."""
        return snapshot(self._fs, self._cluster, self.client_rack)
