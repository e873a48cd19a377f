"""How a connection is secured: ``security_protocol``, TLS and SASL settings, checked once.

:class:`SecurityConfig` holds aiokafka's security arguments, validates them at
construction (errors name the argument) and gives each new connection its transport
(plain TCP or TLS, opened with the connection's protocol in place from the start) and a
fresh SASL mechanism.  Secrets stay inside: ``repr`` and every message hide them.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from rackafka.errors import KafkaConfigurationError, SslAuthenticationError
from rackafka.net.sasl import MECHANISMS, SaslMechanism
from rackafka.net.sasl.gssapi import GssapiMechanism, load_gssapi
from rackafka.net.sasl.oauth import OAuthBearerMechanism
from rackafka.net.sasl.plain import PlainMechanism
from rackafka.net.sasl.scram import ScramMechanism

#: ``security_protocol`` values.
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

#: Makes the protocol of a new connection (called once the socket is connected).
ProtocolFactory = Callable[[], asyncio.BaseProtocol]
#: Opens a transport to ``(host, port)`` with the protocol from the factory, as
#: :meth:`asyncio.loop.create_connection` does: the seam for TLS and test transports.
Connector = Callable[
    [ProtocolFactory, str, int], Awaitable[tuple[asyncio.BaseTransport, asyncio.BaseProtocol]]
]


async def plaintext_connector(
    protocol_factory: ProtocolFactory, host: str, port: int
) -> tuple[asyncio.BaseTransport, asyncio.BaseProtocol]:
    """Open a plain TCP connection (``security_protocol="PLAINTEXT"``)."""
    return await asyncio.get_running_loop().create_connection(protocol_factory, host, port)


def tls_failure(host: str, port: int, exc: ssl.SSLError) -> SslAuthenticationError:
    """The error for a failed TLS handshake (or a TLS alert right after it)."""
    reason = getattr(exc, "verify_message", None) or getattr(exc, "reason", None) or str(exc)
    hint = ""
    if isinstance(exc, ssl.SSLCertVerificationError):
        hint = (
            ": the broker's certificate is not trusted or does not name "
            f"{host!r}; check the ssl_context's CA (create_ssl_context(cafile=...))"
        )
    elif (
        "WRONG_VERSION_NUMBER" in str(exc)
        or "wrong version number" in str(exc)
        or isinstance(exc, ssl.SSLEOFError)
    ):
        hint = ": the broker does not speak TLS on this port (a PLAINTEXT listener?)"
    error = SslAuthenticationError(f"TLS handshake with {host}:{port} failed: {reason}{hint}")
    error.__cause__ = exc
    return error


class TlsConnector:
    """Opens TLS connections with an :class:`ssl.SSLContext`, verifying the broker's host
    name when the context says so (contexts from :func:`rackafka.helpers.create_ssl_context`
    always do)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context

    async def __call__(
        self, protocol_factory: ProtocolFactory, host: str, port: int
    ) -> tuple[asyncio.BaseTransport, asyncio.BaseProtocol]:
        """Connect and complete the TLS handshake; the protocol is made once it is done.

        Raises:
            SslAuthenticationError: the handshake failed.
            OSError: the broker cannot be reached.
        """
        try:
            return await asyncio.get_running_loop().create_connection(
                protocol_factory, host, port, ssl=self.context, server_hostname=host
            )
        except ssl.SSLError as exc:
            raise tls_failure(host, port, exc) from exc
        except ConnectionError as exc:
            # Closed during the handshake: what a broker without TLS on this port does.
            raise tls_failure(host, port, ssl.SSLEOFError(str(exc) or "connection closed")) from exc


@dataclass(frozen=True, repr=False)
class SecurityConfig:
    """aiokafka's security arguments, checked.

    Build one with :meth:`create`; every role (consumer, producer, admin) passes its
    arguments through it so that they are checked and used the same way.
    """

    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = "PLAIN"
    sasl_plain_username: str | None = None
    sasl_plain_password: str | None = field(default=None, compare=False)
    sasl_kerberos_service_name: str = "kafka"
    sasl_kerberos_domain_name: str | None = None
    sasl_oauth_token_provider: Any = field(default=None, compare=False)

    @classmethod
    def create(
        cls,
        *,
        security_protocol: str = "PLAINTEXT",
        ssl_context: Any = None,
        sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None,
    ) -> SecurityConfig:
        """Check the arguments as aiokafka does (plus types), naming the one at fault.

        Raises:
            KafkaConfigurationError: (a :exc:`ValueError`) an argument is missing or
                invalid; the message never contains a secret.
        """
        if security_protocol not in SECURITY_PROTOCOLS:
            # Each message starts with aiokafka's own words, which code ported from
            # aiokafka (and aiokafka's tests) match on.
            raise KafkaConfigurationError(
                "`security_protocol` should be SSL or PLAINTEXT (or SASL_PLAINTEXT, "
                f"SASL_SSL): security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                f"not {security_protocol!r}"
            )
        tls = security_protocol in ("SSL", "SASL_SSL")
        if tls and ssl_context is None:
            raise KafkaConfigurationError(
                "`ssl_context` is mandatory if security_protocol=='SSL': "
                f"ssl_context is required with security_protocol={security_protocol!r}: "
                "pass rackafka.helpers.create_ssl_context() (the system's CAs) or one "
                "with your CA file"
            )
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise KafkaConfigurationError(
                f"ssl_context must be an ssl.SSLContext, not {type(ssl_context).__name__}"
            )
        sasl = security_protocol.startswith("SASL_")
        if sasl:
            if sasl_mechanism not in MECHANISMS:
                raise KafkaConfigurationError(
                    f"sasl_mechanism must be one of {', '.join(MECHANISMS)}, not {sasl_mechanism!r}"
                )
            if sasl_mechanism == "PLAIN" or sasl_mechanism.startswith("SCRAM-"):
                for name, value in (
                    ("sasl_plain_username", sasl_plain_username),
                    ("sasl_plain_password", sasl_plain_password),
                ):
                    if not isinstance(value, str) or not value:
                        raise KafkaConfigurationError(
                            "sasl_plain_username and sasl_plain_password required for "
                            f"{sasl_mechanism} sasl: {name} is required (a non-empty str) "
                            f"with sasl_mechanism={sasl_mechanism!r}"
                        )
            if sasl_mechanism == "OAUTHBEARER":
                provider = sasl_oauth_token_provider
                if provider is None:
                    raise KafkaConfigurationError(
                        "sasl_oauth_token_provider is required with sasl_mechanism="
                        "'OAUTHBEARER' (an AbstractTokenProvider with an async token())"
                    )
                if not callable(getattr(provider, "token", None)):
                    raise KafkaConfigurationError(
                        "sasl_oauth_token_provider must have a token() method "
                        "(implement rackafka.abc.AbstractTokenProvider)"
                    )
            if sasl_mechanism == "GSSAPI":
                load_gssapi()
                if not isinstance(sasl_kerberos_service_name, str) or not (
                    sasl_kerberos_service_name
                ):
                    raise KafkaConfigurationError(
                        "sasl_kerberos_service_name must be a non-empty str"
                    )
        return cls(
            security_protocol=security_protocol,
            ssl_context=ssl_context,
            sasl_mechanism=sasl_mechanism,
            sasl_plain_username=sasl_plain_username,
            sasl_plain_password=sasl_plain_password,
            sasl_kerberos_service_name=sasl_kerberos_service_name,
            sasl_kerberos_domain_name=sasl_kerberos_domain_name,
            sasl_oauth_token_provider=sasl_oauth_token_provider,
        )

    @property
    def uses_tls(self) -> bool:
        """Whether connections are TLS (SSL, SASL_SSL)."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        """Whether connections authenticate with SASL."""
        return self.security_protocol.startswith("SASL_")

    def connector(self) -> Connector:
        """The transport opener for this protocol (plain TCP or TLS)."""
        if self.uses_tls:
            assert self.ssl_context is not None
            return TlsConnector(self.ssl_context)
        return plaintext_connector

    def mechanism(self, host: str) -> SaslMechanism | None:
        """A fresh SASL mechanism for one authentication with broker ``host``, or ``None``
        without SASL."""
        if not self.uses_sasl:
            return None
        name = self.sasl_mechanism
        if name == "PLAIN":
            assert self.sasl_plain_username and self.sasl_plain_password
            return PlainMechanism(self.sasl_plain_username, self.sasl_plain_password)
        if name.startswith("SCRAM-"):
            assert self.sasl_plain_username and self.sasl_plain_password
            return ScramMechanism(name, self.sasl_plain_username, self.sasl_plain_password)
        if name == "OAUTHBEARER":
            return OAuthBearerMechanism(self.sasl_oauth_token_provider)
        return GssapiMechanism(
            self.sasl_kerberos_service_name, self.sasl_kerberos_domain_name or host
        )

    def __repr__(self) -> str:
        parts = [f"security_protocol={self.security_protocol!r}"]
        if self.uses_sasl:
            parts.append(f"sasl_mechanism={self.sasl_mechanism!r}")
            if self.sasl_plain_username is not None:
                parts.append(f"sasl_plain_username={self.sasl_plain_username!r}")
            if self.sasl_plain_password is not None:
                parts.append("sasl_plain_password='***'")
            if self.sasl_oauth_token_provider is not None:
                parts.append(
                    f"sasl_oauth_token_provider={type(self.sasl_oauth_token_provider).__name__}"
                )
        return f"SecurityConfig({', '.join(parts)})"


__all__ = [
    "SECURITY_PROTOCOLS",
    "Connector",
    "ProtocolFactory",
    "SecurityConfig",
    "TlsConnector",
    "plaintext_connector",
]
