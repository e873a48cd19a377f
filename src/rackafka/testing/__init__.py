"""Test helpers: an embedded multi-rack Kafka cluster and a pytest plugin.

:class:`EmbeddedCluster` runs librdkafka's mock Kafka brokers in-process (from the
``confluent-kafka`` package: ``pip install '.[testing]'``), spread over racks, with fault
injection for rack-aware fetching (KIP-392): preferred read replicas, lagging followers,
leader moves, brokers going down, request errors, old API versions and request tracking.

:class:`KafkaCluster` runs real Apache Kafka brokers (JVMs, jars from Maven Central) in
racks, for the tests that only real Kafka can settle.

:class:`FakeBroker` is a small broker of rackafka's own whose every answer a test can
replace, for hostile-input and fault tests.

``python -m rackafka.testing serve`` runs one for another process, and
:class:`ServedCluster` drives that server from Python (a cluster outside the interpreter of
the clients under test); the pytest plugin
``rackafka.testing.pytest_plugin`` provides fixtures. See ``docs/testing.rst``.
"""

from __future__ import annotations

from ._api import API_NAMES, DISCONNECT, api_key, api_name
from ._clients import (
    COMPRESSION_TYPES,
    ProduceError,
    ProduceResult,
    TransactionalProduceResult,
    TransactionResult,
    default_value,
    delivery_timeout,
)
from ._librdkafka import ConfluentKafkaMissingError, LibrdkafkaNotFoundError
from .cluster import (
    BrokerInfo,
    EmbeddedCluster,
    EmbeddedClusterError,
    PartitionInfo,
    RequestRecord,
    probe_api_versions,
)
from .compose import ComposeCluster, DockerUnavailableError, FaultInjectionUnsupportedError
from .fake_broker import NO_RESPONSE, FakeBroker, FakeRequest
from .kafka import (
    KafkaCluster,
    KafkaClusterError,
    KafkaPortInUseError,
    KafkaSecurity,
    unsecured_oauth_token,
)
from .kafka_dist import JavaNotFoundError, KafkaJarsError
from .secure_front import FrontStats, SecureFront
from .served import ServedCluster, ServedClusterError
from .spark_standalone import SparkStandaloneCluster, SparkUnavailableError, loopback_spark_conf
from .zones import offline_zone_environ

__all__ = [
    "offline_zone_environ",
    "API_NAMES",
    "COMPRESSION_TYPES",
    "DISCONNECT",
    "BrokerInfo",
    "ComposeCluster",
    "ConfluentKafkaMissingError",
    "DockerUnavailableError",
    "EmbeddedCluster",
    "EmbeddedClusterError",
    "FakeBroker",
    "FakeRequest",
    "FaultInjectionUnsupportedError",
    "JavaNotFoundError",
    "KafkaCluster",
    "KafkaClusterError",
    "KafkaJarsError",
    "KafkaPortInUseError",
    "KafkaSecurity",
    "FrontStats",
    "LibrdkafkaNotFoundError",
    "NO_RESPONSE",
    "PartitionInfo",
    "ProduceError",
    "ProduceResult",
    "RequestRecord",
    "SecureFront",
    "ServedCluster",
    "ServedClusterError",
    "SparkStandaloneCluster",
    "SparkUnavailableError",
    "TransactionResult",
    "TransactionalProduceResult",
    "api_key",
    "api_name",
    "default_value",
    "delivery_timeout",
    "loopback_spark_conf",
    "probe_api_versions",
    "unsecured_oauth_token",
]
