"""Which Kafka releases the test engine takes, what it says each offers, and the broker
settings that differ (no JVM needed: the real runs are tests/kafka, per release)."""

from __future__ import annotations

import pytest

from rackafka.testing import KafkaCluster
from rackafka.testing.kafka_dist import DEFAULT_KAFKA_VERSION, PINNED_KAFKA_VERSIONS, kafka_version
from rackafka.testing.kafka_versions import (
    FEATURES,
    kafka_features,
    parse_version,
    version_properties,
)

PROTOCOLS = "group.coordinator.rebalance.protocols"


@pytest.mark.parametrize("version", ["3.7.2", "3.8.1", "3.9.1", "4.1.1", "4.4.0", "5.0.0"])
def test_releases_from_3_7_are_taken(version: str) -> None:
    assert kafka_version(version) == version
    assert KafkaCluster(kafka_version=version).kafka_version == version


@pytest.mark.parametrize("version", ["3.6.2", "2.8.2", "0.11.0"])
def test_older_releases_are_refused_naming_the_oldest(version: str) -> None:
    with pytest.raises(ValueError, match=rf"Kafka {version}: .*needs Kafka 3\.7 or newer"):
        kafka_version(version)


def test_the_environment_picks_the_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RACKAFKA_KAFKA_VERSION", "3.7.2")
    assert kafka_version() == "3.7.2"
    monkeypatch.delenv("RACKAFKA_KAFKA_VERSION")
    assert kafka_version() == DEFAULT_KAFKA_VERSION == "4.1.1"


def test_parse_version() -> None:
    assert parse_version("3.7.2") == (3, 7, 2)
    assert parse_version("4.0.0-rc1") == (4, 0, 0)
    with pytest.raises(ValueError, match="not a Kafka version"):
        parse_version("four")


def test_4x_has_every_feature() -> None:
    for version in ("4.0.0", DEFAULT_KAFKA_VERSION, "4.4.0"):
        features = kafka_features(version)
        assert features.available == frozenset(FEATURES)
        assert not features.early_access
        assert all(features.missing(name) is None for name in FEATURES)
        assert set(features.describe().values()) == {"yes"}


@pytest.mark.parametrize("version", ["3.7.2", "3.9.1"])
def test_3x_says_what_it_lacks_and_why(version: str) -> None:
    features = kafka_features(version)
    for name in ("rack_aware_fetch", "idempotence", "transactions", "reauthentication"):
        assert features.supports(name)
    assert not features.supports("transactions_v2")
    assert features.missing("transactions_v2") == (
        f"Kafka {version} lacks transactions V2 (KIP-890 part 2, EndTxn v5): it needs Kafka 4.0"
    )
    # KIP-848: early access there, off as on managed clusters, unless turned on.
    assert not features.supports("consumer_group_protocol")
    reason = features.missing("consumer_group_protocol")
    assert reason is not None and "early access" in reason and "4.0" in reason
    assert features.describe()["consumer_group_protocol"] == "early access, off"
    on = kafka_features(version, {PROTOCOLS: "classic, consumer"})
    assert on.supports("consumer_group_protocol")
    assert on.early_access == {"consumer_group_protocol"}
    assert on.describe()["consumer_group_protocol"] == "early access"
    assert not on.supports("subscription_pattern")  # ConsumerGroupHeartbeat v1: 4.0


def test_an_unknown_feature_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="unknown feature 'kip-999'"):
        kafka_features("4.1.1").supports("kip-999")


def test_cluster_features_follow_its_broker_config() -> None:
    assert not KafkaCluster(kafka_version="3.7.2").features.supports("consumer_group_protocol")
    early = KafkaCluster(kafka_version="3.7.2", broker_config={PROTOCOLS: "classic,consumer"})
    assert early.features.supports("consumer_group_protocol")
    assert KafkaCluster(kafka_version="4.4.0").features.supports("consumer_group_protocol")


def test_version_properties() -> None:
    assert version_properties("3.7.2") == {PROTOCOLS: "classic"}
    assert version_properties("3.9.1") == {PROTOCOLS: "classic"}
    assert version_properties("4.0.0") == {}
    assert version_properties(DEFAULT_KAFKA_VERSION) == {}


@pytest.mark.parametrize(
    ("version", "protocols"), [("3.7.2", "classic"), ("4.1.1", "classic,consumer")]
)
def test_server_properties_per_release(tmp_path, version: str, protocols: str) -> None:
    from rackafka.testing._kafka_nodes import _Node

    cluster = KafkaCluster(1, ["az-a"], kafka_version=version)
    node = _Node(1, "az-a", 19092, 19093, None, tmp_path)
    cluster._procs.nodes[1] = node
    props = cluster._properties(node)
    assert props[PROTOCOLS] == protocols
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19093"
    assert props["broker.rack"] == "az-a"
    assert props["replica.selector.class"].endswith("RackAwareReplicaSelector")


@pytest.mark.parametrize("version", PINNED_KAFKA_VERSIONS)
def test_every_tested_release_has_a_pinned_list(version: str) -> None:
    from rackafka.testing.kafka_dist import _pinned

    sums = _pinned(version)
    assert sums is not None, version
    assert f"kafka_2.13-{version}.jar" in sums and f"kafka-clients-{version}.jar" in sums
    # Every release logs with log4j 2 through SLF4J 1.7 (3.x gets both added).
    assert any(n.startswith("log4j-core-") for n in sums)
    assert any(n.startswith("log4j-slf4j-impl-") for n in sums)
    assert all(len(d) == 64 and int(d, 16) >= 0 for d in sums.values())
