"""The Spark source's security options (``kafka.security.protocol``, ``kafka.ssl.*``,
``kafka.sasl.*``), checked without Spark: what they become, what is refused, and that
no secret shows in ``repr``, pickles sent to executors' logs, or messages."""

from __future__ import annotations

import pickle
import ssl
from pathlib import Path
from typing import Any

import pytest

from rackafka.spark.options import InvalidOptionError, parse_options
from rackafka.spark.security import parse_jaas

trustme = pytest.importorskip("trustme", reason="trustme (test extra) makes the certificates")

SERVERS = "127.0.0.1:9092"
PASSWORD = "pa55-w0rd-that-must-not-leak"


def parse(**extra: str) -> Any:
    options = {"kafka.bootstrap.servers": SERVERS, "subscribe": "t", **extra}
    return parse_options({k.lower(): v for k, v in options.items()}, streaming=False)


def refused(*names: str, **extra: str) -> str:
    with pytest.raises(InvalidOptionError) as info:
        parse(**extra)
    message = str(info.value)
    for name in names:
        assert name in message, f"{name!r} not in {message!r}"
    assert PASSWORD not in message
    return message


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    client = ca.issue_cert("client.example")
    ca_file = tmp / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    chain = tmp / "client.pem"
    client.private_key_and_cert_chain_pem.write_to_path(str(chain))
    return {
        "ca_file": str(ca_file),
        "ca_pem": ca.cert_pem.bytes().decode(),
        "client_pem": str(chain),
        "cert_pem": "".join(b.bytes().decode() for b in client.cert_chain_pems),
        "key_pem": client.private_key_pem.bytes().decode(),
    }


def jaas(module: str, **kv: str) -> str:
    return module + " required " + " ".join(f'{k}="{v}"' for k, v in kv.items()) + ";"


PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_no_security_option_means_plaintext() -> None:
    o = parse()
    assert o.security is None
    assert "security_protocol" not in o.consumer_kwargs()


def test_ssl_with_a_pem_truststore(pki: dict[str, str]) -> None:
    o = parse(**{"kafka.security.protocol": "ssl", "kafka.ssl.truststore.location": pki["ca_file"]})
    kw = o.consumer_kwargs()
    assert kw["security_protocol"] == "SSL"
    context = kw["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert len(context.get_ca_certs()) == 1


def test_ssl_with_inline_pem_and_mtls_keystore(pki: dict[str, str]) -> None:
    o = parse(
        **{
            "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.certificates": pki["ca_pem"],
            "kafka.ssl.keystore.type": "PEM",
            "kafka.ssl.keystore.certificate.chain": pki["cert_pem"],
            "kafka.ssl.keystore.key": pki["key_pem"],
        }
    )
    assert "PRIVATE KEY" not in repr(o) and "PRIVATE KEY" not in repr(o.security)
    assert isinstance(o.consumer_kwargs()["ssl_context"], ssl.SSLContext)


def test_ssl_keystore_file(pki: dict[str, str]) -> None:
    o = parse(
        **{
            "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.location": pki["ca_file"],
            "kafka.ssl.keystore.location": pki["client_pem"],
        }
    )
    assert o.security.cert_file == pki["client_pem"]


def test_hostname_verification_can_be_turned_off_as_in_java(pki: dict[str, str]) -> None:
    o = parse(
        **{
            "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.location": pki["ca_file"],
            "kafka.ssl.endpoint.identification.algorithm": "",
        }
    )
    assert o.consumer_kwargs()["ssl_context"].check_hostname is False


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (
            {"kafka.ssl.truststore.type": "JKS"},
            ("kafka.ssl.truststore", "keytool -importkeystore", "-deststoretype PKCS12"),
        ),
        (
            {"kafka.ssl.truststore.location": "/etc/kafka/truststore.jks"},
            ("truststore", "keytool -importkeystore -srckeystore truststore.jks"),
        ),
        (
            {"kafka.ssl.keystore.location": "/etc/kafka/client.keystore"},
            ("kafka.ssl.keystore", "-destkeystore client.p12"),
        ),
        ({"kafka.ssl.truststore.location": "/nonexistent/ca.pem"}, ("kafka.ssl.truststore",)),
        ({"kafka.ssl.endpoint.identification.algorithm": "ldap"}, ("identification",)),
        ({"kafka.security.protocol": "TLS"}, ("kafka.security.protocol",)),
    ],
)
def test_tls_options_refused_with_the_option_named(
    extra: dict[str, str], names: tuple[str, ...]
) -> None:
    refused(*names, **{"kafka.security.protocol": "SSL", **extra})


def test_wrong_key_password_is_refused_without_showing_it(
    pki: dict[str, str], tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki["key_pem"].encode(), None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"right-password"),
    )
    path = tmp_path / "client.pem"
    path.write_bytes(pki["cert_pem"].encode() + encrypted)
    refused(
        "kafka.ssl.keystore",
        **{
            "kafka.security.protocol": "SSL",
            "kafka.ssl.keystore.location": str(path),
            "kafka.ssl.key.password": PASSWORD,
        },
    )
    ok = parse(
        **{
            "kafka.security.protocol": "SSL",
            "kafka.ssl.keystore.location": str(path),
            "kafka.ssl.key.password": "right-password",
        }
    )
    assert "right-password" not in repr(ok)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_jaas_credentials_become_sasl_arguments(mechanism: str) -> None:
    module = PLAIN if mechanism == "PLAIN" else SCRAM
    o = parse(
        **{
            "kafka.security.protocol": "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": mechanism,
            "kafka.sasl.jaas.config": jaas(module, username="alice", password=PASSWORD),
        }
    )
    kw = o.consumer_kwargs()
    assert kw["sasl_mechanism"] == mechanism
    assert kw["sasl_plain_username"] == "alice"
    assert kw["sasl_plain_password"] == PASSWORD
    for shown in (repr(o), str(o), repr(o.security), repr(o.consumer)):
        assert PASSWORD not in shown
    # What Spark ships to executors is the options object: its pickle carries the secret
    # (executors need it), but nothing prints it.
    assert pickle.loads(pickle.dumps(o)).consumer_kwargs()["sasl_plain_password"] == PASSWORD


def test_jaas_parsing_handles_quotes_and_escapes() -> None:
    module, options = parse_jaas(
        f'{SCRAM}  required\n username="a\\"b" password="x y;z" tokenauth=true ;'
    )
    assert module == SCRAM
    assert options == {"username": 'a"b', "password": "x y;z", "tokenauth": "true"}


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        ({"kafka.sasl.mechanism": "PLAIN"}, ("kafka.sasl.jaas.config",)),
        (
            {"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": jaas(SCRAM, username="a")},
            ("kafka.sasl.jaas.config", PLAIN),
        ),
        (
            {"kafka.sasl.mechanism": "SCRAM-SHA-256", "kafka.sasl.jaas.config": jaas(SCRAM)},
            ("username",),
        ),
        (
            {"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": f"password={PASSWORD}"},
            ("kafka.sasl.jaas.config",),
        ),
        ({"kafka.sasl.mechanism": "OAUTHBEARER"}, ("OAUTHBEARER", "MSK IAM")),
        ({"kafka.sasl.mechanism": "NTLM"}, ("kafka.sasl.mechanism",)),
        (
            {
                "kafka.sasl.mechanism": "OAUTHBEARER",
                "kafka.sasl.login.callback.handler.class": "x.Y",
            },
            ("callback.handler.class",),
        ),
    ],
)
def test_sasl_options_refused_with_the_option_named(
    extra: dict[str, str], names: tuple[str, ...]
) -> None:
    refused(*names, **{"kafka.security.protocol": "SASL_SSL", **extra})


@pytest.mark.parametrize(
    "extra",
    [
        {
            "kafka.sasl.mechanism": "AWS_MSK_IAM",
            "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
            "kafka.sasl.client.callback.handler.class": (
                "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
            ),
        },
        {
            "kafka.sasl.mechanism": "OAUTHBEARER",
            "kafka.sasl.jaas.config": (
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
            ),
            "kafka.sasl.login.callback.handler.class": (
                "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"
            ),
        },
    ],
)
def test_msk_iam_options_give_the_msk_token_provider(
    extra: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("aws_msk_iam_sasl_signer", reason="the aws extra signs MSK IAM tokens")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    servers = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"
    o = parse_options(
        {
            "kafka.bootstrap.servers": servers,
            "subscribe": "t",
            "kafka.security.protocol": "SASL_SSL",
            **{k.lower(): v for k, v in extra.items()},
        },
        streaming=False,
    )
    kw = o.consumer_kwargs()
    assert kw["sasl_mechanism"] == "OAUTHBEARER"
    provider = kw["sasl_oauth_token_provider"]
    assert type(provider).__name__ == "MSKIAMTokenProvider"
    assert provider.region == "eu-west-1"


def test_msk_iam_without_a_region_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("aws_msk_iam_sasl_signer", reason="the aws extra signs MSK IAM tokens")
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    refused(
        "rackafka.aws.region",
        **{"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "AWS_MSK_IAM"},
    )


# -- PKCS12 stores (what Java users bring) ------------------------------------------------------


def _pkcs12_stores(tmp: Path, ca_pem: bytes, cert_pem: bytes, key_pem: bytes) -> tuple[str, str]:
    """A PKCS12 truststore (the CA) and keystore (key, certificate, chain), as keytool
    makes them, protected by PASSWORD."""
    serialization = pytest.importorskip(
        "cryptography.hazmat.primitives.serialization", reason="cryptography reads PKCS12"
    )
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import pkcs12

    ca = x509.load_pem_x509_certificate(ca_pem)
    certs = x509.load_pem_x509_certificates(cert_pem)
    key = serialization.load_pem_private_key(key_pem, None)
    encryption = serialization.BestAvailableEncryption(PASSWORD.encode())
    truststore = tmp / "truststore.p12"
    truststore.write_bytes(
        pkcs12.serialize_key_and_certificates(b"ca", None, None, [ca], encryption)
    )
    keystore = tmp / "client.keystore"  # (no telling suffix: the type option says it)
    keystore.write_bytes(
        pkcs12.serialize_key_and_certificates(b"client", key, certs[0], certs[1:], encryption)
    )
    return str(truststore), str(keystore)


def test_pkcs12_stores_are_read(pki: dict[str, str], tmp_path: Path) -> None:
    truststore, keystore = _pkcs12_stores(
        tmp_path, pki["ca_pem"].encode(), pki["cert_pem"].encode(), pki["key_pem"].encode()
    )
    opts = parse(
        **{
            "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.location": truststore,  # .p12: PKCS12 without a type
            "kafka.ssl.truststore.password": PASSWORD,
            "kafka.ssl.keystore.type": "PKCS12",
            "kafka.ssl.keystore.location": keystore,
            "kafka.ssl.keystore.password": PASSWORD,
        }
    )
    settings = opts.security
    assert PASSWORD not in repr(settings)
    context = pickle.loads(pickle.dumps(settings)).consumer_kwargs()["ssl_context"]
    (ca,) = context.get_ca_certs()  # the CA of the truststore, and only it
    assert ca["subject"]


def test_a_pkcs12_store_with_a_wrong_password_is_refused_without_showing_it(
    pki: dict[str, str], tmp_path: Path
) -> None:
    _truststore, keystore = _pkcs12_stores(
        tmp_path, pki["ca_pem"].encode(), pki["cert_pem"].encode(), pki["key_pem"].encode()
    )
    message = refused(
        "kafka.ssl.keystore",
        **{
            "kafka.security.protocol": "SSL",
            "kafka.ssl.keystore.type": "PKCS12",
            "kafka.ssl.keystore.location": keystore,
            "kafka.ssl.keystore.password": "not-" + PASSWORD,
        },
    )
    assert "not-" + PASSWORD not in message


async def test_pkcs12_stores_connect_with_mutual_tls(tmp_path: Path) -> None:
    # The broker (the embedded cluster's TLS front) requires a client certificate: the
    # consumer built from the PKCS12 stores reads.
    from rackafka import AIOKafkaConsumer
    from rackafka.testing import EmbeddedCluster

    async with EmbeddedCluster(brokers=1, security_protocol="SSL", require_client_cert=True) as c:
        c.create_topic("p12", partitions=1, replication_factor=1)
        c.produce("p12", 5, value_size=10)
        front = c.front
        truststore, keystore = _pkcs12_stores(
            tmp_path,
            Path(front.ca_file).read_bytes(),
            Path(front.client_cert_file).read_bytes(),
            Path(front.client_key_file).read_bytes(),
        )
        opts = parse(
            **{
                "kafka.security.protocol": "SSL",
                "kafka.ssl.truststore.type": "PKCS12",
                "kafka.ssl.truststore.location": truststore,
                "kafka.ssl.truststore.password": PASSWORD,
                "kafka.ssl.keystore.type": "PKCS12",
                "kafka.ssl.keystore.location": keystore,
                "kafka.ssl.keystore.password": PASSWORD,
                "kafka.ssl.endpoint.identification.algorithm": "",
            }
        )
        kwargs = opts.security.consumer_kwargs()
        consumer = AIOKafkaConsumer(
            "p12", bootstrap_servers=c.bootstrap_servers, auto_offset_reset="earliest", **kwargs
        )
        await consumer.start()
        try:
            got = 0
            while got < 5:
                batch = await consumer.getmany(timeout_ms=1000)
                got += sum(len(v) for v in batch.values())
        finally:
            await consumer.stop()
