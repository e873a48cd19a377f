"""The reassignment that gives every partition a replica in a rack (pure, no I/O).

A consumer with ``client_rack`` reads a partition from its own zone only if that zone (the
brokers' ``broker.rack``) holds a replica of it.  :func:`plan_rack_reassignment` proposes
the smallest change that gives every partition one: for each partition without a replica
in a wanted rack, ONE new replica on a broker of that rack.  The replication factor stays
when another rack holds two or more replicas of the partition (one of them, never the
leader, makes room); otherwise the partition gains a replica.  The new replica goes to the
broker of the rack holding the fewest bytes (then the fewest replicas), counting what the
plan already put there, so that the load spreads.

:meth:`ReassignmentPlan.kafka_json` is the file of Kafka's
``kafka-reassign-partitions --execute --reassignment-json-file``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rackafka.structs import TopicPartition

__all__ = ["PartitionChange", "ReassignmentPlan", "plan_rack_reassignment"]


@dataclass(frozen=True)
class PartitionChange:
    """The new replica list of one partition.

    Attributes:
        tp: the partition.
        current: its replicas now (the first is the preferred leader).
        replicas: its replicas after the reassignment (the same first broker).
        added: the brokers that get a new replica (one per rack given that lacked one).
        removed: the brokers whose replica makes room (the replication factor stays).
        size: the partition's size in bytes, None when unknown.
    """

    tp: TopicPartition
    current: tuple[int, ...]
    replicas: tuple[int, ...]
    added: tuple[int, ...]
    removed: tuple[int, ...]
    size: int | None

    @property
    def grows(self) -> bool:
        """Whether the replication factor grows."""
        return len(self.replicas) > len(self.current)

    @property
    def bytes_moved(self) -> int:
        """Bytes copied to the new replicas (0 when the size is unknown)."""
        return (self.size or 0) * len(self.added)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for ``--json``)."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "current": list(self.current),
            "replicas": list(self.replicas),
            "added": list(self.added),
            "removed": list(self.removed),
            "size": self.size,
        }


@dataclass(frozen=True)
class ReassignmentPlan:
    """What :func:`plan_rack_reassignment` proposes.

    Attributes:
        racks: the racks every partition should have a replica in.
        changes: the partitions to reassign, in (topic, partition) order.
        unfixable_racks: racks given that no broker is in: no reassignment helps.
        unfixed: partitions still without a replica in one of ``unfixable_racks``.
    """

    racks: tuple[str, ...]
    changes: tuple[PartitionChange, ...] = ()
    unfixable_racks: tuple[str, ...] = ()
    unfixed: tuple[TopicPartition, ...] = field(default=())

    @property
    def bytes_moved(self) -> int:
        """Bytes copied to new replicas (the partitions of known size)."""
        return sum(c.bytes_moved for c in self.changes)

    @property
    def unknown_sizes(self) -> tuple[TopicPartition, ...]:
        """The reassigned partitions whose size is unknown (not in ``bytes_moved``)."""
        return tuple(c.tp for c in self.changes if c.size is None)

    @property
    def grown(self) -> tuple[TopicPartition, ...]:
        """The partitions whose replication factor grows."""
        return tuple(c.tp for c in self.changes if c.grows)

    def reassignments(self) -> dict[TopicPartition, list[int]]:
        """The new replicas by partition (for ``alter_partition_reassignments``)."""
        return {c.tp: list(c.replicas) for c in self.changes}

    def kafka_json(self) -> dict[str, Any]:
        """The proposal as Kafka's reassignment file (``--reassignment-json-file``)."""
        return _kafka_file((c.tp, c.replicas) for c in self.changes)

    def rollback_json(self) -> dict[str, Any]:
        """The current replicas of the same partitions, in the same format: applying it
        undoes the proposal."""
        return _kafka_file((c.tp, c.current) for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for ``--json``)."""
        return {
            "racks": list(self.racks),
            "partitions": [c.to_dict() for c in self.changes],
            "bytes_to_move": self.bytes_moved,
            "unknown_sizes": [_tp_dict(tp) for tp in self.unknown_sizes],
            "replication_factor_grows": [_tp_dict(tp) for tp in self.grown],
            "unfixable_racks": list(self.unfixable_racks),
            "unfixed": [_tp_dict(tp) for tp in self.unfixed],
            "reassignment_json": self.kafka_json(),
            "rollback_json": self.rollback_json(),
        }


def _tp_dict(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}


def _kafka_file(items: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "partitions": [
            {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
            for tp, replicas in items
        ],
    }


def _checked(
    replicas: Mapping[TopicPartition, Sequence[int]],
    racks: str | Sequence[str],
) -> tuple[dict[TopicPartition, list[int]], tuple[str, ...]]:
    if not isinstance(replicas, Mapping):
        raise TypeError(
            f"replicas must be a mapping of TopicPartition to broker ids, not {replicas!r}"
        )
    wanted = (racks,) if isinstance(racks, str) else tuple(racks)
    if not wanted or not all(isinstance(r, str) and r for r in wanted):
        raise ValueError(f"racks must be one or more non-empty rack names, not {racks!r}")
    out: dict[TopicPartition, list[int]] = {}
    for tp, ids in replicas.items():
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"replicas: keys must be TopicPartition, not {tp!r}")
        listed = list(ids)
        if not listed or len(set(listed)) != len(listed):
            raise ValueError(
                f"replicas of {tp.topic}[{tp.partition}] must be distinct broker ids, "
                f"not {listed!r}"
            )
        out[tp] = listed
    return out, tuple(dict.fromkeys(wanted))


def plan_rack_reassignment(
    replicas: Mapping[TopicPartition, Sequence[int]],
    broker_racks: Mapping[int, str | None],
    racks: str | Sequence[str],
    sizes: Mapping[TopicPartition, int] | None = None,
    *,
    leaders: Mapping[TopicPartition, int] | None = None,
    broker_bytes: Mapping[int, int] | None = None,
) -> ReassignmentPlan:
    """Propose the smallest reassignment that gives every partition a replica in ``racks``.

    For each partition without a replica in a rack of ``racks``: one new replica on a
    broker of that rack.  When another rack holds two or more replicas of the partition,
    the new replica takes the place of one of them (not the first, not the leader): the
    replication factor stays; otherwise it is added at the end (the replication factor
    grows by one).  The first broker of every list stays first, and partitions that
    already have a replica in the rack are left out.  Of the rack's brokers, the one with
    the fewest bytes, then the fewest replicas, then the lowest id gets it, counting the
    replicas the plan already placed (and freed).

    Arguments:
        replicas: each partition's replicas, the preferred leader first.
        broker_racks: every broker's ``broker.rack`` (None: none); only these brokers get
            new replicas.
        racks: the rack(s) every partition should have a replica in (the consumers'
            ``client_rack``).
        sizes: each partition's size in bytes, when known (the bytes a new replica copies).
        leaders: each partition's current leader, when it is not the first replica: it is
            never replaced either.
        broker_bytes: the bytes each broker holds now (default: the sum of ``sizes`` of
            the partitions it has a replica of in ``replicas``).

    Returns:
        the plan; racks no broker is in are in ``unfixable_racks`` and their partitions in
        ``unfixed``.

    Raises:
        TypeError: ``replicas`` is not a mapping of TopicPartition to broker ids.
        ValueError: ``racks`` names no rack, or a replica list is empty or repeats a broker.
    """
    current, wanted = _checked(replicas, racks)
    sizes = sizes or {}
    leaders = leaders or {}

    def rack_of(broker: int) -> str | None:
        return broker_racks.get(broker)

    replica_count: dict[int, int] = dict.fromkeys(broker_racks, 0)
    load: dict[int, int] = dict.fromkeys(broker_racks, 0)
    for tp, ids in current.items():
        for b in ids:
            replica_count[b] = replica_count.get(b, 0) + 1
            if broker_bytes is None:
                load[b] = load.get(b, 0) + sizes.get(tp, 0)
    if broker_bytes is not None:
        load.update({b: int(n) for b, n in broker_bytes.items()})
    in_rack = {rack: sorted(b for b, r in broker_racks.items() if r == rack) for rack in wanted}
    unfixable = tuple(rack for rack in wanted if not in_rack[rack])

    changes: list[PartitionChange] = []
    unfixed: list[TopicPartition] = []
    for tp in sorted(current):
        ids = list(current[tp])
        added: list[int] = []
        removed: list[int] = []
        size = sizes.get(tp)
        for rack in wanted:
            if any(rack_of(b) == rack for b in ids):
                continue
            if not in_rack[rack]:
                unfixed.append(tp)
                continue
            target = min(
                (b for b in in_rack[rack] if b not in ids),
                key=lambda b: (load.get(b, 0), replica_count.get(b, 0), b),
            )
            victim = _room(ids, rack_of, {ids[0], leaders.get(tp, ids[0])}, load)
            if victim is None:
                ids.append(target)
            else:
                ids[ids.index(victim)] = target
                removed.append(victim)
                replica_count[victim] -= 1
                load[victim] = load.get(victim, 0) - (size or 0)
            added.append(target)
            replica_count[target] = replica_count.get(target, 0) + 1
            load[target] = load.get(target, 0) + (size or 0)
        if added:
            changes.append(
                PartitionChange(
                    tp, tuple(current[tp]), tuple(ids), tuple(added), tuple(removed), size
                )
            )
    return ReassignmentPlan(
        racks=wanted,
        changes=tuple(changes),
        unfixable_racks=unfixable,
        unfixed=tuple(dict.fromkeys(unfixed)),
    )


def _room(
    ids: Sequence[int],
    rack_of: Any,
    kept: set[int],
    load: Mapping[int, int],
) -> int | None:
    """The replica that makes room for the new one: one of a rack holding two or more
    replicas (the most crowded rack, then the fullest broker, then the last in the list),
    never one in ``kept``; None when no rack holds two."""
    by_rack: dict[str, list[int]] = {}
    for b in ids:
        rack = rack_of(b)
        if rack is not None:
            by_rack.setdefault(rack, []).append(b)
    candidates = [
        (len(members), load.get(b, 0), ids.index(b), b)
        for members in by_rack.values()
        if len(members) >= 2
        for b in members
        if b not in kept
    ]
    return max(candidates)[3] if candidates else None
