"""ElectLeaders (key 43), versions 0-2; flexible from v2 (KIP-183, KIP-460).

Asks the controller to elect leaders of partitions (``topic_partitions`` null: every
partition, from v1); v1 adds the ``election_type`` (0 preferred, 1 unclean) and the
top-level ``error_code``; v2 is the first flexible version.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT8, INT16, INT32, STRING, A, Api, F, S

ELECT_LEADERS = Api(
    key=43,
    name="ElectLeaders",
    min_version=0,
    max_version=2,
    flexible_from=2,
    request=S(
        "ElectLeadersRequest",
        F("election_type", INT8, "1+"),
        F(
            "topic_partitions",
            A(
                S(
                    "ElectLeadersTopicPartitions",
                    F("topic", STRING),
                    F("partitions", A(INT32)),
                )
            ),
            nullable="0+",
        ),
        F("timeout_ms", INT32, default=60000),
    ),
    response=S(
        "ElectLeadersResponse",
        F("throttle_time_ms", INT32),
        F("error_code", INT16, "1+"),
        F(
            "replica_election_results",
            A(
                S(
                    "ReplicaElectionResult",
                    F("topic", STRING),
                    F(
                        "partition_result",
                        A(
                            S(
                                "ElectLeadersPartitionResult",
                                F("partition_id", INT32),
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
