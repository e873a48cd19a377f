"""Hand-written Kafka wire encoders for golden-byte tests.

Independent of rackafka's codec on purpose: the golden vectors are built from the protocol
guide's field layouts with these, then compared with what rackafka encodes and decodes.
"""

from __future__ import annotations

import struct


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def boolean(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def uvarint(n: int) -> bytes:
    """Unsigned LEB128, as used by compact lengths and tagged fields."""
    assert n >= 0
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def string(s: str | None) -> bytes:
    """Classic (nullable) string: int16 length, -1 for null."""
    if s is None:
        return i16(-1)
    raw = s.encode()
    return i16(len(raw)) + raw


def cstring(s: str | None) -> bytes:
    """Compact (nullable) string: uvarint length + 1, 0 for null."""
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def blob(b: bytes | None) -> bytes:
    """Classic (nullable) bytes: int32 length, -1 for null."""
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def cblob(b: bytes | None) -> bytes:
    """Compact (nullable) bytes: uvarint length + 1, 0 for null."""
    if b is None:
        return uvarint(0)
    return uvarint(len(b) + 1) + b


def array(items: list[bytes] | None) -> bytes:
    """Classic (nullable) array of already-encoded items: int32 count, -1 for null."""
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(items)


def carray(items: list[bytes] | None) -> bytes:
    """Compact (nullable) array: uvarint count + 1, 0 for null."""
    if items is None:
        return uvarint(0)
    return uvarint(len(items) + 1) + b"".join(items)


def tags(*fields: tuple[int, bytes]) -> bytes:
    """A tagged-field section: count, then (tag, size, data) in ascending tag order."""
    out = uvarint(len(fields))
    for tag, data in fields:
        out += uvarint(tag) + uvarint(len(data)) + data
    return out


NO_TAGS = tags()
