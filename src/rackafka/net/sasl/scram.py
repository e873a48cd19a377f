"""SASL SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), client side, standard library only.

The client proves it knows the password without sending it and checks the broker's
signature, so a broker that does not know the credentials cannot pass as the real one.
As Kafka's own brokers and clients, the password is used as UTF-8 without SASLprep.
Nothing secret is logged or put in a message.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from rackafka.errors import SaslAuthenticationFailed
from rackafka.net.sasl import SaslMechanism

#: Hash of each SCRAM mechanism.
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: Fewer PBKDF2 iterations than this are refused (Kafka's own minimum).
MIN_ITERATIONS = 4096
_GS2_HEADER = "n,,"


def _saslname(name: str) -> str:
    """RFC 5802 escaping of a user name: ``=`` and ``,`` as ``=3D`` and ``=2C``."""
    return name.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ValueError(f"malformed attribute {part[:16]!r}")
        out.setdefault(part[0], part[2:])
    return out


class ScramMechanism(SaslMechanism):
    """Client side of one SCRAM exchange."""

    def __init__(
        self, mechanism: str, username: str, password: str, *, nonce: str | None = None
    ) -> None:
        if mechanism not in HASHES:
            raise ValueError(f"not a SCRAM mechanism: {mechanism!r}")
        self.name = mechanism
        self._hash = HASHES[mechanism]
        self._username = username
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._client_first_bare = f"n={_saslname(username)},r={self._nonce}"
        self._expected_server_signature: bytes | None = None
        self._done = False

    def describe(self) -> str:
        """The mechanism and the user name."""
        return f"{self.name} as {self._username!r}"

    def __repr__(self) -> str:
        return f"<ScramMechanism {self.name} user={self._username!r}>"

    async def start(self) -> bytes:
        """client-first-message."""
        return (_GS2_HEADER + self._client_first_bare).encode()

    def step(self, challenge: bytes) -> bytes | None:
        """client-final-message for the server-first-message; ``None`` after checking the
        server-final-message."""
        if self._expected_server_signature is None:
            return self._client_final(challenge)
        if self._done:
            raise self._fail("the broker sent more messages than SCRAM has")
        self._check_server_final(challenge)
        self._done = True
        return None

    def _fail(self, why: str) -> SaslAuthenticationFailed:
        return SaslAuthenticationFailed(f"SASL {self.describe()}: {why}")

    def _hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash).digest()

    def _client_final(self, challenge: bytes) -> bytes:
        try:
            server_first = challenge.decode()
            attrs = _attributes(server_first)
            nonce = attrs["r"]
            salt = base64.b64decode(attrs["s"], validate=True)
            iterations = int(attrs["i"])
        except (UnicodeDecodeError, ValueError, KeyError) as exc:
            raise self._fail(f"malformed server-first-message ({exc})") from None
        if "m" in attrs:
            raise self._fail("the broker asks for a SCRAM extension rackafka does not know")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise self._fail("the broker's nonce does not extend the client's")
        if iterations < MIN_ITERATIONS:
            raise self._fail(
                f"the broker asks for {iterations} iterations, fewer than {MIN_ITERATIONS}"
            )
        salted = hashlib.pbkdf2_hmac(self._hash, self._password.encode(), salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        channel = base64.b64encode(_GS2_HEADER.encode()).decode()
        without_proof = f"c={channel},r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
        signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = self._hmac(salted, b"Server Key")
        self._expected_server_signature = self._hmac(server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _check_server_final(self, challenge: bytes) -> None:
        try:
            attrs = _attributes(challenge.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise self._fail(f"malformed server-final-message ({exc})") from None
        if "e" in attrs:
            raise self._fail(f"the broker refused: {attrs['e']}")
        try:
            signature = base64.b64decode(attrs["v"], validate=True)
        except (KeyError, ValueError):
            raise self._fail("the server-final-message has no signature") from None
        assert self._expected_server_signature is not None
        if not hmac.compare_digest(signature, self._expected_server_signature):
            raise self._fail(
                "the broker's signature is wrong: it does not know the credentials "
                "(not the real broker?)"
            )
