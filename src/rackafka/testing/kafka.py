"""Real Apache Kafka brokers for tests: a KRaft cluster of JVMs on 127.0.0.1.

:class:`KafkaCluster` runs N combined broker+controller nodes of Apache Kafka 3.7 or newer
(jars from Maven Central, see :mod:`rackafka.testing.kafka_dist`), each in its own rack, with
Kafka's ``RackAwareReplicaSelector``, both group protocols (classic and KIP-848's consumer protocol)
and transactions usable. It offers the part of :class:`~rackafka.testing.EmbeddedCluster`'s
API that a real cluster allows: topics with chosen leaders, data, layout, and brokers
really stopped and restarted. See ``docs/testing.rst``.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rackafka._backoff import BackoffPolicy

from . import _reaper
from ._base import (
    BrokerInfo,
    PartitionInfo,
    _BrokerMetadataMixin,
    _StatefulLifecycle,
    _TopicRequest,
    check_layout,
)
from ._clients import ClientPool
from ._kafka_metadata import (
    await_leaders_seen,
    brokers_named,
    brokers_not_seeing,
    describe_leader_views,
)
from ._kafka_nodes import _Node, _port_free, _Processes, signal_node, stop_processes
from ._security import SASL_MECHANISMS, SECURITY_PROTOCOLS
from .compose import _FAULT_INJECTION_METHODS, _WithoutFaultInjection
from .kafka_dist import find_java, kafka_libs
from .kafka_dist import kafka_version as _resolve_version
from .kafka_security import KafkaSecurity, unsecured_oauth_token
from .kafka_versions import KafkaFeatures, kafka_features, version_properties

__all__ = [
    "DEFAULT_RACKS",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "KafkaCluster",
    "KafkaClusterError",
    "KafkaPortInUseError",
    "KafkaSecurity",
    "stop_processes",
    "unsecured_oauth_token",
]

log = logging.getLogger("rackafka.testing.kafka")

DEFAULT_RACKS: tuple[str, ...] = ("az-a", "az-b", "az-c")

#: JVM options of every broker: a small heap and a quick start (C1 only) on small machines.
DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms64m",
    "-Xmx384m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:-UsePerfData",
    "-Xss512k",
    "-Djava.awt.headless=true",
)

_LOG4J2 = """status = warn
name = rackafka-test-broker
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
# Why an authentication failed is only logged at DEBUG.
logger.security.name = org.apache.kafka.common.security
logger.security.level = DEBUG
"""


class KafkaClusterError(RuntimeError):
    """The real Kafka cluster could not start, or a broker did not do what was asked.

    Attributes:
        log_dir: the directory with the brokers' logs (kept for the report), or None.
    """

    def __init__(self, message: str, log_dir: Path | None = None) -> None:
        super().__init__(message)
        self.log_dir = log_dir


class KafkaPortInUseError(KafkaClusterError):
    """A broker could not listen: its port on 127.0.0.1 is taken by another process."""


def _free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _cluster_id() -> str:
    """A random cluster id: 16 bytes, URL-safe base64 as Kafka writes them, never starting
    with ``-`` (the storage tool would read it as an option, so Kafka avoids those too)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


#: The mock's fault-injection calls a real cluster cannot make.
_UNSUPPORTED = _FAULT_INJECTION_METHODS - {"broker_down", "broker_up", "delete_records"}

_storage_tool_cache: dict[Path, str] = {}


def _storage_tool_class(libs: Path) -> str:
    """The storage tool's main class in these jars (it moved between Kafka versions)."""
    if libs in _storage_tool_cache:
        return _storage_tool_cache[libs]
    candidates = ("kafka/tools/StorageTool.class", "org/apache/kafka/tools/StorageTool.class")
    for jar in sorted(libs.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as z:
            names = set(z.namelist())
        for c in candidates:
            if c in names:
                found = c[: -len(".class")].replace("/", ".")
                _storage_tool_cache[libs] = found
                return found
    raise KafkaClusterError(f"no StorageTool class in the Kafka jars of {libs}")


#: The waits between the tries of a topic creation.
_ADMIN_RETRY = BackoffPolicy(200, 2000)

#: Admin errors of a topic creation that another try settles.
_TRANSIENT_ADMIN_ERRORS = frozenset(
    {
        "_UNSUPPORTED_FEATURE",
        "_TRANSPORT",
        "_TIMED_OUT",
        "NOT_CONTROLLER",
        "REQUEST_TIMED_OUT",
        # librdkafka retires its bootstrap broker handles once metadata names the brokers,
        # failing a request in flight on one (seen on a loaded machine).
        "_DESTROY_BROKER",
    }
)


def _admin_error_name(exc: BaseException) -> str | None:
    """The name of the ``confluent_kafka.KafkaError`` an admin future raised, if any."""
    err = exc.args[0] if exc.args else None
    name = getattr(err, "name", None)
    return name() if callable(name) else None


def _admin_error_retriable(exc: BaseException) -> bool:
    """Whether the ``confluent_kafka.KafkaError`` an admin future raised says to retry."""
    err = exc.args[0] if exc.args else None
    retriable = getattr(err, "retriable", None)
    return bool(retriable()) if callable(retriable) else False


class KafkaCluster(_WithoutFaultInjection, _BrokerMetadataMixin, _StatefulLifecycle):
    """A real Apache Kafka cluster: ``brokers`` KRaft nodes (broker and controller each)
    as JVMs on 127.0.0.1, broker ``i + 1`` in rack ``racks[i % len(racks)]``.

    The brokers run Kafka's ``RackAwareReplicaSelector`` (a consumer with ``client_rack``
    is sent to the replica in its rack, KIP-392), both group protocols (``classic`` and
    KIP-848's ``consumer``), and the internal topics have replication factor ``min(3, N)``
    so transactions and groups work as in production. Ports are picked free at start.

    Use it as a context manager (``with`` or ``async with``) or call :meth:`start` and
    :meth:`close`. The JVMs are ended at :meth:`close`, at garbage collection, at interpreter
    exit, and by a watchdog process if this process dies.

    Arguments:
        brokers: number of nodes (>= 1).
        racks: rack names assigned round-robin; None or ``()`` for no ``broker.rack``.
        kafka_version: the Apache Kafka release, 3.7 or newer (default:
            ``RACKAFKA_KAFKA_VERSION`` or
            :data:`~rackafka.testing.kafka_dist.DEFAULT_KAFKA_VERSION`); :attr:`features`
            says what it offers (KIP-848 is early access before 4.0, off unless
            ``broker_config`` turns it on).
        cache_dir: where the jars are cached (default: ``RACKAFKA_KAFKA_CACHE`` or
            ``~/.cache/rackafka/kafka``).
        work_dir: where the brokers keep their data and logs (default: a new temporary
            directory, removed by :meth:`close` unless ``keep_work_dir`` or a failure).
        keep_work_dir: keep the work directory (logs and data) after :meth:`close`.
        security_protocol: ``PLAINTEXT`` (default) or ``SSL``, ``SASL_PLAINTEXT``,
            ``SASL_SSL``: each broker then has a listener of that protocol too, which
            :attr:`bootstrap_servers` names (:attr:`plaintext_bootstrap_servers` names the
            plain ones); :attr:`front` gives its CA file and ready client options.
        sasl_mechanisms: the SASL mechanisms enabled (default: PLAIN, SCRAM-SHA-256,
            SCRAM-SHA-512, OAUTHBEARER with Kafka's unsecured tokens).
        users: ``{name: password}`` of the PLAIN users and the SCRAM users (created when the
            storage is formatted).
        session_lifetime_ms: ``connections.max.reauth.ms`` of the secured listener (KIP-368).
        require_client_cert: mutual TLS.
        plaintext_bootstrap: True to have :attr:`bootstrap_servers` name the PLAINTEXT
            listeners even when a secured listener is configured (one cluster for plain and
            secured tests; ``front.bootstrap_servers`` names the secured listeners).
        group_initial_rebalance_delay_ms: ``group.initial.rebalance.delay.ms`` (default 0).
        broker_config: more ``server.properties`` entries for every broker (override ours).
        jvm_options: the JVM options (default :data:`DEFAULT_JVM_OPTIONS`).
        java: the ``java`` executable (default: ``JAVA_HOME`` or the PATH's).
        startup_timeout: seconds to wait for the cluster (and a restarted broker).
        stop_timeout: seconds a broker has to stop after SIGTERM before SIGKILL.

    :meth:`start` raises :class:`JavaNotFoundError` (no Java 17+), :class:`KafkaJarsError`
    (the jars are not cached and cannot be downloaded), :class:`KafkaPortInUseError` (a port
    was taken by another process) or :class:`KafkaClusterError` (a broker died or the
    cluster did not come up in time; the message names the kept log directory and ends
    with the broker's last log lines).
    """

    _unsupported_methods = _UNSUPPORTED
    _why_no_faults = " (librdkafka's mock); real Kafka brokers cannot do it"

    def __init__(
        self,
        brokers: int = 3,
        racks: Sequence[str] | None = DEFAULT_RACKS,
        *,
        kafka_version: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        keep_work_dir: bool = False,
        security_protocol: str = "PLAINTEXT",
        sasl_mechanisms: Sequence[str] | None = None,
        users: Mapping[str, str] | None = None,
        session_lifetime_ms: int | None = None,
        require_client_cert: bool = False,
        plaintext_bootstrap: bool = False,
        group_initial_rebalance_delay_ms: int = 0,
        broker_config: Mapping[str, Any] | None = None,
        jvm_options: Sequence[str] | None = None,
        java: str | None = None,
        startup_timeout: float = 180.0,
        stop_timeout: float = 30.0,
    ) -> None:
        rack_list = check_layout(brokers, racks, words=True)
        if group_initial_rebalance_delay_ms < 0:
            raise ValueError("group_initial_rebalance_delay_ms must be >= 0")
        if startup_timeout <= 0 or stop_timeout <= 0:
            raise ValueError("startup_timeout and stop_timeout must be positive")
        self._kafka_version = _resolve_version(kafka_version)
        self._broker_count = brokers
        self._racks = rack_list
        self._cache_dir = cache_dir
        self._work_dir_arg = Path(work_dir) if work_dir is not None else None
        self._keep_work_dir = keep_work_dir
        self._rebalance_delay_ms = group_initial_rebalance_delay_ms
        self._broker_config = {k: str(v) for k, v in (broker_config or {}).items()}
        self._jvm_options = tuple(jvm_options if jvm_options is not None else DEFAULT_JVM_OPTIONS)
        self._java_arg = java
        self._startup_timeout = startup_timeout
        self._stop_timeout = stop_timeout
        self._metadata_timeout = 30.0
        self._security: KafkaSecurity | None = None
        self._plaintext_bootstrap = plaintext_bootstrap
        if security_protocol != "PLAINTEXT":
            self._security = KafkaSecurity(
                security_protocol,
                sasl_mechanisms,
                users,
                session_lifetime_ms,
                require_client_cert,
            )
        elif users or sasl_mechanisms or session_lifetime_ms or require_client_cert:
            raise ValueError(
                "users, sasl_mechanisms, session_lifetime_ms and require_client_cert need a "
                "security_protocol other than PLAINTEXT"
            )
        self._lock = threading.RLock()
        self._state = "new"
        self._procs = _Processes()
        self._finalizer = weakref.finalize(self, self._procs.stop_all, 10.0)
        self._pool: ClientPool | None = None
        self._work_dir: Path | None = None
        self._created_work_dir = False
        self._java = ""
        self._libs: Path | None = None
        self._cluster_id = _cluster_id()
        self._brokers: dict[int, BrokerInfo] = {}
        self._down: set[int] = set()
        self._topics: set[str] = set()
        self._failed = False
        #: Seconds the last :meth:`start` took (formatting and starting the JVMs).
        self.start_seconds: float | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> KafkaCluster:
        """Format the storage, start the brokers and wait until all are in the cluster
        (does nothing when already running).

        Raises:
            RuntimeError: the cluster was closed; a closed cluster cannot be restarted.
        """
        with self._lock:
            if not self._startable():
                return self
            began = time.monotonic()
            self._java = find_java(self._java_arg)
            self._libs = kafka_libs(self._kafka_version, self._cache_dir)
            try:
                self._prepare_work_dir()
                for attempt in range(3):
                    try:
                        self._start_once()
                        break
                    except KafkaPortInUseError:
                        self._procs.stop_all(self._stop_timeout)
                        if attempt == 2:
                            raise
                        log.info("a port was taken while the brokers started: new ports")
            except BaseException:
                self._failed = True
                self._state = "closed"
                self._shutdown()
                raise
            self._state = "running"
            self.start_seconds = time.monotonic() - began
            log.info(
                "Kafka %s cluster up in %.1f s: %s",
                self._kafka_version,
                self.start_seconds,
                self.bootstrap_servers,
            )
            return self

    def _prepare_work_dir(self) -> None:
        if self._work_dir_arg is not None:
            self._work_dir = self._work_dir_arg
            self._work_dir.mkdir(parents=True, exist_ok=True)
        else:
            self._work_dir = Path(tempfile.mkdtemp(prefix="rackafka-kafka-"))
            self._created_work_dir = True
        (self._work_dir / "log4j2.properties").write_text(_LOG4J2)
        if self._security is not None:
            self._security.make_files(self._work_dir / "tls")

    def _start_once(self) -> None:
        assert self._work_dir is not None
        n = self._broker_count
        per_node = 3 if self._security is not None else 2
        ports = _free_ports(n * per_node)
        self._procs.nodes.clear()
        for i in range(n):
            node_id = i + 1
            base = ports[i * per_node : (i + 1) * per_node]
            rack = self._racks[i % len(self._racks)] if self._racks else None
            node_dir = self._work_dir / f"broker-{node_id}"
            if node_dir.exists():
                shutil.rmtree(node_dir)
            (node_dir / "logs").mkdir(parents=True)
            self._procs.nodes[node_id] = _Node(
                node_id, rack, base[0], base[1], base[2] if per_node == 3 else None, node_dir
            )
        self._brokers = {
            nd.node_id: BrokerInfo(nd.node_id, "127.0.0.1", nd.port, nd.rack)
            for nd in self._procs.nodes.values()
        }
        if self._security is not None:
            self._security._bootstrap = ",".join(
                f"127.0.0.1:{nd.secure_port}" for nd in self._nodes()
            )
        for nd in self._nodes():
            self._write_properties(nd)
        self._format()
        for nd in self._nodes():
            self._spawn(nd)
        if self._pool is not None:
            self._pool.close()
        self._pool = ClientPool(self.plaintext_bootstrap_servers)
        self._wait_brokers(set(self._procs.nodes), self._startup_timeout)

    def _nodes(self) -> list[_Node]:
        return [self._procs.nodes[k] for k in sorted(self._procs.nodes)]

    def _properties(self, nd: _Node) -> dict[str, str]:
        n = self._broker_count
        voters = ",".join(f"{x.node_id}@127.0.0.1:{x.controller_port}" for x in self._nodes())
        listeners = [f"PLAINTEXT://127.0.0.1:{nd.port}"]
        advertised = [f"PLAINTEXT://127.0.0.1:{nd.port}"]
        protocol_map = ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT"]
        sec = self._security
        if sec is not None:
            listeners.append(f"{sec.listener_name}://127.0.0.1:{nd.secure_port}")
            advertised.append(f"{sec.listener_name}://127.0.0.1:{nd.secure_port}")
            protocol_map.append(f"{sec.listener_name}:{sec.security_protocol}")
        listeners.append(f"CONTROLLER://127.0.0.1:{nd.controller_port}")
        replication = str(min(3, n))
        props: dict[str, str] = {
            "process.roles": "broker,controller",
            "node.id": str(nd.node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(protocol_map),
            "log.dirs": str(nd.dir / "data"),
            "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
            # Both protocols (4.x would add streams by default); 3.x: see version_properties.
            "group.coordinator.rebalance.protocols": "classic,consumer",
            "group.initial.rebalance.delay.ms": str(self._rebalance_delay_ms),
            # Short enough for tests; Kafka's minimums lowered to allow them.
            "group.min.session.timeout.ms": "1000",
            "group.consumer.min.heartbeat.interval.ms": "500",
            "group.consumer.heartbeat.interval.ms": "1000",
            "group.consumer.min.session.timeout.ms": "3000",
            "group.consumer.session.timeout.ms": "10000",
            "offsets.topic.replication.factor": replication,
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": str(min(2, n)),
            "transaction.state.log.num.partitions": "10",
            "default.replication.factor": replication,
            "num.partitions": "3",
            "auto.create.topics.enable": "true",
            # Quick failure detection and catch-up for broker down/up tests.
            "replica.lag.time.max.ms": "5000",
            "replica.fetch.wait.max.ms": "100",
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "4000",
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000",
            "leader.imbalance.check.interval.seconds": "3600",
            # Small machines: few threads, small buffers.
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.replica.fetchers": "1",
            "num.recovery.threads.per.data.dir": "1",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(4 * 1024 * 1024),
            "log.cleaner.io.buffer.size": str(256 * 1024),
            "log.initial.task.delay.ms": "1000",
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": str(min(2, n)),
        }
        props.update(version_properties(self._kafka_version))
        if nd.rack is not None:
            props["broker.rack"] = nd.rack
        if sec is not None:
            props.update(sec.broker_properties())
        props.update(self._broker_config)
        props.update(nd.extra)
        return props

    def _write_properties(self, nd: _Node) -> None:
        text = "".join(f"{k}={v}\n" for k, v in self._properties(nd).items())
        (nd.dir / "server.properties").write_text(text)

    def _java_command(self, nd: _Node, main: str, *args: str) -> list[str]:
        assert self._libs is not None and self._work_dir is not None
        return [
            self._java,
            *self._jvm_options,
            f"-Dkafka.logs.dir={nd.dir / 'logs'}",
            f"-Dlog4j2.configurationFile={self._work_dir / 'log4j2.properties'}",
            "-cp",
            str(self._libs / "*"),
            main,
            *args,
        ]

    def _format(self) -> None:
        assert self._libs is not None
        tool = _storage_tool_class(self._libs)
        scram = self._security.scram_arguments() if self._security is not None else []
        procs: list[tuple[_Node, subprocess.Popen[bytes]]] = []
        for nd in self._nodes():
            cmd = self._java_command(
                nd,
                tool,
                "format",
                "-t",
                self._cluster_id,
                "-c",
                str(nd.dir / "server.properties"),
                *scram,
            )
            out = open(nd.dir / "format.log", "wb")  # noqa: SIM115 - closed below
            try:
                procs.append(
                    (
                        nd,
                        subprocess.Popen(
                            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                        ),
                    )
                )
            finally:
                out.close()
        failed: list[str] = []
        for nd, proc in procs:
            try:
                code = proc.wait(self._startup_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0:
                text = (nd.dir / "format.log").read_text(errors="replace").strip()
                lines = [ln for ln in text.splitlines() if ln.strip()][-5:]
                failed.append(f"broker {nd.node_id}: {' | '.join(lines)}")
        if failed:
            raise KafkaClusterError(
                f"formatting the Kafka storage failed ({self._work_dir}): " + "; ".join(failed),
                self._work_dir,
            )

    def _spawn(self, nd: _Node) -> None:
        assert nd.proc is None
        for port in (nd.port, nd.controller_port, nd.secure_port):
            if port is not None and not _port_free(port):
                raise KafkaPortInUseError(
                    f"port {port} on 127.0.0.1 is in use: broker {nd.node_id} cannot listen "
                    "on it (another process took it)",
                    self._work_dir,
                )
        nd.starts += 1
        nd.out = open(nd.dir / "logs" / "stdout.log", "ab")  # noqa: SIM115 - closed at stop
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_", "JAVA_TOOL"))}
        nd.proc = subprocess.Popen(
            self._java_command(nd, "kafka.Kafka", str(nd.dir / "server.properties")),
            stdin=subprocess.DEVNULL,
            stdout=nd.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            cwd=str(nd.dir),
        )
        _reaper.watch(nd.proc.pid)

    def _tail(self, nd: _Node, lines: int = 12) -> str:
        chunks: list[str] = []
        for path in (nd.log_file, nd.dir / "logs" / "stdout.log"):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            interesting = [ln for ln in text.splitlines() if ln.strip()]
            if interesting:
                chunks.append(" | ".join(interesting[-lines:]))
        return " || ".join(chunks) or "(no log)"

    def _check_alive(self, nodes: Iterable[int]) -> None:
        for node_id in nodes:
            nd = self._procs.nodes[node_id]
            if nd.proc is not None and nd.proc.poll() is not None:
                code = nd.proc.returncode
                text = ""
                try:
                    text = nd.log_file.read_text(errors="replace")
                    text += (nd.dir / "logs" / "stdout.log").read_text(errors="replace")
                except OSError:
                    pass
                if "Address already in use" in text or "BindException" in text:
                    raise KafkaPortInUseError(
                        f"broker {node_id} could not listen on its ports on 127.0.0.1 "
                        f"({nd.port}, {nd.controller_port}): address already in use",
                        self._work_dir,
                    )
                raise KafkaClusterError(
                    f"Kafka broker {node_id} exited with status {code}; logs in "
                    f"{nd.dir / 'logs'}: {self._tail(nd)}",
                    self._work_dir,
                )

    def _running(self) -> dict[int, tuple[str, int]]:
        """The brokers neither down nor frozen: id -> PLAINTEXT address."""
        gone = self._down | self.frozen_brokers
        return {n: (b.host, b.port) for n, b in self._brokers.items() if n not in gone}

    def _live_nodes(self) -> set[int]:
        return brokers_named(self._running())

    def _wait_brokers(self, wanted: set[int], timeout: float) -> None:
        """Wait until every running broker names ``wanted`` and every other running broker
        in its own Metadata: each learns of the others from the metadata log at its own
        pace, and a test may ask any of them."""
        deadline = time.monotonic() + timeout
        last: object = "no answer yet"
        while True:
            self._check_alive(wanted)
            running = self._running()
            behind = brokers_not_seeing(running, wanted | set(running))
            if not behind:
                return
            last = f"brokers not seeing all of {sorted(wanted | set(running))} yet: {behind}"
            if time.monotonic() >= deadline:
                tails = "; ".join(
                    f"broker {i}: {self._tail(self._procs.nodes[i], 4)}" for i in sorted(wanted)
                )
                raise KafkaClusterError(
                    f"the Kafka cluster did not come up in {timeout:.0f} s ({last}); logs in "
                    f"{self._work_dir}: {tails}",
                    self._work_dir,
                )
            time.sleep(0.25)

    def close(self, *, keep_logs: bool | None = None) -> None:
        """Stop every broker (SIGTERM, then SIGKILL after ``stop_timeout``) and remove the
        work directory unless it was given, ``keep_work_dir`` is set, or something failed.
        Safe to call more than once.

        Arguments:
            keep_logs: True to keep the work directory this time, False to remove it even
                after a failure (when this object created it).
        """
        with self._lock:
            self._state = "closed"
            self._shutdown(keep_logs)

    stop = close

    def _shutdown(self, keep_logs: bool | None = None) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        self._procs.stop_all(self._stop_timeout)
        self._finalizer.detach()
        keep = self._keep_work_dir or self._failed if keep_logs is None else keep_logs
        if self._work_dir is not None and self._created_work_dir and not keep:
            shutil.rmtree(self._work_dir, ignore_errors=True)
        elif self._work_dir is not None and (self._failed or keep):
            log.warning("Kafka broker logs kept in %s", self._work_dir)

    def mark_failed(self) -> None:
        """Keep the logs at :meth:`close` (a test that used the cluster failed)."""
        self._failed = True

    def _exiting_on_error(self) -> None:
        self._failed = True

    def __repr__(self) -> str:
        boot = ",".join(b.address for b in self._brokers.values())
        return (
            f"<KafkaCluster {self._kafka_version} {self._state} brokers={self._broker_count} "
            f"racks={list(self._racks)} bootstrap={boot!r}>"
        )

    def _require_running(self) -> None:
        self._clients()

    def _clients(self) -> ClientPool:
        if self._state != "running" or self._pool is None:
            raise RuntimeError(
                "the KafkaCluster is not running: call start() or use it as a context manager"
            )
        return self._pool

    # -- layout ----------------------------------------------------------------------------
    @property
    def kafka_version(self) -> str:
        """The Apache Kafka release the brokers run."""
        return self._kafka_version

    @property
    def features(self) -> KafkaFeatures:
        """What this cluster's Kafka release offers (see :func:`.kafka_features`)."""
        return kafka_features(self._kafka_version, self._broker_config)

    @property
    def cluster_id(self) -> str:
        """The cluster id the storage was formatted with."""
        return self._cluster_id

    @property
    def work_dir(self) -> Path | None:
        """The directory of the brokers' data and logs (``broker-N/logs/server.log``)."""
        return self._work_dir

    def log_file(self, broker_id: int) -> Path:
        """The broker's ``server.log``."""
        return self._node(broker_id).log_file

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:port,..."`` of every broker in id order: the secured listeners when
        ``security_protocol`` is not PLAINTEXT, else the plain ones."""
        self._clients()
        if self._security is not None and not self._plaintext_bootstrap:
            return self._security.bootstrap_servers
        return self.plaintext_bootstrap_servers

    @property
    def plaintext_bootstrap_servers(self) -> str:
        """The brokers' PLAINTEXT listeners (also used between brokers)."""
        return ",".join(self._brokers[n].address for n in sorted(self._brokers))

    @property
    def front(self) -> KafkaSecurity | None:
        """The :class:`KafkaSecurity` of a secured cluster (CA file, client options), else
        ``None`` (named as :attr:`EmbeddedCluster.front` so tests run on either)."""
        return self._security

    security = front

    def _node(self, broker_id: int) -> _Node:
        if isinstance(broker_id, bool) or not isinstance(broker_id, int):
            raise TypeError(f"broker id must be an int, got {broker_id!r}")
        try:
            return self._procs.nodes[broker_id]
        except KeyError:
            raise ValueError(
                f"no broker {broker_id}; brokers are 1..{self._broker_count}"
            ) from None

    # -- topics ----------------------------------------------------------------------------
    def _create_topic(self, request: _TopicRequest) -> list[PartitionInfo]:
        name = request.name
        timeout = 60.0 if request.timeout is None else request.timeout
        topic, assignment = self._assigned_topic(request)
        deadline = time.monotonic() + timeout
        attempt = 0
        backoff = _ADMIN_RETRY.start()
        while True:
            attempt += 1
            futures = self._clients().admin().create_topics([topic], request_timeout=timeout)
            try:
                futures[name].result()
                break
            except Exception as exc:
                code = _admin_error_name(exc)
                if attempt > 1 and code == "TOPIC_ALREADY_EXISTS":
                    break  # an earlier attempt created it before its answer was lost
                # librdkafka's admin client answers _UNSUPPORTED_FEATURE while it has no
                # API versions of the broker it picked (a connection made as brokers
                # restart): a new admin client and another try settle it.
                transient = code in _TRANSIENT_ADMIN_ERRORS or _admin_error_retriable(exc)
                if not transient or time.monotonic() >= deadline:
                    raise KafkaClusterError(f"creating topic {name!r} failed: {exc}") from exc
                log.debug("creating topic %r: %s; trying again", name, exc)
                self._clients().reset_admin()
                time.sleep(backoff.next())
        self._topics.add(name)
        parts = self._await_leaders(name, assignment, deadline, 0.1)
        # Every live broker knows the topic and its leaders, not only the one that answered.
        gone = self._down | self.frozen_brokers
        live = [(b.host, b.port) for n, b in self._brokers.items() if n not in gone]
        leaders = {name: {p.partition: p.leader for p in parts or ()}}
        if parts is None or not await_leaders_seen(live, leaders, deadline):
            raise KafkaClusterError(f"topic {name!r} did not get its leaders in {timeout} s")
        return parts

    def in_sync_replicas(self, topic: str) -> dict[int, tuple[int, ...]]:
        """Partition -> its in-sync replicas, from Metadata."""
        tmd = self._clients().admin().list_topics(topic=topic, timeout=10).topics.get(topic)
        if tmd is None or tmd.error is not None:
            raise KeyError(f"unknown topic {topic!r}")
        return {p: tuple(tmd.partitions[p].isrs) for p in sorted(tmd.partitions)}

    def delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        """Delete the records of a partition before ``before_offset`` (DeleteRecords: the
        log start offset moves up)."""
        ck = __import__("confluent_kafka", fromlist=["TopicPartition"])
        futures = (
            self._clients()
            .admin()
            .delete_records(
                [ck.TopicPartition(topic, partition, before_offset)], request_timeout=30
            )
        )
        for future in futures.values():
            future.result()

    # -- brokers ---------------------------------------------------------------------------
    def broker_down(
        self, broker_id: int, *, kill: bool = False, timeout: float | None = None
    ) -> None:
        """Stop a broker's JVM and wait until the cluster has moved on without it.

        With SIGTERM (default) the broker shuts down in a controlled way: the controller moves
        the leadership of its partitions to other in-sync replicas first. With ``kill=True``
        it is SIGKILLed (a crash); the controller fences it after ``broker.session.timeout.ms``.
        A frozen broker (:meth:`freeze_broker`) is resumed right after the signal.
        Returns once the broker is out of the cluster's metadata and leads no partition of
        the topics made with :meth:`create_topic` (``timeout``: at most that many seconds,
        default ``startup_timeout``).
        """
        with self._lock:
            nd = self._node(broker_id)
            self._clients()
            if broker_id in self._down:
                return
            timeout = self._startup_timeout if timeout is None else timeout
            self._procs.stop(nd, self._stop_timeout, kill=kill)
            self._down.add(broker_id)
            deadline = time.monotonic() + timeout
            while True:
                try:
                    gone = broker_id not in self._live_nodes() and not any(
                        info.leader == broker_id
                        for t in self._topics
                        for info in self._read_partitions(t)
                    )
                except Exception:
                    gone = False
                if gone:
                    return
                if time.monotonic() >= deadline:
                    raise KafkaClusterError(
                        f"broker {broker_id} stopped but the cluster still lists it after "
                        f"{timeout} s"
                    )
                time.sleep(0.2)

    def broker_up(
        self, broker_id: int, *, restore_leaders: bool = True, timeout: float | None = None
    ) -> None:
        """Start a broker stopped with :meth:`broker_down` again and wait until it is back:
        registered, in the in-sync replicas of every partition it holds (of the topics made
        with :meth:`create_topic`), and (``restore_leaders``) leading again the partitions
        whose preferred leader it is.
        """
        with self._lock:
            nd = self._node(broker_id)
            self._clients()
            if broker_id not in self._down:
                return
            self._spawn(nd)
            self._down.discard(broker_id)
            self._await_back(broker_id, restore_leaders, timeout)

    def _await_back(self, broker_id: int, restore_leaders: bool, timeout: float | None) -> None:
        """Wait until the broker is registered, in sync, and (``restore_leaders``) leading."""
        timeout = self._startup_timeout if timeout is None else timeout
        self._wait_brokers({broker_id}, timeout)
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive([broker_id])
            lagging = [
                (t, info.partition)
                for t in self._topics
                for info in self._read_partitions(t)
                if broker_id in info.replicas
                and broker_id not in self.in_sync_replicas(t).get(info.partition, ())
            ]
            if not lagging:
                break
            if time.monotonic() >= deadline:
                raise KafkaClusterError(
                    f"broker {broker_id} did not catch up in {timeout} s: {lagging[:5]}"
                )
            time.sleep(0.2)
        if restore_leaders:
            self._elect_preferred(broker_id, deadline)

    # -- freezing (SIGSTOP / SIGCONT) ------------------------------------------------------
    @property
    def frozen_brokers(self) -> frozenset[int]:
        """Ids of the brokers currently frozen with :meth:`freeze_broker`."""
        return frozenset(n.node_id for n in self._procs.nodes.values() if n.frozen)

    def freeze_broker(self, broker_id: int) -> None:
        """Freeze a broker's JVM with SIGSTOP: a hung broker (a long GC pause, a stalled
        VM). Its sockets stay open but nothing answers; the controller fences it after
        ``broker.session.timeout.ms`` and the leaders drop it from the in-sync replicas
        after ``replica.lag.time.max.ms``. Returns at once; :meth:`thaw_broker` resumes it
        (:meth:`broker_down` and :meth:`close` resume it too). Does nothing when it is
        frozen already. Meanwhile the cluster's own admin calls (``in_sync_replicas``...)
        may time out when they happen to ask the frozen broker.

        Raises:
            KafkaClusterError: the broker is down (or its JVM has exited).
        """
        with self._lock:
            nd = self._node(broker_id)
            self._clients()
            if nd.frozen:
                return
            if broker_id in self._down or not signal_node(nd, signal.SIGSTOP):
                raise KafkaClusterError(f"broker {broker_id} is not running: cannot freeze it")
            nd.frozen = True
            log.info("broker %d frozen (SIGSTOP)", broker_id)

    def thaw_broker(
        self,
        broker_id: int,
        *,
        wait: bool = True,
        restore_leaders: bool = True,
        timeout: float | None = None,
    ) -> None:
        """Resume a broker frozen with :meth:`freeze_broker` (SIGCONT). With ``wait`` (the
        default) return once it is back as :meth:`broker_up` waits for: registered, in the
        in-sync replicas of its partitions and (``restore_leaders``) leading its preferred
        partitions again. Does nothing when it is not frozen."""
        with self._lock:
            nd = self._node(broker_id)
            self._clients()
            if not nd.frozen:
                return
            nd.frozen = False
            if not signal_node(nd, signal.SIGCONT):
                self._check_alive([broker_id])
            log.info("broker %d thawed (SIGCONT)", broker_id)
            if wait:
                self._await_back(broker_id, restore_leaders, timeout)

    @contextmanager
    def frozen_broker(self, broker_id: int, *, wait: bool = True) -> Iterator[None]:
        """``with kafka.frozen_broker(2): ...``: :meth:`freeze_broker`, then
        :meth:`thaw_broker` (``wait``) when the block ends, even by an exception."""
        self.freeze_broker(broker_id)
        try:
            yield
        finally:
            self.thaw_broker(broker_id, wait=wait)

    def _elect_preferred(self, broker_id: int, deadline: float) -> None:
        """Make ``broker_id`` lead its preferred partitions again, as every live broker sees
        it. Asks again while it does not show: leadership can move once more after a thaw
        (the broker fenced again), and the broker that answers a metadata request may be
        behind the others, so no single answer ends the loop."""
        ck = __import__("confluent_kafka", fromlist=["TopicPartition", "ElectionType"])
        while True:
            mine = {
                t: {i.partition: broker_id for i in self._read_partitions(t)
                    if tuple(i.replicas[:1]) == (broker_id,)}
                for t in self._topics
            }  # fmt: skip
            gone = self._down | self.frozen_brokers
            live = [(b.host, b.port) for n, b in self._brokers.items() if n not in gone]
            if await_leaders_seen(live, mine, time.monotonic()):  # one look
                return
            wanted = [ck.TopicPartition(t, p) for t, parts in mine.items() for p in parts]
            if wanted:
                try:
                    admin = self._clients().admin()
                    admin.elect_leaders(ck.ElectionType.PREFERRED, wanted).result()
                except Exception as exc:  # ELECTION_NOT_NEEDED etc.: check again
                    log.debug("preferred leader election: %s", exc)
            if await_leaders_seen(live, mine, min(deadline, time.monotonic() + 5.0)):
                return
            if time.monotonic() >= deadline:
                views = describe_leader_views(live, mine)
                raise KafkaClusterError(
                    f"not every broker sees broker {broker_id} lead again: {views}"
                )
            time.sleep(0.2)

    def restart_broker(self, broker_id: int, *, kill: bool = False) -> None:
        """:meth:`broker_down` then :meth:`broker_up`."""
        self.broker_down(broker_id, kill=kill)
        self.broker_up(broker_id)

    def broker_pid(self, broker_id: int) -> int | None:
        """The process id of a broker's JVM (None when it is down)."""
        nd = self._node(broker_id)
        return nd.proc.pid if nd.proc is not None else None
