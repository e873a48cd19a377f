"""The one emulation of Kafka's ``RackAwareReplicaSelector`` (KIP-392) in the test clusters.

A Kafka broker configured with ``replica.selector.class=RackAwareReplicaSelector`` picks,
for each consumer Fetch (v11+) it answers as the partition's leader, the replica the client
should read from; a replica other than the leader is sent back as
``preferred_read_replica`` (with no records). Both emulations in this package ask
:func:`preferred_read_replica`: :class:`~rackafka.testing.EmbeddedCluster`'s
``emulate_rack_aware_selector`` (one hint for every client) and the
:class:`~rackafka.testing.SecureFront` with ``replica_selector="rack-aware"`` (a hint per
Fetch, by the request's ``rack_id``).

What the broker does (Kafka 3.4 and later; the cluster tests run 4.x), and so this module:

* Only the leader selects, and only for a consumer's Fetch (not a follower's replication).
  With no ``rack_id`` (empty) the answer is the leader: no hint.
* The candidates are the leader itself and each follower that is in the ISR and whose log
  holds the fetch offset (log start offset <= fetch offset <= log end offset).
* If no candidate is in the client's rack, or the leader is, the leader serves (no hint).
  Rack names are compared exactly.
* Otherwise the most caught-up candidate of the client's rack is named: the highest log
  end offset, then the shortest time since it last caught up with the leader, then the
  highest broker id.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

__all__ = ["NO_PREFERRED_REPLICA", "ReplicaState", "preferred_read_replica"]

#: ``preferred_read_replica`` when the leader itself serves the fetch.
NO_PREFERRED_REPLICA = -1


@dataclass(frozen=True)
class ReplicaState:
    """How far a follower's log reaches, as the leader sees it.

    Attributes:
        log_start_offset: the first offset the replica holds.
        log_end_offset: the offset after its last record.
        time_since_caught_up_ms: how long ago it last caught up with the leader's log end.
    """

    log_start_offset: int
    log_end_offset: int
    time_since_caught_up_ms: int = 0


def preferred_read_replica(
    client_rack: str | None,
    leader: int,
    replicas: Iterable[int],
    rack_of: Callable[[int], str | None],
    *,
    in_sync: Collection[int] | None = None,
    fetch_offset: int | None = None,
    states: Mapping[int, ReplicaState] | None = None,
) -> int:
    """The replica Kafka's ``RackAwareReplicaSelector`` names for a consumer in ``client_rack``.

    Arguments:
        client_rack: the Fetch request's ``rack_id`` (None or ``""``: none).
        leader: the partition's leader (-1: leader-less, no hint).
        replicas: the partition's replicas.
        rack_of: the rack of a broker id (None for none).
        in_sync: the ISR (default: every replica); a replica that is down should be left
            out, as it leaves the ISR on a real cluster.
        fetch_offset: the offset fetched; None skips the check that a follower's log holds
            it (an emulation that sets one hint for every fetch).
        states: the followers' :class:`ReplicaState`; a follower not listed is caught up
            with the leader (it holds every offset the leader does and ranks above every
            listed one).

    Returns:
        the broker id to name as ``preferred_read_replica``, or
        :data:`NO_PREFERRED_REPLICA` (-1) when the leader serves.
    """
    if not client_rack or leader < 0 or rack_of(leader) == client_rack:
        # Without a rack, or with the leader in the client's rack, the leader is chosen.
        return NO_PREFERRED_REPLICA
    known = states or {}
    best: tuple[float, int, int] | None = None
    for replica in replicas:
        if replica == leader or (in_sync is not None and replica not in in_sync):
            continue
        if rack_of(replica) != client_rack:
            continue
        state = known.get(replica)
        if state is None:
            rank: tuple[float, int, int] = (float("inf"), 0, replica)
        else:
            if fetch_offset is not None and not (
                state.log_start_offset <= fetch_offset <= state.log_end_offset
            ):
                continue
            rank = (state.log_end_offset, -state.time_since_caught_up_ms, replica)
        if best is None or rank > best:
            best = rank
    return NO_PREFERRED_REPLICA if best is None else best[2]
