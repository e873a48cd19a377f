"""The connection as its transport's protocol: what it receives before anyone asks, write
flow control, closing; and the imports of ``rackafka.net`` (no cycle, no floor above)."""

from __future__ import annotations

import ast
import asyncio
import struct
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

import rackafka.net
from rackafka.errors import CorrelationIdError, KafkaConnectionError
from rackafka.net.connection import Connection
from rackafka.protocol import frames
from rackafka.protocol.apis.api_versions import API_VERSIONS

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]


async def _idle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read()  # until the client closes
    writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Coroutine[Any, Any, tuple[str, int]]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> tuple[str, int]:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        servers.append(server)
        return "127.0.0.1", server.sockets[0].getsockname()[1]

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def test_the_connection_is_the_transports_protocol_from_the_start(serve: Any) -> None:
    """Bytes a broker sends before any request reach the connection itself: a frame that
    answers nothing closes it with the protocol error, before open() returns."""

    async def answer_nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(struct.pack(">ii", 4, 12345))  # a frame with correlation id 12345
        await _idle(reader, writer)

    host, port = await serve(answer_nothing)
    with pytest.raises(KafkaConnectionError, match="12345") as info:
        conn = await Connection.open(host, port, request_timeout_ms=10_000)
        await conn.aclose()
    assert isinstance(info.value.__cause__, CorrelationIdError)


#: The ApiVersions v0 answer of the broker below.
ANSWER = API_VERSIONS.Response(error_code=0, api_keys=[], throttle_time_ms=0)


async def test_responses_and_requests_cross_a_plain_transport(serve: Any) -> None:
    """One request, one answer, read from the socket by the connection's own buffers."""
    sent: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        header, _pos = frames.decode_request_header(await reader.readexactly(size))
        frame = frames.encode_response(API_VERSIONS, 0, header.correlation_id, ANSWER)
        sent.append(frame)
        for i in range(len(frame)):  # byte by byte: frames are put together from pieces
            writer.write(frame[i : i + 1])
            await writer.drain()
        await _idle(reader, writer)

    host, port = await serve(answer)
    conn = await Connection.open(host, port, negotiate=False)
    try:
        response = await conn.request(API_VERSIONS, API_VERSIONS.Request(), version=0)
        assert response.error_code == 0
        assert conn.stats.requests == 1
        assert conn.stats.bytes_received == len(sent[0])
    finally:
        await conn.aclose()
    assert not conn.connected


async def test_drain_waits_while_the_transport_is_paused(serve: Any) -> None:
    host, port = await serve(_idle)
    conn = await Connection.open(host, port, negotiate=False)
    try:
        await conn.drain()  # not paused: returns at once
        conn.pause_writing()
        waiting = asyncio.ensure_future(conn.drain())
        await asyncio.sleep(0.05)
        assert not waiting.done()
        conn.resume_writing()
        await asyncio.wait_for(waiting, 5)
        # Paused again, then closed: the writer learns it, with the connection's error.
        conn.pause_writing()
        waiting = asyncio.ensure_future(conn.drain())
        await asyncio.sleep(0.05)
        conn.close()
        with pytest.raises(KafkaConnectionError):
            await asyncio.wait_for(waiting, 5)
        with pytest.raises(KafkaConnectionError):
            await conn.drain()
    finally:
        await conn.aclose()


async def test_aclose_waits_for_the_socket_and_calls_back_once(serve: Any) -> None:
    host, port = await serve(_idle)
    conn = await Connection.open(host, port, negotiate=False)
    reasons: list[BaseException] = []
    conn.add_close_callback(lambda _c, reason: reasons.append(reason))
    transport = conn._transport
    assert transport is not None
    await asyncio.wait_for(conn.aclose(), 10)
    assert transport.is_closing() and transport.get_extra_info("socket").fileno() == -1
    await conn.aclose()
    assert len(reasons) == 1 and isinstance(reasons[0], KafkaConnectionError)


async def test_a_broker_hang_up_fails_the_waiters(serve: Any) -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(4)
        writer.close()

    host, port = await serve(hang_up)
    conn = await Connection.open(host, port, negotiate=False)
    try:
        with pytest.raises(KafkaConnectionError, match="closed by the broker"):
            await conn.request(API_VERSIONS, API_VERSIONS.Request(), version=0, timeout=10)
        assert not conn.connected
    finally:
        await conn.aclose()


def _imports_of_net() -> dict[str, set[str]]:
    """Module -> the ``rackafka`` modules it imports anywhere (top level, in a function,
    under ``TYPE_CHECKING``)."""
    root = Path(rackafka.net.__file__).parent
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root.parent.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
                imported.update(f"{node.module}.{a.name}" for a in node.names)
        found[name] = {m for m in imported if m.startswith("rackafka")}
    return found


def test_net_has_no_import_cycle_and_imports_no_higher_floor() -> None:
    imports = _imports_of_net()
    modules = set(imports)
    edges = {m: {t for t in imports[m] if t in modules and t != m} for m in modules}

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in edges[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    cycles = sorted(m for m in modules if m in reachable(m))
    assert cycles == [], cycles
    # The mechanisms know nothing of connections or security settings.
    for module, targets in imports.items():
        if module.startswith("rackafka.net.sasl"):
            net = {t for t in targets if t.startswith("rackafka.net")}
            assert all(t.startswith("rackafka.net.sasl") for t in net), (module, targets)
    # Lower floors only.
    allowed = ("rackafka.errors", "rackafka.protocol", "rackafka.net")
    for module, targets in imports.items():
        assert all(t.startswith(allowed) for t in targets), (module, targets)
