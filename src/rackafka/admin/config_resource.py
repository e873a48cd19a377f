"""Config resources: :class:`ConfigResource` and :class:`ConfigResourceType`
(``rackafka.admin.config_resource``, aiokafka's path)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Any

__all__ = ["ConfigResource", "ConfigResourceType"]


class ConfigResourceType(IntEnum):
    """The kinds of resource that have configs (Kafka's resource type codes)."""

    BROKER = 4
    TOPIC = 2


class ConfigResource:
    """A resource whose configs to describe or alter.

    Arguments:
        resource_type (ConfigResourceType): the kind of resource, or its name
            (``"topic"``, ``"BROKER"``).
        name (str): the topic name, or the broker id (an int or its text).
        configs ({str: str}): for
            :meth:`~rackafka.admin.AIOKafkaAdminClient.alter_configs`, the
            values to set; for
            :meth:`~rackafka.admin.AIOKafkaAdminClient.describe_configs`, the
            names to describe (``None``: all of them).

    Raises:
        KeyError: ``resource_type`` names no resource type (as aiokafka).
        TypeError: ``configs`` is not a dict.
    """

    def __init__(
        self,
        resource_type: ConfigResourceType | str,
        name: str | int,
        configs: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(resource_type, ConfigResourceType):
            try:
                resource_type = ConfigResourceType[str(resource_type).upper()]
            except KeyError:
                raise KeyError(
                    f"resource_type must be one of {[t.name for t in ConfigResourceType]}, "
                    f"not {resource_type!r}"
                ) from None
        if configs is not None and not isinstance(configs, Mapping):
            raise TypeError(f"configs must be a dict or None, not {configs!r}")
        self.resource_type = resource_type
        self.name = name
        self.configs = configs

    def __repr__(self) -> str:
        return f"ConfigResource({self.resource_type.name}, {self.name!r}, configs={self.configs!r})"
