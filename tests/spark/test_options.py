"""``parse_options`` and ``resolve_client_rack``: the source's options, checked without Spark.

Every invalid value must raise :class:`InvalidOptionError` with a message that names the
option as the user wrote it (Spark hands the keys over lower-cased, so the message uses the
documented spelling, e.g. ``startingOffsets``).
"""

from __future__ import annotations

import logging
import pickle
from typing import Any

import pytest

from rackafka.errors import KafkaConfigurationError
from rackafka.spark.options import (
    CLIENT_RACK_ENV,
    EARLIEST,
    LATEST,
    InvalidOptionError,
    OffsetSpec,
    SourceOptions,
    parse_options,
    resolve_client_rack,
)

SERVERS = "127.0.0.1:9092,127.0.0.1:9093"


def opts(**extra: str | None) -> dict[str, str]:
    """A valid set of options (subscribe to ``t``) plus ``extra`` (``None`` removes one)."""
    base: dict[str, Any] = {"kafka.bootstrap.servers": SERVERS, "subscribe": "t"}
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


def parse(streaming: bool = False, /, **extra: str | None) -> SourceOptions:
    return parse_options(opts(**extra), streaming=streaming)


def refused(options: dict[str, str], *names: str, streaming: bool = False) -> str:
    """Parse ``options`` expecting InvalidOptionError whose message contains every name."""
    with pytest.raises(InvalidOptionError) as info:
        parse_options(options, streaming=streaming)
    message = str(info.value)
    for name in names:
        assert name in message, f"{name!r} not in {message!r}"
    return message


# -- defaults ------------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
def test_defaults(streaming: bool) -> None:
    o = parse(streaming)
    assert o.bootstrap_servers == SERVERS
    assert o.strategy == "subscribe"
    assert o.topics == ("t",)
    assert o.pattern is None and o.assigned == ()
    assert o.starting is None and o.ending is None
    assert o.max_offsets_per_trigger is None
    assert o.min_partitions is None
    assert o.include_headers is False
    assert o.fail_on_data_loss is True
    assert o.client_rack == "env"  # RACKAFKA_CLIENT_RACK only: no metadata service
    assert o.poll_timeout_ms == 120_000
    assert o.offset_retries == 3
    assert o.offset_retry_interval_ms == 10  # Spark's default
    assert o.ignored == ()
    assert o.metrics_path is None
    assert o.offsets_per_task == 1_000_000
    assert o.max_records_per_partition is None
    assert dict(o.consumer) == {}


def test_default_offsets_depend_on_the_query_kind() -> None:
    # The defaults are applied by the readers: batch reads earliest..latest, a stream
    # starts at latest (as Spark's Kafka source does).
    batch = parse(False)
    assert batch.starting_or("earliest") == OffsetSpec("earliest")
    assert batch.ending_or("latest") == OffsetSpec("latest")
    stream = parse(True)
    assert stream.starting_or("latest") == OffsetSpec("latest")
    given = parse(True, startingOffsets="earliest")
    assert given.starting_or("latest") == OffsetSpec("earliest")


def test_source_options_pickle() -> None:
    o = parse(
        True,
        startingOffsets='{"t":{"0":5,"1":-2}}',
        **{"kafka.fetch.max.bytes": "1000", "kafka.check.crcs": "false"},
    )
    assert pickle.loads(pickle.dumps(o)) == o


# -- every option --------------------------------------------------------------------------------


def test_every_option_batch() -> None:
    o = parse(
        False,
        subscribe=None,
        assign='{"a":[1,0],"b":[2]}',
        startingOffsets='{"a":{"0":5,"1":-2},"b":{"2":0}}',
        endingOffsets='{"a":{"0":50,"1":-1},"b":{"2":7}}',
        minPartitions="8",
        includeHeaders="true",
        failOnDataLoss="false",
        **{
            "kafka.client.rack": "az-c",
            "kafkaConsumer.pollTimeoutMs": "2500",
            "fetchOffset.numRetries": "0",
            "fetchOffset.retryIntervalMs": "20",
            "rackafka.metricsPath": "/tmp/metrics",
            "rackafka.offsetsPerTask": "5000",
            "maxRecordsPerPartition": "300",
        },
    )
    assert o.strategy == "assign"
    assert o.assigned == (("a", 0), ("a", 1), ("b", 2))
    assert o.topics == () and o.pattern is None
    assert o.starting == OffsetSpec("offsets", {("a", 0): 5, ("a", 1): EARLIEST, ("b", 2): 0})
    assert o.ending == OffsetSpec("offsets", {("a", 0): 50, ("a", 1): LATEST, ("b", 2): 7})
    assert o.min_partitions == 8
    assert o.include_headers is True
    assert o.fail_on_data_loss is False
    assert o.client_rack == "az-c"
    assert o.poll_timeout_ms == 2500
    assert o.offset_retries == 0
    assert o.offset_retry_interval_ms == 20
    assert o.metrics_path == "/tmp/metrics"
    assert o.offsets_per_task == 5000
    assert o.max_records_per_partition == 300


def test_every_option_streaming() -> None:
    o = parse(
        True,
        subscribe=None,
        subscribePattern=r"events-\d+",
        startingOffsets="earliest",
        maxOffsetsPerTrigger="1000",
    )
    assert o.strategy == "subscribePattern"
    assert o.pattern == r"events-\d+"
    assert o.topics == ()
    assert o.starting == OffsetSpec("earliest")
    assert o.max_offsets_per_trigger == 1000
    latest = parse(True, startingOffsets="latest")
    assert latest.starting == OffsetSpec("latest")
    json_start = parse(True, startingOffsets='{"t":{"0":-1,"1":3}}')
    assert json_start.starting == OffsetSpec("offsets", {("t", 0): LATEST, ("t", 1): 3})


def test_subscribe_list() -> None:
    assert parse(subscribe=" a, b ,a,,c ").topics == ("a", "b", "c")


def test_batch_ending_latest() -> None:
    assert parse(endingOffsets="latest").ending == OffsetSpec("latest")
    assert parse(startingOffsets="earliest").starting == OffsetSpec("earliest")


KAFKA_OPTIONS = [
    ("kafka.client.id", "my-app", "client_id", "my-app"),
    ("kafka.isolation.level", "read_committed", "isolation_level", "read_committed"),
    ("kafka.isolation.level", "READ_UNCOMMITTED", "isolation_level", "read_uncommitted"),
    ("kafka.fetch.max.bytes", "1048576", "fetch_max_bytes", 1048576),
    ("kafka.fetch.min.bytes", "0", "fetch_min_bytes", 0),
    ("kafka.fetch.max.wait.ms", "250", "fetch_max_wait_ms", 250),
    ("kafka.max.partition.fetch.bytes", "65536", "max_partition_fetch_bytes", 65536),
    ("kafka.request.timeout.ms", "40000", "request_timeout_ms", 40000),
    ("kafka.retry.backoff.ms", "50", "retry_backoff_ms", 50),
    ("kafka.metadata.max.age.ms", "60000", "metadata_max_age_ms", 60000),
    ("kafka.connections.max.idle.ms", "30000", "connections_max_idle_ms", 30000),
    ("kafka.check.crcs", "false", "check_crcs", False),
    ("kafka.check.crcs", "TRUE", "check_crcs", True),
    ("kafka.fetch.max.bytes", " 4096 ", "fetch_max_bytes", 4096),
]


@pytest.mark.parametrize(("option", "value", "keyword", "expected"), KAFKA_OPTIONS)
def test_kafka_options_become_consumer_keywords(
    option: str, value: str, keyword: str, expected: object
) -> None:
    o = parse(**{option: value})
    assert dict(o.consumer) == {keyword: expected}


def test_kafka_options_together() -> None:
    o = parse(
        **{
            "kafka.client.id": "x",
            "kafka.fetch.max.bytes": "2000000",
            "kafka.max.partition.fetch.bytes": "100000",
            "kafka.isolation.level": "read_committed",
        }
    )
    assert dict(o.consumer) == {
        "client_id": "x",
        "fetch_max_bytes": 2_000_000,
        "max_partition_fetch_bytes": 100_000,
        "isolation_level": "read_committed",
    }


# -- case-insensitivity --------------------------------------------------------------------------


def test_option_names_are_case_insensitive() -> None:
    upper = parse_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": SERVERS,
            "SubscribePattern": "t.*",
            "STARTINGOFFSETS": "EARLIEST",
            "maxoffsetspertrigger": "5",
            "MinPartitions": "3",
            "INCLUDEHEADERS": "True",
            "failondataloss": "FALSE",
            "Kafka.Fetch.Max.Bytes": "1000",
            "KAFKACONSUMER.POLLTIMEOUTMS": "10",
        },
        streaming=True,
    )
    assert upper.bootstrap_servers == SERVERS
    assert upper.strategy == "subscribePattern" and upper.pattern == "t.*"
    assert upper.starting == OffsetSpec("earliest")
    assert upper.max_offsets_per_trigger == 5
    assert upper.min_partitions == 3
    assert upper.include_headers is True
    assert upper.fail_on_data_loss is False
    assert dict(upper.consumer) == {"fetch_max_bytes": 1000}
    assert upper.poll_timeout_ms == 10
    # Spark's own spelling (lower-cased keys) gives the same result as the documented one.
    lower = parse_options({k.lower(): v for k, v in opts(minPartitions="3").items()}, False)
    assert lower == parse(minPartitions="3")


def test_the_same_option_twice_in_two_cases() -> None:
    refused(opts(SUBSCRIBE="u"), "SUBSCRIBE", "twice")


# -- refused options -----------------------------------------------------------------------------


def test_unknown_options_are_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark ignores options it does not know, and hands every kafka.* option to the Java
    consumer, which only warns: so does the source, once per process and option."""
    monkeypatch.setattr("rackafka.spark.options._warned", set())
    with caplog.at_level(logging.WARNING, logger="rackafka.spark.options"):
        o = parse(subscribeTopicz="x", **{"kafka.no.such.setting": "secret-value"})
        again = parse(subscribeTopicz="x")
    assert dict(o.ignored) == {
        "subscribetopicz": "not an option of the rackafka source (nor of Spark's Kafka source)",
        "kafka.no.such.setting": "not a Kafka consumer setting rackafka knows",
    }
    assert again.ignored == (("subscribetopicz", dict(o.ignored)["subscribetopicz"]),)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2, warnings  # not repeated for the second query
    assert any("subscribetopicz is ignored" in w for w in warnings)
    assert any("kafka.no.such.setting is ignored" in w for w in warnings)
    assert "secret-value" not in caplog.text  # names only, never values
    assert o.consumer == {}


@pytest.mark.parametrize(
    ("option", "value", "keyword", "expected"),
    [
        ("kafka.max.poll.records", "5", "max_poll_records", 5),
        ("kafka.retry.backoff.max.ms", "900", "retry_backoff_max_ms", 900),
        ("kafka.reconnect.backoff.ms", "70", "reconnect_backoff_ms", 70),
        ("kafka.reconnect.backoff.max.ms", "800", "reconnect_backoff_max_ms", 800),
        ("kafka.exclude.internal.topics", "false", "exclude_internal_topics", False),
        ("kafka.check.crcs", "false", "check_crcs", False),
    ],
)
def test_kafka_consumer_settings_reach_the_consumer(
    option: str, value: str, keyword: str, expected: Any
) -> None:
    o = parse(**{option: value})
    assert o.consumer == {keyword: expected} and o.ignored == ()
    assert o.consumer_kwargs()[keyword] == expected


@pytest.mark.parametrize(
    "option",
    [
        "kafka.group.id",
        "kafka.group.instance.id",
        "kafka.session.timeout.ms",
        "kafka.heartbeat.interval.ms",
        "kafka.partition.assignment.strategy",
        "kafka.max.poll.interval.ms",
        "kafka.receive.buffer.bytes",
        "kafka.default.api.timeout.ms",
        "groupIdPrefix",
    ],
)
def test_settings_without_use_here_are_accepted_and_ignored(option: str) -> None:
    """Spark accepts kafka.group.id and groupIdPrefix; tasks use no consumer group."""
    o = parse(**{option: "1"})
    assert len(o.ignored) == 1 and o.ignored[0][0] == option, o.ignored
    assert o.consumer == {}


@pytest.mark.parametrize(
    "option",
    [
        "kafka.auto.offset.reset",
        "kafka.enable.auto.commit",
        "kafka.key.deserializer",
        "kafka.value.deserializer",
        "kafka.interceptor.classes",
    ],
)
def test_options_the_source_owns_are_refused(option: str) -> None:
    refused(opts(**{option: "x"}), option, "not supported")


# -- offsets by timestamp -----------------------------------------------------------------------


def test_offsets_by_timestamp() -> None:
    o = parse(
        startingOffsetsByTimestamp='{"t":{"0":1700000000000,"1":0}}',
        endingOffsetsByTimestamp='{"t":{"0":1800000000000,"1":5}}',
    )
    assert o.starting == OffsetSpec("timestamps", {("t", 0): 1_700_000_000_000, ("t", 1): 0})
    assert o.ending == OffsetSpec("timestamps", {("t", 0): 1_800_000_000_000, ("t", 1): 5})
    assert o.starting.by_time and o.by_timestamp_strategy == "error"
    assert o.starting.timestamps([("t", 1), ("t", 2)]) == {("t", 1): 0}


def test_one_timestamp_for_every_partition() -> None:
    o = parse(startingTimestamp="1700000000000", endingTimestamp=" 1800000000000 ")
    assert o.starting == OffsetSpec("timestamp", timestamp=1_700_000_000_000)
    assert o.ending == OffsetSpec("timestamp", timestamp=1_800_000_000_000)
    assert o.starting.timestamps([("t", 0), ("u", 3)]) == {
        ("t", 0): 1_700_000_000_000,
        ("u", 3): 1_700_000_000_000,
    }


def test_timestamp_options_take_precedence_as_in_spark() -> None:
    # *Timestamp over *OffsetsByTimestamp over *Offsets.
    o = parse(
        startingTimestamp="7",
        startingOffsetsByTimestamp='{"t":{"0":8}}',
        startingOffsets="earliest",
        endingOffsetsByTimestamp='{"t":{"0":9}}',
        endingOffsets="latest",
    )
    assert o.starting == OffsetSpec("timestamp", timestamp=7)
    assert o.ending == OffsetSpec("timestamps", {("t", 0): 9})
    o = parse(True, startingOffsetsByTimestamp='{"t":{"0":8}}', startingOffsets="earliest")
    assert o.starting == OffsetSpec("timestamps", {("t", 0): 8})


@pytest.mark.parametrize("option", ["startingOffsetsByTimestamp", "endingOffsetsByTimestamp"])
@pytest.mark.parametrize(
    "value",
    [
        "1700000000000",
        "[]",
        "{",
        '{"t":[0]}',
        '{"t":{}}',
        '{"t":{"x":1}}',
        '{"t":{"-1":1}}',
        '{"t":{"0":-1}}',
        '{"t":{"0":-2}}',
        '{"t":{"0":"1700000000000"}}',
        '{"t":{"0":1.5}}',
        '{"t":{"0":true}}',
    ],
)
def test_bad_offsets_by_timestamp(option: str, value: str) -> None:
    refused(opts(**{option: value}), option)


@pytest.mark.parametrize("option", ["startingTimestamp", "endingTimestamp"])
@pytest.mark.parametrize("value", ["", "-1", "soon", "1.5", "2024-01-01"])
def test_bad_timestamps(option: str, value: str) -> None:
    refused(opts(**{option: value}), option)


@pytest.mark.parametrize("option", ["endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets"])
def test_ending_options_refused_in_streaming(option: str) -> None:
    value = '{"t":{"0":1}}' if option != "endingTimestamp" else "1"
    refused(opts(**{option: value}), option, "batch", streaming=True)


def test_offsets_by_timestamp_must_be_assigned_partitions() -> None:
    base = opts(subscribe=None, assign='{"t":[0]}')
    for option in ("startingOffsetsByTimestamp", "endingOffsetsByTimestamp"):
        refused({**base, option: '{"t":{"0":1,"1":2}}'}, option, "t-1")


@pytest.mark.parametrize("streaming", [False, True])
def test_by_timestamp_strategy(streaming: bool) -> None:
    option = "startingOffsetsByTimestampStrategy"
    assert parse(streaming, **{option: "LATEST"}).by_timestamp_strategy == "latest"
    assert parse(streaming, **{option: "error"}).by_timestamp_strategy == "error"
    refused(opts(**{option: "earliest"}), option, streaming=streaming)


# -- admission control ---------------------------------------------------------------------------


def test_min_offsets_per_trigger_and_max_trigger_delay() -> None:
    o = parse(True, minOffsetsPerTrigger="100", maxOffsetsPerTrigger="1000")
    assert (o.min_offsets_per_trigger, o.max_offsets_per_trigger) == (100, 1000)
    assert o.max_trigger_delay_ms == 15 * 60 * 1000  # Spark's default, 15m
    for text, ms in [
        ("250", 250),
        ("250ms", 250),
        ("30s", 30_000),
        ("2m", 120_000),
        ("2min", 120_000),
        ("1h", 3_600_000),
        ("1d", 86_400_000),
        ("1500us", 1),
        (" 5 S ", 5000),
    ]:
        assert (
            parse(True, minOffsetsPerTrigger="5", maxTriggerDelay=text).max_trigger_delay_ms == ms
        )


@pytest.mark.parametrize("value", ["", "soon", "-5s", "1.5s", "5 weeks", "s"])
def test_bad_max_trigger_delay(value: str) -> None:
    refused(opts(maxTriggerDelay=value), "maxTriggerDelay", streaming=True)


def test_min_above_max_offsets_per_trigger() -> None:
    refused(
        opts(minOffsetsPerTrigger="11", maxOffsetsPerTrigger="10"),
        "minOffsetsPerTrigger",
        "maxOffsetsPerTrigger",
        streaming=True,
    )


def test_trigger_options_are_ignored_in_batch() -> None:
    o = parse(minOffsetsPerTrigger="10", maxTriggerDelay="1m")
    assert o.min_offsets_per_trigger is None
    assert dict(o.ignored) == {
        "minOffsetsPerTrigger": "for streaming queries only",
        "maxTriggerDelay": "for streaming queries only",
    }


@pytest.mark.parametrize("servers", [None, "", "   "])
def test_bootstrap_servers_required(servers: str | None) -> None:
    refused(opts(**{"kafka.bootstrap.servers": servers}), "kafka.bootstrap.servers")


def test_bad_bootstrap_servers_named_as_the_option() -> None:
    message = refused(
        opts(**{"kafka.bootstrap.servers": "host:notaport"}), "kafka.bootstrap.servers"
    )
    assert "bootstrap_servers" not in message.replace("kafka.bootstrap.servers", "")


def test_none_of_subscribe_pattern_assign() -> None:
    refused(opts(subscribe=None), "assign", "subscribe", "subscribePattern")


@pytest.mark.parametrize(
    ("pattern", "hint"),
    [
        (r"events\.\p{Alpha}+", r"\p{...}"),
        (r"events-\P{Digit}", r"\P{...}"),
        (r"\Qevents.v1\E", r"\Q...\E"),
        (r"(?<kind>orders|payments)-.*", "(?P<name>...)"),
        (r"(?<k>a)\k<k>", "(?P<name>...)"),
        (r"events\z", r"\Z"),
        (r"a\hb", r"\h"),
        (r"[a-z&&[^e]]+", "intersection"),
        (r"[a[b]]-topic", "nested"),
        (r"a(?i)b", "Python regular expression"),
    ],
)
def test_java_only_pattern_syntax_is_refused(pattern: str, hint: str) -> None:
    message = refused(opts(subscribe=None, subscribePattern=pattern), "subscribePattern", hint)
    assert "Python" in message


@pytest.mark.parametrize(
    "pattern",
    [
        r"events-.*",
        r"(orders|payments)\.v[0-9]+",
        r"a\\p",
        r"[\[x]",
        r"(?i)Events",
        r"a++b",
        r"(?>ab)c",
    ],
)
def test_patterns_both_languages_read_alike_are_accepted(pattern: str) -> None:
    assert parse(subscribe=None, subscribePattern=f" {pattern} ").pattern == pattern


@pytest.mark.parametrize(
    "extra",
    [
        {"subscribePattern": "t.*"},
        {"assign": '{"t":[0]}'},
        {"subscribePattern": "t.*", "assign": '{"t":[0]}'},
    ],
)
def test_two_of_subscribe_pattern_assign(extra: dict[str, str]) -> None:
    message = refused(opts(**extra), "exactly one")
    for name in ("subscribe", *extra):
        assert repr(name) in message


@pytest.mark.parametrize("value", ["", " ", ",", " , ,"])
def test_subscribe_without_topics(value: str) -> None:
    refused(opts(subscribe=value), "subscribe")


@pytest.mark.parametrize("value", ["", "  ", "[", "a(b", "*x"])
def test_bad_subscribe_pattern(value: str) -> None:
    refused(opts(subscribe=None, subscribePattern=value), "subscribePattern")


@pytest.mark.parametrize(
    "value",
    [
        "",
        "t",
        "{bad json",
        '["t", 0]',
        "{}",
        '{"t": []}',
        '{"t": 0}',
        '{"t": [-1]}',
        '{"t": ["0"]}',
        '{"t": [true]}',
        '{"t": [1.0]}',
        '{"": [0]}',
        '{"t": {"0": 1}}',
    ],
)
def test_bad_assign(value: str) -> None:
    refused(opts(subscribe=None, assign=value), "assign")


def test_assign_deduplicates_and_sorts() -> None:
    o = parse(subscribe=None, assign='{"b":[3,1,1],"a":[0]}')
    assert o.assigned == (("a", 0), ("b", 1), ("b", 3))


# -- offsets -------------------------------------------------------------------------------------

BAD_OFFSETS = [
    "",
    "first",
    "[1, 2]",
    "{not json",
    '{"t": 5}',
    '{"t": {}}',
    '{"t": [0]}',
    '{"t": {"x": 1}}',
    '{"t": {"-1": 1}}',
    '{"t": {"1.0": 1}}',
    '{"t": {"0": -3}}',
    '{"t": {"0": 1.5}}',
    '{"t": {"0": "5"}}',
    '{"t": {"0": true}}',
    '{"t": {"0": null}}',
]


@pytest.mark.parametrize("value", BAD_OFFSETS)
@pytest.mark.parametrize("streaming", [False, True])
def test_bad_starting_offsets(value: str, streaming: bool) -> None:
    refused(opts(startingOffsets=value), "startingOffsets", streaming=streaming)


@pytest.mark.parametrize("value", BAD_OFFSETS)
def test_bad_ending_offsets(value: str) -> None:
    refused(opts(endingOffsets=value), "endingOffsets")


@pytest.mark.parametrize("value", ["latest", "LATEST", '{"t":{"0":-1}}', '{"t":{"0":3,"1":-1}}'])
def test_latest_start_refused_in_batch(value: str) -> None:
    refused(opts(startingOffsets=value), "startingOffsets", "latest")


@pytest.mark.parametrize("value", ["earliest", '{"t":{"0":-2}}', '{"t":{"0":3,"1":-2}}'])
def test_earliest_end_refused(value: str) -> None:
    refused(opts(endingOffsets=value), "endingOffsets", "earliest")


@pytest.mark.parametrize("value", ["latest", "earliest", '{"t":{"0":5}}'])
def test_ending_offsets_refused_in_streaming(value: str) -> None:
    refused(opts(endingOffsets=value), "endingOffsets", "batch", streaming=True)


@pytest.mark.parametrize("option", ["startingOffsets", "endingOffsets"])
def test_json_offsets_must_be_assigned_partitions(option: str) -> None:
    base = opts(subscribe=None, assign='{"t":[0]}')
    refused({**base, option: '{"t":{"0":1,"1":2}}'}, option, "t-1")
    refused({**base, option: '{"u":{"0":1}}'}, option, "u-0")
    # The assigned partitions themselves are fine.
    assert parse_options({**base, option: '{"t":{"0":1}}'}, streaming=False)


# -- numbers and booleans ------------------------------------------------------------------------


def test_max_offsets_per_trigger_is_ignored_in_batch() -> None:
    # As Spark: a warning, and the batch reads its whole range.
    o = parse(maxOffsetsPerTrigger="10")
    assert o.max_offsets_per_trigger is None
    assert o.ignored == (("maxOffsetsPerTrigger", "for streaming queries only"),)


NUMBERS = [
    # (option, streaming, smallest valid value)
    ("maxOffsetsPerTrigger", True, 1),
    ("minOffsetsPerTrigger", True, 1),
    ("minPartitions", False, 1),
    ("kafkaConsumer.pollTimeoutMs", False, 1),
    ("fetchOffset.numRetries", False, 0),
    ("fetchOffset.retryIntervalMs", False, 0),
    ("rackafka.offsetsPerTask", False, 1),
    ("maxRecordsPerPartition", False, 1),
    ("kafka.fetch.max.bytes", False, 1),
    ("kafka.fetch.min.bytes", False, 0),
    ("kafka.fetch.max.wait.ms", False, 0),
    ("kafka.max.partition.fetch.bytes", False, 1),
    ("kafka.request.timeout.ms", False, 1),
    ("kafka.retry.backoff.ms", False, 0),
    ("kafka.metadata.max.age.ms", False, 1),
    ("kafka.connections.max.idle.ms", False, 1),
]


@pytest.mark.parametrize(("option", "streaming", "smallest"), NUMBERS)
@pytest.mark.parametrize("value", ["", "ten", "1.5", "1e3", "0x10", "1_000", "12abc"])
def test_non_integer_numbers(option: str, streaming: bool, smallest: int, value: str) -> None:
    refused(opts(**{option: value}), option, streaming=streaming)


@pytest.mark.parametrize(("option", "streaming", "smallest"), NUMBERS)
def test_numbers_below_their_minimum(option: str, streaming: bool, smallest: int) -> None:
    refused(opts(**{option: str(smallest - 1)}), option, streaming=streaming)
    refused(opts(**{option: "-5"}), option, streaming=streaming)
    # The smallest value itself is accepted.
    parse_options(opts(**{option: str(smallest)}), streaming=streaming)


@pytest.mark.parametrize("option", ["includeHeaders", "failOnDataLoss", "kafka.check.crcs"])
@pytest.mark.parametrize("value", ["", "yes", "1", "0", "on", "truee"])
def test_bad_booleans(option: str, value: str) -> None:
    refused(opts(**{option: value}), option)


@pytest.mark.parametrize(("value", "expected"), [("true", True), (" False ", False)])
def test_booleans(value: str, expected: bool) -> None:
    assert parse(includeHeaders=value).include_headers is expected
    assert parse(failOnDataLoss=value).fail_on_data_loss is expected


# -- consumer-level validation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "keyword"),
    [
        ("kafka.fetch.max.bytes", "0", "fetch_max_bytes"),
        ("kafka.max.partition.fetch.bytes", "0", "max_partition_fetch_bytes"),
        ("kafka.request.timeout.ms", "0", "request_timeout_ms"),
        ("kafka.metadata.max.age.ms", "0", "metadata_max_age_ms"),
        ("kafka.connections.max.idle.ms", "0", "connections_max_idle_ms"),
        ("kafka.security.protocol", "carrier-pigeon", "security_protocol"),
    ],
)
def test_consumer_validation_names_the_option(option: str, value: str, keyword: str) -> None:
    message = refused(opts(**{option: value}), option)
    # The consumer judged the value; its keyword is translated to the option's name.
    assert keyword not in message


@pytest.mark.parametrize("value", ["", "committed", "read-committed", "snapshot"])
def test_bad_isolation_level(value: str) -> None:
    refused(opts(**{"kafka.isolation.level": value}), "kafka.isolation.level")


def test_invalid_option_error_is_a_configuration_error() -> None:
    with pytest.raises(KafkaConfigurationError):
        parse(minPartitions="0")
    with pytest.raises(ValueError):
        parse(minPartitions="0")


# -- the client rack -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "env"),
        ("env", "env"),
        ("auto", "auto"),
        ("az-a", "az-a"),
        (" az-b ", "az-b"),
        ("", None),
    ],
)
def test_client_rack_option(value: str | None, expected: str | None) -> None:
    assert parse(**{"kafka.client.rack": value}).client_rack == expected


@pytest.mark.parametrize("setting", ["env", "auto"])
def test_resolve_client_rack_from_the_environment(setting: str) -> None:
    assert resolve_client_rack(setting, {CLIENT_RACK_ENV: "az-b"}) == "az-b"
    assert resolve_client_rack(setting, {CLIENT_RACK_ENV: "  az-c\n"}) == "az-c"


@pytest.mark.parametrize("environ", [{}, {CLIENT_RACK_ENV: ""}, {CLIENT_RACK_ENV: "  "}])
def test_resolve_client_rack_without_the_variable(environ: dict[str, str]) -> None:
    # The default gives no rack; "auto" leaves it to the consumer to detect the zone.
    assert resolve_client_rack("env", environ) is None
    assert resolve_client_rack("auto", environ) == "auto"


def test_resolve_client_rack_fixed_value_ignores_the_environment() -> None:
    assert resolve_client_rack("az-a", {CLIENT_RACK_ENV: "az-b"}) == "az-a"
    assert resolve_client_rack(None, {CLIENT_RACK_ENV: "az-b"}) is None


def test_resolve_client_rack_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CLIENT_RACK_ENV, "az-c")
    assert resolve_client_rack("env") == "az-c"
    monkeypatch.delenv(CLIENT_RACK_ENV)
    assert resolve_client_rack("env") is None


def test_empty_rack_option_resolves_to_no_rack() -> None:
    o = parse(**{"kafka.client.rack": ""})
    assert resolve_client_rack(o.client_rack, {CLIENT_RACK_ENV: "az-b"}) is None


@pytest.mark.parametrize("key", ["x", " 1", "+1", "1_0", "-0", ""])
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("startingOffsets", "5"),
        ("endingOffsets", "5"),
        ("startingOffsetsByTimestamp", "1700000000000"),
        ("endingOffsetsByTimestamp", "1700000000000"),
    ],
)
def test_partition_numbers_of_json_offsets_and_timestamps_are_digits(
    option: str, value: str, key: str
) -> None:
    """Offsets and timestamps per partition read their partition numbers alike."""
    text = f'{{"t":{{"{key}":{value}}}}}'
    message = refused(opts(**{option: text}), option, "is not a partition number")
    assert repr(key) in message
    ok = parse(False, **{option: f'{{"t":{{"10":{value}}}}}'})
    spec = ok.starting if option.startswith("starting") else ok.ending
    assert spec is not None and ("t", 10) in spec.offsets
