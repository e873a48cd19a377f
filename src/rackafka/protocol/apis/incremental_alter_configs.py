"""IncrementalAlterConfigs (key 44), versions 0-1; flexible from v1 (KIP-339).

Changes single configs of a resource (topic or broker) by an operation each: set,
delete, append to a list, subtract from a list; the configs not named keep their values.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT8, INT16, INT32, STRING, A, Api, F, S

INCREMENTAL_ALTER_CONFIGS = Api(
    key=44,
    name="IncrementalAlterConfigs",
    min_version=0,
    max_version=1,
    flexible_from=1,
    request=S(
        "IncrementalAlterConfigsRequest",
        F(
            "resources",
            A(
                S(
                    "IncrementalAlterConfigsResource",
                    F("resource_type", INT8),
                    F("resource_name", STRING),
                    F(
                        "configs",
                        A(
                            S(
                                "IncrementalAlterableConfig",
                                F("name", STRING),
                                F("config_operation", INT8),
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
        "IncrementalAlterConfigsResponse",
        F("throttle_time_ms", INT32),
        F(
            "responses",
            A(
                S(
                    "IncrementalAlterConfigsResourceResponse",
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+"),
                    F("resource_type", INT8),
                    F("resource_name", STRING),
                )
            ),
        ),
    ),
)
