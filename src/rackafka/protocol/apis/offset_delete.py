"""OffsetDelete (key 47), version 0; not flexible.

Deletes the committed offsets of partitions of a group, sent to its coordinator
(KIP-496).  The group must not be subscribed to the topics of the partitions.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, STRING, A, Api, F, S

OFFSET_DELETE = Api(
    key=47,
    name="OffsetDelete",
    min_version=0,
    max_version=0,
    flexible_from=None,
    request=S(
        "OffsetDeleteRequest",
        F("group_id", STRING),
        F(
            "topics",
            A(
                S(
                    "OffsetDeleteRequestTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(S("OffsetDeleteRequestPartition", F("partition_index", INT32))),
                    ),
                )
            ),
        ),
    ),
    response=S(
        "OffsetDeleteResponse",
        F("error_code", INT16),
        F("throttle_time_ms", INT32),
        F(
            "topics",
            A(
                S(
                    "OffsetDeleteResponseTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "OffsetDeleteResponsePartition",
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
