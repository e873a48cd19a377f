"""Fetch's fast paths give what the generic schema codec gives, byte for byte and value
for value: partitions written from tuples, plain response partitions read directly."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackafka.errors import KafkaProtocolError
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.schema import Array, Reader, Struct

VERSIONS = range(FETCH.min_version, FETCH.max_version + 1)
TOPIC_ID = uuid.UUID(int=0x1234)


def _item(struct: Struct, *path: str) -> Struct:
    """The struct of the array items at ``path`` (field names) below ``struct``."""
    for name in path:
        (field,) = [f for f in struct.fields if f.name == name]
        assert isinstance(field.type, Array) and isinstance(field.type.item, Struct)
        struct = field.type.item
    return struct


REQUEST_PARTITION = _item(FETCH.request, "topics", "partitions")
RESPONSE_PARTITION = _item(FETCH.response, "responses", "partitions")


def generic_reader(version: int) -> Reader:
    """The schema's own reader of a response partition, without the fast path."""
    return Struct._compile(RESPONSE_PARTITION, version, FETCH.is_flexible(version), False)[0]


def fast_reader(version: int) -> Reader:
    return RESPONSE_PARTITION.codec(version, FETCH.is_flexible(version))[0]


def request(partitions: list[Any]) -> dict[str, Any]:
    return {
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 50 << 20,
        "session_id": 7,
        "session_epoch": 3,
        "topics": [{"topic": "t", "topic_id": TOPIC_ID, "partitions": partitions}],
        "forgotten_topics_data": [],
        "rack_id": "az-b",
    }


PARTITION_FIELDS = (
    "partition",
    "current_leader_epoch",
    "fetch_offset",
    "last_fetched_epoch",
    "log_start_offset",
    "partition_max_bytes",
)

int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
request_tuples = st.lists(st.tuples(int32, int32, int64, int32, int64, int32), max_size=5)


@pytest.mark.parametrize("version", VERSIONS)
@given(tuples=request_tuples)
@settings(max_examples=25, deadline=None)
def test_request_partitions_from_tuples_encode_as_from_mappings(
    version: int, tuples: list[tuple[int, ...]]
) -> None:
    mappings = [dict(zip(PARTITION_FIELDS, t, strict=True)) for t in tuples]
    from_tuples = FETCH.encode_request(version, FETCH.Request(**request(list(tuples))))
    from_mappings = FETCH.encode_request(version, FETCH.Request(**request(mappings)))
    assert from_tuples == from_mappings
    decoded = FETCH.decode_request(version, from_tuples).topics[0].partitions
    for got, want in zip(decoded, mappings, strict=True):
        for name, value in want.items():
            if name in got.__slots__ and _present(REQUEST_PARTITION, name, version):
                assert getattr(got, name) == value


def _present(struct: Struct, name: str, version: int) -> bool:
    (field,) = [f for f in struct.fields if f.name == name]
    lo, hi = field.version_range()
    return lo <= version <= hi and field.tag is None


@pytest.mark.parametrize("bad", [(1, 2, 3), (1, 2, 3, 4, 5, 6, 7), (1, 2, "x", 4, 5, 6)])
def test_a_bad_request_tuple_is_a_value_error_naming_the_struct(bad: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError, match="FetchRequestPartition"):
        FETCH.encode_request(FETCH.max_version, FETCH.Request(**request([bad])))


def _partition(version: int, **fields: Any) -> bytes:
    out = bytearray()
    RESPONSE_PARTITION.codec(version, FETCH.is_flexible(version))[1](out, fields)
    return bytes(out)


def _cases(version: int) -> list[dict[str, Any]]:
    """Plain partitions (the fast path) and every kind the fast path hands over."""
    plain = {
        "partition_index": 3,
        "error_code": 0,
        "high_watermark": 400,
        "last_stable_offset": 390,
        "log_start_offset": 7,
        "aborted_transactions": None,
        "preferred_read_replica": 2,
        "records": b"",
    }
    cases = [
        plain,
        {**plain, "records": None},
        {**plain, "records": b"r" * 300},  # a two-byte compact length
        {**plain, "aborted_transactions": []},
        {**plain, "error_code": 6, "high_watermark": -1, "records": None},
        {
            **plain,
            "aborted_transactions": [{"producer_id": 9, "first_offset": 100}],
            "records": b"batch",
        },
    ]
    if FETCH.is_flexible(version):
        cases += [
            {**plain, "diverging_epoch": {"epoch": 4, "end_offset": 50}},
            {**plain, "current_leader": {"leader_id": 2, "leader_epoch": 8}},
            {**plain, "snapshot_id": {"end_offset": 11, "epoch": 1}},
        ]
    return cases


@pytest.mark.parametrize("version", VERSIONS)
def test_response_partitions_read_as_the_generic_reader_reads_them(version: int) -> None:
    fast, generic = fast_reader(version), generic_reader(version)
    for case in _cases(version):
        data = b"\x00\x01" + _partition(version, **case) + b"\xff"
        got, got_end = fast(data, 2)
        want, want_end = generic(data, 2)
        assert got == want, case
        assert got_end == want_end == len(data) - 1
        assert type(got.records) is type(want.records)  # bytes or None, as the schema says


@pytest.mark.parametrize("version", VERSIONS)
def test_a_short_or_malformed_partition_fails_as_in_the_generic_reader(version: int) -> None:
    fast, generic = fast_reader(version), generic_reader(version)
    data = _partition(version, **_cases(version)[2])
    broken = [data[:n] for n in range(len(data))]
    # A negative records length other than -1 (null), and a huge one.
    records_at = len(data) - 300 - (3 if FETCH.is_flexible(version) else 4)
    if not FETCH.is_flexible(version):
        broken.append(data[:records_at] + b"\xff\xff\xff\xfe" + data[records_at + 4 :])
        broken.append(data[:records_at] + b"\x7f\xff\xff\xff" + data[records_at + 4 :])
    for buf in broken:
        outcomes = []
        for reader in (fast, generic):
            try:
                value, end = reader(buf, 0)
                outcomes.append(("ok", value, end))
            except (KafkaProtocolError, IndexError, ValueError) as exc:
                outcomes.append(("error", type(exc), str(exc)))
            except Exception as exc:  # struct.error: the schema layer wraps it
                outcomes.append(("error", type(exc), str(exc)))
        assert outcomes[0] == outcomes[1], len(buf)


@pytest.mark.parametrize("version", [11, 12, FETCH.max_version])
def test_whole_responses_decode_alike_through_the_api(version: int) -> None:
    partitions = _cases(version) * 3
    response = {
        "session_id": 5,
        "responses": [{"topic": "t", "topic_id": TOPIC_ID, "partitions": partitions}],
    }
    data = FETCH.encode_response(version, response)
    decoded = FETCH.decode_response(version, data).responses[0].partitions
    generic = generic_reader(version)
    pos = data.index(_partition(version, **partitions[0]))
    for got in decoded:
        want, pos = generic(data, pos)
        assert got == want
    with pytest.raises(KafkaProtocolError, match=r"truncated or malformed|runs past"):
        FETCH.decode_response(version, data[:-5])


@pytest.mark.parametrize("version", [4, 11, 12, FETCH.max_version])
def test_defaults_of_fast_read_partitions_are_not_shared_in_flexible_versions(
    version: int,
) -> None:
    data = _partition(version, partition_index=1) * 2
    fast = fast_reader(version)
    first, pos = fast(data, 0)
    second, _ = fast(data, pos)
    assert first == second == generic_reader(version)(data, 0)[0]
    if FETCH.is_flexible(version):
        assert first.diverging_epoch is not second.diverging_epoch
        assert first.current_leader is not second.current_leader
        assert first.snapshot_id is not second.snapshot_id


partition_values = st.fixed_dictionaries(
    {
        "partition_index": int32,
        "error_code": st.integers(-(2**15), 2**15 - 1),
        "high_watermark": int64,
        "last_stable_offset": int64,
        "log_start_offset": int64,
        "preferred_read_replica": int32,
        "records": st.one_of(st.none(), st.binary(max_size=200)),
        "aborted_transactions": st.one_of(
            st.none(),
            st.lists(
                st.fixed_dictionaries({"producer_id": int64, "first_offset": int64}), max_size=2
            ),
        ),
    }
)


@pytest.mark.parametrize("version", VERSIONS)
@given(values=partition_values, cut=st.integers(0, 400))
@settings(max_examples=40, deadline=None)
def test_fuzzed_partitions_and_prefixes_read_alike(
    version: int, values: dict[str, Any], cut: int
) -> None:
    data = _partition(version, **values)
    fast, generic = fast_reader(version), generic_reader(version)
    assert fast(data, 0) == generic(data, 0)
    prefix = data[: min(cut, len(data))]
    try:
        want: Any = generic(prefix, 0)
    except Exception as exc:
        want = (type(exc), str(exc))
    try:
        got: Any = fast(prefix, 0)
    except Exception as exc:
        got = (type(exc), str(exc))
    assert got == want
