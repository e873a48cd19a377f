"""Cheap look at fetched record data without decoding it."""

from __future__ import annotations

import struct

_OFFSET_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_V2_HEADER_MIN = 61  # a v2 batch header, up to the record count
_MAGIC_AT = 16
_LAST_OFFSET_DELTA_AT = 23
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_AT = 12


def last_batch_end(data: bytes) -> tuple[int, int] | None:
    """The offset after the last *complete* batch in ``data`` and that batch's partition
    leader epoch (-1 for legacy messages), or ``None`` (see :func:`next_offset_after`).

    The epoch is the ``last_fetched_epoch`` of the next Fetch from that offset (KIP-595):
    the leader compares it with its own log to report a divergence.
    """
    total = len(data)
    pos = 0
    last: tuple[int, int] | None = None
    while total - pos >= 12:
        offset, length = _OFFSET_LENGTH.unpack_from(data, pos)
        end = pos + 12 + length
        if length < 5 or end > total:
            break
        if data[pos + _MAGIC_AT] >= 2:
            if length + 12 < _V2_HEADER_MIN:
                break
            delta = _LAST_OFFSET_DELTA.unpack_from(data, pos + _LAST_OFFSET_DELTA_AT)[0]
            epoch = _LEADER_EPOCH.unpack_from(data, pos + _LEADER_EPOCH_AT)[0]
            last = (offset + delta + 1, epoch)
        else:
            last = (offset + 1, -1)
        pos = end
    return last


def next_offset_after(data: bytes) -> int | None:
    """The offset after the last *complete* batch in ``data``, or ``None``.

    Only batch headers are read: for v2 batches ``base offset + last offset
    delta + 1``; for legacy messages (whose wrapper carries the offset of its
    last inner message) ``offset + 1``.  A truncated last batch is ignored, as
    the decoder ignores it.  Headers too short to hold these fields end the
    scan; the decoder reports such corruption when it gets there.
    """
    total = len(data)
    pos = 0
    last: int | None = None
    while total - pos >= 12:
        offset, length = _OFFSET_LENGTH.unpack_from(data, pos)
        end = pos + 12 + length
        if length < 5 or end > total:  # too short to hold a crc and a magic byte
            break
        if data[pos + _MAGIC_AT] >= 2:
            if length + 12 < _V2_HEADER_MIN:
                break
            delta = _LAST_OFFSET_DELTA.unpack_from(data, pos + _LAST_OFFSET_DELTA_AT)[0]
            last = offset + delta + 1
        else:
            last = offset + 1
        pos = end
    return last
