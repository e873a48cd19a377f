"""``aiokafka.coordinator.assignors.sticky.sticky_assignor``: rackafka's sticky assignor."""

from rackafka.group.assignors.sticky import StickyPartitionAssignor

__all__ = ["StickyPartitionAssignor"]
