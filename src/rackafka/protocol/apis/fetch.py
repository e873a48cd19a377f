"""Fetch (key 1), versions 4-17; flexible from v12.

v4 (the oldest we speak) reads record batch v2 and adds ``isolation_level``,
``last_stable_offset`` and the aborted transactions; v5 adds the log start
offsets; v7 incremental fetch sessions (``session_id``, ``session_epoch``,
``forgotten_topics_data`` and a top-level error code, KIP-227); v9 the
partition ``current_leader_epoch`` (KIP-320); v11 the consumer's ``rack_id``
and the response's ``preferred_read_replica`` (fetch from follower, KIP-392);
v12 is the first flexible version, with ``last_fetched_epoch`` and the tagged
``diverging_epoch``, ``current_leader`` and ``snapshot_id``; v13 names topics
by ``topic_id`` instead of by name (KIP-516); v15 replaces ``replica_id`` with
the tagged ``replica_state`` (KIP-903); v16 adds the tagged ``node_endpoints``
of new leaders (KIP-951); v17 the tagged ``replica_directory_id`` (KIP-853).
"""

from __future__ import annotations

import struct
from operator import itemgetter
from typing import Any

from rackafka.protocol import primitives as _p
from rackafka.protocol.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    A,
    Api,
    F,
    Reader,
    S,
    Struct,
    Writer,
)

#: The ``struct`` format of each fixed-size field type of FetchRequestPartition.
_FORMATS: dict[object, str] = {INT32: "i", INT64: "q"}


class _RequestPartition(Struct):
    """``FetchRequestPartition``, which also takes a plain tuple: the fetcher's fast path.

    A tuple ``(partition, current_leader_epoch, fetch_offset, last_fetched_epoch,
    log_start_offset, partition_max_bytes)`` is written with one ``struct`` call (the
    fields the version lacks are left out; no tagged field). Any other value (a mapping, a
    struct) takes the generic path.
    """

    def _compile(self, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
        read, write = super()._compile(version, flexible, nullable)
        if nullable:
            return read, write
        regular = [f for f in self.fields if f.tag is None]
        present = [
            (i, _FORMATS[f.type])
            for i, f in enumerate(regular)
            if f.version_range()[0] <= version <= f.version_range()[1]
        ]
        pick = itemgetter(*(i for i, _ in present))
        pack = struct.Struct(">" + "".join(fmt for _, fmt in present)).pack
        width = len(regular)

        def write_fast(out: bytearray, value: Any) -> None:
            if type(value) is not tuple:
                write(out, value)
                return
            try:
                if len(value) != width:
                    raise ValueError(f"{width} items expected")
                out += pack(*pick(value))
            except (struct.error, ValueError, TypeError) as exc:
                raise ValueError(f"cannot encode FetchRequestPartition {value!r}: {exc}") from exc
            if flexible:
                out.append(0)  # no tagged field

        return read, write_fast


class _ResponsePartition(Struct):
    """``FetchResponsePartition``, decoded without the generic reader when it is plain.

    Most partitions of a response carry no aborted transaction and no tagged field (many
    no records at all): their fixed fields are read with one ``struct`` call and set
    directly. Any other partition, and anything short or malformed, is read by the
    generic reader from the start, so both give the same values and the same errors.
    """

    def _compile(self, version: int, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
        read, write = super()._compile(version, flexible, nullable)
        if nullable or not 4 <= version <= FETCH_MAX_VERSION:
            return read, write
        by_name: dict[str, Any] = {f.name: f for f in self.fields}
        head = struct.Struct(">ihqqq" if version >= 5 else ">ihqq")
        unpack_head = head.unpack_from
        head_size = head.size
        # v4 has no log start offset: its default completes the head.
        tail = () if version >= 5 else (by_name["log_start_offset"].default_value(),)
        has_replica = version >= 11
        read_int32 = _p.read_int32
        read_uvarint = _p.read_uvarint
        cls = self.cls
        new = object.__new__
        # The tagged structs: fresh defaults in flexible versions (as the generic reader
        # gives), one shared default each where the version lacks them.
        diverging_cls = by_name["diverging_epoch"].type.cls
        leader_cls = by_name["current_leader"].type.cls
        snapshot_cls = by_name["snapshot_id"].type.cls
        d = by_name["diverging_epoch"].default_value()
        c = by_name["current_leader"].default_value()
        s = by_name["snapshot_id"].default_value()
        d_epoch, d_end = d.epoch, d.end_offset
        c_id, c_epoch = c.leader_id, c.leader_epoch
        s_end, s_epoch = s.end_offset, s.epoch

        def read_fast(buf: Any, pos: int) -> tuple[Any, int]:
            try:
                values = unpack_head(buf, pos)
                at = pos + head_size
                if flexible:
                    n = buf[at] - 1
                    at += 1
                else:
                    n, at = read_int32(buf, at)
                if n == 0:
                    aborted: list[Any] | None = []
                elif n == -1:
                    aborted = None
                else:
                    return read(buf, pos)  # transactions to read, or malformed
                replica = -1
                if has_replica:
                    replica, at = read_int32(buf, at)
                if flexible:
                    n, at = read_uvarint(buf, at)
                    n -= 1
                else:
                    n, at = read_int32(buf, at)
                if n >= 0:
                    end = at + n
                    if end > len(buf):
                        return read(buf, pos)
                    # One copy: a bytearray's slice would be a copy copied again.
                    records: bytes | None = (
                        buf[at:end] if type(buf) is bytes else bytes(memoryview(buf)[at:end])
                    )
                    at = end
                elif n == -1:
                    records = None
                else:
                    return read(buf, pos)
                if flexible:
                    if buf[at] != 0:
                        return read(buf, pos)  # tagged fields
                    at += 1
            except (IndexError, struct.error):
                return read(buf, pos)  # short: the generic reader says how
            obj: Any = new(cls)
            if flexible:
                de = new(diverging_cls)
                de.epoch = d_epoch
                de.end_offset = d_end
                obj.diverging_epoch = de
                cl = new(leader_cls)
                cl.leader_id = c_id
                cl.leader_epoch = c_epoch
                obj.current_leader = cl
                sn = new(snapshot_cls)
                sn.end_offset = s_end
                sn.epoch = s_epoch
                obj.snapshot_id = sn
            else:
                obj.diverging_epoch = d
                obj.current_leader = c
                obj.snapshot_id = s
            (
                obj.partition_index,
                obj.error_code,
                obj.high_watermark,
                obj.last_stable_offset,
                obj.log_start_offset,
            ) = values + tail if tail else values
            obj.aborted_transactions = aborted
            obj.preferred_read_replica = replica
            obj.records = records
            return obj, at

        return read_fast, write


FETCH_MAX_VERSION = 17

FETCH = Api(
    key=1,
    name="Fetch",
    min_version=4,
    max_version=FETCH_MAX_VERSION,
    flexible_from=12,
    request=S(
        "FetchRequest",
        F("cluster_id", STRING, "12+", nullable="12+", tag=0),
        F("replica_id", INT32, "0-14", default=-1),
        F(
            "replica_state",
            S(
                "FetchRequestReplicaState",
                F("replica_id", INT32, "15+", default=-1),
                F("replica_epoch", INT64, "15+", default=-1),
            ),
            "15+",
            tag=1,
        ),
        F("max_wait_ms", INT32),
        F("min_bytes", INT32),
        F("max_bytes", INT32, "3+", default=0x7FFFFFFF),
        F("isolation_level", INT8, "4+"),
        F("session_id", INT32, "7+"),
        F("session_epoch", INT32, "7+", default=-1),
        F(
            "topics",
            A(
                S(
                    "FetchRequestTopic",
                    F("topic", STRING, "0-12"),
                    F("topic_id", UUID, "13+"),
                    F(
                        "partitions",
                        A(
                            _RequestPartition(
                                "FetchRequestPartition",
                                (
                                    F("partition", INT32),
                                    F("current_leader_epoch", INT32, "9+", default=-1),
                                    F("fetch_offset", INT64),
                                    F("last_fetched_epoch", INT32, "12+", default=-1),
                                    F("log_start_offset", INT64, "5+", default=-1),
                                    F("partition_max_bytes", INT32),
                                    F("replica_directory_id", UUID, "17+", tag=0),
                                ),
                            )
                        ),
                    ),
                )
            ),
        ),
        F(
            "forgotten_topics_data",
            A(
                S(
                    "FetchRequestForgottenTopic",
                    F("topic", STRING, "7-12"),
                    F("topic_id", UUID, "13+"),
                    F("partitions", A(INT32), "7+"),
                )
            ),
            "7+",
        ),
        F("rack_id", STRING, "11+"),
    ),
    response=S(
        "FetchResponse",
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16, "7+"),
        F("session_id", INT32, "7+"),
        F(
            "responses",
            A(
                S(
                    "FetchResponseTopic",
                    F("topic", STRING, "0-12"),
                    F("topic_id", UUID, "13+"),
                    F(
                        "partitions",
                        A(
                            _ResponsePartition(
                                "FetchResponsePartition",
                                (
                                    F("partition_index", INT32),
                                    F("error_code", INT16),
                                    F("high_watermark", INT64),
                                    F("last_stable_offset", INT64, "4+", default=-1),
                                    F("log_start_offset", INT64, "5+", default=-1),
                                    F(
                                        "diverging_epoch",
                                        S(
                                            "FetchResponseEpochEndOffset",
                                            F("epoch", INT32, "12+", default=-1),
                                            F("end_offset", INT64, "12+", default=-1),
                                        ),
                                        "12+",
                                        tag=0,
                                    ),
                                    F(
                                        "current_leader",
                                        S(
                                            "FetchResponseLeaderIdAndEpoch",
                                            F("leader_id", INT32, "12+", default=-1),
                                            F("leader_epoch", INT32, "12+", default=-1),
                                        ),
                                        "12+",
                                        tag=1,
                                    ),
                                    F(
                                        "snapshot_id",
                                        S(
                                            "FetchResponseSnapshotId",
                                            F("end_offset", INT64, default=-1),
                                            F("epoch", INT32, default=-1),
                                        ),
                                        "12+",
                                        tag=2,
                                    ),
                                    F(
                                        "aborted_transactions",
                                        A(
                                            S(
                                                "FetchResponseAbortedTransaction",
                                                F("producer_id", INT64, "4+"),
                                                F("first_offset", INT64, "4+"),
                                            )
                                        ),
                                        "4+",
                                        nullable="4+",
                                    ),
                                    F("preferred_read_replica", INT32, "11+", default=-1),
                                    F("records", RECORDS, nullable="0+"),
                                ),
                            )
                        ),
                    ),
                )
            ),
        ),
        F(
            "node_endpoints",
            A(
                S(
                    "FetchResponseNodeEndpoint",
                    F("node_id", INT32, "16+"),
                    F("host", STRING, "16+"),
                    F("port", INT32, "16+"),
                    F("rack", STRING, "16+", nullable="16+"),
                )
            ),
            "16+",
            tag=0,
        ),
    ),
)


def partition_fetch(
    topic: str,
    partition: int,
    offset: int,
    *,
    max_bytes: int = 1 << 20,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    leader_epoch: int = -1,
    rack_id: str = "",
    isolation_level: int = 0,
) -> Any:
    """A Fetch request (topics by name: v4-v12) of one partition from ``offset``, outside
    any fetch session: for tools and tests that read a partition directly."""
    return FETCH.Request(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": leader_epoch,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
        forgotten_topics_data=[],
        rack_id=rack_id,
    )
