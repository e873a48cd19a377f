"""ConsumerGroupDescribe (key 69), version 0; flexible in every version.

The KIP-848 equivalent of DescribeGroups for groups of the ``consumer`` protocol:
the group and assignment epochs, the server-side assignor, and each member's
epoch, rack, subscriptions, current and target assignment (topic ids with their
names).  A group of the classic protocol is answered GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from rackafka.protocol.schema import BOOL, INT16, INT32, STRING, UUID, A, Api, F, S

#: The "unknown" value of ``authorized_operations``.
AUTHORIZED_OPERATIONS_UNKNOWN = -(2**31)

_TOPIC_PARTITIONS = S(
    "ConsumerGroupDescribeTopicPartitions",
    F("topic_id", UUID),
    F("topic_name", STRING),
    F("partitions", A(INT32)),
)

_ASSIGNMENT = S(
    "ConsumerGroupDescribeAssignment",
    F("topic_partitions", A(_TOPIC_PARTITIONS)),
)

CONSUMER_GROUP_DESCRIBE = Api(
    key=69,
    name="ConsumerGroupDescribe",
    min_version=0,
    max_version=0,
    flexible_from=0,
    request=S(
        "ConsumerGroupDescribeRequest",
        F("group_ids", A(STRING)),
        F("include_authorized_operations", BOOL),
    ),
    response=S(
        "ConsumerGroupDescribeResponse",
        F("throttle_time_ms", INT32),
        F(
            "groups",
            A(
                S(
                    "ConsumerGroupDescribedGroup",
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+", default=None),
                    F("group_id", STRING),
                    F("group_state", STRING),
                    F("group_epoch", INT32),
                    F("assignment_epoch", INT32),
                    F("assignor_name", STRING),
                    F(
                        "members",
                        A(
                            S(
                                "ConsumerGroupDescribedMember",
                                F("member_id", STRING),
                                F("instance_id", STRING, nullable="0+", default=None),
                                F("rack_id", STRING, nullable="0+", default=None),
                                F("member_epoch", INT32),
                                F("client_id", STRING),
                                F("client_host", STRING),
                                F("subscribed_topic_names", A(STRING)),
                                F("subscribed_topic_regex", STRING, nullable="0+", default=None),
                                F("assignment", _ASSIGNMENT),
                                F("target_assignment", _ASSIGNMENT),
                            )
                        ),
                    ),
                    F(
                        "authorized_operations",
                        INT32,
                        default=AUTHORIZED_OPERATIONS_UNKNOWN,
                    ),
                )
            ),
        ),
    ),
)
