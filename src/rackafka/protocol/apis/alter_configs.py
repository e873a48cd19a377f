"""AlterConfigs (key 33), versions 0-2; flexible from v2.

Replaces the whole dynamic configuration of each resource (topic or broker)
with the configs given (the non-incremental API); v1 may answer before
throttling, v2 is the first flexible version.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT8, INT16, INT32, STRING, A, Api, F, S

ALTER_CONFIGS = Api(
    key=33,
    name="AlterConfigs",
    min_version=0,
    max_version=2,
    flexible_from=2,
    request=S(
        "AlterConfigsRequest",
        F(
            "resources",
            A(
                S(
                    "AlterConfigsResource",
                    F("resource_type", INT8),
                    F("resource_name", STRING),
                    F(
                        "configs",
                        A(
                            S(
                                "AlterableConfig",
                                F("name", STRING),
                                F("value", STRING, nullable="0+"),
                            )
                        ),
                    ),
                )
            ),
        ),
        F("validate_only", BOOL),
    ),
    response=S(
        "AlterConfigsResponse",
        F("throttle_time_ms", INT32),
        F(
            "responses",
            A(
                S(
                    "AlterConfigsResourceResponse",
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+"),
                    F("resource_type", INT8),
                    F("resource_name", STRING),
                )
            ),
        ),
    ),
)
