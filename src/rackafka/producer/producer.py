"""``AIOKafkaProducer``: aiokafka's producer API, Kafka's partitioning, rack-aware option.

The public class: configuration checks, serialization and partitioning; batching is
the accumulator's job and the wire the sender's.  Never imports the consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Generic, NamedTuple, TypeVar

from rackafka._lifecycle import AsyncRole, weak_method
from rackafka._version import __version__
from rackafka.client import KafkaClient
from rackafka.errors import (
    IllegalOperation,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    ProducerClosed,
    UnknownTopicOrPartitionError,
)
from rackafka.producer.accumulator import Accumulator, ProducerBatch
from rackafka.producer.config import CODECS, DEFAULT_PARTITIONER, MISSING, PRODUCER
from rackafka.producer.partitioner import StickyPartitioner, murmur2_partition
from rackafka.producer.sender import ProducerIdState, ProduceStats, Sender
from rackafka.producer.transaction_manager import IN_TRANSACTION, TransactionManager
from rackafka.records.builder import NO_HEADERS, encode_headers
from rackafka.records.default_records import HEADER_SIZE
from rackafka.structs import (
    OffsetAndMetadata,
    RecordMetadata,
    TopicPartition,
    as_topic_partition,
)
from rackafka.zones.detect import AUTO_RACK, RackDecision, decide_client_rack

log = logging.getLogger("rackafka.producer")

KT = TypeVar("KT")
VT = TypeVar("VT")

#: Bytes a record adds besides its key, value and headers (varints, attributes), at most.
_RECORD_OVERHEAD = 21
#: The size counted for a record without key, value and headers (in a batch of its own).
_RECORD_BASE_SIZE = HEADER_SIZE + _RECORD_OVERHEAD
_time_ns = time.time_ns
_new_tuple = tuple.__new__
#: Keys whose partition a topic remembers (then forgets them all and starts again).
_KEY_CACHE_SIZE = 10_000
#: Clean-ups of producers collected without ``stop()`` (kept until they end).
_ABANDONED: set[asyncio.Task[None]] = set()
#: aiokafka's name (``aiokafka.producer.producer._missing``) for the "not given" default of
#: ``acks``, which frameworks written for aiokafka pass on: the same object as ours.
_missing = MISSING


def _abandon(
    loop: asyncio.AbstractEventLoop, sender: Sender, acc: Accumulator, client: KafkaClient
) -> None:
    """A started producer was garbage-collected without ``stop()``: fail what it still held
    and stop its background tasks and connections (they never reference the producer, so
    that it can be collected)."""

    async def clean_up() -> None:
        acc.fail_all(ProducerClosed("the producer was garbage-collected without stop()"))
        await sender.close()
        await client.close()

    def schedule() -> None:
        task = loop.create_task(clean_up())
        _ABANDONED.add(task)
        task.add_done_callback(_ABANDONED.discard)

    if not loop.is_closed():
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(schedule)


def _offset_and_metadata(value: Any) -> OffsetAndMetadata:
    """An offset to commit: an int, or an ``(offset, metadata)`` pair such as our
    :class:`OffsetAndMetadata` or aiokafka's."""
    if isinstance(value, int) and not isinstance(value, bool):
        return OffsetAndMetadata(value, "")
    try:
        offset, metadata = value
    except (TypeError, ValueError):
        raise ValueError(
            f"an offset must be an int or an (offset, metadata) pair, not {value!r}"
        ) from None
    if not isinstance(metadata, str):
        raise TypeError("Metadata should be a string")
    return OffsetAndMetadata(offset, metadata)


def _log_transaction_end(task: asyncio.Task[None]) -> None:
    """Retrieve the outcome of a commit or abort (its caller may have been cancelled)."""
    if not task.cancelled() and task.exception() is not None:
        log.debug("ending the transaction failed: %r", task.exception())


class _NeedKeyOrValue(AssertionError, ValueError):
    """send() got neither a key nor a value (aiokafka asserts; catchable as ValueError)."""


class _TopicInfo:
    """What ``send()`` needs of a topic's metadata (cached per metadata version)."""

    __slots__ = ("version", "all_parts", "available", "tps", "by_key")

    def __init__(
        self, version: int, topic: str, all_parts: list[int], available: list[int]
    ) -> None:
        self.version = version
        #: Every partition id, sorted.
        self.all_parts = all_parts
        #: The partitions that have a leader, sorted.
        self.available = available
        #: The :class:`TopicPartition` of every partition id.
        self.tps = {p: TopicPartition(topic, p) for p in all_parts}
        #: The :class:`TopicPartition` of keys seen lately (murmur2 is costly in Python);
        #: bounded by :data:`_KEY_CACHE_SIZE`, and renewed with the metadata.
        self.by_key: dict[bytes, TopicPartition] = {}


class BatchAppendMetadata(NamedTuple):
    """What :meth:`BatchBuilder.append` returns for a record added to the batch."""

    offset: int
    "The record's offset within the batch"
    timestamp: int
    "The record's timestamp in milliseconds"
    crc: int | None
    "Always ``None`` (batches v2 carry one CRC for the whole batch)"
    size: int
    "The encoded size of the record in bytes"


class BatchBuilder:
    """A batch filled by the caller and sent with :meth:`AIOKafkaProducer.send_batch`.

    Made by :meth:`AIOKafkaProducer.create_batch`; the producer's serializers apply.
    """

    def __init__(
        self,
        max_batch_size: int,
        key_serializer: Callable[[Any], bytes | None] | None,
        value_serializer: Callable[[Any], bytes | None] | None,
    ) -> None:
        self._batch = ProducerBatch(TopicPartition("", -1), max_batch_size, 0.0)
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._closed = False

    def append(
        self,
        *,
        timestamp: int | None,
        key: Any,
        value: Any,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> BatchAppendMetadata | None:
        """Add a record to the batch.

        Arguments:
            timestamp: epoch milliseconds, or ``None`` for now.
            key, value: the key and value (serialized with the producer's serializers).
            headers: ``(str, bytes)`` pairs.

        Returns:
            the record's :class:`BatchAppendMetadata`, or ``None`` if the batch is full
            or closed.
        """
        if self._closed:
            return None
        if self._key_serializer is not None:
            key = self._key_serializer(key)
        if self._value_serializer is not None:
            value = self._value_serializer(value)
        if timestamp is None:
            timestamp = _time_ns() // 1_000_000
        batch = self._batch
        before = batch.size
        if headers:
            hdrs = encode_headers(headers if type(headers) is list else list(headers))
        else:
            hdrs = NO_HEADERS
        if not batch.try_append(timestamp, key, value, hdrs):
            self._closed = True
            return None
        # The named tuple made in C (its __new__ is a Python function).
        return _new_tuple(
            BatchAppendMetadata, (batch.count - 1, timestamp, None, batch.size - before)
        )

    def close(self) -> None:
        """Take no more records (the batch is sent as it is)."""
        self._closed = True

    def size(self) -> int:
        """The size of the batch in bytes."""
        return self._batch.size

    def record_count(self) -> int:
        """The number of records in the batch."""
        return self._batch.count


class AIOKafkaProducer(AsyncRole, Generic[KT, VT]):
    """A Kafka client that publishes records to the Kafka cluster.

    A drop-in for :class:`aiokafka.AIOKafkaProducer`: the same arguments with the same
    defaults, the same methods and exceptions.  Keyed records go to the partition
    Kafka's Java client picks (murmur2 of the key); keyless ones stick to one
    partition until its batch is full or sent (KIP-480), instead of a random choice
    per record.  With ``client_rack`` and ``rack_aware_partitioning=True``, keyless
    records go to partitions led by a broker in the producer's rack when there are
    any (see :doc:`/producer`); :meth:`send_stats` counts same-rack and cross-rack
    bytes.

    Arguments:
        bootstrap_servers: ``host[:port]`` string or list of them.  Default:
            ``localhost:9092``.
        client_id: a name sent in every request.  Default: ``rackafka-producer-<version>``.
        acks: ``0`` (no acknowledgement), ``1`` (the leader's) or ``"all"``/``-1``
            (every in-sync replica's).  Default: ``1``, or ``"all"`` with
            ``enable_idempotence``.
        key_serializer, value_serializer: callables turning keys and values into
            ``bytes``.
        compression_type: ``"gzip"``, ``"snappy"``, ``"lz4"``, ``"zstd"`` or ``None``.
        max_batch_size: most bytes of one partition's batch.  Default: 16384.
        partitioner: ``partitioner(key_bytes, all_partitions, available_partitions)``
            returning a partition.  Default: :class:`DefaultPartitioner` (murmur2 for
            keys, sticky batches for keyless records).
        max_request_size: most bytes of one Produce request (and one record).
            Default: 1048576.
        linger_ms: how long a batch waits for more records.  Default: 0.
        request_timeout_ms: how long a request may wait for its response; also the
            time a record may take to be delivered.  Default: 40000.
        retry_backoff_ms: pause before retrying after an error.  Default: 100.
        retry_backoff_max_ms: the longest such pause (metadata refreshes that follow
            each other double their pause up to it, with 20 % jitter: KIP-580).  A
            rackafka extension (Java's name), as in the consumer.  Default: 1000.
        reconnect_backoff_ms, reconnect_backoff_max_ms: pause before connecting again
            to a broker whose connection failed, doubling per failure in a row up to the
            maximum, with 20 % jitter (KIP-144).  rackafka extensions (Java's names), as
            in the consumer.  Defaults: 50 and 1000.
        metadata_max_age_ms: metadata refresh period.  Default: 300000.
        connections_max_idle_ms: idle connections are closed after this (``None``:
            never, as in aiokafka).  Default: 540000.
        enable_idempotence: the broker stores each record exactly once even when
            sends are retried (producer id and sequence numbers).  Needs
            ``acks="all"``.  Default: ``False``.
        transactional_id: makes the producer transactional (and idempotent): records
            are sent between :meth:`begin_transaction` and
            :meth:`commit_transaction` / :meth:`abort_transaction`.
        transaction_timeout_ms: how long the coordinator waits for a transaction to
            end before aborting it.  Default: 60000.
        security_protocol, ssl_context, sasl_*: as in the consumer.
        client_rack: the rack (availability zone) of this producer (``""`` is no rack,
            as ``None``); ``"auto"`` finds it at :meth:`start` as the consumer does
            (``RACKAFKA_CLIENT_RACK``, else the zone the platform reports that is a
            broker's rack; see ``rackafka.zones``), and ``rack_decision`` tells what was
            chosen and why.
        rack_aware_partitioning: with ``client_rack``, send keyless records to
            partitions whose leader is in the same rack when there are any (a
            rackafka extension in the spirit of KIP-1123).  Default: ``False``.
        api_version: deprecated and ignored, as in aiokafka.
        loop: deprecated and ignored, as in aiokafka.
    """

    _client_seq = 0

    def __init__(
        self,
        *,
        loop: Any = None,
        bootstrap_servers: str | list[str] = "localhost",
        client_id: str | None = None,
        metadata_max_age_ms: float = 300000,
        request_timeout_ms: float = 40000,
        api_version: Any = None,
        acks: Any = MISSING,
        key_serializer: Callable[[Any], bytes | None] | None = None,
        value_serializer: Callable[[Any], bytes | None] | None = None,
        compression_type: str | None = None,
        max_batch_size: int = 16384,
        partitioner: Callable[[bytes | None, list[int], list[int]], int] = DEFAULT_PARTITIONER,
        max_request_size: int = 1048576,
        linger_ms: int = 0,
        retry_backoff_ms: float = 100,
        retry_backoff_max_ms: int = 1000,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        security_protocol: str = "PLAINTEXT",
        ssl_context: Any = None,
        connections_max_idle_ms: float | None = 540000,
        enable_idempotence: bool = False,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        sasl_mechanism: str = "PLAIN",
        sasl_plain_password: str | None = None,
        sasl_plain_username: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None,
        client_rack: str | None = None,
        rack_aware_partitioning: bool = False,
    ) -> None:
        args = dict(locals())
        del args["self"]
        # Every argument is checked by the producer's table (rackafka.producer.config).
        cfg = PRODUCER.check(args)
        if cfg["client_id"] is None:
            AIOKafkaProducer._client_seq += 1
            cfg["client_id"] = f"rackafka-producer-{AIOKafkaProducer._client_seq}"
        self._client = KafkaClient(
            **cfg.client_kwargs(),
            client_software_version=__version__,
            allow_auto_topic_creation=True,  # as the Java client's and aiokafka's producers
        )
        self._acks = cfg["acks"]
        self._compression = CODECS[cfg["compression_type"]]
        self._key_serializer = cfg["key_serializer"]
        self._value_serializer = cfg["value_serializer"]
        self._max_batch_size = cfg["max_batch_size"]
        self._max_request_size = cfg["max_request_size"]
        self._linger = cfg["linger_ms"] / 1000
        # Sent on the wire (Produce's timeout): an int.
        self._request_timeout_ms = math.ceil(cfg["request_timeout_ms"])
        self._request_timeout = cfg["request_timeout_ms"] / 1000
        self._retry_backoff = cfg["retry_backoff_ms"] / 1000
        self._partitioner = partitioner
        self._default_partitioner = partitioner is DEFAULT_PARTITIONER
        client_rack = self._client_rack = cfg["client_rack"]
        rack_aware_partitioning = self._rack_aware = cfg["rack_aware_partitioning"]
        #: With ``client_rack="auto"``: what was decided and why (after :meth:`start`).
        self.rack_decision: RackDecision | None = None
        self._sticky = StickyPartitioner(
            client_rack if rack_aware_partitioning and client_rack != AUTO_RACK else None,
            weak_method(self._leader_rack),
        )
        self._pid_state = (
            ProducerIdState(cfg["transactional_id"], cfg["transaction_timeout_ms"])
            if cfg["enable_idempotence"]
            else None
        )
        self._txn: TransactionManager | None = None
        self._stats = ProduceStats()
        self._cluster = self._client.cluster
        self._parts: dict[str, _TopicInfo] = {}
        self._accumulator: Accumulator | None = None
        self._sender: Sender | None = None
        self._sender_task: asyncio.Task[None] | None = None
        self._sender_error: BaseException | None = None
        #: The commit or abort under way (it goes on when its caller is cancelled).
        self._txn_end: asyncio.Task[None] | None = None
        self._txn_end_commit = False
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._started = False
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the cluster, load metadata and start the sender.

        Raises:
            KafkaConnectionError: no bootstrap server could be reached.
        """
        if self._closed:
            raise ProducerClosed("the producer was stopped; create a new one")
        if self._started:
            return
        await self._client.bootstrap_cluster()
        if self._client_rack == AUTO_RACK:
            racks = [b.rack for b in self._client.cluster.brokers.values()]
            what = "keyless records use any partition" if self._rack_aware else "no rack"
            self.rack_decision = await decide_client_rack(racks, what, log)
            self._client_rack = self.rack_decision.rack
            self._sticky.rack = self._client_rack if self._rack_aware else None
        # Nothing the background tasks hold refers to the producer (weak references
        # at most), so a producer dropped without stop() is collected and warns.
        self._accumulator = Accumulator(
            max_batch_size=self._max_batch_size,
            linger=self._linger,
            # As aiokafka: a record not delivered within request_timeout_ms (after its
            # linger) fails, with the error of its last attempt.
            delivery_timeout=self._request_timeout + self._linger,
            on_batch_closed=self._sticky.on_batch_closed,
        )
        self._sender = Sender(
            self._client,
            self._accumulator,
            acks=self._acks,
            compression=self._compression,
            request_timeout_ms=self._request_timeout_ms,
            max_request_size=self._max_request_size,
            pid_state=self._pid_state,
            client_rack=self._client_rack,
            stats=self._stats,
        )
        if self._pid_state is not None and self._pid_state.transactional_id is not None:
            self._txn = TransactionManager(
                self._client,
                self._pid_state,
                request_timeout=self._request_timeout,
            )
            self._sender.txn = self._txn
        self._accumulator.connect(self._sender.wakeup, self._sender.wake_at)
        self._sender_task = self._sender.start()
        self._sender_task.add_done_callback(weak_method(self._sender_done))
        self._finalizer = weakref.finalize(
            self,
            _abandon,
            asyncio.get_running_loop(),
            self._sender,
            self._accumulator,
            self._client,
        )
        self._finalizer.atexit = False  # at exit the loop is gone: nothing to clean up
        self._started = True

    def _sender_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("the producer's sender failed: %s", exc)
            self._sender_error = exc
            if self._accumulator is not None:
                self._accumulator.error = exc
                self._accumulator.fail_all(exc)

    def _leader_rack(self, topic: str, partition: int) -> str | None:
        cluster = self._client.cluster
        leader = cluster.leader_for(TopicPartition(topic, partition))
        return cluster.rack_of(leader) if leader is not None else None

    async def flush(self) -> None:
        """Wait until every record sent so far is delivered (or failed)."""
        sender, acc = self._sender, self._accumulator
        if sender is None or acc is None:
            return
        acc.flushing += 1
        sender.wakeup()
        try:
            while (acc.has_unsent() or sender.busy) and self._sender_error is None:
                await sender.wait_progress(0.1)
        finally:
            acc.flushing -= 1

    async def stop(self) -> None:
        """Deliver the records sent so far, then close every connection."""
        if self._closed:
            return
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._txn_end is not None and not self._txn_end.done():
            await asyncio.wait([self._txn_end])  # a commit or abort under way ends first
        if self._started and self._accumulator is not None and self._sender is not None:
            self._accumulator.closing = True
            try:
                await self.flush()
            finally:
                await self._sender.close()
                self._accumulator.fail_all(ProducerClosed("the producer was stopped"))
        await self._client.close()

    def __repr__(self) -> str:
        # Never a secret: the security settings show only their kind and user name.
        return (
            f"<AIOKafkaProducer bootstrap_servers={self._client.bootstrap!r} "
            f"client_rack={self._client_rack!r} {self._client.security!r}>"
        )

    def _check_running(self) -> Accumulator:
        if self._sender_error is not None:
            raise self._sender_error
        if self._closed:
            raise ProducerClosed("the producer is stopped")
        if self._accumulator is None:
            raise IllegalOperation("the producer is not started: call start() first")
        return self._accumulator

    # -- metadata ----------------------------------------------------------------

    async def partitions_for(self, topic: str) -> set[int]:
        """The partition ids of ``topic`` (waiting for its metadata).

        Raises:
            UnknownTopicOrPartitionError: the topic is still unknown after
                ``request_timeout_ms``.
        """
        return set((await self._partitions(topic)).all_parts)

    async def _partitions(self, topic: str) -> _TopicInfo:
        cluster = self._cluster
        cached = self._parts.get(topic)
        if cached is not None and cached.version == cluster.version:
            return cached
        parts = cluster.partitions.get(topic)
        if parts is None:
            self._client.add_topics([topic])
            deadline = time.monotonic() + self._request_timeout
            backoff = self._client.retry_policy.start()
            while True:
                try:
                    await self._client.refresh_metadata()
                except KafkaError as exc:
                    log.debug("metadata refresh failed: %s", exc)
                parts = cluster.partitions.get(topic)
                if parts is not None:
                    break
                if time.monotonic() > deadline:
                    raise UnknownTopicOrPartitionError(
                        f"topic {topic!r} not in the metadata after {self._request_timeout:.3g} s"
                    )
                await asyncio.sleep(backoff.next())
        info = _TopicInfo(
            cluster.version,
            topic,
            sorted(parts),
            [p for p, meta in sorted(parts.items()) if meta.leader >= 0],
        )
        self._parts[topic] = info
        return info

    # -- sending -----------------------------------------------------------------

    async def send(
        self,
        topic: str,
        value: VT | None = None,
        key: KT | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Publish a record to a topic.

        Arguments:
            topic: the topic.
            value: the value, ``bytes`` or anything ``value_serializer`` turns into
                bytes.  ``None`` (with a key) is a tombstone.
            key: the key, ``bytes`` or anything ``key_serializer`` turns into bytes.
                Records with the same key go to the same partition (the one Kafka's
                Java client picks).
            partition: the partition; by default the partitioner picks one.
            timestamp_ms: epoch milliseconds; default now.
            headers: ``(str, bytes)`` pairs.

        Returns:
            a future of the record's :class:`~rackafka.structs.RecordMetadata`, set
            once the broker has stored it; with ``acks=0`` it is set to ``None`` once
            the record is sent (no offset is known), as aiokafka does.

        Raises:
            MessageSizeTooLargeError: the record is larger than ``max_request_size``.
            KafkaTimeoutError: no room for the record within ``request_timeout_ms``.
            UnknownTopicOrPartitionError: the topic is unknown.
        """
        acc = self._accumulator
        if acc is None or self._closed or self._sender_error is not None:
            acc = self._check_running()  # raises
        if value is None and key is None:
            raise _NeedKeyOrValue("Need at least one: key or value")
        if self._txn is not None and self._txn.state != IN_TRANSACTION:
            raise IllegalOperation("Can't send messages while not in transaction")
        info = self._parts.get(topic)
        if info is None or info.version != self._cluster.version:
            info = await self._partitions(topic)
        ks, vs = self._key_serializer, self._value_serializer
        key_bytes: Any = key if ks is None else ks(key)
        value_bytes: Any = value if vs is None else vs(value)
        if headers:
            hdrs = encode_headers(headers if type(headers) is list else list(headers))
            size = _RECORD_BASE_SIZE + len(hdrs)
        else:
            hdrs = NO_HEADERS
            size = _RECORD_BASE_SIZE
        if key_bytes is not None:
            size += len(key_bytes)
        if value_bytes is not None:
            size += len(value_bytes)
        if size > self._max_request_size:
            raise MessageSizeTooLargeError(
                f"The message is {size} bytes when serialized which is larger than the "
                "maximum request size you have configured with the max_request_size "
                "configuration"
            )
        if partition is None:
            if key_bytes is not None and self._default_partitioner:
                tp = info.by_key.get(key_bytes) if type(key_bytes) is bytes else None
                if tp is None:
                    tp = self._keyed_partition(info, key_bytes)
            else:
                partition = self._unkeyed_partition(topic, key_bytes, info)
                tp = info.tps.get(partition) or TopicPartition(topic, partition)
        else:
            tp = info.tps.get(partition)
            if tp is None:
                raise UnknownTopicOrPartitionError(f"partition {partition} of {topic!r} is unknown")
        if timestamp_ms is None:
            timestamp_ms = _time_ns() // 1_000_000
        fut = acc.append_nowait(tp, timestamp_ms, key_bytes, value_bytes, hdrs)
        if fut is None:
            fut = await acc.append(
                tp, timestamp_ms, key_bytes, value_bytes, hdrs, self._request_timeout
            )
        return fut

    def _unkeyed_partition(self, topic: str, key_bytes: Any, info: _TopicInfo) -> int:
        """The partition of a record without a key (or of any record with a partitioner
        given), and of a batch sent without a partition."""
        if not self._default_partitioner:
            return int(self._partitioner(key_bytes, info.all_parts, info.available))
        partition = self._sticky.current.get(topic)
        if partition is None:
            partition = self._sticky.partition(topic, info.all_parts, info.available)
        return partition

    @staticmethod
    def _keyed_partition(info: _TopicInfo, key_bytes: Any) -> TopicPartition:
        """The partition of a key (murmur2, as Kafka's Java client), remembered for the
        next record with the same key."""
        parts = info.all_parts
        tp = info.tps[parts[murmur2_partition(key_bytes, len(parts))]]
        if type(key_bytes) is bytes:
            by_key = info.by_key
            if len(by_key) >= _KEY_CACHE_SIZE:
                by_key.clear()
            by_key[key_bytes] = tp
        return tp

    async def send_and_wait(
        self,
        topic: str,
        value: VT | None = None,
        key: KT | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
    ) -> RecordMetadata:
        """Publish a record and wait until the broker has stored it."""
        future = await self.send(topic, value, key, partition, timestamp_ms, headers)
        return await future

    def create_batch(self) -> BatchBuilder:
        """An empty :class:`BatchBuilder` to fill and pass to :meth:`send_batch`."""
        return BatchBuilder(self._max_batch_size, self._key_serializer, self._value_serializer)

    async def send_batch(
        self, batch: BatchBuilder, topic: str, *, partition: int | None
    ) -> asyncio.Future[RecordMetadata]:
        """Queue a :class:`BatchBuilder` for ``topic``/``partition``.

        With ``partition=None`` the partitioner picks one, as for a record without a key
        (the default one: the current sticky partition, in the producer's rack when it
        has one), as aiokafka does.

        Returns:
            a future of the :class:`~rackafka.structs.RecordMetadata` of the batch
            (its first offset; ``None`` with ``acks=0``).

        Raises:
            MessageSizeTooLargeError: the batch is larger than ``max_request_size``.
        """
        acc = self._check_running()
        if self._txn is not None and self._txn.state != IN_TRANSACTION:
            raise IllegalOperation("Can't send messages while not in transaction")
        info = await self._partitions(topic)
        if partition is None:
            partition = self._unkeyed_partition(topic, None, info)
        elif partition not in info.tps:
            raise UnknownTopicOrPartitionError(f"partition {partition} of {topic!r} is unknown")
        if batch.size() > self._max_request_size:
            raise MessageSizeTooLargeError(
                f"The batch is {batch.size()} bytes, larger than max_request_size"
            )
        batch.close()
        return await acc.add_batch(
            TopicPartition(topic, partition),
            batch._batch,
            self._request_timeout,
            # A batch about as large as a request shares none: the sender takes the
            # batches queued before it at once, while the caller fills the next one.
            eager=batch.size() * 2 >= self._max_request_size,
        )

    @property
    def client_rack(self) -> str | None:
        """The producer's rack: as given, or what ``"auto"`` found after :meth:`start`."""
        return self._client_rack

    def send_stats(self) -> ProduceStats:
        """Counters of what was sent: records, batches, requests, retries, and the
        bytes that went to a leader in the producer's rack or another one."""
        return self._stats

    # -- transactions ------------------------------------------------------------

    def _ensure_transactional(self) -> TransactionManager:
        self._check_running()
        if self._txn is None:
            raise IllegalOperation("You need to configure transaction_id to use transactions")
        return self._txn

    async def _wait_producer_id(self) -> None:
        pid = self._pid_state
        assert pid is not None
        deadline = time.monotonic() + self._request_timeout
        while not pid.has_pid:
            self._check_running()
            if time.monotonic() > deadline:
                raise KafkaTimeoutError("no producer id from the transaction coordinator")
            await asyncio.sleep(0.005)

    async def begin_transaction(self) -> None:
        """Start a transaction: records sent until it ends belong to it.

        Raises:
            IllegalOperation: the producer has no ``transactional_id``.
            IllegalOperation: a transaction is already open.
        """
        txn = self._ensure_transactional()
        ending = self._txn_end
        if ending is not None and not ending.done():
            # A commit or abort whose caller was cancelled goes on: it ends first.
            await asyncio.shield(ending)
        await self._wait_producer_id()
        txn.begin()

    async def commit_transaction(self) -> None:
        """Deliver every record of the transaction and commit it.

        From the call on, :meth:`send` and :meth:`send_batch` raise
        :exc:`~rackafka.errors.IllegalOperation` until the next :meth:`begin_transaction`.
        Cancelling the caller does not cancel the commit: it goes on, and the next
        :meth:`begin_transaction` waits for it (as aiokafka).
        """
        await self._end_transaction(True)

    async def abort_transaction(self) -> None:
        """Deliver what was sent, then abort the transaction (its records stay invisible
        to ``read_committed`` consumers).

        As :meth:`commit_transaction`: sending is refused from the call on, and
        cancelling the caller does not cancel the abort.
        """
        await self._end_transaction(False)

    async def _end_transaction(self, commit: bool) -> None:
        txn = self._ensure_transactional()
        task = self._txn_end
        if task is None or task.done():
            txn.start_end(commit)  # raises IllegalOperation outside a transaction
            task = asyncio.get_running_loop().create_task(self._finish_transaction(txn, commit))
            task.add_done_callback(_log_transaction_end)
            self._txn_end, self._txn_end_commit = task, commit
        elif self._txn_end_commit != commit:
            raise IllegalOperation(
                "Invalid state transition: the transaction is being "
                f"{'committed' if self._txn_end_commit else 'aborted'}"
            )
        await asyncio.shield(task)

    async def _finish_transaction(self, txn: TransactionManager, commit: bool) -> None:
        try:
            await self.flush()
            if commit:
                self._check_running()
            await txn.end(commit)
        except BaseException:
            txn.end_failed()
            raise

    def transaction(self) -> contextlib.AbstractAsyncContextManager[None]:
        """``async with producer.transaction():`` begins a transaction, commits it on
        success and aborts it when the block raises."""
        return self._transaction()

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        await self.begin_transaction()
        try:
            yield
        except BaseException:
            if self._txn is not None and self._txn.state == IN_TRANSACTION:
                await self.abort_transaction()
            raise
        await self.commit_transaction()

    async def send_offsets_to_transaction(
        self, offsets: dict[TopicPartition, int | OffsetAndMetadata], group_id: str
    ) -> None:
        """Commit consumer ``offsets`` of ``group_id`` as part of the transaction.

        Raises:
            IllegalOperation: no transaction is open.
            ValueError: ``group_id`` is empty.
        """
        txn = self._ensure_transactional()
        if txn.state != IN_TRANSACTION:
            raise IllegalOperation("Not in the middle of a transaction")
        if not group_id or not isinstance(group_id, str):
            raise ValueError(group_id)
        if not offsets or not isinstance(offsets, dict):
            raise ValueError(offsets)  # as aiokafka
        checked: dict[TopicPartition, int | OffsetAndMetadata] = {}
        for tp, value in offsets.items():
            try:
                key = as_topic_partition(tp)
            except TypeError:
                raise TypeError(f"Key should be TopicPartition instance, not {tp!r}") from None
            checked[key] = _offset_and_metadata(value)
        await txn.send_offsets(checked, group_id)
