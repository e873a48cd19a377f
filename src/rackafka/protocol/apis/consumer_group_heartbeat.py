"""ConsumerGroupHeartbeat (key 68), versions 0-1; flexible in every version.

The heartbeat of the KIP-848 consumer group protocol: the member reports what
changed since its last heartbeat (null means unchanged) and the coordinator
answers with the member epoch and, when it changed, the target assignment (a
nullable struct).  v1 adds ``subscribed_topic_regex`` (a broker-side regular
expression subscription).
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, STRING, UUID, A, Api, F, S

CONSUMER_GROUP_HEARTBEAT = Api(
    key=68,
    name="ConsumerGroupHeartbeat",
    min_version=0,
    max_version=1,
    flexible_from=0,
    request=S(
        "ConsumerGroupHeartbeatRequest",
        F("group_id", STRING),
        F("member_id", STRING),
        F("member_epoch", INT32),
        F("instance_id", STRING, nullable="0+"),
        F("rack_id", STRING, nullable="0+"),
        F("rebalance_timeout_ms", INT32, default=-1),
        F("subscribed_topic_names", A(STRING), nullable="0+"),
        F("subscribed_topic_regex", STRING, "1+", nullable="1+"),
        F("server_assignor", STRING, nullable="0+"),
        F(
            "topic_partitions",
            A(
                S(
                    "ConsumerGroupHeartbeatRequestTopicPartitions",
                    F("topic_id", UUID),
                    F("partitions", A(INT32)),
                )
            ),
            nullable="0+",
        ),
    ),
    response=S(
        "ConsumerGroupHeartbeatResponse",
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F("member_id", STRING, nullable="0+"),
        F("member_epoch", INT32),
        F("heartbeat_interval_ms", INT32),
        F(
            "assignment",
            S(
                "ConsumerGroupHeartbeatResponseAssignment",
                F(
                    "topic_partitions",
                    A(
                        S(
                            "ConsumerGroupHeartbeatResponseTopicPartitions",
                            F("topic_id", UUID),
                            F("partitions", A(INT32)),
                        )
                    ),
                ),
            ),
            nullable="0+",
        ),
    ),
)
