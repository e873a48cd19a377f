"""The rack-aware part of :class:`~rackafka.testing.SecureFront`: it answers Fetch (and
ListOffsets by time) for the brokers behind it, playing Kafka's ``RackAwareReplicaSelector``
per client (:mod:`rackafka.testing.replica_selector`), and counts what it served."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rackafka import errors
from rackafka.protocol import frames
from rackafka.protocol.apis.fetch import FETCH, partition_fetch
from rackafka.protocol.apis.list_offsets import LIST_OFFSETS
from rackafka.protocol.schema import UUID_ZERO

from .replica_selector import preferred_read_replica

log = logging.getLogger("rackafka.testing.secure_front")

_RACK_AWARE_FETCH = 11  # Fetch v11 added rack_id and preferred_read_replica (KIP-392)
_TOPIC_ID_FETCH = 13
_METADATA_MAX_AGE = 0.5  # seconds the rack-aware selector trusts its view of the replicas


@dataclass
class FrontStats:
    """What the front saw, for tests to check."""

    connections: int = 0
    #: Successful first authentications, per mechanism.
    authentications: dict[str, int] = field(default_factory=dict)
    #: Successful re-authentications of live connections (KIP-368), per mechanism.
    reauthentications: dict[str, int] = field(default_factory=dict)
    #: Refused authentications (wrong password, unknown user, invalid token...).
    failures: int = 0
    #: Connections closed for a request sent before authentication or after the
    #: session expired, or between a SaslHandshake and the end of its exchange.
    protocol_violations: int = 0
    #: The SASL extensions of each OAUTHBEARER authentication, in order.
    oauth_extensions: list[dict[str, str]] = field(default_factory=list)
    #: The principals that authenticated, in order.
    principals: list[str] = field(default_factory=list)
    #: With a replica selector: record bytes served in Fetch responses, by (the broker
    #: whose listener served them, the ``rack_id`` of the request).
    fetch_bytes: dict[tuple[int, str], int] = field(default_factory=dict)
    #: With a replica selector: partitions for which a leader named a preferred read
    #: replica, by (that replica, the ``rack_id`` of the request).
    preferred_replicas: dict[tuple[int, str], int] = field(default_factory=dict)
    #: The ``rack_id`` each KIP-848 member last sent in a ConsumerGroupHeartbeat, by
    #: member id (the embedded brokers' own assignor ignores it; Kafka's do too today).
    member_racks: dict[str, str] = field(default_factory=dict)

    def cross_rack_bytes(self, racks: Mapping[int, str | None]) -> int:
        """Fetched record bytes served by a broker outside the requesting client's rack
        (requests without ``rack_id`` are not counted), given each broker's rack."""
        return sum(
            n for (node, rack), n in self.fetch_bytes.items() if rack and racks.get(node) != rack
        )

    def same_rack_bytes(self, racks: Mapping[int, str | None]) -> int:
        """Fetched record bytes served by a broker in the requesting client's rack."""
        return sum(
            n for (node, rack), n in self.fetch_bytes.items() if rack and racks.get(node) == rack
        )

    @property
    def total_authentications(self) -> int:
        """First authentications of every mechanism."""
        return sum(self.authentications.values())

    @property
    def total_reauthentications(self) -> int:
        """Re-authentications of every mechanism."""
        return sum(self.reauthentications.values())


class _FrontRouting:
    """Fetch and ListOffsets answered by the front for the brokers behind it."""

    stats: FrontStats
    racks: dict[int, str | None] | None
    down_brokers: set[int] | frozenset[int]
    _router: Any
    _router_lock: asyncio.Lock | None
    _backends: dict[int, tuple[str, int]]

    async def _cluster(self, refresh: bool = False) -> Any:
        """The front's own view of the brokers' metadata (at most half a second old)."""
        if self._router_lock is None:
            self._router_lock = asyncio.Lock()
        async with self._router_lock:
            if self._router is None:
                from rackafka.client import KafkaClient

                router = KafkaClient(
                    [f"{h}:{p}" for h, p in self._backends.values()],
                    client_id="rackafka-front-selector",
                    retry_backoff_ms=20,
                    retry_backoff_max_ms=200,
                )
                router.want_all_topics()
                await router.bootstrap_cluster()
                self._router = router
            router = self._router
            if refresh or time.monotonic() - router.cluster.updated_at > _METADATA_MAX_AGE:
                await router.fetch_all_metadata()
            return router.cluster

    def _preferred(self, cluster: Any, info: Any, rack: str) -> int:
        """The replica a ``RackAwareReplicaSelector`` names for a client in ``rack``: -1
        when the leader is in that rack or no other in-sync replica is."""
        racks = self.racks if self.racks is not None else {}

        def rack_of(node: int) -> str | None:
            return racks[node] if node in racks else cluster.rack_of(node)

        in_sync = [r for r in info.isr if r not in self.down_brokers]
        return preferred_read_replica(rack, info.leader, info.replicas, rack_of, in_sync=in_sync)

    async def _fetch(self, node_id: int, request: Any, version: int, corr: int) -> bytes:
        from rackafka.structs import TopicPartition

        cluster = await self._cluster()
        rack = request.rack_id if version >= _RACK_AWARE_FETCH else ""
        use_ids = version >= _TOPIC_ID_FETCH
        known = set(cluster.topic_ids.values()) if use_ids else set(cluster.partitions)
        if any((t.topic_id if use_ids else t.topic) not in known for t in request.topics):
            cluster = await self._cluster(refresh=True)  # a topic created since
        names = {tid: name for name, tid in cluster.topic_ids.items()}
        # Each partition goes to its leader behind the front, whichever replica the
        # client asked: every replica serves consumers here.
        plan: list[tuple[Any, list[tuple[Any, Any]]]] = []  # (topic, [(partition, info)])
        by_leader: dict[int, dict[Any, list[Any]]] = {}
        for t in request.topics:
            name = names.get(t.topic_id) if use_ids else t.topic
            parts = []
            for p in t.partitions:
                info = (
                    None if name is None else cluster.partition(TopicPartition(name, p.partition))
                )
                parts.append((p, info))
                if info is not None and node_id in info.replicas:
                    key = t.topic_id if use_ids else t.topic
                    by_leader.setdefault(info.leader, {}).setdefault(key, []).append(p)
            plan.append((t, parts))
        answers: dict[tuple[Any, int], Any] = {}
        failed = False

        async def forward(leader: int, topics: dict[Any, list[Any]], wait: bool) -> None:
            nonlocal failed
            sub = FETCH.Request(
                replica_id=-1,
                max_wait_ms=request.max_wait_ms if wait else 0,
                min_bytes=request.min_bytes if wait else 0,
                max_bytes=request.max_bytes,
                isolation_level=request.isolation_level,
                session_id=0,
                session_epoch=-1,
                topics=[
                    {
                        "topic": "" if use_ids else key,
                        "topic_id": key if use_ids else UUID_ZERO,
                        "partitions": parts,
                    }
                    for key, parts in topics.items()
                ],
                forgotten_topics_data=[],
                rack_id="",
            )
            try:
                response = await self._router.send(leader, FETCH, sub, version=version)
            except Exception as exc:
                log.debug("front: Fetch to broker %d failed: %r", leader, exc)
                failed = True
                return
            for rt in response.responses:
                key = rt.topic_id if use_ids else rt.topic
                for rp in rt.partitions:
                    answers[(key, rp.partition_index)] = rp

        # As one broker answers a Fetch: at once when any partition has records, else after
        # waiting up to max_wait_ms for min_bytes. The partitions are split over their
        # leaders behind the front: a waiting sub-fetch to a leader whose partitions are all
        # read would hold back the records the others have, so ask without waiting first.
        await asyncio.gather(
            *(forward(leader, topics, False) for leader, topics in by_leader.items())
        )
        # A leader that names a preferred read replica answers at once, as Kafka's does.
        hinted = bool(rack) and any(
            info is not None
            and node_id == info.leader
            and self._preferred(cluster, info, rack) >= 0
            for _t, parts in plan
            for _p, info in parts
        )
        if (
            not failed
            and not hinted
            and request.min_bytes > 0
            and request.max_wait_ms > 0
            and not any(a.records for a in answers.values())
        ):
            answers.clear()
            await asyncio.gather(
                *(forward(leader, topics, True) for leader, topics in by_leader.items())
            )
        if failed:
            await self._cluster(refresh=True)
        out_topics = []
        for t, parts in plan:
            key = t.topic_id if use_ids else t.topic
            out_parts = []
            for p, info in parts:
                answer = answers.get((key, p.partition))
                if answer is None:
                    if info is None:
                        code = (
                            errors.UnknownTopicIdError.errno
                            if use_ids
                            else errors.UnknownTopicOrPartitionError.errno
                        )
                    else:
                        code = errors.NotLeaderForPartitionError.errno
                    out_parts.append(_empty_partition(p.partition, code))
                    continue
                if node_id == info.leader and answer.error_code == 0 and rack:
                    preferred = self._preferred(cluster, info, rack)
                    if preferred >= 0:
                        answer.preferred_read_replica = preferred
                        answer.records = b""
                        hint = (preferred, rack)
                        self.stats.preferred_replicas[hint] = (
                            self.stats.preferred_replicas.get(hint, 0) + 1
                        )
                else:
                    answer.preferred_read_replica = -1
                size = len(answer.records or b"")
                if size:
                    served = (node_id, rack)
                    self.stats.fetch_bytes[served] = self.stats.fetch_bytes.get(served, 0) + size
                out_parts.append(answer)
            out_topics.append({"topic": t.topic, "topic_id": t.topic_id, "partitions": out_parts})
        response = FETCH.Response(
            throttle_time_ms=0, error_code=0, session_id=0, responses=out_topics
        )
        return frames.encode_response(FETCH, version, corr, response)

    async def _list_offsets(self, node_id: int, request: Any, version: int, corr: int) -> bytes:
        """ListOffsets with timestamps, answered from the records as a broker's time index
        would (the mock brokers answer -1 to every look-up by time)."""
        from rackafka.structs import TopicPartition

        cluster = await self._cluster()
        response = await self._router.send(node_id, LIST_OFFSETS, request, version=version)
        wanted = {
            (t.name, p.partition_index): p.timestamp
            for t in request.topics
            for p in t.partitions
            if p.timestamp >= 0
        }
        for t in response.topics:
            for p in t.partitions:
                ts = wanted.get((t.name, p.partition_index))
                if ts is None or p.error_code != 0:
                    continue
                info = cluster.partition(TopicPartition(t.name, p.partition_index))
                leader = info.leader if info is not None else node_id
                p.offset, p.timestamp = await self._offset_at(leader, t.name, p, ts)
        return frames.encode_response(LIST_OFFSETS, version, corr, response)

    async def _offset_at(self, leader: int, topic: str, p: Any, ts: int) -> tuple[int, int]:
        """The first record at or after ``ts`` in the partition, read from its start."""
        from rackafka.records import iter_batches

        first = LIST_OFFSETS.Request(
            replica_id=-1,
            isolation_level=0,
            topics=[
                {
                    "name": topic,
                    "partitions": [{"partition_index": p.partition_index, "timestamp": -2}],
                }
            ],
        )
        start = await self._router.send(leader, LIST_OFFSETS, first, version=1)
        at = start.topics[0].partitions[0].offset
        while True:
            sub = partition_fetch(topic, p.partition_index, at, min_bytes=0)
            answer = (await self._router.send(leader, FETCH, sub, version=11)).responses[0]
            data = answer.partitions[0].records or b""
            progressed = False
            for batch in iter_batches(data):
                if batch.next_offset <= at:
                    continue
                progressed = True
                if not getattr(batch, "is_control", False):
                    for offset, stamp, *_rest in batch.records():
                        if offset >= at and stamp >= ts:
                            return offset, stamp
                at = batch.next_offset
            if not progressed:
                return -1, -1


def _empty_partition(partition: int, error_code: int) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "error_code": error_code,
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": None,
    }
