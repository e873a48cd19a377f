"""The admin client: :class:`AIOKafkaAdminClient`, aiokafka 0.14's admin API on rackafka's
client core.

It stands on :class:`~rackafka.client.KafkaClient` as the consumer and the producer do (the
same bootstrap, connections, TLS and SASL, version negotiation, backoff).  Requests that
change the cluster (topics, partitions) go to any broker: in a KRaft cluster every broker
forwards them to the active controller.  The answers have the shape of aiokafka's
(:mod:`rackafka.admin.responses`).
"""

from __future__ import annotations

import logging
from typing import Any

from typing_extensions import Self

from rackafka._version import __version__
from rackafka.admin._configs import ConfigsAdmin
from rackafka.admin._groups import GroupsAdmin
from rackafka.admin._replicas import ReplicasAdmin
from rackafka.admin._topics import TopicsAdmin
from rackafka.client import KafkaClient
from rackafka.config import CLIENT
from rackafka.errors import (
    IllegalStateError,
)

__all__ = ["AIOKafkaAdminClient"]

log = logging.getLogger(__name__)


class AIOKafkaAdminClient(TopicsAdmin, ConfigsAdmin, GroupsAdmin, ReplicasAdmin):
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
