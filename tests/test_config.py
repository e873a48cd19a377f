"""The one table of client settings (``rackafka.config``): the consumer, the producer, the
doctor and the Spark source and sink accept the same values and refuse the same values with
the same words (Spark naming its option where the constructors name their keyword)."""

from __future__ import annotations

import ast
import inspect
import ssl
import warnings
from pathlib import Path
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, AIOKafkaProducer
from rackafka.config import CLIENT, SECURITY, Table, parse_bootstrap_servers
from rackafka.consumer.config import CONSUMER
from rackafka.errors import KafkaConfigurationError
from rackafka.producer.config import PRODUCER
from rackafka.spark.errors import InvalidOptionError
from rackafka.spark.options import CLIENT_OPTIONS, parse_options
from rackafka.spark.sink import parse_sink_options

SRC = Path(__file__).resolve().parents[1] / "src" / "rackafka"
SERVERS = "127.0.0.1:9"  # never contacted: nothing here starts a client


def message(exc: BaseException) -> str:
    """The message of a configuration error, without the class name ``str()`` puts first."""
    assert isinstance(exc, KafkaConfigurationError), exc
    return str(exc.args[0])


def consumer_error(**kwargs: Any) -> str:
    kwargs.setdefault("bootstrap_servers", SERVERS)
    with pytest.raises(KafkaConfigurationError) as info:
        AIOKafkaConsumer(**kwargs)
    return message(info.value)


def producer_error(**kwargs: Any) -> str:
    kwargs.setdefault("bootstrap_servers", SERVERS)
    with pytest.raises(KafkaConfigurationError) as info:
        AIOKafkaProducer(**kwargs)
    return message(info.value)


def source_error(**options: str) -> str:
    options.setdefault("kafka.bootstrap.servers", SERVERS)
    with pytest.raises(InvalidOptionError) as info:
        parse_options({"subscribe": "t", **options}, streaming=False)
    return message(info.value)


def sink_error(**options: str) -> str:
    options.setdefault("kafka.bootstrap.servers", SERVERS)
    with pytest.raises(InvalidOptionError) as info:
        parse_sink_options({"topic": "t", **options})
    return message(info.value)


def option(keyword: str) -> str:
    """The Spark option of a keyword: ``kafka.`` + the Java client's name."""
    java = CONSUMER[keyword].java if keyword in CONSUMER else PRODUCER[keyword].java
    assert java is not None, keyword
    return f"kafka.{java}"


# -- the table is what the constructors take ----------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "table"), [(AIOKafkaConsumer, CONSUMER), (AIOKafkaProducer, PRODUCER)]
)
def test_the_table_has_every_keyword_with_the_constructors_default(cls: type, table: Table) -> None:
    params = {
        n: p
        for n, p in inspect.signature(cls.__init__).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert set(params) == set(table)
    for name, param in params.items():
        assert param.default is table[name].default or param.default == table[name].default, name


def test_both_roles_extend_the_shared_table() -> None:
    for table in (CONSUMER, PRODUCER):
        assert set(CLIENT) <= set(table)
        for name in set(CLIENT) - {"client_id"}:  # the roles' client ids differ, as aiokafka's
            assert table[name] == CLIENT[name], name
    assert set(SECURITY) <= set(CLIENT) and len(SECURITY) == 8


def test_every_kind_describes_itself() -> None:
    for table in (CONSUMER, PRODUCER):
        for setting in table.values():
            assert setting.kind.describe and setting.kind.describe != "any value", setting.name


# -- the same bad value, the same words ----------------------------------------------------------

#: (keyword, a bad value, the same value as a Spark option's text) for settings both roles take.
SHARED_BAD = [
    ("request_timeout_ms", 0, "0"),
    ("request_timeout_ms", -1, "-1"),
    ("request_timeout_ms", 2**31, "2147483648"),
    ("metadata_max_age_ms", 0, "0"),
    ("metadata_max_age_ms", -300, "-300"),
    ("retry_backoff_ms", -1, "-1"),
    ("retry_backoff_max_ms", -1, "-1"),
    ("retry_backoff_max_ms", 2**31, "2147483648"),
    ("reconnect_backoff_ms", -1, "-1"),
    ("reconnect_backoff_max_ms", -5, "-5"),
    ("connections_max_idle_ms", 0, "0"),
    ("connections_max_idle_ms", -1, "-1"),
]
#: Bad values with no text form (a type no option can give).
SHARED_BAD_TYPES = [
    ("request_timeout_ms", "40000"),
    ("request_timeout_ms", True),
    ("request_timeout_ms", float("nan")),
    ("metadata_max_age_ms", None),
    ("retry_backoff_ms", float("inf")),
    ("retry_backoff_max_ms", 1.5),
    ("reconnect_backoff_ms", "50"),
    ("reconnect_backoff_max_ms", None),
    ("connections_max_idle_ms", "never"),
    ("client_id", 5),
    ("client_id", b"me"),
    ("client_rack", 5),
    ("client_rack", ["az-a"]),
    ("bootstrap_servers", 123),
    ("bootstrap_servers", ["127.0.0.1:9092", 5]),
    ("security_protocol", "TLS"),
    ("ssl_context", object()),
]


@pytest.mark.parametrize(("keyword", "value", "text"), SHARED_BAD)
def test_shared_settings_refuse_alike_everywhere(keyword: str, value: Any, text: str) -> None:
    words = consumer_error(**{keyword: value})
    assert keyword in words
    assert producer_error(**{keyword: value}) == words
    spark_words = words.replace(keyword, option(keyword))
    assert source_error(**{option(keyword): text}) == spark_words
    assert sink_error(**{option(keyword): text}) == spark_words


@pytest.mark.parametrize(("keyword", "value"), SHARED_BAD_TYPES)
def test_shared_settings_refuse_other_types_alike(keyword: str, value: Any) -> None:
    words = consumer_error(**{keyword: value})
    assert keyword in words
    assert producer_error(**{keyword: value}) == words
    with pytest.raises(KafkaConfigurationError) as info:
        CLIENT.check({keyword: value})
    assert message(info.value) == words


@pytest.mark.parametrize("servers", ["host:port", "host:0", "[::1", "[::1]x", ":9092", " , "])
def test_bad_bootstrap_servers_alike_everywhere(servers: str) -> None:
    words = consumer_error(bootstrap_servers=servers)
    assert "bootstrap_servers" in words
    assert producer_error(bootstrap_servers=servers) == words
    spark_words = words.replace("bootstrap_servers", "kafka.bootstrap.servers")
    assert source_error(**{"kafka.bootstrap.servers": servers}) == spark_words
    assert sink_error(**{"kafka.bootstrap.servers": servers}) == spark_words


@pytest.mark.parametrize(
    "kwargs",
    [
        {"security_protocol": "SSL"},
        {"security_protocol": "SASL_PLAINTEXT"},
        {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "NTLM"},
        {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER"},
        {"security_protocol": "SASL_PLAINTEXT", "sasl_plain_username": "u"},
    ],
)
def test_security_arguments_refused_alike(kwargs: dict[str, Any]) -> None:
    assert consumer_error(**kwargs) == producer_error(**kwargs)


CONSUMER_BAD = [
    ("fetch_max_bytes", 0, "0"),
    ("fetch_min_bytes", -1, "-1"),
    ("fetch_max_wait_ms", -1, "-1"),
    ("max_partition_fetch_bytes", 0, "0"),
    ("max_poll_records", 0, "0"),
    ("isolation_level", "committed", "committed"),
]


@pytest.mark.parametrize(("keyword", "value", "text"), CONSUMER_BAD)
def test_consumer_settings_refuse_alike_in_the_spark_source(
    keyword: str, value: Any, text: str
) -> None:
    words = consumer_error(**{keyword: value})
    assert source_error(**{option(keyword): text}) == words.replace(keyword, option(keyword))


PRODUCER_BAD = [
    ("acks", "most", "most"),
    ("compression_type", "brotli", "brotli"),
    ("linger_ms", -1, "-1"),
    ("max_batch_size", 0, "0"),
    ("max_request_size", 0, "0"),
]


@pytest.mark.parametrize(("keyword", "value", "text"), PRODUCER_BAD)
def test_producer_settings_refuse_alike_in_the_spark_sink(
    keyword: str, value: Any, text: str
) -> None:
    words = producer_error(**{keyword: value})
    assert sink_error(**{option(keyword): text}) == words.replace(keyword, option(keyword))


def test_rules_between_settings_name_the_options_in_spark() -> None:
    words = producer_error(enable_idempotence=True, acks=1)
    assert words == "acks=1 not supported with enable_idempotence=True: use 'all'"
    assert sink_error(**{"kafka.enable.idempotence": "true", "kafka.acks": "1"}) == (
        "kafka.acks=1 not supported with kafka.enable.idempotence=True: use 'all'"
    )


def test_the_doctor_checks_with_the_table() -> None:
    import asyncio

    from rackafka.doctor import run_doctor

    for kwargs, words in [
        ({"bootstrap_servers": "host:port"}, consumer_error(bootstrap_servers="host:port")),
        ({"security_protocol": "TLS"}, consumer_error(security_protocol="TLS")),
    ]:
        servers = kwargs.pop("bootstrap_servers", SERVERS)
        with pytest.raises(KafkaConfigurationError) as info:
            asyncio.run(run_doctor(servers, ["t"], client_rack="az-a", **kwargs))
        assert message(info.value) == words


# -- the same good value, the same result --------------------------------------------------------


@pytest.mark.parametrize("rack", ["", None])
def test_an_empty_client_rack_is_no_rack_in_both_roles(rack: str | None) -> None:
    """Java's client.rack defaults to "": no rack. So do both roles, and the Spark options."""
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=SERVERS, client_rack=rack
    )
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=SERVERS, client_rack=rack
    )
    assert consumer.client_rack is None and producer.client_rack is None
    assert consumer._fetcher_args["client_rack"] is None
    assert CLIENT.check({"client_rack": rack})["client_rack"] is None


@pytest.mark.parametrize(
    ("keyword", "value", "used"),
    [
        ("request_timeout_ms", 30e3, 30000),  # aiokafka takes floats for ints
        ("request_timeout_ms", 1500.5, 1500.5),  # and fractional durations
        ("metadata_max_age_ms", 60000.25, 60000.25),
        ("retry_backoff_ms", 0, 0),
        ("retry_backoff_max_ms", 2e3, 2000),
        ("reconnect_backoff_ms", 0.0, 0),
        ("connections_max_idle_ms", None, None),  # aiokafka: no idle check
        ("client_id", "", ""),
        ("bootstrap_servers", ["127.0.0.1:9", "[::1]:9093"], ["127.0.0.1:9", "[::1]:9093"]),
    ],
)
def test_shared_settings_accept_alike(keyword: str, value: Any, used: Any) -> None:
    AIOKafkaConsumer(**{"bootstrap_servers": SERVERS, keyword: value})
    AIOKafkaProducer(**{"bootstrap_servers": SERVERS, keyword: value})
    got = CLIENT.check({keyword: value})[keyword]
    assert got == used and type(got) is type(used)


def test_the_producer_takes_the_backoff_settings_and_hands_them_to_its_client() -> None:
    producer: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(
        bootstrap_servers=SERVERS,
        retry_backoff_ms=200,
        retry_backoff_max_ms=3000,
        reconnect_backoff_ms=70,
        reconnect_backoff_max_ms=900,
    )
    client = producer._client
    assert (client.retry_backoff, client.retry_backoff_max) == (0.2, 3.0)
    assert (client.reconnect_backoff, client.reconnect_backoff_max) == (0.07, 0.9)
    defaults: AIOKafkaProducer[Any, Any] = AIOKafkaProducer(bootstrap_servers=SERVERS)
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(bootstrap_servers=SERVERS)
    for name in ("retry_backoff_max", "reconnect_backoff", "reconnect_backoff_max"):
        assert getattr(defaults._client, name) == getattr(consumer._client, name), name


def test_the_sink_takes_the_shared_backoff_options() -> None:
    opts = parse_sink_options(
        {
            "kafka.bootstrap.servers": SERVERS,
            "topic": "t",
            "kafka.retry.backoff.max.ms": "900",
            "kafka.reconnect.backoff.ms": "70",
        }
    )
    assert opts.producer_kwargs() == {"retry_backoff_max_ms": 900, "reconnect_backoff_ms": 70}
    assert opts.ignored == ()
    assert set(CLIENT_OPTIONS.values()) <= set(CLIENT)


def test_security_settings_are_one_object() -> None:
    context = ssl.create_default_context()
    cfg = CLIENT.check({"security_protocol": "SSL", "ssl_context": context})
    assert cfg.security.ssl_context is context
    assert cfg.client_kwargs()["security"] is cfg.security
    consumer: AIOKafkaConsumer[Any, Any] = AIOKafkaConsumer(
        bootstrap_servers=SERVERS, security_protocol="SSL", ssl_context=context
    )
    assert consumer._client.security == cfg.security


@pytest.mark.parametrize("cls", [AIOKafkaConsumer, AIOKafkaProducer])
@pytest.mark.parametrize("keyword", ["api_version", "loop"])
def test_deprecated_arguments_warn_at_the_callers_line(cls: type, keyword: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cls(bootstrap_servers=SERVERS, **{keyword: "x"})
    found = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(found) == 1 and keyword in str(found[0].message)
    assert found[0].filename == __file__


def test_bootstrap_servers_parse_names_the_caller_s_name() -> None:
    assert parse_bootstrap_servers("a, b:1,[::1]:2") == [("a", 9092), ("b", 1), ("::1", 2)]
    with pytest.raises(KafkaConfigurationError, match="servers entry 'x:y'"):
        parse_bootstrap_servers("x:y", "servers")


# -- floors and cycles ---------------------------------------------------------------------------


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_table_sits_below_the_client() -> None:
    ours = {m for m in _imports(SRC / "config.py") if m.startswith("rackafka")}
    assert ours == {"rackafka._config", "rackafka.errors", "rackafka.net.security"}


def test_spark_security_does_not_import_the_options() -> None:
    """The options import the security options; nothing goes back, not even in a function."""
    assert "rackafka.spark.options" not in _imports(SRC / "spark" / "security.py")
    assert not {m for m in _imports(SRC / "spark" / "errors.py") if m.startswith("rackafka.spark")}
