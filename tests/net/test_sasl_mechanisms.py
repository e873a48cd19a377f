"""The SASL mechanisms on bytes alone: RFC test vectors and an independent SCRAM server."""

from __future__ import annotations

import asyncio

import pytest

from rackafka.errors import KafkaConfigurationError, SaslAuthenticationFailed
from rackafka.net.sasl.oauth import OAuthBearerMechanism
from rackafka.net.sasl.plain import PlainMechanism
from rackafka.net.sasl.scram import ScramMechanism


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


def test_scram_sha256_matches_rfc7677_example() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert run(mech.start()) == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = mech.step(
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert mech.step(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None


def test_scram_refuses_a_server_that_does_not_know_the_password() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    run(mech.start())
    mech.step(
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    with pytest.raises(SaslAuthenticationFailed, match="signature is wrong") as info:
        mech.step(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert "pencil" not in str(info.value)


@pytest.mark.parametrize(
    ("server_first", "match"),
    [
        (b"r=other-nonce,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "nonce"),
        (b"r=abcXYZ,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000", "iterations"),
        (b"r=abcXYZ,i=4096", "malformed"),
        (b"garbage", "malformed"),
        (b"m=ext,r=abcXYZ,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "extension"),
    ],
)
def test_scram_refuses_bad_server_first_messages(server_first: bytes, match: str) -> None:
    mech = ScramMechanism("SCRAM-SHA-512", "user", "secret", nonce="abc")
    run(mech.start())
    with pytest.raises(SaslAuthenticationFailed, match=match):
        mech.step(server_first)


def test_scram_server_error_is_reported() -> None:
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    run(mech.start())
    mech.step(
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    with pytest.raises(SaslAuthenticationFailed, match="invalid-proof"):
        mech.step(b"e=invalid-proof")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("username", ["alice", "we,ird=name"])
def test_scram_against_an_independent_server(mechanism: str, username: str) -> None:
    scramp = pytest.importorskip("scramp", reason="scramp (test extra) checks SCRAM")
    salt, stored, server_key, iterations = scramp.ScramMechanism(mechanism).make_auth_info(
        "s3cr3t-pässword", iteration_count=4096
    )
    seen: list[str] = []

    def auth_fn(name: str) -> tuple[bytes, bytes, bytes, int]:
        seen.append(name)
        return salt, stored, server_key, iterations

    server = scramp.ScramMechanism(mechanism).make_server(auth_fn)
    mech = ScramMechanism(mechanism, username, "s3cr3t-pässword")
    server.set_client_first(run(mech.start()).decode())
    client_final = mech.step(server.get_server_first().encode())
    assert client_final is not None
    server.set_client_final(client_final.decode())  # raises if the proof is wrong
    assert mech.step(server.get_server_final().encode()) is None
    assert seen == [username]


def test_scram_wrong_password_is_refused_by_an_independent_server() -> None:
    scramp = pytest.importorskip("scramp", reason="scramp (test extra) checks SCRAM")
    auth = scramp.ScramMechanism("SCRAM-SHA-256").make_auth_info("right")
    server = scramp.ScramMechanism("SCRAM-SHA-256").make_server(lambda _n: auth)
    mech = ScramMechanism("SCRAM-SHA-256", "alice", "wrong")
    server.set_client_first(run(mech.start()).decode())
    client_final = mech.step(server.get_server_first().encode())
    assert client_final is not None
    with pytest.raises(scramp.ScramException):
        server.set_client_final(client_final.decode())


def test_plain_message_and_repr_hide_nothing_but_the_password() -> None:
    mech = PlainMechanism("alice", "hunter2")
    assert run(mech.start()) == b"\0alice\0hunter2"
    assert mech.step(b"") is None
    assert "hunter2" not in repr(mech) and "hunter2" not in mech.describe()


class _Provider:
    def __init__(self, token: object, extensions: dict[str, str] | None = None) -> None:
        self._token = token
        self._extensions = extensions or {}
        self.calls = 0

    async def token(self) -> object:
        self.calls += 1
        return self._token

    def extensions(self) -> dict[str, str]:
        return self._extensions


def test_oauthbearer_initial_response_follows_rfc7628() -> None:
    mech = OAuthBearerMechanism(_Provider("tok.en", {"logicalCluster": "lkc-1", "x": "y z"}))
    assert run(mech.start()) == (
        b"n,,\x01auth=Bearer tok.en\x01logicalCluster=lkc-1\x01x=y z\x01\x01"
    )
    assert mech.step(b"") is None


def test_oauthbearer_error_challenge_is_answered_then_reported() -> None:
    mech = OAuthBearerMechanism(_Provider("expired"))
    run(mech.start())
    assert mech.step(b'{"status":"invalid_token"}') == b"\x01"
    with pytest.raises(SaslAuthenticationFailed, match="invalid_token"):
        mech.step(b"more")


@pytest.mark.parametrize("extensions", [{"auth": "x"}, {"bad-key": "x"}, {"k": "\x00"}])
def test_oauthbearer_refuses_invalid_extensions(extensions: dict[str, str]) -> None:
    mech = OAuthBearerMechanism(_Provider("t", extensions))
    with pytest.raises(KafkaConfigurationError, match=r"extension|value"):
        run(mech.start())


@pytest.mark.parametrize("token", ["", None, 42])
def test_oauthbearer_refuses_a_provider_without_a_token(token: object) -> None:
    with pytest.raises(SaslAuthenticationFailed, match="no token"):
        run(OAuthBearerMechanism(_Provider(token)).start())


def test_oauthbearer_provider_failure_does_not_leak_its_message() -> None:
    class Failing:
        async def token(self) -> str:
            raise RuntimeError("client_secret=abc123 rejected")

    with pytest.raises(SaslAuthenticationFailed) as info:
        run(OAuthBearerMechanism(Failing()).start())
    assert "abc123" not in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)
