"""Tests of rackafka.testing.EmbeddedCluster against librdkafka's mock brokers.

Observations go through independent clients: confluent-kafka (librdkafka) consumers and
admin client, and a minimal Fetch v11 client written for these tests (``_rawkafka``).
"""

from __future__ import annotations

import asyncio
import gc
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rackafka import errors
from rackafka.testing import (
    DISCONNECT,
    ConfluentKafkaMissingError,
    EmbeddedCluster,
    EmbeddedClusterError,
    ProduceError,
    default_value,
    delivery_timeout,
)
from rackafka.testing._clients import summarize_indexes

from . import _rawkafka
from ._confluent import consume_with_confluent

ck = pytest.importorskip("confluent_kafka", reason="the embedded cluster needs confluent-kafka")

NOT_LEADER_OR_FOLLOWER = errors.NotLeaderForPartitionError.errno
OFFSET_OUT_OF_RANGE = errors.OffsetOutOfRangeError.errno
FENCED_LEADER_EPOCH = errors.FencedLeaderEpochError.errno
UNKNOWN_LEADER_EPOCH = errors.UnknownLeaderEpochError.errno


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster() as c:
        yield c


def _refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def _consume(
    cluster: EmbeddedCluster,
    topic: str,
    expected: int,
    conf: dict[str, Any] | None = None,
    *,
    timeout: float = 15.0,
) -> list[Any]:
    """Read ``expected`` records from every partition of ``topic`` from the beginning."""
    config = {
        "bootstrap.servers": cluster.bootstrap_servers,
        "group.id": f"g-{topic}-{time.monotonic_ns()}",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    config.update(conf or {})
    consumer = ck.Consumer(config)
    try:
        partitions = [p.partition for p in cluster.partitions(topic)]
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in partitions])
        out: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.2):
                if msg.error() is None:
                    out.append(msg)
        return out
    finally:
        consumer.close()


def _leader_address(cluster: EmbeddedCluster, topic: str, p: int) -> tuple[str, int]:
    broker = cluster.brokers[cluster.partition_info(topic, p).leader]
    return broker.host, broker.port


# -- lifecycle -----------------------------------------------------------------------------


def test_start_and_close_sync() -> None:
    c = EmbeddedCluster(brokers=3)
    assert not c.running
    with pytest.raises(RuntimeError, match="not running"):
        _ = c.bootstrap_servers
    with c:
        assert c.running
        addresses = c.bootstrap_servers.split(",")
        assert addresses == [c.brokers[i].address for i in (1, 2, 3)]
        for address in addresses:
            host, _, port = address.rpartition(":")
            assert host == "127.0.0.1"
            socket.create_connection((host, int(port)), timeout=1).close()
        brokers = c.brokers
    assert not c.running
    for b in brokers.values():
        assert _refused(b.host, b.port)
    c.close()  # twice is fine
    c.stop()
    with pytest.raises(RuntimeError, match="closed"):
        c.start()


async def test_start_and_close_async() -> None:
    async with EmbeddedCluster(brokers=2, racks=("r1", "r2")) as c:
        assert c.running
        assert [b.rack for b in c.brokers.values()] == ["r1", "r2"]
        result = await c.aproduce("t", 5)
        assert result.count == 5
        broker = c.brokers[1]
    assert _refused(broker.host, broker.port)


def test_unreferenced_cluster_is_destroyed() -> None:
    c = EmbeddedCluster(brokers=1).start()
    broker = c.brokers[1]
    del c
    gc.collect()
    assert _refused(broker.host, broker.port)


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a new interpreter (this one's), which must exit with status 0."""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_interpreter_exit_without_close_is_clean(tmp_path: object) -> None:
    code = (
        "from rackafka.testing import EmbeddedCluster\n"
        "import confluent_kafka\n"
        "c = EmbeddedCluster().start()\n"
        "c.create_topic('t', 3)\n"
        "c.produce('t', 30)\n"
        "keep = c\n"
        "print('started', flush=True)\n"
    )
    proc = _run_python(code)
    assert proc.stdout.strip() == "started"
    assert "Assertion" not in proc.stderr and "Traceback" not in proc.stderr


def test_failed_start_frees_the_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    from rackafka.testing._librdkafka import Librdkafka

    destroyed: list[int] = []
    real_destroy = Librdkafka.destroy_handle

    def failing_cluster_new(self: Librdkafka, rk: int, broker_count: int) -> int:
        raise RuntimeError("simulated: no listeners")

    def recording_destroy(self: Librdkafka, rk: int) -> None:
        destroyed.append(rk)
        real_destroy(self, rk)

    monkeypatch.setattr(Librdkafka, "cluster_new", failing_cluster_new)
    monkeypatch.setattr(Librdkafka, "destroy_handle", recording_destroy)
    c = EmbeddedCluster()
    with pytest.raises(RuntimeError, match="simulated"):
        c.start()
    assert len(destroyed) == 1 and destroyed[0] != 0
    assert not c.running
    c.close()
    assert len(destroyed) == 1
    with pytest.raises(RuntimeError, match="closed"):
        c.start()


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="brokers"):
        EmbeddedCluster(brokers=0)
    with pytest.raises(TypeError, match="racks"):
        EmbeddedCluster(racks="az-a")
    with pytest.raises(ValueError, match="rack names"):
        EmbeddedCluster(racks=("az-a", ""))


def test_missing_confluent_kafka_gives_clear_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    with pytest.raises(ConfluentKafkaMissingError) as info:
        EmbeddedCluster()
    assert isinstance(info.value, ImportError)
    assert "pip install rackafka[testing]" in str(info.value)
    assert "confluent-kafka" in str(info.value)


def test_package_imports_without_confluent_kafka() -> None:
    code = (
        "import sys\n"
        "sys.modules['confluent_kafka'] = None\n"
        "import rackafka.testing, rackafka.testing.pytest_plugin\n"
        "try:\n"
        "    rackafka.testing.EmbeddedCluster()\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    proc = _run_python(code)
    assert proc.stdout.startswith("ConfluentKafkaMissingError")
    assert "pip install rackafka[testing]" in proc.stdout


# -- layout --------------------------------------------------------------------------------


def test_racks_visible_to_clients(cluster: EmbeddedCluster) -> None:
    result = cluster.describe_cluster()
    assert {n.id: n.rack for n in result.nodes} == {1: "az-a", 2: "az-b", 3: "az-c"}
    assert {n.id: n.port for n in result.nodes} == {i: b.port for i, b in cluster.brokers.items()}
    assert cluster.brokers_in_rack("az-b") == [2]
    assert cluster.rack_of(3) == "az-c"


def test_racks_round_robin_and_none() -> None:
    with EmbeddedCluster(brokers=5, racks=("x", "y")) as c:
        nodes = {n.id: n.rack for n in c.describe_cluster().nodes}
        assert nodes == {1: "x", 2: "y", 3: "x", 4: "y", 5: "x"}
    with EmbeddedCluster(brokers=2, racks=None) as c:
        assert {n.rack for n in c.describe_cluster().nodes} == {None}
        assert c.brokers[1].rack is None


def test_create_topic_spreads_leaders_and_reads_replicas(cluster: EmbeddedCluster) -> None:
    parts = cluster.create_topic("layout", 6, 3)
    md = cluster.metadata().topics["layout"]
    for info in parts:
        assert info.leader == (info.partition % 3) + 1
        assert info.leader_epoch == 1
        assert info.preferred_read_replica == -1
        assert md.partitions[info.partition].leader == info.leader
        assert info.replicas == tuple(md.partitions[info.partition].replicas)
        assert sorted(info.replicas) == [1, 2, 3]
    with pytest.raises(EmbeddedClusterError, match="TOPIC_ALREADY_EXISTS"):
        cluster.create_topic("layout", 1)
    with pytest.raises(ValueError, match="replication_factor"):
        cluster.create_topic("too-many", 1, 4)


def test_create_topic_refuses_topic_config_and_takes_a_timeout(cluster: EmbeddedCluster) -> None:
    """The mock keeps no topic configuration: asking for one fails, naming it."""
    with pytest.raises(ValueError, match=r"min\.insync\.replicas"):
        cluster.create_topic("configured", 1, config={"min.insync.replicas": 2})
    assert "configured" not in cluster.topics()
    parts = cluster.create_topic("timed-topic", 2, timeout=30.0, config={})
    assert [p.partition for p in parts] == [0, 1]


def test_create_topic_with_fewer_replicas_keeps_leaders_among_replicas(
    cluster: EmbeddedCluster,
) -> None:
    parts = cluster.create_topic("rf2", 6, 2)
    md = cluster.metadata().topics["rf2"]
    leaders = set()
    for info in parts:
        assert len(info.replicas) == 2
        assert info.leader in info.replicas
        assert md.partitions[info.partition].leader == info.leader
        leaders.add(info.leader)
    assert leaders == {1, 2, 3}


def test_leader_epoch_is_tracked(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("epochs", 1, 3)
    cluster.produce("epochs", 3, partition=0)
    info = cluster.move_leader("epochs", 0, 3)
    assert (info.leader, info.leader_epoch) == (3, 2)
    cluster.produce("epochs", 2, partition=0)
    msgs = _consume(cluster, "epochs", 5)
    # The mock stamps each stored batch with the epoch at the time it was produced.
    assert [m.leader_epoch() for m in msgs] == [1, 1, 1, 2, 2]
    host, port = _leader_address(cluster, "epochs", 0)
    assert _rawkafka.fetch(host, port, "epochs", 0, 0, leader_epoch=2).error_code == 0
    stale = _rawkafka.fetch(host, port, "epochs", 0, 0, leader_epoch=1)
    assert stale.error_code == FENCED_LEADER_EPOCH
    newer = _rawkafka.fetch(host, port, "epochs", 0, 0, leader_epoch=3)
    assert newer.error_code == UNKNOWN_LEADER_EPOCH


def test_auto_created_topic_is_looked_up(cluster: EmbeddedCluster) -> None:
    cluster.produce("auto", 4, partition="spread")
    parts = cluster.partitions("auto")
    assert len(parts) == 4  # the mock's default partition count
    assert all(p.leader in p.replicas for p in parts)
    assert all(p.leader_epoch == 0 for p in parts)  # never moved
    host, port = _leader_address(cluster, "auto", 0)
    assert _rawkafka.fetch(host, port, "auto", 0, 0, leader_epoch=0).error_code == 0
    with pytest.raises(KeyError):
        cluster.partition_info("never-created", 0)


# -- produce -------------------------------------------------------------------------------


def test_produce_consume_round_trip(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("rt", 3, 3)
    result = cluster.produce(
        "rt",
        300,
        value_size=64,
        key=lambda i: f"k{i}".encode(),
        headers=lambda i: [("idx", str(i).encode())],
        partition="spread",
    )
    assert result.count == 300
    assert result.counts == {0: 100, 1: 100, 2: 100}
    assert result.first_offsets == {0: 0, 1: 0, 2: 0}
    assert result.last_offsets == {0: 99, 1: 99, 2: 99}
    msgs = _consume(cluster, "rt", 300)
    assert len(msgs) == 300
    seen = set()
    for m in msgs:
        i = int(m.headers()[0][1])
        assert m.key() == f"k{i}".encode()
        assert m.value() == default_value(i, 64)
        assert len(m.value()) == 64
        assert m.partition() == i % 3
        seen.add(i)
    assert seen == set(range(300))


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_produce_compressed(cluster: EmbeddedCluster, compression: str) -> None:
    cluster.create_topic("z", 1, 3)
    cluster.produce("z", 50, value_size=300, compression=compression, partition=0)
    host, port = _leader_address(cluster, "z", 0)
    fetched = _rawkafka.fetch(host, port, "z", 0, 0)
    codec = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[compression]
    assert fetched.batches and all(b[2] & 0x7 == codec for b in fetched.batches)
    msgs = _consume(cluster, "z", 50)
    assert sorted(m.value() for m in msgs) == sorted(default_value(i, 300) for i in range(50))


def test_one_batch_per_fetch_and_batch_size(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("batches", 1, 3)
    cluster.produce("batches", 2000, value_size=100, partition=0, batch_size=20_000)
    host, port = _leader_address(cluster, "batches", 0)
    first = _rawkafka.fetch(host, port, "batches", 0, 0)
    assert len(first.batches) == 1  # the mock answers with exactly one stored batch
    base, count, _, _ = first.batches[0]
    assert base == 0 and 100 <= count < 2000
    middle = _rawkafka.fetch(host, port, "batches", 0, count + 1)
    assert middle.batches[0][0] == count  # the batch holding the offset, from its start
    assert first.high_watermark == 2000


def test_produce_rejects_bad_arguments(cluster: EmbeddedCluster) -> None:
    with pytest.raises(ValueError, match="compression"):
        cluster.produce("t", 1, compression="brotli")
    with pytest.raises(ValueError, match="partition"):
        cluster.produce("t", 1, partition=-2)


def test_produce_error_is_raised(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("fail", 1, 3)
    # A non-retriable error on every Produce request.
    cluster.push_request_errors("Produce", *([87] * 50))  # INVALID_RECORD
    with pytest.raises(ProduceError, match="first error") as caught:
        cluster.produce("fail", 3, partition=0, timeout=10)
    cluster.clear_request_errors("Produce")
    # Which records are missing, by number and partition.
    assert caught.value.missing == [0, 1, 2]
    assert "3 of 3 record(s) to 'fail' not delivered; missing 3 record(s): 0-2" in str(caught.value)
    assert "(partition 0: 3)" in str(caught.value)


def test_produce_transactional(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("txn", 2, 3)
    result = cluster.produce_transactional(
        "txn", [("commit", 6), ("abort", 4), ("commit", 2)], partition="spread"
    )
    assert [t.committed for t in result.transactions] == [True, False, True]
    assert result.committed_count == 8 and result.aborted_count == 4
    for p in (0, 1):
        aborted = result.aborted_ranges(p)
        assert len(aborted) == 1
        markers = result.marker_offsets(p)
        assert len(markers) == 3
        data = set(result.committed_offsets(p)) | {
            o for lo, hi in aborted for o in range(lo, hi + 1)
        }
        assert not data & set(markers)
        assert sorted(data | set(markers)) == list(range(max(markers) + 1))
    msgs = _consume(cluster, "txn", 12, {"isolation.level": "read_uncommitted"})
    assert len(msgs) == 12
    for p in (0, 1):
        offsets = sorted(m.offset() for m in msgs if m.partition() == p)
        # Control records (the markers) are not delivered as messages.
        assert not set(offsets) & set(result.marker_offsets(p))
    by_index = {int(m.value().split(b"|")[0]): m for m in msgs}
    assert sorted(by_index) == list(range(12))


def test_mock_fetch_ignores_read_committed(cluster: EmbeddedCluster) -> None:
    """Documents the mock's limitation: no aborted-transaction list, LSO = high watermark."""
    cluster.create_topic("txn-rc", 1, 3)
    result = cluster.produce_transactional("txn-rc", [("abort", 3), ("commit", 2)], partition=0)
    host, port = _leader_address(cluster, "txn-rc", 0)
    fetched = _rawkafka.fetch(host, port, "txn-rc", 0, 0, isolation_level=1)
    assert fetched.error_code == 0
    assert fetched.aborted_transactions in ([], None)
    assert fetched.last_stable_offset == fetched.high_watermark == 7
    # The stored batches are the real thing: transactional data and control batches.
    assert fetched.batches[0][:2] == (0, 3)
    assert fetched.batches[0][2] & 0x10  # isTransactional
    assert result.marker_offsets(0) == [3, 6]
    marker = _rawkafka.fetch(host, port, "txn-rc", 0, 3, isolation_level=1)
    assert marker.batches[0][0] == 3 and marker.batches[0][2] & 0x20  # isControlBatch
    # An open transaction is visible at once: the last stable offset does not hold back.
    producer = ck.Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": "open-txn"}
    )
    producer.init_transactions(10)
    producer.begin_transaction()
    for _ in range(2):
        producer.produce("txn-rc", b"pending", partition=0)
    producer.flush(10)
    pending = _rawkafka.fetch(host, port, "txn-rc", 0, 7, isolation_level=1)
    assert pending.last_stable_offset == pending.high_watermark == 9
    assert pending.batches[0][:2] == (7, 2)
    producer.abort_transaction(10)


# -- preferred read replicas ---------------------------------------------------------------


def test_emulate_rack_aware_selector(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("fff", 6, 3)
    chosen = cluster.emulate_rack_aware_selector("az-b")
    for p in range(6):
        info = cluster.partition_info("fff", p)
        expected = -1 if info.leader == 2 else 2
        assert chosen[("fff", p)] == expected
        assert info.preferred_read_replica == expected
        host, port = _leader_address(cluster, "fff", p)
        answer = _rawkafka.fetch(host, port, "fff", p, 0, rack="whatever")
        assert answer.preferred_read_replica == expected
    # Topics created later follow the emulation.
    later = cluster.create_topic("later", 3, 3)
    assert [p.preferred_read_replica for p in later] == [2, -1, 2]
    # A rack without replicas, and no rack at all: no preferred replica.
    assert set(cluster.emulate_rack_aware_selector("az-z").values()) == {-1}
    assert set(cluster.emulate_rack_aware_selector(None).values()) == {-1}


def test_emulate_rack_aware_selector_with_more_brokers_than_racks() -> None:
    with EmbeddedCluster(brokers=6, racks=("az-a", "az-b", "az-c")) as c:
        c.create_topic("six", 12, 2)
        chosen = c.emulate_rack_aware_selector("az-c")
        for (_, p), replica in chosen.items():
            info = c.partition_info("six", p)
            in_rack = [r for r in info.replicas if c.rack_of(r) == "az-c"]
            # Kafka's selector: the leader when it is in the rack (or none is), else the
            # most caught-up replica of the rack; all caught up, the highest broker id.
            if not in_rack or info.leader in in_rack:
                assert replica == -1
            else:
                assert replica == max(in_rack)
                assert replica in info.replicas
        assert any(r != -1 for r in chosen.values())


def test_consumer_with_client_rack_fetches_from_follower(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("follow", 2, 3)  # leaders 1 and 2: broker 3 leads nothing
    cluster.produce("follow", 200, partition="spread")
    chosen = cluster.emulate_rack_aware_selector("az-c")
    assert chosen == {("follow", 0): 3, ("follow", 1): 3}
    cluster.start_request_tracking()
    msgs = _consume(cluster, "follow", 200, {"client.rack": "az-c"})
    assert len(msgs) == 200
    fetches = cluster.request_counts("Fetch")
    assert fetches[3] > 0  # the follower in az-c served fetches
    assert fetches[1] > 0 and fetches[2] > 0  # the leaders' redirects
    # Control: without a preferred replica nobody fetches from broker 3.
    cluster.clear_preferred_read_replicas()
    cluster.clear_requests()
    msgs = _consume(cluster, "follow", 200, {"client.rack": "az-c"})
    assert len(msgs) == 200
    fetches = cluster.request_counts("Fetch")
    assert fetches[3] == 0 and fetches[1] > 0 and fetches[2] > 0


def test_redirect_carries_no_records_and_follower_serves(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("redir", 1, 3)  # leader 1
    cluster.produce("redir", 10, partition=0)
    cluster.set_preferred_read_replica("redir", 0, 3)
    b1, b2, b3 = (cluster.brokers[i] for i in (1, 2, 3))
    from_leader = _rawkafka.fetch(b1.host, b1.port, "redir", 0, 0, max_wait_ms=2000)
    assert from_leader.preferred_read_replica == 3
    assert not from_leader.records
    assert from_leader.elapsed < 1.0  # answered at once, MaxWait ignored
    from_follower = _rawkafka.fetch(b3.host, b3.port, "redir", 0, 0)
    assert from_follower.error_code == 0
    assert from_follower.preferred_read_replica == -1
    assert from_follower.batches and from_follower.batches[0][0] == 0
    other = _rawkafka.fetch(b2.host, b2.port, "redir", 0, 0)
    assert other.error_code == NOT_LEADER_OR_FOLLOWER
    with pytest.raises(ValueError, match="never names itself"):
        cluster.set_preferred_read_replica("redir", 0, 1)
    assert cluster.set_preferred_read_replica("redir", 0, None).preferred_read_replica == -1
    assert _rawkafka.fetch(b1.host, b1.port, "redir", 0, 0).preferred_read_replica == -1


def test_follower_watermarks(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("lag", 1, 3)  # leader 1
    cluster.produce("lag", 100, partition=0, batch_size=1)
    cluster.set_preferred_read_replica("lag", 0, 2)
    info = cluster.set_follower_watermarks("lag", 0, 5, 40)
    assert info.follower_watermarks == (5, 40)
    b2 = cluster.brokers[2]
    inside = _rawkafka.fetch(b2.host, b2.port, "lag", 0, 10)
    assert inside.error_code == 0
    assert (inside.high_watermark, inside.log_start_offset) == (40, 5)
    assert _rawkafka.fetch(b2.host, b2.port, "lag", 0, 60).error_code == OFFSET_OUT_OF_RANGE
    assert _rawkafka.fetch(b2.host, b2.port, "lag", 0, 2).error_code == OFFSET_OUT_OF_RANGE
    cluster.set_follower_watermarks("lag", 0)  # follow the leader again
    caught_up = _rawkafka.fetch(b2.host, b2.port, "lag", 0, 60)
    assert caught_up.error_code == 0 and caught_up.high_watermark == 100


def test_move_leader(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("mv", 2, 3)
    cluster.set_preferred_read_replica("mv", 0, 2)
    info = cluster.move_leader("mv", 0, 2)
    assert info.leader == 2 and info.leader_epoch == 2
    assert info.preferred_read_replica == -1  # a leader never names itself
    assert cluster.metadata().topics["mv"].partitions[0].leader == 2
    b1 = cluster.brokers[1]
    assert _rawkafka.fetch(b1.host, b1.port, "mv", 0, 0).error_code == NOT_LEADER_OR_FOLLOWER
    with pytest.raises(ValueError, match="no broker 7"):
        cluster.move_leader("mv", 0, 7)
    cluster.create_topic("mv1", 1, 1)  # a single replica: broker 1
    with pytest.raises(ValueError, match="not a replica"):
        cluster.move_leader("mv1", 0, 2)
    with pytest.raises(ValueError, match=r"partitions 0\.\.1"):
        cluster.move_leader("mv", 5, 1)
    # Under the rack emulation, the hint is recomputed for the new leader.
    cluster.emulate_rack_aware_selector("az-a")
    assert cluster.partition_info("mv", 1).preferred_read_replica == 1
    moved = cluster.move_leader("mv", 1, 1)
    assert moved.preferred_read_replica == -1
    moved = cluster.move_leader("mv", 1, 3)
    assert moved.preferred_read_replica == 1
    leaderless = cluster.move_leader("mv", 1, None)
    assert leaderless.leader == -1
    assert cluster.metadata().topics["mv"].partitions[1].leader == -1


def test_clear_preferred_read_replicas(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("clr", 3, 3)
    cluster.emulate_rack_aware_selector("az-a")
    cluster.clear_preferred_read_replicas()
    assert [p.preferred_read_replica for p in cluster.partitions("clr")] == [-1, -1, -1]
    later = cluster.create_topic("clr2", 3, 3)  # emulation ended
    assert [p.preferred_read_replica for p in later] == [-1, -1, -1]
    for p in range(3):
        host, port = _leader_address(cluster, "clr", p)
        assert _rawkafka.fetch(host, port, "clr", p, 0).preferred_read_replica == -1


# -- brokers and faults --------------------------------------------------------------------


def test_broker_down_and_up(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("bd", 3, 3)
    b2 = cluster.brokers[2]
    cluster.broker_down(2)
    assert cluster.down_brokers == {2}
    assert _refused(b2.host, b2.port)
    assert sorted(cluster.metadata().brokers) == [1, 3]
    # No failover: broker 2 still leads partition 1 in metadata.
    assert cluster.metadata().topics["bd"].partitions[1].leader == 2
    # The emulation does not pick a down replica.
    assert cluster.emulate_rack_aware_selector("az-b")[("bd", 0)] == -1
    cluster.broker_up(2)
    assert cluster.down_brokers == frozenset()
    socket.create_connection((b2.host, b2.port), timeout=1).close()
    assert cluster.brokers[2].port == b2.port  # same port after coming back
    assert sorted(cluster.metadata().brokers) == [1, 2, 3]
    with pytest.raises(ValueError, match="no broker 9"):
        cluster.broker_down(9)


def test_broker_rtt(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("slow", 1, 3)
    b1 = cluster.brokers[1]
    cluster.set_broker_rtt(1, 300)
    assert _rawkafka.fetch(b1.host, b1.port, "slow", 0, 0).elapsed >= 0.28
    cluster.set_broker_rtt(1, 0)
    assert _rawkafka.fetch(b1.host, b1.port, "slow", 0, 0).elapsed < 0.25


def test_push_request_errors(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("errs", 1, 3)
    cluster.produce("errs", 5, partition=0)
    b1 = cluster.brokers[1]
    cluster.push_request_errors("Fetch", NOT_LEADER_OR_FOLLOWER, 0)
    assert _rawkafka.fetch(b1.host, b1.port, "errs", 0, 0).error_code == NOT_LEADER_OR_FOLLOWER
    assert _rawkafka.fetch(b1.host, b1.port, "errs", 0, 0).error_code == 0
    assert _rawkafka.fetch(b1.host, b1.port, "errs", 0, 0).error_code == 0
    cluster.push_request_errors(1, DISCONNECT)
    with pytest.raises(_rawkafka.ConnectionClosed):
        _rawkafka.fetch(b1.host, b1.port, "errs", 0, 0)
    unknown = errors.UnknownTopicOrPartitionError.errno
    cluster.push_request_errors("fetch", unknown, unknown)
    cluster.clear_request_errors("fetch")
    assert _rawkafka.fetch(b1.host, b1.port, "errs", 0, 0).error_code == 0


def test_push_broker_request_errors_with_rtt(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("berrs", 1, 3)
    b1, b2 = cluster.brokers[1], cluster.brokers[2]
    cluster.push_broker_request_errors(1, "Fetch", (0, 300), FENCED_LEADER_EPOCH)
    assert cluster.pending_broker_request_errors(1, "Fetch") == 2
    # Other brokers are not affected.
    assert _rawkafka.fetch(b2.host, b2.port, "berrs", 0, 0).error_code == NOT_LEADER_OR_FOLLOWER
    delayed = _rawkafka.fetch(b1.host, b1.port, "berrs", 0, 0)
    assert delayed.error_code == 0 and delayed.elapsed >= 0.28
    assert _rawkafka.fetch(b1.host, b1.port, "berrs", 0, 0).error_code == FENCED_LEADER_EPOCH
    assert cluster.pending_broker_request_errors(1, "Fetch") == 0


def test_partition_request_errors(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("perrs", 2, 3)
    cluster.push_partition_request_errors("perrs", 0, "Fetch", UNKNOWN_LEADER_EPOCH)
    h0, p0 = _leader_address(cluster, "perrs", 0)
    h1, p1 = _leader_address(cluster, "perrs", 1)
    assert _rawkafka.fetch(h1, p1, "perrs", 1, 0).error_code == 0
    assert _rawkafka.fetch(h0, p0, "perrs", 0, 0).error_code == UNKNOWN_LEADER_EPOCH
    assert _rawkafka.fetch(h0, p0, "perrs", 0, 0).error_code == 0


def test_request_tracking(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("track", 3, 3)
    cluster.produce("track", 30, partition="spread")
    assert cluster.requests() == []  # not tracking yet
    before = time.monotonic()
    cluster.start_request_tracking()
    msgs = _consume(cluster, "track", 30)
    after = time.monotonic()
    assert len(msgs) == 30
    fetches = cluster.requests(api="Fetch")
    assert fetches
    assert {r.broker_id for r in fetches} == {1, 2, 3}  # every leader was fetched from
    for r in fetches:
        assert r.api_key == 1 and r.api_name == "Fetch"
        assert before - 0.01 <= r.timestamp <= after + 0.01
    assert [r.timestamp for r in fetches] == sorted(r.timestamp for r in fetches)
    everything = cluster.requests()
    assert {"ApiVersions", "Metadata", "Fetch"} <= {r.api_name for r in everything}
    assert cluster.requests(broker_id=2) == [r for r in everything if r.broker_id == 2]
    cluster.clear_requests()
    assert cluster.requests(api="Fetch") == []
    cluster.stop_request_tracking()
    host, port = _leader_address(cluster, "track", 0)
    _rawkafka.fetch(host, port, "track", 0, 0)
    assert cluster.requests() == []


def test_cap_api_version(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("old", 2, 3)  # leaders 1 and 2
    cluster.produce("old", 40, partition="spread")
    original = cluster.api_versions()[1]
    assert original[1] >= 11
    cluster.cap_api_version("Fetch", 0, 10)
    for broker_id in (1, 2, 3):
        assert cluster.api_versions(broker_id)[1] == (0, 10)
    b1 = cluster.brokers[1]
    with pytest.raises(_rawkafka.ConnectionClosed):  # above the max: connection closed
        _rawkafka.fetch(b1.host, b1.port, "old", 0, 0, version=11)
    assert _rawkafka.fetch(b1.host, b1.port, "old", 0, 0, version=10).error_code == 0
    # A broker without Fetch v11 cannot send preferred_read_replica: all reads hit leaders.
    cluster.emulate_rack_aware_selector("az-c")
    cluster.start_request_tracking()
    msgs = _consume(cluster, "old", 40, {"client.rack": "az-c"})
    assert len(msgs) == 40
    fetches = cluster.request_counts("Fetch")
    assert fetches[3] == 0 and fetches[1] > 0 and fetches[2] > 0
    cluster.restore_api_version("Fetch")
    assert cluster.api_versions()[1] == original
    with pytest.raises(ValueError, match="not capped"):
        cluster.restore_api_version("Fetch")


def test_coordinator_and_delete_records(cluster: EmbeddedCluster) -> None:
    cluster.create_topic("misc", 1, 3)
    cluster.produce("misc", 10, partition=0, batch_size=1)
    cluster.delete_records("misc", 0, 4)
    host, port = _leader_address(cluster, "misc", 0)
    answer = _rawkafka.fetch(host, port, "misc", 0, 4)
    assert answer.log_start_offset == 4
    assert _rawkafka.fetch(host, port, "misc", 0, 1).error_code == OFFSET_OUT_OF_RANGE
    cluster.set_coordinator("group", "g1", 3)
    with pytest.raises(ValueError, match="key_type"):
        cluster.set_coordinator("broker", "g1", 3)


def test_methods_need_a_running_cluster() -> None:
    c = EmbeddedCluster()
    with pytest.raises(RuntimeError, match="not running"):
        c.create_topic("t", 1)
    with pytest.raises(RuntimeError, match="not running"):
        c.start_request_tracking()


def _read_with_confluent(c: EmbeddedCluster, topic: str, count: int) -> list[Any]:
    """Every record of ``topic``, read by the reference client (confluent-kafka)."""
    conf = {"bootstrap.servers": c.bootstrap_servers, "group.id": f"read-{topic}"}
    return consume_with_confluent(conf, topic, count)


@pytest.mark.parametrize("client", ["rackafka", "confluent-kafka"])
async def test_aproduce_writes_the_same_records_with_either_client(client: str) -> None:
    async with EmbeddedCluster(brokers=3, racks=("a", "b", "c")) as c:
        c.create_topic("ap", 3)
        result = await c.aproduce(
            "ap",
            300,
            client=client,
            key=lambda i: f"k{i}" if i % 5 else None,
            value=lambda i: b"v%d" % i,
            headers=lambda i: [("n", str(i).encode())] if i % 2 else None,
            partition="spread",
            timestamp_ms=1_700_000_000_000,
            compression="lz4",
            batch_size=4000,
        )
        assert result.count == 300 and result.counts == {0: 100, 1: 100, 2: 100}
        assert result.first_offsets == {0: 0, 1: 0, 2: 0}
        assert result.last_offsets == {0: 99, 1: 99, 2: 99}
        got = _read_with_confluent(c, "ap", 300)
        assert len(got) == 300
        for m in got:
            i = int(m.value()[1:])
            assert m.partition() == i % 3 and m.offset() == i // 3
            assert m.key() == (f"k{i}".encode() if i % 5 else None)
            assert (m.headers() or None) == ([("n", str(i).encode())] if i % 2 else None)
            assert m.timestamp()[1] == 1_700_000_000_000
        # Keyed records without a partition land where the Java client would put them.
        await c.aproduce("keyed", 50, client=client, key=lambda i: f"user-{i % 7}")
        partitions: dict[bytes, set[int]] = {}
        for m in _read_with_confluent(c, "keyed", 50):
            partitions.setdefault(m.key(), set()).add(m.partition())
        assert len(partitions) == 7 and all(len(p) == 1 for p in partitions.values())


async def test_aproduce_reports_undelivered_records() -> None:
    async with EmbeddedCluster(brokers=2) as c:
        c.create_topic("down", 1, replication_factor=2)
        c.move_leader("down", 0, 2)
        c.broker_down(2)  # bootstrap works (broker 1); the leader does not answer
        with pytest.raises(ProduceError, match=r"not delivered within 1\.5s") as caught:
            await c.aproduce("down", 10, timeout=1.5, partition="spread")
        assert caught.value.missing == list(range(10))
        assert "missing 10 record(s): 0-9 (partition 0: 10)" in str(caught.value)
        with pytest.raises(ValueError, match="client must be"):
            await c.aproduce("down", 1, client="kafka-python")


def test_produce_time_limits_grow_with_the_work() -> None:
    assert delivery_timeout(0) >= 60
    assert delivery_timeout(300_000) > delivery_timeout(10_000) > delivery_timeout(0)
    assert delivery_timeout(1000, value_size=1_000_000) > delivery_timeout(1000)
    assert summarize_indexes([5, 1, 2, 3, 9, 3]) == "5 record(s): 1-3, 5, 9"
    assert summarize_indexes(range(0, 40, 2), limit=3).endswith("0, 2, 4, ... (17 more ranges)")


async def test_produce_without_a_timeout_gives_up_when_nothing_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No total limit by default: a produce call waits while records are acknowledged, and
    # fails, naming the records, once nothing moved for STALL_SECONDS (shortened here).
    from rackafka.testing import _clients, _produce

    monkeypatch.setattr(_produce, "STALL_SECONDS", 2.0)
    monkeypatch.setattr(_clients, "STALL_SECONDS", 2.0)
    async with EmbeddedCluster(brokers=2) as c:
        c.create_topic("stalled", 1, replication_factor=2)
        c.move_leader("stalled", 0, 2)
        c.broker_down(2)
        # Whichever comes first: nothing moved for 2 s, or the producer failed the records
        # after its request_timeout_ms (also 2 s) with the error that stopped them.
        with pytest.raises(
            ProduceError,
            match=r"(none sent or acknowledged for 2s|KafkaConnectionError).*"
            r"|missing 10 record\(s\): 0-9",
        ) as caught:
            await c.aproduce("stalled", 10, partition="spread")
        assert "missing 10 record(s): 0-9" in str(caught.value)
        assert caught.value.missing == list(range(10))
        with pytest.raises(
            ProduceError,
            match=r"\(none acknowledged for 2s\); missing 5 record\(s\): 0-4 \(partition 0: 5\)$",
        ) as caught:
            await asyncio.to_thread(c.produce, "stalled", 5, partition=0)
        assert caught.value.missing == list(range(5))
