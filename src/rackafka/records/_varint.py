"""Zig-zag varints of record batch v2, and their lookup tables."""

from __future__ import annotations

__all__ = [
    "ZIGZAG1",
    "ZIGZAG2",
    "VarintError",
    "read_varint",
    "encode_varint",
    "varint_size",
]

#: Decoded value of each one-byte zig-zag varint (index: the byte, 0..127).
ZIGZAG1: list[int] = [(u >> 1) ^ -(u & 1) for u in range(1 << 7)]
#: Decoded value of each two-byte zig-zag varint ``b0 b1`` as ``ZIGZAG2[b0][b1]``
#: (``b0`` in 128..255, ``b1`` in 0..127): two list lookups are much faster in CPython
#: than combining the bytes with shifts and masks.
ZIGZAG2: list[list[int]] = [[] for _ in range(128)] + [
    [(u >> 1) ^ -(u & 1) for u in range(b0 & 0x7F, 1 << 14, 128)] for b0 in range(128, 256)
]


class VarintError(Exception):
    """A varint is longer than 10 bytes (the caller turns it into a record error)."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zig-zag varint (up to 64 bits) at ``pos``; return ``(value, new_pos)``.

    Raises :class:`IndexError` when ``buf`` ends inside the varint and
    :class:`VarintError` when it is longer than 10 bytes.
    """
    b = buf[pos]
    pos += 1
    u = b & 0x7F
    shift = 7
    while b & 0x80:
        b = buf[pos]
        pos += 1
        u |= (b & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise VarintError("varint is longer than 10 bytes")
    return (u >> 1) ^ -(u & 1), pos


def encode_varint(value: int) -> bytes:
    """Encode ``value`` (a signed 64-bit integer) as a zig-zag varint."""
    u = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    if u < 0x80:
        return bytes((u,))
    if u < 0x200000:  # two or three bytes: the lengths of values up to 1 MiB, unrolled
        if u < 0x4000:
            return bytes(((u & 0x7F) | 0x80, u >> 7))
        return bytes(((u & 0x7F) | 0x80, ((u >> 7) & 0x7F) | 0x80, u >> 14))
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def varint_size(value: int) -> int:
    """Number of bytes of the zig-zag varint encoding of ``value``."""
    u = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while u >= 0x80:
        u >>= 7
        size += 1
    return size
