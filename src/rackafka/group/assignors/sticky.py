"""The ``sticky`` and ``cooperative-sticky`` assignors, rack-aware as in KIP-881.

Both compute the same assignment, optimal for these goals in this order (the
order Kafka gives them):

1. **Balance.** With identical subscriptions every member gets
   ``partitions // members`` or one more. Otherwise the counts are as even as
   the subscriptions allow: no partition could move to a member holding two
   or more fewer partitions than its current one, even along a chain of moves
   (the sorted counts are lexicographically smallest).
2. **Rack alignment** (KIP-881), when members have a ``client_rack``, brokers a
   ``broker.rack``, and some partition lacks replicas on some rack: as many
   partitions as possible go to a member in a rack that holds one of their
   replicas. An owned partition may move to improve rack alignment, as in
   Kafka.
3. **Stickiness.** As many owned partitions as possible stay with their owner.

Without racks, identical subscriptions give Kafka's result (owned partitions
kept up to the quota, the rest dealt round robin; members are taken by member
id where Kafka's order depends on hashing). Different subscriptions are
balanced exactly where Kafka's general algorithm is best-effort.

Ownership comes from each member's owned partitions and generation: a
partition claimed by several members goes to the claim of the highest
generation; claims tied at the highest generation cancel each other.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Sequence

from rackafka.errors import KafkaProtocolError
from rackafka.group.assignors._flow import MinCostFlow, share_out
from rackafka.group.assignors._model import (
    AssignmentInput,
    MemberSubscription,
    PartitionAssignor,
    RebalanceProtocol,
    Topology,
    finish,
    use_rack_aware_assignment,
)
from rackafka.protocol.schema import INT32, STRING, A, F, S
from rackafka.structs import TopicPartition

log = logging.getLogger(__name__)

#: The generation of a member that has none yet.
DEFAULT_GENERATION = -1

_DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError, TypeError)

STICKY_USER_DATA = S(
    "StickyAssignorUserData",
    F(
        "previous_assignment",
        A(S("StickyAssignorTopicAssignment", F("topic", STRING), F("partitions", A(INT32)))),
    ),
    F("generation", INT32, "1+", default=DEFAULT_GENERATION),
)
COOPERATIVE_USER_DATA = S("CooperativeStickyAssignorUserData", F("generation", INT32))


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """Encode the ``sticky`` assignor's user data (Kafka's V1 layout, no version prefix).

    Arguments:
        partitions: the member's current assignment.
        generation: the generation it was assigned in.
    """
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    value = STICKY_USER_DATA.cls(
        previous_assignment=[{"topic": t, "partitions": p} for t, p in by_topic.items()],
        generation=generation,
    )
    out = bytearray()
    STICKY_USER_DATA.codec(1, False)[1](out, value)
    return bytes(out)


def decode_sticky_user_data(data: bytes) -> tuple[list[TopicPartition], int | None]:
    """Decode the ``sticky`` assignor's user data: previous assignment and generation.

    Reads Kafka's V1 layout, falling back to V0 (no generation, returned as
    ``None``). Bytes after the fields are ignored, as in Kafka.

    Raises:
        KafkaProtocolError: the data is neither layout.
    """
    for version in (1, 0):
        try:
            value, _end = STICKY_USER_DATA.codec(version, False)[0](bytes(data), 0)
        except (KafkaProtocolError, *_DECODE_FAILURES):
            continue
        partitions = [
            TopicPartition(a.topic, p) for a in value.previous_assignment for p in a.partitions
        ]
        return partitions, (value.generation if version >= 1 else None)
    raise KafkaProtocolError(f"sticky assignor user data of {len(data)} bytes is malformed")


def encode_cooperative_user_data(generation: int) -> bytes:
    """Encode the ``cooperative-sticky`` assignor's user data (its generation)."""
    out = bytearray()
    COOPERATIVE_USER_DATA.codec(0, False)[1](out, COOPERATIVE_USER_DATA.cls(generation=generation))
    return bytes(out)


def decode_cooperative_user_data(data: bytes) -> int:
    """Decode the ``cooperative-sticky`` assignor's user data: the generation.

    Raises:
        KafkaProtocolError: the data is too short.
    """
    try:
        value, _end = COOPERATIVE_USER_DATA.codec(0, False)[0](bytes(data), 0)
    except (KafkaProtocolError, *_DECODE_FAILURES) as exc:
        raise KafkaProtocolError(
            f"cooperative-sticky user data of {len(data)} bytes is malformed: {exc}"
        ) from exc
    return int(value.generation)


#: An assignment, the valid owner of each owned partition, and every member claiming each.
_Target = tuple[
    dict[str, list[TopicPartition]], dict[TopicPartition, str], dict[TopicPartition, set[str]]
]


class _StickyBase(PartitionAssignor):
    def _member_data(self, member: MemberSubscription) -> tuple[Sequence[TopicPartition], int]:
        raise NotImplementedError

    def _target(self, data: AssignmentInput) -> _Target:
        topo = Topology(data)
        claims: dict[TopicPartition, list[tuple[str, int]]] = {}
        for m in topo.members:
            owned, generation = self._member_data(m)
            for tp in dict.fromkeys(owned):
                if tp in topo.racks:
                    claims.setdefault(tp, []).append((m.member_id, generation))
        owner: dict[TopicPartition, str] = {}
        for tp, claimers in claims.items():
            top = max(g for _m, g in claimers)
            winners = [m for m, g in claimers if g == top]
            if len(winners) == 1 and tp.topic in topo.member_topics[winners[0]]:
                owner[tp] = winners[0]
            elif len(winners) > 1:
                log.warning(
                    "members %s all claim %s in generation %d; it is assigned afresh",
                    winners,
                    tp,
                    top,
                )
        assignment = sticky_assignment(topo, owner)
        return assignment, owner, {tp: {m for m, _g in c} for tp, c in claims.items()}

    def assign(self, data: AssignmentInput) -> dict[str, list[TopicPartition]]:
        """Assign balanced, then rack-aligned, then sticky; see the module description."""
        return self._target(data)[0]


class StickyPartitionAssignor(_StickyBase):
    """The ``sticky`` assignor (eager protocol; KIP-54, rack-aware per KIP-881).

    Balanced first, then rack-aligned (when racks are known and it helps), then
    sticky: as many partitions as possible stay with their previous owner.

    As in Kafka, each member's previous assignment and generation travel in
    its subscription user data (:meth:`subscription_user_data`), since eager
    members give up their partitions before joining. For a member without user
    data, :attr:`MemberSubscription.owned_partitions` and
    :attr:`MemberSubscription.generation_id` are used instead.
    """

    name = "sticky"

    def __init__(self) -> None:
        self._assignment: list[TopicPartition] | None = None
        self._generation = DEFAULT_GENERATION

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        """The previous assignment and generation, once this member has one."""
        if self._assignment is None:
            return None
        return encode_sticky_user_data(self._assignment, self._generation)

    def on_assignment(self, assignment: Sequence[TopicPartition], generation_id: int) -> None:
        """Remember the assignment and generation for the next subscription."""
        self._assignment = list(assignment)
        self._generation = generation_id

    def _member_data(self, member: MemberSubscription) -> tuple[Sequence[TopicPartition], int]:
        if not member.user_data:
            return member.owned_partitions, member.generation_id
        try:
            partitions, generation = decode_sticky_user_data(member.user_data)
        except KafkaProtocolError as exc:
            log.warning("ignoring the previous assignment of member %s: %s", member.member_id, exc)
            return (), DEFAULT_GENERATION
        return partitions, DEFAULT_GENERATION if generation is None else generation


class CooperativeStickyAssignor(_StickyBase):
    """The ``cooperative-sticky`` assignor (KIP-429; rack-aware per KIP-881).

    It computes the same assignment as :class:`StickyPartitionAssignor`, from
    the owned partitions and generation each member reports in its
    subscription, and follows the cooperative protocol: a partition that
    moves from one member to another is left out of the new owner's
    assignment in this rebalance. Its old owner revokes it, rejoins, and the
    follow-up rebalance assigns it.
    """

    name = "cooperative-sticky"
    supported_protocols = (RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE)

    def __init__(self) -> None:
        self._generation = DEFAULT_GENERATION

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        """The member's generation, for leaders that read subscriptions before v2."""
        return encode_cooperative_user_data(self._generation)

    def on_assignment(self, assignment: Sequence[TopicPartition], generation_id: int) -> None:
        """Remember the generation."""
        self._generation = generation_id

    def _member_data(self, member: MemberSubscription) -> tuple[Sequence[TopicPartition], int]:
        generation = member.generation_id
        if generation < 0 and member.user_data:
            try:
                generation = decode_cooperative_user_data(member.user_data)
            except KafkaProtocolError as exc:
                log.warning("ignoring the user data of member %s: %s", member.member_id, exc)
                generation = DEFAULT_GENERATION
        return member.owned_partitions, generation

    def assign(self, data: AssignmentInput) -> dict[str, list[TopicPartition]]:
        """Assign as ``sticky`` does, leaving out partitions another member must revoke first."""
        target, owner, claimers = self._target(data)
        result: dict[str, list[TopicPartition]] = {}
        for member, tps in target.items():
            result[member] = [
                tp
                for tp in tps
                if owner.get(tp) == member or not (claimers.get(tp, set()) - {member})
            ]
        return result


# -- the algorithm ---------------------------------------------------------------------


def sticky_assignment(
    topo: Topology, owner: dict[TopicPartition, str]
) -> dict[str, list[TopicPartition]]:
    """The sticky assignment for ``topo`` given the valid owner of each owned partition."""
    members = topo.member_ids
    assignment = topo.empty_assignment()
    partitions = topo.all_partitions()
    if not members or not partitions:
        return assignment
    subscriptions = [topo.member_topics[m] for m in members]
    homogeneous = all(s == subscriptions[0] for s in subscriptions)
    quotas: _Quotas
    if homogeneous:
        baseline = _constrained(topo, owner)
        quotas = _Quotas.even(len(partitions), members)
    else:
        greedy = _greedy(topo, owner)
        quotas = _Quotas.around(_dec_min(topo, greedy))
        baseline = _flow_assign(topo, owner, greedy, quotas, locality=False)
    if not _rack_aware(topo):
        return finish(baseline)
    return finish(_flow_assign(topo, owner, baseline, quotas, locality=True))


def _rack_aware(topo: Topology) -> bool:
    consumer_racks = {r for r in topo.member_rack.values() if r}
    if not consumer_racks:
        return False
    racks = list(topo.racks.values())
    return use_rack_aware_assignment(consumer_racks, set().union(*racks), racks)


def _constrained(
    topo: Topology, owner: dict[TopicPartition, str]
) -> dict[str, list[TopicPartition]]:
    """Kafka's assignment for identical subscriptions, without racks.

    Each member keeps its owned partitions up to its quota (the members that
    owned more than the minimum keep one more, while extra slots remain);
    the other partitions are dealt round robin to members below their quota.
    """
    members = sorted(topo.member_ids)
    total = len(topo.racks)
    quota, extra_slots = divmod(total, len(members))
    max_quota = quota + (1 if extra_slots else 0)
    owned: dict[str, list[TopicPartition]] = {m: [] for m in members}
    for tp, m in owner.items():
        owned[m].append(tp)
    assignment: dict[str, list[TopicPartition]] = {m: [] for m in members}
    under: list[str] = []  # below the minimum quota
    at_min: list[str] = []  # at the minimum quota, may take one more
    over = 0  # members at the maximum quota
    for m in members:
        own = sorted(owned[m], key=lambda tp: (tp.partition, tp.topic))
        if len(own) < quota:
            assignment[m] = own
            under.append(m)
        elif len(own) >= max_quota and over < extra_slots:
            assignment[m] = own[:max_quota]
            over += 1
            if over == extra_slots:
                at_min.clear()
        else:
            assignment[m] = own[:quota]
            if over < extra_slots:
                at_min.append(m)
    kept = {tp for tps in assignment.values() for tp in tps}
    nxt = 0  # the next member of ``under`` in the round
    for tp in topo.all_partitions():
        if tp in kept:
            continue
        from_under = True
        if nxt < len(under):
            member = under[nxt]
            nxt += 1
        elif under:
            nxt = 1
            member = under[0]
        elif at_min:
            member = at_min.pop(0)
            from_under = False
        else:  # pragma: no cover - the quotas add up to the partitions
            raise RuntimeError("sticky assignment ran out of members below their quota")
        assignment[member].append(tp)
        count = len(assignment[member])
        if count == quota and from_under:
            nxt -= 1
            under.pop(nxt)
            at_min.append(member)
        elif count == max_quota:
            over += 1
    return assignment


def _greedy(topo: Topology, owner: dict[TopicPartition, str]) -> dict[str, list[TopicPartition]]:
    """Owned partitions stay; each other one goes to its least loaded subscriber."""
    assignment = topo.empty_assignment()
    for tp, m in owner.items():
        assignment[m].append(tp)
    rest = [tp for tp in topo.all_partitions() if tp not in owner]
    rest.sort(key=lambda tp: (len(topo.subscribers[tp.topic]), tp.topic, tp.partition))
    for tp in rest:
        member = min(topo.subscribers[tp.topic], key=lambda m: (len(assignment[m]), m))
        assignment[member].append(tp)
    return assignment


def _dec_min(topo: Topology, assignment: dict[str, list[TopicPartition]]) -> dict[str, int]:
    """The most even partition counts reachable from ``assignment``.

    Moves one partition at a time along chains of members (each passing on a
    partition of a topic the next subscribes to) from a member to one holding
    two or fewer, until no such chain exists; then the counts are the most
    even the subscriptions allow.
    """
    members = topo.member_ids
    order = {m: i for i, m in enumerate(members)}
    topics_of = {m: sorted(topo.member_topics[m]) for m in members}
    load = {m: len(tps) for m, tps in assignment.items()}
    hold: dict[str, dict[str, int]] = {m: {} for m in members}
    # The members holding partitions of each topic (dicts keep a deterministic order).
    holders: dict[str, dict[str, None]] = {t: {} for t in topo.topics}
    for m in members:
        for tp in assignment[m]:
            hold[m][tp.topic] = hold[m].get(tp.topic, 0) + 1
            holders[tp.topic][m] = None
    while True:
        for v in sorted(members, key=lambda m: (load[m], order[m])):
            target = load[v] + 2
            if max(load.values()) < target:
                continue
            parent: dict[str, tuple[str, str] | None] = {v: None}
            frontier = [v]
            best: str | None = None
            while frontier:
                following = []
                for w in frontier:
                    for t in topics_of[w]:
                        for u in holders[t]:
                            if u in parent:
                                continue
                            parent[u] = (w, t)
                            following.append(u)
                            if load[u] >= target and (best is None or load[u] > load[best]):
                                best = u
                frontier = following
            if best is not None:
                u = best
                while u != v:
                    link = parent[u]
                    assert link is not None
                    w, t = link
                    hold[u][t] -= 1
                    if not hold[u][t]:
                        del holders[t][u]
                    hold[w][t] = hold[w].get(t, 0) + 1
                    holders[t][w] = None
                    u = w
                load[best] -= 1
                load[v] += 1
                break
        else:
            return load


class _Quotas:
    """How many partitions each member may get, as flow capacities.

    Either exact (``even``: the minimum quota, and one extra slot for some
    members) or a window of one around a most-even count vector (``around``),
    inside which a convex cost picks the most even counts.
    """

    def __init__(self, exact: tuple[int, int] | None, centre: dict[str, int] | None) -> None:
        self.exact = exact
        self.centre = centre

    @classmethod
    def even(cls, total: int, members: Sequence[str]) -> _Quotas:
        return cls(divmod(total, len(members)), None)

    @classmethod
    def around(cls, counts: dict[str, int]) -> _Quotas:
        return cls(None, dict(counts))


def _flow_assign(
    topo: Topology,
    owner: dict[TopicPartition, str],
    baseline: dict[str, list[TopicPartition]],
    quotas: _Quotas,
    *,
    locality: bool,
) -> dict[str, list[TopicPartition]]:
    """The assignment optimal for balance, then racks (if ``locality``), then
    stickiness, with ties broken towards ``baseline``."""
    members = topo.member_ids
    order = {m: i for i, m in enumerate(members)}
    total = len(topo.racks)
    base_of = {tp: m for m, tps in baseline.items() for tp in tps}
    consumer_racks = {r for r in topo.member_rack.values() if r} if locality else set()

    w_base = 1
    w_own = total * w_base + 1
    w_loc = total * (w_own + w_base) + 1 if locality else 0
    per_unit = w_loc + w_own + w_base
    w_bal = total * per_unit + 1

    def rack_value(member: str) -> str | None:
        return topo.member_rack[member] if locality else None

    def mismatch(racks: frozenset[str], rv: str | None) -> int:
        return 0 if (rv is not None and rv in racks) else 1

    flow = MinCostFlow(2)
    source, sink = 0, 1
    member_node = {m: flow.add_node() for m in members}

    # Member -> sink: the quotas.
    if quotas.exact is not None:
        quota, extra_slots = quotas.exact
        forced = total * per_unit + 1
        for m in members:
            if quota:
                flow.add_edge(member_node[m], sink, quota, -forced)
            if extra_slots:
                flow.add_edge(member_node[m], sink, 1, 0)
    else:
        assert quotas.centre is not None
        centre = quotas.centre
        windows = {m: (max(centre[m] - 1, 0), centre[m] + 1) for m in members}
        forced = total * per_unit + sum(w_bal * (2 * hi + 1) for _lo, hi in windows.values()) + 1
        for m in members:
            lo, hi = windows[m]
            if lo:
                flow.add_edge(member_node[m], sink, lo, -forced)
            for k in range(lo + 1, hi + 1):
                flow.add_edge(member_node[m], sink, 1, w_bal * k)

    # Groups of members that can take a partition: its subscribers, split by rack.
    group_node: dict[tuple[tuple[str, ...], str | None], int] = {}
    group_edges: dict[tuple[tuple[str, ...], str | None], list[tuple[str, int]]] = {}
    for topic in topo.topics:
        eligible = tuple(topo.subscribers[topic])
        for m in eligible:
            key = (eligible, rack_value(m))
            if key not in group_node:
                group_node[key] = flow.add_node()
                group_edges[key] = []
            if all(m != x for x, _e in group_edges[key]):
                edge = flow.add_edge(group_node[key], member_node[m], total, 0)
                group_edges[key].append((m, edge))
    racks_of_group: dict[tuple[str, ...], list[str | None]] = {}
    for eligible, rv in group_node:
        racks_of_group.setdefault(eligible, []).append(rv)

    # Classes of interchangeable partitions.
    classes: dict[
        tuple[tuple[str, ...], frozenset[str], str | None, str], list[TopicPartition]
    ] = {}
    for tp in topo.all_partitions():
        class_key = (
            tuple(topo.subscribers[tp.topic]),
            topo.racks[tp] & consumer_racks,
            owner.get(tp),
            base_of[tp],
        )
        classes.setdefault(class_key, []).append(tp)
    plan = []
    for (eligible, racks, own, base), tps in classes.items():
        node = flow.add_node()
        size = len(tps)
        flow.add_edge(source, node, size, 0)
        owned_cost = w_own if own is not None else 0
        direct: dict[str, int] = {}
        if own is not None:
            direct[own] = flow.add_edge(
                node,
                member_node[own],
                size,
                w_loc * mismatch(racks, rack_value(own)) + (w_base if own != base else 0),
            )
        if base != own:
            cost = w_loc * mismatch(racks, rack_value(base)) + owned_cost
            direct[base] = flow.add_edge(node, member_node[base], size, cost)
        via = {
            rv: flow.add_edge(
                node,
                group_node[(eligible, rv)],
                size,
                w_loc * mismatch(racks, rv) + owned_cost + w_base,
            )
            for rv in racks_of_group[eligible]
        }
        plan.append((eligible, tps, direct, via))

    if flow.run(source, sink, total) != total:  # pragma: no cover - the graph always fits
        raise RuntimeError("sticky assignment could not place every partition")

    left = {key: [flow.flow(e) for _m, e in edges] for key, edges in group_edges.items()}
    assignment = topo.empty_assignment()
    for eligible, tps, direct, via in plan:
        counts: dict[str, int] = {}
        for m, e in direct.items():
            if flow.flow(e):
                counts[m] = flow.flow(e)
        for rv, e in via.items():
            key = (eligible, rv)
            share_out(flow.flow(e), group_edges[key], left[key], counts)
        pos = 0
        for m in sorted(counts, key=lambda x: (x not in direct, order[x])):
            assignment[m] += tps[pos : pos + counts[m]]
            pos += counts[m]
    return assignment
