"""The answers and arguments of the admin calls about replicas, log directories and
leader elections (Java's ``Admin`` has them; aiokafka does not):
:class:`LogDirDescription`, :class:`ReplicaInfo`, :class:`PartitionReassignment` and
:class:`ElectionType`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from rackafka.errors import KafkaError
from rackafka.structs import TopicPartition

__all__ = ["ElectionType", "LogDirDescription", "PartitionReassignment", "ReplicaInfo"]


@dataclass(frozen=True)
class ReplicaInfo:
    """A replica in a log directory (:meth:`~rackafka.admin.AIOKafkaAdminClient.describe_log_dirs`).

    Attributes:
        size: the size of its log segments, in bytes.
        offset_lag: how far its log end offset is behind the high watermark (for a
            future replica: behind the current replica's log end offset).
        is_future: whether it is a future replica, being moved to this directory
            (``AlterReplicaLogDirs``), that will replace the current one.
    """

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    """A log directory of a broker (:meth:`~rackafka.admin.AIOKafkaAdminClient.describe_log_dirs`).

    Attributes:
        error: ``None``, or the error class of a directory the broker cannot use (for
            example :exc:`~rackafka.errors.KafkaStorageError` for an offline one).
        replicas: the replicas it holds, by partition.
        total_bytes: the size of the volume it is on, in bytes (``None``: the broker
            does not say, before Kafka 3.3).
        usable_bytes: the bytes free for the broker on that volume (``None`` likewise).
    """

    error: type[KafkaError] | None
    replicas: dict[TopicPartition, ReplicaInfo] = field(default_factory=dict)
    total_bytes: int | None = None
    usable_bytes: int | None = None


@dataclass(frozen=True)
class PartitionReassignment:
    """A reassignment in progress
    (:meth:`~rackafka.admin.AIOKafkaAdminClient.list_partition_reassignments`).

    Attributes:
        replicas: the partition's replicas now, the ones being added included.
        adding_replicas: the replicas being added (catching up).
        removing_replicas: the replicas to remove once the new ones are in sync.
    """

    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


class ElectionType(IntEnum):
    """The kind of leader election of
    :meth:`~rackafka.admin.AIOKafkaAdminClient.elect_leaders` (Kafka's codes)."""

    #: Make the preferred replica (the first of the assignment) the leader, if in sync.
    PREFERRED = 0
    #: Elect a leader among the in-sync replicas, else among any live replica (may lose
    #: records): for a partition without an in-sync replica.
    UNCLEAN = 1
