"""The producer's settings: the shared client table (:data:`rackafka.config.CLIENT`) and the
producer's own (acks, batching, idempotence, transactions), with the rules between them.

:class:`~rackafka.AIOKafkaProducer` and the Spark sink check their arguments with
:data:`PRODUCER`; the defaults are aiokafka 0.14's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rackafka._config import INT32_MAX
from rackafka.config import CLIENT, Callback, Choice, Count, Flag, Setting, Settings, Text
from rackafka.errors import KafkaConfigurationError
from rackafka.producer.partitioner import DefaultPartitioner
from rackafka.records.compression import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
)

__all__ = ["CODECS", "DEFAULT_PARTITIONER", "MISSING", "PRODUCER"]

#: ``compression_type`` values and their codecs.
CODECS = {
    None: CODEC_NONE,
    "gzip": CODEC_GZIP,
    "snappy": CODEC_SNAPPY,
    "lz4": CODEC_LZ4,
    "zstd": CODEC_ZSTD,
}
#: The ``partitioner`` default (``rack_aware_partitioning`` needs it).
DEFAULT_PARTITIONER = DefaultPartitioner()
#: ``acks`` not given: 1, or ``"all"`` with idempotence (as aiokafka).
MISSING: Any = object()


class _Acks(Choice):
    def check(self, value: Any, name: str) -> Any:
        return MISSING if value is MISSING else super().check(value, name)


def _producer_rules(s: Settings, shown: Callable[[str], str]) -> None:
    aware = s["rack_aware_partitioning"]
    if aware and s["client_rack"] is None:
        raise KafkaConfigurationError(
            f"{shown('rack_aware_partitioning')}=True needs {shown('client_rack')}"
        )
    if aware and s["partitioner"] is not DEFAULT_PARTITIONER:
        raise KafkaConfigurationError(
            f"{shown('rack_aware_partitioning')} applies to the default partitioner only: "
            f"leave {shown('partitioner')} at its default"
        )
    if s["transactional_id"] is not None:
        s["enable_idempotence"] = True  # as aiokafka and Kafka: transactions are idempotent
    else:
        s["transaction_timeout_ms"] = INT32_MAX  # as aiokafka
    acks = s["acks"]
    if s["enable_idempotence"]:
        if acks is MISSING:
            acks = -1
        elif acks not in (-1, "all"):
            raise KafkaConfigurationError(
                f"{shown('acks')}={acks!r} not supported with "
                f"{shown('enable_idempotence')}=True: use 'all'"
            )
    if acks is MISSING:
        acks = 1
    s["acks"] = -1 if acks == "all" else acks


#: Every setting of the producer: the shared ones and these.
PRODUCER = CLIENT.extend(
    [
        Setting(
            "acks",
            _Acks(0, 1, -1, "all", text={"-1": "all", "0": 0, "1": 1}),
            MISSING,
            "acks",
        ),
        Setting("key_serializer", Callback(), None, "key.serializer"),
        Setting("value_serializer", Callback(), None, "value.serializer"),
        Setting("compression_type", Choice(*CODECS, text={"none": None}), None, "compression.type"),
        Setting("max_batch_size", Count(), 16384, "batch.size"),
        Setting("partitioner", Callback(none=False), DEFAULT_PARTITIONER, "partitioner.class"),
        Setting("max_request_size", Count(), 1048576, "max.request.size"),
        Setting("linger_ms", Count(zero=True), 0, "linger.ms"),
        Setting("enable_idempotence", Flag(strict=True), False, "enable.idempotence"),
        Setting("transactional_id", Text(), None, "transactional.id"),
        Setting("transaction_timeout_ms", Count(), 60000, "transaction.timeout.ms"),
        Setting("rack_aware_partitioning", Flag(strict=True), False),
    ],
    [_producer_rules],
)
