"""The native side of :class:`~rackafka.testing.EmbeddedCluster`: librdkafka's mock
cluster handles, the calls into it, and the partition records kept beside it."""

from __future__ import annotations

import socket
import threading
import time
import weakref
from typing import Any

from ._base import (
    EmbeddedClusterError,
    PartitionInfo,
    _BrokerLayoutMixin,
    _ClientMixin,
    _StatefulLifecycle,
)
from ._clients import ClientPool
from ._librdkafka import Librdkafka, mock_clock_kind


def _clock_offset() -> float:
    """Seconds to add to a librdkafka ``rd_clock()`` reading to get ``time.monotonic()``."""
    kind = mock_clock_kind()
    if kind == "wall":  # pragma: no cover - macOS
        return time.monotonic() - time.time()
    if kind == "perf_counter":  # pragma: no cover - Windows
        return time.monotonic() - time.perf_counter()
    return 0.0


class _Nudger:
    """Wakes the mock cluster's thread when a control call waits on it for too long.

    librdkafka's mock thread can miss the wake-up of a control operation that arrives while
    it is finishing a loop iteration (about one call in ten when calls come back to back);
    the operation then waits for the thread's 1 s poll timeout. A TCP connect to a broker's
    listener wakes the thread, so a helper thread connects once a call has waited 5 ms.
    """

    def __init__(self, handles: _Handles) -> None:
        self._handles = weakref.ref(handles)
        self._cv = threading.Condition()
        self._pending = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    def __enter__(self) -> None:
        with self._cv:
            self._pending += 1
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="rackafka-mock-nudger", daemon=True
                )
                self._thread.start()
            self._cv.notify()

    def __exit__(self, *exc: object) -> None:
        with self._cv:
            self._pending -= 1

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._pending == 0 and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                self._cv.wait(0.005)
                if self._closed:
                    return
                # A call still pending after 5 ms is most likely stalled; a spurious
                # connect is harmless.
                poke = self._pending > 0
            if poke:
                self._poke()

    def _poke(self) -> None:
        handles = self._handles()
        if handles is None:
            return
        for node_id, address in list(handles.addresses.items()):
            if node_id in handles.down:
                continue
            try:
                socket.create_connection(address, timeout=0.5).close()
                return
            except OSError:
                continue


class _Handles:
    """The native handles and clients of one cluster; destroyed exactly once.

    Kept apart from :class:`EmbeddedCluster` so that a ``weakref.finalize`` can destroy
    them (at garbage collection or interpreter exit) without referencing the cluster.
    """

    def __init__(self, lib: Librdkafka) -> None:
        self.lib = lib
        self.rk = 0
        self.mc = 0
        self.clients: ClientPool | None = None
        self.addresses: dict[int, tuple[str, int]] = {}
        self.down: set[int] = set()
        self.nudger = _Nudger(self)
        self._lock = threading.Lock()

    def destroy(self) -> None:
        with self._lock:
            clients, self.clients = self.clients, None
            mc, self.mc = self.mc, 0
            rk, self.rk = self.rk, 0
        # Clients first, so that none of them is left talking to brokers that vanish.
        if clients is not None:
            clients.close()
        if mc:
            with self.nudger:  # the terminate operation can stall like any control call
                self.lib.cluster_destroy(mc)
        self.nudger.close()
        if rk:
            self.lib.destroy_handle(rk)


class _MockCore(_BrokerLayoutMixin, _ClientMixin, _StatefulLifecycle):
    """The state and native calls the embedded cluster's methods share."""

    _lib: Librdkafka
    _handles: _Handles
    _lock: threading.RLock
    _state: str
    _broker_count: int
    _partitions: dict[str, list[PartitionInfo]]
    _selector: tuple[str, frozenset[str] | None, bool] | None
    _original_versions: dict[int, tuple[int, int]]
    _down: set[int]
    _front: Any

    def _mc(self) -> int:
        if self._state != "running" or not self._handles.mc:
            raise RuntimeError(
                "the EmbeddedCluster is not running: call start() or use it as a context manager"
            )
        return self._handles.mc

    def _clients(self) -> ClientPool:
        self._mc()
        clients = self._handles.clients
        if clients is None:
            raise RuntimeError("the EmbeddedCluster is not running")
        return clients

    def _call(self, name: str, *args: Any) -> int:
        with self._handles.nudger:
            return self._lib.call(name, *args)

    def _call_void(self, name: str, *args: Any) -> None:
        with self._handles.nudger:
            self._lib.call_void(name, *args)

    def _check(self, err: int, what: str) -> None:
        if err:
            raise EmbeddedClusterError(
                f"{what} failed: {self._lib.err2name(err)}: {self._lib.err2str(err)}", err
            )

    def _partition(self, topic: str, partition: int) -> PartitionInfo:
        parts = self._partitions.get(topic)
        if parts is None:
            parts = self._learn_topic(topic)
        if not isinstance(partition, int) or not 0 <= partition < len(parts):
            raise ValueError(
                f"topic {topic!r} has partitions 0..{len(parts) - 1}, not {partition!r}"
            )
        return parts[partition]

    def _set_partition(self, info: PartitionInfo) -> None:
        self._partitions[info.topic][info.partition] = info

    def _learn_topic(self, topic: str) -> list[PartitionInfo]:
        """Cache a topic that was created outside :meth:`create_topic` (auto-creation)."""
        tmd = self._clients().metadata(self._metadata_timeout).topics.get(topic)
        if tmd is None or tmd.error is not None or not tmd.partitions:
            raise KeyError(f"unknown topic {topic!r}")
        parts = [
            PartitionInfo(
                topic,
                p,
                tmd.partitions[p].leader,
                tuple(tmd.partitions[p].replicas),
                # A topic created by the mock itself starts at epoch 0.
                0,
            )
            for p in sorted(tmd.partitions)
        ]
        self._partitions[topic] = parts
        return parts

    def _require_running(self) -> None:
        self._mc()
