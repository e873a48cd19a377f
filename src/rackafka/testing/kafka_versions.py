"""What each Apache Kafka release the test engine runs offers, and the broker settings it
needs.

:class:`~rackafka.testing.KafkaCluster` runs every release from :data:`MIN_KAFKA_VERSION`
(3.7, KRaft) on. Most of the broker configuration is the same for all of them; what differs:

* KIP-848's consumer group protocol is generally available from 4.0, where the engine turns
  it on (``group.coordinator.rebalance.protocols=classic,consumer``). 3.7 to 3.9 have it only
  as early access / preview, off by default, as on the managed clusters that run them: there
  the engine runs the classic protocol only, and :meth:`KafkaFeatures.missing` says why a
  KIP-848 test skips. ``broker_config={"group.coordinator.rebalance.protocols":
  "classic,consumer"}`` turns the early access on (ConsumerGroupHeartbeat v0, no regex
  subscription); beware that on 3.7.2 its new group coordinator then refuses transactional
  offset commits (INVALID_TXN_STATE, with KIP-890's verification on; 3.9.1 does not).
* Transactions V2 (KIP-890 part 2: EndTxn v5, ``transaction.version=2``) is 4.0 and later.
* Kafka 4.0 moved the broker's logging to log4j 2; 3.x ships none, and the engine adds log4j
  2's core and SLF4J binding to its jars (see :mod:`~rackafka.testing.kafka_dist`), so one
  ``log4j2.properties`` serves every version.

The controller quorum is configured the same way on every version (static
``controller.quorum.voters``, which 4.x still accepts): KIP-853's dynamic quorum
(``controller.quorum.bootstrap.servers``, 3.9+) is not needed by the tests.

:func:`kafka_features` answers, per release, which features a test can count on, and why
one is not there (a reason to skip with).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "FEATURES",
    "MIN_KAFKA_VERSION",
    "KafkaFeatures",
    "kafka_features",
    "parse_version",
    "version_properties",
]

#: The oldest Kafka release the test engine runs (KRaft, KIP-848 early access).
MIN_KAFKA_VERSION: tuple[int, int] = (3, 7)

#: Feature name -> (the first release with it, what it is). The names are those of
#: :meth:`KafkaFeatures.supports`.
FEATURES: Mapping[str, tuple[tuple[int, int], str]] = {
    "rack_aware_fetch": ((2, 4), "fetch from the closest replica (KIP-392, Fetch v11)"),
    "idempotence": ((0, 11), "the idempotent producer (KIP-98)"),
    "transactions": ((0, 11), "transactions (KIP-98)"),
    "reauthentication": ((2, 2), "SASL re-authentication (KIP-368)"),
    "rack_aware_assignment": ((3, 5), "rack-aware partition assignment (KIP-881)"),
    "consumer_group_protocol": (
        (3, 7),
        "KIP-848's consumer group protocol (ConsumerGroupHeartbeat)",
    ),
    "subscription_pattern": (
        (4, 0),
        "a regex subscription evaluated by the group coordinator (ConsumerGroupHeartbeat v1)",
    ),
    "transactions_v2": ((4, 0), "transactions V2 (KIP-890 part 2, EndTxn v5)"),
}

#: Features that a release before their GA has only as early access / preview.
_EARLY_ACCESS: Mapping[str, tuple[int, int]] = {"consumer_group_protocol": (4, 0)}


def parse_version(version: str) -> tuple[int, int, int]:
    """``"3.7.2"`` -> ``(3, 7, 2)`` (a suffix such as ``-rc1`` is ignored).

    Raises:
        ValueError: not a ``MAJOR.MINOR.PATCH`` version.
    """
    head = version.replace("-", ".").split(".")
    try:
        major, minor, patch = (int(x) for x in head[:3])
    except ValueError:
        raise ValueError(f"not a Kafka version: {version!r} (expected e.g. 4.1.1)") from None
    return major, minor, patch


@dataclass(frozen=True)
class KafkaFeatures:
    """What a Kafka release offers the tests.

    Attributes:
        version: the release, e.g. ``"3.7.2"``.
        available: the names (keys of :data:`FEATURES`) it has.
        early_access: those it has only as early access / preview (not for production).
    """

    version: str
    available: frozenset[str]
    early_access: frozenset[str] = field(default_factory=frozenset)

    def supports(self, feature: str) -> bool:
        """Whether this release has ``feature`` (early access counts).

        Raises:
            KeyError: not a name of :data:`FEATURES`.
        """
        if feature not in FEATURES:
            raise KeyError(f"unknown feature {feature!r} (one of {', '.join(FEATURES)})")
        return feature in self.available

    def missing(self, feature: str) -> str | None:
        """None when this release has ``feature``, else why not (a test's skip reason).

        Raises:
            KeyError: not a name of :data:`FEATURES`.
        """
        if self.supports(feature):
            return None
        first, what = FEATURES[feature]
        if parse_version(self.version)[:2] >= first:  # early access, not turned on
            ga = _EARLY_ACCESS[feature]
            return (
                f"Kafka {self.version} has {what} only as early access, off in the test "
                f"engine as in production (generally available from {ga[0]}.{ga[1]})"
            )
        return f"Kafka {self.version} lacks {what}: it needs Kafka {first[0]}.{first[1]}"

    def describe(self) -> dict[str, str]:
        """Feature name -> ``"yes"``, ``"early access"`` (turned on), ``"early access,
        off"`` or ``"no (needs X.Y)"``."""
        mm = parse_version(self.version)[:2]
        out: dict[str, str] = {}
        for name, (first, _) in FEATURES.items():
            if name in self.early_access:
                out[name] = "early access"
            elif name in self.available:
                out[name] = "yes"
            elif mm >= first:
                out[name] = "early access, off"
            else:
                out[name] = f"no (needs {first[0]}.{first[1]})"
        return out


def kafka_features(
    version: str, broker_config: Mapping[str, object] | None = None
) -> KafkaFeatures:
    """The features of Kafka ``version`` as the test engine runs it (with ``broker_config``,
    the cluster's extra broker settings, which may turn KIP-848's early access on).

    Raises:
        ValueError: not a version.
    """
    mm = parse_version(version)[:2]
    available = {name for name, (first, _) in FEATURES.items() if mm >= first}
    if mm < _EARLY_ACCESS["consumer_group_protocol"]:
        protocols = str((broker_config or {}).get(_PROTOCOLS, ""))
        if "consumer" not in protocols.replace(" ", "").lower().split(","):
            available.discard("consumer_group_protocol")
    early = frozenset(n for n, ga in _EARLY_ACCESS.items() if n in available and mm < ga)
    return KafkaFeatures(version, frozenset(available), early)


_PROTOCOLS = "group.coordinator.rebalance.protocols"


def version_properties(version: str) -> dict[str, str]:
    """The broker settings that Kafka ``version`` needs beyond the engine's common ones."""
    mm = parse_version(version)[:2]
    props: dict[str, str] = {}
    if mm < _EARLY_ACCESS["consumer_group_protocol"]:
        # KIP-848 is early access there: off, as the managed 3.x clusters run it.
        props[_PROTOCOLS] = "classic"
    return props
