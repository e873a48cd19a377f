"""Golden-byte tests for the producer's APIs (InitProducerId).

Vectors written by hand from Kafka's ``InitProducerIdRequest.json`` /
``InitProducerIdResponse.json`` with the independent encoders of ``_wire``, at the
lowest and highest version rackafka speaks and at the first flexible one.
"""

from __future__ import annotations

from typing import Any

import pytest

from rackafka.errors import KafkaProtocolError, UnsupportedVersionError
from rackafka.protocol.apis.init_producer_id import INIT_PRODUCER_ID
from tests.protocol._wire import NO_TAGS, cstring, i16, i32, i64, string

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
