"""Consumer groups: coordination with the group coordinator, and partition assignors.

:mod:`rackafka.group.assignors` holds the partition assignors (``roundrobin``,
``range``, ``sticky``, ``cooperative-sticky``), rack-aware as in KIP-881.
"""
