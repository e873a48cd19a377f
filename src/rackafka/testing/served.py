"""A test cluster in a child process, driven through ``python -m rackafka.testing serve``.

:class:`ServedCluster` starts the ``serve`` command in a subprocess and speaks its line
protocol (one command per line on its stdin, one ``OK ...``/``ERR ...`` answer per line on
its stdout). The brokers, and the front that plays Kafka's ``RackAwareReplicaSelector``
(``replica_selector="rack-aware"``), then run in an interpreter of their own: a client
measured in the calling process shares its CPU time with nothing of the harness but the
machine. Which cluster the child runs is the ``serve`` command's choice (``engine``): the
same methods work with any engine that implements the commands they send.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shlex
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

from ._base import DEFAULT_RACKS, BrokerInfo, PartitionInfo, _Lifecycle, produce_arguments
from ._clients import ProduceResult

__all__ = ["ServedCluster", "ServedClusterError"]

#: Seconds to wait for the child's ``BOOTSTRAP=`` line: a cold interpreter on a busy 2-core
#: machine (or, with another engine, JVM brokers) can take a while.
DEFAULT_START_TIMEOUT = 180.0


class ServedClusterError(RuntimeError):
    """The served cluster failed to start, answered ``ERR``, or exited."""


def _partition(data: dict[str, Any]) -> PartitionInfo:
    return PartitionInfo(
        topic=data["topic"],
        partition=int(data["partition"]),
        leader=int(data["leader"]),
        replicas=tuple(int(r) for r in data["replicas"]),
        leader_epoch=data.get("leader_epoch"),
        preferred_read_replica=int(data.get("preferred_read_replica", -1)),
        follower_watermarks=tuple(data.get("follower_watermarks", (-1, -1)))[:2],
    )


def _stop(proc: subprocess.Popen[str], timeout: float) -> None:
    """Ask the child to quit, then terminate it, then kill it; never raises."""
    if proc.poll() is None and proc.stdin is not None:
        try:
            proc.stdin.write("quit\n")
            proc.stdin.flush()
        except (OSError, ValueError):
            pass
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


class ServedCluster(_Lifecycle):
    """A Kafka cluster for tests and demos, run by ``python -m rackafka.testing serve`` in a
    child process.

    Use it as a context manager (``with`` or ``async with``) or call :meth:`start` and
    :meth:`close`; the child is also stopped at garbage collection and interpreter exit.

    Arguments:
        brokers: number of brokers (``--brokers``).
        racks: rack names assigned round-robin to the brokers (``--racks``).
        topics: ``(name, partitions, replication_factor)`` created at start (``--topic``).
        replica_selector: ``"rack-aware"``: the brokers select a preferred read replica per
            client rack, as Kafka's ``RackAwareReplicaSelector`` (``--replica-selector``).
        group_initial_rebalance_delay_ms: the coordinator's delay before a new classic
            group's first rebalance.
        consumer_group_heartbeat_interval_ms: the heartbeat interval the coordinator gives
            KIP-848 members (``group.consumer.heartbeat.interval.ms``).
        consumer_group_session_timeout_ms: their session timeout.
        engine: the ``serve`` command's ``--engine`` (None: its default, the embedded
            librdkafka mock brokers).
        extra_args: more ``serve`` arguments, passed as they are.
        start_timeout: seconds to wait for the child to print its bootstrap servers.
        python: the interpreter that runs the child (default: this one).
        stderr: where the child's log lines go (default: this process's stderr).

    Raises:
        ServedClusterError: from :meth:`start` and the commands.
    """

    def __init__(
        self,
        brokers: int = 3,
        racks: Sequence[str] | None = DEFAULT_RACKS,
        *,
        topics: Sequence[tuple[str, int, int | None]] = (),
        replica_selector: str | None = None,
        group_initial_rebalance_delay_ms: int | None = None,
        consumer_group_heartbeat_interval_ms: int | None = None,
        consumer_group_session_timeout_ms: int | None = None,
        engine: str | None = None,
        extra_args: Sequence[str] = (),
        start_timeout: float = DEFAULT_START_TIMEOUT,
        python: str = sys.executable,
        stderr: Any = None,
    ) -> None:
        if isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1:
            raise ValueError(f"brokers must be an int >= 1, got {brokers!r}")
        if isinstance(racks, str):
            raise TypeError(f"racks must be a sequence of rack names, not the string {racks!r}")
        if replica_selector not in (None, "rack-aware"):
            raise ValueError(
                f"replica_selector must be 'rack-aware' or None, not {replica_selector!r}"
            )
        if start_timeout <= 0:
            raise ValueError(f"start_timeout must be > 0, got {start_timeout!r}")
        self.replica_selector = replica_selector
        self.engine = engine
        args = ["--brokers", str(brokers), "--racks", ",".join(racks or ()), "--exit-on-eof"]
        for name, partitions, rf in topics:
            args += ["--topic", f"{name}:{partitions}" + (f":{rf}" if rf is not None else "")]
        if engine is not None:
            args += ["--engine", engine]
        if replica_selector is not None:
            args += ["--replica-selector", replica_selector]
        for flag, value in (
            ("--group-initial-rebalance-delay-ms", group_initial_rebalance_delay_ms),
            ("--consumer-group-heartbeat-interval-ms", consumer_group_heartbeat_interval_ms),
            ("--consumer-group-session-timeout-ms", consumer_group_session_timeout_ms),
        ):
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"{flag[2:].replace('-', '_')} must be an int >= 0")
                args += [flag, str(value)]
        args += list(extra_args)
        self.command_line = [python, "-m", "rackafka.testing", "serve", *args]
        self.start_timeout = start_timeout
        self._stderr = stderr
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize[Any, Any] | None = None
        #: The ``KEY=VALUE`` lines the child printed at start (``BOOTSTRAP``,
        #: ``SECURITY_PROTOCOL``, ``CA_FILE``, ...).
        self.startup: dict[str, str] = {}
        self._brokers: dict[int, BrokerInfo] = {}

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> ServedCluster:
        """Start the child and wait for its bootstrap servers (does nothing when running).

        Raises:
            ServedClusterError: the child did not start within ``start_timeout``, or
                reported why it could not.
        """
        if self._proc is not None:
            if self._proc.poll() is None:
                return self
            raise ServedClusterError("this ServedCluster was closed; create a new one")
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        proc = subprocess.Popen(
            self.command_line,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
            env=env,
        )
        self._proc = proc
        self._finalizer = weakref.finalize(self, _stop, proc, 10.0)
        threading.Thread(
            target=self._pump, args=(proc, self._lines), name="served-cluster-stdout", daemon=True
        ).start()
        deadline = time.monotonic() + self.start_timeout
        try:
            while True:
                line = self._next_line(deadline, "to start")
                if line.startswith("ERR"):
                    raise ServedClusterError(f"the cluster could not start: {line[4:]}")
                key, sep, value = line.partition("=")
                if sep:
                    self.startup[key] = value
                if key == "BOOTSTRAP":
                    break
            self._brokers = {
                int(n): BrokerInfo(int(n), b["host"], int(b["port"]), b.get("rack"))
                for n, b in self.info()["brokers"].items()
            }
        except BaseException:
            self.close()
            raise
        return self

    @staticmethod
    def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                lines.put(line.rstrip("\n"))
        except (OSError, ValueError):
            pass
        lines.put(None)

    def _next_line(self, deadline: float | None, doing: str) -> str:
        """The child's next stdout line; waits until ``deadline`` (None: while it lives)."""
        while True:
            wait = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
            if wait <= 0:
                raise ServedClusterError(
                    f"the served cluster did not answer within {self.start_timeout:.0f} s {doing}"
                )
            try:
                line = self._lines.get(timeout=wait)
            except queue.Empty:
                continue
            if line is None:
                self._lines.put(None)  # every later read sees the end too
                code = self._proc.wait() if self._proc is not None else None
                raise ServedClusterError(
                    f"the served cluster exited (status {code}) before answering {doing}"
                )
            return line

    def close(self) -> None:
        """Stop the child (``quit``, then SIGTERM, then SIGKILL); safe to call twice."""
        if self._finalizer is not None:
            self._finalizer()

    stop = close

    @property
    def running(self) -> bool:
        """Whether the child is started and still running."""
        return self._proc is not None and self._proc.poll() is None

    def __repr__(self) -> str:
        state = "running" if self.running else ("new" if self._proc is None else "closed")
        return f"<ServedCluster {state} {self.startup.get('BOOTSTRAP', '')}>"

    # -- the line protocol ------------------------------------------------------------------
    def command(self, *words: str | int) -> Any:
        """Send one ``serve`` command and return its answer's JSON (None for a bare ``OK``).

        Waits as long as the child runs: a command's duration is the work it was given
        (``produce`` of many records), not a fixed number of seconds.

        Raises:
            ServedClusterError: the answer was ``ERR ...`` (its message), or the child exited.
        """
        line = " ".join(shlex.quote(str(w)) for w in words)
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.poll() is not None:
                raise ServedClusterError(f"the served cluster is not running ({line!r})")
            try:
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
            except (OSError, ValueError) as exc:
                raise ServedClusterError(f"the served cluster went away: {exc}") from exc
            answer = self._next_line(None, repr(line))
        if answer.startswith("ERR"):
            raise ServedClusterError(f"{words[0]}: {answer[4:]}")
        if not answer.startswith("OK"):
            raise ServedClusterError(f"{words[0]}: unexpected answer {answer!r}")
        payload = answer[2:].strip()
        return json.loads(payload) if payload else None

    async def acommand(self, *words: str | int) -> Any:
        """:meth:`command` from a running event loop (in a worker thread)."""
        return await asyncio.to_thread(self.command, *words)

    # -- the cluster -------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """``host:port,...`` of the brokers (or of the front that stands before them)."""
        try:
            return self.startup["BOOTSTRAP"]
        except KeyError:
            raise ServedClusterError("the served cluster is not started") from None

    @property
    def brokers(self) -> dict[int, BrokerInfo]:
        """Broker id -> :class:`BrokerInfo`, as the child reported them at start."""
        return dict(self._brokers)

    def rack_of(self, broker_id: int) -> str | None:
        """The rack of a broker."""
        return self._brokers[broker_id].rack

    def info(self) -> dict[str, Any]:
        """The ``info`` command: bootstrap, brokers (host, port, rack, up) and topics."""
        data: dict[str, Any] = self.command("info")
        return data

    def create_topic(
        self, name: str, partitions: int, replication_factor: int | None = None
    ) -> list[PartitionInfo]:
        """Create a topic (``create-topic``) and return its partitions' leaders and replicas."""
        words: list[str | int] = ["create-topic", name, partitions]
        if replication_factor is not None:
            words.append(replication_factor)
        return [_partition(p) for p in self.command(*words)]

    def partitions(self, topic: str) -> list[PartitionInfo]:
        """The partitions of a topic the child created, from ``info``."""
        try:
            return [_partition(p) for p in self.info()["topics"][topic]]
        except KeyError:
            raise ServedClusterError(f"unknown topic {topic!r}") from None

    def broker_down(self, broker_id: int) -> None:
        """Take a broker down (``broker-down``)."""
        self.command("broker-down", broker_id)

    def broker_up(self, broker_id: int) -> None:
        """Bring a broker back (``broker-up``)."""
        self.command("broker-up", broker_id)

    def served_bytes(self) -> dict[tuple[int, str], int] | None:
        """Record bytes each broker served in Fetch responses so far, by ``(broker id,
        the request's rack_id)``, counted on the brokers' side (``served-bytes``).

        None when the cluster does not count them (no ``replica_selector``, or an engine
        without the command).
        """
        try:
            data = self.command("served-bytes")
        except ServedClusterError:
            if not self.running:
                raise
            return None
        return {(int(node), rack): n for node, racks in data.items() for rack, n in racks.items()}

    async def aproduce(self, topic: str, count: int, **kwargs: Any) -> ProduceResult:
        """Write ``count`` numbered records with rackafka's :class:`~rackafka.AIOKafkaProducer`
        from this process and wait for every acknowledgement: the arguments and result of
        :meth:`rackafka.testing.EmbeddedCluster.aproduce`."""
        from ._produce import produce_with_rackafka

        call = produce_arguments(topic, count, kwargs)
        return await produce_with_rackafka(self.bootstrap_servers, call)

    def produce(self, topic: str, count: int, **kwargs: Any) -> ProduceResult:
        """:meth:`aproduce` for code without a running event loop."""
        return asyncio.run(self.aproduce(topic, count, **kwargs))
