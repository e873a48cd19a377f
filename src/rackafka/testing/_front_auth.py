"""The credentials of :class:`~rackafka.testing.SecureFront`: a test CA with its
certificates, and the SCRAM users' server side. Test material only."""

from __future__ import annotations

import os
import shutil
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any


def _load(module: str, extra: str) -> Any:
    try:
        return __import__(module)
    except ImportError as exc:  # pragma: no cover - the testing extra installs them
        raise ImportError(
            f"the TLS/SASL front needs {module}: pip install 'rackafka[{extra}]'"
        ) from exc


class _Pki:
    """A test CA with a server certificate for ``localhost``/127.0.0.1 and a client
    certificate, written as PEM files to a private temporary directory."""

    def __init__(self) -> None:
        trustme = _load("trustme", "testing")
        self.dir = tempfile.mkdtemp(prefix="rackafka-front-")
        ca = trustme.CA(organization_name="rackafka test CA")
        self._server = ca.issue_cert("localhost", "127.0.0.1", "::1")
        client = ca.issue_cert("client.rackafka.test")
        self.ca_pem = ca.cert_pem.bytes().decode()
        self.ca_file = os.path.join(self.dir, "ca.pem")
        ca.cert_pem.write_to_path(self.ca_file)
        self.client_cert_file = os.path.join(self.dir, "client.pem")
        self.client_key_file = os.path.join(self.dir, "client.key")
        with open(self.client_cert_file, "wb") as out:
            for blob in client.cert_chain_pems:
                out.write(blob.bytes())
        client.private_key_pem.write_to_path(self.client_key_file)

    def server_context(self, require_client_cert: bool) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server.configure_cert(context)
        if require_client_cert:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.ca_file)
        return context

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class _ScramUsers:
    """SCRAM credentials of the users, as a broker stores them (salted, never the
    password itself), made with the ``scramp`` package."""

    def __init__(self, mechanism: str, users: Mapping[str, str]) -> None:
        scramp = _load("scramp", "testing")
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
