"""Where fetched data came from: per node, per rack and per partition (``fetch_stats()``)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rackafka.cluster import ClusterMetadata
from rackafka.consumer.fetch_state import FetchState, NodeCounters
from rackafka.structs import TopicPartition

__all__ = ["FetchStats", "NodeCounters", "PartitionRoute", "snapshot"]


@dataclass(frozen=True)
class PartitionRoute:
    """Where one assigned partition is read from."""

    read_from: int | None
    read_from_rack: str | None
    leader: int | None
    leader_rack: str | None
    preferred_read_replica: int | None


@dataclass
class FetchStats:
    """Where fetched data came from: per node, per rack, and per partition.

    ``bytes`` count record data received in Fetch responses; ``records``
    count records handed to the application.
    """

    client_rack: str | None
    nodes: dict[int, NodeCounters] = field(default_factory=dict)
    racks: dict[str | None, NodeCounters] = field(default_factory=dict)
    partitions: dict[TopicPartition, PartitionRoute] = field(default_factory=dict)
    routing_changes: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.nodes.values())

    @property
    def same_rack_bytes(self) -> int:
        """Bytes served by brokers in ``client_rack`` (0 when it is unset)."""
        if self.client_rack is None:
            return 0
        return self.racks.get(self.client_rack, NodeCounters()).bytes

    @property
    def cross_rack_bytes(self) -> int:
        """Bytes served by brokers outside ``client_rack``."""
        return self.total_bytes - self.same_rack_bytes

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for logs and JSON."""
        return {
            "client_rack": self.client_rack,
            "nodes": {n: vars(c).copy() for n, c in self.nodes.items()},
            "racks": {r: vars(c).copy() for r, c in self.racks.items()},
            "partitions": {
                f"{tp.topic}-{tp.partition}": vars(r).copy() for tp, r in self.partitions.items()
            },
            "routing_changes": self.routing_changes,
            "same_rack_bytes": self.same_rack_bytes,
            "cross_rack_bytes": self.cross_rack_bytes,
        }


def snapshot(fs: FetchState, cluster: ClusterMetadata, client_rack: str | None) -> FetchStats:
    """A copy of the fetcher's counters, and where each assigned partition is read from."""
    now = time.monotonic()
    rack_of = cluster.rack_of
    out = FetchStats(client_rack, routing_changes=fs.routing_changes)
    for node, c in fs.node_counters.items():
        out.nodes[node] = NodeCounters(c.requests, c.records, c.bytes)
        agg = out.racks.setdefault(rack_of(node), NodeCounters())
        agg.requests += c.requests
        agg.records += c.records
        agg.bytes += c.bytes
    for state in fs.subs.states():
        tp = state.tp
        leader = cluster.leader_for(tp)
        preferred = fs.policy.preferred(tp, now)
        read_from = preferred if preferred is not None else leader
        out.partitions[tp] = PartitionRoute(
            read_from,
            rack_of(read_from) if read_from is not None else None,
            leader,
            rack_of(leader) if leader is not None else None,
            preferred,
        )
    return out
