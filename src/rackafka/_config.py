"""Checks of constructor arguments shared by the consumer and the producer.

Pure validation that raises :exc:`~rackafka.errors.KafkaConfigurationError` naming the
argument; it never echoes a secret and never opens a connection.
"""

from __future__ import annotations

from typing import Any

from rackafka import __version__
from rackafka.errors import KafkaConfigurationError

__all__ = ["check_callable", "check_positive", "check_security", "not_yet_supported"]


def not_yet_supported(name: str, value: Any) -> KafkaConfigurationError:
    """The error for a setting this version does not support yet."""
    shown = "<redacted>" if "password" in name else repr(value)  # never echo a secret
    return KafkaConfigurationError(
        f"{name}={shown} is not supported yet by rackafka {__version__}: "
        "TLS and SASL arrive in a later release; leave it at its default for now"
    )


def check_positive(name: str, value: Any, *, zero: bool = False) -> int:
    """``value`` if it is an int > 0 (>= 0 with ``zero``), else the error naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise KafkaConfigurationError(f"{name} must be an int, not {value!r}")
    if value < 0 or (value == 0 and not zero):
        allowed = ">= 0" if zero else "> 0"
        raise KafkaConfigurationError(f"{name} must be {allowed}, not {value}")
    return value


def check_callable(name: str, fn: Any) -> None:
    """Raise unless ``fn`` is ``None`` or callable."""
    if fn is not None and not callable(fn):
        raise KafkaConfigurationError(f"{name} must be callable, not {fn!r}")


def check_security(
    *,
    security_protocol: str,
    ssl_context: Any,
    sasl_mechanism: str,
    sasl_plain_username: str | None,
    sasl_plain_password: str | None,
    sasl_kerberos_service_name: str,
    sasl_kerberos_domain_name: str | None,
    sasl_oauth_token_provider: Any,
) -> None:
    """Accept aiokafka's security defaults; anything else is not supported yet."""
    for name, value, default in (
        ("ssl_context", ssl_context, None),
        ("security_protocol", security_protocol, "PLAINTEXT"),
        ("sasl_plain_password", sasl_plain_password, None),
        ("sasl_plain_username", sasl_plain_username, None),
        ("sasl_kerberos_service_name", sasl_kerberos_service_name, "kafka"),
        ("sasl_kerberos_domain_name", sasl_kerberos_domain_name, None),
        ("sasl_oauth_token_provider", sasl_oauth_token_provider, None),
    ):
        if value != default:
            raise not_yet_supported(name, value)
    if sasl_mechanism != "PLAIN":
        raise not_yet_supported("sasl_mechanism", sasl_mechanism)
