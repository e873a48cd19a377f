"""SASL authentication of a broker connection: the Kafka exchange that carries the tokens.

Each mechanism (``plain``, ``scram``, ``oauth``, ``gssapi``) is a small state machine over
bytes; :func:`authenticate` drives one over a connection with SaslHandshake v1 and
SaslAuthenticate (v0-2) and returns the session lifetime the broker grants (KIP-368).
Nothing here logs or raises a secret.
"""

from __future__ import annotations

import abc
import logging
from typing import TYPE_CHECKING

from rackafka.errors import (
    AuthenticationMethodNotSupported,
    IllegalSaslStateError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanismError,
    for_code,
)
from rackafka.protocol.apis.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE

if TYPE_CHECKING:  # pragma: no cover
    from rackafka.net.connection import Connection

log = logging.getLogger(__name__)

#: The mechanisms rackafka implements, by their SASL names.
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")

_UNSUPPORTED_SASL_MECHANISM = 33


class SaslMechanism(abc.ABC):
    """One authentication exchange of a SASL mechanism, client side.

    A new instance is made for every authentication (and re-authentication) of a
    connection.  :meth:`start` gives the first client message; :meth:`step` takes each
    server message and gives the next client message, or ``None`` once the exchange is
    complete on the client side.  Either raises :class:`AuthenticationFailedError` (or a
    subclass) when the server's messages are not acceptable.
    """

    #: The SASL name, as sent in SaslHandshake.
    name: str = ""

    @abc.abstractmethod
    async def start(self) -> bytes:
        """The client's first message."""

    @abc.abstractmethod
    def step(self, challenge: bytes) -> bytes | None:
        """The answer to a server message, or ``None`` when the exchange is done."""

    def describe(self) -> str:
        """Who is authenticating, for messages (never a secret)."""
        return self.name


async def authenticate(conn: Connection, mechanism: SaslMechanism, *, unheld: bool = False) -> int:
    """Authenticate ``conn`` with ``mechanism``.

    Arguments:
        conn: a connection whose versions are negotiated.
        mechanism: a fresh mechanism instance.
        unheld: write the requests even while the connection holds other requests back
            (re-authentication of a live connection).

    Returns:
        The session lifetime in milliseconds granted by the broker (SaslAuthenticate
        v1+), ``0`` when the broker sets none.

    Raises:
        UnsupportedSaslMechanismError: the broker does not enable this mechanism.
        SaslAuthenticationFailed: the broker refused the credentials (or the client
            refused the broker's proof).
        AuthenticationMethodNotSupported: the broker does not speak SASL on this
            listener, or only the pre-1.0 SaslHandshake v0.
    """
    versions = conn.versions
    hs = versions.broker_range(SASL_HANDSHAKE.key) if versions is not None else None
    if hs is None:
        raise AuthenticationMethodNotSupported(
            f"{conn} does not offer SASL authentication (no SaslHandshake in its "
            "ApiVersions): is this a PLAINTEXT or SSL listener? Check security_protocol"
        )
    if hs.max_version < 1:
        raise AuthenticationMethodNotSupported(
            f"{conn} only speaks SaslHandshake v0 (Kafka before 1.0); rackafka needs v1"
        )
    response = await conn.request(
        SASL_HANDSHAKE, SASL_HANDSHAKE.Request(mechanism=mechanism.name), version=1, unheld=unheld
    )
    if response.error_code:
        enabled = ", ".join(response.mechanisms) or "none"
        if response.error_code == _UNSUPPORTED_SASL_MECHANISM:
            raise UnsupportedSaslMechanismError(
                f"{conn} does not enable SASL mechanism {mechanism.name} "
                f"(enabled: {enabled}); check sasl_mechanism"
            )
        raise for_code(response.error_code)(
            f"SaslHandshake for {mechanism.name} with {conn} failed"
        )
    version = conn.version(SASL_AUTHENTICATE)
    token: bytes | None = await mechanism.start()
    lifetime = 0
    while token is not None:
        response = await conn.request(
            SASL_AUTHENTICATE,
            SASL_AUTHENTICATE.Request(auth_bytes=token),
            version=version,
            unheld=unheld,
        )
        if response.error_code:
            detail = response.error_message or ""
            error = for_code(response.error_code)
            if not issubclass(error, (SaslAuthenticationFailed, IllegalSaslStateError)):
                error = SaslAuthenticationFailed
            raise error(
                f"SASL {mechanism.describe()} authentication with {conn} failed"
                + (f": {detail}" if detail else "")
            )
        lifetime = getattr(response, "session_lifetime_ms", 0) or 0
        token = mechanism.step(bytes(response.auth_bytes or b""))
    log.debug("%s: authenticated with SASL %s", conn, mechanism.describe())
    return max(0, int(lifetime))


__all__ = ["MECHANISMS", "SaslMechanism", "authenticate"]
