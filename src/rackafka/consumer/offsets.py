"""Finding offsets: committed offsets, resets (ListOffsets) and KIP-320 validation.

A partition without a position starts from the group's committed offset (with a
``group_id``) or from ``auto_offset_reset``, looked up on its leader with ListOffsets; after
a leader change a position is checked against the new leader's log (OffsetForLeaderEpoch,
KIP-320). Lookups run as tasks beside the fetch loop, at most one per leader (and one for
the committed offsets); :meth:`OffsetLookups.start` is called by the loop on every turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from rackafka._backoff import BackoffPolicy
from rackafka.client import KafkaClient
from rackafka.consumer.fetch_state import FetchState, PartitionFetch
from rackafka.errors import (
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    UnsupportedVersionError,
    for_code,
    is_invalid_metadata,
    is_retriable,
)
from rackafka.protocol.apis.list_offsets import LIST_OFFSETS
from rackafka.protocol.apis.offset_for_leader_epoch import OFFSET_FOR_LEADER_EPOCH
from rackafka.structs import TopicPartition
from rackafka.subscription import COMMITTED, NONE, RESET_TIMESTAMPS, PartitionState

__all__ = ["OffsetLookups"]

log = logging.getLogger("rackafka.consumer.fetcher")


class OffsetLookups:
    """Positions for partitions that have none, and their validation after leader moves.

    Arguments:
        fs: the fetcher's shared state.
        client: the cluster client.
        isolation_level: of ListOffsets (0 read_uncommitted, 1 read_committed).
        idle: the longest wait of the fetch loop, in seconds.
    """

    def __init__(
        self, fs: FetchState, client: KafkaClient, *, isolation_level: int, idle: float
    ) -> None:
        self._fs = fs
        self._client = client
        self._cluster = client.cluster
        self._isolation = isolation_level
        self._idle = idle
        self._retry: BackoffPolicy = fs.retry
        self._committed_backoff = fs.retry.start()
        #: Looks up committed offsets (set by the consumer when it has a group_id).
        self.committed_lookup: Callable[[list[TopicPartition]], Awaitable[Any]] | None = None

    def tasks(self) -> list[asyncio.Task[None]]:
        """The lookups running."""
        out = [b.lookup for b in self._fs.brokers.values() if b.lookup is not None]
        if self._fs.committed_lookup is not None:
            out.append(self._fs.committed_lookup)
        return out

    def start(self, now: float) -> float:
        """Start the lookups that partitions need now; the time the loop must look again."""
        fs = self._fs
        deadline = now + self._idle
        resets: dict[int, dict[PartitionFetch, str]] = {}
        validations: dict[int, list[PartitionFetch]] = {}
        committed: list[PartitionFetch] = []
        for part in fs.sync().values():
            state = part.state
            if part.lookup or (state.error is not None and state.reset != NONE):
                continue  # looked up now, or an error to raise first
            retry_at = part.backoff.until
            if retry_at > now:
                deadline = min(deadline, retry_at)
                continue
            if state.reset == COMMITTED:
                if self.committed_lookup is None:
                    state.request_reset(fs.subs.default_reset)
                else:
                    committed.append(part)
                    continue
            wants_reset = state.reset is not None and state.reset != NONE
            if state.reset == NONE and state.error is None:
                # No position and auto_offset_reset="none" (aiokafka raises this too).
                tp = part.tp
                fs.fail(
                    state,
                    NoOffsetForPartitionError(
                        f"{tp.topic}-{tp.partition} has no position and auto_offset_reset "
                        "is 'none': seek() to an offset first"
                    ),
                )
                continue
            if not wants_reset and not state.awaiting_validation:
                continue
            leader = self._cluster.leader_for(part.tp)
            if leader is None or self._cluster.broker(leader) is None:
                self._client.request_update()
                continue
            broker = fs.broker(leader)
            if broker.backing_off(now):
                deadline = min(deadline, broker.backoff.until)
                continue
            if wants_reset:
                resets.setdefault(leader, {})[part] = state.reset  # type: ignore[assignment]
            else:
                validations.setdefault(leader, []).append(part)
        if committed and fs.committed_lookup is None:
            fs.committed_tps = self._mark([p.tp for p in committed])
            fs.committed_lookup = asyncio.ensure_future(self._committed(fs.committed_tps))
        for leader, wanted in resets.items():
            broker = fs.broker(leader)
            if broker.lookup is None:
                strategies = {p.tp: s for p, s in wanted.items()}
                broker.lookup_tps = self._mark(list(strategies))
                broker.lookup = asyncio.ensure_future(self._reset(leader, strategies))
        for leader, parts in validations.items():
            broker = fs.broker(leader)
            if broker.lookup is None:
                broker.lookup_tps = self._mark([p.tp for p in parts])
                broker.lookup = asyncio.ensure_future(
                    self._validate(leader, [p.state for p in parts])
                )
        return deadline

    def _mark(self, tps: list[TopicPartition]) -> tuple[TopicPartition, ...]:
        parts = self._fs.parts
        for tp in tps:
            parts[tp].lookup = True
        return tuple(tps)

    def _done(self, leader: int | None, tps: Any) -> None:
        fs = self._fs
        if leader is None:
            fs.committed_lookup = None
            fs.committed_tps = ()
        else:
            broker = fs.broker(leader)
            broker.lookup = None
            broker.lookup_tps = ()
        parts = fs.parts
        for tp in tps:
            part = parts.get(tp)
            if part is not None:
                part.lookup = False
        fs.wakeup_event.set()

    async def _committed(self, tps: tuple[TopicPartition, ...]) -> None:
        """Positions from the group's committed offsets, else ``auto_offset_reset``."""
        assert self.committed_lookup is not None
        subs = self._fs.subs
        try:
            found = await self.committed_lookup(list(tps))
            for tp in tps:
                state = subs.state(tp)
                if state is None or state.reset != COMMITTED:
                    continue
                meta = found.get(tp)
                if meta is not None and meta.offset >= 0:
                    log.debug(
                        "%s-%d starts at committed offset %d", tp.topic, tp.partition, meta.offset
                    )
                    state.set_position(meta.offset)
                else:
                    state.request_reset(subs.default_reset)
            self._committed_backoff.reset()
        except KafkaError as exc:
            if not _retriable(exc):
                # GROUP_AUTHORIZATION_FAILED and the like: every poll raises it (the
                # lookup is tried again after the backoff), never a silent stall.
                log.error("committed offsets lookup failed: %s", exc)
                for tp in tps:
                    state = subs.state(tp)
                    if state is not None and state.reset == COMMITTED:
                        self._fs.fail(state, exc)
            else:
                log.debug("committed offsets lookup failed: %s", exc)
            await asyncio.sleep(self._committed_backoff.next())
        finally:
            self._done(None, tps)

    async def _reset(self, leader: int, tps: dict[TopicPartition, str]) -> None:
        done = 0
        subs = self._fs.subs
        try:
            timestamps = {tp: RESET_TIMESTAMPS[s] for tp, s in tps.items()}
            failed: dict[TopicPartition, KafkaError] = {}
            results = await self.list_offsets_from(leader, timestamps, errors=failed)
            for tp, (offset, _ts, epoch) in results.items():
                state = subs.state(tp)
                if state is None or state.reset != tps[tp]:
                    continue  # unassigned or reset/seeked again meanwhile
                if offset < 0:
                    log.warning(
                        "%s-%d: ListOffsets from node %d gave offset %d; retrying",
                        tp.topic,
                        tp.partition,
                        leader,
                        offset,
                    )
                    continue
                log.debug("reset %s-%d to offset %d (%s)", tp.topic, tp.partition, offset, tps[tp])
                state.set_position(offset, -1)
                state.validated_epoch = epoch
                done += 1
            for tp, error in failed.items():
                state = subs.state(tp)
                if state is not None and state.reset == tps[tp] and state.error is None:
                    self._fs.fail(state, error)  # raised by the next poll, then retried
        except KafkaError as exc:
            log.debug("offset reset via node %d failed: %s", leader, exc)
            if not _retriable(exc):
                for tp in tps:
                    state = subs.state(tp)
                    if state is not None and state.reset == tps[tp] and state.error is None:
                        self._fs.fail(state, exc)
            self._client.request_update()
        finally:
            # Back off from the leader after a lookup that did not give every answer,
            # longer on failures in a row.
            backoff = self._fs.broker(leader).backoff
            if done < len(tps):
                backoff.next()
            else:
                backoff.reset()
            self._done(leader, tps)

    async def _validate(self, leader: int, states: list[PartitionState]) -> None:
        """KIP-320: check positions against the leader's log after a leader change."""
        tps = [s.tp for s in states]
        fs = self._fs
        try:
            version = await self._client.api_version(leader, OFFSET_FOR_LEADER_EPOCH)
            topics: dict[str, list[dict[str, int]]] = {}
            sent: dict[TopicPartition, tuple[int | None, int]] = {}
            for s in states:
                info = self._cluster.partition(s.tp)
                current = info.leader_epoch if info is not None else -1
                sent[s.tp] = (s.position, current)
                topics.setdefault(s.tp.topic, []).append(
                    {
                        "partition": s.tp.partition,
                        "current_leader_epoch": current,
                        "leader_epoch": s.position_epoch,
                    }
                )
            request = OFFSET_FOR_LEADER_EPOCH.Request(
                replica_id=-1,
                topics=[{"topic": t, "partitions": p} for t, p in topics.items()],
            )
            response = await self._client.send(
                leader, OFFSET_FOR_LEADER_EPOCH, request, version=version
            )
            for t in response.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.topic, p.partition)
                    state = fs.subs.state(tp)
                    if state is None or tp not in sent or state.position != sent[tp][0]:
                        continue
                    if p.error_code:
                        err = for_code(p.error_code)
                        if is_invalid_metadata(err):
                            self._client.request_update()
                        if is_retriable(err) or is_invalid_metadata(err):
                            fs.broker(leader).failed(time.monotonic())
                        else:
                            state.awaiting_validation = False  # cannot validate: go on
                        continue
                    state.awaiting_validation = False
                    state.validated_epoch = sent[tp][1]
                    position = state.position
                    if position is not None and 0 <= p.end_offset < position:
                        log.warning(
                            "log truncation detected on %s-%d: position %d is past the end "
                            "offset %d of epoch %d; continuing from %d",
                            tp.topic,
                            tp.partition,
                            position,
                            p.end_offset,
                            p.leader_epoch,
                            p.end_offset,
                        )
                        part = fs.parts.get(tp)
                        if part is not None:
                            fs.drop_buffered(part)
                        state.set_position(p.end_offset, p.leader_epoch)
        except UnsupportedVersionError:
            for s in states:
                s.awaiting_validation = False
        except KafkaError as exc:
            log.debug("offset validation via node %d failed: %s", leader, exc)
            fs.broker(leader).failed(time.monotonic())
        finally:
            self._done(leader, tps)

    async def list_offsets_from(
        self,
        leader: int,
        timestamps: dict[TopicPartition, int],
        *,
        errors: dict[TopicPartition, KafkaError] | None = None,
    ) -> dict[TopicPartition, tuple[int, int, int]]:
        """ListOffsets to one leader: ``tp -> (offset, timestamp, leader_epoch)``.

        Partitions with a retriable error are left out of the result (the
        caller retries); a non-retriable one raises, or goes into ``errors``
        when it is given.
        """
        version = await self._client.api_version(leader, LIST_OFFSETS)
        topics: dict[str, list[dict[str, int]]] = {}
        for tp, ts in timestamps.items():
            info = self._cluster.partition(tp)
            topics.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "current_leader_epoch": info.leader_epoch if info is not None else -1,
                    "timestamp": ts,
                }
            )
        request = LIST_OFFSETS.Request(
            replica_id=-1,
            isolation_level=self._isolation,
            topics=[{"name": t, "partitions": p} for t, p in topics.items()],
        )
        response = await self._client.send(leader, LIST_OFFSETS, request, version=version)
        out: dict[TopicPartition, tuple[int, int, int]] = {}
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.error_code:
                    err = for_code(p.error_code)
                    if is_invalid_metadata(err) or is_retriable(err):
                        self._client.request_update()
                        continue
                    error = err(f"ListOffsets for {tp.topic}-{tp.partition} from node {leader}")
                    if errors is None:
                        raise error
                    errors[tp] = error
                    continue
                out[tp] = (p.offset, p.timestamp, p.leader_epoch)
        return out

    async def list_offsets(
        self, timestamps: dict[TopicPartition, int], timeout: float
    ) -> dict[TopicPartition, tuple[int, int, int]]:
        """ListOffsets for any partitions, each from its leader, retried until ``timeout``."""
        deadline = time.monotonic() + timeout
        remaining = dict(timestamps)
        out: dict[TopicPartition, tuple[int, int, int]] = {}
        backoff = self._retry.start()
        self._client.add_topics({tp.topic for tp in remaining})
        while remaining:
            by_leader: dict[int, dict[TopicPartition, int]] = {}
            missing = False
            for tp, ts in remaining.items():
                leader = self._cluster.leader_for(tp)
                if leader is None:
                    missing = True
                else:
                    by_leader.setdefault(leader, {})[tp] = ts
            try:
                results = await asyncio.wait_for(
                    asyncio.gather(
                        *(self.list_offsets_from(n, tps) for n, tps in by_leader.items()),
                        return_exceptions=True,
                    ),
                    max(0.01, deadline - time.monotonic()),
                )
            except asyncio.TimeoutError:
                raise KafkaTimeoutError(
                    f"offsets of {sorted(remaining)} not found within {timeout:.3g} s"
                ) from None
            for res in results:
                if isinstance(res, BaseException):
                    if isinstance(res, KafkaError) and _retriable(res):
                        continue
                    raise res
                out.update(res)
                for tp in res:
                    remaining.pop(tp, None)
            if not remaining:
                break
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(
                    f"offsets of {sorted(remaining)} not found within {timeout:.3g} s"
                )
            if missing or results:
                # The deadline is checked above: a refresh cut short is just retried.
                with contextlib.suppress(KafkaError, asyncio.TimeoutError):
                    await asyncio.wait_for(
                        self._client.refresh_metadata(), max(0.01, deadline - time.monotonic())
                    )
            await asyncio.sleep(max(0.0, min(backoff.next(), deadline - time.monotonic())))
        return out


def _retriable(exc: KafkaError) -> bool:
    """Whether trying again may help: retriable codes, connections, timeouts."""
    return bool(
        is_retriable(exc)
        or is_invalid_metadata(exc)
        or isinstance(exc, (KafkaTimeoutError, KafkaConnectionError))
    )
