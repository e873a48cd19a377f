"""FindCoordinator (key 10), versions 0-4; flexible from v3.

v1 adds the key type (group or transaction), the throttle time and the error
message; v4 (KIP-699) looks up several keys at once: ``coordinator_keys`` in the
request and one ``coordinators`` entry per key in the response, replacing the
single key, node and error of v0-3.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT8, INT16, INT32, STRING, A, Api, F, S

FIND_COORDINATOR = Api(
    key=10,
    name="FindCoordinator",
    min_version=0,
    max_version=4,
    flexible_from=3,
    request=S(
        "FindCoordinatorRequest",
        F("key", STRING, "0-3"),
        F("key_type", INT8, "1+"),
        F("coordinator_keys", A(STRING), "4+"),
    ),
    response=S(
        "FindCoordinatorResponse",
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16, "0-3"),
        F("error_message", STRING, "1-3", nullable="1-3", default=""),
        F("node_id", INT32, "0-3"),
        F("host", STRING, "0-3"),
        F("port", INT32, "0-3"),
        F(
            "coordinators",
            A(
                S(
                    "FindCoordinatorResponseCoordinator",
                    F("key", STRING, "4+"),
                    F("node_id", INT32, "4+"),
                    F("host", STRING, "4+"),
                    F("port", INT32, "4+"),
                    F("error_code", INT16, "4+"),
                    F("error_message", STRING, "4+", nullable="4+", default=""),
                )
            ),
            "4+",
        ),
    ),
)
