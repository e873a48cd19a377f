"""Invalid producer configuration raises KafkaConfigurationError naming the argument."""

from __future__ import annotations

from typing import Any

import pytest

from rackafka import AIOKafkaProducer
from rackafka.errors import KafkaConfigurationError


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"acks": 2}, "acks"),
        ({"acks": "none"}, "acks"),
        ({"acks": True}, "acks"),
        ({"compression_type": "brotli"}, "compression_type"),
        ({"max_batch_size": 0}, "max_batch_size"),
        ({"max_request_size": -1}, "max_request_size"),
        ({"linger_ms": -5}, "linger_ms"),
        ({"linger_ms": 1.5}, "linger_ms"),
        ({"request_timeout_ms": 0}, "request_timeout_ms"),
        ({"retry_backoff_ms": -1}, "retry_backoff_ms"),
        ({"metadata_max_age_ms": 0}, "metadata_max_age_ms"),
        ({"key_serializer": 3}, "key_serializer"),
        ({"value_serializer": "json"}, "value_serializer"),
        ({"partitioner": "murmur2"}, "partitioner"),
        ({"enable_idempotence": True, "acks": 1}, "acks"),
        ({"enable_idempotence": "yes"}, "enable_idempotence"),
        ({"client_rack": 5}, "client_rack"),
        ({"client_rack": "", "rack_aware_partitioning": True}, "client_rack"),
        ({"rack_aware_partitioning": True}, "client_rack"),
        ({"rack_aware_partitioning": 1, "client_rack": "a"}, "rack_aware_partitioning"),
        (
            {"rack_aware_partitioning": True, "client_rack": "a", "partitioner": lambda *a: 0},
            "partitioner",
        ),
        ({"transactional_id": ""}, "transactional_id"),
        ({"transactional_id": "tx", "acks": 1}, "acks"),
        ({"security_protocol": "TLS"}, "security_protocol"),
        ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "NOPE"}, "sasl_mechanism"),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_plain_username": "u"},
            "sasl_plain_password",
        ),
        ({"bootstrap_servers": "host:notaport"}, "bootstrap_servers"),
        ({"client_id": 5}, "client_id"),
    ],
)
def test_invalid_config_names_the_argument(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(KafkaConfigurationError, match=name):
        AIOKafkaProducer(**kwargs)


def test_password_never_echoed() -> None:
    with pytest.raises(KafkaConfigurationError) as info:
        AIOKafkaProducer(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_password="hunter2-secret",
        )
    assert "hunter2-secret" not in str(info.value)
    p: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="etl",
        sasl_plain_password="hunter2-secret",
    )
    assert "hunter2-secret" not in repr(p) and "etl" in repr(p)


def test_defaults_as_aiokafka() -> None:
    p: AIOKafkaProducer[Any, Any] = AIOKafkaProducer()
    assert p._acks == 1
    idem: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(enable_idempotence=True)
    assert idem._acks == -1
    assert AIOKafkaProducer(acks="all")._acks == -1


def test_deprecated_arguments_warn() -> None:
    with pytest.warns(DeprecationWarning):
        AIOKafkaProducer(api_version="2.0.0")


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"security_protocol": "SOME"}, "`security_protocol` should be SSL or PLAINTEXT"),
        (
            {"security_protocol": "SSL", "ssl_context": None},
            "`ssl_context` is mandatory if security_protocol=='SSL'",
        ),
    ],
)
def test_security_argument_errors_use_aiokafkas_words(kwargs: dict[str, Any], words: str) -> None:
    """Programs and tests written for aiokafka match on its messages; ours start with them."""
    with pytest.raises(ValueError) as info:
        AIOKafkaProducer(bootstrap_servers="127.0.0.1:1", **kwargs)
    assert words in str(info.value)
