"""A Spark standalone cluster on 127.0.0.1: one master and workers with their own environment.

Spark's ``local[N]`` runs every executor in the JVM of the driver, with one environment, so
it cannot show executors in different racks. :class:`SparkStandaloneCluster` starts the
master and worker daemons that ship with pip's ``pyspark`` (``bin/spark-class``), each
worker with its own environment (for example its own ``RACKAFKA_CLIENT_RACK``); the
executors a worker launches inherit it, as on a real cluster where each node's start-up
script sets the zone::

    with SparkStandaloneCluster([{"RACKAFKA_CLIENT_RACK": "az-a"},
                                 {"RACKAFKA_CLIENT_RACK": "az-b"}]) as sc:
        loopback_spark_conf()  # SPARK_LOCAL_IP for the driver's JVM
        builder = SparkSession.builder.appName("two racks")
        for key, value in sc.spark_conf().items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()

Everything listens on 127.0.0.1 (ports chosen by the system; the daemons run with
``SPARK_LOCAL_IP=127.0.0.1``, and :func:`loopback_spark_conf` does the same for a driver
started in this process), the master's REST submission
server is off, and :meth:`SparkStandaloneCluster.stop` ends every process it started, the
executors included. It needs Java 17+ (``java`` on ``PATH`` or ``JAVA_HOME``) and pyspark.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

__all__ = ["LOOPBACK", "SparkStandaloneCluster", "SparkUnavailableError", "loopback_spark_conf"]

#: The address every Spark process of the tests and demos listens on and advertises.
LOOPBACK = "127.0.0.1"

_MASTER = re.compile(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)")
_REGISTERED = "Successfully registered with master"


class SparkUnavailableError(RuntimeError):
    """pyspark or a Java runtime is missing: no standalone cluster can run here."""


def spark_home() -> Path:
    """The Spark distribution to run: ``SPARK_HOME``, else the one inside pip's pyspark."""
    env = os.environ.get("SPARK_HOME")
    if env:
        return Path(env)
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise SparkUnavailableError("pyspark is not installed: pip install 'rackafka[spark]'")
    return Path(spec.origin).parent


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and Path(java_home, "bin", "java").exists():
        return
    if shutil.which("java") is None:
        raise SparkUnavailableError("Spark needs a Java runtime (17 or newer): none on PATH")


def loopback_spark_conf(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Keep a Spark driver on 127.0.0.1: set ``SPARK_LOCAL_IP`` and return the settings.

    Sets ``SPARK_LOCAL_IP=127.0.0.1`` in ``environ`` (default: ``os.environ``, which the
    driver's JVM inherits when pyspark starts it: set it before the first SparkSession), so
    that Spark neither looks for the machine's other interfaces ("Your hostname ... resolves
    to a loopback address ... using ... instead") nor binds or advertises one of them, and
    returns ``spark.driver.host`` and ``spark.driver.bindAddress`` for the session's builder.
    """
    (os.environ if environ is None else environ)["SPARK_LOCAL_IP"] = LOOPBACK
    return {"spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK}


class SparkStandaloneCluster:
    """A Spark standalone master and one worker per entry of ``workers`` on 127.0.0.1.

    Arguments:
        workers: the extra environment of each worker (and of its executors).
        cores: cores each worker offers (one executor per worker with these cores).
        memory: memory each worker offers (and each executor takes), as Spark writes it.
        startup_timeout: seconds to wait for the master and each worker to come up.
        work_dir: where logs and the workers' directories go (a temporary directory,
            removed by :meth:`stop`, when not given).
    """

    def __init__(
        self,
        workers: Sequence[Mapping[str, str]] = ({},),
        *,
        cores: int = 1,
        memory: str = "1g",
        startup_timeout: float = 120.0,
        work_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if not workers:
            raise ValueError("workers must name at least one worker")
        if cores < 1:
            raise ValueError(f"cores must be at least 1, not {cores}")
        if startup_timeout <= 0:
            raise ValueError(f"startup_timeout must be positive, not {startup_timeout}")
        self.workers = [dict(w) for w in workers]
        self.cores = cores
        self.memory = memory
        self.startup_timeout = startup_timeout
        self._own_dir = work_dir is None
        self._work_dir = Path(work_dir) if work_dir is not None else None
        self._procs: list[tuple[subprocess.Popen[bytes], Path]] = []
        self._logs: list[IO[bytes]] = []
        self.master_url: str | None = None

    # -- life cycle ---------------------------------------------------------------------

    def start(self) -> str:
        """Start the master and the workers; return the master's URL once all registered.

        Raises:
            SparkUnavailableError: no pyspark or no Java.
            RuntimeError: a daemon exited or did not come up in time (its log attached).
        """
        if self.master_url is not None:
            return self.master_url
        home = spark_home()
        _check_java()
        if self._work_dir is None:
            self._work_dir = Path(tempfile.mkdtemp(prefix="rackafka-spark-standalone-"))
        self._work_dir.mkdir(parents=True, exist_ok=True)
        try:
            props = self._work_dir / "master.properties"
            props.write_text("spark.master.rest.enabled false\nspark.ui.enabled false\n")
            master, master_log = self._spawn(
                home,
                "master",
                "org.apache.spark.deploy.master.Master",
                ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                ["--properties-file", str(props)],
                {},
            )
            found = self._wait_for(master, master_log, _MASTER, "the Spark master")
            url = found.group(1)
            waits = []
            for i, extra in enumerate(self.workers):
                worker_dir = self._work_dir / f"worker-{i}"
                worker_dir.mkdir(exist_ok=True)
                waits.append(
                    self._spawn(
                        home,
                        f"worker-{i}",
                        "org.apache.spark.deploy.worker.Worker",
                        [url, "--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
                        [
                            "--cores",
                            str(self.cores),
                            "--memory",
                            self.memory,
                            "--work-dir",
                            str(worker_dir),
                        ],
                        extra,
                    )
                )
            for i, (proc, log) in enumerate(waits):
                self._wait_for(proc, log, re.compile(re.escape(_REGISTERED)), f"Spark worker {i}")
        except BaseException:
            self.stop()
            raise
        self.master_url = url
        return url

    def spark_conf(self) -> dict[str, str]:
        """Settings for a SparkSession on this cluster: the master, a driver on 127.0.0.1
        (set ``SPARK_LOCAL_IP`` too, :func:`loopback_spark_conf`),
        the Python of this process for the executors, every core of every worker, and no
        job before every executor has registered."""
        if self.master_url is None:
            raise RuntimeError("the cluster is not started: call start() first")
        return {
            "spark.master": self.master_url,
            "spark.driver.host": LOOPBACK,
            "spark.driver.bindAddress": LOOPBACK,
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            "spark.executor.memory": self.memory,
            "spark.executor.cores": str(self.cores),
            "spark.cores.max": str(self.cores * len(self.workers)),
            # Start jobs only once every executor is there, so that all of them read.
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
            "spark.ui.enabled": "false",
        }

    def stop(self) -> None:
        """Stop the workers, their executors and the master; remove the temporary files."""
        for proc, _log in reversed(self._procs):
            _terminate(proc)
        self._procs.clear()
        for f in self._logs:
            f.close()
        self._logs.clear()
        if self._own_dir and self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
            self._work_dir = None
        self.master_url = None

    def __enter__(self) -> SparkStandaloneCluster:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"<SparkStandaloneCluster master={self.master_url!r} workers={len(self.workers)} "
            f"cores={self.cores}>"
        )

    # -- internals ----------------------------------------------------------------------

    def _spawn(
        self,
        home: Path,
        name: str,
        main_class: str,
        args: list[str],
        more: list[str],
        extra_env: Mapping[str, str],
    ) -> tuple[subprocess.Popen[bytes], Path]:
        assert self._work_dir is not None
        log_path = self._work_dir / f"{name}.log"
        log = open(log_path, "wb")  # noqa: SIM115 - closed by stop()
        self._logs.append(log)
        env = {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOG_DIR": str(self._work_dir),
            "PYSPARK_PYTHON": sys.executable,
            **extra_env,
        }
        proc = subprocess.Popen(
            [str(home / "bin" / "spark-class"), main_class, *args, *more],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self._work_dir,
            start_new_session=True,  # its own process group: stop() ends the executors too
        )
        self._procs.append((proc, log_path))
        return proc, log_path

    def _wait_for(
        self, proc: subprocess.Popen[bytes], log: Path, pattern: re.Pattern[str], what: str
    ) -> re.Match[str]:
        deadline = time.monotonic() + self.startup_timeout
        while True:
            text = log.read_text("utf-8", "replace")
            found = pattern.search(text)
            if found:
                return found
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}:\n{_tail(text)}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{what} did not start within {self.startup_timeout:.0f} s:\n{_tail(text)}"
                )
            time.sleep(0.2)


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=15)
    # Whatever is left of its group (executors, Python workers) goes too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
