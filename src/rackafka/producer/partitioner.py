"""Partitioners: murmur2 for keyed records (as Kafka's Java client), sticky for keyless ones.

Pure logic over partition lists (and, for the rack-aware choice, the leaders' racks);
it never touches the network.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence

__all__ = ["DefaultPartitioner", "StickyPartitioner", "murmur2", "murmur2_partition"]

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


_from_bytes = int.from_bytes
#: ``struct`` readers of ``n`` little-endian 32-bit words, by ``n`` (keys up to 255 bytes).
_WORDS = [struct.Struct(f"<{n}I").unpack_from for n in range(64)]


def murmur2(data: bytes) -> int:
    """MurmurHash2 of ``data`` as Kafka's Java client computes it (a signed 32-bit int)."""
    length = len(data)
    h = _SEED ^ length
    n4 = length >> 2
    if n4:
        words = _WORDS[n4](data) if n4 < 64 else struct.unpack_from(f"<{n4}I", data)
        for k in words:
            k = (k * _M) & _MASK
            h = ((h * _M) ^ (((k ^ (k >> 24)) * _M) & _MASK)) & _MASK
    if length & 3:
        # The 1-3 bytes left, little-endian (Java's switch on them).
        h = ((h ^ _from_bytes(data[length & ~3 :], "little")) * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2_partition(key: bytes, num_partitions: int) -> int:
    """The partition of ``key``: ``toPositive(murmur2(key)) % num_partitions`` (Java's)."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class DefaultPartitioner:
    """aiokafka's partitioner interface with Kafka's hashing.

    ``partitioner(key_bytes, all_partitions, available_partitions)`` returns the
    partition: keyed records go to ``murmur2(key)`` over *all* partitions (the same
    partition as the Java client and librdkafka's ``murmur2_random``), keyless ones to a
    random available partition.  The producer itself uses :class:`StickyPartitioner`
    for keyless records when this partitioner is in use.
    """

    def __call__(
        self,
        key: bytes | None,
        all_partitions: Sequence[int],
        available: Sequence[int],
    ) -> int:
        if key is None:
            return random.choice(available) if available else random.choice(all_partitions)
        parts = sorted(all_partitions)
        return parts[murmur2_partition(key, len(parts))]


class StickyPartitioner:
    """KIP-480: keyless records stay on one partition per topic until its batch closes.

    The producer asks :meth:`partition` for each keyless record; :meth:`batch_closed`
    (called when the batch being filled for that partition is full or sent) makes the
    next keyless record pick a new partition.  With ``rack`` set and ``rack_of`` given,
    the new partition is chosen among those whose leader is in that rack when any is
    (the rack-aware choice, KIP-1123); otherwise among the available ones.
    """

    def __init__(
        self,
        rack: str | None = None,
        rack_of: Callable[[str, int], str | None] | None = None,
    ) -> None:
        self.rack = rack
        self._rack_of = rack_of
        #: The sticky partition of each topic that has one.
        self.current: dict[str, int] = {}
        self._previous: dict[str, int] = {}

    def partition(self, topic: str, all_partitions: Sequence[int], available: Sequence[int]) -> int:
        """The sticky partition of ``topic`` (a new one if none is set)."""
        current = self.current.get(topic)
        if current is not None:
            return current
        return self._choose(topic, all_partitions, available, self._previous.get(topic))

    def batch_closed(self, topic: str, partition: int) -> None:
        """The batch of ``topic``/``partition`` can take no more records: move on."""
        if self.current.get(topic) == partition:
            del self.current[topic]
            self._previous[topic] = partition

    def on_batch_closed(self, tp: tuple[str, int]) -> None:
        """:meth:`batch_closed` for a ``(topic, partition)`` pair (the accumulator's call)."""
        self.batch_closed(tp[0], tp[1])

    def _choose(
        self,
        topic: str,
        all_partitions: Sequence[int],
        available: Sequence[int],
        previous: int | None,
    ) -> int:
        candidates = list(available) or list(all_partitions)
        if self.rack is not None and self._rack_of is not None:
            local = [p for p in candidates if self._rack_of(topic, p) == self.rack]
            if local:
                candidates = local
        if len(candidates) > 1 and previous is not None and previous in candidates:
            candidates.remove(previous)
        choice = random.choice(candidates)
        self.current[topic] = choice
        return choice
