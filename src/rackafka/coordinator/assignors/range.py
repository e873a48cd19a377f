"""``aiokafka.coordinator.assignors.range``: rackafka's (rack-aware) range assignor."""

from rackafka.group.assignors.range import RangePartitionAssignor

__all__ = ["RangePartitionAssignor"]
