"""A plain, independent reference codec of record batch v2 for the tests.

It is written for clarity, field by field, and shares no code with ``rackafka.records``;
the tests compare the optimized decoder with it.
"""

from __future__ import annotations

import struct
from typing import Any

import crc32c


def zigzag_varint(value: int) -> bytes:
    u = (value << 1) if value >= 0 else ((-value) << 1) - 1
    out = bytearray()
    while True:
        if u < 0x80:
            out.append(u)
            return bytes(out)
        out.append((u & 0x7F) | 0x80)
        u >>= 7


def read_zigzag(buf: bytes, pos: int) -> tuple[int, int]:
    u = 0
    shift = 0
    while True:
        b = buf[pos]
        pos += 1
        u += (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    value = u >> 1 if u % 2 == 0 else -((u + 1) >> 1)
    return value, pos


def nullable_bytes(data: bytes | None) -> bytes:
    if data is None:
        return zigzag_varint(-1)
    return zigzag_varint(len(data)) + data


def record_bytes(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]] | tuple[()] = (),
    attributes: int = 0,
) -> bytes:
    body = bytes([attributes])
    body += zigzag_varint(timestamp_delta)
    body += zigzag_varint(offset_delta)
    body += nullable_bytes(key)
    body += nullable_bytes(value)
    body += zigzag_varint(len(headers))
    for hkey, hvalue in headers:
        body += nullable_bytes(hkey.encode())
        body += nullable_bytes(hvalue)
    return zigzag_varint(len(body)) + body


def batch_bytes(
    records: bytes,
    *,
    count: int,
    base_offset: int = 0,
    attributes: int = 0,
    last_offset_delta: int | None = None,
    base_timestamp: int = 0,
    max_timestamp: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    leader_epoch: int = 0,
) -> bytes:
    """A v2 batch around already encoded (and possibly compressed) ``records``."""
    if last_offset_delta is None:
        last_offset_delta = count - 1
    after_crc = (
        struct.pack(">h", attributes)
        + struct.pack(">i", last_offset_delta)
        + struct.pack(">q", base_timestamp)
        + struct.pack(">q", max_timestamp)
        + struct.pack(">q", producer_id)
        + struct.pack(">h", producer_epoch)
        + struct.pack(">i", base_sequence)
        + struct.pack(">i", count)
        + records
    )
    crc = crc32c.crc32c(after_crc)
    rest = struct.pack(">i", leader_epoch) + b"\x02" + struct.pack(">I", crc) + after_crc
    return struct.pack(">q", base_offset) + struct.pack(">i", len(rest)) + rest


def decode_records(data: bytes, count: int, base_offset: int, base_ts: int) -> list[Any]:
    """Decode ``count`` uncompressed records into (offset, ts, key, value, headers)."""
    out = []
    pos = 0
    for _ in range(count):
        length, pos = read_zigzag(data, pos)
        end = pos + length
        pos += 1
        ts_delta, pos = read_zigzag(data, pos)
        offset_delta, pos = read_zigzag(data, pos)
        fields: list[bytes | None] = []
        for _ in range(2):
            n, pos = read_zigzag(data, pos)
            if n == -1:
                fields.append(None)
            else:
                fields.append(data[pos : pos + n])
                pos += n
        nh, pos = read_zigzag(data, pos)
        headers = []
        for _ in range(nh):
            n, pos = read_zigzag(data, pos)
            hkey = data[pos : pos + n].decode()
            pos += n
            n, pos = read_zigzag(data, pos)
            if n == -1:
                hvalue = None
            else:
                hvalue = data[pos : pos + n]
                pos += n
            headers.append((hkey, hvalue))
        assert pos == end
        out.append(
            (base_offset + offset_delta, base_ts + ts_delta, fields[0], fields[1], tuple(headers))
        )
    assert pos == len(data)
    return out
