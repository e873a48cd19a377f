"""The GSSAPI mechanism's exchange (RFC 4752) on bytes, with a stand-in for the optional
``gssapi`` package (a Kerberos KDC cannot run here): context tokens until the context is
established, then the security-layer negotiation, and a clear error without the extra."""

from __future__ import annotations

import asyncio
import sys
import types
from typing import Any

import pytest

from rackafka.errors import KafkaConfigurationError, SaslAuthenticationFailed


class _Wrapped:
    def __init__(self, message: bytes) -> None:
        self.message = message


class _Context:
    """Two Kerberos legs, then wrap/unwrap marked with a prefix."""

    def __init__(self, name: Any, usage: str) -> None:
        self.name = name
        self.usage = usage
        self.steps: list[bytes | None] = []
        self.complete = False

    def step(self, token: bytes | None) -> bytes | None:
        self.steps.append(token)
        if len(self.steps) == 1:
            return b"AP-REQ"
        self.complete = True
        return None

    def unwrap(self, data: bytes) -> _Wrapped:
        assert data.startswith(b"W:")
        return _Wrapped(data[2:])

    def wrap(self, data: bytes, encrypt: bool) -> _Wrapped:
        assert encrypt is False
        return _Wrapped(b"W:" + data)


@pytest.fixture
def fake_gssapi(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType("gssapi")
    module.Name = lambda text, name_type: ("name", text, name_type)  # type: ignore[attr-defined]
    module.NameType = types.SimpleNamespace(hostbased_service="hostbased")  # type: ignore[attr-defined]
    module.SecurityContext = _Context  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gssapi", module)
    return module


def test_exchange_ends_with_no_security_layer(fake_gssapi: types.ModuleType) -> None:
    from rackafka.net.sasl.gssapi import GssapiMechanism

    mech = GssapiMechanism("kafka", "broker-1.example.com")
    assert mech._context.name == ("name", "kafka@broker-1.example.com", "hostbased")
    assert asyncio.run(mech.start()) == b"AP-REQ"
    assert mech.step(b"AP-REP") == b""  # context established: wait for the offer
    answer = mech.step(b"W:\x07\x00\x10\x00")  # layers 1|2|4 offered
    assert answer == b"W:\x01\x00\x00\x00"
    assert mech.step(b"") is None


def test_a_broker_that_insists_on_a_security_layer_is_refused(
    fake_gssapi: types.ModuleType,
) -> None:
    from rackafka.net.sasl.gssapi import GssapiMechanism

    mech = GssapiMechanism("kafka", "b")
    asyncio.run(mech.start())
    mech.step(b"AP-REP")
    with pytest.raises(SaslAuthenticationFailed, match="no security layer"):
        mech.step(b"W:\x04\x00\x10\x00")


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gssapi", None)  # import gssapi raises ImportError
    from rackafka.net.sasl.gssapi import load_gssapi

    with pytest.raises(KafkaConfigurationError, match=r"rackafka\[gssapi\]"):
        load_gssapi()
