"""Compression codecs of Kafka record data.

The codec of a batch is stored in bits 0-2 of its attributes: ``0`` none, ``1`` gzip,
``2`` snappy, ``3`` lz4 and ``4`` zstd.  All of them are implemented with the standard
library and :mod:`cramjam`; no codec is optional.  :mod:`cramjam` is imported when a
compressed batch is first met (it adds about 1.5 MB to the resident size of a process
that never sees one).

Snappy data written by the Java client uses the xerial framing (a magic header followed by
length-prefixed raw snappy blocks); plain raw snappy, as written by some other clients, is
accepted too.  LZ4 uses the LZ4 frame format; the broken frame header checksum that Kafka
clients wrote for message format v0 (before KIP-57) is accepted when ``legacy_lz4`` is set.
"""

from __future__ import annotations

import struct
import zlib
from types import ModuleType
from typing import Any

from rackafka.errors import CorruptRecordException, RecordTooLargeError, UnsupportedCodecError

__all__ = [
    "CODEC_NONE",
    "CODEC_GZIP",
    "CODEC_SNAPPY",
    "CODEC_LZ4",
    "CODEC_ZSTD",
    "CODEC_NAMES",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "compress",
    "decompress",
]

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4

#: Kafka's name of each codec, by codec number.
CODEC_NAMES = {
    CODEC_NONE: "none",
    CODEC_GZIP: "gzip",
    CODEC_SNAPPY: "snappy",
    CODEC_LZ4: "lz4",
    CODEC_ZSTD: "zstd",
}

#: The largest decompressed batch :func:`decompress` gives when the caller sets no limit.
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
#: First output buffer for a frame that does not declare its size: this many times the
#: compressed size (grown four-fold on demand, up to the limit).
_FIRST_GUESS_RATIO = 8
_MIN_GUESS = 64 * 1024
_SNAPPY_MAX_RATIO = 32
#: LZ4 frame block sizes, by the block maximum size field of the frame descriptor.
_LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
#: Blocks counted at most for a size hint.
_LZ4_MAX_BLOCKS = 4096
_U32LE = struct.Struct("<I")

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")
_cramjam: ModuleType | None = None
#: The LZ4 frame compression level of produced batches: 0, LZ4's fast mode (the frame
#: format's default, which librdkafka and aiokafka use too; the block compression of
#: :mod:`cramjam` that :func:`compress` uses).  :mod:`cramjam`'s own frame default is a
#: high-compression level, about ten times slower for 1-3 % smaller batches.
LZ4_LEVEL = 0


def _codecs() -> ModuleType:
    """The :mod:`cramjam` module, imported on first use."""
    global _cramjam
    if _cramjam is None:
        import cramjam

        _cramjam = cramjam
    return _cramjam


def compress(codec: int, data: bytes) -> bytes:
    """Compress ``data`` with ``codec`` the way Kafka producers do.

    Arguments:
        codec (int): one of the ``CODEC_*`` numbers.
        data (bytes): the uncompressed bytes.

    Raises:
        UnsupportedCodecError: ``codec`` is not a known codec number.
    """
    if codec == CODEC_NONE:
        return bytes(data)
    if codec == CODEC_GZIP:
        return bytes(_codecs().gzip.compress(data))
    if codec == CODEC_SNAPPY:
        return _xerial_compress(data)
    if codec == CODEC_LZ4:
        return _lz4_frame(data)
    if codec == CODEC_ZSTD:
        return bytes(_codecs().zstd.compress(data))
    raise UnsupportedCodecError(f"unknown compression codec {codec}")


def decompress(
    codec: int,
    data: bytes,
    *,
    legacy_lz4: bool = False,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> bytes:
    """Decompress ``data`` that was compressed with ``codec``, to at most ``max_size`` bytes.

    The output never grows past ``max_size``: a small batch that inflates to gigabytes (a
    "compression bomb") is refused once the limit is reached, without ever holding more
    than about ``max_size`` bytes.

    Arguments:
        codec (int): one of the ``CODEC_*`` numbers.
        data (bytes): the compressed bytes.
        legacy_lz4 (bool): accept the wrong LZ4 frame header checksum written for message
            format v0.
        max_size (int): the largest decompressed size accepted.

    Raises:
        UnsupportedCodecError: ``codec`` is not a known codec number.
        CorruptRecordException: ``data`` is not valid for ``codec``.  The message names the
            codec only; callers add the topic-partition and offset.
        RecordTooLargeError: the decompressed data would exceed ``max_size``.
    """
    if codec == CODEC_NONE:
        return bytes(data)
    cramjam = _cramjam or _codecs()
    try:
        if codec == CODEC_LZ4:
            if legacy_lz4:
                data = _fix_legacy_lz4_header(data)
            return _bounded(cramjam.lz4.decompress_into, data, max_size, _lz4_content_size(data))
        if codec == CODEC_ZSTD:
            return _bounded(cramjam.zstd.decompress_into, data, max_size, _zstd_content_size(data))
        if codec == CODEC_SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec == CODEC_GZIP:
            return _gzip_decompress(data, max_size)
    except (CorruptRecordException, RecordTooLargeError):
        raise
    except (cramjam.DecompressionError, zlib.error, ValueError, OverflowError) as exc:
        name = CODEC_NAMES[codec]
        raise CorruptRecordException(f"invalid {name} compressed data ({exc})") from None
    raise UnsupportedCodecError(f"unknown compression codec {codec}")


def _too_large(max_size: int) -> RecordTooLargeError:
    return RecordTooLargeError(
        f"the batch decompresses to more than {max_size} bytes, the limit "
        "(a compression bomb, or raise fetch_max_bytes / max_partition_fetch_bytes)"
    )


def _bounded(decompress_into: Any, data: bytes, max_size: int, hint: int | None) -> bytes:
    """Decompress into a buffer grown on demand, never past ``max_size`` bytes."""
    if not hint or hint > max_size:
        # No size, or one past the limit (or a corrupt header): the data decides.
        hint = max(len(data) * _FIRST_GUESS_RATIO, _MIN_GUESS)
    size = min(hint, max_size)
    while True:
        out = bytearray(size)
        try:
            n = decompress_into(data, out)
        except Exception as exc:
            if "whole buffer" not in str(exc):
                raise  # corrupt data, not a short buffer
            del out  # before the next, bigger one: never two buffers at once
            if size >= max_size:
                raise _too_large(max_size) from None
            size = min(max(size * 4, _MIN_GUESS), max_size)
            continue
        if n == size:
            return bytes(out)
        with memoryview(out) as view:
            return bytes(view[:n])


#: The frame descriptor of produced LZ4 frames: version 1, independent blocks, no block or
#: content checksum, no content size (FLG); 64 KiB blocks (BD).
_LZ4_DESCRIPTOR = bytes((0x60, 0x40))
_LZ4_BLOCK = 64 * 1024
_LZ4_RAW_BLOCK = 0x80000000


def _lz4_frame(data: bytes) -> bytes:
    """An LZ4 frame of ``data`` as Kafka's own writer frames it.

    Independent 64 KiB blocks and no content checksum: Kafka's Java reader decompresses
    each block on its own, so linked blocks (the frame format's default) would fail there
    for batches over one block.  The frame is built here from :mod:`cramjam`'s block
    compression (LZ4's fast mode, :data:`LZ4_LEVEL`) rather than with its frame writer:
    the builds of cramjam 2.11 and older flush a block for every 8 KiB their frame writer
    is given, so their frames hold eight times as many blocks as they declare room for
    (worse compression, and a size hint eight times too large for the reader).
    """
    compress_block = _codecs().lz4.compress_block
    head = b"\x04\x22\x4d\x18" + _LZ4_DESCRIPTOR
    parts = [head + bytes(((xxh32(_LZ4_DESCRIPTOR) >> 8) & 0xFF,))]
    view = memoryview(data)
    for start in range(0, len(data), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        block = compress_block(chunk, store_size=False)
        if len(block) < len(chunk):
            parts.append(_U32LE.pack(len(block)))
            parts.append(bytes(block))
        else:  # incompressible: stored as is, flagged by the size's high bit
            parts.append(_U32LE.pack(len(chunk) | _LZ4_RAW_BLOCK))
            parts.append(bytes(chunk))
    parts.append(b"\x00\x00\x00\x00")  # the end mark
    return b"".join(parts)


def _zstd_content_size(data: bytes) -> int | None:
    """The content size a zstd frame header declares, if any (a hint only)."""
    if len(data) < 6 or data[:4] != b"\x28\xb5\x2f\xfd":
        return None
    fhd = data[4]
    fcs_flag = fhd >> 6
    single = (fhd >> 5) & 1
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
    width = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if width == 0 or len(data) < pos + width:
        return None
    value = int.from_bytes(data[pos : pos + width], "little")
    return value + 256 if width == 2 else value


def _lz4_content_size(data: bytes) -> int | None:
    """The content size an LZ4 frame header declares; else the most its blocks can hold.

    Frames without a content size (librdkafka's, for one) would otherwise get a first
    buffer of :data:`_FIRST_GUESS_RATIO` times their size, to fill and copy: a block holds
    at most the frame's block size, and every block but the last holds exactly that, so
    the blocks' count gives a close bound.  A hint only: the data decides.
    """
    if len(data) < 7 or data[:4] != b"\x04\x22\x4d\x18":
        return None
    flags = data[4]
    if flags & 0x08:
        return int.from_bytes(data[6:14], "little") if len(data) >= 14 else None
    block_max = _LZ4_BLOCK_MAX.get(data[5] >> 4 & 7)
    if block_max is None:
        return None
    pos = 11 if flags & 0x01 else 7  # after the dictionary id, if any, and the checksum
    checksum = 4 if flags & 0x10 else 0
    end = len(data) - 4
    blocks = 0
    while pos <= end and blocks < _LZ4_MAX_BLOCKS:
        size = _U32LE.unpack_from(data, pos)[0] & 0x7FFFFFFF
        if size == 0:
            return blocks * block_max  # the end mark
        pos += 4 + size + checksum
        blocks += 1
    return None


#: Output step of the streaming gzip decompression: at most this much past the limit is
#: ever held before a compression bomb is refused.
_GZIP_CHUNK = 1024 * 1024


def _gzip_decompress(data: bytes, max_size: int) -> bytes:
    # A gzip stream may hold several members.  Like Java's GZIPInputStream, bytes after a
    # member that do not start another member are ignored.  The output is produced in
    # chunks (zlib's one-shot output buffer would be copied once more at the end), and the
    # inflation stops as soon as the total passes ``max_size``.
    parts: list[bytes] = []
    total = 0
    while True:
        d = zlib.decompressobj(31)
        pending = data
        while True:
            chunk = d.decompress(pending, _GZIP_CHUNK)
            pending = d.unconsumed_tail
            if chunk:
                total += len(chunk)
                if total > max_size:
                    parts.clear()
                    raise _too_large(max_size)
                parts.append(chunk)
            elif not pending:
                break  # no input left and no output: the member ended or is truncated
            if d.eof:
                break
        if not d.eof:
            raise CorruptRecordException("invalid gzip compressed data (truncated stream)")
        data = d.unused_data
        if not data.startswith(b"\x1f\x8b"):
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    snappy = _codecs().snappy
    if not data.startswith(_XERIAL_MAGIC):
        _check_snappy_len(snappy.decompress_raw_len(data), len(data), max_size)
        return bytes(snappy.decompress_raw(data))
    # xerial framing: magic, int32 version, int32 compatible version, then blocks of
    # int32 length + raw snappy data.
    pos = len(_XERIAL_HEADER)
    end = len(data)
    if end < pos:
        raise CorruptRecordException("invalid snappy compressed data (short xerial header)")
    parts = []
    left = max_size
    decompress_raw = snappy.decompress_raw
    raw_len = snappy.decompress_raw_len
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordException("invalid snappy compressed data (short block length)")
        (size,) = _I32.unpack_from(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CorruptRecordException(
                f"invalid snappy compressed data (block of {size} bytes, {end - pos} left)"
            )
        block = data[pos : pos + size]
        left -= _check_snappy_len(raw_len(block), size, max_size)
        if left < 0:
            raise _too_large(max_size)
        parts.append(bytes(decompress_raw(block)))
        pos += size
    return b"".join(parts)


def _check_snappy_len(declared: int, compressed: int, max_size: int) -> int:
    """Check the length a raw snappy block declares before decompressing it."""
    # A snappy element of 2-5 bytes produces at most 64 bytes: a longer claim is a lie.
    if declared > compressed * _SNAPPY_MAX_RATIO + 64:
        raise CorruptRecordException(
            f"invalid snappy compressed data ({compressed} bytes cannot hold {declared})"
        )
    if declared > max_size:
        raise _too_large(max_size)
    return declared


def _xerial_compress(data: bytes) -> bytes:
    out = bytearray(_XERIAL_HEADER)
    compress_raw = _codecs().snappy.compress_raw
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(compress_raw(view[start : start + _XERIAL_BLOCK]))
        out += _I32.pack(len(block))
        out += block
    return bytes(out)


# -- LZ4 frames written for message format v0 ---------------------------------------------

_P1 = 0x9E3779B1
_P2 = 0x85EBCA77
_P3 = 0xC2B2AE3D
_P4 = 0x27D4EB2F
_P5 = 0x165667B1
_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of a short input, as used by the LZ4 frame header checksum."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = struct.unpack_from("<I", data, pos)
                v[i] = (_rotl32((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl32(v[0], 1) + _rotl32(v[1], 7) + _rotl32(v[2], 12) + _rotl32(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl32((h + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl32((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _fix_legacy_lz4_header(data: bytes) -> bytes:
    """Rewrite the header checksum of an LZ4 frame written for message format v0.

    Kafka clients before KIP-57 computed the checksum over the magic number and the frame
    descriptor instead of the descriptor alone.  A frame with a correct checksum is
    returned unchanged.
    """
    if len(data) < 7 or data[:4] != b"\x04\x22\x4d\x18":
        return data
    flg = data[4]
    desc_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) <= desc_end:
        return data
    good = (xxh32(data[4:desc_end]) >> 8) & 0xFF
    if data[desc_end] == good:
        return data
    return data[:desc_end] + bytes((good,)) + data[desc_end + 1 :]
