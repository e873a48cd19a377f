"""The embedded payloads of the consumer group protocol ("consumer" protocol type).

These are not APIs of their own: a JoinGroup request carries a member's
subscription as the metadata of each protocol it offers, and a SyncGroup
request/response carries each member's assignment.  Both payloads start with an
int16 version and are never flexible.

* ConsumerProtocolSubscription, versions 0-3: ``topics`` and nullable
  ``user_data``; v1 adds ``owned_partitions`` (KIP-429); v2 ``generation_id``
  (default -1); v3 the nullable ``rack_id`` (KIP-881, rack-aware assignment).
* ConsumerProtocolAssignment, versions 0-3: ``assigned_partitions`` and nullable
  ``user_data`` (v1-3 have the same layout as v0).

Kafka requires later versions to only append fields, so a payload whose
version is higher than ours is decoded with our highest version and what
follows the fields we know is ignored.
"""

from __future__ import annotations

import struct
from typing import Any

from rackafka.errors import KafkaProtocolError, UnsupportedVersionError
from rackafka.protocol.schema import BYTES, INT32, STRING, A, F, S, Struct

#: The highest subscription version rackafka reads and writes.
SUBSCRIPTION_MAX_VERSION = 3
#: The highest assignment version rackafka reads and writes.
ASSIGNMENT_MAX_VERSION = 3

SUBSCRIPTION = S(
    "ConsumerProtocolSubscription",
    F("topics", A(STRING)),
    F("user_data", BYTES, nullable="0+"),
    F(
        "owned_partitions",
        A(
            S(
                "ConsumerProtocolSubscriptionTopicPartition",
                F("topic", STRING, "1+"),
                F("partitions", A(INT32), "1+"),
            )
        ),
        "1+",
    ),
    F("generation_id", INT32, "2+", default=-1),
    F("rack_id", STRING, "3+", nullable="3+"),
)

ASSIGNMENT = S(
    "ConsumerProtocolAssignment",
    F(
        "assigned_partitions",
        A(
            S(
                "ConsumerProtocolAssignmentTopicPartition",
                F("topic", STRING),
                F("partitions", A(INT32)),
            )
        ),
    ),
    F("user_data", BYTES, nullable="0+"),
)

#: Value classes, built with keyword arguments (nested dicts accepted).
Subscription = SUBSCRIPTION.cls
Assignment = ASSIGNMENT.cls

_VERSION = struct.Struct(">h")
_DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError, TypeError)


def _encode(schema: Struct, max_version: int, version: int, value: Any) -> bytes:
    if not 0 <= version <= max_version:
        raise UnsupportedVersionError(
            f"{schema.name} v{version} is outside the versions rackafka writes (0-{max_version})"
        )
    out = bytearray(_VERSION.pack(version))
    schema.codec(version, False)[1](out, value)
    return bytes(out)


def _decode(schema: Struct, max_version: int, data: bytes) -> Any:
    if len(data) < _VERSION.size:
        raise KafkaProtocolError(f"{schema.name} of {len(data)} bytes has no version")
    version = _VERSION.unpack_from(data, 0)[0]
    if version < 0:
        raise KafkaProtocolError(f"{schema.name} has an invalid version {version}")
    read = schema.codec(min(version, max_version), False)[0]
    try:
        value, _end = read(data, _VERSION.size)
    except KafkaProtocolError as exc:
        raise KafkaProtocolError(f"{schema.name} v{version}: {exc}") from exc
    except _DECODE_FAILURES as exc:
        raise KafkaProtocolError(
            f"{schema.name} v{version} is truncated or malformed ({len(data)} bytes): {exc}"
        ) from exc
    # Bytes after the fields we know are ignored, as the Java client does: later
    # versions may only append fields.
    return value


def encode_subscription(version: int, value: Any) -> bytes:
    """Encode a member's subscription, version prefix included.

    Arguments:
        version: the subscription version to write, 0 to
            :data:`SUBSCRIPTION_MAX_VERSION`.
        value: a :data:`Subscription` or a mapping with its fields; fields the
            version lacks are ignored, missing fields take their defaults.

    Raises:
        UnsupportedVersionError: ``version`` is not one rackafka writes.
    """
    return _encode(SUBSCRIPTION, SUBSCRIPTION_MAX_VERSION, version, value)


def decode_subscription(data: bytes) -> Any:
    """Decode a member's subscription (JoinGroup protocol metadata).

    The int16 version prefix is read first.  A version above
    :data:`SUBSCRIPTION_MAX_VERSION` is read as that version and any bytes after
    the known fields are ignored.  Fields the version lacks hold their defaults
    (``generation_id`` -1, ``rack_id`` None, ``owned_partitions`` empty).

    Raises:
        KafkaProtocolError: the payload is truncated, malformed, or has a
            negative version.
    """
    return _decode(SUBSCRIPTION, SUBSCRIPTION_MAX_VERSION, data)


def encode_assignment(version: int, value: Any) -> bytes:
    """Encode a member's assignment, version prefix included.

    Arguments:
        version: the assignment version to write, 0 to
            :data:`ASSIGNMENT_MAX_VERSION`.
        value: an :data:`Assignment` or a mapping with its fields.

    Raises:
        UnsupportedVersionError: ``version`` is not one rackafka writes.
    """
    return _encode(ASSIGNMENT, ASSIGNMENT_MAX_VERSION, version, value)


def decode_assignment(data: bytes) -> Any:
    """Decode a member's assignment (SyncGroup assignment bytes).

    The int16 version prefix is read first; a version above
    :data:`ASSIGNMENT_MAX_VERSION` is read as that version, ignoring the bytes
    after the known fields.

    Raises:
        KafkaProtocolError: the payload is truncated, malformed, or has a
            negative version.
    """
    return _decode(ASSIGNMENT, ASSIGNMENT_MAX_VERSION, data)
