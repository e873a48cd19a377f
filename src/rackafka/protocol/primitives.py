"""Primitive wire codecs of the Kafka protocol.

Readers have the shape ``read(buf, pos) -> (value, new_pos)`` and writers
``write(out, value) -> None`` where ``out`` is a :class:`bytearray`.  Readers may
raise :class:`struct.error` or :class:`IndexError` on a short buffer; the schema
layer turns every such failure into :class:`rackafka.errors.KafkaProtocolError`,
so callers outside this package never see them.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from rackafka.errors import KafkaProtocolError

Reader = Callable[[bytes, int], "tuple[Any, int]"]
Writer = Callable[[bytearray, Any], None]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_F64 = struct.Struct(">d")
_UUID = struct.Struct(">16s")

ZERO_UUID = uuid.UUID(int=0)


def _fixed(st: struct.Struct) -> tuple[Reader, Writer]:
    unpack_from = st.unpack_from
    pack = st.pack
    size = st.size

    def read(buf: bytes, pos: int) -> tuple[Any, int]:
        return unpack_from(buf, pos)[0], pos + size

    def write(out: bytearray, value: Any) -> None:
        out += pack(value)

    return read, write


read_int8, write_int8 = _fixed(_I8)
read_int16, write_int16 = _fixed(_I16)
read_int32, write_int32 = _fixed(_I32)
read_int64, write_int64 = _fixed(_I64)
read_uint16, write_uint16 = _fixed(_U16)
read_uint32, write_uint32 = _fixed(_U32)
read_float64, write_float64 = _fixed(_F64)


def read_bool(buf: bytes, pos: int) -> tuple[bool, int]:
    return buf[pos] != 0, pos + 1


def write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def read_uuid(buf: bytes, pos: int) -> tuple[uuid.UUID, int]:
    return uuid.UUID(bytes=_UUID.unpack_from(buf, pos)[0]), pos + 16


def write_uuid(out: bytearray, value: uuid.UUID | None) -> None:
    out += (value or ZERO_UUID).bytes


# -- variable-length integers -------------------------------------------------


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 32 bits."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    c = buf[pos + 1]
    if c < 0x80:  # two bytes (a length of 128 to 16383): without a call
        return (b & 0x7F) | (c << 7), pos + 2
    return _read_unsigned(buf, pos, 28, "unsigned varint is longer than 5 bytes")


def read_uvarlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 64 bits."""
    return _read_unsigned(buf, pos, 63, "unsigned varlong is longer than 10 bytes")


def _read_unsigned(buf: bytes, pos: int, max_shift: int, too_long: str) -> tuple[int, int]:
    """Read an unsigned varint whose last group starts at bit ``max_shift`` at the most."""
    result = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > max_shift:
            raise KafkaProtocolError(too_long)


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zigzag-encoded signed 32-bit varint."""
    v, pos = read_uvarint(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zigzag-encoded signed 64-bit varint."""
    v, pos = read_uvarlong(buf, pos)
    return (v >> 1) ^ -(v & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    if not -(1 << 31) <= value < (1 << 31):
        raise ValueError(f"varint out of range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"varlong out of range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# -- length-prefixed data -------------------------------------------------------


def _take(buf: bytes, pos: int, n: int) -> tuple[bytes, int]:
    end = pos + n
    if end > len(buf):
        raise KafkaProtocolError(
            f"field of {n} bytes at offset {pos} runs past the end of a {len(buf)}-byte buffer"
        )
    if type(buf) is bytes:
        return buf[pos:end], end
    return bytes(memoryview(buf)[pos:end]), end  # one copy (a bytearray slice is one)


def read_length(buf: bytes, pos: int, compact: bool) -> tuple[int, int]:
    """Read a length prefix: int32 (-1 = null) or compact uvarint (0 = null)."""
    if compact:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    n, pos = _I32.unpack_from(buf, pos)[0], pos + 4
    return n, pos


def read_short_length(buf: bytes, pos: int, compact: bool) -> tuple[int, int]:
    """Length of a string: int16 (-1 = null) or compact uvarint."""
    if compact:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    return _I16.unpack_from(buf, pos)[0], pos + 2


def write_length(out: bytearray, n: int, compact: bool) -> None:
    if compact:
        write_uvarint(out, n + 1)
    else:
        out += _I32.pack(n)


def write_short_length(out: bytearray, n: int, compact: bool) -> None:
    if compact:
        write_uvarint(out, n + 1)
    else:
        if n > 0x7FFF:
            raise ValueError(f"string of {n} bytes is too long for an int16 length")
        out += _I16.pack(n)


def _null(n: int, pos: int, nullable: bool, what: str) -> tuple[None, int]:
    """A negative length ``n`` read before ``pos``: null (-1, when allowed), else the error."""
    if n == -1 and nullable:
        return None, pos
    raise KafkaProtocolError(f"invalid {what} length {n} at offset {pos}")


def _write_null(
    out: bytearray,
    nullable: bool,
    write_len: Callable[[bytearray, int, bool], None],
    compact: bool,
    what: str,
) -> None:
    """Write the null length of a field of ``what``, if it may be null."""
    if not nullable:
        raise ValueError(f"a non-nullable {what} field was given None")
    write_len(out, -1, compact)


def string_codec(compact: bool, nullable: bool) -> tuple[Reader, Writer]:
    def read(buf: bytes, pos: int) -> tuple[str | None, int]:
        n, pos = read_short_length(buf, pos, compact)
        if n < 0:
            return _null(n, pos, nullable, "string")
        raw, pos = _take(buf, pos, n)
        try:
            return raw.decode("utf-8"), pos
        except UnicodeDecodeError as exc:
            raise KafkaProtocolError(f"string at offset {pos - n} is not UTF-8") from exc

    def write(out: bytearray, value: str | None) -> None:
        if value is None:
            _write_null(out, nullable, write_short_length, compact, "string")
            return
        raw = value.encode("utf-8")
        write_short_length(out, len(raw), compact)
        out += raw

    return read, write


def bytes_codec(compact: bool, nullable: bool) -> tuple[Reader, Writer]:
    def read(buf: bytes, pos: int) -> tuple[bytes | None, int]:
        n, pos = read_length(buf, pos, compact)
        if n < 0:
            return _null(n, pos, nullable, "bytes")
        return _take(buf, pos, n)

    def write(out: bytearray, value: bytes | None) -> None:
        if value is None:
            _write_null(out, nullable, write_length, compact, "bytes")
            return
        write_length(out, len(value), compact)
        out += value

    return read, write


def take(buf: bytes, pos: int, n: int) -> tuple[bytes, int]:
    """Return ``n`` bytes at ``pos``, raising KafkaProtocolError when short."""
    return _take(buf, pos, n)
