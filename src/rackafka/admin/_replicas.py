"""The admin calls about replicas: log directories, partition reassignments and leader
elections (Java's ``Admin`` calls; aiokafka has none of them)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from rackafka.admin import _checks as check
from rackafka.admin._core import AdminCore
from rackafka.admin.replicas import (
    ElectionType,
    LogDirDescription,
    PartitionReassignment,
    ReplicaInfo,
)
from rackafka.errors import (
    BrokerNotAvailableError,
    ElectionNotNeededError,
    KafkaError,
    UnsupportedVersionError,
    for_code,
    is_retriable,
)
from rackafka.protocol.apis.describe_log_dirs import DESCRIBE_LOG_DIRS
from rackafka.protocol.apis.elect_leaders import ELECT_LEADERS
from rackafka.protocol.apis.partition_reassignments import (
    ALTER_PARTITION_REASSIGNMENTS,
    LIST_PARTITION_REASSIGNMENTS,
)
from rackafka.structs import TopicPartition

log = logging.getLogger(__name__)


def _by_topic(partitions: list[TopicPartition]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return topics


def _partition_errors(what: str, failed: dict[TopicPartition, tuple[int, str | None]]) -> None:
    """Raise the error of the failed partitions (a non-retriable one first), naming them
    all; nothing when none failed."""
    if not failed:
        return
    ordered = sorted(failed.items(), key=lambda kv: (is_retriable(for_code(kv[1][0])), kv[0]))
    tp, (code, message) = ordered[0]
    others = ", ".join(f"{o}: {for_code(c).__name__}" for o, (c, _m) in ordered[1:])
    text = f"{what}: {tp}" + (f": {message}" if message else "")
    if others:
        text += f" (also {others})"
    raise for_code(code)(text)


class ReplicasAdmin(AdminCore):
    """Log directories, partition reassignments and leader elections."""

    # -- log directories -------------------------------------------------------

    async def describe_log_dirs(
        self, broker_ids: list[int] | None = None
    ) -> dict[int, dict[str, LogDirDescription]]:
        """Describe the log directories of brokers and the replicas in them (Java's
        ``describeLogDirs``).

        Arguments:
            broker_ids: the ids of the brokers to ask (default: every broker of the
                cluster).

        Returns:
            By broker id, by log directory path: a
            :class:`~rackafka.admin.LogDirDescription` (its error, its replicas with
            their sizes, the size and free space of its volume).

        Raises:
            TypeError, ValueError: ``broker_ids`` is not a list of broker ids.
            BrokerNotAvailableError: a broker id is not in the cluster.
            BrokerResponseError: the error a broker answered for the whole request
                (for example :exc:`~rackafka.errors.ClusterAuthorizationFailedError`).
        """
        wanted = None
        if broker_ids is not None:
            wanted = check.check_list_of("broker_ids", broker_ids, int)
            for b in wanted:
                check.check_int("broker_ids", b)
        self._check_running()
        await self._refresh()
        known = set(self._client.cluster.brokers)
        if wanted is None:
            wanted = sorted(known)
        for b in wanted:
            if b not in known:
                raise BrokerNotAvailableError(f"DescribeLogDirs: broker {b} is not in the cluster")
        nodes = list(dict.fromkeys(wanted))

        async def ask(node: int) -> dict[str, LogDirDescription]:
            request = DESCRIBE_LOG_DIRS.Request(topics=None)
            resp, _ = await self._send(DESCRIBE_LOG_DIRS, lambda _v: request, node)
            if resp.error_code:
                raise for_code(resp.error_code)(f"DescribeLogDirs: broker {node}")
            dirs: dict[str, LogDirDescription] = {}
            for r in resp.results:
                dirs[r.log_dir] = LogDirDescription(
                    error=for_code(r.error_code) if r.error_code else None,
                    replicas={
                        TopicPartition(t.name, p.partition_index): ReplicaInfo(
                            p.partition_size, p.offset_lag, p.is_future_key
                        )
                        for t in r.topics
                        for p in t.partitions
                    },
                    total_bytes=None if r.total_bytes < 0 else r.total_bytes,
                    usable_bytes=None if r.usable_bytes < 0 else r.usable_bytes,
                )
            return dirs

        answers = await asyncio.gather(*(ask(n) for n in nodes))
        return dict(zip(nodes, answers))

    # -- partition reassignments -----------------------------------------------

    async def alter_partition_reassignments(
        self,
        reassignments: dict[TopicPartition, list[int] | None],
        timeout_ms: int | None = None,
    ) -> None:
        """Move partitions to other brokers, or cancel their reassignment in progress
        (Java's ``alterPartitionReassignments``, KIP-455).

        The controller starts each reassignment and answers; the replicas then catch up
        in the background (see :meth:`list_partition_reassignments`).

        Arguments:
            reassignments: by partition, its new replicas (broker ids, the first the
                preferred leader), or ``None`` to cancel its reassignment in progress.
            timeout_ms: how long the controller may take before it answers (default:
                ``request_timeout_ms``).

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            BrokerResponseError: once every partition was answered, the error of a
                partition the controller refused, naming it (and the others that
                failed): for example
                :exc:`~rackafka.errors.InvalidReplicationAssignmentError` (a broker
                that does not exist),
                :exc:`~rackafka.errors.NoReassignmentInProgressError` (a cancel with
                nothing to cancel),
                :exc:`~rackafka.errors.UnknownTopicOrPartitionError`; the partitions
                not named were reassigned.
        """
        if not isinstance(reassignments, Mapping):
            raise TypeError(
                "reassignments must be a dict of TopicPartition: list of broker ids or None, "
                f"not {reassignments!r}"
            )
        wanted: dict[TopicPartition, list[int] | None] = {}
        for key, replicas in reassignments.items():
            tp = check.topic_partition("reassignments", key)
            if replicas is not None:
                replicas = check.check_list_of(f"reassignments[{tp}]", replicas, int)
                for b in replicas:
                    check.check_int(f"reassignments[{tp}]", b)
                if not replicas:
                    raise ValueError(f"reassignments[{tp}] is empty (None cancels)")
                if len(set(replicas)) != len(replicas):
                    raise ValueError(f"reassignments[{tp}] names a broker twice: {replicas}")
            wanted[tp] = replicas
        timeout = check.check_timeout_ms(timeout_ms, self._request_timeout_ms)
        if not wanted:
            return
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, replicas in wanted.items():
            topics.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "replicas": replicas}
            )
        request = ALTER_PARTITION_REASSIGNMENTS.Request(
            timeout_ms=timeout,
            topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
        )

        def codes(r: Any) -> list[int]:
            parts = [p.error_code for t in r.responses for p in t.partitions]
            return [r.error_code, *parts] if r.error_code else parts

        resp = await self._send_to_controller(
            ALTER_PARTITION_REASSIGNMENTS, lambda _v: request, codes, timeout
        )
        if resp.error_code:
            raise for_code(resp.error_code)(
                f"AlterPartitionReassignments: {resp.error_message or 'refused'}"
            )
        failed = {
            TopicPartition(t.name, p.partition_index): (p.error_code, p.error_message)
            for t in resp.responses
            for p in t.partitions
            if p.error_code
        }
        _partition_errors("AlterPartitionReassignments", failed)

    async def cancel_partition_reassignments(
        self, partitions: list[TopicPartition], timeout_ms: int | None = None
    ) -> None:
        """Cancel the reassignments in progress of partitions: their replicas go back
        to what they were (``alter_partition_reassignments`` with ``None`` for each).

        Arguments:
            partitions: the partitions.
            timeout_ms: how long the controller may take before it answers (default:
                ``request_timeout_ms``).

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            NoReassignmentInProgressError: a partition has no reassignment in
                progress (the others were cancelled).
            BrokerResponseError: another error of a partition, naming it.
        """
        tps = check.check_topic_partitions("partitions", partitions)
        await self.alter_partition_reassignments(dict.fromkeys(tps), timeout_ms)

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None = None, timeout_ms: int | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress (Java's ``listPartitionReassignments``).

        Arguments:
            partitions: the partitions to ask about (default: every partition).
            timeout_ms: how long the controller may take before it answers (default:
                ``request_timeout_ms``).

        Returns:
            By partition being reassigned: a
            :class:`~rackafka.admin.PartitionReassignment` (replicas, the ones being
            added, the ones to remove). A partition not being reassigned, or that does
            not exist, is not in it.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            BrokerResponseError: the error the controller answered (for example
                :exc:`~rackafka.errors.ClusterAuthorizationFailedError`).
        """
        tps = None if partitions is None else check.check_topic_partitions("partitions", partitions)
        timeout = check.check_timeout_ms(timeout_ms, self._request_timeout_ms)
        if tps is not None and not tps:
            return {}
        request = LIST_PARTITION_REASSIGNMENTS.Request(
            timeout_ms=timeout,
            topics=None
            if tps is None
            else [{"name": t, "partition_indexes": ps} for t, ps in _by_topic(tps).items()],
        )
        resp = await self._send_to_controller(
            LIST_PARTITION_REASSIGNMENTS, lambda _v: request, lambda r: [r.error_code], timeout
        )
        if resp.error_code:
            raise for_code(resp.error_code)(
                f"ListPartitionReassignments: {resp.error_message or 'refused'}"
            )
        return {
            TopicPartition(t.name, p.partition_index): PartitionReassignment(
                list(p.replicas), list(p.adding_replicas), list(p.removing_replicas)
            )
            for t in resp.topics
            for p in t.partitions
        }

    # -- leader elections ------------------------------------------------------

    async def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: list[TopicPartition] | None = None,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, type[KafkaError] | None]:
        """Elect the leaders of partitions (Java's ``electLeaders``, KIP-460).

        Arguments:
            election_type: :attr:`ElectionType.PREFERRED
                <rackafka.admin.ElectionType.PREFERRED>` (the preferred replica
                leads again) or :attr:`~rackafka.admin.ElectionType.UNCLEAN`.
            partitions: the partitions (default: every partition of the cluster).
            timeout_ms: how long the controller may take before it answers (default:
                ``request_timeout_ms``).

        Returns:
            By partition answered: ``None`` when a leader was elected, or
            :exc:`~rackafka.errors.ElectionNotNeededError` (the class) when none was
            needed (the preferred replica already leads, or, unclean, a leader is in
            sync), which is success as for Kafka's ``kafka-leader-election`` tool.
            With ``partitions=None`` Kafka answers only the partitions it elected.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            BrokerResponseError: once every partition was answered, the error of a
                partition that failed, naming it (and the others that failed): for
                example :exc:`~rackafka.errors.UnknownTopicOrPartitionError`,
                :exc:`~rackafka.errors.PreferredLeaderNotAvailableError`,
                :exc:`~rackafka.errors.EligibleLeadersNotAvailableError`.
        """
        if not isinstance(election_type, ElectionType):
            raise TypeError(
                f"election_type must be ElectionType.PREFERRED or UNCLEAN, not {election_type!r}"
            )
        tps = None if partitions is None else check.check_topic_partitions("partitions", partitions)
        timeout = check.check_timeout_ms(timeout_ms, self._request_timeout_ms)
        if tps is not None and not tps:
            return {}
        request = ELECT_LEADERS.Request(
            election_type=int(election_type),
            topic_partitions=None
            if tps is None
            else [{"topic": t, "partitions": ps} for t, ps in _by_topic(tps).items()],
            timeout_ms=timeout,
        )

        def codes(r: Any) -> list[int]:
            parts = [p.error_code for t in r.replica_election_results for p in t.partition_result]
            return [r.error_code, *parts] if r.error_code else parts

        def build(version: int) -> Any:
            if version < 1 and (tps is None or election_type != ElectionType.PREFERRED):
                raise UnsupportedVersionError(
                    "ElectLeaders: the broker speaks only v0 (preferred elections of "
                    "named partitions)"
                )
            return request

        resp = await self._send_to_controller(ELECT_LEADERS, build, codes, timeout)
        if resp.error_code:
            raise for_code(resp.error_code)(f"ElectLeaders: {election_type.name} election")
        results: dict[TopicPartition, type[KafkaError] | None] = {}
        failed: dict[TopicPartition, tuple[int, str | None]] = {}
        for t in resp.replica_election_results:
            for p in t.partition_result:
                tp = TopicPartition(t.topic, p.partition_id)
                if not p.error_code:
                    results[tp] = None
                elif p.error_code == ElectionNotNeededError.errno:
                    results[tp] = ElectionNotNeededError
                else:
                    failed[tp] = (p.error_code, p.error_message)
        _partition_errors(f"ElectLeaders ({election_type.name})", failed)
        return results
