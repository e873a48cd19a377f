"""A TLS and SASL front for the embedded cluster, so secured clients can be tested on one machine.

One listener on ``127.0.0.1`` per broker terminates TLS (a test CA of its own), authenticates
SASL as a Kafka broker does (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER; KIP-368 session
lifetimes and re-authentication) and forwards every other request to its plaintext broker,
rewriting broker addresses so that clients only ever reach the front. Test material only:
its certificates and users are for loopback tests, never for anything real.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from rackafka import errors
from rackafka.protocol import frames
from rackafka.protocol.apis.api_versions import API_VERSIONS
from rackafka.protocol.apis.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.apis.find_coordinator import FIND_COORDINATOR
from rackafka.protocol.apis.list_offsets import LIST_OFFSETS
from rackafka.protocol.apis.metadata import METADATA
from rackafka.protocol.apis.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rackafka.protocol.schema import Api

from ._base import _Lifecycle
from ._front_routing import FrontStats, _FrontRouting
from ._security import (
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    _ScramUsers,
    _SecurityOptions,
    _TestPki,
)

__all__ = [
    "REPLICA_SELECTORS",
    "SECURITY_PROTOCOLS",
    "SASL_MECHANISMS",
    "FrontStats",
    "SecureFront",
]

log = logging.getLogger(__name__)

#: The replica selectors the front can play (``replica.selector.class`` on a broker).
REPLICA_SELECTORS = ("rack-aware",)

_SIZE = struct.Struct(">i")
#: Highest versions let through: Fetch v16 and Produce v10 name brokers in
#: ``node_endpoints`` (KIP-951), which the front would have to rewrite in every response.
_VERSION_CAPS = {
    1: 15,
    0: 9,
    # Responses the front decodes and re-encodes: no newer than rackafka's schemas.
    METADATA.key: METADATA.max_version,
    FIND_COORDINATOR.key: FIND_COORDINATOR.max_version,
}
#: APIs hidden from clients: their responses name brokers (DescribeCluster).
_HIDDEN_APIS = {60}
_AUTH_APIS = {SASL_HANDSHAKE.key, SASL_AUTHENTICATE.key, API_VERSIONS.key}
_REWRITTEN = {METADATA.key: METADATA, FIND_COORDINATOR.key: FIND_COORDINATOR}

OAuthValidator = Callable[[str, dict[str, str]], bool]


class SecureFront(_FrontRouting, _SecurityOptions, _Lifecycle):
    """TLS and SASL listeners in front of plaintext brokers.

    Arguments:
        brokers: ``{node_id: (host, port)}`` of the plaintext brokers behind the front.
        security_protocol: ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL`` (``PLAINTEXT``
            makes a plain forwarding front).
        sasl_mechanisms: the mechanisms enabled (default: all of :data:`SASL_MECHANISMS`).
        users: ``{name: password}`` for PLAIN and SCRAM.
        session_lifetime_ms: the session lifetime granted to SASL clients (KIP-368,
            SaslAuthenticate v1+); a request after it ends closes the connection, as
            ``connections.max.reauth.ms`` does on a broker.
        require_client_cert: mutual TLS: clients must present a certificate of the
            front's CA (:attr:`client_cert_file`, :attr:`client_key_file`).
        oauth_validator: ``validator(token, extensions) -> bool`` for OAUTHBEARER;
            default: any non-empty token.
        replica_selector: ``"rack-aware"`` plays a broker with Kafka's
            ``RackAwareReplicaSelector`` for every client separately: a leader answering a
            Fetch (v11+) whose ``rack_id`` names a rack with another in-sync replica names
            that replica as ``preferred_read_replica`` (and returns no records for the
            partition, as Kafka does); any replica of a partition serves it to consumers.
            The brokers behind the front must not name preferred replicas themselves.
            Fetch sessions are declined (every Fetch is a full one).
        racks: ``{node_id: rack}`` of the brokers, for the selector (default: the racks
            the brokers give in Metadata).
        down_brokers: a set of broker ids that are down, kept up to date by the owner;
            the selector never names them.

    Use it as a context manager (``with`` or ``async with``), or :meth:`start` and
    :meth:`close`. It serves from a thread of its own, so that synchronous clients
    (confluent-kafka) and asyncio clients in the test's loop can both use it.

    :attr:`ca_file` is the test CA clients must trust; :attr:`client_cert_file` and
    :attr:`client_key_file` a client certificate for mutual TLS; :attr:`stats` a
    :class:`FrontStats` of what the front saw.
    """

    def __init__(
        self,
        brokers: Mapping[int, tuple[str, int]],
        *,
        security_protocol: str = "SASL_SSL",
        sasl_mechanisms: Iterable[str] | None = None,
        users: Mapping[str, str] | None = None,
        session_lifetime_ms: int | None = None,
        require_client_cert: bool = False,
        oauth_validator: OAuthValidator | None = None,
        replica_selector: str | None = None,
        racks: Mapping[int, str | None] | None = None,
        down_brokers: set[int] | frozenset[int] | None = None,
    ) -> None:
        if replica_selector is not None and replica_selector not in REPLICA_SELECTORS:
            raise ValueError(
                f"replica_selector must be one of {REPLICA_SELECTORS} or None, "
                f"not {replica_selector!r}"
            )
        super().__init__(
            security_protocol, sasl_mechanisms, users, session_lifetime_ms, require_client_cert
        )
        self.oauth_validator: OAuthValidator = oauth_validator or (lambda token, _ext: bool(token))
        self.stats = FrontStats()
        self.replica_selector = replica_selector
        self.racks: dict[int, str | None] | None = dict(racks) if racks is not None else None
        self.down_brokers = down_brokers if down_brokers is not None else frozenset()
        self._router: Any = None  # a rackafka client to the brokers, for the selector
        self._router_lock: asyncio.Lock | None = None
        self._backends = dict(brokers)
        self._ports: dict[int, int] = {}
        self._pki = _TestPki(tempfile.mkdtemp(prefix="rackafka-front-")) if self.tls else None
        self._scram = {
            m: _ScramUsers(m, self.users) for m in self.mechanisms if m.startswith("SCRAM-")
        }
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._conns: set[_FrontConnection] = set()
        self._accepting: set[asyncio.Task[Any]] = set()

    # -- public attributes ---------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:port,..."``: the front's listeners, in broker-id order."""
        if not self._ports:
            raise RuntimeError("the SecureFront is not started")
        return ",".join(f"127.0.0.1:{self._ports[n]}" for n in sorted(self._ports))

    def address_of(self, node_id: int) -> tuple[str, int]:
        """The front's listener for broker ``node_id``."""
        return "127.0.0.1", self._ports[node_id]

    def __repr__(self) -> str:
        state = "running" if self._ports else "stopped"
        return (
            f"<SecureFront {state} {self.security_protocol} mechanisms={list(self.mechanisms)} "
            f"users={sorted(self.users)}>"
        )

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> SecureFront:
        """Start listening (in a thread of its own); returns ``self``."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(
            target=loop.run_forever, name="rackafka-secure-front", daemon=True
        )
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), loop).result(30)
        return self

    def close(self) -> None:
        """Stop listening, close every connection and remove the certificates."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None:
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(30)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(30)
            loop.close()
        self._loop = self._thread = None
        self._ports.clear()
        if self._pki is not None:
            self._pki.remove()

    async def _listen(self) -> None:
        context = self._pki.server_context(self.require_client_cert) if self._pki else None
        for node_id in sorted(self._backends):
            server = await asyncio.start_server(
                functools.partial(self._accept, node_id), "127.0.0.1", 0, ssl=context
            )
            self._servers.append(server)
            self._ports[node_id] = server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        router, self._router = self._router, None
        if router is not None:
            with contextlib.suppress(Exception):
                await router.close()
        for server in self._servers:
            server.close()
        for conn in list(self._conns):
            conn.close()
        # Let every connection's task end before the loop stops (a task left pending is
        # destroyed with a warning at exit).
        accepting = {t for t in self._accepting if not t.done()}
        if accepting:
            _done, pending = await asyncio.wait(accepting, timeout=5)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers.clear()

    async def _accept(
        self, node_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.stats.connections += 1
        conn = _FrontConnection(self, node_id, reader, writer)
        self._conns.add(conn)
        task = asyncio.current_task()
        if task is not None:
            self._accepting.add(task)
        try:
            await conn.run()
        finally:
            self._conns.discard(conn)
            if task is not None:
                self._accepting.discard(task)

    # -- address rewriting -----------------------------------------------------------------

    def rewrite(self, api: Api, version: int, corr: int, frame: bytes | bytearray) -> bytes:
        """A response with every broker address replaced by the front's."""
        response = frames.decode_response(api, version, frame)
        if api is METADATA:
            for broker in response.brokers:
                if broker.node_id in self._ports:
                    broker.host, broker.port = self.address_of(broker.node_id)
        elif api is FIND_COORDINATOR:
            if version < 4:
                if response.node_id in self._ports:
                    response.host, response.port = self.address_of(response.node_id)
            else:
                for c in response.coordinators:
                    if c.node_id in self._ports:
                        c.host, c.port = self.address_of(c.node_id)
        return frames.encode_response(api, version, corr, response)

    def api_versions(self, version: int, corr: int, frame: bytes | bytearray) -> bytes | None:
        """The broker's ApiVersions with SASL advertised, and the APIs whose responses
        name brokers capped or hidden; ``None`` to pass it through."""
        # Newer ApiVersions versions have the layout of the newest one rackafka knows.
        version = min(version, API_VERSIONS.max_version)
        try:
            response = frames.decode_response(API_VERSIONS, version, frame)
        except Exception:
            return None
        if response.error_code:
            return None
        keys = [k for k in response.api_keys if k.api_key not in _HIDDEN_APIS]
        for k in keys:
            cap = _VERSION_CAPS.get(k.api_key)
            if cap is not None and k.max_version > cap:
                k.max_version = cap
        have = {k.api_key for k in keys}
        entry = type(response.api_keys[0]) if response.api_keys else None
        if self.sasl and entry is not None:
            keys += [
                entry(api_key=api.key, min_version=0, max_version=api.max_version)
                for api in (SASL_HANDSHAKE, SASL_AUTHENTICATE)
                if api.key not in have
            ]
        response.api_keys = sorted(keys, key=lambda k: k.api_key)
        return frames.encode_response(API_VERSIONS, version, corr, response)


class _Violation(Exception):
    """The client broke the protocol: the connection is closed, as a broker does."""


class _FrontConnection:
    """One client connection and its own connection to the broker behind the front."""

    def __init__(
        self,
        front: SecureFront,
        node_id: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.front = front
        self.node_id = node_id
        self.reader = reader
        self.writer = writer
        self.backend_writer: asyncio.StreamWriter | None = None
        #: Responses in request order: each a future of the bytes to send (``None``: close).
        self.slots: asyncio.Queue[asyncio.Future[Any]] = asyncio.Queue()
        self.pending: dict[int, tuple[asyncio.Future[Any], int, int]] = {}
        self.authenticated = not front.sasl
        self.principal: str | None = None
        self.mechanism: str | None = None
        self.exchange: Any = None  # the SASL server state between SaslAuthenticate requests
        self.in_exchange = False
        self.reauthenticating = False
        self.expires_at: float | None = None
        self.tasks: list[asyncio.Task[Any]] = []

    async def run(self) -> None:
        host, port = self.front._backends[self.node_id]
        try:
            backend_reader, self.backend_writer = await asyncio.open_connection(host, port)
        except OSError:
            self.writer.close()
            return
        self.tasks = [
            asyncio.ensure_future(self._requests()),
            asyncio.ensure_future(self._responses(backend_reader)),
            asyncio.ensure_future(self._write()),
        ]
        try:
            done, _ = await asyncio.wait(self.tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.debug("front: connection ends: %r", task.exception())
        finally:
            self.close()
            for task in self.tasks:
                with contextlib.suppress(BaseException):
                    await task

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        self.writer.close()
        if self.backend_writer is not None:
            self.backend_writer.close()

    # -- client to broker ------------------------------------------------------------------

    async def _requests(self) -> None:
        buffer = frames.FrameBuffer(100 * 1024 * 1024)
        while True:
            data = await self.reader.read(1 << 16)
            if not data:
                return
            try:
                buffer.feed(data)
                for frame in buffer.frames():
                    self._request(frame)
            except _Violation as exc:
                self.front.stats.protocol_violations += 1
                log.debug("front: closing a connection: %s", exc)
                self._respond(None)  # close once the answers before it are out
                return
            except Exception as exc:  # a frame that does not parse, too big a frame
                log.debug("front: closing a connection: %s", exc)
                self._respond(None)
                return
            if self.backend_writer is not None:
                await self.backend_writer.drain()

    def _respond(self, data: bytes | None) -> None:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.set_result(data)
        self.slots.put_nowait(fut)

    def _request(self, frame: bytes | bytearray) -> None:
        header, _pos = frames.decode_request_header(frame)  # type: ignore[arg-type]
        key, version, corr = header.api_key, header.api_version, header.correlation_id
        front = self.front
        if key == SASL_HANDSHAKE.key and front.sasl:
            self._respond(self._handshake(frame, version, corr))
            return
        if key == SASL_AUTHENTICATE.key and front.sasl:
            answer, close = self._authenticate(frame, version, corr)
            self._respond(answer)
            if close:
                self._respond(None)
            return
        if front.sasl and key not in _AUTH_APIS:
            if not self.authenticated:
                raise _Violation(f"request {key} before SASL authentication")
            if self.in_exchange:
                raise _Violation(f"request {key} during a SASL re-authentication")
            if self.expires_at is not None and time.monotonic() > self.expires_at:
                raise _Violation(f"request {key} after the SASL session expired")
        if key == FETCH.key and front.replica_selector is not None:
            request = self._decode(FETCH, frame, version)
            self._answer(front._fetch(self.node_id, request, version, corr))
            return
        if key == CONSUMER_GROUP_HEARTBEAT.key:
            heartbeat = self._decode(CONSUMER_GROUP_HEARTBEAT, frame, version)
            if heartbeat.rack_id is not None:
                front.stats.member_racks[heartbeat.member_id] = heartbeat.rack_id
        if key == LIST_OFFSETS.key and version >= LIST_OFFSETS.min_version:
            request = self._decode(LIST_OFFSETS, frame, version)
            if any(p.timestamp >= 0 for t in request.topics for p in t.partitions):
                self._answer(front._list_offsets(self.node_id, request, version, corr))
                return
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[corr] = (fut, key, version)
        self.slots.put_nowait(fut)
        assert self.backend_writer is not None
        self.backend_writer.write(_SIZE.pack(len(frame)))
        self.backend_writer.write(frame)

    def _answer(self, answer: Coroutine[Any, Any, bytes]) -> None:
        """Answer a request with what ``answer`` makes (in order with the rest)."""
        slot: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.slots.put_nowait(slot)
        task = asyncio.ensure_future(answer)
        self.tasks.append(task)

        def done(t: asyncio.Task[bytes]) -> None:
            with contextlib.suppress(ValueError):
                self.tasks.remove(t)
            if slot.done():
                return  # the connection is closing
            if t.cancelled() or t.exception() is not None:
                if not t.cancelled():
                    log.debug("front: a request failed: %r", t.exception())
                slot.set_result(None)  # close the connection, as a broker in trouble does
            else:
                slot.set_result(t.result())

        task.add_done_callback(done)

    # -- broker to client ------------------------------------------------------------------

    async def _responses(self, reader: asyncio.StreamReader) -> None:
        buffer = frames.FrameBuffer(1 << 30)
        front = self.front
        while True:
            data = await reader.read(1 << 20)
            if not data:
                return
            buffer.feed(data)
            for frame in buffer.frames():
                corr = frames.peek_correlation_id(frame)
                entry = self.pending.pop(corr, None)
                if entry is None:
                    continue
                fut, key, version = entry
                out: Any = None
                if key == API_VERSIONS.key:
                    out = front.api_versions(version, corr, frame)
                elif key in _REWRITTEN:
                    out = front.rewrite(_REWRITTEN[key], version, corr, frame)
                fut.set_result(out if out is not None else (_SIZE.pack(len(frame)), frame))

    async def _write(self) -> None:
        writer = self.writer
        while True:
            fut = await self.slots.get()
            data = await fut
            if data is None:
                with contextlib.suppress(Exception):
                    await writer.drain()
                return
            if isinstance(data, tuple):
                for part in data:
                    writer.write(part)
            else:
                writer.write(data)
            if self.slots.empty():
                await writer.drain()

    # -- SASL ------------------------------------------------------------------------------

    def _decode(self, api: Api, frame: bytes | bytearray, version: int) -> Any:
        data = bytes(frame)
        _header, pos = frames.decode_request_header(data)
        if api.request_header_version(version) >= 2:
            pos = frames.skip_request_header_tags(data, pos)
        return api.decode_request(version, data, pos, exact=False)

    def _handshake(self, frame: bytes | bytearray, version: int, corr: int) -> bytes:
        front = self.front
        if version < 1:
            # v0 means raw SASL tokens on the socket: the front does not speak it.
            return frames.encode_response(
                SASL_HANDSHAKE,
                0,
                corr,
                {"error_code": errors.UnsupportedVersionError.errno, "mechanisms": []},
            )
        request = self._decode(SASL_HANDSHAKE, frame, version)
        mechanism = request.mechanism
        enabled = list(front.mechanisms)
        if mechanism not in enabled or (
            self.authenticated and self.mechanism not in (None, mechanism)
        ):
            return frames.encode_response(
                SASL_HANDSHAKE,
                version,
                corr,
                {"error_code": errors.UnsupportedSaslMechanismError.errno, "mechanisms": enabled},
            )
        self.reauthenticating = self.authenticated
        self.mechanism = mechanism
        self.exchange = None
        self.in_exchange = True
        return frames.encode_response(
            SASL_HANDSHAKE, version, corr, {"error_code": 0, "mechanisms": enabled}
        )

    def _authenticate(
        self, frame: bytes | bytearray, version: int, corr: int
    ) -> tuple[bytes, bool]:
        """The answer and whether to close the connection after it."""
        if not self.in_exchange or self.mechanism is None:
            return self._auth_answer(
                version, corr, errors.IllegalSaslStateError.errno, "no SaslHandshake"
            ), True
        request = self._decode(SASL_AUTHENTICATE, frame, version)
        data = bytes(request.auth_bytes or b"")
        mechanism = self.mechanism
        principal: str | None
        try:
            if mechanism == "PLAIN":
                challenge, principal = self._plain(data)
            elif mechanism == "OAUTHBEARER":
                challenge, principal = self._oauth(data)
            else:
                challenge, principal = self._scram(mechanism, data)
        except _AuthFailed as exc:
            self.front.stats.failures += 1
            self.in_exchange = False
            return self._auth_answer(
                version, corr, errors.SaslAuthenticationFailed.errno, str(exc)
            ), True
        if principal is None:  # more rounds to come
            return self._auth_answer(version, corr, 0, "", challenge), False
        if self.reauthenticating and principal != self.principal:
            self.front.stats.failures += 1
            return (
                self._auth_answer(
                    version,
                    corr,
                    errors.SaslAuthenticationFailed.errno,
                    "Cannot change principals during re-authentication",
                ),
                True,
            )
        stats = self.front.stats
        counter = stats.reauthentications if self.reauthenticating else stats.authentications
        counter[mechanism] = counter.get(mechanism, 0) + 1
        stats.principals.append(principal)
        self.principal = principal
        self.authenticated = True
        self.in_exchange = False
        self.reauthenticating = False
        lifetime = self.front.session_lifetime_ms
        self.expires_at = time.monotonic() + lifetime / 1000 if lifetime else None
        return self._auth_answer(version, corr, 0, "", challenge, lifetime or 0), False

    def _auth_answer(
        self,
        version: int,
        corr: int,
        error: int,
        message: str,
        data: bytes = b"",
        lifetime: int = 0,
    ) -> bytes:
        return frames.encode_response(
            SASL_AUTHENTICATE,
            version,
            corr,
            {
                "error_code": error,
                "error_message": message or None,
                "auth_bytes": data,
                "session_lifetime_ms": lifetime,
            },
        )

    def _plain(self, data: bytes) -> tuple[bytes, str]:
        parts = data.split(b"\0")
        if len(parts) != 3:
            raise _AuthFailed("Authentication failed: invalid SASL/PLAIN response")
        _authz, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user or self.front.users.get(user) != password:
            raise _AuthFailed("Authentication failed: Invalid username or password")
        return b"", user

    def _scram(self, mechanism: str, data: bytes) -> tuple[bytes, str | None]:
        users = self.front._scram[mechanism]
        scramp = users.scramp
        text = data.decode("utf-8", "replace")
        try:
            if self.exchange is None:
                server, names = users.server()
                server.set_client_first(text)
                self.exchange = (server, names)
                return server.get_server_first().encode(), None
            server, names = self.exchange
            self.exchange = None
            server.set_client_final(text)
            return server.get_server_final().encode(), names[0]
        except (scramp.ScramException, KeyError, ValueError) as exc:
            raise _AuthFailed(
                "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {mechanism}"
            ) from exc

    def _oauth(self, data: bytes) -> tuple[bytes, str | None]:
        if data == b"\x01":
            raise _AuthFailed("Authentication failed: invalid token")
        text = data.decode("utf-8", "replace")
        if not text.startswith("n,") or not text.endswith("\x01\x01"):
            raise _AuthFailed("Authentication failed: invalid OAUTHBEARER initial response")
        body = text.split(",", 2)[2] if text.count(",") >= 2 else ""
        pairs: dict[str, str] = {}
        for part in body.strip("\x01").split("\x01"):
            if "=" in part:
                k, v = part.split("=", 1)
                pairs[k] = v
        auth = pairs.pop("auth", "")
        token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else ""
        self.front.stats.oauth_extensions.append(dict(pairs))
        try:
            ok = bool(token) and self.front.oauth_validator(token, dict(pairs))
        except Exception:
            ok = False
        if not ok:
            # RFC 7628 3.2.2: an error challenge; the client answers ^A, then we fail.
            return b'{"status":"invalid_token"}', None
        return b"", pairs.get("principal", "oauth-user")


class _AuthFailed(Exception):
    pass
