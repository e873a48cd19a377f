"""Plain data the assignors work on, the assignor base class, and shared helpers."""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rackafka.structs import TopicPartition

__all__ = [
    "AssignmentInput",
    "MemberSubscription",
    "PartitionAssignor",
    "PartitionReplicas",
    "RebalanceProtocol",
    "common_rebalance_protocol",
]


class RebalanceProtocol(enum.IntEnum):
    """The rebalance protocols of the classic consumer group (KIP-429).

    ``EAGER``: every member gives up all its partitions before joining.
    ``COOPERATIVE``: members keep their partitions through the rebalance and only
    give up those the new assignment takes away; a partition that moves is
    revoked in one rebalance and assigned in the next.
    """

    EAGER = 0
    COOPERATIVE = 1


def common_rebalance_protocol(assignors: Iterable[PartitionAssignor]) -> RebalanceProtocol:
    """The protocol a consumer uses with these assignors: the highest all support.

    Raises:
        ValueError: no assignor is given, or they support no protocol in common.
    """
    common: set[RebalanceProtocol] | None = None
    for assignor in assignors:
        supported = {RebalanceProtocol(p) for p in assignor.supported_protocols}
        common = supported if common is None else common & supported
    if not common:
        raise ValueError("the assignors support no rebalance protocol in common")
    return max(common)


@dataclass(frozen=True)
class PartitionReplicas:
    """A partition of a topic and the brokers that hold its replicas.

    Rack-aware assignment uses every replica (offline and out-of-sync ones too,
    as Kafka does), on the assumption that they rejoin soon.
    """

    partition: int
    "The partition id"

    replicas: Sequence[int] = ()
    "The ids of the brokers holding a replica of the partition"

    def __post_init__(self) -> None:
        if not isinstance(self.partition, int) or self.partition < 0:
            raise ValueError(f"partition must be an int >= 0, not {self.partition!r}")
        object.__setattr__(self, "replicas", tuple(self.replicas))


@dataclass(frozen=True)
class MemberSubscription:
    """What a group member told the leader when it joined.

    The fields match ConsumerProtocolSubscription (v3): subscribed topics,
    owned partitions (KIP-429), generation and rack (KIP-881), plus the
    member's ``group.instance.id`` from the JoinGroup response.
    """

    member_id: str
    "The member id the coordinator gave the member"

    topics: Sequence[str]
    "The topics the member subscribes to"

    rack_id: str | None = None
    "The member's ``client_rack`` (``None`` or ```` if it has none)"

    owned_partitions: Sequence[TopicPartition] = ()
    "The partitions the member owns now (cooperative protocol)"

    generation_id: int = -1
    "The generation in which the member got ``owned_partitions`` (-1: unknown)"

    group_instance_id: str | None = None
    "The static member id (``group.instance.id``), if any"

    user_data: bytes | None = None
    """The assignor's own subscription data, if the member sent any.

    The ``sticky`` assignor reads the member's previous assignment and
    generation from it (as Kafka's ``StickyAssignor`` does); the other built-in
    assignors ignore it.
    """

    def __post_init__(self) -> None:
        if not isinstance(self.member_id, str):
            raise TypeError(f"member_id must be a str, not {type(self.member_id).__name__}")
        if isinstance(self.topics, str):
            raise TypeError("topics must be a sequence of topic names, not a str")
        object.__setattr__(self, "topics", tuple(self.topics))
        owned = []
        for tp in self.owned_partitions:
            topic, partition = tp
            owned.append(TopicPartition(topic, partition))
        object.__setattr__(self, "owned_partitions", tuple(owned))

    @property
    def rack(self) -> str | None:
        """The member's rack, ``None`` if it has none (an empty rack id counts as none)."""
        return self.rack_id or None


@dataclass(frozen=True)
class AssignmentInput:
    """Everything an assignor needs: partitions with replicas, broker racks, members.

    Arguments:
        partitions: for each topic, its partitions and their replicas. Topics no
            member subscribes to are ignored; a subscribed topic that is missing
            (no metadata yet) or has no partitions gets no assignment.
        broker_racks: the rack of each broker id (``None`` when it has none);
            replicas on brokers missing here have no rack.
        members: the members of the group, each once.

    Raises:
        ValueError: a member id repeats, or a partition repeats within a topic.
    """

    partitions: Mapping[str, Sequence[PartitionReplicas]]
    broker_racks: Mapping[int, str | None]
    members: Sequence[MemberSubscription]
    _by_id: dict[str, MemberSubscription] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        members = tuple(self.members)
        object.__setattr__(self, "members", members)
        by_id: dict[str, MemberSubscription] = {}
        for m in members:
            if m.member_id in by_id:
                raise ValueError(f"member {m.member_id!r} appears more than once")
            by_id[m.member_id] = m
        object.__setattr__(self, "_by_id", by_id)
        for topic, parts in self.partitions.items():
            ids = [p.partition for p in parts]
            if len(set(ids)) != len(ids):
                raise ValueError(f"topic {topic!r} lists a partition more than once")

    def member(self, member_id: str) -> MemberSubscription:
        """The member with this id (``KeyError`` if there is none)."""
        return self._by_id[member_id]

    @classmethod
    def from_cluster(cls, cluster: Any, members: Iterable[MemberSubscription]) -> AssignmentInput:
        """Build the input from a :class:`rackafka.cluster.ClusterMetadata` snapshot.

        Only the topics the members subscribe to are taken.
        """
        members = tuple(members)
        wanted = {t for m in members for t in m.topics}
        partitions: dict[str, list[PartitionReplicas]] = {}
        for topic in sorted(wanted):
            infos = cluster.partitions.get(topic)
            if infos:
                partitions[topic] = [
                    PartitionReplicas(p, tuple(info.replicas)) for p, info in sorted(infos.items())
                ]
        racks = {int(b.node_id): b.rack for b in cluster.brokers.values()}
        return cls(partitions, racks, members)


class PartitionAssignor(abc.ABC):
    """Base of rackafka's partition assignors.

    The group leader runs the assignor the group agreed on. It mirrors
    aiokafka's ``AbstractPartitionAssignor``: :attr:`name`, :meth:`assign`, and
    the callbacks :meth:`subscription_user_data` (aiokafka's ``metadata``) and
    :meth:`on_assignment`. Unlike aiokafka's class-level methods these are
    instance methods, so consumers in one process never share assignor state.
    """

    #: The protocol name members announce in JoinGroup (as in Kafka).
    name: ClassVar[str]
    #: The rebalance protocols the assignor supports, lowest first.
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)
    #: The version of the assignment this assignor writes.
    version: ClassVar[int] = 0

    @abc.abstractmethod
    def assign(self, data: AssignmentInput) -> dict[str, list[TopicPartition]]:
        """Assign the subscribed partitions to the members.

        Arguments:
            data: the partitions (with replicas and broker racks) and the
                members' subscriptions.

        Returns:
            For every member id, its partitions, sorted. Members that get
            nothing map to an empty list.
        """

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        """The user data this member sends in its subscription (default none).

        Arguments:
            topics: the topics the member subscribes to.
        """
        return None

    def on_assignment(self, assignment: Sequence[TopicPartition], generation_id: int) -> None:
        """Called on each member when it receives its assignment.

        Arguments:
            assignment: the partitions assigned to this member.
            generation_id: the generation of the group the assignment belongs to.
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# -- helpers shared by the assignors ---------------------------------------------------


def member_order_key(member: MemberSubscription) -> tuple[int, str, str]:
    """Kafka's member order: static members first (by instance id), then by member id."""
    if member.group_instance_id is not None:
        return (0, member.group_instance_id, member.member_id)
    return (1, member.member_id, "")


def use_rack_aware_assignment(
    consumer_racks: set[str],
    partition_racks: set[str],
    racks_per_partition: Iterable[frozenset[str]],
) -> bool:
    """Whether rack-aware assignment can help.

    Kafka's test: some consumer has a rack that holds a replica, and not every
    partition has replicas on every rack that holds any replica. rackafka also
    assigns rack-aware when some partition has no replica in some consumer's
    rack (Kafka skips that case when all partitions have the same replica
    racks, e.g. all on rack ``a`` with consumers on ``a`` and ``b``).
    """
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    return any(
        racks != partition_racks or not consumer_racks <= racks for racks in racks_per_partition
    )


class Topology:
    """The subscribed topics of an :class:`AssignmentInput`, with replica racks.

    ``topics`` maps each topic that has partitions and at least one subscriber to
    its sorted partition ids; ``subscribers`` to its members in Kafka's member
    order; ``racks`` maps each partition to the racks of its replicas.
    """

    def __init__(self, data: AssignmentInput) -> None:
        self.data = data
        self.members: list[MemberSubscription] = sorted(data.members, key=member_order_key)
        self.member_ids: list[str] = [m.member_id for m in self.members]
        self.member_rack: dict[str, str | None] = {m.member_id: m.rack for m in self.members}
        subscribed: dict[str, list[str]] = {}
        for m in self.members:
            for t in dict.fromkeys(m.topics):
                subscribed.setdefault(t, []).append(m.member_id)
        self.topics: dict[str, list[int]] = {}
        self.subscribers: dict[str, list[str]] = {}
        self.racks: dict[TopicPartition, frozenset[str]] = {}
        for topic in sorted(subscribed):
            parts = data.partitions.get(topic)
            if not parts:
                continue
            ordered = sorted(parts, key=lambda p: p.partition)
            self.topics[topic] = [p.partition for p in ordered]
            self.subscribers[topic] = subscribed[topic]
            for p in ordered:
                racks = {data.broker_racks.get(r) for r in p.replicas}
                racks.discard(None)
                self.racks[TopicPartition(topic, p.partition)] = frozenset(
                    r for r in racks if r is not None
                )
        self.member_topics: dict[str, set[str]] = {
            m.member_id: {t for t in m.topics if t in self.topics} for m in self.members
        }

    def all_partitions(self) -> list[TopicPartition]:
        """Every assignable partition, by topic then partition id."""
        return [TopicPartition(t, p) for t, ids in self.topics.items() for p in ids]

    def empty_assignment(self) -> dict[str, list[TopicPartition]]:
        return {m: [] for m in self.member_ids}


def finish(assignment: Mapping[str, Iterable[TopicPartition]]) -> dict[str, list[TopicPartition]]:
    """Sorted lists, one per member."""
    return {m: sorted(tps) for m, tps in assignment.items()}
