"""Encoder of record batches v2 (used by tests, benchmarks and the embedded cluster)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

from rackafka.records._crc import crc32c
from rackafka.records._varint import encode_varint
from rackafka.records.compression import CODEC_NONE, compress
from rackafka.records.default_records import CONTROL_COMMIT, CRC_START, HEADER, HEADER_SIZE

__all__ = ["BatchBuilder", "encode_batch", "encode_control_batch"]

Header = tuple[str, "bytes | None"]
_NULL = encode_varint(-1)


def _encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += encode_varint(timestamp_delta)
    body += encode_varint(offset_delta)
    for part in (key, value):
        if part is None:
            body += _NULL
        else:
            body += encode_varint(len(part))
            body += part
    body += encode_varint(len(headers))
    for hkey, hvalue in headers:
        raw = hkey.encode("utf-8", "surrogateescape")
        body += encode_varint(len(raw))
        body += raw
        if hvalue is None:
            body += _NULL
        else:
            body += encode_varint(len(hvalue))
            body += hvalue
    return encode_varint(len(body)) + bytes(body)


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
            _encode_record(delta, ts - base_ts, key, value, headers)
            for delta, ts, key, value, headers in records
        )
        if self.compression != CODEC_NONE:
            payload = compress(self.compression, payload)
        attributes = (
            (self.compression & 0x07)
            | (0x08 if self.timestamp_type == 1 else 0)
            | (0x10 if self.transactional else 0)
            | (0x20 if self.control else 0)
            | (0x40 if self.delete_horizon_ms is not None else 0)
        )
        header = HEADER.pack(
            self.base_offset,
            HEADER_SIZE - 12 + len(payload),
            self.partition_leader_epoch,
            2,
            0,
            attributes,
            last_delta,
            base_ts,
            max_ts,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            len(records),
        )
        data = bytearray(header)
        data += payload
        crc = crc32c(memoryview(data)[CRC_START:])
        struct.pack_into(">I", data, CRC_START - 4, crc)
        return bytes(data)


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
