"""Options of the ``rackafka`` Spark source: parsed and checked without Spark.

The names follow Spark's own Kafka source (``kafka.bootstrap.servers``, ``subscribe``,
``startingOffsets``, ...) so that a pipeline moves over by changing its ``format``.
Spark hands the options over case-insensitively (lower-cased); so does :func:`parse_options`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rackafka.config import CLIENT, Table
from rackafka.consumer.config import CONSUMER
from rackafka.errors import KafkaConfigurationError
from rackafka.spark.errors import InvalidOptionError
from rackafka.spark.security import SECURITY_OPTIONS, SecuritySettings, parse_security
from rackafka.zones.detect import AUTO_RACK

__all__ = [
    "CLIENT_RACK_ENV",
    "EARLIEST",
    "LATEST",
    "RACK_AUTO",
    "RACK_FROM_ENV",
    "InvalidOptionError",
    "OffsetSpec",
    "SourceOptions",
    "parse_options",
    "resolve_client_rack",
]

log = logging.getLogger(__name__)

#: The environment variable that gives each executor its rack (``kafka.client.rack`` unset,
#: ``env`` or ``auto``).
CLIENT_RACK_ENV = "RACKAFKA_CLIENT_RACK"
#: ``kafka.client.rack`` when it is not given: :data:`CLIENT_RACK_ENV` of the executor and
#: nothing else (no metadata service is asked).
RACK_FROM_ENV = "env"
#: ``kafka.client.rack=auto``: :data:`CLIENT_RACK_ENV` when set, else the zone each
#: executor detects (see :mod:`rackafka.zones`) that is one of the brokers' racks.
RACK_AUTO = AUTO_RACK

#: Offset placeholders of Spark's JSON offsets: -2 is the earliest offset, -1 the latest.
EARLIEST = -2
LATEST = -1


def kafka_options(table: Table, keywords: Iterable[str]) -> dict[str, str]:
    """The Spark options (``kafka.`` + the Java client's name) of settings of ``table``,
    mapped to their keywords."""
    return {f"kafka.{table[k].java}": k for k in keywords}


#: Kafka settings that both the consumer and the producer take, and their keywords.
CLIENT_OPTIONS = kafka_options(
    CLIENT,
    (
        "client_id",
        "request_timeout_ms",
        "retry_backoff_ms",
        "retry_backoff_max_ms",
        "reconnect_backoff_ms",
        "reconnect_backoff_max_ms",
        "metadata_max_age_ms",
        "connections_max_idle_ms",
    ),
)

# Kafka consumer settings that the tasks' consumers take: the common ones and these.
_CONSUMER_OPTIONS = {
    **CLIENT_OPTIONS,
    **kafka_options(
        CONSUMER,
        (
            "isolation_level",
            "fetch_max_bytes",
            "fetch_min_bytes",
            "fetch_max_wait_ms",
            "max_partition_fetch_bytes",
            "max_poll_records",
            "check_crcs",
            "exclude_internal_topics",
        ),
    ),
}

# Kafka consumer properties that the source sets itself and refuses, as Spark's source does.
_OWNED_BY_SOURCE = {
    "kafka.auto.offset.reset": "use startingOffsets; where records are gone, failOnDataLoss",
    "kafka.enable.auto.commit": "the source keeps its offsets in Spark's checkpoint",
    "kafka.key.deserializer": "keys are always read as binary; cast them in a query",
    "kafka.value.deserializer": "values are always read as binary; cast them in a query",
    "kafka.interceptor.classes": "the source adds none, as Spark's does not",
}

_NO_GROUP = "tasks read their offset ranges without a consumer group and commit nothing"
_JAVA_ONLY = "a setting of the Java client that rackafka's consumer has no use for"
#: Kafka consumer settings that are accepted and ignored (a WARNING names them), and why.
IGNORED_CONSUMER_OPTIONS: dict[str, str] = {
    "kafka.group.id": _NO_GROUP,
    "kafka.group.instance.id": _NO_GROUP,
    "kafka.group.protocol": _NO_GROUP,
    "kafka.group.remote.assignor": _NO_GROUP,
    "kafka.partition.assignment.strategy": _NO_GROUP,
    "kafka.session.timeout.ms": _NO_GROUP,
    "kafka.heartbeat.interval.ms": _NO_GROUP,
    "kafka.max.poll.interval.ms": _NO_GROUP,
    "kafka.auto.commit.interval.ms": _NO_GROUP,
    "kafka.default.api.timeout.ms": "the source's own timeouts apply "
    "(kafkaConsumer.pollTimeoutMs, fetchOffset.*)",
    "kafka.allow.auto.create.topics": "the source never creates topics",
    "kafka.receive.buffer.bytes": _JAVA_ONLY,
    "kafka.send.buffer.bytes": _JAVA_ONLY,
    "kafka.socket.connection.setup.timeout.ms": _JAVA_ONLY,
    "kafka.socket.connection.setup.timeout.max.ms": _JAVA_ONLY,
    "kafka.client.dns.lookup": _JAVA_ONLY,
    "kafka.metadata.recovery.strategy": _JAVA_ONLY,
    "kafka.metadata.recovery.rebootstrap.trigger.ms": _JAVA_ONLY,
    "kafka.metric.reporters": _JAVA_ONLY,
    "kafka.metrics.num.samples": _JAVA_ONLY,
    "kafka.metrics.recording.level": _JAVA_ONLY,
    "kafka.metrics.sample.window.ms": _JAVA_ONLY,
    "kafka.auto.include.jmx.reporter": _JAVA_ONLY,
    "kafka.enable.metrics.push": _JAVA_ONLY,
    "kafka.security.providers": _JAVA_ONLY,
}
#: Options of Spark's Kafka source that are accepted and ignored, and why.
IGNORED_SOURCE_OPTIONS: dict[str, str] = {
    "groupidprefix": _NO_GROUP,
}

_SOURCE_OPTIONS = (
    "kafka.bootstrap.servers",
    "kafka.client.rack",
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "endingoffsets",
    "maxoffsetspertrigger",
    "minpartitions",
    "includeheaders",
    "failondataloss",
    "kafkaconsumer.polltimeoutms",
    "fetchoffset.numretries",
    "fetchoffset.retryintervalms",
    "rackafka.metricspath",
    "rackafka.offsetspertask",
    "maxrecordsperpartition",
    "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp",
    "startingtimestamp",
    "endingtimestamp",
    "startingoffsetsbytimestampstrategy",
    "minoffsetspertrigger",
    "maxtriggerdelay",
)

# The names as users write them, for messages.
_DISPLAY = {
    "subscribepattern": "subscribePattern",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger",
    "minpartitions": "minPartitions",
    "includeheaders": "includeHeaders",
    "failondataloss": "failOnDataLoss",
    "kafkaconsumer.polltimeoutms": "kafkaConsumer.pollTimeoutMs",
    "fetchoffset.numretries": "fetchOffset.numRetries",
    "fetchoffset.retryintervalms": "fetchOffset.retryIntervalMs",
    "rackafka.metricspath": "rackafka.metricsPath",
    "rackafka.offsetspertask": "rackafka.offsetsPerTask",
    "maxrecordsperpartition": "maxRecordsPerPartition",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "startingtimestamp": "startingTimestamp",
    "endingtimestamp": "endingTimestamp",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "groupidprefix": "groupIdPrefix",
}


def _name(key: str) -> str:
    return _DISPLAY.get(key, key)


@dataclass(frozen=True)
class OffsetSpec:
    """Where reading starts or ends: ``earliest``, ``latest``, offsets or timestamps.

    ``kind`` is ``"offsets"`` (``startingOffsets``/``endingOffsets`` as JSON): ``offsets``
    maps ``(topic, partition)`` to an offset, :data:`EARLIEST` (-2) or :data:`LATEST` (-1).
    ``"timestamps"`` (``startingOffsetsByTimestamp``/``endingOffsetsByTimestamp``):
    ``offsets`` maps ``(topic, partition)`` to a timestamp in milliseconds, and the offset is
    that of the first record at or after it. ``"timestamp"`` (``startingTimestamp``/
    ``endingTimestamp``): the same with ``timestamp`` for every partition.
    """

    kind: Literal["earliest", "latest", "offsets", "timestamps", "timestamp"]
    offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)
    timestamp: int | None = None

    @property
    def by_time(self) -> bool:
        """Whether the offsets are looked up by timestamp."""
        return self.kind in ("timestamps", "timestamp")

    def timestamps(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The timestamp to look up for each of ``partitions`` that the spec names."""
        if self.kind == "timestamp":
            return {tp: self.timestamp for tp in partitions if self.timestamp is not None}
        if self.kind == "timestamps":
            return {tp: self.offsets[tp] for tp in partitions if tp in self.offsets}
        return {}


@dataclass(frozen=True)
class SourceOptions:
    """The checked options of one ``rackafka`` read; plain data, picklable."""

    bootstrap_servers: str
    #: ``"subscribe"``, ``"subscribePattern"`` or ``"assign"``.
    strategy: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, int], ...] = ()
    starting: OffsetSpec | None = None
    ending: OffsetSpec | None = None
    max_offsets_per_trigger: int | None = None
    #: ``minOffsetsPerTrigger``: a micro-batch waits for this many new offsets...
    min_offsets_per_trigger: int | None = None
    #: ...or for ``maxTriggerDelay`` (milliseconds) since the last micro-batch.
    max_trigger_delay_ms: int = 15 * 60 * 1000
    #: ``startingOffsetsByTimestampStrategy``: ``"error"`` fails a read whose start
    #: timestamp is after a partition's last record; ``"latest"`` starts it at its end.
    by_timestamp_strategy: Literal["error", "latest"] = "error"
    min_partitions: int | None = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    #: :data:`RACK_FROM_ENV` (the default): each task reads :data:`CLIENT_RACK_ENV` on its
    #: executor; :data:`RACK_AUTO`: that, else the zone the executor detects; ``None``: no
    #: rack; otherwise the rack of every task.
    client_rack: str | None = RACK_FROM_ENV
    poll_timeout_ms: int = 120_000
    offset_retries: int = 3
    offset_retry_interval_ms: int = 10
    metrics_path: str | None = None
    #: About how many offsets one Spark task reads (small ranges are read together).
    offsets_per_task: int = 1_000_000
    #: Spark's ``defaultParallelism`` when the source was registered (set by the source, not
    #: an option): small reads still get this many tasks, so that every core reads; when it
    #: is not known, one task per topic-partition, as Spark's Kafka source.
    default_parallelism: int | None = None
    #: ``maxRecordsPerPartition``: ranges bigger than this are split.
    max_records_per_partition: int | None = None
    #: Keywords for :class:`~rackafka.AIOKafkaConsumer` from the ``kafka.*`` options.
    consumer: Mapping[str, Any] = field(default_factory=dict)
    #: ``kafka.security.protocol``, ``kafka.ssl.*``, ``kafka.sasl.*`` (secrets hidden).
    security: SecuritySettings | None = None
    #: Options accepted and ignored, with why (logged once per process as a WARNING).
    ignored: tuple[tuple[str, str], ...] = ()

    def consumer_kwargs(self) -> dict[str, Any]:
        """Keywords for a consumer of this read, TLS context and credentials included
        (built in the calling process: executors build their own)."""
        return with_security(self.consumer, self.security)

    def starting_or(self, default: str) -> OffsetSpec:
        """``startingOffsets``, or ``default`` when it was not given."""
        return self.starting or OffsetSpec(default)  # type: ignore[arg-type]

    def ending_or(self, default: str) -> OffsetSpec:
        """``endingOffsets``, or ``default`` when it was not given."""
        return self.ending or OffsetSpec(default)  # type: ignore[arg-type]


def resolve_client_rack(
    setting: str | None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The ``client_rack`` a task gives its consumer, given the ``kafka.client.rack`` setting.

    :data:`RACK_FROM_ENV` takes :data:`CLIENT_RACK_ENV` from the environment of the process
    (on Spark: the executor's), and no rack when it is unset or empty. :data:`RACK_AUTO`
    takes that variable too, and when it is unset stays ``"auto"``: the consumer then
    detects its zone (:mod:`rackafka.zones`). Any other value is used as is.
    """
    if setting not in (RACK_FROM_ENV, RACK_AUTO):
        return setting
    env = os.environ if environ is None else environ
    forced = env.get(CLIENT_RACK_ENV, "").strip()
    if forced:
        return forced
    return RACK_AUTO if setting == RACK_AUTO else None


def bool_option(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise InvalidOptionError(f"option {_name(key)} must be 'true' or 'false', not {value!r}")


def int_option(key: str, value: str, minimum: int) -> int:
    text = value.strip()
    # Plain ASCII digits only: int() would also take "1_000" or non-ASCII digits.
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise InvalidOptionError(f"option {_name(key)} must be an integer, not {value!r}")
    number = int(text)
    if number < minimum:
        raise InvalidOptionError(f"option {_name(key)} must be at least {minimum}, not {number}")
    return number


def _json_object(key: str, value: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise InvalidOptionError(
            f"option {_name(key)} is not valid JSON ({exc}): {value!r}"
        ) from None
    if not isinstance(parsed, dict):
        raise InvalidOptionError(f"option {_name(key)} must be a JSON object, not {value!r}")
    return parsed


def _assign(value: str) -> tuple[tuple[str, int], ...]:
    parsed = _json_object("assign", value)
    if not parsed:
        raise InvalidOptionError(f"option assign must name at least one partition, not {value!r}")
    out: list[tuple[str, int]] = []
    for topic, parts in parsed.items():
        if not topic or not isinstance(parts, list) or not parts:
            raise InvalidOptionError(
                f'option assign must look like {{"topicA":[0,1],"topicB":[2]}}, not {value!r}'
            )
        for p in parts:
            if not isinstance(p, int) or isinstance(p, bool) or p < 0:
                raise InvalidOptionError(
                    f"option assign: partition {p!r} of topic {topic!r} is not a partition number"
                )
            out.append((topic, p))
    return tuple(sorted(set(out)))


def _offset_spec(key: str, value: str, allowed: tuple[str, ...]) -> OffsetSpec:
    text = value.strip()
    lowered = text.lower()
    if lowered in ("earliest", "latest"):
        if lowered not in allowed:
            raise InvalidOptionError(f"option {_name(key)} cannot be {lowered!r} for this query")
        return OffsetSpec(lowered)  # type: ignore[arg-type]
    if not text.startswith("{"):
        raise InvalidOptionError(
            f"option {_name(key)} must be 'earliest', 'latest' or JSON offsets per partition "
            f'such as {{"topicA":{{"0":23,"1":-2}}}}, not {value!r}'
        )

    def check(topic: str, partition: int, off: object) -> None:
        if not isinstance(off, int) or isinstance(off, bool) or off < EARLIEST:
            raise InvalidOptionError(
                f"option {_name(key)}: the offset of {topic}-{partition} must be an offset, "
                f"-2 (earliest) or -1 (latest), not {off!r}"
            )

    return OffsetSpec("offsets", _per_partition(key, text, "offsets", 23, check))


def _per_partition(
    key: str, text: str, what: str, example: int, check: Callable[[str, int, object], None]
) -> dict[tuple[str, int], int]:
    """A JSON object of topic -> {partition: value}, by ``(topic, partition)``; ``check``
    refuses a value (InvalidOptionError), ``what`` and ``example`` describe the values."""
    out: dict[tuple[str, int], int] = {}
    for topic, parts in _json_object(key, text).items():
        if not isinstance(parts, dict) or not parts:
            raise InvalidOptionError(
                f"option {_name(key)}: topic {topic!r} must map partitions to {what}, "
                f'as in {{{json.dumps(topic)}:{{"0":{example}}}}}'
            )
        for p, value in parts.items():
            if not (isinstance(p, str) and re.fullmatch(r"[0-9]+", p)):
                raise InvalidOptionError(
                    f"option {_name(key)}: {p!r} of topic {topic!r} is not a partition number"
                )
            check(topic, int(p), value)
            out[(topic, int(p))] = value
    return out


def _timestamps(key: str, value: str) -> OffsetSpec:
    """``{"topicA":{"0":1700000000000}}``: a timestamp (ms) per partition."""

    def check(topic: str, partition: int, ts: object) -> None:
        if not isinstance(ts, int) or isinstance(ts, bool) or ts < 0:
            raise InvalidOptionError(
                f"option {_name(key)}: the timestamp of {topic}-{partition} must be "
                f"milliseconds since the epoch (0 or more), not {ts!r}"
            )

    times = _per_partition(key, value.strip(), "timestamps in milliseconds", 1700000000000, check)
    return OffsetSpec("timestamps", times)


# Spark's time strings (``maxTriggerDelay``): a number and a unit, milliseconds by default.
_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
_TIME_UNITS_MS["d"] = 24 * _TIME_UNITS_MS["h"]


def _duration_ms(key: str, value: str) -> int:
    match = re.fullmatch(r"([0-9]+)\s*([a-z]*)", value.strip().lower())
    if not match or match.group(2) not in (*_TIME_UNITS_MS, ""):
        raise InvalidOptionError(
            f"option {_name(key)} must be a duration such as '15m', '30s' or '500ms', not {value!r}"
        )
    return int(int(match.group(1)) * _TIME_UNITS_MS.get(match.group(2) or "ms", 1))


def _by_time(opts: Mapping[str, str], edge: str) -> OffsetSpec | None:
    """``{edge}Timestamp``, else ``{edge}OffsetsByTimestamp`` (``edge``: ``"starting"`` or
    ``"ending"``); None when neither is given."""
    key = f"{edge}timestamp"
    if key in opts:
        return OffsetSpec("timestamp", timestamp=int_option(key, opts[key], 0))
    key = f"{edge}offsetsbytimestamp"
    if key in opts:
        return _timestamps(key, opts[key])
    return None


def _start_and_end(
    opts: Mapping[str, str], streaming: bool
) -> tuple[OffsetSpec | None, OffsetSpec | None]:
    """``startingOffsets``/``endingOffsets`` and their timestamp forms, which take precedence
    as in Spark: ``*Timestamp`` over ``*OffsetsByTimestamp`` over ``*Offsets``."""
    starting = _by_time(opts, "starting")
    if starting is None and "startingoffsets" in opts:
        allowed = ("earliest", "latest") if streaming else ("earliest",)
        starting = _offset_spec("startingoffsets", opts["startingoffsets"], allowed)
        if not streaming and any(v == LATEST for v in starting.offsets.values()):
            raise InvalidOptionError(
                "option startingOffsets cannot use -1 (latest) in a batch query"
            )
    ends = [
        k for k in ("endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets") if k in opts
    ]
    if ends and streaming:
        raise InvalidOptionError(f"option {_name(ends[0])} is for batch queries only")
    ending = _by_time(opts, "ending")
    if ending is None and "endingoffsets" in opts:
        ending = _offset_spec("endingoffsets", opts["endingoffsets"], ("latest",))
        if any(v == EARLIEST for v in ending.offsets.values()):
            raise InvalidOptionError("option endingOffsets cannot use -2 (earliest)")
    return starting, ending


# Java regular expression syntax that Python's re lacks or reads differently, and what to
# write instead.
_JAVA_ESCAPES = {
    "p": r"\p{...} character classes (write the class out, as in [A-Za-z])",
    "P": r"\P{...} character classes (write the class out, as in [^A-Za-z])",
    "Q": r"\Q...\E quoting (escape each special character with \ instead)",
    "E": r"\Q...\E quoting (escape each special character with \ instead)",
    "k": r"\k<name> back-references (write (?P=name))",
    "z": r"\z (write \Z)",
    "h": r"\h (write [ \t])",
    "H": r"\H (write [^ \t])",
    "R": r"\R (write (?:\r\n|[\n\r]))",
    "X": r"\X grapheme clusters",
    "G": r"\G",
    "e": r"\e (write \x1b)",
    "c": r"\cX control characters (write \xNN)",
}


_JAVA_SYNTAX = re.compile(r"\\(.)|(\(\?<[A-Za-z])")


def _bracket_in_class(pattern: str) -> bool:
    """Whether a character class holds an unescaped ``[``: a union in Java (``[a[b]]``),
    a plain character in Python."""
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if not in_class and c == "[":
            in_class = True
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":  # a leading ] is a character of the class
                i += 1
            continue
        if in_class and c == "[":
            return True
        if in_class and c == "]":
            in_class = False
        i += 1
    return False


def _pattern(value: str) -> str:
    """``subscribePattern``: a Python regular expression matched against whole topic names.

    Spark's source takes a Java regular expression; for topic names the two agree, except
    for syntax that only Java has, which is refused with what to write instead.
    """
    pattern = value.strip()
    if not pattern:
        raise InvalidOptionError("option subscribePattern must not be empty")
    what = ""
    for java in _JAVA_SYNTAX.finditer(pattern):  # escapes, or a Java named group
        escape, named = java.groups()
        what = _JAVA_ESCAPES.get(escape, "") if escape else ""
        if named:
            what = "named groups (?<name>...) (write (?P<name>...))"
        if what:
            break
    if what:
        raise InvalidOptionError(
            f"option subscribePattern {pattern!r} uses Java regular expression syntax that "
            f"Python's re, which rackafka uses, does not have: {what}"
        )
    with warnings.catch_warnings():
        # Python reads Java's [a-z&&[^x]] and [a[b]] as plain characters (and warns).
        warnings.simplefilter("error", FutureWarning)
        try:
            if _bracket_in_class(pattern):
                raise FutureWarning("a [ inside a character class")
            re.compile(pattern)
        except FutureWarning:
            raise InvalidOptionError(
                f"option subscribePattern {pattern!r} uses Java's nested character classes or "
                "class intersection ([a-z&&[^x]], [a[b]]), which Python's re, used by "
                "rackafka, reads as plain characters: write the class out, as in [a-wyz]"
            ) from None
        except re.error as exc:
            raise InvalidOptionError(
                f"option subscribePattern is not a valid Python regular expression ({exc}); "
                "rackafka matches topic names with Python's re, not Java's Pattern"
            ) from None
    return pattern


def kafka_option(table: Table, keyword: str, option: str, value: str) -> Any:
    """The value of ``option`` (setting ``keyword`` of ``table``) given as text, checked.

    Raises:
        InvalidOptionError: the table refused it (the message names the option).
    """
    try:
        return table.from_text(keyword, value, option)
    except KafkaConfigurationError as exc:
        raise InvalidOptionError(*exc.args) from None


def _consumer_option(
    key: str, value: str, consumer: dict[str, Any], ignored: dict[str, str]
) -> None:
    if key in _OWNED_BY_SOURCE:
        raise InvalidOptionError(f"option {key} is not supported: {_OWNED_BY_SOURCE[key]}")
    if key in IGNORED_CONSUMER_OPTIONS:
        ignored[key] = IGNORED_CONSUMER_OPTIONS[key]
        return
    keyword = _CONSUMER_OPTIONS.get(key)
    if keyword is None:
        # Spark hands every kafka.* option to the Java consumer, which only warns about
        # names it does not know; so does this source.
        ignored[key] = "not a Kafka consumer setting rackafka knows"
        return
    consumer[keyword] = kafka_option(CONSUMER, keyword, key, value)


def check_client_options(table: Table, servers: str, kwargs: Mapping[str, Any]) -> None:
    """Check the client keywords of a read or write with ``table`` (the consumer's or the
    producer's): the client's own checks, each message naming the ``kafka.*`` option
    (``kafka.`` + the Java client's name) instead of the keyword.

    Raises:
        InvalidOptionError: the table refused a value or a combination.
    """
    names = {keyword: f"kafka.{s.java}" for keyword, s in table.items() if s.java}
    try:
        table.check({"bootstrap_servers": servers, **kwargs}, names)
    except KafkaConfigurationError as exc:
        raise InvalidOptionError(*exc.args) from None


def lower_options(options: Mapping[str, str]) -> dict[str, str]:
    """The options of a read or write by lower-cased name (as Spark hands them over), a
    missing value as ``""``.

    Raises:
        InvalidOptionError: an option is given twice (in two spellings).
    """
    opts: dict[str, str] = {}
    for raw_key, raw_value in options.items():
        key = str(raw_key).lower()
        if key in opts:
            raise InvalidOptionError(f"option {raw_key} is given twice")
        opts[key] = "" if raw_value is None else str(raw_value)
    return opts


def required_servers(opts: Mapping[str, str]) -> str:
    """``kafka.bootstrap.servers`` of lower-cased options (InvalidOptionError when missing)."""
    servers = opts.get("kafka.bootstrap.servers", "").strip()
    if not servers:
        raise InvalidOptionError("option kafka.bootstrap.servers is required (host:port,...)")
    return servers


def client_rack_option(opts: Mapping[str, str]) -> str | None:
    """``kafka.client.rack`` of lower-cased options (default :data:`RACK_FROM_ENV`)."""
    return opts.get("kafka.client.rack", RACK_FROM_ENV).strip() or None


def with_security(keywords: Mapping[str, Any], security: SecuritySettings | None) -> dict[str, Any]:
    """Client keywords with the TLS context and credentials of ``security`` added (built
    in the calling process: executors build their own)."""
    if security is None:
        return dict(keywords)
    return {**keywords, **security.consumer_kwargs()}


def checked_security(
    table: Table, opts: Mapping[str, str], servers: str, keywords: Mapping[str, Any]
) -> SecuritySettings | None:
    """The security options of a read or write, checked with the client ``keywords`` by
    ``table`` (see :func:`check_client_options`)."""
    security = parse_security(opts, servers)
    check_client_options(table, servers, with_security(keywords, security))
    return security


_warned: set[tuple[str, str]] = set()


def warn_ignored(ignored: Mapping[str, str]) -> None:
    """A WARNING for each ignored option, once per process (queries parse options often)."""
    for key, why in sorted(ignored.items()):
        if (key, why) in _warned:
            continue
        if len(_warned) < 1024:
            _warned.add((key, why))
        log.warning("rackafka source: option %s is ignored: %s", key, why)


def parse_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Check the options of a read and turn them into :class:`SourceOptions`.

    Arguments:
        options: the options given to ``spark.read``/``spark.readStream`` (any case).
        streaming: ``True`` for ``readStream``: ``endingOffsets`` is refused and
            ``startingOffsets`` defaults to ``latest``; batch reads refuse
            ``maxOffsetsPerTrigger``, a ``latest`` start and an ``earliest`` end.

    Raises:
        InvalidOptionError: an option is unknown, missing, or has an invalid value;
            the message names it.
    """
    opts = lower_options(options)

    consumer: dict[str, Any] = {}
    ignored: dict[str, str] = {}
    for key in sorted(opts):
        if key in _SOURCE_OPTIONS or key in SECURITY_OPTIONS:
            continue
        if key.startswith("kafka."):
            _consumer_option(key, opts[key], consumer, ignored)
            continue
        if key in IGNORED_SOURCE_OPTIONS:
            ignored[_name(key)] = IGNORED_SOURCE_OPTIONS[key]
            continue
        # Spark ignores options it does not know (a typo goes unnoticed there): warn.
        ignored[key] = "not an option of the rackafka source (nor of Spark's Kafka source)"

    servers = required_servers(opts)

    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(chosen) != 1:
        raise InvalidOptionError(
            "exactly one of the options assign, subscribe or subscribePattern must be given, "
            f"not {[_name(k) for k in chosen] or 'none'}"
        )
    strategy = chosen[0]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[tuple[str, int], ...] = ()
    if strategy == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in opts["subscribe"].split(",") if t.strip()))
        if not topics:
            raise InvalidOptionError("option subscribe must list at least one topic")
    elif strategy == "subscribepattern":
        pattern = _pattern(opts["subscribepattern"])
    else:
        assigned = _assign(opts["assign"])

    starting, ending = _start_and_end(opts, streaming)
    for spec, key in ((starting, "startingoffsets"), (ending, "endingoffsets")):
        if spec is not None and spec.kind in ("offsets", "timestamps") and strategy == "assign":
            if spec.kind == "timestamps":
                key = key.replace("offsets", "offsetsbytimestamp")
            extra = sorted(set(spec.offsets) - set(assigned))
            if extra:
                raise InvalidOptionError(
                    f"option {_name(key)} names partitions that assign does not: "
                    + ", ".join(f"{t}-{p}" for t, p in extra)
                )

    max_per_trigger = min_per_trigger = None
    delay_ms = 15 * 60 * 1000
    if streaming:
        if "maxoffsetspertrigger" in opts:
            max_per_trigger = int_option("maxoffsetspertrigger", opts["maxoffsetspertrigger"], 1)
        if "minoffsetspertrigger" in opts:
            min_per_trigger = int_option("minoffsetspertrigger", opts["minoffsetspertrigger"], 1)
        if "maxtriggerdelay" in opts:
            delay_ms = _duration_ms("maxtriggerdelay", opts["maxtriggerdelay"])
        if min_per_trigger and max_per_trigger and min_per_trigger > max_per_trigger:
            raise InvalidOptionError(
                f"option minOffsetsPerTrigger ({min_per_trigger}) is higher than "
                f"maxOffsetsPerTrigger ({max_per_trigger})"
            )
    else:  # as Spark: a warning, and the batch reads its whole range
        for key in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay"):
            if key in opts:
                ignored[_name(key)] = "for streaming queries only"
    by_ts_strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if by_ts_strategy not in ("error", "latest"):
        raise InvalidOptionError(
            "option startingOffsetsByTimestampStrategy must be 'error' or 'latest', "
            f"not {opts['startingoffsetsbytimestampstrategy']!r}"
        )
    min_partitions = None
    if "minpartitions" in opts:
        min_partitions = int_option("minpartitions", opts["minpartitions"], 1)

    security = checked_security(CONSUMER, opts, servers, consumer)

    warn_ignored(ignored)
    return SourceOptions(
        ignored=tuple(sorted(ignored.items())),
        bootstrap_servers=servers,
        strategy=_name(strategy),
        topics=topics,
        pattern=pattern,
        assigned=assigned,
        starting=starting,
        ending=ending,
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=delay_ms,
        by_timestamp_strategy=by_ts_strategy,  # type: ignore[arg-type]
        min_partitions=min_partitions,
        include_headers=bool_option("includeheaders", opts.get("includeheaders", "false")),
        fail_on_data_loss=bool_option("failondataloss", opts.get("failondataloss", "true")),
        client_rack=client_rack_option(opts),
        poll_timeout_ms=int_option(
            "kafkaconsumer.polltimeoutms", opts.get("kafkaconsumer.polltimeoutms", "120000"), 1
        ),
        offset_retries=int_option(
            "fetchoffset.numretries", opts.get("fetchoffset.numretries", "3"), 0
        ),
        offset_retry_interval_ms=int_option(
            "fetchoffset.retryintervalms", opts.get("fetchoffset.retryintervalms", "10"), 0
        ),
        metrics_path=opts.get("rackafka.metricspath") or None,
        offsets_per_task=int_option(
            "rackafka.offsetspertask", opts.get("rackafka.offsetspertask", "1000000"), 1
        ),
        max_records_per_partition=int_option(
            "maxrecordsperpartition", opts["maxrecordsperpartition"], 1
        )
        if "maxrecordsperpartition" in opts
        else None,
        consumer=consumer,
        security=security,
    )
