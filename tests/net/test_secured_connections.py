"""TLS and SASL of rackafka's connections against a broker of our own (FakeBroker) that
speaks TLS and answers SaslHandshake/SaslAuthenticate with an independent SCRAM
implementation (scramp), including brokers that misbehave: a wrong server signature, a
pre-1.0 handshake, no SASL at all, sessions that end (KIP-368), a broker that starts
refusing.  Every case ends with the records delivered exactly once or a clear error, never
a hang or a retry storm, and never a secret in a message or a log line."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.errors import (
    AuthenticationFailedError,
    AuthenticationMethodNotSupported,
    KafkaConnectionError,
    SaslAuthenticationFailed,
    SslAuthenticationError,
    UnsupportedSaslMechanismError,
)
from rackafka.helpers import create_ssl_context
from rackafka.net.connection import Connection
from rackafka.net.security import SecurityConfig
from rackafka.protocol.apis.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rackafka.records import encode_batch
from rackafka.testing.fake_broker import FakeBroker, FakeRequest

trustme = pytest.importorskip("trustme", reason="trustme (test extra) makes the certificates")
scramp = pytest.importorskip("scramp", reason="scramp (test extra) is the broker's SCRAM")

TP = TopicPartition("t", 0)
PASSWORD = "correct horse battery staple"
WAIT = 15.0


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    other_ca = trustme.CA()
    server_ctx = __import__("ssl").create_default_context(__import__("ssl").Purpose.CLIENT_AUTH)
    server.configure_cert(server_ctx)
    ca.cert_pem.write_to_path(str(tmp / "ca.pem"))
    other_ca.cert_pem.write_to_path(str(tmp / "other.pem"))
    return {"server": server_ctx, "ca": str(tmp / "ca.pem"), "other_ca": str(tmp / "other.pem")}


class SaslBroker:
    """SaslHandshake/SaslAuthenticate handlers for a FakeBroker, state per connection."""

    def __init__(
        self,
        mechanisms: tuple[str, ...] = ("SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "OAUTHBEARER"),
        *,
        lifetime_ms: int = 0,
        handshake_max_version: int = 1,
    ) -> None:
        self.mechanisms = mechanisms
        self.lifetime_ms = lifetime_ms
        self.handshake_max_version = handshake_max_version
        self.users = {"alice": PASSWORD}
        self.refuse = False
        self.bad_signature = False
        self.state: dict[int, Any] = {}
        self.authentications: dict[int, int] = {}
        self.tokens: list[tuple[str, dict[str, str]]] = []

    def install(self, broker: FakeBroker) -> None:
        broker.handlers["SaslHandshake"] = self.handshake
        broker.handlers["SaslAuthenticate"] = self.authenticate
        default = broker._default_ApiVersions

        def versions(b: FakeBroker, request: FakeRequest) -> Any:
            response = default(request)
            for key in response["api_keys"]:
                if key["api_key"] == SASL_HANDSHAKE.key:
                    key["max_version"] = self.handshake_max_version
            return response

        broker.handlers["ApiVersions"] = versions

    def handshake(self, _b: FakeBroker, request: FakeRequest) -> Any:
        mechanism = request.body.mechanism
        if mechanism not in self.mechanisms:
            return {
                "error_code": UnsupportedSaslMechanismError.errno,
                "mechanisms": list(self.mechanisms),
            }
        self.state[request.connection] = [mechanism, None]
        return {"error_code": 0, "mechanisms": list(self.mechanisms)}

    def _fail(self, message: str) -> dict[str, Any]:
        return {
            "error_code": SaslAuthenticationFailed.errno,
            "error_message": message,
            "auth_bytes": b"",
        }

    def _ok(self, connection: int, data: bytes = b"") -> dict[str, Any]:
        self.authentications[connection] = self.authentications.get(connection, 0) + 1
        return {"error_code": 0, "auth_bytes": data, "session_lifetime_ms": self.lifetime_ms}

    def authenticate(self, _b: FakeBroker, request: FakeRequest) -> Any:
        conn = request.connection
        mechanism, server = self.state[conn]
        data = bytes(request.body.auth_bytes)
        if self.refuse:
            return self._fail("Authentication failed: refused by the test")
        if mechanism == "PLAIN":
            _authz, user, password = data.decode().split("\0")
            if self.users.get(user) != password:
                return self._fail("Authentication failed: Invalid username or password")
            return self._ok(conn)
        if mechanism == "OAUTHBEARER":
            text = data.decode()
            parts = dict(p.split("=", 1) for p in text[3:].strip("\x01").split("\x01") if p)
            token = parts.pop("auth").removeprefix("Bearer ")
            self.tokens.append((token, parts))
            return self._ok(conn)
        if server is None:  # client-first

            def auth_fn(user: str) -> Any:
                password = self.users.get(user, "\x00no such user")
                return scramp.ScramMechanism(mechanism).make_auth_info(password, 4096)

            server = scramp.ScramMechanism(mechanism).make_server(auth_fn)
            server.set_client_first(data.decode())
            self.state[conn][1] = server
            return {"error_code": 0, "auth_bytes": server.get_server_first().encode()}
        try:
            server.set_client_final(data.decode())
        except scramp.ScramException:
            return self._fail(
                "Authentication failed during authentication due to invalid credentials "
                f"with SASL mechanism {mechanism}"
            )
        final = server.get_server_final().encode()
        if self.bad_signature:
            final = b"v=" + b"A" * 44
        self.state[conn][1] = None
        return self._ok(conn, final)


def batch(first: int, count: int = 10) -> bytes:
    return encode_batch(
        [(1_000 + i, b"k%d" % i, b"v%d" % i) for i in range(first, first + count)],
        base_offset=first,
    )


@pytest.fixture
def log_text(caplog: pytest.LogCaptureFixture) -> Iterator[Any]:
    caplog.set_level(logging.DEBUG, logger="rackafka")
    yield lambda: "\n".join(r.getMessage() for r in caplog.records)


async def fake_broker(pki: dict[str, Any], sasl: SaslBroker | None, tls: bool = True) -> FakeBroker:
    broker = FakeBroker(topics={"t": 1}, ssl_context=pki["server"] if tls else None)
    if sasl is not None:
        sasl.install(broker)
    broker.append("t", 0, batch(0, 20))
    return await broker.start()


def secured(
    broker: FakeBroker, pki: dict[str, Any], protocol: str = "SASL_SSL", **kw: Any
) -> AIOKafkaConsumer[Any, Any]:
    options: dict[str, Any] = {
        "bootstrap_servers": f"localhost:{broker.port}",
        "auto_offset_reset": "earliest",
        "security_protocol": protocol,
        "fetch_max_wait_ms": 100,
        "request_timeout_ms": 5000,
    }
    if "SSL" in protocol:
        options["ssl_context"] = create_ssl_context(cafile=pki["ca"])
    options.update(kw)
    return AIOKafkaConsumer(**options)


async def read_all(consumer: AIOKafkaConsumer[Any, Any], count: int) -> list[int]:
    offsets: list[int] = []
    deadline = time.monotonic() + WAIT
    while len(offsets) < count and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=500)).values():
            offsets.extend(r.offset for r in records)
    return offsets


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [
        ("SSL", None),
        ("SASL_SSL", "SCRAM-SHA-256"),
        ("SASL_SSL", "SCRAM-SHA-512"),
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SASL_SSL", "PLAIN"),
    ],
)
async def test_records_arrive_over_each_protocol(
    pki: dict[str, Any], protocol: str, mechanism: str | None, log_text: Any
) -> None:
    sasl = SaslBroker() if mechanism else None
    broker = await fake_broker(pki, sasl, tls="SSL" in protocol)
    extra: dict[str, Any] = {}
    if mechanism:
        extra = {
            "sasl_mechanism": mechanism,
            "sasl_plain_username": "alice",
            "sasl_plain_password": PASSWORD,
        }
    try:
        async with secured(broker, pki, protocol, **extra) as consumer:
            consumer.assign([TP])
            assert await read_all(consumer, 20) == list(range(20))
            assert PASSWORD not in repr(consumer)
        if sasl is not None:
            # Every connection authenticated before anything else was asked of it.
            assert sasl.authentications and all(n == 1 for n in sasl.authentications.values())
            for conn in sasl.authentications:
                names = [r.api_name for r in broker.requests if r.connection == conn]
                first_other = next(
                    i
                    for i, n in enumerate(names)
                    if n not in ("ApiVersions", "SaslHandshake", "SaslAuthenticate")
                )
                assert "SaslAuthenticate" in names[:first_other]
    finally:
        await broker.close()
    assert PASSWORD not in log_text()


async def test_oauthbearer_sends_the_providers_token_and_extensions(pki: dict[str, Any]) -> None:
    class Tokens:
        calls = 0

        async def token(self) -> str:
            Tokens.calls += 1
            return f"token-{Tokens.calls}"

        def extensions(self) -> dict[str, str]:
            return {"logicalCluster": "lkc-1"}

    sasl = SaslBroker()
    broker = await fake_broker(pki, sasl)
    try:
        async with secured(
            broker, pki, sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Tokens()
        ) as consumer:
            consumer.assign([TP])
            assert await read_all(consumer, 20) == list(range(20))
    finally:
        await broker.close()
    assert sasl.tokens and all(ext == {"logicalCluster": "lkc-1"} for _t, ext in sasl.tokens)
    assert len({t for t, _e in sasl.tokens}) == len(sasl.tokens)  # a fresh token each time


async def test_wrong_password_fails_start_clearly_and_without_a_storm(
    pki: dict[str, Any], log_text: Any
) -> None:
    sasl = SaslBroker()
    broker = await fake_broker(pki, sasl)
    consumer = secured(
        broker,
        pki,
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="alice",
        sasl_plain_password="not-" + PASSWORD,
    )
    try:
        started = time.monotonic()
        with pytest.raises(SaslAuthenticationFailed) as info:
            await consumer.start()
        assert time.monotonic() - started < 5
        message = str(info.value)
        assert (
            "SCRAM-SHA-512" in message and "alice" in message and "invalid credentials" in message
        )
        assert PASSWORD not in message
        assert isinstance(info.value, AuthenticationFailedError)
        # As in aiokafka: code that retries on connection errors must not retry this.
        assert not isinstance(info.value, KafkaConnectionError)
        assert broker.connections == 1
    finally:
        await consumer.stop()
        await broker.close()
    assert PASSWORD not in log_text()


async def test_a_broker_that_does_not_know_the_password_is_not_trusted(
    pki: dict[str, Any],
) -> None:
    sasl = SaslBroker()
    sasl.bad_signature = True
    broker = await fake_broker(pki, sasl)
    consumer = secured(
        broker,
        pki,
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORD,
    )
    try:
        with pytest.raises(SaslAuthenticationFailed, match="signature"):
            await consumer.start()
    finally:
        await consumer.stop()
        await broker.close()


async def test_unsupported_mechanism_names_the_enabled_ones(pki: dict[str, Any]) -> None:
    broker = await fake_broker(pki, SaslBroker(mechanisms=("SCRAM-SHA-512",)))
    consumer = secured(
        broker, pki, sasl_mechanism="PLAIN", sasl_plain_username="a", sasl_plain_password="b"
    )
    try:
        with pytest.raises(UnsupportedSaslMechanismError, match="SCRAM-SHA-512"):
            await consumer.start()
    finally:
        await consumer.stop()
        await broker.close()


@pytest.mark.parametrize("handshake_v0_only", [True, False])
async def test_brokers_without_usable_sasl_are_refused_clearly(
    pki: dict[str, Any], handshake_v0_only: bool
) -> None:
    sasl = SaslBroker(handshake_max_version=0) if handshake_v0_only else None
    broker = await fake_broker(pki, sasl)
    if not handshake_v0_only:

        def no_sasl(b: FakeBroker, request: FakeRequest) -> Any:
            response = b._default_ApiVersions(request)
            response["api_keys"] = [
                k
                for k in response["api_keys"]
                if k["api_key"] not in (SASL_HANDSHAKE.key, SASL_AUTHENTICATE.key)
            ]
            return response

        broker.handlers["ApiVersions"] = no_sasl
    consumer = secured(
        broker, pki, sasl_mechanism="PLAIN", sasl_plain_username="a", sasl_plain_password="b"
    )
    try:
        with pytest.raises(
            AuthenticationMethodNotSupported,
            match="v0" if handshake_v0_only else "security_protocol",
        ):
            await consumer.start()
    finally:
        await consumer.stop()
        await broker.close()


@pytest.mark.parametrize("case", ["untrusted CA", "plaintext broker"])
async def test_tls_failures_are_clear_and_quick(pki: dict[str, Any], case: str) -> None:
    broker = await fake_broker(pki, None, tls=case != "plaintext broker")
    cafile = pki["other_ca"] if case == "untrusted CA" else pki["ca"]
    consumer = secured(broker, pki, "SSL", ssl_context=create_ssl_context(cafile=cafile))
    try:
        started = time.monotonic()
        with pytest.raises(SslAuthenticationError) as info:
            await consumer.start()
        assert time.monotonic() - started < 5
        if case == "untrusted CA":
            assert "certificate" in str(info.value) and "cafile" in str(info.value)
    finally:
        await consumer.stop()
        await broker.close()


def _hang_up(writer: asyncio.StreamWriter, how: str) -> None:
    """End a connection with a FIN (``close``) or a reset (``reset``)."""
    if how == "reset":
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
    else:
        writer.close()


@pytest.mark.parametrize("how", ["close", "reset"])
async def test_a_broker_that_hangs_up_after_the_tls_handshake_is_a_tls_refusal(
    pki: dict[str, Any], how: str
) -> None:
    """With TLS 1.3 a broker that wants a client certificate finishes the handshake on the
    client's side, then hangs up when our first request arrives: with a FIN, or with a
    reset when that request is still unread. Both are the same refusal."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(4)  # the first request has arrived
        _hang_up(writer, how)

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=pki["server"])
    port = server.sockets[0].getsockname()[1]
    consumer = AIOKafkaConsumer(
        bootstrap_servers=f"127.0.0.1:{port}",
        security_protocol="SSL",
        ssl_context=create_ssl_context(cafile=pki["ca"]),
        retry_backoff_ms=50,
    )
    try:
        with pytest.raises(SslAuthenticationError, match="client certificate"):
            await consumer.start()
    finally:
        await consumer.stop()
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("how", ["close", "reset"])
async def test_a_hang_up_before_the_connection_is_set_up_is_seen_at_once(
    pki: dict[str, Any], how: str
) -> None:
    """The broker hangs up right after the TLS handshake, and the connection sees it before
    it has sent its first request (a busy event loop, or a broker quick to refuse a missing
    client certificate): the connection is refused at once, as a TLS refusal, not after the
    request timeout."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _hang_up(writer, how)

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=pki["server"])
    port = server.sockets[0].getsockname()[1]
    security = SecurityConfig.create(
        security_protocol="SSL", ssl_context=create_ssl_context(cafile=pki["ca"])
    )
    tls = security.connector()

    async def late_connector(factory: Any, host: str, port: int) -> Any:
        transport, conn = await tls(factory, host, port)
        for _ in range(200):  # until the connection has seen the hang-up
            if not conn.connected:
                break
            await asyncio.sleep(0.01)
        assert not conn.connected
        return transport, conn

    started = time.monotonic()
    try:
        with pytest.raises(SslAuthenticationError, match="client certificate"):
            await Connection.open(
                "127.0.0.1",
                port,
                connector=late_connector,
                security=security,
                request_timeout_ms=30_000,
            )
        assert time.monotonic() - started < 10  # not the 30 s request timeout
    finally:
        server.close()
        await server.wait_closed()


async def test_host_name_is_verified(pki: dict[str, Any], tmp_path: Path) -> None:
    """A certificate from the trusted CA for another name is refused."""
    ca = trustme.CA()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("kafka.example.com").configure_cert(ctx)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    broker = await FakeBroker(topics={"t": 1}, ssl_context=ctx).start()
    consumer = secured(
        broker, pki, "SSL", ssl_context=create_ssl_context(cafile=tmp_path / "ca.pem")
    )
    try:
        with pytest.raises(SslAuthenticationError, match="localhost"):
            await consumer.start()
    finally:
        await consumer.stop()
        await broker.close()


async def test_sessions_are_renewed_on_the_live_connection(pki: dict[str, Any]) -> None:
    """KIP-368: with a 1 s session the consumer re-authenticates each connection every
    0.85-0.95 s while it keeps fetching; nothing but SaslAuthenticate arrives between a
    SaslHandshake and the end of its exchange; every record arrives once."""
    sasl = SaslBroker(lifetime_ms=1000)
    broker = await fake_broker(pki, sasl)
    seen: list[int] = []
    try:
        async with secured(
            broker,
            pki,
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORD,
        ) as consumer:
            consumer.assign([TP])
            seen += await read_all(consumer, 20)
            end = time.monotonic() + 3.5
            next_first = 20
            while time.monotonic() < end:
                broker.append("t", 0, batch(next_first, 5))
                next_first += 5
                for records in (await consumer.getmany(timeout_ms=300)).values():
                    seen.extend(r.offset for r in records)
            seen += await read_all(consumer, next_first - len(seen))
    finally:
        await broker.close()
    assert seen == list(range(next_first))
    assert max(sasl.authentications.values()) >= 3
    for conn in sasl.authentications:
        names = [r.api_name for r in broker.requests if r.connection == conn]
        for i, name in enumerate(names):
            if name == "SaslHandshake":
                # SCRAM: client-first and client-final, with nothing else in between (the
                # last exchange may be cut short by the consumer's stop(): then nothing
                # follows it on that connection).
                after = names[i + 1 : i + 3]
                assert after == ["SaslAuthenticate"] * len(after), names[i : i + 4]
                assert len(after) == 2 or i + 1 + len(after) == len(names), names[i:]


async def test_a_broker_that_starts_refusing_surfaces_from_getmany(
    pki: dict[str, Any],
) -> None:
    sasl = SaslBroker(lifetime_ms=800)
    broker = await fake_broker(pki, sasl)
    try:
        async with secured(
            broker,
            pki,
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORD,
            reconnect_backoff_ms=200,
            reconnect_backoff_max_ms=1000,
        ) as consumer:
            consumer.assign([TP])
            assert await read_all(consumer, 20) == list(range(20))
            sasl.refuse = True
            since = time.monotonic()
            handshakes_before = broker.count("SaslHandshake")
            with pytest.raises(SaslAuthenticationFailed, match="refused by the test"):
                deadline = time.monotonic() + WAIT
                while time.monotonic() < deadline:
                    await consumer.getmany(timeout_ms=500)
            # Keeps trying, with backoff: no storm of connections.
            await asyncio.sleep(2)
            rate = (broker.count("SaslHandshake") - handshakes_before) / (time.monotonic() - since)
            assert rate < 6, rate
            sasl.refuse = False
            broker.append("t", 0, batch(20, 5))
            # A failure from before the broker relented may still be raised once; then
            # the consumer goes on where it was.
            got: list[int] = []
            deadline = time.monotonic() + WAIT
            while len(got) < 5 and time.monotonic() < deadline:
                try:
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        got.extend(r.offset for r in records)
                except AuthenticationFailedError:
                    pass
            assert got == list(range(20, 25))
    finally:
        await broker.close()


async def test_sasl_against_the_embedded_plaintext_cluster_is_refused(
    embedded_cluster: Any,
) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=embedded_cluster.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="a",
        sasl_plain_password="b",
    )
    try:
        with pytest.raises(AuthenticationMethodNotSupported, match="security_protocol"):
            await consumer.start()
    finally:
        await consumer.stop()


async def test_group_start_ends_when_the_coordinator_refuses_the_login(
    pki: dict[str, Any],
) -> None:
    """Bootstrap authenticates, then the coordinator's connection is refused: start()
    raises the refusal instead of waiting for an assignment forever."""
    sasl = SaslBroker()
    broker = await fake_broker(pki, sasl)
    original = sasl.authenticate

    def refuse_after_the_first(b: FakeBroker, request: FakeRequest) -> Any:
        sasl.refuse = bool(sasl.authentications)  # the first connection gets in
        return original(b, request)

    broker.handlers["SaslAuthenticate"] = refuse_after_the_first
    consumer = secured(
        broker,
        pki,
        group_id="g",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORD,
    )
    consumer.subscribe(["t"])
    try:
        started = time.monotonic()
        with pytest.raises(SaslAuthenticationFailed):
            await asyncio.wait_for(consumer.start(), WAIT)
        assert time.monotonic() - started < 10
    finally:
        await consumer.stop()
        await broker.close()
