"""Offset ranges of the ``rackafka`` Spark source: which records each Spark task reads.

The pure functions here (ranges, splitting, rate limiting, the JSON offsets kept in Spark's
checkpoint) need neither Spark nor a broker; :func:`describe` asks the cluster for the
partitions and their earliest and latest offsets with rackafka's consumer.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from rackafka.errors import KafkaError
from rackafka.spark.options import EARLIEST, LATEST, InvalidOptionError, OffsetSpec, SourceOptions
from rackafka.structs import TopicPartition

__all__ = [
    "DataLossError",
    "OffsetRange",
    "Snapshot",
    "describe",
    "group_ranges",
    "limit_range_size",
    "offsets_behind_latest",
    "offsets_from_json",
    "offsets_to_json",
    "plan_ranges",
    "rate_limit",
    "resolve_offsets",
    "split_ranges",
]

log = logging.getLogger("rackafka.spark")

Offsets = dict[TopicPartition, int]


class DataLossError(KafkaError):
    """Records the query should read are gone (retention, deletion, a truncated log).

    Raised when ``failOnDataLoss`` is ``true`` (the default); with ``false`` the source
    logs a warning and goes on from the earliest offset still there.
    """


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one partition, read by one Spark task.

    ``start`` may be :data:`~rackafka.spark.options.EARLIEST` for a partition that
    appeared after the previous micro-batch: the task starts at its earliest offset.
    """

    topic: str
    partition: int
    start: int
    end: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        """Number of offsets in the range (0 when ``start`` is not known yet)."""
        return self.end - self.start if self.start >= 0 else 0


@dataclass(frozen=True)
class Snapshot:
    """The partitions a query reads and their earliest and latest offsets, at one moment."""

    earliest: Mapping[TopicPartition, int]
    latest: Mapping[TopicPartition, int]
    #: Answers to look-ups by timestamp: ``(partition, timestamp)`` to the offset of the
    #: first record at or after the timestamp, ``None`` when there is none.
    by_time: Mapping[tuple[TopicPartition, int], int | None] = field(default_factory=dict)


# -- the offsets kept in Spark's checkpoint ----------------------------------------------


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{"topic": {"0": 42, ...}, ...}``: the offsets as Spark's Kafka source writes them."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def offsets_from_json(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    """The inverse of :func:`offsets_to_json`.

    Raises:
        ValueError: ``data`` is not offsets per partition (a checkpoint of another source).
    """
    out: Offsets = {}
    try:
        for topic, parts in data.items():
            for p, off in parts.items():
                out[TopicPartition(str(topic), int(p))] = int(off)
    except (AttributeError, TypeError, ValueError):
        raise ValueError(f"not offsets per partition of the rackafka source: {data!r}") from None
    return out


# -- ranges ---------------------------------------------------------------------------------


def resolve_offsets(
    spec: OffsetSpec, snapshot: Snapshot, option: str, missing_time: str = "latest"
) -> Offsets:
    """The offset of every partition of ``snapshot`` that ``spec`` names.

    ``-2`` and ``-1`` in JSON offsets become the earliest and latest offsets. A timestamp
    becomes the offset of the first record at or after it (looked up by :func:`describe`);
    where there is none, ``missing_time`` decides: ``"latest"`` takes the latest offset,
    ``"error"`` raises (``startingOffsetsByTimestampStrategy``).

    Raises:
        InvalidOptionError: JSON offsets or timestamps that miss partitions of the query,
            or name partitions that do not exist; a timestamp after the last record of a
            partition with ``missing_time="error"``.
    """
    if spec.kind == "earliest":
        return dict(snapshot.earliest)
    if spec.kind == "latest":
        return dict(snapshot.latest)
    if spec.kind == "timestamp":
        wanted = {tp: spec.timestamp or 0 for tp in snapshot.latest}
    else:
        wanted = {TopicPartition(t, p): off for (t, p), off in spec.offsets.items()}
    unknown = sorted(set(wanted) - set(snapshot.latest))
    if unknown:
        raise InvalidOptionError(
            f"option {option} names partitions that do not exist or are not read by the "
            "query: " + ", ".join(f"{tp.topic}-{tp.partition}" for tp in unknown)
        )
    missing = sorted(set(snapshot.latest) - set(wanted))
    if missing:
        raise InvalidOptionError(
            f"option {option} must give a {'timestamp' if spec.by_time else 'offset (or -2/-1)'}"
            " for every partition the query reads; missing: "
            + ", ".join(f"{tp.topic}-{tp.partition}" for tp in missing)
        )
    out: Offsets = {}
    for tp, off in wanted.items():
        if spec.by_time:
            out[tp] = _offset_at(tp, off, snapshot, option, missing_time)
        elif off == EARLIEST:
            out[tp] = snapshot.earliest[tp]
        elif off == LATEST:
            out[tp] = snapshot.latest[tp]
        else:
            out[tp] = off
    return out


def _offset_at(
    tp: TopicPartition, timestamp: int, snapshot: Snapshot, option: str, missing_time: str
) -> int:
    if (tp, timestamp) not in snapshot.by_time:
        raise ValueError(f"{tp.topic}-{tp.partition} was not looked up at {timestamp}")
    found = snapshot.by_time[(tp, timestamp)]
    if found is not None:
        # Under read_committed the latest offset is the last stable one: not beyond it.
        return max(snapshot.earliest[tp], min(found, snapshot.latest[tp]))
    if missing_time == "error":
        raise InvalidOptionError(
            f"option {option}: {tp.topic}-{tp.partition} has no record at or after "
            f"timestamp {timestamp}; set startingOffsetsByTimestampStrategy to 'latest' to "
            "start such partitions at their latest offset"
        )
    return snapshot.latest[tp]


def plan_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int] | None,
    fail_on_data_loss: bool,
) -> list[OffsetRange]:
    """The non-empty ranges ``[start, end)`` of every partition in ``end``.

    A partition of ``end`` missing from ``start`` is new and starts at its earliest offset.
    With ``earliest`` known, a start below it (records removed by retention) or an end
    below the start (a truncated or re-created partition) is data loss, and so is a
    partition of ``start`` that is gone from ``end``.

    Raises:
        DataLossError: records are gone and ``fail_on_data_loss`` is true.
    """
    ranges: list[OffsetRange] = []
    for tp in sorted(set(start) - set(end)):
        _data_loss(
            fail_on_data_loss,
            f"partition {tp.topic}-{tp.partition} is gone (deleted topic or partition); "
            f"its records from offset {start[tp]} on were not read",
        )
    for tp in sorted(end):
        stop = end[tp]
        first = start.get(tp, EARLIEST)
        if first == EARLIEST and earliest is not None and tp in earliest:
            first = earliest[tp]
        if first >= 0 and earliest is not None and tp in earliest and first < earliest[tp]:
            _data_loss(
                fail_on_data_loss,
                f"offsets {first} to {earliest[tp] - 1} of {tp.topic}-{tp.partition} are "
                "gone (retention or deleted records)",
            )
            first = earliest[tp]
        if first >= 0 and stop < first:
            _data_loss(
                fail_on_data_loss,
                f"{tp.topic}-{tp.partition} ends at offset {stop}, before offset {first} "
                "where reading was to start (truncated or re-created partition)",
            )
            first = earliest.get(tp, EARLIEST) if earliest is not None else EARLIEST
            if first >= 0 and stop < first:
                continue
        if first == EARLIEST or stop > first:
            ranges.append(OffsetRange(tp.topic, tp.partition, first, stop))
    return ranges


def _data_loss(fail: bool, message: str) -> None:
    if fail:
        raise DataLossError(
            f"{message}. Set the option failOnDataLoss to false to go on without them."
        )
    log.warning("%s; going on as failOnDataLoss is false", message)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Split big ranges so that there are at least ``min_partitions`` tasks.

    Each range gets a number of pieces in proportion to its size (at least one); the
    pieces of a range are contiguous and together cover it exactly.
    """
    if not min_partitions or len(ranges) >= min_partitions:
        return list(ranges)
    total = sum(r.size for r in ranges)
    if total == 0:
        return list(ranges)
    counts = [
        max(1, min(r.size, round(min_partitions * r.size / total))) if r.size else 1 for r in ranges
    ]
    # Rounding may leave fewer pieces than asked for: split the biggest pieces further.
    splittable = [(-r.size / n, i) for i, (r, n) in enumerate(zip(ranges, counts)) if n < r.size]
    heapq.heapify(splittable)
    missing = min_partitions - sum(counts)
    while missing > 0 and splittable:
        _, i = heapq.heappop(splittable)
        counts[i] += 1
        missing -= 1
        if counts[i] < ranges[i].size:
            heapq.heappush(splittable, (-ranges[i].size / counts[i], i))
    out: list[OffsetRange] = []
    for r, pieces in zip(ranges, counts):
        out.extend(_pieces(r, pieces))
    return out


def _pieces(r: OffsetRange, pieces: int) -> list[OffsetRange]:
    """``r`` cut into ``pieces`` contiguous ranges whose sizes differ by one at most."""
    if pieces <= 1:
        return [r]
    step, extra = divmod(r.size, pieces)
    out = []
    at = r.start
    for i in range(pieces):
        length = step + (1 if i < extra else 0)
        out.append(OffsetRange(r.topic, r.partition, at, at + length))
        at += length
    return out


def limit_range_size(ranges: list[OffsetRange], max_records: int | None) -> list[OffsetRange]:
    """Split every range bigger than ``max_records`` offsets (``maxRecordsPerPartition``)
    into contiguous pieces of at most ``max_records``."""
    if not max_records:
        return list(ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        out.extend(_pieces(r, -(-r.size // max_records)) if r.size > max_records else [r])
    return out


def group_ranges(
    ranges: list[OffsetRange], offsets_per_task: int, min_tasks: int | None = None
) -> list[tuple[OffsetRange, ...]]:
    """Put the ranges into tasks: each task reads its ranges with one consumer.

    A Spark task has a fixed cost (tens of milliseconds for a Python source), so small
    ranges are read together: there are ``ceil(total offsets / offsets_per_task)`` tasks,
    at least ``min_tasks`` and at least as many as the pieces of the most split partition,
    at most one per range. The pieces of one partition go to different tasks; partitions
    are dealt biggest first to the tasks with the fewest offsets so far. Every range is in
    exactly one task. ``O(n log n)`` in the number of ranges.
    """
    if not ranges:
        return []
    by_tp: dict[TopicPartition, list[OffsetRange]] = {}
    for r in ranges:
        by_tp.setdefault(r.tp, []).append(r)
    total = sum(max(r.size, 1) for r in ranges)
    wanted = max(
        -(-total // max(1, offsets_per_task)),
        min_tasks or 1,
        max(len(pieces) for pieces in by_tp.values()),
    )
    count = min(len(ranges), wanted)
    tasks: list[list[OffsetRange]] = [[] for _ in range(count)]
    heap = [(0, t) for t in range(count)]  # (offsets so far, task), least loaded first
    groups = sorted(
        by_tp.values(), key=lambda g: (-max(max(r.size, 1) for r in g), g[0].topic, g[0].partition)
    )
    for pieces in groups:
        pieces.sort(key=lambda r: -max(r.size, 1))
        # The len(pieces) least loaded tasks, one piece each: all different tasks.
        taken = [heapq.heappop(heap) for _ in pieces]
        for (load, t), r in zip(taken, pieces):
            tasks[t].append(r)
            heapq.heappush(heap, (load + max(r.size, 1), t))
    return [
        tuple(sorted(task, key=lambda x: (x.topic, x.partition, x.start))) for task in tasks if task
    ]


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int
) -> Offsets:
    """End offsets that admit at most ``max_rows`` offsets past ``start`` in all.

    Each partition gets a share in proportion to how far behind it is (largest remainders
    first, so the shares add up to ``max_rows`` exactly and every trigger makes progress).
    A partition missing from ``start`` must be given its earliest offset there.
    """
    lag = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(lag.values())
    if total <= max_rows:
        return dict(latest)
    shares: dict[TopicPartition, int] = {}
    remainders: list[tuple[int, TopicPartition]] = []
    for tp, behind in lag.items():
        # Integer arithmetic: a float quotient can round up and admit too much.
        share, rest = divmod(max_rows * behind, total)
        shares[tp] = share
        remainders.append((rest, tp))
    left = max_rows - sum(shares.values())
    for _frac, tp in sorted(remainders, key=lambda x: (-x[0], x[1]))[:left]:
        shares[tp] += 1
    out: Offsets = {}
    for tp in latest:
        base = start.get(tp, latest[tp])
        out[tp] = base + min(lag[tp], shares[tp]) if lag[tp] else latest[tp]
    return out


def offsets_behind_latest(
    consumed: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int]
) -> dict[str, str]:
    """Spark's Kafka source metrics: how many offsets each partition is behind its latest.

    ``avgOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and ``minOffsetsBehindLatest``
    over the partitions of ``latest`` (a partition missing from ``consumed`` is behind by
    all of it), as strings as Spark reports them; empty when there is no partition.
    """
    behind = [max(0, off - consumed.get(tp, 0)) for tp, off in latest.items()]
    if not behind:
        return {}
    return {
        "avgOffsetsBehindLatest": str(float(sum(behind)) / len(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
        "minOffsetsBehindLatest": str(min(behind)),
    }


# -- asking the cluster ----------------------------------------------------------------------


async def describe(opts: SourceOptions, times: Sequence[OffsetSpec | None] = ()) -> Snapshot:
    """The partitions the query reads, with their earliest and latest offsets.

    ``subscribe``: the partitions of the listed topics that exist (a topic that does not
    exist yet has none); ``subscribePattern``: of every topic whose whole name matches;
    ``assign``: exactly the listed partitions, which must exist. Under ``read_committed``
    the latest offset is the last stable offset. The timestamps of the specs in ``times``
    that look up offsets by time are looked up too (:attr:`Snapshot.by_time`).

    Retries ``fetchOffset.numRetries`` times, ``fetchOffset.retryIntervalMs`` apart.

    Raises:
        InvalidOptionError: ``assign`` names partitions that do not exist.
        KafkaError: the cluster could not be asked, after the retries.
    """
    attempt = 0
    while True:
        try:
            return await _describe_once(opts, [s for s in times if s is not None and s.by_time])
        except KafkaError as exc:
            if isinstance(exc, InvalidOptionError) or attempt >= opts.offset_retries:
                raise
            attempt += 1
            log.warning(
                "offset look-up failed (%s); retry %d of %d in %d ms",
                exc,
                attempt,
                opts.offset_retries,
                opts.offset_retry_interval_ms,
            )
            await asyncio.sleep(opts.offset_retry_interval_ms / 1000)


async def _describe_once(opts: SourceOptions, times: list[OffsetSpec]) -> Snapshot:
    from rackafka.consumer.consumer import AIOKafkaConsumer

    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=opts.bootstrap_servers,
        enable_auto_commit=False,
        **opts.consumer_kwargs(),
    )
    await consumer.start()
    try:
        topics = await consumer.topics()
        tps = _partitions(opts, topics, consumer.partitions_for_topic)
        if not tps:
            return Snapshot({}, {})
        earliest = await consumer.beginning_offsets(tps)
        latest = await consumer.end_offsets(tps)
        by_time: dict[tuple[TopicPartition, int], int | None] = {}
        for spec in times:
            wanted = {
                TopicPartition(t, p): ts
                for (t, p), ts in spec.timestamps((tp.topic, tp.partition) for tp in tps).items()
            }
            if wanted:
                found = await consumer.offsets_for_times(wanted)
                for tp, ts in wanted.items():
                    hit = found.get(tp)
                    by_time[(tp, ts)] = hit.offset if hit is not None else None
        return Snapshot(earliest, latest, by_time)
    finally:
        await consumer.stop()


def _partitions(
    opts: SourceOptions, topics: Iterable[str], lookup: Callable[[str], set[int] | None]
) -> list[TopicPartition]:
    names: list[str]
    if opts.strategy == "assign":
        out: list[TopicPartition] = []
        missing: list[str] = []
        for topic, p in opts.assigned:
            parts = lookup(topic) or set()
            if p in parts:
                out.append(TopicPartition(topic, p))
            else:
                missing.append(f"{topic}-{p}")
        if missing:
            raise InvalidOptionError(
                "option assign names partitions that do not exist: " + ", ".join(missing)
            )
        return out
    if opts.strategy == "subscribe":
        names = [t for t in opts.topics if t in set(topics)]
    else:
        rx = re.compile(opts.pattern or "")
        names = sorted(t for t in topics if rx.fullmatch(t))
    return [TopicPartition(t, p) for t in names for p in sorted(lookup(t) or ())]
