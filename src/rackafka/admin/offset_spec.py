"""What :meth:`~rackafka.admin.AIOKafkaAdminClient.list_offsets` asks for each partition
(:class:`OffsetSpec`, Java's ``OffsetSpec``) and what it answers
(:class:`ListOffsetsResultInfo`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

__all__ = ["ListOffsetsResultInfo", "OffsetSpec"]

_LATEST = -1
_EARLIEST = -2
_MAX_TIMESTAMP = -3
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class OffsetSpec:
    """Which offset of a partition to look up; made by one of the class methods.

    Attributes:
        timestamp: the ListOffsets query: a timestamp in milliseconds (>= 0), or -1
            (latest), -2 (earliest), -3 (the record with the largest timestamp).
    """

    timestamp: int

    @classmethod
    def earliest(cls) -> OffsetSpec:
        """The first offset of the partition (its log start offset)."""
        return cls(_EARLIEST)

    @classmethod
    def latest(cls) -> OffsetSpec:
        """The offset after the last record (the high watermark; with
        ``isolation_level="read_committed"``, the last stable offset)."""
        return cls(_LATEST)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        """The offset and timestamp of the record with the largest timestamp (KIP-734;
        brokers of Kafka 3.0 and later)."""
        return cls(_MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        """The first offset whose record's timestamp is at or after ``timestamp_ms``
        (milliseconds since the epoch); offset -1 when there is none.

        Raises:
            TypeError, ValueError: ``timestamp_ms`` is not an int >= 0.
        """
        if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int):
            raise TypeError(f"timestamp_ms must be an int, not {timestamp_ms!r}")
        if not 0 <= timestamp_ms <= _INT64_MAX:
            raise ValueError(f"timestamp_ms must be >= 0, not {timestamp_ms}")
        return cls(timestamp_ms)

    def __repr__(self) -> str:
        names = {_LATEST: "latest", _EARLIEST: "earliest", _MAX_TIMESTAMP: "max_timestamp"}
        if self.timestamp in names:
            return f"OffsetSpec.{names[self.timestamp]}()"
        return f"OffsetSpec.for_timestamp({self.timestamp})"


class ListOffsetsResultInfo(NamedTuple):
    """The offset :meth:`~rackafka.admin.AIOKafkaAdminClient.list_offsets` found for a
    partition (Java's ``ListOffsetsResultInfo``)."""

    offset: int
    "The offset; -1 when no record has a timestamp at or after the one asked for"
    timestamp: int
    "The timestamp of the record at ``offset``; -1 for earliest and latest"
    leader_epoch: int | None
    "The leader epoch of the record at ``offset``; ``None`` when unknown"
