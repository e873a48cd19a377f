"""The operations of
:meth:`~rackafka.admin.AIOKafkaAdminClient.incremental_alter_configs` (Java's
``AlterConfigOp``, KIP-339): :class:`AlterConfigOp` and :class:`AlterConfigOpType`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["AlterConfigOp", "AlterConfigOpType"]


class AlterConfigOpType(IntEnum):
    """What an :class:`AlterConfigOp` does to a config (Kafka's codes)."""

    #: Set the config to the value.
    SET = 0
    #: Remove the config from the resource: it takes its default again.
    DELETE = 1
    #: Add the value (or comma-separated values) to a list config.
    APPEND = 2
    #: Remove the value (or comma-separated values) from a list config.
    SUBTRACT = 3


@dataclass(frozen=True)
class AlterConfigOp:
    """A change of one config of a resource.

    Arguments:
        name: the config's name (``"retention.ms"``).
        value: the value to set, append or subtract (a str, as Kafka takes it); ``None``
            for :attr:`~AlterConfigOpType.DELETE`.
        op: the operation (default: :attr:`~AlterConfigOpType.SET`).

    Raises:
        TypeError, ValueError: an argument is invalid (the message names it).
    """

    name: str
    value: str | None = None
    op: AlterConfigOpType = AlterConfigOpType.SET

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a config name (a non-empty str), not {self.name!r}")
        if not isinstance(self.op, AlterConfigOpType):
            raise TypeError(f"op must be an AlterConfigOpType, not {self.op!r}")
        if self.op == AlterConfigOpType.DELETE:
            if self.value is not None:
                raise ValueError(f"value must be None to DELETE {self.name!r}, not {self.value!r}")
        elif not isinstance(self.value, str):
            raise TypeError(
                f"value must be a str to {self.op.name} {self.name!r}, not {self.value!r}"
            )
