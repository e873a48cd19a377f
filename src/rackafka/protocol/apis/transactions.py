"""The transactional producer's APIs: AddPartitionsToTxn (24), AddOffsetsToTxn (25),
EndTxn (26) and TxnOffsetCommit (28), versions 0-3 each; flexible from v3.

AddPartitionsToTxn v4+ (KIP-890, batched for brokers) is not declared.  TxnOffsetCommit
v2 adds the committed leader epoch; v3 (KIP-447) adds the group generation, member id
and group instance id.  The other APIs' versions differ only in throttling semantics.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT16, INT32, INT64, STRING, A, Api, F, S

ADD_PARTITIONS_TO_TXN = Api(
    key=24,
    name="AddPartitionsToTxn",
    min_version=0,
    max_version=3,
    flexible_from=3,
    request=S(
        "AddPartitionsToTxnRequest",
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F(
            "topics",
            A(S("AddPartitionsToTxnTopic", F("name", STRING), F("partitions", A(INT32)))),
        ),
    ),
    response=S(
        "AddPartitionsToTxnResponse",
        F("throttle_time_ms", INT32),
        F(
            "results",
            A(
                S(
                    "AddPartitionsToTxnTopicResult",
                    F("name", STRING),
                    F(
                        "results",
                        A(
                            S(
                                "AddPartitionsToTxnPartitionResult",
                                F("partition_index", INT32),
                                F("error_code", INT16),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)

ADD_OFFSETS_TO_TXN = Api(
    key=25,
    name="AddOffsetsToTxn",
    min_version=0,
    max_version=3,
    flexible_from=3,
    request=S(
        "AddOffsetsToTxnRequest",
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("group_id", STRING),
    ),
    response=S(
        "AddOffsetsToTxnResponse",
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
    ),
)

END_TXN = Api(
    key=26,
    name="EndTxn",
    min_version=0,
    max_version=3,
    flexible_from=3,
    request=S(
        "EndTxnRequest",
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("committed", BOOL),
    ),
    response=S(
        "EndTxnResponse",
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
    ),
)

TXN_OFFSET_COMMIT = Api(
    key=28,
    name="TxnOffsetCommit",
    min_version=0,
    max_version=3,
    flexible_from=3,
    request=S(
        "TxnOffsetCommitRequest",
        F("transactional_id", STRING),
        F("group_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("generation_id", INT32, "3+", default=-1),
        F("member_id", STRING, "3+", default=""),
        F("group_instance_id", STRING, "3+", nullable="3+", default=None),
        F(
            "topics",
            A(
                S(
                    "TxnOffsetCommitRequestTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "TxnOffsetCommitRequestPartition",
                                F("partition_index", INT32),
                                F("committed_offset", INT64),
                                F("committed_leader_epoch", INT32, "2+", default=-1),
                                F("committed_metadata", STRING, nullable="0+"),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
    response=S(
        "TxnOffsetCommitResponse",
        F("throttle_time_ms", INT32),
        F(
            "topics",
            A(
                S(
                    "TxnOffsetCommitResponseTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "TxnOffsetCommitResponsePartition",
                                F("partition_index", INT32),
                                F("error_code", INT16),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)
