"""Tests for rackafka.structs: the same shapes and behaviour as aiokafka.structs."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from rackafka.errors import LeaderNotAvailableError, for_code
from rackafka.structs import (
    BrokerMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionMetadata,
    RecordMetadata,
    TopicPartition,
)

# Field names and order of aiokafka 0.14's structs.
AIOKAFKA_FIELDS = {
    TopicPartition: ("topic", "partition"),
    OffsetAndMetadata: ("offset", "metadata"),
    OffsetAndTimestamp: ("offset", "timestamp"),
    BrokerMetadata: ("nodeId", "host", "port", "rack"),
    PartitionMetadata: ("topic", "partition", "leader", "replicas", "isr", "error"),
    RecordMetadata: (
        "topic",
        "partition",
        "topic_partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "log_start_offset",
    ),
}
CONSUMER_RECORD_FIELDS = (
    "topic",
    "partition",
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "checksum",
    "serialized_key_size",
    "serialized_value_size",
    "headers",
)


@pytest.mark.parametrize("cls", list(AIOKAFKA_FIELDS), ids=lambda c: c.__name__)
def test_tuple_fields_start_with_aiokafkas(cls: type) -> None:
    fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
    expected = AIOKAFKA_FIELDS[cls]
    assert fields[: len(expected)] == expected
    # anything rackafka adds comes last and has a default
    extra = fields[len(expected) :]
    assert set(extra) <= set(cls._field_defaults)  # type: ignore[attr-defined]


# --- TopicPartition ---------------------------------------------------------------------


def test_topic_partition_is_a_tuple() -> None:
    tp = TopicPartition("orders", 3)
    assert tp.topic == "orders"
    assert tp.partition == 3
    assert tp == ("orders", 3)
    assert tp == TopicPartition(topic="orders", partition=3)
    assert tp != TopicPartition("orders", 4)
    topic, partition = tp
    assert (topic, partition) == ("orders", 3)
    assert repr(tp) == "TopicPartition(topic='orders', partition=3)"


def test_topic_partition_hash_and_dict_key() -> None:
    a = TopicPartition("t", 1)
    b = TopicPartition("t", 1)
    assert a is not b
    assert hash(a) == hash(b) == hash(("t", 1))
    positions = {a: 10}
    assert positions[b] == 10
    assert positions[TopicPartition("t", 1)] == 10
    assert TopicPartition("t", 2) not in positions
    assert len({a, b, TopicPartition("t", 2)}) == 2


def test_topic_partition_ordering() -> None:
    tps = [
        TopicPartition("b", 0),
        TopicPartition("a", 10),
        TopicPartition("a", 2),
        TopicPartition("b", -1),
    ]
    assert sorted(tps) == [
        TopicPartition("a", 2),
        TopicPartition("a", 10),  # numeric, not textual, partition order
        TopicPartition("b", -1),
        TopicPartition("b", 0),
    ]
    assert TopicPartition("a", 9) < TopicPartition("b", 0)
    assert max(tps) == TopicPartition("b", 0)


def test_topic_partition_namedtuple_helpers() -> None:
    tp = TopicPartition("t", 1)
    moved = tp._replace(partition=5)
    assert moved == TopicPartition("t", 5)
    assert tp.partition == 1  # immutable
    assert tp._asdict() == {"topic": "t", "partition": 1}
    assert TopicPartition._make(["x", 7]) == TopicPartition("x", 7)
    with pytest.raises(AttributeError):
        tp.partition = 2  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(tp)) == tp
    assert copy.deepcopy(tp) == tp


# --- offsets ----------------------------------------------------------------------------


def test_offset_and_metadata_unpacks_like_a_pair() -> None:
    om = OffsetAndMetadata(42, "by host-1")
    offset, metadata = om  # what aiokafka's commit() does with its argument
    assert (offset, metadata) == (42, "by host-1")
    assert om == (42, "by host-1")
    assert len(om) == 2
    assert om._replace(offset=43) == OffsetAndMetadata(43, "by host-1")
    assert hash(om) == hash((42, "by host-1"))
    with pytest.raises(TypeError):
        OffsetAndMetadata(42)  # type: ignore[call-arg]


def test_offset_and_timestamp() -> None:
    ot = OffsetAndTimestamp(100, 1_700_000_000_000)
    offset, timestamp = ot  # common in code that calls offsets_for_times()
    assert (offset, timestamp) == (100, 1_700_000_000_000)
    assert OffsetAndTimestamp(5, None).timestamp is None


# --- metadata ---------------------------------------------------------------------------


def test_broker_metadata() -> None:
    b = BrokerMetadata(1, "kafka-1.local", 9092, "us-east-1a")
    assert b.nodeId == 1
    assert (b.host, b.port, b.rack) == ("kafka-1.local", 9092, "us-east-1a")
    assert BrokerMetadata(2, "h", 1, None).rack is None
    assert b == (1, "kafka-1.local", 9092, "us-east-1a")


def test_partition_metadata_positional_like_aiokafka() -> None:
    err = LeaderNotAvailableError()
    pm = PartitionMetadata("t", 0, 2, [1, 2, 3], [2, 3], err)
    assert pm.leader == 2
    assert pm.replicas == [1, 2, 3]
    assert pm.isr == [2, 3]
    assert pm.error is err
    assert pm.leader_epoch == -1
    assert tuple(pm.offline_replicas) == ()
    full = PartitionMetadata("t", 0, 2, [1, 2, 3], [2, 3], None, 7, [1])
    assert full.leader_epoch == 7
    assert list(full.offline_replicas) == [1]
    assert full._replace(leader=3, leader_epoch=8)[:3] == ("t", 0, 3)


def test_partition_metadata_error_may_be_an_error_class() -> None:
    pm = PartitionMetadata("t", 0, -1, [1], [], for_code(5))
    assert pm.error is LeaderNotAvailableError
    assert pm.error.retriable
    assert pm.error.invalid_metadata


def test_partition_metadata_default_is_not_shared_mutable() -> None:
    a = PartitionMetadata("t", 0, 1, [1], [1], None)
    b = PartitionMetadata("t", 1, 1, [1], [1], None)
    assert a.offline_replicas == b.offline_replicas == ()
    assert isinstance(a.offline_replicas, tuple)  # immutable, so sharing it is safe


def test_record_metadata() -> None:
    tp = TopicPartition("t", 4)
    rm = RecordMetadata("t", 4, tp, 99, 1_700_000_000_000, 0, 12)
    assert rm.topic_partition is tp
    assert rm.offset == 99
    assert rm.log_start_offset == 12


# --- ConsumerRecord ---------------------------------------------------------------------


def _record(**changes: object) -> ConsumerRecord[bytes, bytes]:
    fields: dict[str, object] = dict(
        topic="orders",
        partition=2,
        offset=1042,
        timestamp=1_700_000_000_123,
        timestamp_type=0,
        key=b"k",
        value=b"value",
        checksum=None,
        serialized_key_size=1,
        serialized_value_size=5,
        headers=[("trace", b"\x01")],
    )
    fields.update(changes)
    return ConsumerRecord(**fields)  # type: ignore[arg-type]


def test_consumer_record_fields_are_aiokafkas() -> None:
    assert tuple(f.name for f in dataclasses.fields(ConsumerRecord)) == CONSUMER_RECORD_FIELDS
    assert ConsumerRecord.__match_args__ == CONSUMER_RECORD_FIELDS


def test_consumer_record_positional_construction() -> None:
    values = ("orders", 2, 1042, 1_700_000_000_123, 0, b"k", b"value", None, 1, 5, [])
    rec: ConsumerRecord[bytes, bytes] = ConsumerRecord(*values)
    assert tuple(getattr(rec, name) for name in CONSUMER_RECORD_FIELDS) == values
    with pytest.raises(TypeError):
        ConsumerRecord(*values[:-1])  # type: ignore[call-arg]


def test_consumer_record_equality_and_hash() -> None:
    assert _record() == _record()
    assert _record() != _record(offset=1043)
    assert _record() != _record(headers=[])
    # like aiokafka's (a non-frozen dataclass), a record is not hashable
    with pytest.raises(TypeError):
        hash(_record())


def test_consumer_record_is_mutable_and_takes_extra_attributes_as_aiokafkas() -> None:
    rec = _record()
    rec.value = b"changed"
    assert rec.value == b"changed"
    # a plain dataclass, as aiokafka's: applications tag records with their own attributes
    rec.not_a_field = 1  # type: ignore[attr-defined]
    assert vars(rec)["not_a_field"] == 1


def test_consumer_record_dataclass_helpers() -> None:
    rec = _record()
    assert dataclasses.replace(rec, offset=7).offset == 7
    assert rec.offset == 1042
    as_dict = dataclasses.asdict(rec)
    assert as_dict["topic"] == "orders"
    assert as_dict["headers"] == [("trace", b"\x01")]
    assert "ConsumerRecord(topic='orders', partition=2, offset=1042" in repr(rec)
    assert copy.copy(rec) == rec


def test_consumer_record_pickles() -> None:
    rec = _record(key=None, serialized_key_size=-1)
    clone = pickle.loads(pickle.dumps(rec))
    assert clone == rec
    assert clone is not rec


def test_consumer_record_is_generic() -> None:
    alias = ConsumerRecord[str, dict]
    rec = alias("t", 0, 0, 0, 0, "key", {"a": 1}, None, 3, 8, [])
    assert type(rec) is ConsumerRecord
    assert rec.value == {"a": 1}


def test_consumer_record_match() -> None:
    match _record():
        case ConsumerRecord("orders", 2, offset):
            assert offset == 1042
        case _:
            pytest.fail("positional pattern did not match")
