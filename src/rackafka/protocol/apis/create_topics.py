"""CreateTopics (key 19), versions 2-7; flexible from v5.

v1 adds ``validate_only`` and a per-topic ``error_message``; v2 (the oldest
we speak) the throttle time; v4 lets ``num_partitions`` and
``replication_factor`` be -1 (broker defaults, KIP-464); v5 is the first
flexible version and returns the created topic's partitions, replication
factor and configs, with the tagged ``topic_config_error_code`` (KIP-525); v6
may return THROTTLING_QUOTA_EXCEEDED (KIP-599); v7 returns the ``topic_id``.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT8, INT16, INT32, STRING, UUID, A, Api, F, S

CREATE_TOPICS = Api(
    key=19,
    name="CreateTopics",
    min_version=2,
    max_version=7,
    flexible_from=5,
    request=S(
        "CreateTopicsRequest",
        F(
            "topics",
            A(
                S(
                    "CreateTopicsRequestTopic",
                    F("name", STRING),
                    F("num_partitions", INT32),
                    F("replication_factor", INT16),
                    F(
                        "assignments",
                        A(
                            S(
                                "CreateTopicsRequestAssignment",
                                F("partition_index", INT32),
                                F("broker_ids", A(INT32)),
                            )
                        ),
                    ),
                    F(
                        "configs",
                        A(
                            S(
                                "CreateTopicsRequestConfig",
                                F("name", STRING),
                                F("value", STRING, nullable="0+"),
                            )
                        ),
                    ),
                )
            ),
        ),
        F("timeout_ms", INT32, default=60000),
        F("validate_only", BOOL, "1+"),
    ),
    response=S(
        "CreateTopicsResponse",
        F("throttle_time_ms", INT32, "2+"),
        F(
            "topics",
            A(
                S(
                    "CreateTopicsResponseTopic",
                    F("name", STRING),
                    F("topic_id", UUID, "7+"),
                    F("error_code", INT16),
                    F("error_message", STRING, "1+", nullable="0+"),
                    F("topic_config_error_code", INT16, "5+", tag=0),
                    F("num_partitions", INT32, "5+", default=-1),
                    F("replication_factor", INT16, "5+", default=-1),
                    F(
                        "configs",
                        A(
                            S(
                                "CreateTopicsResponseConfig",
                                F("name", STRING, "5+"),
                                F("value", STRING, "5+", nullable="5+"),
                                F("read_only", BOOL, "5+"),
                                F("config_source", INT8, "5+", default=-1),
                                F("is_sensitive", BOOL, "5+"),
                            )
                        ),
                        "5+",
                        nullable="5+",
                    ),
                )
            ),
        ),
    ),
)
