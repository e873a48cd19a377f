"""``ServedCluster``: a cluster run by ``python -m rackafka.testing serve`` in a child process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.testing import ProduceError, ServedCluster, ServedClusterError
from rackafka.testing.__main__ import _parser

pytest.importorskip("confluent_kafka", reason="the served cluster needs confluent-kafka")
pytestmark = pytest.mark.timeout(180)


async def test_a_served_cluster_with_a_rack_aware_selector() -> None:
    async with ServedCluster(
        brokers=3,
        racks=("az-a", "az-b", "az-c"),
        replica_selector="rack-aware",
        group_initial_rebalance_delay_ms=100,
        consumer_group_heartbeat_interval_ms=500,
    ) as cluster:
        assert cluster.running and cluster._proc is not None and cluster._proc.pid != os.getpid()
        assert {n: b.rack for n, b in cluster.brokers.items()} == {1: "az-a", 2: "az-b", 3: "az-c"}
        assert all(b.host == "127.0.0.1" for b in cluster.brokers.values())
        assert cluster.bootstrap_servers.startswith("127.0.0.1:")
        infos = cluster.create_topic("served", 3, 3)
        assert [i.partition for i in infos] == [0, 1, 2]
        assert sorted(i.leader for i in infos) == [1, 2, 3]
        assert cluster.partitions("served") == infos
        assert cluster.served_bytes() == {}
        produced = await cluster.aproduce("served", 300, partition="spread")
        assert produced.count == 300 and produced.counts == {0: 100, 1: 100, 2: 100}
        async with AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            client_rack="az-b",
            auto_offset_reset="earliest",
        ) as consumer:
            consumer.assign([TopicPartition("served", p) for p in range(3)])
            received = 0
            while received < 300:
                batches = await consumer.getmany(timeout_ms=1000)
                received += sum(len(r) for r in batches.values())
            total = consumer.fetch_stats().same_rack_bytes
        # Counted on the brokers' side: broker 2 (az-b) served every byte to rack az-b.
        assert cluster.served_bytes() == {(2, "az-b"): total}
        with pytest.raises(ServedClusterError, match="unknown command"):
            cluster.command("no-such-command")
        with pytest.raises(ServedClusterError, match="create-topic"):
            cluster.command("create-topic", "x")
        assert cluster.command("move-leader", "served", 0, 3)["leader"] == 3
        proc = cluster._proc
    assert not cluster.running and proc.returncode == 0
    with pytest.raises(ServedClusterError, match="not running"):
        cluster.command("info")


def test_without_a_selector_nothing_is_counted_and_produce_is_synchronous() -> None:
    with ServedCluster(brokers=1, racks=()) as cluster:
        assert cluster.brokers[1].rack is None
        cluster.create_topic("plain", 2)
        assert cluster.produce("plain", 10, partition="spread").count == 10
        assert cluster.served_bytes() is None
        with pytest.raises(ProduceError, match=r"missing 5 record\(s\): 0-4 \(partition 7: 5\)"):
            cluster.produce("plain", 5, partition=7, timeout=3)


def test_startup_failures_are_reported() -> None:
    with pytest.raises(ServedClusterError, match=r"could not start: .*brokers"):
        ServedCluster(extra_args=["--brokers", "0"]).start()
    # An engine the server does not know: it exits with argparse's status 2.
    cluster = ServedCluster(engine="no-such-engine", stderr=-3)  # subprocess.DEVNULL
    with pytest.raises(ServedClusterError, match=r"exited \(status 2\)"):
        cluster.start()
    assert not cluster.running


def test_arguments_are_checked_and_passed_to_serve() -> None:
    with pytest.raises(ValueError, match="brokers"):
        ServedCluster(brokers=0)
    with pytest.raises(ValueError, match="replica_selector"):
        ServedCluster(replica_selector="closest")
    with pytest.raises(TypeError, match="racks"):
        ServedCluster(racks="az-a")
    with pytest.raises(ValueError, match="group_initial_rebalance_delay_ms"):
        ServedCluster(group_initial_rebalance_delay_ms=-1)
    cluster = ServedCluster(
        topics=[("t", 3, 2), ("u", 1, None)],
        replica_selector="rack-aware",
        consumer_group_session_timeout_ms=6000,
    )
    args = _parser().parse_args(cluster.command_line[3:])
    assert args.topic == [("t", 3, 2), ("u", 1, None)]
    assert args.replica_selector == "rack-aware" and args.exit_on_eof
    assert args.consumer_group_session_timeout_ms == 6000
    assert args.group_initial_rebalance_delay_ms == 0
    with pytest.raises(ServedClusterError, match="not started"):
        _ = cluster.bootstrap_servers


def test_a_server_that_never_answers_is_stopped(tmp_path: Path) -> None:
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexec sleep 600\n")
    silent.chmod(0o755)
    cluster = ServedCluster(python=str(silent), start_timeout=1.0)
    with pytest.raises(ServedClusterError, match="did not answer within 1 s to start"):
        cluster.start()
    assert not cluster.running  # stopped, not left behind
