from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackafka.errors import KafkaProtocolError, UnsupportedVersionError
from rackafka.protocol import primitives as p
from rackafka.protocol.apis.api_versions import API_VERSIONS
from rackafka.protocol.frames import FrameBuffer, decode_response, encode_response
from rackafka.protocol.versions import VersionRange, VersionTable, pick_version


@given(st.integers(0, 2**32 - 1))
def test_uvarint_round_trip(n: int) -> None:
    out = bytearray()
    p.write_uvarint(out, n)
    assert p.read_uvarint(bytes(out), 0) == (n, len(out))


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(n: int) -> None:
    out = bytearray()
    p.write_varint(out, n)
    assert p.read_varint(bytes(out), 0) == (n, len(out))


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(n: int) -> None:
    out = bytearray()
    p.write_varlong(out, n)
    assert p.read_varlong(bytes(out), 0) == (n, len(out))


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (300, b"\xd8\x04"),
    ],
)
def test_zigzag_known_values(value: int, encoded: bytes) -> None:
    # Values from the zigzag definition: (n << 1) ^ (n >> 31), 7 bits per byte, LSB first.
    out = bytearray()
    p.write_varint(out, value)
    assert bytes(out) == encoded


def test_overlong_varint_is_a_protocol_error() -> None:
    with pytest.raises(KafkaProtocolError):
        p.read_uvarint(b"\xff" * 6, 0)


def test_string_past_end_is_a_protocol_error() -> None:
    read, _ = p.string_codec(compact=False, nullable=False)
    with pytest.raises(KafkaProtocolError):
        read(b"\x00\x05ab", 0)


def test_negative_array_length_is_rejected() -> None:
    raw = b"\x00\x00" + b"\xff\xff\xff\xfe"  # error_code 0, api_keys length -2
    with pytest.raises(KafkaProtocolError):
        API_VERSIONS.decode_response(0, raw)


def test_huge_array_length_fails_fast() -> None:
    raw = b"\x00\x00" + b"\x7f\xff\xff\xff" + b"\x00" * 10
    with pytest.raises(KafkaProtocolError):
        API_VERSIONS.decode_response(0, raw)


def test_trailing_bytes_are_rejected() -> None:
    raw = API_VERSIONS.encode_response(0, API_VERSIONS.Response()) + b"\x00"
    with pytest.raises(KafkaProtocolError):
        API_VERSIONS.decode_response(0, raw)


@given(st.lists(st.binary(max_size=40), max_size=8), st.data())
def test_frame_buffer_splits_any_chunking(payloads: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(len(x).to_bytes(4, "big") + x for x in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    fb = FrameBuffer()
    got: list[bytes] = []
    prev = 0
    for c in [*cuts, len(stream)]:
        fb.feed(stream[prev:c])
        got.extend(fb.frames())
        prev = c
    assert got == payloads
    assert fb.pending == 0


def test_frame_buffer_rejects_negative_and_oversized_sizes() -> None:
    fb = FrameBuffer(max_frame_size=100)
    fb.feed(b"\xff\xff\xff\xff")
    with pytest.raises(KafkaProtocolError):
        fb.frames()
    fb = FrameBuffer(max_frame_size=100)
    fb.feed((101).to_bytes(4, "big"))
    with pytest.raises(KafkaProtocolError):
        fb.frames()


def test_api_versions_response_uses_header_v0_even_when_flexible() -> None:
    resp = API_VERSIONS.Response(
        error_code=0, api_keys=[{"api_key": 1, "min_version": 4, "max_version": 17}]
    )
    frame = encode_response(API_VERSIONS, 3, 42, resp)
    # size, correlation id, then the body right away (no header tag section)
    assert frame[4:8] == (42).to_bytes(4, "big")
    assert frame[8:10] == b"\x00\x00"
    assert decode_response(API_VERSIONS, 3, frame[4:]) == resp


def test_pick_version_highest_common() -> None:
    assert pick_version(API_VERSIONS, VersionRange(0, 2)) == 2
    assert pick_version(API_VERSIONS, VersionRange(0, 9)) == 3


def test_pick_version_errors_name_the_api() -> None:
    with pytest.raises(UnsupportedVersionError, match="ApiVersions"):
        pick_version(API_VERSIONS, None)
    with pytest.raises(UnsupportedVersionError, match=r"ApiVersions.*broker speaks 5-9"):
        pick_version(API_VERSIONS, VersionRange(5, 9))


def test_version_table_from_api_versions_response() -> None:
    resp = API_VERSIONS.Response(api_keys=[{"api_key": 18, "min_version": 0, "max_version": 2}])
    table = VersionTable.from_api_versions(resp.api_keys)
    assert table.version(API_VERSIONS) == 2
    assert table.supports(API_VERSIONS)
    assert table.broker_range(1) is None
