"""Exceptions raised by rackafka.

The exception names, their base classes and their ``retriable`` and ``invalid_metadata``
flags follow :mod:`aiokafka.errors` (aiokafka 0.14), so code written for aiokafka catches
the same exceptions when it switches to rackafka.

Every error code of the Kafka protocol, from ``-1`` (``UNKNOWN_SERVER_ERROR``) to ``133``
(``SHARE_SESSION_LIMIT_REACHED``, Apache Kafka 4.1), has a subclass of
:class:`BrokerResponseError`. Where aiokafka names a code, the class carries aiokafka's name
(for example ``NotLeaderForPartitionError`` for code 6) and the name derived from Kafka's own
name is an alias of it (``NotLeaderOrFollowerError``). Look a class up by its code with
:func:`for_code`; :data:`ERROR_CODES` maps every known code to its class.

``retriable`` follows the Java client (the code's exception is a ``RetriableException``).
``invalid_metadata`` is true for codes after which a client should refresh its cluster
metadata before it retries: the Java client's ``InvalidMetadataException`` family, plus
``UNKNOWN_LEADER_EPOCH`` (75) and ``OFFSET_NOT_AVAILABLE`` (78), on which librdkafka refreshes
too (the Java fetcher refreshes on 78 as well). Coordinator errors (14, 15, 16) are retriable
but need a new coordinator lookup, not a metadata refresh, so their ``invalid_metadata`` is
false.

Properties of an error code
---------------------------
rackafka's own logic never compares error codes: it asks the class. Every
:class:`BrokerResponseError` subclass carries these class attributes, defined here once:

- ``client_retriable``: the Java client retries it (:func:`is_retriable`);
- ``needs_metadata_refresh``: refresh metadata before retrying (:func:`is_invalid_metadata`);
- ``coordinator_moved``: look the group or transaction coordinator up again (15, 16, 7);
- ``coordinator_loading``: the coordinator is loading; retry it after a backoff (14);
- ``member_fenced``: the group member must join again (22, 25, 110);
- ``producer_fenced``: a newer producer has the transactional id (47, 90);
- ``fatal``: no retry helps and the group member or transactional producer stops;
- ``fetch_error_kind``: what a partition-level Fetch error means to the consumer's routing
  (KIP-392): ``"retry"``, ``"retry-no-refresh"``, ``"retry-keep-replica"``, ``"offset"``,
  ``"fatal"`` or ``"fatal-from-leader"`` (see ``_FETCH_ERROR_KINDS``).
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    # rackafka / aiokafka client-side errors
    "KafkaError",
    "IllegalStateError",
    "IllegalArgumentError",
    "NoBrokersAvailable",
    "NodeNotReadyError",
    "KafkaProtocolError",
    "CorrelationIdError",
    "Cancelled",
    "TooManyInFlightRequests",
    "StaleMetadata",
    "MetadataEmptyBrokerList",
    "UnrecognizedBrokerVersion",
    "IncompatibleBrokerVersion",
    "CommitFailedError",
    "AuthenticationMethodNotSupported",
    "AuthenticationFailedError",
    "SslAuthenticationError",
    "KafkaUnavailableError",
    "KafkaTimeoutError",
    "KafkaConnectionError",
    "UnsupportedCodecError",
    "RecordDeserializationError",
    "KafkaConfigurationError",
    "QuotaViolationError",
    "ConsumerStoppedError",
    "IllegalOperation",
    "NoOffsetForPartitionError",
    "RecordTooLargeError",
    "ProducerClosed",
    "ProducerFenced",
    # errors reported by a broker as an error code
    "BrokerResponseError",
    "ERROR_CODES",
    "kafka_errors",
    "for_code",
    "is_retriable",
    "is_invalid_metadata",
    "raise_for_code",
    "UnknownError",  # -1
    "UnknownServerError",
    "NoError",  # 0
    "OffsetOutOfRangeError",  # 1
    "CorruptRecordException",  # 2
    "InvalidMessageError",
    "CorruptRecordError",
    "CorruptMessageError",
    "UnknownTopicOrPartitionError",  # 3
    "InvalidFetchRequestError",  # 4
    "InvalidFetchSizeError",
    "LeaderNotAvailableError",  # 5
    "NotLeaderForPartitionError",  # 6
    "NotLeaderOrFollowerError",
    "RequestTimedOutError",  # 7
    "BrokerNotAvailableError",  # 8
    "ReplicaNotAvailableError",  # 9
    "MessageSizeTooLargeError",  # 10
    "MessageTooLargeError",
    "StaleControllerEpochError",  # 11
    "OffsetMetadataTooLargeError",  # 12
    "StaleLeaderEpochCodeError",  # 13
    "NetworkExceptionError",
    "GroupLoadInProgressError",  # 14
    "CoordinatorLoadInProgressError",
    "GroupCoordinatorNotAvailableError",  # 15
    "CoordinatorNotAvailableError",
    "NotCoordinatorForGroupError",  # 16
    "NotCoordinatorError",
    "InvalidTopicError",  # 17
    "RecordListTooLargeError",  # 18
    "NotEnoughReplicasError",  # 19
    "NotEnoughReplicasAfterAppendError",  # 20
    "InvalidRequiredAcksError",  # 21
    "IllegalGenerationError",  # 22
    "InconsistentGroupProtocolError",  # 23
    "InvalidGroupIdError",  # 24
    "UnknownMemberIdError",  # 25
    "InvalidSessionTimeoutError",  # 26
    "RebalanceInProgressError",  # 27
    "InvalidCommitOffsetSizeError",  # 28
    "TopicAuthorizationFailedError",  # 29
    "GroupAuthorizationFailedError",  # 30
    "ClusterAuthorizationFailedError",  # 31
    "InvalidTimestampError",  # 32
    "UnsupportedSaslMechanismError",  # 33
    "IllegalSaslStateError",  # 34
    "UnsupportedVersionError",  # 35
    "TopicAlreadyExistsError",  # 36
    "InvalidPartitionsError",  # 37
    "InvalidReplicationFactorError",  # 38
    "InvalidReplicationAssignmentError",  # 39
    "InvalidReplicaAssignmentError",
    "InvalidConfigurationError",  # 40
    "InvalidConfigError",
    "NotControllerError",  # 41
    "InvalidRequestError",  # 42
    "UnsupportedForMessageFormatError",  # 43
    "PolicyViolationError",  # 44
    "OutOfOrderSequenceNumber",  # 45
    "OutOfOrderSequenceNumberError",
    "DuplicateSequenceNumber",  # 46
    "DuplicateSequenceNumberError",
    "InvalidProducerEpoch",  # 47
    "InvalidProducerEpochError",
    "InvalidTxnState",  # 48
    "InvalidTxnStateError",
    "InvalidProducerIdMapping",  # 49
    "InvalidProducerIdMappingError",
    "InvalidTransactionTimeout",  # 50
    "InvalidTransactionTimeoutError",
    "ConcurrentTransactions",  # 51
    "ConcurrentTransactionsError",
    "TransactionCoordinatorFenced",  # 52
    "TransactionCoordinatorFencedError",
    "TransactionalIdAuthorizationFailed",  # 53
    "TransactionalIdAuthorizationFailedError",
    "SecurityDisabled",  # 54
    "SecurityDisabledError",
    "OperationNotAttempted",  # 55
    "OperationNotAttemptedError",
    "KafkaStorageError",  # 56
    "LogDirNotFound",  # 57
    "LogDirNotFoundError",
    "SaslAuthenticationFailed",  # 58
    "SaslAuthenticationFailedError",
    "UnknownProducerId",  # 59
    "UnknownProducerIdError",
    "ReassignmentInProgress",  # 60
    "ReassignmentInProgressError",
    "DelegationTokenAuthDisabled",  # 61
    "DelegationTokenAuthDisabledError",
    "DelegationTokenNotFound",  # 62
    "DelegationTokenNotFoundError",
    "DelegationTokenOwnerMismatch",  # 63
    "DelegationTokenOwnerMismatchError",
    "DelegationTokenRequestNotAllowed",  # 64
    "DelegationTokenRequestNotAllowedError",
    "DelegationTokenAuthorizationFailed",  # 65
    "DelegationTokenAuthorizationFailedError",
    "DelegationTokenExpired",  # 66
    "DelegationTokenExpiredError",
    "InvalidPrincipalType",  # 67
    "InvalidPrincipalTypeError",
    "NonEmptyGroup",  # 68
    "NonEmptyGroupError",
    "GroupIdNotFound",  # 69
    "GroupIdNotFoundError",
    "FetchSessionIdNotFound",  # 70
    "FetchSessionIdNotFoundError",
    "InvalidFetchSessionEpoch",  # 71
    "InvalidFetchSessionEpochError",
    "ListenerNotFound",  # 72
    "ListenerNotFoundError",
    "TopicDeletionDisabledError",  # 73
    "FencedLeaderEpochError",  # 74
    "UnknownLeaderEpochError",  # 75
    "UnsupportedCompressionTypeError",  # 76
    "StaleBrokerEpochError",  # 77
    "OffsetNotAvailableError",  # 78
    "MemberIdRequired",  # 79
    "MemberIdRequiredError",
    "PreferredLeaderNotAvailableError",  # 80
    "GroupMaxSizeReachedError",  # 81
    "FencedInstanceIdError",  # 82
    "EligibleLeadersNotAvailableError",  # 83
    "ElectionNotNeededError",  # 84
    "NoReassignmentInProgressError",  # 85
    "GroupSubscribedToTopicError",  # 86
    "InvalidRecordError",  # 87
    "UnstableOffsetCommitError",  # 88
    "ThrottlingQuotaExceededError",  # 89
    "ProducerFencedError",  # 90
    "ResourceNotFoundError",  # 91
    "DuplicateResourceError",  # 92
    "UnacceptableCredentialError",  # 93
    "InconsistentVoterSetError",  # 94
    "InvalidUpdateVersionError",  # 95
    "FeatureUpdateFailedError",  # 96
    "PrincipalDeserializationFailureError",  # 97
    "SnapshotNotFoundError",  # 98
    "PositionOutOfRangeError",  # 99
    "UnknownTopicIdError",  # 100
    "DuplicateBrokerRegistrationError",  # 101
    "BrokerIdNotRegisteredError",  # 102
    "InconsistentTopicIdError",  # 103
    "InconsistentClusterIdError",  # 104
    "TransactionalIdNotFoundError",  # 105
    "FetchSessionTopicIdError",  # 106
    "IneligibleReplicaError",  # 107
    "NewLeaderElectedError",  # 108
    "OffsetMovedToTieredStorageError",  # 109
    "FencedMemberEpochError",  # 110
    "UnreleasedInstanceIdError",  # 111
    "UnsupportedAssignorError",  # 112
    "StaleMemberEpochError",  # 113
    "MismatchedEndpointTypeError",  # 114
    "UnsupportedEndpointTypeError",  # 115
    "UnknownControllerIdError",  # 116
    "UnknownSubscriptionIdError",  # 117
    "TelemetryTooLargeError",  # 118
    "InvalidRegistrationError",  # 119
    "TransactionAbortableError",  # 120
    "InvalidRecordStateError",  # 121
    "ShareSessionNotFoundError",  # 122
    "InvalidShareSessionEpochError",  # 123
    "FencedStateEpochError",  # 124
    "InvalidVoterKeyError",  # 125
    "DuplicateVoterError",  # 126
    "VoterNotFoundError",  # 127
    "InvalidRegularExpressionError",  # 128
    "RebootstrapRequiredError",  # 129
    "StreamsInvalidTopologyError",  # 130
    "StreamsInvalidTopologyEpochError",  # 131
    "StreamsTopologyFencedError",  # 132
    "ShareSessionLimitReachedError",  # 133
]


class KafkaError(RuntimeError):
    """Base class of every Kafka error raised by rackafka.

    Attributes:
        retriable (bool): ``True`` if the failed operation may succeed when it is tried
            again, without any change by the application.
        invalid_metadata (bool): ``True`` if the client's cluster metadata (leaders,
            replicas, brokers) is probably outdated and should be refreshed before a retry.
    """

    retriable: ClassVar[bool] = False
    invalid_metadata: ClassVar[bool] = False

    def __str__(self) -> str:
        name = type(self).__name__
        if not self.args:
            return name
        return f"{name}: {super().__str__()}"


class IllegalStateError(KafkaError):
    """An operation was called while the object is in a state that does not allow it."""


class IllegalArgumentError(KafkaError):
    """An argument has a value that is not allowed."""


class NoBrokersAvailable(KafkaError):
    """None of the known brokers could be reached."""

    retriable = True
    invalid_metadata = True


class NodeNotReadyError(KafkaError):
    """The connection to the broker is not ready to send requests yet."""

    retriable = True


class KafkaProtocolError(KafkaError):
    """Bytes received from a broker do not form a valid protocol frame or response.

    rackafka raises it for truncated or malformed frames, for example
    ``raise KafkaProtocolError("truncated response header")``.
    """

    retriable = True


class CorrelationIdError(KafkaProtocolError):
    """A response carries a correlation id that matches no request in flight."""

    retriable = True


class Cancelled(KafkaError):
    """A request was cancelled before it completed, for example by a closing connection."""

    retriable = True


class TooManyInFlightRequests(KafkaError):
    """The connection has reached its limit of requests waiting for a response."""

    retriable = True


class StaleMetadata(KafkaError):
    """The cluster metadata is outdated."""

    retriable = True
    invalid_metadata = True


class MetadataEmptyBrokerList(KafkaError):
    """A metadata response listed no brokers."""

    retriable = True


class UnrecognizedBrokerVersion(KafkaError):
    """The version of the broker could not be determined."""


class IncompatibleBrokerVersion(KafkaError):
    """The broker is too old for the requested feature."""


class CommitFailedError(KafkaError):
    """An offset commit failed because the group has rebalanced.

    The group moved the partitions to other members before the commit arrived. This
    usually means that the time between two calls that fetch records was longer than
    ``max_poll_interval_ms``: process records faster, fetch fewer of them at a time
    (``max_poll_records``) or raise ``max_poll_interval_ms``.
    """

    _default_message: ClassVar[str] = (
        "Commit cannot be completed since the group has already rebalanced and assigned "
        "the partitions to another member. The time between two fetches of records was "
        "probably longer than max_poll_interval_ms: raise max_poll_interval_ms, or fetch "
        "fewer records at a time with max_poll_records."
    )

    def __init__(self, *args: object) -> None:
        super().__init__(*(args or (self._default_message,)))


class KafkaUnavailableError(KafkaError):
    """No broker of the cluster is available."""


class KafkaTimeoutError(KafkaError):
    """An operation did not complete within its timeout."""


class KafkaConnectionError(KafkaError):
    """A connection to a broker failed or was closed."""

    retriable = True
    invalid_metadata = True


class AuthenticationFailedError(KafkaError):
    """Authentication with the broker failed: SASL credentials, or the TLS handshake.

    Every authentication failure is one of these, whatever the cause
    (:class:`SaslAuthenticationFailed`, :class:`UnsupportedSaslMechanismError`,
    :class:`IllegalSaslStateError`, :class:`SslAuthenticationError`). As in aiokafka, it is
    *not* a :class:`KafkaConnectionError`: code that retries on connection errors does not
    retry a wrong password. It is not retried at once: the client backs off before it
    connects to that broker again (``reconnect_backoff_ms``), and the consumer and the
    producer raise the failure from their next call.
    """

    retriable = False
    invalid_metadata = False


class AuthenticationMethodNotSupported(AuthenticationFailedError):
    """The broker does not support the requested authentication method."""


class SslAuthenticationError(AuthenticationFailedError):
    """The TLS handshake with a broker failed: an untrusted certificate, a host name the
    certificate does not name, a client certificate the broker refused, or a broker that
    does not speak TLS on that port. The :class:`ssl.SSLError` is the ``__cause__``."""


class UnsupportedCodecError(KafkaError):
    """Records use a compression codec that is not available."""


class RecordDeserializationError(KafkaError):
    """A ``key_deserializer`` or ``value_deserializer`` raised on a fetched record.

    As the Java client's ``RecordDeserializationException`` (KIP-334): every record before
    the failing one was delivered, the position of the partition stays at the failing
    record, and the error is raised again on every poll of that partition until the
    application seeks past it (``consumer.seek(err.topic_partition, err.offset + 1)``).
    The deserializer's own exception is the ``__cause__``.

    Attributes:
        topic_partition: the partition of the failing record.
        offset (int): the offset of the failing record.
    """

    def __init__(self, topic_partition: Any, offset: int, message: str | None = None) -> None:
        self.topic_partition = topic_partition
        self.offset = offset
        where = f"{topic_partition.topic}-{topic_partition.partition} at offset {offset}"
        super().__init__(f"{where}: {message}" if message else where)


class KafkaConfigurationError(KafkaError, ValueError):
    """A configuration argument is invalid.

    Also a :exc:`ValueError`, which aiokafka raises for some of the same arguments.
    """


class QuotaViolationError(KafkaError):
    """A client quota was exceeded."""


class ConsumerStoppedError(Exception):
    """Raised by the consumer's ``get*`` methods once the consumer is stopped.

    Calls that are waiting when the consumer stops raise it too.
    """


class IllegalOperation(Exception):
    """The operation is not available with the current configuration.

    For example, committing offsets needs a ``group_id``.
    """


class NoOffsetForPartitionError(KafkaError):
    """The partition has no position and no offset reset policy applies."""


class RecordTooLargeError(KafkaError):
    """A record is larger than the configured maximum size."""


class ProducerClosed(KafkaError):
    """The producer is closed."""


class ProducerFenced(KafkaError):
    """A newer producer with the same transactional id has started.

    The broker reports this too when the transaction has timed out.
    """

    def __init__(
        self,
        msg: str = (
            "There is a newer producer using the same transactional_id or the transaction "
            "timed out (check that processing time stays below transaction_timeout_ms)"
        ),
    ) -> None:
        super().__init__(msg)


#: Every known Kafka error code mapped to its :class:`BrokerResponseError` subclass.
ERROR_CODES: dict[int, type[BrokerResponseError]] = {}
#: Same object as :data:`ERROR_CODES`, under the name aiokafka uses.
kafka_errors = ERROR_CODES

# Classes made by for_code() for codes that this module does not know.
_UNKNOWN_CODES: dict[int, type[UnknownError]] = {}


class BrokerResponseError(KafkaError):
    """Base class of the errors that a broker reports as an error code.

    ``str()`` of an error starts with its code: ``[Error 1] OffsetOutOfRangeError: ...``.
    Like any exception, a subclass takes an optional message::

        raise OffsetOutOfRangeError(f"offset {offset} of {tp} is out of range")

    Attributes:
        errno (int): the Kafka error code.
        message (str): Kafka's name of the error code, e.g. ``"OFFSET_OUT_OF_RANGE"``.
        description (str): what the error code means.
    """

    errno: ClassVar[int] = -1
    message: ClassVar[str] = ""
    description: ClassVar[str] = ""

    # What rackafka's own logic asks of an error (set for every code at the end of this
    # module, from the tables there; see "Properties of an error code" in the module's
    # docstring). ``retriable`` and ``invalid_metadata`` above keep aiokafka's values for
    # code written against aiokafka; these follow the Java client.
    #: The Java client retries it (its exception is a ``RetriableException``).
    client_retriable: ClassVar[bool] = False
    #: Refresh the cluster metadata before retrying (Java's ``InvalidMetadataException``).
    needs_metadata_refresh: ClassVar[bool] = False
    #: The group or transaction coordinator is gone or moved: look it up again.
    coordinator_moved: ClassVar[bool] = False
    #: The coordinator is loading its state: retry the same coordinator after a backoff.
    coordinator_loading: ClassVar[bool] = False
    #: The group member's id or generation/epoch is no longer valid: join again.
    member_fenced: ClassVar[bool] = False
    #: A newer producer (or a timed-out transaction) fenced this producer's epoch.
    producer_fenced: ClassVar[bool] = False
    #: Retrying cannot help and the client (group member, transactional producer) cannot go
    #: on: the error is raised to the application and the role stops.
    fatal: ClassVar[bool] = False
    #: What a partition-level Fetch error means to the consumer (see ``_FETCH_ERROR_KINDS``).
    fetch_error_kind: ClassVar[str] = "fatal-from-leader"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is None and cls.description:
            cls.__doc__ = cls.description
        # Register the error-code classes of this module; subclasses made by users or by
        # for_code() for unknown codes stay out of the table.
        if (
            cls.__module__ == __name__
            and "errno" in cls.__dict__
            and not cls.__dict__.get("_generated", False)
        ):
            known = ERROR_CODES.get(cls.errno)
            if known is not None:
                raise TypeError(
                    f"error code {cls.errno} is taken by {known.__name__}, "
                    f"cannot register {cls.__name__}"
                )
            ERROR_CODES[cls.errno] = cls

    def __str__(self) -> str:
        return f"[Error {self.errno}] {super().__str__()}"

    def __reduce__(self) -> Any:
        cls = type(self)
        if cls.__dict__.get("_generated", False):
            # Classes made by for_code() are not module attributes: rebuild them by code.
            return (_rebuild_unknown, (cls.errno, self.args))
        return super().__reduce__()


class UnknownError(BrokerResponseError):
    errno = -1
    message = "UNKNOWN_SERVER_ERROR"
    description = "The broker hit an unexpected error while handling the request."


UnknownServerError = UnknownError


class NoError(BrokerResponseError):
    errno = 0
    message = "NONE"
    description = "Success: no error."


class OffsetOutOfRangeError(BrokerResponseError):
    errno = 1
    message = "OFFSET_OUT_OF_RANGE"
    description = (
        "The requested offset lies outside the range of offsets the broker holds for this "
        "partition."
    )


class CorruptRecordException(BrokerResponseError):
    """Record data is corrupt (error code 2, ``CORRUPT_MESSAGE``).

    A broker returns code 2 when a message fails its CRC check, has an invalid size, has a
    null key on a compacted topic or is otherwise corrupt. rackafka raises it too when
    record data it decodes is invalid; the message then names the topic-partition and the
    offset, for example ``CorruptRecordException("my-topic-0 at offset 42: CRC mismatch")``.
    """

    errno = 2
    message = "CORRUPT_MESSAGE"
    description = (
        "A message failed its CRC check, has an invalid size, has a null key on a compacted "
        "topic, or is otherwise corrupt."
    )


InvalidMessageError = CorruptRecordException
CorruptRecordError = CorruptRecordException
CorruptMessageError = CorruptRecordException


class UnknownTopicOrPartitionError(BrokerResponseError):
    errno = 3
    message = "UNKNOWN_TOPIC_OR_PARTITION"
    description = "The broker does not host this topic-partition."
    retriable = True
    invalid_metadata = True


class InvalidFetchRequestError(BrokerResponseError):
    errno = 4
    message = "INVALID_FETCH_SIZE"
    description = "The fetch size in the request is not valid."


InvalidFetchSizeError = InvalidFetchRequestError


class LeaderNotAvailableError(BrokerResponseError):
    errno = 5
    message = "LEADER_NOT_AVAILABLE"
    description = (
        "The partition has no leader right now, usually because a leader election is under way."
    )
    retriable = True
    invalid_metadata = True


class NotLeaderForPartitionError(BrokerResponseError):
    errno = 6
    message = "NOT_LEADER_OR_FOLLOWER"
    description = (
        "The broker is not the partition's leader (for requests only the leader serves) or "
        "holds no replica of it (for requests any replica may serve)."
    )
    retriable = True
    invalid_metadata = True


NotLeaderOrFollowerError = NotLeaderForPartitionError


class RequestTimedOutError(BrokerResponseError):
    errno = 7
    message = "REQUEST_TIMED_OUT"
    description = "The broker did not complete the request in time."
    retriable = True


class BrokerNotAvailableError(BrokerResponseError):
    errno = 8
    message = "BROKER_NOT_AVAILABLE"
    description = "The broker is not available."


class ReplicaNotAvailableError(BrokerResponseError):
    errno = 9
    message = "REPLICA_NOT_AVAILABLE"
    description = "The replica of the requested topic-partition is not available on this broker."


class MessageSizeTooLargeError(BrokerResponseError):
    errno = 10
    message = "MESSAGE_TOO_LARGE"
    description = "A message is larger than the largest message the broker accepts."


MessageTooLargeError = MessageSizeTooLargeError


class StaleControllerEpochError(BrokerResponseError):
    errno = 11
    message = "STALE_CONTROLLER_EPOCH"
    description = "The controller has moved to another broker."


class OffsetMetadataTooLargeError(BrokerResponseError):
    errno = 12
    message = "OFFSET_METADATA_TOO_LARGE"
    description = "The metadata string of an offset commit is too long."


class StaleLeaderEpochCodeError(BrokerResponseError):
    errno = 13
    message = "NETWORK_EXCEPTION"
    description = "The server closed the connection before a response arrived."


NetworkExceptionError = StaleLeaderEpochCodeError


class GroupLoadInProgressError(BrokerResponseError):
    errno = 14
    message = "COORDINATOR_LOAD_IN_PROGRESS"
    description = "The coordinator is still loading its state and cannot serve requests yet."
    retriable = True


CoordinatorLoadInProgressError = GroupLoadInProgressError


class GroupCoordinatorNotAvailableError(BrokerResponseError):
    errno = 15
    message = "COORDINATOR_NOT_AVAILABLE"
    description = "The coordinator is not available."
    retriable = True


CoordinatorNotAvailableError = GroupCoordinatorNotAvailableError


class NotCoordinatorForGroupError(BrokerResponseError):
    errno = 16
    message = "NOT_COORDINATOR"
    description = "The broker is not the coordinator for this group or transactional id."
    retriable = True


NotCoordinatorError = NotCoordinatorForGroupError


class InvalidTopicError(BrokerResponseError):
    errno = 17
    message = "INVALID_TOPIC_EXCEPTION"
    description = (
        "The operation targets an invalid topic, for example one with an illegal name or an "
        "internal topic."
    )


class RecordListTooLargeError(BrokerResponseError):
    errno = 18
    message = "RECORD_LIST_TOO_LARGE"
    description = "A record batch is larger than the segment size configured on the broker."


class NotEnoughReplicasError(BrokerResponseError):
    errno = 19
    message = "NOT_ENOUGH_REPLICAS"
    description = "The write was refused because fewer replicas than required are in sync."
    retriable = True


class NotEnoughReplicasAfterAppendError(BrokerResponseError):
    errno = 20
    message = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
    description = "The write was appended to the log, but fewer replicas than required are in sync."
    retriable = True


class InvalidRequiredAcksError(BrokerResponseError):
    errno = 21
    message = "INVALID_REQUIRED_ACKS"
    description = "The produce request carries an invalid acks value."


class IllegalGenerationError(BrokerResponseError):
    errno = 22
    message = "ILLEGAL_GENERATION"
    description = "The group generation id in the request is not the current one."


class InconsistentGroupProtocolError(BrokerResponseError):
    errno = 23
    message = "INCONSISTENT_GROUP_PROTOCOL"
    description = (
        "The member's protocol type or protocols are empty or do not match those of the other"
        " members."
    )


class InvalidGroupIdError(BrokerResponseError):
    errno = 24
    message = "INVALID_GROUP_ID"
    description = "The group id is invalid."


class UnknownMemberIdError(BrokerResponseError):
    errno = 25
    message = "UNKNOWN_MEMBER_ID"
    description = "The coordinator does not know this member id."


class InvalidSessionTimeoutError(BrokerResponseError):
    errno = 26
    message = "INVALID_SESSION_TIMEOUT"
    description = (
        "The session timeout is outside the range the broker allows "
        "(group.min.session.timeout.ms to group.max.session.timeout.ms)."
    )


class RebalanceInProgressError(BrokerResponseError):
    errno = 27
    message = "REBALANCE_IN_PROGRESS"
    description = "The group is rebalancing; the member has to rejoin it."


class InvalidCommitOffsetSizeError(BrokerResponseError):
    errno = 28
    message = "INVALID_COMMIT_OFFSET_SIZE"
    description = "The size of the offset commit data is invalid."


class TopicAuthorizationFailedError(BrokerResponseError):
    errno = 29
    message = "TOPIC_AUTHORIZATION_FAILED"
    description = "The client is not authorized to access the topic."


class GroupAuthorizationFailedError(BrokerResponseError):
    errno = 30
    message = "GROUP_AUTHORIZATION_FAILED"
    description = "The client is not authorized to access the group."


class ClusterAuthorizationFailedError(BrokerResponseError):
    errno = 31
    message = "CLUSTER_AUTHORIZATION_FAILED"
    description = "The client is not authorized for this cluster-level operation."


class InvalidTimestampError(BrokerResponseError):
    errno = 32
    message = "INVALID_TIMESTAMP"
    description = "A message timestamp is outside the accepted range."


class UnsupportedSaslMechanismError(BrokerResponseError, AuthenticationFailedError):
    errno = 33
    message = "UNSUPPORTED_SASL_MECHANISM"
    description = "The broker does not offer the requested SASL mechanism."


class IllegalSaslStateError(BrokerResponseError, AuthenticationFailedError):
    errno = 34
    message = "ILLEGAL_SASL_STATE"
    description = "The request is not allowed in the current state of the SASL exchange."


class UnsupportedVersionError(BrokerResponseError):
    """An API version is not supported (error code 35, ``UNSUPPORTED_VERSION``).

    A broker returns code 35 for a request version it does not speak; rackafka raises it
    too, with a message, when it and the broker share no version of an API it needs.
    """

    errno = 35
    message = "UNSUPPORTED_VERSION"
    description = "The API version is not supported."


class TopicAlreadyExistsError(BrokerResponseError):
    errno = 36
    message = "TOPIC_ALREADY_EXISTS"
    description = "A topic with this name exists already."


class InvalidPartitionsError(BrokerResponseError):
    errno = 37
    message = "INVALID_PARTITIONS"
    description = "The number of partitions is invalid (below 1)."


class InvalidReplicationFactorError(BrokerResponseError):
    errno = 38
    message = "INVALID_REPLICATION_FACTOR"
    description = "The replication factor is below 1 or exceeds the number of available brokers."


class InvalidReplicationAssignmentError(BrokerResponseError):
    errno = 39
    message = "INVALID_REPLICA_ASSIGNMENT"
    description = "The replica assignment is invalid."


InvalidReplicaAssignmentError = InvalidReplicationAssignmentError


class InvalidConfigurationError(BrokerResponseError):
    errno = 40
    message = "INVALID_CONFIG"
    description = "The configuration is invalid."


InvalidConfigError = InvalidConfigurationError


class NotControllerError(BrokerResponseError):
    errno = 41
    message = "NOT_CONTROLLER"
    description = "The broker is not the active controller of the cluster."
    retriable = True


class InvalidRequestError(BrokerResponseError):
    errno = 42
    message = "INVALID_REQUEST"
    description = (
        "The broker could not make sense of the request: it may be malformed or sent to an "
        "incompatible broker (the broker log has details)."
    )


class UnsupportedForMessageFormatError(BrokerResponseError):
    errno = 43
    message = "UNSUPPORTED_FOR_MESSAGE_FORMAT"
    description = "The message format version on the broker does not support the request."


class PolicyViolationError(BrokerResponseError):
    errno = 44
    message = "POLICY_VIOLATION"
    description = "The request parameters violate a policy configured on the broker."


class OutOfOrderSequenceNumber(BrokerResponseError):
    errno = 45
    message = "OUT_OF_ORDER_SEQUENCE_NUMBER"
    description = "The broker received a producer sequence number out of order."


OutOfOrderSequenceNumberError = OutOfOrderSequenceNumber


class DuplicateSequenceNumber(BrokerResponseError):
    errno = 46
    message = "DUPLICATE_SEQUENCE_NUMBER"
    description = "The broker received a producer sequence number twice."


DuplicateSequenceNumberError = DuplicateSequenceNumber


class InvalidProducerEpoch(BrokerResponseError):
    errno = 47
    message = "INVALID_PRODUCER_EPOCH"
    description = "The producer used an outdated epoch."


InvalidProducerEpochError = InvalidProducerEpoch


class InvalidTxnState(BrokerResponseError):
    errno = 48
    message = "INVALID_TXN_STATE"
    description = (
        "The transactional operation is not valid in the current state of the transaction."
    )


InvalidTxnStateError = InvalidTxnState


class InvalidProducerIdMapping(BrokerResponseError):
    errno = 49
    message = "INVALID_PRODUCER_ID_MAPPING"
    description = "The producer id is not the one currently assigned to the transactional id."


InvalidProducerIdMappingError = InvalidProducerIdMapping


class InvalidTransactionTimeout(BrokerResponseError):
    errno = 50
    message = "INVALID_TRANSACTION_TIMEOUT"
    description = "The transaction timeout exceeds the broker's limit (transaction.max.timeout.ms)."


InvalidTransactionTimeoutError = InvalidTransactionTimeout


class ConcurrentTransactions(BrokerResponseError):
    errno = 51
    message = "CONCURRENT_TRANSACTIONS"
    description = "Another operation on the same transaction is still in progress."


ConcurrentTransactionsError = ConcurrentTransactions


class TransactionCoordinatorFenced(BrokerResponseError):
    errno = 52
    message = "TRANSACTION_COORDINATOR_FENCED"
    description = (
        "The transaction coordinator that sent WriteTxnMarkers is no longer the coordinator "
        "of the producer."
    )


TransactionCoordinatorFencedError = TransactionCoordinatorFenced


class TransactionalIdAuthorizationFailed(BrokerResponseError):
    errno = 53
    message = "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    description = "The client is not authorized to use the transactional id."


TransactionalIdAuthorizationFailedError = TransactionalIdAuthorizationFailed


class SecurityDisabled(BrokerResponseError):
    errno = 54
    message = "SECURITY_DISABLED"
    description = "Security features are disabled on the broker."


SecurityDisabledError = SecurityDisabled


class OperationNotAttempted(BrokerResponseError):
    errno = 55
    message = "OPERATION_NOT_ATTEMPTED"
    description = (
        "The broker skipped this operation, typically because another operation of the same "
        "batched request failed."
    )


OperationNotAttemptedError = OperationNotAttempted


class KafkaStorageError(BrokerResponseError):
    errno = 56
    message = "KAFKA_STORAGE_ERROR"
    description = "The broker hit a disk error while accessing the log."
    retriable = True
    invalid_metadata = True


class LogDirNotFound(BrokerResponseError):
    errno = 57
    message = "LOG_DIR_NOT_FOUND"
    description = "The log directory named in the request is not configured on the broker."


LogDirNotFoundError = LogDirNotFound


class SaslAuthenticationFailed(BrokerResponseError, AuthenticationFailedError):
    errno = 58
    message = "SASL_AUTHENTICATION_FAILED"
    description = "SASL authentication failed."


SaslAuthenticationFailedError = SaslAuthenticationFailed


class UnknownProducerId(BrokerResponseError):
    errno = 59
    message = "UNKNOWN_PRODUCER_ID"
    description = (
        "The broker holds no state for this producer id, for example because retention "
        "removed all of its records."
    )


UnknownProducerIdError = UnknownProducerId


class ReassignmentInProgress(BrokerResponseError):
    errno = 60
    message = "REASSIGNMENT_IN_PROGRESS"
    description = "A partition reassignment is in progress."


ReassignmentInProgressError = ReassignmentInProgress


class DelegationTokenAuthDisabled(BrokerResponseError):
    errno = 61
    message = "DELEGATION_TOKEN_AUTH_DISABLED"
    description = "Delegation tokens are not enabled on the broker."


DelegationTokenAuthDisabledError = DelegationTokenAuthDisabled


class DelegationTokenNotFound(BrokerResponseError):
    errno = 62
    message = "DELEGATION_TOKEN_NOT_FOUND"
    description = "The server has no such delegation token."


DelegationTokenNotFoundError = DelegationTokenNotFound


class DelegationTokenOwnerMismatch(BrokerResponseError):
    errno = 63
    message = "DELEGATION_TOKEN_OWNER_MISMATCH"
    description = "The principal is neither the owner nor a renewer of the delegation token."


DelegationTokenOwnerMismatchError = DelegationTokenOwnerMismatch


class DelegationTokenRequestNotAllowed(BrokerResponseError):
    errno = 64
    message = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
    description = (
        "Delegation token requests are refused on PLAINTEXT and one-way SSL connections and "
        "on connections authenticated by a delegation token."
    )


DelegationTokenRequestNotAllowedError = DelegationTokenRequestNotAllowed


class DelegationTokenAuthorizationFailed(BrokerResponseError):
    errno = 65
    message = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"
    description = "The client is not authorized for this delegation token operation."


DelegationTokenAuthorizationFailedError = DelegationTokenAuthorizationFailed


class DelegationTokenExpired(BrokerResponseError):
    errno = 66
    message = "DELEGATION_TOKEN_EXPIRED"
    description = "The delegation token has expired."


DelegationTokenExpiredError = DelegationTokenExpired


class InvalidPrincipalType(BrokerResponseError):
    errno = 67
    message = "INVALID_PRINCIPAL_TYPE"
    description = "The principal type is not supported."


InvalidPrincipalTypeError = InvalidPrincipalType


class NonEmptyGroup(BrokerResponseError):
    errno = 68
    message = "NON_EMPTY_GROUP"
    description = "The group still has members."


NonEmptyGroupError = NonEmptyGroup


class GroupIdNotFound(BrokerResponseError):
    errno = 69
    message = "GROUP_ID_NOT_FOUND"
    description = "No group with this id exists."


GroupIdNotFoundError = GroupIdNotFound


class FetchSessionIdNotFound(BrokerResponseError):
    errno = 70
    message = "FETCH_SESSION_ID_NOT_FOUND"
    description = "The broker has no fetch session with this id."


FetchSessionIdNotFoundError = FetchSessionIdNotFound


class InvalidFetchSessionEpoch(BrokerResponseError):
    errno = 71
    message = "INVALID_FETCH_SESSION_EPOCH"
    description = "The fetch session epoch does not match the one the broker expects."


InvalidFetchSessionEpochError = InvalidFetchSessionEpoch


class ListenerNotFound(BrokerResponseError):
    errno = 72
    message = "LISTENER_NOT_FOUND"
    description = (
        "The partition leader has no listener matching the one the metadata request arrived on."
    )


ListenerNotFoundError = ListenerNotFound


class TopicDeletionDisabledError(BrokerResponseError):
    errno = 73
    message = "TOPIC_DELETION_DISABLED"
    description = "Topic deletion is disabled on the broker."


class FencedLeaderEpochError(BrokerResponseError):
    errno = 74
    message = "FENCED_LEADER_EPOCH"
    description = "The leader epoch in the request is older than the broker's."
    retriable = True
    invalid_metadata = True


class UnknownLeaderEpochError(BrokerResponseError):
    errno = 75
    message = "UNKNOWN_LEADER_EPOCH"
    description = "The leader epoch in the request is newer than the broker's."
    retriable = True
    invalid_metadata = True


class UnsupportedCompressionTypeError(BrokerResponseError):
    errno = 76
    message = "UNSUPPORTED_COMPRESSION_TYPE"
    description = "The client does not support the compression type of the partition."


class StaleBrokerEpochError(BrokerResponseError):
    errno = 77
    message = "STALE_BROKER_EPOCH"
    description = "The broker epoch has changed."


class OffsetNotAvailableError(BrokerResponseError):
    errno = 78
    message = "OFFSET_NOT_AVAILABLE"
    description = (
        "The leader's high watermark has not caught up since a recent leader election, so "
        "offsets are not yet guaranteed to increase monotonically."
    )
    retriable = True
    invalid_metadata = True


class MemberIdRequired(BrokerResponseError):
    errno = 79
    message = "MEMBER_ID_REQUIRED"
    description = "The member needs a member id before it can join the group."


MemberIdRequiredError = MemberIdRequired


class PreferredLeaderNotAvailableError(BrokerResponseError):
    errno = 80
    message = "PREFERRED_LEADER_NOT_AVAILABLE"
    description = "The preferred leader is not available."
    retriable = True
    invalid_metadata = True


class GroupMaxSizeReachedError(BrokerResponseError):
    errno = 81
    message = "GROUP_MAX_SIZE_REACHED"
    description = "The group has reached its maximum number of members."


class FencedInstanceIdError(BrokerResponseError):
    errno = 82
    message = "FENCED_INSTANCE_ID"
    description = (
        "A member with the same group.instance.id but another member id has registered, so "
        "this static member is fenced."
    )


class EligibleLeadersNotAvailableError(BrokerResponseError):
    errno = 83
    message = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    description = "No eligible leader is available for the partition."
    retriable = True
    invalid_metadata = True


class ElectionNotNeededError(BrokerResponseError):
    errno = 84
    message = "ELECTION_NOT_NEEDED"
    description = "The partition needs no leader election."
    retriable = True
    invalid_metadata = True


class NoReassignmentInProgressError(BrokerResponseError):
    errno = 85
    message = "NO_REASSIGNMENT_IN_PROGRESS"
    description = "No partition reassignment is in progress."


class GroupSubscribedToTopicError(BrokerResponseError):
    errno = 86
    message = "GROUP_SUBSCRIBED_TO_TOPIC"
    description = "The offsets of a topic cannot be deleted while the group is subscribed to it."


class InvalidRecordError(BrokerResponseError):
    errno = 87
    message = "INVALID_RECORD"
    description = "The broker rejected the record because it failed validation."


class UnstableOffsetCommitError(BrokerResponseError):
    errno = 88
    message = "UNSTABLE_OFFSET_COMMIT"
    description = "Pending transactional offset commits have to complete first."
    retriable = True


class ThrottlingQuotaExceededError(BrokerResponseError):
    errno = 89
    message = "THROTTLING_QUOTA_EXCEEDED"
    description = "The throttling quota was exceeded."
    retriable = True


class ProducerFencedError(BrokerResponseError):
    errno = 90
    message = "PRODUCER_FENCED"
    description = "A newer producer with the same transactional id has fenced this one."


class ResourceNotFoundError(BrokerResponseError):
    errno = 91
    message = "RESOURCE_NOT_FOUND"
    description = "The request refers to a resource that does not exist."


class DuplicateResourceError(BrokerResponseError):
    errno = 92
    message = "DUPLICATE_RESOURCE"
    description = "The request refers to the same resource more than once."


class UnacceptableCredentialError(BrokerResponseError):
    errno = 93
    message = "UNACCEPTABLE_CREDENTIAL"
    description = "The requested credential does not meet the acceptance criteria."


class InconsistentVoterSetError(BrokerResponseError):
    errno = 94
    message = "INCONSISTENT_VOTER_SET"
    description = (
        "The sender or the receiver of a voter-only request is not one of the expected voters."
    )


class InvalidUpdateVersionError(BrokerResponseError):
    errno = 95
    message = "INVALID_UPDATE_VERSION"
    description = "The update version is invalid."


class FeatureUpdateFailedError(BrokerResponseError):
    errno = 96
    message = "FEATURE_UPDATE_FAILED"
    description = "An unexpected server error prevented the update of the finalized features."


class PrincipalDeserializationFailureError(BrokerResponseError):
    errno = 97
    message = "PRINCIPAL_DESERIALIZATION_FAILURE"
    description = (
        "The broker could not deserialize the request principal while forwarding, which "
        "points at an internal problem in the cluster's security setup."
    )


class SnapshotNotFoundError(BrokerResponseError):
    errno = 98
    message = "SNAPSHOT_NOT_FOUND"
    description = "The requested snapshot does not exist."


class PositionOutOfRangeError(BrokerResponseError):
    errno = 99
    message = "POSITION_OUT_OF_RANGE"
    description = "The requested position is negative or not below the size of the snapshot."


class UnknownTopicIdError(BrokerResponseError):
    errno = 100
    message = "UNKNOWN_TOPIC_ID"
    description = "The broker does not host a topic with this topic id."
    retriable = True
    invalid_metadata = True


class DuplicateBrokerRegistrationError(BrokerResponseError):
    errno = 101
    message = "DUPLICATE_BROKER_REGISTRATION"
    description = "This broker id is in use already."


class BrokerIdNotRegisteredError(BrokerResponseError):
    errno = 102
    message = "BROKER_ID_NOT_REGISTERED"
    description = "This broker id has not been registered."


class InconsistentTopicIdError(BrokerResponseError):
    errno = 103
    message = "INCONSISTENT_TOPIC_ID"
    description = "The topic id in the request does not match the topic id of the log."
    retriable = True
    invalid_metadata = True


class InconsistentClusterIdError(BrokerResponseError):
    errno = 104
    message = "INCONSISTENT_CLUSTER_ID"
    description = "The cluster id in the request does not match the server's."


class TransactionalIdNotFoundError(BrokerResponseError):
    errno = 105
    message = "TRANSACTIONAL_ID_NOT_FOUND"
    description = "No such transactional id exists."


class FetchSessionTopicIdError(BrokerResponseError):
    errno = 106
    message = "FETCH_SESSION_TOPIC_ID_ERROR"
    description = "The fetch session used topic ids inconsistently."
    retriable = True


class IneligibleReplicaError(BrokerResponseError):
    errno = 107
    message = "INELIGIBLE_REPLICA"
    description = "The proposed ISR contains a replica that is not eligible."


class NewLeaderElectedError(BrokerResponseError):
    errno = 108
    message = "NEW_LEADER_ELECTED"
    description = (
        "The AlterPartition request was applied, but the partition has a new leader since."
    )


class OffsetMovedToTieredStorageError(BrokerResponseError):
    errno = 109
    message = "OFFSET_MOVED_TO_TIERED_STORAGE"
    description = "The requested offset has moved to tiered storage."


class FencedMemberEpochError(BrokerResponseError):
    errno = 110
    message = "FENCED_MEMBER_EPOCH"
    description = (
        "The group coordinator fenced the member epoch: the member must give up all of its "
        "partitions and rejoin."
    )


class UnreleasedInstanceIdError(BrokerResponseError):
    errno = 111
    message = "UNRELEASED_INSTANCE_ID"
    description = "Another member of the group still uses this instance id and has to leave first."


class UnsupportedAssignorError(BrokerResponseError):
    errno = 112
    message = "UNSUPPORTED_ASSIGNOR"
    description = "The group does not support the assignor or its version range."


class StaleMemberEpochError(BrokerResponseError):
    errno = 113
    message = "STALE_MEMBER_EPOCH"
    description = (
        "The member epoch is stale: retry once a ConsumerGroupHeartbeat has delivered the "
        "current epoch."
    )


class MismatchedEndpointTypeError(BrokerResponseError):
    errno = 114
    message = "MISMATCHED_ENDPOINT_TYPE"
    description = "The request reached an endpoint of the wrong type."


class UnsupportedEndpointTypeError(BrokerResponseError):
    errno = 115
    message = "UNSUPPORTED_ENDPOINT_TYPE"
    description = "This endpoint type is not supported yet."


class UnknownControllerIdError(BrokerResponseError):
    errno = 116
    message = "UNKNOWN_CONTROLLER_ID"
    description = "The controller id is unknown."


class UnknownSubscriptionIdError(BrokerResponseError):
    errno = 117
    message = "UNKNOWN_SUBSCRIPTION_ID"
    description = "The telemetry push used an unknown or outdated subscription id."


class TelemetryTooLargeError(BrokerResponseError):
    errno = 118
    message = "TELEMETRY_TOO_LARGE"
    description = "The telemetry push is larger than the broker accepts."


class InvalidRegistrationError(BrokerResponseError):
    errno = 119
    message = "INVALID_REGISTRATION"
    description = "The controller considers the broker's registration invalid."


class TransactionAbortableError(BrokerResponseError):
    errno = 120
    message = "TRANSACTION_ABORTABLE"
    description = (
        "The transaction failed on the server; abort it to keep using the transactional id."
    )


class InvalidRecordStateError(BrokerResponseError):
    errno = 121
    message = "INVALID_RECORD_STATE"
    description = "The state of the record does not allow acknowledging its delivery."


class ShareSessionNotFoundError(BrokerResponseError):
    errno = 122
    message = "SHARE_SESSION_NOT_FOUND"
    description = "The broker has no such share session."
    retriable = True


class InvalidShareSessionEpochError(BrokerResponseError):
    errno = 123
    message = "INVALID_SHARE_SESSION_EPOCH"
    description = "The share session epoch is invalid."
    retriable = True


class FencedStateEpochError(BrokerResponseError):
    errno = 124
    message = "FENCED_STATE_EPOCH"
    description = (
        "The share coordinator refused the request because the share-group state epoch does "
        "not match."
    )


class InvalidVoterKeyError(BrokerResponseError):
    errno = 125
    message = "INVALID_VOTER_KEY"
    description = "The voter key does not match the key of the receiving replica."


class DuplicateVoterError(BrokerResponseError):
    errno = 126
    message = "DUPLICATE_VOTER"
    description = "The voter belongs to the voter set already."


class VoterNotFoundError(BrokerResponseError):
    errno = 127
    message = "VOTER_NOT_FOUND"
    description = "The voter does not belong to the voter set."


class InvalidRegularExpressionError(BrokerResponseError):
    errno = 128
    message = "INVALID_REGULAR_EXPRESSION"
    description = "The regular expression is invalid."


class RebootstrapRequiredError(BrokerResponseError):
    errno = 129
    message = "REBOOTSTRAP_REQUIRED"
    description = (
        "The client's metadata is stale; it has to bootstrap again from its bootstrap servers."
    )


class StreamsInvalidTopologyError(BrokerResponseError):
    errno = 130
    message = "STREAMS_INVALID_TOPOLOGY"
    description = "The Streams topology is invalid."


class StreamsInvalidTopologyEpochError(BrokerResponseError):
    errno = 131
    message = "STREAMS_INVALID_TOPOLOGY_EPOCH"
    description = "The Streams topology epoch is invalid."


class StreamsTopologyFencedError(BrokerResponseError):
    errno = 132
    message = "STREAMS_TOPOLOGY_FENCED"
    description = "The Streams topology epoch is outdated."


class ShareSessionLimitReachedError(BrokerResponseError):
    errno = 133
    message = "SHARE_SESSION_LIMIT_REACHED"
    description = "The broker has reached its limit of share sessions."
    retriable = True


def _unknown_code_class(error_code: int) -> type[UnknownError]:
    cls = _UNKNOWN_CODES.get(error_code)
    if cls is None:
        made = type(
            "UnknownError",
            (UnknownError,),
            {
                "__module__": __name__,
                "__qualname__": f"UnknownError[{error_code}]",
                "__doc__": f"Error code {error_code}, which rackafka does not know.",
                "errno": error_code,
                "message": f"UNKNOWN_ERROR_CODE_{error_code}",
                "description": f"The broker returned error code {error_code}, which rackafka "
                "does not know.",
                "_generated": True,
                # Not UNKNOWN_SERVER_ERROR's (-1): a code a Fetch does not expect.
                "fetch_error_kind": "fatal-from-leader",
            },
        )
        cls = _UNKNOWN_CODES.setdefault(error_code, made)
    return cls


def _rebuild_unknown(error_code: int, args: tuple[object, ...]) -> UnknownError:
    return _unknown_code_class(error_code)(*args)


# ---------------------------------------------------------------------------------------
# Properties of an error code: the one place where codes are grouped by what they mean to
# the client. Other modules ask the class (``err.coordinator_moved``), never the integer.

#: Codes the Java client retries (``RetriableException``) whose aiokafka class says
#: ``retriable = False``; the classes keep aiokafka's flags so that code written for aiokafka
#: behaves the same, and rackafka's own retry logic asks ``client_retriable``.
_JAVA_RETRIABLE = frozenset({2, 9, 13, 51, 70, 71, 72})
#: Likewise for ``invalid_metadata`` (Java's ``InvalidMetadataException``).
_JAVA_INVALID_METADATA = frozenset({9, 13, 72})
#: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, and REQUEST_TIMED_OUT (after which the Java
#: consumer's coordinator also forgets the coordinator).
_COORDINATOR_MOVED = frozenset({7, 15, 16})
#: COORDINATOR_LOAD_IN_PROGRESS.
_COORDINATOR_LOADING = frozenset({14})
#: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID (classic and KIP-848), FENCED_MEMBER_EPOCH.
_MEMBER_FENCED = frozenset({22, 25, 110})
#: INVALID_PRODUCER_EPOCH, PRODUCER_FENCED.
_PRODUCER_FENCED = frozenset({47, 90})
#: Codes no retry can cure and after which the role cannot go on (the Java client's fatal
#: errors of a group member and of a transactional producer): GROUP_AUTHORIZATION_FAILED,
#: CLUSTER_AUTHORIZATION_FAILED, the producer fenced, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
#: FENCED_INSTANCE_ID, UNSUPPORTED_FOR_MESSAGE_FORMAT, SASL_AUTHENTICATION_FAILED.
_FATAL = frozenset({30, 31, 43, 53, 58, 82}) | _PRODUCER_FENCED
#: A partition-level Fetch error, as the consumer's read-replica routing (KIP-392) and the
#: Java client's fetcher treat it. ``retry``: drop the cached read replica, refresh metadata,
#: fetch again (from the leader). ``retry-no-refresh``: the same without a refresh (the
#: broker is behind our metadata: UNKNOWN_LEADER_EPOCH). ``retry-keep-replica``: retry after
#: a backoff, replica kept (UNKNOWN_SERVER_ERROR). ``offset``: OFFSET_OUT_OF_RANGE (a reset
#: from the leader, the leader again from a follower). ``fatal``: raised to the user. Any
#: other code is ``fatal-from-leader``: raised when the leader sends it, from a follower the
#: partition goes back to the leader (CORRUPT_MESSAGE and codes a Fetch does not expect).
_FETCH_ERROR_KINDS = {
    **dict.fromkeys((3, 6, 9, 56, 74, 78, 100, 103), "retry"),
    75: "retry-no-refresh",
    -1: "retry-keep-replica",
    1: "offset",
    29: "fatal",
    76: "fatal",
}


def _set_properties() -> None:
    for code, cls in ERROR_CODES.items():
        cls.client_retriable = code in _JAVA_RETRIABLE or bool(cls.retriable)
        cls.needs_metadata_refresh = code in _JAVA_INVALID_METADATA or bool(cls.invalid_metadata)
        cls.coordinator_moved = code in _COORDINATOR_MOVED
        cls.coordinator_loading = code in _COORDINATOR_LOADING
        cls.member_fenced = code in _MEMBER_FENCED
        cls.producer_fenced = code in _PRODUCER_FENCED
        cls.fatal = code in _FATAL
        cls.fetch_error_kind = _FETCH_ERROR_KINDS.get(code, "fatal-from-leader")


_set_properties()


def is_retriable(error: type[BaseException] | BaseException) -> bool:
    """Whether the Java client retries ``error`` (a class or an instance).

    For a :class:`BrokerResponseError` this is its ``client_retriable`` property: the same
    as its ``retriable`` flag but for the few codes where aiokafka's flag (which rackafka's
    classes copy) says otherwise. For other errors, their ``retriable`` flag.
    """
    if isinstance(error, BrokerResponseError) or (
        isinstance(error, type) and issubclass(error, BrokerResponseError)
    ):
        return error.client_retriable
    return bool(getattr(error, "retriable", False))


def is_invalid_metadata(error: type[BaseException] | BaseException) -> bool:
    """Whether metadata should be refreshed before retrying ``error``, as the Java client
    does (for a :class:`BrokerResponseError`, its ``needs_metadata_refresh`` property)."""
    if isinstance(error, BrokerResponseError) or (
        isinstance(error, type) and issubclass(error, BrokerResponseError)
    ):
        return error.needs_metadata_refresh
    return bool(getattr(error, "invalid_metadata", False))


def for_code(error_code: int) -> type[BrokerResponseError]:
    """Return the exception class of a Kafka error code.

    A code that rackafka does not know gives a subclass of :class:`UnknownError` whose
    ``errno`` is that code (aiokafka returns :class:`UnknownError` itself), so
    ``except UnknownError`` catches it and its ``str()`` still shows the code. The same
    code always gives the same class.

    Arguments:
        error_code (int): the error code of a response.

    Returns:
        type[BrokerResponseError]: the class; :class:`NoError` for ``0``.
    """
    cls = ERROR_CODES.get(error_code)
    if cls is not None:
        return cls
    return _unknown_code_class(error_code)


def raise_for_code(error_code: int, message: str | None = None) -> None:
    """Raise the exception of a Kafka error code; do nothing for ``0`` (no error).

    Arguments:
        error_code (int): the error code of a response.
        message (str | None): text for the exception, for example the error message
            of the response or the topic-partition it concerns.

    Raises:
        BrokerResponseError: the subclass that :func:`for_code` returns.
    """
    if error_code == 0:
        return
    cls = for_code(error_code)
    raise cls() if message is None else cls(message)
