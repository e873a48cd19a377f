"""Record batch v2 (magic 2): the batch object and the record decoder.

This module is the consumer's hot path.  Two decoders share the work:

* a scalar loop that decodes one record after the other, with the common one- and
  two-byte varints read inline through lookup tables; a record with headers whose body
  (key, value and headers) has a size seen before is cut up by one ``struct`` call, and
  header blocks of a length seen before likewise (the structure bytes are compared,
  never assumed), and
* the column decoder of :mod:`._columns` for runs of records that all have the same
  layout, which is what most producers write.

Both decoders validate every record completely; a run that does not pass the checks is
decoded by the scalar loop, which raises the precise error.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import partial
from itertools import starmap
from typing import Any, Final

from rackafka.errors import CorruptRecordException, RecordTooLargeError, UnsupportedCodecError
from rackafka.records import _gc
from rackafka.records._columns import EMPTY, MIN_RECORD_SIZE, MIN_RUN, decode_run
from rackafka.records._varint import ZIGZAG1, ZIGZAG2, VarintError, read_varint
from rackafka.records.compression import CODEC_NAMES, DEFAULT_MAX_DECOMPRESSED_SIZE, decompress
from rackafka.structs import ConsumerRecord

__all__ = [
    "HEADER",
    "HEADER_SIZE",
    "RecordBatch",
    "RecordFactory",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
]

#: Header of a v2 batch: baseOffset, batchLength, partitionLeaderEpoch, magic, crc,
#: attributes, lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch,
#: baseSequence, records count.
HEADER: Final = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE: Final = HEADER.size  # 61
#: Offset of the first byte covered by the CRC (the attributes).
CRC_START: Final = 21

CREATE_TIME: Final = 0
LOG_APPEND_TIME: Final = 1
#: Control record types (the ``type`` field of a control record key).
CONTROL_ABORT: Final = 0
CONTROL_COMMIT: Final = 1

#: ``factory(offset, timestamp, timestamp_type, key, value, checksum,
#: serialized_key_size, serialized_value_size, headers)``: the argument order of
#: aiokafka's ``ConsumerRecord`` after its ``topic`` and ``partition``.
RecordFactory = Callable[..., Any]

_FIRST_CHUNK = 16  # records decoded by the scalar loop before trying columns again
_MAX_CHUNK = 4096
#: Header keys seen so far, by their bytes: most topics use a handful of header names, so
#: the decoder slices a key and looks it up instead of decoding it for every record.
_HEADER_KEYS: dict[bytes, str] = {}
_HEADER_KEYS_MAX = 4096


#: A header block layout: ``(count, unpack, structure[0], structure[1], keys[0], keys[1],
#: structure, keys)``.  ``unpack`` cuts a block of the learned length into ``count`` pairs
#: of (structure, value), where ``structure`` is the bytes before each value (the header
#: count for the first, then the key length, the key and the value length); they must
#: equal the learned ones for the values to be taken as they are.
_HeaderLayout = tuple[
    int, Callable[..., Any], bytes, bytes, str, str, tuple[bytes, ...], tuple[str, ...]
]


#: Header block layouts by the block's length in bytes.  A layout is learned the second
#: time a block length is seen (a topic whose header values change length all the time
#: does not pay for learning on every record); a block of that length whose structure
#: differs is decoded by the general path.
_HEADER_LAYOUTS: dict[int, _HeaderLayout] = {}
_LAYOUT_SEEN: set[int] = set()
_HEADER_LAYOUTS_MAX = 256
_LAYOUT_MAX_HEADERS = 8
#: Record layouts, by the size of a record from its key length to its end (the "body").
#: The decoder cuts the body of a record of a learned size with one ``struct`` call
#: when the structure bytes (the key and value lengths, the header count, keys and value
#: lengths, and header values that were the same in the two records the layout was
#: learned from) equal the learned ones; the values in between are then exactly what the
#: general path would read.  A size has no entry until it is seen twice (the first
#: sighting only notes the headers), ``False`` when it has no layout, else
#: ``(unpack, structure, key_size, value_size, headers_kind, a, b, folded)`` (see
#: :func:`_record_layout`; a size of -1 is a null key or value).  Only records with
#: headers get layouts (records without are faster through the general path), and only
#: bodies shorter than the limit, so that at most that many are ever learned (small
#: records are where the per-record cost is); a layout that fails its check is learned
#: again once without folded header values, then given up.
_RECORD_LAYOUT_LIMIT = 2048
_RECORD_LAYOUTS: dict[int, Any] = {}
_RECORD_SEEN: dict[int, tuple[tuple[str, bytes | None], ...]] = {}
_EVERY_OTHER = slice(0, None, 2)
#: Header values are folded into the structure only in blocks of at most 2 headers, and
#: when at most this long.
_FOLD_MAX_VALUE = 64
# How a layout builds the headers tuple from the parts (variable values at parts[5],
# parts[7], ...) and its constants ``a`` and ``b``.
_H_CONST = 0  # b: the whole headers tuple (none, or only constant values)
_H_VAR_CONST = 1  # ((a, parts[5]), b)
_H_VAR_VAR = 2  # ((a, parts[5]), (b, parts[7]))
_H_VAR = 3  # ((a, parts[5]),)
_H_CONST_VAR = 4  # (b, (a, parts[5]))
_H_ALL_VAR = 5  # tuple(zip(a, parts[5::2]))
_ZEROS1 = [0] * 128
_ZEROS2 = [[0] * 128] * 256


class _Corrupt(Exception):
    """Internal: a record is invalid; :meth:`RecordBatch.records` adds the context."""


def _where(topic: str | None, partition: int | None, offset: int) -> str:
    if topic is not None:
        return f"{topic}-{partition} at offset {offset}"
    if partition is not None:
        return f"partition {partition} at offset {offset}"
    return f"offset {offset}"


class RecordBatch:
    """A record batch of message format v2 (magic 2).

    :func:`rackafka.records.iter_batches` creates it after checking the batch header (and
    the CRC when asked to); the records are decoded (and decompressed) only when
    :meth:`records` is called.

    Attributes:
        base_offset (int): offset of the first record of the batch.
        last_offset (int): offset of the last record; records may be missing before it
            after log compaction, but the next batch starts after it.
        next_offset (int): ``last_offset + 1``, the fetch position after this batch.
        batch_length (int): the batch length field (the batch size minus 12).
        size_in_bytes (int): the size of the batch in the buffer.
        partition_leader_epoch (int): leader epoch of the partition when it was written.
        magic (int): always 2.
        crc (int): the CRC32C stored in the batch.
        attributes (int): the raw attributes.
        compression (int): the codec number, attributes bits 0-2.
        timestamp_type (int): 0 for CreateTime, 1 for LogAppendTime.
        is_transactional (bool): the batch belongs to a transaction.
        is_control (bool): the batch holds control records (transaction markers).
        has_delete_horizon (bool): ``base_timestamp`` is the delete horizon set by the log
            cleaner.
        last_offset_delta (int): ``last_offset - base_offset``.
        base_timestamp (int): timestamp the record timestamps are relative to.
        max_timestamp (int): the largest timestamp of the batch (the log append time for
            LogAppendTime batches).
        producer_id (int): ``-1`` when the producer is not idempotent.
        producer_epoch (int): the producer epoch, ``-1`` if none.
        base_sequence (int): the sequence number of the first record, ``-1`` if none.
        record_count (int): the number of records in the batch.
        topic (str | None): the topic, for error messages.
        partition (int | None): the partition, for error messages.
    """

    __slots__ = (
        "_buf",
        "_pos",
        "_end",
        "topic",
        "partition",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
        "compression",
        "timestamp_type",
        "is_transactional",
        "is_control",
        "last_offset",
        "next_offset",
        "max_decompressed_size",
    )

    checksum = None

    def __init__(
        self,
        buf: bytes,
        pos: int,
        header: tuple[int, ...],
        topic: str | None = None,
        partition: int | None = None,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> None:
        """Wrap the batch at ``pos`` of ``buf`` whose unpacked :data:`HEADER` is ``header``.

        The caller has checked that the whole batch is in ``buf``.
        """
        (
            base_offset,
            batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            attributes,
            last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = header
        self._buf = buf
        self._pos = pos
        self._end = pos + 12 + batch_length
        self.topic = topic
        self.partition = partition
        self.max_decompressed_size = max_decompressed_size
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.compression = attributes & 0x07
        self.timestamp_type = (attributes >> 3) & 1
        self.is_transactional = bool(attributes & 0x10)
        self.is_control = bool(attributes & 0x20)
        self.last_offset = base_offset + last_offset_delta
        self.next_offset = self.last_offset + 1

    @property
    def size_in_bytes(self) -> int:
        """Size of the batch in the buffer, header included."""
        return self.batch_length + 12

    @property
    def has_delete_horizon(self) -> bool:
        """``True`` if :attr:`base_timestamp` is the delete horizon set by the log cleaner."""
        return bool(self.attributes & 0x40)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon of the batch (KIP-534), or ``None`` if it has none."""
        return self.base_timestamp if self.attributes & 0x40 else None

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.record_count}, codec={CODEC_NAMES.get(self.compression, '?')}, "
            f"transactional={self.is_transactional}, control={self.is_control}, "
            f"producer_id={self.producer_id})"
        )

    def _error(self, message: str, offset: int | None = None) -> CorruptRecordException:
        where = _where(self.topic, self.partition, self.base_offset if offset is None else offset)
        return CorruptRecordException(f"{where}: {message}")

    def records_bytes(self) -> bytes:
        """The records section of the batch, decompressed."""
        buf = self._buf
        start = self._pos + HEADER_SIZE
        codec = self.compression
        if codec == 0:
            return buf[start : self._end]
        try:
            return decompress(codec, buf[start : self._end], max_size=self.max_decompressed_size)
        except UnsupportedCodecError as exc:
            where = _where(self.topic, self.partition, self.base_offset)
            raise UnsupportedCodecError(f"{where}: {exc.args[0]}") from None
        except CorruptRecordException as exc:
            raise self._error(f"batch of {self.record_count} records: {exc.args[0]}") from None
        except RecordTooLargeError as exc:
            where = _where(self.topic, self.partition, self.base_offset)
            raise RecordTooLargeError(f"{where}: {exc.args[0]}") from None

    def records(self, factory: RecordFactory | None = None, runs: bool = False) -> list[Any]:
        """Decode the records of the batch.

        Each record is given as the nine values ``(offset, timestamp, timestamp_type, key,
        value, checksum, serialized_key_size, serialized_value_size, headers)``: the
        arguments of aiokafka's ``ConsumerRecord`` after ``topic`` and ``partition``.
        ``checksum`` is ``None`` (v2 records have none), a size is ``-1`` for a ``None`` key
        or value, and ``headers`` is a tuple of ``(str, bytes | None)`` pairs, the shared
        empty tuple when the record has none.  Header keys that are not valid UTF-8 are
        decoded with ``surrogateescape``.

        Arguments:
            factory: called with the nine values for each record; its results are
                returned.  Without it, the nine-value tuples are returned.  Passing
                ``functools.partial(ConsumerRecord, topic, partition)`` (with
                :class:`rackafka.structs.ConsumerRecord`) builds consumer records
                without an intermediate object, faster than any other factory.
            runs: internal, for bulk readers (with no ``factory``): runs of records of
                the same layout come as one :class:`~rackafka.records._columns.Run`
                each (checked as fully, not cut into values), among the tuples of
                the other records.

        Raises:
            CorruptRecordException: a record is invalid, or the compressed data is.
            UnsupportedCodecError: the batch uses an unknown codec.
            RecordTooLargeError: the records decompress to more than
                ``max_decompressed_size`` bytes.
        """
        buf = self._buf
        count = self.record_count
        pos = self._pos + HEADER_SIZE
        end = self._end
        if self.compression:
            buf = self.records_bytes()
            pos = 0
            end = len(buf)
            if count * MIN_RECORD_SIZE > end:
                raise self._error(f"{count} records cannot fit in {end} bytes of decompressed data")
        attributes = self.attributes
        lat = self.max_timestamp if attributes & 0x08 else None
        tp = None
        if (
            type(factory) is partial
            and factory.func is ConsumerRecord
            and len(factory.args) == 2
            and not factory.keywords
        ):
            tp = factory.args  # the scalar loop builds them itself
        # The cyclic GC is paused while the batch is decoded, and its next collection
        # waits until the records had a chance to be dropped (see records._gc).
        paused = _gc.pause()
        try:
            return _decode(
                buf,
                pos,
                end,
                count,
                self.base_offset,
                self.base_timestamp,
                (attributes >> 3) & 1,
                lat,
                factory,
                self.last_offset,
                tp,
                runs,
            )
        except _Corrupt as exc:
            raise self._error(exc.args[0]) from None
        finally:
            if paused:
                _gc.resume()

    def __iter__(self) -> Any:
        """Iterate over :meth:`records` tuples."""
        return iter(self.records())

    @property
    def control_type(self) -> int | None:
        """The type of the control record of a control batch, else ``None``.

        :data:`CONTROL_ABORT` (0) or :data:`CONTROL_COMMIT` (1) for transaction markers;
        other numbers are other control records (for example KRaft's).

        Raises:
            CorruptRecordException: the control record is missing or invalid.
        """
        if not self.is_control:
            return None
        records = self.records()
        if not records:
            raise self._error("control batch has no record")
        key = records[0][3]
        if key is None or len(key) < 4:
            raise self._error("control record key is shorter than 4 bytes")
        version, kind = struct.unpack_from(">hh", key)
        if version < 0:
            raise self._error(f"control record key has version {version}")
        return int(kind)


# -- decoding ------------------------------------------------------------------------------


def _decode(
    buf: bytes,
    pos: int,
    end: int,
    count: int,
    base_offset: int,
    base_ts: int,
    tt: int,
    lat: int | None,
    factory: RecordFactory | None,
    last_offset: int,
    tp: tuple[str, int] | None = None,
    runs: bool = False,
) -> list[Any]:
    """Decode ``count`` records in ``buf[pos:end]``; they must fill it exactly.

    With ``tp``, ``factory`` is ``partial(ConsumerRecord, *tp)`` and the scalar loop
    builds the records itself. With ``runs``, a run of same-layout records is one
    :class:`~rackafka.records._columns.Run` in the list (``factory`` is ``None``).

    Record offsets must increase strictly, from ``base_offset`` to at most
    ``last_offset`` (the batch header's last offset delta): a batch that says otherwise
    would make the consumer deliver an offset twice or skip the next batch.

    Only the parsing is guarded against :class:`IndexError` (data that ends too early):
    an exception raised by ``factory`` is not mistaken for corrupt data.
    """
    out: list[Any] = []
    remaining = count
    prev = base_offset - 1  # the offset of the last record decoded
    chunk = _FIRST_CHUNK
    parse_errors = _PARSE_ERRORS
    while remaining > 0:
        if remaining >= MIN_RUN:
            try:
                done, stop, columns = decode_run(
                    buf, pos, end, remaining, base_offset, base_ts, tt, lat, not runs
                )
            except parse_errors:
                raise _past_end(count) from None
            if done:
                first = columns.first if runs else columns[0][0]
                if first <= prev:
                    raise _backwards(first, prev)
                prev = first + done - 1
                pos = stop
                if runs:
                    out.append(columns)
                elif factory is None:
                    out.extend(zip(*columns))
                else:
                    out.extend(map(factory, *columns))
                remaining -= done
                chunk = _FIRST_CHUNK
                continue
        n = chunk if chunk < remaining else remaining
        part: list[Any] = out if factory is None or tp is not None else []
        try:
            pos, prev = _decode_scalar(
                buf, pos, n, base_offset, base_ts, tt, lat, part.append, prev, tp
            )
        except parse_errors:
            raise _past_end(count) from None
        if part is not out:
            out.extend(starmap(factory, part))  # type: ignore[arg-type]
        remaining -= n
        if chunk < _MAX_CHUNK:
            chunk <<= 1
    if pos != end:
        if pos < end:
            raise _Corrupt(f"{end - pos} bytes remain after the last of {count} records")
        raise _Corrupt(f"the {count} records run {pos - end} bytes past the end of the batch")
    if prev > last_offset:
        raise _Corrupt(
            f"record offset {prev} is past the batch's last offset {last_offset} "
            f"(last offset delta {last_offset - base_offset})"
        )
    return out


def _backwards(offset: int, prev: int) -> _Corrupt:
    return _Corrupt(f"record offset {offset} does not follow offset {prev}: offsets go backwards")


_PARSE_ERRORS = (IndexError, VarintError, struct.error)


def _past_end(count: int) -> _Corrupt:
    return _Corrupt(f"a record of the batch of {count} records runs past the end of its data")


def _decode_scalar(
    buf: bytes,
    pos: int,
    n: int,
    base_offset: int,
    base_ts: int,
    tt: int,
    lat: int | None,
    append: Callable[[Any], None],
    prev: int,
    tp: tuple[str, int] | None,
) -> tuple[int, int]:
    """Decode ``n`` records from ``pos``, appending their tuples.

    With ``tp``, ``(topic, partition)``, append :class:`~rackafka.structs.ConsumerRecord`
    objects instead, built here as ``ConsumerRecord(topic, partition, *values)`` would
    build them (the same fields in the same order) without calling its ``__init__``.
    Returns the end position and the offset of the last record; each offset must be
    above the one before (``prev`` for the first).
    """
    new = object.__new__
    record_class = ConsumerRecord
    topic, partition = tp if tp is not None else (None, None)
    zz = ZIGZAG1
    zz2 = ZIGZAG2
    rv = read_varint
    layouts_get = _HEADER_LAYOUTS.get
    layouts_of = _RECORD_LAYOUTS.get
    limit = _RECORD_LAYOUT_LIMIT
    every_other = _EVERY_OTHER
    # Timestamp deltas are read through their own tables: with LogAppendTime, tables of
    # zeros added to the log append time, so that the loop has no test for it.
    tz = zz
    tz2 = zz2
    if lat is not None:
        base_ts = lat
        tz = _ZEROS1
        tz2 = _ZEROS2
    # Every varint of a record (length, timestamp delta, offset delta, key and value
    # lengths) is read inline through the zigzag tables, and the key and value blocks are
    # written out twice, on purpose: reading key and value through one shared helper
    # function measured 20-25% slower per record in this loop (medians of 15 interleaved
    # runs, 12 and 1,000-record batches). Keep them inline.
    headers: Any = True  # the first record looks its layout up
    for _ in range(n):
        # length
        b = buf[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        else:
            c = buf[pos + 1]
            if c < 0x80:
                length = zz2[b][c]
                pos += 2
            else:
                length, pos = rv(buf, pos)
        rec_end = pos + length
        # attributes (unused) and timestamp delta
        b = buf[pos + 1]
        if b < 0x80:
            ts = base_ts + tz[b]
            pos += 2
        else:
            c = buf[pos + 2]
            if c < 0x80:
                ts = base_ts + tz2[b][c]
                pos += 3
            else:
                ts, pos = rv(buf, pos + 1)
                ts = base_ts if lat is not None else base_ts + ts
        # offset delta
        b = buf[pos]
        if b < 0x80:
            offset = base_offset + zz[b]
            pos += 1
        else:
            c = buf[pos + 1]
            if c < 0x80:
                offset = base_offset + zz2[b][c]
                pos += 2
            else:
                offset, pos = rv(buf, pos)
                offset += base_offset
        if offset <= prev:
            raise _backwards(offset, prev)
        prev = offset
        # Key, value and headers of a record of a size whose layout was learned: one
        # struct call cuts them up, one comparison checks the structure bytes.  Only
        # records with headers have layouts (the general path is faster for the others),
        # and only a record after one with headers looks its layout up.
        lay = layouts_of(rec_end - pos) if headers and length < limit else None
        if lay and (parts := lay[0](buf, pos))[every_other] == lay[1]:
            key_size = lay[2]
            value_size = lay[3]
            key = parts[1] if key_size >= 0 else None
            value = parts[3] if value_size >= 0 else None
            hkind = lay[4]
            # the most common kinds first: an id and a constant, one id, constants
            if hkind == _H_VAR_CONST:
                headers = ((lay[5], parts[5]), lay[6])
            elif hkind == _H_VAR:
                headers = ((lay[5], parts[5]),)
            elif hkind == _H_CONST:
                headers = lay[6]
            elif hkind == _H_VAR_VAR:
                headers = ((lay[5], parts[5]), (lay[6], parts[7]))
            elif hkind == _H_CONST_VAR:
                headers = (lay[6], (lay[5], parts[5]))
            else:
                headers = tuple(zip(lay[5], parts[5::2]))
            pos = rec_end
        else:
            # key
            b = buf[pos]
            if b == 1:
                key = None
                key_size = -1
                pos += 1
            else:
                if b < 0x80:
                    key_size = zz[b]
                    pos += 1
                else:
                    c = buf[pos + 1]
                    if c < 0x80:
                        key_size = zz2[b][c]
                        pos += 2
                    else:
                        key_size, pos = rv(buf, pos)
                if key_size < 0:
                    raise _Corrupt(f"record at offset {offset} has key length {key_size}")
                key = buf[pos : pos + key_size]
                pos += key_size
            # value
            b = buf[pos]
            if b == 1:
                value = None
                value_size = -1
                pos += 1
            else:
                if b < 0x80:
                    value_size = zz[b]
                    pos += 1
                else:
                    c = buf[pos + 1]
                    if c < 0x80:
                        value_size = zz2[b][c]
                        pos += 2
                    else:
                        value_size, pos = rv(buf, pos)
                if value_size < 0:
                    raise _Corrupt(f"record at offset {offset} has value length {value_size}")
                value = buf[pos : pos + value_size]
                pos += value_size
            # headers
            b = buf[pos]
            if b == 0:
                headers = EMPTY
                pos += 1
            else:
                # A header block of a length seen before: one struct call cuts it up, and a
                # comparison or two checks that its lengths and keys are the learned ones.
                headers = None
                layout = layouts_get(rec_end - pos)
                if layout is not None:
                    count, unpack, e0, e1, k0, k1, structure, keys = layout
                    if count == 2:
                        s0, v1, s1, v2 = unpack(buf, pos)
                        if s0 == e0 and s1 == e1:
                            headers = ((k0, v1), (k1, v2))
                    elif count == 1:
                        s0, v1 = unpack(buf, pos)
                        if s0 == e0:
                            headers = ((k0, v1),)
                    else:
                        parts = unpack(buf, pos)
                        if parts[0::2] == structure:
                            headers = tuple(zip(keys, parts[1::2]))
                if headers is None:
                    headers, pos = _headers(buf, pos, rec_end, offset)
                else:
                    pos = rec_end
            if pos != rec_end:
                raise _Corrupt(
                    f"record at offset {offset} has length {length} but its fields take "
                    f"{length + pos - rec_end} bytes"
                )
            if lay or (headers and lay is None and length < limit):
                _learn_record(buf, rec_end - length, rec_end, key, value, headers, lay)
        if tp is None:
            append((offset, ts, tt, key, value, None, key_size, value_size, headers))
        else:
            # As ConsumerRecord.__init__ does, in the order of its fields (an instance
            # built by the dataclass's own __init__ is equal and has the same vars()),
            # without the call of __init__ through type(): a third of the cost.
            record: Any = new(record_class)
            record.topic = topic
            record.partition = partition
            record.offset = offset
            record.timestamp = ts
            record.timestamp_type = tt
            record.key = key
            record.value = value
            record.checksum = None
            record.serialized_key_size = key_size
            record.serialized_value_size = value_size
            record.headers = headers
            append(record)
    return pos, prev


def _learn_record(
    buf: bytes,
    start: int,
    end: int,
    key: bytes | None,
    value: bytes | None,
    headers: tuple[tuple[str, bytes | None], ...],
    known: Any,
) -> None:
    """Note or learn the layout of the body of the valid record ``buf[start:end]``.

    ``start`` is the record's attributes byte; ``key``, ``value`` and ``headers`` are
    what the general path decoded from it; ``known`` is the layout whose check this
    record failed, or ``None`` when it had none or did not look it up.
    """
    _, start = read_varint(buf, start + 1)  # the timestamp delta
    _, start = read_varint(buf, start)  # the offset delta
    size = end - start
    layouts = _RECORD_LAYOUTS
    if known is None:
        if layouts.get(size) is not None:
            return  # learned or given up already: the record did not look it up
        first = _RECORD_SEEN.get(size)
        if first is None:
            # the first sighting: note the headers whose values may be constants
            small = len(headers) <= 2 and all(
                v is None or len(v) <= _FOLD_MAX_VALUE for _, v in headers
            )
            _RECORD_SEEN[size] = headers if small else EMPTY
            return
    elif headers and known[7]:
        first = EMPTY  # learn it again without folded values
    else:
        # Records without headers are faster through the general path.
        layouts[size] = False
        return
    layouts[size] = _record_layout(buf, start, end, key, value, headers, first) or False


def _record_layout(
    buf: bytes,
    start: int,
    end: int,
    key: bytes | None,
    value: bytes | None,
    headers: tuple[tuple[str, bytes | None], ...],
    first: tuple[tuple[str, bytes | None], ...],
) -> tuple[Any, ...] | None:
    """The layout of a record body, with the header values equal in ``first`` folded."""
    fmt = [">"]
    structure: list[bytes] = []
    # The body alternates structure pieces and variable pieces: key, value, the values
    # of the headers that are not folded.  A null key or value is an empty piece.
    piece = start
    pos = start
    for data in (key, value):
        _, pos = read_varint(buf, pos)
        size = 0 if data is None else len(data)
        fmt.append(f"{pos - piece}s{size}s")
        structure.append(buf[piece:pos])
        piece = pos = pos + size
    _, pos = read_varint(buf, pos)
    folds = len(headers) <= 2
    variable: list[int] = []
    for i, (hkey, hvalue) in enumerate(headers):
        size, pos = read_varint(buf, pos)
        _, pos = read_varint(buf, pos + size)
        if hvalue is None or (folds and i < len(first) and first[i] == (hkey, hvalue)):
            pos += 0 if hvalue is None else len(hvalue)
            continue
        variable.append(i)
        fmt.append(f"{pos - piece}s{len(hvalue)}s")
        structure.append(buf[piece:pos])
        piece = pos = pos + len(hvalue)
    if pos != end:
        return None
    if piece < end:
        fmt.append(f"{end - piece}s")
        structure.append(buf[piece:end])
    n = len(headers)
    a: Any = None
    b: Any = None
    if not variable:
        kind, b = _H_CONST, headers
    elif n == 1:
        kind, a = _H_VAR, headers[0][0]
    elif n == 2 and variable == [0]:
        kind, a, b = _H_VAR_CONST, headers[0][0], headers[1]
    elif n == 2 and variable == [1]:
        kind, a, b = _H_CONST_VAR, headers[1][0], headers[0]
    elif n == 2:
        kind, a, b = _H_VAR_VAR, headers[0][0], headers[1][0]
    elif len(variable) == n:
        kind, a = _H_ALL_VAR, tuple(k for k, _ in headers)
    else:
        return None  # null values among more than two headers
    return (
        struct.Struct("".join(fmt)).unpack_from,
        tuple(structure),
        -1 if key is None else len(key),
        -1 if value is None else len(value),
        kind,
        a,
        b,
        any(v is not None and i not in variable for i, (_, v) in enumerate(headers)),
    )


def _headers(
    buf: bytes, pos: int, rec_end: int, offset: int
) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """The header block at ``pos`` when no learned layout fits it, and the end position."""
    b = buf[pos]
    if b < 0x80 and not b & 1:
        # A few headers whose lengths fit one byte and whose keys were seen before;
        # anything else goes to _read_headers, which checks it all.
        hkeys = _HEADER_KEYS
        p = pos + 1
        found: list[tuple[str, bytes | None]] = []
        for _ in range(b >> 1):
            if p >= rec_end:
                break
            c = buf[p]
            if c >= 0x80 or c & 1:
                break
            q = p + 1 + (c >> 1)
            hkey = hkeys.get(buf[p + 1 : q])
            if hkey is None:
                break
            c = buf[q]
            if c == 1:
                found.append((hkey, None))
                p = q + 1
            elif c >= 0x80 or c & 1:
                break
            else:
                p = q + 1 + (c >> 1)
                found.append((hkey, buf[q + 1 : p]))
        else:
            if p <= rec_end:
                headers = tuple(found)
                if p == rec_end:
                    _learn_layout(buf, pos, rec_end, headers)
                return headers, p
    headers, end = _read_headers(buf, pos, rec_end, offset)
    if end == rec_end:
        _learn_layout(buf, pos, rec_end, headers)
    return headers, end


def _read_headers(
    buf: bytes, pos: int, rec_end: int, offset: int
) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = read_varint(buf, pos)
    if count < 0 or count * 2 > rec_end - pos:
        raise _Corrupt(f"record at offset {offset} has an invalid header count {count}")
    headers = []
    for _ in range(count):
        size, pos = read_varint(buf, pos)
        if size < 0 or size > rec_end - pos:
            raise _Corrupt(f"record at offset {offset} has a header key of length {size}")
        raw = buf[pos : pos + size]
        key = raw.decode("utf-8", "surrogateescape")
        if len(_HEADER_KEYS) < _HEADER_KEYS_MAX:
            _HEADER_KEYS[raw] = key
        pos += size
        size, pos = read_varint(buf, pos)
        if size < 0:
            if size != -1:
                raise _Corrupt(f"record at offset {offset} has a header value of length {size}")
            value = None
        else:
            if size > rec_end - pos:
                raise _Corrupt(f"record at offset {offset} has a header value of length {size}")
            value = buf[pos : pos + size]
            pos += size
        headers.append((key, value))
    return tuple(headers), pos


def _learn_layout(
    buf: bytes, start: int, end: int, headers: tuple[tuple[str, bytes | None], ...]
) -> None:
    """Learn the layout of the valid header block ``buf[start:end]`` that holds ``headers``."""
    size = end - start
    if size in _HEADER_LAYOUTS or not 0 < len(headers) <= _LAYOUT_MAX_HEADERS:
        return
    if size not in _LAYOUT_SEEN:
        if len(_LAYOUT_SEEN) >= _HEADER_LAYOUTS_MAX * 4:
            _LAYOUT_SEEN.clear()
        _LAYOUT_SEEN.add(size)
        return
    structure = []
    fmt = [">"]
    _, pos = read_varint(buf, start)
    chunk = start
    for _key, value in headers:
        if value is None:
            return  # null values stay with the general path
        key_size, pos = read_varint(buf, pos)
        _, pos = read_varint(buf, pos + key_size)
        structure.append(buf[chunk:pos])
        fmt.append(f"{pos - chunk}s{len(value)}s")
        chunk = pos = pos + len(value)
    if pos != end:
        return
    if len(_HEADER_LAYOUTS) >= _HEADER_LAYOUTS_MAX:
        _HEADER_LAYOUTS.clear()
    keys = tuple(key for key, _ in headers)
    _HEADER_LAYOUTS[size] = (
        len(keys),
        struct.Struct("".join(fmt)).unpack_from,
        structure[0],
        structure[1] if len(structure) > 1 else b"",
        keys[0],
        keys[1] if len(keys) > 1 else "",
        tuple(structure),
        keys,
    )
