"""The admin client: :class:`AIOKafkaAdminClient`, aiokafka 0.14's admin API on rackafka's
client core.

It stands on :class:`~rackafka.client.KafkaClient` as the consumer and the producer do (the
same bootstrap, connections, TLS and SASL, version negotiation, backoff).  Requests that
change the cluster (topics, partitions) go to any broker: in a KRaft cluster every broker
forwards them to the active controller.  The answers have the shape of aiokafka's
(:mod:`rackafka.admin.responses`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from typing_extensions import Self

from rackafka._version import __version__
from rackafka.admin import _checks as check
from rackafka.admin.config_resource import ConfigResourceType
from rackafka.admin.new_partitions import NewPartitions
from rackafka.admin.new_topic import NewTopic
from rackafka.admin.records_to_delete import RecordsToDelete
from rackafka.admin.responses import (
    AlterConfigsResult,
    ListedGroup,
    Response,
    TopicError,
    TopicErrorCode,
    describe_configs_response,
    describe_groups_response,
    metadata_response,
)
from rackafka.client import KafkaClient
from rackafka.config import CLIENT
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
from rackafka.protocol.apis.alter_configs import ALTER_CONFIGS
from rackafka.protocol.apis.create_partitions import CREATE_PARTITIONS
from rackafka.protocol.apis.create_topics import CREATE_TOPICS
from rackafka.protocol.apis.delete_records import DELETE_RECORDS
from rackafka.protocol.apis.delete_topics import DELETE_TOPICS
from rackafka.protocol.apis.describe_configs import DESCRIBE_CONFIGS
from rackafka.protocol.apis.describe_groups import DESCRIBE_GROUPS
from rackafka.protocol.apis.list_groups import LIST_GROUPS
from rackafka.protocol.apis.metadata import METADATA
from rackafka.protocol.apis.offset_fetch import OFFSET_FETCH
from rackafka.protocol.schema import Api
from rackafka.structs import OffsetAndMetadata, TopicPartition

__all__ = ["AIOKafkaAdminClient"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Retriable in Kafka's terms, but not tried again here: the request may have been carried
#: out (a timeout), the broker answered nonsense, or a topic is missing (the admin waits for
#: its own topic changes to be visible, so a missing topic is missing).
_NOT_RETRIED = (KafkaTimeoutError, KafkaProtocolError, UnknownTopicOrPartitionError)


class AIOKafkaAdminClient:
    """A client that administers a Kafka cluster: topics, partitions, configs and
    consumer groups (aiokafka 0.14's ``AIOKafkaAdminClient``).

    Call :meth:`start` first (or use ``async with``) and :meth:`close` at the end.

    Keyword Arguments:
        bootstrap_servers: ``'host[:port]'`` string (or list of them) of brokers
            to bootstrap from. Default: ``'localhost'`` (port 9092).
        client_id (str): a name for this client, sent in each request.
            Default: ``'rackafka-<version>'``.
        request_timeout_ms (int): how long a request may wait for its response;
            also the broker-side ``timeout_ms`` of the calls that take one when it
            is not given. Default: 40000.
        connections_max_idle_ms: close connections idle this long. Default: 540000.
        retry_backoff_ms (int): the first wait before a request goes again (a
            broker that cannot be reached, a coordinator that moved, a leader
            that changed). Default: 100.
        metadata_max_age_ms (int): refresh the cluster metadata at least this
            often. Default: 300000.
        security_protocol (str): ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` or
            ``SASL_SSL``. Default: ``PLAINTEXT``.
        ssl_context (ssl.SSLContext): the context of TLS connections.
        api_version: deprecated and ignored, as in aiokafka.
        sasl_mechanism (str): ``PLAIN``, ``GSSAPI``, ``SCRAM-SHA-256``,
            ``SCRAM-SHA-512`` or ``OAUTHBEARER``. Default: ``PLAIN``.
        sasl_plain_username (str): username of ``PLAIN`` and ``SCRAM``.
        sasl_plain_password (str): password of ``PLAIN`` and ``SCRAM``.
        sasl_kerberos_service_name (str): Default: ``'kafka'``.
        sasl_kerberos_domain_name (str): the Kerberos domain of ``GSSAPI``.
        sasl_oauth_token_provider: an ``AbstractTokenProvider`` for ``OAUTHBEARER``.
        loop: deprecated and ignored, as in aiokafka.

    Raises:
        KafkaConfigurationError: an argument is invalid (the message names it).
    """

    def __init__(
        self,
        *,
        loop: Any = None,
        bootstrap_servers: str | list[str] = "localhost",
        client_id: str = "rackafka-" + __version__,
        request_timeout_ms: int = 40000,
        connections_max_idle_ms: int = 540000,
        retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300000,
        security_protocol: str = "PLAINTEXT",
        ssl_context: Any = None,
        api_version: None = None,
        sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None,
        sasl_plain_password: str | None = None,
        sasl_kerberos_service_name: str = "kafka",
        sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None,
    ) -> None:
        args = dict(locals())
        del args["self"]
        cfg = CLIENT.check(args)
        self._client = KafkaClient(**cfg.client_kwargs(), client_software_version=__version__)
        self._request_timeout_ms = int(cfg["request_timeout_ms"])
        self._request_timeout = cfg["request_timeout_ms"] / 1000
        self._started = False
        self._closed = False

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Connect to the cluster: bootstrap and load its metadata.

        Raises:
            KafkaConnectionError: no bootstrap server answered.
            AuthenticationFailedError: the brokers refused the credentials.
            IllegalStateError: the client was closed.
        """
        if self._closed:
            raise IllegalStateError("AIOKafkaAdminClient is closed: make a new one")
        if self._started:
            return
        await self._client.bootstrap_cluster()
        self._started = True
        log.debug("AIOKafkaAdminClient started")

    async def close(self) -> None:
        """Close every connection. Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        await self._client.close()
        log.debug("AIOKafkaAdminClient closed")

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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

    # -- configs ---------------------------------------------------------------

    async def describe_configs(
        self, config_resources: list[Any], include_synonyms: bool = False
    ) -> list[Response]:
        """Describe the configs of topics and brokers.

        Arguments:
            config_resources: :class:`~rackafka.admin.config_resource.ConfigResource`
                objects; the keys of a resource's ``configs`` name the configs to
                describe (``None`` or empty: all of them).
            include_synonyms: also return, for each config, where else it is set.

        Returns:
            A response per broker asked, as aiokafka's ``DescribeConfigsResponse``:
            first one per broker resource's broker, then one for all the topic
            resources. Each has ``resources``: ``(error_code, error_message,
            resource_type, resource_name, config_entries)`` tuples, each config entry
            ``(config_names, config_value, read_only, config_source, is_sensitive,
            config_synonyms)``.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
        """
        resources = check.check_config_resources(config_resources, alter=False)
        check.check_bool("include_synonyms", include_synonyms)
        by_broker: dict[int, list[dict[str, Any]]] = {}
        topic_res: list[dict[str, Any]] = []
        for rtype, name, configs in resources:
            entry = {
                "resource_type": int(rtype),
                "resource_name": name,
                "configuration_keys": list(configs) if configs else None,
            }
            if rtype == ConfigResourceType.BROKER:
                by_broker.setdefault(int(name), []).append(entry)
            else:
                topic_res.append(entry)

        async def ask(node: int | None, entries: list[dict[str, Any]]) -> Response:
            request = DESCRIBE_CONFIGS.Request(resources=entries, include_synonyms=include_synonyms)
            resp, _ = await self._send(DESCRIBE_CONFIGS, lambda _v: request, node)
            return describe_configs_response(resp)

        calls = [ask(node, entries) for node, entries in by_broker.items()]
        if topic_res:
            calls.append(ask(None, topic_res))
        return list(await asyncio.gather(*calls))

    async def alter_configs(self, config_resources: list[Any]) -> list[Response]:
        """Set the configs of topics and brokers (the whole dynamic config of each
        resource is replaced by its ``configs``, as Kafka's AlterConfigs does).

        Arguments:
            config_resources: :class:`~rackafka.admin.config_resource.ConfigResource`
                objects with the ``configs`` to set.

        Returns:
            As aiokafka: first the answer for the topic resources (sent even when there
            are none), then one per broker resource's broker, each an
            ``AlterConfigsResponse`` with ``resources``: ``(error_code, error_message,
            resource_type, resource_name)`` tuples.

        Raises:
            TypeError, ValueError: an argument is invalid (the message names it).
        """
        resources = check.check_config_resources(config_resources, alter=True)
        by_broker: dict[int, list[dict[str, Any]]] = {}
        topic_res: list[dict[str, Any]] = []
        for rtype, name, configs in resources:
            entry = {
                "resource_type": int(rtype),
                "resource_name": name,
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
            if rtype == ConfigResourceType.BROKER:
                by_broker.setdefault(int(name), []).append(entry)
            else:
                topic_res.append(entry)

        async def ask(node: int | None, entries: list[dict[str, Any]]) -> Response:
            request = ALTER_CONFIGS.Request(resources=entries, validate_only=False)
            resp, _ = await self._send(ALTER_CONFIGS, lambda _v: request, node)
            done = {(r.resource_type, r.resource_name) for r in resp.responses if not r.error_code}
            await self._await_configs(
                node, [e for e in entries if (e["resource_type"], e["resource_name"]) in done]
            )
            return Response(
                "AlterConfigsResponse",
                throttle_time_ms=resp.throttle_time_ms,
                resources=[
                    AlterConfigsResult(
                        r.error_code, r.error_message, r.resource_type, r.resource_name
                    )
                    for r in resp.responses
                ],
            )

        calls = [ask(None, topic_res)]
        calls += [ask(node, entries) for node, entries in by_broker.items()]
        return list(await asyncio.gather(*calls))

    async def _await_configs(self, node: int | None, entries: list[dict[str, Any]]) -> None:
        """Wait (at most ``request_timeout_ms``) until the broker that answered an
        AlterConfigs describes the values it set: the controller applied them, the broker
        sees them a little later.  Never raises: the change was made, only its view lags."""
        wanted = {
            (e["resource_type"], e["resource_name"], c["name"]): c["value"]
            for e in entries
            for c in e["configs"]
            if c["value"] is not None
        }
        if not wanted:
            return
        request = DESCRIBE_CONFIGS.Request(
            resources=[
                {
                    "resource_type": e["resource_type"],
                    "resource_name": e["resource_name"],
                    "configuration_keys": [c["name"] for c in e["configs"]],
                }
                for e in entries
            ]
        )
        deadline = time.monotonic() + self._request_timeout
        backoff = self._client.retry_policy.start()
        while True:
            try:
                resp, _ = await self._send(DESCRIBE_CONFIGS, lambda _v: request, node)
            except KafkaError as exc:
                log.debug("waiting for configs to show: %s", exc)
            else:
                # A sensitive value is never shown: it counts as seen.
                seen = {
                    key: wanted.get(key) if c.is_sensitive else c.value
                    for r in resp.results
                    for c in r.configs
                    for key in [(r.resource_type, r.resource_name, c.name)]
                }
                if all(seen.get(key) == value for key, value in wanted.items()):
                    return
            wait = backoff.next()
            if time.monotonic() + wait > deadline:
                log.debug("altered configs still not described by node %s", node)
                return
            await asyncio.sleep(wait)

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
        metadata = await self._metadata(sorted({tp.topic for tp in pending}))
        leaders: dict[TopicPartition, int] = {}
        for t in metadata.topics:
            if t.error_code and t.error_code != UnknownTopicOrPartitionError.errno:
                # Retriable ones (a leader being elected) go again by the caller's loop.
                raise for_code(t.error_code)(f"DeleteRecords: topic {t.name}")
            for p in t.partitions:
                leaders[TopicPartition(t.name, p.partition_index)] = p.leader_id
        by_leader: dict[int, dict[str, list[dict[str, int]]]] = {}
        for tp, offset in pending.items():
            if tp not in leaders:
                raise UnknownTopicOrPartitionError(f"DeleteRecords: no partition {tp}")
            if leaders[tp] < 0:
                raise LeaderNotAvailableError(f"DeleteRecords: {tp} has no leader")
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
        first: BaseException | None = None
        for answer in answers:
            if isinstance(answer, BaseException):
                first = first or answer
                continue
            for t in answer.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    if p.error_code:
                        err = for_code(p.error_code)(f"DeleteRecords: {tp}")
                        # A non-retriable error wins over a retriable one.
                        if first is None or (is_retriable(first) and not is_retriable(err)):
                            first = err
                    else:
                        done[tp] = p.low_watermark
        if first is not None:
            if isinstance(first, BrokerResponseError) and first.invalid_metadata:
                await self._refresh()
            raise first
