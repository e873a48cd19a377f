"""SyncGroup (key 14), versions 0-5; flexible from v4.

v1 adds the response throttle time; v3 ``group_instance_id`` (KIP-345); v5
(KIP-559) sends the protocol type and name both ways.
"""

from __future__ import annotations

from rackafka.protocol.schema import BYTES, INT16, INT32, STRING, A, Api, F, S

SYNC_GROUP = Api(
    key=14,
    name="SyncGroup",
    min_version=0,
    max_version=5,
    flexible_from=4,
    request=S(
        "SyncGroupRequest",
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, "3+", nullable="3+"),
        F("protocol_type", STRING, "5+", nullable="5+"),
        F("protocol_name", STRING, "5+", nullable="5+"),
        F(
            "assignments",
            A(
                S(
                    "SyncGroupRequestAssignment",
                    F("member_id", STRING),
                    F("assignment", BYTES),
                )
            ),
        ),
    ),
    response=S(
        "SyncGroupResponse",
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F("protocol_type", STRING, "5+", nullable="5+"),
        F("protocol_name", STRING, "5+", nullable="5+"),
        F("assignment", BYTES),
    ),
)
