"""DescribeConfigs (key 32), versions 1-4; flexible from v4.

v1 (the oldest we speak) adds ``include_synonyms``, and to the response each
config's ``config_source`` and its ``synonyms`` (replacing v0's
``is_default``, which is not declared here); v2 sends responses before
throttling on quota violation; v3 adds ``include_documentation`` and each
config's ``config_type`` and ``documentation``; v4 is the first flexible
version.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT8, INT16, INT32, STRING, A, Api, F, S

DESCRIBE_CONFIGS = Api(
    key=32,
    name="DescribeConfigs",
    min_version=1,
    max_version=4,
    flexible_from=4,
    request=S(
        "DescribeConfigsRequest",
        F(
            "resources",
            A(
                S(
                    "DescribeConfigsRequestResource",
                    F("resource_type", INT8),
                    F("resource_name", STRING),
                    F("configuration_keys", A(STRING), nullable="0+"),
                )
            ),
        ),
        F("include_synonyms", BOOL, "1+"),
        F("include_documentation", BOOL, "3+"),
    ),
    response=S(
        "DescribeConfigsResponse",
        F("throttle_time_ms", INT32),
        F(
            "results",
            A(
                S(
                    "DescribeConfigsResponseResult",
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+"),
                    F("resource_type", INT8),
                    F("resource_name", STRING),
                    F(
                        "configs",
                        A(
                            S(
                                "DescribeConfigsResponseConfig",
                                F("name", STRING),
                                F("value", STRING, nullable="0+"),
                                F("read_only", BOOL),
                                F("config_source", INT8, "1+", default=-1),
                                F("is_sensitive", BOOL),
                                F(
                                    "synonyms",
                                    A(
                                        S(
                                            "DescribeConfigsResponseSynonym",
                                            F("name", STRING, "1+"),
                                            F("value", STRING, "1+", nullable="0+"),
                                            F("source", INT8, "1+"),
                                        )
                                    ),
                                    "1+",
                                ),
                                F("config_type", INT8, "3+"),
                                F("documentation", STRING, "3+", nullable="0+"),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)
