"""OffsetFetch (key 9), versions 1-9; flexible from v6.

v2 lets the request's ``topics`` be null (every committed topic of the group)
and adds a top-level ``error_code`` to the response (v2-7); v3 adds the
throttle time; v5 the ``committed_leader_epoch`` of each partition; v7
``require_stable`` (KIP-447); v8 (KIP-709) fetches several groups at once:
``groups`` replaces the group id, topics and top-level error of v1-7; v9
(KIP-848) adds each group's ``member_id`` and ``member_epoch`` (a consumer-protocol
member's fetch is fenced by its epoch).
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT16, INT32, INT64, STRING, A, Api, F, S

OFFSET_FETCH = Api(
    key=9,
    name="OffsetFetch",
    min_version=1,
    max_version=9,
    flexible_from=6,
    request=S(
        "OffsetFetchRequest",
        F("group_id", STRING, "0-7"),
        F(
            "topics",
            A(
                S(
                    "OffsetFetchRequestTopic",
                    F("name", STRING, "0-7"),
                    F("partition_indexes", A(INT32), "0-7"),
                )
            ),
            "0-7",
            nullable="2-7",
        ),
        F(
            "groups",
            A(
                S(
                    "OffsetFetchRequestGroup",
                    F("group_id", STRING, "8+"),
                    F("member_id", STRING, "9+", nullable="9+", default=None),
                    F("member_epoch", INT32, "9+", default=-1),
                    F(
                        "topics",
                        A(
                            S(
                                "OffsetFetchRequestGroupTopic",
                                F("name", STRING, "8+"),
                                F("partition_indexes", A(INT32), "8+"),
                            )
                        ),
                        "8+",
                        nullable="8+",
                    ),
                )
            ),
            "8+",
        ),
        F("require_stable", BOOL, "7+"),
    ),
    response=S(
        "OffsetFetchResponse",
        F("throttle_time_ms", INT32, "3+"),
        F(
            "topics",
            A(
                S(
                    "OffsetFetchResponseTopic",
                    F("name", STRING, "0-7"),
                    F(
                        "partitions",
                        A(
                            S(
                                "OffsetFetchResponsePartition",
                                F("partition_index", INT32, "0-7"),
                                F("committed_offset", INT64, "0-7"),
                                F("committed_leader_epoch", INT32, "5-7", default=-1),
                                F("metadata", STRING, "0-7", nullable="0-7", default=""),
                                F("error_code", INT16, "0-7"),
                            )
                        ),
                        "0-7",
                    ),
                )
            ),
            "0-7",
        ),
        F("error_code", INT16, "2-7"),
        F(
            "groups",
            A(
                S(
                    "OffsetFetchResponseGroup",
                    F("group_id", STRING, "8+"),
                    F(
                        "topics",
                        A(
                            S(
                                "OffsetFetchResponseGroupTopic",
                                F("name", STRING, "8+"),
                                F(
                                    "partitions",
                                    A(
                                        S(
                                            "OffsetFetchResponseGroupPartition",
                                            F("partition_index", INT32, "8+"),
                                            F("committed_offset", INT64, "8+"),
                                            F(
                                                "committed_leader_epoch",
                                                INT32,
                                                "8+",
                                                default=-1,
                                            ),
                                            F(
                                                "metadata",
                                                STRING,
                                                "8+",
                                                nullable="8+",
                                                default="",
                                            ),
                                            F("error_code", INT16, "8+"),
                                        )
                                    ),
                                    "8+",
                                ),
                            )
                        ),
                        "8+",
                    ),
                    F("error_code", INT16, "8+"),
                )
            ),
            "8+",
        ),
    ),
)
