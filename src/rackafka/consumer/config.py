"""The consumer's settings: the shared client table (:data:`rackafka.config.CLIENT`) and the
consumer's own (fetch, group, offsets), with the rules between them.

:class:`~rackafka.AIOKafkaConsumer` and the Spark source check their arguments with
:data:`CONSUMER`; the defaults are aiokafka 0.14's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rackafka._version import __version__
from rackafka.config import (
    CLIENT,
    Callback,
    Choice,
    Count,
    Flag,
    Kind,
    Millis,
    Setting,
    Settings,
    Text,
)
from rackafka.errors import KafkaConfigurationError
from rackafka.group.strategy import resolve_assignors
from rackafka.subscription import EARLIEST, LATEST, NONE

__all__ = ["CONSUMER", "ISOLATION_LEVELS", "OFFSET_RESETS"]

#: ``isolation_level`` values.
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
#: ``auto_offset_reset`` values.
OFFSET_RESETS = (EARLIEST, LATEST, NONE)


class _Assignors(Kind):
    """``partition_assignment_strategy``: what :func:`resolve_assignors` takes (kept as
    given: the group protocol rule looks at it)."""

    describe = "assignor names, classes or instances (a list in order of preference) or None"

    def check(self, value: Any, name: str) -> Any:
        resolve_assignors(value)
        return value


#: The settings the fetcher takes (``isolation_level`` as the fetcher's constant).
FETCHER_SETTINGS = (
    "client_rack",
    "fetch_min_bytes",
    "fetch_max_bytes",
    "fetch_max_wait_ms",
    "max_partition_fetch_bytes",
    "check_crcs",
    "retry_backoff_ms",
    "retry_backoff_max_ms",
    "metadata_max_age_ms",
    "consumer_timeout_ms",
    "key_deserializer",
    "value_deserializer",
    "record_tuples",
)
#: The settings the group membership takes (and ``assignors``, made of
#: ``partition_assignment_strategy``).
GROUP_SETTINGS = (
    "group_id",
    "group_instance_id",
    "session_timeout_ms",
    "rebalance_timeout_ms",
    "heartbeat_interval_ms",
    "max_poll_interval_ms",
    "retry_backoff_ms",
    "retry_backoff_max_ms",
    "enable_auto_commit",
    "auto_commit_interval_ms",
    "client_rack",
    "exclude_internal_topics",
)


def check_topics(topics: tuple[Any, ...]) -> None:
    """The topics given to the constructor: non-empty strings.

    Raises:
        TypeError: one is not a str (as aiokafka: a list given as the one positional
            argument).
        KafkaConfigurationError: one is empty.
    """
    for t in topics:
        if not isinstance(t, str):
            raise TypeError(
                f"topics must be strings given as separate arguments "
                f"(AIOKafkaConsumer('a', 'b', ...)), not {t!r}"
            )
        if not t:
            raise KafkaConfigurationError("topics must be non-empty strings, not ''")


#: Settings of the classic protocol that the consumer protocol refuses (as Java does), with
#: their defaults: the coordinator assigns and sets the session and heartbeat times.
_CLASSIC_ONLY = {
    "partition_assignment_strategy": None,
    "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 3000,
}


def _group_rules(s: Settings, shown: Callable[[str], str]) -> None:
    if s["group_instance_id"] is not None and s["group_id"] is None:
        raise KafkaConfigurationError(f"{shown('group_instance_id')} needs a {shown('group_id')}")
    if s["record_tuples"] and (
        s["key_deserializer"] is not None or s["value_deserializer"] is not None
    ):
        raise KafkaConfigurationError(
            f"{shown('record_tuples')} cannot be used with {shown('key_deserializer')} or "
            f"{shown('value_deserializer')}"
        )
    heartbeat, session = s["heartbeat_interval_ms"], s["session_timeout_ms"]
    if s["group_id"] is not None and heartbeat >= session:
        raise KafkaConfigurationError(
            f"{shown('heartbeat_interval_ms')} ({heartbeat}) must be lower than "
            f"{shown('session_timeout_ms')} ({session})"
        )
    protocol = s["group_protocol"]
    if s["rebalance_timeout_ms"] is None:
        # As aiokafka: session_timeout_ms (with the consumer protocol, as Java:
        # max_poll_interval_ms, an int on the wire).
        s["rebalance_timeout_ms"] = (
            math.ceil(s["max_poll_interval_ms"]) if protocol == "consumer" else session
        )
    if s["group_remote_assignor"] is not None and protocol != "consumer":
        raise KafkaConfigurationError(
            f"{shown('group_remote_assignor')} needs {shown('group_protocol')}='consumer' (the "
            "classic protocol assigns on the client: use "
            f"{shown('partition_assignment_strategy')})"
        )
    if protocol == "consumer":
        for name, default in _CLASSIC_ONLY.items():
            if s[name] != default:
                raise KafkaConfigurationError(
                    f"{shown(name)} is not supported with {shown('group_protocol')}='consumer': "
                    "the group coordinator assigns partitions and sets the session timeout and "
                    "heartbeat interval (choose its assignor with "
                    f"{shown('group_remote_assignor')})"
                )


#: Every setting of the consumer: the shared ones and these.
CONSUMER = CLIENT.extend(
    [
        Setting("client_id", Text(empty=True), "rackafka-" + __version__, "client.id"),
        Setting("group_id", Text(), None, "group.id"),
        Setting("group_instance_id", Text(), None, "group.instance.id"),
        Setting("key_deserializer", Callback(), None, "key.deserializer"),
        Setting("value_deserializer", Callback(), None, "value.deserializer"),
        Setting("fetch_max_wait_ms", Count(zero=True), 500, "fetch.max.wait.ms"),
        Setting("fetch_max_bytes", Count(), 52428800, "fetch.max.bytes"),
        Setting("fetch_min_bytes", Count(zero=True), 1, "fetch.min.bytes"),
        Setting("max_partition_fetch_bytes", Count(), 1048576, "max.partition.fetch.bytes"),
        Setting(
            "auto_offset_reset",
            Choice(*OFFSET_RESETS, fold=str.lower),  # as aiokafka: any case
            "latest",
            "auto.offset.reset",
        ),
        Setting("enable_auto_commit", Flag(), True, "enable.auto.commit"),
        Setting("auto_commit_interval_ms", Millis(), 5000, "auto.commit.interval.ms"),
        Setting("check_crcs", Flag(), True, "check.crcs"),
        Setting(
            "partition_assignment_strategy", _Assignors(), None, "partition.assignment.strategy"
        ),
        Setting("max_poll_interval_ms", Millis(), 300000, "max.poll.interval.ms"),
        # None: session_timeout_ms (with the consumer protocol: max_poll_interval_ms).
        Setting("rebalance_timeout_ms", Count(none=True), None),
        Setting("session_timeout_ms", Count(), 10000, "session.timeout.ms"),
        Setting("heartbeat_interval_ms", Millis(), 3000, "heartbeat.interval.ms"),
        Setting("consumer_timeout_ms", Millis(zero=True), 200),
        Setting("max_poll_records", Count(none=True, strict=True), None, "max.poll.records"),
        Setting("exclude_internal_topics", Flag(), True, "exclude.internal.topics"),
        Setting(
            "isolation_level",
            Choice(*ISOLATION_LEVELS, prefix="Incorrect isolation level {value}: "),
            "read_uncommitted",
            "isolation.level",
        ),
        Setting("record_tuples", Flag(strict=True), False),
        Setting(
            "group_protocol",
            Choice("classic", "consumer", fold=str.lower),
            "classic",
            "group.protocol",
        ),
        Setting("group_remote_assignor", Text(), None, "group.remote.assignor"),
        Setting("allow_auto_create_topics", Flag(), True, "allow.auto.create.topics"),
    ],
    [_group_rules],
)
