"""SaslHandshake (key 17), versions 0-1, and SaslAuthenticate (key 36), versions 0-2.

SaslHandshake is never flexible: v0 is followed by raw SASL tokens on the
socket, v1 by SaslAuthenticate requests that carry the tokens.
SaslAuthenticate is flexible from v2; v1 adds ``session_lifetime_ms`` to the
response (KIP-368 re-authentication).
"""

from __future__ import annotations

from rackafka.protocol.schema import BYTES, INT16, INT64, STRING, A, Api, F, S

SASL_HANDSHAKE = Api(
    key=17,
    name="SaslHandshake",
    min_version=0,
    max_version=1,
    flexible_from=None,
    request=S(
        "SaslHandshakeRequest",
        F("mechanism", STRING),
    ),
    response=S(
        "SaslHandshakeResponse",
        F("error_code", INT16),
        F("mechanisms", A(STRING)),
    ),
)

SASL_AUTHENTICATE = Api(
    key=36,
    name="SaslAuthenticate",
    min_version=0,
    max_version=2,
    flexible_from=2,
    request=S(
        "SaslAuthenticateRequest",
        F("auth_bytes", BYTES),
    ),
    response=S(
        "SaslAuthenticateResponse",
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=""),
        F("auth_bytes", BYTES),
        F("session_lifetime_ms", INT64, "1+"),
    ),
)
