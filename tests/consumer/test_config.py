"""AIOKafkaConsumer's constructor: aiokafka 0.14's keywords and defaults, and clear errors.

The keyword list and defaults below were read from aiokafka 0.14.0's
``aiokafka/consumer/consumer.py`` (``AIOKafkaConsumer.__init__``), so that a test fails
if rackafka drops, renames or changes the default of any argument aiokafka users pass.
No cluster is needed: every check happens at construction.
"""

from __future__ import annotations

import inspect
import ssl
import warnings
from typing import Any

import pytest

import rackafka
from rackafka import AIOKafkaConsumer
from rackafka.errors import KafkaConfigurationError

#: aiokafka 0.14.0 AIOKafkaConsumer keyword arguments and their defaults, in order.
#: ``client_id`` (``"aiokafka-<version>"``) and ``partition_assignment_strategy``
#: (``(RoundRobinPartitionAssignor,)``) are aiokafka-specific and checked separately.
AIOKAFKA_014_KEYWORDS: dict[str, Any] = {
    "loop": None,
    "bootstrap_servers": "localhost",
    "client_id": ...,
    "group_id": None,
    "group_instance_id": None,
    "key_deserializer": None,
    "value_deserializer": None,
    "fetch_max_wait_ms": 500,
    "fetch_max_bytes": 52428800,
    "fetch_min_bytes": 1,
    "max_partition_fetch_bytes": 1048576,
    "request_timeout_ms": 40000,
    "retry_backoff_ms": 100,
    "auto_offset_reset": "latest",
    "enable_auto_commit": True,
    "auto_commit_interval_ms": 5000,
    "check_crcs": True,
    "metadata_max_age_ms": 300000,
    "partition_assignment_strategy": ...,
    "max_poll_interval_ms": 300000,
    "rebalance_timeout_ms": None,
    "session_timeout_ms": 10000,
    "heartbeat_interval_ms": 3000,
    "consumer_timeout_ms": 200,
    "max_poll_records": None,
    "ssl_context": None,
    "security_protocol": "PLAINTEXT",
    "api_version": None,
    "exclude_internal_topics": True,
    "connections_max_idle_ms": 540000,
    "isolation_level": "read_uncommitted",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_password": None,
    "sasl_plain_username": None,
    "sasl_kerberos_service_name": "kafka",
    "sasl_kerberos_domain_name": None,
    "sasl_oauth_token_provider": None,
    "client_rack": None,
}

BOOTSTRAP = "127.0.0.1:9"  # never contacted: nothing here calls start()


def make(**kwargs: Any) -> AIOKafkaConsumer[Any, Any]:
    kwargs.setdefault("bootstrap_servers", BOOTSTRAP)
    return AIOKafkaConsumer(**kwargs)


def config_error(**kwargs: Any) -> str:
    """The message of the KafkaConfigurationError raised by constructing with ``kwargs``."""
    with pytest.raises(KafkaConfigurationError) as info:
        make(**kwargs)
    return str(info.value)


# -- the signature ------------------------------------------------------------------


def test_signature_has_every_aiokafka_keyword_with_its_default() -> None:
    params = inspect.signature(AIOKafkaConsumer.__init__).parameters
    names = list(params)
    assert names[0] == "self"
    assert params["topics"].kind is inspect.Parameter.VAR_POSITIONAL
    keywords = {n: p for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    missing = set(AIOKAFKA_014_KEYWORDS) - set(keywords)
    assert not missing, f"aiokafka keywords missing: {sorted(missing)}"
    for name, default in AIOKAFKA_014_KEYWORDS.items():
        if default is ...:
            continue
        assert keywords[name].default == default, name
        assert type(keywords[name].default) is type(default), name
    # Extra keywords are allowed only with a default (aiokafka code never passes them).
    for name in set(keywords) - set(AIOKAFKA_014_KEYWORDS):
        assert keywords[name].default is not inspect.Parameter.empty, name


def test_aiokafka_keyword_order_is_kept() -> None:
    params = [
        n
        for n, p in inspect.signature(AIOKafkaConsumer.__init__).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and n in AIOKAFKA_014_KEYWORDS
    ]
    assert params == list(AIOKAFKA_014_KEYWORDS)


def test_client_id_default_is_ours() -> None:
    default = inspect.signature(AIOKafkaConsumer.__init__).parameters["client_id"].default
    assert default == f"rackafka-{rackafka.__version__}"


def test_defaults_construct_without_a_running_loop() -> None:
    consumer = make()
    assert consumer.client_rack is None
    assert consumer.assignment() == set()
    assert consumer.subscription() == set()


def test_every_keyword_accepts_its_aiokafka_default_explicitly() -> None:
    kwargs = {k: v for k, v in AIOKAFKA_014_KEYWORDS.items() if v is not ... and k != "loop"}
    kwargs["bootstrap_servers"] = BOOTSTRAP
    make(**kwargs)


def test_valid_non_default_values_are_accepted() -> None:
    consumer = make(
        bootstrap_servers=["127.0.0.1:9", "[::1]:9093", "localhost"],
        client_id="me",
        key_deserializer=bytes,
        value_deserializer=lambda v: v,
        fetch_max_wait_ms=0,
        fetch_max_bytes=1,
        fetch_min_bytes=0,
        max_partition_fetch_bytes=1,
        request_timeout_ms=1,
        retry_backoff_ms=0,
        auto_offset_reset="earliest",
        check_crcs=False,
        metadata_max_age_ms=1,
        consumer_timeout_ms=0,
        max_poll_records=1,
        exclude_internal_topics=False,
        connections_max_idle_ms=1,
        isolation_level="read_committed",
        client_rack="az-a",
    )
    assert consumer.client_rack == "az-a"
    make(auto_offset_reset="none")


def test_connections_max_idle_ms_none_disables_idle_checks() -> None:
    # aiokafka: "Specifying None will disable idle checks".
    make(connections_max_idle_ms=None)


def test_loop_argument_is_deprecated_not_fatal() -> None:
    # aiokafka 0.14 still accepts loop= with a DeprecationWarning.
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        with pytest.warns(DeprecationWarning, match="loop"):
            make(loop=loop)
    finally:
        loop.close()


def test_group_keywords_without_group_are_ignored_like_aiokafka() -> None:
    # Without group_id aiokafka ignores the group settings; code that passes them
    # (enable_auto_commit=False is very common with assign()) must keep working.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make(
            enable_auto_commit=False,
            auto_commit_interval_ms=1000,
            max_poll_interval_ms=60000,
            session_timeout_ms=30000,
            heartbeat_interval_ms=1000,
        )


def test_constructor_topics() -> None:
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer("a", "b", bootstrap_servers=BOOTSTRAP)
    assert consumer.subscription() == {"a", "b"}


# -- bad values -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["smallest", "earliest ", "", None, 1])
def test_bad_auto_offset_reset(value: Any) -> None:
    msg = config_error(auto_offset_reset=value)
    assert "auto_offset_reset" in msg
    for allowed in ("earliest", "latest", "none"):
        assert allowed in msg


@pytest.mark.parametrize("value", ["committed", "READ_COMMITTED", 1, None])
def test_bad_isolation_level(value: Any) -> None:
    msg = config_error(isolation_level=value)
    assert "isolation_level" in msg
    assert "read_uncommitted" in msg and "read_committed" in msg


POSITIVE = [
    "fetch_max_bytes",
    "max_partition_fetch_bytes",
    "request_timeout_ms",
    "metadata_max_age_ms",
    "connections_max_idle_ms",
    "auto_commit_interval_ms",
    "max_poll_interval_ms",
    "session_timeout_ms",
    "heartbeat_interval_ms",
    "max_poll_records",
]
NON_NEGATIVE = ["fetch_max_wait_ms", "fetch_min_bytes", "retry_backoff_ms", "consumer_timeout_ms"]


@pytest.mark.parametrize("name", POSITIVE)
@pytest.mark.parametrize("value", [0, -1])
def test_positive_ints_refuse_zero_and_negative(name: str, value: int) -> None:
    msg = config_error(**{name: value})
    assert name in msg and str(value) in msg
    assert "> 0" in msg


@pytest.mark.parametrize("name", NON_NEGATIVE)
def test_non_negative_ints_refuse_negative(name: str) -> None:
    msg = config_error(**{name: -5})
    assert name in msg and "-5" in msg and ">= 0" in msg
    make(**{name: 0})


# Durations the client only waits for: aiokafka accepts a fractional float for them (and
# runs with it); the others are sent on the wire as 32-bit ints (aiokafka fails on a
# fractional float there only once it encodes the request: refused at construction here).
DURATIONS = [
    "request_timeout_ms",
    "metadata_max_age_ms",
    "connections_max_idle_ms",
    "auto_commit_interval_ms",
    "max_poll_interval_ms",
    "heartbeat_interval_ms",
    "retry_backoff_ms",
    "consumer_timeout_ms",
]
WIRE_INTS = [n for n in POSITIVE + NON_NEGATIVE if n not in DURATIONS and n != "max_poll_records"]


@pytest.mark.parametrize("name", DURATIONS + WIRE_INTS)
@pytest.mark.parametrize("value", ["100", True, None, float("nan")])
def test_numbers_refuse_other_types(name: str, value: Any) -> None:
    if value is None and name == "connections_max_idle_ms":
        return  # None turns idle checks off, as in aiokafka
    msg = config_error(**{name: value})
    assert name in msg


@pytest.mark.parametrize("name", [*WIRE_INTS, "rebalance_timeout_ms"])
def test_wire_ints_refuse_fractions(name: str) -> None:
    msg = config_error(**{name: 1500.5})
    assert name in msg and "int" in msg
    make(**{name: 1500.0})  # a float with an integral value is fine


@pytest.mark.parametrize("name", DURATIONS)
def test_durations_accept_fractional_floats_as_aiokafka(name: str) -> None:
    # heartbeat_interval_ms must stay below session_timeout_ms (10000 by default).
    value = 2500.5 if name == "heartbeat_interval_ms" else 15000.5
    make(**{name: value})
    make(group_id="g", **{name: value})


@pytest.mark.parametrize(
    "servers",
    [
        "",
        " , ",
        [],
        "host:port",
        "host:0",
        "host:70000",
        "[::1",
        "[::1]x",
        ":9092",
        123,
        [None],
        ["127.0.0.1:9092", 5],
        b"localhost:9092",
    ],
)
def test_bad_bootstrap_servers(servers: Any) -> None:
    msg = config_error(bootstrap_servers=servers)
    assert "bootstrap_servers" in msg


@pytest.mark.parametrize("name", ["key_deserializer", "value_deserializer"])
@pytest.mark.parametrize("value", ["json", 1, b"x"])
def test_non_callable_deserializers(name: str, value: Any) -> None:
    msg = config_error(**{name: value})
    assert name in msg and "callable" in msg


@pytest.mark.parametrize("value", [1, b"az-a", ["az-a"]])
def test_client_rack_must_be_a_string(value: Any) -> None:
    msg = config_error(client_rack=value)
    assert "client_rack" in msg and "str" in msg


@pytest.mark.parametrize("value", [1, b"me"])
def test_client_id_must_be_a_string(value: Any) -> None:
    msg = config_error(client_id=value)
    assert "client_id" in msg


@pytest.mark.parametrize("value", ["auto", "2.4.0", (0, 10)])
def test_api_version_is_deprecated_and_ignored_as_in_aiokafka(value: Any) -> None:
    with pytest.warns(DeprecationWarning, match="api_version"):
        make(api_version=value)


def test_an_empty_constructor_topic() -> None:
    with pytest.raises(KafkaConfigurationError, match="topics"):
        AIOKafkaConsumer("", bootstrap_servers=BOOTSTRAP)


@pytest.mark.parametrize("topic", [["a", "b"], ("a",), {"a"}, 5, None])
def test_a_constructor_topic_that_is_no_string_is_a_type_error(topic: Any) -> None:
    # As aiokafka: AIOKafkaConsumer(["a", "b"]) (a list as the one positional) is a TypeError.
    with pytest.raises(TypeError, match="topics"):
        AIOKafkaConsumer(topic, bootstrap_servers=BOOTSTRAP)


# -- security arguments ------------------------------------------------------------------

SECRET = "s3cr3t-pa55"


class _Tokens:
    async def token(self) -> str:
        return "t"


SECURITY_ERRORS = [
    ({"security_protocol": "TLS"}, "security_protocol"),
    ({"security_protocol": "SSL"}, "ssl_context"),
    ({"security_protocol": "SASL_SSL"}, "ssl_context"),
    ({"security_protocol": "SSL", "ssl_context": object()}, "ssl_context"),
    ({"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "NTLM"}, "sasl_mechanism"),
    ({"security_protocol": "SASL_PLAINTEXT"}, "sasl_plain_username"),
    (
        {"security_protocol": "SASL_PLAINTEXT", "sasl_plain_password": SECRET},
        "sasl_plain_username",
    ),
    (
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_plain_username": "alice",
        },
        "sasl_plain_password",
    ),
    (
        {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
        "sasl_oauth_token_provider",
    ),
    (
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER",
            "sasl_oauth_token_provider": object(),
        },
        "sasl_oauth_token_provider",
    ),
]


@pytest.mark.parametrize(("kwargs", "named"), SECURITY_ERRORS)
def test_bad_security_arguments_name_the_argument(kwargs: dict, named: str) -> None:
    with pytest.raises(ValueError) as info:  # aiokafka raises ValueError too
        make(**kwargs)
    assert isinstance(info.value, KafkaConfigurationError)
    assert named in str(info.value)
    assert SECRET not in str(info.value)


def test_gssapi_without_its_extra_names_the_extra() -> None:
    try:
        import gssapi  # noqa: F401
    except ImportError:
        msg = config_error(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI")
        assert "rackafka[gssapi]" in msg
    else:  # pragma: no cover - only where the extra is installed
        make(security_protocol="SASL_PLAINTEXT", sasl_mechanism="GSSAPI")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"security_protocol": "SSL", "ssl_context": ssl.create_default_context()},
        {
            "security_protocol": "SASL_SSL",
            "ssl_context": ssl.create_default_context(),
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "alice",
            "sasl_plain_password": SECRET,
        },
        {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "OAUTHBEARER",
            "sasl_oauth_token_provider": _Tokens(),
        },
        # As aiokafka: SASL settings are ignored without SASL.
        {"sasl_plain_username": "alice", "sasl_plain_password": SECRET},
    ],
)
def test_valid_security_arguments_are_accepted_and_never_shown(kwargs: dict) -> None:
    consumer = make(**kwargs)
    assert SECRET not in repr(consumer)
    assert kwargs.get("security_protocol", "PLAINTEXT") in repr(consumer)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"group_id": ""}, "group_id"),
        ({"group_id": 5}, "group_id"),
        ({"group_instance_id": "i-1"}, "group_instance_id"),
        ({"group_id": "g", "group_instance_id": ""}, "group_instance_id"),
        (
            {"group_id": "g", "partition_assignment_strategy": (object,)},
            "partition_assignment_strategy",
        ),
        (
            {"group_id": "g", "partition_assignment_strategy": ("nope",)},
            "partition_assignment_strategy",
        ),
        ({"group_id": "g", "partition_assignment_strategy": ()}, "partition_assignment_strategy"),
        ({"group_id": "g", "rebalance_timeout_ms": 0}, "rebalance_timeout_ms"),
        (
            {"group_id": "g", "heartbeat_interval_ms": 10000, "session_timeout_ms": 10000},
            "heartbeat_interval_ms",
        ),
    ],
)
def test_bad_group_configuration_names_the_argument(kwargs: dict, named: str) -> None:
    assert named in config_error(**kwargs)


def test_group_configuration_is_accepted() -> None:
    make(
        group_id="g",
        group_instance_id="i-1",
        partition_assignment_strategy=("cooperative-sticky", "range"),
        rebalance_timeout_ms=10000,
    )


def test_errors_are_kafka_errors() -> None:
    # KafkaConfigurationError is aiokafka's configuration error (a KafkaError).
    with pytest.raises(rackafka.errors.KafkaError):
        make(fetch_max_bytes=0)
