"""One asyncio connection to one broker.

Frames go out as soon as they are encoded and many requests may be in flight
at once (pipelining); a single reader task splits the incoming stream into
frames and hands each decoded response to the waiter with the same correlation
id.  Any failure of the stream fails every waiter with
:class:`~rackafka.errors.KafkaConnectionError` and closes the connection; a
request that times out closes it too (responses arrive in order, so a missing
one means the stream is stuck).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from rackafka.errors import (
    AuthenticationFailedError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    SslAuthenticationError,
    UnsupportedVersionError,
)
from rackafka.net.security import SecurityConfig, plaintext_connector, tls_failure
from rackafka.protocol import frames
from rackafka.protocol.apis.api_versions import API_VERSIONS
from rackafka.protocol.schema import Api
from rackafka.protocol.versions import VersionTable

log = logging.getLogger(__name__)

StreamPair = tuple[asyncio.StreamReader, asyncio.StreamWriter]
#: Opens a stream to ``(host, port)``.  The seam for TLS and other transports.
Connector = Callable[[str, int], Awaitable[StreamPair]]

CLIENT_SOFTWARE_NAME = "rackafka"
_UNSUPPORTED_VERSION = 35
#: Re-authenticate after this share of the session lifetime (KIP-368: 85-95 %, at random,
#: so that connections opened together do not re-authenticate together).
_REAUTH_AT = (0.85, 0.95)


@dataclass
class ConnectionStats:
    """Counters of one connection, for observability."""

    requests: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0


class Connection:
    """A connection to one broker, with requests pipelined over it.

    Create one with :meth:`open`; it negotiates API versions before it is
    returned.  :meth:`request` sends a request and waits for its response.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
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
        self._reader = reader
        self._writer = writer
        self._waiters: dict[int, tuple[asyncio.Future[Any], Api, int]] = {}
        self._corr = itertools.count(1)
        self._closed: BaseException | None = None
        self._close_callbacks: list[Callable[[Connection, BaseException], None]] = []
        self.security = security
        #: Frames written while a re-authentication holds other requests back.
        self._held: list[bytes] | None = None
        self._reauth: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Task[None] | None = None
        #: Successful SASL authentications of this connection (1 + re-authentications).
        self.authentications = 0
        #: When the broker's SASL session ends (``time.monotonic()``), or ``None``.
        self.session_expires_at: float | None = None
        # Responses are read by a protocol put on the stream's transport: the bytes go
        # from the socket straight into the frame buffers (see frames.FrameReceiver).
        # Writing, flow control and closing stay with the stream.
        self._receiver = frames.FrameReceiver(max_frame_size)
        transport = writer.transport
        self._protocol = _FrameProtocol(self, transport.get_protocol())
        transport.set_protocol(self._protocol)
        # The stream may have seen its end before its protocol was replaced (a broker that
        # refuses a TLS client certificate closes right after the handshake): that news
        # would never reach this connection, whose first request would then wait for its
        # whole timeout.
        if reader.exception() is not None or reader.at_eof() or transport.is_closing():
            self._lost(reader.exception())

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
            connector: opens the stream; default: plain TCP, or TLS when ``security``
                says so.
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
        try:
            reader, writer = await asyncio.wait_for(connector(host, port), timeout)
        except asyncio.TimeoutError as exc:
            raise KafkaConnectionError(
                f"connecting to {host}:{port} timed out after {timeout:.3g} s"
            ) from exc
        except OSError as exc:
            raise KafkaConnectionError(f"cannot connect to {host}:{port}: {exc}") from exc
        conn = cls(
            reader,
            writer,
            host=host,
            port=port,
            node_id=node_id,
            client_id=client_id,
            request_timeout_ms=request_timeout_ms,
            security=security,
        )
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

    # -- authentication ----------------------------------------------------------

    async def authenticate(self) -> None:
        """Authenticate with SASL (again, on a live connection: KIP-368).

        While it runs, requests sent by others are held back and written afterwards, in
        order: a broker takes nothing but SaslAuthenticate between the SaslHandshake
        and the end of the exchange.  Schedules the next re-authentication when the
        broker grants a session lifetime.

        Raises:
            AuthenticationFailedError: the broker refused (the caller closes).
        """
        from rackafka.net.sasl import authenticate

        assert self.security is not None
        mechanism = self.security.mechanism(self.host)
        assert mechanism is not None
        again = self.authentications > 0
        held: list[bytes] = []
        self._held = held
        try:
            lifetime_ms = await authenticate(self, mechanism, unheld=True)
        finally:
            self._held = None
            if self._closed is None:
                for frame in held:
                    self._writer.write(frame)
        self.authentications += 1
        if again:
            log.debug("%s: re-authenticated (%s)", self, mechanism.describe())
        if lifetime_ms > 0:
            lifetime = lifetime_ms / 1000
            self.session_expires_at = time.monotonic() + lifetime
            delay = lifetime * random.uniform(*_REAUTH_AT)
            self._reauth = asyncio.get_running_loop().call_later(delay, self._start_reauth)
        else:
            self.session_expires_at = None

    def _start_reauth(self) -> None:
        self._reauth = None
        if self._closed is None:
            self._reauth_task = asyncio.get_running_loop().create_task(self._reauthenticate())

    async def _reauthenticate(self) -> None:
        try:
            await self.authenticate()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("%s: re-authentication failed: %s", self, exc)
            self.close(exc)

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
        if response is None or response.error_code == _UNSUPPORTED_VERSION:
            response = await self.request(API_VERSIONS, API_VERSIONS.Request(), version=0)
        if response.error_code != 0:
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
        with contextlib.suppress(Exception):
            self._writer.close()
        for cb in self._close_callbacks:
            try:
                cb(self, reason)
            except Exception:  # pragma: no cover - a callback bug must not break close
                log.exception("close callback failed")
        self._close_callbacks.clear()

    async def aclose(self) -> None:
        """Close and wait until the socket is gone."""
        self.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()

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
    ) -> asyncio.Future[Any]:
        """Write a request now and return a future of its decoded response.

        Requests are pipelined: call :meth:`send` several times before awaiting.
        During a re-authentication the request is written once it is over, unless
        ``unheld`` (the authentication's own requests).
        """
        if self._closed is not None:
            raise KafkaConnectionError(f"{self} is closed: {self._closed}")
        if version is None:
            version = self.version(api)
        corr = next(self._corr) & 0x7FFFFFFF
        frame = frames.encode_request(api, version, corr, self.client_id, request)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if expect_response:
            self._waiters[corr] = (fut, api, version)
        else:
            fut.set_result(None)
        try:
            if self._held is not None and not unheld:
                self._held.append(frame)
            else:
                self._writer.write(frame)
        except Exception as exc:  # the transport is gone
            self.close(exc)
            raise self._closed from exc  # type: ignore[misc]
        self.stats.requests += 1
        self.stats.bytes_sent += len(frame)
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
        """Wait until the socket's write buffer has room."""
        await self._writer.drain()

    # -- reading ---------------------------------------------------------------

    def _received(self, nbytes: int) -> None:
        """``nbytes`` arrived in the receiver's buffer: dispatch the frames they complete."""
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
            from rackafka.errors import CorrelationIdError

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


class _FrameProtocol(asyncio.BufferedProtocol):
    """The protocol of a connection's transport once the connection is made.

    Received bytes go into the connection's :class:`~rackafka.protocol.frames.FrameReceiver`;
    everything else (flow control for writes, EOF, loss) is also passed to the stream's own
    protocol, so that the stream writer's ``drain()``, ``close()`` and ``wait_closed()``
    keep working.
    """

    def __init__(self, conn: Connection, stream_protocol: Any) -> None:
        self._conn = conn
        self._stream = stream_protocol

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._conn._receiver.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._conn._received(nbytes)

    def eof_received(self) -> bool:
        self._conn._lost(None)
        self._stream.eof_received()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._conn._lost(exc)
        self._stream.connection_lost(exc)

    def pause_writing(self) -> None:
        self._stream.pause_writing()

    def resume_writing(self) -> None:
        self._stream.resume_writing()
