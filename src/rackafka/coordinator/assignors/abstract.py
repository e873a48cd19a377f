"""``aiokafka.coordinator.assignors.abstract``: the base class of aiokafka-style assignors.

A custom assignor written for aiokafka keeps its code: subclass
:class:`AbstractPartitionAssignor` from here, and pass the class (or an instance) in
``partition_assignment_strategy``. rackafka calls it as aiokafka does: :meth:`metadata`
when the member joins, :meth:`assign` on the group leader, :meth:`on_assignment` on every
member. rackafka's built-in assignors count as ``AbstractPartitionAssignor`` too.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rackafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from rackafka.group.assignors._model import AssignmentInput, PartitionAssignor
from rackafka.structs import TopicPartition

__all__ = ["AbstractPartitionAssignor", "AssignmentCluster", "adapt_assignor"]


class AbstractPartitionAssignor(abc.ABC):
    """The interface of an aiokafka partition assignor (class-level methods, as aiokafka's)."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The protocol name the members announce (the same on every member)."""

    @classmethod
    @abc.abstractmethod
    def assign(
        cls, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """On the group leader: give each member its partitions.

        Arguments:
            cluster: the cluster's topics (``partitions_for_topic(topic)``, ``topics()``).
            members: each member's :class:`ConsumerProtocolMemberMetadata` by member id.

        Returns:
            each member's :class:`ConsumerProtocolMemberAssignment` by member id.
        """

    @classmethod
    @abc.abstractmethod
    def metadata(cls, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        """What this member announces when it joins (its ``user_data`` reaches the leader)."""

    @classmethod
    @abc.abstractmethod
    def on_assignment(cls, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Called on every member with its new assignment."""


# rackafka's own assignors are assignors in aiokafka's sense too.
AbstractPartitionAssignor.register(PartitionAssignor)  # type: ignore[type-abstract]


class AssignmentCluster:
    """What an aiokafka-style :meth:`~AbstractPartitionAssignor.assign` sees of the cluster:
    the subscribed topics and their partitions at the time of the rebalance."""

    def __init__(self, data: AssignmentInput) -> None:
        self._partitions = {
            topic: {p.partition for p in parts} for topic, parts in data.partitions.items()
        }

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """The partition ids of ``topic``, ``None`` when it is unknown."""
        parts = self._partitions.get(topic)
        return set(parts) if parts is not None else None

    def available_partitions_for_topic(self, topic: str) -> set[int] | None:
        """As :meth:`partitions_for_topic`."""
        return self.partitions_for_topic(topic)

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        """The known topics."""
        return set(self._partitions)


class _Adapter(PartitionAssignor):
    """Runs an aiokafka-style assignor where rackafka expects a :class:`PartitionAssignor`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = str(inner.name)  # type: ignore[misc]

    def assign(self, data: AssignmentInput) -> dict[str, list[TopicPartition]]:
        members = {
            m.member_id: ConsumerProtocolMemberMetadata(0, list(m.topics), m.user_data or b"")
            for m in data.members
        }
        result = self.inner.assign(AssignmentCluster(data), members)
        out: dict[str, list[TopicPartition]] = {m.member_id: [] for m in data.members}
        for member_id, assignment in dict(result).items():
            out[member_id] = sorted(
                TopicPartition(topic, int(p))
                for topic, parts in assignment.assignment
                for p in parts
            )
        return out

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        meta = self.inner.metadata(list(topics))
        return getattr(meta, "user_data", None)

    def on_assignment(self, assignment: Sequence[TopicPartition], generation_id: int) -> None:
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(assignment):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        self.inner.on_assignment(ConsumerProtocolMemberAssignment(0, list(by_topic.items()), b""))

    def __repr__(self) -> str:
        return f"<aiokafka-style assignor {self.inner!r}>"


def adapt_assignor(item: Any) -> PartitionAssignor | None:
    """A :class:`PartitionAssignor` running ``item`` when it is an aiokafka-style assignor
    (a subclass or instance of this module's or aiokafka's ``AbstractPartitionAssignor``
    that is not one of rackafka's own), else ``None``."""
    cls = item if isinstance(item, type) else type(item)
    if issubclass(cls, PartitionAssignor):
        return None
    if issubclass(cls, AbstractPartitionAssignor) or (
        # one subclassing aiokafka's own AbstractPartitionAssignor
        callable(getattr(item, "metadata", None))
        and callable(getattr(item, "assign", None))
        and callable(getattr(item, "on_assignment", None))
        and isinstance(getattr(item, "name", None), str)
    ):
        return _Adapter(item)
    return None
