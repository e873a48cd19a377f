"""The admin calls about topics, partitions and records."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from rackafka.admin import _checks as check
from rackafka.admin._core import AdminCore
from rackafka.admin.new_partitions import NewPartitions
from rackafka.admin.new_topic import NewTopic
from rackafka.admin.records_to_delete import RecordsToDelete
from rackafka.admin.responses import (
    Response,
    TopicError,
    TopicErrorCode,
)
from rackafka.errors import (
    for_code,
)
from rackafka.protocol.apis.create_partitions import CREATE_PARTITIONS
from rackafka.protocol.apis.create_topics import CREATE_TOPICS
from rackafka.protocol.apis.delete_records import DELETE_RECORDS
from rackafka.protocol.apis.delete_topics import DELETE_TOPICS
from rackafka.structs import TopicPartition

log = logging.getLogger(__name__)


class TopicsAdmin(AdminCore):
    """Topics, partitions and records."""

    # -- topics ----------------------------------------------------------------

    async def create_topics(
        self,
        new_topics: list[NewTopic],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> Response:
        """Create topics.

        Arguments:
            new_topics: the topics, as :class:`~rackafka.admin.NewTopic` objects.
            timeout_ms: how long the brokers may take to create them before they
                answer (default: ``request_timeout_ms``).
            validate_only: only check that the topics could be created.

        Returns:
            The answer, with ``topic_errors``: a ``(topic, error_code, error_message)``
            tuple per topic (code 0 and message ``None`` when it was created), as
            aiokafka's ``CreateTopicsResponse``.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
        """
        topics = check.check_list_of("new_topics", new_topics, NewTopic)
        timeout = check.check_timeout_ms(timeout_ms, self._request_timeout_ms)
        check.check_bool("validate_only", validate_only)
        request = CREATE_TOPICS.Request(
            topics=[
                {
                    "name": t.name,
                    "num_partitions": t.num_partitions,
                    "replication_factor": t.replication_factor,
                    "assignments": [
                        {"partition_index": p, "broker_ids": b}
                        for p, b in t.replica_assignments.items()
                    ],
                    "configs": [{"name": k, "value": v} for k, v in t.topic_configs.items()],
                }
                for t in topics
            ],
            timeout_ms=timeout,
            validate_only=validate_only,
        )
        resp = await self._send_to_controller(
            CREATE_TOPICS,
            lambda _v: request,
            lambda r: [t.error_code for t in r.topics],
            timeout,
        )
        if not validate_only:
            await self._await_metadata(
                {t.name: 1 for t in resp.topics if not t.error_code}, timeout
            )
        return Response(
            "CreateTopicsResponse",
            throttle_time_ms=resp.throttle_time_ms,
            topic_errors=[TopicError(t.name, t.error_code, t.error_message) for t in resp.topics],
        )

    async def delete_topics(self, topics: list[str], timeout_ms: int | None = None) -> Response:
        """Delete topics.

        Arguments:
            topics: the names of the topics.
            timeout_ms: how long the brokers may take to delete them before they
                answer (default: ``request_timeout_ms``).

        Returns:
            The answer, with ``topic_error_codes``: a ``(topic, error_code)`` tuple
            per topic, as aiokafka's ``DeleteTopicsResponse``.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
        """
        names = check.check_names("topics", topics)
        timeout = check.check_timeout_ms(timeout_ms, self._request_timeout_ms)
        request = DELETE_TOPICS.Request(topic_names=names, timeout_ms=timeout)
        resp = await self._send_to_controller(
            DELETE_TOPICS,
            lambda _v: request,
            lambda r: [t.error_code for t in r.responses],
            timeout,
        )
        await self._await_metadata(
            {t.name: 0 for t in resp.responses if not t.error_code}, timeout, gone=True
        )
        return Response(
            "DeleteTopicsResponse",
            throttle_time_ms=resp.throttle_time_ms,
            topic_error_codes=[TopicErrorCode(t.name, t.error_code) for t in resp.responses],
        )

    async def list_topics(self) -> list[str]:
        """The names of every topic of the cluster (internal ones included)."""
        raw = await self._metadata(None)
        return [t.name for t in raw.topics]

    async def describe_topics(self, topics: list[str] | None = None) -> list[Any]:
        """Describe topics: their partitions, leaders, replicas and in-sync replicas.

        Arguments:
            topics: the names of the topics (default: every topic).

        Returns:
            A dict per topic, as aiokafka's: ``error_code``, ``topic``,
            ``is_internal`` and ``partitions`` (dicts with ``error_code``,
            ``partition``, ``leader``, ``replicas``, ``isr``, ``offline_replicas``).
            A topic that does not exist has the error code 3
            (``UNKNOWN_TOPIC_OR_PARTITION``) and no partitions; it is not created.

        Raises:
            TypeError, ValueError: ``topics`` is not a list of names.
        """
        names = None if topics is None else check.check_names("topics", topics)
        metadata = await self._get_cluster_metadata(names)
        topics_out: list[Any] = metadata.to_object()["topics"]
        return topics_out

    async def describe_cluster(self) -> dict[str, Any]:
        """Describe the cluster.

        Returns:
            A dict, as aiokafka's: ``throttle_time_ms``, ``brokers`` (dicts with
            ``node_id``, ``host``, ``port``, ``rack``), ``cluster_id`` and
            ``controller_id`` (in a KRaft cluster, a broker that forwards to the
            controller, as Kafka answers).
        """
        obj = (await self._get_cluster_metadata([])).to_object()
        obj.pop("topics")
        return obj

    async def create_partitions(
        self,
        topic_partitions: dict[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
    ) -> Response:
        """Add partitions to existing topics.

        Arguments:
            topic_partitions: the new partition count of each topic, by name.
            timeout_ms: how long the brokers may take before they answer (default:
                ``request_timeout_ms``).
            validate_only: only check that the partitions could be created.

        Returns:
            The answer, with ``topic_errors``: a ``(topic, error_code,
            error_message)`` tuple per topic, as aiokafka's
            ``CreatePartitionsResponse``.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            BrokerResponseError: the error a broker answered for a topic (for
                example :exc:`~rackafka.errors.InvalidPartitionsError`), as aiokafka.
        """
        if not isinstance(topic_partitions, Mapping):
            raise TypeError(
                f"topic_partitions must be a dict of topic: NewPartitions, not {topic_partitions!r}"
            )
        for topic, new in topic_partitions.items():
            if not isinstance(topic, str) or not topic:
                raise TypeError(f"topic_partitions: topic names are str, not {topic!r}")
            if not isinstance(new, NewPartitions):
                raise TypeError(f"topic_partitions[{topic!r}] must be NewPartitions, not {new!r}")
        timeout = check.check_timeout_ms(timeout_ms, self._request_timeout_ms)
        check.check_bool("validate_only", validate_only)
        request = CREATE_PARTITIONS.Request(
            topics=[
                {
                    "name": topic,
                    "count": new.total_count,
                    "assignments": None
                    if new.new_assignments is None
                    else [{"broker_ids": list(b)} for b in new.new_assignments],
                }
                for topic, new in topic_partitions.items()
            ],
            timeout_ms=timeout,
            validate_only=validate_only,
        )
        resp = await self._send_to_controller(
            CREATE_PARTITIONS,
            lambda _v: request,
            lambda r: [t.error_code for t in r.results],
            timeout,
        )
        for t in resp.results:
            if t.error_code:
                raise for_code(t.error_code)(
                    f"Could not create partitions for {t.name}: {t.error_message}"
                )
        if not validate_only:
            await self._await_metadata(
                {t: new.total_count for t, new in topic_partitions.items()}, timeout
            )
        return Response(
            "CreatePartitionsResponse",
            throttle_time_ms=resp.throttle_time_ms,
            topic_errors=[TopicError(t.name, t.error_code, t.error_message) for t in resp.results],
        )

    # -- records ---------------------------------------------------------------

    async def delete_records(
        self,
        records_to_delete: dict[TopicPartition, RecordsToDelete],
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, int]:
        """Delete the records of partitions before an offset (move their log start).

        Arguments:
            records_to_delete: a :class:`~rackafka.admin.RecordsToDelete` by partition.
            timeout_ms: how long the leaders may wait for their followers before they
                answer (default: ``request_timeout_ms``).

        Returns:
            The new low watermark (log start offset) of each partition.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
            UnknownTopicOrPartitionError: a partition does not exist.
            BrokerResponseError: the error a leader answered for a partition (for
                example :exc:`~rackafka.errors.OffsetOutOfRangeError` for an offset past
                the high watermark); leader changes are retried for
                ``request_timeout_ms``.
        """
        if not isinstance(records_to_delete, Mapping):
            raise TypeError(
                "records_to_delete must be a dict of TopicPartition: RecordsToDelete, "
                f"not {records_to_delete!r}"
            )
        wanted: dict[TopicPartition, int] = {}
        for key, rec in records_to_delete.items():
            tp = check.topic_partition("records_to_delete", key)
            if not isinstance(rec, RecordsToDelete):
                raise TypeError(f"records_to_delete[{tp}] must be RecordsToDelete, not {rec!r}")
            wanted[tp] = rec.before_offset
        timeout = check.check_timeout_ms(timeout_ms, self._request_timeout_ms)
        done: dict[TopicPartition, int] = {}

        async def attempt() -> dict[TopicPartition, int]:
            pending = {tp: off for tp, off in wanted.items() if tp not in done}
            if pending:
                await self._delete_once(pending, timeout, done)
            return {tp: done[tp] for tp in wanted}

        self._check_running()
        return await self._retrying(attempt, "DeleteRecords")

    async def _delete_once(
        self, pending: dict[TopicPartition, int], timeout: int, done: dict[TopicPartition, int]
    ) -> None:
        leaders = await self._partition_leaders(pending, "DeleteRecords")
        by_leader: dict[int, dict[str, list[dict[str, int]]]] = {}
        for tp, offset in pending.items():
            by_leader.setdefault(leaders[tp], {}).setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "offset": offset}
            )

        async def ask(node: int, topics: dict[str, list[dict[str, int]]]) -> Any:
            request = DELETE_RECORDS.Request(
                topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
                timeout_ms=timeout,
            )
            resp, _ = await self._send(DELETE_RECORDS, lambda _v: request, node, timeout_ms=timeout)
            return resp

        answers = await asyncio.gather(
            *(ask(n, topics) for n, topics in by_leader.items()), return_exceptions=True
        )

        def accept(tp: TopicPartition, p: Any) -> None:
            done[tp] = p.low_watermark

        await self._settle_partitions(answers, "DeleteRecords", accept)
