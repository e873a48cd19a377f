"""More partitions for a topic: :class:`NewPartitions` (``rackafka.admin.NewPartitions``)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["NewPartitions"]


def _broker_ids(value: object) -> bool:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return False
    return all(isinstance(b, int) and not isinstance(b, bool) for b in value)


class NewPartitions:
    """The new partition count of an existing topic, for
    :meth:`~rackafka.admin.AIOKafkaAdminClient.create_partitions`.

    Arguments:
        total_count (int): the number of partitions the topic should have
            (more than it has).
        new_assignments ([[int]]): for each new partition, the broker ids of
            its replicas (as many lists as partitions are added); default:
            the brokers choose.

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: ``total_count`` is not positive.
    """

    def __init__(
        self, total_count: int, new_assignments: Sequence[Sequence[int]] | None = None
    ) -> None:
        if isinstance(total_count, bool) or not isinstance(total_count, int):
            raise TypeError(f"total_count must be an int, not {total_count!r}")
        if total_count <= 0:
            raise ValueError(f"total_count must be > 0, not {total_count}")
        if new_assignments is not None:
            bad = isinstance(new_assignments, (str, bytes)) or not isinstance(
                new_assignments, Sequence
            )
            bad = bad or not all(_broker_ids(replicas) for replicas in new_assignments)
            if bad:
                raise TypeError(
                    f"new_assignments must be a list of lists of broker ids, "
                    f"not {new_assignments!r}"
                )
        self.total_count = total_count
        self.new_assignments = new_assignments

    def __repr__(self) -> str:
        return (
            f"NewPartitions(total_count={self.total_count}, "
            f"new_assignments={self.new_assignments!r})"
        )
