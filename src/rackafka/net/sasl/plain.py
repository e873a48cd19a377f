"""SASL PLAIN (RFC 4616): the user name and password in one message.

Only over TLS (SASL_SSL) is the password protected on the wire. The password is never
logged, put in a message or shown by ``repr``.
"""

from __future__ import annotations

from rackafka.errors import SaslAuthenticationFailed
from rackafka.net.sasl import SaslMechanism


class PlainMechanism(SaslMechanism):
    """Client side of SASL PLAIN."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password
        self._sent = False

    async def start(self) -> bytes:
        """``authzid NUL authcid NUL passwd`` with an empty authorization id."""
        self._sent = True
        return b"\0" + self._username.encode() + b"\0" + self._password.encode()

    def step(self, challenge: bytes) -> bytes | None:
        """The server's success carries no data; anything else is a protocol error."""
        if challenge:
            raise SaslAuthenticationFailed(
                f"SASL {self.describe()}: the broker sent data after PLAIN authentication"
            )
        return None

    def describe(self) -> str:
        """The mechanism and the user name."""
        return f"PLAIN as {self._username!r}"

    def __repr__(self) -> str:
        return f"<PlainMechanism user={self._username!r}>"
