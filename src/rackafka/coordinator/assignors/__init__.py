"""aiokafka's ``aiokafka.coordinator.assignors`` import paths (see :mod:`rackafka.coordinator`)."""

from rackafka.coordinator.assignors.abstract import AbstractPartitionAssignor

__all__ = ["AbstractPartitionAssignor"]
