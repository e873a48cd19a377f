"""OffsetForLeaderEpoch (key 23), versions 2-4; flexible from v4.

Used by consumers to detect log truncation after a leader change (KIP-320):
for each partition, the end offset of the given leader epoch.

v2 (the oldest we speak) adds the ``current_leader_epoch`` used for fencing
and the response throttle time; v3 adds ``replica_id`` (default -2, a "debug"
consumer; consumers send -1); v4 is the first flexible version.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, INT64, STRING, A, Api, F, S

OFFSET_FOR_LEADER_EPOCH = Api(
    key=23,
    name="OffsetForLeaderEpoch",
    min_version=2,
    max_version=4,
    flexible_from=4,
    request=S(
        "OffsetForLeaderEpochRequest",
        F("replica_id", INT32, "3+", default=-2),
        F(
            "topics",
            A(
                S(
                    "OffsetForLeaderEpochRequestTopic",
                    F("topic", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "OffsetForLeaderEpochRequestPartition",
                                F("partition", INT32),
                                F("current_leader_epoch", INT32, "2+", default=-1),
                                F("leader_epoch", INT32),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
    response=S(
        "OffsetForLeaderEpochResponse",
        F("throttle_time_ms", INT32, "2+"),
        F(
            "topics",
            A(
                S(
                    "OffsetForLeaderEpochResponseTopic",
                    F("topic", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "OffsetForLeaderEpochResponsePartition",
                                F("error_code", INT16),
                                F("partition", INT32),
                                F("leader_epoch", INT32, "1+", default=-1),
                                F("end_offset", INT64, default=-1),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)
