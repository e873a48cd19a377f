"""The shared emulation of Kafka's ``RackAwareReplicaSelector`` (``testing.replica_selector``).

Each case is a rule of the broker's selection (Kafka 3.4+): candidates are the leader and
the in-sync followers whose log holds the fetch offset; the leader serves when it is in the
client's rack or no candidate is; else the most caught-up same-rack follower is named.
"""

from __future__ import annotations

import pytest

from rackafka.testing.replica_selector import (
    NO_PREFERRED_REPLICA,
    ReplicaState,
    preferred_read_replica,
)

# Broker i sits in rack RACKS[i]; 4 and 5 share az-b with 2, 6 shares az-c with 3.
RACKS = {1: "az-a", 2: "az-b", 3: "az-c", 4: "az-b", 5: "az-b", 6: "az-c", 7: None}


def select(rack: str | None, leader: int, replicas: tuple[int, ...], **kwargs: object) -> int:
    return preferred_read_replica(rack, leader, replicas, RACKS.get, **kwargs)  # type: ignore[arg-type]


def test_the_follower_in_the_clients_rack_is_named() -> None:
    assert select("az-b", 1, (1, 2, 3)) == 2
    assert select("az-c", 1, (1, 2, 3)) == 3


@pytest.mark.parametrize("rack", [None, ""])
def test_no_client_rack_reads_the_leader(rack: str | None) -> None:
    assert select(rack, 1, (1, 2, 3)) == NO_PREFERRED_REPLICA


def test_a_rack_without_replicas_reads_the_leader() -> None:
    assert select("az-z", 1, (1, 2, 3)) == NO_PREFERRED_REPLICA
    assert select("az-c", 1, (1, 2, 4)) == NO_PREFERRED_REPLICA


def test_the_leader_in_the_clients_rack_serves_even_before_another_replica() -> None:
    # 4 comes first in replica order and is in az-b, but the leader 2 is in az-b too.
    assert select("az-b", 2, (4, 2, 3)) == NO_PREFERRED_REPLICA


def test_a_leader_less_partition_gets_no_hint() -> None:
    assert select("az-b", -1, (1, 2, 3)) == NO_PREFERRED_REPLICA


def test_rack_names_compare_exactly() -> None:
    assert select("AZ-B", 1, (1, 2, 3)) == NO_PREFERRED_REPLICA
    assert select("az-b ", 1, (1, 2, 3)) == NO_PREFERRED_REPLICA


def test_only_in_sync_followers_are_candidates() -> None:
    assert select("az-b", 1, (1, 2, 3), in_sync=(1, 3)) == NO_PREFERRED_REPLICA
    assert select("az-b", 1, (1, 2, 4), in_sync=(1, 4)) == 4
    # The leader need not be listed in the ISR to serve.
    assert select("az-a", 1, (1, 2, 3), in_sync=()) == NO_PREFERRED_REPLICA


def test_a_follower_whose_log_does_not_hold_the_fetch_offset_is_skipped() -> None:
    behind = {2: ReplicaState(0, 50)}
    assert select("az-b", 1, (1, 2, 3), fetch_offset=50, states=behind) == 2  # end inclusive
    assert select("az-b", 1, (1, 2, 3), fetch_offset=51, states=behind) == NO_PREFERRED_REPLICA
    trimmed = {2: ReplicaState(10, 100)}
    assert select("az-b", 1, (1, 2, 3), fetch_offset=9, states=trimmed) == NO_PREFERRED_REPLICA
    assert select("az-b", 1, (1, 2, 3), fetch_offset=10, states=trimmed) == 2
    # Without a fetch offset the logs are not checked.
    assert select("az-b", 1, (1, 2, 3), states=behind) == 2
    # ... and another follower of the rack that holds the offset is named instead.
    both = {2: ReplicaState(0, 50), 4: ReplicaState(0, 80)}
    assert select("az-b", 1, (1, 2, 4), fetch_offset=60, states=both) == 4


def test_the_most_caught_up_follower_of_the_rack_wins() -> None:
    states = {
        2: ReplicaState(0, 90),
        4: ReplicaState(0, 100, time_since_caught_up_ms=500),
        5: ReplicaState(0, 100, time_since_caught_up_ms=20),
    }
    # highest log end offset first, then the most recently caught up
    assert select("az-b", 1, (1, 2, 4, 5), states=states) == 5
    assert select("az-b", 1, (1, 2, 4), states=states) == 4
    # every follower caught up (no states): the highest broker id
    assert select("az-b", 1, (1, 5, 2, 4)) == 5
    assert select("az-c", 1, (6, 1, 3)) == 6


def test_a_broker_without_a_rack_is_never_in_the_clients_rack() -> None:
    assert select("az-b", 1, (1, 7)) == NO_PREFERRED_REPLICA
