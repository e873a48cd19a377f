"""rackafka: an asyncio Kafka consumer that reads from the closest replica.

A drop-in for aiokafka's consumer::

    from rackafka import AIOKafkaConsumer
"""

__version__ = "0.1.0.dev0"

from rackafka import errors, structs  # noqa: E402
from rackafka.abc import ConsumerRebalanceListener  # noqa: E402
from rackafka.consumer.consumer import AIOKafkaConsumer  # noqa: E402
from rackafka.errors import ConsumerStoppedError, IllegalOperation  # noqa: E402
from rackafka.structs import (  # noqa: E402
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
