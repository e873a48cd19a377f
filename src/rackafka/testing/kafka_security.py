"""The TLS/SASL side of :class:`~rackafka.testing.KafkaCluster`: test certificates, the
secured listener's broker properties and SCRAM users, and the client options to reach it."""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ._security import _SecurityOptions

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

    def __init__(
        self,
        security_protocol: str,
        sasl_mechanisms: Iterable[str] | None,
        users: Mapping[str, str] | None,
        session_lifetime_ms: int | None,
        require_client_cert: bool,
    ) -> None:
        super().__init__(
            security_protocol, sasl_mechanisms, users, session_lifetime_ms, require_client_cert
        )
        for name, password in self.users.items():
            if not name or not password or _SCRAM_UNSAFE.search(name + password):
                raise ValueError(
                    "users: names and passwords must be non-empty, without spaces or any of "
                    ",[]=\" (Kafka's storage tool parses them)"
                )
        self._bootstrap = ""
        self._dir: Path | None = None
        self.keystore_file: str | None = None

    # -- files ------------------------------------------------------------------------------
    def make_files(self, directory: Path) -> None:
        """Write the test CA, the brokers' PEM key store and a client certificate."""
        self._dir = directory
        if not self.tls:
            return
        try:
            import trustme
            from cryptography.hazmat.primitives import serialization
        except ImportError as exc:  # pragma: no cover - the testing extra installs them
            raise ImportError(
                "TLS on the Kafka test cluster needs trustme: pip install 'rackafka[testing]'"
            ) from exc
        directory.mkdir(parents=True, exist_ok=True)
        ca = trustme.CA(organization_name="rackafka test CA")
        server = ca.issue_cert("localhost", "127.0.0.1", "::1")
        client = ca.issue_cert("client.rackafka.test")

        def pkcs8(pem: bytes) -> bytes:
            key = serialization.load_pem_private_key(pem, password=None)
            return key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )

        ca.cert_pem.write_to_path(str(directory / "ca.pem"))
        # Kafka's PEM key store: the PKCS#8 key followed by the certificate chain.
        with open(directory / "broker.pem", "wb") as out:
            out.write(pkcs8(server.private_key_pem.bytes()))
            for blob in server.cert_chain_pems:
                out.write(blob.bytes())
        with open(directory / "client.pem", "wb") as out:
            for blob in client.cert_chain_pems:
                out.write(blob.bytes())
        client.private_key_pem.write_to_path(str(directory / "client.key"))
        self.keystore_file = str(directory / "broker.pem")

    @property
    def ca_file(self) -> str | None:
        """The CA certificate file clients trust (``None`` without TLS)."""
        return str(self._dir / "ca.pem") if self.tls and self._dir else None

    @property
    def ca_pem(self) -> str | None:
        """The CA certificate as PEM text (``None`` without TLS)."""
        return Path(self.ca_file).read_text() if self.ca_file else None

    @property
    def client_cert_file(self) -> str | None:
        """A client certificate (PEM) the brokers accept for mutual TLS."""
        return str(self._dir / "client.pem") if self.tls and self._dir else None

    @property
    def client_key_file(self) -> str | None:
        """The key of :attr:`client_cert_file`."""
        return str(self._dir / "client.key") if self.tls and self._dir else None

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
