"""The producer connects to brokers behind TLS and SASL with the consumer's settings."""

from __future__ import annotations

from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, AIOKafkaProducer
from rackafka.errors import SaslAuthenticationFailed
from rackafka.testing import EmbeddedCluster

from ._helpers import read_rackafka

USERS = {"alice": "producer-secret-42"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
async def test_produce_and_read_back_through_sasl_ssl(mechanism: str) -> None:
    async with EmbeddedCluster(brokers=3, security_protocol="SASL_SSL", users=USERS) as c:
        c.create_topic("secure", 2)
        options = c.front.client_options(mechanism)
        producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(acks="all", **options)
        await producer.start()
        try:
            for i in range(20):
                await producer.send("secure", f"v{i}".encode(), key=f"k{i}".encode())
            await producer.flush()
            assert "producer-secret-42" not in repr(producer)
        finally:
            await producer.stop()
        consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
            "secure", auto_offset_reset="earliest", **options
        )
        await consumer.start()
        try:
            values: set[bytes] = set()
            for _ in range(50):
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    values.update(r.value for r in records)
                if len(values) == 20:
                    break
        finally:
            await consumer.stop()
        assert values == {f"v{i}".encode() for i in range(20)}
        assert c.front.stats.failures == 0


async def test_wrong_password_fails_start() -> None:
    async with EmbeddedCluster(brokers=3, security_protocol="SASL_SSL", users=USERS) as c:
        options = c.front.client_options("SCRAM-SHA-256")
        options["sasl_plain_password"] = "wrong-" + USERS["alice"]
        producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(**options)
        try:
            with pytest.raises(SaslAuthenticationFailed) as info:
                await producer.start()
        finally:
            await producer.stop()
        assert USERS["alice"] not in str(info.value)


async def test_large_batches_through_tls() -> None:
    # A request's large last batch is written by itself after the rest of the frame: the
    # TLS transport carries the pieces as one request too.
    async with EmbeddedCluster(brokers=3, security_protocol="SASL_SSL", users=USERS) as c:
        c.create_topic("secure-large", 1)
        options = c.front.client_options("PLAIN")
        producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
            acks="all", max_batch_size=1_000_000, **options
        )
        values = [bytes([i]) * (4_000 + 30 * i) for i in range(200)]  # 2 batches < 1 MB
        await producer.start()
        try:
            futures = []
            for part in (values[:100], values[100:]):
                batch = producer.create_batch()
                for value in part:
                    assert batch.append(key=None, value=value, timestamp=None) is not None
                futures.append(await producer.send_batch(batch, "secure-large", partition=0))
            assert [(await f).offset for f in futures] == [0, 100]
        finally:
            await producer.stop()
        consumer_options = dict(options)
        bootstrap = consumer_options.pop("bootstrap_servers")
        records = await read_rackafka(bootstrap, "secure-large", 200, **consumer_options)
        assert [r.value for r in records] == values
        assert c.front.stats.failures == 0
