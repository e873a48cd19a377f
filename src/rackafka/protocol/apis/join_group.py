"""JoinGroup (key 11), versions 0-9; flexible from v6.

v1 adds ``rebalance_timeout_ms``; v2 the response throttle time; v5
``group_instance_id`` (static membership, KIP-345); v7 (KIP-559) returns the
protocol type and lets the protocol name be null; v8 adds the join ``reason``
(KIP-800); v9 adds ``skip_assignment`` to the response.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, BYTES, INT16, INT32, STRING, A, Api, F, S

JOIN_GROUP = Api(
    key=11,
    name="JoinGroup",
    min_version=0,
    max_version=9,
    flexible_from=6,
    request=S(
        "JoinGroupRequest",
        F("group_id", STRING),
        F("session_timeout_ms", INT32),
        F("rebalance_timeout_ms", INT32, "1+", default=-1),
        F("member_id", STRING),
        F("group_instance_id", STRING, "5+", nullable="5+"),
        F("protocol_type", STRING),
        F(
            "protocols",
            A(
                S(
                    "JoinGroupRequestProtocol",
                    F("name", STRING),
                    F("metadata", BYTES),
                )
            ),
        ),
        F("reason", STRING, "8+", nullable="8+"),
    ),
    response=S(
        "JoinGroupResponse",
        F("throttle_time_ms", INT32, "2+"),
        F("error_code", INT16),
        F("generation_id", INT32, default=-1),
        F("protocol_type", STRING, "7+", nullable="7+"),
        F("protocol_name", STRING, nullable="7+", default=""),
        F("leader", STRING),
        F("skip_assignment", BOOL, "9+"),
        F("member_id", STRING),
        F(
            "members",
            A(
                S(
                    "JoinGroupResponseMember",
                    F("member_id", STRING),
                    F("group_instance_id", STRING, "5+", nullable="5+"),
                    F("metadata", BYTES),
                )
            ),
        ),
    ),
)
