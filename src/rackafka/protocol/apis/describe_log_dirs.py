"""DescribeLogDirs (key 35), versions 1-4; flexible from v2.

Asks one broker about its log directories: for each, its error, the replicas it holds
(size, lag, whether it is a future replica being moved there by AlterReplicaLogDirs).
v1 may answer before throttling; v2 is the first flexible version; v3 adds the
top-level ``error_code``; v4 adds each directory's ``total_bytes`` and ``usable_bytes``
(-1 when absent).  Kafka 4 no longer speaks v0.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT16, INT32, INT64, STRING, A, Api, F, S

DESCRIBE_LOG_DIRS = Api(
    key=35,
    name="DescribeLogDirs",
    min_version=1,
    max_version=4,
    flexible_from=2,
    request=S(
        "DescribeLogDirsRequest",
        F(
            "topics",
            A(
                S(
                    "DescribableLogDirTopic",
                    F("topic", STRING),
                    F("partitions", A(INT32)),
                )
            ),
            nullable="0+",
        ),
    ),
    response=S(
        "DescribeLogDirsResponse",
        F("throttle_time_ms", INT32),
        F("error_code", INT16, "3+"),
        F(
            "results",
            A(
                S(
                    "DescribeLogDirsResult",
                    F("error_code", INT16),
                    F("log_dir", STRING),
                    F(
                        "topics",
                        A(
                            S(
                                "DescribeLogDirsTopic",
                                F("name", STRING),
                                F(
                                    "partitions",
                                    A(
                                        S(
                                            "DescribeLogDirsPartition",
                                            F("partition_index", INT32),
                                            F("partition_size", INT64),
                                            F("offset_lag", INT64),
                                            F("is_future_key", BOOL),
                                        )
                                    ),
                                ),
                            )
                        ),
                    ),
                    F("total_bytes", INT64, "4+", default=-1),
                    F("usable_bytes", INT64, "4+", default=-1),
                )
            ),
        ),
    ),
)
