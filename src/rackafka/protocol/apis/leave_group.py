"""LeaveGroup (key 13), versions 0-5; flexible from v4.

v1 adds the response throttle time; v3 (KIP-345) replaces the single
``member_id`` by a batch of ``members`` (member id and group instance id) with a
result per member; v5 adds a ``reason`` per member (KIP-800).
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, STRING, A, Api, F, S

LEAVE_GROUP = Api(
    key=13,
    name="LeaveGroup",
    min_version=0,
    max_version=5,
    flexible_from=4,
    request=S(
        "LeaveGroupRequest",
        F("group_id", STRING),
        F("member_id", STRING, "0-2"),
        F(
            "members",
            A(
                S(
                    "LeaveGroupRequestMember",
                    F("member_id", STRING, "3+"),
                    F("group_instance_id", STRING, "3+", nullable="3+"),
                    F("reason", STRING, "5+", nullable="5+"),
                )
            ),
            "3+",
        ),
    ),
    response=S(
        "LeaveGroupResponse",
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F(
            "members",
            A(
                S(
                    "LeaveGroupResponseMember",
                    F("member_id", STRING, "3+"),
                    F("group_instance_id", STRING, "3+", nullable="3+", default=""),
                    F("error_code", INT16, "3+"),
                )
            ),
            "3+",
        ),
    ),
)
