"""rackafka's consumer through the TLS/SASL front of the embedded cluster: every protocol
and mechanism in a consumer group, mutual TLS, refused logins without a retry storm,
KIP-368 re-authentication across several session lifetimes with records flowing (exactly
once), OAUTHBEARER token refresh, and no secret in any log line or message."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer
from rackafka.errors import (
    KafkaConnectionError,
    SaslAuthenticationFailed,
    SslAuthenticationError,
)
from rackafka.testing import EmbeddedCluster

pytest.importorskip("trustme", reason="trustme (testing extra) makes the front's certificates")
pytest.importorskip("scramp", reason="scramp (testing extra) is the front's SCRAM")

PASSWORD = "al1ce-pa55word-never-logged"
USERS = {"alice": PASSWORD}
TOKEN = "eyJ.never-logged.token"


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[Any]:
    caplog.set_level(logging.DEBUG)
    yield lambda: "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)


class Tokens:
    """An OAUTHBEARER token provider that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def token(self) -> str:
        self.calls += 1
        return f"{TOKEN}-{self.calls}"

    def extensions(self) -> dict[str, str]:
        return {"logicalCluster": "lkc-test"}


async def read_exactly(
    consumer: AIOKafkaConsumer[Any, Any], count: int, wait: float = 30
) -> list[tuple[int, int]]:
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + wait
    while len(seen) < count and time.monotonic() < deadline:
        for tp, records in (await consumer.getmany(timeout_ms=500)).items():
            seen.extend((tp.partition, r.offset) for r in records)
    return seen


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [
        ("SSL", None),
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SASL_SSL", "SCRAM-SHA-256"),
        ("SASL_SSL", "SCRAM-SHA-512"),
        ("SASL_SSL", "OAUTHBEARER"),
    ],
)
async def test_a_group_reads_everything_once_over_each_protocol(
    protocol: str, mechanism: str | None, logs: Any
) -> None:
    async with EmbeddedCluster(brokers=3, security_protocol=protocol, users=USERS) as cluster:
        cluster.create_topic("t", partitions=3, replication_factor=3)
        cluster.produce("t", 300, value_size=30)
        options = cluster.front.client_options(mechanism)
        tokens = Tokens()
        if mechanism == "OAUTHBEARER":
            options["sasl_oauth_token_provider"] = tokens
        async with AIOKafkaConsumer(
            "t", group_id=f"g-{uuid.uuid4().hex[:6]}", auto_offset_reset="earliest", **options
        ) as consumer:
            seen = await read_exactly(consumer, 300)
            assert len(seen) == 300 and len(set(seen)) == 300
            await consumer.commit()
            assert PASSWORD not in repr(consumer)
        stats = cluster.front.stats
        if mechanism is not None:
            # Bootstrap, brokers and the coordinator's own connection all authenticated.
            assert stats.authentications[mechanism] >= 2
            assert stats.failures == 0 and stats.protocol_violations == 0
        if mechanism == "OAUTHBEARER":
            assert tokens.calls == stats.authentications[mechanism]
            assert all(e == {"logicalCluster": "lkc-test"} for e in stats.oauth_extensions)
    text = logs()
    assert PASSWORD not in text and TOKEN not in text


async def test_mutual_tls() -> None:
    async with EmbeddedCluster(brokers=1, security_protocol="SSL", require_client_cert=True) as c:
        c.create_topic("m", partitions=1, replication_factor=1)
        c.produce("m", 10, value_size=10)
        async with AIOKafkaConsumer(
            "m", auto_offset_reset="earliest", **c.front.client_options(client_cert=True)
        ) as consumer:
            assert len(await read_exactly(consumer, 10)) == 10
        consumer = AIOKafkaConsumer("m", **c.front.client_options())
        try:
            started = time.monotonic()
            with pytest.raises(SslAuthenticationError):
                await consumer.start()
            assert time.monotonic() - started < 10
        finally:
            await consumer.stop()


async def test_wrong_password_fails_start_without_a_storm(logs: Any) -> None:
    async with EmbeddedCluster(brokers=3, security_protocol="SASL_SSL", users=USERS) as c:
        options = c.front.client_options("SCRAM-SHA-512")
        options["sasl_plain_password"] = "not-" + PASSWORD
        consumer = AIOKafkaConsumer("t", **options)
        try:
            with pytest.raises(SaslAuthenticationFailed) as info:
                await consumer.start()
        finally:
            await consumer.stop()
        message = str(info.value)
        assert "SCRAM-SHA-512" in message and "alice" in message
        assert PASSWORD not in message
        # One attempt per bootstrap server at most, then the error.
        assert c.front.stats.failures <= 3
    assert PASSWORD not in logs()


async def test_oauth_token_refused_by_the_broker() -> None:
    async with EmbeddedCluster(
        brokers=1,
        security_protocol="SASL_SSL",
        sasl_mechanisms=("OAUTHBEARER",),
        oauth_validator=lambda token, _ext: token.startswith("good"),
    ) as c:
        options = c.front.client_options("OAUTHBEARER")
        options["sasl_oauth_token_provider"] = Tokens()
        consumer = AIOKafkaConsumer("t", **options)
        try:
            with pytest.raises(SaslAuthenticationFailed, match="OAUTHBEARER") as info:
                await consumer.start()
            assert TOKEN not in str(info.value)
        finally:
            await consumer.stop()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "OAUTHBEARER"])
async def test_reauthentication_across_session_lifetimes_exactly_once(mechanism: str) -> None:
    """KIP-368: 3 s sessions; a group member reads while records keep arriving for ~8 s
    (2.5 lifetimes). Every connection re-authenticates on the fly, the front never
    sees a request outside a valid session (it would close the connection), and every
    record arrives once."""
    async with EmbeddedCluster(
        brokers=3, security_protocol="SASL_SSL", users=USERS, session_lifetime_ms=3000
    ) as c:
        c.create_topic("r", partitions=3, replication_factor=3)
        options = c.front.client_options(mechanism)
        tokens = Tokens()
        if mechanism == "OAUTHBEARER":
            options["sasl_oauth_token_provider"] = tokens
        produced = 0
        seen: list[tuple[int, int]] = []
        async with AIOKafkaConsumer(
            "r", group_id="g-reauth", auto_offset_reset="earliest", **options
        ) as consumer:
            end = time.monotonic() + 8
            while time.monotonic() < end:
                await c.aproduce("r", 30, value_size=20, partition="spread")
                produced += 30
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    seen.extend((tp.partition, r.offset) for r in records)
            seen += await read_exactly(consumer, produced - len(seen))
        stats = c.front.stats
        assert len(seen) == produced and len(set(seen)) == produced
        assert stats.total_reauthentications >= 4, stats
        assert stats.protocol_violations == 0 and stats.failures == 0
        if mechanism == "OAUTHBEARER":
            # A fresh token for each authentication, first or again.
            assert tokens.calls == stats.total_authentications + stats.total_reauthentications


@pytest.mark.parametrize("renewal", ["stopped", "late"])
async def test_a_request_after_the_session(renewal: str) -> None:
    """KIP-368. ``stopped``: the front enforces lifetimes: a client that does not
    re-authenticate (librdkafka with SaslAuthenticate v0 would not) is disconnected.
    ``late``: on a busy event loop the renewal timer has not run yet when the session is
    over; a request sent then waits for a new session instead of reaching the broker
    outside one (a real broker closes the connection)."""
    from rackafka.net.connection import Connection
    from rackafka.net.security import SecurityConfig
    from rackafka.protocol.apis.metadata import METADATA

    async with EmbeddedCluster(
        brokers=1, security_protocol="SASL_PLAINTEXT", users=USERS, session_lifetime_ms=300
    ) as c:
        host, port = c.front.address_of(1)
        security = SecurityConfig.create(
            security_protocol="SASL_PLAINTEXT",
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORD,
        )
        conn = await Connection.open(host, port, security=security)
        try:
            assert conn.session_expires_at is not None
            assert conn._reauth is not None
            conn._reauth.cancel()  # the timer has not fired (yet)
            if renewal == "stopped":
                conn._reauth_due = None  # and nothing renews the session
            await asyncio.sleep(0.5)  # past the session
            before = conn.authentications
            request = conn.request(METADATA, METADATA.Request(topics=[]), timeout=5)
            if renewal == "stopped":
                with pytest.raises(KafkaConnectionError):
                    await request
                assert c.front.stats.protocol_violations == 1
            else:
                await request
                assert conn.authentications == before + 1
                assert c.front.stats.protocol_violations == 0
        finally:
            await conn.aclose()


async def test_msk_iam_tokens_through_the_front(monkeypatch: pytest.MonkeyPatch) -> None:
    """MSKIAMTokenProvider's tokens (signed offline from environment credentials) are
    what the broker receives over OAUTHBEARER: an MSK Connect URL with a SigV4 signature."""
    pytest.importorskip("aws_msk_iam_sasl_signer", reason="the aws extra signs MSK IAM tokens")
    import base64
    from urllib.parse import parse_qs, urlparse

    from rackafka.net.sasl.aws_msk_iam import MSKIAMTokenProvider

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    seen: list[dict[str, list[str]]] = []

    def msk_validator(token: str, _extensions: dict[str, str]) -> bool:
        url = urlparse(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode())
        query = parse_qs(url.query)
        seen.append(query)
        return url.hostname == "kafka.eu-west-1.amazonaws.com" and query.get("Action") == [
            "kafka-cluster:Connect"
        ]

    async with EmbeddedCluster(
        brokers=2,
        security_protocol="SASL_SSL",
        sasl_mechanisms=("OAUTHBEARER",),
        oauth_validator=msk_validator,
    ) as c:
        c.create_topic("iam", partitions=2, replication_factor=2)
        c.produce("iam", 40, value_size=10)
        options = c.front.client_options("OAUTHBEARER")
        options["sasl_oauth_token_provider"] = MSKIAMTokenProvider(region="eu-west-1")
        async with AIOKafkaConsumer("iam", auto_offset_reset="earliest", **options) as consumer:
            assert len(await read_exactly(consumer, 40)) == 40
        assert c.front.stats.authentications["OAUTHBEARER"] >= 2
        assert seen and all("X-Amz-Signature" in q for q in seen)
