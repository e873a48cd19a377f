"""Kafka protocol API keys and error codes used by the test clusters' fault injection."""

from __future__ import annotations

__all__ = ["API_KEYS", "API_NAMES", "DISCONNECT", "api_key", "api_name"]

#: Kafka protocol API key -> name (the names of the Kafka protocol guide).
API_NAMES: dict[int, str] = {
    0: "Produce",
    1: "Fetch",
    2: "ListOffsets",
    3: "Metadata",
    4: "LeaderAndIsr",
    5: "StopReplica",
    6: "UpdateMetadata",
    7: "ControlledShutdown",
    8: "OffsetCommit",
    9: "OffsetFetch",
    10: "FindCoordinator",
    11: "JoinGroup",
    12: "Heartbeat",
    13: "LeaveGroup",
    14: "SyncGroup",
    15: "DescribeGroups",
    16: "ListGroups",
    17: "SaslHandshake",
    18: "ApiVersions",
    19: "CreateTopics",
    20: "DeleteTopics",
    21: "DeleteRecords",
    22: "InitProducerId",
    23: "OffsetForLeaderEpoch",
    24: "AddPartitionsToTxn",
    25: "AddOffsetsToTxn",
    26: "EndTxn",
    27: "WriteTxnMarkers",
    28: "TxnOffsetCommit",
    29: "DescribeAcls",
    30: "CreateAcls",
    31: "DeleteAcls",
    32: "DescribeConfigs",
    33: "AlterConfigs",
    34: "AlterReplicaLogDirs",
    35: "DescribeLogDirs",
    36: "SaslAuthenticate",
    37: "CreatePartitions",
    38: "CreateDelegationToken",
    39: "RenewDelegationToken",
    40: "ExpireDelegationToken",
    41: "DescribeDelegationToken",
    42: "DeleteGroups",
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments",
    47: "OffsetDelete",
    48: "DescribeClientQuotas",
    49: "AlterClientQuotas",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
    55: "DescribeQuorum",
    57: "UpdateFeatures",
    60: "DescribeCluster",
    61: "DescribeProducers",
    65: "DescribeTransactions",
    66: "ListTransactions",
    68: "ConsumerGroupHeartbeat",
    69: "ConsumerGroupDescribe",
    71: "GetTelemetrySubscriptions",
    72: "PushTelemetry",
    75: "DescribeTopicPartitions",
    76: "ShareGroupHeartbeat",
    77: "ShareGroupDescribe",
    78: "ShareFetch",
    79: "ShareAcknowledge",
}

#: API name (lower case, also with ``_``/``-`` removed) -> key.
API_KEYS: dict[str, int] = {name.lower(): key for key, name in API_NAMES.items()}

#: librdkafka's ``RD_KAFKA_RESP_ERR__TRANSPORT``: as an injected error, the mock broker closes
#: the connection instead of answering.
DISCONNECT = -195


def api_key(api: int | str) -> int:
    """Resolve an API given as key (``1``) or name (``"Fetch"``, ``"list_offsets"``)."""
    if isinstance(api, bool):
        raise TypeError(f"not an API key: {api!r}")
    if isinstance(api, int):
        if not 0 <= api < 1000:
            raise ValueError(f"API key out of range: {api}")
        return api
    text = str(api).strip()
    if text.lstrip("-").isdigit():
        return api_key(int(text))
    norm = text.lower().replace("_", "").replace("-", "")
    try:
        return API_KEYS[norm]
    except KeyError:
        raise ValueError(f"unknown Kafka API {api!r}") from None


def api_name(key: int) -> str:
    """The API's name, or ``"ApiKey<n>"`` for keys this table does not know."""
    return API_NAMES.get(key, f"ApiKey{key}")
