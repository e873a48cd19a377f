"""``python -m rackafka.testing serve --engine kafka``: the serve contract on real brokers.

The same arguments and stdin/stdout protocol as the mock engine: lines before
``BOOTSTRAP=``, one ``OK ...``/``ERR ...`` answer per command; ``broker-down`` stops a
broker's JVM and ``broker-up`` answers once it is back; ``quit`` and SIGTERM leave no JVM.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.helpers import create_ssl_context
from rackafka.testing import default_value

from .conftest import check_prerequisites

ck = pytest.importorskip("confluent_kafka", reason="the test producer needs confluent-kafka")

START_TIMEOUT = 240.0  # a cold start of three JVMs on a loaded 2-core machine


class Server:
    """A ``serve --engine kafka`` subprocess with line-based access to its stdout."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rackafka.testing", "serve", "--engine", "kafka", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def readline(self, timeout: float = 120.0) -> str | None:
        return self.lines.get(timeout=timeout)

    def header(self) -> dict[str, str]:
        """The KEY=value lines up to BOOTSTRAP=, in order."""
        out: dict[str, str] = {}
        while True:
            line = self.readline(START_TIMEOUT)
            assert line is not None and "=" in line, f"server said {line!r}"
            key, _, value = line.partition("=")
            out[key] = value
            if key == "BOOTSTRAP":
                return out

    def send(self, command: str, timeout: float = 180.0) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.readline(timeout)
        assert line is not None, "server exited"
        return line

    def ok(self, command: str) -> object:
        answer = self.send(command)
        assert answer.startswith("OK"), f"{command!r} -> {answer!r}"
        payload = answer[2:].strip()
        return json.loads(payload) if payload else None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    check_prerequisites()
    started: list[Server] = []
    yield started
    for server in started:
        server.kill()  # the reaper then ends its JVMs


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not alive: the serve process reaps its brokers
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def wait_dead(pids: list[int], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if alive(p)], "a broker JVM outlived the server"


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_serve_engine_kafka_commands(servers: list[Server]) -> None:
    server = Server("--topic", "demo:3:3", "--messages", "30", "--value-size", "50")
    servers.append(server)
    bootstrap = server.header()["BOOTSTRAP"]
    assert len(bootstrap.split(",")) == 3

    info = server.ok("info")
    assert isinstance(info, dict)
    brokers = info["brokers"]
    assert {k: (v["rack"], v["up"]) for k, v in brokers.items()} == {
        "1": ("az-a", True),
        "2": ("az-b", True),
        "3": ("az-c", True),
    }
    pids = {int(k): v["pid"] for k, v in brokers.items()}
    assert all(alive(p) for p in pids.values())
    assert [p["leader"] for p in info["topics"]["demo"]] == [1, 2, 3]

    # The produced records are the numbered values, record i in partition i % 3.
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "cli-kafka"})
    try:
        consumer.assign([ck.TopicPartition("demo", p, 0) for p in range(3)])
        got: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + 60
        while len(got) < 30 and time.monotonic() < deadline:
            for m in consumer.consume(100, 0.5):
                if m.error() is None:
                    got[(m.partition(), m.offset())] = m.value()
    finally:
        consumer.close()
    assert len(got) == 30
    assert {v for v in got.values()} == {default_value(i, 50) for i in range(30)}
    assert all(int(v.split(b"|")[0]) % 3 == p for (p, _o), v in got.items())

    assert server.ok("produce demo 6") == {"count": 6, "counts": {"0": 2, "1": 2, "2": 2}}
    created = server.ok("create-topic more 2 3")
    assert isinstance(created, list)
    assert [(p["partition"], p["leader"], len(p["replicas"])) for p in created] == [
        (0, 1, 3),
        (1, 2, 3),
    ]

    port2 = int(brokers["2"]["port"])
    assert server.send("broker-down 2") == "OK"
    wait_dead([pids[2]], timeout=5)
    assert refused(port2)
    info = server.ok("info")
    assert isinstance(info, dict)
    assert info["brokers"]["2"]["up"] is False and info["brokers"]["2"]["pid"] is None
    assert all(p["leader"] != 2 for p in info["topics"]["demo"])  # Kafka elected others

    assert server.send("broker-up 2") == "OK"
    info = server.ok("info")
    assert isinstance(info, dict)
    new_pid = info["brokers"]["2"]["pid"]
    assert info["brokers"]["2"]["up"] is True and alive(new_pid) and new_pid != pids[2]
    assert [p["leader"] for p in info["topics"]["demo"]] == [1, 2, 3]
    assert not refused(port2)

    assert server.send("move-leader demo 0 2").startswith("ERR ")
    # The mock front's count: real brokers have none (the demo leaves that line out).
    assert server.send("served-bytes").startswith("ERR served-bytes needs --engine mock")
    assert server.send("no-such-command").startswith("ERR ")
    assert server.send("quit") == "OK bye"
    assert server.proc.wait(120) == 0
    wait_dead([pids[1], pids[3], new_pid], timeout=5)


async def test_serve_engine_kafka_sasl_ssl_and_sigterm(servers: list[Server]) -> None:
    server = Server(
        "--brokers", "1", "--racks", "az-a", "--topic", "sec:1:1", "--messages", "10",
        "--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-512",
        "--user", "alice:alice-secret",
    )  # fmt: skip
    servers.append(server)
    header = server.header()
    keys = list(header)
    assert keys.index("CA_FILE") < keys.index("BOOTSTRAP")
    assert header["SECURITY_PROTOCOL"] == "SASL_SSL"
    assert header["SASL_MECHANISMS"] == "SCRAM-SHA-512"
    consumer = AIOKafkaConsumer(
        bootstrap_servers=header["BOOTSTRAP"],
        security_protocol="SASL_SSL",
        ssl_context=create_ssl_context(cafile=header["CA_FILE"]),
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="alice",
        sasl_plain_password="alice-secret",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition("sec", 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 10 and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                got += [r.value for r in records]
    finally:
        await consumer.stop()
    assert got == [default_value(i, 100) for i in range(10)]
    info = server.ok("info")
    assert isinstance(info, dict)
    pid = info["brokers"]["1"]["pid"]
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(120) == 0
    wait_dead([pid], timeout=5)
    assert not os.path.exists(header["CA_FILE"])  # the work directory went with it
