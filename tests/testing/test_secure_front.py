"""The TLS/SASL front of the embedded cluster, checked with librdkafka (confluent-kafka) as
the reference client: every protocol and mechanism, mutual TLS, refused credentials and
CAs, requests before authentication, KIP-368 session lifetimes, and that clients only ever
learn the front's addresses."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from rackafka.protocol import frames
from rackafka.protocol.apis.metadata import METADATA
from rackafka.testing import EmbeddedCluster, SecureFront

from ._confluent import consume_with_confluent

confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is the reference")
pytest.importorskip("trustme", reason="trustme (testing extra) makes the front's certificates")
pytest.importorskip("scramp", reason="scramp (testing extra) is the front's SCRAM")

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
COUNT = 200


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=3) as c:
        c.create_topic("secured", partitions=3, replication_factor=3)
        c.produce("secured", COUNT, value_size=40)
        yield c


def front_of(cluster: EmbeddedCluster, **kwargs: Any) -> SecureFront:
    kwargs.setdefault("users", USERS)
    return SecureFront({n: (b.host, b.port) for n, b in cluster.brokers.items()}, **kwargs)


def consume_all(conf: dict[str, Any], topic: str = "secured", count: int = COUNT) -> list[Any]:
    conf = {**conf, "group.id": f"g-{uuid.uuid4().hex[:8]}"}
    return [(m.partition(), m.offset()) for m in consume_with_confluent(conf, topic, count)]


def oauth_cb(_config: str) -> tuple[str, float]:
    return "token-for-librdkafka", time.time() + 3600


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [
        ("SSL", None),
        ("SASL_PLAINTEXT", "PLAIN"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
        ("SASL_SSL", "SCRAM-SHA-512"),
        ("SASL_SSL", "PLAIN"),
        ("SASL_SSL", "OAUTHBEARER"),
    ],
)
def test_librdkafka_reads_everything_through_the_front(
    cluster: EmbeddedCluster, protocol: str, mechanism: str | None
) -> None:
    with front_of(cluster, security_protocol=protocol) as front:
        conf = front.librdkafka_config(mechanism)
        if mechanism == "OAUTHBEARER":
            conf["oauth_cb"] = oauth_cb
        got = consume_all(conf)
        assert len(got) == COUNT and len(set(got)) == COUNT
        if mechanism is not None:
            assert front.stats.authentications.get(mechanism, 0) >= 1
            assert front.stats.failures == 0
        if mechanism == "OAUTHBEARER":
            assert front.stats.oauth_extensions  # what librdkafka sent (none configured)


def test_librdkafka_produces_through_the_front(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("secured-produce", partitions=2, replication_factor=3)
    with front_of(cluster, security_protocol="SASL_SSL") as front:
        producer = confluent_kafka.Producer(front.librdkafka_config("SCRAM-SHA-256"))
        for i in range(50):
            producer.produce("secured-produce", value=b"v%d" % i)
        assert producer.flush(20) == 0
        got = consume_all(front.librdkafka_config("SCRAM-SHA-256"), "secured-produce", 50)
        assert len(got) == 50


def test_mutual_tls(cluster: EmbeddedCluster) -> None:
    with front_of(cluster, security_protocol="SSL", require_client_cert=True) as front:
        got = consume_all(front.librdkafka_config(client_cert=True))
        assert len(got) == COUNT
        # Without a client certificate the handshake fails: nothing is read.
        assert _fails(front.librdkafka_config())
        assert front.stats.connections >= 1


def _fails(conf: dict[str, Any]) -> list[str]:
    """Errors librdkafka reports within a few seconds; it must not read anything."""
    errors: list[str] = []
    consumer = confluent_kafka.Consumer(
        {
            **conf,
            "group.id": "g-fail",
            "auto.offset.reset": "earliest",
            "error_cb": lambda e: errors.append(str(e)),
        }
    )
    consumer.subscribe(["secured"])
    deadline = time.monotonic() + 8
    try:
        while not errors and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=10, timeout=0.5):
                assert m.error() is not None, "read a record with bad credentials"
    finally:
        consumer.close()
    return errors


def test_wrong_password_is_refused(cluster: EmbeddedCluster) -> None:
    with front_of(cluster, security_protocol="SASL_SSL") as front:
        conf = front.librdkafka_config("SCRAM-SHA-512")
        conf["sasl.password"] = "wrong"
        errors = _fails(conf)
        assert any("Authentication" in e or "authentication" in e for e in errors), errors
        assert front.stats.failures >= 1
        assert front.stats.total_authentications == 0


def test_untrusted_ca_is_refused(cluster: EmbeddedCluster, tmp_path: Any) -> None:
    trustme = pytest.importorskip("trustme")
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    with front_of(cluster, security_protocol="SSL") as front:
        conf = front.librdkafka_config()
        conf["ssl.ca.location"] = str(other)
        errors = _fails(conf)
        assert any("certificate" in e.lower() or "ssl" in e.lower() for e in errors), errors


def _send(sock: socket.socket, frame: bytes) -> None:
    sock.sendall(frame)


def test_a_request_before_authentication_closes_the_connection(cluster: EmbeddedCluster) -> None:
    with front_of(cluster, security_protocol="SASL_PLAINTEXT") as front:
        host, port = front.address_of(1)
        with socket.create_connection((host, port), timeout=5) as sock:
            request = METADATA.Request(topics=None, allow_auto_topic_creation=False)
            sock.sendall(frames.encode_request(METADATA, 1, 7, "raw", request))
            assert sock.recv(4096) == b""  # closed without an answer
        assert front.stats.protocol_violations == 1


def test_metadata_through_the_front_names_only_the_front(cluster: EmbeddedCluster) -> None:
    with front_of(cluster, security_protocol="SSL") as front:
        admin = confluent_kafka.admin.AdminClient(front.librdkafka_config())
        md = admin.list_topics(timeout=10)
        listed = {f"{b.host}:{b.port}" for b in md.brokers.values()}
        assert listed == set(front.bootstrap_servers.split(","))
        assert not listed & set(cluster.plaintext_bootstrap_servers.split(","))


def test_sessions_expire_and_librdkafka_reauthenticates(cluster: EmbeddedCluster) -> None:
    """KIP-368: with 2 s sessions, librdkafka re-authenticates its connections while it
    keeps consuming; nothing is lost."""
    cluster.create_topic("secured-reauth", partitions=1, replication_factor=3)
    with front_of(cluster, security_protocol="SASL_PLAINTEXT", session_lifetime_ms=2000) as front:
        conf = front.librdkafka_config("PLAIN")
        consumer = confluent_kafka.Consumer(
            {**conf, "group.id": "g-reauth", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe(["secured-reauth"])
        got: list[int] = []
        end = time.monotonic() + 6
        produced = 0
        while time.monotonic() < end:
            cluster.produce("secured-reauth", 10, value_size=10, partition=0)
            produced += 10
            for m in consumer.consume(num_messages=100, timeout=0.3):
                if m.error() is None:
                    got.append(m.offset())
        deadline = time.monotonic() + 10
        while len(got) < produced and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.3):
                if m.error() is None:
                    got.append(m.offset())
        consumer.close()
        assert sorted(got) == list(range(produced))
        assert front.stats.total_reauthentications >= 2


def test_front_arguments_are_checked(cluster: EmbeddedCluster) -> None:
    brokers = {n: (b.host, b.port) for n, b in cluster.brokers.items()}
    with pytest.raises(ValueError, match="security_protocol"):
        SecureFront(brokers, security_protocol="TLS")
    with pytest.raises(ValueError, match="GSSAPI"):
        SecureFront(brokers, sasl_mechanisms=("GSSAPI",))
    front = SecureFront(brokers, security_protocol="SASL_PLAINTEXT", users={"a": "hunter2"})
    assert "hunter2" not in repr(front)


def test_embedded_cluster_with_security(cluster: EmbeddedCluster) -> None:
    with EmbeddedCluster(brokers=2, security_protocol="SASL_SSL", users=USERS) as secured:
        assert secured.front is not None
        assert secured.bootstrap_servers == secured.front.bootstrap_servers
        assert secured.bootstrap_servers != secured.plaintext_bootstrap_servers
        secured.create_topic("via-front", partitions=1, replication_factor=2)
        secured.produce("via-front", 20, value_size=10)  # the harness writes directly
        got = consume_all(secured.front.librdkafka_config("SCRAM-SHA-512"), "via-front", 20)
        assert len(got) == 20
