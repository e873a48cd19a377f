"""The TLS/SASL side of :class:`~rackafka.testing.KafkaCluster`: test certificates, the
secured listener's broker properties and SCRAM users, and the client options to reach it."""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path
from typing import Any

from ._security import _SecurityOptions, _TestPki

__all__ = ["KafkaSecurity", "unsecured_oauth_token"]


_SCRAM_UNSAFE = re.compile(r'[,\[\]="\s]')


class KafkaSecurity(_SecurityOptions):
    """The TLS/SASL side of a :class:`KafkaCluster` (its :attr:`KafkaCluster.front`).

    The same attributes and helpers as :class:`~rackafka.testing.SecureFront`'s, so that a
    test can run on either engine: :attr:`ca_file`, :attr:`client_cert_file`,
    :meth:`client_options`, :meth:`librdkafka_config` (OAUTHBEARER: librdkafka's own
    unsecured tokens, ``enable.sasl.oauthbearer.unsecure.jwt``, which Kafka's default
    validator accepts).
    """

    _librdkafka_unsecured_oauth = True

    #: The secured listeners (set by the cluster once its ports are known).
    _bootstrap = ""
    #: The brokers' PEM key store, once :meth:`make_files` wrote it.
    keystore_file: str | None = None

    def _check_users(self) -> None:
        for name, password in self.users.items():
            if not name or not password or _SCRAM_UNSAFE.search(name + password):
                raise ValueError(
                    "users: names and passwords must be non-empty, without spaces or any of "
                    ",[]=\" (Kafka's storage tool parses them)"
                )

    # -- files ------------------------------------------------------------------------------
    def make_files(self, directory: Path) -> None:
        """Write the test CA, the brokers' PEM key store and a client certificate."""
        if not self.tls:
            return
        try:
            from cryptography.hazmat.primitives import serialization
        except ImportError as exc:  # pragma: no cover - the testing extra installs them
            raise ImportError(
                "TLS on the Kafka test cluster needs cryptography: pip install 'rackafka[testing]'"
            ) from exc
        directory.mkdir(parents=True, exist_ok=True)
        pki = _TestPki(str(directory))
        key = serialization.load_pem_private_key(pki.server.private_key_pem.bytes(), None)
        # Kafka's PEM key store: the PKCS#8 key followed by the certificate chain.
        with open(directory / "broker.pem", "wb") as out:
            out.write(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
            for blob in pki.server.cert_chain_pems:
                out.write(blob.bytes())
        self._pki = pki
        self.keystore_file = str(directory / "broker.pem")

    @property
    def bootstrap_servers(self) -> str:
        """The secured listeners, in broker-id order."""
        return self._bootstrap

    # -- broker configuration ---------------------------------------------------------------
    @property
    def listener_name(self) -> str:
        """The name of the secured listener (its security protocol)."""
        return self.security_protocol

    def broker_properties(self) -> dict[str, str]:
        """``server.properties`` entries for the secured listener."""
        name = self.listener_name.lower()
        props: dict[str, str] = {}
        if self.tls:
            assert self.keystore_file is not None and self.ca_file is not None
            props[f"listener.name.{name}.ssl.keystore.type"] = "PEM"
            props[f"listener.name.{name}.ssl.keystore.location"] = self.keystore_file
            props[f"listener.name.{name}.ssl.truststore.type"] = "PEM"
            props[f"listener.name.{name}.ssl.truststore.location"] = self.ca_file
            props[f"listener.name.{name}.ssl.client.auth"] = (
                "required" if self.require_client_cert else "none"
            )
        if self.sasl:
            props[f"listener.name.{name}.sasl.enabled.mechanisms"] = ",".join(self.mechanisms)
            for m in self.mechanisms:
                key = f"listener.name.{name}.{m.lower()}.sasl.jaas.config"
                if m == "PLAIN":
                    users = " ".join(f'user_{u}="{p}"' for u, p in self.users.items())
                    props[key] = (
                        "org.apache.kafka.common.security.plain.PlainLoginModule required"
                        + (f" {users}" if users else "")
                        + ";"
                    )
                elif m.startswith("SCRAM-"):
                    props[key] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                else:  # OAUTHBEARER: Kafka's unsecured tokens (a JWS with "alg": "none")
                    props[key] = (
                        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
                        'required unsecuredLoginStringClaim_sub="broker";'
                    )
            if self.session_lifetime_ms is not None:
                props[f"listener.name.{name}.connections.max.reauth.ms"] = str(
                    self.session_lifetime_ms
                )
        return props

    def scram_arguments(self) -> list[str]:
        """``--add-scram`` arguments of the storage tool: every user, every SCRAM mechanism."""
        args: list[str] = []
        for m in self.mechanisms:
            if m.startswith("SCRAM-"):
                for user, password in self.users.items():
                    args += ["--add-scram", f"{m}=[name={user},password={password}]"]
        return args

    def __repr__(self) -> str:
        return (
            f"<KafkaSecurity {self.security_protocol} mechanisms={list(self.mechanisms)} "
            f"users={sorted(self.users)}>"
        )


def unsecured_oauth_token(principal: str = "client", lifetime_s: float = 3600.0) -> str:
    """An unsecured OAUTHBEARER token (a JWS with ``"alg": "none"``) that Kafka's default
    validator (``OAuthBearerUnsecuredValidatorCallbackHandler``) accepts, for tests."""
    import json

    def b64(data: dict[str, Any]) -> str:
        raw = json.dumps(data, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    now = time.time()
    # NumericDate in whole seconds; an "iat" in the future (even by a fraction of a second) is
    # refused by the broker.
    claims = {"sub": principal, "iat": int(now), "exp": int(now + lifetime_s)}
    return f"{b64({'alg': 'none'})}.{b64(claims)}."
