"""ApiVersions (key 18), versions 0-3; flexible from v3."""

from rackafka.protocol.schema import BOOL, INT16, INT32, INT64, STRING, A, Api, F, S

API_VERSIONS = Api(
    key=18,
    name="ApiVersions",
    min_version=0,
    max_version=3,
    flexible_from=3,
    request=S(
        "ApiVersionsRequest",
        F("client_software_name", STRING, "3+"),
        F("client_software_version", STRING, "3+"),
    ),
    response=S(
        "ApiVersionsResponse",
        F("error_code", INT16),
        F(
            "api_keys",
            A(
                S(
                    "ApiVersion",
                    F("api_key", INT16),
                    F("min_version", INT16),
                    F("max_version", INT16),
                )
            ),
        ),
        F("throttle_time_ms", INT32, "1+"),
        F(
            "supported_features",
            A(
                S(
                    "SupportedFeatureKey",
                    F("name", STRING),
                    F("min_version", INT16),
                    F("max_version", INT16),
                )
            ),
            "3+",
            tag=0,
        ),
        F("finalized_features_epoch", INT64, "3+", tag=1, default=-1),
        F(
            "finalized_features",
            A(
                S(
                    "FinalizedFeatureKey",
                    F("name", STRING),
                    F("max_version_level", INT16),
                    F("min_version_level", INT16),
                )
            ),
            "3+",
            tag=2,
        ),
        F("zk_migration_ready", BOOL, "3+", tag=3, default=False),
    ),
)
