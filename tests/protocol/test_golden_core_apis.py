"""Golden-byte tests for the core data-path APIs.

Every vector below is written by hand, field by field, from Kafka's message
definitions (``clients/src/main/resources/common/message/*.json``) with the
small encoders of this module, which share no code with rackafka's codec.  Each
API is exercised at the lowest and the highest version rackafka speaks, in
both directions: the schema must encode the value to exactly these bytes and
decode these bytes to exactly the value.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from rackafka.errors import KafkaProtocolError, UnsupportedVersionError
from rackafka.protocol.apis.create_topics import CREATE_TOPICS
from rackafka.protocol.apis.describe_configs import DESCRIBE_CONFIGS
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.apis.list_offsets import LIST_OFFSETS
from rackafka.protocol.apis.metadata import METADATA
from rackafka.protocol.apis.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from rackafka.protocol.apis.produce import PRODUCE
from rackafka.protocol.schema import Api
from tests.protocol._wire import (
    NO_TAGS,
    array,
    blob,
    boolean,
    carray,
    cblob,
    cstring,
    i8,
    i16,
    i32,
    i64,
    string,
    tags,
)


def raw_uuid(text: str) -> bytes:
    return bytes.fromhex(text.replace("-", ""))


U1_TEXT = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
U2_TEXT = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
U3_TEXT = "deadbeef-0000-4000-8000-0123456789ab"
U1, U2, U3 = uuid.UUID(U1_TEXT), uuid.UUID(U2_TEXT), uuid.UUID(U3_TEXT)
ZERO_UUID = uuid.UUID(int=0)

#: Opaque record data: the schema layer must carry it unchanged.
RECORD_BYTES = bytes(range(61)) + b"\xff\x00\x80"


@dataclass
class Case:
    api: Api
    version: int
    kind: str  # "request" or "response"
    value: Any
    wire: bytes
    label: str = ""

    @property
    def id(self) -> str:
        base = f"{self.api.name}-v{self.version}-{self.kind}"
        return f"{base}-{self.label}" if self.label else base


CASES: list[Case] = []


def case(api: Api, version: int, kind: str, value: Any, wire: bytes, label: str = "") -> None:
    CASES.append(Case(api, version, kind, value, wire, label))


# -- Metadata ---------------------------------------------------------------------

# v1 request: topics is a classic nullable array of {name}.
case(
    METADATA,
    1,
    "request",
    METADATA.Request(topics=[{"name": "orders"}, {"name": "payments"}]),
    array([string("orders"), string("payments")]),
)
# v1 request, null topics array = all topics.
case(METADATA, 1, "request", METADATA.Request(topics=None), i32(-1), "all-topics")
# v12 request: compact topics of {topic_id, nullable name}, allow_auto_topic_creation,
# include_topic_authorized_operations (include_cluster_authorized_operations is 8-10 only).
case(
    METADATA,
    12,
    "request",
    METADATA.Request(
        topics=[{"topic_id": U1, "name": None}, {"topic_id": ZERO_UUID, "name": "orders"}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=True,
    ),
    carray(
        [
            raw_uuid(U1_TEXT) + cstring(None) + NO_TAGS,
            bytes(16) + cstring("orders") + NO_TAGS,
        ]
    )
    + boolean(False)
    + boolean(True)
    + NO_TAGS,
)
# v1 response: brokers with nullable rack, controller_id, topics with is_internal;
# no throttle (v3+), no cluster_id (v2+), no leader_epoch (v7+), no offline_replicas (v5+).
case(
    METADATA,
    1,
    "response",
    METADATA.Response(
        brokers=[
            {"node_id": 1, "host": "b1.example", "port": 9092, "rack": "use1-az1"},
            {"node_id": 2, "host": "b2.example", "port": 9093, "rack": None},
        ],
        controller_id=2,
        topics=[
            {
                "error_code": 0,
                "name": "orders",
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": 0,
                        "leader_id": 1,
                        "replica_nodes": [1, 2],
                        "isr_nodes": [1],
                    },
                    {
                        "error_code": 9,
                        "partition_index": 1,
                        "leader_id": -1,
                        "replica_nodes": [2, 1],
                        "isr_nodes": [],
                    },
                ],
            },
            {"error_code": 0, "name": "__consumer_offsets", "is_internal": True, "partitions": []},
        ],
    ),
    array(
        [
            i32(1) + string("b1.example") + i32(9092) + string("use1-az1"),
            i32(2) + string("b2.example") + i32(9093) + string(None),
        ]
    )
    + i32(2)
    + array(
        [
            i16(0)
            + string("orders")
            + boolean(False)
            + array(
                [
                    i16(0) + i32(0) + i32(1) + array([i32(1), i32(2)]) + array([i32(1)]),
                    i16(9) + i32(1) + i32(-1) + array([i32(2), i32(1)]) + array([]),
                ]
            ),
            i16(0) + string("__consumer_offsets") + boolean(True) + array([]),
        ]
    ),
)
# v12 response: throttle, compact brokers, cluster_id, controller_id, topics with nullable
# name, topic_id, leader_epoch, offline_replicas, topic_authorized_operations (no cluster
# authorized operations after v10).
case(
    METADATA,
    12,
    "response",
    METADATA.Response(
        throttle_time_ms=15,
        brokers=[
            {"node_id": 1, "host": "b1.example", "port": 9092, "rack": "use1-az1"},
            {"node_id": 2, "host": "b2.example", "port": 9092, "rack": None},
        ],
        cluster_id="Zx9cluster",
        controller_id=1,
        topics=[
            {
                "error_code": 0,
                "name": "orders",
                "topic_id": U2,
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": 0,
                        "leader_id": 1,
                        "leader_epoch": 7,
                        "replica_nodes": [1, 2, 3],
                        "isr_nodes": [1, 2],
                        "offline_replicas": [3],
                    }
                ],
                "topic_authorized_operations": 0x0DF8,
            },
            {
                "error_code": 100,
                "name": None,
                "topic_id": U3,
                "is_internal": False,
                "partitions": [],
                "topic_authorized_operations": -(2**31),
            },
        ],
    ),
    i32(15)
    + carray(
        [
            i32(1) + cstring("b1.example") + i32(9092) + cstring("use1-az1") + NO_TAGS,
            i32(2) + cstring("b2.example") + i32(9092) + cstring(None) + NO_TAGS,
        ]
    )
    + cstring("Zx9cluster")
    + i32(1)
    + carray(
        [
            i16(0)
            + cstring("orders")
            + raw_uuid(U2_TEXT)
            + boolean(False)
            + carray(
                [
                    i16(0)
                    + i32(0)
                    + i32(1)
                    + i32(7)
                    + carray([i32(1), i32(2), i32(3)])
                    + carray([i32(1), i32(2)])
                    + carray([i32(3)])
                    + NO_TAGS
                ]
            )
            + i32(0x0DF8)
            + NO_TAGS,
            i16(100)
            + cstring(None)
            + raw_uuid(U3_TEXT)
            + boolean(False)
            + carray([])
            + i32(-(2**31))
            + NO_TAGS,
        ]
    )
    + NO_TAGS,
)

# -- Fetch ------------------------------------------------------------------------

# v4 request (no rack, no session): replica_id, max_wait_ms, min_bytes, max_bytes,
# isolation_level, topics{topic, partitions{partition, fetch_offset, partition_max_bytes}}.
case(
    FETCH,
    4,
    "request",
    FETCH.Request(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        isolation_level=1,
        topics=[
            {
                "topic": "orders",
                "partitions": [
                    {"partition": 0, "fetch_offset": 1234, "partition_max_bytes": 1048576},
                    {"partition": 3, "fetch_offset": 0, "partition_max_bytes": 65536},
                ],
            }
        ],
    ),
    i32(-1)
    + i32(500)
    + i32(1)
    + i32(52428800)
    + i8(1)
    + array(
        [
            string("orders")
            + array(
                [
                    i32(0) + i64(1234) + i32(1048576),
                    i32(3) + i64(0) + i32(65536),
                ]
            )
        ]
    ),
)
# v11 request (last rigid version): adds session (v7), forgotten topics (v7),
# current_leader_epoch (v9), log_start_offset (v5) and rack_id (v11).
case(
    FETCH,
    11,
    "request",
    FETCH.Request(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1000000,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            {
                "topic": "orders",
                "partitions": [
                    {
                        "partition": 2,
                        "current_leader_epoch": 5,
                        "fetch_offset": 42,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1048576,
                    }
                ],
            }
        ],
        forgotten_topics_data=[{"topic": "old", "partitions": [0, 1]}],
        rack_id="use1-az2",
    ),
    i32(-1)
    + i32(500)
    + i32(1)
    + i32(1000000)
    + i8(0)
    + i32(0)
    + i32(-1)
    + array([string("orders") + array([i32(2) + i32(5) + i64(42) + i64(-1) + i32(1048576)])])
    + array([string("old") + array([i32(0), i32(1)])])
    + string("use1-az2"),
    "rack-id",
)
# v17 request: no replica_id (v15+ uses tagged replica_state, tag 1), tagged cluster_id
# (tag 0), topics by topic_id (v13+), last_fetched_epoch (v12+), tagged
# replica_directory_id (tag 0 of a partition, v17+).
case(
    FETCH,
    17,
    "request",
    FETCH.Request(
        cluster_id="Zx9cluster",
        replica_state={"replica_id": 3, "replica_epoch": 17},
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        isolation_level=1,
        session_id=123456,
        session_epoch=7,
        topics=[
            {
                "topic_id": U1,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": 5,
                        "fetch_offset": 1000,
                        "last_fetched_epoch": 4,
                        "log_start_offset": 10,
                        "partition_max_bytes": 1048576,
                        "replica_directory_id": U2,
                    },
                    {
                        "partition": 1,
                        "current_leader_epoch": 5,
                        "fetch_offset": 2000,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1048576,
                    },
                ],
            }
        ],
        forgotten_topics_data=[{"topic_id": U3, "partitions": [4, 5]}],
        rack_id="use1-az1",
    ),
    i32(500)
    + i32(1)
    + i32(52428800)
    + i8(1)
    + i32(123456)
    + i32(7)
    + carray(
        [
            raw_uuid(U1_TEXT)
            + carray(
                [
                    i32(0)
                    + i32(5)
                    + i64(1000)
                    + i32(4)
                    + i64(10)
                    + i32(1048576)
                    + tags((0, raw_uuid(U2_TEXT))),
                    i32(1) + i32(5) + i64(2000) + i32(-1) + i64(-1) + i32(1048576) + NO_TAGS,
                ]
            )
            + NO_TAGS
        ]
    )
    + carray([raw_uuid(U3_TEXT) + carray([i32(4), i32(5)]) + NO_TAGS])
    + cstring("use1-az1")
    + tags((0, cstring("Zx9cluster")), (1, i32(3) + i64(17) + NO_TAGS)),
)
# v4 response: throttle, responses{topic, partitions{partition_index, error_code,
# high_watermark, last_stable_offset, nullable aborted_transactions, nullable records}}.
case(
    FETCH,
    4,
    "response",
    FETCH.Response(
        throttle_time_ms=25,
        responses=[
            {
                "topic": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 100,
                        "last_stable_offset": 90,
                        "aborted_transactions": [{"producer_id": 7, "first_offset": 80}],
                        "records": RECORD_BYTES,
                    },
                    {
                        "partition_index": 1,
                        "error_code": 6,
                        "high_watermark": -1,
                        "last_stable_offset": -1,
                        "aborted_transactions": None,
                        "records": None,
                    },
                ],
            }
        ],
    ),
    i32(25)
    + array(
        [
            string("orders")
            + array(
                [
                    i32(0)
                    + i16(0)
                    + i64(100)
                    + i64(90)
                    + array([i64(7) + i64(80)])
                    + blob(RECORD_BYTES),
                    i32(1) + i16(6) + i64(-1) + i64(-1) + array(None) + blob(None),
                ]
            )
        ]
    ),
)
# v17 response: error_code and session_id (v7+), topic_id (v13+), log_start_offset,
# preferred_read_replica (v11+), tagged diverging_epoch / current_leader / snapshot_id
# (tags 0-2 of a partition), tagged node_endpoints (tag 0 of the response, v16+).
case(
    FETCH,
    17,
    "response",
    FETCH.Response(
        throttle_time_ms=0,
        error_code=0,
        session_id=123456,
        responses=[
            {
                "topic_id": U1,
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 5000,
                        "last_stable_offset": 4990,
                        "log_start_offset": 100,
                        "diverging_epoch": {"epoch": 3, "end_offset": 4000},
                        "current_leader": {"leader_id": 2, "leader_epoch": 9},
                        "snapshot_id": {"end_offset": 3500, "epoch": 2},
                        "aborted_transactions": [
                            {"producer_id": 42, "first_offset": 4100},
                            {"producer_id": 43, "first_offset": 4200},
                        ],
                        "preferred_read_replica": 2,
                        "records": RECORD_BYTES,
                    },
                    {
                        "partition_index": 1,
                        "error_code": 74,
                        "high_watermark": -1,
                        "last_stable_offset": -1,
                        "log_start_offset": -1,
                        "current_leader": {"leader_id": 3, "leader_epoch": 10},
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": None,
                    },
                ],
            }
        ],
        node_endpoints=[
            {"node_id": 2, "host": "b2.example", "port": 9092, "rack": "use1-az2"},
            {"node_id": 3, "host": "b3.example", "port": 9094, "rack": None},
        ],
    ),
    i32(0)
    + i16(0)
    + i32(123456)
    + carray(
        [
            raw_uuid(U1_TEXT)
            + carray(
                [
                    i32(0)
                    + i16(0)
                    + i64(5000)
                    + i64(4990)
                    + i64(100)
                    + carray([i64(42) + i64(4100) + NO_TAGS, i64(43) + i64(4200) + NO_TAGS])
                    + i32(2)
                    + cblob(RECORD_BYTES)
                    + tags(
                        (0, i32(3) + i64(4000) + NO_TAGS),
                        (1, i32(2) + i32(9) + NO_TAGS),
                        (2, i64(3500) + i32(2) + NO_TAGS),
                    ),
                    i32(1)
                    + i16(74)
                    + i64(-1)
                    + i64(-1)
                    + i64(-1)
                    + carray(None)
                    + i32(-1)
                    + cblob(None)
                    + tags((1, i32(3) + i32(10) + NO_TAGS)),
                ]
            )
            + NO_TAGS
        ]
    )
    + tags(
        (
            0,
            carray(
                [
                    i32(2) + cstring("b2.example") + i32(9092) + cstring("use1-az2") + NO_TAGS,
                    i32(3) + cstring("b3.example") + i32(9094) + cstring(None) + NO_TAGS,
                ]
            ),
        )
    ),
)

# -- ListOffsets ------------------------------------------------------------------

# v1 request: replica_id, topics{name, partitions{partition_index, timestamp}}.
case(
    LIST_OFFSETS,
    1,
    "request",
    LIST_OFFSETS.Request(
        replica_id=-1,
        topics=[
            {
                "name": "orders",
                "partitions": [
                    {"partition_index": 0, "timestamp": -2},
                    {"partition_index": 1, "timestamp": 1700000000000},
                ],
            }
        ],
    ),
    i32(-1) + array([string("orders") + array([i32(0) + i64(-2), i32(1) + i64(1700000000000)])]),
)
# v8 request: isolation_level (v2+), current_leader_epoch (v4+), compact with tags (v6+).
case(
    LIST_OFFSETS,
    8,
    "request",
    LIST_OFFSETS.Request(
        replica_id=-1,
        isolation_level=1,
        topics=[
            {
                "name": "orders",
                "partitions": [
                    {"partition_index": 0, "current_leader_epoch": 5, "timestamp": -4},
                    {"partition_index": 1, "current_leader_epoch": -1, "timestamp": -3},
                ],
            }
        ],
    ),
    i32(-1)
    + i8(1)
    + carray(
        [
            cstring("orders")
            + carray(
                [
                    i32(0) + i32(5) + i64(-4) + NO_TAGS,
                    i32(1) + i32(-1) + i64(-3) + NO_TAGS,
                ]
            )
            + NO_TAGS
        ]
    )
    + NO_TAGS,
)
# v1 response: topics{name, partitions{partition_index, error_code, timestamp, offset}}.
case(
    LIST_OFFSETS,
    1,
    "response",
    LIST_OFFSETS.Response(
        topics=[
            {
                "name": "orders",
                "partitions": [
                    {"partition_index": 0, "error_code": 0, "timestamp": -1, "offset": 1234},
                    {"partition_index": 1, "error_code": 6, "timestamp": -1, "offset": -1},
                ],
            }
        ]
    ),
    array(
        [
            string("orders")
            + array(
                [
                    i32(0) + i16(0) + i64(-1) + i64(1234),
                    i32(1) + i16(6) + i64(-1) + i64(-1),
                ]
            )
        ]
    ),
)
# v8 response: throttle (v2+), leader_epoch (v4+), compact with tags.
case(
    LIST_OFFSETS,
    8,
    "response",
    LIST_OFFSETS.Response(
        throttle_time_ms=3,
        topics=[
            {
                "name": "orders",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "timestamp": 1700000000123,
                        "offset": 987654321012,
                        "leader_epoch": 5,
                    }
                ],
            }
        ],
    ),
    i32(3)
    + carray(
        [
            cstring("orders")
            + carray([i32(0) + i16(0) + i64(1700000000123) + i64(987654321012) + i32(5) + NO_TAGS])
            + NO_TAGS
        ]
    )
    + NO_TAGS,
)

# -- OffsetForLeaderEpoch ---------------------------------------------------------

# v2 request: topics{topic, partitions{partition, current_leader_epoch, leader_epoch}}
# (replica_id is v3+).
case(
    OFFSET_FOR_LEADER_EPOCH,
    2,
    "request",
    OFFSET_FOR_LEADER_EPOCH.Request(
        topics=[
            {
                "topic": "orders",
                "partitions": [
                    {"partition": 0, "current_leader_epoch": 6, "leader_epoch": 4},
                    {"partition": 2, "current_leader_epoch": -1, "leader_epoch": 5},
                ],
            }
        ]
    ),
    array([string("orders") + array([i32(0) + i32(6) + i32(4), i32(2) + i32(-1) + i32(5)])]),
)
# v4 request: replica_id (v3+), compact with tags.
case(
    OFFSET_FOR_LEADER_EPOCH,
    4,
    "request",
    OFFSET_FOR_LEADER_EPOCH.Request(
        replica_id=-1,
        topics=[
            {
                "topic": "orders",
                "partitions": [{"partition": 1, "current_leader_epoch": 8, "leader_epoch": 7}],
            }
        ],
    ),
    i32(-1)
    + carray([cstring("orders") + carray([i32(1) + i32(8) + i32(7) + NO_TAGS]) + NO_TAGS])
    + NO_TAGS,
)
# v2 response: throttle, topics{topic, partitions{error_code, partition, leader_epoch,
# end_offset}}.
case(
    OFFSET_FOR_LEADER_EPOCH,
    2,
    "response",
    OFFSET_FOR_LEADER_EPOCH.Response(
        throttle_time_ms=1,
        topics=[
            {
                "topic": "orders",
                "partitions": [
                    {"error_code": 0, "partition": 0, "leader_epoch": 4, "end_offset": 5555},
                    {"error_code": 74, "partition": 2, "leader_epoch": -1, "end_offset": -1},
                ],
            }
        ],
    ),
    i32(1)
    + array(
        [
            string("orders")
            + array(
                [
                    i16(0) + i32(0) + i32(4) + i64(5555),
                    i16(74) + i32(2) + i32(-1) + i64(-1),
                ]
            )
        ]
    ),
)
# v4 response: same fields, compact with tags.
case(
    OFFSET_FOR_LEADER_EPOCH,
    4,
    "response",
    OFFSET_FOR_LEADER_EPOCH.Response(
        throttle_time_ms=0,
        topics=[
            {
                "topic": "orders",
                "partitions": [
                    {"error_code": 0, "partition": 1, "leader_epoch": 7, "end_offset": 2**40},
                ],
            }
        ],
    ),
    i32(0)
    + carray(
        [cstring("orders") + carray([i16(0) + i32(1) + i32(7) + i64(2**40) + NO_TAGS]) + NO_TAGS]
    )
    + NO_TAGS,
)

# -- Produce ----------------------------------------------------------------------

# v3 request: nullable transactional_id, acks, timeout_ms,
# topic_data{name, partition_data{index, nullable records}}.
case(
    PRODUCE,
    3,
    "request",
    PRODUCE.Request(
        transactional_id=None,
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            {
                "name": "orders",
                "partition_data": [
                    {"index": 0, "records": RECORD_BYTES},
                    {"index": 1, "records": None},
                ],
            }
        ],
    ),
    string(None)
    + i16(-1)
    + i32(30000)
    + array([string("orders") + array([i32(0) + blob(RECORD_BYTES), i32(1) + blob(None)])]),
)
# v9 request: same fields, compact with tags.
case(
    PRODUCE,
    9,
    "request",
    PRODUCE.Request(
        transactional_id="txn-1",
        acks=1,
        timeout_ms=1500,
        topic_data=[{"name": "orders", "partition_data": [{"index": 4, "records": RECORD_BYTES}]}],
    ),
    cstring("txn-1")
    + i16(1)
    + i32(1500)
    + carray([cstring("orders") + carray([i32(4) + cblob(RECORD_BYTES) + NO_TAGS]) + NO_TAGS])
    + NO_TAGS,
)
# v3 response: responses{name, partition_responses{index, error_code, base_offset,
# log_append_time_ms}}, then throttle_time_ms (last field).
case(
    PRODUCE,
    3,
    "response",
    PRODUCE.Response(
        responses=[
            {
                "name": "orders",
                "partition_responses": [
                    {
                        "index": 0,
                        "error_code": 0,
                        "base_offset": 4000,
                        "log_append_time_ms": 1700000000000,
                    },
                    {"index": 1, "error_code": 6, "base_offset": -1, "log_append_time_ms": -1},
                ],
            }
        ],
        throttle_time_ms=12,
    ),
    array(
        [
            string("orders")
            + array(
                [
                    i32(0) + i16(0) + i64(4000) + i64(1700000000000),
                    i32(1) + i16(6) + i64(-1) + i64(-1),
                ]
            )
        ]
    )
    + i32(12),
)
# v9 response: log_start_offset (v5+), record_errors and error_message (v8+), compact.
case(
    PRODUCE,
    9,
    "response",
    PRODUCE.Response(
        responses=[
            {
                "name": "orders",
                "partition_responses": [
                    {
                        "index": 0,
                        "error_code": 87,
                        "base_offset": -1,
                        "log_append_time_ms": -1,
                        "log_start_offset": 10,
                        "record_errors": [
                            {"batch_index": 3, "batch_index_error_message": "bad key"},
                            {"batch_index": 5, "batch_index_error_message": None},
                        ],
                        "error_message": "invalid record",
                    },
                    {
                        "index": 1,
                        "error_code": 0,
                        "base_offset": 77,
                        "log_append_time_ms": -1,
                        "log_start_offset": 0,
                        "record_errors": [],
                        "error_message": None,
                    },
                ],
            }
        ],
        throttle_time_ms=0,
    ),
    carray(
        [
            cstring("orders")
            + carray(
                [
                    i32(0)
                    + i16(87)
                    + i64(-1)
                    + i64(-1)
                    + i64(10)
                    + carray(
                        [
                            i32(3) + cstring("bad key") + NO_TAGS,
                            i32(5) + cstring(None) + NO_TAGS,
                        ]
                    )
                    + cstring("invalid record")
                    + NO_TAGS,
                    i32(1)
                    + i16(0)
                    + i64(77)
                    + i64(-1)
                    + i64(0)
                    + carray([])
                    + cstring(None)
                    + NO_TAGS,
                ]
            )
            + NO_TAGS
        ]
    )
    + i32(0)
    + NO_TAGS,
)

# -- CreateTopics -----------------------------------------------------------------

# v2 request: topics{name, num_partitions, replication_factor,
# assignments{partition_index, broker_ids}, configs{name, nullable value}}, timeout_ms,
# validate_only (v1+).
case(
    CREATE_TOPICS,
    2,
    "request",
    CREATE_TOPICS.Request(
        topics=[
            {
                "name": "orders",
                "num_partitions": 3,
                "replication_factor": 2,
                "assignments": [],
                "configs": [
                    {"name": "cleanup.policy", "value": "compact"},
                    {"name": "retention.ms", "value": None},
                ],
            },
            {
                "name": "pinned",
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [{"partition_index": 0, "broker_ids": [1, 2]}],
                "configs": [],
            },
        ],
        timeout_ms=30000,
        validate_only=True,
    ),
    array(
        [
            string("orders")
            + i32(3)
            + i16(2)
            + array([])
            + array(
                [
                    string("cleanup.policy") + string("compact"),
                    string("retention.ms") + string(None),
                ]
            ),
            string("pinned")
            + i32(-1)
            + i16(-1)
            + array([i32(0) + array([i32(1), i32(2)])])
            + array([]),
        ]
    )
    + i32(30000)
    + boolean(True),
)
# v7 request: same fields, compact with tags.
case(
    CREATE_TOPICS,
    7,
    "request",
    CREATE_TOPICS.Request(
        topics=[
            {
                "name": "orders",
                "num_partitions": 6,
                "replication_factor": 3,
                "assignments": [],
                "configs": [{"name": "min.insync.replicas", "value": "2"}],
            }
        ],
        timeout_ms=60000,
        validate_only=False,
    ),
    carray(
        [
            cstring("orders")
            + i32(6)
            + i16(3)
            + carray([])
            + carray([cstring("min.insync.replicas") + cstring("2") + NO_TAGS])
            + NO_TAGS
        ]
    )
    + i32(60000)
    + boolean(False)
    + NO_TAGS,
)
# v2 response: throttle, topics{name, error_code, nullable error_message (v1+)}.
case(
    CREATE_TOPICS,
    2,
    "response",
    CREATE_TOPICS.Response(
        throttle_time_ms=0,
        topics=[
            {"name": "orders", "error_code": 0, "error_message": None},
            {"name": "dup", "error_code": 36, "error_message": "Topic 'dup' already exists."},
        ],
    ),
    i32(0)
    + array(
        [
            string("orders") + i16(0) + string(None),
            string("dup") + i16(36) + string("Topic 'dup' already exists."),
        ]
    ),
)
# v7 response: topic_id (v7+), num_partitions, replication_factor, nullable configs and
# tagged topic_config_error_code (tag 0), all v5+.
case(
    CREATE_TOPICS,
    7,
    "response",
    CREATE_TOPICS.Response(
        throttle_time_ms=5,
        topics=[
            {
                "name": "orders",
                "topic_id": U1,
                "error_code": 0,
                "error_message": None,
                "num_partitions": 6,
                "replication_factor": 3,
                "configs": [
                    {
                        "name": "min.insync.replicas",
                        "value": "2",
                        "read_only": False,
                        "config_source": 1,
                        "is_sensitive": False,
                    },
                    {
                        "name": "ssl.key.password",
                        "value": None,
                        "read_only": True,
                        "config_source": 5,
                        "is_sensitive": True,
                    },
                ],
            },
            {
                "name": "secret",
                "topic_id": ZERO_UUID,
                "error_code": 0,
                "error_message": None,
                "topic_config_error_code": 29,
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": None,
            },
        ],
    ),
    i32(5)
    + carray(
        [
            cstring("orders")
            + raw_uuid(U1_TEXT)
            + i16(0)
            + cstring(None)
            + i32(6)
            + i16(3)
            + carray(
                [
                    cstring("min.insync.replicas")
                    + cstring("2")
                    + boolean(False)
                    + i8(1)
                    + boolean(False)
                    + NO_TAGS,
                    cstring("ssl.key.password")
                    + cstring(None)
                    + boolean(True)
                    + i8(5)
                    + boolean(True)
                    + NO_TAGS,
                ]
            )
            + NO_TAGS,
            cstring("secret")
            + bytes(16)
            + i16(0)
            + cstring(None)
            + i32(1)
            + i16(1)
            + carray(None)
            + tags((0, i16(29))),
        ]
    )
    + NO_TAGS,
)

# -- DescribeConfigs --------------------------------------------------------------

# v1 request: resources{resource_type, resource_name, nullable configuration_keys},
# include_synonyms (v1+).
case(
    DESCRIBE_CONFIGS,
    1,
    "request",
    DESCRIBE_CONFIGS.Request(
        resources=[
            {
                "resource_type": 2,
                "resource_name": "orders",
                "configuration_keys": ["retention.ms", "cleanup.policy"],
            },
            {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
        ],
        include_synonyms=True,
    ),
    array(
        [
            i8(2) + string("orders") + array([string("retention.ms"), string("cleanup.policy")]),
            i8(4) + string("1") + array(None),
        ]
    )
    + boolean(True),
)
# v4 request: include_documentation (v3+), compact with tags.
case(
    DESCRIBE_CONFIGS,
    4,
    "request",
    DESCRIBE_CONFIGS.Request(
        resources=[
            {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
            {"resource_type": 4, "resource_name": "3", "configuration_keys": ["log.dirs"]},
        ],
        include_synonyms=False,
        include_documentation=True,
    ),
    carray(
        [
            i8(2) + cstring("orders") + carray(None) + NO_TAGS,
            i8(4) + cstring("3") + carray([cstring("log.dirs")]) + NO_TAGS,
        ]
    )
    + boolean(False)
    + boolean(True)
    + NO_TAGS,
)
# v1 response: throttle, results{error_code, nullable error_message, resource_type,
# resource_name, configs{name, nullable value, read_only, config_source (v1+),
# is_sensitive, synonyms{name, nullable value, source} (v1+)}}.
case(
    DESCRIBE_CONFIGS,
    1,
    "response",
    DESCRIBE_CONFIGS.Response(
        throttle_time_ms=0,
        results=[
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": 2,
                "resource_name": "orders",
                "configs": [
                    {
                        "name": "retention.ms",
                        "value": "86400000",
                        "read_only": False,
                        "config_source": 1,
                        "is_sensitive": False,
                        "synonyms": [
                            {"name": "retention.ms", "value": "86400000", "source": 1},
                            {"name": "log.retention.hours", "value": "168", "source": 5},
                        ],
                    },
                    {
                        "name": "sasl.password",
                        "value": None,
                        "read_only": True,
                        "config_source": 4,
                        "is_sensitive": True,
                        "synonyms": [{"name": "sasl.password", "value": None, "source": 4}],
                    },
                ],
            },
            {
                "error_code": 29,
                "error_message": "Not authorized",
                "resource_type": 2,
                "resource_name": "secret",
                "configs": [],
            },
        ],
    ),
    i32(0)
    + array(
        [
            i16(0)
            + string(None)
            + i8(2)
            + string("orders")
            + array(
                [
                    string("retention.ms")
                    + string("86400000")
                    + boolean(False)
                    + i8(1)
                    + boolean(False)
                    + array(
                        [
                            string("retention.ms") + string("86400000") + i8(1),
                            string("log.retention.hours") + string("168") + i8(5),
                        ]
                    ),
                    string("sasl.password")
                    + string(None)
                    + boolean(True)
                    + i8(4)
                    + boolean(True)
                    + array([string("sasl.password") + string(None) + i8(4)]),
                ]
            ),
            i16(29) + string("Not authorized") + i8(2) + string("secret") + array([]),
        ]
    ),
)
# v4 response: config_type and nullable documentation (v3+), compact with tags.
case(
    DESCRIBE_CONFIGS,
    4,
    "response",
    DESCRIBE_CONFIGS.Response(
        throttle_time_ms=2,
        results=[
            {
                "error_code": 0,
                "error_message": None,
                "resource_type": 2,
                "resource_name": "orders",
                "configs": [
                    {
                        "name": "retention.ms",
                        "value": "86400000",
                        "read_only": False,
                        "config_source": 1,
                        "is_sensitive": False,
                        "synonyms": [
                            {"name": "retention.ms", "value": "86400000", "source": 1},
                        ],
                        "config_type": 5,
                        "documentation": "How long to keep a log.",
                    },
                    {
                        "name": "sasl.password",
                        "value": None,
                        "read_only": True,
                        "config_source": 4,
                        "is_sensitive": True,
                        "synonyms": [],
                        "config_type": 9,
                        "documentation": None,
                    },
                ],
            }
        ],
    ),
    i32(2)
    + carray(
        [
            i16(0)
            + cstring(None)
            + i8(2)
            + cstring("orders")
            + carray(
                [
                    cstring("retention.ms")
                    + cstring("86400000")
                    + boolean(False)
                    + i8(1)
                    + boolean(False)
                    + carray([cstring("retention.ms") + cstring("86400000") + i8(1) + NO_TAGS])
                    + i8(5)
                    + cstring("How long to keep a log.")
                    + NO_TAGS,
                    cstring("sasl.password")
                    + cstring(None)
                    + boolean(True)
                    + i8(4)
                    + boolean(True)
                    + carray([])
                    + i8(9)
                    + cstring(None)
                    + NO_TAGS,
                ]
            )
            + NO_TAGS
        ]
    )
    + NO_TAGS,
)


# -- tests ------------------------------------------------------------------------

IDS = [c.id for c in CASES]
assert len(set(IDS)) == len(IDS), "label the extra vectors of a version"


def _encode(c: Case) -> bytes:
    if c.kind == "request":
        return c.api.encode_request(c.version, c.value)
    return c.api.encode_response(c.version, c.value)


def _decode(c: Case, data: bytes) -> Any:
    if c.kind == "request":
        return c.api.decode_request(c.version, data)
    return c.api.decode_response(c.version, data)


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_encode_matches_golden_bytes(c: Case) -> None:
    assert _encode(c) == c.wire


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_decode_golden_bytes(c: Case) -> None:
    decoded = _decode(c, c.wire)
    assert decoded == c.value


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_truncated_golden_bytes_raise(c: Case) -> None:
    # Every strict prefix of a valid message must be refused: the decoder follows the
    # same path as on the whole message and runs out of bytes somewhere.
    for cut in range(len(c.wire)):
        with pytest.raises(KafkaProtocolError):
            _decode(c, c.wire[:cut])


@pytest.mark.parametrize("c", CASES, ids=IDS)
def test_trailing_bytes_raise(c: Case) -> None:
    with pytest.raises(KafkaProtocolError):
        _decode(c, c.wire + b"\x00")


EXPECTED_RANGES = [
    (METADATA, 3, 1, 12, 9),
    (FETCH, 1, 4, 17, 12),
    (LIST_OFFSETS, 2, 1, 8, 6),
    (OFFSET_FOR_LEADER_EPOCH, 23, 2, 4, 4),
    (PRODUCE, 0, 3, 9, 9),
    (CREATE_TOPICS, 19, 2, 7, 5),
    (DESCRIBE_CONFIGS, 32, 1, 4, 4),
]


@pytest.mark.parametrize(
    ("api", "key", "lo", "hi", "flexible"),
    EXPECTED_RANGES,
    ids=[r[0].name for r in EXPECTED_RANGES],
)
def test_api_versions(api: Api, key: int, lo: int, hi: int, flexible: int) -> None:
    assert (api.key, api.min_version, api.max_version, api.flexible_from) == (
        key,
        lo,
        hi,
        flexible,
    )
    # Every version we claim to speak has a both-ways golden vector at the edges.
    covered = {(c.version, c.kind) for c in CASES if c.api is api}
    for v in (lo, hi):
        assert {(v, "request"), (v, "response")} <= covered
    for outside in (lo - 1, hi + 1):
        with pytest.raises(UnsupportedVersionError):
            api.encode_request(outside, api.Request())
        with pytest.raises(UnsupportedVersionError):
            api.decode_response(outside, b"")


def test_fetch_defaults_match_kafka() -> None:
    # Fields Kafka defaults to something other than zero: a consumer that leaves them
    # out must still send what Kafka's own client sends.
    req: Any = FETCH.Request(topics=[{"topic": "t", "partitions": [{"partition": 0}]}])
    assert (req.replica_id, req.max_bytes, req.session_epoch) == (-1, 0x7FFFFFFF, -1)
    part = req.topics[0].partitions[0]
    assert (part.current_leader_epoch, part.last_fetched_epoch, part.log_start_offset) == (
        -1,
        -1,
        -1,
    )
    # A v10 response has no preferred_read_replica and no tagged fields: they decode to
    # Kafka's defaults ("no preferred replica", "unknown leader").
    partition = i32(0) + i16(0) + i64(1) + i64(1) + i64(0) + array(None) + blob(None)
    wire = i32(0) + i16(0) + i32(0) + array([string("t") + array([partition])])
    decoded = FETCH.decode_response(10, wire).responses[0].partitions[0]
    assert decoded.preferred_read_replica == -1
    assert (decoded.current_leader.leader_id, decoded.current_leader.leader_epoch) == (-1, -1)
    assert (decoded.diverging_epoch.epoch, decoded.diverging_epoch.end_offset) == (-1, -1)
    assert (decoded.snapshot_id.end_offset, decoded.snapshot_id.epoch) == (-1, -1)


def test_metadata_request_defaults() -> None:
    # Kafka's default is an empty topic list (no topics), not null (all topics).
    req: Any = METADATA.Request()
    assert req.topics == []
    assert req.allow_auto_topic_creation is True
    # The default value encodes at every version, including the rigid ones.
    assert METADATA.encode_request(4, req) == i32(0) + boolean(True)
    v9 = carray([]) + boolean(True) + boolean(False) + boolean(False) + NO_TAGS
    assert METADATA.encode_request(9, req) == v9
