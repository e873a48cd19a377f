"""Split the records of a fetched partition into batches."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final, Union

from rackafka.errors import CorruptRecordException
from rackafka.records._crc import crc32c
from rackafka.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from rackafka.records.default_records import (
    CRC_START,
    HEADER,
    HEADER_SIZE,
    RecordBatch,
    _where,
)
from rackafka.records.legacy_records import MIN_MESSAGE_SIZE, LegacyRecordBatch

__all__ = ["AnyBatch", "iter_batches"]

AnyBatch = Union[RecordBatch, LegacyRecordBatch]

_OFFSET_LENGTH: Final = struct.Struct(">qi")
_MIN_LENGTH: Final = MIN_MESSAGE_SIZE[0]  # smallest size after the length of any format
_V2_MIN_LENGTH: Final = HEADER_SIZE - 12


def iter_batches(
    data: bytes | bytearray | memoryview,
    *,
    check_crcs: bool = True,
    topic: str | None = None,
    partition: int | None = None,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[AnyBatch]:
    """Iterate over the record batches in the ``records`` bytes of a fetched partition.

    Batches of message format v2 are given as :class:`RecordBatch`; each top-level message
    of a legacy (v0/v1) message set as a :class:`LegacyRecordBatch`.  A batch that is cut
    at the end of ``data`` (a broker stops at the fetch size limit) ends the iteration
    silently; it is fetched again from its offset.

    Arguments:
        data: the records of one partition from a fetch response.
        check_crcs (bool): check the CRC of every batch (CRC32C for v2, CRC-32 for v0/v1
            messages) before it is given.
        topic (str | None): the topic, for error messages.
        partition (int | None): the partition, for error messages.
        max_decompressed_size (int): the largest size a compressed batch may inflate to;
            past it, decoding raises :exc:`~rackafka.errors.RecordTooLargeError`.

    Raises:
        CorruptRecordException: a complete batch is invalid (bad CRC, bad magic, invalid
            sizes or records); the message names the topic-partition and the offset.
        UnsupportedCodecError: a legacy message uses an unknown codec (v2 batches raise
            it from :meth:`RecordBatch.records`).
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    total = len(data)
    pos = 0
    unpack_offset_length = _OFFSET_LENGTH.unpack_from
    unpack_header = HEADER.unpack_from
    crc = crc32c
    view = memoryview(data)
    while total - pos >= 12:
        offset, length = unpack_offset_length(data, pos)
        if length < _MIN_LENGTH:
            raise CorruptRecordException(
                f"{_where(topic, partition, offset)}: record batch size {length} is too small"
            )
        end = pos + 12 + length
        if end > total:
            return  # a truncated last batch
        magic = data[pos + 16]
        if magic == 2:
            if length < _V2_MIN_LENGTH:
                raise CorruptRecordException(
                    f"{_where(topic, partition, offset)}: record batch size {length} is "
                    f"smaller than a v2 batch header"
                )
            header = unpack_header(data, pos)
            if check_crcs:
                computed = crc(view[pos + CRC_START : end])
                if computed != header[4]:
                    raise CorruptRecordException(
                        f"{_where(topic, partition, offset)}: record batch CRC mismatch "
                        f"(stored {header[4]:#010x}, computed {computed:#010x})"
                    )
            count = header[12]
            if count < 0 or (header[5] & 0x07 == 0 and count * 7 > length - _V2_MIN_LENGTH):
                raise CorruptRecordException(
                    f"{_where(topic, partition, offset)}: record batch of {length + 12} "
                    f"bytes cannot hold {count} records"
                )
            yield RecordBatch(data, pos, header, topic, partition, max_decompressed_size)
        elif magic == 0 or magic == 1:
            yield LegacyRecordBatch(
                data[pos:end],
                0,
                check_crcs=check_crcs,
                topic=topic,
                partition=partition,
                max_decompressed_size=max_decompressed_size,
            )
        else:
            raise CorruptRecordException(
                f"{_where(topic, partition, offset)}: unknown record batch magic {magic}"
            )
        pos = end
