"""Read-replica routing policy (KIP-392): which node to fetch a partition from, and when.

:class:`ReadReplicaPolicy` is a small, pure object.  It does no IO, never sleeps, never logs and
never reads a clock: the fetcher passes the time in (``now``, seconds on a monotonic clock) and asks
it questions about cluster state through callbacks.  Everything it decides comes back as plain data
(:class:`Route`, :class:`ErrorOutcome`, :class:`RoutingChange`) that the fetcher acts on, logs (one
DEBUG line per :class:`RoutingChange`) and counts.

The numbered rules quoted in the docstrings (the consumer's duties under KIP-392, as
docs/rack-awareness.rst explains them) are:

* Rule 2: a ``preferred_read_replica >= 0`` is cached per partition with a lease of
  ``metadata_max_age_ms``; the lease starts when the replica *changes*; ``-1`` changes nothing.
* Rule 3: a hint is followed whether or not ``client_rack`` is set (the policy has no notion of
  the client's rack at all).
* Rule 4: cached, unexpired, known to metadata and not backing off: fetch there; otherwise from
  the leader.  A hinted node missing from metadata asks for a metadata refresh.
* Rule 5: the cache entry is dropped on the listed errors, on a connection failure or timeout to
  the node, when the node leaves metadata, and on lease expiry.
* Rule 6: ``OFFSET_OUT_OF_RANGE`` from a follower is never a reset.
* Rule 8: never spin between a leader that redirects and a replica that cannot serve.
* Rule 9: brokers whose Fetch tops out below v11 are read from the leader only.

Rules 1, 7, 10 and 11 belong to the fetcher (request building, ListOffsets and
OffsetForLeaderEpoch routing, fetch sessions, logging and metrics).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Generic, Literal, TypeVar

from rackafka._backoff import Backoff, BackoffPolicy
from rackafka.errors import for_code

__all__ = [
    "ErrorOutcome",
    "FetchErrorAction",
    "ReadReplicaPolicy",
    "ReplicaLease",
    "Route",
    "RouteReason",
    "RoutingChange",
]

K = TypeVar("K", bound=Hashable)

RouteReason = Literal["preferred", "leader", "no-leader", "leader-backoff", "backoff"]
"""Why :meth:`ReadReplicaPolicy.select` chose what it chose.

* ``"preferred"``: the cached preferred read replica (``Route.node`` is set).
* ``"leader"``: the partition leader (``Route.node`` is set).
* ``"no-leader"``: the leader is unknown or missing from metadata; wait for a metadata refresh.
* ``"leader-backoff"``: the leader is in its reconnect backoff; wait for it.
* ``"backoff"``: the partition itself is backing off (rule 8) until ``Route.retry_at``.
"""


_Kind = Literal["retry", "offset", "fatal", "fatal-from-leader"]


@dataclass(frozen=True)
class _ErrorRule:
    drop: bool  # rule 5: drop the cached read replica
    refresh: bool  # ask for a metadata refresh (as the Java client does)
    kind: _Kind


# By the error's ``fetch_error_kind`` (errors.py). Drop set: rule 5.  Refresh set: the Java
# client's FetchCollector.handleInitializeErrors asks for a metadata update on every dropping
# error except UNKNOWN_LEADER_EPOCH (the broker is behind our metadata, so newer metadata
# cannot help: retry later).
_ERROR_RULES: dict[str, _ErrorRule] = {
    "retry": _ErrorRule(True, True, "retry"),
    "retry-no-refresh": _ErrorRule(True, False, "retry"),
    "retry-keep-replica": _ErrorRule(False, False, "retry"),
    "offset": _ErrorRule(True, False, "offset"),
    "fatal": _ErrorRule(False, False, "fatal"),
    "fatal-from-leader": _ErrorRule(True, False, "fatal-from-leader"),
}


class FetchErrorAction(str, Enum):
    """What the fetcher must do with a partition after a partition-level Fetch error."""

    RETRY = "retry"
    """Fetch the same position again; :meth:`ReadReplicaPolicy.select` says where and when."""

    REFETCH_FROM_LEADER = "refetch-from-leader"
    """The error came from a read replica, whose cache entry is gone: fetch the same position
    again, which :meth:`ReadReplicaPolicy.select` now routes to the leader.  Never a reset."""

    RESET = "reset"
    """``OFFSET_OUT_OF_RANGE`` from the leader: apply ``auto_offset_reset`` (or raise
    ``OffsetOutOfRangeError`` when it is ``"none"``)."""

    RAISE = "raise"
    """Fatal for the user (e.g. ``TOPIC_AUTHORIZATION_FAILED``): raise it from ``getmany``/
    ``getone``."""


@dataclass(frozen=True)
class RoutingChange(Generic[K]):
    """A change of the node a partition is read from, for one DEBUG log line and a counter.

    Attributes:
        tp: the partition.
        old: the read replica it was routed to before, or ``None`` for the leader.
        new: the read replica it is routed to now, or ``None`` for the leader.
        reason: why, e.g. ``"hint"``, ``"lease-expired"``, ``"node-failure"``,
            ``"left-metadata"``, ``"became-leader"``, ``"hint-is-leader"``, ``"old-broker"``, or
            the name of the Fetch error that dropped the replica (``"NOT_LEADER_OR_FOLLOWER"``).
    """

    tp: K
    old: int | None
    new: int | None
    reason: str


@dataclass(frozen=True)
class Route(Generic[K]):
    """Where to send the next fetch for one partition.

    Attributes:
        node: the node to fetch from, or ``None`` to skip this partition for now.
        reason: see :data:`RouteReason`.
        refresh_metadata: ask the cluster for a metadata refresh (a hinted node is missing from
            metadata, or there is no usable leader).
        retry_at: when ``reason == "backoff"``: the time at which the partition may be fetched
            again.
        change: a routing change this call made (the cached replica was dropped), to log.
    """

    node: int | None
    reason: RouteReason
    refresh_metadata: bool = False
    retry_at: float | None = None
    change: RoutingChange[K] | None = None


@dataclass(frozen=True)
class ErrorOutcome(Generic[K]):
    """The policy's decision on a partition-level Fetch error.

    Attributes:
        action: what the fetcher must do with the partition's position.
        error_name: the Kafka name of the error code, for logs.
        refresh_metadata: ask the cluster for a metadata refresh.
        retry_at: the partition backs off until then (rule 8); ``None`` means fetch again now.
            :meth:`ReadReplicaPolicy.select` enforces it, so the fetcher only needs it to know
            when to wake up.
        change: set when the partition's cached read replica was dropped (rule 5), to log.
    """

    action: FetchErrorAction
    error_name: str
    refresh_metadata: bool = False
    retry_at: float | None = None
    change: RoutingChange[K] | None = None

    @property
    def drop_replica(self) -> bool:
        """Whether the partition's cached read replica was dropped."""
        return self.change is not None


class ReplicaLease:
    """The routing state of one partition: its cached read replica and its rule 8 backoff."""

    __slots__ = ("awaiting", "backoff", "expires_at", "metadata_wait", "replica", "retry_at")

    def __init__(self, backoff: BackoffPolicy) -> None:
        #: The cached preferred read replica (rule 2), and the end of its lease.
        self.replica: int | None = None
        self.expires_at = 0.0
        #: The node a redirect sent us to, not yet heard from successfully.
        self.awaiting: int | None = None
        #: Failed redirects / retriable errors in a row (rule 8).
        self.backoff: Backoff = backoff.start()
        #: No fetch for this partition before then (rule 8).
        self.retry_at = -math.inf
        #: The backoff waits for metadata to know ``replica`` again.
        self.metadata_wait = False


class ReadReplicaPolicy(Generic[K]):
    """Per-partition read-replica cache and routing decisions for the fetcher (KIP-392).

    The fetcher asks :meth:`select` where to fetch each partition, and reports what happened
    through :meth:`on_fetch_response`, :meth:`on_partition_error`, :meth:`on_node_failure` and
    :meth:`on_metadata`.  Partitions are any hashable keys (normally ``TopicPartition``).
    Call :meth:`forget` when a partition is no longer assigned.

    Rule 8 (never spin): a *redirect* is a response that names a read replica.  The redirect
    fails when its target turns out unusable before it answered once without error: it is
    missing from metadata, backing off, too old, its connection fails or times out, or it answers
    with a partition error.  Each failed redirect, and each retriable error from the leader,
    makes the partition wait by :class:`~rackafka._backoff.BackoffPolicy`: ``backoff_s *
    2 ** (n - 1)`` seconds times a ``jitter`` factor, at most ``max_backoff_s``, where ``n``
    counts such failures in a row; any error-free response without a redirect resets
    ``n``.  So a leader that keeps naming a dead replica gets about one fetch per
    ``max_backoff_s``, not thousands per second, while a healthy redirect costs nothing.

    Arguments:
        lease_s: how long a preferred read replica stays valid after it was named, in seconds
            (``metadata_max_age_ms / 1000``, as in the Java client).
        backoff_s: first backoff of a partition after a failed redirect or a retriable error
            (``retry_backoff_ms / 1000``).
        max_backoff_s: the backoff doubles on each failure in a row up to this.
        jitter: the share by which each wait is randomly made shorter or longer (0 by
            default, so that the policy is deterministic; the fetcher passes the Java
            client's 20 %).

    Raises:
        ValueError: an argument is not a finite number in range; the message names it.
    """

    def __init__(
        self,
        lease_s: float,
        backoff_s: float = 0.1,
        max_backoff_s: float = 1.0,
        *,
        jitter: float = 0.0,
    ) -> None:
        if not _is_number(lease_s) or not lease_s > 0:
            raise ValueError(f"lease_s must be a finite number > 0, got {lease_s!r}")
        if not _is_number(backoff_s) or backoff_s < 0:
            raise ValueError(f"backoff_s must be a finite number >= 0, got {backoff_s!r}")
        if not _is_number(max_backoff_s) or max_backoff_s < backoff_s:
            raise ValueError(
                f"max_backoff_s must be a finite number >= backoff_s ({backoff_s!r}), "
                f"got {max_backoff_s!r}"
            )
        self._lease_s = float(lease_s)
        self._backoff = BackoffPolicy(backoff_s * 1000, max_backoff_s * 1000, jitter=jitter)
        self._states: dict[K, ReplicaLease] = {}
        self._old_brokers: set[int] = set()
        #: The plain routes (no change, no refresh) of each node: the fetcher asks for one
        #: per partition per request, and a Route never changes once made.
        self._plain_routes: dict[tuple[int, str], Route[K]] = {}

    # -- routing --------------------------------------------------------------------------------

    def select(
        self,
        tp: K,
        leader: int | None,
        now: float,
        *,
        node_known: Callable[[int], bool],
        node_backing_off: Callable[[int], bool],
        broker_supports_rack: Callable[[int], bool] | None = None,
    ) -> Route[K]:
        """Choose the node for the partition's next fetch (rules 4, 5, 8 and 9).

        In order:

        1. A partition backing off (rule 8) is not fetched: ``reason="backoff"`` until
           ``retry_at``.
        2. An expired lease drops the cached replica (rule 5); so does a cached replica that has
           become the leader.
        3. A cached replica that is in metadata, not backing off and, when
           ``broker_supports_rack`` is given, able to serve consumers (Fetch v11+, rule 9) is
           chosen (rule 4).
        4. Otherwise the leader.  A cached replica missing from metadata sets
           ``refresh_metadata`` (rule 4): it may have just come back, and aiokafka's failure mode
           was waiting for the periodic refresh.  The entry is *kept* until the refresh shows the
           node gone (:meth:`on_metadata`) or the lease expires, so the partition goes back to
           it as soon as metadata knows it again.  A broker too old to serve consumers drops the
           entry.
        5. If the cached replica is the target of the last redirect, the redirect failed: the
           partition backs off instead of asking the leader again (rule 8).  When the target is
           missing from metadata, a metadata update that knows it again ends that backoff
           (:meth:`on_metadata`).

        The returned node, when set, is always known to metadata and not backing off.

        Arguments:
            tp: the partition.
            leader: the partition leader's node id per metadata, ``None`` (or ``-1``) if unknown.
            now: current monotonic time, in seconds.
            node_known: whether a node id is in the current metadata.
            node_backing_off: whether a node is in its reconnect backoff.
            broker_supports_rack: whether a node's Fetch goes to v11 or more; ``None`` when the
                fetcher does not know yet (then it is not checked).
        """
        st = self._states.get(tp)
        change: RoutingChange[K] | None = None
        refresh = False
        if st is not None:
            if now < st.retry_at:
                return Route(None, "backoff", retry_at=st.retry_at)
            replica = st.replica
            if replica is not None:
                if now >= st.expires_at:
                    change = self._drop(tp, st, "lease-expired")
                    st.awaiting = None
                elif replica == leader:
                    change = self._drop(tp, st, "became-leader")
                    st.awaiting = None
                else:
                    known = node_known(replica)
                    supported = known and (
                        broker_supports_rack is None or broker_supports_rack(replica)
                    )
                    if supported and not node_backing_off(replica):
                        return self._plain(replica, "preferred")
                    refresh = not known
                    if known and not supported:
                        change = self._drop(tp, st, "old-broker")
                    if st.awaiting == replica:
                        st.awaiting = None
                        retry_at = self._fail(st, now)
                        st.metadata_wait = refresh and st.replica is not None
                        return Route(
                            None,
                            "backoff",
                            refresh_metadata=refresh,
                            retry_at=retry_at,
                            change=change,
                        )
        if leader is None or leader < 0 or not node_known(leader):
            return Route(None, "no-leader", refresh_metadata=True, change=change)
        if node_backing_off(leader):
            return Route(None, "leader-backoff", refresh_metadata=refresh, change=change)
        if refresh or change is not None:
            return Route(leader, "leader", refresh_metadata=refresh, change=change)
        return self._plain(leader, "leader")

    # -- events ---------------------------------------------------------------------------------

    def on_fetch_response(
        self,
        tp: K,
        responder: int,
        leader: int | None,
        preferred_read_replica: int,
        now: float,
    ) -> RoutingChange[K] | None:
        """Take in an error-free partition response; call it for every one, with or without records.

        * ``preferred_read_replica >= 0`` naming another node is a redirect (rule 2): the node is
          cached with a lease starting *now* if it differs from the cached one; the same hint
          again does not extend the lease, so the leader is asked again one lease after the
          replica was first named.  The hint is followed whether or not ``client_rack`` is set
          (rule 3).
        * ``-1`` changes nothing (rule 2).  From a follower it means "keep reading here".  From
          the leader it also keeps the entry, as the Java client does (it only updates the cache
          when the hint is not ``-1``); the leader is only read while a replica is cached when
          that replica is unusable, and lease expiry, node failure or an error from the replica
          bound how long such an entry can live.
        * A hint naming the responder itself (a leader never names itself, so this is
          nonsense) or the partition leader means "read from the leader": the entry is dropped.

        An error-free answer that is not a redirect proves the partition can be served: it
        resets the rule 8 failure count.  If it is a "read from the leader" answer from the node
        the last redirect pointed to, the redirect failed (rule 8).

        Arguments:
            tp: the partition.
            responder: the node that sent the response.
            leader: the partition leader per metadata, ``None`` if unknown.
            preferred_read_replica: the response's ``PreferredReadReplica`` (``-1`` if absent).
            now: current monotonic time, in seconds.

        Returns:
            The routing change to log, or ``None`` when routing did not change.
        """
        hint = preferred_read_replica
        st = self._states.get(tp)
        if hint < 0:
            if st is not None:
                st.backoff.reset()
                if st.awaiting == responder:
                    st.awaiting = None
            return None
        if hint in (responder, leader):
            if st is None:
                return None
            if st.awaiting == responder:
                st.awaiting = None
                self._fail(st, now)
            else:
                st.backoff.reset()
            if st.replica is None:
                return None
            return self._drop(tp, st, "hint-is-leader")
        if st is None:
            st = self._states[tp] = ReplicaLease(self._backoff)
        st.awaiting = hint
        if st.replica == hint:
            return None
        old = st.replica
        st.replica = hint
        st.expires_at = now + self._lease_s
        return RoutingChange(tp, old, hint, "hint")

    def on_partition_error(
        self,
        tp: K,
        error_code: int,
        responder: int,
        leader: int | None,
        now: float,
        *,
        new_leader: int | None = None,
    ) -> ErrorOutcome[K]:
        """Decide what a partition-level Fetch error means for routing (rules 5, 6 and 8).

        The response came from a *follower* when ``responder != leader`` (or the leader is
        unknown); a response from an old leader after a leadership move is therefore treated as
        a follower's, which only costs one fetch from the new leader and can never reset a
        position by mistake.

        * ``OFFSET_OUT_OF_RANGE`` (rule 6): from a follower, drop the replica and
          :attr:`~FetchErrorAction.REFETCH_FROM_LEADER` at the same position; from the leader,
          :attr:`~FetchErrorAction.RESET`.
        * ``NOT_LEADER_OR_FOLLOWER``, ``FENCED_LEADER_EPOCH``, ``UNKNOWN_LEADER_EPOCH``,
          ``REPLICA_NOT_AVAILABLE``, ``OFFSET_NOT_AVAILABLE``, ``KAFKA_STORAGE_ERROR``,
          ``UNKNOWN_TOPIC_OR_PARTITION``, ``UNKNOWN_TOPIC_ID`` and ``INCONSISTENT_TOPIC_ID``
          drop the replica (rule 5).  All but ``UNKNOWN_LEADER_EPOCH`` ask for a metadata
          refresh, as the Java client does.  From a follower: refetch from the leader; from the
          leader: retry after a backoff.
        * ``UNKNOWN_SERVER_ERROR``: retry after a backoff, keeping the replica (as Java does).
        * ``TOPIC_AUTHORIZATION_FAILED`` and ``UNSUPPORTED_COMPRESSION_TYPE`` are raised to the
          user.  ``CORRUPT_MESSAGE`` and error codes this policy does not know are raised when
          the leader sends them (as Java does) and, from a follower, make the partition go back
          to the leader, which holds the reference copy of the log.

        Rule 8: an error from the node the last redirect pointed to is a failed redirect, and a
        retriable error from the leader is a failure too; both make the partition back off
        (``retry_at``).  An error from a replica that had already served, by contrast, sends
        the partition to the leader at once.  With KIP-951, pass the response's
        ``CurrentLeader`` as ``new_leader``: a move to a new leader is fetched at once.

        Arguments:
            tp: the partition.
            error_code: the partition's error code (not 0).
            responder: the node that sent the error.
            leader: the partition leader per metadata when the request was sent, ``None`` if
                unknown.
            now: current monotonic time, in seconds.
            new_leader: the ``CurrentLeader.LeaderId`` of a Fetch v12+ error response, if any.

        Raises:
            ValueError: ``error_code`` is 0 (no error).
        """
        if error_code == 0:
            raise ValueError("error_code 0 (NONE) is not an error")
        error = for_code(error_code)
        rule = _ERROR_RULES[error.fetch_error_kind]
        name = error.message
        from_leader = leader is not None and leader >= 0 and responder == leader
        st = self._states.get(tp)

        if rule.kind == "fatal" or (rule.kind == "fatal-from-leader" and from_leader):
            return ErrorOutcome(FetchErrorAction.RAISE, name)

        change: RoutingChange[K] | None = None
        redirect_failed = False
        if st is not None:
            if rule.drop and st.replica is not None:
                change = self._drop(tp, st, name)
            if st.awaiting == responder:
                st.awaiting = None
                redirect_failed = True

        if rule.kind == "offset" and from_leader:
            return ErrorOutcome(FetchErrorAction.RESET, name, change=change)

        retry_at: float | None = None
        if from_leader:
            action = FetchErrorAction.RETRY
            moved = new_leader is not None and new_leader >= 0 and new_leader != leader
            if not moved:
                retry_at = self._fail(self._state(tp), now)
        else:
            action = FetchErrorAction.REFETCH_FROM_LEADER if rule.drop else FetchErrorAction.RETRY
            if redirect_failed or not rule.drop:
                retry_at = self._fail(self._state(tp), now)
        return ErrorOutcome(
            action,
            name,
            refresh_metadata=rule.refresh,
            retry_at=retry_at,
            change=change,
        )

    def on_node_failure(self, node_id: int, now: float) -> list[RoutingChange[K]]:
        """A connection to ``node_id`` failed or a request to it timed out (rules 5 and 8).

        Every partition cached on that node drops it, and every partition whose last redirect
        pointed to it backs off.

        Returns:
            The routing changes to log.
        """
        changes: list[RoutingChange[K]] = []
        for tp, st in self._states.items():
            if st.replica == node_id:
                changes.append(self._drop(tp, st, "node-failure"))
            if st.awaiting == node_id:
                st.awaiting = None
                self._fail(st, now)
        return changes

    def on_metadata(
        self, nodes: Collection[int], leaders: Mapping[K, int]
    ) -> list[RoutingChange[K]]:
        """Apply new cluster metadata (rule 5).

        Drops every cached replica whose node is not in ``nodes``, and every cached replica that
        is now its partition's leader (KIP-951 and metadata leader moves: reading from the
        leader needs no cache entry).  A partition that backs off because the leader named a
        node missing from metadata (rule 4) may fetch again at once when the node is back: this
        is how a follower that was down and came back is read again without delay.

        Arguments:
            nodes: the ids of all brokers in the new metadata.
            leaders: partition to leader id (partitions missing from it are left alone).

        Returns:
            The routing changes to log.
        """
        present = nodes if isinstance(nodes, (set, frozenset)) else frozenset(nodes)
        changes: list[RoutingChange[K]] = []
        for tp, st in self._states.items():
            if st.replica is None:
                continue
            if st.replica not in present:
                changes.append(self._drop(tp, st, "left-metadata"))
            elif leaders.get(tp) == st.replica:
                changes.append(self._drop(tp, st, "became-leader"))
            elif st.metadata_wait:
                # The refresh this partition was waiting for knows its replica again: no need
                # to sit out the rest of the backoff.  Only a metadata update can lift it, so
                # this cannot spin faster than metadata refreshes.
                st.retry_at = -math.inf
            st.metadata_wait = False
        return changes

    def track(self, tp: K) -> ReplicaLease:
        """The routing state of a partition, made now if it has none (the fetcher keeps it
        with the rest of the partition's state until :meth:`forget`)."""
        return self._state(tp)

    def forget(self, tp: K) -> None:
        """Drop all state of a partition that is no longer assigned."""
        self._states.pop(tp, None)

    def forget_all(self, tps: Iterable[K] | None = None) -> None:
        """Drop the state of the given partitions, or of all partitions when ``tps`` is None."""
        if tps is None:
            self._states.clear()
        else:
            for tp in tps:
                self._states.pop(tp, None)

    def note_old_broker(self, node_id: int) -> bool:
        """Record that a broker's Fetch tops out below v11 (rule 9).

        Such a broker cannot take ``rack_id`` and never sends a hint, so partitions it leads
        are read from it only; a hint naming it as a read replica is ignored by :meth:`select`
        when ``broker_supports_rack`` reports it.

        Returns:
            ``True`` the first time for a node, so that the fetcher logs its one WARNING line.
        """
        if node_id in self._old_brokers:
            return False
        self._old_brokers.add(node_id)
        return True

    # -- observability --------------------------------------------------------------------------

    def preferred(self, tp: K, now: float | None = None) -> int | None:
        """The partition's cached read replica, or ``None``.

        With ``now``, an expired entry reads as ``None`` (without being dropped).
        """
        st = self._states.get(tp)
        if st is None or st.replica is None:
            return None
        if now is not None and now >= st.expires_at:
            return None
        return st.replica

    def snapshot(self) -> dict[K, tuple[int, float]]:
        """Every cached read replica as ``{tp: (node_id, lease_expires_at)}``."""
        return {
            tp: (st.replica, st.expires_at)
            for tp, st in self._states.items()
            if st.replica is not None
        }

    # -- internals ------------------------------------------------------------------------------

    def _state(self, tp: K) -> ReplicaLease:
        st = self._states.get(tp)
        if st is None:
            st = self._states[tp] = ReplicaLease(self._backoff)
        return st

    def _plain(self, node: int, reason: RouteReason) -> Route[K]:
        route = self._plain_routes.get((node, reason))
        if route is None:
            route = self._plain_routes[node, reason] = Route(node, reason)
        return route

    def _drop(self, tp: K, st: ReplicaLease, reason: str) -> RoutingChange[K]:
        old = st.replica
        st.replica = None
        st.expires_at = 0.0
        st.metadata_wait = False
        return RoutingChange(tp, old, None, reason)

    def _fail(self, st: ReplicaLease, now: float) -> float:
        st.metadata_wait = False
        st.retry_at = now + st.backoff.next(now)
        return st.retry_at


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
