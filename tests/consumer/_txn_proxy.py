"""A Kafka TCP proxy that adds what librdkafka's mock broker leaves out of read_committed fetches.

The mock broker stores transactional batches and COMMIT/ABORT markers, but its Fetch
responses carry no ``aborted_transactions`` list, even for ``isolation_level=1``. A real
broker lists there every aborted transaction that overlaps the fetched range: its producer
id and the offset of its first record. This proxy sits between a consumer and the mock
brokers (one listener per broker), forwards bytes untouched, and rewrites only:

* Metadata responses (and Fetch v16 ``node_endpoints``): each broker's address becomes the
  proxy listener of that broker, so that the consumer keeps talking through the proxy;
* Fetch responses to ``isolation_level=1`` requests: each partition gets the aborted
  transactions a real broker would send, computed from the aborted ranges the test knows
  (``TransactionalProduceResult.aborted_ranges`` and ``marker_offsets``), with the
  producer id read from the transactional batches of the response itself;
* the COMMIT/ABORT control batches the mock writes with a CRC of 0 (observed with
  librdkafka 2.16; a real broker writes their CRC-32C) get their real CRC, so that the
  consumer can keep ``check_crcs=True``. Every other byte of the records is untouched.

Requests are decoded with rackafka's protocol codecs only to learn the API, version,
correlation id and, for Fetch, the isolation level and fetch offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import struct
from dataclasses import dataclass, field
from typing import Any

import crc32c

from rackafka.protocol import frames
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.apis.metadata import METADATA
from rackafka.records import iter_batches

_SIZE = struct.Struct(">i")
#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes of a batch v2
_BATCH_HEADER = struct.Struct(">qiibIh")
#: The CRC covers the batch from the attributes to its end.
_CRC_START = 21

#: (first offset of the aborted records, offset of the ABORT marker[, producer id])
AbortedRange = tuple[int, ...]


@dataclass
class ProxyStats:
    """What the proxy changed, so a test can check it did its job."""

    metadata_rewritten: int = 0
    fetches_rewritten: int = 0
    control_crcs_fixed: int = 0
    aborted_sent: int = 0
    aborted_by_partition: dict[tuple[str, int], set[tuple[int, int]]] = field(default_factory=dict)


@dataclass
class _Pending:
    api_key: int
    version: int
    request: Any = None


class TxnProxy:
    """Proxy listeners for every broker of a cluster.

    Arguments:
        brokers: ``{node_id: (host, port)}`` of the real brokers.
        aborted: ``{topic: {partition: [(first_offset, marker_offset), ...]}}``.
    """

    def __init__(
        self,
        brokers: dict[int, tuple[str, int]],
        aborted: dict[str, dict[int, list[AbortedRange]]],
    ) -> None:
        self._brokers = brokers
        self._aborted = aborted
        self._servers: dict[int, asyncio.base_events.Server] = {}
        self._ports: dict[int, int] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._topic_names: dict[Any, str] = {}
        self._range_pids: dict[tuple[str, int, int], int] = {}
        self.stats = ProxyStats()

    async def start(self) -> TxnProxy:
        for node_id in self._brokers:
            server = await asyncio.start_server(
                functools.partial(self._accept, node_id), "127.0.0.1", 0
            )
            self._servers[node_id] = server
            self._ports[node_id] = server.sockets[0].getsockname()[1]
        return self

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self._ports.values())

    async def close(self) -> None:
        for server in self._servers.values():
            server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for server in self._servers.values():
            await server.wait_closed()

    async def __aenter__(self) -> TxnProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- connections ---------------------------------------------------------------

    def _accept(
        self, node_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.ensure_future(self._serve(node_id, reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(
        self, node_id: int, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        host, port = self._brokers[node_id]
        self._writers.add(client_w)
        try:
            broker_r, broker_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            self._writers.discard(client_w)
            return
        self._writers.add(broker_w)
        pending: dict[int, _Pending] = {}
        pumps = [
            asyncio.ensure_future(self._requests(client_r, broker_w, pending)),
            asyncio.ensure_future(self._responses(broker_r, client_w, pending)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for pump in pumps:
                with contextlib.suppress(BaseException):
                    await pump
            for w in (client_w, broker_w):
                w.close()
                self._writers.discard(w)

    async def _requests(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pending: dict[int, _Pending],
    ) -> None:
        buffer = frames.FrameBuffer()
        while True:
            data = await reader.read(65536)
            if not data:
                return
            buffer.feed(data)
            for frame in buffer.frames():
                header, pos = frames.decode_request_header(frame)
                if header.api_key == FETCH.key:
                    if FETCH.request_header_version(header.api_version) >= 2:
                        pos = frames.skip_request_header_tags(frame, pos)
                    request = FETCH.decode_request(header.api_version, frame, pos, exact=False)
                    pending[header.correlation_id] = _Pending(
                        FETCH.key, header.api_version, request
                    )
                elif header.api_key == METADATA.key:
                    pending[header.correlation_id] = _Pending(METADATA.key, header.api_version)
                writer.write(_SIZE.pack(len(frame)) + frame)
            await writer.drain()

    async def _responses(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pending: dict[int, _Pending],
    ) -> None:
        buffer = frames.FrameBuffer()
        while True:
            data = await reader.read(65536)
            if not data:
                return
            buffer.feed(data)
            for frame in buffer.frames():
                corr = frames.peek_correlation_id(frame)
                entry = pending.pop(corr, None)
                out = None
                if entry is not None and entry.api_key == METADATA.key:
                    out = self._rewrite_metadata(entry, corr, frame)
                elif entry is not None and entry.api_key == FETCH.key:
                    out = self._rewrite_fetch(entry, corr, frame)
                writer.write(out if out is not None else _SIZE.pack(len(frame)) + frame)
            await writer.drain()

    # -- rewriting ------------------------------------------------------------------

    def _rewrite_metadata(self, entry: _Pending, corr: int, frame: bytes) -> bytes:
        response = frames.decode_response(METADATA, entry.version, frame)
        for broker in response.brokers:
            if broker.node_id in self._ports:
                broker.host = "127.0.0.1"
                broker.port = self._ports[broker.node_id]
        for topic in response.topics:
            if topic.name:
                self._topic_names[topic.topic_id] = topic.name
        self.stats.metadata_rewritten += 1
        return frames.encode_response(METADATA, entry.version, corr, response)

    def _rewrite_fetch(self, entry: _Pending, corr: int, frame: bytes) -> bytes | None:
        request = entry.request
        response = frames.decode_response(FETCH, entry.version, frame)
        for endpoint in response.node_endpoints or ():
            if endpoint.node_id in self._ports:
                endpoint.host = "127.0.0.1"
                endpoint.port = self._ports[endpoint.node_id]
        if request.isolation_level == 1:
            offsets: dict[tuple[str, int], int] = {}
            for t in request.topics:
                name = t.topic or self._topic_names.get(t.topic_id, "")
                for p in t.partitions:
                    offsets[(name, p.partition)] = p.fetch_offset
            for topic in response.responses:
                name = topic.topic or self._topic_names.get(topic.topic_id, "")
                for p in topic.partitions:
                    fetch_offset = offsets.get((name, p.partition_index))
                    if p.error_code == 0 and fetch_offset is not None:
                        p.aborted_transactions = self._aborted_for(
                            name, p.partition_index, fetch_offset, p.records
                        )
            self.stats.fetches_rewritten += 1
        for topic in response.responses:
            for p in topic.partitions:
                if p.records:
                    p.records = self._fix_control_crcs(p.records)
        return frames.encode_response(FETCH, entry.version, corr, response)

    def _fix_control_crcs(self, records: bytes) -> bytes:
        """Give control batches stored with CRC 0 the CRC-32C a real broker writes."""
        data = bytearray(records)
        pos = 0
        while pos + _BATCH_HEADER.size <= len(data):
            _base, length, _epoch, magic, crc, attributes = _BATCH_HEADER.unpack_from(data, pos)
            end = pos + 12 + length
            if end > len(data) or magic != 2:
                break
            if attributes & 0x20 and crc == 0:
                real = crc32c.crc32c(bytes(data[pos + _CRC_START : end]))
                struct.pack_into(">I", data, pos + _CRC_START - 4, real)
                self.stats.control_crcs_fixed += 1
            pos = end
        return bytes(data)

    def _aborted_for(
        self, topic: str, partition: int, fetch_offset: int, records: bytes | None
    ) -> list[dict[str, int]]:
        """The aborted transactions a real broker lists for this partition and range."""
        ranges = self._aborted.get(topic, {}).get(partition, [])
        if not ranges or not records:
            return []
        batches = [
            (b.base_offset, b.last_offset, b.producer_id, b.is_transactional)
            for b in iter_batches(records, check_crcs=False, topic=topic, partition=partition)
        ]
        if not batches:
            return []
        last_fetched = batches[-1][1]
        out = []
        for entry in ranges:
            first, marker = entry[0], entry[1]
            # Kafka lists the transactions whose marker is at or after the fetch offset
            # and whose first record is within the fetched data.
            if marker < fetch_offset or first > last_fetched:
                continue
            pid = self._producer_of(topic, partition, entry, batches)
            if pid is None:
                raise AssertionError(
                    f"proxy: no producer id known for the aborted range {entry} of "
                    f"{topic}-{partition}; give it as (first, marker, producer_id)"
                )
            out.append({"producer_id": pid, "first_offset": first})
            self.stats.aborted_by_partition.setdefault((topic, partition), set()).add((pid, first))
        self.stats.aborted_sent += len(out)
        return out

    def _producer_of(
        self,
        topic: str,
        partition: int,
        entry: AbortedRange,
        batches: list[tuple[int, int, int, bool]],
    ) -> int | None:
        """The producer of an aborted transaction: given, or read from its batches.

        Without an explicit id, the batch holding the transaction's first offset or its
        marker tells (remembered for later responses), else any transactional batch in
        the range (right when one producer wrote it, as ``produce_transactional`` does).
        """
        if len(entry) > 2:
            return entry[2]
        first, marker = entry[0], entry[1]
        key = (topic, partition, first)
        known = self._range_pids.get(key)
        if known is not None:
            return known
        for base, last, pid, txn in batches:
            if txn and (base <= first <= last or base <= marker <= last):
                self._range_pids[key] = pid
                return pid
        for base, _last, pid, txn in batches:
            if txn and first <= base <= marker:
                return pid
        return None
