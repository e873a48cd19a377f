"""The admin calls about consumer groups."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from rackafka.admin import _checks as check
from rackafka.admin._group_core import GroupCore, check_coordinator
from rackafka.admin.descriptions import ConsumerGroupDescription, MemberDescription
from rackafka.admin.responses import (
    GroupDescription,
    GroupMember,
    ListedGroup,
    Response,
    describe_groups_response,
)
from rackafka.errors import (
    GroupIdNotFoundError,
    KafkaError,
    KafkaProtocolError,
    UnsupportedVersionError,
    for_code,
)
from rackafka.protocol.apis import consumer_protocol
from rackafka.protocol.apis.consumer_group_describe import CONSUMER_GROUP_DESCRIBE
from rackafka.protocol.apis.delete_groups import DELETE_GROUPS
from rackafka.protocol.apis.describe_groups import DESCRIBE_GROUPS
from rackafka.protocol.apis.list_groups import LIST_GROUPS
from rackafka.protocol.apis.offset_fetch import OFFSET_FETCH
from rackafka.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)


class GroupsAdmin(GroupCore):
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
            not exist has the state ``"Dead"``. A group of the KIP-848 ``consumer``
            protocol (which DescribeGroups answers as ``"Dead"``) is described with
            ConsumerGroupDescribe in the same shape: its protocol is the broker's
            assignor, each member's metadata a version 3 subscription (its topics
            and rack) and its assignment a consumer protocol assignment, as a classic
            member's.

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
            out = describe_groups_response(resp)
            await self._fill_consumer_groups(node, out, include_authorized_operations)
            return out

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

    async def _fill_consumer_groups(
        self, node: int, out: Response, include_authorized_operations: bool
    ) -> None:
        """Describe again with ConsumerGroupDescribe the groups of ``out`` that
        DescribeGroups answered ``Dead`` without members (KIP-848 groups look so), and put
        those it knows in ``out`` in DescribeGroups' shape."""
        dead = [g.group for g in out.groups if g.state == "Dead" and not g.error_code]
        if not dead:
            return
        request = CONSUMER_GROUP_DESCRIBE.Request(
            group_ids=dead, include_authorized_operations=include_authorized_operations
        )
        try:
            resp, _ = await self._send(CONSUMER_GROUP_DESCRIBE, lambda _v: request, node)
        except UnsupportedVersionError:
            return  # a broker before KIP-848: Dead is the answer
        except KafkaError as exc:
            # aiokafka's answer stands; the second look is a courtesy.
            log.debug("ConsumerGroupDescribe of %s on %s: %s", dead, node, exc)
            return
        found = {g.group_id: g for g in resp.groups if not g.error_code}
        out.__dict__["groups"] = [
            _as_described_group(found[g.group]) if g.group in found else g for g in out.groups
        ]

    async def delete_consumer_groups(
        self, group_ids: list[str], group_coordinator_id: int | None = None
    ) -> None:
        """Delete consumer groups and their committed offsets (Java's
        ``Admin.deleteConsumerGroups``); each must be empty.

        Every group is tried, even after one is refused; then the first refusal (in
        the order of ``group_ids``) is raised.

        Arguments:
            group_ids: the groups.
            group_coordinator_id: the broker that coordinates all of them (default:
                found for each group).

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            NonEmptyGroupError: a group has members (the message names it).
            GroupIdNotFoundError: a group does not exist (the message names it).
            BrokerResponseError: another error the coordinator answered for a group;
                a coordinator that moved or is loading is retried for
                ``request_timeout_ms``.
        """
        groups = list(dict.fromkeys(check.check_names("group_ids", group_ids)))
        coordinator = check_coordinator(group_coordinator_id)
        self._check_running()

        async def delete(group: str) -> None:
            request = DELETE_GROUPS.Request(groups_names=[group])
            resp, _ = await self._coordinated(
                group,
                coordinator,
                DELETE_GROUPS,
                lambda _v: request,
                lambda r: [g.error_code for g in r.results if g.group_id == group],
            )
            for g in resp.results:
                if g.group_id == group and g.error_code:
                    raise for_code(g.error_code)(f"delete_consumer_groups: group {group!r}")

        results = await asyncio.gather(*(delete(g) for g in groups), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def describe_groups(self, group_ids: list[str]) -> dict[str, ConsumerGroupDescription]:
        """Describe consumer groups of either protocol (Java's
        ``Admin.describeConsumerGroups``).

        A group of the KIP-848 ``consumer`` protocol is described with
        ConsumerGroupDescribe (its epochs, each member's rack, current and target
        assignment); a classic one (ConsumerGroupDescribe answers it is not a
        consumer group) with DescribeGroups, each member's assignment and rack decoded
        from the consumer protocol.

        Arguments:
            group_ids: the groups.

        Returns:
            A :class:`~rackafka.admin.ConsumerGroupDescription` by group id.

        Raises:
            TypeError, ValueError: ``group_ids`` is invalid (the message names it).
            GroupIdNotFoundError: a group does not exist (the message names it).
            BrokerResponseError: another error a coordinator answered for a group (for
                example :exc:`~rackafka.errors.GroupAuthorizationFailedError`); a
                coordinator that moved or is loading is retried for
                ``request_timeout_ms``.
        """
        groups = list(dict.fromkeys(check.check_names("group_ids", group_ids)))
        self._check_running()
        found = await asyncio.gather(*(self._describe_group(g) for g in groups))
        return dict(zip(groups, found))

    async def _describe_group(self, group: str) -> ConsumerGroupDescription:
        request = CONSUMER_GROUP_DESCRIBE.Request(
            group_ids=[group], include_authorized_operations=False
        )
        try:
            resp, node = await self._coordinated(
                group,
                None,
                CONSUMER_GROUP_DESCRIBE,
                lambda _v: request,
                lambda r: [g.error_code for g in r.groups],
            )
        except UnsupportedVersionError:
            resp = None  # a broker before KIP-848: every group is classic
        if resp is not None:
            [g] = resp.groups
            if not g.error_code:
                return _consumer_description(g, node)
            if g.error_code != GroupIdNotFoundError.errno:
                raise for_code(g.error_code)(
                    f"describe_groups: group {group!r}: {g.error_message or ''}".rstrip(": ")
                )
        classic = DESCRIBE_GROUPS.Request(groups=[group], include_authorized_operations=False)
        resp, node = await self._coordinated(
            group,
            None,
            DESCRIBE_GROUPS,
            lambda _v: classic,
            lambda r: [g.error_code for g in r.groups],
        )
        [d] = resp.groups
        if d.error_code:
            raise for_code(d.error_code)(f"describe_groups: group {group!r}")
        if d.group_state == "Dead":
            raise GroupIdNotFoundError(f"describe_groups: group {group!r} does not exist")
        return _classic_description(d, node)


def _partitions(topics: Any) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t.topic_name, p) for t in topics for p in t.partitions)


def _consumer_description(g: Any, node: int) -> ConsumerGroupDescription:
    """A ConsumerGroupDescribe answer for a group as a description."""
    return ConsumerGroupDescription(
        group_id=g.group_id,
        is_simple_consumer_group=False,
        group_type="consumer",
        state=g.group_state,
        partition_assignor=g.assignor_name,
        coordinator=node,
        members=[
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                host=m.client_host,
                rack=m.rack_id,
                assignment=_partitions(m.assignment.topic_partitions),
                target_assignment=_partitions(m.target_assignment.topic_partitions),
                member_epoch=m.member_epoch,
            )
            for m in g.members
        ],
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
    )


def _classic_description(d: Any, node: int) -> ConsumerGroupDescription:
    """A DescribeGroups answer for a classic group as a description: a member's
    assignment and rack decoded when the group speaks the consumer protocol."""
    members = []
    for m in d.members:
        assignment: frozenset[TopicPartition] = frozenset()
        rack = None
        if d.protocol_type == "consumer":
            try:
                if m.member_assignment:
                    decoded = consumer_protocol.decode_assignment(bytes(m.member_assignment))
                    assignment = frozenset(
                        TopicPartition(t.topic, p)
                        for t in decoded.assigned_partitions
                        for p in t.partitions
                    )
                if m.member_metadata:
                    sub = consumer_protocol.decode_subscription(bytes(m.member_metadata))
                    rack = getattr(sub, "rack_id", None) or None
            except KafkaProtocolError as exc:
                log.debug("group %s member %s: %s", d.group_id, m.member_id, exc)
        members.append(
            MemberDescription(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                host=m.client_host,
                rack=rack,
                assignment=assignment,
            )
        )
    return ConsumerGroupDescription(
        group_id=d.group_id,
        is_simple_consumer_group=not d.protocol_type,
        group_type="classic",
        state=d.group_state,
        partition_assignor=d.protocol_data,
        coordinator=node,
        members=members,
    )


def _as_described_group(g: Any) -> GroupDescription:
    """A ConsumerGroupDescribe answer for a group in DescribeGroups' (aiokafka's) shape."""
    members = []
    for m in g.members:
        owned: dict[str, list[int]] = {}
        for t in m.assignment.topic_partitions:
            owned.setdefault(t.topic_name, []).extend(t.partitions)
        subscription = consumer_protocol.encode_subscription(
            3, {"topics": list(m.subscribed_topic_names), "rack_id": m.rack_id}
        )
        assignment = consumer_protocol.encode_assignment(
            3,
            {
                "assigned_partitions": [
                    {"topic": t, "partitions": sorted(ps)} for t, ps in owned.items()
                ],
                "user_data": None,
            },
        )
        members.append(
            GroupMember(m.member_id, m.client_id, m.client_host, subscription, assignment)
        )
    return GroupDescription(
        0, g.group_id, g.group_state, "consumer", g.assignor_name, members, g.authorized_operations
    )
