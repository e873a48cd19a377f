"""Partition assignors: who in a consumer group reads which partitions.

The group leader runs the assignor the members agreed on. rackafka ships the
assignors of Kafka and aiokafka, under the same protocol names:

* ``roundrobin`` (:class:`RoundRobinPartitionAssignor`, aiokafka's default),
* ``range`` (:class:`RangePartitionAssignor`),
* ``sticky`` (:class:`StickyPartitionAssignor`),
* ``cooperative-sticky`` (:class:`CooperativeStickyAssignor`, the cooperative
  protocol of KIP-429).

``range``, ``sticky`` and ``cooperative-sticky`` are rack-aware (KIP-881):
when members set ``client_rack`` and brokers ``broker.rack``, and some
partitions have no replica on some rack, partitions go to members in a rack
holding one of their replicas wherever balance allows, so that consumers
fetch from their own rack (KIP-392) without giving up balance. Without racks,
or when every partition has replicas on every rack, they assign as Kafka does
without racks.

Assignors are pure: :meth:`PartitionAssignor.assign` takes an
:class:`AssignmentInput` (partitions with replicas, broker racks, member
subscriptions) and returns each member's partitions.
"""

from __future__ import annotations

from rackafka.group.assignors._model import (
    AssignmentInput,
    MemberSubscription,
    PartitionAssignor,
    PartitionReplicas,
    RebalanceProtocol,
    common_rebalance_protocol,
)
from rackafka.group.assignors.range import RangePartitionAssignor
from rackafka.group.assignors.roundrobin import RoundRobinPartitionAssignor
from rackafka.group.assignors.sticky import (
    DEFAULT_GENERATION,
    CooperativeStickyAssignor,
    StickyPartitionAssignor,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)

#: The built-in assignors by protocol name.
ASSIGNORS: dict[str, type[PartitionAssignor]] = {
    RoundRobinPartitionAssignor.name: RoundRobinPartitionAssignor,
    RangePartitionAssignor.name: RangePartitionAssignor,
    StickyPartitionAssignor.name: StickyPartitionAssignor,
    CooperativeStickyAssignor.name: CooperativeStickyAssignor,
}


def assignor_for_name(name: str) -> PartitionAssignor:
    """A new instance of the built-in assignor with this protocol name.

    Raises:
        ValueError: no built-in assignor has this name.
    """
    try:
        return ASSIGNORS[name]()
    except KeyError:
        raise ValueError(
            f"unknown partition assignor {name!r}; known: {', '.join(ASSIGNORS)}"
        ) from None


__all__ = [
    "ASSIGNORS",
    "DEFAULT_GENERATION",
    "AssignmentInput",
    "CooperativeStickyAssignor",
    "MemberSubscription",
    "PartitionAssignor",
    "PartitionReplicas",
    "RangePartitionAssignor",
    "RebalanceProtocol",
    "RoundRobinPartitionAssignor",
    "StickyPartitionAssignor",
    "assignor_for_name",
    "common_rebalance_protocol",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
]
