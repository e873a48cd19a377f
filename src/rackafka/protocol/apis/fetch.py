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

from typing import Any

from rackafka.protocol.schema import INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, A, Api, F, S

FETCH = Api(
    key=1,
    name="Fetch",
    min_version=4,
    max_version=17,
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
                            S(
                                "FetchRequestPartition",
                                F("partition", INT32),
                                F("current_leader_epoch", INT32, "9+", default=-1),
                                F("fetch_offset", INT64),
                                F("last_fetched_epoch", INT32, "12+", default=-1),
                                F("log_start_offset", INT64, "5+", default=-1),
                                F("partition_max_bytes", INT32),
                                F("replica_directory_id", UUID, "17+", tag=0),
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
                            S(
                                "FetchResponsePartition",
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
