"""The ``roundrobin`` assignor (aiokafka's default)."""

from __future__ import annotations

from rackafka.group.assignors._model import AssignmentInput, PartitionAssignor, Topology, finish
from rackafka.structs import TopicPartition


class RoundRobinPartitionAssignor(PartitionAssignor):
    """Deal the partitions out to the members in turn.

    All partitions of the subscribed topics are laid out by topic name and
    partition id, and the members in Kafka's order (static members by
    ``group.instance.id`` first, then the others by member id). Each partition
    goes to the next member in the circle that subscribes to its topic;
    members that do not are skipped. With identical subscriptions the counts
    differ by at most one.

    For example, with members C0 and C1 and topics t0 and t1 of 3 partitions
    each, the assignment is ``C0: [t0p0, t0p2, t1p1]``, ``C1: [t0p1, t1p0, t1p2]``.

    Round robin ignores racks, as in Kafka.
    """

    name = "roundrobin"

    def assign(self, data: AssignmentInput) -> dict[str, list[TopicPartition]]:
        """Assign round robin; see the class description."""
        topo = Topology(data)
        assignment = topo.empty_assignment()
        members = topo.member_ids
        if not members:
            return assignment
        subs = topo.member_topics
        i = 0
        for tp in topo.all_partitions():
            # The topic has a subscriber (Topology keeps no other), so this ends.
            while tp.topic not in subs[members[i]]:
                i = (i + 1) % len(members)
            assignment[members[i]].append(tp)
            i = (i + 1) % len(members)
        return finish(assignment)
