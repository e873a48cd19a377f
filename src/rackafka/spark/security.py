"""The security options of the Spark source (``kafka.security.protocol``, ``kafka.ssl.*``,
``kafka.sasl.*``) mapped to what the Python consumer uses.

Stores are read as PEM (Kafka's KIP-651) or PKCS12 (``kafka.ssl.*.type=PKCS12``, read with
the ``cryptography`` package); a JKS store is refused with the ``keytool`` command that
converts it to PKCS12.  :class:`SecuritySettings` is plain picklable data that executors
turn into consumer arguments (stores are read on the process that connects, as Java reads
them); its ``repr`` and every message hide passwords, keys and tokens.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from rackafka.spark.errors import InvalidOptionError

__all__ = ["SECURITY_OPTIONS", "SecuritySettings", "parse_security"]

_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_IAM_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
_OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_KERBEROS_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
_IAM_HANDLER = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"
_IAM_CLIENT_HANDLER = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"

#: The security options the source understands (lower case, as Spark passes them).
SECURITY_OPTIONS = (
    "kafka.security.protocol",
    "kafka.ssl.truststore.location",
    "kafka.ssl.truststore.type",
    "kafka.ssl.truststore.certificates",
    "kafka.ssl.truststore.password",
    "kafka.ssl.keystore.location",
    "kafka.ssl.keystore.type",
    "kafka.ssl.keystore.certificate.chain",
    "kafka.ssl.keystore.key",
    "kafka.ssl.keystore.password",
    "kafka.ssl.key.password",
    "kafka.ssl.endpoint.identification.algorithm",
    "kafka.ssl.protocol",
    "kafka.ssl.enabled.protocols",
    "kafka.sasl.mechanism",
    "kafka.sasl.jaas.config",
    "kafka.sasl.kerberos.service.name",
    "kafka.sasl.client.callback.handler.class",
    "kafka.sasl.login.callback.handler.class",
    "rackafka.aws.region",
)
#: Options whose values are never shown.
_SECRET = (
    "kafka.ssl.truststore.password",
    "kafka.ssl.keystore.password",
    "kafka.ssl.key.password",
    "kafka.ssl.keystore.key",
    "kafka.sasl.jaas.config",
)
_JAAS_OPTION = re.compile(r'\s*([A-Za-z_][\w.]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """Split a JAAS line (``Module required key="value" ...;``) into the module and options.

    Raises:
        InvalidOptionError: it is not one login module entry (values are never shown).
    """
    body = text.strip()
    if body.endswith(";"):
        body = body[:-1].rstrip()
    head = re.match(r"([\w.$]+)\s+(required|requisite|sufficient|optional)\b", body)
    if head is None:
        raise InvalidOptionError(
            "option kafka.sasl.jaas.config must look like "
            '\'<LoginModule class> required username="..." password="...";\''
        )
    module = head.group(1)
    rest = body[head.end() :]
    options: dict[str, str] = {}
    pos = 0
    while rest[pos:].strip():
        found = _JAAS_OPTION.match(rest, pos)
        if found is None:
            raise InvalidOptionError(
                f"option kafka.sasl.jaas.config: cannot read the options of {module} "
                '(write key="value" pairs separated by spaces)'
            )
        key, quoted, bare = found.groups()
        value = bare if quoted is None else re.sub(r"\\(.)", r"\1", quoted)
        options[key] = value
        pos = found.end()
    return module, options


@dataclass(frozen=True, repr=False)
class SecuritySettings:
    """The checked security options of a read; plain data that executors turn into
    :class:`~rackafka.AIOKafkaConsumer` arguments with :meth:`consumer_kwargs`."""

    security_protocol: str = "PLAINTEXT"
    ca_file: str | None = None
    ca_pem: str | None = None
    cert_file: str | None = None
    cert_pem: str | None = None
    key_pem: str | None = field(default=None, compare=False)
    key_password: str | None = field(default=None, compare=False)
    #: ``ca_file`` / ``cert_file`` are PKCS12 stores (else PEM files).
    ca_pkcs12: bool = False
    cert_pkcs12: bool = False
    truststore_password: str | None = field(default=None, compare=False)
    check_hostname: bool = True
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, compare=False)
    kerberos_service_name: str = "kafka"
    msk_iam: bool = False
    aws_region: str | None = None
    aws_profile: str | None = None
    aws_role_arn: str | None = None
    aws_role_session_name: str | None = None

    def __repr__(self) -> str:
        hidden = {"key_pem", "key_password", "password", "truststore_password"}
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or value == f.default:
                continue
            shown.append(f"{f.name}='***'" if f.name in hidden else f"{f.name}={value!r}")
        return f"SecuritySettings({', '.join(shown)})"

    def consumer_kwargs(self) -> dict[str, Any]:
        """Keywords for :class:`~rackafka.AIOKafkaConsumer` (builds the TLS context and
        the token provider here, on the process that connects).

        Raises:
            InvalidOptionError: a certificate or key cannot be loaded (no secret shown).
        """
        out: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.security_protocol in ("SSL", "SASL_SSL"):
            out["ssl_context"] = self._ssl_context()
        if self.security_protocol.startswith("SASL_"):
            if self.msk_iam:
                from rackafka.net.sasl.aws_msk_iam import MSKIAMTokenProvider

                out["sasl_mechanism"] = "OAUTHBEARER"
                out["sasl_oauth_token_provider"] = MSKIAMTokenProvider(
                    self.aws_region,
                    profile=self.aws_profile,
                    role_arn=self.aws_role_arn,
                    role_session_name=self.aws_role_session_name,
                )
            else:
                out["sasl_mechanism"] = self.sasl_mechanism or "GSSAPI"
                out["sasl_plain_username"] = self.username
                out["sasl_plain_password"] = self.password
                out["sasl_kerberos_service_name"] = self.kerberos_service_name
        return out

    def _ssl_context(self) -> Any:
        import ssl

        from rackafka.helpers import create_ssl_context

        try:
            if self.ca_pkcs12 and self.ca_file:
                cas = _pkcs12(self.ca_file, self.truststore_password, "truststore")[2]
                if not cas:
                    raise InvalidOptionError(
                        "option kafka.ssl.truststore.location: the PKCS12 store holds no "
                        "certificate"
                    )
                context = create_ssl_context(cadata="".join(cas) + (self.ca_pem or ""))
            else:
                context = create_ssl_context(cafile=self.ca_file, cadata=self.ca_pem)
        except (OSError, ssl.SSLError) as exc:
            raise InvalidOptionError(
                "option kafka.ssl.truststore.*: cannot load the CA certificates "
                f"({type(exc).__name__}: {getattr(exc, 'strerror', None) or exc})"
            ) from None
        context.check_hostname = self.check_hostname
        if self.cert_file or self.cert_pem:
            try:
                if self.cert_file and self.cert_pkcs12:
                    key, cert, chain = _pkcs12(self.cert_file, self.key_password, "keystore")
                    if key is None or cert is None:
                        raise InvalidOptionError(
                            "option kafka.ssl.keystore.location: the PKCS12 store holds no "
                            "private key with its certificate"
                        )
                    # The key goes to the temporary file encrypted with a one-time password.
                    one_time = secrets.token_urlsafe(24)
                    _load_pem_chain(context, cert + "".join(chain), key(one_time), one_time)
                elif self.cert_file:
                    context.load_cert_chain(self.cert_file, None, self.key_password)
                else:
                    _load_pem_chain(context, self.cert_pem or "", self.key_pem, self.key_password)
            except (OSError, ssl.SSLError) as exc:
                raise InvalidOptionError(
                    "option kafka.ssl.keystore.*: cannot load the client certificate and key "
                    f"({type(exc).__name__}; is kafka.ssl.key.password right?)"
                ) from None
        return context


def _load_pem_chain(context: Any, cert_pem: str, key_pem: str | None, password: str | None) -> None:
    """Load an in-memory PEM certificate chain and key (Python reads only files): through
    a private temporary file that is removed at once."""
    with tempfile.TemporaryDirectory(prefix="rackafka-") as tmp:
        path = os.path.join(tmp, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(cert_pem.strip() + "\n")
            if key_pem:
                out.write(key_pem.strip() + "\n")
        context.load_cert_chain(path, None, password)


def _pkcs12(path: str, password: str | None, store: str) -> tuple[Any, str | None, list[str]]:
    """Read a PKCS12 store: ``(key, certificate, other certificates)``, the certificates
    as PEM text and ``key`` as ``key(password) -> encrypted PEM`` (or ``None``).

    Raises:
        InvalidOptionError: ``cryptography`` is missing, or the store cannot be read
            (a wrong password or not PKCS12; never shown).
    """
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:
        raise InvalidOptionError(
            f"option kafka.ssl.{store}.type=PKCS12 needs the cryptography package "
            "(pip install 'rackafka[spark]')"
        ) from None
    with open(path, "rb") as f:
        data = f.read()
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(
            data, password.encode() if password else None
        )
    except (ValueError, TypeError):
        raise InvalidOptionError(
            f"option kafka.ssl.{store}.location: cannot read the PKCS12 store (is "
            f"kafka.ssl.{store}.password right?)"
        ) from None
    pem = serialization.Encoding.PEM

    def encrypted_key(one_time: str) -> str:
        assert key is not None
        return key.private_bytes(
            pem,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(one_time.encode()),
        ).decode()

    return (
        encrypted_key if key is not None else None,
        cert.public_bytes(pem).decode() if cert is not None else None,
        [c.public_bytes(pem).decode() for c in extra or ()],
    )


_JKS_SUFFIXES = (".jks", ".keystore", ".truststore")


def _store_type(opts: Mapping[str, str], store: str) -> str:
    """``"PEM"`` or ``"PKCS12"``: the type of the ``store`` (truststore or keystore).

    Raises:
        InvalidOptionError: a JKS (or unknown) store, naming the command that converts it.
    """
    location = opts.get(f"kafka.ssl.{store}.location", "").strip()
    kind = opts.get(f"kafka.ssl.{store}.type", "").strip().upper()
    if not kind:
        if location.lower().endswith((".p12", ".pfx")):
            kind = "PKCS12"
        elif location.lower().endswith(_JKS_SUFFIXES):
            kind = "JKS"
        else:
            kind = "PEM"
    if kind in ("PEM", "PKCS12"):
        return kind
    name = os.path.basename(location) or f"{store}.jks"
    stem = name.rsplit(".", 1)[0]
    raise InvalidOptionError(
        f"option kafka.ssl.{store}: a {kind} store cannot be read from Python; convert it "
        f"to PKCS12 (keytool -importkeystore -srckeystore {name} -destkeystore {stem}.p12 "
        f"-deststoretype PKCS12) and set kafka.ssl.{store}.type=PKCS12, or give PEM "
        f"(kafka.ssl.{store}.type=PEM)"
    )


def parse_security(opts: Mapping[str, str], bootstrap_servers: str) -> SecuritySettings | None:
    """Check the security options among ``opts`` (lower-cased keys).

    Returns ``None`` when none is given (PLAINTEXT).

    Raises:
        InvalidOptionError: an option is invalid or cannot be honoured; the message
            names it and never shows a secret.
    """
    if not any(k in opts for k in SECURITY_OPTIONS):
        return None
    protocol = opts.get("kafka.security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise InvalidOptionError(
            "option kafka.security.protocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or "
            f"SASL_SSL, not {opts['kafka.security.protocol']!r}"
        )
    truststore_type = _store_type(opts, "truststore")
    keystore_type = _store_type(opts, "keystore")
    algorithm = opts.get("kafka.ssl.endpoint.identification.algorithm", "https").strip().lower()
    if algorithm not in ("https", ""):
        raise InvalidOptionError(
            "option kafka.ssl.endpoint.identification.algorithm must be 'https' (verify the "
            f"broker's host name, the default) or empty (do not), not {algorithm!r}"
        )
    keystore = opts.get("kafka.ssl.keystore.location", "").strip() or None
    cert_pem = opts.get("kafka.ssl.keystore.certificate.chain", "").strip() or None
    key_pem = opts.get("kafka.ssl.keystore.key", "").strip() or None
    if keystore and cert_pem:
        raise InvalidOptionError(
            "options kafka.ssl.keystore.location and kafka.ssl.keystore.certificate.chain "
            "both give a client certificate: keep one"
        )
    key_password = (
        opts.get("kafka.ssl.key.password") or opts.get("kafka.ssl.keystore.password") or None
    )
    if keystore_type == "PKCS12":
        # One password opens a PKCS12 store and its key (keytool gives both the same).
        key_password = (
            opts.get("kafka.ssl.keystore.password") or opts.get("kafka.ssl.key.password") or None
        )
    settings: dict[str, Any] = {
        "security_protocol": protocol,
        "ca_file": opts.get("kafka.ssl.truststore.location", "").strip() or None,
        "ca_pem": opts.get("kafka.ssl.truststore.certificates", "").strip() or None,
        "cert_file": keystore,
        "cert_pem": cert_pem,
        "key_pem": key_pem,
        "key_password": key_password,
        "ca_pkcs12": truststore_type == "PKCS12",
        "cert_pkcs12": keystore_type == "PKCS12",
        "truststore_password": opts.get("kafka.ssl.truststore.password") or None,
        "check_hostname": algorithm == "https",
        "aws_region": opts.get("rackafka.aws.region", "").strip() or None,
    }
    if protocol.startswith("SASL_"):
        settings.update(_parse_sasl(opts, bootstrap_servers, settings["aws_region"]))
    result = SecuritySettings(**settings)
    result.consumer_kwargs()  # loads the certificates: a wrong path fails the query here
    return result


def _parse_sasl(
    opts: Mapping[str, str], bootstrap_servers: str, region: str | None
) -> dict[str, Any]:
    mechanism = opts.get("kafka.sasl.mechanism", "GSSAPI").strip().upper()
    handler = (
        opts.get("kafka.sasl.client.callback.handler.class", "").strip()
        or opts.get("kafka.sasl.login.callback.handler.class", "").strip()
    )
    jaas = opts.get("kafka.sasl.jaas.config", "")
    module, jaas_options = parse_jaas(jaas) if jaas.strip() else ("", {})
    out: dict[str, Any] = {"sasl_mechanism": mechanism}
    if mechanism == "AWS_MSK_IAM" or handler in (_IAM_HANDLER, _IAM_CLIENT_HANDLER):
        if module and module not in (_IAM_MODULE, _OAUTH_MODULE):
            raise InvalidOptionError(
                f"option kafka.sasl.jaas.config: MSK IAM needs {_IAM_MODULE} or "
                f"{_OAUTH_MODULE}, not {module}"
            )
        from rackafka.net.sasl.aws_msk_iam import region_from_bootstrap

        out["msk_iam"] = True
        out["sasl_mechanism"] = "OAUTHBEARER"
        out["aws_region"] = (
            region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or region_from_bootstrap(bootstrap_servers)
        )
        if not out["aws_region"]:
            raise InvalidOptionError(
                "MSK IAM: the AWS region is unknown; set option rackafka.aws.region "
                "(or AWS_REGION on every node)"
            )
        out["aws_profile"] = jaas_options.get("awsProfileName")
        out["aws_role_arn"] = jaas_options.get("awsRoleArn")
        out["aws_role_session_name"] = jaas_options.get("awsRoleSessionName")
        return out
    if handler:
        raise InvalidOptionError(
            f"option kafka.sasl.*.callback.handler.class={handler!r} is a Java class; "
            "rackafka knows only the MSK IAM handlers"
        )
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        expected = _PLAIN_MODULE if mechanism == "PLAIN" else _SCRAM_MODULE
        if not module:
            raise InvalidOptionError(
                f"kafka.sasl.mechanism={mechanism} needs option kafka.sasl.jaas.config: "
                f'{expected} required username="..." password="...";'
            )
        if module != expected:
            raise InvalidOptionError(
                f"option kafka.sasl.jaas.config: kafka.sasl.mechanism={mechanism} needs "
                f"{expected}, not {module}"
            )
        for key in ("username", "password"):
            if not jaas_options.get(key):
                raise InvalidOptionError(f'option kafka.sasl.jaas.config has no {key}="..."')
        out["username"] = jaas_options["username"]
        out["password"] = jaas_options["password"]
        return out
    if mechanism == "GSSAPI":
        if module and module != _KERBEROS_MODULE:
            raise InvalidOptionError(
                f"option kafka.sasl.jaas.config: GSSAPI needs {_KERBEROS_MODULE}"
            )
        out["kerberos_service_name"] = (
            opts.get("kafka.sasl.kerberos.service.name", "").strip()
            or jaas_options.get("serviceName")
            or "kafka"
        )
        return out
    if mechanism == "OAUTHBEARER":
        raise InvalidOptionError(
            "kafka.sasl.mechanism=OAUTHBEARER: the Spark source can get tokens only from "
            f"Amazon MSK IAM (kafka.sasl.login.callback.handler.class={_IAM_HANDLER}); "
            "for other identity providers use AIOKafkaConsumer with a "
            "sasl_oauth_token_provider"
        )
    raise InvalidOptionError(
        "option kafka.sasl.mechanism must be PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI, "
        f"OAUTHBEARER (MSK IAM) or AWS_MSK_IAM, not {mechanism!r}"
    )
