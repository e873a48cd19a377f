"""The doctor against real brokers running Kafka's ``RackAwareReplicaSelector``.

Always with an explicit rack: ``--client-rack auto`` would look for cloud metadata
services, which tests never do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rackafka.doctor import EXIT_CODES, run_doctor
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
