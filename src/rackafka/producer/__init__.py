"""The producer: :class:`AIOKafkaProducer`, its partitioners and batches."""

from rackafka.producer.partitioner import DefaultPartitioner, murmur2
from rackafka.producer.producer import AIOKafkaProducer, BatchBuilder
from rackafka.producer.sender import ProduceStats

__all__ = ["AIOKafkaProducer", "BatchBuilder", "DefaultPartitioner", "ProduceStats", "murmur2"]
