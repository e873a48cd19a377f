"""Abstract interfaces users implement (as in ``aiokafka.abc``)."""

from __future__ import annotations

import abc
from typing import Any

from rackafka.structs import TopicPartition


class ConsumerRebalanceListener(abc.ABC):
    """A callback interface for custom actions when partitions are assigned or revoked.

    Pass an instance to :meth:`AIOKafkaConsumer.subscribe`.  Both methods may be
    plain functions or coroutines.  ``on_partitions_revoked`` is called before
    a rebalance takes partitions away (commit offsets there), and
    ``on_partitions_assigned`` after the new assignment is known (seek there).
    """

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """Called before partitions are taken away from this consumer.

        Arguments:
            revoked: the partitions that were assigned until now.
        """

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """Called once the new assignment is known, before fetching starts.

        Arguments:
            assigned: the partitions now assigned to this consumer.
        """


__all__ = ["ConsumerRebalanceListener"]
