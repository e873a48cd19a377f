"""An embedded multi-rack Kafka cluster for tests, built on librdkafka's mock cluster.

See ``docs/testing.rst`` for the user guide and for what the mock broker does and does not
do like a real Kafka broker.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import threading
import time
import weakref
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any

from ._api import DISCONNECT, api_key, api_name
from ._clients import (
    ClientPool,
    HeadersArg,
    KeyArg,
    PartitionArg,
    ProduceResult,
    TransactionalProduceResult,
    ValueArg,
)
from ._librdkafka import Librdkafka, load_librdkafka, mock_clock_kind
from .replica_selector import preferred_read_replica

__all__ = [
    "DISCONNECT",
    "BrokerInfo",
    "EmbeddedCluster",
    "EmbeddedClusterError",
    "PartitionInfo",
    "RequestRecord",
    "probe_api_versions",
]

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


#: Group API versions the mock's handlers parse correctly (it advertises more): JoinGroup,
#: SyncGroup, Heartbeat, LeaveGroup.  Read from librdkafka 2.16's mock handlers, which
#: read array counts as int32 in flexible versions and LeaveGroup in its v0-2 layout.
MOCK_PARSED_GROUP_VERSIONS: dict[int, tuple[int, int]] = {
    11: (0, 5),
    14: (0, 3),
    12: (0, 3),
    13: (0, 2),
}


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


def _clock_offset() -> float:
    """Seconds to add to a librdkafka ``rd_clock()`` reading to get ``time.monotonic()``."""
    kind = mock_clock_kind()
    if kind == "wall":  # pragma: no cover - macOS
        return time.monotonic() - time.time()
    if kind == "perf_counter":  # pragma: no cover - Windows
        return time.monotonic() - time.perf_counter()
    return 0.0


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


class _Nudger:
    """Wakes the mock cluster's thread when a control call waits on it for too long.

    librdkafka's mock thread can miss the wake-up of a control operation that arrives while
    it is finishing a loop iteration (about one call in ten when calls come back to back);
    the operation then waits for the thread's 1 s poll timeout. A TCP connect to a broker's
    listener wakes the thread, so a helper thread connects once a call has waited 5 ms.
    """

    def __init__(self, handles: _Handles) -> None:
        self._handles = weakref.ref(handles)
        self._cv = threading.Condition()
        self._pending = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> None:
        with self._cv:
            self._pending += 1
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="rackafka-mock-nudger", daemon=True
                )
                self._thread.start()
            self._cv.notify()

    def __exit__(self, *exc: object) -> None:
        with self._cv:
            self._pending -= 1

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._pending == 0 and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                self._cv.wait(0.005)
                if self._closed:
                    return
                # A call still pending after 5 ms is most likely stalled; a spurious
                # connect is harmless.
                poke = self._pending > 0
            if poke:
                self._poke()

    def _poke(self) -> None:
        handles = self._handles()
        if handles is None:
            return
        for node_id, address in list(handles.addresses.items()):
            if node_id in handles.down:
                continue
            try:
                socket.create_connection(address, timeout=0.5).close()
                return
            except OSError:
                continue


class _Handles:
    """The native handles and clients of one cluster; destroyed exactly once.

    Kept apart from :class:`EmbeddedCluster` so that a ``weakref.finalize`` can destroy
    them (at garbage collection or interpreter exit) without referencing the cluster.
    """

    def __init__(self, lib: Librdkafka) -> None:
        self.lib = lib
        self.rk = 0
        self.mc = 0
        self.clients: ClientPool | None = None
        self.addresses: dict[int, tuple[str, int]] = {}
        self.down: set[int] = set()
        self.nudger = _Nudger(self)
        self._lock = threading.Lock()

    def destroy(self) -> None:
        with self._lock:
            clients, self.clients = self.clients, None
            mc, self.mc = self.mc, 0
            rk, self.rk = self.rk, 0
        # Clients first, so that none of them is left talking to brokers that vanish.
        if clients is not None:
            clients.close()
        if mc:
            with self.nudger:  # the terminate operation can stall like any control call
                self.lib.cluster_destroy(mc)
        self.nudger.close()
        if rk:
            self.lib.destroy_handle(rk)


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
        return self._clients().produce(
            topic, count, value_size=value_size, key=key, value=value, headers=headers,
            partition=partition, batch_size=batch_size, compression=compression,
            linger_ms=linger_ms, timestamp_ms=timestamp_ms, idempotent=idempotent,
            timeout=timeout,
        )  # fmt: skip

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

        return await produce_with_rackafka(
            self._clients().bootstrap_servers, topic, count, **kwargs
        )

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
        return self._clients().produce_transactional(
            topic, transactions, value_size=value_size, key=key, value=value,
            headers=headers, partition=partition, compression=compression,
            transactional_id=transactional_id, timeout=timeout,
        )  # fmt: skip

    def metadata(self) -> Any:
        """``confluent_kafka`` ``ClusterMetadata`` (brokers, topics) as a client sees it now."""
        return self._clients().metadata(self._metadata_timeout)

    def describe_cluster(self) -> Any:
        """``confluent_kafka`` ``DescribeClusterResult``: nodes with their racks, controller."""
        return self._clients().describe_cluster(self._metadata_timeout)


class _BrokerMetadataMixin(_ClientMixin):
    """Topic and broker look-ups of the clusters of real Kafka brokers (``KafkaCluster``,
    ``ComposeCluster``), through confluent-kafka's admin client."""

    @property
    def brokers(self) -> dict[int, BrokerInfo]:  # pragma: no cover - overridden
        raise NotImplementedError

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


class EmbeddedCluster(_ClientMixin):
    """An in-process Kafka cluster of ``brokers`` brokers spread over ``racks``.

    The brokers are librdkafka's mock brokers (from the ``confluent-kafka`` package), listening
    on ``127.0.0.1`` with ids ``1..brokers``; broker ``i + 1`` sits in rack
    ``racks[i % len(racks)]``. Any Kafka client can connect to :attr:`bootstrap_servers`.
    The methods set up topics and data and inject faults: leader moves, preferred read
    replicas (KIP-392), lagging followers, brokers going down, latency, request errors, old
    API versions, and they record which broker received which request.

    Use it as a context manager (``with`` or ``async with``) or call :meth:`start` and
    :meth:`close`. It is also closed at garbage collection and at interpreter exit.

    Arguments:
        brokers: number of brokers (>= 1).
        racks: rack names assigned round-robin to the brokers; None or ``()`` for no racks.
        group_initial_rebalance_delay_ms: the coordinator's delay before the first rebalance
            of a new group (Kafka's ``group.initial.rebalance.delay.ms``; the mock's own
            default is 3000).
        metadata_timeout: seconds to wait for the cluster's metadata in :meth:`create_topic`.
        security_protocol: ``PLAINTEXT`` (default) or ``SSL``, ``SASL_PLAINTEXT``,
            ``SASL_SSL``: clients then reach the brokers through a
            :class:`~rackafka.testing.SecureFront` (TLS with a test CA, SASL as a broker
            does it) and :attr:`bootstrap_servers` names the front; :attr:`front` gives its
            CA file and ready client options.
        sasl_mechanisms: the SASL mechanisms the front enables (default: PLAIN, SCRAM-SHA-256,
            SCRAM-SHA-512, OAUTHBEARER).
        users: ``{name: password}`` of PLAIN and SCRAM users.
        session_lifetime_ms: the SASL session lifetime (KIP-368) the front grants.
        require_client_cert: mutual TLS.
        oauth_validator: ``validator(token, extensions) -> bool`` for OAUTHBEARER.
        replica_selector: ``"rack-aware"``: the brokers select a preferred read replica
            for each client by the ``rack_id`` of its Fetch requests, as Kafka's
            ``RackAwareReplicaSelector`` does, so consumers in different racks each read
            their own rack's replica (KIP-392). Clients then connect through a
            :class:`~rackafka.testing.SecureFront` that plays the selector (PLAINTEXT
            unless ``security_protocol`` says otherwise); :attr:`front` ``.stats`` counts
            the bytes each broker served to each client rack. Do not combine it with
            :meth:`emulate_rack_aware_selector` or :meth:`set_preferred_read_replica`,
            which set one hint for every client.

    The mock brokers answer every look-up by timestamp (``offsets_for_times``, ListOffsets
    with a timestamp) with "no such record"; a cluster with a front (``security_protocol``
    other than PLAINTEXT, or ``replica_selector``) answers them from the records, as a
    broker's time index does.

    Raises:
        ConfluentKafkaMissingError: (an :class:`ImportError`) confluent-kafka is not installed.
    """

    supports_fault_injection = True

    def __init__(
        self,
        brokers: int = 3,
        racks: Sequence[str] | None = DEFAULT_RACKS,
        *,
        group_initial_rebalance_delay_ms: int = 0,
        metadata_timeout: float = 30.0,
        security_protocol: str = "PLAINTEXT",
        sasl_mechanisms: Sequence[str] | None = None,
        users: dict[str, str] | None = None,
        session_lifetime_ms: int | None = None,
        require_client_cert: bool = False,
        oauth_validator: Any = None,
        replica_selector: str | None = None,
    ) -> None:
        if isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1:
            raise ValueError(f"brokers must be an int >= 1, got {brokers!r}")
        if isinstance(racks, str):
            raise TypeError(f"racks must be a sequence of rack names, not the string {racks!r}")
        rack_list = tuple(racks or ())
        for rack in rack_list:
            if not isinstance(rack, str) or not rack:
                raise ValueError(f"rack names must be non-empty strings, got {rack!r}")
        if group_initial_rebalance_delay_ms < 0:
            raise ValueError("group_initial_rebalance_delay_ms must be >= 0")
        self._broker_count = brokers
        self._racks = rack_list
        self._rebalance_delay_ms = group_initial_rebalance_delay_ms
        self._metadata_timeout = metadata_timeout
        self._lib = load_librdkafka()
        self._handles = _Handles(self._lib)
        self._finalizer = weakref.finalize(self, self._handles.destroy)
        self._lock = threading.RLock()
        self._state = "new"
        self._bootstrap = ""
        self._brokers: dict[int, BrokerInfo] = {}
        self._down = self._handles.down
        self._partitions: dict[str, list[PartitionInfo]] = {}
        self._selector: tuple[str, frozenset[str] | None, bool] | None = None
        self._original_versions: dict[int, tuple[int, int]] = {}
        self._front_options: dict[str, Any] | None = None
        #: ``"rack-aware"`` when the brokers select replicas per client rack, else ``None``.
        self.replica_selector = replica_selector
        if replica_selector is not None and replica_selector != "rack-aware":
            raise ValueError(
                f"replica_selector must be 'rack-aware' or None, not {replica_selector!r}"
            )
        if security_protocol != "PLAINTEXT" or replica_selector is not None:
            if security_protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
                raise ValueError(f"unknown security_protocol {security_protocol!r}")
            self._front_options = {
                "replica_selector": replica_selector,
                "security_protocol": security_protocol,
                "sasl_mechanisms": sasl_mechanisms,
                "users": users,
                "session_lifetime_ms": session_lifetime_ms,
                "require_client_cert": require_client_cert,
                "oauth_validator": oauth_validator,
            }
        self._front: Any = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> EmbeddedCluster:
        """Start the brokers (does nothing when already running).

        Raises:
            RuntimeError: the cluster was closed; a closed cluster cannot be restarted.
        """
        with self._lock:
            if self._state == "running":
                return self
            if self._state == "closed":
                raise RuntimeError("this EmbeddedCluster was closed; create a new one")
            handles = self._handles
            try:
                # log_level 4: hide the notice that the hosting handle has no bootstrap servers.
                handles.rk = self._lib.new_producer_handle({"log_level": "4"})
                handles.mc = self._lib.cluster_new(handles.rk, self._broker_count)
                self._bootstrap = self._lib.bootstraps(handles.mc)
                addresses = self._bootstrap.split(",")
                if len(addresses) != self._broker_count:
                    raise EmbeddedClusterError(
                        f"mock cluster reported {len(addresses)} listeners for "
                        f"{self._broker_count} brokers: {self._bootstrap!r}"
                    )
                for index, address in enumerate(addresses):
                    host, _, port_text = address.rpartition(":")
                    handles.addresses[index + 1] = (host, int(port_text))
                for node_id, (host, port) in handles.addresses.items():
                    rack = self._racks[(node_id - 1) % len(self._racks)] if self._racks else None
                    if rack is not None:
                        self._check(
                            self._call(
                                "rd_kafka_mock_broker_set_rack", handles.mc, node_id, rack.encode()
                            ),
                            f"setting the rack of broker {node_id}",
                        )
                    self._brokers[node_id] = BrokerInfo(node_id, host, port, rack)
                if self._lib.has("rd_kafka_mock_set_controller_id"):
                    self._call_void("rd_kafka_mock_set_controller_id", handles.mc, 1)
                self._call_void(
                    "rd_kafka_mock_group_initial_rebalance_delay_ms",
                    handles.mc,
                    self._rebalance_delay_ms,
                )
                # The mock advertises group API versions its handlers do not parse
                # (flexible array counts, LeaveGroup v3+ member batches): advertise only
                # the ones they do, as an older broker would.
                for key, (lo, hi) in MOCK_PARSED_GROUP_VERSIONS.items():
                    self._call("rd_kafka_mock_set_apiversion", handles.mc, key, lo, hi)
                handles.clients = ClientPool(self._bootstrap)
                if self._front_options is not None:
                    from rackafka.testing.secure_front import SecureFront

                    self._front = SecureFront(
                        {n: (b.host, b.port) for n, b in self._brokers.items()},
                        racks={n: b.rack for n, b in self._brokers.items()},
                        down_brokers=self._down,
                        **self._front_options,
                    ).start()
            except BaseException:
                self._state = "closed"
                self._finalizer()
                raise
            self._state = "running"
            log.debug("embedded cluster up: %s", self._bootstrap)
            return self

    def close(self) -> None:
        """Stop the brokers and free everything; safe to call more than once."""
        with self._lock:
            self._state = "closed"
        front, self._front = self._front, None
        if front is not None:
            front.close()
        self._finalizer()

    stop = close

    @property
    def running(self) -> bool:
        """Whether the cluster is started and not closed."""
        return self._state == "running"

    def __enter__(self) -> EmbeddedCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> EmbeddedCluster:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.close)

    def __repr__(self) -> str:
        return (
            f"<EmbeddedCluster {self._state} brokers={self._broker_count} "
            f"racks={list(self._racks)} bootstrap={self._bootstrap!r}>"
        )

    # -- internals -------------------------------------------------------------------------
    def _mc(self) -> int:
        if self._state != "running" or not self._handles.mc:
            raise RuntimeError(
                "the EmbeddedCluster is not running: call start() or use it as a context manager"
            )
        return self._handles.mc

    def _clients(self) -> ClientPool:
        self._mc()
        clients = self._handles.clients
        if clients is None:
            raise RuntimeError("the EmbeddedCluster is not running")
        return clients

    def _call(self, name: str, *args: Any) -> int:
        with self._handles.nudger:
            return self._lib.call(name, *args)

    def _call_void(self, name: str, *args: Any) -> None:
        with self._handles.nudger:
            self._lib.call_void(name, *args)

    def _check(self, err: int, what: str) -> None:
        if err:
            raise EmbeddedClusterError(
                f"{what} failed: {self._lib.err2name(err)}: {self._lib.err2str(err)}", err
            )

    def _broker_id(self, broker_id: int) -> int:
        if isinstance(broker_id, bool) or not isinstance(broker_id, int):
            raise TypeError(f"broker id must be an int, got {broker_id!r}")
        if broker_id not in self._brokers:
            raise ValueError(
                f"no broker {broker_id} in this cluster (brokers: {sorted(self._brokers)})"
            )
        return broker_id

    def _partition(self, topic: str, partition: int) -> PartitionInfo:
        parts = self._partitions.get(topic)
        if parts is None:
            parts = self._learn_topic(topic)
        if not isinstance(partition, int) or not 0 <= partition < len(parts):
            raise ValueError(
                f"topic {topic!r} has partitions 0..{len(parts) - 1}, not {partition!r}"
            )
        return parts[partition]

    def _set_partition(self, info: PartitionInfo) -> None:
        self._partitions[info.topic][info.partition] = info

    def _learn_topic(self, topic: str) -> list[PartitionInfo]:
        """Cache a topic that was created outside :meth:`create_topic` (auto-creation)."""
        tmd = self._clients().metadata(self._metadata_timeout).topics.get(topic)
        if tmd is None or tmd.error is not None or not tmd.partitions:
            raise KeyError(f"unknown topic {topic!r}")
        parts = [
            PartitionInfo(
                topic,
                p,
                tmd.partitions[p].leader,
                tuple(tmd.partitions[p].replicas),
                # A topic created by the mock itself starts at epoch 0.
                0,
            )
            for p in sorted(tmd.partitions)
        ]
        self._partitions[topic] = parts
        return parts

    # -- cluster layout --------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:port,..."`` listing every broker, in broker-id order (the
        :attr:`front`'s listeners when the cluster is secured)."""
        self._mc()
        if self._front is not None:
            return str(self._front.bootstrap_servers)
        return self._bootstrap

    @property
    def plaintext_bootstrap_servers(self) -> str:
        """The brokers themselves, without the TLS/SASL front."""
        self._mc()
        return self._bootstrap

    @property
    def front(self) -> Any:
        """The :class:`~rackafka.testing.SecureFront` of a secured cluster, else ``None``."""
        return self._front

    @property
    def brokers(self) -> dict[int, BrokerInfo]:
        """Broker id -> :class:`BrokerInfo` (id, host, port, rack)."""
        self._mc()
        return dict(self._brokers)

    @property
    def racks(self) -> tuple[str, ...]:
        """The rack names, in the order they were assigned."""
        return self._racks

    def rack_of(self, broker_id: int) -> str | None:
        """The rack of a broker."""
        self._mc()
        return self._brokers[self._broker_id(broker_id)].rack

    def brokers_in_rack(self, rack: str) -> list[int]:
        """Ids of the brokers in ``rack``."""
        self._mc()
        return [b.node_id for b in self._brokers.values() if b.rack == rack]

    @property
    def down_brokers(self) -> frozenset[int]:
        """Ids of the brokers currently set down with :meth:`broker_down`."""
        return frozenset(self._down)

    # -- topics ----------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        *,
        leaders: Sequence[int] | None = None,
    ) -> list[PartitionInfo]:
        """Create a topic and place its leaders.

        The mock assigns each partition's replicas itself (read back from Metadata). Leaders
        are then spread evenly: partition ``p`` is led by broker ``(p % brokers) + 1`` when
        every broker holds a replica of every partition, otherwise by its replica that
        leads the fewest partitions so far. Every partition starts at leader epoch 1.

        Arguments:
            name: topic name.
            partitions: number of partitions.
            replication_factor: replicas per partition (at most the number of brokers;
                default 3, or the number of brokers when there are fewer).
            leaders: explicit leader per partition (each must be one of its replicas).

        Returns:
            the partitions' :class:`PartitionInfo`.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"topic name must be a non-empty string, got {name!r}")
        if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
            raise ValueError(f"partitions must be an int >= 1, got {partitions!r}")
        if replication_factor is None:
            replication_factor = min(3, self._broker_count)
        if not 1 <= replication_factor <= self._broker_count:
            raise ValueError(
                f"replication_factor must be 1..{self._broker_count} (the number of brokers), "
                f"got {replication_factor!r}"
            )
        if leaders is not None and len(leaders) != partitions:
            raise ValueError(f"leaders needs one broker id per partition ({partitions})")
        with self._lock:
            mc = self._mc()
            self._check(
                self._call(
                    "rd_kafka_mock_topic_create", mc, name.encode(), partitions, replication_factor
                ),
                f"creating topic {name!r}",
            )
            replicas = self._read_replicas(name, partitions)
            n = self._broker_count
            parts: list[PartitionInfo] = []
            led: Counter[int] = Counter()
            for p in range(partitions):
                reps = replicas[p]
                if leaders is not None:
                    leader = self._broker_id(leaders[p])
                    if leader not in reps:
                        raise ValueError(
                            f"leader {leader} of {name}[{p}] is not one of its replicas {reps}"
                        )
                else:
                    # The least-loaded replica; on a tie broker (p % n) + 1 if it is one
                    # of them, else the first in replica order.
                    fewest = min(led[r] for r in reps)
                    tied = [r for r in reps if led[r] == fewest]
                    leader = (p % n) + 1 if (p % n) + 1 in tied else tied[0]
                led[leader] += 1
                self._check(
                    self._call("rd_kafka_mock_partition_set_leader", mc, name.encode(), p, leader),
                    f"setting the leader of {name}[{p}]",
                )
                # The mock creates partitions at epoch 0; set_leader bumps it.
                parts.append(PartitionInfo(name, p, leader, reps, 1))
            self._partitions[name] = parts
            if self._selector is not None:
                self._apply_selector(topics=[name])
            return list(self._partitions[name])

    def _read_replicas(self, topic: str, partitions: int) -> list[tuple[int, ...]]:
        deadline = time.monotonic() + self._metadata_timeout
        clients = self._clients()
        while True:
            md = clients.metadata(max(0.5, deadline - time.monotonic()))
            tmd = md.topics.get(topic)
            if tmd is not None and tmd.error is None and len(tmd.partitions) == partitions:
                return [tuple(tmd.partitions[p].replicas) for p in range(partitions)]
            if time.monotonic() >= deadline:
                raise EmbeddedClusterError(
                    f"topic {topic!r} did not show up in metadata: "
                    f"{None if tmd is None else tmd.error}"
                )
            time.sleep(0.02)

    def topics(self) -> list[str]:
        """Names of the topics this object knows (created here or looked up)."""
        return sorted(self._partitions)

    def partition_info(self, topic: str, partition: int) -> PartitionInfo:
        """The :class:`PartitionInfo` (leader, replicas, epoch, preferred replica) of a partition.

        A topic that was not created with :meth:`create_topic` (auto-created by a client) is
        looked up in Metadata the first time.
        """
        with self._lock:
            self._mc()
            return self._partition(topic, partition)

    def partitions(self, topic: str) -> list[PartitionInfo]:
        """All partitions of a topic."""
        with self._lock:
            self._mc()
            self._partition(topic, 0)
            return list(self._partitions[topic])

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Advance the partition's log start offset to ``before_offset`` (DeleteRecords)."""
        with self._lock:
            self._partition(topic, partition)
            self._check(
                self._call(
                    "rd_kafka_mock_partition_delete_records",
                    self._mc(),
                    topic.encode(),
                    partition,
                    before_offset,
                ),
                f"deleting records of {topic}[{partition}] before {before_offset}",
            )

    def set_topic_error(self, topic: str, error_code: int) -> None:
        """Make Metadata report ``error_code`` for ``topic`` (0 to clear)."""
        with self._lock:
            self._partition(topic, 0)
            self._call_void("rd_kafka_mock_topic_set_error", self._mc(), topic.encode(), error_code)

    # -- leaders and replicas --------------------------------------------------------------
    def move_leader(self, topic: str, partition: int, broker_id: int | None) -> PartitionInfo:
        """Make ``broker_id`` (one of the partition's replicas) the leader; None: no leader.

        The leader epoch is bumped, so clients holding the old epoch get
        ``FENCED_LEADER_EPOCH``. A preferred read replica equal to the new leader is cleared
        (a leader never names itself); under :meth:`emulate_rack_aware_selector` the
        partition's preferred replica is recomputed.
        """
        with self._lock:
            info = self._partition(topic, partition)
            if broker_id is None:
                target = -1
            else:
                target = self._broker_id(broker_id)
                if target not in info.replicas:
                    raise ValueError(
                        f"broker {target} is not a replica of {topic}[{partition}] "
                        f"(replicas: {list(info.replicas)})"
                    )
            self._check(
                self._call(
                    "rd_kafka_mock_partition_set_leader",
                    self._mc(),
                    topic.encode(),
                    partition,
                    target,
                ),
                f"moving the leader of {topic}[{partition}] to {target}",
            )
            epoch = None if info.leader_epoch is None else info.leader_epoch + 1
            info = replace(info, leader=target, leader_epoch=epoch)
            self._set_partition(info)
            if self._selector is not None and self._selector_covers(topic):
                self._apply_selector(topics=[topic], only_partition=partition)
            elif info.preferred_read_replica == target and target != -1:
                self._set_follower(info, -1)
            return self._partition(topic, partition)

    def set_preferred_read_replica(
        self, topic: str, partition: int, broker_id: int | None
    ) -> PartitionInfo:
        """Make the leader name ``broker_id`` as ``preferred_read_replica`` in Fetch responses.

        None clears it. The mock does this for every Fetch v11+, whatever ``rack_id`` the
        client sent, and does not check the broker: an id that is not a replica, not in the
        cluster or down is sent as is (useful to test a consumer's fallback). The leader
        itself is refused, as a real leader never names itself (the mock would redirect
        to itself forever).
        """
        with self._lock:
            info = self._partition(topic, partition)
            target = -1 if broker_id is None else int(broker_id)
            if target != -1 and target == info.leader:
                raise ValueError(
                    f"broker {target} leads {topic}[{partition}]; a leader never names itself "
                    "as preferred read replica (use None to clear)"
                )
            return self._set_follower(info, target)

    def _set_follower(self, info: PartitionInfo, broker_id: int) -> PartitionInfo:
        self._check(
            self._call(
                "rd_kafka_mock_partition_set_follower",
                self._mc(),
                info.topic.encode(),
                info.partition,
                broker_id,
            ),
            f"setting the follower of {info.topic}[{info.partition}]",
        )
        info = replace(info, preferred_read_replica=broker_id)
        self._set_partition(info)
        return info

    def emulate_rack_aware_selector(
        self,
        client_rack: str | None,
        topics: Iterable[str] | None = None,
        *,
        skip_down_brokers: bool = True,
    ) -> dict[tuple[str, int], int]:
        """Emulate Kafka's ``RackAwareReplicaSelector`` for consumers in ``client_rack``.

        For each partition the preferred read replica becomes the one Kafka's selector
        names (:func:`rackafka.testing.replica_selector.preferred_read_replica`): none (-1)
        when the leader is in ``client_rack`` or no other replica is, else the replica in
        ``client_rack`` (the highest broker id if there are several, all being caught up).
        ``None`` or ``""`` (a consumer without ``client_rack``) clears them all.

        The mock sends the same hint to every client whatever its rack, so this emulates one
        client rack at a time. The setting stays in force: topics created later and leader
        moves are recomputed, until :meth:`clear_preferred_read_replicas`.

        Arguments:
            client_rack: the consumers' ``client_rack``.
            topics: limit to these topics (default: every known topic, now and later).
            skip_down_brokers: do not pick a replica that is down, as it would have left
                the ISR on a real cluster.

        Returns:
            (topic, partition) -> the preferred read replica now set (-1 for none).
        """
        with self._lock:
            self._mc()
            wanted = None if topics is None else frozenset(topics)
            if wanted is not None:
                for topic in wanted:
                    self._partition(topic, 0)
            self._selector = (client_rack or "", wanted, skip_down_brokers)
            return self._apply_selector(topics=wanted)

    def _rack_of_any(self, broker_id: int) -> str | None:
        broker = self._brokers.get(broker_id)
        return None if broker is None else broker.rack

    def _selector_covers(self, topic: str) -> bool:
        assert self._selector is not None
        wanted = self._selector[1]
        return wanted is None or topic in wanted

    def _apply_selector(
        self, topics: Iterable[str] | None, only_partition: int | None = None
    ) -> dict[tuple[str, int], int]:
        assert self._selector is not None
        rack, wanted, skip_down = self._selector
        names = sorted(self._partitions) if topics is None else list(topics)
        out: dict[tuple[str, int], int] = {}
        for topic in names:
            if wanted is not None and topic not in wanted:
                continue
            for info in list(self._partitions[topic]):
                if only_partition is not None and info.partition != only_partition:
                    continue
                in_sync = [r for r in info.replicas if r not in self._down] if skip_down else None
                target = preferred_read_replica(
                    rack, info.leader, info.replicas, self._rack_of_any, in_sync=in_sync
                )
                self._set_follower(info, target)
                out[(topic, info.partition)] = target
        return out

    def clear_preferred_read_replicas(self, topics: Iterable[str] | None = None) -> None:
        """Stop naming preferred read replicas (all topics, or ``topics``).

        Also ends :meth:`emulate_rack_aware_selector` when clearing all topics.
        """
        with self._lock:
            self._mc()
            names = sorted(self._partitions) if topics is None else list(topics)
            if topics is None:
                self._selector = None
            for topic in names:
                self._partition(topic, 0)
                for info in list(self._partitions[topic]):
                    self._set_follower(info, -1)

    def set_follower_watermarks(
        self, topic: str, partition: int, low: int | None = -1, high: int | None = -1
    ) -> PartitionInfo:
        """Make the follower serve only offsets in ``[low, high)`` (a lagging follower).

        ``-1`` (or None) follows the leader's log start / high watermark. A fetch outside the
        range gets ``OFFSET_OUT_OF_RANGE`` from the follower, and its responses carry
        ``high`` as high watermark and ``low`` as log start offset.
        """
        lo = -1 if low is None else int(low)
        hi = -1 if high is None else int(high)
        with self._lock:
            info = self._partition(topic, partition)
            self._check(
                self._call(
                    "rd_kafka_mock_partition_set_follower_wmarks",
                    self._mc(),
                    topic.encode(),
                    partition,
                    lo,
                    hi,
                ),
                f"setting the follower watermarks of {topic}[{partition}]",
            )
            info = replace(info, follower_watermarks=(lo, hi))
            self._set_partition(info)
            return info

    # -- brokers ---------------------------------------------------------------------------
    def broker_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones (it keeps its port).

        The broker disappears from Metadata but keeps its roles: no leader election happens
        (call :meth:`move_leader` to emulate one) and leaders keep naming it as preferred read
        replica until told otherwise.
        """
        with self._lock:
            self._check(
                self._call("rd_kafka_mock_broker_set_down", self._mc(), self._broker_id(broker_id)),
                f"setting broker {broker_id} down",
            )
            self._down.add(broker_id)

    def broker_up(self, broker_id: int) -> None:
        """Let a broker set down with :meth:`broker_down` accept connections again."""
        with self._lock:
            self._check(
                self._call("rd_kafka_mock_broker_set_up", self._mc(), self._broker_id(broker_id)),
                f"setting broker {broker_id} up",
            )
            self._down.discard(broker_id)

    def set_broker_rtt(self, broker_id: int | None, rtt_ms: int) -> None:
        """Delay every response of a broker (None: all brokers) by ``rtt_ms`` milliseconds."""
        if rtt_ms < 0:
            raise ValueError(f"rtt_ms must be >= 0, got {rtt_ms}")
        with self._lock:
            target = -1 if broker_id is None else self._broker_id(broker_id)
            self._check(
                self._call("rd_kafka_mock_broker_set_rtt", self._mc(), target, int(rtt_ms)),
                f"setting the RTT of broker {broker_id}",
            )

    def set_coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        """Pin the group (``key_type="group"``) or transaction coordinator of ``key``."""
        if key_type not in ("group", "transaction"):
            raise ValueError(f"key_type must be 'group' or 'transaction', got {key_type!r}")
        with self._lock:
            self._check(
                self._call(
                    "rd_kafka_mock_coordinator_set",
                    self._mc(),
                    key_type.encode(),
                    key.encode(),
                    int(broker_id),
                ),
                f"setting the {key_type} coordinator of {key!r}",
            )

    def set_group_initial_rebalance_delay(self, delay_ms: int) -> None:
        """Set the coordinator's delay before a new group's first rebalance."""
        if delay_ms < 0:
            raise ValueError("delay_ms must be >= 0")
        self._call_void("rd_kafka_mock_group_initial_rebalance_delay_ms", self._mc(), delay_ms)

    def set_consumer_group_timing(
        self, *, session_timeout_ms: int | None = None, heartbeat_interval_ms: int | None = None
    ) -> None:
        """Set the coordinator's session timeout and heartbeat interval of KIP-848 groups.

        These are broker settings with that protocol (``group.consumer.session.timeout.ms``
        and ``group.consumer.heartbeat.interval.ms``, 45 s and 5 s in Kafka; the embedded
        cluster starts at 30 s and 3 s); they apply from each member's next heartbeat.
        """
        for name, value, fn in (
            (
                "session_timeout_ms",
                session_timeout_ms,
                "rd_kafka_mock_set_group_consumer_session_timeout_ms",
            ),
            (
                "heartbeat_interval_ms",
                heartbeat_interval_ms,
                "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms",
            ),
        ):
            if value is None:
                continue
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, not {value!r}")
            self._call_void(fn, self._mc(), value)

    # -- request errors and versions -------------------------------------------------------
    def push_request_errors(self, api: int | str, *error_codes: int) -> None:
        """Fail the next requests of an API, on whichever broker, with these error codes.

        One error per request, in order; 0 lets a request through. :data:`DISCONNECT`
        closes the connection instead of answering. With Fetch, the error is the
        response's top-level error code and is also given to every partition.
        """
        key = api_key(api)
        with self._handles.nudger:
            self._lib.push_request_errors(self._mc(), key, [int(e) for e in error_codes])

    def push_broker_request_errors(
        self, broker_id: int, api: int | str, *errors: int | tuple[int, int]
    ) -> None:
        """Like :meth:`push_request_errors` for one broker, with optional delays.

        Each error is an error code or an ``(error_code, rtt_ms)`` pair; ``(0, 500)`` delays
        one response by 500 ms without failing it. Broker errors take precedence over
        cluster-wide ones.
        """
        pairs: list[tuple[int, int]] = []
        for item in errors:
            if isinstance(item, tuple):
                err, rtt = item
                pairs.append((int(err), int(rtt)))
            else:
                pairs.append((int(item), 0))
        with self._lock, self._handles.nudger:
            self._check(
                self._lib.broker_push_request_error_rtts(
                    self._mc(), self._broker_id(broker_id), api_key(api), pairs
                ),
                f"pushing request errors for broker {broker_id}",
            )

    def pending_broker_request_errors(self, broker_id: int, api: int | str) -> int:
        """How many errors pushed with :meth:`push_broker_request_errors` are still unused."""
        with self._handles.nudger:
            err, count = self._lib.broker_error_stack_count(
                self._mc(), self._broker_id(broker_id), api_key(api)
            )
        self._check(err, "reading the broker's error stack")
        return count

    def push_partition_request_errors(
        self, topic: str, partition: int, api: int | str, *error_codes: int
    ) -> None:
        """Fail the next requests of an API for one partition (partition-level error codes)."""
        with self._lock:
            self._partition(topic, partition)
            with self._handles.nudger:
                err = self._lib.partition_push_request_errors(
                    self._mc(), topic, partition, api_key(api), [int(e) for e in error_codes]
                )
            self._check(err, f"pushing request errors for {topic}[{partition}]")

    def clear_request_errors(self, api: int | str) -> None:
        """Drop the cluster-wide errors still pushed for an API."""
        self._call_void("rd_kafka_mock_clear_request_errors", self._mc(), api_key(api))

    def api_versions(self, broker_id: int | None = None) -> dict[int, tuple[int, int]]:
        """The API versions a broker advertises (ApiVersions v0): key -> (min, max)."""
        self._mc()
        candidates = (
            [self._broker_id(broker_id)]
            if broker_id is not None
            else [b for b in self._brokers if b not in self._down]
        )
        last: Exception | None = None
        for candidate in candidates:
            broker = self._brokers[candidate]
            try:
                return probe_api_versions(broker.host, broker.port)
            except OSError as exc:
                last = exc
        raise EmbeddedClusterError(f"no broker answered ApiVersions: {last}")

    def cap_api_version(self, api: int | str, min_version: int, max_version: int) -> None:
        """Restrict the versions all brokers accept for an API (emulates an older broker).

        ``(-1, -1)`` removes the API. The brokers advertise the new range in ApiVersions and
        close the connection on a request outside it. The range cannot exceed what the
        mock implements. :meth:`restore_api_version` undoes it.
        """
        key = api_key(api)
        with self._lock:
            if key not in self._original_versions:
                try:
                    current = self.api_versions()
                except EmbeddedClusterError:
                    current = {}
                if key in current:
                    self._original_versions[key] = current[key]
            self._check(
                self._call(
                    "rd_kafka_mock_set_apiversion", self._mc(), key, min_version, max_version
                ),
                f"capping {api_name(key)} to v{min_version}..v{max_version}",
            )

    def restore_api_version(self, api: int | str) -> None:
        """Give an API back the version range it had before :meth:`cap_api_version`."""
        key = api_key(api)
        with self._lock:
            if key not in self._original_versions:
                raise ValueError(f"{api_name(key)} was not capped by this cluster object")
            lo, hi = self._original_versions.pop(key)
            self._check(
                self._call("rd_kafka_mock_set_apiversion", self._mc(), key, lo, hi),
                f"restoring {api_name(key)} to v{lo}..v{hi}",
            )

    # -- request tracking ------------------------------------------------------------------
    def start_request_tracking(self) -> None:
        """Record every request the brokers receive from now on (clears earlier records)."""
        self._call_void("rd_kafka_mock_start_request_tracking", self._mc())

    def stop_request_tracking(self) -> None:
        """Stop recording requests; this also drops the records."""
        self._call_void("rd_kafka_mock_stop_request_tracking", self._mc())

    def clear_requests(self) -> None:
        """Drop the records made so far (tracking goes on)."""
        self._call_void("rd_kafka_mock_clear_requests", self._mc())

    def requests(
        self, api: int | str | None = None, broker_id: int | None = None
    ) -> list[RequestRecord]:
        """The requests recorded since :meth:`start_request_tracking`, oldest first.

        Only requests within the advertised version range are recorded (a request the mock
        refuses by closing the connection is not). A record has no partition or size.

        Arguments:
            api: only this API (key or name).
            broker_id: only requests received by this broker.
        """
        key = None if api is None else api_key(api)
        raw = self._lib.get_requests(self._mc())
        offset = _clock_offset()
        out = []
        for req in raw:
            if key is not None and req.api_key != key:
                continue
            if broker_id is not None and req.broker_id != broker_id:
                continue
            out.append(
                RequestRecord(
                    req.broker_id,
                    req.api_key,
                    api_name(req.api_key),
                    req.timestamp_us / 1_000_000 + offset,
                )
            )
        out.sort(key=lambda r: r.timestamp)
        return out

    def request_counts(self, api: int | str | None = None) -> Counter[int]:
        """Number of recorded requests per broker id (optionally for one API)."""
        return Counter(r.broker_id for r in self.requests(api))
