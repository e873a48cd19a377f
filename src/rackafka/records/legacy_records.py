"""Legacy message sets (message format v0 and v1, magic 0 and 1).

Each message is ``offset int64, message_size int32`` followed by the message:
``crc uint32`` (zlib CRC-32 of the rest of the message), ``magic int8``,
``attributes int8`` (codec in bits 0-2, timestamp type in bit 3 for v1), ``timestamp
int64`` (v1 only), ``key bytes`` and ``value bytes`` (int32 length, -1 for null).

A compressed message (a "wrapper") holds a compressed message set as its value.  For v1
the inner offsets are relative and the wrapper carries the absolute offset of the last
inner message; for v0 the inner offsets are absolute.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence
from itertools import starmap
from typing import Any, Final

from rackafka.errors import CorruptRecordException, RecordTooLargeError, UnsupportedCodecError
from rackafka.records.compression import (
    CODEC_LZ4,
    CODEC_NAMES,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    compress,
    decompress,
)
from rackafka.records.default_records import RecordFactory, _where

__all__ = [
    "LegacyRecordBatch",
    "encode_legacy_message",
    "encode_legacy_message_set",
]

#: offset, message size, crc, magic, attributes.
_HEAD: Final = struct.Struct(">qiIbb")
_TIMESTAMP: Final = struct.Struct(">q")
_LENGTH: Final = struct.Struct(">i")
#: Smallest message size (from the crc to the end) of magic 0 and 1.
MIN_MESSAGE_SIZE: Final = (14, 22)
_EMPTY: tuple[()] = ()

_Record = tuple[int, "int | None", "int | None", "bytes | None", "bytes | None", int, int, int, Any]


class _Invalid(Exception):
    """Internal: the message at ``args[1]`` is invalid for the reason ``args[0]``."""


def _parse_message(
    buf: bytes, pos: int, end: int, check_crc: bool
) -> tuple[int, int, int, int, int | None, bytes | None, bytes | None, int]:
    """Parse the message at ``pos``; return its fields and the position after it.

    The message must end at or before ``end``.  Returns ``(offset, crc, magic,
    attributes, timestamp, key, value, next_pos)``.
    """
    if end - pos < 12:
        raise _Invalid("truncated message header", None)
    offset, size = struct.unpack_from(">qi", buf, pos)
    if size < MIN_MESSAGE_SIZE[0]:
        raise _Invalid(f"message size {size} is too small", offset)
    msg_end = pos + 12 + size
    if msg_end > end:
        raise _Invalid(f"message of {size} bytes runs past the end of its message set", offset)
    _, _, crc, magic, attributes = _HEAD.unpack_from(buf, pos)
    if magic not in (0, 1):
        raise _Invalid(f"unexpected magic {magic} in a legacy message", offset)
    if size < MIN_MESSAGE_SIZE[magic]:
        raise _Invalid(f"message size {size} is too small for magic {magic}", offset)
    if check_crc:
        computed = zlib.crc32(memoryview(buf)[pos + 16 : msg_end])
        if computed != crc:
            raise _Invalid(f"CRC mismatch (stored {crc:#010x}, computed {computed:#010x})", offset)
    p = pos + 18
    timestamp: int | None = None
    if magic == 1:
        (timestamp,) = _TIMESTAMP.unpack_from(buf, p)
        p += 8
    key: bytes | None = None
    value: bytes | None = None
    (n,) = _LENGTH.unpack_from(buf, p)
    p += 4
    if n >= 0:
        if n > msg_end - p:
            raise _Invalid(f"key length {n} runs past the end of the message", offset)
        key = buf[p : p + n]
        p += n
    elif n != -1:
        raise _Invalid(f"invalid key length {n}", offset)
    if msg_end - p < 4:
        raise _Invalid("value length runs past the end of the message", offset)
    (n,) = _LENGTH.unpack_from(buf, p)
    p += 4
    if n >= 0:
        if n != msg_end - p:
            raise _Invalid(f"value length {n} does not match the message size {size}", offset)
        value = buf[p : p + n]
        p += n
    elif n != -1:
        raise _Invalid(f"invalid value length {n}", offset)
    if p != msg_end:
        raise _Invalid(f"{msg_end - p} bytes remain after the value of the message", offset)
    return offset, crc, magic, attributes, timestamp, key, value, msg_end


class LegacyRecordBatch:
    """One top-level message of a v0/v1 message set: a single record or a compressed wrapper.

    It has the attributes of :class:`~rackafka.records.RecordBatch` that make sense for
    legacy messages (``is_control`` and ``is_transactional`` are ``False``,
    ``producer_id`` is ``-1``); the records are decoded when it is created.  For v0
    messages ``timestamp`` and ``timestamp_type`` of the records are ``None``.

    Attributes:
        checksum (int): the CRC of the (wrapper) message.
    """

    __slots__ = (
        "_max_size",
        "_records",
        "topic",
        "partition",
        "base_offset",
        "last_offset",
        "next_offset",
        "magic",
        "crc",
        "attributes",
        "compression",
        "timestamp_type",
        "timestamp",
        "record_count",
        "size_in_bytes",
    )

    is_control = False
    is_transactional = False
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    partition_leader_epoch = -1
    control_type = None

    def __init__(
        self,
        buf: bytes,
        pos: int,
        *,
        check_crcs: bool = True,
        topic: str | None = None,
        partition: int | None = None,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> None:
        """Decode the complete top-level message at ``pos`` of ``buf``.

        Raises:
            CorruptRecordException: the message or its compressed content is invalid.
            UnsupportedCodecError: the message uses an unknown codec.
            RecordTooLargeError: the compressed content inflates past
                ``max_decompressed_size``.
        """
        self.topic = topic
        self._max_size = max_decompressed_size
        self.partition = partition
        try:
            (offset, crc, magic, attributes, timestamp, key, value, end) = _parse_message(
                buf, pos, len(buf), check_crcs
            )
        except _Invalid as exc:
            reason, at = exc.args
            raise self._error(reason, at if at is not None else 0) from None
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.timestamp = timestamp
        self.size_in_bytes = end - pos
        codec = attributes & 0x07
        self.compression = codec
        ts_type = ((attributes >> 3) & 1) if magic else None
        self.timestamp_type = ts_type
        if codec == 0:
            # The record tuple is written here and in _decode_wrapper's loop on purpose:
            # an uncompressed legacy message is decoded one at a time, and building it
            # through one shared function measured 3% slower per message (through the
            # wrapper's loop, 12%), medians of 15 interleaved runs. Keep both inline.
            self._records: list[_Record] = [
                (
                    offset,
                    timestamp,
                    ts_type,
                    key,
                    value,
                    crc,
                    -1 if key is None else len(key),
                    -1 if value is None else len(value),
                    _EMPTY,
                )
            ]
            self.base_offset = offset
        else:
            self._records = self._decode_wrapper(offset, magic, codec, timestamp, ts_type, value)
            self.base_offset = self._records[0][0]
        self.last_offset = offset
        self.next_offset = offset + 1
        self.record_count = len(self._records)

    def _error(self, message: str, offset: int) -> CorruptRecordException:
        return CorruptRecordException(f"{_where(self.topic, self.partition, offset)}: {message}")

    def _decode_wrapper(
        self,
        offset: int,
        magic: int,
        codec: int,
        timestamp: int | None,
        ts_type: int | None,
        value: bytes | None,
    ) -> list[_Record]:
        if value is None:
            raise self._error("compressed message has a null value", offset)
        try:
            data = decompress(
                codec,
                value,
                legacy_lz4=(magic == 0 and codec == CODEC_LZ4),
                max_size=self._max_size,
            )
        except UnsupportedCodecError as exc:
            raise UnsupportedCodecError(
                f"{_where(self.topic, self.partition, offset)}: {exc.args[0]}"
            ) from None
        except CorruptRecordException as exc:
            raise self._error(f"compressed message: {exc.args[0]}", offset) from None
        except RecordTooLargeError as exc:
            where = _where(self.topic, self.partition, offset)
            raise RecordTooLargeError(f"{where}: {exc.args[0]}") from None
        inner = []
        pos = 0
        end = len(data)
        try:
            while pos < end:
                (i_off, i_crc, i_magic, i_attr, i_ts, key, val, pos) = _parse_message(
                    data, pos, end, True
                )
                if i_magic != magic:
                    raise _Invalid(f"inner message has magic {i_magic}, wrapper {magic}", offset)
                if i_attr & 0x07:
                    raise _Invalid("compressed message nested in a compressed message", offset)
                inner.append((i_off, i_crc, i_ts, key, val))
        except _Invalid as exc:
            name = CODEC_NAMES.get(codec, str(codec))
            raise self._error(f"{name} compressed message set: {exc.args[0]}", offset) from None
        if not inner:
            raise self._error("compressed message holds no message", offset)
        if magic == 0:
            delta = 0
        else:
            delta = offset - inner[-1][0]
        log_append = magic == 1 and ts_type == 1
        records: list[_Record] = []
        prev = -1
        for i_off, i_crc, i_ts, key, val in inner:
            if i_off + delta <= prev or i_off + delta > offset:
                raise self._error(
                    f"inner message offset {i_off + delta} does not follow {prev} "
                    f"or is past the wrapper offset {offset}",
                    offset,
                )
            prev = i_off + delta
            records.append(
                (
                    i_off + delta,
                    timestamp if log_append else i_ts,
                    ts_type,
                    key,
                    val,
                    i_crc,
                    -1 if key is None else len(key),
                    -1 if val is None else len(val),
                    _EMPTY,
                )
            )
        return records

    def records(self, factory: RecordFactory | None = None) -> list[Any]:
        """The records of the message, as :meth:`RecordBatch.records` gives them.

        ``checksum`` is the CRC of each (inner) message.
        """
        if factory is None:
            return list(self._records)
        return list(starmap(factory, self._records))

    def __iter__(self) -> Any:
        """Iterate over :meth:`records` tuples."""
        return iter(self._records)

    def __repr__(self) -> str:
        return (
            f"LegacyRecordBatch(magic={self.magic}, base_offset={self.base_offset}, "
            f"last_offset={self.last_offset}, count={self.record_count}, "
            f"codec={CODEC_NAMES.get(self.compression, '?')})"
        )


# -- encoding ------------------------------------------------------------------------------


def encode_legacy_message(
    offset: int,
    *,
    magic: int,
    key: bytes | None,
    value: bytes | None,
    timestamp: int = -1,
    attributes: int = 0,
) -> bytes:
    """Encode one legacy message with its offset and size prefix.

    Arguments:
        offset (int): the offset field.
        magic (int): 0 or 1.
        key, value (bytes | None): the key and value.
        timestamp (int): the timestamp (v1 only).
        attributes (int): the attributes byte (codec and timestamp type).
    """
    if magic not in (0, 1):
        raise ValueError(f"magic must be 0 or 1, not {magic}")
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += _TIMESTAMP.pack(timestamp)
    for part in (key, value):
        if part is None:
            body += _LENGTH.pack(-1)
        else:
            body += _LENGTH.pack(len(part))
            body += part
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


def encode_legacy_message_set(
    records: Iterable[Sequence[Any]],
    *,
    magic: int = 1,
    base_offset: int = 0,
    compression: int = 0,
    timestamp_type: int = 0,
    log_append_time: int | None = None,
) -> bytes:
    """Encode records as a legacy message set (mainly for tests).

    Arguments:
        records: ``(timestamp, key, value)`` triples; offsets are consecutive from
            ``base_offset``.  Timestamps are ignored for magic 0.
        magic (int): 0 or 1.
        base_offset (int): offset of the first record.
        compression (int): a ``CODEC_*`` number; with a codec the records are wrapped in a
            single compressed message whose offset is the last record's offset (inner
            offsets are relative for magic 1 and absolute for magic 0).
        timestamp_type (int): 0 CreateTime, 1 LogAppendTime (magic 1 only); with
            LogAppendTime the (wrapper) messages carry ``log_append_time``.
        log_append_time (int | None): the log append time for ``timestamp_type=1``.
    """
    items = [tuple(r) for r in records]
    ts_bit = 0x08 if (magic == 1 and timestamp_type == 1) else 0
    lat = -1 if log_append_time is None else log_append_time
    if compression == 0:
        return b"".join(
            encode_legacy_message(
                base_offset + i,
                magic=magic,
                key=key,
                value=value,
                timestamp=lat if ts_bit else ts,
                attributes=ts_bit,
            )
            for i, (ts, key, value) in enumerate(items)
        )
    if not items:
        return b""
    inner = b"".join(
        encode_legacy_message(
            i if magic == 1 else base_offset + i,
            magic=magic,
            key=key,
            value=value,
            timestamp=ts,
        )
        for i, (ts, key, value) in enumerate(items)
    )
    wrapper_ts = lat if ts_bit else max(ts for ts, _, _ in items)
    return encode_legacy_message(
        base_offset + len(items) - 1,
        magic=magic,
        key=None,
        value=compress(compression, inner),
        timestamp=wrapper_ts,
        attributes=compression | ts_bit,
    )
