"""ListOffsets (key 2), versions 1-8; flexible from v6.

v1 (the oldest we speak) returns a single offset with its timestamp instead
of v0's array of offsets; v2 adds ``isolation_level`` and the throttle time;
v4 the ``current_leader_epoch`` used for fencing (KIP-320) and the response
``leader_epoch``; v6 is the first flexible version; v7 accepts the
max-timestamp query (timestamp -3, KIP-734); v8 the local-log-start query
(timestamp -4, KIP-405).  The wire layout of v6-v8 is the same; Kafka's later
``timeout_ms`` (v10+) is outside the versions declared here.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT8, INT16, INT32, INT64, STRING, A, Api, F, S

#: Special timestamps of a ListOffsets query.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4

LIST_OFFSETS = Api(
    key=2,
    name="ListOffsets",
    min_version=1,
    max_version=8,
    flexible_from=6,
    request=S(
        "ListOffsetsRequest",
        F("replica_id", INT32),
        F("isolation_level", INT8, "2+"),
        F(
            "topics",
            A(
                S(
                    "ListOffsetsRequestTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "ListOffsetsRequestPartition",
                                F("partition_index", INT32),
                                F("current_leader_epoch", INT32, "4+", default=-1),
                                F("timestamp", INT64),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
    response=S(
        "ListOffsetsResponse",
        F("throttle_time_ms", INT32, "2+"),
        F(
            "topics",
            A(
                S(
                    "ListOffsetsResponseTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "ListOffsetsResponsePartition",
                                F("partition_index", INT32),
                                F("error_code", INT16),
                                F("timestamp", INT64, "1+", default=-1),
                                F("offset", INT64, "1+", default=-1),
                                F("leader_epoch", INT32, "4+", default=-1),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)
