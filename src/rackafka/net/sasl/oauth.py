"""SASL OAUTHBEARER (RFC 7628): a bearer token from the application's token provider.

The provider is asked for a token at every authentication, so re-authentication
(KIP-368) sends a fresh one.  Tokens are never logged or put in a message.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

from rackafka.errors import KafkaConfigurationError, SaslAuthenticationFailed
from rackafka.net.sasl import SaslMechanism

_KEY = re.compile(r"[A-Za-z]+\Z")
_VALUE = re.compile(r"[\x21-\x7e \t\r\n]+\Z")


async def _call(fn: Any) -> Any:
    value = fn()
    if inspect.isawaitable(value):
        value = await value
    return value


def check_extensions(extensions: Mapping[str, str]) -> dict[str, str]:
    """Check SASL extensions as RFC 7628 allows them (``auth`` is reserved).

    Raises:
        KafkaConfigurationError: a key or value is not allowed (values are not shown).
    """
    out: dict[str, str] = {}
    for key, value in extensions.items():
        if not isinstance(key, str) or not _KEY.match(key) or key == "auth":
            raise KafkaConfigurationError(
                f"sasl_oauth_token_provider.extensions(): invalid extension name {key!r} "
                "(letters only; 'auth' is reserved)"
            )
        if not isinstance(value, str) or not _VALUE.match(value):
            raise KafkaConfigurationError(
                f"sasl_oauth_token_provider.extensions(): the value of {key!r} is not "
                "printable ASCII"
            )
        out[key] = value
    return out


class OAuthBearerMechanism(SaslMechanism):
    """Client side of SASL OAUTHBEARER."""

    name = "OAUTHBEARER"

    def __init__(self, token_provider: Any) -> None:
        self._provider = token_provider
        self._error: str | None = None

    def __repr__(self) -> str:
        return f"<OAuthBearerMechanism provider={type(self._provider).__name__}>"

    async def start(self) -> bytes:
        """``n,,^Aauth=Bearer <token>^A<key>=<value>...^A^A``."""
        try:
            token = await _call(self._provider.token)
        except Exception as exc:
            raise SaslAuthenticationFailed(
                f"SASL OAUTHBEARER: the token provider failed ({type(exc).__name__})"
            ) from exc
        if not isinstance(token, str) or not token:
            raise SaslAuthenticationFailed(
                "SASL OAUTHBEARER: the token provider returned no token (a non-empty str)"
            )
        extensions: Mapping[str, str] = {}
        get = getattr(self._provider, "extensions", None)
        if get is not None:
            extensions = await _call(get) or {}
        parts = [f"auth=Bearer {token}"]
        parts += [f"{k}={v}" for k, v in check_extensions(extensions).items()]
        return ("n,," + "\x01" + "\x01".join(parts) + "\x01\x01").encode()

    def step(self, challenge: bytes) -> bytes | None:
        """Empty on success; a JSON error otherwise, answered with ``^A`` (RFC 7628 3.2.3),
        after which the broker reports the failure."""
        if not challenge:
            return None
        if self._error is not None:
            raise SaslAuthenticationFailed(f"SASL OAUTHBEARER refused: {self._error}")
        self._error = challenge.decode("utf-8", "replace")[:500]
        return b"\x01"
