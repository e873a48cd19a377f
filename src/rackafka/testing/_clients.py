"""confluent-kafka clients used by the test clusters to create topics, read metadata and produce.

These are test fixtures' helpers, not part of rackafka's consumer: they use ``confluent_kafka``
(librdkafka) so that the data our consumer reads was written by an independent client.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from ._librdkafka import _import_confluent_kafka

__all__ = [
    "COMPRESSION_TYPES",
    "ClientPool",
    "ProduceError",
    "ProduceResult",
    "TransactionResult",
    "TransactionalProduceResult",
    "default_value",
]

log = logging.getLogger("rackafka.testing")
client_log = logging.getLogger("rackafka.testing.librdkafka")

COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")

KeyArg = Union[None, bytes, str, Callable[[int], Union[bytes, str, None]]]
ValueArg = Union[None, bytes, str, Callable[[int], Union[bytes, str, None]]]
HeadersArg = Union[
    None,
    Sequence[tuple[str, Union[bytes, str, None]]],
    Callable[[int], Union[Sequence[tuple[str, Union[bytes, str, None]]], None]],
]
PartitionArg = Union[None, int, Literal["spread"]]

_FILLER = b"abcdefghijklmnopqrstuvwxyz0123456789"


def default_value(index: int, size: int) -> bytes:
    """The value :meth:`produce` writes for message ``index`` when no ``value`` is given.

    It starts with the decimal index and ``|`` (so a consumer can check order and
    completeness), padded to exactly ``size`` bytes with a repeating alphabet. With a ``size``
    smaller than the prefix, the prefix is truncated.
    """
    if size < 0:
        raise ValueError(f"value_size must be >= 0, got {size}")
    prefix = b"%d|" % index
    if len(prefix) >= size:
        return prefix[:size]
    pad = size - len(prefix)
    reps = pad // len(_FILLER) + 1
    return prefix + (_FILLER * reps)[:pad]


def record_at(
    index: int, *, value_size: int, key: KeyArg, value: ValueArg, headers: HeadersArg
) -> tuple[bytes | str | None, bytes | str | None, Any]:
    """Key, value and headers of record ``index`` of a produce call: each argument is a
    constant or a function of the index; no value means :func:`default_value`."""
    k = key(index) if callable(key) else key
    if value is None:
        v: bytes | str | None = default_value(index, value_size)
    elif callable(value):
        v = value(index)
    else:
        v = value
    return k, v, headers(index) if callable(headers) else headers


class ProduceError(RuntimeError):
    """Records could not be delivered to the test cluster.

    Attributes:
        missing: the numbers (0-based in the call) of the records that were not delivered,
            when known.
    """

    def __init__(self, message: str, missing: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.missing: list[int] = sorted(missing)


#: Without a ``timeout``, a produce call of the test clusters gives up when no record was
#: sent or acknowledged for this many seconds: however many records it writes, and however
#: slow the machine, it waits as long as it makes progress.
STALL_SECONDS = 60.0


def delivery_timeout(count: int, value_size: int = 100) -> float:
    """Seconds to wait for ``count`` records of ``value_size`` bytes to be acknowledged:
    a minute, plus 1 s per 10,000 records and per 10 MB (generous for a slow 2-core
    machine, which writes well over 50,000 small records a second). The default time limit
    of each step of :meth:`~rackafka.testing.EmbeddedCluster.produce_transactional`."""
    return 60.0 + count / 10_000 + count * max(value_size, 0) / 10_000_000


def summarize_indexes(indexes: Iterable[int], limit: int = 8) -> str:
    """``"3 records: 0-1, 7"``: sorted record numbers as ranges, at most ``limit`` shown."""
    ordered = sorted(set(indexes))
    ranges: list[tuple[int, int]] = []
    for i in ordered:
        if ranges and i == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], i)
        else:
            ranges.append((i, i))
    shown = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in ranges[:limit])
    more = f", ... ({len(ranges) - limit} more ranges)" if len(ranges) > limit else ""
    return f"{len(ordered)} record(s): {shown}{more}"


def missing_message(
    topic: str,
    count: int,
    missing: Sequence[int],
    why: str,
    partition_of: Callable[[int], int | None],
    first_error: object | None = None,
) -> str:
    """Why a produce call failed: which records (by number, and how many per partition)."""
    per_partition: dict[int | None, int] = {}
    for i in missing:
        p = partition_of(i)
        per_partition[p] = per_partition.get(p, 0) + 1
    where = ", ".join(
        f"partition {p}: {n}"
        for p, n in sorted(per_partition.items(), key=lambda x: x[0] or -1)
        if p is not None
    )
    return (
        f"{len(missing)} of {count} record(s) to {topic!r} not delivered{why}; missing "
        f"{summarize_indexes(missing)}"
        + (f" ({where})" if where else "")
        + (f"; first error: {first_error}" if first_error is not None else "")
    )


@dataclass
class ProduceResult:
    """What :meth:`produce` wrote.

    Attributes:
        topic: the topic.
        count: number of records delivered.
        counts: records delivered per partition.
        first_offsets: offset of the first record delivered to each partition by this call.
        last_offsets: offset of the last record delivered to each partition by this call.
    """

    topic: str
    count: int = 0
    counts: dict[int, int] = field(default_factory=dict)
    first_offsets: dict[int, int] = field(default_factory=dict)
    last_offsets: dict[int, int] = field(default_factory=dict)

    def _record(self, partition: int, offset: int) -> None:
        self.count += 1
        self.counts[partition] = self.counts.get(partition, 0) + 1
        if offset >= 0:
            first = self.first_offsets.get(partition)
            if first is None or offset < first:
                self.first_offsets[partition] = offset
            last = self.last_offsets.get(partition)
            if last is None or offset > last:
                self.last_offsets[partition] = offset


@dataclass
class TransactionResult(ProduceResult):
    """One transaction written by :meth:`produce_transactional`.

    Attributes:
        committed: True for a committed transaction, False for an aborted one.
        first_index: sequence number (as in :func:`default_value`) of its first record.
        marker_offsets: per partition, the offset of the transaction's COMMIT/ABORT control
            record (the offset right after its last record, as nothing else wrote to the
            partition while the transaction was open).
    """

    committed: bool = True
    first_index: int = 0
    marker_offsets: dict[int, int] = field(default_factory=dict)


@dataclass
class TransactionalProduceResult:
    """What :meth:`produce_transactional` wrote, one entry per transaction in order."""

    topic: str
    transactions: list[TransactionResult]

    @property
    def committed_count(self) -> int:
        """Records in committed transactions."""
        return sum(t.count for t in self.transactions if t.committed)

    @property
    def aborted_count(self) -> int:
        """Records in aborted transactions."""
        return sum(t.count for t in self.transactions if not t.committed)

    def aborted_ranges(self, partition: int) -> list[tuple[int, int]]:
        """(first, last) offsets of the aborted records in ``partition``, in log order."""
        return [
            (t.first_offsets[partition], t.last_offsets[partition])
            for t in self.transactions
            if not t.committed and partition in t.first_offsets
        ]

    def committed_offsets(self, partition: int) -> list[int]:
        """Offsets of the committed (data) records in ``partition``."""
        out: list[int] = []
        for t in self.transactions:
            if t.committed and partition in t.first_offsets:
                out.extend(range(t.first_offsets[partition], t.last_offsets[partition] + 1))
        return out

    def marker_offsets(self, partition: int) -> list[int]:
        """Offsets of the control (COMMIT/ABORT marker) records in ``partition``."""
        return [
            t.marker_offsets[partition] for t in self.transactions if partition in t.marker_offsets
        ]


def _check_compression(compression: str) -> str:
    if compression not in COMPRESSION_TYPES:
        raise ValueError(
            f"compression must be one of {', '.join(COMPRESSION_TYPES)}, got {compression!r}"
        )
    return compression


class ClientPool:
    """confluent-kafka clients bound to one cluster, created lazily and closed together."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._ck = _import_confluent_kafka()
        self._lock = threading.RLock()
        self._admin: Any = None
        self._producers: dict[tuple[Any, ...], Any] = {}
        self._closed = False

    def _base_conf(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": "rackafka-testing",
            "logger": client_log,
            "log.connection.close": False,
        }

    def admin(self) -> Any:
        """A shared ``confluent_kafka.admin.AdminClient``."""
        with self._lock:
            self._check_open()
            if self._admin is None:
                admin_mod = __import__("confluent_kafka.admin", fromlist=["AdminClient"])
                self._admin = admin_mod.AdminClient(self._base_conf())
            return self._admin

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the cluster's clients were closed")

    def metadata(self, timeout: float = 30.0) -> Any:
        """Cluster metadata (all topics) as seen by ``AdminClient.list_topics``."""
        return self.admin().list_topics(timeout=timeout)

    def describe_cluster(self, timeout: float = 30.0) -> Any:
        """``AdminClient.describe_cluster`` result (nodes with racks, controller).

        Asked again (at most 3 times) when librdkafka fails it with ``_DESTROY_BROKER``: it
        retires its bootstrap broker handles once metadata names the brokers, failing a
        request in flight on one (seen right after a cluster's start)."""
        for attempt in range(3):
            future = self.admin().describe_cluster(request_timeout=timeout)
            try:
                return future.result()
            except Exception as exc:
                err = exc.args[0] if exc.args else None
                name = getattr(err, "name", None)
                if attempt == 2 or not callable(name) or name() != "_DESTROY_BROKER":
                    raise
                time.sleep(0.2)
        raise AssertionError("unreachable")

    def producer(self, conf: dict[str, Any]) -> Any:
        """A cached producer for this configuration."""
        key = tuple(sorted((k, str(v)) for k, v in conf.items()))
        with self._lock:
            self._check_open()
            producer = self._producers.get(key)
            if producer is None:
                full = self._base_conf()
                full.update(conf)
                producer = self._ck.Producer(full)
                self._producers[key] = producer
            return producer

    def reset_admin(self) -> None:
        """Drop the admin client: the next :meth:`admin` makes a new one (fresh connections
        and API versions, e.g. after brokers restarted)."""
        with self._lock:
            self._admin = None

    def close(self) -> None:
        """Drop all clients; queued records that were never delivered are purged."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            producers = list(self._producers.values())
            self._producers.clear()
            self._admin = None
        for producer in producers:
            try:
                producer.purge(in_queue=True, in_flight=True, blocking=False)
                producer.poll(0)
            except Exception:  # pragma: no cover - best effort during teardown
                log.debug("purging a test producer failed", exc_info=True)
        del producers

    # -- producing -------------------------------------------------------------------------
    @staticmethod
    def producer_conf(
        *,
        compression: str,
        batch_size: int | None,
        linger_ms: float | None,
        idempotent: bool,
    ) -> dict[str, Any]:
        """Producer configuration for :meth:`produce`."""
        conf: dict[str, Any] = {
            "acks": "all",
            "compression.type": _check_compression(compression),
            "enable.idempotence": bool(idempotent),
            "linger.ms": 5 if linger_ms is None else linger_ms,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
            "message.timeout.ms": 60_000,
        }
        if batch_size is not None:
            if batch_size < 1:
                raise ValueError(f"batch_size must be >= 1, got {batch_size}")
            conf["batch.size"] = batch_size
            conf["batch.num.messages"] = 1_000_000
            conf["message.max.bytes"] = max(1_000_000, batch_size + 65_536)
            if linger_ms is None:
                conf["linger.ms"] = 50
        return conf

    def partition_count(self, producer: Any, topic: str, timeout: float) -> int:
        """Number of partitions of ``topic`` (asks the cluster, which may auto-create it)."""
        deadline = time.monotonic() + timeout
        while True:
            md = producer.list_topics(topic, timeout=max(0.1, deadline - time.monotonic()))
            tmd = md.topics.get(topic)
            if tmd is not None and tmd.error is None and tmd.partitions:
                return len(tmd.partitions)
            if time.monotonic() >= deadline:
                err = None if tmd is None else tmd.error
                raise ProduceError(f"topic {topic!r} has no partitions in metadata: {err}")
            time.sleep(0.05)

    def produce_into(
        self,
        producer: Any,
        result: ProduceResult,
        topic: str,
        start_index: int,
        count: int,
        *,
        value_size: int,
        key: KeyArg,
        value: ValueArg,
        headers: HeadersArg,
        partition: PartitionArg,
        partitions: int,
        timestamp_ms: int | None,
        timeout: float | None,
    ) -> None:
        """Produce ``count`` records numbered from ``start_index``, flush, check deliveries.

        ``timeout``: seconds to wait for the deliveries (None: as long as some record is
        acknowledged every :data:`STALL_SECONDS`).
        """
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        errors: list[str] = []
        delivered = bytearray(count)
        acknowledged = [0]

        def on_delivery(n: int, err: Any, msg: Any) -> None:
            acknowledged[0] += 1
            if err is not None:
                errors.append(str(err))
            else:
                delivered[n] = 1
                result._record(msg.partition(), msg.offset())

        spread = partition == "spread"
        kwargs: dict[str, Any] = {}
        if timestamp_ms is not None:
            kwargs["timestamp"] = int(timestamp_ms)
        for n in range(count):
            i = start_index + n
            k, v, h = record_at(i, value_size=value_size, key=key, value=value, headers=headers)
            kwargs["on_delivery"] = functools.partial(on_delivery, n)
            kwargs["key"] = k
            kwargs["value"] = v
            if h is not None:
                kwargs["headers"] = list(h)
            else:
                kwargs.pop("headers", None)
            if spread:
                kwargs["partition"] = i % partitions
            elif isinstance(partition, int):
                kwargs["partition"] = partition
            while True:
                try:
                    producer.produce(topic, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.05)
            if n % 1000 == 999:
                producer.poll(0)
        if timeout is not None:
            remaining = producer.flush(timeout)
            why = f" within {timeout:.1f}s"
        else:
            # Wait while deliveries progress: a slow machine is not a failure, a stall is.
            last, since = -1, time.monotonic()
            while (remaining := producer.flush(1.0)) and time.monotonic() - since < STALL_SECONDS:
                if acknowledged[0] != last:
                    last, since = acknowledged[0], time.monotonic()
            why = f" (none acknowledged for {STALL_SECONDS:.0f}s)"
        first_error = errors[0] if errors else None  # not the purge's own "purged" errors
        if remaining:
            producer.purge(in_queue=True, in_flight=True)
            producer.flush(1.0)
        if remaining or errors:
            missing = [start_index + n for n in range(count) if not delivered[n]]

            def partition_of(i: int) -> int | None:
                if spread:
                    return i % partitions
                return partition if isinstance(partition, int) else None

            raise ProduceError(
                missing_message(
                    topic, count, missing, why if remaining else "", partition_of,
                    first_error if remaining else errors[0],
                ),
                missing,
            )  # fmt: skip

    def transactional_producer(self, compression: str, transactional_id: str | None) -> Any:
        """A new idempotent ``confluent_kafka.Producer`` with a ``transactional.id`` (a
        fresh one unless given), not shared with other calls."""
        conf = self._base_conf()
        conf.update(
            self.producer_conf(
                compression=compression, batch_size=None, linger_ms=None, idempotent=True
            )
        )
        conf["transactional.id"] = transactional_id or f"rackafka-testing-{uuid.uuid4().hex}"
        return self._ck.Producer(conf)

    @property
    def kafka_exception(self) -> type[Exception]:
        """``confluent_kafka.KafkaException``."""
        exc: type[Exception] = self._ck.KafkaException
        return exc


def _check_partition_arg(partition: PartitionArg) -> None:
    if partition is None or partition == "spread":
        return
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        raise ValueError(f"partition must be None, 'spread' or an int >= 0, got {partition!r}")
