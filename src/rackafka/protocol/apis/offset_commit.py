"""OffsetCommit (key 8), versions 2-9; flexible from v8.

v2-4 carry ``retention_time_ms`` (removed in v5, retention is then a broker
setting); v3 adds the response throttle time; v6 the ``committed_leader_epoch``
of each partition; v7 ``group_instance_id`` (KIP-345); v9 (KIP-848) has the
layout of v8 and carries the member epoch of a consumer-protocol member in
``generation_id_or_member_epoch``.  Versions 0 and 1 (the
ZooKeeper-era commits) are not spoken.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, INT64, STRING, A, Api, F, S

OFFSET_COMMIT = Api(
    key=8,
    name="OffsetCommit",
    min_version=2,
    max_version=9,
    flexible_from=8,
    request=S(
        "OffsetCommitRequest",
        F("group_id", STRING),
        F("generation_id_or_member_epoch", INT32, "1+", default=-1),
        F("member_id", STRING, "1+"),
        F("group_instance_id", STRING, "7+", nullable="7+"),
        F("retention_time_ms", INT64, "2-4", default=-1),
        F(
            "topics",
            A(
                S(
                    "OffsetCommitRequestTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "OffsetCommitRequestPartition",
                                F("partition_index", INT32),
                                F("committed_offset", INT64),
                                F("committed_leader_epoch", INT32, "6+", default=-1),
                                F("committed_metadata", STRING, nullable="0+", default=""),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
    response=S(
        "OffsetCommitResponse",
        F("throttle_time_ms", INT32, "3+"),
        F(
            "topics",
            A(
                S(
                    "OffsetCommitResponseTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "OffsetCommitResponsePartition",
                                F("partition_index", INT32),
                                F("error_code", INT16),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)
