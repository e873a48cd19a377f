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

from rackafka.errors import CorruptRecordException, UnsupportedCodecError

__all__ = [
    "CODEC_NONE",
    "CODEC_GZIP",
    "CODEC_SNAPPY",
    "CODEC_LZ4",
    "CODEC_ZSTD",
    "CODEC_NAMES",
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

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")
_cramjam: ModuleType | None = None


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
        return bytes(_codecs().lz4.compress(data))
    if codec == CODEC_ZSTD:
        return bytes(_codecs().zstd.compress(data))
    raise UnsupportedCodecError(f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes, *, legacy_lz4: bool = False) -> bytes:
    """Decompress ``data`` that was compressed with ``codec``.

    Arguments:
        codec (int): one of the ``CODEC_*`` numbers.
        data (bytes): the compressed bytes.
        legacy_lz4 (bool): accept the wrong LZ4 frame header checksum written for message
            format v0.

    Raises:
        UnsupportedCodecError: ``codec`` is not a known codec number.
        CorruptRecordException: ``data`` is not valid for ``codec``.  The message names the
            codec only; callers add the topic-partition and offset.
    """
    if codec == CODEC_NONE:
        return bytes(data)
    cramjam = _cramjam or _codecs()
    try:
        if codec == CODEC_LZ4:
            if legacy_lz4:
                data = _fix_legacy_lz4_header(data)
            return bytes(cramjam.lz4.decompress(data))
        if codec == CODEC_ZSTD:
            return bytes(cramjam.zstd.decompress(data))
        if codec == CODEC_SNAPPY:
            return _snappy_decompress(data)
        if codec == CODEC_GZIP:
            return _gzip_decompress(data)
    except CorruptRecordException:
        raise
    except (cramjam.DecompressionError, zlib.error, ValueError, OverflowError) as exc:
        name = CODEC_NAMES[codec]
        raise CorruptRecordException(f"invalid {name} compressed data ({exc})") from None
    raise UnsupportedCodecError(f"unknown compression codec {codec}")


def _gzip_decompress(data: bytes) -> bytes:
    # A gzip stream may hold several members.  Like Java's GZIPInputStream, bytes after a
    # member that do not start another member are ignored.
    parts = []
    while True:
        d = zlib.decompressobj(31)
        parts.append(d.decompress(data))
        if not d.eof:
            raise CorruptRecordException("invalid gzip compressed data (truncated stream)")
        data = d.unused_data
        if not data.startswith(b"\x1f\x8b"):
            break
    return b"".join(parts)


def _snappy_decompress(data: bytes) -> bytes:
    snappy = _codecs().snappy
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(snappy.decompress_raw(data))
    # xerial framing: magic, int32 version, int32 compatible version, then blocks of
    # int32 length + raw snappy data.
    pos = len(_XERIAL_HEADER)
    end = len(data)
    if end < pos:
        raise CorruptRecordException("invalid snappy compressed data (short xerial header)")
    parts = []
    decompress_raw = snappy.decompress_raw
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordException("invalid snappy compressed data (short block length)")
        (size,) = _I32.unpack_from(data, pos)
        pos += 4
        if size < 0 or size > end - pos:
            raise CorruptRecordException(
                f"invalid snappy compressed data (block of {size} bytes, {end - pos} left)"
            )
        parts.append(bytes(decompress_raw(data[pos : pos + size])))
        pos += size
    return b"".join(parts)


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
