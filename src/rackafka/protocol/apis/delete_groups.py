"""DeleteGroups (key 42), versions 0-2; flexible from v2.

Deletes empty groups (their committed offsets with them), sent to each group's
coordinator.  v1 is v0 again; v2 is the first flexible version.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, STRING, A, Api, F, S

DELETE_GROUPS = Api(
    key=42,
    name="DeleteGroups",
    min_version=0,
    max_version=2,
    flexible_from=2,
    request=S(
        "DeleteGroupsRequest",
        F("groups_names", A(STRING)),
    ),
    response=S(
        "DeleteGroupsResponse",
        F("throttle_time_ms", INT32),
        F(
            "results",
            A(
                S(
                    "DeletableGroupResult",
                    F("group_id", STRING),
                    F("error_code", INT16),
                )
            ),
        ),
    ),
)
