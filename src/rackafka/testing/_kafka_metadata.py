"""Each broker's own view of partition leadership, asked of it alone (Metadata v12 on one
connection): after a leader election the brokers learn the new leaders from the metadata
log each at its own pace, and a test that reads metadata from any broker must not meet a
stale one (see :meth:`~rackafka.testing.KafkaCluster.broker_up`)."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterable, Mapping
from typing import Any

from rackafka.protocol import frames
from rackafka.protocol.apis.metadata import METADATA

from ._base import EmbeddedClusterError, _recv_exact

_VERSION = 12  # Kafka 3.1 to 4.x


def metadata_of(host: str, port: int, topics: list[str], timeout: float = 5.0) -> Any:
    """The Metadata answer of the broker at ``host:port`` alone, for ``topics`` (none: the
    brokers only), on a connection of its own."""
    request = METADATA.Request(
        topics=[{"name": t} for t in topics], allow_auto_topic_creation=False
    )
    frame = frames.encode_request(METADATA, _VERSION, 1, "rackafka-testing", request)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(frame)
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        body = _recv_exact(sock, size)
    return frames.decode_response(METADATA, _VERSION, body)


def leaders_seen_by(host: str, port: int, topic: str, timeout: float = 5.0) -> dict[int, int]:
    """Partition -> leader id of ``topic`` as the broker at ``host:port`` sees it ({} when
    it does not know the topic)."""
    for t in metadata_of(host, port, [topic], timeout).topics:
        if t.name == topic and not t.error_code:
            return {p.partition_index: p.leader_id for p in t.partitions}
    return {}


def brokers_seen_by(host: str, port: int, timeout: float = 5.0) -> set[int]:
    """Ids of the brokers that the broker at ``host:port`` names in its Metadata."""
    return {b.node_id for b in metadata_of(host, port, [], timeout).brokers}


def brokers_named(brokers: Mapping[int, tuple[str, int]]) -> set[int]:
    """The brokers that any of ``brokers`` (id -> address) names in its own Metadata, each
    asked on a connection of its own: not through librdkafka's admin client, which has
    aborted the process when its requests timed out while brokers were starting.

    Raises:
        EmbeddedClusterError: none of them answered.
    """
    seen: set[int] = set()
    errors = []
    for node_id, (host, port) in brokers.items():
        try:
            seen |= brokers_seen_by(host, port)
        except Exception as exc:  # starting, or a closed connection: ask the others
            errors.append(f"broker {node_id}: {exc!r}")
    if not seen and errors:
        raise EmbeddedClusterError("no broker answered Metadata: " + "; ".join(errors))
    return seen


def brokers_not_seeing(brokers: Mapping[int, tuple[str, int]], wanted: set[int]) -> dict[int, str]:
    """Of ``brokers`` (id -> address), those whose own Metadata does not name every broker
    of ``wanted`` yet: id -> what it sees (or the error asking it)."""
    behind: dict[int, str] = {}
    for node_id, (host, port) in brokers.items():
        try:
            seen = brokers_seen_by(host, port)
        except Exception as exc:  # (starting: refused, closed, or not answering yet)
            behind[node_id] = repr(exc)
            continue
        if not wanted <= seen:
            behind[node_id] = f"sees {sorted(seen)}"
    return behind


def await_leaders_seen(
    brokers: Iterable[tuple[str, int]],
    wanted: Mapping[str, Mapping[int, int]],
    deadline: float,
) -> bool:
    """Wait until every broker sees ``wanted`` (topic -> partition -> leader); False at
    ``deadline``."""
    pending = list(brokers)
    while True:
        still = []
        for host, port in pending:
            try:
                ok = all(
                    leaders_seen_by(host, port, topic).items() >= dict(parts).items()
                    for topic, parts in wanted.items()
                )
            except OSError:
                ok = False
            if not ok:
                still.append((host, port))
        if not still:
            return True
        if time.monotonic() >= deadline:
            return False
        pending = still
        time.sleep(0.1)


def describe_leader_views(
    brokers: Iterable[tuple[str, int]], wanted: Mapping[str, Mapping[int, int]]
) -> dict[str, object]:
    """For an error message: where each broker's view differs from ``wanted``
    (``host:port`` -> {topic: {partition: leader seen}}, or the error asking it)."""
    views: dict[str, object] = {}
    for host, port in brokers:
        try:
            off = {}
            for topic, parts in wanted.items():
                seen = leaders_seen_by(host, port, topic)
                wrong = {p: seen.get(p) for p, leader in parts.items() if seen.get(p) != leader}
                if wrong:
                    off[topic] = wrong
        except OSError as exc:
            views[f"{host}:{port}"] = repr(exc)
            continue
        if off:
            views[f"{host}:{port}"] = off
    return views
