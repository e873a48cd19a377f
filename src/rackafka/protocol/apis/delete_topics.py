"""DeleteTopics (key 20), versions 1-5; flexible from v4.

v1 (the oldest Kafka 4 answers) adds the throttle time; v2-3 change only the
broker's behaviour; v4 is the first flexible version; v5 adds each topic's
``error_message``.  v6 (topics named by id) is not declared: rackafka names
topics by name.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, STRING, A, Api, F, S

DELETE_TOPICS = Api(
    key=20,
    name="DeleteTopics",
    min_version=1,
    max_version=5,
    flexible_from=4,
    request=S(
        "DeleteTopicsRequest",
        F("topic_names", A(STRING)),
        F("timeout_ms", INT32, default=60000),
    ),
    response=S(
        "DeleteTopicsResponse",
        F("throttle_time_ms", INT32, "1+"),
        F(
            "responses",
            A(
                S(
                    "DeleteTopicsResponseTopic",
                    F("name", STRING),
                    F("error_code", INT16),
                    F("error_message", STRING, "5+", nullable="5+"),
                )
            ),
        ),
    ),
)
