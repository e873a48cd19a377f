"""A topic to create: :class:`NewTopic` (``rackafka.admin.NewTopic``, aiokafka's path)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rackafka.errors import IllegalArgumentError

__all__ = ["NewTopic"]


def _int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {value!r}")
    return value


class NewTopic:
    """A topic for :meth:`~rackafka.admin.AIOKafkaAdminClient.create_topics`.

    Arguments:
        name (str): name of the topic.
        num_partitions (int): number of partitions, or -1 if
            ``replica_assignments`` is given.
        replication_factor (int): replication factor, or -1 if
            ``replica_assignments`` is given.
        replica_assignments (dict of int: [int]): the broker ids of the
            replicas of each partition, by partition id.
        topic_configs (dict of str: str): topic configs (``cleanup.policy``,
            ``retention.ms``, ...) by name.

    Raises:
        IllegalArgumentError: neither or both of ``num_partitions`` /
            ``replication_factor`` and ``replica_assignments`` are given (as
            aiokafka).
        TypeError: an argument has the wrong type (the message names it).
        ValueError: a count is zero or below -1 (the message names it).
    """

    def __init__(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        replica_assignments: Mapping[int, Sequence[int]] | None = None,
        topic_configs: Mapping[str, str | None] | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, not {name!r}")
        for arg, value in (
            ("num_partitions", num_partitions),
            ("replication_factor", replication_factor),
        ):
            if _int(arg, value) == 0 or value < -1:
                raise ValueError(f"{arg} must be > 0 (or -1 with replica_assignments), not {value}")
        defaults = num_partitions == -1 or replication_factor == -1
        if defaults == (replica_assignments is None):
            raise IllegalArgumentError(
                "give either num_partitions and replication_factor, or replica_assignments "
                "(with -1 for the other two)"
            )
        if replica_assignments is not None:
            if not isinstance(replica_assignments, Mapping):
                raise TypeError(
                    f"replica_assignments must be a dict of partition: [broker ids], "
                    f"not {replica_assignments!r}"
                )
            for partition, brokers in replica_assignments.items():
                _int("replica_assignments partition", partition)
                if isinstance(brokers, (str, bytes)) or not isinstance(brokers, Sequence):
                    raise TypeError(
                        f"replica_assignments[{partition}] must be a list of broker ids, "
                        f"not {brokers!r}"
                    )
                for b in brokers:
                    _int(f"replica_assignments[{partition}] broker id", b)
        if topic_configs is not None:
            if not isinstance(topic_configs, Mapping):
                raise TypeError(f"topic_configs must be a dict, not {topic_configs!r}")
            for key, config in topic_configs.items():
                if not isinstance(key, str) or not (config is None or isinstance(config, str)):
                    raise TypeError(
                        f"topic_configs must map str names to str values, not {key!r}: {config!r}"
                    )
        self.name = name
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignments: dict[int, list[int]] = {
            p: list(b) for p, b in (replica_assignments or {}).items()
        }
        self.topic_configs: dict[str, str | None] = dict(topic_configs or {})

    def __repr__(self) -> str:
        return (
            f"NewTopic(name={self.name!r}, num_partitions={self.num_partitions}, "
            f"replication_factor={self.replication_factor}, "
            f"replica_assignments={self.replica_assignments!r}, "
            f"topic_configs={self.topic_configs!r})"
        )
