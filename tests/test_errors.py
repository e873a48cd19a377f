"""Tests for rackafka.errors: the Kafka error-code table and aiokafka compatibility."""

from __future__ import annotations

import inspect
import pickle

import pytest

import rackafka.errors as errors
from rackafka.errors import (
    ERROR_CODES,
    BrokerResponseError,
    CorruptRecordException,
    KafkaError,
    KafkaProtocolError,
    UnknownError,
    UnsupportedVersionError,
    for_code,
    is_invalid_metadata,
    is_retriable,
    raise_for_code,
)

# Error codes and names of org.apache.kafka.common.protocol.Errors (Apache Kafka 4.1).
KAFKA_ERROR_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    1: "OFFSET_OUT_OF_RANGE",
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    4: "INVALID_FETCH_SIZE",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    8: "BROKER_NOT_AVAILABLE",
    9: "REPLICA_NOT_AVAILABLE",
    10: "MESSAGE_TOO_LARGE",
    11: "STALE_CONTROLLER_EPOCH",
    12: "OFFSET_METADATA_TOO_LARGE",
    13: "NETWORK_EXCEPTION",
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
    17: "INVALID_TOPIC_EXCEPTION",
    18: "RECORD_LIST_TOO_LARGE",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    21: "INVALID_REQUIRED_ACKS",
    22: "ILLEGAL_GENERATION",
    23: "INCONSISTENT_GROUP_PROTOCOL",
    24: "INVALID_GROUP_ID",
    25: "UNKNOWN_MEMBER_ID",
    26: "INVALID_SESSION_TIMEOUT",
    27: "REBALANCE_IN_PROGRESS",
    28: "INVALID_COMMIT_OFFSET_SIZE",
    29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    32: "INVALID_TIMESTAMP",
    33: "UNSUPPORTED_SASL_MECHANISM",
    34: "ILLEGAL_SASL_STATE",
    35: "UNSUPPORTED_VERSION",
    36: "TOPIC_ALREADY_EXISTS",
    37: "INVALID_PARTITIONS",
    38: "INVALID_REPLICATION_FACTOR",
    39: "INVALID_REPLICA_ASSIGNMENT",
    40: "INVALID_CONFIG",
    41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST",
    43: "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    44: "POLICY_VIOLATION",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    46: "DUPLICATE_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    48: "INVALID_TXN_STATE",
    49: "INVALID_PRODUCER_ID_MAPPING",
    50: "INVALID_TRANSACTION_TIMEOUT",
    51: "CONCURRENT_TRANSACTIONS",
    52: "TRANSACTION_COORDINATOR_FENCED",
    53: "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    54: "SECURITY_DISABLED",
    55: "OPERATION_NOT_ATTEMPTED",
    56: "KAFKA_STORAGE_ERROR",
    57: "LOG_DIR_NOT_FOUND",
    58: "SASL_AUTHENTICATION_FAILED",
    59: "UNKNOWN_PRODUCER_ID",
    60: "REASSIGNMENT_IN_PROGRESS",
    61: "DELEGATION_TOKEN_AUTH_DISABLED",
    62: "DELEGATION_TOKEN_NOT_FOUND",
    63: "DELEGATION_TOKEN_OWNER_MISMATCH",
    64: "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    65: "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    66: "DELEGATION_TOKEN_EXPIRED",
    67: "INVALID_PRINCIPAL_TYPE",
    68: "NON_EMPTY_GROUP",
    69: "GROUP_ID_NOT_FOUND",
    70: "FETCH_SESSION_ID_NOT_FOUND",
    71: "INVALID_FETCH_SESSION_EPOCH",
    72: "LISTENER_NOT_FOUND",
    73: "TOPIC_DELETION_DISABLED",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    76: "UNSUPPORTED_COMPRESSION_TYPE",
    77: "STALE_BROKER_EPOCH",
    78: "OFFSET_NOT_AVAILABLE",
    79: "MEMBER_ID_REQUIRED",
    80: "PREFERRED_LEADER_NOT_AVAILABLE",
    81: "GROUP_MAX_SIZE_REACHED",
    82: "FENCED_INSTANCE_ID",
    83: "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    84: "ELECTION_NOT_NEEDED",
    85: "NO_REASSIGNMENT_IN_PROGRESS",
    86: "GROUP_SUBSCRIBED_TO_TOPIC",
    87: "INVALID_RECORD",
    88: "UNSTABLE_OFFSET_COMMIT",
    89: "THROTTLING_QUOTA_EXCEEDED",
    90: "PRODUCER_FENCED",
    91: "RESOURCE_NOT_FOUND",
    92: "DUPLICATE_RESOURCE",
    93: "UNACCEPTABLE_CREDENTIAL",
    94: "INCONSISTENT_VOTER_SET",
    95: "INVALID_UPDATE_VERSION",
    96: "FEATURE_UPDATE_FAILED",
    97: "PRINCIPAL_DESERIALIZATION_FAILURE",
    98: "SNAPSHOT_NOT_FOUND",
    99: "POSITION_OUT_OF_RANGE",
    100: "UNKNOWN_TOPIC_ID",
    101: "DUPLICATE_BROKER_REGISTRATION",
    102: "BROKER_ID_NOT_REGISTERED",
    103: "INCONSISTENT_TOPIC_ID",
    104: "INCONSISTENT_CLUSTER_ID",
    105: "TRANSACTIONAL_ID_NOT_FOUND",
    106: "FETCH_SESSION_TOPIC_ID_ERROR",
    107: "INELIGIBLE_REPLICA",
    108: "NEW_LEADER_ELECTED",
    109: "OFFSET_MOVED_TO_TIERED_STORAGE",
    110: "FENCED_MEMBER_EPOCH",
    111: "UNRELEASED_INSTANCE_ID",
    112: "UNSUPPORTED_ASSIGNOR",
    113: "STALE_MEMBER_EPOCH",
    114: "MISMATCHED_ENDPOINT_TYPE",
    115: "UNSUPPORTED_ENDPOINT_TYPE",
    116: "UNKNOWN_CONTROLLER_ID",
    117: "UNKNOWN_SUBSCRIPTION_ID",
    118: "TELEMETRY_TOO_LARGE",
    119: "INVALID_REGISTRATION",
    120: "TRANSACTION_ABORTABLE",
    121: "INVALID_RECORD_STATE",
    122: "SHARE_SESSION_NOT_FOUND",
    123: "INVALID_SHARE_SESSION_EPOCH",
    124: "FENCED_STATE_EPOCH",
    125: "INVALID_VOTER_KEY",
    126: "DUPLICATE_VOTER",
    127: "VOTER_NOT_FOUND",
    128: "INVALID_REGULAR_EXPRESSION",
    129: "REBOOTSTRAP_REQUIRED",
    130: "STREAMS_INVALID_TOPOLOGY",
    131: "STREAMS_INVALID_TOPOLOGY_EPOCH",
    132: "STREAMS_TOPOLOGY_FENCED",
    133: "SHARE_SESSION_LIMIT_REACHED",
}

# Codes whose Java exception is a RetriableException.
JAVA_RETRIABLE = {
    *(2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78),
    *(80, 83, 84, 88, 89, 100, 103, 106, 122, 123, 133),
}
# Codes whose Java exception is an InvalidMetadataException, plus 75 and 78 (see errors.py).
REFRESH_METADATA = {3, 5, 6, 9, 13, 56, 72, 74, 75, 78, 80, 83, 84, 100, 103}

# Every class and alias aiokafka 0.14 defines in aiokafka.errors, with its error code
# (None for errors that are not broker error codes).
AIOKAFKA_ERRORS: dict[str, int | None] = {
    "KafkaError": None,
    "IllegalStateError": None,
    "IllegalArgumentError": None,
    "NoBrokersAvailable": None,
    "NodeNotReadyError": None,
    "KafkaProtocolError": None,
    "CorrelationIdError": None,
    "Cancelled": None,
    "TooManyInFlightRequests": None,
    "StaleMetadata": None,
    "MetadataEmptyBrokerList": None,
    "UnrecognizedBrokerVersion": None,
    "IncompatibleBrokerVersion": None,
    "CommitFailedError": None,
    "AuthenticationMethodNotSupported": None,
    "AuthenticationFailedError": None,
    "KafkaUnavailableError": None,
    "KafkaTimeoutError": None,
    "KafkaConnectionError": None,
    "UnsupportedCodecError": None,
    "KafkaConfigurationError": None,
    "QuotaViolationError": None,
    "ConsumerStoppedError": None,
    "IllegalOperation": None,
    "NoOffsetForPartitionError": None,
    "RecordTooLargeError": None,
    "ProducerClosed": None,
    "ProducerFenced": None,
    "BrokerResponseError": None,
    "NoError": 0,
    "UnknownError": -1,
    "OffsetOutOfRangeError": 1,
    "CorruptRecordException": 2,
    "InvalidMessageError": 2,
    "UnknownTopicOrPartitionError": 3,
    "InvalidFetchRequestError": 4,
    "LeaderNotAvailableError": 5,
    "NotLeaderForPartitionError": 6,
    "RequestTimedOutError": 7,
    "BrokerNotAvailableError": 8,
    "ReplicaNotAvailableError": 9,
    "MessageSizeTooLargeError": 10,
    "StaleControllerEpochError": 11,
    "OffsetMetadataTooLargeError": 12,
    "StaleLeaderEpochCodeError": 13,
    "GroupLoadInProgressError": 14,
    "CoordinatorLoadInProgressError": 14,
    "GroupCoordinatorNotAvailableError": 15,
    "CoordinatorNotAvailableError": 15,
    "NotCoordinatorForGroupError": 16,
    "NotCoordinatorError": 16,
    "InvalidTopicError": 17,
    "RecordListTooLargeError": 18,
    "NotEnoughReplicasError": 19,
    "NotEnoughReplicasAfterAppendError": 20,
    "InvalidRequiredAcksError": 21,
    "IllegalGenerationError": 22,
    "InconsistentGroupProtocolError": 23,
    "InvalidGroupIdError": 24,
    "UnknownMemberIdError": 25,
    "InvalidSessionTimeoutError": 26,
    "RebalanceInProgressError": 27,
    "InvalidCommitOffsetSizeError": 28,
    "TopicAuthorizationFailedError": 29,
    "GroupAuthorizationFailedError": 30,
    "ClusterAuthorizationFailedError": 31,
    "InvalidTimestampError": 32,
    "UnsupportedSaslMechanismError": 33,
    "IllegalSaslStateError": 34,
    "UnsupportedVersionError": 35,
    "TopicAlreadyExistsError": 36,
    "InvalidPartitionsError": 37,
    "InvalidReplicationFactorError": 38,
    "InvalidReplicationAssignmentError": 39,
    "InvalidConfigurationError": 40,
    "NotControllerError": 41,
    "InvalidRequestError": 42,
    "UnsupportedForMessageFormatError": 43,
    "PolicyViolationError": 44,
    "OutOfOrderSequenceNumber": 45,
    "DuplicateSequenceNumber": 46,
    "InvalidProducerEpoch": 47,
    "InvalidTxnState": 48,
    "InvalidProducerIdMapping": 49,
    "InvalidTransactionTimeout": 50,
    "ConcurrentTransactions": 51,
    "TransactionCoordinatorFenced": 52,
    "TransactionalIdAuthorizationFailed": 53,
    "SecurityDisabled": 54,
    "OperationNotAttempted": 55,
    "KafkaStorageError": 56,
    "LogDirNotFound": 57,
    "SaslAuthenticationFailed": 58,
    "UnknownProducerId": 59,
    "ReassignmentInProgress": 60,
    "DelegationTokenAuthDisabled": 61,
    "DelegationTokenNotFound": 62,
    "DelegationTokenOwnerMismatch": 63,
    "DelegationTokenRequestNotAllowed": 64,
    "DelegationTokenAuthorizationFailed": 65,
    "DelegationTokenExpired": 66,
    "InvalidPrincipalType": 67,
    "NonEmptyGroup": 68,
    "GroupIdNotFound": 69,
    "FetchSessionIdNotFound": 70,
    "InvalidFetchSessionEpoch": 71,
    "ListenerNotFound": 72,
    "MemberIdRequired": 79,
}


# --- the error-code table ---------------------------------------------------------------


def test_every_kafka_error_code_has_a_class() -> None:
    assert set(ERROR_CODES) == set(KAFKA_ERROR_NAMES)
    for code, kafka_name in KAFKA_ERROR_NAMES.items():
        cls = for_code(code)
        assert cls is ERROR_CODES[code]
        assert issubclass(cls, BrokerResponseError)
        assert cls.errno == code
        assert cls.message == kafka_name
        assert cls.description and cls.__doc__
        # the class is reachable under its own name
        assert getattr(errors, cls.__name__) is cls


def test_each_code_has_its_own_class() -> None:
    classes = list(ERROR_CODES.values())
    assert len(set(classes)) == len(classes)
    assert len({cls.__name__ for cls in classes}) == len(classes)


def test_kafka_error_codes_reach_the_newest_known() -> None:
    # No holes: every code from -1 to the newest one maps to a named class.
    assert sorted(ERROR_CODES) == list(range(-1, max(KAFKA_ERROR_NAMES) + 1))


def test_module_classes_are_all_registered() -> None:
    # Every BrokerResponseError subclass defined in the module is in the table.
    defined = {
        obj
        for obj in vars(errors).values()
        if inspect.isclass(obj)
        and issubclass(obj, BrokerResponseError)
        and obj is not BrokerResponseError
    }
    assert defined == set(ERROR_CODES.values())


def test_flags_are_aiokafkas() -> None:
    # "Retry while retriable" code written for aiokafka must not loop on rackafka.
    aiokafka_errors = pytest.importorskip("aiokafka.errors", reason="aiokafka is not installed")
    for name in dir(aiokafka_errors):
        theirs = getattr(aiokafka_errors, name)
        if not (isinstance(theirs, type) and issubclass(theirs, BaseException)):
            continue
        ours = getattr(errors, name)
        for flag in ("retriable", "invalid_metadata"):
            assert getattr(ours, flag, None) == getattr(theirs, flag, None), (name, flag)


def test_kafka_error_is_runtime_error_with_default_flags() -> None:
    assert issubclass(KafkaError, RuntimeError)
    assert KafkaError.retriable is False
    assert KafkaError.invalid_metadata is False


@pytest.mark.parametrize("code", sorted(KAFKA_ERROR_NAMES))
def test_retriable_matches_java_client(code: int) -> None:
    # rackafka's own retry logic follows Java; the class flag follows aiokafka (below).
    assert is_retriable(for_code(code)) is (code in JAVA_RETRIABLE)


@pytest.mark.parametrize("code", sorted(KAFKA_ERROR_NAMES))
def test_invalid_metadata(code: int) -> None:
    cls = for_code(code)
    assert is_invalid_metadata(cls) is (code in REFRESH_METADATA)
    if is_invalid_metadata(cls):
        # a metadata refresh is only useful if the operation may then be retried
        assert is_retriable(cls)


@pytest.mark.parametrize(
    ("code", "name", "retriable", "invalid_metadata"),
    [
        (1, "OffsetOutOfRangeError", False, False),
        (2, "CorruptRecordException", False, False),  # aiokafka's flag; Java retries it
        (3, "UnknownTopicOrPartitionError", True, True),
        (6, "NotLeaderForPartitionError", True, True),
        (14, "GroupLoadInProgressError", True, False),
        (15, "GroupCoordinatorNotAvailableError", True, False),
        (16, "NotCoordinatorForGroupError", True, False),
        (22, "IllegalGenerationError", False, False),
        (25, "UnknownMemberIdError", False, False),
        (27, "RebalanceInProgressError", False, False),
        (35, "UnsupportedVersionError", False, False),
        (74, "FencedLeaderEpochError", True, True),
        (75, "UnknownLeaderEpochError", True, True),
        (78, "OffsetNotAvailableError", True, True),
        (100, "UnknownTopicIdError", True, True),
    ],
)
def test_codes_the_consumer_depends_on(
    code: int, name: str, retriable: bool, invalid_metadata: bool
) -> None:
    cls = for_code(code)
    assert cls.__name__ == name
    assert cls.retriable is retriable
    assert cls.invalid_metadata is invalid_metadata
    instance = cls("detail")
    assert instance.retriable is retriable
    assert instance.invalid_metadata is invalid_metadata


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("UnknownServerError", "UnknownError"),
        ("InvalidMessageError", "CorruptRecordException"),
        ("CorruptRecordError", "CorruptRecordException"),
        ("NotLeaderOrFollowerError", "NotLeaderForPartitionError"),
        ("NetworkExceptionError", "StaleLeaderEpochCodeError"),
        ("CoordinatorLoadInProgressError", "GroupLoadInProgressError"),
        ("CoordinatorNotAvailableError", "GroupCoordinatorNotAvailableError"),
        ("NotCoordinatorError", "NotCoordinatorForGroupError"),
        ("MessageTooLargeError", "MessageSizeTooLargeError"),
        ("InvalidReplicaAssignmentError", "InvalidReplicationAssignmentError"),
        ("OutOfOrderSequenceNumberError", "OutOfOrderSequenceNumber"),
        ("MemberIdRequiredError", "MemberIdRequired"),
    ],
)
def test_aliases_are_the_same_class(alias: str, canonical: str) -> None:
    assert getattr(errors, alias) is getattr(errors, canonical)


# --- unknown codes --------------------------------------------------------------------


@pytest.mark.parametrize("code", [134, 999, 32767, -2, -32768])
def test_for_code_unknown_code(code: int) -> None:
    cls = for_code(code)
    assert issubclass(cls, UnknownError)
    assert cls is not UnknownError
    assert cls.errno == code
    assert for_code(code) is cls  # the same class every time
    assert code not in ERROR_CODES
    with pytest.raises(UnknownError) as info:
        raise cls("broker said so")
    assert str(info.value) == f"[Error {code}] UnknownError: broker said so"


def test_unknown_code_error_pickles() -> None:
    err = for_code(4321)("a", 1)
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is type(err)
    assert copy.errno == 4321
    assert copy.args == ("a", 1)


def test_user_subclass_does_not_change_the_table() -> None:
    before = dict(ERROR_CODES)

    class MyOffsetError(errors.OffsetOutOfRangeError):
        pass

    assert before == ERROR_CODES
    assert MyOffsetError.errno == 1


def test_duplicate_code_in_module_is_refused() -> None:
    with pytest.raises(TypeError, match="error code 3"):
        type("Clash", (BrokerResponseError,), {"errno": 3, "__module__": errors.__name__})
    assert ERROR_CODES[3] is errors.UnknownTopicOrPartitionError


# --- raising and str() ----------------------------------------------------------------


def test_raise_for_code() -> None:
    assert raise_for_code(0) is None
    assert raise_for_code(0, "ignored") is None
    with pytest.raises(errors.UnknownTopicOrPartitionError) as info:
        raise_for_code(3, "my-topic-7")
    assert info.value.args == ("my-topic-7",)
    assert str(info.value) == "[Error 3] UnknownTopicOrPartitionError: my-topic-7"
    with pytest.raises(errors.NotLeaderOrFollowerError) as info2:
        raise_for_code(6)
    assert info2.value.args == ()
    assert str(info2.value) == "[Error 6] NotLeaderForPartitionError"
    with pytest.raises(UnknownError) as info3:
        raise_for_code(5000)
    assert info3.value.errno == 5000


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (KafkaError(), "KafkaError"),
        (KafkaError("boom"), "KafkaError: boom"),
        (errors.KafkaTimeoutError("no answer"), "KafkaTimeoutError: no answer"),
        (errors.OffsetOutOfRangeError(), "[Error 1] OffsetOutOfRangeError"),
        (errors.OffsetOutOfRangeError("t-0 at 5"), "[Error 1] OffsetOutOfRangeError: t-0 at 5"),
        # an alias prints the name of its class
        (errors.InvalidMessageError("bad crc"), "[Error 2] CorruptRecordException: bad crc"),
        (errors.FencedLeaderEpochError(), "[Error 74] FencedLeaderEpochError"),
        (errors.UnknownError("x"), "[Error -1] UnknownError: x"),
    ],
)
def test_str(error: Exception, text: str) -> None:
    assert str(error) == text


def test_protocol_error_takes_a_plain_message() -> None:
    with pytest.raises(KafkaError) as info:
        raise KafkaProtocolError("truncated response header")
    assert isinstance(info.value, KafkaProtocolError)
    assert str(info.value) == "KafkaProtocolError: truncated response header"
    assert issubclass(errors.CorrelationIdError, KafkaProtocolError)


def test_unsupported_version_is_code_35_and_takes_a_message() -> None:
    assert for_code(35) is UnsupportedVersionError
    with pytest.raises(BrokerResponseError) as info:
        raise UnsupportedVersionError("Fetch v99 is outside the versions rackafka speaks (0-17)")
    assert info.value.errno == 35
    assert str(info.value) == (
        "[Error 35] UnsupportedVersionError: "
        "Fetch v99 is outside the versions rackafka speaks (0-17)"
    )


def test_corrupt_record_takes_a_message() -> None:
    with pytest.raises(errors.InvalidMessageError) as info:
        raise CorruptRecordException("topic-a-3 at offset 1042: CRC mismatch")
    assert info.value.errno == 2
    assert "topic-a-3 at offset 1042" in str(info.value)


def test_commit_failed_error_messages() -> None:
    default = errors.CommitFailedError()
    assert "rebalanced" in str(default)
    assert "max_poll_interval_ms" in str(default)
    custom = errors.CommitFailedError("generation 4 is gone")
    assert str(custom) == "CommitFailedError: generation 4 is gone"
    assert pickle.loads(pickle.dumps(custom)).args == custom.args


def test_producer_fenced_has_a_default_message() -> None:
    assert "transactional_id" in str(errors.ProducerFenced())
    assert str(errors.ProducerFenced("x")) == "ProducerFenced: x"


def test_known_error_pickles() -> None:
    err = errors.RebalanceInProgressError("group g")
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is errors.RebalanceInProgressError
    assert copy.args == ("group g",)


# --- names aiokafka users import ------------------------------------------------------


@pytest.mark.parametrize("name", sorted(AIOKAFKA_ERRORS))
def test_aiokafka_names_exist(name: str) -> None:
    obj = getattr(errors, name)
    assert inspect.isclass(obj)
    assert issubclass(obj, Exception)
    code = AIOKAFKA_ERRORS[name]
    if code is None:
        assert not issubclass(obj, BrokerResponseError) or obj is BrokerResponseError
    else:
        assert issubclass(obj, BrokerResponseError)
        assert obj.errno == code
        assert obj is for_code(code)


def test_aiokafka_inheritance_shape() -> None:
    not_kafka_errors = {"ConsumerStoppedError", "IllegalOperation"}
    for name in AIOKAFKA_ERRORS:
        cls = getattr(errors, name)
        assert issubclass(cls, KafkaError) is (name not in not_kafka_errors), name
    assert issubclass(errors.CorrelationIdError, errors.KafkaProtocolError)
    for cls in (errors.NoBrokersAvailable, errors.StaleMetadata, errors.KafkaConnectionError):
        assert cls.retriable and cls.invalid_metadata
    for cls in (errors.NodeNotReadyError, errors.Cancelled, errors.MetadataEmptyBrokerList):
        assert cls.retriable and not cls.invalid_metadata
    assert not errors.KafkaTimeoutError.retriable
    assert not errors.AuthenticationFailedError.retriable


def test_all_lists_every_public_name() -> None:
    public = {
        name
        for name, obj in vars(errors).items()
        if not name.startswith("_") and inspect.isclass(obj) and issubclass(obj, BaseException)
    }
    assert public <= set(errors.__all__)
    for name in errors.__all__:
        assert hasattr(errors, name), name
    assert len(errors.__all__) == len(set(errors.__all__))
    assert errors.kafka_errors is ERROR_CODES


def test_matches_installed_aiokafka() -> None:
    aiokafka_errors = pytest.importorskip(
        "aiokafka.errors", reason="aiokafka is not installed (only the bench extra has it)"
    )
    for name, theirs in vars(aiokafka_errors).items():
        if name.startswith("_") or not inspect.isclass(theirs):
            continue
        if not issubclass(theirs, BaseException):
            continue
        ours = getattr(errors, name)
        assert ours.__name__ == theirs.__name__
        if issubclass(theirs, aiokafka_errors.BrokerResponseError) and hasattr(theirs, "errno"):
            assert ours.errno == theirs.errno


# rackafka's one addition to aiokafka's hierarchy: every authentication failure is also an
# AuthenticationFailedError, so one ``except`` catches them all.
EXTRA_BASES = {
    ("AuthenticationMethodNotSupported", "AuthenticationFailedError"),
    ("UnsupportedSaslMechanismError", "AuthenticationFailedError"),
    ("IllegalSaslStateError", "AuthenticationFailedError"),
    ("SaslAuthenticationFailed", "AuthenticationFailedError"),
}


def test_hierarchy_is_aiokafkas() -> None:
    # aiokafka code catches by base class: every subclass relation among aiokafka's errors
    # holds here, and the only one added is listed above.
    aiokafka_errors = pytest.importorskip("aiokafka.errors", reason="aiokafka is not installed")
    theirs = {
        name: cls
        for name, cls in vars(aiokafka_errors).items()
        if not name.startswith("_") and inspect.isclass(cls) and issubclass(cls, BaseException)
    }
    missing, added = set(), set()
    for x, their_x in theirs.items():
        for y, their_y in theirs.items():
            ours = issubclass(getattr(errors, x), getattr(errors, y))
            if issubclass(their_x, their_y) and not ours:
                missing.add((x, y))
            elif ours and not issubclass(their_x, their_y):
                added.add((x, y))
    assert not missing
    assert added == EXTRA_BASES


@pytest.mark.parametrize(
    "name",
    [
        "AuthenticationFailedError",
        "AuthenticationMethodNotSupported",
        "SaslAuthenticationFailed",
        "UnsupportedSaslMechanismError",
        "IllegalSaslStateError",
        "SslAuthenticationError",
    ],
)
def test_authentication_errors_are_not_connection_errors(name: str) -> None:
    # aiokafka code that retries on KafkaConnectionError must not retry a wrong password.
    cls = getattr(errors, name)
    assert issubclass(cls, errors.AuthenticationFailedError)
    assert not issubclass(cls, errors.KafkaConnectionError)
    assert not cls.retriable
