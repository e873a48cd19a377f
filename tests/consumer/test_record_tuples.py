"""``AIOKafkaConsumer(record_tuples=True)``: records as the decoder's plain tuples."""

from __future__ import annotations

import pytest

from rackafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from rackafka.errors import KafkaConfigurationError
from rackafka.records import RECORD_FIELDS
from rackafka.testing import EmbeddedCluster


def test_record_tuples_refuses_deserializers_and_non_bools() -> None:
    with pytest.raises(KafkaConfigurationError, match="record_tuples"):
        AIOKafkaConsumer(record_tuples=True, value_deserializer=bytes.decode)
    with pytest.raises(KafkaConfigurationError, match="record_tuples"):
        AIOKafkaConsumer(record_tuples="yes")  # type: ignore[arg-type]


async def test_getmany_and_getone_give_the_same_records_as_tuples(
    embedded_cluster: EmbeddedCluster,
) -> None:
    c = embedded_cluster
    c.create_topic("tuples", 2)
    c.produce(
        "tuples",
        500,
        key=lambda i: b"k%d" % i,
        headers=lambda i: [("n", str(i).encode())] if i % 2 else None,
        partition="spread",
        batch_size=3000,
    )
    tps = [TopicPartition("tuples", p) for p in range(2)]

    async def read(tuples: bool, seek_to: int) -> list[tuple[int, list[object]]]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=c.bootstrap_servers,
            auto_offset_reset="earliest",
            record_tuples=tuples,
        )
        await consumer.start()
        try:
            consumer.assign(tps)
            consumer.seek(tps[0], seek_to)  # a position in the middle of a batch
            got: list[tuple[int, list[object]]] = []
            first = await consumer.getone(tps[0])
            got.append((0, list(first) if tuples else _fields(first)))
            while len(got) < 500 - seek_to:
                batch = await consumer.getmany(timeout_ms=2000)
                assert batch, "no records within 2 s"
                for tp, records in batch.items():
                    for r in records:
                        got.append((tp.partition, list(r) if tuples else _fields(r)))
            return sorted(got, key=lambda x: (x[0], x[1][0]))  # type: ignore[index]
        finally:
            await consumer.stop()

    plain = await read(False, 7)
    raw = await read(True, 7)
    assert raw == plain
    assert len(raw) == 493
    assert [o for p, (o, *_rest) in raw if p == 0][:2] == [7, 8]


def _fields(record: ConsumerRecord[bytes, bytes]) -> list[object]:
    return [getattr(record, name) for name in RECORD_FIELDS]
