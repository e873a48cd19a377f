"""rackafka: an asyncio Kafka client that reads from the closest replica.

A drop-in for aiokafka's consumer, producer and admin client::

    from rackafka import AIOKafkaAdminClient, AIOKafkaConsumer, AIOKafkaProducer
"""

from rackafka import errors, structs
from rackafka._aiokafka_alias import install_as_aiokafka
from rackafka._version import __version__
from rackafka.abc import ConsumerRebalanceListener
from rackafka.admin.client import AIOKafkaAdminClient
from rackafka.consumer.consumer import AIOKafkaConsumer
from rackafka.errors import ConsumerStoppedError, IllegalOperation
from rackafka.producer.producer import AIOKafkaProducer
from rackafka.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    RecordMetadata,
    SubscriptionPattern,
    TopicPartition,
)

__all__ = [
    "AIOKafkaAdminClient",
    "AIOKafkaConsumer",
    "AIOKafkaProducer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerStoppedError",
    "IllegalOperation",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "RecordMetadata",
    "SubscriptionPattern",
    "TopicPartition",
    "__version__",
    "errors",
    "install_as_aiokafka",
    "structs",
]
