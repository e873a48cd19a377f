"""A small Kafka broker of rackafka's own, for fault and hostile-input tests.

:class:`FakeBroker` speaks the Kafka wire protocol with rackafka's schemas (ApiVersions,
Metadata, ListOffsets, Fetch, FindCoordinator) on a loopback port, serves record batches
the test hands it as raw bytes, and lets the test replace the answer to any API.  It
exists to show how a client copes with what a real broker never sends: corrupt batches,
impossible offsets, leaders that do not exist, replies that come late or never.  It
stores nothing on disk and must never listen on anything but loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rackafka import errors
from rackafka.protocol import frames
from rackafka.protocol.registry import API_BY_KEY
from rackafka.protocol.schema import UUID_ZERO
from rackafka.records.scan import next_offset_after

__all__ = [
    "NO_RESPONSE",
    "FakeBroker",
    "FakeRequest",
    "Handler",
    "delayed",
    "fetch_partition_response",
    "list_offsets_response",
]

_SIZE = struct.Struct(">i")

#: A handler result that sends nothing back (the client waits until it times out).
NO_RESPONSE: Any = object()


@dataclass
class FakeRequest:
    """One request the fake broker received."""

    api_key: int
    api_name: str
    version: int
    correlation_id: int
    body: Any
    received_at: float = field(default_factory=time.monotonic)
    #: Which connection sent it (1 for the first accepted, 2 for the next...).
    connection: int = 0


#: ``handler(broker, request) -> response`` (a struct value, a dict, ``NO_RESPONSE``,
#: or an awaitable of one of these); ``None`` falls back to the default answer.
Handler = Callable[["FakeBroker", FakeRequest], Any]
#: Kafka's default ``socket.request.max.bytes``: a bigger request closes the connection.
_MAX_REQUEST = 100 * 1024 * 1024


class FakeBroker:
    """One broker on ``127.0.0.1`` that serves partitions from in-memory batches.

    Arguments:
        node_id: the broker's id in Metadata.
        rack: its rack in Metadata.
        topics: ``{topic: partition_count}``; this broker leads them all unless
            :attr:`leaders` says otherwise.
        close_on_accept: close every connection as soon as it is accepted.
        ssl_context: a server-side :class:`ssl.SSLContext`: the broker speaks TLS.

    Attributes:
        log: ``{(topic, partition): [batch bytes, ...]}``: what Fetch serves, in order.
        leaders: ``{(topic, partition): node_id}`` overrides (``-1``: no leader).
        extra_brokers: more ``(node_id, host, port, rack)`` entries for Metadata.
        handlers: ``{api_name: handler}`` replacing the default answer of an API.
        requests: every request received, in order.
        connections: how many connections were accepted.
    """

    def __init__(
        self,
        *,
        node_id: int = 0,
        rack: str | None = None,
        topics: dict[str, int] | None = None,
        close_on_accept: bool = False,
        ssl_context: Any = None,
    ) -> None:
        self.node_id = node_id
        self.ssl_context = ssl_context
        self.rack = rack
        self.topics: dict[str, int] = dict(topics or {})
        self.close_on_accept = close_on_accept
        self.log: dict[tuple[str, int], list[bytes]] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        self.extra_brokers: list[tuple[int, str, int, str | None]] = []
        self.handlers: dict[str, Handler] = {}
        self.requests: list[FakeRequest] = []
        self.connections = 0
        self.host = "127.0.0.1"
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> FakeBroker:
        """Listen on an ephemeral loopback port."""
        self._server = await asyncio.start_server(self._serve, self.host, 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        """Stop listening and drop every connection."""
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> FakeBroker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of this broker."""
        return f"{self.host}:{self.port}"

    # -- what tests inspect ------------------------------------------------------------

    def count(self, api_name: str, since: float = 0.0) -> int:
        """Requests of ``api_name`` received at or after ``since`` (a monotonic time)."""
        return sum(1 for r in self.requests if r.api_name == api_name and r.received_at >= since)

    def counts(self) -> Counter[str]:
        """Requests received, by API name."""
        return Counter(r.api_name for r in self.requests)

    def append(self, topic: str, partition: int, batch: bytes) -> None:
        """Add raw batch bytes to a partition's log."""
        self.log.setdefault((topic, partition), []).append(batch)

    def end_offset(self, topic: str, partition: int) -> int:
        """The offset after the last complete batch of a partition (0 when empty)."""
        data = b"".join(self.log.get((topic, partition), []))
        end = next_offset_after(data) if data else None
        return end if end is not None else 0

    # -- serving -------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        connection = self.connections
        if self.close_on_accept:
            writer.close()
            return
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = _SIZE.unpack(head)
                if not 0 <= size <= _MAX_REQUEST:
                    break  # as Kafka (socket.request.max.bytes): not a Kafka client
                frame = await reader.readexactly(size)
                out = await self._answer(frame, connection)
                if out is not None:
                    writer.write(out)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(self, frame: bytes, connection: int = 0) -> bytes | None:
        header, pos = frames.decode_request_header(frame)
        api = API_BY_KEY[header.api_key]
        version = header.api_version
        if api.request_header_version(version) >= 2:
            pos = frames.skip_request_header_tags(frame, pos)
        body = api.decode_request(version, frame, pos, exact=False)
        request = FakeRequest(
            header.api_key, api.name, version, header.correlation_id, body, connection=connection
        )
        self.requests.append(request)
        response: Any = None
        handler = self.handlers.get(api.name)
        if handler is not None:
            response = handler(self, request)
            if inspect.isawaitable(response):
                response = await response
        if response is None:
            default = getattr(self, "_default_" + api.name, None)
            if default is None:
                return None  # an API we do not serve: no answer
            response = default(request)
            if inspect.isawaitable(response):
                response = await response
        if response is NO_RESPONSE:
            return None
        if isinstance(response, bytes):
            return response  # a whole raw frame
        return frames.encode_response(api, version, header.correlation_id, response)

    # -- default answers ---------------------------------------------------------------------

    def _default_ApiVersions(self, request: FakeRequest) -> Any:  # noqa: N802
        keys = [
            {"api_key": api.key, "min_version": api.min_version, "max_version": api.max_version}
            for api in API_BY_KEY.values()
        ]
        return {"error_code": 0, "api_keys": keys}

    def brokers(self) -> list[dict[str, Any]]:
        """The Metadata broker entries: this broker and :attr:`extra_brokers`."""
        out = [{"node_id": self.node_id, "host": self.host, "port": self.port, "rack": self.rack}]
        out += [
            {"node_id": n, "host": h, "port": p, "rack": r} for n, h, p, r in self.extra_brokers
        ]
        return out

    def _default_Metadata(self, request: FakeRequest) -> Any:  # noqa: N802
        wanted = request.body.topics
        names = list(self.topics) if wanted is None else [t.name for t in wanted]
        topics: list[dict[str, Any]] = []
        for name in names:
            if name not in self.topics:
                topics.append(
                    {
                        "error_code": errors.UnknownTopicOrPartitionError.errno,
                        "name": name,
                        "partitions": [],
                    }
                )
                continue
            parts = []
            for p in range(self.topics[name]):
                leader = self.leaders.get((name, p), self.node_id)
                parts.append(
                    {
                        "error_code": 0,
                        "partition_index": p,
                        "leader_id": leader,
                        "leader_epoch": 0,
                        "replica_nodes": [self.node_id],
                        "isr_nodes": [self.node_id],
                    }
                )
            topics.append(
                {"error_code": 0, "name": name, "topic_id": UUID_ZERO, "partitions": parts}
            )
        return {
            "brokers": self.brokers(),
            "cluster_id": "fake",
            "controller_id": self.node_id,
            "topics": topics,
        }

    def _default_ListOffsets(self, request: FakeRequest) -> Any:  # noqa: N802
        topics: list[dict[str, Any]] = []
        for t in request.body.topics:
            parts = []
            for p in t.partitions:
                end = self.end_offset(t.name, p.partition_index)
                offset = 0 if p.timestamp == -2 else end
                parts.append(
                    {
                        "partition_index": p.partition_index,
                        "error_code": 0,
                        "timestamp": -1,
                        "offset": offset,
                        "leader_epoch": 0,
                    }
                )
            topics.append({"name": t.name, "partitions": parts})
        return {"topics": topics}

    def fetch_records(self, topic: str, partition: int, offset: int, max_bytes: int) -> bytes:
        """The batches a Fetch at ``offset`` gets: from the one holding it, up to ``max_bytes``
        (the first batch always whole, as KIP-74 says)."""
        out = bytearray()
        for batch in self.log.get((topic, partition), []):
            end = next_offset_after(batch)
            if end is not None and end <= offset:
                continue
            if out and len(out) + len(batch) > max_bytes:
                break
            out += batch
        return bytes(out)

    async def _default_Fetch(self, request: FakeRequest) -> Any:  # noqa: N802
        response = self._fetch_now(request)
        if not any(p["records"] for t in response["responses"] for p in t["partitions"]):
            # Like a real broker: an empty fetch waits MaxWait for data to arrive.
            deadline = time.monotonic() + request.body.max_wait_ms / 1000
            while time.monotonic() < deadline and self._server is not None:
                await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
                response = self._fetch_now(request)
                if any(p["records"] for t in response["responses"] for p in t["partitions"]):
                    break
        return response

    def _fetch_now(self, request: FakeRequest) -> dict[str, Any]:
        responses = []
        for t in request.body.topics:
            parts = []
            for p in t.partitions:
                key = (t.topic, p.partition)
                records = self.fetch_records(
                    t.topic, p.partition, p.fetch_offset, p.partition_max_bytes
                )
                end = self.end_offset(*key)
                parts.append(
                    {
                        "partition_index": p.partition,
                        "error_code": 0,
                        "high_watermark": end,
                        "last_stable_offset": end,
                        "log_start_offset": 0,
                        "records": records,
                    }
                )
            responses.append({"topic": t.topic, "topic_id": t.topic_id, "partitions": parts})
        return {"error_code": 0, "session_id": 0, "responses": responses}

    def _default_FindCoordinator(self, request: FakeRequest) -> Any:  # noqa: N802
        node = {"node_id": self.node_id, "host": self.host, "port": self.port}
        keys = getattr(request.body, "coordinator_keys", None) or []
        return {
            "error_code": 0,
            **node,
            "coordinators": [{"key": k, "error_code": 0, **node} for k in keys],
        }


def fetch_partition_response(
    request: FakeRequest, make: Callable[[Any, Any], dict[str, Any]]
) -> dict[str, Any]:
    """A Fetch response whose partitions are ``make(topic, partition_request)`` dicts."""
    responses = []
    for t in request.body.topics:
        parts = [{"partition_index": p.partition, **make(t, p)} for p in t.partitions]
        responses.append({"topic": t.topic, "topic_id": t.topic_id, "partitions": parts})
    return {"error_code": 0, "session_id": 0, "responses": responses}


def list_offsets_response(request: FakeRequest, **fields: Any) -> dict[str, Any]:
    """A ListOffsets response giving every partition asked for the same ``fields``."""
    return {
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, **fields} for p in t.partitions
                ],
            }
            for t in request.body.topics
        ]
    }


async def delayed(seconds: float, value: Any) -> Any:
    """Await ``seconds``, then give ``value`` (for handlers that answer late)."""
    await asyncio.sleep(seconds)
    return value
