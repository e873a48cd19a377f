"""``rackafka-doctor`` proposes (and with ``--apply`` makes) the reassignment that gives
every partition a replica in the consumer's rack: the proposal on the embedded cluster, the
waiting loop with a stand-in admin client.  Always with an explicit rack."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

import rackafka.doctor as doctor
from rackafka.doctor import EXIT_CODES, apply_reassignment, format_report, main, run_doctor
from rackafka.structs import TopicPartition
from rackafka.testing import EmbeddedCluster, offline_zone_environ
from rackafka.zones.reassign import plan_rack_reassignment

TOPIC = "rf2"

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=3) as c:
        c.create_topic(TOPIC, partitions=6, replication_factor=2)
        yield c


def _lacking(cluster: EmbeddedCluster, rack: str) -> dict[int, tuple[int, ...]]:
    racks = {n: b.rack for n, b in cluster.brokers.items()}
    return {
        p.partition: tuple(p.replicas)
        for p in cluster.partitions(TOPIC)
        if rack not in {racks[r] for r in p.replicas}
    }


def _broker_in(cluster: EmbeddedCluster, rack: str) -> int:
    return next(n for n, b in cluster.brokers.items() if b.rack == rack)


async def test_the_report_proposes_a_replica_in_the_rack(
    cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    lacking = _lacking(cluster, "az-a")
    assert lacking  # replication factor 2 over 3 racks: some partitions miss az-a
    report = await run_doctor(
        cluster.bootstrap_servers,
        [TOPIC],
        client_rack="az-a",
        environ=offline_zone_environ(tmp_path),
        sample_seconds=0,
    )
    assert "no-replica-in-rack" in {p["code"] for p in report.problems}
    r = report.reassignment
    one = _broker_in(cluster, "az-a")
    # one replica per rack: nothing to give up, every lacking partition gains broker az-a's
    assert r["reassignment_json"] == {
        "version": 1,
        "partitions": [
            {"topic": TOPIC, "partition": p, "replicas": [*reps, one]}
            for p, reps in sorted(lacking.items())
        ],
    }
    assert [(c["partition"], c["added"], c["removed"]) for c in r["partitions"]] == [
        (p, [one], []) for p in sorted(lacking)
    ]
    assert len(r["replication_factor_grows"]) == len(lacking)
    assert r["unfixable_racks"] == []
    (message,) = [p["message"] for p in report.problems if p["code"] == "no-replica-in-rack"]
    assert "the proposed reassignment gives each one" in message
    text = format_report(report)
    assert f"reassign:  {len(lacking)} partition(s) lack a replica in az-a; " in text, text
    p, reps = next(iter(sorted(lacking.items())))
    assert (
        f"{TOPIC}[{p}]: {list(reps)} -> {[*reps, one]} (adds {one}; replication factor 2 -> 3"
        in text
    ), text
    assert "--apply" in text
    # no --apply: nothing changed
    assert _lacking(cluster, "az-a") == lacking


def test_the_command_line_writes_the_file_and_changes_nothing(
    cluster: EmbeddedCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lacking = _lacking(cluster, "az-b")
    path = tmp_path / "reassign.json"
    argv = ["--bootstrap-servers", cluster.bootstrap_servers, "--topic", TOPIC]
    argv += ["--client-rack", "az-b", "--sample-seconds", "0", "--json"]
    argv += ["--reassignment-file", str(path)]
    code = main(argv, environ=offline_zone_environ(tmp_path))
    out = json.loads(capsys.readouterr().out)
    assert code == out["exit_code"]
    assert "no-replica-in-rack" in {p["code"] for p in out["problems"]}
    written = json.loads(path.read_text())
    assert written == out["reassignment"]["reassignment_json"]
    assert written["version"] == 1
    assert [e["partition"] for e in written["partitions"]] == sorted(lacking)
    assert out["applied"] == {}
    assert f"reassignment written to {path}" in out["notes"]
    assert _lacking(cluster, "az-b") == lacking


def test_no_file_when_nothing_lacks(
    cluster: EmbeddedCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a rack every partition has a replica in: the three racks together
    cluster.create_topic("rf3", partitions=2, replication_factor=3)
    path = tmp_path / "reassign.json"
    argv = ["--bootstrap-servers", cluster.bootstrap_servers, "--topic", "rf3"]
    argv += ["--client-rack", "az-c", "--sample-seconds", "0"]
    argv += ["--reassignment-file", str(path)]
    main(argv, environ=offline_zone_environ(tmp_path))
    out = capsys.readouterr().out
    assert not path.exists()
    assert "nothing to reassign" in out and "\nreassign: " not in out


async def test_a_rack_without_brokers_cannot_be_fixed(
    cluster: EmbeddedCluster, tmp_path: Path
) -> None:
    report = await run_doctor(
        cluster.bootstrap_servers,
        [TOPIC],
        client_rack="az-x",
        environ=offline_zone_environ(tmp_path),
        sample_seconds=0,
    )
    assert report.exit_code == EXIT_CODES["no-rack"]
    assert report.reassignment["unfixable_racks"] == ["az-x"]
    assert report.reassignment["partitions"] == []
    assert any("no broker is in rack 'az-x'" in n for n in report.notes)
    text = format_report(report)
    assert "cannot be fixed by reassignment: no broker is in rack az-x" in text, text


class _Admin:
    """A stand-in for the admin client: the reassignment lists its partitions for
    ``rounds`` polls, then none."""

    def __init__(self, rounds: int, *, refuse: Exception | None = None) -> None:
        self.rounds = rounds
        self.refuse = refuse
        self.altered: list[dict[TopicPartition, list[int] | None]] = []
        self.listed = 0

    async def __aenter__(self) -> _Admin:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def describe_log_dirs(self, broker_ids: Any = None) -> dict[int, Any]:
        return {}

    async def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, list[int] | None], timeout_ms: Any = None
    ) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.altered.append(dict(reassignments))

    async def list_partition_reassignments(
        self, partitions: Any = None, timeout_ms: Any = None
    ) -> dict[TopicPartition, Any]:
        self.listed += 1
        if self.listed > self.rounds:
            return {}

        class Ongoing:
            adding_replicas = [1]

        return {tp: Ongoing() for tp in partitions or ()}


def _plan() -> Any:
    replicas = {TopicPartition("t", 0): [2, 3], TopicPartition("t", 1): [3, 2, 1]}
    return plan_rack_reassignment(
        replicas, {1: "az-a", 2: "az-b", 3: "az-c"}, "az-a", {TopicPartition("t", 0): 2048}
    )


async def test_apply_waits_until_no_reassignment_is_listed() -> None:
    admin = _Admin(rounds=3)
    lines: list[str] = []
    result = await apply_reassignment(admin, _plan(), poll=0.01, progress=lines.append)
    assert admin.altered == [{TopicPartition("t", 0): [2, 3, 1]}]
    assert admin.listed == 4
    assert result["completed"] is True and result["pending"] == []
    assert result["partitions"] == 1
    assert lines[0] == "reassigning 1 partition(s): 1 gain a replica, 2.0 KiB (2048 B) to copy"
    assert lines[1] == "0/1 partition(s) done after 0 s; moving: t[0] +[1]"
    assert lines[-1].startswith("reassignment done in ")


async def test_apply_stops_waiting_at_the_timeout() -> None:
    admin = _Admin(rounds=10**6)
    lines: list[str] = []
    result = await apply_reassignment(admin, _plan(), timeout=0.2, poll=0.02, progress=lines.append)
    assert result["completed"] is False
    assert result["pending"] == [{"topic": "t", "partition": 0}]
    assert "still moving after" in lines[-1]


async def test_run_doctor_applies_only_when_asked_then_checks_again(
    cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = _Admin(rounds=1)
    monkeypatch.setattr(doctor, "_admin", lambda cfg: admin)
    kwargs: dict[str, Any] = {
        "client_rack": "az-c",
        "environ": offline_zone_environ(tmp_path),
        "sample_seconds": 0,
    }
    report = await run_doctor(cluster.bootstrap_servers, [TOPIC], **kwargs)
    assert admin.altered == [] and report.applied == {}
    lines: list[str] = []
    report = await run_doctor(
        cluster.bootstrap_servers, [TOPIC], apply=True, progress=lines.append, **kwargs
    )
    expected = {
        TopicPartition(TOPIC, p): [*reps, _broker_in(cluster, "az-c")]
        for p, reps in _lacking(cluster, "az-c").items()
    }
    assert admin.altered == [expected]
    assert report.applied["completed"] is True
    assert report.applied["partitions"] == len(expected)
    assert lines[-1] == "checking again"
    # the stand-in changed nothing: the second check still finds the partitions
    assert "no-replica-in-rack" in {p["code"] for p in report.problems}
    assert f"applied:   {len(expected)} partition(s) reassigned in " in format_report(report)


async def test_a_refused_reassignment_exits_6(
    cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rackafka.errors import ReassignmentInProgressError

    admin = _Admin(rounds=0, refuse=ReassignmentInProgressError("rf2[0] is being reassigned"))
    monkeypatch.setattr(doctor, "_admin", lambda cfg: admin)
    report = await run_doctor(
        cluster.bootstrap_servers,
        [TOPIC],
        client_rack="az-c",
        environ=offline_zone_environ(tmp_path),
        sample_seconds=0,
        apply=True,
    )
    assert report.exit_code == EXIT_CODES["reassignment-failed"]
    assert "rf2[0] is being reassigned" in report.problems[0]["message"]
    assert report.applied["completed"] is False


def test_apply_is_never_the_default() -> None:
    assert doctor._parser().parse_args(["--bootstrap-servers", "x", "--topic", "t"]).apply is False
    assert asyncio.iscoroutinefunction(run_doctor)


async def test_invalid_seconds_are_named() -> None:
    with pytest.raises(ValueError, match="apply_timeout"):
        await run_doctor("127.0.0.1:1", ["t"], client_rack="az-a", apply_timeout=-1)
    with pytest.raises(TypeError, match="apply_timeout"):
        await run_doctor("127.0.0.1:1", ["t"], client_rack="az-a", apply_timeout="9")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="poll"):
        await apply_reassignment(_Admin(rounds=0), _plan(), poll=0)
    with pytest.raises(ValueError, match="timeout"):
        await apply_reassignment(_Admin(rounds=0), _plan(), timeout=float("nan"))
