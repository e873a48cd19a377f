"""An embedded multi-rack Kafka cluster for tests, built on librdkafka's mock cluster.

See ``docs/testing.rst`` for the user guide and for what the mock broker does and does not
do like a real Kafka broker.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ._api import DISCONNECT
from ._base import (
    DEFAULT_RACKS,
    BrokerInfo,
    EmbeddedClusterError,
    PartitionInfo,
    RequestRecord,
    _TopicRequest,
    check_layout,
    probe_api_versions,
)
from ._clients import ClientPool
from ._librdkafka import load_librdkafka
from ._mock_core import _Handles
from ._mock_faults import _MockFaults

__all__ = [
    "DEFAULT_RACKS",
    "DISCONNECT",
    "BrokerInfo",
    "EmbeddedCluster",
    "EmbeddedClusterError",
    "PartitionInfo",
    "RequestRecord",
    "probe_api_versions",
]

log = logging.getLogger("rackafka.testing")


#: Group API versions the mock's handlers parse correctly (it advertises more): JoinGroup,
#: SyncGroup, Heartbeat, LeaveGroup.  Read from librdkafka 2.16's mock handlers, which
#: read array counts as int32 in flexible versions and LeaveGroup in its v0-2 layout.
MOCK_PARSED_GROUP_VERSIONS: dict[int, tuple[int, int]] = {
    11: (0, 5),
    14: (0, 3),
    12: (0, 3),
    13: (0, 2),
}


class EmbeddedCluster(_MockFaults):
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
        rack_list = check_layout(brokers, racks)
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
            if not self._startable():
                return self
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

    def __repr__(self) -> str:
        return (
            f"<EmbeddedCluster {self._state} brokers={self._broker_count} "
            f"racks={list(self._racks)} bootstrap={self._bootstrap!r}>"
        )

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

    # -- topics ----------------------------------------------------------------------------
    def _create_topic(self, request: _TopicRequest) -> list[PartitionInfo]:
        name, partitions, leaders = request.name, request.partitions, request.leaders
        # The mock assigns the replicas; leaders are placed here (see create_topic).
        if request.config:
            raise ValueError(
                "the embedded cluster keeps no topic configuration "
                f"(config={dict(request.config)!r}): "
                "use a real Kafka cluster for it"
            )
        with self._lock:
            mc = self._mc()
            self._check(
                self._call(
                    "rd_kafka_mock_topic_create",
                    mc,
                    name.encode(),
                    partitions,
                    request.replication_factor,
                ),
                f"creating topic {name!r}",
            )
            replicas = self._read_replicas(name, partitions, request.timeout)
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

    def _read_replicas(
        self, topic: str, partitions: int, timeout: float | None
    ) -> list[tuple[int, ...]]:
        deadline = time.monotonic() + (self._metadata_timeout if timeout is None else timeout)
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
