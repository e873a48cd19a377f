"""Record data: record batches v2, legacy message sets v0/v1, CRCs and compression.

The consumer reads the ``records`` bytes of each fetched partition with
:func:`iter_batches`, looks at the batch header fields (``is_control``,
``is_transactional``, ``producer_id``, ``base_offset``, ``next_offset``) and turns the
records of the batches it keeps into consumer records with :meth:`RecordBatch.records`::

    from functools import partial
    from rackafka.records import iter_batches

    for batch in iter_batches(data, topic="t", partition=0):
        if batch.is_control:
            continue
        records = batch.records(partial(ConsumerRecord, "t", 0))

A record is given as ``(offset, timestamp, timestamp_type, key, value, checksum,
serialized_key_size, serialized_value_size, headers)``; :data:`RECORD_FIELDS` names them.
"""

from __future__ import annotations

from rackafka.records.builder import BatchBuilder, encode_batch, encode_control_batch
from rackafka.records.compression import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NAMES,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    compress,
    decompress,
)
from rackafka.records.default_records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CREATE_TIME,
    LOG_APPEND_TIME,
    RecordBatch,
    RecordFactory,
)
from rackafka.records.legacy_records import (
    LegacyRecordBatch,
    encode_legacy_message,
    encode_legacy_message_set,
)
from rackafka.records.reader import AnyBatch, iter_batches

__all__ = [
    "AnyBatch",
    "BatchBuilder",
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NAMES",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "LegacyRecordBatch",
    "RECORD_FIELDS",
    "RecordBatch",
    "RecordFactory",
    "compress",
    "decompress",
    "encode_batch",
    "encode_control_batch",
    "encode_legacy_message",
    "encode_legacy_message_set",
    "iter_batches",
]

#: Names of the values of a decoded record, in order.
RECORD_FIELDS = (
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "checksum",
    "serialized_key_size",
    "serialized_value_size",
    "headers",
)
