"""One asyncio connection to one broker.

A :class:`Connection` is the protocol of its transport from the start
(:meth:`asyncio.loop.create_connection`, with TLS when the security settings say so): the
bytes received go from the socket straight into its frame buffers
(:class:`~rackafka.protocol.frames.FrameReceiver`), and each complete response is handed
to the waiter with the same correlation id.  Frames go out as soon as they are encoded
and many requests may be in flight at once (pipelining).  Any failure of the transport
fails every waiter with :class:`~rackafka.errors.KafkaConnectionError` and closes the
connection; a request that times out closes it too (responses arrive in order, so a
missing one means the stream is stuck).

With SASL the connection drives the exchange itself (SaslHandshake, then SaslAuthenticate
until the mechanism is done) and repeats it before the session the broker grants ends
(KIP-368); the mechanisms of :mod:`rackafka.net.sasl` only turn challenges into answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import ssl
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from rackafka.errors import (
    AuthenticationFailedError,
    AuthenticationMethodNotSupported,
    CorrelationIdError,
    IllegalSaslStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    SaslAuthenticationFailed,
    SslAuthenticationError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
    for_code,
)
from rackafka.net.sasl import SaslMechanism
from rackafka.net.security import Connector, SecurityConfig, plaintext_connector, tls_failure
from rackafka.protocol import frames
from rackafka.protocol.apis.api_versions import API_VERSIONS
from rackafka.protocol.apis.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rackafka.protocol.schema import Api
from rackafka.protocol.versions import VersionTable

log = logging.getLogger(__name__)

CLIENT_SOFTWARE_NAME = "rackafka"
#: Re-authenticate after this share of the session lifetime (KIP-368: 85-95 %, at random,
#: so that connections opened together do not re-authenticate together).
_REAUTH_AT = (0.85, 0.95)
#: A frame's size prefix.
_FRAME_SIZE = struct.Struct(">i")
#: Parts of a request's tail shorter than this are copied into the frame (cheaper than
#: a write of their own); longer ones are written as they are.
_COPY_BELOW = 4096


def _splice(
    frame: bytearray, cut: int, parts: Sequence[bytes | bytearray]
) -> list[bytes | bytearray]:
    """The writes of ``frame`` whose last ``cut`` bytes are replaced by ``parts``: short
    parts joined to what precedes them, long ones by themselves; the frame's size
    prefix counts them all."""
    del frame[len(frame) - cut :]
    writes: list[bytes | bytearray] = []
    out: bytearray | None = frame
    for part in parts:
        if not part:
            continue
        if len(part) < _COPY_BELOW:
            if out is None:
                out = bytearray(part)
            else:
                out += part
        else:
            if out is not None:
                writes.append(out)
                out = None
            writes.append(part)
    if out is not None:
        writes.append(out)
    _FRAME_SIZE.pack_into(frame, 0, sum(map(len, writes)) - _FRAME_SIZE.size)
    return writes


@dataclass
class ConnectionStats:
    """Counters of one connection, for observability."""

    requests: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0


class Connection(asyncio.BufferedProtocol):
    """A connection to one broker, with requests pipelined over it.

    Create one with :meth:`open`; it negotiates API versions (and authenticates) before
    it is returned.  :meth:`request` sends a request and waits for its response.  The
    connection is its transport's protocol: the asyncio callbacks (``connection_made``,
    ``get_buffer``, ``buffer_updated``, ...) are not for other callers.
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        node_id: int | None = None,
        client_id: str | None = "rackafka",
        request_timeout_ms: float = 40000,
        max_frame_size: int = frames.DEFAULT_MAX_FRAME_SIZE,
        security: SecurityConfig | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.node_id = node_id
        self.client_id = client_id
        self.request_timeout = request_timeout_ms / 1000
        self.versions: VersionTable | None = None
        self.stats = ConnectionStats()
        self.last_used = time.monotonic()
        self.security = security
        self._transport: asyncio.Transport | None = None
        self._receiver = frames.FrameReceiver(max_frame_size)
        self._waiters: dict[int, tuple[asyncio.Future[Any], Api, int]] = {}
        self._corr = itertools.count(1)
        self._closed: BaseException | None = None
        self._close_callbacks: list[Callable[[Connection, BaseException], None]] = []
        #: Set once the transport is gone (``connection_lost``).
        self._gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: Writers waiting for the transport's buffer to drain, while it is paused.
        self._write_paused = False
        self._drainers: list[asyncio.Future[None]] = []
        #: Frames written while a re-authentication holds other requests back.
        self._held: list[bytes | bytearray] | None = None
        self._reauth: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Task[None] | None = None
        #: Successful SASL authentications of this connection (1 + re-authentications).
        self.authentications = 0
        #: When the broker's SASL session ends (``time.monotonic()``), or ``None``.
        self.session_expires_at: float | None = None
        #: When the next re-authentication is due (its timer may run late on a busy loop).
        self._reauth_due: float | None = None

    # -- lifecycle -------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        node_id: int | None = None,
        client_id: str | None = "rackafka",
        connector: Connector | None = None,
        connect_timeout_ms: int | None = None,
        request_timeout_ms: float = 40000,
        negotiate: bool = True,
        client_software_version: str = "0",
        security: SecurityConfig | None = None,
    ) -> Connection:
        """Connect to ``host:port``, negotiate API versions and authenticate.

        Arguments:
            connector: opens the transport with the connection as its protocol; default:
                plain TCP, or TLS when ``security`` says so.
            security: TLS and SASL settings; with SASL the connection is authenticated
                before it is returned, and re-authenticated before the session the
                broker grants ends (KIP-368).

        Raises:
            KafkaConnectionError: the broker cannot be reached in time, or the
                connection broke during negotiation.
            AuthenticationFailedError: the TLS handshake or SASL authentication failed
                (not a :class:`KafkaConnectionError`, as in aiokafka).
        """
        if connector is None:
            connector = security.connector() if security is not None else plaintext_connector
        timeout = (
            connect_timeout_ms if connect_timeout_ms is not None else request_timeout_ms
        ) / 1000

        def factory() -> Connection:
            return cls(
                host=host,
                port=port,
                node_id=node_id,
                client_id=client_id,
                request_timeout_ms=request_timeout_ms,
                security=security,
            )

        try:
            _transport, protocol = await asyncio.wait_for(connector(factory, host, port), timeout)
        except asyncio.TimeoutError as exc:
            raise KafkaConnectionError(
                f"connecting to {host}:{port} timed out after {timeout:.3g} s"
            ) from exc
        except OSError as exc:
            raise KafkaConnectionError(f"cannot connect to {host}:{port}: {exc}") from exc
        assert isinstance(protocol, Connection)
        conn = protocol
        if conn._closed is not None:  # closed by the broker before it was set up
            raise conn._closed
        if negotiate:
            try:
                await conn.negotiate_versions(client_software_version)
                if security is not None and security.uses_sasl:
                    await conn.authenticate()
            except BaseException:
                await conn.aclose()
                raise
        return conn

    async def negotiate_versions(self, client_software_version: str = "0") -> VersionTable:
        """Ask the broker which versions it speaks (ApiVersions v3, else v0)."""
        response = None
        try:
            response = await self.request(
                API_VERSIONS,
                API_VERSIONS.Request(
                    client_software_name=CLIENT_SOFTWARE_NAME,
                    client_software_version=client_software_version,
                ),
                version=3,
            )
        except KafkaProtocolError as exc:
            log.debug("%s: ApiVersions v3 reply did not parse (%s); retrying with v0", self, exc)
        if response is None or response.error_code == UnsupportedVersionError.errno:
            response = await self.request(API_VERSIONS, API_VERSIONS.Request(), version=0)
        if response.error_code:
            raise KafkaConnectionError(
                f"{self}: ApiVersions failed with error code {response.error_code}"
            )
        self.versions = VersionTable.from_api_versions(response.api_keys)
        return self.versions

    @property
    def connected(self) -> bool:
        """Whether the connection is open."""
        return self._closed is None

    def add_close_callback(self, callback: Callable[[Connection, BaseException], None]) -> None:
        """Call ``callback(conn, reason)`` once the connection closes."""
        if self._closed is not None:
            callback(self, self._closed)
        else:
            self._close_callbacks.append(callback)

    def close(self, reason: BaseException | None = None) -> None:
        """Close now; every waiter fails with :class:`KafkaConnectionError` (or with the
        :class:`AuthenticationFailedError` that closed it)."""
        if self._closed is not None:
            return
        if reason is None:
            reason = KafkaConnectionError(f"connection to {self.host}:{self.port} closed")
        elif isinstance(reason, ssl.SSLError):
            reason = tls_failure(self.host, self.port, reason)
        elif not isinstance(reason, (KafkaConnectionError, AuthenticationFailedError)):
            wrapped = KafkaConnectionError(
                f"connection to {self.host}:{self.port} failed: {reason}"
            )
            wrapped.__cause__ = reason
            reason = wrapped
        self._closed = reason
        if self._reauth is not None:
            self._reauth.cancel()
        if self._reauth_task is not None and self._reauth_task is not asyncio.current_task():
            self._reauth_task.cancel()
        waiters, self._waiters = self._waiters, {}
        for fut, _api, _v in waiters.values():
            if not fut.done():
                fut.set_exception(reason)
        self._wake_drainers()
        if self._transport is not None:
            with contextlib.suppress(Exception):
                self._transport.close()
        for cb in self._close_callbacks:
            try:
                cb(self, reason)
            except Exception:  # pragma: no cover - a callback bug must not break close
                log.exception("close callback failed")
        self._close_callbacks.clear()

    async def aclose(self) -> None:
        """Close and wait until the socket is gone."""
        self.close()
        if self._transport is not None:
            await asyncio.shield(self._gone)

    # -- authentication ----------------------------------------------------------

    async def authenticate(self) -> None:
        """Authenticate with SASL (again, on a live connection: KIP-368).

        While it runs, requests sent by others are held back and written afterwards, in
        order: a broker takes nothing but SaslAuthenticate between the SaslHandshake
        and the end of the exchange.  Schedules the next re-authentication when the
        broker grants a session lifetime.

        Raises:
            UnsupportedSaslMechanismError: the broker does not enable this mechanism.
            SaslAuthenticationFailed: the broker refused the credentials (or the client
                refused the broker's proof).
            AuthenticationMethodNotSupported: the broker does not speak SASL on this
                listener, or only the pre-1.0 SaslHandshake v0.

            Each is an :class:`AuthenticationFailedError`; the caller closes.
        """
        assert self.security is not None
        mechanism = self.security.mechanism(self.host)
        assert mechanism is not None
        again = self.authentications > 0
        held: list[bytes | bytearray] = self._held if self._held is not None else []
        self._held = held
        try:
            lifetime_ms = await self._sasl_exchange(mechanism)
        finally:
            self._held = None
            if self._closed is None and self._transport is not None:
                for frame in held:
                    self._transport.write(frame)
        self.authentications += 1
        if again:
            log.debug("%s: re-authenticated (%s)", self, mechanism.describe())
        if lifetime_ms > 0:
            lifetime = lifetime_ms / 1000
            self.session_expires_at = time.monotonic() + lifetime
            delay = lifetime * random.uniform(*_REAUTH_AT)
            self._reauth_due = time.monotonic() + delay
            self._reauth = asyncio.get_running_loop().call_later(delay, self._start_reauth)
        else:
            self.session_expires_at = None
            self._reauth_due = None

    async def _sasl_exchange(self, mechanism: SaslMechanism) -> int:
        """Carry one exchange of ``mechanism`` (SaslHandshake v1, SaslAuthenticate v0-2).

        Returns the session lifetime in milliseconds granted by the broker
        (SaslAuthenticate v1+), ``0`` when it sets none.
        """
        versions = self.versions
        hs = versions.broker_range(SASL_HANDSHAKE.key) if versions is not None else None
        if hs is None:
            raise AuthenticationMethodNotSupported(
                f"{self} does not offer SASL authentication (no SaslHandshake in its "
                "ApiVersions): is this a PLAINTEXT or SSL listener? Check security_protocol"
            )
        if hs.max_version < 1:
            raise AuthenticationMethodNotSupported(
                f"{self} only speaks SaslHandshake v0 (Kafka before 1.0); rackafka needs v1"
            )
        response = await self.request(
            SASL_HANDSHAKE, SASL_HANDSHAKE.Request(mechanism=mechanism.name), version=1, unheld=True
        )
        if response.error_code:
            error = for_code(response.error_code)
            if issubclass(error, UnsupportedSaslMechanismError):
                enabled = ", ".join(response.mechanisms) or "none"
                raise error(
                    f"{self} does not enable SASL mechanism {mechanism.name} "
                    f"(enabled: {enabled}); check sasl_mechanism"
                )
            raise error(f"SaslHandshake for {mechanism.name} with {self} failed")
        version = self.version(SASL_AUTHENTICATE)
        token: bytes | None = await mechanism.start()
        lifetime = 0
        while token is not None:
            response = await self.request(
                SASL_AUTHENTICATE,
                SASL_AUTHENTICATE.Request(auth_bytes=token),
                version=version,
                unheld=True,
            )
            if response.error_code:
                detail = response.error_message or ""
                error = for_code(response.error_code)
                if not issubclass(error, (SaslAuthenticationFailed, IllegalSaslStateError)):
                    error = SaslAuthenticationFailed
                raise error(
                    f"SASL {mechanism.describe()} authentication with {self} failed"
                    + (f": {detail}" if detail else "")
                )
            lifetime = getattr(response, "session_lifetime_ms", 0) or 0
            token = mechanism.step(bytes(response.auth_bytes or b""))
        log.debug("%s: authenticated with SASL %s", self, mechanism.describe())
        return max(0, int(lifetime))

    def _start_reauth(self) -> None:
        if self._reauth is not None:
            self._reauth.cancel()
        self._reauth = None
        self._reauth_due = None
        if self._closed is None:
            # Requests sent from now on wait for the new session (held at once, before
            # the task runs), as Java's client holds them while it re-authenticates.
            if self._held is None:
                self._held = []
            self._reauth_task = asyncio.get_running_loop().create_task(self._reauthenticate())

    async def _reauthenticate(self) -> None:
        try:
            await self.authenticate()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("%s: re-authentication failed: %s", self, exc)
            self.close(exc)

    # -- requests --------------------------------------------------------------

    def version(self, api: Api) -> int:
        """The negotiated version of ``api``.

        Raises:
            UnsupportedVersionError: no version is spoken by both sides.
        """
        if self.versions is None:
            raise UnsupportedVersionError(f"{self}: versions are not negotiated yet")
        return self.versions.version(api)

    def send(
        self,
        api: Api,
        request: Any,
        *,
        version: int | None = None,
        expect_response: bool = True,
        unheld: bool = False,
        tail: tuple[int, Sequence[bytes | bytearray]] | None = None,
    ) -> asyncio.Future[Any]:
        """Write a request now and return a future of its decoded response.

        Requests are pipelined: call :meth:`send` several times before awaiting.
        During a re-authentication the request is written once it is over, unless
        ``unheld`` (the authentication's own requests).

        ``tail`` is ``(cut, parts)``: the encoded request's last ``cut`` bytes are
        replaced by ``parts``, written after the rest as they are (not copied into the
        frame; the frame's size counts them).  The caller encodes a placeholder whose
        last ``cut`` bytes the parts replace, and leaves the parts unchanged until the
        response comes or the connection closes.
        """
        if self._closed is not None:
            raise KafkaConnectionError(f"{self} is closed: {self._closed}")
        if version is None:
            version = self.version(api)
        corr = next(self._corr) & 0x7FFFFFFF
        frame = frames.encode_request(api, version, corr, self.client_id, request)
        size = len(frame)
        writes: list[bytes | bytearray] | None = None
        if tail is not None:
            writes = _splice(frame, *tail)
            size = sum(map(len, writes))
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if expect_response:
            self._waiters[corr] = (fut, api, version)
        else:
            fut.set_result(None)
        due = self._reauth_due
        if due is not None and not unheld and time.monotonic() >= due:
            # The timer is late (a busy event loop): re-authenticate first, so that no
            # request reaches the broker after the session it was granted.
            self._start_reauth()
        try:
            if self._held is not None and not unheld:
                self._held.extend((frame,) if writes is None else writes)
            elif writes is None:
                self._transport.write(frame)  # type: ignore[union-attr]
            else:
                for chunk in writes:
                    self._transport.write(chunk)  # type: ignore[union-attr]
        except Exception as exc:  # the transport is gone
            self.close(exc)
            raise self._closed from exc  # type: ignore[misc]
        self.stats.requests += 1
        self.stats.bytes_sent += size
        self.last_used = time.monotonic()
        return fut

    async def request(
        self,
        api: Api,
        request: Any,
        *,
        version: int | None = None,
        timeout: float | None = None,
        unheld: bool = False,
    ) -> Any:
        """Send a request and wait for its decoded response.

        Raises:
            KafkaTimeoutError: no response within ``timeout`` seconds (default:
                ``request_timeout_ms``); the connection is closed.
            KafkaConnectionError: the connection failed or was closed.
            KafkaProtocolError: the response could not be decoded.
        """
        fut = self.send(api, request, version=version, unheld=unheld)
        return await self.wait(fut, timeout=timeout, what=api.name)

    async def wait(
        self, fut: asyncio.Future[Any], *, timeout: float | None = None, what: str = "request"
    ) -> Any:
        """Wait for a future from :meth:`send`, applying the request timeout."""
        t = self.request_timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(asyncio.shield(fut), t)
        except asyncio.TimeoutError:
            exc = KafkaTimeoutError(f"{what} to {self} got no response within {t:.3g} s")
            self.close(exc)
            if fut.done() and not fut.cancelled():
                fut.exception()  # retrieved: the caller gets ``exc`` instead
            raise exc from None
        finally:
            if not fut.done():
                # Our caller was cancelled: the response will be dropped when it arrives.
                fut.cancel()

    @property
    def in_flight(self) -> int:
        """Requests sent whose responses have not arrived."""
        return len(self._waiters)

    async def drain(self) -> None:
        """Wait until the socket's write buffer has room.

        Raises:
            KafkaConnectionError: the connection is closed (or
                :class:`AuthenticationFailedError`, the reason it closed).
        """
        if self._write_paused and self._closed is None:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drainers.append(waiter)
            try:
                await waiter
            finally:
                with contextlib.suppress(ValueError):
                    self._drainers.remove(waiter)
        if self._closed is not None:
            raise self._closed

    def _wake_drainers(self) -> None:
        for waiter in self._drainers:
            if not waiter.done():
                waiter.set_result(None)
        self._drainers.clear()

    # -- the transport's protocol ----------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """asyncio: the connection (and its TLS handshake) is established."""
        # Not an isinstance check: other event loops' transports (uvloop's) have the
        # methods of asyncio.Transport without deriving from it.
        self._transport = cast("asyncio.Transport", transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        """asyncio: room for the next received bytes, in the frame buffers."""
        return self._receiver.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        """asyncio: ``nbytes`` arrived; dispatch the frames they complete."""
        if self._closed is not None:
            return
        self.stats.bytes_received += nbytes
        try:
            for frame in self._receiver.buffer_updated(nbytes):
                self._dispatch(frame)
        except KafkaError as exc:
            self.close(exc)
        except Exception as exc:  # pragma: no cover - defensive: never leave waiters hanging
            log.exception("%s: reader failed", self)
            self.close(exc)

    def eof_received(self) -> bool:
        """asyncio: the broker closed its side; the transport closes."""
        self._lost(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        """asyncio: the transport is gone (``exc`` is ``None`` for a close or an EOF)."""
        self._lost(exc)
        self._wake_drainers()
        if not self._gone.done():
            self._gone.set_result(None)

    def pause_writing(self) -> None:
        """asyncio: the transport's write buffer is over its high-water mark."""
        self._write_paused = True

    def resume_writing(self) -> None:
        """asyncio: the transport's write buffer drained below its low-water mark."""
        self._write_paused = False
        self._wake_drainers()

    def _lost(self, exc: BaseException | None) -> None:
        """The broker closed the connection (``exc`` is ``None`` for an EOF) or it broke."""
        if self._closed is not None:
            return
        if exc is None or isinstance(exc, ConnectionResetError):
            if self._before_first_tls_answer():
                # An EOF, or a reset when the broker's close found our first request
                # unread: the same refusal of the TLS connection.
                exc = self._tls_refusal()
            elif exc is None:
                exc = KafkaConnectionError(
                    f"connection to {self.host}:{self.port} closed by the broker"
                )
        self.close(exc)

    def _before_first_tls_answer(self) -> bool:
        return self.versions is None and self.security is not None and self.security.uses_tls

    def _tls_refusal(self) -> SslAuthenticationError:
        # Closed right after the TLS handshake, before any answer: with TLS 1.3 a broker
        # refuses a client certificate (or its absence) this way, after the client has
        # finished its side of the handshake.
        return SslAuthenticationError(
            f"the broker at {self.host}:{self.port} closed the TLS connection before "
            "answering: it may require a client certificate (mutual TLS: "
            "create_ssl_context(certfile=..., keyfile=...)) or refuse this one"
        )

    def _dispatch(self, frame: bytes | bytearray) -> None:
        corr = frames.peek_correlation_id(frame)
        entry = self._waiters.pop(corr, None)
        if entry is None:
            raise CorrelationIdError(f"{self}: response with unknown correlation id {corr}")
        fut, api, version = entry
        if fut.done():
            return  # the waiter gave up
        try:
            response = frames.decode_response(api, version, frame)
        except KafkaProtocolError as exc:
            fut.set_exception(exc)
        else:
            fut.set_result(response)
        self.last_used = time.monotonic()

    def __repr__(self) -> str:
        node = f"node {self.node_id} " if self.node_id is not None else ""
        return f"<Connection {node}{self.host}:{self.port}>"


__all__ = ["CLIENT_SOFTWARE_NAME", "Connection", "ConnectionStats", "Connector"]
