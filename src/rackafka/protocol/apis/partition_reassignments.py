"""AlterPartitionReassignments (key 45) and ListPartitionReassignments (key 46), version
0 (KIP-455); both flexible from v0.

AlterPartitionReassignments moves partitions to new replicas (``replicas`` null cancels
a partition's reassignment in progress); the controller answers per partition.
ListPartitionReassignments lists the reassignments in progress (``topics`` null: all).
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, STRING, A, Api, F, S

ALTER_PARTITION_REASSIGNMENTS = Api(
    key=45,
    name="AlterPartitionReassignments",
    min_version=0,
    max_version=0,
    flexible_from=0,
    request=S(
        "AlterPartitionReassignmentsRequest",
        F("timeout_ms", INT32, default=60000),
        F(
            "topics",
            A(
                S(
                    "ReassignableTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "ReassignablePartition",
                                F("partition_index", INT32),
                                F("replicas", A(INT32), nullable="0+", default=None),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
    response=S(
        "AlterPartitionReassignmentsResponse",
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F(
            "responses",
            A(
                S(
                    "ReassignableTopicResponse",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "ReassignablePartitionResponse",
                                F("partition_index", INT32),
                                F("error_code", INT16),
                                F("error_message", STRING, nullable="0+"),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)

LIST_PARTITION_REASSIGNMENTS = Api(
    key=46,
    name="ListPartitionReassignments",
    min_version=0,
    max_version=0,
    flexible_from=0,
    request=S(
        "ListPartitionReassignmentsRequest",
        F("timeout_ms", INT32, default=60000),
        F(
            "topics",
            A(
                S(
                    "ListPartitionReassignmentsTopics",
                    F("name", STRING),
                    F("partition_indexes", A(INT32)),
                )
            ),
            nullable="0+",
            default=None,
        ),
    ),
    response=S(
        "ListPartitionReassignmentsResponse",
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F(
            "topics",
            A(
                S(
                    "OngoingTopicReassignment",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "OngoingPartitionReassignment",
                                F("partition_index", INT32),
                                F("replicas", A(INT32)),
                                F("adding_replicas", A(INT32)),
                                F("removing_replicas", A(INT32)),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)
