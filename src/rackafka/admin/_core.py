"""The core of the admin client: sending a request with retries and backoff, to any broker
or to one, and waiting until the brokers show what the controller did.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from rackafka.admin.responses import (
    Response,
    metadata_response,
)
from rackafka.client import KafkaClient
from rackafka.errors import (
    BrokerNotAvailableError,
    BrokerResponseError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaProtocolError,
    KafkaTimeoutError,
    LeaderNotAvailableError,
    NotControllerError,
    UnknownTopicOrPartitionError,
    for_code,
    is_retriable,
)
from rackafka.protocol.apis.metadata import METADATA
from rackafka.protocol.schema import Api
from rackafka.structs import TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Retriable in Kafka's terms, but not tried again here: the request may have been carried
#: out (a timeout), the broker answered nonsense, or a topic is missing (the admin waits for
#: its own topic changes to be visible, so a missing topic is missing).
_NOT_RETRIED = (KafkaTimeoutError, KafkaProtocolError, UnknownTopicOrPartitionError)


class AdminCore:
    """What every admin call stands on: the client core, sending with retries, the
    metadata and waiting for the cluster to show a change."""

    _client: KafkaClient
    _request_timeout_ms: int
    _request_timeout: float
    _started: bool
    _closed: bool

    def _check_running(self) -> None:
        if self._closed:
            raise IllegalStateError("AIOKafkaAdminClient is closed")
        if not self._started:
            raise IllegalStateError("AIOKafkaAdminClient is not started: call start() first")

    # -- sending ---------------------------------------------------------------

    async def _retrying(self, attempt: Callable[[], Awaitable[T]], what: str) -> T:
        """``attempt()``, again after the backoff while it raises a retriable error, until
        ``request_timeout_ms`` has passed (then the last error is raised).  A timeout, an
        answer that cannot be decoded and a topic or partition that does not exist are
        raised at once."""
        deadline = time.monotonic() + self._request_timeout
        backoff = self._client.retry_policy.start()
        while True:
            try:
                return await attempt()
            except KafkaError as exc:
                if not is_retriable(exc) or isinstance(exc, _NOT_RETRIED):
                    raise
                wait = backoff.next()
                if time.monotonic() + wait > deadline:
                    raise
                log.debug("%s: %s; again in %.3f s", what, exc, wait)
                if getattr(exc, "invalid_metadata", False):
                    await self._refresh()
            await asyncio.sleep(wait)

    async def _refresh(self) -> None:
        try:
            await self._client.refresh_metadata()
        except KafkaError as exc:
            log.debug("metadata refresh failed: %s", exc)

    def _pick_node(self) -> int:
        """A broker for a cluster-wide request: a connected one if any, else one that is
        not waiting out a reconnect backoff."""
        nodes = sorted(self._client.cluster.brokers)
        if not nodes:
            raise KafkaConnectionError("no brokers known")
        for n in nodes:
            if self._client.connection_if_ready(n) is not None:
                return n
        for n in nodes:
            if not self._client.is_backing_off(n):
                return n
        return nodes[0]

    async def _send(
        self,
        api: Api,
        build: Callable[[int], Any],
        node: int | None = None,
        *,
        timeout_ms: int = 0,
    ) -> tuple[Any, int]:
        """Send the request ``build(version)`` to ``node`` (``None``: any broker, another
        one when that one cannot be reached) and return the response and its version."""
        self._check_running()

        async def attempt() -> tuple[Any, int]:
            if node is not None and self._client.cluster.broker(node) is None:
                await self._refresh()
                if self._client.cluster.broker(node) is None:
                    raise BrokerNotAvailableError(f"broker {node} is not in the cluster")
            target = self._pick_node() if node is None else node
            version = await self._client.api_version(target, api)
            response = await self._client.send(
                target,
                api,
                build(version),
                version=version,
                timeout=self._request_timeout + timeout_ms / 1000,
            )
            return response, version

        return await self._retrying(attempt, api.name)

    async def _metadata(self, topics: list[str] | None) -> Any:
        """The raw Metadata answer for ``topics`` (``None``: every topic)."""
        names = None if topics is None else [{"name": t} for t in topics]
        request = METADATA.Request(topics=names, allow_auto_topic_creation=False)
        response, _ = await self._send(METADATA, lambda _v: request)
        return response

    async def _partition_leaders(
        self, partitions: Iterable[TopicPartition], what: str
    ) -> dict[TopicPartition, int]:
        """The leader of each of ``partitions``, from a fresh Metadata answer, for the
        requests that go to each partition's leader (``what`` names the request in errors).

        Raises:
            UnknownTopicOrPartitionError: a partition does not exist.
            LeaderNotAvailableError: a partition has no leader now (retriable: the callers'
                loops ask again).
            BrokerResponseError: a topic's error (authorization...).
        """
        wanted = list(partitions)
        metadata = await self._metadata(sorted({tp.topic for tp in wanted}))
        leaders: dict[TopicPartition, int] = {}
        for t in metadata.topics:
            if t.error_code and t.error_code != UnknownTopicOrPartitionError.errno:
                raise for_code(t.error_code)(f"{what}: topic {t.name}")
            for p in t.partitions:
                leaders[TopicPartition(t.name, p.partition_index)] = p.leader_id
        for tp in wanted:
            if tp not in leaders:
                raise UnknownTopicOrPartitionError(f"{what}: no partition {tp}")
            if leaders[tp] < 0:
                raise LeaderNotAvailableError(f"{what}: partition {tp} has no leader")
        return leaders

    async def _get_cluster_metadata(self, topics: list[str] | None = None) -> Response:
        """The cluster's metadata (``topics``: ``None`` for every topic), in aiokafka's
        shape."""
        raw = await self._metadata(topics)
        return metadata_response(raw)

    async def _send_to_controller(
        self,
        api: Api,
        build: Callable[[int], Any],
        codes: Callable[[Any], list[int]],
        timeout_ms: int,
    ) -> Any:
        """Send a request that the controller handles (to any broker: KRaft brokers forward
        it), again once after a metadata refresh if every answer is NOT_CONTROLLER."""
        response, _ = await self._send(api, build, timeout_ms=timeout_ms)
        answers = codes(response)
        if answers and all(c == NotControllerError.errno for c in answers):
            await self._refresh()
            response, _ = await self._send(api, build, timeout_ms=timeout_ms)
        return response

    async def _await_metadata(
        self, topics: dict[str, int], timeout_ms: int, *, gone: bool = False
    ) -> None:
        """Wait (at most ``timeout_ms``) until the broker this client asks next knows what
        the controller did: each of ``topics`` exists with at least its count of
        partitions, or, with ``gone``, none exists.  A topic change reaches the brokers a
        little after the controller answered; without this, a ``list_topics()`` or
        ``describe_configs()`` right after ``create_topics()`` could miss the topic.
        Never raises: the change was made, only its view lags."""
        if not topics:
            return
        deadline = time.monotonic() + timeout_ms / 1000
        backoff = self._client.retry_policy.start()
        while True:
            try:
                raw = await self._metadata(sorted(topics))
            except KafkaError as exc:
                log.debug("waiting for metadata of %s: %s", sorted(topics), exc)
            else:
                seen = {t.name: t for t in raw.topics}
                if gone:
                    done = all(
                        t not in seen or seen[t].error_code == UnknownTopicOrPartitionError.errno
                        for t in topics
                    )
                else:
                    done = all(
                        t in seen
                        and not seen[t].error_code
                        and len(seen[t].partitions) >= count
                        and all(p.leader_id >= 0 for p in seen[t].partitions)
                        for t, count in topics.items()
                    )
                if done:
                    return
            wait = backoff.next()
            if time.monotonic() + wait > deadline:
                log.debug("metadata of %s still lags the controller", sorted(topics))
                return
            await asyncio.sleep(wait)

    async def _settle_partitions(
        self, answers: list[Any], what: str, accept: Callable[[TopicPartition, Any], None]
    ) -> None:
        """Walk the per-leader answers of a per-partition request (``asyncio.gather`` with
        ``return_exceptions``): ``accept(tp, partition)`` for each partition answered
        without error; then raise the worst error seen (a non-retriable one wins over a
        retriable one), after a metadata refresh when it says the metadata is stale."""
        first: BaseException | None = None
        for answer in answers:
            if isinstance(answer, BaseException):
                first = first or answer
                continue
            for t in answer.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    if p.error_code:
                        err = for_code(p.error_code)(f"{what}: partition {tp}")
                        if first is None or (is_retriable(first) and not is_retriable(err)):
                            first = err
                    else:
                        accept(tp, p)
        if first is not None:
            if isinstance(first, BrokerResponseError) and first.invalid_metadata:
                await self._refresh()
            raise first
