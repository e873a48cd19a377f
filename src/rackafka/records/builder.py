"""Encoder of record batches v2 (the producer, tests, benchmarks and the embedded cluster).

Pure bytes: :func:`encode_record` writes one record, :func:`finish_batch` wraps encoded
records in a batch header (compression, CRC); :class:`BatchBuilder` combines both.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

from rackafka.records._crc import crc32c
from rackafka.records._varint import encode_varint
from rackafka.records.compression import CODEC_NONE, compress
from rackafka.records.default_records import CONTROL_COMMIT, CRC_START, HEADER, HEADER_SIZE

__all__ = [
    "NO_HEADERS",
    "VARINT_TABLE_SIZE",
    "BatchBuilder",
    "encode_batch",
    "encode_control_batch",
    "encode_headers",
    "encode_record",
    "encode_record_raw",
    "finish_batch",
    "finish_batch_in_place",
    "varint_table",
]

Header = tuple[str, "bytes | None"]
_CRC = struct.Struct(">I")

#: Values below this have their varint looked up in :func:`varint_table` (every one- and
#: two-byte zig-zag varint of a non-negative value).
VARINT_TABLE_SIZE = 1 << 13
_VARINTS: list[bytes] = []


def varint_table() -> list[bytes]:
    """Encoded varints to look up: item ``n`` is the zig-zag varint of ``n`` for ``0 <= n <
    VARINT_TABLE_SIZE``, and item ``-1`` (the last) that of ``-1``, a null length.

    Built on first use (about 0.4 MB), as only producers encode many records.
    """
    if not _VARINTS:
        table = [encode_varint(n) for n in range(VARINT_TABLE_SIZE)]
        table.append(encode_varint(-1))
        _VARINTS[:] = table  # one step: a concurrent caller sees it empty or complete
    return _VARINTS


def _varint(value: int) -> bytes:
    if 0 <= value < VARINT_TABLE_SIZE:
        return (_VARINTS or varint_table())[value]
    return encode_varint(value)


#: The headers part of a record without headers (their count, 0).
NO_HEADERS = b"\x00"
#: Encoded header keys (their length varint, then their UTF-8 bytes), by key: a producer
#: sends the same few keys again and again.  Bounded: emptied when it reaches the limit.
_HEADER_KEYS: dict[str, bytes] = {}
_HEADER_KEYS_MAX = 1024


def _header_key(hkey: str) -> bytes:
    """The encoded ``hkey`` (length varint and bytes), remembered in :data:`_HEADER_KEYS`."""
    raw = hkey.encode("utf-8", "surrogateescape")
    encoded = _varint(len(raw)) + raw
    if len(_HEADER_KEYS) >= _HEADER_KEYS_MAX:
        _HEADER_KEYS.clear()
    if type(hkey) is str:  # a str subclass may hash differently
        _HEADER_KEYS[hkey] = encoded
    return encoded


def encode_headers(headers: Sequence[Header]) -> bytes:
    """The headers part of a v2 record: their count, then each key and value.

    Arguments:
        headers: ``(str, bytes | None)`` pairs.
    """
    varints = _VARINTS or varint_table()
    size = VARINT_TABLE_SIZE
    keys = _HEADER_KEYS
    n = len(headers)
    parts = [varints[n] if n < size else encode_varint(n)]
    append = parts.append
    for hkey, hvalue in headers:
        append(keys.get(hkey) or _header_key(hkey))
        if hvalue is None:
            append(b"\x01")  # the varint of -1
        else:
            n = len(hvalue)
            append(varints[n] if n < size else encode_varint(n))
            append(hvalue)
    return b"".join(parts)


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header] = (),
) -> bytes:
    """Encode one record of a v2 batch, with its length prefix.

    Arguments:
        offset_delta (int): the record's offset minus the batch's base offset.
        timestamp_delta (int): the record's timestamp minus the batch's base timestamp.
        key, value (bytes | None): the key and value.
        headers: ``(str, bytes | None)`` pairs.
    """
    return encode_record_raw(
        offset_delta,
        timestamp_delta,
        key,
        value,
        encode_headers(headers) if headers else b"\x00",
    )


def encode_record_raw(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: bytes,
) -> bytes:
    """:func:`encode_record` with the headers encoded already (by :func:`encode_headers`;
    ``b"\\x00"`` for none)."""
    varint = _varint
    null = b"\x01"  # the varint of -1
    body = b"".join(
        (
            b"\x00",
            varint(timestamp_delta),
            varint(offset_delta),
            null if key is None else varint(len(key)),
            key or b"",
            null if value is None else varint(len(value)),
            value or b"",
            headers,
        )
    )
    return varint(len(body)) + body


def finish_batch(
    records: bytes | bytearray | memoryview,
    *,
    count: int,
    last_offset_delta: int,
    first_timestamp: int,
    max_timestamp: int,
    compression: int = CODEC_NONE,
    timestamp_type: int = 0,
    transactional: bool = False,
    control: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Wrap records from :func:`encode_record` in a v2 batch header.

    ``first_timestamp`` is the base timestamp the records' deltas are relative to
    (replaced by ``delete_horizon_ms`` when given).  The records are compressed with
    ``compression`` (a ``CODEC_*`` number) and the CRC-32C is computed.
    """
    data = bytearray(HEADER_SIZE)
    data += records if compression == CODEC_NONE else compress(compression, bytes(records))
    attributes = (
        (compression & 0x07)
        | (0x08 if timestamp_type == 1 else 0)
        | (0x10 if transactional else 0)
        | (0x20 if control else 0)
        | (0x40 if delete_horizon_ms is not None else 0)
    )
    base_ts = first_timestamp if delete_horizon_ms is None else delete_horizon_ms
    header = (base_offset, partition_leader_epoch, attributes, last_offset_delta, base_ts)
    _seal(data, *header, max_timestamp, producer_id, producer_epoch, base_sequence, count)
    return bytes(data)


def finish_batch_in_place(
    buffer: bytearray,
    *,
    count: int,
    last_offset_delta: int,
    first_timestamp: int,
    max_timestamp: int,
    compression: int = CODEC_NONE,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytearray:
    """:func:`finish_batch` of records written in ``buffer`` after :data:`HEADER_SIZE`
    bytes left for the header (the producer's batches): without compression the header
    is written there and ``buffer`` itself is the batch (no copy); with compression, a
    new ``bytearray``.  May be called again on the same ``buffer`` (new producer fields):
    the records are never changed.  CreateTime, base offset 0, not a control batch.
    """
    if compression != CODEC_NONE:
        data = bytearray(HEADER_SIZE)
        data += compress(compression, bytes(memoryview(buffer)[HEADER_SIZE:]))
        buffer = data
    attributes = (compression & 0x07) | (0x10 if transactional else 0)
    header = (0, -1, attributes, last_offset_delta, first_timestamp)
    _seal(buffer, *header, max_timestamp, producer_id, producer_epoch, base_sequence, count)
    return buffer


def _seal(
    data: bytearray,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    count: int,
) -> None:
    """Write the batch header into the first :data:`HEADER_SIZE` bytes of ``data`` (the
    records, compressed or not, follow), then its CRC-32C."""
    HEADER.pack_into(
        data,
        0,
        base_offset,
        len(data) - 12,
        partition_leader_epoch,
        2,
        0,  # the CRC, below
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    _CRC.pack_into(data, CRC_START - 4, crc32c(memoryview(data)[CRC_START:]))


class BatchBuilder:
    """Build one record batch v2.

    Arguments:
        base_offset (int): offset of the first record.
        compression (int): a ``CODEC_*`` number from :mod:`rackafka.records.compression`.
        timestamp_type (int): 0 for CreateTime, 1 for LogAppendTime.
        log_append_time (int | None): the max timestamp written for LogAppendTime batches
            (the broker's append time); defaults to the largest record timestamp.
        transactional (bool): set the transactional attribute.
        control (bool): set the control attribute.
        producer_id, producer_epoch, base_sequence (int): producer fields, ``-1`` if none.
        partition_leader_epoch (int): the partition leader epoch field.
        delete_horizon_ms (int | None): set the delete horizon attribute and write it as
            the base timestamp.

    Example::

        builder = BatchBuilder(base_offset=100, compression=CODEC_LZ4)
        builder.append(1700000000000, b"key", b"value", [("trace", b"1")])
        data = builder.build()
    """

    def __init__(
        self,
        *,
        base_offset: int = 0,
        compression: int = CODEC_NONE,
        timestamp_type: int = 0,
        log_append_time: int | None = None,
        transactional: bool = False,
        control: bool = False,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        partition_leader_epoch: int = -1,
        delete_horizon_ms: int | None = None,
    ) -> None:
        self.base_offset = base_offset
        self.compression = compression
        self.timestamp_type = timestamp_type
        self.log_append_time = log_append_time
        self.transactional = transactional
        self.control = control
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.partition_leader_epoch = partition_leader_epoch
        self.delete_horizon_ms = delete_horizon_ms
        self._records: list[tuple[int, int, bytes | None, bytes | None, Sequence[Header]]] = []

    def __len__(self) -> int:
        return len(self._records)

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] = (),
        *,
        offset: int | None = None,
    ) -> None:
        """Add a record.

        Arguments:
            timestamp (int): the record timestamp in milliseconds.
            key, value (bytes | None): the key and value.
            headers: ``(str, bytes | None)`` pairs.
            offset (int | None): the absolute offset of the record; by default the one
                after the previous record (a larger one leaves a gap, as compaction does).
        """
        if offset is None:
            delta = self._records[-1][0] + 1 if self._records else 0
        else:
            delta = offset - self.base_offset
            if delta < 0 or (self._records and delta <= self._records[-1][0]):
                raise ValueError(f"offset {offset} is not after the previous record")
        self._records.append((delta, timestamp, key, value, tuple(headers)))

    def build(self) -> bytes:
        """Return the encoded batch."""
        records = self._records
        if records:
            first_ts = records[0][1]
            max_ts = max(r[1] for r in records)
            last_delta = records[-1][0]
        else:
            first_ts = max_ts = -1
            last_delta = 0
        base_ts = first_ts if self.delete_horizon_ms is None else self.delete_horizon_ms
        if self.timestamp_type == 1 and self.log_append_time is not None:
            max_ts = self.log_append_time
        payload = b"".join(
            encode_record(delta, ts - base_ts, key, value, headers)
            for delta, ts, key, value, headers in records
        )
        return finish_batch(
            payload,
            count=len(records),
            last_offset_delta=last_delta,
            first_timestamp=first_ts,
            max_timestamp=max_ts,
            compression=self.compression,
            timestamp_type=self.timestamp_type,
            transactional=self.transactional,
            control=self.control,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            base_offset=self.base_offset,
            partition_leader_epoch=self.partition_leader_epoch,
            delete_horizon_ms=self.delete_horizon_ms,
        )


def encode_batch(records: Iterable[Sequence[Any]], **options: Any) -> bytes:
    """Encode records as one record batch v2.

    Arguments:
        records: ``(timestamp, key, value)`` or ``(timestamp, key, value, headers)``
            tuples, at consecutive offsets.
        **options: the keyword arguments of :class:`BatchBuilder` (``base_offset``,
            ``compression``, ``transactional``, ``producer_id``, ``control``, ...).
    """
    builder = BatchBuilder(**options)
    for record in records:
        builder.append(*record)
    return builder.build()


def encode_control_batch(
    control_type: int = CONTROL_COMMIT,
    *,
    base_offset: int = 0,
    timestamp: int = 0,
    producer_id: int = 0,
    producer_epoch: int = 0,
    coordinator_epoch: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode a transaction marker: a transactional control batch with one control record.

    Arguments:
        control_type (int): ``CONTROL_ABORT`` (0) or ``CONTROL_COMMIT`` (1).
        base_offset (int): the offset of the marker.
        timestamp (int): the marker timestamp.
        producer_id, producer_epoch (int): the transactional producer.
        coordinator_epoch (int): the epoch of the transaction coordinator.
        partition_leader_epoch (int): the partition leader epoch field.
    """
    builder = BatchBuilder(
        base_offset=base_offset,
        transactional=True,
        control=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
    )
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    builder.append(timestamp, key, value)
    return builder.build()
