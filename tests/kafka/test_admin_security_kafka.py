"""The admin client through Kafka's own SASL_SSL listener (``kafka.front``), with every
mechanism it offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (Kafka's unsecured
tokens). Wrong credentials end ``start()`` with the authentication error, without the secret.
"""

from __future__ import annotations

import logging
import time

import pytest

from rackafka import AIOKafkaAdminClient
from rackafka.admin import NewTopic
from rackafka.errors import AuthenticationFailedError, SaslAuthenticationFailed
from rackafka.testing import KafkaCluster

from ._flow import unique
from .test_security_kafka import MECHANISMS, check_no_secret, debug_logs, options

__all__ = ["debug_logs"]  # the fixture, imported for the tests of this module


@pytest.mark.parametrize("mechanism", MECHANISMS)
async def test_admin_creates_describes_and_deletes_a_topic_over_sasl_ssl(
    kafka: KafkaCluster, debug_logs: pytest.LogCaptureFixture, mechanism: str
) -> None:
    """create_topics, describe_topics, describe_cluster and delete_topics over SASL_SSL with
    each mechanism; no secret in the DEBUG logs or the client's repr."""
    assert kafka.front is not None
    name = unique(f"admin-{mechanism.lower()}")
    async with AIOKafkaAdminClient(**options(kafka, mechanism)) as admin:
        created = await admin.create_topics([NewTopic(name, 2, 3)])
        assert created.topic_errors == [(name, 0, None)]
        [described] = await admin.describe_topics([name])
        assert described["topic"] == name and described["error_code"] == 0
        assert sorted(p["partition"] for p in described["partitions"]) == [0, 1]
        assert all(len(p["replicas"]) == 3 for p in described["partitions"])
        cluster = await admin.describe_cluster()
        assert sorted(b["node_id"] for b in cluster["brokers"]) == [1, 2, 3]
        # The brokers named are those of the secured listener the client came through.
        secure_ports = {int(a.rsplit(":", 1)[1]) for a in kafka.front.bootstrap_servers.split(",")}
        assert {b["port"] for b in cluster["brokers"]} == secure_ports
        deleted = await admin.delete_topics([name])
        assert deleted.topic_error_codes == [(name, 0)]
        check_no_secret(repr(admin))
    async with AIOKafkaAdminClient(**options(kafka, mechanism)) as admin:
        assert name not in await admin.list_topics()


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("PLAIN", "bob", "wrong-bob-secret"),
        ("SCRAM-SHA-256", "alice", "wrong-alice-secret"),
        ("SCRAM-SHA-512", "mallory", "bob-secret"),  # no such user
    ],
)
async def test_admin_with_wrong_credentials_raises_the_authentication_error(
    kafka: KafkaCluster,
    debug_logs: pytest.LogCaptureFixture,
    mechanism: str,
    user: str,
    password: str,
) -> None:
    """A wrong password or an unknown user ends the admin client's start() promptly with
    SaslAuthenticationFailed (an AuthenticationFailedError) that names the mechanism but not
    the password."""
    opts = options(kafka, mechanism)
    opts.update(sasl_plain_username=user, sasl_plain_password=password)
    admin = AIOKafkaAdminClient(**opts)
    began = time.monotonic()
    try:
        with pytest.raises(SaslAuthenticationFailed) as info:
            await admin.start()
    finally:
        await admin.close()
    assert time.monotonic() - began < 60
    assert isinstance(info.value, AuthenticationFailedError)
    message = str(info.value)
    assert mechanism in message, message
    check_no_secret(message + repr(admin), (password,))
    check_no_secret(debug_logs.text, (password,))


async def test_admin_with_a_refused_oauth_token_raises_the_authentication_error(
    kafka: KafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """OAUTHBEARER with a token the broker refuses (not a JWS): start() raises the
    authentication error, without the token."""
    from rackafka.abc import AbstractTokenProvider

    bad = "not-a-jws-token-s3cr3t"

    class BadTokens(AbstractTokenProvider):
        async def token(self) -> str:
            return bad

    caplog.set_level(logging.DEBUG, logger="rackafka")
    assert kafka.front is not None
    opts = kafka.front.client_options("OAUTHBEARER")
    admin = AIOKafkaAdminClient(**opts, sasl_oauth_token_provider=BadTokens())
    try:
        with pytest.raises(SaslAuthenticationFailed) as info:
            await admin.start()
    finally:
        await admin.close()
    assert isinstance(info.value, AuthenticationFailedError)
    assert bad not in str(info.value) and bad not in repr(admin)
    assert bad not in caplog.text
