"""Request/response headers and size-prefixed framing (sans-IO).

A Kafka frame is an int32 size followed by that many bytes.  A request frame
holds a request header (v1, or v2 in flexible versions, whose client id stays a
classic nullable string) and the request body; a response frame holds a
response header (v0, or v1 with a tagged-field section) and the body.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from rackafka.errors import KafkaProtocolError
from rackafka.protocol import primitives as p
from rackafka.protocol.schema import Api

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")
_CORR = struct.Struct(">i")

#: Frames larger than this are refused rather than buffered (a garbage size
#: prefix must not make us wait for, or allocate, gigabytes).
DEFAULT_MAX_FRAME_SIZE = 256 * 1024 * 1024

_read_client_id, _write_client_id = p.string_codec(compact=False, nullable=True)


@dataclass(frozen=True)
class RequestHeader:
    """A decoded request header."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def encode_request(
    api: Api, version: int, correlation_id: int, client_id: str | None, request: Any
) -> bytearray:
    """Encode a whole request frame: size prefix, header and body, written once into one
    buffer (a Produce request's record batches are copied once)."""
    out = bytearray(_SIZE.size)
    out += _HEADER.pack(api.key, version, correlation_id)
    _write_client_id(out, client_id)
    if api.request_header_version(version) >= 2:
        out.append(0)  # no tagged fields in the header
    api.write_request(out, version, request)
    _SIZE.pack_into(out, 0, len(out) - _SIZE.size)
    return out


def _skip_tagged(buf: bytes, pos: int) -> int:
    count, pos = p.read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = p.read_uvarint(buf, pos)
        size, pos = p.read_uvarint(buf, pos)
        pos += size
    if pos > len(buf):
        raise KafkaProtocolError("header tagged fields run past the end of the frame")
    return pos


def decode_request_header(buf: bytes) -> tuple[RequestHeader, int]:
    """Decode the header of a request frame body (without its size prefix).

    Returns the header and the offset of the body.  Only the classic fields are
    read; the caller, knowing the API, skips the v2 tagged section with
    :func:`skip_request_header_tags`.
    """
    try:
        api_key, version, corr = _HEADER.unpack_from(buf, 0)
        client_id, pos = _read_client_id(buf, _HEADER.size)
    except (struct.error, IndexError) as exc:
        raise KafkaProtocolError(f"truncated request header ({len(buf)} bytes)") from exc
    return RequestHeader(api_key, version, corr, client_id), pos


def skip_request_header_tags(buf: bytes, pos: int) -> int:
    """Skip the tagged-field section of a v2 request header."""
    try:
        return _skip_tagged(buf, pos)
    except IndexError as exc:
        raise KafkaProtocolError("truncated request header tagged fields") from exc


def encode_response(api: Api, version: int, correlation_id: int, response: Any) -> bytes:
    """Encode a whole response frame (used by tests and the embedded tooling)."""
    out = bytearray(_SIZE.size)
    out += _CORR.pack(correlation_id)
    if api.response_header_version(version) >= 1:
        out.append(0)
    out += api.encode_response(version, response)
    _SIZE.pack_into(out, 0, len(out) - _SIZE.size)
    return bytes(out)


def peek_correlation_id(frame: bytes | bytearray) -> int:
    """The correlation id that starts every response frame body."""
    if len(frame) < 4:
        raise KafkaProtocolError(f"response frame of {len(frame)} bytes has no correlation id")
    return int(_CORR.unpack_from(frame, 0)[0])


def decode_response(api: Api, version: int, frame: bytes | bytearray) -> Any:
    """Decode a response frame body (without its size prefix).

    Bytes after the last field we know are ignored, as Kafka's own clients do
    (some brokers append fields or padding; librdkafka's mock writes one extra
    byte at the end of Metadata v12).

    A ``bytearray`` frame (as :class:`FrameBuffer` and :class:`FrameReceiver`
    give big ones) is read through a view, so that each bytes field (the record
    data of a fetch) is copied out of it once; a bytearray slice would be a
    second copy.
    """
    buf: Any = frame if isinstance(frame, bytes) else memoryview(frame)
    try:
        pos = 4
        if api.response_header_version(version) >= 1:
            try:
                pos = _skip_tagged(buf, pos)
            except IndexError as exc:
                raise KafkaProtocolError("truncated response header") from exc
        return api.decode_response(version, buf, pos, exact=False)
    finally:
        if buf is not frame:
            buf.release()


class FrameBuffer:
    """Accumulates bytes from a stream and splits them into frames.

    ``feed`` data as it arrives, then take complete frame bodies (without the
    size prefix) from ``frames()``.  A negative or oversized size prefix raises
    :class:`KafkaProtocolError`: the stream cannot be resynchronised after it.

    A frame that is all the buffer holds (the common case for a big response,
    read to its end before the next one starts) is given without a copy: it is
    the buffer itself, a ``bytearray``, and a new buffer is started.  Other
    frames are copied out as ``bytes``.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._buf = bytearray()
        self._max = max_frame_size

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def _check(self, size: int) -> None:
        if size < 0 or size > self._max:
            raise KafkaProtocolError(f"invalid frame size {size} (allowed 0 to {self._max} bytes)")

    def frames(self) -> list[bytes | bytearray]:
        """Take the complete frame bodies buffered so far, in order."""
        buf = self._buf
        n = len(buf)
        if n < 4:
            return []
        size = _SIZE.unpack_from(buf, 0)[0]
        if size == n - 4:
            self._check(size)
            # Hand the buffer over: dropping the size prefix only moves its start.
            del buf[:4]
            self._buf = bytearray()
            return [buf]
        out: list[bytes | bytearray] = []
        pos = 0
        view = memoryview(buf)
        try:
            while n - pos >= 4:
                size = _SIZE.unpack_from(buf, pos)[0]
                self._check(size)
                if n - pos - 4 < size:
                    break
                # One copy per frame (a bytearray slice would make two).
                out.append(bytes(view[pos + 4 : pos + 4 + size]))
                pos += 4 + size
        finally:
            view.release()
        if pos == n:
            # Drop the buffer: ``del buf[:n]`` would keep its capacity (a whole
            # fetch response) allocated for the life of the connection.
            self._buf = bytearray()
        elif pos:
            del buf[:pos]
        return out

    @property
    def pending(self) -> int:
        """Bytes buffered that do not yet form a whole frame."""
        return len(self._buf)


#: Size of :class:`FrameReceiver`'s fixed buffer: frames up to this size are gathered in it.
RECEIVE_BUFFER_SIZE = 64 * 1024
#: A bigger frame's buffer is allocated at once up to this size (a fetch response of the
#: default ``fetch_max_bytes``, 50 MiB, fits); a frame claimed bigger starts with a buffer of
#: this size, doubled as it fills.
UPFRONT_LIMIT = 64 * 1024 * 1024


class FrameReceiver:
    """Splits a byte stream into frames, with the bytes written straight into their buffers.

    The reader asks :meth:`get_buffer` for room, writes the bytes it receives into it
    (``socket.recv_into``, or an SSL object's ``read``), and reports their number to
    :meth:`buffer_updated`, which gives the frames completed by them.  This is the shape of
    :class:`asyncio.BufferedProtocol`, and it spares the copies of a stream reader: a big
    frame (a fetch response) is received into a buffer of its own and handed over as that
    ``bytearray``.

    * Frames of up to ``buffer_size`` bytes with their size prefix are gathered in one
      fixed buffer and copied out as ``bytes``.
    * A bigger frame gets its own ``bytearray`` of its size, or of ``upfront_limit`` bytes
      if it claims more, doubled as it fills (up to the frame's size): whatever a size
      prefix claims, the memory taken is at most ``upfront_limit`` or twice the bytes that
      arrived.  Nothing of it is kept once the frame is handed over.

    A negative size prefix or one above ``max_frame_size`` raises
    :class:`KafkaProtocolError` from :meth:`buffer_updated`: the stream cannot be
    resynchronised after it.
    """

    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        buffer_size: int = RECEIVE_BUFFER_SIZE,
        upfront_limit: int = UPFRONT_LIMIT,
    ) -> None:
        if buffer_size < 8:
            raise ValueError(f"buffer_size must be at least 8 bytes, not {buffer_size}")
        if upfront_limit < buffer_size:
            raise ValueError(
                f"upfront_limit ({upfront_limit}) must be at least buffer_size ({buffer_size})"
            )
        self._max = max_frame_size
        self._size = buffer_size
        self._upfront = upfront_limit
        self._buf = bytearray(buffer_size)
        self._view = memoryview(self._buf)
        self._start = 0  # first byte not yet taken
        self._end = 0  # end of the bytes received
        self._big: bytearray | None = None  # the buffer of a big frame
        self._big_size = 0  # the size of that frame
        self._filled = 0  # bytes of it received

    @property
    def pending(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return self._filled if self._big is not None else self._end - self._start

    @property
    def allocated(self) -> int:
        """Bytes of the buffer of the big frame being received (0 if none)."""
        return len(self._big) if self._big is not None else 0

    def get_buffer(self) -> memoryview:
        """Room for the next bytes of the stream: a non-empty writable view."""
        big = self._big
        if big is not None:
            capacity = len(big)
            if self._filled == capacity:
                # Grown here, not in buffer_updated: a view of the buffer the reader
                # wrote into may still be alive there, and a bytearray with views cannot
                # be resized.
                big += bytes(min(capacity * 2, self._big_size) - capacity)
            return memoryview(big)[self._filled :]
        if self._end == self._size:
            # Move the start of an incomplete frame to the front.
            n = self._end - self._start
            self._buf[:n] = self._view[self._start : self._end]
            self._start, self._end = 0, n
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytes | bytearray]:
        """``nbytes`` were written at the start of the last :meth:`get_buffer` view.

        Returns the frame bodies (without their size prefix) completed by them, in order.
        """
        big = self._big
        if big is not None:
            self._filled += nbytes
            if self._filled < self._big_size:
                return []
            self._big = None
            return [big]
        self._end += nbytes
        return self._split()

    def _split(self) -> list[bytes | bytearray]:
        out: list[bytes | bytearray] = []
        view = self._view
        start = self._start
        end = self._end
        while end - start >= 4:
            size = _SIZE.unpack_from(view, start)[0]
            if size < 0 or size > self._max:
                raise KafkaProtocolError(
                    f"invalid frame size {size} (allowed 0 to {self._max} bytes)"
                )
            have = end - start - 4
            if have >= size:
                out.append(bytes(view[start + 4 : start + 4 + size]))
                start += 4 + size
                continue
            if size + 4 > self._size:
                # A big frame: from now on its bytes go straight into its own buffer.
                big = bytearray(min(size, max(self._upfront, 2 * have)))
                big[:have] = view[start + 4 : end]
                self._big = big
                self._big_size = size
                self._filled = have
                start = end = 0
            break
        if start == end:
            start = end = 0
        self._start = start
        self._end = end
        return out
