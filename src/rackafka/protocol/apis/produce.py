"""Produce (key 0), versions 3-9; flexible from v9.

v3 (the oldest we speak) adds ``transactional_id`` and record batch v2; v4
may return KAFKA_STORAGE_ERROR; v5 adds the response ``log_start_offset``;
v7 allows zstd compression (KIP-110); v8 adds the per-batch
``record_errors`` and the partition ``error_message`` (KIP-467); v9 is the
first flexible version.  Kafka's later tagged ``current_leader`` and
``node_endpoints`` (v10+, KIP-951) are outside the versions declared here.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, INT64, RECORDS, STRING, A, Api, F, S

PRODUCE = Api(
    key=0,
    name="Produce",
    min_version=3,
    max_version=9,
    flexible_from=9,
    request=S(
        "ProduceRequest",
        F("transactional_id", STRING, "3+", nullable="3+"),
        F("acks", INT16),
        F("timeout_ms", INT32),
        F(
            "topic_data",
            A(
                S(
                    "ProduceRequestTopic",
                    F("name", STRING),
                    F(
                        "partition_data",
                        A(
                            S(
                                "ProduceRequestPartition",
                                F("index", INT32),
                                F("records", RECORDS, nullable="0+"),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
    response=S(
        "ProduceResponse",
        F(
            "responses",
            A(
                S(
                    "ProduceResponseTopic",
                    F("name", STRING),
                    F(
                        "partition_responses",
                        A(
                            S(
                                "ProduceResponsePartition",
                                F("index", INT32),
                                F("error_code", INT16),
                                F("base_offset", INT64),
                                F("log_append_time_ms", INT64, "2+", default=-1),
                                F("log_start_offset", INT64, "5+", default=-1),
                                F(
                                    "record_errors",
                                    A(
                                        S(
                                            "ProduceResponseBatchIndexError",
                                            F("batch_index", INT32, "8+"),
                                            F(
                                                "batch_index_error_message",
                                                STRING,
                                                "8+",
                                                nullable="8+",
                                            ),
                                        )
                                    ),
                                    "8+",
                                ),
                                F("error_message", STRING, "8+", nullable="8+"),
                            )
                        ),
                    ),
                )
            ),
        ),
        F("throttle_time_ms", INT32, "1+"),
    ),
)
