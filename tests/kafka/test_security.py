"""SASL_SSL on real brokers: SCRAM-SHA-256/512 (users made at format time), PLAIN and
OAUTHBEARER (Kafka's unsecured tokens), over TLS with the test CA."""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter

import pytest

from rackafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from rackafka.abc import AbstractTokenProvider
from rackafka.errors import KafkaError
from rackafka.testing import KafkaCluster, unsecured_oauth_token

from .conftest import USERS


class UnsecuredTokens(AbstractTokenProvider):
    async def token(self) -> str:
        return unsecured_oauth_token("client", lifetime_s=600)


def options(kafka: KafkaCluster, mechanism: str, user: str = "alice") -> dict[str, object]:
    front = kafka.front
    assert front is not None
    opts = front.client_options(mechanism, None if mechanism == "OAUTHBEARER" else user)
    if mechanism == "OAUTHBEARER":
        opts["sasl_oauth_token_provider"] = UnsecuredTokens()
    return opts


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN", "OAUTHBEARER"])
async def test_produce_and_consume_over_sasl_ssl(kafka: KafkaCluster, mechanism: str) -> None:
    topic = f"secure-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
    kafka.create_topic(topic, 1, 3)
    producer = AIOKafkaProducer(acks="all", **options(kafka, mechanism))
    await producer.start()
    try:
        for i in range(20):
            await producer.send_and_wait(topic, b"%d" % i, partition=0)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        auto_offset_reset="earliest", client_rack="az-b", **options(kafka, mechanism, "bob")
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 20 and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                got += [r.value for r in records]
        assert got == [b"%d" % i for i in range(20)]
    finally:
        await consumer.stop()


async def test_wrong_password_is_refused(kafka: KafkaCluster) -> None:
    front = kafka.front
    assert front is not None
    opts = front.client_options("SCRAM-SHA-512", "alice")
    opts["sasl_plain_password"] = "not-" + USERS["alice"]
    producer = AIOKafkaProducer(request_timeout_ms=10000, **opts)
    with pytest.raises(KafkaError) as info:
        await producer.start()
    await producer.stop()
    assert USERS["alice"] not in str(info.value) and "not-" not in str(info.value)


async def test_group_keeps_reading_across_three_session_lifetimes(
    kafka: KafkaCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """KIP-368: the brokers end each SASL session after ``connections.max.reauth.ms``
    (SESSION_LIFETIME_MS); the clients re-authenticate on their live connections before
    that, and a group reads every record once across three lifetimes."""
    from .conftest import SESSION_LIFETIME_MS

    caplog.set_level(logging.DEBUG, logger="rackafka.net")
    topic = f"reauth-{uuid.uuid4().hex[:6]}"
    kafka.create_topic(topic, 3, 3)
    producer = AIOKafkaProducer(acks="all", **options(kafka, "SCRAM-SHA-256"))
    consumer = AIOKafkaConsumer(
        topic,
        group_id=f"reauth-{uuid.uuid4().hex[:6]}",
        auto_offset_reset="earliest",
        client_rack="az-a",
        **options(kafka, "SCRAM-SHA-256", "bob"),
    )
    await producer.start()
    await consumer.start()
    sent = 0
    got: list[bytes] = []
    try:
        end = time.monotonic() + 3.3 * SESSION_LIFETIME_MS / 1000
        while time.monotonic() < end:
            await producer.send_and_wait(topic, b"%d" % sent)
            sent += 1
            for records in (await consumer.getmany(timeout_ms=300)).values():
                got += [r.value for r in records]
        deadline = time.monotonic() + 60
        while len(got) < sent and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=300)).values():
                got += [r.value for r in records]
    finally:
        await consumer.stop()
        await producer.stop()
    assert sorted(got, key=int) == [b"%d" % i for i in range(sent)]
    assert len(got) == sent
    reauths = Counter(
        r.getMessage().split(": re-authenticated")[0]
        for r in caplog.records
        if ": re-authenticated" in r.getMessage()
    )
    messages = [r.getMessage() for r in caplog.records]
    failed = [m for m in messages if "re-authentication failed" in m]
    assert not failed
    # some connection lived through three sessions, re-authenticating at least twice
    assert reauths and max(reauths.values()) >= 2, reauths
