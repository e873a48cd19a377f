"""One module per Kafka API. The registry of all of them is :mod:`rackafka.protocol.registry`."""
