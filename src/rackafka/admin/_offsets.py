"""The admin calls about offsets beyond aiokafka's (Java's ``Admin``): the offsets of
partitions by time (ListOffsets), and changing or deleting a group's committed offsets."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from rackafka.admin import _checks as check
from rackafka.admin._group_core import GroupCore, check_coordinator, check_group_id
from rackafka.admin.offset_spec import ListOffsetsResultInfo, OffsetSpec
from rackafka.errors import (
    UnsupportedVersionError,
    for_code,
)
from rackafka.protocol.apis.list_offsets import LIST_OFFSETS, MAX_TIMESTAMP
from rackafka.protocol.apis.offset_commit import OFFSET_COMMIT
from rackafka.protocol.apis.offset_delete import OFFSET_DELETE
from rackafka.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

_ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}


class OffsetsAdmin(GroupCore):
    """Offsets of partitions and of consumer groups."""

    # -- partitions ------------------------------------------------------------

    async def list_offsets(
        self,
        topic_partitions: dict[TopicPartition, OffsetSpec],
        isolation_level: str = "read_uncommitted",
    ) -> dict[TopicPartition, ListOffsetsResultInfo]:
        """Look up offsets of partitions: the earliest, the latest, the first at a time or
        the one of the largest timestamp (Java's ``Admin.listOffsets``).

        Each partition's leader is asked (one request per leader).

        Arguments:
            topic_partitions: what to look up for each partition, an
                :class:`~rackafka.admin.OffsetSpec` (``OffsetSpec.earliest()``,
                ``.latest()``, ``.for_timestamp(ms)``, ``.max_timestamp()``).
            isolation_level: ``"read_uncommitted"`` (latest is the high watermark) or
                ``"read_committed"`` (latest is the last stable offset: before the
                first record of a transaction still open).

        Returns:
            A :class:`~rackafka.admin.ListOffsetsResultInfo` ``(offset, timestamp,
            leader_epoch)`` by partition. A timestamp after every record's gives
            offset -1 (as Java).

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            UnsupportedVersionError: ``OffsetSpec.max_timestamp()`` was asked of a
                leader older than Kafka 3.0 (it needs ListOffsets v7).
            UnknownTopicOrPartitionError: a partition does not exist.
            BrokerResponseError: the error a leader answered for a partition (the
                message names it); leader changes are retried for
                ``request_timeout_ms``.
        """
        if not isinstance(topic_partitions, Mapping):
            raise TypeError(
                "topic_partitions must be a dict of TopicPartition: OffsetSpec, "
                f"not {topic_partitions!r}"
            )
        wanted: dict[TopicPartition, int] = {}
        for key, spec in topic_partitions.items():
            tp = check.topic_partition("topic_partitions", key)
            if not isinstance(spec, OffsetSpec):
                raise TypeError(f"topic_partitions[{tp}] must be an OffsetSpec, not {spec!r}")
            wanted[tp] = spec.timestamp
        if not isinstance(isolation_level, str):
            raise TypeError(f"isolation_level must be a str, not {isolation_level!r}")
        if isolation_level not in _ISOLATION_LEVELS:
            raise ValueError(
                "isolation_level must be 'read_uncommitted' or 'read_committed', "
                f"not {isolation_level!r}"
            )
        level = _ISOLATION_LEVELS[isolation_level]
        done: dict[TopicPartition, ListOffsetsResultInfo] = {}

        async def attempt() -> dict[TopicPartition, ListOffsetsResultInfo]:
            pending = {tp: ts for tp, ts in wanted.items() if tp not in done}
            if pending:
                await self._list_offsets_once(pending, level, done)
            return {tp: done[tp] for tp in wanted}

        self._check_running()
        return await self._retrying(attempt, "ListOffsets")

    async def _list_offsets_once(
        self,
        pending: dict[TopicPartition, int],
        level: int,
        done: dict[TopicPartition, ListOffsetsResultInfo],
    ) -> None:
        leaders = await self._partition_leaders(pending, "ListOffsets")
        by_leader: dict[int, dict[str, list[dict[str, int]]]] = {}
        for tp, ts in pending.items():
            by_leader.setdefault(leaders[tp], {}).setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": ts}
            )

        async def ask(node: int, topics: dict[str, list[dict[str, int]]]) -> Any:
            max_ts = any(p["timestamp"] == MAX_TIMESTAMP for ps in topics.values() for p in ps)

            def build(version: int) -> Any:
                if max_ts and version < 7:
                    raise UnsupportedVersionError(
                        "list_offsets: OffsetSpec.max_timestamp() needs ListOffsets v7 "
                        f"(Kafka 3.0+); broker {node} speaks ListOffsets up to v{version}"
                    )
                if level and version < 2:
                    raise UnsupportedVersionError(
                        "list_offsets: isolation_level='read_committed' needs ListOffsets "
                        f"v2; broker {node} speaks ListOffsets up to v{version}"
                    )
                return LIST_OFFSETS.Request(
                    replica_id=-1,
                    isolation_level=level,
                    topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
                )

            resp, _ = await self._send(LIST_OFFSETS, build, node)
            return resp

        answers = await asyncio.gather(
            *(ask(n, topics) for n, topics in by_leader.items()), return_exceptions=True
        )

        def accept(tp: TopicPartition, p: Any) -> None:
            if tp in pending:
                epoch = p.leader_epoch if p.leader_epoch >= 0 else None
                done[tp] = ListOffsetsResultInfo(p.offset, p.timestamp, epoch)

        await self._settle_partitions(answers, "list_offsets", accept)

    # -- consumer group offsets -------------------------------------------------

    async def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: dict[TopicPartition, OffsetAndMetadata | int],
        group_coordinator_id: int | None = None,
    ) -> None:
        """Set the committed offsets of a consumer group that has no active members (Java's
        ``Admin.alterConsumerGroupOffsets``): the group's consumers start there next.

        Arguments:
            group_id: the group (created if it does not exist, as a commit does).
            offsets: the offset to commit for each partition: an
                :class:`~rackafka.structs.OffsetAndMetadata` or an int (with empty
                metadata).
            group_coordinator_id: the broker that coordinates the group (default:
                found).

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            UnknownMemberIdError: the group has active members (the coordinator refuses
                a commit from outside the group, as Java reports).
            BrokerResponseError: another error the coordinator answered for the group
                or a partition (the message names it; for example
                :exc:`~rackafka.errors.UnknownTopicOrPartitionError`); a coordinator that
                moved or is loading is retried for ``request_timeout_ms``.
        """
        group = check_group_id(group_id)
        coordinator = check_coordinator(group_coordinator_id)
        if not isinstance(offsets, Mapping):
            raise TypeError(
                f"offsets must be a dict of TopicPartition: OffsetAndMetadata, not {offsets!r}"
            )
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for key, value in offsets.items():
            tp = check.topic_partition("offsets", key)
            if isinstance(value, tuple) and len(value) == 2:
                offset, metadata = value
            else:
                offset, metadata = value, ""
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise TypeError(f"offsets[{tp}] must be an OffsetAndMetadata or int, not {value!r}")
            if offset < 0:
                raise ValueError(f"offsets[{tp}]: the offset must be >= 0, not {offset}")
            if metadata is not None and not isinstance(metadata, str):
                raise TypeError(f"offsets[{tp}]: the metadata must be a str, not {metadata!r}")
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": offset,
                    "committed_leader_epoch": -1,
                    "committed_metadata": metadata,
                }
            )
        self._check_running()
        if not by_topic:
            return
        request = OFFSET_COMMIT.Request(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        )
        resp, _ = await self._coordinated(
            group,
            coordinator,
            OFFSET_COMMIT,
            lambda _v: request,
            lambda r: [p.error_code for t in r.topics for p in t.partitions],
        )
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    tp = TopicPartition(t.name, p.partition_index)
                    raise for_code(p.error_code)(
                        f"alter_consumer_group_offsets: group {group!r}, partition {tp}"
                    )

    async def delete_consumer_group_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartition],
        group_coordinator_id: int | None = None,
    ) -> None:
        """Delete the committed offsets of partitions of a consumer group (Java's
        ``Admin.deleteConsumerGroupOffsets``, KIP-496).

        Arguments:
            group_id: the group.
            partitions: the partitions whose committed offsets go.
            group_coordinator_id: the broker that coordinates the group (default:
                found).

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            GroupIdNotFoundError: the group does not exist.
            GroupSubscribedToTopicError: a member of the group is subscribed to the
                topic of a partition (the message names the partition).
            BrokerResponseError: another error the coordinator answered for the group
                or a partition (the message names it); a coordinator that moved or is
                loading is retried for ``request_timeout_ms``.
        """
        group = check_group_id(group_id)
        coordinator = check_coordinator(group_coordinator_id)
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp in check.check_topic_partitions("partitions", partitions):
            parts = by_topic.setdefault(tp.topic, [])
            if {"partition_index": tp.partition} not in parts:
                parts.append({"partition_index": tp.partition})
        self._check_running()
        if not by_topic:
            return
        request = OFFSET_DELETE.Request(
            group_id=group,
            topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        )
        resp, _ = await self._coordinated(
            group,
            coordinator,
            OFFSET_DELETE,
            lambda _v: request,
            lambda r: [r.error_code],
        )
        if resp.error_code:
            raise for_code(resp.error_code)(f"delete_consumer_group_offsets: group {group!r}")
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    tp = TopicPartition(t.name, p.partition_index)
                    raise for_code(p.error_code)(
                        f"delete_consumer_group_offsets: group {group!r}, partition {tp}"
                    )
