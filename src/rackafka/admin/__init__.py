"""The admin client (aiokafka's ``aiokafka.admin``): topics, partitions, configs and
consumer groups of a cluster.

``from rackafka.admin import AIOKafkaAdminClient, NewTopic, NewPartitions, RecordsToDelete``;
the config resource types are in :mod:`rackafka.admin.config_resource`, as in aiokafka.
"""

from rackafka.admin.client import AIOKafkaAdminClient
from rackafka.admin.config_resource import ConfigResource, ConfigResourceType
from rackafka.admin.new_partitions import NewPartitions
from rackafka.admin.new_topic import NewTopic
from rackafka.admin.records_to_delete import RecordsToDelete
from rackafka.admin.replicas import (
    ElectionType,
    LogDirDescription,
    PartitionReassignment,
    ReplicaInfo,
)

__all__ = [
    "AIOKafkaAdminClient",
    "ConfigResource",
    "ConfigResourceType",
    "ElectionType",
    "LogDirDescription",
    "NewPartitions",
    "NewTopic",
    "PartitionReassignment",
    "RecordsToDelete",
    "ReplicaInfo",
]
