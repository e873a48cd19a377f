"""Golden-byte tests for the group, coordinator and SASL APIs and the consumer protocol.

Every expected byte string is assembled by hand, field by field, with the small
helpers below (plain ``struct.pack`` and a local unsigned varint), following the
field order of Apache Kafka's message definitions.  None of rackafka's codecs is
used to build them.  Each vector is checked both ways: encoding the value gives
the bytes, and decoding the bytes gives the value.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from rackafka.errors import KafkaProtocolError, UnsupportedVersionError
from rackafka.protocol.apis.api_versions import API_VERSIONS
from rackafka.protocol.apis.consumer_group_heartbeat import CONSUMER_GROUP_HEARTBEAT
from rackafka.protocol.apis.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from rackafka.protocol.apis.find_coordinator import FIND_COORDINATOR
from rackafka.protocol.apis.heartbeat import HEARTBEAT
from rackafka.protocol.apis.join_group import JOIN_GROUP
from rackafka.protocol.apis.leave_group import LEAVE_GROUP
from rackafka.protocol.apis.offset_commit import OFFSET_COMMIT
from rackafka.protocol.apis.offset_fetch import OFFSET_FETCH
from rackafka.protocol.apis.sasl import SASL_AUTHENTICATE, SASL_HANDSHAKE
from rackafka.protocol.apis.sync_group import SYNC_GROUP
from rackafka.protocol.schema import Api
from tests.protocol._wire import (
    array,
    boolean,
    carray,
    cstring,
    i8,
    i16,
    i32,
    i64,
    string,
)
from tests.protocol._wire import blob as bytes_
from tests.protocol._wire import cblob as cbytes
from tests.protocol._wire import tags as _tag_section


def tags(fields: dict[int, bytes] | None = None) -> bytes:
    """A tagged-field section from a ``{tag: data}`` dict, in tag order."""
    return _tag_section(*sorted((fields or {}).items()))


NO_TAGS = tags()

TOPIC_A = uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
TOPIC_B = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")


# -- the vectors --------------------------------------------------------------------


@dataclass
class Vector:
    id: str
    api: Api
    version: int
    kind: str  # "request" or "response"
    value: Any
    wire: bytes


VECTORS: list[Vector] = []


def vector(id_: str, api: Api, version: int, kind: str, value: Any, wire: bytes) -> None:
    VECTORS.append(Vector(id_, api, version, kind, value, wire))


# ApiVersions v0: empty request; response has error code and api keys, no throttle time.
vector("ApiVersions-v0-request", API_VERSIONS, 0, "request", API_VERSIONS.Request(), b"")
vector(
    "ApiVersions-v0-response",
    API_VERSIONS,
    0,
    "response",
    API_VERSIONS.Response(
        error_code=35,
        api_keys=[
            {"api_key": 18, "min_version": 0, "max_version": 3},
            {"api_key": 11, "min_version": 2, "max_version": 9},
        ],
    ),
    i16(35) + array([i16(18) + i16(0) + i16(3), i16(11) + i16(2) + i16(9)]),
)
# ApiVersions v3 (flexible): client software name/version; response with throttle time and
# all four tagged fields (supported_features 0, finalized_features_epoch 1,
# finalized_features 2, zk_migration_ready 3) set.
vector(
    "ApiVersions-v3-request",
    API_VERSIONS,
    3,
    "request",
    API_VERSIONS.Request(client_software_name="rackafka", client_software_version="0.1.0"),
    cstring("rackafka") + cstring("0.1.0") + NO_TAGS,
)
vector(
    "ApiVersions-v3-response",
    API_VERSIONS,
    3,
    "response",
    API_VERSIONS.Response(
        error_code=0,
        api_keys=[{"api_key": 68, "min_version": 0, "max_version": 1}],
        throttle_time_ms=250,
        supported_features=[{"name": "metadata.version", "min_version": 1, "max_version": 20}],
        finalized_features_epoch=7,
        finalized_features=[
            {"name": "metadata.version", "max_version_level": 20, "min_version_level": 20}
        ],
        zk_migration_ready=True,
    ),
    i16(0)
    + carray([i16(68) + i16(0) + i16(1) + NO_TAGS])
    + i32(250)
    + tags(
        {
            0: carray([cstring("metadata.version") + i16(1) + i16(20) + NO_TAGS]),
            1: i64(7),
            2: carray([cstring("metadata.version") + i16(20) + i16(20) + NO_TAGS]),
            3: boolean(True),
        }
    ),
)

# FindCoordinator v0: a single key; response error code, node id, host, port.
vector(
    "FindCoordinator-v0-request",
    FIND_COORDINATOR,
    0,
    "request",
    FIND_COORDINATOR.Request(key="my-group"),
    string("my-group"),
)
vector(
    "FindCoordinator-v0-response",
    FIND_COORDINATOR,
    0,
    "response",
    FIND_COORDINATOR.Response(error_code=15, node_id=3, host="broker-3.az-b", port=9093),
    i16(15) + i32(3) + string("broker-3.az-b") + i32(9093),
)
# FindCoordinator v4 (flexible, KIP-699 batching): key type and coordinator_keys; response
# throttle time and one coordinators entry per key, one with a null error message.
vector(
    "FindCoordinator-v4-request",
    FIND_COORDINATOR,
    4,
    "request",
    FIND_COORDINATOR.Request(key_type=1, coordinator_keys=["txn-a", "txn-b"]),
    i8(1) + carray([cstring("txn-a"), cstring("txn-b")]) + NO_TAGS,
)
vector(
    "FindCoordinator-v4-response",
    FIND_COORDINATOR,
    4,
    "response",
    FIND_COORDINATOR.Response(
        throttle_time_ms=20,
        coordinators=[
            {
                "key": "txn-a",
                "node_id": 1,
                "host": "b1",
                "port": 9092,
                "error_code": 0,
                "error_message": None,
            },
            {
                "key": "txn-b",
                "node_id": -1,
                "host": "",
                "port": -1,
                "error_code": 15,
                "error_message": "not available",
            },
        ],
    ),
    i32(20)
    + carray(
        [
            cstring("txn-a")
            + i32(1)
            + cstring("b1")
            + i32(9092)
            + i16(0)
            + cstring(None)
            + NO_TAGS,
            cstring("txn-b")
            + i32(-1)
            + cstring("")
            + i32(-1)
            + i16(15)
            + cstring("not available")
            + NO_TAGS,
        ]
    )
    + NO_TAGS,
)

# JoinGroup v0: no rebalance timeout, no instance id; response without throttle time.
vector(
    "JoinGroup-v0-request",
    JOIN_GROUP,
    0,
    "request",
    JOIN_GROUP.Request(
        group_id="g",
        session_timeout_ms=10000,
        member_id="",
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": b"\x00\x01"}, {"name": "rr", "metadata": b""}],
    ),
    string("g")
    + i32(10000)
    + string("")
    + string("consumer")
    + array([string("range") + bytes_(b"\x00\x01"), string("rr") + bytes_(b"")]),
)
vector(
    "JoinGroup-v0-response",
    JOIN_GROUP,
    0,
    "response",
    JOIN_GROUP.Response(
        error_code=0,
        generation_id=4,
        protocol_name="range",
        leader="m-1",
        member_id="m-2",
        members=[{"member_id": "m-1", "metadata": b"abc"}],
    ),
    i16(0)
    + i32(4)
    + string("range")
    + string("m-1")
    + string("m-2")
    + array([string("m-1") + bytes_(b"abc")]),
)
# JoinGroup v9 (flexible): rebalance timeout (v1+), group instance id (v5+), reason (v8+);
# response with throttle time, nullable protocol type/name (v7+), skip_assignment (v9+) and
# member group instance ids (one null, one set).
vector(
    "JoinGroup-v9-request",
    JOIN_GROUP,
    9,
    "request",
    JOIN_GROUP.Request(
        group_id="g",
        session_timeout_ms=45000,
        rebalance_timeout_ms=300000,
        member_id="m-1",
        group_instance_id="host-1",
        protocol_type="consumer",
        protocols=[{"name": "cooperative-sticky", "metadata": b"\x00\x03"}],
        reason="rebalance needed",
    ),
    cstring("g")
    + i32(45000)
    + i32(300000)
    + cstring("m-1")
    + cstring("host-1")
    + cstring("consumer")
    + carray([cstring("cooperative-sticky") + cbytes(b"\x00\x03") + NO_TAGS])
    + cstring("rebalance needed")
    + NO_TAGS,
)
vector(
    "JoinGroup-v9-response",
    JOIN_GROUP,
    9,
    "response",
    JOIN_GROUP.Response(
        throttle_time_ms=5,
        error_code=0,
        generation_id=12,
        protocol_type="consumer",
        protocol_name=None,
        leader="m-1",
        skip_assignment=True,
        member_id="m-1",
        members=[
            {"member_id": "m-1", "group_instance_id": None, "metadata": b"\x01"},
            {"member_id": "m-2", "group_instance_id": "host-2", "metadata": b""},
        ],
    ),
    i32(5)
    + i16(0)
    + i32(12)
    + cstring("consumer")
    + cstring(None)
    + cstring("m-1")
    + boolean(True)
    + cstring("m-1")
    + carray(
        [
            cstring("m-1") + cstring(None) + cbytes(b"\x01") + NO_TAGS,
            cstring("m-2") + cstring("host-2") + cbytes(b"") + NO_TAGS,
        ]
    )
    + NO_TAGS,
)

# SyncGroup v0: no instance id or protocol; response error code and assignment only.
vector(
    "SyncGroup-v0-request",
    SYNC_GROUP,
    0,
    "request",
    SYNC_GROUP.Request(
        group_id="g",
        generation_id=3,
        member_id="m-1",
        assignments=[{"member_id": "m-1", "assignment": b"\x00\x00"}],
    ),
    string("g") + i32(3) + string("m-1") + array([string("m-1") + bytes_(b"\x00\x00")]),
)
vector(
    "SyncGroup-v0-response",
    SYNC_GROUP,
    0,
    "response",
    SYNC_GROUP.Response(error_code=27, assignment=b"xyz"),
    i16(27) + bytes_(b"xyz"),
)
# SyncGroup v5 (flexible): group instance id (v3+, null here), protocol type and name (v5+);
# response with throttle time, protocol type null and name set.
vector(
    "SyncGroup-v5-request",
    SYNC_GROUP,
    5,
    "request",
    SYNC_GROUP.Request(
        group_id="g",
        generation_id=7,
        member_id="m-1",
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[],
    ),
    cstring("g")
    + i32(7)
    + cstring("m-1")
    + cstring(None)
    + cstring("consumer")
    + cstring("range")
    + carray([])
    + NO_TAGS,
)
vector(
    "SyncGroup-v5-response",
    SYNC_GROUP,
    5,
    "response",
    SYNC_GROUP.Response(
        throttle_time_ms=1,
        error_code=0,
        protocol_type=None,
        protocol_name="range",
        assignment=b"\x00\x03\x00",
    ),
    i32(1) + i16(0) + cstring(None) + cstring("range") + cbytes(b"\x00\x03\x00") + NO_TAGS,
)

# Heartbeat v0: group, generation, member; response error code only.
vector(
    "Heartbeat-v0-request",
    HEARTBEAT,
    0,
    "request",
    HEARTBEAT.Request(group_id="g", generation_id=-1, member_id="m"),
    string("g") + i32(-1) + string("m"),
)
vector(
    "Heartbeat-v0-response",
    HEARTBEAT,
    0,
    "response",
    HEARTBEAT.Response(error_code=27),
    i16(27),
)
# Heartbeat v4 (flexible): group instance id (v3+); response throttle time (v1+).
vector(
    "Heartbeat-v4-request",
    HEARTBEAT,
    4,
    "request",
    HEARTBEAT.Request(group_id="g", generation_id=9, member_id="m", group_instance_id="i-1"),
    cstring("g") + i32(9) + cstring("m") + cstring("i-1") + NO_TAGS,
)
vector(
    "Heartbeat-v4-response",
    HEARTBEAT,
    4,
    "response",
    HEARTBEAT.Response(throttle_time_ms=100, error_code=0),
    i32(100) + i16(0) + NO_TAGS,
)

# LeaveGroup v0: a single member id; response error code only.
vector(
    "LeaveGroup-v0-request",
    LEAVE_GROUP,
    0,
    "request",
    LEAVE_GROUP.Request(group_id="g", member_id="m-1"),
    string("g") + string("m-1"),
)
vector(
    "LeaveGroup-v0-response",
    LEAVE_GROUP,
    0,
    "response",
    LEAVE_GROUP.Response(error_code=25),
    i16(25),
)
# LeaveGroup v5 (flexible): members batch (v3+) with instance id and reason (v5+);
# response throttle time and per-member results.
vector(
    "LeaveGroup-v5-request",
    LEAVE_GROUP,
    5,
    "request",
    LEAVE_GROUP.Request(
        group_id="g",
        members=[
            {"member_id": "m-1", "group_instance_id": None, "reason": "shutting down"},
            {"member_id": "", "group_instance_id": "host-2", "reason": None},
        ],
    ),
    cstring("g")
    + carray(
        [
            cstring("m-1") + cstring(None) + cstring("shutting down") + NO_TAGS,
            cstring("") + cstring("host-2") + cstring(None) + NO_TAGS,
        ]
    )
    + NO_TAGS,
)
vector(
    "LeaveGroup-v5-response",
    LEAVE_GROUP,
    5,
    "response",
    LEAVE_GROUP.Response(
        throttle_time_ms=0,
        error_code=0,
        members=[
            {"member_id": "m-1", "group_instance_id": None, "error_code": 0},
            {"member_id": "m-9", "group_instance_id": "host-2", "error_code": 25},
        ],
    ),
    i32(0)
    + i16(0)
    + carray(
        [
            cstring("m-1") + cstring(None) + i16(0) + NO_TAGS,
            cstring("m-9") + cstring("host-2") + i16(25) + NO_TAGS,
        ]
    )
    + NO_TAGS,
)

# OffsetCommit v2: generation and member id (v1+), retention time (v2-4), no leader epoch;
# response without throttle time.
vector(
    "OffsetCommit-v2-request",
    OFFSET_COMMIT,
    2,
    "request",
    OFFSET_COMMIT.Request(
        group_id="g",
        generation_id_or_member_epoch=5,
        member_id="m-1",
        retention_time_ms=86400000,
        topics=[
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 100, "committed_metadata": None},
                    {"partition_index": 1, "committed_offset": 2**40, "committed_metadata": "x"},
                ],
            }
        ],
    ),
    string("g")
    + i32(5)
    + string("m-1")
    + i64(86400000)
    + array(
        [
            string("t")
            + array(
                [
                    i32(0) + i64(100) + string(None),
                    i32(1) + i64(2**40) + string("x"),
                ]
            )
        ]
    ),
)
vector(
    "OffsetCommit-v2-response",
    OFFSET_COMMIT,
    2,
    "response",
    OFFSET_COMMIT.Response(
        topics=[
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "error_code": 0},
                    {"partition_index": 1, "error_code": 22},
                ],
            }
        ]
    ),
    array([string("t") + array([i32(0) + i16(0), i32(1) + i16(22)])]),
)
# OffsetCommit v8 (flexible): group instance id (v7+), committed leader epoch (v6+), no
# retention time; response with throttle time (v3+).
vector(
    "OffsetCommit-v8-request",
    OFFSET_COMMIT,
    8,
    "request",
    OFFSET_COMMIT.Request(
        group_id="g",
        generation_id_or_member_epoch=6,
        member_id="m-1",
        group_instance_id="host-1",
        topics=[
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 2,
                        "committed_offset": 42,
                        "committed_leader_epoch": 3,
                        "committed_metadata": "",
                    },
                    {
                        "partition_index": 3,
                        "committed_offset": 43,
                        "committed_leader_epoch": -1,
                        "committed_metadata": None,
                    },
                ],
            }
        ],
    ),
    cstring("g")
    + i32(6)
    + cstring("m-1")
    + cstring("host-1")
    + carray(
        [
            cstring("t")
            + carray(
                [
                    i32(2) + i64(42) + i32(3) + cstring("") + NO_TAGS,
                    i32(3) + i64(43) + i32(-1) + cstring(None) + NO_TAGS,
                ]
            )
            + NO_TAGS
        ]
    )
    + NO_TAGS,
)
vector(
    "OffsetCommit-v8-response",
    OFFSET_COMMIT,
    8,
    "response",
    OFFSET_COMMIT.Response(
        throttle_time_ms=7,
        topics=[{"name": "t", "partitions": [{"partition_index": 2, "error_code": 79}]}],
    ),
    i32(7) + carray([cstring("t") + carray([i32(2) + i16(79) + NO_TAGS]) + NO_TAGS]) + NO_TAGS,
)

# OffsetCommit v9 (KIP-848): the layout of v8; a consumer-protocol member puts its member
# epoch where a classic member puts its generation.
vector(
    "OffsetCommit-v9-request",
    OFFSET_COMMIT,
    9,
    "request",
    OFFSET_COMMIT.Request(
        group_id="g",
        generation_id_or_member_epoch=11,
        member_id="Xy7-member",
        group_instance_id=None,
        topics=[
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 7,
                        "committed_leader_epoch": 2,
                        "committed_metadata": "m",
                    }
                ],
            }
        ],
    ),
    cstring("g")
    + i32(11)
    + cstring("Xy7-member")
    + cstring(None)
    + carray([cstring("t") + carray([i32(0) + i64(7) + i32(2) + cstring("m") + NO_TAGS]) + NO_TAGS])
    + NO_TAGS,
)
vector(
    "OffsetCommit-v9-response",
    OFFSET_COMMIT,
    9,
    "response",
    OFFSET_COMMIT.Response(
        throttle_time_ms=0,
        topics=[{"name": "t", "partitions": [{"partition_index": 0, "error_code": 113}]}],
    ),
    i32(0) + carray([cstring("t") + carray([i32(0) + i16(113) + NO_TAGS]) + NO_TAGS]) + NO_TAGS,
)

# OffsetFetch v1: group and (non-nullable) topics; response per partition offset,
# metadata and error, no top-level error code, no throttle time, no leader epoch.
vector(
    "OffsetFetch-v1-request",
    OFFSET_FETCH,
    1,
    "request",
    OFFSET_FETCH.Request(group_id="g", topics=[{"name": "t", "partition_indexes": [0, 1, 5]}]),
    string("g") + array([string("t") + array([i32(0), i32(1), i32(5)])]),
)
vector(
    "OffsetFetch-v1-response",
    OFFSET_FETCH,
    1,
    "response",
    OFFSET_FETCH.Response(
        topics=[
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 10,
                        "metadata": None,
                        "error_code": 0,
                    },
                    {
                        "partition_index": 1,
                        "committed_offset": -1,
                        "metadata": "meta",
                        "error_code": 0,
                    },
                ],
            }
        ]
    ),
    array(
        [
            string("t")
            + array(
                [
                    i32(0) + i64(10) + string(None) + i16(0),
                    i32(1) + i64(-1) + string("meta") + i16(0),
                ]
            )
        ]
    ),
)
# OffsetFetch v2 (not at an edge, but the first version where the topics array may be
# null, meaning "every topic") and its top-level error code.
vector(
    "OffsetFetch-v2-request-null-topics",
    OFFSET_FETCH,
    2,
    "request",
    OFFSET_FETCH.Request(group_id="g", topics=None),
    string("g") + i32(-1),
)
vector(
    "OffsetFetch-v2-response",
    OFFSET_FETCH,
    2,
    "response",
    OFFSET_FETCH.Response(topics=[], error_code=16),
    array([]) + i16(16),
)
# OffsetFetch v8 (flexible, KIP-709 batching): groups with nullable topics, require_stable
# (v7+); response with throttle time and per-group results (leader epoch, group error).
vector(
    "OffsetFetch-v8-request",
    OFFSET_FETCH,
    8,
    "request",
    OFFSET_FETCH.Request(
        groups=[
            {"group_id": "g1", "topics": [{"name": "t", "partition_indexes": [0, 7]}]},
            {"group_id": "g2", "topics": None},
        ],
        require_stable=True,
    ),
    carray(
        [
            cstring("g1") + carray([cstring("t") + carray([i32(0), i32(7)]) + NO_TAGS]) + NO_TAGS,
            cstring("g2") + carray(None) + NO_TAGS,
        ]
    )
    + boolean(True)
    + NO_TAGS,
)
vector(
    "OffsetFetch-v8-response",
    OFFSET_FETCH,
    8,
    "response",
    OFFSET_FETCH.Response(
        throttle_time_ms=3,
        groups=[
            {
                "group_id": "g1",
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": 99,
                                "committed_leader_epoch": 4,
                                "metadata": None,
                                "error_code": 0,
                            },
                            {
                                "partition_index": 7,
                                "committed_offset": -1,
                                "committed_leader_epoch": -1,
                                "metadata": "",
                                "error_code": 88,
                            },
                        ],
                    }
                ],
                "error_code": 0,
            },
            {"group_id": "g2", "topics": [], "error_code": 69},
        ],
    ),
    i32(3)
    + carray(
        [
            cstring("g1")
            + carray(
                [
                    cstring("t")
                    + carray(
                        [
                            i32(0) + i64(99) + i32(4) + cstring(None) + i16(0) + NO_TAGS,
                            i32(7) + i64(-1) + i32(-1) + cstring("") + i16(88) + NO_TAGS,
                        ]
                    )
                    + NO_TAGS
                ]
            )
            + i16(0)
            + NO_TAGS,
            cstring("g2") + carray([]) + i16(69) + NO_TAGS,
        ]
    )
    + NO_TAGS,
)

# OffsetFetch v9 (KIP-848): each group carries the member id (nullable) and member epoch.
vector(
    "OffsetFetch-v9-request",
    OFFSET_FETCH,
    9,
    "request",
    OFFSET_FETCH.Request(
        groups=[
            {
                "group_id": "g1",
                "member_id": "Xy7-member",
                "member_epoch": 5,
                "topics": [{"name": "t", "partition_indexes": [3]}],
            },
            {"group_id": "g2", "member_id": None, "member_epoch": -1, "topics": None},
        ],
        require_stable=False,
    ),
    carray(
        [
            cstring("g1")
            + cstring("Xy7-member")
            + i32(5)
            + carray([cstring("t") + carray([i32(3)]) + NO_TAGS])
            + NO_TAGS,
            cstring("g2") + cstring(None) + i32(-1) + carray(None) + NO_TAGS,
        ]
    )
    + boolean(False)
    + NO_TAGS,
)
vector(
    "OffsetFetch-v9-response",
    OFFSET_FETCH,
    9,
    "response",
    OFFSET_FETCH.Response(
        throttle_time_ms=0,
        groups=[{"group_id": "g1", "topics": [], "error_code": 113}],
    ),
    i32(0) + carray([cstring("g1") + carray([]) + i16(113) + NO_TAGS]) + NO_TAGS,
)

# ConsumerGroupHeartbeat v0 (flexible from v0): a joining member with every nullable field
# set; response with a null assignment.
vector(
    "ConsumerGroupHeartbeat-v0-request",
    CONSUMER_GROUP_HEARTBEAT,
    0,
    "request",
    CONSUMER_GROUP_HEARTBEAT.Request(
        group_id="g",
        member_id="",
        member_epoch=0,
        instance_id="host-1",
        rack_id="az-a",
        rebalance_timeout_ms=300000,
        subscribed_topic_names=["t1", "t2"],
        server_assignor="uniform",
        topic_partitions=[{"topic_id": TOPIC_A, "partitions": [0, 2]}],
    ),
    cstring("g")
    + cstring("")
    + i32(0)
    + cstring("host-1")
    + cstring("az-a")
    + i32(300000)
    + carray([cstring("t1"), cstring("t2")])
    + cstring("uniform")
    + carray([TOPIC_A.bytes + carray([i32(0), i32(2)]) + NO_TAGS])
    + NO_TAGS,
)
vector(
    "ConsumerGroupHeartbeat-v0-response",
    CONSUMER_GROUP_HEARTBEAT,
    0,
    "response",
    CONSUMER_GROUP_HEARTBEAT.Response(
        throttle_time_ms=0,
        error_code=110,
        error_message="fenced",
        member_id=None,
        member_epoch=-1,
        heartbeat_interval_ms=5000,
        assignment=None,
    ),
    i32(0) + i16(110) + cstring("fenced") + cstring(None) + i32(-1) + i32(5000) + i8(-1) + NO_TAGS,
)
# ConsumerGroupHeartbeat v1: subscribed_topic_regex (v1+) between the topic names and the
# server assignor; nulls for "unchanged" fields; response with an assignment struct.
vector(
    "ConsumerGroupHeartbeat-v1-request",
    CONSUMER_GROUP_HEARTBEAT,
    1,
    "request",
    CONSUMER_GROUP_HEARTBEAT.Request(
        group_id="g",
        member_id="mid",
        member_epoch=8,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=-1,
        subscribed_topic_names=None,
        subscribed_topic_regex="orders-.*",
        server_assignor=None,
        topic_partitions=None,
    ),
    cstring("g")
    + cstring("mid")
    + i32(8)
    + cstring(None)
    + cstring(None)
    + i32(-1)
    + carray(None)
    + cstring("orders-.*")
    + cstring(None)
    + carray(None)
    + NO_TAGS,
)
vector(
    "ConsumerGroupHeartbeat-v1-response",
    CONSUMER_GROUP_HEARTBEAT,
    1,
    "response",
    CONSUMER_GROUP_HEARTBEAT.Response(
        throttle_time_ms=2,
        error_code=0,
        error_message=None,
        member_id="mid",
        member_epoch=9,
        heartbeat_interval_ms=3000,
        assignment={
            "topic_partitions": [
                {"topic_id": TOPIC_A, "partitions": [1]},
                {"topic_id": TOPIC_B, "partitions": []},
            ]
        },
    ),
    i32(2)
    + i16(0)
    + cstring(None)
    + cstring("mid")
    + i32(9)
    + i32(3000)
    + i8(1)
    + carray(
        [
            TOPIC_A.bytes + carray([i32(1)]) + NO_TAGS,
            TOPIC_B.bytes + carray([]) + NO_TAGS,
        ]
    )
    + NO_TAGS  # the assignment struct's tagged fields
    + NO_TAGS,  # the response's tagged fields
)

# SaslHandshake v0 and v1 (never flexible, same layout).
for _v in (0, 1):
    vector(
        f"SaslHandshake-v{_v}-request",
        SASL_HANDSHAKE,
        _v,
        "request",
        SASL_HANDSHAKE.Request(mechanism="SCRAM-SHA-512"),
        string("SCRAM-SHA-512"),
    )
    vector(
        f"SaslHandshake-v{_v}-response",
        SASL_HANDSHAKE,
        _v,
        "response",
        SASL_HANDSHAKE.Response(error_code=33, mechanisms=["PLAIN", "SCRAM-SHA-256"]),
        i16(33) + array([string("PLAIN"), string("SCRAM-SHA-256")]),
    )

# SaslAuthenticate v0: auth bytes; response error, nullable message, bytes, no lifetime.
vector(
    "SaslAuthenticate-v0-request",
    SASL_AUTHENTICATE,
    0,
    "request",
    SASL_AUTHENTICATE.Request(auth_bytes=b"\x00user\x00pass"),
    bytes_(b"\x00user\x00pass"),
)
vector(
    "SaslAuthenticate-v0-response",
    SASL_AUTHENTICATE,
    0,
    "response",
    SASL_AUTHENTICATE.Response(error_code=58, error_message="bad password", auth_bytes=b""),
    i16(58) + string("bad password") + bytes_(b""),
)
# SaslAuthenticate v2 (flexible): compact bytes; response with session lifetime (v1+).
vector(
    "SaslAuthenticate-v2-request",
    SASL_AUTHENTICATE,
    2,
    "request",
    SASL_AUTHENTICATE.Request(auth_bytes=b"n,,n=user,r=abc"),
    cbytes(b"n,,n=user,r=abc") + NO_TAGS,
)
vector(
    "SaslAuthenticate-v2-response",
    SASL_AUTHENTICATE,
    2,
    "response",
    SASL_AUTHENTICATE.Response(
        error_code=0, error_message=None, auth_bytes=b"v=sig", session_lifetime_ms=3600000
    ),
    i16(0) + cstring(None) + cbytes(b"v=sig") + i64(3600000) + NO_TAGS,
)


# -- a few vectors at the versions where fields appear or disappear ----------------

# FindCoordinator v3: first flexible version, still a single key with its error message.
vector(
    "FindCoordinator-v3-request",
    FIND_COORDINATOR,
    3,
    "request",
    FIND_COORDINATOR.Request(key="g", key_type=0),
    cstring("g") + i8(0) + NO_TAGS,
)
vector(
    "FindCoordinator-v3-response",
    FIND_COORDINATOR,
    3,
    "response",
    FIND_COORDINATOR.Response(
        throttle_time_ms=0, error_code=0, error_message=None, node_id=2, host="h", port=1
    ),
    i32(0) + i16(0) + cstring(None) + i32(2) + cstring("h") + i32(1) + NO_TAGS,
)
# JoinGroup v6: first flexible version; protocol name not yet nullable, no protocol type,
# no skip_assignment; members carry their group instance id (v5+).
vector(
    "JoinGroup-v6-response",
    JOIN_GROUP,
    6,
    "response",
    JOIN_GROUP.Response(
        throttle_time_ms=0,
        error_code=79,
        generation_id=-1,
        protocol_name="",
        leader="",
        member_id="m-new",
        members=[],
    ),
    i32(0)
    + i16(79)
    + i32(-1)
    + cstring("")
    + cstring("")
    + cstring("m-new")
    + carray([])
    + NO_TAGS,
)
# LeaveGroup v3: the members batch in the classic encoding, without reasons.
vector(
    "LeaveGroup-v3-request",
    LEAVE_GROUP,
    3,
    "request",
    LEAVE_GROUP.Request(
        group_id="g", members=[{"member_id": "m-1", "group_instance_id": "host-1"}]
    ),
    string("g") + array([string("m-1") + string("host-1")]),
)
# OffsetCommit v4 is the last version with retention_time_ms, v5 has none.
vector(
    "OffsetCommit-v5-request",
    OFFSET_COMMIT,
    5,
    "request",
    OFFSET_COMMIT.Request(
        group_id="g",
        generation_id_or_member_epoch=1,
        member_id="m",
        topics=[
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 5, "committed_metadata": ""}
                ],
            }
        ],
    ),
    string("g")
    + i32(1)
    + string("m")
    + array([string("t") + array([i32(0) + i64(5) + string("")])]),
)
vector(
    "OffsetCommit-v4-response",
    OFFSET_COMMIT,
    4,
    "response",
    OFFSET_COMMIT.Response(throttle_time_ms=9, topics=[]),
    i32(9) + array([]),
)
# OffsetFetch v7: last unbatched version (flexible): require_stable, leader epoch (v5+) and
# the top-level error code.
vector(
    "OffsetFetch-v7-request",
    OFFSET_FETCH,
    7,
    "request",
    OFFSET_FETCH.Request(group_id="g", topics=None, require_stable=True),
    cstring("g") + carray(None) + boolean(True) + NO_TAGS,
)
vector(
    "OffsetFetch-v7-response",
    OFFSET_FETCH,
    7,
    "response",
    OFFSET_FETCH.Response(
        throttle_time_ms=1,
        topics=[
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 4,
                        "committed_offset": 8,
                        "committed_leader_epoch": 2,
                        "metadata": "m",
                        "error_code": 0,
                    }
                ],
            }
        ],
        error_code=0,
    ),
    i32(1)
    + carray(
        [
            cstring("t")
            + carray([i32(4) + i64(8) + i32(2) + cstring("m") + i16(0) + NO_TAGS])
            + NO_TAGS
        ]
    )
    + i16(0)
    + NO_TAGS,
)

VECTORS_BY_ID = {v.id: v for v in VECTORS}


def _encode(v: Vector) -> bytes:
    if v.kind == "request":
        return v.api.encode_request(v.version, v.value)
    return v.api.encode_response(v.version, v.value)


def _decode(v: Vector, data: bytes) -> Any:
    if v.kind == "request":
        return v.api.decode_request(v.version, data)
    return v.api.decode_response(v.version, data)


@pytest.mark.parametrize("vec", VECTORS, ids=[v.id for v in VECTORS])
def test_encode_matches_golden_bytes(vec: Vector) -> None:
    assert _encode(vec) == vec.wire


@pytest.mark.parametrize("vec", VECTORS, ids=[v.id for v in VECTORS])
def test_decode_golden_bytes(vec: Vector) -> None:
    assert _decode(vec, vec.wire) == vec.value


NON_EMPTY = [v for v in VECTORS if v.wire]  # an empty body has no prefix to cut


@pytest.mark.parametrize("vec", NON_EMPTY, ids=[v.id for v in NON_EMPTY])
def test_truncated_golden_bytes_raise(vec: Vector) -> None:
    for cut in range(len(vec.wire)):
        with pytest.raises(KafkaProtocolError):
            _decode(vec, vec.wire[:cut])


@pytest.mark.parametrize("vec", VECTORS, ids=[v.id for v in VECTORS])
def test_trailing_byte_raises(vec: Vector) -> None:
    with pytest.raises(KafkaProtocolError):
        _decode(vec, vec.wire + b"\x00")


def test_every_group_api_has_its_edge_versions_covered() -> None:
    # A guard on the table above: lowest and highest version, request and response,
    # for every API of this file.
    apis = {v.api.name: v.api for v in VECTORS}
    assert len(apis) == 11
    covered = {(v.api.name, v.version, v.kind) for v in VECTORS}
    for api in apis.values():
        for version in (api.min_version, api.max_version):
            for kind in ("request", "response"):
                assert (api.name, version, kind) in covered


@pytest.mark.parametrize(
    ("api", "key", "lo", "hi", "flexible_from"),
    [
        (FIND_COORDINATOR, 10, 0, 4, 3),
        (JOIN_GROUP, 11, 0, 9, 6),
        (SYNC_GROUP, 14, 0, 5, 4),
        (HEARTBEAT, 12, 0, 4, 4),
        (LEAVE_GROUP, 13, 0, 5, 4),
        (OFFSET_COMMIT, 8, 2, 9, 8),
        (OFFSET_FETCH, 9, 1, 9, 6),
        (CONSUMER_GROUP_HEARTBEAT, 68, 0, 1, 0),
        (SASL_HANDSHAKE, 17, 0, 1, None),
        (SASL_AUTHENTICATE, 36, 0, 2, 2),
    ],
    ids=lambda x: x.name if isinstance(x, Api) else None,
)
def test_api_keys_and_versions(
    api: Api, key: int, lo: int, hi: int, flexible_from: int | None
) -> None:
    assert (api.key, api.min_version, api.max_version, api.flexible_from) == (
        key,
        lo,
        hi,
        flexible_from,
    )
    with pytest.raises(UnsupportedVersionError):
        api.encode_request(hi + 1, api.Request())
    if lo > 0:
        with pytest.raises(UnsupportedVersionError):
            api.decode_response(lo - 1, b"")


# -- defaults of fields absent from a version --------------------------------------


def test_absent_fields_take_kafka_defaults() -> None:
    # JoinGroup v0 has no rebalance timeout: -1, as in Kafka's definition.
    req = JOIN_GROUP.decode_request(0, VECTORS_BY_ID["JoinGroup-v0-request"].wire)
    assert req.rebalance_timeout_ms == -1
    assert req.group_instance_id is None
    assert req.reason is None
    # OffsetCommit v2 has no leader epoch: -1.
    commit = OFFSET_COMMIT.decode_request(2, VECTORS_BY_ID["OffsetCommit-v2-request"].wire)
    assert [p.committed_leader_epoch for p in commit.topics[0].partitions] == [-1, -1]
    # OffsetFetch v1 has no leader epoch either.
    fetched = OFFSET_FETCH.decode_response(1, VECTORS_BY_ID["OffsetFetch-v1-response"].wire)
    assert fetched.topics[0].partitions[0].committed_leader_epoch == -1


def test_null_topics_refused_before_v2() -> None:
    # OffsetFetch topics only become nullable in v2.
    with pytest.raises(ValueError):
        OFFSET_FETCH.encode_request(1, OFFSET_FETCH.Request(group_id="g", topics=None))
    with pytest.raises(KafkaProtocolError):
        OFFSET_FETCH.decode_request(1, string("g") + i32(-1))


def test_nullable_struct_marker() -> None:
    # Any negative marker means null; a non-null marker must be followed by the struct.
    base = i32(0) + i16(0) + cstring(None) + cstring(None) + i32(1) + i32(1)
    resp = CONSUMER_GROUP_HEARTBEAT.decode_response(0, base + i8(-1) + NO_TAGS)
    assert resp.assignment is None
    with pytest.raises(KafkaProtocolError):
        CONSUMER_GROUP_HEARTBEAT.decode_response(0, base + i8(1) + NO_TAGS)


# -- consumer protocol payloads ----------------------------------------------------

SUB_V0_VALUE = Subscription(topics=["orders", "payments"], user_data=None)
# Subscription v0: int16 version, topics, nullable user data (null here).
SUB_V0_WIRE = i16(0) + array([string("orders"), string("payments")]) + bytes_(None)

SUB_V3_VALUE = Subscription(
    topics=["orders"],
    user_data=b"\x01\x02",
    owned_partitions=[{"topic": "orders", "partitions": [0, 3]}],
    generation_id=17,
    rack_id="az-c",
)
# Subscription v3: topics, user data, owned partitions (v1+), generation id (v2+), rack id
# (v3+).
SUB_V3_WIRE = (
    i16(3)
    + array([string("orders")])
    + bytes_(b"\x01\x02")
    + array([string("orders") + array([i32(0), i32(3)])])
    + i32(17)
    + string("az-c")
)

ASSIGN_V0_VALUE = Assignment(
    assigned_partitions=[
        {"topic": "orders", "partitions": [1, 2]},
        {"topic": "payments", "partitions": []},
    ],
    user_data=b"ud",
)
# Assignment v0: int16 version, assigned partitions, nullable user data.
ASSIGN_V0_WIRE = (
    i16(0)
    + array(
        [
            string("orders") + array([i32(1), i32(2)]),
            string("payments") + array([]),
        ]
    )
    + bytes_(b"ud")
)

ASSIGN_V3_VALUE = Assignment(
    assigned_partitions=[{"topic": "t", "partitions": [5]}], user_data=None
)
# Assignment v3: same layout as v0, version 3, null user data.
ASSIGN_V3_WIRE = i16(3) + array([string("t") + array([i32(5)])]) + bytes_(None)

CONSUMER_PROTOCOL_CASES = [
    pytest.param("subscription", 0, SUB_V0_VALUE, SUB_V0_WIRE, id="subscription-v0"),
    pytest.param("subscription", 3, SUB_V3_VALUE, SUB_V3_WIRE, id="subscription-v3"),
    pytest.param("assignment", 0, ASSIGN_V0_VALUE, ASSIGN_V0_WIRE, id="assignment-v0"),
    pytest.param("assignment", 3, ASSIGN_V3_VALUE, ASSIGN_V3_WIRE, id="assignment-v3"),
]


def _cp_encode(which: str, version: int, value: Any) -> bytes:
    if which == "subscription":
        return encode_subscription(version, value)
    return encode_assignment(version, value)


def _cp_decode(which: str, data: bytes) -> Any:
    if which == "subscription":
        return decode_subscription(data)
    return decode_assignment(data)


@pytest.mark.parametrize(("which", "version", "value", "wire"), CONSUMER_PROTOCOL_CASES)
def test_consumer_protocol_golden(which: str, version: int, value: Any, wire: bytes) -> None:
    assert _cp_encode(which, version, value) == wire
    assert _cp_decode(which, wire) == value


@pytest.mark.parametrize(("which", "version", "value", "wire"), CONSUMER_PROTOCOL_CASES)
def test_consumer_protocol_truncated(which: str, version: int, value: Any, wire: bytes) -> None:
    for cut in range(len(wire)):
        with pytest.raises(KafkaProtocolError):
            _cp_decode(which, wire[:cut])


def test_subscription_v0_defaults() -> None:
    sub = decode_subscription(SUB_V0_WIRE)
    assert sub.owned_partitions == []
    assert sub.generation_id == -1
    assert sub.rack_id is None


def test_subscription_from_a_newer_version_decodes_known_fields() -> None:
    # A hypothetical v4 appends fields after rack_id; we read the v3 fields and ignore them.
    v4 = (
        i16(4)
        + array([string("orders")])
        + bytes_(None)
        + array([string("orders") + array([i32(1)])])
        + i32(2)
        + string("az-a")
        + i32(123456)  # unknown v4 field
        + string("future")  # unknown v4 field
    )
    sub = decode_subscription(v4)
    assert sub == Subscription(
        topics=["orders"],
        user_data=None,
        owned_partitions=[{"topic": "orders", "partitions": [1]}],
        generation_id=2,
        rack_id="az-a",
    )


def test_assignment_from_a_newer_version_decodes_known_fields() -> None:
    v9 = i16(9) + ASSIGN_V3_WIRE[2:] + b"\x00\x07extra"
    assert decode_assignment(v9) == ASSIGN_V3_VALUE


def test_newer_subscription_truncated_in_known_fields_raises() -> None:
    v4 = i16(4) + array([string("orders")]) + bytes_(None) + array([]) + i32(2)
    # rack_id (a v3 field) is missing: a v4 payload must still carry it.
    with pytest.raises(KafkaProtocolError):
        decode_subscription(v4)


@pytest.mark.parametrize("decode", [decode_subscription, decode_assignment])
def test_consumer_protocol_negative_version_raises(decode: Any) -> None:
    with pytest.raises(KafkaProtocolError):
        decode(i16(-1) + array([]) + bytes_(None))


@pytest.mark.parametrize("encode", [encode_subscription, encode_assignment])
def test_consumer_protocol_unknown_version_not_encoded(encode: Any) -> None:
    with pytest.raises(UnsupportedVersionError):
        encode(4, {})
    with pytest.raises(UnsupportedVersionError):
        encode(-1, {})


def test_subscription_embeds_in_join_group() -> None:
    # The subscription travels as JoinGroup protocol metadata: bytes in, same bytes out.
    req = JOIN_GROUP.Request(
        group_id="g",
        session_timeout_ms=1,
        member_id="",
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": encode_subscription(3, SUB_V3_VALUE)}],
    )
    wire = JOIN_GROUP.encode_request(0, req)
    assert wire.endswith(bytes_(SUB_V3_WIRE))
    decoded = JOIN_GROUP.decode_request(0, wire)
    assert decode_subscription(decoded.protocols[0].metadata) == SUB_V3_VALUE
