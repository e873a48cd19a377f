"""``AIOKafkaConsumer``: aiokafka's consumer API, reading from the closest replica."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, Generic

from typing_extensions import TypeVar

from rackafka._lifecycle import AsyncRole, weak_method
from rackafka._version import __version__
from rackafka.abc import ConsumerRebalanceListener
from rackafka.client import KafkaClient
from rackafka.cluster import ClusterMetadata
from rackafka.consumer._abandon import abandon_when_collected
from rackafka.consumer._polling import polling
from rackafka.consumer._start import settle_positions, wait_for_topics
from rackafka.consumer.config import CONSUMER, FETCHER_SETTINGS, GROUP_SETTINGS, check_topics
from rackafka.consumer.fetcher import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    Fetcher,
    FetchStats,
)
from rackafka.errors import (
    ConsumerStoppedError,
    IllegalOperation,
    IllegalStateError,
    UnknownTopicOrPartitionError,
)
from rackafka.group.consumer_group import ConsumerGroupMember
from rackafka.group.coordinator import GroupCoordinator
from rackafka.group.strategy import resolve_assignors
from rackafka.structs import (
    ConsumerRecord,
    OffsetAndTimestamp,
    SubscriptionPattern,
    TopicPartition,
    as_topic_partition,
    offsets_to_commit,
)
from rackafka.subscription import COMMITTED, EARLIEST, LATEST, PartitionState, SubscriptionState
from rackafka.zones.detect import AUTO_RACK

log = logging.getLogger("rackafka.consumer")

# Defaults (PEP 696): a consumer without deserializers is an AIOKafkaConsumer[bytes, bytes]
# without an annotation.

KT = TypeVar("KT", default=bytes)
VT = TypeVar("VT", default=bytes)


class _SubscribeArgumentsError(TypeError, ValueError):
    """subscribe() got both or neither of topics and pattern.

    aiokafka raises TypeError there while documenting ValueError: catchable as either.
    """


class AIOKafkaConsumer(AsyncRole, Generic[KT, VT]):
    """A client that consumes records from a Kafka cluster, reading from the closest replica.

    A drop-in for :class:`aiokafka.AIOKafkaConsumer`: the same arguments with the
    same defaults, the same methods, the same exceptions.  With ``client_rack``
    set and the cluster configured with a rack-aware ``replica.selector.class``,
    partitions are read from the in-sync replica in the consumer's rack
    (KIP-392) instead of the leader; :meth:`fetch_stats` shows where every
    byte came from.

    Arguments:
        *topics: topics to subscribe to.  Without ``group_id`` every partition
            of them is assigned to this consumer.
        bootstrap_servers: ``host[:port]`` string or list of them to bootstrap
            from.  Default: ``localhost:9092``.
        client_id: a name sent in every request.  Default: ``rackafka-<version>``.
        client_rack: ``"auto"`` finds it (``RACKAFKA_CLIENT_RACK``, else the zone the
            environment or the cloud metadata service names that is a broker's rack; see
            ``rackafka.zones``; the choice is in ``rack_decision`` after ``start()``).
            Otherwise the rack (availability zone) of this consumer, sent in
            Fetch requests so that the leader can name a replica in the same
            rack (``""`` is no rack).  Default: ``None`` (read from leaders unless a
            broker's replica selector names another replica anyway).
        key_deserializer, value_deserializer: callables applied to raw key and
            value bytes (``None`` included).
        fetch_min_bytes: Fetch request limit, as in aiokafka (``fetch.min.bytes``).
        fetch_max_bytes: Fetch request limit, as in aiokafka (``fetch.max.bytes``).
        fetch_max_wait_ms: Fetch request limit, as in aiokafka (``fetch.max.wait.ms``).
        max_partition_fetch_bytes: Fetch request limit, as in aiokafka
            (``max.partition.fetch.bytes``).
        max_poll_records: most records :meth:`getmany` returns.  Default: no limit.
        request_timeout_ms: how long to wait for a response.  Default: 40000.
        retry_backoff_ms: pause after errors, growing on repeats.  Default: 100.
        retry_backoff_max_ms: the longest such pause: metadata refreshes that follow
            each other (a leader that stays unknown) double their pause up to it, with
            20 % jitter (KIP-580).  A rackafka extension (Java's name).  Default: 1000.
        reconnect_backoff_ms, reconnect_backoff_max_ms: pause before connecting
            again to a broker whose connection failed or closed at once, doubling per
            failure in a row up to the maximum, with 20 % jitter (KIP-144).  rackafka
            extensions (Java's names).  Defaults: 50 and 1000.
        auto_offset_reset: ``"latest"`` (default), ``"earliest"`` or ``"none"``:
            where to start when there is no position, or when the *leader*
            says the position is out of range (a lagging follower never causes
            a reset).  ``"none"`` raises :exc:`~rackafka.errors.OffsetOutOfRangeError`.
        check_crcs: verify record CRCs.  Default: ``True``.
        metadata_max_age_ms: metadata refresh period, and the lease of a
            preferred read replica.  Default: 300000.
        isolation_level: ``"read_uncommitted"`` (default) or
            ``"read_committed"`` (aborted transactions and control records hidden).
        consumer_timeout_ms: longest idle wait of the background fetcher.
            Default: 200.
        exclude_internal_topics: hide internal topics from :meth:`topics` and
            pattern subscriptions.  Default: ``True``.
        allow_auto_create_topics: let a broker with ``auto.create.topics.enable``
            create a subscribed or assigned topic that does not exist, as aiokafka's
            and Java's consumers do (Java's ``allow.auto.create.topics``).  With
            ``False`` the topic is waited for (looked up every ``retry_backoff_max_ms``
            until it exists).  Default: ``True``.
        connections_max_idle_ms: close idle connections after this (``None``: never).
            Default: 540000.
        group_id: the consumer group to join (classic protocol) and to
            commit offsets for.  Default: ``None`` (no group: partitions of
            subscribed topics are all assigned to this consumer, and
            :meth:`commit` raises :exc:`~rackafka.errors.IllegalOperation`).
        group_instance_id: a static member id (KIP-345): restarts within
            ``session_timeout_ms`` cause no rebalance, and :meth:`stop` does
            not leave the group.
        partition_assignment_strategy: assignor names (``"roundrobin"``,
            ``"range"``, ``"sticky"``, ``"cooperative-sticky"``), rackafka
            assignor classes, or aiokafka assignor classes, in order of
            preference.  Default: round robin.  ``range`` and the sticky
            assignors are rack-aware (KIP-881) when members set ``client_rack``.
        enable_auto_commit, auto_commit_interval_ms: commit consumed offsets
            in the background, on revocation and on :meth:`stop`.
        session_timeout_ms: group liveness, as in aiokafka.  Without ``group_id`` this
            and the three below are checked, then ignored.
        heartbeat_interval_ms: group liveness, as in aiokafka.
        max_poll_interval_ms: group liveness, as in aiokafka.
        rebalance_timeout_ms: group liveness, as in aiokafka (default:
            ``max_poll_interval_ms``).
        group_protocol: ``"classic"`` (default) or ``"consumer"``: the KIP-848 group
            protocol of Kafka 4.0, where the coordinator assigns and members reconcile
            incrementally (Java's ``group.protocol``; see :doc:`groups`).  With
            ``"consumer"``, ``partition_assignment_strategy``, ``session_timeout_ms`` and
            ``heartbeat_interval_ms`` are refused.
        group_remote_assignor: with ``group_protocol="consumer"``, the coordinator's
            assignor to use (``"uniform"``, ``"range"``); default: the broker's choice.
        security_protocol: ``"PLAINTEXT"`` (default), ``"SSL"``, ``"SASL_PLAINTEXT"`` or
            ``"SASL_SSL"``, as aiokafka (see :doc:`security`).
        ssl_context: an :class:`ssl.SSLContext` for SSL and SASL_SSL (required there, as
            in aiokafka): :func:`rackafka.helpers.create_ssl_context` makes one that
            verifies the broker's host name.
        sasl_mechanism: ``"PLAIN"`` (default), ``"SCRAM-SHA-256"``, ``"SCRAM-SHA-512"``,
            ``"OAUTHBEARER"`` or ``"GSSAPI"`` (needs the ``gssapi`` extra).
        sasl_plain_username, sasl_plain_password: credentials of PLAIN and SCRAM.
        sasl_kerberos_service_name, sasl_kerberos_domain_name: GSSAPI's service
            principal ``service@domain`` (default ``kafka`` at the broker's host name).
        sasl_oauth_token_provider: an :class:`~rackafka.abc.AbstractTokenProvider` for
            OAUTHBEARER (``MSKIAMTokenProvider`` for Amazon MSK IAM); asked again at each
            re-authentication.  Sessions with a lifetime (KIP-368) are re-authenticated
            on the live connection before they end.
        api_version: deprecated, as in aiokafka: any value gives a
            :exc:`DeprecationWarning` and is ignored (versions are always negotiated).
        record_tuples: a rackafka extension for bulk readers: records come as
            plain tuples ``(offset, timestamp, timestamp_type, key, value, checksum,
            serialized_key_size, serialized_value_size, headers)`` (see
            :data:`rackafka.records.RECORD_FIELDS`) instead of :class:`ConsumerRecord`,
            which saves building an object per record (about half the cost of a
            ``getmany`` of small records).  Not with deserializers.  Default: False.
        loop: deprecated and ignored (a :exc:`DeprecationWarning`), as in aiokafka.
    """

    def __init__(
        self,
        *topics: str,
        loop: Any = None,
        bootstrap_servers: str | list[str] = "localhost",
        client_id: str = "rackafka-" + __version__,
        group_id: str | None = None,
        group_instance_id: str | None = None,
        key_deserializer: Callable[[bytes], KT] | Callable[[bytes | None], KT] | None = None,
        value_deserializer: Callable[[bytes], VT] | Callable[[bytes | None], VT] | None = None,
        fetch_max_wait_ms: int = 500,
        fetch_max_bytes: int = 52428800,
        fetch_min_bytes: int = 1,
        max_partition_fetch_bytes: int = 1 * 1024 * 1024,
        request_timeout_ms: float = 40 * 1000,
        retry_backoff_ms: float = 100,
        retry_backoff_max_ms: int = 1000,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        auto_offset_reset: str = "latest",
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: float = 5000,
        check_crcs: bool = True,
        metadata_max_age_ms: float = 5 * 60 * 1000,
        partition_assignment_strategy: Any = None,
        max_poll_interval_ms: float = 300000,
        rebalance_timeout_ms: int | None = None,
        session_timeout_ms: int = 10000,
        heartbeat_interval_ms: float = 3000,
        consumer_timeout_ms: float = 200,
        max_poll_records: int | None = None,
        ssl_context: Any = None,
        security_protocol: str = "PLAINTEXT",
        api_version: str | None = None,
        exclude_internal_topics: bool = True,
        connections_max_idle_ms: float | None = 540000,
        isolation_level: str = "read_uncommitted",
        sasl_mechanism: str = "PLAIN",
        sasl_plain_password: str | None = None,
        sasl_plain_username: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None,
        client_rack: str | None = None,
        record_tuples: bool = False,
        group_protocol: str = "classic",
        group_remote_assignor: str | None = None,
        allow_auto_create_topics: bool = True,
    ) -> None:
        args = dict(locals())
        del args["self"], args["topics"]
        check_topics(topics)
        # Every argument is checked by the consumer's table (rackafka.consumer.config).
        cfg = CONSUMER.check(args)
        client_rack = cfg["client_rack"]
        group_id = cfg["group_id"]
        session_timeout_ms = cfg["session_timeout_ms"]
        self._client = KafkaClient(
            **cfg.client_kwargs(),
            client_software_version=__version__,
            # As aiokafka's consumer and Java's (allow.auto.create.topics=true): a broker
            # with auto.create.topics.enable creates a subscribed or assigned topic.
            allow_auto_topic_creation=cfg["allow_auto_create_topics"],
        )
        self._client_rack = client_rack
        #: With ``client_rack="auto"``: what was decided and why (after :meth:`start`).
        self.rack_decision: Any = None
        self._request_timeout = cfg["request_timeout_ms"] / 1000
        self._retry_backoff = cfg["retry_backoff_ms"] / 1000
        self._max_poll_records = cfg["max_poll_records"]
        self._exclude_internal = cfg["exclude_internal_topics"]
        # ``_subscription``: aiokafka's name, which frameworks' rebalance listeners read.
        self._subs = self._subscription = SubscriptionState(cfg["auto_offset_reset"])
        self._group_id = group_id
        self._group_instance_id = group_instance_id  # (aiokafka's name, read by some code)
        if group_id is not None:
            self._subs.initial_reset = COMMITTED
        self._group_protocol = cfg["group_protocol"]
        self._group_args = {n: cfg[n] for n in GROUP_SETTINGS}
        self._group_args["assignors"] = resolve_assignors(cfg["partition_assignment_strategy"])
        if self._group_protocol == "consumer":
            self._group_args["server_assignor"] = cfg["group_remote_assignor"]
        self._coordinator: GroupCoordinator | None = None
        self._fetcher_args = {n: cfg[n] for n in FETCHER_SETTINGS}
        self._fetcher_args["isolation_level"] = (
            READ_COMMITTED if cfg["isolation_level"] == "read_committed" else READ_UNCOMMITTED
        )
        self._fetcher: Fetcher | None = None
        self._metadata_listener: Callable[[ClusterMetadata], Any] = self._on_metadata
        self._initial_topics = tuple(topics)
        self._listener: ConsumerRebalanceListener | None = None
        self._pattern: re.Pattern[str] | None = None
        self._manual = False
        self._started = False
        self._closed = False
        if topics:
            self._subs.topics = set(topics)

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the cluster, load metadata, wait for the subscribed or assigned topics
        (a broker that creates topics on demand makes them) and the assignment, start fetching.

        Raises:
            KafkaConnectionError: no bootstrap server could be reached.
            AuthenticationFailedError: a broker refused the login or the TLS handshake
                (also while waiting for the group's first assignment).
            UnknownTopicOrPartitionError: a subscribed or assigned topic has no partitions after
                ``request_timeout_ms`` (with ``allow_auto_create_topics``, as aiokafka).
        """
        if self._closed:
            raise IllegalStateError("the consumer was stopped; create a new one")
        if self._started:
            return
        await self._client.bootstrap_cluster()
        if self._client_rack == AUTO_RACK:
            await self._resolve_auto_rack()
        self._fetcher = Fetcher(self._client, self._subs, **self._fetcher_args)
        self._client.auth_failure_listeners.append(weak_method(self._auth_failed))
        # Long-lived tasks hold the consumer weakly: dropped without stop(), it is collected
        # (and warns), as aiokafka's is, and its parts are closed (consumer/_abandon.py).
        self._metadata_listener = weak_method(self._on_metadata)
        self._client.cluster.add_listener(self._metadata_listener)
        self._parts: list[Any] = [self._client, self._fetcher]
        self._finalizer = abandon_when_collected(self, self._parts)
        self._started = True
        if self._manual:  # assign() before start(): as aiokafka, wait for those topics
            await self._wait_topics()
        if self._group_id is not None:
            membership = (
                ConsumerGroupMember if self._group_protocol == "consumer" else GroupCoordinator
            )
            self._coordinator = membership(
                self._client,
                self._subs,
                on_assignment=weak_method(self._group_assigned),
                listener=weak_method(self._current_listener),
                pattern=weak_method(self._match_pattern),
                **self._group_args,
            )
            self._fetcher.committed_lookup = self._coordinator.fetch_committed
            self._parts.append(self._coordinator)
            if self._subs.topics or self._pattern is not None or self._subs.regex:
                await self._wait_topics()
                self._coordinator.start()
                self._fetcher.start()
                # As aiokafka: start() returns once the first assignment is known and
                # the listener has seen it, so that assignment(), position() and seek()
                # work right after it.
                while not await self._coordinator.wait_for_assignment(0.25):
                    # Not forever: a refused login or a fatal group error ends the wait.
                    failure = self._client.take_auth_failure()
                    if failure is not None:
                        raise failure
                    self._coordinator.polled()  # raises a fatal group error, if any
                await self._coordinator.wait_for_listener(None)
                await settle_positions(self._subs, self._fetcher.wakeup)
                self._coordinator.polled()
                return
        elif self._subs.topics or self._pattern is not None:  # subscribe() before start()
            self._client.add_topics(self._subs.topics)
            await self._wait_topics()
            if self._pattern is not None or self._client.unknown_topics():  # (else just done)
                await self._client.refresh_metadata()
            self._update_subscribed_assignment(self._client.cluster)
        self._fetcher.start()
        await settle_positions(self._subs, self._fetcher.wakeup)

    async def _wait_topics(self) -> None:
        await wait_for_topics(self._client, self._subs, self._pattern, self._request_timeout)

    async def stop(self) -> None:
        """Stop fetching and close every connection."""
        if self._closed:
            return
        self._closed = True
        if self._started:
            self._finalizer.detach()
        if self._coordinator is not None:
            # Commits (auto commit) and leaves the group while positions are known.
            await self._coordinator.close()
        if self._fetcher is not None:
            await self._fetcher.close()
            self._fetcher.data_ready.set()
        self._client.cluster.remove_listener(self._metadata_listener)
        await self._client.close()

    async def _resolve_auto_rack(self) -> None:
        """``client_rack="auto"``: ``RACKAFKA_CLIENT_RACK`` when set, else the detected
        zone string that is a broker's rack (see :mod:`rackafka.zones`)."""
        from rackafka.zones import decide_client_rack

        racks = [b.rack for b in self._client.cluster.brokers.values()]
        decision = await decide_client_rack(racks, "reading from the leaders", log)
        self.rack_decision = decision
        self._client_rack = decision.rack
        self._fetcher_args["client_rack"] = decision.rack
        self._group_args["client_rack"] = decision.rack

    def _auth_failed(self, _exc: BaseException) -> None:
        if self._fetcher is not None:
            self._fetcher.data_ready.set()  # a waiting getmany()/getone() raises it

    def __repr__(self) -> str:
        # Never a secret: the security settings show only their kind and user name.
        return (
            f"<AIOKafkaConsumer bootstrap_servers={self._client.bootstrap!r} "
            f"group_id={self._group_id!r} client_rack={self._client_rack!r} "
            f"{self._client.security!r}>"
        )

    def _check_running(self) -> Fetcher:
        if self._closed:
            raise ConsumerStoppedError()
        if self._fetcher is None:
            raise IllegalStateError("the consumer is not started: call start() first")
        return self._fetcher

    # -- assignment and subscription -----------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Manually assign a list of :class:`TopicPartition` to this consumer.

        Replaces any subscription.  Positions start at ``auto_offset_reset``
        unless :meth:`seek` says otherwise.

        Raises:
            IllegalStateError: the consumer has a topic subscription.
            TypeError: an element is not a :class:`TopicPartition`.
        """
        partitions = [as_topic_partition(tp) for tp in partitions]
        if self._subs.topics or self._pattern is not None or self._subs.regex:
            raise IllegalStateError(
                "Subscription to topics, partitions and pattern are mutually exclusive"
            )
        self._manual = True
        self._subs.assign(partitions)
        self._client.add_topics({tp.topic for tp in partitions})
        if self._fetcher is not None:
            self._fetcher.on_assignment()

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions currently assigned to this consumer."""
        if not self._manual and self._coordinator is not None and self._coordinator.leaving:
            return frozenset()  # unsubscribed: the group's partitions are being given back
        return frozenset(self._subs.assigned())

    def subscribe(
        self,
        topics: Iterable[str] = (),
        pattern: str | SubscriptionPattern | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Subscribe to a list of topics, or a topic regex pattern.

        Without ``group_id`` every partition of the matching topics is assigned
        to this consumer, and partitions added later are picked up with the
        next metadata refresh.  A ``str`` pattern is matched by the consumer
        (``re.match`` on the names in metadata); a :class:`~rackafka.SubscriptionPattern`
        is sent to the group coordinator, which matches it (``group_protocol="consumer"``
        only, as in Java).

        Raises:
            IllegalStateError: partitions were assigned manually, or a
                ``SubscriptionPattern`` without ``group_protocol="consumer"``.
            TypeError: both or neither of ``topics`` and ``pattern`` given (as
                aiokafka's code; its docstring says ValueError, so the error is
                both), or ``topics`` is a string.
        """
        if isinstance(topics, (str, bytes)):
            raise TypeError("Topics should be list of strings")
        topics = list(topics)
        if self._manual:
            raise IllegalStateError(
                "Subscription to topics, partitions and pattern are mutually exclusive"
            )
        if bool(topics) == (pattern is not None):
            raise _SubscribeArgumentsError("You should provide either `topics` or `pattern`")
        if listener is not None and not isinstance(listener, ConsumerRebalanceListener):
            raise TypeError("listener should be an instance of ConsumerRebalanceListener")
        if isinstance(pattern, SubscriptionPattern) and (
            self._group_id is None or self._group_protocol != "consumer"
        ):
            raise IllegalStateError(
                "a SubscriptionPattern is evaluated by the group coordinator: it needs a "
                "group_id and group_protocol='consumer' (a str pattern is matched here)"
            )
        self._listener = listener
        self._subs.regex = None
        if isinstance(pattern, SubscriptionPattern):
            self._pattern = None
            self._subs.regex = pattern.pattern
            self._subs.topics = set()
            self._client.want_all_topics()  # (to name the topics the coordinator assigns)
        elif pattern is not None:
            try:
                self._pattern = re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"pattern {pattern!r} is not a valid regex: {exc}") from exc
            self._subs.topics = set()
            self._client.want_all_topics()
        else:
            self._pattern = None
            self._subs.topics = set(topics)
            self._client.want_all_topics(False)
            self._client.add_topics(topics)
        if self._coordinator is not None:
            self._match_pattern()
            self._coordinator.request_rejoin()
            self._coordinator.start()
            self._client.request_update()
        elif self._started:
            self._update_subscribed_assignment(self._client.cluster)
            self._client.request_update()

    def subscription(self) -> frozenset[str]:
        """The subscribed topics (those matching the pattern, if one is used); after
        :meth:`assign`, the topics of the assigned partitions (as aiokafka)."""
        if self._manual:
            return frozenset(tp.topic for tp in self._subs.assigned())
        return frozenset(self._subs.topics)

    def unsubscribe(self) -> None:
        """Unsubscribe from all topics and clear all assigned partitions.

        With a ``group_id`` the consumer also leaves the group, as Kafka's Java
        consumer does: the positions are committed (with ``enable_auto_commit``),
        the listener's ``on_partitions_revoked`` gets the partitions, a LeaveGroup
        request lets the other members take them over at once (a static member,
        with ``group_instance_id``, sends none), and heartbeats stop.  This runs
        in the background: :meth:`assignment` is empty at once and no records are
        returned meanwhile.  A later :meth:`subscribe` joins the group again as a
        new member.
        """
        self._subs.topics = set()
        self._subs.regex = None
        self._pattern = None
        self._manual = False
        self._client.want_all_topics(False)
        if self._coordinator is not None and self._coordinator.unsubscribe():
            return  # the coordinator revokes the partitions, then leaves the group
        self._set_assignment(set())

    def _current_listener(self) -> ConsumerRebalanceListener | None:
        return self._listener

    def _on_metadata(self, cluster: ClusterMetadata) -> None:
        if self._coordinator is None and (self._subs.topics or self._pattern is not None):
            self._update_subscribed_assignment(cluster)

    def _match_pattern(self) -> bool:
        """With a pattern subscription: the matching topics become the subscription (True);
        False without one (the group then needs no metadata of every topic)."""
        if self._pattern is None:
            return False
        cluster = self._client.cluster
        self._subs.topics = {
            t for t in cluster.topics(self._exclude_internal) if self._pattern.match(t)
        }
        return True

    def _group_assigned(
        self, assigned: set[TopicPartition], added: set[TopicPartition], taken: bool
    ) -> None:
        """The group coordinator's assignment, or what a revocation left (``taken``
        False); listeners are its business."""
        if self._manual:
            return  # assign() after unsubscribe(): the group's revoke leaves it alone
        self._subs.assign(sorted(assigned), taken=taken)
        if self._fetcher is not None:
            self._fetcher.on_assignment()

    def _update_subscribed_assignment(self, cluster: ClusterMetadata) -> None:
        if self._manual:
            return
        if self._pattern is not None:
            topics = {t for t in cluster.topics(self._exclude_internal) if self._pattern.match(t)}
            self._subs.topics = topics
        wanted = {
            TopicPartition(t, p)
            for t in self._subs.topics
            for p in (cluster.partitions_for_topic(t) or ())
        }
        if wanted != self._subs.assigned():
            self._set_assignment(wanted)

    def _set_assignment(self, wanted: set[TopicPartition]) -> None:
        # Without a group no rebalance listener is called (as aiokafka): the listener is
        # about a group's rebalances, and a consumer without one has none.
        self._subs.assign(sorted(wanted))
        if self._fetcher is not None:
            self._fetcher.on_assignment()

    # -- positions -----------------------------------------------------------------

    def _state(self, tp: TopicPartition) -> PartitionState:
        state = self._subs.state(as_topic_partition(tp))
        if state is None:
            raise IllegalStateError(f"Partition {tp} is not assigned")
        return state

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Manually set the offset of the next record fetched from ``partition``.

        Raises:
            ValueError: ``offset`` is not a non-negative int.
            IllegalStateError: the partition is not assigned.
        """
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError("Offset must be a positive integer")
        partition = as_topic_partition(partition)
        state = self._state(partition)
        if self._fetcher is not None:
            self._fetcher.seek(partition, offset)
        else:
            state.set_position(offset)

    async def _seek_to(self, partitions: tuple[TopicPartition, ...], strategy: str) -> bool:
        fetcher = self._check_running()
        partitions = tuple(as_topic_partition(tp) for tp in partitions)
        tps = list(partitions) or list(self._subs.assigned())
        states = [self._state(tp) for tp in tps]
        fetcher.request_reset(tps, strategy)
        waits = [asyncio.ensure_future(s.position_known.wait()) for s in states]
        if not waits:
            return True
        try:
            _done, pending = await asyncio.wait(waits, timeout=self._request_timeout)
        finally:
            for w in waits:
                w.cancel()
        return not pending

    async def seek_to_beginning(self, *partitions: TopicPartition) -> bool:
        """Seek to the oldest available offset (of the leader's log) for partitions.

        Arguments:
            *partitions: the partitions; all assigned ones when none given.

        Returns:
            whether every position was found within ``request_timeout_ms``.
        """
        return await self._seek_to(partitions, EARLIEST)

    async def seek_to_end(self, *partitions: TopicPartition) -> bool:
        """Seek to the most recent available offset for partitions."""
        return await self._seek_to(partitions, LATEST)

    def _group(self, what: str) -> GroupCoordinator:
        self._check_running()
        if self._coordinator is None:
            raise IllegalOperation(f"{what} requires group_id")
        return self._coordinator

    async def seek_to_committed(
        self, *partitions: TopicPartition
    ) -> dict[TopicPartition, int | None]:
        """Seek to the committed offsets of ``group_id``.

        Partitions without a committed offset keep their position (as aiokafka).

        Arguments:
            *partitions: the partitions; all assigned ones when none given.

        Returns:
            the committed offset of each partition, ``None`` for those without one.

        Raises:
            TypeError: a partition is not a :class:`TopicPartition`.
            IllegalOperation: the consumer has no ``group_id``.
            IllegalStateError: a partition is not assigned.
        """
        # aiokafka's order: the argument types, then the assignment, then the group.
        partitions = tuple(as_topic_partition(tp) for tp in partitions)
        self._check_running()
        tps = list(partitions) or sorted(self._subs.assigned())
        not_assigned = set(tps) - self._subs.assigned()
        if not_assigned:
            raise IllegalStateError(f"Partitions {not_assigned} are not assigned")
        group = self._group("seek_to_committed()")
        found = await group.fetch_committed(tps)
        out: dict[TopicPartition, int | None] = {}
        fetcher = self._fetcher
        assert fetcher is not None
        for tp in tps:
            meta = found.get(tp)
            if meta is not None and meta.offset >= 0:
                fetcher.seek(tp, meta.offset)
                out[tp] = meta.offset
            else:
                out[tp] = None  # as aiokafka: the position stays where it is
        return out

    async def commit(self, offsets: Any = None) -> None:
        """Commit offsets to the group coordinator.

        Arguments:
            offsets: a dict of :class:`TopicPartition` to an offset (int),
                an :class:`OffsetAndMetadata` or an ``(offset, metadata)``
                tuple.  Default: the positions of all assigned partitions
                (the offsets after the records consumed so far).  The leader
                epoch of the last consumed record goes with each offset.

        Raises:
            IllegalOperation: the consumer has no ``group_id``.
            CommitFailedError: the member is no longer in the group's generation
                (it was removed), or partitions given explicitly went to another
                member in a rebalance (the others are committed).  A commit made
                while the group rebalances waits for the rebalance to end and then
                commits the partitions the member still owns.
            RebalanceInProgressError: the group was still rebalancing when the
                commit's time ran out.
            FencedInstanceIdError: another consumer with this ``group_instance_id``
                took this static member's place (the consumer must be closed).
            IllegalStateError: not subscribed, or nothing assigned (before the first join).
            ValueError: ``offsets`` is malformed.
        """
        group = self._group("commit()")
        group.raise_if_fenced()
        if not group.in_listener():
            group.raise_fatal()  # a fatal group error reaches commit() too
        if group.in_listener():
            # Inside on_partitions_revoked (also after unsubscribe()): the partitions
            # being given back are still this member's, as in Java.
            assigned = frozenset(self._subs.assigned())
        else:
            if not self._subs.topics and self._pattern is None and not self._manual:
                raise IllegalStateError("Not subscribed to any topics")
            assigned = self.assignment()
        # While the group rebalances, the commit goes on with what the member owns after it.
        rebalancing = group.rebalancing and not group.in_listener()
        if not assigned:
            # Not joined yet (no generation): refused at once, as aiokafka does.
            if not rebalancing or group.state.generation_id < 0:
                raise IllegalStateError("No partitions assigned")
            if offsets is None:
                await asyncio.sleep(0)  # (nothing to commit: the eager protocol revoked all)
                return
        if offsets is None:
            to_commit = group.consumed_offsets()
        else:
            to_commit = offsets_to_commit(offsets)
            for tp in to_commit:
                if tp not in assigned and not rebalancing:
                    raise IllegalStateError(f"Partition {tp} is not assigned")
        if to_commit:
            await group.commit(to_commit, positions=offsets is None)

    async def committed(self, partition: TopicPartition) -> int | None:
        """The last committed offset of ``partition`` (``None`` when there is none).

        Raises:
            IllegalOperation: the consumer has no ``group_id``.
        """
        group = self._group("committed()")
        partition = as_topic_partition(partition)
        try:
            meta = (await group.fetch_committed([partition])).get(partition)
        except UnknownTopicOrPartitionError:
            return None  # as aiokafka: nothing was committed for a topic that is not there
        return meta.offset if meta is not None and meta.offset >= 0 else None

    async def position(self, partition: TopicPartition) -> int:
        """The offset of the next record that will be fetched from ``partition``.

        Waits for a pending offset reset to finish.

        Raises:
            IllegalStateError: the partition is not assigned.
        """
        self._check_running()
        partition = as_topic_partition(partition)
        while True:
            state = self._state(partition)
            if state.position is not None and state.reset is None:
                return state.position
            self._fetcher.wakeup()  # type: ignore[union-attr]
            self._fetcher.raise_pending_errors({partition})  # type: ignore[union-attr]
            try:
                await asyncio.wait_for(state.position_known.wait(), self._request_timeout)
            except asyncio.TimeoutError:
                continue

    def highwater(self, partition: TopicPartition) -> int | None:
        """The last known high watermark of ``partition`` (None before the first fetch)."""
        return self._state(partition).highwater

    def last_stable_offset(self, partition: TopicPartition) -> int | None:
        """The last known last stable offset (transactions) of ``partition``."""
        return self._state(partition).last_stable_offset

    def last_poll_timestamp(self, partition: TopicPartition) -> int | None:
        """When (ms since the epoch) ``highwater`` was last updated for ``partition``."""
        return self._state(partition).last_poll_timestamp

    def pause(self, *partitions: TopicPartition) -> None:
        """Stop fetching from ``partitions`` until :meth:`resume`; buffered records are kept."""
        for tp in partitions:
            self._state(as_topic_partition(tp)).paused = True

    def paused(self) -> set[TopicPartition]:
        """The partitions paused by :meth:`pause`."""
        return {s.tp for s in self._subs.states() if s.paused}

    def resume(self, *partitions: TopicPartition) -> None:
        """Resume fetching from ``partitions``."""
        partitions = tuple(as_topic_partition(tp) for tp in partitions)
        for tp in partitions:
            self._state(tp).paused = False
        if self._fetcher is not None:
            self._fetcher.wakeup()
            if self._fetcher.has_buffered(set(partitions)):
                self._fetcher.data_ready.set()

    # -- metadata and offsets --------------------------------------------------------

    async def topics(self) -> set[str]:
        """All topics the user is authorized to see."""
        self._check_running()
        cluster = await self._client.fetch_all_metadata()
        return cluster.topics(self._exclude_internal)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        """Partition ids of ``topic`` from cached metadata (None when unknown).

        An unknown topic is added to the metadata requests, so a later call
        may know it.
        """
        parts = self._client.cluster.partitions_for_topic(topic)
        if parts is None and self._started and not self._closed:
            self._client.add_topics([topic])
        return parts

    async def _offsets(self, timestamps: dict[TopicPartition, int]) -> dict[TopicPartition, Any]:
        fetcher = self._check_running()
        timestamps = {as_topic_partition(tp): ts for tp, ts in timestamps.items()}
        if not timestamps:
            return {}
        return await fetcher.list_offsets(timestamps, self._request_timeout)

    async def beginning_offsets(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The first offset of each partition (from its leader)."""
        found = await self._offsets(dict.fromkeys(partitions, -2))
        return {tp: off for tp, (off, _ts, _e) in found.items()}

    async def end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition (the last stable
        offset under ``read_committed``)."""
        found = await self._offsets(dict.fromkeys(partitions, -1))
        return {tp: off for tp, (off, _ts, _e) in found.items()}

    async def offsets_for_times(
        self, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """For each partition, the earliest offset whose timestamp is at least the given one.

        Returns ``None`` for a partition without such a record.

        Raises:
            ValueError: a timestamp is negative.
        """
        wanted: dict[TopicPartition, int] = {}
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(
                    f"The target time for partition {tp} is {ts}. "
                    "The target time cannot be negative."
                )
            wanted[tp] = int(ts)  # aiokafka accepts any number of milliseconds
        found = await self._offsets(wanted)
        return {
            tp: (OffsetAndTimestamp(off, ts) if off >= 0 else None)
            for tp, (off, ts, _e) in found.items()
        }

    # -- records -----------------------------------------------------------------------

    @polling
    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[KT, VT]]]:
        """Get records from assigned partitions, waiting up to ``timeout_ms`` for some.

        Arguments:
            *partitions: only these partitions (default: all assigned).
            timeout_ms: how long to wait when nothing is buffered; 0 returns
                at once.
            max_records: at most this many records (default
                ``max_poll_records``, unlimited when that is None).

        Returns:
            a dict of partition to its records, in offset order.

        Raises:
            ConsumerStoppedError: the consumer was stopped.
            ValueError: ``max_records`` is not a positive int.
            OffsetOutOfRangeError: the position is out of range and
                ``auto_offset_reset`` is ``"none"`` (again on every call until
                the user seeks).
            NoOffsetForPartitionError: a partition has no position yet and
                ``auto_offset_reset`` is ``"none"``.
            CorruptRecordException: a corrupt batch was reached (again on
                every call until the user seeks past it).
        """
        fetcher = self._check_running()
        if max_records is not None:
            if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
                raise ValueError("`max_records` must be a positive Integer")  # as aiokafka
        else:
            max_records = self._max_poll_records
        wanted = {as_topic_partition(tp) for tp in partitions} if partitions else None
        deadline = time.monotonic() + timeout_ms / 1000
        group = self._coordinator
        while True:
            # Nothing is handed out while a rebalance listener runs (it may seek or commit).
            if group is not None and not await group.wait_for_listener(
                max(0.0, deadline - time.monotonic())
            ):
                return {}
            # An error raised by the last call is raised again only when no other
            # partition has records to give (it stays until the user seeks past it).
            fetcher.raise_pending_errors(wanted, repeat=False)
            records = fetcher.drain(wanted, max_records)
            if records:
                return records
            fetcher.raise_pending_errors(wanted, repeat=False)
            if self._closed:
                return {}  # stopped while this call waited (as aiokafka)
            remaining = deadline - time.monotonic()
            if fetcher.has_sticky_error(wanted):
                # Raised by an earlier call: other partitions get retry_backoff_ms to
                # deliver records, then it is raised again.
                remaining = min(remaining, self._retry_backoff)
            if remaining <= 0:
                fetcher.raise_pending_errors(wanted)
                return {}
            # Whatever is still buffered for these partitions is not deliverable now
            # (paused, or waiting for a position): wait for the fetcher or a resume().
            fetcher.data_ready.clear()
            try:
                await asyncio.wait_for(fetcher.data_ready.wait(), remaining)
            except asyncio.TimeoutError:
                fetcher.raise_pending_errors(wanted)
                return {}

    @polling
    async def getone(self, *partitions: TopicPartition) -> ConsumerRecord[KT, VT]:
        """Get one record, waiting as long as it takes.

        Raises:
            ConsumerStoppedError: the consumer was stopped.
        """
        fetcher = self._check_running()
        wanted = {as_topic_partition(tp) for tp in partitions} if partitions else None
        group = self._coordinator
        repeat = False
        while True:
            if group is not None:
                await group.wait_for_listener(None)  # as in getmany()
            fetcher.raise_pending_errors(wanted, repeat=False)
            record = fetcher.next_record(wanted)
            if record is not None:
                return record
            fetcher.raise_pending_errors(wanted, repeat=repeat)
            if self._closed:
                raise ConsumerStoppedError()
            fetcher.data_ready.clear()
            if fetcher.has_sticky_error(wanted):
                # Raised by an earlier call: other partitions get retry_backoff_ms to
                # deliver records, then it is raised again.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(fetcher.data_ready.wait(), self._retry_backoff)
                repeat = True
                continue
            await fetcher.data_ready.wait()
            if self._closed:
                raise ConsumerStoppedError()

    def __aiter__(self) -> AIOKafkaConsumer[KT, VT]:
        if self._closed:
            raise ConsumerStoppedError()
        return self

    async def __anext__(self) -> ConsumerRecord[KT, VT]:
        try:
            return await self.getone()
        except ConsumerStoppedError:
            raise StopAsyncIteration from None

    # -- observability -------------------------------------------------------------------

    def fetch_stats(self) -> FetchStats:
        """Where fetched data came from: per node, per rack, per assigned partition.

        ``same_rack_bytes`` / ``cross_rack_bytes`` prove whether reads stay in
        ``client_rack``.
        """
        if self._fetcher is None:
            return FetchStats(self._client_rack)
        return self._fetcher.stats()

    @property
    def client_rack(self) -> str | None:
        """The rack this consumer fetches for."""
        return self._client_rack

    @property
    def client_id(self) -> str:
        """The ``client_id`` sent in every request (a label of :mod:`rackafka.metrics`)."""
        return str(self._client.client_id)
