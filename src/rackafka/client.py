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
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rackafka._backoff import Backoff, BackoffPolicy
from rackafka._tasks import cancel_and_wait
from rackafka.cluster import Broker, ClusterMetadata
from rackafka.config import parse_bootstrap_servers
from rackafka.errors import (
    AuthenticationFailedError,
    BrokerResponseError,
    CoordinatorNotAvailableError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    for_code,
    is_retriable,
)
from rackafka.net.connection import Connection, Connector
from rackafka.net.security import SecurityConfig
from rackafka.protocol.apis.find_coordinator import FIND_COORDINATOR
from rackafka.protocol.apis.metadata import METADATA
from rackafka.protocol.schema import Api

log = logging.getLogger(__name__)


def _consume_refresh_error(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("metadata refresh failed: %s", task.exception())


class KafkaClient:
    """Connections to a cluster and its metadata.

    Arguments:
        bootstrap_servers: ``host[:port]`` string (comma separated) or list.
        client_id: sent in every request header.
        metadata_max_age_ms: metadata is refreshed at least this often.
        request_timeout_ms: how long a request may wait for its response.
        retry_backoff_ms: the shortest pause between two metadata refreshes; it
            doubles while refreshes follow each other without a pause (a leader that
            stays unknown), up to ``retry_backoff_max_ms``, with 20 % jitter (KIP-580).
        retry_backoff_max_ms: the longest pause between metadata refreshes.
        reconnect_backoff_ms: the pause before connecting again to an address whose
            connection failed (or closed within ``reconnect_backoff_max_ms`` of opening);
            it doubles on each failure in a row, up to ``reconnect_backoff_max_ms``, with
            20 % jitter (KIP-144).  Per address, reset once a connection lasts.
        reconnect_backoff_max_ms: the longest pause between connection attempts.
        connections_max_idle_ms: idle connections are closed after this.
        security: TLS and SASL settings (default: PLAINTEXT).
        connector: opens the stream to a broker (test transports); default: the one
            ``security`` asks for.
        allow_auto_topic_creation: let a broker that has ``auto.create.topics.enable``
            create the topics of interest that do not exist (as the Java client and
            aiokafka do; the consumer's ``allow_auto_create_topics`` sets it).

    A connection that fails to authenticate (SASL or TLS) is not retried before
    ``reconnect_backoff_ms``; the failure is kept for the role on top to raise
    (:meth:`take_auth_failure`).
    """

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] = "localhost",
        *,
        client_id: str = "rackafka",
        metadata_max_age_ms: float = 300000,
        request_timeout_ms: float = 40000,
        retry_backoff_ms: float = 100,
        retry_backoff_max_ms: int = 1000,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        connections_max_idle_ms: float = 540000,
        security: SecurityConfig | None = None,
        connector: Connector | None = None,
        client_software_version: str = "0",
        allow_auto_topic_creation: bool = False,
    ) -> None:
        self.bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.security = security or SecurityConfig()
        #: The last authentication failure not yet raised to the user.
        self._auth_failure: AuthenticationFailedError | None = None
        #: Called with each authentication failure (a role wakes its waiting user).
        self.auth_failure_listeners: list[Callable[[AuthenticationFailedError], Any]] = []
        self.client_id = client_id
        self.metadata_max_age = metadata_max_age_ms / 1000
        self.request_timeout_ms = request_timeout_ms
        #: The waits between retries of a request (metadata refreshes, coordinator
        #: look-ups; the roles on top retry their requests by it too): retry_backoff_ms
        #: doubling up to retry_backoff_max_ms, 20 % jitter (KIP-580).
        self.retry_policy = BackoffPolicy(
            retry_backoff_ms, max(retry_backoff_max_ms, retry_backoff_ms)
        )
        #: The waits between connection attempts to one address (KIP-144).
        self.reconnect_policy = BackoffPolicy(
            reconnect_backoff_ms, max(reconnect_backoff_max_ms, reconnect_backoff_ms)
        )
        #: The policies' bounds in seconds.
        self.retry_backoff = self.retry_policy.initial
        self.retry_backoff_max = self.retry_policy.maximum
        self.reconnect_backoff = self.reconnect_policy.initial
        self.reconnect_backoff_max = self.reconnect_policy.maximum
        self.connections_max_idle = connections_max_idle_ms / 1000
        self.cluster = ClusterMetadata()
        self._connector = connector or self.security.connector()
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
        #: Per address whose last connection attempts failed: when to try again.
        self._reconnect: dict[tuple[str, int], Backoff] = {}
        #: No metadata refresh starts before this time; refreshes in a row so far.
        self._next_refresh_at = 0.0
        self._refresh_streak = 0
        #: Metadata requests sent after bootstrap (observability and tests).
        self.metadata_requests = 0

    # -- lifecycle -------------------------------------------------------------

    async def _open_address(self, host: str, port: int, node_id: int | None = None) -> Connection:
        """Open and negotiate a connection with this client's settings.

        Raises:
            KafkaConnectionError: the address is backing off after failures (no
                connection is attempted), or the connection failed.
        """
        if self._closed:
            raise KafkaConnectionError(f"not connecting to {host}:{port}: the client is closed")
        key = (host, port)
        backoff = self._reconnect.get(key)
        if backoff is not None and not backoff.ready():
            raise KafkaConnectionError(
                f"not connecting to {host}:{port} for {backoff.remaining():.3g} s: "
                f"{backoff.attempts} connection attempt(s) in a row failed"
            )
        try:
            conn = await Connection.open(
                host,
                port,
                node_id=node_id,
                client_id=self.client_id,
                connector=self._connector,
                request_timeout_ms=self.request_timeout_ms,
                client_software_version=self._software_version,
                security=self.security,
            )
        except KafkaError as exc:
            self._connection_failed(key)
            if isinstance(exc, AuthenticationFailedError):
                log.error("%s", exc)
                self._auth_failure = exc
                for listener in list(self.auth_failure_listeners):
                    listener(exc)
            raise
        if self._closed:
            # Closed while this connection was opened (a task that outlived close()): it
            # would be left open for the garbage collector (ResourceWarning).
            await conn.aclose()
            raise KafkaConnectionError(f"connection to {host}:{port}: the client is closed")
        opened = time.monotonic()

        def closed(_conn: Connection, _reason: BaseException) -> None:
            if time.monotonic() - opened < self.reconnect_backoff_max:
                self._connection_failed(key)  # closed right away: as good as failed
            else:
                self._reconnect.pop(key, None)

        conn.add_close_callback(closed)
        return conn

    def _connection_failed(self, key: tuple[str, int]) -> None:
        backoff = self._reconnect.get(key)
        if backoff is None:
            backoff = self._reconnect[key] = self.reconnect_policy.start()
        backoff.next()

    def take_auth_failure(self) -> AuthenticationFailedError | None:
        """The last authentication failure since the previous call, if any."""
        failure, self._auth_failure = self._auth_failure, None
        return failure

    async def bootstrap_cluster(self) -> None:
        """Connect to a bootstrap server and load metadata.

        Raises:
            AuthenticationFailedError: a bootstrap server refused the TLS handshake or
                the SASL credentials (and none answered).
            KafkaConnectionError: no bootstrap server answered; the message
                names every server tried and why it failed.
        """
        failures = []
        auth_failure: AuthenticationFailedError | None = None
        for host, port in self.bootstrap:
            try:
                conn = await self._open_address(host, port)
            except KafkaError as exc:
                if isinstance(exc, AuthenticationFailedError) and auth_failure is None:
                    auth_failure = exc
                failures.append(f"{host}:{port} ({exc})")
                continue
            try:
                response = await conn.request(METADATA, self._metadata_request())
            except KafkaError as exc:
                failures.append(f"{host}:{port} ({exc})")
                await conn.aclose()
                continue
            except BaseException:  # cancelled (a start() given up): no socket left behind
                conn.close()
                raise
            if self._closed:
                # close() ran while the answer was awaited: the connection is not kept
                # (it would be left open for the garbage collector: ResourceWarning).
                await conn.aclose()
                raise KafkaConnectionError("bootstrap: the client was closed")
            self.cluster.update(response, all_topics=True)
            # Keep the connection only as a metadata channel until a broker one exists.
            self._bootstrap_conn = conn
            break
        else:
            if auth_failure is not None:
                self._auth_failure = None
                raise auth_failure
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
        await cancel_and_wait(tasks)
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
            # As Java's client asks for new topics' metadata: at once, whatever pause
            # the refreshes before it built up (those waited for other answers).
            self._next_refresh_at = 0.0
            self._refresh_streak = 0
            self.request_update()

    def unknown_topics(self) -> set[str]:
        """Topics of interest that the last metadata did not describe."""
        if not self._topics or self.cluster.updated_at == 0:
            return set()
        return {t for t in self._topics if not self.cluster.partitions.get(t)}

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
        return METADATA.Request(
            topics=topics,
            allow_auto_topic_creation=self.allow_auto_topic_creation and topics is not None,
        )

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

    async def refresh_metadata(self, *, at_once: bool = False) -> None:
        """Refresh metadata (coalesced with any refresh in flight), after the pause that
        refreshes in a row take; ``at_once``: without that pause, for a caller that asks
        once per event that is itself paced (a group leader, once per rebalance).

        Raises:
            KafkaConnectionError: no broker could answer.
        """
        if at_once and (self._refresh is None or self._refresh.done()):
            self._next_refresh_at = 0.0
        await asyncio.shield(self.request_update())

    def force_metadata_update(self) -> asyncio.Future[bool]:
        """aiokafka's name: start a refresh (or join the one in flight; refreshes asked for
        in a row are paced as :meth:`refresh_metadata`'s); the future resolves to True once
        metadata came, False if no broker answered (or the client is closed)."""
        loop = asyncio.get_running_loop()
        result: asyncio.Future[bool] = loop.create_future()

        def done(refresh: asyncio.Future[None]) -> None:
            if not result.done():
                result.set_result(not refresh.cancelled() and refresh.exception() is None)

        if self._closed:
            result.set_result(False)
        else:
            self.request_update().add_done_callback(done)
        return result

    async def wait_for_topics(self, topics: Iterable[str], timeout: float) -> None:
        """Wait until every topic of ``topics`` has partitions in metadata, as aiokafka's
        consumer ``start()`` waits for its subscribed topics (a broker that creates topics
        on demand makes them meanwhile). Refreshes back off as every refresh in a row does.

        Raises:
            TopicAuthorizationFailedError: a topic may not be described.
            UnknownTopicOrPartitionError: a topic still has no partitions after
                ``timeout`` seconds.
        """
        wanted = sorted(set(topics))
        self.add_topics(wanted)
        deadline = time.monotonic() + timeout
        while True:
            if self._closed:
                raise KafkaConnectionError("the client was closed")
            missing = [t for t in wanted if not self.cluster.partitions_for_topic(t)]
            if not missing:
                return
            errors = self.cluster.topic_errors
            denied = [t for t in missing if errors.get(t) == TopicAuthorizationFailedError.errno]
            if denied:
                raise TopicAuthorizationFailedError(f"topics {denied} may not be described")
            left = deadline - time.monotonic()
            if left <= 0:
                raise UnknownTopicOrPartitionError(
                    f"topics {missing} have no partitions after {timeout:g} s (request_timeout_ms)"
                )
            with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                await asyncio.wait_for(self.refresh_metadata(), left)

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
        # KIP-580: refreshes in a row wait longer and longer (a leader election, a topic
        # that does not exist yet), so that a client without a usable leader stays idle.
        # Only refreshes asked for within the pause after the last one count as "in a
        # row"; periodic ones (metadata_max_age_ms) and rare ones do not.
        wait = self._next_refresh_at - time.monotonic()
        if wait > 0:
            self._refresh_streak += 1
            await asyncio.sleep(wait)
        elif -wait > self.retry_backoff_max:
            self._refresh_streak = 0  # a quiet period: start over from retry_backoff
        cluster = self.cluster
        before = (cluster.brokers, cluster.partitions, cluster.topic_errors)
        try:
            await self._refresh_once()
        finally:
            if (cluster.brokers, cluster.partitions, cluster.topic_errors) != before:
                # An answer that changed something is progress: the streak of answers
                # that told nothing new starts over (Java's "equivalent responses").
                self._refresh_streak = 0
            delay = self.retry_policy.delay(self._refresh_streak)
            self._next_refresh_at = time.monotonic() + delay
            if self.unknown_topics():
                # A topic of interest is not known (yet): the background loop, which may
                # be sleeping for metadata_max_age_ms, looks for it every
                # retry_backoff_max_ms from now on.
                self._wakeup.set()

    async def _refresh_once(self) -> None:
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
        failures = self.retry_policy.start()  # refreshes failed in a row
        while not self._closed:
            age = time.monotonic() - self.cluster.updated_at
            if failures.attempts:
                delay = failures.remaining()
            else:
                delay = max(0.0, self._max_metadata_age() - age)
            delay = min(delay, max(self.connections_max_idle / 2, 0.05))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), delay)
            self._wakeup.clear()
            self._reap_idle()
            # Asked again after the wait: a topic unknown before it may be known by now (a
            # refresh of its own found it), and then the short age no longer applies.
            if (
                failures.attempts
                or time.monotonic() - self.cluster.updated_at >= self._max_metadata_age()
            ):
                if not failures.attempts:
                    # A periodic refresh (metadata_max_age_ms) is never one "in a row":
                    # it goes now, and the KIP-580 pauses start over after it.
                    self._refresh_streak = 0
                    self._next_refresh_at = 0.0
                try:
                    await self.refresh_metadata()
                    failures.reset()
                except KafkaError as exc:
                    failures.next()
                    log.warning("metadata refresh failed (attempt %d): %s", failures.attempts, exc)

    def _max_metadata_age(self) -> float:
        # Topics asked for but not known yet (created after the consumer started) are
        # looked for again every retry_backoff_max_ms, not every metadata_max_age_ms.
        if self.unknown_topics():
            return min(self.metadata_max_age, self.retry_backoff_max)
        return self.metadata_max_age

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
        """Whether connecting to ``node_id`` waits after failures (``reconnect_backoff_ms``)."""
        broker = self.cluster.broker(node_id)
        if broker is None:
            return False
        backoff = self._reconnect.get((broker.host, broker.port))
        return backoff is not None and not backoff.ready()

    def connection_if_ready(self, node_id: int, channel: str = "") -> Connection | None:
        """The open connection to ``node_id`` (on ``channel``), or ``None``."""
        conn = self._channels.get((node_id, channel)) if channel else self._conns.get(node_id)
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
        finally:
            self._connecting.pop((broker.node_id, channel), None)
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

    def any_node(self) -> int:
        """A broker to ask cluster-wide questions: one already connected if there is one.

        Raises:
            KafkaConnectionError: no broker is known.
        """
        nodes = sorted(self.cluster.brokers)
        if not nodes:
            raise KafkaConnectionError("no brokers known")
        for n in nodes:
            if self.connection_if_ready(n) is not None:
                return n
        return nodes[0]

    async def lookup_coordinator(self, key: str, key_type: int) -> int:
        """Ask once for the coordinator of ``key`` (key type 0: group, 1: transaction) and
        return its node id, learning its address.

        Raises:
            KafkaError: the request failed, or the broker answered an error (the class of
                its code: callers retry those :func:`~rackafka.errors.is_retriable` says).
        """
        node = self.any_node()
        version = await self.api_version(node, FIND_COORDINATOR)
        request = FIND_COORDINATOR.Request(key=key, key_type=key_type, coordinator_keys=[key])
        resp = await self.send(node, FIND_COORDINATOR, request, version=version)
        if version >= 4:
            found = resp.coordinators[0] if resp.coordinators else None
            code = found.error_code if found is not None else CoordinatorNotAvailableError.errno
            node_id, host, port = (found.node_id, found.host, found.port) if found else (-1, "", 0)
        else:
            code, node_id, host, port = resp.error_code, resp.node_id, resp.host, resp.port
        if code:
            raise for_code(code)(f"FindCoordinator for {key!r} (key type {key_type})")
        if self.cluster.broker(node_id) is None:
            self.cluster.add_brokers([Broker(node_id, host, port)])
        return int(node_id)

    async def find_coordinator(self, key: str, key_type: int, timeout: float) -> int:
        """:meth:`lookup_coordinator`, retried with backoff until ``timeout`` seconds pass.

        Raises:
            KafkaTimeoutError: no coordinator was found in time.
            BrokerResponseError: a non-retriable error (e.g. authorization).
        """
        deadline = time.monotonic() + timeout
        backoff = self.retry_policy.start()
        last: object = None
        while time.monotonic() < deadline:
            try:
                return await self.lookup_coordinator(key, key_type)
            except KafkaError as exc:
                if isinstance(exc, BrokerResponseError) and not is_retriable(exc):
                    raise
                last = exc
            await asyncio.sleep(backoff.next())
        raise KafkaTimeoutError(f"no coordinator found for {key!r} in {timeout:.3g} s: {last}")

    async def api_version(self, node_id: int, api: Api, *, channel: str = "") -> int:
        """The version of ``api`` negotiated with ``node_id``."""
        conn = await self.connect(node_id, channel=channel)
        return conn.version(api)

    async def wait_for_metadata(self, predicate: Any, timeout: float) -> None:
        """Refresh metadata until ``predicate(cluster)`` holds or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        backoff = self.retry_policy.start()
        while not predicate(self.cluster):
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"metadata did not reach the expected state in {timeout} s")
            with contextlib.suppress(KafkaConnectionError):
                await self.refresh_metadata()
            if not predicate(self.cluster):
                await asyncio.sleep(backoff.next())
