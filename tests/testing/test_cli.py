"""Tests of ``python -m rackafka.testing serve`` and its command interpreter."""

from __future__ import annotations

import json
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from rackafka.testing import EmbeddedCluster
from rackafka.testing.__main__ import CommandInterpreter, _parser, main, serve

ck = pytest.importorskip("confluent_kafka", reason="the embedded cluster needs confluent-kafka")


class Server:
    """A ``serve`` subprocess with line-based access to its stdout."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "rackafka.testing", "serve", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
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

    def readline(self, timeout: float = 30.0) -> str | None:
        return self.lines.get(timeout=timeout)

    def send(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.readline()
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
            self.proc.wait(10)


@pytest.fixture
def server_factory() -> Iterator[type[Server]]:
    started: list[Server] = []

    class Tracked(Server):
        def __init__(self, *args: str) -> None:
            super().__init__(*args)
            started.append(self)

    yield Tracked
    for server in started:
        server.kill()


def _ports(bootstrap: str) -> list[int]:
    return [int(a.rpartition(":")[2]) for a in bootstrap.split(",")]


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def _bootstrap(server: Server) -> str:
    line = server.readline()
    assert line is not None and line.startswith("BOOTSTRAP="), line
    return line.split("=", 1)[1]


def test_serve_session(server_factory: type[Server]) -> None:
    server = server_factory(
        "--brokers", "3", "--racks", "az-a,az-b,az-c", "--topic", "demo:3:3",
        "--topic", "other:1", "--messages", "30", "--value-size", "50",
        "--compression", "lz4",
    )  # fmt: skip
    bootstrap = _bootstrap(server)
    ports = _ports(bootstrap)
    assert len(ports) == 3

    # Another process (this one) reads the data the server produced.
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "cli"})
    try:
        consumer.assign([ck.TopicPartition("demo", p, 0) for p in range(3)])
        got: list[bytes] = []
        deadline = time.monotonic() + 15
        while len(got) < 30 and time.monotonic() < deadline:
            got += [m.value() for m in consumer.consume(100, 0.2) if m.error() is None]
        assert len(got) == 30 and all(len(v) == 50 for v in got)
    finally:
        consumer.close()

    info = server.ok("info")
    assert isinstance(info, dict)
    assert {b["rack"] for b in info["brokers"].values()} == {"az-a", "az-b", "az-c"}
    assert sorted(info["topics"]) == ["demo", "other"]

    part = server.ok("partition demo 0")
    assert isinstance(part, dict) and part["leader"] == 1 and part["leader_epoch"] == 1
    moved = server.ok("move-leader demo 0 2")
    assert isinstance(moved, dict) and (moved["leader"], moved["leader_epoch"]) == (2, 2)
    chosen = server.ok("emulate-rack az-b demo")
    assert chosen == {"demo/0": -1, "demo/1": -1, "demo/2": 2}
    lagging = server.ok("follower-wmarks demo 2 0 5")
    assert isinstance(lagging, dict) and lagging["follower_watermarks"] == [0, 5]
    cleared = server.ok("clear-follower demo 2")
    assert isinstance(cleared, dict) and cleared["preferred_read_replica"] == -1

    assert server.send("broker-down 3") == "OK"
    assert _refused(ports[2])
    assert server.send("broker-up 3") == "OK"
    socket.create_connection(("127.0.0.1", ports[2]), timeout=1).close()
    assert server.send("rtt all 0") == "OK"

    assert server.send("track-start") == "OK"
    produced = server.ok("produce demo 10 20")
    assert produced == {"count": 10, "counts": {"0": 4, "1": 3, "2": 3}}
    requests = server.ok("requests Produce")
    assert isinstance(requests, list) and requests
    assert {r["api"] for r in requests} == {"Produce"}
    assert all(r["broker_id"] in (1, 2, 3) for r in requests)

    assert server.send("cap-version fetch 0 10") == "OK"
    versions = server.ok("api-versions 1")
    assert isinstance(versions, dict) and versions["1"] == [0, 10]
    assert server.send("restore-version fetch") == "OK"

    txn = server.ok("produce-txn other commit:3 abort:2")
    assert isinstance(txn, dict) and (txn["committed"], txn["aborted"]) == (3, 2)

    assert server.send("bogus").startswith("ERR unknown command")
    assert server.send("move-leader demo x 1").startswith("ERR partition must be an integer")
    assert server.send("move-leader demo 0 7").startswith("ERR ValueError")
    assert server.send("move-leader demo").startswith("ERR usage: move-leader")
    assert server.send("partition nope 0").startswith("ERR")

    assert server.send("quit") == "OK bye"
    assert server.proc.wait(15) == 0
    assert server.readline() is None
    assert all(_refused(p) for p in ports)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM cannot be delivered on Windows")
def test_serve_keeps_serving_when_stdin_is_at_its_end() -> None:
    # As a background job, under nohup or in a container: stdin is /dev/null.
    proc = subprocess.Popen(
        [sys.executable, "-m", "rackafka.testing", "serve", "--brokers", "1", "--racks", ""],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("BOOTSTRAP="), line
        ports = [int(a.rsplit(":", 1)[1]) for a in line.split("=", 1)[1].split(",")]
        time.sleep(1.5)
        assert proc.poll() is None, "serve stopped at the end of its input"
        assert not any(_refused(p) for p in ports)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert all(_refused(p) for p in ports)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_serve_exits_on_eof_when_asked(server_factory: type[Server]) -> None:
    server = server_factory("--brokers", "1", "--racks", "", "--exit-on-eof")
    ports = _ports(_bootstrap(server))
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.proc.wait(15) == 0
    assert all(_refused(p) for p in ports)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM cannot be delivered on Windows")
def test_serve_exits_on_sigterm(server_factory: type[Server]) -> None:
    server = server_factory("--brokers", "2", "--topic", "t:2:2", "--messages", "10")
    ports = _ports(_bootstrap(server))
    server.proc.send_signal(signal.SIGTERM)
    try:
        code = server.proc.wait(30)
    except subprocess.TimeoutExpired:
        # Say where it hangs: a stack dump of every thread (faulthandler on SIGABRT).
        server.proc.send_signal(signal.SIGABRT)
        server.proc.wait(10)
        assert server.proc.stderr is not None
        err = server.proc.stderr.read()
        pytest.fail(f"serve did not exit within 30 s of SIGTERM; its stderr:\n{err[-6000:]}")
    assert code == 0
    assert all(_refused(p) for p in ports)


def test_serve_rejects_bad_topic_spec(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["serve", "--topic", "t:x"])
    assert info.value.code == 2
    assert "NAME[:PARTITIONS[:RF]]" in capsys.readouterr().err


def test_serve_reports_startup_failure_on_stdout() -> None:
    import io

    out = io.StringIO()
    args = _parser().parse_args(["serve", "--brokers", "1", "--topic", "t:2:3"])
    assert serve(args, io.StringIO("info\n"), out) == 1
    assert out.getvalue().splitlines() == [
        "ERR startup failed: ValueError: replication_factor must be 1..1 "
        "(the number of brokers), got 3"
    ]


def test_serve_in_process_with_default_replication() -> None:
    import io

    out = io.StringIO()
    args = _parser().parse_args(["serve", "--brokers", "2", "--topic", "t:3", "--messages", "9"])
    assert serve(args, io.StringIO("partition t 2\nquit\n"), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("BOOTSTRAP=127.0.0.1:")
    partition = json.loads(lines[1][3:])
    assert len(partition["replicas"]) == 2  # min(3, brokers)
    assert lines[2] == "OK bye"


def test_interpreter_answers() -> None:
    with EmbeddedCluster(brokers=2, racks=("a", "b")) as cluster:
        interpreter = CommandInterpreter(cluster)
        assert interpreter.execute("create-topic t 2 2").startswith("OK [")
        assert interpreter.execute("help").startswith("OK {")
        assert interpreter.execute("") == "ERR empty command"
        assert interpreter.execute("'unbalanced").startswith("ERR cannot parse")
        assert interpreter.execute("rtt 1 x") == "ERR rtt must be an integer, got 'x'"
        assert interpreter.execute("set-follower t 0 2").startswith("OK {")
        assert json.loads(interpreter.execute("partition t 0")[3:])["preferred_read_replica"] == 2
        assert interpreter.execute("set-follower t 0 1").startswith("ERR ValueError")
        assert interpreter.execute("clear-followers") == "OK"
        assert interpreter.execute("push-errors Fetch 6") == "OK"
        assert interpreter.execute("clear-errors 1") == "OK"
        assert interpreter.execute("track-start") == "OK"
        assert interpreter.execute("request-counts Fetch") == "OK {}"
        assert interpreter.execute("cap-version NoSuchApi 0 1").startswith("ERR ValueError")
        assert interpreter.execute("delete-records t 0 0") == "OK"


def test_serve_with_a_sasl_ssl_front(server_factory: type[Server]) -> None:
    """``serve --security-protocol SASL_SSL``: another process connects with the printed
    CA file and the user given on the command line; wrong credentials are refused."""
    pytest.importorskip("trustme", reason="trustme (testing extra) makes the certificates")
    pytest.importorskip("scramp", reason="scramp (testing extra) is the front's SCRAM")
    server = server_factory(
        "--brokers", "2", "--topic", "sec:2:2", "--messages", "25",
        "--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-256",
        "--user", "app:app-pw", "--exit-on-eof",
    )  # fmt: skip
    info: dict[str, str] = {}
    while True:
        line = server.readline()
        assert line is not None
        key, _, value = line.partition("=")
        info[key] = value
        if key == "BOOTSTRAP":
            break
    assert info["SECURITY_PROTOCOL"] == "SASL_SSL"
    assert info["SASL_MECHANISMS"] == "SCRAM-SHA-256"
    conf = {
        "bootstrap.servers": info["BOOTSTRAP"],
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": info["CA_FILE"],
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "app",
        "sasl.password": "app-pw",
        "group.id": "cli-sec",
        "auto.offset.reset": "earliest",
    }
    consumer = ck.Consumer(conf)
    consumer.subscribe(["sec"])
    got = 0
    deadline = time.monotonic() + 30
    while got < 25 and time.monotonic() < deadline:
        got += sum(1 for m in consumer.consume(num_messages=100, timeout=0.5) if not m.error())
    consumer.close()
    assert got == 25
    assert server.ok("info") is not None


def test_serve_with_the_rack_aware_replica_selector(server_factory: type[Server]) -> None:
    """``serve --replica-selector rack-aware``: consumers in two racks at once each read
    every partition from the replica in their own rack (the brokers name it per client)."""
    import asyncio

    from rackafka import AIOKafkaConsumer, TopicPartition

    server = server_factory(
        "--brokers", "3", "--racks", "az-a,az-b,az-c", "--topic", "sel:3:3",
        "--messages", "300", "--replica-selector", "rack-aware", "--exit-on-eof",
    )  # fmt: skip
    while True:
        line = server.readline()
        assert line is not None and not line.startswith("ERR"), line
        if line.startswith("BOOTSTRAP="):
            bootstrap = line.split("=", 1)[1]
            break

    async def read_in(rack: str) -> tuple[int, int, int]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, client_rack=rack, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            consumer.assign([TopicPartition("sel", p) for p in range(3)])
            got = 0
            while got < 300:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 60)
                got += sum(len(v) for v in batch.values())
            stats = consumer.fetch_stats()
            return got, stats.same_rack_bytes, stats.cross_rack_bytes
        finally:
            await consumer.stop()

    async def both() -> list[tuple[int, int, int]]:
        return list(await asyncio.gather(read_in("az-a"), read_in("az-b")))

    for got, same, cross in asyncio.run(both()):
        assert got == 300
        assert same > 0 and cross == 0, (same, cross)


def test_serve_refuses_a_selector_with_an_emulated_rack(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["serve", "--brokers", "1", "--replica-selector", "rack-aware", "--emulate-rack", "az-a",
         "--exit-on-eof"]
    )  # fmt: skip
    assert code == 1
    assert "exclude each other" in capsys.readouterr().out
