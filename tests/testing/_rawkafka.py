"""A minimal, independent Kafka Fetch v11 client for observing the embedded cluster's answers.

Written from the Kafka protocol guide for these tests only, so that they check the mock
broker's behaviour byte by byte without depending on rackafka's own protocol code.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

FETCH = 1


@dataclass
class FetchedPartition:
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[tuple[int, int]] | None
    preferred_read_replica: int
    records: bytes | None
    elapsed: float = 0.0
    batches: list[tuple[int, int, int, int]] = field(default_factory=list)
    """(base offset, record count, attributes, partition leader epoch) of each batch."""


class ConnectionClosed(Exception):
    """The broker closed the connection instead of answering."""


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionClosed
        buf += chunk
    return buf


def request(host: str, port: int, api_key: int, version: int, body: bytes, timeout: float) -> bytes:
    """Send one request with header v1 and return the response body after the correlation id."""
    header = struct.pack(">hhi", api_key, version, 7) + _string("raw-test")
    frame = header + body
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        try:
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            payload = _recv_exact(sock, size)
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise ConnectionClosed from exc
    (correlation_id,) = struct.unpack_from(">i", payload, 0)
    assert correlation_id == 7
    return payload[4:]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple[int, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def string(self) -> str | None:
        (n,) = self.take(">h")
        if n < 0:
            return None
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        return raw.decode()

    def bytes_(self) -> bytes | None:
        (n,) = self.take(">i")
        if n < 0:
            return None
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        return raw


def _batches(records: bytes | None) -> list[tuple[int, int, int, int]]:
    out = []
    pos = 0
    data = records or b""
    while pos + 61 <= len(data):
        base_offset, batch_len, epoch = struct.unpack_from(">qii", data, pos)
        (attributes,) = struct.unpack_from(">h", data, pos + 21)
        (last_delta,) = struct.unpack_from(">i", data, pos + 23)
        out.append((base_offset, last_delta + 1, attributes, epoch))
        pos += 12 + batch_len
    return out


def fetch(
    host: str,
    port: int,
    topic: str,
    partition: int,
    offset: int,
    *,
    leader_epoch: int = -1,
    rack: str = "",
    max_wait_ms: int = 0,
    isolation_level: int = 0,
    version: int = 11,
    timeout: float = 10.0,
) -> FetchedPartition:
    """One Fetch (v11 by default, v4..v11 supported) for one partition."""
    assert 4 <= version <= 11
    body = struct.pack(">iii", -1, max_wait_ms, 1)
    body += struct.pack(">ib", 1 << 20, isolation_level)
    if version >= 7:
        body += struct.pack(">ii", 0, -1)  # session id, session epoch (no session)
    body += struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 1)
    body += struct.pack(">i", partition)
    if version >= 9:
        body += struct.pack(">i", leader_epoch)
    body += struct.pack(">q", offset)
    if version >= 5:
        body += struct.pack(">q", -1)
    body += struct.pack(">i", 1 << 20)
    if version >= 7:
        body += struct.pack(">i", 0)  # forgotten topics
    if version >= 11:
        body += _string(rack)
    started = time.monotonic()
    r = _Reader(request(host, port, FETCH, version, body, timeout))
    elapsed = time.monotonic() - started
    r.take(">i")  # throttle time (v1+)
    top_error = 0
    if version >= 7:
        (top_error,) = r.take(">h")
        r.take(">i")
    (n_topics,) = r.take(">i")
    assert n_topics == 1, n_topics
    r.string()
    (n_parts,) = r.take(">i")
    assert n_parts == 1, n_parts
    _, error_code, hw, lso = r.take(">ihqq")
    log_start = -1
    if version >= 5:
        (log_start,) = r.take(">q")
    (n_aborted,) = r.take(">i")
    aborted: list[tuple[int, int]] | None = None
    if n_aborted >= 0:
        aborted = [r.take(">qq") for _ in range(n_aborted)]  # type: ignore[misc]
    preferred = -1
    if version >= 11:
        (preferred,) = r.take(">i")
    records = r.bytes_()
    return FetchedPartition(
        error_code or top_error, hw, lso, log_start, aborted, preferred, records, elapsed,
        _batches(records),
    )  # fmt: skip
