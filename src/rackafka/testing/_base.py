"""What the test clusters share: broker and partition records, the client helpers, the
broker layout and metadata look-ups, and the context-manager protocol."""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import socket
import struct
import time
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, TypeVar

from ._clients import (
    ClientPool,
    HeadersArg,
    KeyArg,
    PartitionArg,
    ProduceError,
    ProduceResult,
    TransactionalProduceResult,
    TransactionResult,
    ValueArg,
    _check_partition_arg,
    delivery_timeout,
)

log = logging.getLogger("rackafka.testing")

DEFAULT_RACKS: tuple[str, ...] = ("az-a", "az-b", "az-c")


class EmbeddedClusterError(RuntimeError):
    """A call into the mock cluster failed.

    Attributes:
        code: the librdkafka/Kafka error code returned by the mock API.
    """

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class BrokerInfo:
    """One broker of a test cluster.

    Attributes:
        node_id: the broker id (1..N).
        host: the advertised host (``127.0.0.1`` for the embedded cluster).
        port: the advertised port.
        rack: the broker's ``broker.rack``, or None.
    """

    node_id: int
    host: str
    port: int
    rack: str | None

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionInfo:
    """The state of one partition as the embedded cluster set it up.

    Attributes:
        topic: topic name.
        partition: partition id.
        leader: broker id of the leader, or -1 when leader-less.
        replicas: the replica set, in the order Metadata reports it.
        leader_epoch: the partition's current leader epoch (bumped by every leader change).
            None when unknown (a cluster the tests do not control).
        preferred_read_replica: the follower the leader names in Fetch responses
            (``preferred_read_replica``), or -1 for none.
        follower_watermarks: the (low, high) watermarks a follower serves; -1 means "the
            leader's".
    """

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    leader_epoch: int | None
    preferred_read_replica: int = -1
    follower_watermarks: tuple[int, int] = (-1, -1)


@dataclass(frozen=True)
class RequestRecord:
    """One request received by the embedded cluster while request tracking was on.

    Attributes:
        broker_id: the broker that received it.
        api_key: its Kafka API key (1 = Fetch).
        api_name: the API's name (``"Fetch"``).
        timestamp: when it was received, in seconds on :func:`time.monotonic`'s clock.
    """

    broker_id: int
    api_key: int
    api_name: str
    timestamp: float


def probe_api_versions(
    host: str, port: int, timeout: float = 5.0, client_id: str = "rackafka-testing"
) -> dict[int, tuple[int, int]]:
    """Ask a broker for its supported API versions (ApiVersions v0).

    Returns:
        API key -> (min version, max version), as the broker advertises them.

    Raises:
        OSError: the broker cannot be reached.
        EmbeddedClusterError: the answer is malformed or carries an error code.
    """
    cid = client_id.encode()
    body = struct.pack(">hhih", 18, 0, 0x5241434B, len(cid)) + cid
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        if not 6 <= size <= 1 << 20:
            raise EmbeddedClusterError(f"ApiVersions answer of implausible size {size}")
        payload = _recv_exact(sock, size)
    try:
        correlation_id, error_code, count = struct.unpack_from(">ihi", payload, 0)
        if correlation_id != 0x5241434B:
            raise EmbeddedClusterError("ApiVersions answer with a wrong correlation id")
        if error_code != 0:
            raise EmbeddedClusterError(f"ApiVersions answered error {error_code}", error_code)
        if count < 0 or 10 + 6 * count > len(payload):
            raise EmbeddedClusterError(f"ApiVersions answer holds a bad array length {count}")
        out: dict[int, tuple[int, int]] = {}
        for i in range(count):
            key, lo, hi = struct.unpack_from(">hhh", payload, 10 + 6 * i)
            out[key] = (lo, hi)
        return out
    except struct.error as exc:
        raise EmbeddedClusterError(f"truncated ApiVersions answer: {exc}") from exc


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise EmbeddedClusterError("connection closed by the broker before a full answer")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


@dataclass(frozen=True)
class _TopicRequest:
    """A ``create_topic`` call, its arguments checked (the replication factor resolved)."""

    name: str
    partitions: int
    replication_factor: int
    leaders: Sequence[int] | None
    config: Mapping[str, Any]
    timeout: float | None


_Self = TypeVar("_Self", bound="_Lifecycle")


class _Lifecycle:
    """``with`` and ``async with`` for the test clusters: :meth:`start` on entry,
    :meth:`close` on exit (in a worker thread under ``async with``)."""

    def start(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _exiting_on_error(self) -> None:
        """Called before :meth:`close` when the ``with`` block raised."""

    def __enter__(self: _Self) -> _Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None:
            self._exiting_on_error()
        self.close()

    async def __aenter__(self: _Self) -> _Self:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None:
            self._exiting_on_error()
        await asyncio.to_thread(self.close)


class _StatefulLifecycle(_Lifecycle):
    """A cluster whose ``_state`` goes ``"new"`` -> ``"running"`` -> ``"closed"``."""

    _state: str = "new"

    def _startable(self) -> bool:
        """For :meth:`start`, under the object's lock: False when it is already running;
        RuntimeError when it was closed (a closed cluster cannot be restarted)."""
        if self._state == "closed":
            raise RuntimeError(f"this {type(self).__name__} was closed; create a new one")
        return self._state != "running"

    @property
    def running(self) -> bool:
        """Whether the cluster is started and not closed."""
        return self._state == "running"


class _ClientMixin:
    """Methods shared by the test clusters that work through confluent-kafka clients."""

    _metadata_timeout: float

    def _clients(self) -> ClientPool:  # pragma: no cover - overridden
        raise NotImplementedError

    def produce(
        self,
        topic: str,
        count: int,
        *,
        value_size: int = 100,
        key: KeyArg = None,
        value: ValueArg = None,
        headers: HeadersArg = None,
        partition: PartitionArg = None,
        batch_size: int | None = None,
        compression: str = "none",
        linger_ms: float | None = None,
        timestamp_ms: int | None = None,
        idempotent: bool = False,
        timeout: float | None = None,
    ) -> ProduceResult:
        """Write ``count`` records with a ``confluent_kafka.Producer`` and wait for them.

        Each record ``i`` (0-based in this call) gets ``value(i)`` (default:
        :func:`~rackafka.testing.default_value` of ``value_size`` bytes), ``key(i)`` and
        ``headers(i)``; each of these may also be a constant.

        The mock stores every produced batch as is and a Fetch returns the single batch that
        holds the fetch offset, so ``batch_size``/``linger_ms`` set how many records one
        Fetch can return. The mock keeps at most 5 MiB per partition (older batches are
        evicted and the log start moves up).

        Arguments:
            topic: the topic (auto-created by the mock with 4 partitions if unknown).
            count: number of records.
            value_size: size of the default values.
            key: None, bytes/str, or ``key(i)``.
            value: None (default values), bytes/str, or ``value(i)``.
            headers: None, a list of ``(name, value)``, or ``headers(i)``.
            partition: None (the producer's partitioner), a partition id, or ``"spread"``
                (record ``i`` to partition ``i % partitions``).
            batch_size: the producer's ``batch.size`` in bytes.
            compression: ``"none"``, ``"gzip"``, ``"snappy"``, ``"lz4"`` or ``"zstd"``.
            linger_ms: the producer's ``linger.ms``.
            timestamp_ms: CreateTime of every record (default: now).
            idempotent: use an idempotent producer (batches carry producer id/sequence).
            timeout: seconds to wait for the deliveries (default: no total limit; the call
                gives up when no record was acknowledged for a minute, so that many records
                or a slow machine are not a failure, and a stall is).

        Returns:
            a :class:`ProduceResult` with the count and per-partition counts and offsets.

        Raises:
            ProduceError: some records were not delivered; its message and ``missing``
                say which (record numbers, and how many per partition).
        """
        _check_partition_arg(partition)
        pool = self._clients()
        producer = pool.producer(
            pool.producer_conf(
                compression=compression,
                batch_size=batch_size,
                linger_ms=linger_ms,
                idempotent=idempotent,
            )
        )
        lookup = 60.0 if timeout is None else timeout
        partitions = pool.partition_count(producer, topic, lookup) if partition == "spread" else 0
        result = ProduceResult(topic)
        pool.produce_into(
            producer, result, topic, 0, count, value_size=value_size, key=key, value=value,
            headers=headers, partition=partition, partitions=partitions,
            timestamp_ms=timestamp_ms, timeout=timeout,
        )  # fmt: skip
        return result

    async def aproduce(
        self, topic: str, count: int, *, client: str = "rackafka", **kwargs: Any
    ) -> ProduceResult:
        """:meth:`produce` inside a running event loop: the same arguments and result.

        The records are written with rackafka's own :class:`~rackafka.AIOKafkaProducer`
        on the caller's loop (``acks="all"``, batches up to ``batch_size``, 1 MB by
        default, as librdkafka's); ``client="confluent-kafka"`` writes them with the
        reference client instead, in a worker thread.
        """
        if client == "confluent-kafka":
            return await asyncio.to_thread(self.produce, topic, count, **kwargs)
        if client != "rackafka":
            raise ValueError(f"client must be 'rackafka' or 'confluent-kafka', not {client!r}")
        from ._produce import produce_with_rackafka

        call = produce_arguments(topic, count, kwargs)
        return await produce_with_rackafka(self._clients().bootstrap_servers, call)

    def produce_transactional(
        self,
        topic: str,
        transactions: Sequence[tuple[str, int]],
        *,
        value_size: int = 100,
        key: KeyArg = None,
        value: ValueArg = None,
        headers: HeadersArg = None,
        partition: PartitionArg = None,
        compression: str = "none",
        transactional_id: str | None = None,
        timeout: float | None = None,
    ) -> TransactionalProduceResult:
        """Write transactions, e.g. ``[("commit", 10), ("abort", 5), ("commit", 3)]``.

        Records are numbered across the whole call (record ``i`` gets ``value(i)``), each
        transaction's records reach the log before it commits or aborts, and the mock
        appends a COMMIT or ABORT control batch to each partition the transaction wrote.

        .. warning::
           The mock broker does not implement ``read_committed`` for Fetch: it returns no
           ``aborted_transactions`` and a last stable offset equal to the high watermark,
           so a consumer cannot tell aborted records apart from the Fetch response alone.
           The result lists the aborted offset ranges and marker offsets so that a test
           can check the records and control batches themselves.

        Returns:
            a :class:`TransactionalProduceResult` (per transaction: committed or not,
            per-partition counts, first/last offsets and control-marker offsets).
        """
        _check_partition_arg(partition)
        steps: list[tuple[bool, int]] = []
        for step in transactions:
            try:
                action, n = step
            except (TypeError, ValueError):
                raise ValueError(
                    f"each transaction must be ('commit'|'abort', count), got {step!r}"
                ) from None
            if action not in ("commit", "abort"):
                raise ValueError(f"transaction action must be 'commit' or 'abort', got {action!r}")
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"a transaction needs a record count >= 1, got {n!r}")
            steps.append((action == "commit", n))
        if timeout is None:
            timeout = delivery_timeout(sum(n for _c, n in steps), value_size)
        pool = self._clients()
        producer = pool.transactional_producer(compression, transactional_id)
        try:
            producer.init_transactions(timeout)
            partitions = (
                pool.partition_count(producer, topic, timeout) if partition == "spread" else 0
            )
            out: list[TransactionResult] = []
            index = 0
            for committed, n in steps:
                txn = TransactionResult(topic, committed=committed, first_index=index)
                producer.begin_transaction()
                # flush() inside produce_into makes every record reach the log before
                # the transaction ends; otherwise abort_transaction() would purge them.
                pool.produce_into(
                    producer, txn, topic, index, n, value_size=value_size, key=key,
                    value=value, headers=headers, partition=partition, partitions=partitions,
                    timestamp_ms=None, timeout=timeout,
                )  # fmt: skip
                if committed:
                    producer.commit_transaction(timeout)
                else:
                    producer.abort_transaction(timeout)
                txn.marker_offsets = {p: last + 1 for p, last in txn.last_offsets.items()}
                out.append(txn)
                index += n
            return TransactionalProduceResult(topic, out)
        except pool.kafka_exception as exc:
            raise ProduceError(f"transactional produce to {topic!r} failed: {exc}") from exc
        finally:
            try:
                producer.purge(in_queue=True, in_flight=True, blocking=False)
                producer.poll(0)
            except Exception:  # pragma: no cover - best effort
                log.debug("purging the transactional producer failed", exc_info=True)
            del producer

    def metadata(self) -> Any:
        """``confluent_kafka`` ``ClusterMetadata`` (brokers, topics) as a client sees it now."""
        return self._clients().metadata(self._metadata_timeout)

    def describe_cluster(self) -> Any:
        """``confluent_kafka`` ``DescribeClusterResult``: nodes with their racks, controller."""
        return self._clients().describe_cluster(self._metadata_timeout)


_PRODUCE_SIGNATURE = inspect.signature(_ClientMixin.produce)


def produce_arguments(topic: str, count: int, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a :meth:`_ClientMixin.produce` call by name, its defaults filled
    in: the one keyword list of every produce path (TypeError for an unknown keyword)."""
    bound = _PRODUCE_SIGNATURE.bind(None, topic, count, **kwargs)
    bound.apply_defaults()
    call = dict(bound.arguments)
    del call["self"]
    return call


class _BrokerLayoutMixin:
    """The brokers of a test cluster and their racks."""

    _brokers: dict[int, BrokerInfo]
    _racks: tuple[str, ...]
    _down: Set[int] = frozenset()

    def _require_running(self) -> None:  # pragma: no cover - overridden
        """Raise :class:`RuntimeError` unless the cluster is running."""
        raise NotImplementedError

    def _broker_id(self, broker_id: int) -> int:
        if isinstance(broker_id, bool) or not isinstance(broker_id, int):
            raise TypeError(f"broker id must be an int, got {broker_id!r}")
        if broker_id not in self._brokers:
            raise ValueError(
                f"no broker {broker_id} in this cluster (brokers: {sorted(self._brokers)})"
            )
        return broker_id

    @property
    def brokers(self) -> dict[int, BrokerInfo]:
        """Broker id -> :class:`BrokerInfo` (id, host, port, rack)."""
        self._require_running()
        return dict(self._brokers)

    @property
    def racks(self) -> tuple[str, ...]:
        """The rack names, in the order they were assigned."""
        return self._racks

    def rack_of(self, broker_id: int) -> str | None:
        """The rack of a broker."""
        self._require_running()
        return self._brokers[self._broker_id(broker_id)].rack

    def brokers_in_rack(self, rack: str) -> list[int]:
        """Ids of the brokers in ``rack``."""
        self._require_running()
        return [b.node_id for b in self._brokers.values() if b.rack == rack]

    @property
    def down_brokers(self) -> frozenset[int]:
        """Ids of the brokers currently down (set down with :meth:`broker_down`)."""
        return frozenset(self._down)

    # -- topics ----------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        *,
        leaders: Sequence[int] | None = None,
        config: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> list[PartitionInfo]:
        """Create a topic and place its leaders.

        The embedded cluster lets the mock choose each partition's replicas (read back from
        Metadata) and then spreads the leaders evenly: partition ``p`` is led by broker
        ``(p % brokers) + 1`` when every broker holds a replica of every partition,
        otherwise by its replica that leads the fewest partitions so far; every partition
        starts at leader epoch 1. The clusters of real brokers give an explicit replica
        assignment: partition ``p`` is led by broker ``(p % brokers) + 1`` (or
        ``leaders[p]``), followed by the next brokers in id order (so the leader is the
        preferred one, and the layout the embedded cluster's); they return once every
        partition has that leader.

        Arguments:
            name: topic name.
            partitions: number of partitions.
            replication_factor: replicas per partition (at most the number of brokers;
                default 3, or the number of brokers when there are fewer).
            leaders: explicit leader per partition (on the embedded cluster, each must be
                one of its replicas).
            config: topic configuration (``{"min.insync.replicas": 2}``); real brokers
                only: the embedded cluster's mock keeps none and refuses it (ValueError).
            timeout: seconds to wait for the topic and its leaders (default: the
                cluster's metadata timeout; 60 for :class:`KafkaCluster`).

        Returns:
            the partitions' :class:`PartitionInfo` (``leader_epoch`` is None on real
            brokers: Metadata through confluent-kafka does not give it).
        """
        replication_factor = self._checked_topic(name, partitions, replication_factor, leaders)
        return self._create_topic(
            _TopicRequest(name, partitions, replication_factor, leaders, config or {}, timeout)
        )

    def _checked_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int | None,
        leaders: Sequence[int] | None,
    ) -> int:
        """:meth:`create_topic`'s arguments checked on a running cluster; the replication
        factor (default: 3, or the number of brokers when there are fewer)."""
        self._require_running()
        return check_topic_args(name, partitions, replication_factor, leaders, len(self._brokers))

    def _create_topic(
        self, request: _TopicRequest
    ) -> list[PartitionInfo]:  # pragma: no cover - overridden
        """:meth:`create_topic` once its arguments are checked."""
        raise NotImplementedError


class _BrokerMetadataMixin(_BrokerLayoutMixin, _ClientMixin):
    """Topic and broker look-ups of the clusters of real Kafka brokers (``KafkaCluster``,
    ``ComposeCluster``), through confluent-kafka's admin client."""

    def _read_partitions(self, topic: str) -> list[PartitionInfo]:
        tmd = self._clients().admin().list_topics(topic=topic, timeout=10).topics.get(topic)
        if tmd is None or tmd.error is not None:
            return []
        return [
            PartitionInfo(
                topic, p, tmd.partitions[p].leader, tuple(tmd.partitions[p].replicas), None
            )
            for p in sorted(tmd.partitions)
        ]

    def _assigned_topic(self, request: _TopicRequest) -> tuple[Any, list[list[int]]]:
        """The ``NewTopic`` of a :meth:`create_topic` and its replica assignment: partition
        ``p`` led by ``leaders[p]`` (default: the brokers in turn), followed by the next
        brokers in id order."""
        ids = sorted(self._brokers)
        leaders = request.leaders
        lead = [self._broker_id(b) for b in leaders] if leaders is not None else None
        assignment = replica_assignment(ids, request.partitions, request.replication_factor, lead)
        admin_mod = __import__("confluent_kafka.admin", fromlist=["NewTopic"])
        topic = admin_mod.NewTopic(
            request.name,
            num_partitions=request.partitions,  # confluent-kafka 2.16 wants both
            replica_assignment=assignment,
            config={k: str(v) for k, v in request.config.items()},
        )
        return topic, assignment

    def _await_leaders(
        self, topic: str, assignment: Sequence[Sequence[int]], deadline: float, poll_s: float
    ) -> list[PartitionInfo] | None:
        """The topic's partitions once each is led by the first broker of its replica
        ``assignment``; None when ``deadline`` (monotonic) passes first."""
        while True:
            parts = self._read_partitions(topic)
            if len(parts) == len(assignment) and all(
                info.leader == assignment[info.partition][0] for info in parts
            ):
                return parts
            if time.monotonic() >= deadline:
                return None
            time.sleep(poll_s)

    def topics(self) -> list[str]:
        """Names of the cluster's topics (internal ones excluded)."""
        md = self._clients().metadata(10.0)
        return sorted(t for t in md.topics if not t.startswith("__"))

    def partition_info(self, topic: str, partition: int) -> PartitionInfo:
        """Leader and replicas of a partition from Metadata (the leader epoch is None)."""
        return self.partitions(topic)[partition]

    def partitions(self, topic: str) -> list[PartitionInfo]:
        """All partitions of a topic."""
        parts = self._read_partitions(topic)
        if not parts:
            raise KeyError(f"unknown topic {topic!r}")
        return parts

    def api_versions(self, broker_id: int | None = None) -> dict[int, tuple[int, int]]:
        """The API versions a broker advertises (ApiVersions v0): key -> (min, max)."""
        brokers = self.brokers
        broker = brokers[broker_id if broker_id is not None else min(brokers)]
        return probe_api_versions(broker.host, broker.port)


def check_layout(
    brokers: int, racks: Sequence[str] | None, *, words: bool = False
) -> tuple[str, ...]:
    """Check a cluster's broker count and rack names (ValueError/TypeError naming the
    wrong one) and return the racks; ``words``: rack names of word characters, dots and
    dashes only (they go into a properties file)."""
    if isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1:
        raise ValueError(f"brokers must be an int >= 1, got {brokers!r}")
    if isinstance(racks, str):
        raise TypeError(f"racks must be a sequence of rack names, not the string {racks!r}")
    rack_list = tuple(racks or ())
    for rack in rack_list:
        if not isinstance(rack, str) or not rack:
            raise ValueError(f"rack names must be non-empty strings, got {rack!r}")
        if words and not re.match(r"^[\w.-]+$", rack):
            raise ValueError(f"rack names must be non-empty words, got {rack!r}")
    return rack_list


def check_topic_args(
    name: str,
    partitions: int,
    replication_factor: int | None,
    leaders: Sequence[int] | None,
    brokers: int,
) -> int:
    """Check the arguments of a ``create_topic`` (ValueError naming the wrong one) and
    return the replication factor (default: 3, or ``brokers`` when there are fewer)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"topic name must be a non-empty string, got {name!r}")
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ValueError(f"partitions must be an int >= 1, got {partitions!r}")
    if replication_factor is None:
        replication_factor = min(3, brokers)
    if not 1 <= replication_factor <= brokers:
        raise ValueError(
            f"replication_factor must be 1..{brokers} (the number of brokers), "
            f"got {replication_factor!r}"
        )
    if leaders is not None and len(leaders) != partitions:
        raise ValueError(f"leaders needs one broker id per partition ({partitions})")
    return replication_factor


def replica_assignment(
    ids: Sequence[int], partitions: int, replication_factor: int, leaders: Sequence[int] | None
) -> list[list[int]]:
    """Replicas of each partition: partition ``p`` led by ``leaders[p]`` (default: the
    brokers in turn), followed by the next brokers in id order."""
    out: list[list[int]] = []
    for p in range(partitions):
        leader = leaders[p] if leaders is not None else ids[p % len(ids)]
        start = ids.index(leader)
        out.append([ids[(start + i) % len(ids)] for i in range(replication_factor)])
    return out
