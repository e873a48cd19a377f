"""DeleteRecords (key 21), versions 0-2; flexible from v2.

Moves the log start offset of partitions forward (to the partition's leader);
each partition answers its new ``low_watermark``.  v1 may answer before
throttling; v2 is the first flexible version.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, INT64, STRING, A, Api, F, S

DELETE_RECORDS = Api(
    key=21,
    name="DeleteRecords",
    min_version=0,
    max_version=2,
    flexible_from=2,
    request=S(
        "DeleteRecordsRequest",
        F(
            "topics",
            A(
                S(
                    "DeleteRecordsTopic",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "DeleteRecordsPartition",
                                F("partition_index", INT32),
                                F("offset", INT64),
                            )
                        ),
                    ),
                )
            ),
        ),
        F("timeout_ms", INT32, default=60000),
    ),
    response=S(
        "DeleteRecordsResponse",
        F("throttle_time_ms", INT32),
        F(
            "topics",
            A(
                S(
                    "DeleteRecordsTopicResult",
                    F("name", STRING),
                    F(
                        "partitions",
                        A(
                            S(
                                "DeleteRecordsPartitionResult",
                                F("partition_index", INT32),
                                F("low_watermark", INT64),
                                F("error_code", INT16),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
)
