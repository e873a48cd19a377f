"""The broker processes of :class:`~rackafka.testing.KafkaCluster`: one JVM per node,
stopped by process group, and the storage tool's class in the jars."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from . import _reaper

log = logging.getLogger("rackafka.testing.kafka")


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@dataclass
class _Node:
    node_id: int
    rack: str | None
    port: int
    controller_port: int
    secure_port: int | None
    dir: Path
    proc: subprocess.Popen[bytes] | None = None
    out: IO[bytes] | None = None
    starts: int = 0
    #: Stopped with SIGSTOP (see :func:`signal_node`): it runs again at SIGCONT.
    frozen: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def log_file(self) -> Path:
        return self.dir / "logs" / "server.log"


class _Processes:
    """The JVMs of a cluster; ended at garbage collection and at exit (and by the reaper
    process if this Python process dies)."""

    def __init__(self) -> None:
        self.nodes: dict[int, _Node] = {}

    def stop(self, node: _Node, timeout: float, *, kill: bool = False) -> None:
        stop_processes([node], timeout, kill=kill)

    def stop_all(self, timeout: float = 30.0) -> None:
        stop_processes(list(self.nodes.values()), timeout)


def signal_node(node: _Node, sig: signal.Signals) -> bool:
    """Send ``sig`` to the node's process group; False when its JVM is not running."""
    if node.proc is None or node.proc.poll() is not None:
        return False
    try:
        os.killpg(node.proc.pid, sig)
    except ProcessLookupError:
        return False
    return True


def stop_processes(nodes: Sequence[_Node], timeout: float, *, kill: bool = False) -> None:
    """SIGTERM (or SIGKILL) the nodes' process groups, SIGKILL after ``timeout`` seconds.
    A frozen node gets SIGCONT after the signal, so that a SIGTERM is acted on."""
    live = [n for n in nodes if n.proc is not None]
    for n in live:
        assert n.proc is not None
        signal_node(n, signal.SIGKILL if kill else signal.SIGTERM)
        if n.frozen:
            signal_node(n, signal.SIGCONT)
            n.frozen = False
    deadline = time.monotonic() + timeout
    for n in live:
        assert n.proc is not None
        try:
            n.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("broker %d did not stop in %.0f s: killing it", n.node_id, timeout)
            try:
                os.killpg(n.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            n.proc.wait()
        _reaper.forget(n.proc.pid)
        n.proc = None
        if n.out is not None:
            n.out.close()
            n.out = None
