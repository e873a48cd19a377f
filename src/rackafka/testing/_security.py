"""The TLS/SASL side that the secured test clusters share: the settings checked once, and
the client options that reach a secured listener (for rackafka and for librdkafka).

:class:`~rackafka.testing.SecureFront` (in front of the embedded cluster) and
:class:`~rackafka.testing.KafkaSecurity` (real Kafka's secured listener) both build on it,
so that a test written against one runs against the other.
"""

from __future__ import annotations

import os
import shutil
import ssl
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["SASL_MECHANISMS", "SECURITY_PROTOCOLS"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: The SASL mechanisms the test clusters can authenticate.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _require(module: str) -> Any:
    """Import a package of the ``testing`` extra, or say how to install it."""
    try:
        return __import__(module)
    except ImportError as exc:  # pragma: no cover - the testing extra installs them
        raise ImportError(
            f"TLS/SASL on the test clusters needs {module}: pip install 'rackafka[testing]'"
        ) from exc


class _TestPki:
    """A test CA with a server certificate for ``localhost``/127.0.0.1/::1 and a client
    certificate, written as PEM files (``ca.pem``, ``client.pem``, ``client.key``) to
    ``directory``. Test material only."""

    def __init__(self, directory: str) -> None:
        trustme = _require("trustme")
        self.dir = directory
        ca = trustme.CA(organization_name="rackafka test CA")
        #: The server certificate (a ``trustme.LeafCert``).
        self.server = ca.issue_cert("localhost", "127.0.0.1", "::1")
        client = ca.issue_cert("client.rackafka.test")
        self.ca_pem = ca.cert_pem.bytes().decode()
        self.ca_file = os.path.join(directory, "ca.pem")
        ca.cert_pem.write_to_path(self.ca_file)
        self.client_cert_file = os.path.join(directory, "client.pem")
        self.client_key_file = os.path.join(directory, "client.key")
        with open(self.client_cert_file, "wb") as out:
            for blob in client.cert_chain_pems:
                out.write(blob.bytes())
        client.private_key_pem.write_to_path(self.client_key_file)

    def server_context(self, require_client_cert: bool) -> ssl.SSLContext:
        """A TLS server context with the server certificate (mutual TLS if asked)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.server.configure_cert(context)
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.ca_file)
        return context

    def remove(self) -> None:
        """Delete the directory and the files in it."""
        shutil.rmtree(self.dir, ignore_errors=True)


class _SecurityOptions:
    """A secured listener's settings and the client options that reach it.

    Subclasses provide :attr:`bootstrap_servers` and, with TLS, the certificates
    (``_pki``).
    """

    _pki: _TestPki | None = None

    #: Whether :meth:`librdkafka_config` has OAUTHBEARER clients make librdkafka's own
    #: unsecured tokens (a listener whose validator accepts them).
    _librdkafka_unsecured_oauth = False

    def __init__(
        self,
        security_protocol: str,
        sasl_mechanisms: Iterable[str] | None,
        users: Mapping[str, str] | None,
        session_lifetime_ms: int | None,
        require_client_cert: bool,
    ) -> None:
        if security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                f"not {security_protocol!r}"
            )
        mechanisms = tuple(sasl_mechanisms or SASL_MECHANISMS)
        for m in mechanisms:
            if m not in SASL_MECHANISMS:
                raise ValueError(f"sasl mechanism {m!r} is not one of {SASL_MECHANISMS}")
        if session_lifetime_ms is not None and session_lifetime_ms <= 0:
            raise ValueError("session_lifetime_ms must be positive")
        self.security_protocol = security_protocol
        self.tls = security_protocol in ("SSL", "SASL_SSL")
        self.sasl = security_protocol.startswith("SASL_")
        self.mechanisms: tuple[str, ...] = mechanisms if self.sasl else ()
        self.users = dict(users or {})
        self.session_lifetime_ms = session_lifetime_ms
        self.require_client_cert = require_client_cert
        self._check_users()

    def _check_users(self) -> None:
        """Refuse user names or passwords the listener cannot take (ValueError)."""

    @property
    def bootstrap_servers(self) -> str:  # pragma: no cover - overridden
        """The secured listeners."""
        raise NotImplementedError

    @property
    def ca_file(self) -> str | None:
        """The CA certificate file clients trust (``None`` without TLS)."""
        return self._pki.ca_file if self._pki else None

    @property
    def ca_pem(self) -> str | None:
        """The CA certificate as PEM text (``None`` without TLS)."""
        return self._pki.ca_pem if self._pki else None

    @property
    def client_cert_file(self) -> str | None:
        """A client certificate (PEM) accepted for mutual TLS (``None`` without TLS)."""
        return self._pki.client_cert_file if self._pki else None

    @property
    def client_key_file(self) -> str | None:
        """The key of :attr:`client_cert_file`."""
        return self._pki.client_key_file if self._pki else None

    def _sasl_login(self, mechanism: str | None, user: str | None) -> tuple[str, str | None]:
        """The mechanism (default: the first enabled) and the user (default: the first
        one; None for OAUTHBEARER or without users)."""
        mechanism = mechanism or self.mechanisms[0]
        if mechanism == "OAUTHBEARER":
            return mechanism, None
        return mechanism, user or next(iter(self.users), None)

    def client_options(
        self, mechanism: str | None = None, user: str | None = None, *, client_cert: bool = False
    ) -> dict[str, Any]:
        """Keywords for :class:`~rackafka.AIOKafkaConsumer`/``Producer`` that connect to the
        secured listeners: the CA, the ``mechanism`` (default: the first enabled) and ``user``
        (default: the first user) with that user's password, the client certificate if asked.
        OAUTHBEARER needs a ``sasl_oauth_token_provider`` of the caller's."""
        from rackafka.helpers import create_ssl_context

        out: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": self.security_protocol,
        }
        if self.tls:
            out["ssl_context"] = create_ssl_context(
                cafile=self.ca_file,
                certfile=self.client_cert_file if client_cert else None,
                keyfile=self.client_key_file if client_cert else None,
            )
        if self.sasl:
            out["sasl_mechanism"], user = self._sasl_login(mechanism, user)
            if user is not None:
                out["sasl_plain_username"] = user
                out["sasl_plain_password"] = self.users[user]
        return out

    def librdkafka_config(
        self, mechanism: str | None = None, user: str | None = None, *, client_cert: bool = False
    ) -> dict[str, Any]:
        """The same for a librdkafka (confluent-kafka) client."""
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol,
        }
        if self.tls:
            conf["ssl.ca.location"] = self.ca_file
            if client_cert:
                conf["ssl.certificate.location"] = self.client_cert_file
                conf["ssl.key.location"] = self.client_key_file
        if self.sasl:
            conf["sasl.mechanism"], user = self._sasl_login(mechanism, user)
            if conf["sasl.mechanism"] == "OAUTHBEARER" and self._librdkafka_unsecured_oauth:
                conf["enable.sasl.oauthbearer.unsecure.jwt"] = True
                conf["sasl.oauthbearer.config"] = "principal=client"
            if user is not None:
                conf["sasl.username"] = user
                conf["sasl.password"] = self.users[user]
        return conf


class _ScramUsers:
    """SCRAM credentials of the users, as a broker stores them (salted, never the
    password itself), made with the ``scramp`` package."""

    def __init__(self, mechanism: str, users: Mapping[str, str]) -> None:
        scramp = _require("scramp")
        self.scramp = scramp
        self.mechanism = scramp.ScramMechanism(mechanism)
        self.info = {
            name: self.mechanism.make_auth_info(password, iteration_count=4096)
            for name, password in users.items()
        }

    def server(self) -> tuple[Any, list[str]]:
        """A server for one exchange, and the list that receives the user's name."""
        names: list[str] = []

        def lookup(name: str) -> Any:
            names.append(name)
            return self.info[name]  # KeyError: unknown user, a failed authentication

        return self.mechanism.make_server(lookup), names
