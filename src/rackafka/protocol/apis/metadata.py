"""Metadata (key 3), versions 1-12; flexible from v9.

Brokers (with their racks), the controller, and for each topic its partitions
with leader, replicas and in-sync replicas.

From v1 a null ``topics`` array asks for every topic and an empty one for none
(the default here is the empty list, as in Kafka), and the response carries
broker racks, the controller id and ``is_internal``; v2 adds ``cluster_id``; v3
the throttle time; v4 ``allow_auto_topic_creation``; v5 per-partition
``offline_replicas``; v7 the partition ``leader_epoch``; v8 the authorized
operations of topics and of the cluster (the cluster ones, requested with
``include_cluster_authorized_operations``, only up to v10: from v11 they come
from DescribeCluster, KIP-700); v9 is the first flexible version; v10 adds
topic ids; v12 lets a request name topics by id alone (null ``name``) and a
response carry a null topic name.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT16, INT32, STRING, UUID, A, Api, F, S

#: The "unknown" value of authorized-operations bitfields.
AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)

METADATA = Api(
    key=3,
    name="Metadata",
    min_version=1,
    max_version=12,
    flexible_from=9,
    request=S(
        "MetadataRequest",
        F(
            "topics",
            A(
                S(
                    "MetadataRequestTopic",
                    F("topic_id", UUID, "10+"),
                    F("name", STRING, nullable="10+", default=""),
                )
            ),
            nullable="1+",
            default=[],
        ),
        F("allow_auto_topic_creation", BOOL, "4+", default=True),
        F("include_cluster_authorized_operations", BOOL, "8-10"),
        F("include_topic_authorized_operations", BOOL, "8+"),
    ),
    response=S(
        "MetadataResponse",
        F("throttle_time_ms", INT32, "3+"),
        F(
            "brokers",
            A(
                S(
                    "MetadataResponseBroker",
                    F("node_id", INT32),
                    F("host", STRING),
                    F("port", INT32),
                    F("rack", STRING, "1+", nullable="1+"),
                )
            ),
        ),
        F("cluster_id", STRING, "2+", nullable="2+"),
        F("controller_id", INT32, "1+", default=-1),
        F(
            "topics",
            A(
                S(
                    "MetadataResponseTopic",
                    F("error_code", INT16),
                    F("name", STRING, nullable="12+", default=""),
                    F("topic_id", UUID, "10+"),
                    F("is_internal", BOOL, "1+"),
                    F(
                        "partitions",
                        A(
                            S(
                                "MetadataResponsePartition",
                                F("error_code", INT16),
                                F("partition_index", INT32),
                                F("leader_id", INT32),
                                F("leader_epoch", INT32, "7+", default=-1),
                                F("replica_nodes", A(INT32)),
                                F("isr_nodes", A(INT32)),
                                F("offline_replicas", A(INT32), "5+"),
                            )
                        ),
                    ),
                    F(
                        "topic_authorized_operations",
                        INT32,
                        "8+",
                        default=AUTHORIZED_OPERATIONS_UNKNOWN,
                    ),
                )
            ),
        ),
        F(
            "cluster_authorized_operations",
            INT32,
            "8-10",
            default=AUTHORIZED_OPERATIONS_UNKNOWN,
        ),
    ),
)
