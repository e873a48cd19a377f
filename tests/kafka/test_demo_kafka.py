"""``make demo DEMO_ARGS="--engine kafka"``: the demo on real Apache Kafka brokers.

``examples/demo.py --engine kafka`` runs in a subprocess, as ``make demo`` runs it, on a
small topic and one read of each kind. It starts its own 3-broker cluster through
``python -m rackafka.testing serve --engine kafka`` (its own JVMs and free ports: nothing is
shared with the session's ``kafka`` cluster), so this is the one test here that pays a
second cluster start. What it checks is what the demo claims, decided by Kafka's own
``RackAwareReplicaSelector`` instead of the mock's front: every byte from the consumer's
rack with ``client_rack``, about a third without, a classic 3-rack group (KIP-881) with
0 bytes across racks, a KIP-848 group, every record exactly once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import check_prerequisites

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.py"
RECORDS = 6_000
PARTITIONS = 6
GROUP_PARTITIONS = 12
RACKS = ("az-a", "az-b", "az-c")
#: A cold start of three JVMs on a loaded 2-core machine (ServedCluster waits 180 s).
START_SECONDS = 240.0


def _timeout(records: int) -> float:
    """The cluster's start, then a minute plus 1 s per 500 records for each of the
    demo's four parts (two reads, two groups): far above what they take (seconds)."""
    return START_SECONDS + 4 * (60.0 + records / 500)


def _table(out: str, title: str, end: str) -> list[str]:
    """The lines of the report between ``title`` and ``end``."""
    start = out.index(title)
    return out[start : out.index(end, start)].splitlines()


def test_the_demo_on_real_kafka() -> None:
    check_prerequisites()
    pytest.importorskip("confluent_kafka", reason="serve --engine kafka creates topics with it")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            str(DEMO),
            "--engine",
            "kafka",
            "--records",
            str(RECORDS),
            "--partitions",
            str(PARTITIONS),
            "--group-partitions",
            str(GROUP_PARTITIONS),
            "--repeat",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=_timeout(RECORDS),
        env=env,
    )
    out = proc.stdout
    assert proc.returncode == 0, f"{out}\n--- stderr ---\n{proc.stderr[-4000:]}"
    assert "Apache Kafka brokers, Kafka's RackAwareReplicaSelector" in out, out
    assert f"topic     demo-events: {PARTITIONS} partitions, replication factor 3, " in out
    assert "leaders az-a 2, az-b 2, az-c 2" in out, out
    # The brokers count nothing per rack for us: the mock-only line is left out, not failed.
    assert "served by the brokers" not in out, out

    # run | from az-b | other racks | records/s | received | duplicates | missing | once
    rows = {
        line.split("  ")[0].strip(): line.split()
        for line in out.splitlines()
        if line.startswith(("without client_rack ", 'client_rack="az-b" '))
    }
    assert set(rows) == {"without client_rack", 'client_rack="az-b"'}, out
    with_rack = rows['client_rack="az-b"'][1:]
    assert with_rack[:2] == ["100.0%", "0.0%"], out
    assert with_rack[3:] == [f"{RECORDS:,}", "0", "0", "yes"], out
    without = rows["without client_rack"][2:]
    # Each partition read from its leader: the az-b broker leads a third of them.
    assert abs(float(without[0].rstrip("%")) - 100 / 3) < 2.0, out
    assert without[3:] == [f"{RECORDS:,}", "0", "0", "yes"], out
    by_rack = _table(out, 'client_rack="az-b":\n', "\n\n")
    assert "az-a 0 B, az-b " in by_rack[1] and by_rack[1].split("az-c ")[1].startswith("0 B")
    assert f"OK: all {RECORDS:,} records arrived exactly once in both runs" in out

    # The classic group: each member owns partitions with a replica in its rack (KIP-881)
    # and reads them there (KIP-392): 0 B from other racks.
    classic = _table(out, '3-rack group (group_id="demo-group"', "cross-rack bytes")
    members = {line.split()[0]: line.split() for line in classic if line.startswith(RACKS)}
    assert set(members) == set(RACKS), out
    owned: list[int] = []
    records = 0
    for cells in members.values():
        # az-a  0 3 6 9  0.2 MB  0 B  2,000
        assert cells[-3:-1] == ["0", "B"], cells  # other racks
        assert cells[-4] == "MB", cells  # own rack: some bytes
        owned += [int(c) for c in cells[1:-5]]
        records += int(cells[-1].replace(",", ""))
    assert sorted(owned) == list(range(GROUP_PARTITIONS)), out
    assert records == RECORDS, out
    assert any(
        line.strip().startswith("partitions owned in a rack with a replica")
        and f"{GROUP_PARTITIONS} of {GROUP_PARTITIONS} (" in line
        for line in classic
    ), out
    assert f"OK: 3-rack group: all {RECORDS:,} records arrived exactly once" in out
    assert "cross-rack bytes: 0 B." in out

    # The KIP-848 group: the real coordinator assigns; exactly once, and shown side by side.
    kip848 = _table(out, "3-rack group (KIP-848)", "cross-rack bytes")
    assert '(group_id="demo-group-kip848", group_protocol="consumer")' in kip848[0]
    assert sorted(
        int(c) for line in kip848 if line.startswith(RACKS) for c in line.split()[1:-5]
    ) == list(range(GROUP_PARTITIONS)), out
    assert f"OK: 3-rack group (KIP-848): all {RECORDS:,} records arrived exactly once" in out
    compare = out[out.index("The group part with each protocol") :]
    assert f'classic, "cooperative-sticky" (KIP-881)  {GROUP_PARTITIONS} of ' in compare
    assert "consumer (KIP-848, server assignor)" in compare
