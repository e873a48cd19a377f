"""The consumer protocol's member metadata and assignment, as aiokafka's custom assignors
see them (``aiokafka.coordinator.protocol``)."""

from __future__ import annotations

from typing import NamedTuple

from rackafka.structs import TopicPartition

__all__ = ["ConsumerProtocolMemberAssignment", "ConsumerProtocolMemberMetadata"]


class ConsumerProtocolMemberMetadata(NamedTuple):
    """What a member announces when it joins: its topics and its assignor's user data."""

    version: int
    subscription: list[str]
    user_data: bytes | None


class ConsumerProtocolMemberAssignment(NamedTuple):
    """A member's assignment: ``assignment`` is a list of ``(topic, [partition, ...])``."""

    version: int
    assignment: list[tuple[str, list[int]]]
    user_data: bytes | None

    def partitions(self) -> list[TopicPartition]:
        """Every assigned partition."""
        return [TopicPartition(topic, p) for topic, parts in self.assignment for p in parts]
