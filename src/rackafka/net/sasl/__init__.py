"""SASL mechanisms, client side: each turns the broker's challenges into the client's answers.

Each mechanism (``plain``, ``scram``, ``oauth``, ``gssapi``) is a small state machine over
bytes and knows nothing of connections: the connection carries its messages in
SaslHandshake and SaslAuthenticate requests
(:meth:`rackafka.net.connection.Connection.authenticate`).  Nothing here logs or raises a
secret.
"""

from __future__ import annotations

import abc

#: The mechanisms rackafka implements, by their SASL names.
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")


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


__all__ = ["MECHANISMS", "SaslMechanism"]
