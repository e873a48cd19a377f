"""Heartbeat (key 12), versions 0-4; flexible from v4.

v1 adds the response throttle time; v3 ``group_instance_id`` (KIP-345).
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, STRING, Api, F, S

HEARTBEAT = Api(
    key=12,
    name="Heartbeat",
    min_version=0,
    max_version=4,
    flexible_from=4,
    request=S(
        "HeartbeatRequest",
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, "3+", nullable="3+"),
    ),
    response=S(
        "HeartbeatResponse",
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
    ),
)
