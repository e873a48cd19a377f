"""The ``range`` assignor, rack-aware as in KIP-881."""

from __future__ import annotations

from rackafka.group.assignors._flow import MinCostFlow, share_out
from rackafka.group.assignors._model import (
    AssignmentInput,
    PartitionAssignor,
    Topology,
    finish,
    use_rack_aware_assignment,
)
from rackafka.structs import TopicPartition


def range_owners(members: list[str], count: int) -> list[str]:
    """Kafka's range split of ``count`` partitions: contiguous runs, extras first."""
    if not members:
        return []
    per, extra = divmod(count, len(members))
    owners: list[str] = []
    for i, member in enumerate(members):
        owners += [member] * (per + (1 if i < extra else 0))
    return owners


class RangePartitionAssignor(PartitionAssignor):
    """Give each member a contiguous range of each topic's partitions.

    Topic by topic, the partitions are laid out by id and the topic's
    subscribers in Kafka's member order (static members by
    ``group.instance.id`` first, then the others by member id); each member
    gets ``partitions // members`` of them and the first members one extra.

    For example, with members C0 and C1 and topics t0 and t1 of 3 partitions
    each, the assignment is ``C0: [t0p0, t0p1, t1p0, t1p1]``, ``C1: [t0p2, t1p2]``.

    **Rack awareness (KIP-881).** When members have a ``client_rack`` and the
    brokers a ``broker.rack``, and some partition of a topic does not have
    replicas on every rack, the topic is assigned rack-aware: every member
    still gets the same number of partitions of each topic (a member may get
    the extra partition in place of an earlier one), topics with the same
    subscribers and the same partition count stay co-partitioned (partition
    *i* of each goes to the same member), and within these rules as many
    partitions as possible go to a member in a rack holding one of their
    replicas. Where racks cannot be matched the ranges above are kept.
    """

    name = "range"

    def assign(self, data: AssignmentInput) -> dict[str, list[TopicPartition]]:
        """Assign ranges (rack-aware where it helps); see the class description."""
        topo = Topology(data)
        assignment = topo.empty_assignment()
        groups: dict[tuple[tuple[str, ...], int], list[str]] = {}
        for topic, ids in topo.topics.items():
            key = (tuple(topo.subscribers[topic]), len(ids))
            groups.setdefault(key, []).append(topic)
        for (members, count), topics in groups.items():
            if any(self._needs_racks(topo, t) for t in topics):
                units = _rack_aware_units(topo, list(members), topics, count)
            else:
                units = range_owners(list(members), count)
            for topic in topics:
                ids = topo.topics[topic]
                for j, member in enumerate(units):
                    assignment[member].append(TopicPartition(topic, ids[j]))
        return finish(assignment)

    @staticmethod
    def _needs_racks(topo: Topology, topic: str) -> bool:
        consumer_racks = {r for m in topo.subscribers[topic] if (r := topo.member_rack[m])}
        if not consumer_racks:
            return False
        racks = [topo.racks[TopicPartition(topic, p)] for p in topo.topics[topic]]
        partition_racks: set[str] = set().union(*racks)
        return use_rack_aware_assignment(consumer_racks, partition_racks, racks)


def _rack_aware_units(
    topo: Topology, members: list[str], topics: list[str], count: int
) -> list[str]:
    """The member for each partition index of co-partitioned ``topics``.

    Minimises the number of partitions on a member outside their replicas'
    racks while every member gets ``count // len(members)`` or one more
    indices (exactly ``count % len(members)`` members get one more); ties go
    to the plain range split.
    """
    baseline = range_owners(members, count)
    per, extra = divmod(count, len(members))
    k = len(topics)
    consumer_racks = {r for m in members if (r := topo.member_rack[m])}
    signatures: list[tuple[frozenset[str], ...]] = [
        tuple(topo.racks[TopicPartition(t, topo.topics[t][j])] & consumer_racks for t in topics)
        for j in range(count)
    ]

    def mismatched(sig: tuple[frozenset[str], ...], rack: str | None) -> int:
        return sum(1 for racks in sig if rack is None or rack not in racks)

    classes: dict[tuple[tuple[frozenset[str], ...], str], list[int]] = {}
    for j in range(count):
        classes.setdefault((signatures[j], baseline[j]), []).append(j)
    rack_values: list[str | None] = list(dict.fromkeys(topo.member_rack[m] for m in members))

    weight = k * count + 1  # one mismatch outweighs every departure from the ranges
    forced = count * (weight * k + k) + 1  # filling the quotas outweighs everything

    flow = MinCostFlow(2)
    source, sink = 0, 1
    member_node = {m: flow.add_node() for m in members}
    rack_node = {rv: flow.add_node() for rv in rack_values}
    rack_edges: dict[str | None, list[tuple[str, int]]] = {rv: [] for rv in rack_values}
    for m in members:
        rv = topo.member_rack[m]
        rack_edges[rv].append((m, flow.add_edge(rack_node[rv], member_node[m], count, 0)))
        if per:
            flow.add_edge(member_node[m], sink, per, -forced)
        if extra:
            flow.add_edge(member_node[m], sink, 1, 0)
    class_edges: list[tuple[list[int], str, int, dict[str | None, int]]] = []
    for (sig, base), units in classes.items():
        node = flow.add_node()
        size = len(units)
        flow.add_edge(source, node, size, 0)
        direct = flow.add_edge(
            node, member_node[base], size, weight * mismatched(sig, topo.member_rack[base])
        )
        via = {
            rv: flow.add_edge(node, rack_node[rv], size, weight * mismatched(sig, rv) + k)
            for rv in rack_values
        }
        class_edges.append((units, base, direct, via))
    if flow.run(source, sink, count) != count:  # pragma: no cover - the graph always fits
        raise RuntimeError("rack-aware range assignment could not place every partition")

    # Split what reached each rack node among its members, class by class.
    left = {rv: [flow.flow(e) for _m, e in rack_edges[rv]] for rv in rack_values}
    order = {m: i for i, m in enumerate(members)}
    units_out = list(baseline)
    for units, base, direct, via in class_edges:
        counts: dict[str, int] = {}
        if flow.flow(direct):
            counts[base] = flow.flow(direct)
        for rv, e in via.items():
            share_out(flow.flow(e), rack_edges[rv], left[rv], counts)
        pos = 0
        for member in sorted(counts, key=order.__getitem__):
            for j in units[pos : pos + counts[member]]:
                units_out[j] = member
            pos += counts[member]
    return units_out
