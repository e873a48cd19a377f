"""What :meth:`~rackafka.admin.AIOKafkaAdminClient.describe_groups` answers: a
:class:`ConsumerGroupDescription` per group (Java's ``ConsumerGroupDescription``), of the
classic protocol or of the KIP-848 ``consumer`` protocol, with a
:class:`MemberDescription` per member."""

from __future__ import annotations

from dataclasses import dataclass, field

from rackafka.structs import TopicPartition

__all__ = ["ConsumerGroupDescription", "MemberDescription"]


@dataclass(frozen=True)
class MemberDescription:
    """A member of a consumer group.

    Attributes:
        member_id: its id, given by the coordinator (classic) or the member (KIP-848).
        group_instance_id: its static membership id (KIP-345), or ``None``.
        client_id: the ``client_id`` of its client.
        host: the address the coordinator saw it connect from (``/127.0.0.1``).
        rack: its rack: the ``rack_id`` a KIP-848 member sends, the rack in a classic
            member's subscription (version 3, KIP-881), or ``None`` when not sent.
        assignment: the partitions it owns now.
        target_assignment: the partitions the coordinator is moving it to (KIP-848
            groups; ``None`` for classic ones).
        member_epoch: its epoch (KIP-848 groups; ``None`` for classic ones).
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    rack: str | None
    assignment: frozenset[TopicPartition]
    target_assignment: frozenset[TopicPartition] | None = None
    member_epoch: int | None = None


@dataclass(frozen=True)
class ConsumerGroupDescription:
    """A consumer group as its coordinator describes it.

    Attributes:
        group_id: the group.
        is_simple_consumer_group: whether it is a group without a protocol (its
            members commit offsets only, they do not join; classic groups only).
        group_type: ``"classic"`` or ``"consumer"`` (the KIP-848 protocol).
        state: its state as the broker names it (``"Stable"``, ``"Empty"``,
            ``"PreparingRebalance"``, ``"Reconciling"``, ...).
        partition_assignor: the assignor in use: the protocol the members chose
            (classic) or the broker's assignor (``"uniform"``, ``"range"``).
        coordinator: the id of the broker that coordinates it.
        members: its members.
        group_epoch: the epoch of the group (KIP-848 groups; ``None`` for classic).
        assignment_epoch: the epoch of its target assignment (KIP-848 groups;
            ``None`` for classic).
    """

    group_id: str
    is_simple_consumer_group: bool
    group_type: str
    state: str
    partition_assignor: str
    coordinator: int
    members: list[MemberDescription] = field(default_factory=list)
    group_epoch: int | None = None
    assignment_epoch: int | None = None
