"""``aiokafka.coordinator.assignors.roundrobin``: rackafka's round-robin assignor."""

from rackafka.group.assignors.roundrobin import RoundRobinPartitionAssignor

__all__ = ["RoundRobinPartitionAssignor"]
