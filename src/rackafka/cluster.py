"""What the client knows of the cluster: brokers with racks, topics, leaders, epochs.

:class:`ClusterMetadata` is plain data, updated from Metadata responses (and, for
KIP-951, from the leader hints in Fetch responses).  Every change bumps
:attr:`ClusterMetadata.version` and notifies the listeners.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rackafka.errors import for_code, is_retriable
from rackafka.structs import BrokerMetadata, PartitionMetadata, TopicPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Broker:
    """A broker: id, address and rack (``None`` when it has none)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    def to_broker_metadata(self) -> BrokerMetadata:
        return BrokerMetadata(self.node_id, self.host, self.port, self.rack)


@dataclass(frozen=True)
class PartitionInfo:
    """One partition as metadata describes it."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error_code: int = 0

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass
class ClusterMetadata:
    """A snapshot of cluster metadata that is updated in place."""

    brokers: dict[int, Broker] = field(default_factory=dict)
    controller_id: int = -1
    cluster_id: str | None = None
    partitions: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)
    topic_ids: dict[str, Any] = field(default_factory=dict)
    internal_topics: set[str] = field(default_factory=set)
    #: Topics whose last metadata carried an error, with its code.
    topic_errors: dict[str, int] = field(default_factory=dict)
    version: int = 0
    updated_at: float = 0.0
    _listeners: list[Callable[[ClusterMetadata], None]] = field(default_factory=list, repr=False)

    @property
    def _brokers(self) -> dict[int, Broker]:
        """aiokafka's name for :attr:`brokers` (node id -> broker), which code written for
        aiokafka reads through a client's ``cluster``."""
        return self.brokers

    # -- updates -----------------------------------------------------------------

    def add_listener(self, listener: Callable[[ClusterMetadata], None]) -> None:
        """Call ``listener(metadata)`` after every change."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[ClusterMetadata], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _changed(self) -> None:
        self.version += 1
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:  # pragma: no cover - a listener bug must not break updates
                log.exception("metadata listener failed")

    def update(self, response: Any, *, all_topics: bool = True) -> None:
        """Apply a Metadata response.

        With ``all_topics`` the response describes every topic of interest and
        topics missing from it are forgotten; otherwise only the topics it
        names are replaced.
        """
        self.brokers = {
            b.node_id: Broker(b.node_id, b.host, b.port, b.rack or None) for b in response.brokers
        }
        self.controller_id = response.controller_id
        self.cluster_id = response.cluster_id
        partitions: dict[str, dict[int, PartitionInfo]] = (
            {} if all_topics else dict(self.partitions)
        )
        errors: dict[str, int] = {} if all_topics else dict(self.topic_errors)
        for t in response.topics:
            name = t.name
            if not name:
                continue
            if t.error_code:
                errors[name] = t.error_code
                # Keep what we knew: a transient error must not drop the partitions.
                if name in self.partitions and is_retriable(for_code(t.error_code)):
                    partitions[name] = self.partitions[name]
                else:
                    partitions.pop(name, None)
                continue
            errors.pop(name, None)
            self.topic_ids[name] = t.topic_id
            if t.is_internal:
                self.internal_topics.add(name)
            partitions[name] = {
                p.partition_index: PartitionInfo(
                    name,
                    p.partition_index,
                    p.leader_id,
                    p.leader_epoch,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    tuple(p.offline_replicas),
                    p.error_code,
                )
                for p in t.partitions
            }
        self.partitions = partitions
        self.topic_errors = errors
        self.updated_at = time.monotonic()
        self._changed()

    def update_leader(self, tp: TopicPartition, leader: int, leader_epoch: int) -> bool:
        """Move ``tp`` to a new leader learnt outside Metadata (KIP-951).

        Applied only when ``leader_epoch`` is newer than the one known.
        Returns whether anything changed.
        """
        info = self.partition(tp)
        if info is None or leader < 0 or leader_epoch <= info.leader_epoch:
            return False
        self.partitions[tp.topic][tp.partition] = PartitionInfo(
            info.topic,
            info.partition,
            leader,
            leader_epoch,
            info.replicas,
            info.isr,
            info.offline_replicas,
            0,
        )
        self._changed()
        return True

    def add_brokers(self, brokers: Iterable[Broker]) -> None:
        """Add or update brokers learnt outside Metadata (KIP-951 node endpoints)."""
        changed = False
        for b in brokers:
            if self.brokers.get(b.node_id) != b:
                self.brokers[b.node_id] = b
                changed = True
        if changed:
            self._changed()

    # -- queries -----------------------------------------------------------------

    def broker(self, node_id: int) -> Broker | None:
        """The broker with ``node_id``, if metadata lists it."""
        return self.brokers.get(node_id)

    def rack_of(self, node_id: int) -> str | None:
        """The rack of ``node_id`` (``None`` if unknown or rackless)."""
        b = self.brokers.get(node_id)
        return b.rack if b is not None else None

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        """Metadata of one partition, if known."""
        parts = self.partitions.get(tp.topic)
        return parts.get(tp.partition) if parts is not None else None

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The leader of ``tp``, or ``None`` when unknown or leaderless."""
        info = self.partition(tp)
        if info is None or info.leader < 0:
            return None
        return info.leader

    def topics(self, exclude_internal: bool = True) -> set[str]:
        """Names of the known topics."""
        names = set(self.partitions)
        return names - self.internal_topics if exclude_internal else names

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """Partition ids of ``topic``, or ``None`` when the topic is unknown."""
        parts = self.partitions.get(topic)
        return set(parts) if parts is not None else None

    def partition_metadata(self, tp: TopicPartition) -> PartitionMetadata | None:
        """Partition metadata in aiokafka's struct."""
        info = self.partition(tp)
        if info is None:
            return None
        return PartitionMetadata(
            info.topic,
            info.partition,
            info.leader,
            list(info.replicas),
            list(info.isr),
            for_code(info.error_code) if info.error_code else None,
        )
