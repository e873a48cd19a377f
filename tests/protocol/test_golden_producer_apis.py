"""Golden-byte tests for the producer's APIs (InitProducerId and the transaction APIs).

Vectors written by hand from Kafka's message definitions (``InitProducerIdRequest.json``,
``AddPartitionsToTxnRequest.json``, ...) with the independent encoders of ``_wire``, at
the lowest and highest version rackafka speaks and at the first flexible one.
"""

from __future__ import annotations

from typing import Any

import pytest

from rackafka.errors import KafkaProtocolError, UnsupportedVersionError
from rackafka.protocol.apis.init_producer_id import INIT_PRODUCER_ID
from rackafka.protocol.apis.transactions import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    TXN_OFFSET_COMMIT,
)
from rackafka.protocol.schema import Api
from tests.protocol._wire import NO_TAGS, array, boolean, carray, cstring, i16, i32, i64, string

API = INIT_PRODUCER_ID

CASES: list[tuple[int, str, Any, bytes]] = [
    # v0: nullable string transactional_id, int32 timeout.
    (
        0,
        "request",
        API.Request(transactional_id=None, transaction_timeout_ms=60000),
        string(None) + i32(60000),
    ),
    (
        0,
        "request",
        API.Request(transactional_id="tx-1", transaction_timeout_ms=1000),
        string("tx-1") + i32(1000),
    ),
    (
        0,
        "response",
        API.Response(throttle_time_ms=0, error_code=0, producer_id=4000, producer_epoch=2),
        i32(0) + i16(0) + i64(4000) + i16(2),
    ),
    # v2: first flexible version (compact string, tagged fields).
    (
        2,
        "request",
        API.Request(transactional_id="tx", transaction_timeout_ms=5),
        cstring("tx") + i32(5) + NO_TAGS,
    ),
    # v4: producer_id and producer_epoch in the request (KIP-360), flexible.
    (
        4,
        "request",
        API.Request(
            transactional_id=None,
            transaction_timeout_ms=2147483647,
            producer_id=77,
            producer_epoch=3,
        ),
        cstring(None) + i32(2147483647) + i64(77) + i16(3) + NO_TAGS,
    ),
    (
        4,
        "response",
        API.Response(throttle_time_ms=10, error_code=51, producer_id=-1, producer_epoch=-1),
        i32(10) + i16(51) + i64(-1) + i16(-1) + NO_TAGS,
    ),
]
IDS = [f"v{v}-{kind}-{i}" for i, (v, kind, _, _) in enumerate(CASES)]


def _encode(version: int, kind: str, value: Any) -> bytes:
    if kind == "request":
        return bytes(API.encode_request(version, value))
    return bytes(API.encode_response(version, value))


def _decode(version: int, kind: str, data: bytes) -> Any:
    if kind == "request":
        return API.decode_request(version, data)
    return API.decode_response(version, data)


@pytest.mark.parametrize(("version", "kind", "value", "wire"), CASES, ids=IDS)
def test_golden(version: int, kind: str, value: Any, wire: bytes) -> None:
    assert _encode(version, kind, value) == wire
    assert _decode(version, kind, wire) == value
    for cut in range(len(wire)):
        with pytest.raises(KafkaProtocolError):
            _decode(version, kind, wire[:cut])


def test_versions() -> None:
    assert (API.key, API.min_version, API.max_version, API.flexible_from) == (22, 0, 4, 2)
    with pytest.raises(UnsupportedVersionError):
        API.encode_request(5, API.Request())


TXN_CASES: list[tuple[Api, int, str, Any, bytes]] = [
    (
        ADD_PARTITIONS_TO_TXN,
        0,
        "request",
        ADD_PARTITIONS_TO_TXN.Request(
            transactional_id="tx",
            producer_id=9,
            producer_epoch=1,
            topics=[{"name": "t", "partitions": [0, 2]}],
        ),
        string("tx") + i64(9) + i16(1) + array([string("t") + array([i32(0), i32(2)])]),
    ),
    (
        ADD_PARTITIONS_TO_TXN,
        3,
        "response",
        ADD_PARTITIONS_TO_TXN.Response(
            throttle_time_ms=0,
            results=[{"name": "t", "results": [{"partition_index": 2, "error_code": 51}]}],
        ),
        i32(0) + carray([cstring("t") + carray([i32(2) + i16(51) + NO_TAGS]) + NO_TAGS]) + NO_TAGS,
    ),
    (
        ADD_OFFSETS_TO_TXN,
        0,
        "request",
        ADD_OFFSETS_TO_TXN.Request(
            transactional_id="tx", producer_id=9, producer_epoch=1, group_id="g"
        ),
        string("tx") + i64(9) + i16(1) + string("g"),
    ),
    (
        ADD_OFFSETS_TO_TXN,
        3,
        "response",
        ADD_OFFSETS_TO_TXN.Response(throttle_time_ms=5, error_code=0),
        i32(5) + i16(0) + NO_TAGS,
    ),
    (
        END_TXN,
        0,
        "request",
        END_TXN.Request(transactional_id="tx", producer_id=9, producer_epoch=1, committed=True),
        string("tx") + i64(9) + i16(1) + boolean(True),
    ),
    (
        END_TXN,
        3,
        "request",
        END_TXN.Request(transactional_id="tx", producer_id=9, producer_epoch=1, committed=False),
        cstring("tx") + i64(9) + i16(1) + boolean(False) + NO_TAGS,
    ),
    (
        END_TXN,
        0,
        "response",
        END_TXN.Response(throttle_time_ms=0, error_code=48),
        i32(0) + i16(48),
    ),
    (
        TXN_OFFSET_COMMIT,
        0,
        "request",
        TXN_OFFSET_COMMIT.Request(
            transactional_id="tx",
            group_id="g",
            producer_id=9,
            producer_epoch=1,
            topics=[
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 1, "committed_offset": 42, "committed_metadata": None}
                    ],
                }
            ],
        ),
        string("tx")
        + string("g")
        + i64(9)
        + i16(1)
        + array([string("t") + array([i32(1) + i64(42) + string(None)])]),
    ),
    (
        TXN_OFFSET_COMMIT,
        3,
        "request",
        TXN_OFFSET_COMMIT.Request(
            transactional_id="tx",
            group_id="g",
            producer_id=9,
            producer_epoch=1,
            generation_id=4,
            member_id="m-1",
            group_instance_id=None,
            topics=[
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 1,
                            "committed_offset": 42,
                            "committed_leader_epoch": 7,
                            "committed_metadata": "",
                        }
                    ],
                }
            ],
        ),
        cstring("tx")
        + cstring("g")
        + i64(9)
        + i16(1)
        + i32(4)
        + cstring("m-1")
        + cstring(None)
        + carray(
            [cstring("t") + carray([i32(1) + i64(42) + i32(7) + cstring("") + NO_TAGS]) + NO_TAGS]
        )
        + NO_TAGS,
    ),
    (
        TXN_OFFSET_COMMIT,
        3,
        "response",
        TXN_OFFSET_COMMIT.Response(
            throttle_time_ms=0,
            topics=[{"name": "t", "partitions": [{"partition_index": 1, "error_code": 0}]}],
        ),
        i32(0) + carray([cstring("t") + carray([i32(1) + i16(0) + NO_TAGS]) + NO_TAGS]) + NO_TAGS,
    ),
]


@pytest.mark.parametrize(
    ("api", "version", "kind", "value", "wire"),
    TXN_CASES,
    ids=[f"{c[0].name}-v{c[1]}-{c[2]}" for c in TXN_CASES],
)
def test_transaction_apis_golden(
    api: Api, version: int, kind: str, value: Any, wire: bytes
) -> None:
    if kind == "request":
        assert bytes(api.encode_request(version, value)) == wire
        assert api.decode_request(version, wire) == value
    else:
        assert bytes(api.encode_response(version, value)) == wire
        assert api.decode_response(version, wire) == value
    decode = api.decode_request if kind == "request" else api.decode_response
    for cut in range(len(wire)):
        with pytest.raises(KafkaProtocolError):
            decode(version, wire[:cut])


@pytest.mark.parametrize(
    "api", [ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT]
)
def test_transaction_api_versions(api: Api) -> None:
    assert (api.min_version, api.max_version, api.flexible_from) == (0, 3, 3)
