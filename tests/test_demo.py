"""The ``make demo`` script (examples/demo.py), run for real on a small topic.

The demo starts its own embedded 3-rack cluster, produces, consumes twice with rackafka, then
reads a second topic with a consumer group of one member per rack; these tests check what it
reports, and that its checks do fail when something is wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rackafka.group.assignors import range as range_assignor

pytest.importorskip("confluent_kafka", reason="the demo's embedded cluster needs confluent-kafka")

DEMO_PATH = Path(__file__).resolve().parents[1] / "examples" / "demo.py"
RECORDS = 6_000
PARTITIONS = 6
RACKS = ("az-a", "az-b", "az-c")


def _load_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rackafka_examples_demo", DEMO_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


demo = _load_demo()


@pytest.fixture(scope="module")
def report() -> Any:
    return asyncio.run(demo.run_demo(RECORDS, PARTITIONS))


def test_main_prints_exactly_once_and_all_bytes_from_own_rack(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = demo.main(["--records", str(RECORDS), "--partitions", str(PARTITIONS)])
    out = capsys.readouterr().out
    assert status == 0, out
    rows = {
        line.split("  ")[0].strip(): line.split()
        for line in out.splitlines()
        if line.startswith(("without client_rack ", 'client_rack="az-b" '))
    }
    assert set(rows) == {"without client_rack", 'client_rack="az-b"'}, out
    # run | from az-b | other racks | records/s | received | duplicates | missing | exactly once
    with_rack = rows['client_rack="az-b"'][1:]
    assert with_rack[0] == "100.0%" and with_rack[1] == "0.0%", out
    assert with_rack[3:] == [f"{RECORDS:,}", "0", "0", "yes"], out
    without = rows["without client_rack"][2:]
    assert without[3:] == [f"{RECORDS:,}", "0", "0", "yes"], out
    assert f"OK: all {RECORDS:,} records arrived exactly once" in out
    assert "(records/s: median of 3 runs each; rackafka's consumer alone in this process" in out
    assert "produced  6,000 records of 100 B (0.6 MB of values) in " in out
    assert "in a process of its own: python -m rackafka.testing serve" in out

    # The group part: one row per member (rack, partitions, own rack, other racks, records),
    # then the group's row.
    table = out[
        out.index('3-rack group (group_id="demo-group"') : out.index("3-rack group (KIP-848)")
    ]
    members = {line.split()[0]: line for line in table.splitlines() if line.startswith(RACKS)}
    assert set(members) == set(RACKS), out
    owned: list[int] = []
    records = 0
    for line in members.values():
        # az-a  0 3 6 9  1.1 MB  0 B  2,000
        cells = line.split()
        assert cells[-3:-1] == ["0", "B"], line  # other racks
        assert cells[-5] != "0" and cells[-4] == "MB", line  # own rack: some MB
        partitions = [int(c) for c in cells[1:-5]]
        assert partitions, line
        owned += partitions
        records += int(cells[-1].replace(",", ""))
    assert sorted(owned) == list(range(demo.GROUP_PARTITIONS)), out
    assert records == RECORDS, out
    group_row = next(line for line in table.splitlines() if line.startswith("group "))
    assert group_row.split()[1:4] == [
        str(demo.GROUP_PARTITIONS),
        "of",
        str(demo.GROUP_PARTITIONS),
    ]
    assert group_row.split()[-3:] == ["0", "B", f"{RECORDS:,}"], group_row
    assert "exactly once across the group            yes" in table
    assert "cross-rack bytes                         0 B" in table
    assert f"OK: 3-rack group: all {RECORDS:,} records arrived exactly once across the group" in out


def test_every_record_exactly_once_in_both_runs(report: Any) -> None:
    assert report.records == RECORDS
    assert [r.client_rack for r in report.runs] == [None, "az-b"]
    for run in report.runs:
        assert run.expected == RECORDS
        assert run.received == RECORDS and run.unique == RECORDS
        assert (run.duplicates, run.missing, run.unexpected, run.bad_values) == (0, 0, 0, 0)
        assert run.exactly_once
        assert run.records_per_second > 0
    assert report.ok and report.failures() == []


def test_client_rack_reads_only_from_own_rack(report: Any) -> None:
    run = report.runs[1]
    assert run.total_bytes > RECORDS * 100  # record batches: values plus framing
    assert run.same_rack_bytes == run.total_bytes and run.cross_rack_bytes == 0
    assert run.same_rack_share == 1.0
    # Counted by the brokers, not by the consumer: the leaders outside az-b only named the
    # az-b replica (no records); the az-b broker served everything.
    outside = [n for n, rack in report.brokers.items() if rack != "az-b"]
    assert all(run.served_bytes.get(n, 0) == 0 for n in outside), run.served_bytes
    assert run.served_bytes[2] == run.total_bytes


def test_without_client_rack_about_a_third_from_own_rack(report: Any) -> None:
    assert report.leaders_by_rack == {"az-a": 2, "az-b": 2, "az-c": 2}
    run = report.runs[0]
    # Records are spread evenly over the partitions and each partition is read from its
    # leader, so every rack serves a third of the bytes.
    assert run.same_rack_share == pytest.approx(1 / 3, abs=0.02)
    assert all(run.bytes_by_rack.get(rack, 0) > 0 for rack in ("az-a", "az-b", "az-c"))
    assert all(run.served_bytes.get(n, 0) > 0 for n in (1, 2, 3))
    assert sum(run.served_bytes.values()) == run.total_bytes


def test_failures_are_reported(report: Any) -> None:
    good = report.runs[1]
    duplicated = dataclasses.replace(good, received=good.received + 1, duplicates=1)
    lost = dataclasses.replace(report.runs[0], unique=good.unique - 1, missing=1)
    leaked = dataclasses.replace(good, bytes_by_rack={**good.bytes_by_rack, "az-a": 10})
    for runs, reason in (
        ([report.runs[0], duplicated], "not exactly once"),
        ([lost, good], "not exactly once"),
        ([report.runs[0], leaked], "10 bytes came from other racks"),
    ):
        bad = dataclasses.replace(report, runs=runs)
        assert not bad.ok
        assert any(reason in f for f in bad.failures())
        assert "FAILED" in demo.format_report(bad)


def test_every_repeated_run_is_checked(report: Any) -> None:
    assert report.repeats == report.runs  # one round by default
    lost = dataclasses.replace(report.runs[0], unique=RECORDS - 1, missing=1)
    bad = dataclasses.replace(report, repeats=[*report.repeats, lost])
    assert any("not exactly once" in f for f in bad.failures())
    fast = dataclasses.replace(report.runs[0], seconds=report.runs[0].seconds / 2)
    slow = dataclasses.replace(report.runs[0], seconds=report.runs[0].seconds * 2)
    assert demo._median_run([fast, slow, report.runs[0]]) is report.runs[0]
    with pytest.raises(ValueError, match="--repeat"):
        asyncio.run(demo.run_demo(10, repeat=0))


def test_arguments_that_do_not_fit_the_cluster_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert demo.main(["--records", "1000000", "--partitions", "1"]) == 2
    assert "5 MiB per partition" in capsys.readouterr().err
    assert demo.main(["--records", "0"]) == 2


def _check_group(group: Any, records: int, strategy: str) -> None:
    """What a correct group part reports, checked against the topic's layout."""
    assert group.strategy == strategy
    partitions = group.partitions
    # Replication factor 2 over one broker per rack: no rack holds every partition, which
    # is when rack-aware assignment (KIP-881) matters.
    assert sorted(group.replica_racks) == list(range(partitions))
    assert all(
        len(racks) == 2 and set(racks) <= set(RACKS) for racks in group.replica_racks.values()
    )
    assert [m.client_rack for m in group.members] == list(RACKS)
    owned = [p for m in group.members for p in m.partitions]
    assert sorted(owned) == list(range(partitions))  # each partition owned exactly once
    for m in group.members:
        assert m.partitions, m
        # KIP-881: a member owns only partitions with a replica in its own rack ...
        assert all(m.client_rack in group.replica_racks[p] for p in m.partitions), m
        assert m.aligned == len(m.partitions)
        # ... and (KIP-392) reads them there: every byte from its own rack.
        assert {r: b for r, b in m.bytes_by_rack.items() if b} == {m.client_rack: m.total_bytes}
        assert m.cross_rack_bytes == 0
        # Record i went to partition i % partitions: the member got exactly its partitions'.
        mine = sum(len(range(p, records, partitions)) for p in m.partitions)
        assert m.records == mine, m
        assert m.total_bytes > mine * demo.VALUE_SIZE
    total = group.total
    assert total.expected == records
    assert total.received == total.unique == records
    assert (total.duplicates, total.missing, total.unexpected, total.bad_values) == (0, 0, 0, 0)
    assert total.exactly_once
    assert group.stable
    assert group.cross_rack_bytes == 0 and group.same_rack_bytes == group.total_bytes > 0
    assert 0 <= group.settle_seconds < 30
    assert group.failures() == []


def test_group_reads_only_from_its_own_racks(report: Any) -> None:
    assert report.group is not None
    _check_group(report.group, RECORDS, demo.DEFAULT_STRATEGY)
    # On this layout an assignor that ignores racks would misplace some partitions.
    assert 0 < report.group.unaware_misplaced <= report.group.partitions


@pytest.mark.parametrize("strategy", ["range"])
async def test_group_with_another_rack_aware_assignor(strategy: str) -> None:
    async with demo.demo_cluster() as cluster:
        group = await demo.run_group_demo(cluster, 3_000, 9, strategy=strategy)
    _check_group(group, 3_000, strategy)


def test_group_failures_are_reported(report: Any) -> None:
    good = report.group
    first, second, third = good.members
    leaked = dataclasses.replace(first, bytes_by_rack={**first.bytes_by_rack, "az-c": 7})
    misplaced = dataclasses.replace(second, aligned=second.aligned - 1)
    shared = dataclasses.replace(third, partitions=[*third.partitions, first.partitions[0]])
    empty = dataclasses.replace(third, partitions=[], aligned=0)
    lost = dataclasses.replace(good.total, unique=good.total.unique - 1, missing=1)
    for changed, reason in (
        ({"members": [leaked, second, third]}, "7 bytes came from other racks than az-a"),
        ({"members": [first, misplaced, third]}, "1 partitions with no replica in its rack"),
        ({"members": [first, second, shared]}, f"with several {[first.partitions[0]]}"),
        ({"members": [first, second, empty]}, "the member in az-c owned nothing"),
        ({"total": lost}, "3-rack group: not exactly once"),
        ({"stable": False}, "the assignment changed while the records were read"),
    ):
        bad_group = dataclasses.replace(good, **changed)
        bad = dataclasses.replace(report, group=bad_group)
        assert not bad.ok
        assert any(reason in f for f in bad.failures()), (reason, bad.failures())
        assert "FAILED" in demo.format_report(bad)
        assert "OK: 3-rack group" not in demo.format_report(bad)


def test_group_arguments_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--records", "100000", "--group-partitions", "1"]) == 2
    assert "--group-partitions" in capsys.readouterr().err
    with pytest.raises(ValueError, match="rack-aware"):
        asyncio.run(demo.run_demo(10, strategy="roundrobin"))
    with pytest.raises(SystemExit):
        demo.parse_args(["--strategy", "roundrobin"])


async def test_a_rack_unaware_assignment_fails_the_group_checks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Turn KIP-881 off in the range assignor: each member then gets 4 consecutive partitions,
    # and any 3 consecutive ones have replicas on 3 different pairs of racks, so every member
    # owns a partition with no replica in its rack, reads it across racks, and the demo must
    # report both.
    monkeypatch.setattr(range_assignor, "use_rack_aware_assignment", lambda *_args: False)
    async with demo.demo_cluster() as cluster:
        group = await demo.run_group_demo(cluster, 3_000, 12, strategy="range")
    racks = group.replica_racks
    assert all(len({racks[p], racks[p + 1], racks[p + 2]}) == 3 for p in range(10)), racks
    assert group.total.exactly_once  # nothing lost: only the racks are wrong
    assert all(m.aligned < len(m.partitions) for m in group.members), group.members
    assert all(m.cross_rack_bytes > 0 for m in group.members), group.members
    failures = group.failures()
    for rack in RACKS:
        assert any(f"the member in {rack} owned" in f for f in failures), failures
        assert any(f"other racks than {rack}" in f for f in failures), failures


def test_kip848_group_reads_exactly_once_and_shows_what_crossed_racks(report: Any) -> None:
    group = report.kip848_group
    assert group is not None and group.group_protocol == "consumer"
    total = group.total
    assert total.exactly_once and total.received == RECORDS
    owned = sorted(p for m in group.members for p in m.partitions)
    assert owned == list(range(group.partitions))
    assert all(m.partitions for m in group.members)
    for m in group.members:
        misplaced = [p for p in m.partitions if m.client_rack not in group.replica_racks[p]]
        assert m.aligned == len(m.partitions) - len(misplaced)
        # KIP-392 still keeps a member in its rack for every partition with a replica there;
        # only the partitions the coordinator gave it with none there cross racks.
        assert (m.cross_rack_bytes > 0) == bool(misplaced), m
    assert group.failures() == []  # misplacement is shown, not a failure, with KIP-848
    out = demo.format_report(report)
    assert '3-rack group (KIP-848) (group_id="demo-group-kip848", group_protocol="consumer")' in out
    compare = out[out.index("The group part with each protocol") :]
    assert f"{report.group.aligned} of {report.group.partitions}" in compare
    assert f"{group.aligned} of {group.partitions}" in compare
    assert "OK: 3-rack group (KIP-848): all" in out


def test_demo_refuses_an_unknown_group_protocol() -> None:
    with pytest.raises(ValueError, match="group_protocol"):
        asyncio.run(demo.run_demo(100, 3, group_protocol="kip848"))


def test_the_cluster_and_its_replica_selector_run_in_another_process(report: Any) -> None:
    # The rates the demo prints are the client's: the brokers and the front that plays the
    # replica selector (it counted served_bytes above) live in the server's process.
    assert report.runs[1].served_bytes  # the front was there and counted
    with demo.demo_cluster() as cluster:
        assert cluster.running and cluster.replica_selector == "rack-aware"
        assert cluster.command_line[1:4] == ["-m", "rackafka.testing", "serve"]
        assert "--replica-selector" in cluster.command_line
        assert not [t.name for t in threading.enumerate() if "front" in t.name.lower()]


def test_the_engine_is_passed_to_the_server(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--records", "10", "--no-group", "--engine", "no-such-engine"]) == 2
    assert "the cluster failed" in capsys.readouterr().err
    assert "--engine kafka" in " ".join(demo.demo_cluster("kafka").command_line)
