"""The consumer against a broker that misbehaves (rackafka.testing.FakeBroker).

Every case ends in one of two ways: each record delivered exactly once, or a documented
error with the position unchanged.  And while nothing can progress, the consumer sends
a few requests a second at most and leaves the CPU idle.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import crc32c
import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.errors import (
    CorruptRecordException,
    KafkaConfigurationError,
    RecordDeserializationError,
    TopicAuthorizationFailedError,
    UnsupportedCodecError,
    UnsupportedVersionError,
)
from rackafka.records import encode_batch
from rackafka.testing.fake_broker import (
    FakeBroker,
    FakeRequest,
    fetch_partition_response,
    list_offsets_response,
)

from ..records.refcodec import batch_bytes, record_bytes

TP = TopicPartition("t", 0)
WAIT = 15.0
#: The most requests a second a stuck consumer may send to one broker.
MAX_RATE = 12.0


def batch(first: int, count: int = 10, **options: Any) -> bytes:
    return encode_batch(
        [(1_000 + i, b"k%d" % i, b"v%d" % i) for i in range(first, first + count)],
        base_offset=first,
        **options,
    )


def with_attributes(data: bytes, attributes: int) -> bytes:
    """A copy of a v2 batch with other attributes and a CRC that matches them."""
    out = bytearray(data)
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.fixture
async def fake() -> AsyncIterator[FakeBroker]:
    async with FakeBroker(topics={"t": 1}) as broker:
        yield broker


@pytest.fixture
async def consumers() -> AsyncIterator[Callable[..., AIOKafkaConsumer[Any, Any]]]:
    made: list[AIOKafkaConsumer[Any, Any]] = []

    def make(broker: FakeBroker, **kwargs: Any) -> AIOKafkaConsumer[Any, Any]:
        options: dict[str, Any] = {
            "bootstrap_servers": broker.bootstrap_servers,
            "auto_offset_reset": "earliest",
            "fetch_max_wait_ms": 200,
            "request_timeout_ms": 3000,
        }
        options.update(kwargs)
        consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(**options)
        made.append(consumer)
        return consumer

    yield make
    for c in made:
        await c.stop()


async def read_until_error(
    consumer: AIOKafkaConsumer[Any, Any], error: type[BaseException]
) -> tuple[list[int], BaseException]:
    delivered: list[int] = []

    async def run() -> BaseException:
        while True:
            try:
                got = await consumer.getmany(timeout_ms=500)
            except error as exc:
                return exc
            delivered.extend(r.offset for r in got.get(TP, []))

    exc = await asyncio.wait_for(run(), WAIT)
    return delivered, exc


async def collect(consumer: AIOKafkaConsumer[Any, Any], count: int) -> list[int]:
    out: list[int] = []

    async def run() -> None:
        while len(out) < count:
            got = await consumer.getmany(timeout_ms=500)
            out.extend(r.offset for r in got.get(TP, []))

    await asyncio.wait_for(run(), WAIT)
    return out


async def idle_rates(broker: FakeBroker, apis: tuple[str, ...], seconds: float = 2.0) -> Any:
    """Requests a second per API over ``seconds``, and the CPU share used meanwhile."""
    await asyncio.sleep(0.5)  # past start-up
    since = time.monotonic()
    cpu = time.process_time()
    await asyncio.sleep(seconds)
    used = (time.process_time() - cpu) / seconds
    return {api: broker.count(api, since) / seconds for api in apis}, used


# -- records lost or repeated ---------------------------------------------------------------


async def test_deserializer_error_keeps_the_records_before_and_the_position(
    fake: FakeBroker, consumers: Any
) -> None:
    for first in (0, 10, 20):
        fake.append("t", 0, batch(first))

    def value(raw: bytes | None) -> str:
        if raw == b"v15":
            raise ValueError("not a value I know")
        assert raw is not None
        return raw.decode()

    consumer = consumers(fake, value_deserializer=value)
    await consumer.start()
    consumer.assign([TP])
    delivered, exc = await read_until_error(consumer, RecordDeserializationError)
    assert delivered == list(range(15))
    assert isinstance(exc, RecordDeserializationError)
    assert exc.topic_partition == TP and exc.offset == 15
    assert isinstance(exc.__cause__, ValueError)
    assert "t-0 at offset 15" in str(exc)
    assert await consumer.position(TP) == 15
    # Again on every call, by getmany and getone, until the user seeks past it.
    for _ in range(2):
        with pytest.raises(RecordDeserializationError):
            await asyncio.wait_for(consumer.getmany(timeout_ms=1000), WAIT)
    with pytest.raises(RecordDeserializationError):
        await asyncio.wait_for(consumer.getone(), WAIT)
    assert await consumer.position(TP) == 15
    consumer.seek(TP, 16)
    assert await collect(consumer, 14) == list(range(16, 30))


async def test_the_next_poll_gives_the_failing_record_to_the_deserializer_again(
    fake: FakeBroker, consumers: Any
) -> None:
    # A deserializer that fails for a while (a schema registry that is down): each poll
    # raises until it succeeds, then the record and those after it come, without a seek.
    fake.append("t", 0, batch(0, 30))
    calls = {"v15": 0}
    registry = {"down": True}

    def value(raw: bytes | None) -> str:
        assert raw is not None
        if raw == b"v15":
            calls["v15"] += 1
            if registry["down"]:
                raise ConnectionError("schema registry unavailable")
        return raw.decode()

    consumer = consumers(fake, value_deserializer=value)
    await consumer.start()
    consumer.assign([TP])
    delivered, exc = await read_until_error(consumer, RecordDeserializationError)
    assert delivered == list(range(15)) and exc.offset == 15
    for _ in range(2):
        before = calls["v15"]
        with pytest.raises(RecordDeserializationError):
            await asyncio.wait_for(consumer.getmany(timeout_ms=5000), WAIT)
        assert calls["v15"] > before  # the record was given to the deserializer again
    assert await consumer.position(TP) == 15
    registry["down"] = False
    assert await collect(consumer, 15) == list(range(15, 30))


async def test_a_getone_reader_gets_every_record_before_a_deserializer_error(
    fake: FakeBroker, consumers: Any
) -> None:
    fake.append("t", 0, batch(0, 30))

    def key(raw: bytes | None) -> bytes | None:
        if raw == b"k7":
            raise UnicodeDecodeError("utf-8", b"", 0, 1, "bad key")
        return raw

    consumer = consumers(fake, key_deserializer=key)
    await consumer.start()
    consumer.assign([TP])
    seen = []
    with pytest.raises(RecordDeserializationError) as info:
        while True:
            seen.append((await asyncio.wait_for(consumer.getone(), WAIT)).offset)
    assert seen == list(range(7)) and info.value.offset == 7


async def test_unknown_codec_raises_on_every_call_and_skips_nothing(
    fake: FakeBroker, consumers: Any
) -> None:
    fake.append("t", 0, batch(0))
    fake.append("t", 0, with_attributes(batch(10), 5))  # codec 5 does not exist
    fake.append("t", 0, batch(20))
    consumer = consumers(fake)
    await consumer.start()
    consumer.assign([TP])
    delivered, exc = await read_until_error(consumer, UnsupportedCodecError)
    assert delivered == list(range(10))
    assert "t-0 at offset 10" in str(exc)
    for _ in range(3):
        with pytest.raises(UnsupportedCodecError):
            await asyncio.wait_for(consumer.getmany(timeout_ms=1000), WAIT)
    assert await consumer.position(TP) == 10
    consumer.seek(TP, 20)
    assert await collect(consumer, 10) == list(range(20, 30))


@pytest.mark.parametrize(
    ("deltas", "last_offset_delta", "match"),
    [
        ([0, 1, 2, 1, 3], None, "backwards"),  # an offset seen before, CRC valid
        ([0, 1, 2, 3, 9], 4, "past the batch's last offset"),  # past lastOffsetDelta
        ([0, 1, 1, 2, 3], None, "backwards"),  # the same offset twice
    ],
)
async def test_impossible_offsets_in_a_valid_batch_are_corrupt(
    fake: FakeBroker,
    consumers: Any,
    deltas: list[int],
    last_offset_delta: int | None,
    match: str,
) -> None:
    fake.append("t", 0, batch(0, 5))
    records = b"".join(record_bytes(d, 0, b"k", b"v%d" % d) for d in deltas)
    fake.append(
        "t", 0, batch_bytes(records, count=5, base_offset=5, last_offset_delta=last_offset_delta)
    )
    fake.append("t", 0, batch(10, 5))
    consumer = consumers(fake)
    await consumer.start()
    consumer.assign([TP])
    delivered, exc = await read_until_error(consumer, CorruptRecordException)
    assert delivered == list(range(5))  # nothing twice, nothing of the bad batch
    assert match in str(exc) and "t-0 at offset 5" in str(exc)
    assert await consumer.position(TP) == 5
    consumer.seek(TP, 10)
    assert await collect(consumer, 5) == list(range(10, 15))


@pytest.mark.parametrize("length", [-7, 0, 1 << 30])
async def test_a_batch_length_beyond_the_data_or_negative_is_corrupt_not_refetched(
    fake: FakeBroker, consumers: Any, length: int
) -> None:
    fake.append("t", 0, batch(0))
    bad = bytearray(batch(10))
    struct.pack_into(">i", bad, 8, length)
    fake.append("t", 0, bytes(bad))
    consumer = consumers(fake)
    await consumer.start()
    consumer.assign([TP])
    delivered, exc = await read_until_error(consumer, CorruptRecordException)
    assert delivered == list(range(10))
    assert "t-0 at offset 10" in str(exc)
    assert await consumer.position(TP) == 10
    # The error stays; the partition is not fetched again and again meanwhile.
    rates, cpu = await idle_rates(fake, ("Fetch",))
    assert rates["Fetch"] <= MAX_RATE, rates
    assert cpu < 0.25, cpu
    with pytest.raises(CorruptRecordException):
        await asyncio.wait_for(consumer.getmany(timeout_ms=500), WAIT)


# -- hot loops --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["no leader", "unknown leader id", "topic gone", "no brokers"])
async def test_no_usable_leader_backs_off_metadata_refreshes(
    fake: FakeBroker, consumers: Any, case: str
) -> None:
    fake.append("t", 0, batch(0))
    consumer = consumers(fake, retry_backoff_ms=50)
    await consumer.start()
    consumer.assign([TP])
    assert await collect(consumer, 10) == list(range(10))
    if case == "no leader":
        fake.leaders[("t", 0)] = -1
    elif case == "unknown leader id":
        fake.leaders[("t", 0)] = 42
    elif case == "topic gone":
        del fake.topics["t"]
    else:
        original = fake.brokers
        fake.brokers = lambda: []  # type: ignore[method-assign]
    # Trigger: the current leader says it is not the leader any more.
    fake.handlers["Fetch"] = lambda b, r: fetch_partition_response(
        r, lambda t, p: {"error_code": 6, "high_watermark": -1, "records": None}
    )
    rates, cpu = await idle_rates(fake, ("Metadata", "Fetch"), seconds=3.0)
    assert rates["Metadata"] <= MAX_RATE and rates["Fetch"] <= MAX_RATE, rates
    assert cpu < 0.25, cpu
    # It recovers as soon as the cluster does, nothing lost or repeated.
    fake.handlers.clear()
    fake.leaders.clear()
    fake.topics["t"] = 1
    if case == "no brokers":
        fake.brokers = original  # type: ignore[method-assign]
    fake.append("t", 0, batch(10))
    assert await collect(consumer, 10) == list(range(10, 20))


async def test_reconnects_to_a_broker_that_closes_on_accept_back_off(consumers: Any) -> None:
    async with (
        FakeBroker(topics={"t": 1}) as good,
        FakeBroker(node_id=1, close_on_accept=True) as closing,
    ):
        good.extra_brokers.append((1, closing.host, closing.port, None))
        good.leaders[("t", 0)] = 1
        consumer = consumers(good)
        await consumer.start()
        consumer.assign([TP])
        await asyncio.sleep(0.5)
        before = closing.connections
        since = time.monotonic()
        cpu = time.process_time()
        await asyncio.sleep(3.0)
        per_second = (closing.connections - before) / (time.monotonic() - since)
        assert per_second <= 3.0, per_second  # doubling from 50 ms to 1 s
        assert (time.process_time() - cpu) / 3.0 < 0.25
        assert good.count("Metadata", since) / 3.0 <= MAX_RATE


async def test_list_offsets_with_a_negative_offset_backs_off(
    fake: FakeBroker, consumers: Any
) -> None:
    fake.handlers["ListOffsets"] = lambda b, r: list_offsets_response(r, error_code=0, offset=-5)
    consumer = consumers(fake)
    await consumer.start()
    consumer.assign([TP])
    rates, cpu = await idle_rates(fake, ("ListOffsets",))
    assert rates["ListOffsets"] <= MAX_RATE, rates
    assert cpu < 0.25
    fake.handlers.clear()
    fake.append("t", 0, batch(0))
    assert await collect(consumer, 10) == list(range(10))


async def test_list_offsets_errors_that_retrying_cannot_fix_reach_the_user(
    fake: FakeBroker, consumers: Any
) -> None:
    fake.handlers["ListOffsets"] = lambda b, r: list_offsets_response(r, error_code=29)
    consumer = consumers(fake)
    await consumer.start()
    consumer.assign([TP])
    with pytest.raises(TopicAuthorizationFailedError):
        await asyncio.wait_for(consumer.getmany(timeout_ms=5000), WAIT)
    rates, _cpu = await idle_rates(fake, ("ListOffsets",))
    assert rates["ListOffsets"] <= MAX_RATE, rates


async def test_a_read_replica_hint_naming_the_leader_itself_does_not_spin(
    fake: FakeBroker, consumers: Any
) -> None:
    fake.append("t", 0, batch(0))
    fake.handlers["Fetch"] = lambda b, r: fetch_partition_response(
        r,
        lambda t, p: {
            "error_code": 0,
            "high_watermark": 10,
            "preferred_read_replica": b.node_id,
            "records": None,
        },
    )
    consumer = consumers(fake, client_rack="az-a")
    await consumer.start()
    consumer.assign([TP])
    rates, cpu = await idle_rates(fake, ("Fetch",))
    assert rates["Fetch"] <= MAX_RATE, rates
    assert cpu < 0.25
    fake.handlers.clear()
    assert await collect(consumer, 10) == list(range(10))


async def test_a_broker_that_answers_empty_at_once_is_not_polled_in_a_loop(
    fake: FakeBroker, consumers: Any
) -> None:
    fake.handlers["Fetch"] = lambda b, r: fetch_partition_response(
        r, lambda t, p: {"error_code": 0, "high_watermark": 0, "records": None}
    )
    consumer = consumers(fake, fetch_max_wait_ms=500)
    await consumer.start()
    consumer.assign([TP])
    rates, cpu = await idle_rates(fake, ("Fetch",))
    assert rates["Fetch"] <= MAX_RATE, rates
    assert cpu < 0.25


async def test_a_broker_that_answers_with_records_below_the_fetch_offset_is_not_polled_in_a_loop(
    fake: FakeBroker, consumers: Any
) -> None:
    # Whatever the offset asked for, the broker sends offsets 0..9 again: no progress is
    # possible, so the partition backs off as after an error (no hot loop, CPU idle).
    stale = batch(0)
    fake.handlers["Fetch"] = lambda b, r: fetch_partition_response(
        r, lambda t, p: {"error_code": 0, "high_watermark": 20, "records": stale}
    )
    consumer = consumers(fake)
    await consumer.start()
    consumer.assign([TP])
    consumer.seek(TP, 10)
    rates, cpu = await idle_rates(fake, ("Fetch",))
    assert rates["Fetch"] <= MAX_RATE, rates
    assert cpu < 0.25, cpu
    assert await consumer.getmany(timeout_ms=200) == {}  # nothing below 10 handed out
    assert await consumer.position(TP) == 10


async def test_no_fetch_version_in_common_is_raised(consumers: Any) -> None:
    async with FakeBroker(topics={"t": 1}) as broker:

        def versions(b: FakeBroker, r: FakeRequest) -> Any:
            answer = b._default_ApiVersions(r)
            for k in answer["api_keys"]:
                if k["api_key"] == 1:
                    k["min_version"], k["max_version"] = 0, 3
            return answer

        broker.handlers["ApiVersions"] = versions
        consumer = consumers(broker)
        await consumer.start()
        consumer.assign([TP])
        with pytest.raises(UnsupportedVersionError):
            await asyncio.wait_for(consumer.getmany(timeout_ms=5000), WAIT)


# -- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["fetch_max_bytes", "fetch_min_bytes", "fetch_max_wait_ms", "max_partition_fetch_bytes"],
)
def test_fetch_sizes_must_fit_an_int32(name: str) -> None:
    with pytest.raises(KafkaConfigurationError, match=name):
        AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", **{name: 2**31})
    AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", **{name: 2**31 - 1})


async def test_no_group_coordinator_backs_off(fake: FakeBroker, consumers: Any) -> None:
    def not_available(b: FakeBroker, r: FakeRequest) -> Any:
        keys = getattr(r.body, "coordinator_keys", None) or []
        return {
            "error_code": 15,
            "node_id": -1,
            "host": "",
            "port": -1,
            "coordinators": [
                {"key": k, "error_code": 15, "node_id": -1, "host": "", "port": -1} for k in keys
            ],
        }

    fake.handlers["FindCoordinator"] = not_available
    consumer = consumers(fake, group_id="g")
    consumer.subscribe(["t"])
    # As aiokafka's, start() waits for the first assignment: here it cannot come.
    starting = asyncio.ensure_future(consumer.start())
    rates, cpu = await idle_rates(fake, ("FindCoordinator", "Metadata"), seconds=3.0)
    assert not starting.done()
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    assert rates["FindCoordinator"] <= MAX_RATE / 2, rates
    assert rates["Metadata"] <= MAX_RATE, rates
    assert cpu < 0.25


@pytest.mark.parametrize("code", [1, 2, 3, 5, 6, -1, 29, 74, 75, 78, 87])
async def test_a_fetch_error_that_keeps_coming_is_not_a_hot_loop(
    fake: FakeBroker, consumers: Any, code: int
) -> None:
    fake.append("t", 0, batch(0))
    fake.handlers["Fetch"] = lambda b, r: fetch_partition_response(
        r, lambda t, p: {"error_code": code, "high_watermark": -1, "records": None}
    )
    consumer = consumers(fake)
    await consumer.start()
    consumer.assign([TP])
    await asyncio.sleep(0.5)
    since = time.monotonic()
    cpu = time.process_time()
    errors = set()
    while time.monotonic() - since < 2.0:  # a user who logs errors and polls again
        try:
            await consumer.getmany(timeout_ms=200)
        except Exception as exc:
            errors.add(type(exc).__name__)
    elapsed = time.monotonic() - since
    for api in ("Fetch", "ListOffsets", "Metadata"):
        assert fake.count(api, since) / elapsed <= MAX_RATE, (api, fake.counts())
    assert (time.process_time() - cpu) / elapsed < 0.25
    fake.handlers.clear()
    if not errors:  # retried by the consumer: it goes on once the broker does
        assert await collect(consumer, 10) == list(range(10))


async def test_undecodable_fetch_responses_are_retried_slowly_and_logged(
    fake: FakeBroker, consumers: Any, caplog: pytest.LogCaptureFixture
) -> None:
    fake.append("t", 0, batch(0))
    fake.handlers["Fetch"] = lambda b, r: (
        struct.pack(">ii", 9, r.correlation_id) + b"\x00\xff\xff\xff\xff"
    )
    consumer = consumers(fake)
    await consumer.start()
    consumer.assign([TP])
    rates, cpu = await idle_rates(fake, ("Fetch",))
    assert rates["Fetch"] <= MAX_RATE, rates
    assert cpu < 0.25
    assert any("fetch from node 0 failed" in r.getMessage() for r in caplog.records)
    fake.handlers.clear()
    assert await collect(consumer, 10) == list(range(10))
