"""Tests of the read-replica routing policy (rules 2-9 of notes/rack-aware-fetching.md)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.consumer.routing import (
    ErrorOutcome,
    FetchErrorAction,
    ReadReplicaPolicy,
    Route,
)


class TP(NamedTuple):
    topic: str
    partition: int


TP0 = TP("events", 0)
TP1 = TP("events", 1)
TP2 = TP("events", 2)

LEADER = 1
FOLLOWER = 2
OTHER = 3
LEASE = 300.0
BACKOFF = 0.1
MAX_BACKOFF = 1.0

# Error codes from the Kafka protocol guide, written out here rather than taken from the module.
NONE = 0
UNKNOWN_SERVER_ERROR = -1
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
REPLICA_NOT_AVAILABLE = 9
TOPIC_AUTHORIZATION_FAILED = 29
KAFKA_STORAGE_ERROR = 56
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
UNSUPPORTED_COMPRESSION_TYPE = 76
OFFSET_NOT_AVAILABLE = 78
UNKNOWN_TOPIC_ID = 100
INCONSISTENT_TOPIC_ID = 103

# Rule 5 error codes -> whether the Java client requests a metadata update for them
# (FetchCollector.handleInitializeErrors: every one but UNKNOWN_LEADER_EPOCH).
DROP_CODES = {
    NOT_LEADER_OR_FOLLOWER: ("NOT_LEADER_OR_FOLLOWER", True),
    FENCED_LEADER_EPOCH: ("FENCED_LEADER_EPOCH", True),
    UNKNOWN_LEADER_EPOCH: ("UNKNOWN_LEADER_EPOCH", False),
    REPLICA_NOT_AVAILABLE: ("REPLICA_NOT_AVAILABLE", True),
    OFFSET_NOT_AVAILABLE: ("OFFSET_NOT_AVAILABLE", True),
    KAFKA_STORAGE_ERROR: ("KAFKA_STORAGE_ERROR", True),
    UNKNOWN_TOPIC_OR_PARTITION: ("UNKNOWN_TOPIC_OR_PARTITION", True),
    UNKNOWN_TOPIC_ID: ("UNKNOWN_TOPIC_ID", True),
    INCONSISTENT_TOPIC_ID: ("INCONSISTENT_TOPIC_ID", True),
}


class View:
    """The fetcher's view of the cluster, answering the policy's callbacks."""

    def __init__(self, known: Iterable[int] = (1, 2, 3), backing_off: Iterable[int] = ()) -> None:
        self.known = set(known)
        self.backing = set(backing_off)

    def node_known(self, node: int) -> bool:
        return node in self.known

    def node_backing_off(self, node: int) -> bool:
        assert node in self.known, "the policy asked about a node it should know is unknown"
        return node in self.backing


def make_policy() -> ReadReplicaPolicy[TP]:
    return ReadReplicaPolicy(LEASE, backoff_s=BACKOFF, max_backoff_s=MAX_BACKOFF)


def select(
    policy: ReadReplicaPolicy[TP],
    view: View,
    now: float,
    tp: TP = TP0,
    leader: int | None = LEADER,
    **kwargs: object,
) -> Route[TP]:
    return policy.select(
        tp,
        leader,
        now,
        node_known=view.node_known,
        node_backing_off=view.node_backing_off,
        **kwargs,  # type: ignore[arg-type]
    )


def redirect(policy: ReadReplicaPolicy[TP], now: float, to: int = FOLLOWER, tp: TP = TP0) -> None:
    """The leader answers a fetch with no records and a preferred read replica."""
    policy.on_fetch_response(tp, LEADER, LEADER, to, now)


def established(
    policy: ReadReplicaPolicy[TP], now: float, node: int = FOLLOWER, tp: TP = TP0
) -> None:
    """Redirected to ``node``, which then served a fetch without error."""
    redirect(policy, now, node, tp)
    assert policy.on_fetch_response(tp, node, LEADER, -1, now) is None


# -- construction ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"lease_s": 0}, "lease_s"),
        ({"lease_s": -1}, "lease_s"),
        ({"lease_s": math.nan}, "lease_s"),
        ({"lease_s": math.inf}, "lease_s"),
        ({"lease_s": 1, "backoff_s": -0.1}, "backoff_s"),
        ({"lease_s": 1, "backoff_s": 2.0, "max_backoff_s": 1.0}, "max_backoff_s"),
        ({"lease_s": 1, "max_backoff_s": math.nan}, "max_backoff_s"),
    ],
)
def test_invalid_configuration_names_the_argument(kwargs: dict[str, float], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        ReadReplicaPolicy(**kwargs)


# -- rule 2: the cache and its lease --------------------------------------------------------------


def test_no_hint_reads_from_leader() -> None:
    policy, view = make_policy(), View()
    assert select(policy, view, 0.0) == Route(LEADER, "leader")
    assert policy.on_fetch_response(TP0, LEADER, LEADER, -1, 0.0) is None
    assert select(policy, view, 1.0) == Route(LEADER, "leader")
    assert policy.snapshot() == {}


def test_hint_is_cached_and_followed() -> None:
    policy, view = make_policy(), View()
    change = policy.on_fetch_response(TP0, LEADER, LEADER, FOLLOWER, 5.0)
    assert change is not None
    assert (change.tp, change.old, change.new, change.reason) == (TP0, None, FOLLOWER, "hint")
    assert select(policy, view, 5.0) == Route(FOLLOWER, "preferred")
    assert policy.preferred(TP0) == FOLLOWER
    assert policy.snapshot() == {TP0: (FOLLOWER, 5.0 + LEASE)}


def test_lease_starts_on_change_not_on_repeated_hint() -> None:
    policy, view = make_policy(), View()
    t0 = 10.0
    redirect(policy, t0)
    # The same hint again, just before the lease ends, neither changes routing nor extends it.
    assert policy.on_fetch_response(TP0, LEADER, LEADER, FOLLOWER, t0 + LEASE - 1) is None
    assert policy.snapshot() == {TP0: (FOLLOWER, t0 + LEASE)}
    assert select(policy, view, t0 + LEASE - 0.5).node == FOLLOWER
    route = select(policy, view, t0 + LEASE)
    assert route.node == LEADER
    assert route.change is not None
    assert (route.change.old, route.change.new, route.change.reason) == (
        FOLLOWER,
        None,
        "lease-expired",
    )
    assert policy.preferred(TP0) is None


def test_lease_expiry_then_leader_renews_with_a_fresh_lease() -> None:
    policy, view = make_policy(), View()
    redirect(policy, 0.0)
    assert select(policy, view, LEASE).node == LEADER
    redirect(policy, LEASE + 0.01)
    assert policy.snapshot() == {TP0: (FOLLOWER, 2 * LEASE + 0.01)}
    assert select(policy, view, LEASE + 0.02).node == FOLLOWER


def test_preferred_with_now_hides_an_expired_entry() -> None:
    policy = make_policy()
    redirect(policy, 0.0)
    assert policy.preferred(TP0, now=LEASE - 1) == FOLLOWER
    assert policy.preferred(TP0, now=LEASE) is None


def test_new_replica_replaces_old_one_and_restarts_lease() -> None:
    policy, view = make_policy(), View()
    redirect(policy, 0.0, FOLLOWER)
    change = policy.on_fetch_response(TP0, LEADER, LEADER, OTHER, 100.0)
    assert change is not None
    assert (change.old, change.new) == (FOLLOWER, OTHER)
    assert policy.snapshot() == {TP0: (OTHER, 100.0 + LEASE)}
    assert select(policy, view, 100.0).node == OTHER


def test_minus_one_from_follower_keeps_reading_there() -> None:
    policy, view = make_policy(), View()
    redirect(policy, 0.0)
    for i in range(1, 50):
        # kafka-python dropped the cache here, alternating leader and follower fetches.
        assert policy.on_fetch_response(TP0, FOLLOWER, LEADER, -1, float(i)) is None
        assert select(policy, view, float(i)) == Route(FOLLOWER, "preferred")
    assert policy.snapshot() == {TP0: (FOLLOWER, LEASE)}


def test_minus_one_from_leader_changes_nothing() -> None:
    # Java keeps the entry too (FetchCollector only updates on a hint != -1).
    policy = make_policy()
    view = View(backing_off={FOLLOWER})
    established(policy, 0.0)
    assert select(policy, view, 1.0).node == LEADER  # follower unusable for now
    assert policy.on_fetch_response(TP0, LEADER, LEADER, -1, 1.0) is None
    assert policy.preferred(TP0) == FOLLOWER
    view.backing.clear()
    assert select(policy, view, 2.0) == Route(FOLLOWER, "preferred")


def test_hint_naming_the_responder_itself_means_leader() -> None:
    policy, view = make_policy(), View()
    assert policy.on_fetch_response(TP0, LEADER, LEADER, LEADER, 0.0) is None
    assert policy.snapshot() == {}
    assert select(policy, view, 0.0).node == LEADER


def test_self_hint_from_leader_drops_cached_replica() -> None:
    policy = make_policy()
    view = View(backing_off={FOLLOWER})
    established(policy, 0.0)
    change = policy.on_fetch_response(TP0, LEADER, LEADER, LEADER, 1.0)
    assert change is not None
    assert (change.old, change.new) == (FOLLOWER, None)
    assert policy.preferred(TP0) is None
    view.backing.clear()
    assert select(policy, view, 2.0).node == LEADER


def test_follower_naming_itself_counts_as_failed_redirect() -> None:
    policy, view = make_policy(), View()
    redirect(policy, 0.0)
    change = policy.on_fetch_response(TP0, FOLLOWER, LEADER, FOLLOWER, 0.01)
    assert change is not None and change.old == FOLLOWER
    route = select(policy, view, 0.02)
    assert route.reason == "backoff"
    assert route.retry_at == pytest.approx(0.01 + BACKOFF)


def test_hint_naming_the_leader_is_not_cached() -> None:
    policy, view = make_policy(), View()
    assert policy.on_fetch_response(TP0, FOLLOWER, LEADER, LEADER, 0.0) is None
    assert policy.snapshot() == {}
    assert select(policy, view, 0.0).node == LEADER


def test_partitions_are_independent() -> None:
    policy, view = make_policy(), View()
    redirect(policy, 0.0, FOLLOWER, TP0)
    redirect(policy, 0.0, OTHER, TP1)
    assert select(policy, view, 1.0, TP0).node == FOLLOWER
    assert select(policy, view, 1.0, TP1).node == OTHER
    assert select(policy, view, 1.0, TP2).node == LEADER
    policy.forget(TP0)
    assert select(policy, view, 1.0, TP0).node == LEADER
    assert select(policy, view, 1.0, TP1).node == OTHER
    policy.forget_all([TP1])
    assert policy.snapshot() == {}


# -- rule 3: hints are followed without client_rack -----------------------------------------------


def test_hint_followed_without_client_rack() -> None:
    # A consumer without client_rack sends rack_id "" and a custom selector may still redirect
    # it; aiokafka ignored such hints and looped on empty responses.  The policy knows nothing of
    # racks: it follows the hint.
    policy, view = ReadReplicaPolicy[TP](LEASE), View()
    redirect(policy, 0.0)
    fetched = [select(policy, view, 0.01 * i).node for i in range(1, 20)]
    assert fetched == [FOLLOWER] * 19


# -- rule 4: routing ------------------------------------------------------------------------------


def test_hinted_node_missing_from_metadata_routes_to_leader_and_refreshes() -> None:
    policy = make_policy()
    view = View(known={LEADER, OTHER})
    established(policy, 0.0)  # not awaiting a redirect any more
    route = select(policy, view, 1.0)
    assert route == Route(LEADER, "leader", refresh_metadata=True)
    # The entry is kept: as soon as metadata knows the node again, reads go back to it.
    assert policy.preferred(TP0) == FOLLOWER
    view.known.add(FOLLOWER)
    assert select(policy, view, 1.5) == Route(FOLLOWER, "preferred")


def test_redirect_to_node_missing_from_metadata_backs_off_and_refreshes() -> None:
    policy = make_policy()
    view = View(known={LEADER, OTHER})
    redirect(policy, 0.0)
    route = select(policy, view, 0.01)
    assert route.node is None
    assert route.reason == "backoff"
    assert route.refresh_metadata
    assert route.retry_at == pytest.approx(0.01 + BACKOFF)
    # The entry is kept while the refresh is under way.
    assert policy.preferred(TP0) == FOLLOWER
    assert select(policy, view, 0.02).reason == "backoff"
    # The refresh knows the node again: the partition reads from it at once, without sitting
    # out the backoff and without another round trip to the leader.
    view.known.add(FOLLOWER)
    assert policy.on_metadata(view.known, {TP0: LEADER}) == []
    assert select(policy, view, 0.03) == Route(FOLLOWER, "preferred")


def test_refresh_without_the_hinted_node_keeps_the_backoff() -> None:
    policy = make_policy()
    view = View(known={LEADER, OTHER})
    redirect(policy, 0.0)
    route = select(policy, view, 0.0)
    assert route.reason == "backoff" and route.retry_at is not None
    changes = policy.on_metadata(view.known, {TP0: LEADER})
    assert [(c.old, c.reason) for c in changes] == [(FOLLOWER, "left-metadata")]
    assert select(policy, view, route.retry_at - 0.01).reason == "backoff"
    assert select(policy, view, route.retry_at) == Route(LEADER, "leader")


def test_metadata_does_not_lift_other_backoffs() -> None:
    policy = make_policy()
    view = View(backing_off={FOLLOWER})
    redirect(policy, 0.0)
    assert select(policy, view, 0.0).reason == "backoff"  # target known, but backing off
    policy.on_metadata(view.known, {TP0: LEADER})
    assert select(policy, view, 0.05).reason == "backoff"
    outcome = policy.on_partition_error(TP0, REPLICA_NOT_AVAILABLE, LEADER, LEADER, 1.0)
    policy.on_metadata(view.known, {TP0: LEADER})
    assert select(policy, view, 1.01) == Route(None, "backoff", retry_at=outcome.retry_at)


def test_hinted_node_backing_off_routes_to_leader_without_refresh() -> None:
    policy = make_policy()
    view = View(backing_off={FOLLOWER})
    established(policy, 0.0)
    assert select(policy, view, 1.0) == Route(LEADER, "leader")
    view.backing.clear()
    assert select(policy, view, 2.0) == Route(FOLLOWER, "preferred")


def test_unknown_leader() -> None:
    policy = make_policy()
    view = View(known={FOLLOWER})
    assert select(policy, view, 0.0) == Route(None, "no-leader", refresh_metadata=True)
    assert select(policy, View(), 0.0, leader=None) == Route(
        None, "no-leader", refresh_metadata=True
    )
    assert select(policy, View(), 0.0, leader=-1).reason == "no-leader"


def test_leader_backing_off_is_not_returned() -> None:
    policy = make_policy()
    assert select(policy, View(backing_off={LEADER}), 0.0) == Route(None, "leader-backoff")


def test_cached_replica_that_became_leader_is_dropped() -> None:
    policy, view = make_policy(), View()
    established(policy, 0.0)
    route = select(policy, view, 1.0, leader=FOLLOWER)
    assert route.node == FOLLOWER
    assert route.reason == "leader"
    assert route.change is not None and route.change.reason == "became-leader"
    assert policy.preferred(TP0) is None


# -- rule 5: invalidation -------------------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(DROP_CODES))
def test_error_from_follower_drops_replica_and_refetches_from_leader(code: int) -> None:
    name, refresh = DROP_CODES[code]
    policy, view = make_policy(), View()
    established(policy, 0.0)
    outcome = policy.on_partition_error(TP0, code, FOLLOWER, LEADER, 5.0)
    assert outcome.action is FetchErrorAction.REFETCH_FROM_LEADER
    assert outcome.error_name == name
    assert outcome.drop_replica
    assert outcome.change is not None
    assert (outcome.change.old, outcome.change.new, outcome.change.reason) == (
        FOLLOWER,
        None,
        name,
    )
    assert outcome.refresh_metadata is refresh
    assert outcome.retry_at is None  # the replica had served: back to the leader at once
    assert select(policy, view, 5.0) == Route(LEADER, "leader")


@pytest.mark.parametrize("code", sorted(DROP_CODES))
def test_error_from_leader_drops_replica_and_retries_after_backoff(code: int) -> None:
    _, refresh = DROP_CODES[code]
    policy = make_policy()
    view = View(backing_off={FOLLOWER})
    established(policy, 0.0)
    outcome = policy.on_partition_error(TP0, code, LEADER, LEADER, 5.0)
    assert outcome.action is FetchErrorAction.RETRY
    assert outcome.drop_replica
    assert outcome.refresh_metadata is refresh
    assert outcome.retry_at == pytest.approx(5.0 + BACKOFF)
    assert select(policy, view, 5.05).reason == "backoff"
    view.backing.clear()
    assert select(policy, view, 5.0 + BACKOFF) == Route(LEADER, "leader")


def test_not_leader_with_new_leader_kip951_is_fetched_at_once() -> None:
    policy, view = make_policy(), View()
    outcome = policy.on_partition_error(
        TP0, NOT_LEADER_OR_FOLLOWER, LEADER, LEADER, 1.0, new_leader=3
    )
    assert outcome.action is FetchErrorAction.RETRY
    assert outcome.retry_at is None
    assert select(policy, view, 1.0, leader=3) == Route(3, "leader")
    # A "new" leader that is the same node is no move: back off.
    outcome = policy.on_partition_error(
        TP0, NOT_LEADER_OR_FOLLOWER, LEADER, LEADER, 2.0, new_leader=LEADER
    )
    assert outcome.retry_at == pytest.approx(2.0 + BACKOFF)


def test_node_failure_drops_every_entry_on_that_node() -> None:
    policy, view = make_policy(), View()
    established(policy, 0.0, FOLLOWER, TP0)
    established(policy, 0.0, FOLLOWER, TP1)
    established(policy, 0.0, OTHER, TP2)
    changes = policy.on_node_failure(FOLLOWER, 1.0)
    assert {(c.tp, c.old, c.new, c.reason) for c in changes} == {
        (TP0, FOLLOWER, None, "node-failure"),
        (TP1, FOLLOWER, None, "node-failure"),
    }
    assert policy.snapshot() == {TP2: (OTHER, LEASE)}
    # The replicas had served: no backoff, straight to the leader.
    assert select(policy, view, 1.0, TP0) == Route(LEADER, "leader")
    assert select(policy, view, 1.0, TP2) == Route(OTHER, "preferred")
    assert policy.on_node_failure(LEADER, 1.0) == []


def test_node_leaving_metadata_drops_its_entries() -> None:
    policy = make_policy()
    established(policy, 0.0, FOLLOWER, TP0)
    established(policy, 0.0, OTHER, TP1)
    changes = policy.on_metadata([LEADER, OTHER], {TP0: LEADER, TP1: LEADER})
    assert [(c.tp, c.old, c.reason) for c in changes] == [(TP0, FOLLOWER, "left-metadata")]
    assert policy.snapshot() == {TP1: (OTHER, LEASE)}


def test_metadata_making_the_replica_leader_drops_it() -> None:
    policy = make_policy()
    established(policy, 0.0, FOLLOWER, TP0)
    established(policy, 0.0, FOLLOWER, TP1)
    changes = policy.on_metadata({LEADER, FOLLOWER, OTHER}, {TP0: FOLLOWER})
    assert [(c.tp, c.reason) for c in changes] == [(TP0, "became-leader")]
    assert policy.preferred(TP1) == FOLLOWER


# -- rule 6: OFFSET_OUT_OF_RANGE ------------------------------------------------------------------


def test_offset_out_of_range_from_follower_is_not_a_reset() -> None:
    policy, view = make_policy(), View()
    established(policy, 0.0)
    outcome = policy.on_partition_error(TP0, OFFSET_OUT_OF_RANGE, FOLLOWER, LEADER, 1.0)
    assert outcome.action is FetchErrorAction.REFETCH_FROM_LEADER
    assert outcome.drop_replica
    assert outcome.retry_at is None
    assert not outcome.refresh_metadata
    assert select(policy, view, 1.0) == Route(LEADER, "leader")


def test_offset_out_of_range_from_follower_after_lease_expired_is_not_a_reset() -> None:
    # The Java client decides "follower" by whether an entry was cached, so an entry that
    # expired while the fetch was in flight turns a follower's answer into a reset.  Deciding
    # by the responder does not.
    policy, view = make_policy(), View()
    established(policy, 0.0)
    assert select(policy, view, LEASE).node == LEADER  # lease expired, entry gone
    outcome = policy.on_partition_error(TP0, OFFSET_OUT_OF_RANGE, FOLLOWER, LEADER, LEASE)
    assert outcome.action is FetchErrorAction.REFETCH_FROM_LEADER
    assert not outcome.drop_replica


def test_offset_out_of_range_from_leader_resets() -> None:
    policy = make_policy()
    outcome = policy.on_partition_error(TP0, OFFSET_OUT_OF_RANGE, LEADER, LEADER, 1.0)
    assert outcome == ErrorOutcome(FetchErrorAction.RESET, "OFFSET_OUT_OF_RANGE")
    assert select(policy, View(), 1.0) == Route(LEADER, "leader")


def test_offset_out_of_range_with_unknown_leader_is_not_a_reset() -> None:
    policy = make_policy()
    for leader in (None, -1):
        outcome = policy.on_partition_error(TP0, OFFSET_OUT_OF_RANGE, LEADER, leader, 1.0)
        assert outcome.action is FetchErrorAction.REFETCH_FROM_LEADER


def test_lagging_follower_loop_is_bounded_and_never_resets() -> None:
    # The leader keeps naming a follower that answers OFFSET_OUT_OF_RANGE.
    policy, view = make_policy(), View()
    now, sent = 0.0, Counter[int]()
    while now < 10.0:
        route = select(policy, view, now)
        if route.node is None:
            assert route.retry_at is not None
            now = route.retry_at
            continue
        sent[route.node] += 1
        now += 0.002
        if route.node == LEADER:
            redirect(policy, now)
        else:
            outcome = policy.on_partition_error(TP0, OFFSET_OUT_OF_RANGE, route.node, LEADER, now)
            assert outcome.action is FetchErrorAction.REFETCH_FROM_LEADER
    assert sum(sent.values()) < 50
    assert sent[FOLLOWER] >= 5  # still trying the follower now and then


# -- other errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("responder", [LEADER, FOLLOWER])
@pytest.mark.parametrize(
    ("code", "name"),
    [
        (TOPIC_AUTHORIZATION_FAILED, "TOPIC_AUTHORIZATION_FAILED"),
        (UNSUPPORTED_COMPRESSION_TYPE, "UNSUPPORTED_COMPRESSION_TYPE"),
    ],
)
def test_fatal_errors_are_raised(code: int, name: str, responder: int) -> None:
    policy = make_policy()
    established(policy, 0.0)
    outcome = policy.on_partition_error(TP0, code, responder, LEADER, 1.0)
    assert outcome.action is FetchErrorAction.RAISE
    assert outcome.error_name == name


@pytest.mark.parametrize("code", [CORRUPT_MESSAGE, 12345])
def test_corrupt_or_unknown_error_raises_from_leader_refetches_from_follower(code: int) -> None:
    policy, view = make_policy(), View()
    assert policy.on_partition_error(TP0, code, LEADER, LEADER, 1.0).action is (
        FetchErrorAction.RAISE
    )
    established(policy, 2.0)
    outcome = policy.on_partition_error(TP0, code, FOLLOWER, LEADER, 3.0)
    assert outcome.action is FetchErrorAction.REFETCH_FROM_LEADER
    assert outcome.drop_replica
    assert select(policy, view, 3.0).node == LEADER


def test_unknown_server_error_retries_same_route_after_backoff() -> None:
    policy, view = make_policy(), View()
    established(policy, 0.0)
    outcome = policy.on_partition_error(TP0, UNKNOWN_SERVER_ERROR, FOLLOWER, LEADER, 1.0)
    assert outcome.action is FetchErrorAction.RETRY
    assert not outcome.drop_replica
    assert outcome.retry_at == pytest.approx(1.0 + BACKOFF)
    assert select(policy, view, 1.0).reason == "backoff"
    assert select(policy, view, 1.0 + BACKOFF).node == FOLLOWER


def test_error_code_zero_is_rejected() -> None:
    with pytest.raises(ValueError, match="error_code"):
        make_policy().on_partition_error(TP0, NONE, LEADER, LEADER, 0.0)


# -- rule 8: never spin ---------------------------------------------------------------------------


class Sim:
    """Drives a policy the way the fetcher does, against a scripted cluster, in simulated time.

    The leader (node 1) answers every fetch for TP0 with a redirect to ``redirect_to`` and no
    records; any other node answers with records.  Metadata is refreshed (in one round trip)
    when a route asks for it, and with ``refresh_on_failure`` after every failed connection too.
    """

    def __init__(
        self,
        policy: ReadReplicaPolicy[TP],
        redirect_to: int | None = FOLLOWER,
        rtt: float = 0.002,
        reconnect_backoff: float = 0.05,
        refresh_on_failure: bool = False,
    ) -> None:
        self.policy = policy
        self.refresh_on_failure = refresh_on_failure
        self.redirect_to = redirect_to
        self.rtt = rtt
        self.reconnect_backoff = reconnect_backoff
        self.now = 0.0
        self.registered = {1, 2, 3}  # brokers in the cluster (what a metadata refresh returns)
        self.alive = {1, 2, 3}  # brokers accepting connections
        self.metadata = set(self.registered)  # the client's metadata
        self.reconnect_until: dict[int, float] = {}
        self.sent: list[tuple[float, int]] = []  # (time, node) of every fetch attempt
        self.records: list[tuple[float, int]] = []  # (time, node) of every response with records
        self.refreshes = 0

    def node_known(self, node: int) -> bool:
        return node in self.metadata

    def node_backing_off(self, node: int) -> bool:
        return self.reconnect_until.get(node, -math.inf) > self.now

    def refresh_metadata(self) -> None:
        self.refreshes += 1
        self.metadata = set(self.registered)
        self.policy.on_metadata(self.metadata, {TP0: LEADER})

    def step(self) -> None:
        route = self.policy.select(
            TP0,
            LEADER,
            self.now,
            node_known=self.node_known,
            node_backing_off=self.node_backing_off,
        )
        node = route.node
        if route.refresh_metadata:
            self.refresh_metadata()
            if node is None:
                # A fetcher waits for retry_at or for the metadata update, whichever comes first.
                self.now += self.rtt
                return
        if node is None:
            if route.retry_at is not None:
                assert route.retry_at > self.now
                self.now = route.retry_at
            else:
                self.now += 0.01
            return
        self.sent.append((self.now, node))
        self.now += self.rtt
        if node not in self.alive:
            self.reconnect_until[node] = self.now + self.reconnect_backoff
            self.policy.on_node_failure(node, self.now)
            if self.refresh_on_failure:
                self.refresh_metadata()
        elif node == LEADER and self.redirect_to is not None:
            self.policy.on_fetch_response(TP0, LEADER, LEADER, self.redirect_to, self.now)
        else:
            self.records.append((self.now, node))
            self.policy.on_fetch_response(TP0, node, LEADER, -1, self.now)

    def run_until(self, t: float) -> None:
        while self.now < t:
            self.step()

    def sent_between(self, start: float, end: float) -> int:
        return sum(1 for t, _ in self.sent if start <= t < end)


def test_dead_follower_fetch_rate_is_bounded() -> None:
    sim = Sim(make_policy())
    sim.alive.discard(FOLLOWER)  # in metadata, but every connection to it fails
    sim.run_until(10.0)
    assert len(sim.sent) < 50, f"{len(sim.sent)} fetches in 10 s"
    assert sim.sent_between(5.0, 10.0) <= 2 * 5 / MAX_BACKOFF + 2
    assert sim.records == []
    # The backoff grows: the first retries come quickly, later ones about max_backoff apart.
    leader_times = [t for t, node in sim.sent if node == LEADER]
    gaps = [b - a for a, b in itertools.pairwise(leader_times)]
    assert gaps[0] < 0.2
    assert all(gap >= MAX_BACKOFF for gap in gaps[-3:])


def test_unreachable_follower_in_reconnect_backoff_fetch_rate_is_bounded() -> None:
    sim = Sim(make_policy(), reconnect_backoff=1000.0)
    sim.alive.discard(FOLLOWER)
    sim.run_until(10.0)
    assert len(sim.sent) < 50, f"{len(sim.sent)} fetches in 10 s"
    # After the first failed connection only the leader is asked, about once per backoff.
    assert sum(1 for _, node in sim.sent if node == FOLLOWER) == 1


def test_follower_missing_from_metadata_fetch_rate_is_bounded() -> None:
    sim = Sim(make_policy())
    sim.alive.discard(FOLLOWER)
    sim.registered.discard(FOLLOWER)
    sim.metadata.discard(FOLLOWER)
    sim.run_until(10.0)
    assert len(sim.sent) < 50, f"{len(sim.sent)} fetches in 10 s"
    assert all(node == LEADER for _, node in sim.sent)
    assert sim.refreshes < 50


def test_live_follower_is_read_after_first_redirect() -> None:
    sim = Sim(make_policy())
    sim.run_until(10.0)
    nodes = [node for _, node in sim.sent]
    assert nodes[0] == LEADER
    assert set(nodes[1:]) == {FOLLOWER}
    assert len(nodes) > 1000
    assert {node for _, node in sim.records} == {FOLLOWER}


def test_follower_down_then_back_is_read_again_promptly() -> None:
    # aiokafka looped leader -> redirect -> leader with 0 records until the periodic metadata
    # refresh after a follower came back.  Here the policy asks for a refresh at once.
    sim = Sim(make_policy(), refresh_on_failure=True)
    sim.run_until(1.0)
    sim.alive.discard(FOLLOWER)
    sim.registered.discard(FOLLOWER)
    sim.run_until(3.0)
    assert not any(t >= 1.1 for t, _ in sim.records)
    assert FOLLOWER not in sim.metadata
    sim.alive.add(FOLLOWER)
    sim.registered.add(FOLLOWER)
    sim.run_until(6.0)
    back = [t for t, node in sim.records if node == FOLLOWER and t >= 3.0]
    assert back, "the follower was never read again"
    assert back[0] <= 3.0 + MAX_BACKOFF + 0.1
    assert sim.sent_between(1.1, 3.0) < 40
    assert all(node == FOLLOWER for t, node in sim.sent if t >= back[0])


def test_recovery_next_redirect_routes_to_returning_follower() -> None:
    policy = make_policy()
    view = View(known={LEADER, OTHER})  # the follower left metadata
    redirect(policy, 0.0)
    assert select(policy, view, 0.0).reason == "backoff"
    assert policy.on_metadata(view.known, {TP0: LEADER})[0].reason == "left-metadata"
    assert select(policy, view, 1.0) == Route(LEADER, "leader")
    view.known.add(FOLLOWER)  # it is back
    policy.on_metadata(view.known, {TP0: LEADER})
    redirect(policy, 1.01)
    assert select(policy, view, 1.02) == Route(FOLLOWER, "preferred")


def test_backoff_grows_to_the_cap_and_resets_on_success() -> None:
    policy, view = make_policy(), View(backing_off={FOLLOWER})
    now, delays = 0.0, []
    for _ in range(8):
        redirect(policy, now)
        route = select(policy, view, now)
        assert route.reason == "backoff" and route.retry_at is not None
        delays.append(route.retry_at - now)
        now = route.retry_at
    assert delays == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0])
    # The follower comes back and serves: the count starts over.
    view.backing.clear()
    redirect(policy, now)
    assert select(policy, view, now).node == FOLLOWER
    policy.on_fetch_response(TP0, FOLLOWER, LEADER, -1, now + 0.01)
    policy.on_node_failure(FOLLOWER, now + 0.02)
    view.backing.add(FOLLOWER)
    redirect(policy, now + 0.03)
    route = select(policy, view, now + 0.03)
    assert route.retry_at == pytest.approx(now + 0.03 + BACKOFF)


def test_failed_redirect_on_connection_failure_backs_off() -> None:
    policy, view = make_policy(), View()
    redirect(policy, 0.0)
    assert select(policy, view, 0.0).node == FOLLOWER
    changes = policy.on_node_failure(FOLLOWER, 0.5)
    assert [(c.old, c.reason) for c in changes] == [(FOLLOWER, "node-failure")]
    route = select(policy, view, 0.5)
    assert (route.node, route.reason) == (None, "backoff")
    assert route.retry_at == pytest.approx(0.5 + BACKOFF)
    assert select(policy, view, 0.5 + BACKOFF) == Route(LEADER, "leader")


def test_huge_failure_count_does_not_overflow() -> None:
    policy, view = ReadReplicaPolicy[TP](LEASE, backoff_s=1.0, max_backoff_s=2.0), View()
    now, delay = 0.0, 0.0
    for _ in range(1100):
        outcome = policy.on_partition_error(TP0, REPLICA_NOT_AVAILABLE, LEADER, LEADER, now)
        assert outcome.retry_at is not None
        delay, now = outcome.retry_at - now, outcome.retry_at
    assert delay == 2.0
    assert select(policy, view, now).node == LEADER


# -- rule 9: old brokers --------------------------------------------------------------------------


def test_note_old_broker_is_true_once_per_node() -> None:
    policy = make_policy()
    assert policy.note_old_broker(4) is True
    assert policy.note_old_broker(4) is False
    assert policy.note_old_broker(5) is True


def test_replica_on_broker_without_fetch_v11_is_not_used() -> None:
    policy, view = make_policy(), View()
    established(policy, 0.0)
    route = select(policy, view, 1.0, broker_supports_rack=lambda node: node != FOLLOWER)
    assert route.node == LEADER
    assert route.change is not None and route.change.reason == "old-broker"
    assert policy.preferred(TP0) is None
    # Leaders that support it are read as usual.
    redirect(policy, 2.0, OTHER)
    assert select(policy, view, 2.0, broker_supports_rack=lambda node: True).node == OTHER


# -- property: select never routes to an unusable node -------------------------------------------

NODES = list(range(5))
TPS = [TP0, TP1]
CODES = [
    UNKNOWN_SERVER_ERROR,
    OFFSET_OUT_OF_RANGE,
    CORRUPT_MESSAGE,
    TOPIC_AUTHORIZATION_FAILED,
    77,
    *DROP_CODES,
]
leaders = st.one_of(st.none(), st.sampled_from(NODES))
events = st.one_of(
    st.tuples(st.just("advance"), st.floats(0.0, 3.0)),
    st.tuples(st.just("select"), st.sampled_from(TPS), leaders, st.booleans()),
    st.tuples(
        st.just("response"),
        st.sampled_from(TPS),
        st.sampled_from(NODES),
        leaders,
        st.integers(-1, 5),
    ),
    st.tuples(
        st.just("error"),
        st.sampled_from(TPS),
        st.sampled_from(CODES),
        st.sampled_from(NODES),
        leaders,
        leaders,
    ),
    st.tuples(st.just("node_failure"), st.sampled_from(NODES)),
    st.tuples(
        st.just("metadata"),
        st.frozensets(st.sampled_from(NODES)),
        st.dictionaries(st.sampled_from(TPS), st.sampled_from(NODES)),
    ),
    st.tuples(st.just("known"), st.frozensets(st.sampled_from(NODES))),
    st.tuples(st.just("backing"), st.frozensets(st.sampled_from(NODES))),
)


@settings(max_examples=100, deadline=None)
@given(
    st.floats(1.0, 50.0),
    st.floats(0.0, 0.5),
    st.lists(events, max_size=60),
)
def test_select_never_routes_to_unknown_or_backing_off_node_or_during_backoff(
    lease: float, backoff: float, script: list[tuple[object, ...]]
) -> None:
    policy = ReadReplicaPolicy[TP](lease, backoff_s=backoff, max_backoff_s=max(backoff, 1.0))
    view = View(known=NODES)  # node_backing_off asserts that the node is known
    old_brokers = {4}
    now = 0.0
    hinted: dict[TP, set[int]] = {tp: set() for tp in TPS}
    no_fetch_before: dict[TP, float] = {tp: -math.inf for tp in TPS}
    liftable: dict[TP, bool] = dict.fromkeys(TPS, False)
    for event in script:
        kind = event[0]
        if kind == "advance":
            now += event[1]  # type: ignore[operator]
        elif kind == "select":
            _, tp, leader, check_rack = event
            route = policy.select(
                tp,  # type: ignore[arg-type]
                leader,  # type: ignore[arg-type]
                now,
                node_known=view.node_known,
                node_backing_off=view.node_backing_off,
                broker_supports_rack=(lambda n: n not in old_brokers) if check_rack else None,
            )
            if route.reason == "backoff":
                assert route.node is None
                assert route.retry_at is not None and route.retry_at >= now
                no_fetch_before[tp] = max(no_fetch_before[tp], route.retry_at)  # type: ignore[index]
                # A metadata update that knows the awaited node again may lift this backoff.
                liftable[tp] = route.refresh_metadata  # type: ignore[index]
            if route.node is not None:
                assert view.node_known(route.node)
                assert route.node not in view.backing
                assert now >= no_fetch_before[tp]  # type: ignore[index]
                assert route.node == leader or route.node in hinted[tp]  # type: ignore[index]
                if route.reason == "preferred":
                    assert route.node != leader
                    if check_rack:
                        assert route.node not in old_brokers
        elif kind == "response":
            _, tp, responder, leader, hint = event
            policy.on_fetch_response(tp, responder, leader, hint, now)  # type: ignore[arg-type]
            if hint >= 0:  # type: ignore[operator]
                hinted[tp].add(hint)  # type: ignore[index, arg-type]
        elif kind == "error":
            _, tp, code, responder, leader, new_leader = event
            outcome = policy.on_partition_error(
                tp,  # type: ignore[arg-type]
                code,  # type: ignore[arg-type]
                responder,  # type: ignore[arg-type]
                leader,  # type: ignore[arg-type]
                now,
                new_leader=new_leader,  # type: ignore[arg-type]
            )
            if outcome.action is FetchErrorAction.RESET:
                assert code == OFFSET_OUT_OF_RANGE and responder == leader
            if code == OFFSET_OUT_OF_RANGE and responder != leader:
                assert outcome.action is FetchErrorAction.REFETCH_FROM_LEADER
            if outcome.retry_at is not None:
                assert outcome.retry_at >= now
                no_fetch_before[tp] = max(no_fetch_before[tp], outcome.retry_at)  # type: ignore[index]
                liftable[tp] = False  # type: ignore[index]
        elif kind == "node_failure":
            policy.on_node_failure(event[1], now)  # type: ignore[arg-type]
            assert all(node != event[1] for node, _ in policy.snapshot().values())
        elif kind == "metadata":
            _, nodes, leader_map = event
            policy.on_metadata(nodes, leader_map)  # type: ignore[arg-type]
            for tp, (node, _) in policy.snapshot().items():
                assert node in nodes  # type: ignore[operator]
                assert leader_map.get(tp) != node  # type: ignore[attr-defined]
                if liftable[tp]:
                    no_fetch_before[tp] = -math.inf
            for tp in TPS:
                liftable[tp] = False
        elif kind == "known":
            view.known = set(event[1])  # type: ignore[arg-type]
        elif kind == "backing":
            view.backing = set(event[1])  # type: ignore[arg-type]
        for node, expires_at in policy.snapshot().values():
            assert node >= 0
            assert expires_at <= now + lease
