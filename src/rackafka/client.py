"""The cluster client: bootstrap, metadata, and a connection per broker.

:class:`KafkaClient` owns the :class:`~rackafka.cluster.ClusterMetadata`,
refreshes it every ``metadata_max_age_ms`` and on demand (concurrent demands
share one request), and keeps one :class:`~rackafka.net.connection.Connection`
per broker id, opened on first use and closed after ``connections_max_idle_ms``
without traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Iterable, Sequence
from typing import Any

from rackafka.cluster import Broker, ClusterMetadata
from rackafka.errors import (
    KafkaConfigurationError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    for_code,
)
from rackafka.net.connection import Connection, Connector, plaintext_connector
from rackafka.protocol.apis.find_coordinator import FIND_COORDINATOR
from rackafka.protocol.apis.metadata import METADATA
from rackafka.protocol.schema import Api

log = logging.getLogger(__name__)

DEFAULT_PORT = 9092

#: ``security_protocol`` values and whether this version supports them.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _consume_refresh_error(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("metadata refresh failed: %s", task.exception())


def parse_bootstrap_servers(servers: str | Sequence[str]) -> list[tuple[str, int]]:
    """Parse ``bootstrap_servers`` into ``(host, port)`` pairs.

    Accepts a comma-separated string or a list of ``host[:port]`` entries;
    IPv6 addresses go in brackets (``[::1]:9092``).  The default port is 9092.

    Raises:
        KafkaConfigurationError: an entry cannot be parsed (the message names
            ``bootstrap_servers`` and the entry).
    """
    if isinstance(servers, str):
        items = [s for s in (x.strip() for x in servers.split(",")) if s]
    elif isinstance(servers, (list, tuple)) and all(isinstance(s, str) for s in servers):
        items = [s.strip() for s in servers]
    else:
        raise KafkaConfigurationError(
            "bootstrap_servers must be a 'host[:port]' string (comma separated) or a list "
            f"of them, not {servers!r}"
        )
    if not items:
        raise KafkaConfigurationError("bootstrap_servers is empty: give at least one host:port")
    out: list[tuple[str, int]] = []
    for item in items:
        host: str
        port_s: str | None
        if item.startswith("["):
            end = item.find("]")
            if end < 0:
                raise KafkaConfigurationError(f"bootstrap_servers entry {item!r}: missing ']'")
            host = item[1:end]
            rest = item[end + 1 :]
            if rest and not rest.startswith(":"):
                raise KafkaConfigurationError(f"bootstrap_servers entry {item!r} is malformed")
            port_s = rest[1:] if rest else None
        elif item.count(":") > 1:
            host, port_s = item, None  # bare IPv6 address
        elif ":" in item:
            host, port_s = item.rsplit(":", 1)
        else:
            host, port_s = item, None
        if not host:
            raise KafkaConfigurationError(f"bootstrap_servers entry {item!r} has no host")
        try:
            port = int(port_s) if port_s else DEFAULT_PORT
        except ValueError:
            raise KafkaConfigurationError(
                f"bootstrap_servers entry {item!r}: port {port_s!r} is not a number"
            ) from None
        if not 0 < port < 65536:
            raise KafkaConfigurationError(f"bootstrap_servers entry {item!r}: port out of range")
        out.append((host, port))
    return out


class KafkaClient:
    """Connections to a cluster and its metadata.

    Arguments:
        bootstrap_servers: ``host[:port]`` string (comma separated) or list.
        client_id: sent in every request header.
        metadata_max_age_ms: metadata is refreshed at least this often.
        request_timeout_ms: how long a request may wait for its response.
        retry_backoff_ms: pause before retrying a failed metadata refresh or
            connection (doubling up to ten times this on repeated failures).
        connections_max_idle_ms: idle connections are closed after this.
        connector: opens the stream to a broker (TLS and test transports).
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = "localhost",
        *,
        client_id: str = "rackafka",
        metadata_max_age_ms: int = 300000,
        request_timeout_ms: int = 40000,
        retry_backoff_ms: int = 100,
        connections_max_idle_ms: int = 540000,
        security_protocol: str = "PLAINTEXT",
        connector: Connector | None = None,
        client_software_version: str = "0",
    ) -> None:
        self.bootstrap = parse_bootstrap_servers(bootstrap_servers)
        if security_protocol not in SECURITY_PROTOCOLS:
            raise KafkaConfigurationError(
                f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                f"not {security_protocol!r}"
            )
        if security_protocol != "PLAINTEXT" and connector is None:
            raise KafkaConfigurationError(
                f"security_protocol={security_protocol!r} is not supported yet: only PLAINTEXT"
            )
        self.client_id = client_id
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff = retry_backoff_ms / 1000
        self.connections_max_idle = connections_max_idle_ms / 1000
        self.cluster = ClusterMetadata()
        self._connector = connector or plaintext_connector
        self._software_version = client_software_version
        self._conns: dict[int, Connection] = {}
        #: Connections of other channels (e.g. "group": the coordinator's own
        #: connection, so that heartbeats never queue behind a long-polling Fetch).
        self._channels: dict[tuple[int, str], Connection] = {}
        self._connecting: dict[tuple[int, str], asyncio.Task[Connection]] = {}
        self._bootstrap_conn: Connection | None = None
        self._topics: set[str] = set()
        self._all_topics = False
        self._refresh: asyncio.Task[None] | None = None
        self._bg: asyncio.Task[None] | None = None
        self._wakeup = asyncio.Event()
        self._closed = False
        self._node_backoff: dict[int, tuple[float, int]] = {}
        #: Metadata requests sent after bootstrap (observability and tests).
        self.metadata_requests = 0

    # -- lifecycle -------------------------------------------------------------

    async def _open_address(self, host: str, port: int, node_id: int | None = None) -> Connection:
        """Open and negotiate a connection with this client's settings."""
        return await Connection.open(
            host,
            port,
            node_id=node_id,
            client_id=self.client_id,
            connector=self._connector,
            request_timeout_ms=self.request_timeout_ms,
            client_software_version=self._software_version,
        )

    async def bootstrap_cluster(self) -> None:
        """Connect to a bootstrap server and load metadata.

        Raises:
            KafkaConnectionError: no bootstrap server answered; the message
                names every server tried and why it failed.
        """
        failures = []
        for host, port in self.bootstrap:
            try:
                conn = await self._open_address(host, port)
            except KafkaError as exc:
                failures.append(f"{host}:{port} ({exc})")
                continue
            try:
                response = await conn.request(METADATA, self._metadata_request())
            except KafkaError as exc:
                failures.append(f"{host}:{port} ({exc})")
                await conn.aclose()
                continue
            self.cluster.update(response, all_topics=True)
            # Keep the connection only as a metadata channel until a broker one exists.
            self._bootstrap_conn = conn
            break
        else:
            raise KafkaConnectionError(
                "unable to bootstrap from any of the bootstrap_servers: " + "; ".join(failures)
            )
        if self._bg is None:
            self._bg = asyncio.get_running_loop().create_task(self._background())

    async def close(self) -> None:
        """Close every connection and stop background work."""
        self._closed = True
        tasks: list[asyncio.Task[Any]] = [t for t in (self._bg, self._refresh) if t is not None]
        tasks += list(self._connecting.values())
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        conns = list(self._conns.values()) + list(self._channels.values())
        if self._bootstrap_conn is not None:
            conns.append(self._bootstrap_conn)
        self._conns.clear()
        self._channels.clear()
        self._bootstrap_conn = None
        await asyncio.gather(*(c.aclose() for c in conns), return_exceptions=True)

    # -- topics of interest ----------------------------------------------------

    def set_topics(self, topics: Iterable[str]) -> None:
        """Limit metadata to these topics (plus any added later)."""
        topics = set(topics)
        if topics - self._topics:
            self._topics |= topics
            self.request_update()
        else:
            self._topics = topics

    def add_topics(self, topics: Iterable[str]) -> None:
        """Add topics of interest; a refresh follows when any is new."""
        new = set(topics) - self._topics
        if new:
            self._topics |= new
            self.request_update()

    def want_all_topics(self, value: bool = True) -> None:
        """Ask metadata for every topic (pattern subscriptions, ``topics()``)."""
        self._all_topics = value

    def _metadata_request(self) -> Any:
        # Metadata v1+: a null topic list asks for every topic, an empty one for none.
        topics: list[dict[str, Any]] | None
        if self._all_topics:
            topics = None
        else:
            topics = [{"name": t} for t in sorted(self._topics)]
        return METADATA.Request(topics=topics, allow_auto_topic_creation=False)

    # -- metadata --------------------------------------------------------------

    def request_update(self) -> asyncio.Future[None]:
        """Start a metadata refresh, or join the one in flight.

        Before :meth:`bootstrap_cluster` (which loads metadata itself) and after
        :meth:`close` nothing is started: a refresh then would open a connection
        that nobody closes.
        """
        if self._closed or self._bg is None:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.get_running_loop().create_task(self._do_refresh())
            # Most callers fire and forget: mark a failure as seen (it is retried in
            # the background), so asyncio does not log "exception never retrieved".
            self._refresh.add_done_callback(_consume_refresh_error)
        return self._refresh

    async def refresh_metadata(self) -> None:
        """Refresh metadata now (coalesced with any refresh in flight).

        Raises:
            KafkaConnectionError: no broker could answer.
        """
        await asyncio.shield(self.request_update())

    async def fetch_all_metadata(self) -> ClusterMetadata:
        """Metadata of every topic, without changing the topics of interest."""
        saved = self._all_topics
        self._all_topics = True
        try:
            await self.refresh_metadata()
        finally:
            self._all_topics = saved
        return self.cluster

    async def _do_refresh(self) -> None:
        errors = []
        candidates = self._least_loaded_order()
        for node_id in candidates:
            try:
                conn = await self._metadata_connection(node_id)
                self.metadata_requests += 1
                response = await conn.request(METADATA, self._metadata_request())
            except KafkaError as exc:
                errors.append(f"node {node_id}: {exc}")
                continue
            self.cluster.update(response, all_topics=True)
            return
        raise KafkaConnectionError(
            "metadata refresh failed: " + "; ".join(errors or ["no brokers"])
        )

    def _least_loaded_order(self) -> list[int]:
        """Brokers to ask for metadata: connected first, fewest in flight first."""
        ids = list(self.cluster.brokers)
        random.shuffle(ids)
        ids.sort(
            key=lambda n: (
                0 if n in self._conns and self._conns[n].connected else 1,
                self._conns[n].in_flight if n in self._conns else 0,
            )
        )
        # -1 stands for the bootstrap connection / servers.
        return [*ids, -1]

    async def _metadata_connection(self, node_id: int) -> Connection:
        if node_id >= 0:
            return await self.connect(node_id)
        conn = self._bootstrap_conn
        if conn is not None and conn.connected:
            return conn
        failures = []
        for host, port in self.bootstrap:
            try:
                conn = await self._open_address(host, port)
            except KafkaError as exc:
                failures.append(f"{host}:{port} ({exc})")
                continue
            self._bootstrap_conn = conn
            return conn
        raise KafkaConnectionError("no bootstrap server answered: " + "; ".join(failures))

    async def _background(self) -> None:
        """Periodic metadata refresh, retry with backoff, idle connection reaping."""
        failures = 0
        while not self._closed:
            age = time.monotonic() - self.cluster.updated_at
            if failures:
                delay = min(self.retry_backoff * (2 ** (failures - 1)), self.retry_backoff * 10)
            else:
                delay = max(0.0, self.metadata_max_age - age)
            delay = min(delay, max(self.connections_max_idle / 2, 0.05))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), delay)
            self._wakeup.clear()
            self._reap_idle()
            if failures or time.monotonic() - self.cluster.updated_at >= self.metadata_max_age:
                try:
                    await self.refresh_metadata()
                    failures = 0
                except KafkaError as exc:
                    failures += 1
                    log.warning("metadata refresh failed (attempt %d): %s", failures, exc)

    def _reap_idle(self) -> None:
        now = time.monotonic()
        for node_id, conn in list(self._conns.items()):
            if conn.in_flight == 0 and now - conn.last_used > self.connections_max_idle:
                log.debug("closing idle connection to node %d", node_id)
                del self._conns[node_id]
                conn.close()
        for key, conn in list(self._channels.items()):
            if conn.in_flight == 0 and now - conn.last_used > self.connections_max_idle:
                del self._channels[key]
                conn.close()

    # -- connections -------------------------------------------------------------

    def is_backing_off(self, node_id: int) -> bool:
        """Whether connecting to ``node_id`` failed recently (``retry_backoff_ms``)."""
        entry = self._node_backoff.get(node_id)
        return entry is not None and time.monotonic() < entry[0]

    def connection_if_ready(self, node_id: int) -> Connection | None:
        conn = self._conns.get(node_id)
        return conn if conn is not None and conn.connected else None

    async def connect(self, node_id: int, *, channel: str = "") -> Connection:
        """The connection to broker ``node_id``, opened if needed.

        Concurrent callers share one connection attempt.  A non-empty
        ``channel`` names a separate connection to the same broker (the group
        coordinator uses ``"group"``: a broker answers one connection's
        requests in order, so heartbeats must not wait behind a Fetch).

        Raises:
            KafkaConnectionError: the broker is unknown or cannot be reached.
        """
        conn = self._channels.get((node_id, channel)) if channel else self._conns.get(node_id)
        if conn is not None and conn.connected:
            return conn
        task = self._connecting.get((node_id, channel))
        if task is None:
            broker = self.cluster.broker(node_id)
            if broker is None:
                raise KafkaConnectionError(f"broker {node_id} is not in the cluster metadata")
            task = asyncio.get_running_loop().create_task(self._open(broker, channel))
            self._connecting[(node_id, channel)] = task
        return await asyncio.shield(task)

    async def _open(self, broker: Broker, channel: str = "") -> Connection:
        try:
            conn = await self._open_address(broker.host, broker.port, broker.node_id)
        except KafkaError:
            _until, failures = self._node_backoff.get(broker.node_id, (0.0, 0))
            delay = min(self.retry_backoff * (2**failures), self.retry_backoff * 10)
            self._node_backoff[broker.node_id] = (time.monotonic() + delay, failures + 1)
            raise
        finally:
            self._connecting.pop((broker.node_id, channel), None)
        self._node_backoff.pop(broker.node_id, None)
        if channel:
            self._channels[(broker.node_id, channel)] = conn
        else:
            self._conns[broker.node_id] = conn
        conn.add_close_callback(self._on_close)
        return conn

    def _on_close(self, conn: Connection, reason: BaseException) -> None:
        if conn.node_id is not None and self._conns.get(conn.node_id) is conn:
            del self._conns[conn.node_id]
            log.debug("connection to node %s closed: %s", conn.node_id, reason)
        for key, c in list(self._channels.items()):
            if c is conn:
                del self._channels[key]

    async def send(
        self,
        node_id: int,
        api: Api,
        request: Any,
        *,
        version: int | None = None,
        timeout: float | None = None,
        channel: str = "",
    ) -> Any:
        """Send ``request`` to broker ``node_id`` and return the response."""
        conn = await self.connect(node_id, channel=channel)
        return await conn.request(api, request, version=version, timeout=timeout)

    async def find_coordinator(self, key: str, key_type: int, timeout: float) -> int:
        """The node id of the coordinator of ``key`` (key type 0: group, 1: transaction).

        Retriable errors are retried with backoff until ``timeout`` seconds pass.

        Raises:
            KafkaTimeoutError: no coordinator was found in time.
            BrokerResponseError: a non-retriable error (e.g. authorization).
        """
        deadline = time.monotonic() + timeout
        delay = self.retry_backoff
        last: object = None
        while time.monotonic() < deadline:
            nodes = sorted(self.cluster.brokers)
            ready = [n for n in nodes if self.connection_if_ready(n) is not None]
            candidates: list[int] = ready or nodes
            node = candidates[0] if candidates else None
            if node is None:
                last = "no brokers known"
            else:
                try:
                    version = await self.api_version(node, FIND_COORDINATOR)
                    resp = await self.send(
                        node,
                        FIND_COORDINATOR,
                        FIND_COORDINATOR.Request(
                            key=key, key_type=key_type, coordinator_keys=[key]
                        ),
                        version=version,
                    )
                except KafkaError as exc:
                    last = exc
                else:
                    if version >= 4:
                        found = resp.coordinators[0] if resp.coordinators else None
                        code = found.error_code if found is not None else 15
                        node_id, host, port = (
                            (found.node_id, found.host, found.port) if found else (-1, "", 0)
                        )
                    else:
                        code, node_id, host, port = (
                            resp.error_code,
                            resp.node_id,
                            resp.host,
                            resp.port,
                        )
                    if not code:
                        if self.cluster.broker(node_id) is None:
                            self.cluster.add_brokers([Broker(node_id, host, port)])
                        return int(node_id)
                    err = for_code(code)
                    if not err.retriable:
                        raise err(f"FindCoordinator for {key!r} (key type {key_type})")
                    last = err.__name__
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.retry_backoff * 10)
        raise KafkaTimeoutError(f"no coordinator found for {key!r} in {timeout:.3g} s: {last}")

    async def api_version(self, node_id: int, api: Api, *, channel: str = "") -> int:
        """The version of ``api`` negotiated with ``node_id``."""
        conn = await self.connect(node_id, channel=channel)
        return conn.version(api)

    async def wait_for_metadata(self, predicate: Any, timeout: float) -> None:
        """Refresh metadata until ``predicate(cluster)`` holds or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while not predicate(self.cluster):
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"metadata did not reach the expected state in {timeout} s")
            with contextlib.suppress(KafkaConnectionError):
                await self.refresh_metadata()
            if not predicate(self.cluster):
                await asyncio.sleep(self.retry_backoff)
