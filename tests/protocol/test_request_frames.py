"""Request frames are written in one buffer: size prefix, header (v1, or v2 with its empty
tagged section), then the body the schema encodes, as the broker reads them back."""

from __future__ import annotations

import struct

import pytest

from rackafka.protocol import frames
from rackafka.protocol.apis.produce import PRODUCE

BATCH = bytes(range(256)) * 300  # a record batch's bytes (opaque here)


def _request() -> object:
    return PRODUCE.Request(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            {"name": "t", "partition_data": [{"index": 0, "records": bytearray(BATCH)}]},
            {"name": "u", "partition_data": [{"index": 3, "records": BATCH}]},
        ],
    )


@pytest.mark.parametrize("version", range(PRODUCE.min_version, PRODUCE.max_version + 1))
def test_request_frame_layout(version: int) -> None:
    request = _request()
    frame = frames.encode_request(PRODUCE, version, 77, "client-1", request)
    (size,) = struct.unpack_from(">i", frame, 0)
    assert size == len(frame) - 4
    header, pos = frames.decode_request_header(bytes(frame[4:]))
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
        PRODUCE.key,
        version,
        77,
        "client-1",
    )
    if PRODUCE.request_header_version(version) >= 2:
        pos = frames.skip_request_header_tags(bytes(frame[4:]), pos)
    body = bytes(frame[4 + pos :])
    assert body == PRODUCE.encode_request(version, request)
    decoded = PRODUCE.decode_request(version, body)
    assert [bytes(p.records) for t in decoded.topic_data for p in t.partition_data] == [
        BATCH,
        BATCH,
    ]
