"""TLS and SASL against Apache Kafka's own listeners (not our secure front).

The session cluster's ``kafka.front`` is a SASL_SSL listener with SCRAM-SHA-256/512 and
PLAIN users and OAUTHBEARER with Kafka's unsecured tokens, whose sessions last
``SESSION_LIFETIME_MS`` (KIP-368: the broker closes a connection that does not
re-authenticate in time). Plain SSL needs a listener of its own: a one-broker cluster of
this module (a few seconds to start).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rackafka.abc import AbstractTokenProvider
from rackafka.admin import AIOKafkaAdminClient, NewTopic
from rackafka.errors import AuthenticationFailedError, SaslAuthenticationFailed
from rackafka.helpers import create_ssl_context
from rackafka.net.connection import Connection
from rackafka.testing import KafkaCluster, unsecured_oauth_token

from ._readback import unique
from .conftest import SESSION_LIFETIME_MS, USERS, check_prerequisites

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "OAUTHBEARER"]
SECRETS = list(USERS.values())
#: Every OAUTHBEARER token handed out in this module: secrets as well.
TOKENS: list[str] = []


class UnsecuredTokens(AbstractTokenProvider):
    """Kafka's unsecured OAUTHBEARER tokens (a JWS with ``"alg": "none"``), a fresh one
    at each authentication."""

    def __init__(self) -> None:
        self.issued: list[str] = []

    async def token(self) -> str:
        token = unsecured_oauth_token("client", lifetime_s=3600)
        self.issued.append(token)
        TOKENS.append(token)
        return token


def options(kafka: KafkaCluster, mechanism: str, user: str = "alice") -> dict[str, Any]:
    assert kafka.front is not None
    if mechanism == "OAUTHBEARER":
        opts = kafka.front.client_options(mechanism)
        opts["sasl_oauth_token_provider"] = UnsecuredTokens()
        return opts
    return kafka.front.client_options(mechanism, user)


def check_no_secret(text: str, extra: tuple[str, ...] = ()) -> None:
    for secret in (*SECRETS, *TOKENS, *extra):
        assert secret not in text, (
            f"a secret leaked: {text[max(0, text.find(secret) - 200) :][:400]}"
        )


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every rackafka log record at DEBUG, checked for secrets after the test."""
    caplog.set_level(logging.DEBUG, logger="rackafka")
    yield caplog
    # In teardown, caplog.records/.text hold the teardown's records only: check the test's.
    records = caplog.get_records("setup") + caplog.get_records("call")
    assert records, "no DEBUG log records were captured"
    check_no_secret("\n".join(caplog.handler.format(r) for r in records))


async def produce_and_read(opts: dict[str, Any], topic: str, count: int) -> None:
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(acks="all", linger_ms=5, **opts)
    await producer.start()
    try:
        check_no_secret(repr(producer))
        futures = [await producer.send(topic, b"v%d" % i, partition=i % 2) for i in range(count)]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        topic, group_id=unique("sec-group"), auto_offset_reset="earliest", **opts
    )
    await consumer.start()
    try:
        check_no_secret(repr(consumer))
        got: list[bytes] = []
        deadline = time.monotonic() + 120
        while len(got) < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                got.extend(r.value for r in records)
        await consumer.commit()
        committed = {p: await consumer.committed(TopicPartition(topic, p)) for p in range(2)}
    finally:
        await consumer.stop()
    assert sorted(got) == sorted(b"v%d" % i for i in range(count))
    assert committed == {0: (count + 1) // 2, 1: count // 2}


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_sasl_ssl_mechanism(
    kafka: KafkaCluster, debug_logs: pytest.LogCaptureFixture, mechanism: str
) -> None:
    """Produce (acks=all) and read back in a group, committing, through Kafka's SASL_SSL
    listener with each mechanism; no secret in the DEBUG logs or the clients' repr."""
    topic = unique(f"sasl-{mechanism.lower()}")
    kafka.create_topic(topic, 2, 3)
    await produce_and_read(options(kafka, mechanism), topic, 30)


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("SCRAM-SHA-256", "alice", "wrong-alice-secret"),
        ("SCRAM-SHA-512", "mallory", "bob-secret"),  # no such user
        ("PLAIN", "bob", "wrong-bob-secret"),
    ],
)
async def test_wrong_credentials_raise_the_authentication_error(
    kafka: KafkaCluster,
    debug_logs: pytest.LogCaptureFixture,
    mechanism: str,
    user: str,
    password: str,
) -> None:
    """A wrong password (or an unknown user) ends start() with SaslAuthenticationFailed (an
    AuthenticationFailedError), promptly instead of retrying forever, without the password."""
    assert kafka.front is not None
    opts = kafka.front.client_options(mechanism, "alice")
    opts.update(sasl_plain_username=user, sasl_plain_password=password)
    clients: list[Any] = [
        AIOKafkaProducer(**opts),
        AIOKafkaConsumer(unique("nope"), group_id=unique("g"), **opts),
    ]
    for client in clients:
        began = time.monotonic()
        try:
            with pytest.raises(SaslAuthenticationFailed) as info:
                await client.start()
        finally:
            await client.stop()
        assert time.monotonic() - began < 60
        assert isinstance(info.value, AuthenticationFailedError)
        message = str(info.value)
        assert mechanism in message and password not in message, message
        check_no_secret(message + repr(client), (password,))
    check_no_secret(debug_logs.text, (password,))


@pytest.fixture(scope="module")
def ssl_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One broker with an SSL listener (the test CA's certificate for 127.0.0.1)."""
    check_prerequisites()
    with KafkaCluster(
        brokers=1,
        racks=None,
        security_protocol="SSL",
        work_dir=tmp_path_factory.mktemp("kafka-ssl"),
    ) as cluster:
        yield cluster


async def test_ssl_with_the_test_ca(ssl_kafka: KafkaCluster) -> None:
    """Producer and group consumer over Kafka's SSL listener, trusting the test CA; a client
    that does not trust it is refused with an AuthenticationFailedError at start()."""
    assert ssl_kafka.front is not None
    topic = unique("ssl")
    ssl_kafka.create_topic(topic, 2, 1)
    opts = ssl_kafka.front.client_options()
    assert opts["security_protocol"] == "SSL" and "sasl_mechanism" not in opts
    await produce_and_read(opts, topic, 20)

    untrusting = dict(opts, ssl_context=create_ssl_context())  # the system CAs only
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**untrusting)
    try:
        with pytest.raises(AuthenticationFailedError) as info:
            await producer.start()
    finally:
        await producer.stop()
    assert isinstance(info.value.__cause__, ssl.SSLError) or "certificate" in str(info.value)


async def test_admin_over_ssl_with_the_test_ca(ssl_kafka: KafkaCluster) -> None:
    """The admin client over Kafka's SSL listener: creates, describes and deletes a topic;
    one that does not trust the CA is refused at start() with an AuthenticationFailedError."""
    assert ssl_kafka.front is not None
    opts = {
        k: v
        for k, v in ssl_kafka.front.client_options().items()
        if k in ("bootstrap_servers", "security_protocol", "ssl_context")
    }
    topic = unique("ssl-admin")
    async with AIOKafkaAdminClient(**opts) as admin:
        answer = await admin.create_topics([NewTopic(topic, 2, 1)])
        assert [(t, code) for t, code, _ in answer.topic_errors] == [(topic, 0)]
        [described] = await admin.describe_topics([topic])
        assert described["error_code"] == 0 and len(described["partitions"]) == 2
        cluster = await admin.describe_cluster()
        # the brokers' secured listener, the one the client bootstrapped from
        assert [f"{b['host']}:{b['port']}" for b in cluster["brokers"]] == [
            opts["bootstrap_servers"]
        ]
        await admin.delete_topics([topic])
        assert topic not in await admin.list_topics()
    untrusting = dict(opts, ssl_context=create_ssl_context())  # the system CAs only
    refused = AIOKafkaAdminClient(**untrusting)
    try:
        with pytest.raises(AuthenticationFailedError):
            await refused.start()
    finally:
        await refused.close()


async def test_reauthentication_in_a_group_across_session_lifetimes(
    kafka: KafkaCluster,
    debug_logs: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """KIP-368 on Kafka: a group consumer (SCRAM-SHA-512) keeps reading and committing while
    a producer (OAUTHBEARER) keeps writing, for more than three session lifetimes. The broker
    would close any connection whose session ended; here every connection re-authenticates
    in place: no error, no connection opened after the start, every record read once."""
    topic = unique("reauth")
    kafka.create_topic(topic, 3, 3)
    opened: list[tuple[float, Connection]] = []
    original = Connection.open.__func__  # type: ignore[attr-defined]

    async def counting_open(cls: type[Connection], *args: Any, **kw: Any) -> Connection:
        conn = await original(cls, *args, **kw)
        opened.append((time.monotonic(), conn))
        return conn

    monkeypatch.setattr(Connection, "open", classmethod(counting_open))
    lifetime = SESSION_LIFETIME_MS / 1000
    run_for = 3 * lifetime + 4  # more than three sessions of every connection

    producer_options = options(kafka, "OAUTHBEARER")
    tokens: UnsecuredTokens = producer_options["sasl_oauth_token_provider"]
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(acks="all", **producer_options)
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        topic,
        group_id=unique("reauth-group"),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **options(kafka, "SCRAM-SHA-512", "bob"),
    )
    await producer.start()
    await consumer.start()
    sent: list[bytes] = []
    got: list[bytes] = []
    commits = 0
    try:
        # Warm up: the group is formed and every connection is open.
        deadline = time.monotonic() + 120
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the group did not form"
            await consumer.getmany(timeout_ms=200)
        await producer.send_and_wait(topic, b"warm-up", partition=0)
        warm_until = time.monotonic() + 5
        while b"warm-up" not in got or time.monotonic() < warm_until:
            assert time.monotonic() < deadline, "the first record did not arrive"
            for records in (await consumer.getmany(timeout_ms=200)).values():
                got.extend(r.value for r in records)
            await producer.send_and_wait(topic, b"warm-%d" % len(sent), partition=len(sent) % 3)
            sent.append(b"warm-%d" % len(sent))
        steady_from = time.monotonic()
        while time.monotonic() - steady_from < run_for:
            value = b"r-%d" % len(sent)
            await producer.send(topic, value, partition=len(sent) % 3)
            sent.append(value)
            batch = await consumer.getmany(timeout_ms=100)
            for records in batch.values():
                got.extend(r.value for r in records)
            if batch:
                await consumer.commit()
                commits += 1
        await producer.flush()
        deadline = time.monotonic() + 60
        while len(got) < len(sent) + 1 and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                got.extend(r.value for r in records)
        await consumer.commit()
    finally:
        await consumer.stop()
        await producer.stop()
    assert sorted(got) == sorted([b"warm-up", *sent]), "records lost or read twice"
    assert commits >= 10, commits  # committing all along
    late = [(round(t - steady_from, 1), str(c)) for t, c in opened if t > steady_from]
    assert not late, f"connections opened during the run (a session was not renewed): {late}"
    lasting = [c for t, c in opened if steady_from - t > 0]
    assert lasting
    for conn in lasting:
        if conn.connected or conn.authentications > 1:
            # A connection alive the whole run renewed its session at least 3 times.
            assert conn.authentications >= 4, (str(conn), conn.authentications)
    assert any(c.authentications >= 4 for c in lasting)
    assert len(tokens.issued) >= 4  # a token at each (re-)authentication
    assert not [
        r
        for r in debug_logs.records
        if r.levelno >= logging.WARNING and r.name.startswith("rackafka")
    ], "warnings during the run"
