"""aiokafka's ``aiokafka.coordinator`` import paths, for custom partition assignors.

An assignor written for aiokafka (a subclass of
:class:`~rackafka.coordinator.assignors.abstract.AbstractPartitionAssignor` that returns
:class:`~rackafka.coordinator.protocol.ConsumerProtocolMemberAssignment`) ports by changing
``aiokafka`` to ``rackafka`` in its imports; pass it in ``partition_assignment_strategy``.
rackafka's own assignors live in :mod:`rackafka.group.assignors`.
"""
