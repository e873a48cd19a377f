"""The doctor against real brokers running Kafka's ``RackAwareReplicaSelector``.

Always with an explicit rack: ``--client-rack auto`` would look for cloud metadata
services, which tests never do.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from rackafka import AIOKafkaAdminClient
from rackafka.admin import NewTopic
from rackafka.doctor import EXIT_CODES, main, run_doctor
from rackafka.testing import KafkaCluster

from ._flow import unique

PARTITIONS = 6
RECORDS = 600


@pytest.fixture(scope="module")
def doctor_topics(kafka: KafkaCluster) -> tuple[str, str]:
    """A topic with a replica of every partition in every rack, and one with 2 replicas
    (a third of its partitions have none in any one rack), both holding records."""
    full = unique("doctor-rf3")
    partial = unique("doctor-rf2")
    kafka.create_topic(full, PARTITIONS, 3)
    kafka.create_topic(partial, PARTITIONS, 2)
    for topic in (full, partial):
        assert kafka.produce(topic, RECORDS, partition="spread").count == RECORDS
    return full, partial


async def test_in_zone_reads_through_kafkas_selector(
    kafka: KafkaCluster, doctor_topics: tuple[str, str]
) -> None:
    full, _ = doctor_topics
    report = await run_doctor(
        kafka.bootstrap_servers, [full], client_rack="az-b", sample_seconds=60
    )
    assert report.problems == [], report.to_dict()
    assert report.exit_code == 0
    assert report.client_rack == "az-b" and report.rack_source == "--client-rack"
    assert {(b["node_id"], b["rack"]) for b in report.brokers} == {
        (1, "az-a"), (2, "az-b"), (3, "az-c"),
    }  # fmt: skip
    topic = report.topics[full]
    assert topic["share_with_replica_in_rack"] == 1.0
    assert topic["leaders_in_rack"] == PARTITIONS // 3
    # the leaders in az-a and az-c each named broker 2 (az-b) for their partitions
    selector = report.selector
    assert selector["status"] == "active", selector
    assert selector["probed"] == selector["named_a_replica"] == PARTITIONS - PARTITIONS // 3
    assert {d["preferred_read_replica"] for d in selector["details"]} == {2}
    sample = report.sample
    assert sample["records"] == RECORDS
    assert sample["bytes"] > 0 and sample["bytes_by_rack"] == {"az-b": sample["bytes"]}
    assert sample["cross_rack_bytes"] == 0
    assert sample["partitions_not_read_in_rack"] == []


async def test_partitions_without_a_replica_in_the_rack(
    kafka: KafkaCluster, doctor_topics: tuple[str, str]
) -> None:
    _, partial = doctor_topics
    report = await run_doctor(
        kafka.bootstrap_servers, [partial], client_rack="az-c", sample_seconds=60
    )
    # replicas [1, 2], [2, 3], [3, 1], ...: partitions 0 and 3 have none in az-c
    assert report.topics[partial]["without_replica_in_rack"] == [0, 3]
    assert report.exit_code == EXIT_CODES["no-replica-in-rack"], report.to_dict()
    assert report.selector["status"] == "active"
    fallbacks = report.sample["partitions_not_read_in_rack"]
    assert sorted(f["partition"] for f in fallbacks) == [0, 3]
    assert {f["reason"] for f in fallbacks} == {"no in-sync replica in this rack"}
    assert report.sample["cross_rack_bytes"] > 0
    assert {p["code"] for p in report.problems} == {"no-replica-in-rack", "cross-rack-reads"}


def test_command_line_over_sasl_ssl(kafka: KafkaCluster, doctor_topics: tuple[str, str]) -> None:
    """``python -m rackafka doctor`` on the SASL_SSL listener, the password from the
    environment (never on the command line, never in the output)."""
    full, _ = doctor_topics
    front = kafka.front
    assert front is not None and front.ca_file is not None
    user, password = next(iter(front.users.items()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RACKAFKA_")}
    env["RACKAFKA_SASL_PASSWORD"] = password
    proc = subprocess.run(
        [
            sys.executable, "-m", "rackafka", "doctor",
            "--bootstrap-servers", front.bootstrap_servers,
            "--topic", full,
            "--client-rack", "az-a",
            "--security-protocol", "SASL_SSL",
            "--sasl-mechanism", "SCRAM-SHA-512",
            "--sasl-username", user,
            "--ssl-cafile", front.ca_file,
            "--sample-seconds", "60",
            "--json",
        ],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert password not in proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["client_rack"] == "az-a"
    assert report["selector"]["status"] == "active"
    assert report["sample"]["records"] == RECORDS
    assert report["sample"]["bytes_by_rack"] == {"az-a": report["sample"]["bytes"]}
    text = subprocess.run(
        [
            sys.executable, "-m", "rackafka", "doctor",
            "--bootstrap-servers", kafka.bootstrap_servers,
            "--topic", full, "--client-rack", "az-a", "--sample-seconds", "60",
        ],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert text.returncode == 0, text.stdout + text.stderr
    assert "selector:  active" in text.stdout
    assert "OK: reads stay in the zone" in text.stdout


# -- a rack without a replica: the proposal, and --apply ---------------------------------------

#: Replicas only in az-b (broker 2) and az-c (broker 3): none of them in az-a (broker 1).
OUTSIDE_AZ_A = {0: [2, 3], 1: [3, 2], 2: [2, 3], 3: [3, 2]}


@pytest.fixture(scope="module")
def outside_az_a(kafka: KafkaCluster) -> Iterator[str]:
    """A topic whose partitions have replicas in az-b and az-c only, holding records;
    deleted afterwards."""
    name = unique("doctor-no-az-a")

    async def create() -> None:
        async with AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers) as admin:
            resp = await admin.create_topics(
                [NewTopic(name, -1, -1, replica_assignments=OUTSIDE_AZ_A)]
            )
            assert resp.topic_errors == [(name, 0, None)]

    async def delete() -> None:
        async with AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers) as admin:
            await admin.delete_topics([name], timeout_ms=30000)

    asyncio.run(create())
    try:
        assert kafka.produce(name, 400, partition="spread").count == 400
        yield name
    finally:
        asyncio.run(delete())


def _replicas(kafka: KafkaCluster, topic: str) -> dict[int, list[int]]:
    return {p.partition: list(p.replicas) for p in kafka.partitions(topic)}


def test_the_proposal_is_printed_and_nothing_changes_without_apply(
    kafka: KafkaCluster,
    outside_az_a: str,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "reassign.json"
    code = main(
        [
            "--bootstrap-servers", kafka.bootstrap_servers,
            "--topic", outside_az_a,
            "--client-rack", "az-a",
            "--sample-seconds", "0",
            "--reassignment-file", str(path),
        ],
        environ={},
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == EXIT_CODES["no-replica-in-rack"], out
    assert "reassign:  4 partition(s) lack a replica in az-a; " in out, out
    assert f"{outside_az_a}[0]: [2, 3] -> [2, 3, 1] (adds 1; replication factor 2 -> 3, " in out
    written = json.loads(path.read_text())
    assert written == {
        "version": 1,
        "partitions": [
            {"topic": outside_az_a, "partition": p, "replicas": [*reps, 1]}
            for p, reps in sorted(OUTSIDE_AZ_A.items())
        ],
    }
    assert _replicas(kafka, outside_az_a) == OUTSIDE_AZ_A


async def test_apply_gives_every_partition_a_replica_in_the_rack(
    kafka: KafkaCluster, outside_az_a: str
) -> None:
    before = await run_doctor(
        kafka.bootstrap_servers, [outside_az_a], client_rack="az-a", sample_seconds=0
    )
    assert before.topics[outside_az_a]["without_replica_in_rack"] == [0, 1, 2, 3]
    proposal = before.reassignment
    assert [c["added"] for c in proposal["partitions"]] == [[1]] * 4
    assert proposal["sizes_from"] == "DescribeLogDirs"
    sizes = [c["size"] for c in proposal["partitions"]]
    assert all(s > 0 for s in sizes), proposal  # 100 records of ~100 B each
    assert proposal["bytes_to_move"] == sum(sizes)
    assert proposal["unknown_sizes"] == []
    lines: list[str] = []
    after = await run_doctor(
        kafka.bootstrap_servers,
        [outside_az_a],
        client_rack="az-a",
        sample_seconds=60,
        apply=True,
        apply_timeout=120,
        progress=lines.append,
    )
    assert after.applied["completed"] is True, (after.applied, lines)
    assert after.applied["partitions"] == 4
    assert lines[0].startswith("reassigning 4 partition(s): 4 gain a replica")
    assert lines[-2].startswith("reassignment done in ") and lines[-1] == "checking again"
    # the second check: every partition has an in-sync replica in az-a and is read from it
    assert after.topics[outside_az_a]["share_with_replica_in_rack"] == 1.0
    assert after.reassignment == {}
    assert after.problems == [], after.to_dict()
    assert after.sample["bytes_by_rack"] == {"az-a": after.sample["bytes"]}
    assert _replicas(kafka, outside_az_a) == {p: [*r, 1] for p, r in OUTSIDE_AZ_A.items()}
