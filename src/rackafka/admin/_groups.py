"""The admin calls about consumer groups."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from rackafka.admin import _checks as check
from rackafka.admin._core import AdminCore
from rackafka.admin.responses import (
    ListedGroup,
    Response,
    describe_groups_response,
)
from rackafka.errors import (
    for_code,
)
from rackafka.protocol.apis.describe_groups import DESCRIBE_GROUPS
from rackafka.protocol.apis.list_groups import LIST_GROUPS
from rackafka.protocol.apis.offset_fetch import OFFSET_FETCH
from rackafka.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)


class GroupsAdmin(AdminCore):
    """Consumer groups and their offsets."""

    # -- groups ----------------------------------------------------------------

    async def find_coordinator(self, group_id: str, coordinator_type: int = 0) -> int:
        """The id of the broker that coordinates a group (``coordinator_type`` 0) or a
        transactional id (1).

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            BrokerResponseError: the error the broker answered (for example
                :exc:`~rackafka.errors.CoordinatorNotAvailableError` once retries for
                ``request_timeout_ms`` did not help).
        """
        if not isinstance(group_id, str):
            raise TypeError(f"group_id must be a str, not {group_id!r}")
        check.check_int("coordinator_type", coordinator_type, high=1)
        self._check_running()
        return await self._retrying(
            lambda: self._client.lookup_coordinator(group_id, coordinator_type),
            "FindCoordinator",
        )

    async def list_consumer_groups(self, broker_ids: list[int] | None = None) -> list[Any]:
        """The consumer groups of the cluster: a ``(group, protocol_type)`` tuple each.

        Arguments:
            broker_ids: the brokers to ask (each lists the groups it coordinates);
                default: every broker.

        Raises:
            TypeError, ValueError: ``broker_ids`` is invalid.
            BrokerResponseError: the error a broker answered (for example
                :exc:`~rackafka.errors.CoordinatorLoadInProgressError`).
        """
        if broker_ids is None:
            metadata = await self._metadata([])
            nodes = [b.node_id for b in metadata.brokers]
        else:
            nodes = check.check_list_of("broker_ids", broker_ids, int)
        groups: dict[ListedGroup, None] = {}
        for node in nodes:
            resp, _ = await self._send(LIST_GROUPS, lambda _v: LIST_GROUPS.Request(), node)
            if resp.error_code:
                raise for_code(resp.error_code)(f"Error listing consumer groups on node {node}")
            for g in resp.groups:
                groups.setdefault(ListedGroup(g.group_id, g.protocol_type))
        return list(groups)

    async def describe_consumer_groups(
        self,
        group_ids: list[str],
        group_coordinator_id: int | None = None,
        include_authorized_operations: bool = False,
    ) -> list[Response]:
        """Describe consumer groups: state, protocol and members.

        Arguments:
            group_ids: the groups.
            group_coordinator_id: the broker that coordinates all of them (default:
                found for each group).
            include_authorized_operations: also return the operations this client
                may perform on each group.

        Returns:
            A ``DescribeGroupsResponse`` per coordinator, as aiokafka's: ``groups``
            holds ``(error_code, group, state, protocol_type, protocol, members,
            authorized_operations)`` tuples, each member ``(member_id, client_id,
            client_host, member_metadata, member_assignment)``. A group that does
            not exist has the state ``"Dead"``.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
        """
        groups = check.check_names("group_ids", group_ids)
        if group_coordinator_id is not None:
            check.check_int("group_coordinator_id", group_coordinator_id)
        check.check_bool("include_authorized_operations", include_authorized_operations)
        by_node: dict[int, list[str]] = {}
        for group in groups:
            node = group_coordinator_id
            if node is None:
                node = await self.find_coordinator(group)
            if group not in by_node.setdefault(node, []):
                by_node[node].append(group)

        async def ask(node: int, names: list[str]) -> Response:
            request = DESCRIBE_GROUPS.Request(
                groups=names, include_authorized_operations=include_authorized_operations
            )
            resp, _ = await self._send(DESCRIBE_GROUPS, lambda _v: request, node)
            return describe_groups_response(resp)

        return list(await asyncio.gather(*(ask(n, names) for n, names in by_node.items())))

    async def list_consumer_group_offsets(
        self,
        group_id: str,
        group_coordinator_id: int | None = None,
        partitions: list[TopicPartition] | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The committed offsets of a consumer group.

        Arguments:
            group_id: the group.
            group_coordinator_id: the broker that coordinates it (default: found).
            partitions: the partitions to ask about (default: every partition the
                group has committed an offset for).

        Returns:
            An :class:`~rackafka.structs.OffsetAndMetadata` by partition; a
            partition asked for without a committed offset has offset -1.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            BrokerResponseError: the error the coordinator answered for the group
                or a partition (retriable ones are retried for ``request_timeout_ms``).
        """
        if not isinstance(group_id, str):
            raise TypeError(f"group_id must be a str, not {group_id!r}")
        if group_coordinator_id is not None:
            check.check_int("group_coordinator_id", group_coordinator_id)
        topics: list[dict[str, Any]] | None = None
        if partitions:
            by_topic: dict[str, list[int]] = {}
            for tp in check.check_topic_partitions("partitions", partitions):
                if tp.partition not in by_topic.setdefault(tp.topic, []):
                    by_topic[tp.topic].append(tp.partition)
            topics = [{"name": t, "partition_indexes": p} for t, p in by_topic.items()]
        elif partitions is not None:
            check.check_topic_partitions("partitions", partitions)

        def build(_version: int) -> Any:
            return OFFSET_FETCH.Request(
                group_id=group_id,
                topics=topics,
                groups=[{"group_id": group_id, "topics": topics}],
                require_stable=False,
            )

        async def attempt() -> dict[TopicPartition, OffsetAndMetadata]:
            node = group_coordinator_id
            if node is None:
                node = await self._client.lookup_coordinator(group_id, 0)
            resp, version = await self._send(OFFSET_FETCH, build, node)
            if version >= 8:
                group = resp.groups[0]
                code, rows = group.error_code, group.topics
            else:
                code, rows = resp.error_code, resp.topics
            if code:
                raise for_code(code)(f"Unable to get the offsets of group {group_id!r}")
            out = {}
            for t in rows:
                for p in t.partitions:
                    if p.error_code:
                        raise for_code(p.error_code)(
                            f"Unable to get offset info for {t.name} and {p.partition_index}"
                        )
                    out[TopicPartition(t.name, p.partition_index)] = OffsetAndMetadata(
                        p.committed_offset, p.metadata
                    )
            return out

        self._check_running()
        return await self._retrying(attempt, "OffsetFetch")
