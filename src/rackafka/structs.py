"""Plain data types shared by rackafka's public API.

The names and fields match :mod:`aiokafka.structs` (aiokafka 0.14), so code written for
aiokafka builds, unpacks and compares these objects the same way. The tuples keep
aiokafka's fields in aiokafka's order; where rackafka adds a field it comes last and has a
default, so positional construction and unpacking by aiokafka's fields keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

from rackafka.errors import KafkaError

__all__ = [
    "BrokerMetadata",
    "ConsumerRecord",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "PartitionMetadata",
    "RecordMetadata",
    "SubscriptionPattern",
    "TopicPartition",
]


class TopicPartition(NamedTuple):
    """A topic and a partition of it.

    Hashable and ordered (by topic, then partition), so it serves as a dictionary key
    and sorts naturally.
    """

    topic: str
    "The topic name"

    partition: int
    "The partition id"


def as_topic_partition(tp: Any) -> TopicPartition:
    """``tp`` as rackafka's :class:`TopicPartition`.

    aiokafka's ``TopicPartition`` and any other ``(topic, partition)`` named tuple with
    ``topic`` and ``partition`` fields are accepted (they compare and hash like ours), so
    code that mixes aiokafka's structures with rackafka's clients keeps working.

    Raises:
        TypeError: ``tp`` is not such a named tuple.
    """
    if type(tp) is TopicPartition:
        return tp
    if (
        isinstance(tp, tuple)
        and len(tp) == 2
        and hasattr(tp, "topic")
        and hasattr(tp, "partition")
        and isinstance(tp[0], str)
        and isinstance(tp[1], int)
        and not isinstance(tp[1], bool)
    ):
        return TopicPartition(tp[0], tp[1])
    raise TypeError(f"partitions must be TopicPartition namedtuples, not {tp!r}")


def offsets_to_commit(offsets: Any) -> dict[TopicPartition, OffsetAndMetadata]:
    """The offsets given to ``commit()``, checked as aiokafka checks them: a non-empty dict,
    :class:`TopicPartition` keys (``TypeError``), values an offset or an
    ``(offset, metadata)`` pair with a ``str`` metadata (``TypeError``), offsets ``>= 0``
    (``ValueError``)."""
    if not offsets or not isinstance(offsets, dict):
        raise ValueError(offsets)
    out = {}
    for key, value in offsets.items():
        try:
            tp = as_topic_partition(key)
        except TypeError:
            raise TypeError("Key should be TopicPartition instance") from None
        if isinstance(value, int) and not isinstance(value, bool):
            offset, metadata = value, ""
        else:
            try:
                offset, metadata = value
            except Exception as exc:
                raise ValueError(offsets) from exc
            if not isinstance(metadata, str):
                raise TypeError("Metadata should be a string")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset for {tp} must be an int >= 0, not {offset!r}")
        out[tp] = OffsetAndMetadata(offset, metadata)
    return out


class BrokerMetadata(NamedTuple):
    """A broker of the cluster, as the cluster metadata describes it."""

    nodeId: int | str  # noqa: N815 - aiokafka's field name
    "The broker id"

    host: str
    "The host name of the broker"

    port: int
    "The port of the broker"

    rack: str | None
    """The rack of the broker (``broker.rack``), or ``None`` if it has none.

    Rack-aware features compare it with the client's ``client_rack``, for example
    ``"us-east-1a"``.
    """


class PartitionMetadata(NamedTuple):
    """The state of a partition as a metadata response describes it."""

    topic: str
    "The topic of the partition"

    partition: int
    "The partition id"

    leader: int
    "The id of the broker that leads the partition (``-1`` if it has no leader)"

    replicas: list[int]
    "The ids of the brokers that hold a replica of the partition"

    isr: list[int]
    "The ids of the brokers whose replicas are in sync with the leader"

    error: KafkaError | type[KafkaError] | None
    """The error the metadata response reported for this partition, or ``None``.

    Usually the class that :func:`rackafka.errors.for_code` returns for the partition's
    error code (its ``retriable`` and ``invalid_metadata`` flags tell what to do), or an
    instance of such a class.
    """

    leader_epoch: int = -1
    "The epoch of the current leader (``-1`` if the broker did not report one)"

    offline_replicas: Sequence[int] = ()
    "The ids of the brokers whose replica of the partition is offline"


class OffsetAndMetadata(NamedTuple):
    """An offset to commit, with a metadata string.

    The offset commit API lets a consumer store a string next to the offset, for
    example to record which process committed it or when.

    It has exactly aiokafka's two fields, so ``offset, metadata = committed`` keeps
    working, just as a plain ``(offset, metadata)`` tuple does.
    """

    offset: int
    "The offset to commit: the offset of the next record to consume"

    metadata: str
    'The metadata string (not ``None``; use ``""`` for none)'


class OffsetAndTimestamp(NamedTuple):
    """An offset found by timestamp, with the timestamp of its record."""

    offset: int
    "The offset of the first record whose timestamp is at least the requested one"

    timestamp: int | None
    "The timestamp of that record in milliseconds (``None`` with very old brokers)"


class RecordMetadata(NamedTuple):
    """Where the broker stored a produced record (the result of ``producer.send()``)."""

    topic: str
    "The topic name"

    partition: int
    "The partition id"

    topic_partition: TopicPartition
    "The topic and partition as a :class:`TopicPartition`"

    offset: int
    "The offset of the record in its partition"

    timestamp: int | None
    "The timestamp of the record in milliseconds (``None`` with very old brokers)"

    timestamp_type: int
    """The timestamp type: ``0`` if it is the producer's (``CreateTime``), ``1`` if the
    broker set it (``LogAppendTime``)."""

    log_start_offset: int | None
    "The first offset of the partition's log"


KT = TypeVar("KT")
VT = TypeVar("VT")


@dataclass
class ConsumerRecord(Generic[KT, VT]):
    """A record fetched by the consumer.

    The fields and their order are aiokafka's, so positional construction and
    attribute access work as with aiokafka. Records compare equal when all fields are
    equal; like aiokafka's they are not hashable, and (a plain dataclass, as aiokafka's)
    they take extra attributes, ``vars()``, weak references and pickling.
    """

    topic: str
    "The topic the record comes from"

    partition: int
    "The partition the record comes from"

    offset: int
    "The position of the record in its partition"

    timestamp: int
    "The timestamp of the record in milliseconds"

    timestamp_type: int
    """The timestamp type: ``0`` for ``CreateTime`` (set by the producer), ``1`` for
    ``LogAppendTime`` (set by the broker)"""

    key: KT | None
    "The key, deserialized if a key deserializer is configured (``None`` if it has none)"

    value: VT | None
    "The value, deserialized if a value deserializer is configured (``None`` for a tombstone)"

    checksum: int | None
    "Deprecated: the CRC of legacy (v0/v1) messages, ``None`` for record batches"

    serialized_key_size: int
    "The size of the serialized, uncompressed key in bytes (``-1`` if it has none)"

    serialized_value_size: int
    "The size of the serialized, uncompressed value in bytes (``-1`` if it has none)"

    headers: Sequence[tuple[str, bytes]]
    "The headers as ``(key, value)`` pairs"


@dataclass(frozen=True)
class SubscriptionPattern:
    """A topic regex that the group coordinator evaluates (KIP-848), as Java's
    ``SubscriptionPattern``.

    ``consumer.subscribe(pattern=SubscriptionPattern("orders-.*"))`` sends the regex in
    the member's heartbeats (``group_protocol="consumer"`` only); the coordinator matches
    it against every topic of the cluster, those created later included, and assigns
    the partitions of the matches.  The syntax is the broker's (RE2/J in Kafka), and a
    topic name must match as a whole.  A plain ``str`` pattern is matched by the
    consumer instead, with Python's ``re.match``, under either protocol.
    """

    pattern: str

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str) or not self.pattern:
            raise ValueError(f"a SubscriptionPattern needs a non-empty str, not {self.pattern!r}")
