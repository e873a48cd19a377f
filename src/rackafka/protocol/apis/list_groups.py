"""ListGroups (key 16), versions 0-5; flexible from v3.

The groups a broker coordinates.  v1 adds the throttle time; v3 is the first
flexible version; v4 (KIP-518) filters by state and returns each group's state;
v5 (KIP-848) filters by type and returns each group's type.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, STRING, A, Api, F, S

LIST_GROUPS = Api(
    key=16,
    name="ListGroups",
    min_version=0,
    max_version=5,
    flexible_from=3,
    request=S(
        "ListGroupsRequest",
        F("states_filter", A(STRING), "4+"),
        F("types_filter", A(STRING), "5+"),
    ),
    response=S(
        "ListGroupsResponse",
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F(
            "groups",
            A(
                S(
                    "ListedGroup",
                    F("group_id", STRING),
                    F("protocol_type", STRING),
                    F("group_state", STRING, "4+"),
                    F("group_type", STRING, "5+"),
                )
            ),
        ),
    ),
)
