"""SASL_SSL on real brokers: SCRAM-SHA-256/512 (users made at format time), PLAIN and
OAUTHBEARER (Kafka's unsecured tokens), over TLS with the test CA."""

from __future__ import annotations

import time
import uuid

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
