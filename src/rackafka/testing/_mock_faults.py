"""Fault injection of :class:`~rackafka.testing.EmbeddedCluster`: leader moves, preferred
read replicas and the rack-aware selector, lagging followers, brokers down, latency, request
errors, old API versions, and request tracking."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace

from ._api import api_key, api_name
from ._base import EmbeddedClusterError, PartitionInfo, RequestRecord, probe_api_versions
from ._mock_core import _clock_offset, _MockCore
from .replica_selector import preferred_read_replica


class _MockFaults(_MockCore):
    """The fault-injection methods of the embedded cluster."""

    # -- leaders and replicas --------------------------------------------------------------
    def move_leader(self, topic: str, partition: int, broker_id: int | None) -> PartitionInfo:
        """Make ``broker_id`` (one of the partition's replicas) the leader; None: no leader.

        The leader epoch is bumped, so clients holding the old epoch get
        ``FENCED_LEADER_EPOCH``. A preferred read replica equal to the new leader is cleared
        (a leader never names itself); under :meth:`emulate_rack_aware_selector` the
        partition's preferred replica is recomputed.
        """
        with self._lock:
            info = self._partition(topic, partition)
            if broker_id is None:
                target = -1
            else:
                target = self._broker_id(broker_id)
                if target not in info.replicas:
                    raise ValueError(
                        f"broker {target} is not a replica of {topic}[{partition}] "
                        f"(replicas: {list(info.replicas)})"
                    )
            self._check(
                self._call(
                    "rd_kafka_mock_partition_set_leader",
                    self._mc(),
                    topic.encode(),
                    partition,
                    target,
                ),
                f"moving the leader of {topic}[{partition}] to {target}",
            )
            epoch = None if info.leader_epoch is None else info.leader_epoch + 1
            info = replace(info, leader=target, leader_epoch=epoch)
            self._set_partition(info)
            if self._selector is not None and self._selector_covers(topic):
                self._apply_selector(topics=[topic], only_partition=partition)
            elif info.preferred_read_replica == target and target != -1:
                self._set_follower(info, -1)
            return self._partition(topic, partition)

    def set_preferred_read_replica(
        self, topic: str, partition: int, broker_id: int | None
    ) -> PartitionInfo:
        """Make the leader name ``broker_id`` as ``preferred_read_replica`` in Fetch responses.

        None clears it. The mock does this for every Fetch v11+, whatever ``rack_id`` the
        client sent, and does not check the broker: an id that is not a replica, not in the
        cluster or down is sent as is (useful to test a consumer's fallback). The leader
        itself is refused, as a real leader never names itself (the mock would redirect
        to itself forever).
        """
        with self._lock:
            info = self._partition(topic, partition)
            target = -1 if broker_id is None else int(broker_id)
            if target != -1 and target == info.leader:
                raise ValueError(
                    f"broker {target} leads {topic}[{partition}]; a leader never names itself "
                    "as preferred read replica (use None to clear)"
                )
            return self._set_follower(info, target)

    def _set_follower(self, info: PartitionInfo, broker_id: int) -> PartitionInfo:
        self._check(
            self._call(
                "rd_kafka_mock_partition_set_follower",
                self._mc(),
                info.topic.encode(),
                info.partition,
                broker_id,
            ),
            f"setting the follower of {info.topic}[{info.partition}]",
        )
        info = replace(info, preferred_read_replica=broker_id)
        self._set_partition(info)
        return info

    def emulate_rack_aware_selector(
        self,
        client_rack: str | None,
        topics: Iterable[str] | None = None,
        *,
        skip_down_brokers: bool = True,
    ) -> dict[tuple[str, int], int]:
        """Emulate Kafka's ``RackAwareReplicaSelector`` for consumers in ``client_rack``.

        For each partition the preferred read replica becomes the one Kafka's selector
        names (:func:`rackafka.testing.replica_selector.preferred_read_replica`): none (-1)
        when the leader is in ``client_rack`` or no other replica is, else the replica in
        ``client_rack`` (the highest broker id if there are several, all being caught up).
        ``None`` or ``""`` (a consumer without ``client_rack``) clears them all.

        The mock sends the same hint to every client whatever its rack, so this emulates one
        client rack at a time. The setting stays in force: topics created later and leader
        moves are recomputed, until :meth:`clear_preferred_read_replicas`.

        Arguments:
            client_rack: the consumers' ``client_rack``.
            topics: limit to these topics (default: every known topic, now and later).
            skip_down_brokers: do not pick a replica that is down, as it would have left
                the ISR on a real cluster.

        Returns:
            (topic, partition) -> the preferred read replica now set (-1 for none).
        """
        with self._lock:
            self._mc()
            wanted = None if topics is None else frozenset(topics)
            if wanted is not None:
                for topic in wanted:
                    self._partition(topic, 0)
            self._selector = (client_rack or "", wanted, skip_down_brokers)
            return self._apply_selector(topics=wanted)

    def _rack_of_any(self, broker_id: int) -> str | None:
        broker = self._brokers.get(broker_id)
        return None if broker is None else broker.rack

    def _selector_covers(self, topic: str) -> bool:
        assert self._selector is not None
        wanted = self._selector[1]
        return wanted is None or topic in wanted

    def _apply_selector(
        self, topics: Iterable[str] | None, only_partition: int | None = None
    ) -> dict[tuple[str, int], int]:
        assert self._selector is not None
        rack, wanted, skip_down = self._selector
        names = sorted(self._partitions) if topics is None else list(topics)
        out: dict[tuple[str, int], int] = {}
        for topic in names:
            if wanted is not None and topic not in wanted:
                continue
            for info in list(self._partitions[topic]):
                if only_partition is not None and info.partition != only_partition:
                    continue
                in_sync = [r for r in info.replicas if r not in self._down] if skip_down else None
                target = preferred_read_replica(
                    rack, info.leader, info.replicas, self._rack_of_any, in_sync=in_sync
                )
                self._set_follower(info, target)
                out[(topic, info.partition)] = target
        return out

    def clear_preferred_read_replicas(self, topics: Iterable[str] | None = None) -> None:
        """Stop naming preferred read replicas (all topics, or ``topics``).

        Also ends :meth:`emulate_rack_aware_selector` when clearing all topics.
        """
        with self._lock:
            self._mc()
            names = sorted(self._partitions) if topics is None else list(topics)
            if topics is None:
                self._selector = None
            for topic in names:
                self._partition(topic, 0)
                for info in list(self._partitions[topic]):
                    self._set_follower(info, -1)

    def set_follower_watermarks(
        self, topic: str, partition: int, low: int | None = -1, high: int | None = -1
    ) -> PartitionInfo:
        """Make the follower serve only offsets in ``[low, high)`` (a lagging follower).

        ``-1`` (or None) follows the leader's log start / high watermark. A fetch outside the
        range gets ``OFFSET_OUT_OF_RANGE`` from the follower, and its responses carry
        ``high`` as high watermark and ``low`` as log start offset.
        """
        lo = -1 if low is None else int(low)
        hi = -1 if high is None else int(high)
        with self._lock:
            info = self._partition(topic, partition)
            self._check(
                self._call(
                    "rd_kafka_mock_partition_set_follower_wmarks",
                    self._mc(),
                    topic.encode(),
                    partition,
                    lo,
                    hi,
                ),
                f"setting the follower watermarks of {topic}[{partition}]",
            )
            info = replace(info, follower_watermarks=(lo, hi))
            self._set_partition(info)
            return info

    # -- brokers ---------------------------------------------------------------------------
    def broker_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones (it keeps its port).

        The broker disappears from Metadata but keeps its roles: no leader election happens
        (call :meth:`move_leader` to emulate one) and leaders keep naming it as preferred read
        replica until told otherwise.
        """
        with self._lock:
            self._check(
                self._call("rd_kafka_mock_broker_set_down", self._mc(), self._broker_id(broker_id)),
                f"setting broker {broker_id} down",
            )
            self._down.add(broker_id)

    def broker_up(self, broker_id: int) -> None:
        """Let a broker set down with :meth:`broker_down` accept connections again."""
        with self._lock:
            self._check(
                self._call("rd_kafka_mock_broker_set_up", self._mc(), self._broker_id(broker_id)),
                f"setting broker {broker_id} up",
            )
            self._down.discard(broker_id)

    def set_broker_rtt(self, broker_id: int | None, rtt_ms: int) -> None:
        """Delay every response of a broker (None: all brokers) by ``rtt_ms`` milliseconds."""
        if rtt_ms < 0:
            raise ValueError(f"rtt_ms must be >= 0, got {rtt_ms}")
        with self._lock:
            target = -1 if broker_id is None else self._broker_id(broker_id)
            self._check(
                self._call("rd_kafka_mock_broker_set_rtt", self._mc(), target, int(rtt_ms)),
                f"setting the RTT of broker {broker_id}",
            )

    def set_coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        """Pin the group (``key_type="group"``) or transaction coordinator of ``key``."""
        if key_type not in ("group", "transaction"):
            raise ValueError(f"key_type must be 'group' or 'transaction', got {key_type!r}")
        with self._lock:
            self._check(
                self._call(
                    "rd_kafka_mock_coordinator_set",
                    self._mc(),
                    key_type.encode(),
                    key.encode(),
                    int(broker_id),
                ),
                f"setting the {key_type} coordinator of {key!r}",
            )

    def set_group_initial_rebalance_delay(self, delay_ms: int) -> None:
        """Set the coordinator's delay before a new group's first rebalance."""
        if delay_ms < 0:
            raise ValueError("delay_ms must be >= 0")
        self._call_void("rd_kafka_mock_group_initial_rebalance_delay_ms", self._mc(), delay_ms)

    def set_consumer_group_timing(
        self, *, session_timeout_ms: int | None = None, heartbeat_interval_ms: int | None = None
    ) -> None:
        """Set the coordinator's session timeout and heartbeat interval of KIP-848 groups.

        These are broker settings with that protocol (``group.consumer.session.timeout.ms``
        and ``group.consumer.heartbeat.interval.ms``, 45 s and 5 s in Kafka; the embedded
        cluster starts at 30 s and 3 s); they apply from each member's next heartbeat.
        """
        for name, value, fn in (
            (
                "session_timeout_ms",
                session_timeout_ms,
                "rd_kafka_mock_set_group_consumer_session_timeout_ms",
            ),
            (
                "heartbeat_interval_ms",
                heartbeat_interval_ms,
                "rd_kafka_mock_set_group_consumer_heartbeat_interval_ms",
            ),
        ):
            if value is None:
                continue
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, not {value!r}")
            self._call_void(fn, self._mc(), value)

    # -- request errors and versions -------------------------------------------------------
    def push_request_errors(self, api: int | str, *error_codes: int) -> None:
        """Fail the next requests of an API, on whichever broker, with these error codes.

        One error per request, in order; 0 lets a request through. :data:`DISCONNECT`
        closes the connection instead of answering. With Fetch, the error is the
        response's top-level error code and is also given to every partition.
        """
        key = api_key(api)
        with self._handles.nudger:
            self._lib.push_request_errors(self._mc(), key, [int(e) for e in error_codes])

    def push_broker_request_errors(
        self, broker_id: int, api: int | str, *errors: int | tuple[int, int]
    ) -> None:
        """Like :meth:`push_request_errors` for one broker, with optional delays.

        Each error is an error code or an ``(error_code, rtt_ms)`` pair; ``(0, 500)`` delays
        one response by 500 ms without failing it. Broker errors take precedence over
        cluster-wide ones.
        """
        pairs: list[tuple[int, int]] = []
        for item in errors:
            if isinstance(item, tuple):
                err, rtt = item
                pairs.append((int(err), int(rtt)))
            else:
                pairs.append((int(item), 0))
        with self._lock, self._handles.nudger:
            self._check(
                self._lib.broker_push_request_error_rtts(
                    self._mc(), self._broker_id(broker_id), api_key(api), pairs
                ),
                f"pushing request errors for broker {broker_id}",
            )

    def pending_broker_request_errors(self, broker_id: int, api: int | str) -> int:
        """How many errors pushed with :meth:`push_broker_request_errors` are still unused."""
        with self._handles.nudger:
            err, count = self._lib.broker_error_stack_count(
                self._mc(), self._broker_id(broker_id), api_key(api)
            )
        self._check(err, "reading the broker's error stack")
        return count

    def push_partition_request_errors(
        self, topic: str, partition: int, api: int | str, *error_codes: int
    ) -> None:
        """Fail the next requests of an API for one partition (partition-level error codes)."""
        with self._lock:
            self._partition(topic, partition)
            with self._handles.nudger:
                err = self._lib.partition_push_request_errors(
                    self._mc(), topic, partition, api_key(api), [int(e) for e in error_codes]
                )
            self._check(err, f"pushing request errors for {topic}[{partition}]")

    def clear_request_errors(self, api: int | str) -> None:
        """Drop the cluster-wide errors still pushed for an API."""
        self._call_void("rd_kafka_mock_clear_request_errors", self._mc(), api_key(api))

    def api_versions(self, broker_id: int | None = None) -> dict[int, tuple[int, int]]:
        """The API versions a broker advertises (ApiVersions v0): key -> (min, max)."""
        self._mc()
        candidates = (
            [self._broker_id(broker_id)]
            if broker_id is not None
            else [b for b in self._brokers if b not in self._down]
        )
        last: Exception | None = None
        for candidate in candidates:
            broker = self._brokers[candidate]
            try:
                return probe_api_versions(broker.host, broker.port)
            except OSError as exc:
                last = exc
        raise EmbeddedClusterError(f"no broker answered ApiVersions: {last}")

    def cap_api_version(self, api: int | str, min_version: int, max_version: int) -> None:
        """Restrict the versions all brokers accept for an API (emulates an older broker).

        ``(-1, -1)`` removes the API. The brokers advertise the new range in ApiVersions and
        close the connection on a request outside it. The range cannot exceed what the
        mock implements. :meth:`restore_api_version` undoes it.
        """
        key = api_key(api)
        with self._lock:
            if key not in self._original_versions:
                try:
                    current = self.api_versions()
                except EmbeddedClusterError:
                    current = {}
                if key in current:
                    self._original_versions[key] = current[key]
            self._check(
                self._call(
                    "rd_kafka_mock_set_apiversion", self._mc(), key, min_version, max_version
                ),
                f"capping {api_name(key)} to v{min_version}..v{max_version}",
            )

    def restore_api_version(self, api: int | str) -> None:
        """Give an API back the version range it had before :meth:`cap_api_version`."""
        key = api_key(api)
        with self._lock:
            if key not in self._original_versions:
                raise ValueError(f"{api_name(key)} was not capped by this cluster object")
            lo, hi = self._original_versions.pop(key)
            self._check(
                self._call("rd_kafka_mock_set_apiversion", self._mc(), key, lo, hi),
                f"restoring {api_name(key)} to v{lo}..v{hi}",
            )

    # -- request tracking ------------------------------------------------------------------
    def start_request_tracking(self) -> None:
        """Record every request the brokers receive from now on (clears earlier records)."""
        self._call_void("rd_kafka_mock_start_request_tracking", self._mc())

    def stop_request_tracking(self) -> None:
        """Stop recording requests; this also drops the records."""
        self._call_void("rd_kafka_mock_stop_request_tracking", self._mc())

    def clear_requests(self) -> None:
        """Drop the records made so far (tracking goes on)."""
        self._call_void("rd_kafka_mock_clear_requests", self._mc())

    def requests(
        self, api: int | str | None = None, broker_id: int | None = None
    ) -> list[RequestRecord]:
        """The requests recorded since :meth:`start_request_tracking`, oldest first.

        Only requests within the advertised version range are recorded (a request the mock
        refuses by closing the connection is not). A record has no partition or size.

        Arguments:
            api: only this API (key or name).
            broker_id: only requests received by this broker.
        """
        key = None if api is None else api_key(api)
        raw = self._lib.get_requests(self._mc())
        offset = _clock_offset()
        out = []
        for req in raw:
            if key is not None and req.api_key != key:
                continue
            if broker_id is not None and req.broker_id != broker_id:
                continue
            out.append(
                RequestRecord(
                    req.broker_id,
                    req.api_key,
                    api_name(req.api_key),
                    req.timestamp_us / 1_000_000 + offset,
                )
            )
        out.sort(key=lambda r: r.timestamp)
        return out

    def request_counts(self, api: int | str | None = None) -> Counter[int]:
        """Number of recorded requests per broker id (optionally for one API)."""
        return Counter(r.broker_id for r in self.requests(api))
