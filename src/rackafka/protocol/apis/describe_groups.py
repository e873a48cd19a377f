"""DescribeGroups (key 15), versions 0-5; flexible from v5.

Each group's state, protocol and members as its coordinator knows them.  v1
adds the throttle time; v3 the group's ``authorized_operations`` (asked with
``include_authorized_operations``); v4 each member's ``group_instance_id``
(KIP-345); v5 is the first flexible version.  v6 (a group that does not exist
answered GROUP_ID_NOT_FOUND instead of the state ``Dead``) is not declared:
the admin client keeps aiokafka's answer for such a group.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, BYTES, INT16, INT32, STRING, A, Api, F, S

#: The "unknown" value of ``authorized_operations``.
AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)

DESCRIBE_GROUPS = Api(
    key=15,
    name="DescribeGroups",
    min_version=0,
    max_version=5,
    flexible_from=5,
    request=S(
        "DescribeGroupsRequest",
        F("groups", A(STRING)),
        F("include_authorized_operations", BOOL, "3+"),
    ),
    response=S(
        "DescribeGroupsResponse",
        F("throttle_time_ms", INT32, "1+"),
        F(
            "groups",
            A(
                S(
                    "DescribedGroup",
                    F("error_code", INT16),
                    F("group_id", STRING),
                    F("group_state", STRING),
                    F("protocol_type", STRING),
                    F("protocol_data", STRING),
                    F(
                        "members",
                        A(
                            S(
                                "DescribedGroupMember",
                                F("member_id", STRING),
                                F("group_instance_id", STRING, "4+", nullable="4+"),
                                F("client_id", STRING),
                                F("client_host", STRING),
                                F("member_metadata", BYTES),
                                F("member_assignment", BYTES),
                            )
                        ),
                    ),
                    F(
                        "authorized_operations",
                        INT32,
                        "3+",
                        default=AUTHORIZED_OPERATIONS_UNKNOWN,
                    ),
                )
            ),
        ),
    ),
)
