"""The checks of the admin client's method arguments: each raises naming the argument.

``TypeError`` for a value of the wrong type, ``ValueError`` for one out of range; the
:class:`~rackafka.admin.NewTopic`-style types check their own arguments when made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from rackafka._config import INT32_MAX
from rackafka.admin.config_resource import ConfigResource, ConfigResourceType
from rackafka.structs import TopicPartition

__all__ = [
    "check_bool",
    "check_config_resources",
    "check_int",
    "check_list_of",
    "check_names",
    "check_timeout_ms",
    "check_topic_partitions",
]

T = TypeVar("T")


def check_list_of(name: str, value: Any, kind: type[T]) -> list[T]:
    """``value`` as a list if it is a list (or tuple, set) of ``kind`` instances."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence, set)):
        raise TypeError(f"{name} must be a list of {kind.__name__}, not {value!r}")
    items = list(value)
    for item in items:
        if not isinstance(item, kind):
            raise TypeError(f"{name} must be a list of {kind.__name__}, not one with {item!r}")
    return items


def check_names(name: str, value: Any) -> list[str]:
    """``value`` as a list of non-empty strings (topic or group names)."""
    items = check_list_of(name, value, str)
    for item in items:
        if not item:
            raise ValueError(f"{name} has an empty name")
    return items


def check_int(name: str, value: Any, *, low: int = 0, high: int = INT32_MAX) -> int:
    """``value`` if it is an int in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return value


def check_timeout_ms(value: Any, default: int) -> int:
    """The ``timeout_ms`` to send: ``default`` for ``None`` or 0 (as aiokafka), else an int
    of milliseconds > 0 that fits in 32 bits."""
    if value is None:
        return default
    return check_int("timeout_ms", value) or default


def check_config_resources(
    value: Any, *, alter: bool
) -> list[tuple[ConfigResourceType, str, Mapping[str, Any] | None]]:
    """``config_resources`` as ``(type, name, configs)``: names as text (a broker's id may be
    an int), config names (and, to alter, values) ``str``."""
    out = []
    for res in check_list_of("config_resources", value, ConfigResource):
        name = res.name
        if res.resource_type == ConfigResourceType.BROKER:
            if isinstance(name, bool) or not isinstance(name, (int, str)):
                raise TypeError(f"config_resources: a broker's name is its id, not {name!r}")
            try:
                int(name)
            except ValueError:
                raise ValueError(
                    f"config_resources: a broker's name is its id, not {name!r}"
                ) from None
        elif not isinstance(name, str) or not name:
            raise TypeError(f"config_resources: a topic's name must be a str, not {name!r}")
        configs = res.configs
        if configs is not None:
            for key, val in configs.items():
                if not isinstance(key, str):
                    raise TypeError(f"config_resources: config names are str, not {key!r}")
                if alter and not (val is None or isinstance(val, str)):
                    raise TypeError(
                        f"config_resources: the value of {key!r} must be a str, not {val!r}"
                    )
        elif alter:
            raise ValueError(f"config_resources: {res!r} has no configs to set")
        out.append((res.resource_type, str(name), configs))
    return out


def check_topic_partitions(name: str, value: Any) -> list[TopicPartition]:
    """``value`` as a list of :class:`TopicPartition` (aiokafka's are taken too)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence, set)):
        raise TypeError(f"{name} must be a list of TopicPartition, not {value!r}")
    return [topic_partition(name, tp) for tp in value]


def topic_partition(name: str, tp: Any) -> TopicPartition:
    """``tp`` as a :class:`TopicPartition` if it is one (or a ``(topic, partition)`` pair)."""
    if (
        isinstance(tp, tuple)
        and len(tp) == 2
        and isinstance(tp[0], str)
        and isinstance(tp[1], int)
        and not isinstance(tp[1], bool)
    ):
        if tp[1] < 0:
            raise ValueError(f"{name}: partition of {tp!r} must be >= 0")
        return TopicPartition(tp[0], tp[1])
    raise TypeError(f"{name} must hold TopicPartition(topic, partition), not {tp!r}")
