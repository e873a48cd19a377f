"""aiokafka users change the import and nothing else: behaviour that must match aiokafka 0.14.

Each test states the aiokafka behaviour it checks; they run against the embedded cluster.
"""

from __future__ import annotations

import asyncio
import gc
import re
import time
import warnings
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any, NamedTuple

import pytest

from rackafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from rackafka.errors import (
    ConsumerStoppedError,
    IllegalOperation,
    IllegalStateError,
    KafkaConfigurationError,
    KafkaTimeoutError,
)
from rackafka.testing import EmbeddedCluster

WAIT = 20.0
Make = Callable[..., AIOKafkaConsumer[Any, Any]]


@pytest.fixture
async def make(embedded_cluster: EmbeddedCluster) -> AsyncIterator[Make]:
    made: list[AIOKafkaConsumer[Any, Any]] = []

    def factory(*topics: str, **kwargs: Any) -> AIOKafkaConsumer[Any, Any]:
        kwargs.setdefault("bootstrap_servers", embedded_cluster.bootstrap_servers)
        kwargs.setdefault("auto_offset_reset", "earliest")
        if "group_id" in kwargs:
            kwargs.setdefault("session_timeout_ms", 3000)
            kwargs.setdefault("heartbeat_interval_ms", 200)
        consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(*topics, **kwargs)
        made.append(consumer)
        return consumer

    yield factory
    for c in made:
        await c.stop()


class Recording(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", set(revoked)))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", set(assigned)))


def tps(topic: str, n: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(n)}


# -- 1, 2: start() waits for the first assignment; an empty revoke comes first ------------------


async def test_start_returns_with_the_assignment_and_the_listener_called(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    embedded_cluster.create_topic("s1", 3)
    await embedded_cluster.aproduce("s1", 30, partition="spread")
    consumer = make(group_id="g-s1")
    listener = Recording()
    consumer.subscribe(["s1"], listener=listener)
    await asyncio.wait_for(consumer.start(), WAIT)
    # Right after start(): the assignment, positions and seeks work.
    assert consumer.assignment() == tps("s1", 3)
    assert listener.calls == [("revoked", set()), ("assigned", tps("s1", 3))]
    tp = TopicPartition("s1", 0)
    assert await asyncio.wait_for(consumer.position(tp), WAIT) == 0
    consumer.seek(tp, 5)
    assert await consumer.position(tp) == 5
    assert await consumer.seek_to_committed(tp) == {tp: None}
    assert await consumer.position(tp) == 5  # nothing committed: the position stays


# -- 3: commit() validation ---------------------------------------------------------------------


async def test_commit_validates_like_aiokafka(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    embedded_cluster.create_topic("c1", 2)
    idle = make(group_id="g-c1-idle")
    await idle.start()
    with pytest.raises(IllegalStateError):  # not subscribed, nothing assigned
        await idle.commit()
    consumer = make("c1", group_id="g-c1")
    await asyncio.wait_for(consumer.start(), WAIT)
    tp = TopicPartition("c1", 0)
    with pytest.raises(ValueError):
        await consumer.commit({})
    with pytest.raises(ValueError):
        await consumer.commit([(tp, 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await consumer.commit({"c1": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        await consumer.commit({tp: (1, 5)})
    with pytest.raises(IllegalStateError):
        await consumer.commit({TopicPartition("c1", 7): 1})
    await consumer.commit({tp: (3, "meta")})
    assert await consumer.committed(tp) == 3
    consumer.unsubscribe()
    with pytest.raises(IllegalStateError):
        await consumer.commit({tp: 4})


async def test_commit_before_the_first_join_raises_no_partitions_assigned(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    # aiokafka: subscribe() on a started consumer, then commit() before the member has
    # joined raises IllegalStateError("No partitions assigned") at once (no waiting for a
    # join round, no CommitFailedError), with or without offsets.
    embedded_cluster.create_topic("c2", 2)
    consumer = make(group_id="g-c2")
    await asyncio.wait_for(consumer.start(), WAIT)
    consumer.subscribe(["c2"])
    tp = TopicPartition("c2", 0)
    began = time.monotonic()
    with pytest.raises(IllegalStateError, match="No partitions assigned"):
        await consumer.commit({tp: 1000})
    with pytest.raises(IllegalStateError, match="No partitions assigned"):
        await consumer.commit()
    assert time.monotonic() - began < 1.0


# -- 4: a topic created after start() is seen within seconds ------------------------------------


async def test_a_topic_created_after_start_is_read(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    consumer = make("late", allow_auto_create_topics=False)  # (else the consumer makes it)
    await consumer.start()
    await asyncio.sleep(0.5)
    embedded_cluster.create_topic("late", 2)
    result = await embedded_cluster.aproduce("late", 20, partition="spread")
    seen = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 8  # metadata_max_age_ms is 300 s: this is the quick retry
    while seen < 20 and loop.time() < deadline:
        got = await consumer.getmany(timeout_ms=500)
        seen += sum(len(v) for v in got.values())
    assert seen == 20 == result.count


async def test_the_quick_retry_stops_once_the_topic_is_known(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    """The short metadata age of an unknown topic ends when a refresh finds it, even for a
    background wake-up scheduled while it was unknown and running late."""
    embedded_cluster.create_topic("known", 1)
    consumer = make()
    await consumer.start()
    consumer.assign([TopicPartition("known", 0)])  # before the background task first runs
    client = consumer._client
    await asyncio.sleep(0)
    pending = client._refresh
    assert pending is not None
    await asyncio.wait_for(asyncio.shield(pending), WAIT)
    assert not client.unknown_topics()
    before = client.metadata_requests
    # Hold the event loop past the retry_backoff_max_ms (1 s) the background task planned
    # with while the topic was unknown, so that its wake-up comes late.
    time.sleep(1.3)
    await asyncio.sleep(0.5)
    assert client.metadata_requests == before


# -- 5: offset look-ups time out with KafkaTimeoutError ------------------------------------------


async def test_offset_lookups_raise_kafka_timeout_error(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    embedded_cluster.create_topic("o1", 1)
    consumer = make(request_timeout_ms=1000)
    await consumer.start()
    missing = TopicPartition("o1", 5)  # no such partition: never found
    for call in (
        lambda: consumer.beginning_offsets([missing]),
        lambda: consumer.end_offsets([missing]),
        lambda: consumer.offsets_for_times({missing: 0}),
    ):
        with pytest.raises(KafkaTimeoutError):
            await asyncio.wait_for(call(), WAIT)


# -- 6: stop() while getmany() waits ---------------------------------------------------------------


async def test_a_waiting_getmany_returns_empty_on_stop(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    embedded_cluster.create_topic("w1", 1)
    consumer = make("w1")
    await consumer.start()
    waiting = asyncio.ensure_future(consumer.getmany(timeout_ms=10_000))
    await asyncio.sleep(0.3)
    await consumer.stop()
    assert await asyncio.wait_for(waiting, 5) == {}
    with pytest.raises(ConsumerStoppedError):
        await consumer.getmany()


# -- 7: constructor values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_poll_records": 0},
        {"isolation_level": "serializable"},
        {"security_protocol": "TLS"},
        {"auto_offset_reset": "middle"},
    ],
)
def test_bad_values_raise_value_error_as_in_aiokafka(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", **kwargs)
    assert issubclass(KafkaConfigurationError, ValueError)


def test_floats_and_any_case_are_accepted_as_in_aiokafka() -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers="127.0.0.1:1",
        request_timeout_ms=30e3,  # type: ignore[arg-type]
        fetch_max_bytes=5e7,  # type: ignore[arg-type]
        auto_offset_reset="EARLIEST",
    )
    assert consumer._fetcher_args["fetch_max_bytes"] == 50_000_000


@pytest.mark.parametrize("name", ["enable_auto_commit", "check_crcs", "exclude_internal_topics"])
def test_booleans_given_as_strings_are_refused(name: str) -> None:
    with pytest.raises(KafkaConfigurationError, match=name):
        AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", **{name: "false"})


# -- 8: committed() and seek_to_committed() ------------------------------------------------------


async def test_committed_of_an_unknown_topic_is_none(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    consumer = make(group_id="g-u1")
    await consumer.start()
    assert await consumer.committed(TopicPartition("no-such-topic", 0)) is None


async def test_seek_to_committed_checks_types_then_assignment_then_group(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    # aiokafka 0.14: TypeError for a non-partition, IllegalStateError for a partition not
    # assigned (even without a group), and only then IllegalOperation for a missing group.
    embedded_cluster.create_topic("stc", 2)
    consumer = make()  # no group_id
    await consumer.start()
    consumer.assign([TopicPartition("stc", 0)])
    with pytest.raises(TypeError):
        await consumer.seek_to_committed("not a partition")  # type: ignore[arg-type]
    with pytest.raises(IllegalStateError):
        await consumer.seek_to_committed(TopicPartition("stc", 1))
    with pytest.raises(IllegalOperation):
        await consumer.seek_to_committed(TopicPartition("stc", 0))


# -- 9: a dropped consumer is collected and warns -------------------------------------------------


@pytest.mark.parametrize("group", [None, "g-drop"])
async def test_an_unclosed_consumer_is_collected_and_warns(
    embedded_cluster: EmbeddedCluster, group: str | None
) -> None:
    embedded_cluster.create_topic("d1", 1)
    consumer: AIOKafkaConsumer[Any, Any] | None = AIOKafkaConsumer(
        "d1", bootstrap_servers=embedded_cluster.bootstrap_servers, group_id=group
    )
    assert consumer is not None
    await asyncio.wait_for(consumer.start(), WAIT)
    ref = weakref.ref(consumer)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        consumer = None
        assert ref() is None  # no reference cycle keeps it: gone without gc
        gc.collect()
    assert any(
        issubclass(w.category, ResourceWarning) and "Unclosed AIOKafkaConsumer" in str(w.message)
        for w in caught
    )


@pytest.mark.parametrize("group", [None, "g-drop-sockets"])
async def test_a_dropped_consumer_closes_its_connections(
    embedded_cluster: EmbeddedCluster, group: str | None
) -> None:
    # aiokafka closes the sockets of a consumer collected without stop() (its connections'
    # __del__); left open, they stay until the event loop closes and then reach the garbage
    # collector in unrelated code (ResourceWarning: unclosed socket).
    from rackafka.net.connection import Connection

    def open_connections() -> list[Connection]:
        gc.collect()
        return [c for c in gc.get_objects() if isinstance(c, Connection) and c.connected]

    embedded_cluster.create_topic("d2", 1)
    before = set(map(id, open_connections()))
    consumer: AIOKafkaConsumer[Any, Any] | None = AIOKafkaConsumer(
        "d2", bootstrap_servers=embedded_cluster.bootstrap_servers, group_id=group
    )
    assert consumer is not None
    await asyncio.wait_for(consumer.start(), WAIT)
    assert [c for c in open_connections() if id(c) not in before]
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        consumer = None
        gc.collect()
    deadline = time.monotonic() + WAIT  # closing is quick; the bound is for a loaded machine
    while [c for c in open_connections() if id(c) not in before]:
        assert time.monotonic() < deadline, open_connections()
        await asyncio.sleep(0.05)


# -- 11: subscription() after assign(), types -----------------------------------------------------


async def test_subscription_after_assign_and_types(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    embedded_cluster.create_topic("a1", 2)
    consumer = make()
    await consumer.start()
    consumer.assign([TopicPartition("a1", 0), TopicPartition("a1", 1)])
    assert consumer.subscription() == {"a1"}
    assert isinstance(consumer.subscription(), frozenset)
    assert isinstance(consumer.assignment(), frozenset)


def test_rebalance_timeout_none_is_the_session_timeout_as_in_aiokafka() -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers="127.0.0.1:1", group_id="g", session_timeout_ms=7000
    )
    assert consumer._group_args["rebalance_timeout_ms"] == 7000


# -- 12: aiokafka's TopicPartition, import paths, ConsumerRecord --------------------------------


class OtherTP(NamedTuple):
    topic: str
    partition: int


async def test_aiokafka_topic_partitions_are_accepted(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    aiokafka_structs = pytest.importorskip("aiokafka.structs", reason="aiokafka is not installed")
    embedded_cluster.create_topic("k1", 2)
    await embedded_cluster.aproduce("k1", 10, partition=0)
    theirs = aiokafka_structs.TopicPartition("k1", 0)
    consumer = make()
    await consumer.start()
    consumer.assign([theirs, OtherTP("k1", 1)])
    assert consumer.assignment() == tps("k1", 2)
    consumer.seek(theirs, 3)
    assert await consumer.position(theirs) == 3
    consumer.pause(theirs)
    consumer.resume(theirs)
    assert (await consumer.beginning_offsets([theirs]))[theirs] == 0
    got = await asyncio.wait_for(consumer.getmany(theirs, timeout_ms=5000), WAIT)
    assert [r.offset for r in got[theirs]][0] == 3
    assert consumer.highwater(theirs) == 10
    consumer.seek(theirs, 5)
    assert (await asyncio.wait_for(consumer.getone(theirs), WAIT)).offset == 5
    with pytest.raises(TypeError):
        consumer.assign([("k1", 0)])  # a plain tuple is not a TopicPartition (as aiokafka)


def test_import_paths_and_record_as_aiokafkas() -> None:
    from rackafka.consumer import AIOKafkaConsumer as Same

    assert Same is AIOKafkaConsumer
    record: ConsumerRecord[bytes, bytes] = ConsumerRecord(
        "t", 0, 1, 0, 0, b"k", b"v", None, 1, 1, ()
    )
    record.note = "mine"  # type: ignore[attr-defined]
    assert vars(record)["note"] == "mine"
    assert weakref.ref(record)() is record


# -- 10: seek() during a long poll ----------------------------------------------------------------


async def test_seek_during_a_long_poll_gets_the_new_position_at_once(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    embedded_cluster.create_topic("lp", 1)
    await embedded_cluster.aproduce("lp", 10, partition=0)
    tp = TopicPartition("lp", 0)
    consumer = make(fetch_max_wait_ms=3000)
    await consumer.start()
    consumer.assign([tp])
    got = await asyncio.wait_for(consumer.getmany(timeout_ms=5000), WAIT)
    assert [r.offset for r in got[tp]] == list(range(10))
    await asyncio.sleep(0.3)  # the next fetch, at the end of the log, waits 3 s at the broker
    consumer.seek(tp, 2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    got = await consumer.getmany(timeout_ms=1500)
    assert [r.offset for r in got.get(tp, [])][:1] == [2]
    assert loop.time() - started < 1.5


# -- a subscribed topic created after start() -------------------------------------------------


@pytest.mark.parametrize("group", [None, "g-late-topic"])
async def test_a_subscribed_topic_created_later_is_seen_within_seconds(
    embedded_cluster: EmbeddedCluster, make: Make, group: str | None
) -> None:
    # As aiokafka: while a subscribed topic is unknown, metadata is looked up again
    # every retry_backoff_max_ms, not only every metadata_max_age_ms (5 minutes).
    # (as a broker without auto.create.topics.enable: the consumer does not create it)
    no_auto: dict[str, Any] = {"allow_auto_create_topics": False}
    consumer = (
        make("late-topic", group_id=group, **no_auto) if group else make("late-topic", **no_auto)
    )
    await consumer.start()
    await asyncio.sleep(1.5)  # the client settled with the topic unknown
    requests = consumer._client.metadata_requests
    embedded_cluster.create_topic("late-topic", 2)
    embedded_cluster.produce("late-topic", 1, value_size=5)
    started = time.monotonic()
    record = await asyncio.wait_for(consumer.getone(), WAIT)
    assert record.topic == "late-topic"
    # (the librdkafka mock delays a rejoin by up to the session timeout: 3 s here)
    assert time.monotonic() - started < 12
    assert consumer._client.metadata_requests > requests


async def test_an_unknown_subscribed_topic_is_looked_up_with_backoff_not_in_a_loop(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    consumer = make(
        "never-created",
        group_id="g-never",
        retry_backoff_max_ms=500,
        allow_auto_create_topics=False,
    )
    await consumer.start()
    await asyncio.sleep(1.0)
    before = consumer._client.metadata_requests
    await asyncio.sleep(3.0)
    looked = consumer._client.metadata_requests - before
    assert 2 <= looked <= 12, looked  # about every 0.5 s: looked for, but no loop


async def test_start_returns_after_the_first_on_partitions_assigned_completed(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    # As aiokafka: work started by an async on_partitions_assigned (here it awaits, then
    # records) is done when start() returns; a listener that awaits right after start()
    # finds it.
    embedded_cluster.create_topic("listen", 2)
    done: list[set[TopicPartition]] = []

    class Slow(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
            pass

        async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
            await asyncio.sleep(0.5)
            done.append(set(assigned))

    consumer = make(group_id="g-listen")
    consumer.subscribe(["listen"], listener=Slow())
    await consumer.start()
    assert done == [{TopicPartition("listen", 0), TopicPartition("listen", 1)}]
    assert consumer.assignment() == done[0]


async def test_subscription_and_assignment_after_assign_then_unsubscribe(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    # As aiokafka 0.14: both empty, with or without a group; a later subscribe() works.
    embedded_cluster.create_topic("au", 2)
    for group in (None, "g-au"):
        consumer = make(group_id=group) if group else make()
        await consumer.start()
        consumer.assign([TopicPartition("au", 0)])
        assert consumer.subscription() == {"au"}
        consumer.unsubscribe()
        assert consumer.subscription() == set() and consumer.assignment() == set()
        await asyncio.sleep(0.3)
        assert consumer.subscription() == set() and consumer.assignment() == set()
        consumer.subscribe(["au"])
        assert consumer.subscription() == {"au"}


@pytest.mark.parametrize(
    ("kwargs", "aiokafkas_words"),
    [
        ({"security_protocol": "SOME"}, "`security_protocol` should be SSL or PLAINTEXT"),
        (
            {"security_protocol": "SSL", "ssl_context": None},
            "`ssl_context` is mandatory if security_protocol=='SSL'",
        ),
        ({"isolation_level": "READ_CCC"}, "Incorrect isolation level READ_CCC"),
        (
            {"security_protocol": "SASL_PLAINTEXT"},
            "sasl_plain_username and sasl_plain_password required for PLAIN sasl",
        ),
    ],
)
def test_invalid_arguments_raise_with_aiokafkas_words(
    kwargs: dict[str, Any], aiokafkas_words: str
) -> None:
    # Code (and tests) written for aiokafka match these messages with a regex.
    with pytest.raises(ValueError, match=re.escape(aiokafkas_words)):
        AIOKafkaConsumer("t", bootstrap_servers="127.0.0.1:1", **kwargs)


async def test_a_subscribed_topic_is_auto_created_as_by_aiokafka(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    # aiokafka's and Java's consumers let a broker with auto.create.topics.enable create a
    # subscribed topic (aiokafka's test_consumer_wait_topic): a consumer at "latest" then
    # gets a record produced after start().
    consumer = make("auto-made", auto_offset_reset="latest")
    await consumer.start()
    task = asyncio.ensure_future(consumer.getone())
    await asyncio.sleep(1.0)
    assert not task.done()
    assert embedded_cluster.metadata().topics["auto-made"].partitions  # created by it
    await embedded_cluster.aproduce("auto-made", 1, partition=0)
    record = await asyncio.wait_for(task, WAIT)
    assert record.topic == "auto-made"


def test_allow_auto_create_topics_must_be_a_bool() -> None:
    with pytest.raises(KafkaConfigurationError, match="allow_auto_create_topics"):
        AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", allow_auto_create_topics="false")


@pytest.mark.parametrize("compression", ["gzip", "lz4", "zstd", "snappy"])
async def test_a_seek_into_a_compressed_batch_returns_records_from_that_offset(
    embedded_cluster: EmbeddedCluster, make: Make, compression: str
) -> None:
    # As aiokafka: the broker sends the whole batch; records before the position are not
    # handed out (aiokafka's test_consumer_compressed_returns_older_msgs).
    topic = f"seek-{compression}"
    embedded_cluster.create_topic(topic, 1)
    embedded_cluster.produce(topic, 10, value_size=10, compression=compression, partition=0)
    tp = TopicPartition(topic, 0)
    consumer = make()
    await consumer.start()
    consumer.assign([tp])
    consumer.seek(tp, 6)
    got: list[int] = []
    while len(got) < 4:
        batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), WAIT)
        got += [r.offset for r in batch.get(tp, [])]
    assert got == [6, 7, 8, 9]


@pytest.mark.parametrize("group", [None, "g-pattern-age"])
async def test_a_topic_matching_the_pattern_is_subscribed_within_metadata_max_age(
    embedded_cluster: EmbeddedCluster, make: Make, group: str | None
) -> None:
    # As aiokafka's test_consumer_subscribe_pattern_with_autocreate: metadata is refreshed
    # every metadata_max_age_ms whatever refreshes came before (periodic refreshes are not
    # paced as refreshes in a row are), so a new matching topic is subscribed at once.
    consumer = make(group_id=group, metadata_max_age_ms=200, fetch_max_wait_ms=50)
    await consumer.start()
    consumer.subscribe(pattern="^age-pattern-")
    getter = asyncio.ensure_future(consumer.getone())
    try:
        await asyncio.sleep(0.3)
        assert not getter.done()
        assert consumer.subscription() == set()
        embedded_cluster.create_topic("age-pattern-1", 1)
        await asyncio.sleep(0.3)
        assert consumer.subscription() == {"age-pattern-1"}
        embedded_cluster.produce("age-pattern-1", 1, value_size=5)
        record = await asyncio.wait_for(getter, WAIT)
        assert record.topic == "age-pattern-1"
    finally:
        getter.cancel()


async def test_a_consumer_without_a_group_never_calls_the_rebalance_listener(
    embedded_cluster: EmbeddedCluster, make: Make
) -> None:
    # As aiokafka 0.14: a listener is about a group's rebalances. A consumer without a
    # group takes every partition of its topics (and the new ones) without calling it.
    embedded_cluster.create_topic("nogroup-listen", 2)
    listener = Recording()
    consumer = make()
    consumer.subscribe(["nogroup-listen"], listener=listener)
    await consumer.start()
    assert consumer.assignment() == tps("nogroup-listen", 2)
    embedded_cluster.create_topic("nogroup-listen-2", 1)
    consumer.subscribe(["nogroup-listen-2"], listener=listener)
    deadline = time.monotonic() + WAIT
    while consumer.assignment() != tps("nogroup-listen-2", 1) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert consumer.assignment() == tps("nogroup-listen-2", 1)
    consumer.unsubscribe()
    await asyncio.sleep(0.2)
    assert listener.calls == []
