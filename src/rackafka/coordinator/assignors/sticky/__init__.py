"""``aiokafka.coordinator.assignors.sticky``: rackafka's (rack-aware) sticky assignor."""

from rackafka.group.assignors.sticky import StickyPartitionAssignor

__all__ = ["StickyPartitionAssignor"]
