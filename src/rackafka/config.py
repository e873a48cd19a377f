"""The client settings: one table that checks them for every role.

Each :class:`Setting` is a row: the keyword (aiokafka's name), the Java client's name
(``request.timeout.ms``; the Spark options are ``kafka.`` + it), the default, and its
:class:`Kind`: the type, the allowed range and the spellings accepted (aiokafka's, e.g.
``30e3`` for an int, a fractional duration, a ``str`` or a list for
``bootstrap_servers``; and, for a value given as text such as a Spark option, Java's).
:data:`CLIENT` holds the settings every client shares; the consumer and the producer
extend it with their own (:mod:`rackafka.consumer.config`, :mod:`rackafka.producer.config`),
and the consumer, the producer, the doctor and the Spark source and sink all check through
them: the same value is accepted or refused the same way, with the same words.

Errors are :exc:`~rackafka.errors.KafkaConfigurationError` naming the setting as the caller
shows it (a keyword, or a Spark option); no message ever shows a secret.  Nothing here opens
a connection; the floor is below the client (``net.security`` is the only import of ours
besides the errors).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from rackafka._config import INT32_MAX, check_callable, check_duration_ms, check_positive
from rackafka.errors import KafkaConfigurationError
from rackafka.net.security import SecurityConfig

__all__ = [
    "CLIENT",
    "DEFAULT_PORT",
    "NO_IDLE_CHECK_MS",
    "SECURITY",
    "Bootstrap",
    "Callback",
    "Choice",
    "Count",
    "Deprecated",
    "Flag",
    "Kind",
    "Millis",
    "Rack",
    "Security",
    "Setting",
    "Settings",
    "Table",
    "Text",
    "parse_bootstrap_servers",
    "security_kwargs",
]

#: The port of a ``bootstrap_servers`` entry without one.
DEFAULT_PORT = 9092
#: ``connections_max_idle_ms=None`` (aiokafka: no idle check) as the client takes it.
NO_IDLE_CHECK_MS = 1 << 62

#: How a setting shows in messages: the keyword, or what the caller calls it.
Names = Mapping[str, str]


def parse_bootstrap_servers(
    servers: str | Sequence[str], name: str = "bootstrap_servers"
) -> list[tuple[str, int]]:
    """Parse ``bootstrap_servers`` into ``(host, port)`` pairs.

    Accepts a comma-separated string or a list of ``host[:port]`` entries;
    IPv6 addresses go in brackets (``[::1]:9092``).  The default port is 9092.

    Raises:
        KafkaConfigurationError: an entry cannot be parsed (the message names
            ``name`` and the entry).
    """
    if isinstance(servers, str):
        items = [s for s in (x.strip() for x in servers.split(",")) if s]
    elif isinstance(servers, (list, tuple)) and all(isinstance(s, str) for s in servers):
        items = [s.strip() for s in servers]
    else:
        raise KafkaConfigurationError(
            f"{name} must be a 'host[:port]' string (comma separated) or a list "
            f"of them, not {servers!r}"
        )
    if not items:
        raise KafkaConfigurationError(f"{name} is empty: give at least one host:port")
    out: list[tuple[str, int]] = []
    for item in items:
        host: str
        port_s: str | None
        if item.startswith("["):
            end = item.find("]")
            if end < 0:
                raise KafkaConfigurationError(f"{name} entry {item!r}: missing ']'")
            host = item[1:end]
            rest = item[end + 1 :]
            if rest and not rest.startswith(":"):
                raise KafkaConfigurationError(f"{name} entry {item!r} is malformed")
            port_s = rest[1:] if rest else None
        elif item.count(":") > 1:
            host, port_s = item, None  # bare IPv6 address
        elif ":" in item:
            host, port_s = item.rsplit(":", 1)
        else:
            host, port_s = item, None
        if not host:
            raise KafkaConfigurationError(f"{name} entry {item!r} has no host")
        try:
            port = int(port_s) if port_s else DEFAULT_PORT
        except ValueError:
            raise KafkaConfigurationError(
                f"{name} entry {item!r}: port {port_s!r} is not a number"
            ) from None
        if not 0 < port < 65536:
            raise KafkaConfigurationError(f"{name} entry {item!r}: port out of range")
        out.append((host, port))
    return out


# -- kinds: type, range and spellings of a value -----------------------------------------------

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


class Kind:
    """The type, range and accepted spellings of a setting's value."""

    #: What the value may be, for the table's readers (docs, messages).
    describe = "any value"

    def check(self, value: Any, name: str) -> Any:
        """The value to use, or the error naming ``name``."""
        return value

    def from_text(self, text: str, name: str) -> Any:
        """The value of a setting given as text (a Spark option), as Java's client reads
        it; :meth:`check` judges it after."""
        return text.strip()


class Count(Kind):
    """An int sent on the wire (32 bits): > 0, or >= 0 with ``zero``; ``None`` too with
    ``none``.  A float with an integral value (``30e3``) is taken, as aiokafka takes it,
    unless ``strict``."""

    def __init__(self, *, zero: bool = False, none: bool = False, strict: bool = False) -> None:
        self.zero, self.none, self.strict = zero, none, strict
        self.describe = f"int {'>= 0' if zero else '> 0'} up to {INT32_MAX}" + (
            " or None" if none else ""
        )

    def check(self, value: Any, name: str) -> Any:
        if value is None and self.none:
            return None
        if self.strict and not isinstance(value, int):  # as aiokafka: no float here
            raise KafkaConfigurationError(f"{name} must be an int, not {value!r}")
        return check_positive(name, value, zero=self.zero)

    def from_text(self, text: str, name: str) -> Any:
        stripped = text.strip()
        # Plain ASCII digits only: int() would also take "1_000" or non-ASCII digits.
        if not _INTEGER_TEXT.fullmatch(stripped):
            raise KafkaConfigurationError(f"{name} must be an integer, not {text!r}")
        return int(stripped)


class Millis(Count):
    """A duration in milliseconds the client only waits for (never sent on the wire): a
    fractional float such as ``1500.5`` is taken, as aiokafka takes it."""

    def __init__(self, *, zero: bool = False, none: bool = False) -> None:
        super().__init__(zero=zero, none=none)
        self.describe = f"milliseconds {'>= 0' if zero else '> 0'} (int or float)" + (
            " or None" if none else ""
        )

    def check(self, value: Any, name: str) -> Any:
        if value is None and self.none:
            return None
        return check_duration_ms(name, value, zero=self.zero)


class Flag(Kind):
    """A bool.  Not ``strict``: any value but a string is taken for its truth, as aiokafka
    does (a string is refused: ``"false"`` would be true)."""

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self.describe = "bool" if strict else "bool (any value but a string, by its truth)"

    def check(self, value: Any, name: str) -> Any:
        if self.strict and not isinstance(value, bool):
            raise KafkaConfigurationError(f"{name} must be a bool, not {value!r}")
        if isinstance(value, (str, bytes)):
            raise KafkaConfigurationError(
                f"{name} must be a bool, not the string {value!r} (which is always true)"
            )
        return bool(value)

    def from_text(self, text: str, name: str) -> Any:
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise KafkaConfigurationError(f"{name} must be 'true' or 'false', not {text!r}")


class Text(Kind):
    """A str: non-empty unless ``empty``; ``None`` too with ``none``."""

    def __init__(self, *, empty: bool = False, none: bool = True) -> None:
        self.empty, self.none = empty, none
        self.describe = ("str" if empty else "non-empty str") + (" or None" if none else "")

    def check(self, value: Any, name: str) -> Any:
        if value is None and self.none:
            return None
        if not isinstance(value, str) or (not value and not self.empty):
            what = "a str" if self.empty else "a non-empty str"
            raise KafkaConfigurationError(f"{name} must be {what}, not {value!r}")
        return value


class Rack(Kind):
    """``client_rack``: a str or ``None``; ``""`` is no rack (``None``), as Java's
    ``client.rack`` default ``""``; ``"auto"`` is found at ``start()``."""

    describe = "str or None ('' is None, 'auto' detects it)"

    def check(self, value: Any, name: str) -> Any:
        if value is not None and not isinstance(value, str):
            raise KafkaConfigurationError(f"{name} must be a str or None, not {value!r}")
        return value or None


class Choice(Kind):
    """One of ``values``; ``fold`` (e.g. ``str.lower``) first when the value is a str, so
    that any case is taken; ``text`` maps the spellings of a value given as text (lower
    case)."""

    def __init__(
        self,
        *values: Any,
        fold: Callable[[str], str] | None = None,
        text: Mapping[str, Any] | None = None,
        prefix: str = "",
    ) -> None:
        self.values, self.fold, self.text, self.prefix = values, fold, text or {}, prefix
        shown = [repr(v) for v in values]
        self.describe = "one of " + ", ".join(shown)
        self._listing = ", ".join(shown[:-1]) + f" or {shown[-1]}" if len(shown) > 1 else shown[0]

    def check(self, value: Any, name: str) -> Any:
        folded = self.fold(value) if self.fold is not None and isinstance(value, str) else value
        for allowed in self.values:
            # 1.0 is 1 (as in aiokafka), but True is not 1.
            if folded == allowed and isinstance(folded, bool) == isinstance(allowed, bool):
                return allowed
        prefix = self.prefix.format(value=value)
        raise KafkaConfigurationError(f"{prefix}{name} must be {self._listing}, not {value!r}")

    def from_text(self, text: str, name: str) -> Any:
        key = text.strip().lower()  # Java's clients take these in any case
        return self.text.get(key, key)


class Callback(Kind):
    """A callable (``None`` too with ``none``)."""

    def __init__(self, *, none: bool = True) -> None:
        self.none = none
        self.describe = "callable" + (" or None" if none else "")

    def check(self, value: Any, name: str) -> Any:
        if value is None and not self.none:
            raise KafkaConfigurationError(f"{name} must be callable, not None")
        check_callable(name, value)
        return value


class Bootstrap(Kind):
    """``bootstrap_servers``: a ``host[:port]`` string (comma separated) or a list of them;
    checked by :func:`parse_bootstrap_servers` and kept as given."""

    describe = "'host[:port]' str (comma separated) or list of them"

    def check(self, value: Any, name: str) -> Any:
        parse_bootstrap_servers(value, name)
        return value


class Deprecated(Kind):
    """An aiokafka argument that is deprecated and ignored: a value gives a warning."""

    def __init__(self, why: str) -> None:
        self.why = why
        self.describe = f"deprecated and ignored ({why})"

    def check(self, value: Any, name: str) -> Any:
        if value is not None:
            # Here, Table.check, the constructor, its caller: the warning names the caller.
            warnings.warn(
                f"The {name} argument is deprecated (as in aiokafka) and ignored: {self.why}",
                DeprecationWarning,
                stacklevel=4,
            )
        return None


class Security(Kind):
    """One of the eight security arguments: checked together, by :class:`SecurityConfig`."""

    describe = "checked with the other security arguments (SecurityConfig)"


# -- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """A row of the table: one setting."""

    #: The keyword (aiokafka's name).
    name: str
    kind: Kind
    default: Any
    #: The Java client's name (``request.timeout.ms``), if it has one.
    java: str | None = None


class Settings(dict[str, Any]):
    """The checked values of one client (by keyword), and its security settings as one
    :class:`~rackafka.net.security.SecurityConfig`."""

    def __init__(self, values: dict[str, Any], security: SecurityConfig) -> None:
        super().__init__(values)
        self.security = security

    def client_kwargs(self) -> dict[str, Any]:
        """Keywords of :class:`~rackafka.client.KafkaClient` (bootstrap servers first)."""
        idle = self["connections_max_idle_ms"]
        return {
            "bootstrap_servers": self["bootstrap_servers"],
            "client_id": self["client_id"],
            "metadata_max_age_ms": self["metadata_max_age_ms"],
            "request_timeout_ms": self["request_timeout_ms"],
            "retry_backoff_ms": self["retry_backoff_ms"],
            "retry_backoff_max_ms": self["retry_backoff_max_ms"],
            "reconnect_backoff_ms": self["reconnect_backoff_ms"],
            "reconnect_backoff_max_ms": self["reconnect_backoff_max_ms"],
            "connections_max_idle_ms": NO_IDLE_CHECK_MS if idle is None else idle,
            "security": self.security,
        }


def security_kwargs(security: SecurityConfig) -> dict[str, Any]:
    """The eight security keywords of a consumer or producer, from ``security``."""
    return {f.name: getattr(security, f.name) for f in fields(security)}


#: Checks of settings against each other: ``rule(values, shown)`` may raise (naming the
#: settings with ``shown(keyword)``) or fill in values that depend on others.
Rule = Callable[[Settings, Callable[[str], str]], None]


class Table(dict[str, Setting]):
    """Settings by keyword, with the rules between them; :meth:`extend` adds a role's."""

    def __init__(self, settings: Sequence[Setting], rules: Sequence[Rule] = ()) -> None:
        super().__init__((s.name, s) for s in settings)
        self.rules = tuple(rules)

    def extend(self, settings: Sequence[Setting], rules: Sequence[Rule] = ()) -> Table:
        """This table with more settings (a role's; a setting of the same name, such as a
        role's own default, replaces this table's) and more rules, run after these."""
        return Table([*self.values(), *settings], [*self.rules, *rules])

    def check(self, given: Mapping[str, Any], names: Names | None = None) -> Settings:
        """Check ``given`` (keywords; the others take their defaults) setting by setting,
        then the security arguments together, then the rules.

        Arguments:
            given: values by keyword.
            names: how messages name a keyword (default: the keyword itself).

        Raises:
            KafkaConfigurationError: a value is refused; the message names the setting.
            TypeError: a keyword of no setting (as Python for an unknown keyword).
        """
        unknown = set(given) - set(self)
        if unknown:
            raise TypeError(f"unexpected keyword arguments: {', '.join(sorted(unknown))}")
        shown = (lambda n: n) if names is None else (lambda n: names.get(n, n))
        values: dict[str, Any] = {}
        for name, setting in self.items():
            value = given.get(name, setting.default)
            values[name] = setting.kind.check(value, shown(name))
        security = SecurityConfig.create(**{n: values[n] for n in SECURITY})
        settings = Settings(values, security)
        for rule in self.rules:
            rule(settings, shown)
        return settings

    def from_text(self, name: str, text: str, shown: str) -> Any:
        """The value of setting ``name`` given as ``text`` (a Spark option named
        ``shown``), checked alone; :meth:`check` then judges it with the others."""
        kind = self[name].kind
        return kind.check(kind.from_text(text, shown), shown)


#: The security arguments (checked together by :meth:`SecurityConfig.create`).
SECURITY = tuple(f.name for f in fields(SecurityConfig))

_SECURITY_JAVA = {
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_kerberos_service_name": "sasl.kerberos.service.name",
}

#: The settings every client (consumer, producer, doctor, Spark tasks) shares.
CLIENT = Table(
    [
        Setting("bootstrap_servers", Bootstrap(), "localhost", "bootstrap.servers"),
        Setting("client_id", Text(empty=True), None, "client.id"),
        Setting("client_rack", Rack(), None, "client.rack"),
        Setting("request_timeout_ms", Millis(), 40000, "request.timeout.ms"),
        Setting("metadata_max_age_ms", Millis(), 300000, "metadata.max.age.ms"),
        Setting("retry_backoff_ms", Millis(zero=True), 100, "retry.backoff.ms"),
        Setting("retry_backoff_max_ms", Count(zero=True), 1000, "retry.backoff.max.ms"),
        Setting("reconnect_backoff_ms", Count(zero=True), 50, "reconnect.backoff.ms"),
        Setting("reconnect_backoff_max_ms", Count(zero=True), 1000, "reconnect.backoff.max.ms"),
        # None: no idle check, as in aiokafka.
        Setting("connections_max_idle_ms", Millis(none=True), 540000, "connections.max.idle.ms"),
        Setting("api_version", Deprecated("API versions are negotiated with each broker"), None),
        Setting("loop", Deprecated("the running event loop is used"), None),
        *(
            Setting(f.name, Security(), f.default, _SECURITY_JAVA.get(f.name))
            for f in fields(SecurityConfig)
        ),
    ]
)
