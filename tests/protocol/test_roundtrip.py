"""Property tests: every schema, every version, both directions, round-trips."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackafka.errors import KafkaProtocolError
from rackafka.protocol import schema as s
from rackafka.protocol.registry import ALL_APIS

INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
}

text = st.text(max_size=12)
blob = st.binary(max_size=24)


def value_strategy(t: s.Type, version: int, nullable: bool, depth: int = 0) -> st.SearchStrategy:
    base: st.SearchStrategy
    if t.name in INT_BOUNDS:
        lo, hi = INT_BOUNDS[t.name]
        base = st.integers(lo, hi)
    elif t is s.BOOL:
        base = st.booleans()
    elif t is s.FLOAT64:
        base = st.floats(allow_nan=False)
    elif t is s.UUID:
        base = st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
    elif t is s.STRING:
        base = text
    elif isinstance(t, s.Array):
        base = st.lists(
            value_strategy(t.item, version, False, depth + 1), max_size=3 if depth < 2 else 1
        )
    elif isinstance(t, s.Struct):
        base = struct_strategy(t, version, depth + 1)
    else:  # bytes and records
        base = blob
    return st.one_of(st.none(), base) if nullable else base


def struct_strategy(struct: s.Struct, version: int, depth: int = 0) -> st.SearchStrategy:
    present = {}
    for f in struct.fields:
        lo, hi = f.version_range()
        if lo <= version <= hi:
            present[f.name] = value_strategy(f.type, version, f.nullable_in(version), depth)
    return st.fixed_dictionaries(present).map(lambda kw: struct.cls(**kw))


def strip_tagged_in_rigid(struct: s.Struct, version: int, flexible: bool, value: Any) -> Any:
    """Tagged fields do not exist in non-flexible versions: expect their defaults."""
    if value is None:
        return None
    kw = {}
    for f in struct.fields:
        v = getattr(value, f.name)
        if f.tag is not None and not flexible:
            v = f.default_value()
        elif isinstance(f.type, s.Struct):
            v = strip_tagged_in_rigid(f.type, version, flexible, v)
        elif isinstance(f.type, s.Array) and isinstance(f.type.item, s.Struct) and v is not None:
            v = [strip_tagged_in_rigid(f.type.item, version, flexible, i) for i in v]
        kw[f.name] = v
    return struct.cls(**kw)


CASES = [
    (api, version, kind)
    for api in ALL_APIS
    for version in range(api.min_version, api.max_version + 1)
    for kind in ("request", "response")
]


@pytest.mark.parametrize(
    ("api", "version", "kind"), CASES, ids=[f"{a.name}-v{v}-{k}" for a, v, k in CASES]
)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_round_trip(api: s.Api, version: int, kind: str, data: st.DataObject) -> None:
    struct = api.request if kind == "request" else api.response
    value = data.draw(struct_strategy(struct, version))
    encode = api.encode_request if kind == "request" else api.encode_response
    decode = api.decode_request if kind == "request" else api.decode_response
    raw = encode(version, value)
    expected = strip_tagged_in_rigid(struct, version, api.is_flexible(version), value)
    assert decode(version, raw) == expected
    # Re-encoding what we decoded gives the same bytes.
    assert encode(version, decode(version, raw)) == raw
    # Every proper prefix is rejected with the documented error.
    cut = data.draw(st.integers(0, max(len(raw) - 1, 0)))
    if cut < len(raw):
        with pytest.raises(KafkaProtocolError):
            decode(version, raw[:cut])


def test_every_api_declares_its_key_once() -> None:
    keys = [api.key for api in ALL_APIS]
    assert len(keys) == len(set(keys))
