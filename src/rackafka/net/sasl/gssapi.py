"""SASL GSSAPI (Kerberos, RFC 4752), client side, through the optional ``gssapi`` package.

Install it with ``pip install 'rackafka[gssapi]'``; without it, choosing GSSAPI raises a
:class:`~rackafka.errors.KafkaConfigurationError` naming the extra.  rackafka asks for no
security layer (the connection's TLS, if any, protects the traffic), as Kafka does.
"""

from __future__ import annotations

import struct
from typing import Any

from rackafka.errors import KafkaConfigurationError, SaslAuthenticationFailed
from rackafka.net.sasl import SaslMechanism

#: Security layer "none" (RFC 4752 section 3.1), and no maximum message size.
_NO_SECURITY_LAYER = 1


def load_gssapi() -> Any:
    """Import the ``gssapi`` package.

    Raises:
        KafkaConfigurationError: it is not installed (the message names the extra).
    """
    try:
        import gssapi
    except ImportError as exc:
        raise KafkaConfigurationError(
            "sasl_mechanism='GSSAPI' needs the gssapi package: "
            "pip install 'rackafka[gssapi]' (and the system's Kerberos libraries)"
        ) from exc
    return gssapi


class GssapiMechanism(SaslMechanism):
    """Client side of one Kerberos exchange with the broker ``service@host``."""

    name = "GSSAPI"

    def __init__(self, service_name: str, host: str) -> None:
        gssapi = load_gssapi()
        self._principal = f"{service_name}@{host}"
        target = gssapi.Name(self._principal, name_type=gssapi.NameType.hostbased_service)
        self._context = gssapi.SecurityContext(name=target, usage="initiate")
        self._wrapped_done = False

    def describe(self) -> str:
        """The mechanism and the service principal."""
        return f"GSSAPI for {self._principal}"

    async def start(self) -> bytes:
        """The first Kerberos token."""
        return self._token(None)

    def _token(self, challenge: bytes | None) -> bytes:
        try:
            token = self._context.step(challenge)
        except Exception as exc:
            raise SaslAuthenticationFailed(
                f"SASL {self.describe()}: Kerberos failed ({exc})"
            ) from exc
        return bytes(token or b"")

    def step(self, challenge: bytes) -> bytes | None:
        """Kerberos tokens until the context is established, then the security layer
        negotiation (RFC 4752 3.1), then done."""
        if not self._context.complete:
            return self._token(challenge)
        if self._wrapped_done:
            return None
        if not challenge:
            return b""  # the broker sends the security layer offer next
        try:
            offer = self._context.unwrap(challenge).message
        except Exception as exc:
            raise SaslAuthenticationFailed(
                f"SASL {self.describe()}: cannot unwrap the security layer offer ({exc})"
            ) from exc
        if len(offer) < 4 or not offer[0] & _NO_SECURITY_LAYER:
            raise SaslAuthenticationFailed(
                f"SASL {self.describe()}: the broker does not offer the 'no security layer' option"
            )
        self._wrapped_done = True
        answer = struct.pack(">B3s", _NO_SECURITY_LAYER, b"\0\0\0")
        return bytes(self._context.wrap(answer, False).message)
