"""Abstract interfaces users implement (as in ``aiokafka.abc``)."""

from __future__ import annotations

import abc
from typing import Any

from rackafka.structs import TopicPartition


class ConsumerRebalanceListener(abc.ABC):
    """A callback interface for custom actions when partitions are assigned or revoked.

    Pass an instance to :meth:`AIOKafkaConsumer.subscribe`.  Both methods may be
    plain functions or coroutines.  ``on_partitions_revoked`` is called before
    a rebalance takes partitions away (commit offsets there), and
    ``on_partitions_assigned`` after the new assignment is known (seek there).
    """

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        """Called before partitions are taken away from this consumer.

        Arguments:
            revoked: the partitions that were assigned until now.
        """

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        """Called once the new assignment is known, before fetching starts.

        Arguments:
            assigned: the partitions now assigned to this consumer.
        """


class AbstractTokenProvider(abc.ABC):
    """Gives the tokens of SASL OAUTHBEARER authentication (as ``aiokafka.abc``).

    Pass an instance as ``sasl_oauth_token_provider`` with
    ``sasl_mechanism="OAUTHBEARER"``.  :meth:`token` is called at every authentication
    of a connection, re-authentications included (KIP-368), so it must return a token
    that is valid now: cache it and refresh it before it expires.  Do blocking work (an
    HTTP call to an identity provider) in a thread, never on the event loop.
    :class:`rackafka.net.sasl.aws_msk_iam.MSKIAMTokenProvider` is a ready one for
    Amazon MSK IAM.
    """

    @abc.abstractmethod
    async def token(self) -> str:
        """Return a valid access token (a str)."""

    def extensions(self) -> dict[str, str]:
        """SASL extensions sent with the token (KIP-342), e.g. Confluent Cloud's
        ``logicalCluster`` and ``identityPoolId``.  Optional; default none."""
        return {}


__all__ = ["AbstractTokenProvider", "ConsumerRebalanceListener"]
