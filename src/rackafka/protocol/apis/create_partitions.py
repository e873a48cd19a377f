"""CreatePartitions (key 37), versions 0-3; flexible from v2.

Raises the partition count of existing topics, optionally with the replicas of
each new partition; v1 may answer before throttling, v2 is the first flexible
version, v3 may return THROTTLING_QUOTA_EXCEEDED (KIP-599).
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT16, INT32, STRING, A, Api, F, S

CREATE_PARTITIONS = Api(
    key=37,
    name="CreatePartitions",
    min_version=0,
    max_version=3,
    flexible_from=2,
    request=S(
        "CreatePartitionsRequest",
        F(
            "topics",
            A(
                S(
                    "CreatePartitionsTopic",
                    F("name", STRING),
                    F("count", INT32),
                    F(
                        "assignments",
                        A(S("CreatePartitionsAssignment", F("broker_ids", A(INT32)))),
                        nullable="0+",
                    ),
                )
            ),
        ),
        F("timeout_ms", INT32, default=60000),
        F("validate_only", BOOL),
    ),
    response=S(
        "CreatePartitionsResponse",
        F("throttle_time_ms", INT32),
        F(
            "results",
            A(
                S(
                    "CreatePartitionsTopicResult",
                    F("name", STRING),
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+"),
                )
            ),
        ),
    ),
)
