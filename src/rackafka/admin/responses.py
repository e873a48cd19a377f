"""The answers of the admin client, shaped as aiokafka 0.14's admin client returns them.

aiokafka's admin methods return its protocol response objects: fields as attributes,
each entry of an array a tuple in the field order of the protocol version aiokafka
uses, and ``to_object()`` for nested dicts.  :class:`Response` is that shape; the
entries are named tuples (a tuple that also has the field names as attributes), so
code that unpacks them, indexes them or reads them by name sees what it saw with
aiokafka.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = [
    "AlterConfigsResult",
    "ConfigEntry",
    "ConfigSynonym",
    "DeleteRecordsPartition",
    "DeleteRecordsTopic",
    "DescribeConfigsResult",
    "GroupDescription",
    "GroupMember",
    "ListedGroup",
    "MetadataBroker",
    "MetadataPartition",
    "MetadataTopic",
    "Response",
    "TopicError",
    "TopicErrorCode",
    "describe_configs_response",
    "describe_groups_response",
    "metadata_response",
]


class TopicError(NamedTuple):
    """A topic's answer to CreateTopics or CreatePartitions."""

    topic: str
    error_code: int
    error_message: str | None


class TopicErrorCode(NamedTuple):
    """A topic's answer to DeleteTopics."""

    topic: str
    error_code: int


class ConfigSynonym(NamedTuple):
    """Where else a config's value is set (``include_synonyms``)."""

    config_name: str
    config_value: str | None
    config_source: int


class ConfigEntry(NamedTuple):
    """One config of a described resource."""

    config_names: str
    config_value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    config_synonyms: list[ConfigSynonym]


class DescribeConfigsResult(NamedTuple):
    """A resource's answer to DescribeConfigs."""

    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    config_entries: list[ConfigEntry]


class AlterConfigsResult(NamedTuple):
    """A resource's answer to AlterConfigs."""

    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str


class GroupMember(NamedTuple):
    """A member of a described group."""

    member_id: str
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


class GroupDescription(NamedTuple):
    """A group's answer to DescribeGroups."""

    error_code: int
    group: str
    state: str
    protocol_type: str
    protocol: str
    members: list[GroupMember]
    authorized_operations: int


class ListedGroup(NamedTuple):
    """A group as ListGroups names it."""

    group: str
    protocol_type: str


class DeleteRecordsPartition(NamedTuple):
    """A partition's answer to DeleteRecords."""

    partition_index: int
    low_watermark: int
    error_code: int


class DeleteRecordsTopic(NamedTuple):
    """A topic's answer to DeleteRecords."""

    name: str
    partitions: list[DeleteRecordsPartition]


class MetadataBroker(NamedTuple):
    """A broker of the cluster."""

    node_id: int
    host: str
    port: int
    rack: str | None


class MetadataPartition(NamedTuple):
    """A partition of a described topic."""

    error_code: int
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]


class MetadataTopic(NamedTuple):
    """A described topic."""

    error_code: int
    topic: str
    is_internal: bool
    partitions: list[MetadataPartition]


def _plain(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {k: _plain(v) for k, v in zip(value._fields, value, strict=True)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Response:
    """A broker's answer: each field an attribute (``response.topic_errors``).

    Arguments:
        name: the response's name (``"CreateTopicsResponse"``), shown by ``repr``.
        fields: the fields, in protocol order.
    """

    def __init__(self, name: str, **fields: Any) -> None:
        self.__dict__.update(fields)
        self.__dict__["_name"] = name
        self.__dict__["_fields"] = tuple(fields)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"{self._name} has no field {name!r}")

    def to_object(self) -> dict[str, Any]:
        """The fields as a dict, entries as dicts too (aiokafka's ``to_object()``)."""
        return {k: _plain(getattr(self, k)) for k in self._fields}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Response):
            return NotImplemented
        return self._name == other._name and self.to_object() == other.to_object()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{self._name}({inner})"


def metadata_response(raw: Any) -> Response:
    """A Metadata answer in aiokafka's shape (its v5 field names)."""
    return Response(
        "MetadataResponse",
        throttle_time_ms=raw.throttle_time_ms,
        brokers=[MetadataBroker(b.node_id, b.host, b.port, b.rack) for b in raw.brokers],
        cluster_id=raw.cluster_id,
        controller_id=raw.controller_id,
        topics=[
            MetadataTopic(
                t.error_code,
                t.name,
                t.is_internal,
                [
                    MetadataPartition(
                        p.error_code,
                        p.partition_index,
                        p.leader_id,
                        list(p.replica_nodes),
                        list(p.isr_nodes),
                        list(p.offline_replicas),
                    )
                    for p in t.partitions
                ],
            )
            for t in raw.topics
        ],
    )


def describe_configs_response(resp: Any) -> Response:
    """A DescribeConfigs answer in aiokafka's shape."""
    return Response(
        "DescribeConfigsResponse",
        throttle_time_ms=resp.throttle_time_ms,
        resources=[
            DescribeConfigsResult(
                r.error_code,
                r.error_message,
                r.resource_type,
                r.resource_name,
                [
                    ConfigEntry(
                        c.name,
                        c.value,
                        c.read_only,
                        c.config_source,
                        c.is_sensitive,
                        [ConfigSynonym(s.name, s.value, s.source) for s in c.synonyms],
                    )
                    for c in r.configs
                ],
            )
            for r in resp.results
        ],
    )


def describe_groups_response(resp: Any) -> Response:
    """A DescribeGroups answer in aiokafka's shape."""
    return Response(
        "DescribeGroupsResponse",
        throttle_time_ms=resp.throttle_time_ms,
        groups=[
            GroupDescription(
                g.error_code,
                g.group_id,
                g.group_state,
                g.protocol_type,
                g.protocol_data,
                [
                    GroupMember(
                        m.member_id,
                        m.client_id,
                        m.client_host,
                        bytes(m.member_metadata),
                        bytes(m.member_assignment),
                    )
                    for m in g.members
                ],
                g.authorized_operations,
            )
            for g in resp.groups
        ],
    )
