"""rackafka: an asyncio Kafka consumer that reads from the closest replica.

A drop-in for aiokafka's consumer::

    from rackafka import AIOKafkaConsumer
"""

__version__ = "0.1.0.dev0"

from rackafka import errors, structs
from rackafka.abc import ConsumerRebalanceListener
from rackafka.consumer.consumer import AIOKafkaConsumer
from rackafka.errors import ConsumerStoppedError, IllegalOperation
from rackafka.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    OffsetAndTimestamp,
    TopicPartition,
)

__all__ = [
    "AIOKafkaConsumer",
    "ConsumerRebalanceListener",
    "ConsumerRecord",
    "ConsumerStoppedError",
    "IllegalOperation",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "TopicPartition",
    "__version__",
    "errors",
    "structs",
]
