"""InitProducerId (key 22), versions 0-4; flexible from v2.

Gives an idempotent or transactional producer its producer id and epoch.  v1 is
v0 with throttling semantics; v3 (KIP-360) sends the current ``producer_id`` and
``producer_epoch`` so that the broker can bump the epoch instead of fencing;
v4 allows that for idempotent producers too.
"""

from __future__ import annotations

from rackafka.protocol.schema import INT16, INT32, INT64, STRING, Api, F, S

INIT_PRODUCER_ID = Api(
    key=22,
    name="InitProducerId",
    min_version=0,
    max_version=4,
    flexible_from=2,
    request=S(
        "InitProducerIdRequest",
        F("transactional_id", STRING, nullable="0+"),
        F("transaction_timeout_ms", INT32),
        F("producer_id", INT64, "3+", default=-1),
        F("producer_epoch", INT16, "3+", default=-1),
    ),
    response=S(
        "InitProducerIdResponse",
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("producer_id", INT64, default=-1),
        F("producer_epoch", INT16),
    ),
)
