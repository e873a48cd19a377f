"""End-to-end consumer benchmark: rackafka against aiokafka, kafka-python and confluent-kafka.

One cluster of 3 brokers in racks az-a, az-b, az-c serves the run (``--engine``):

``mock`` (the default)
    librdkafka's mock brokers inside this process (``EmbeddedCluster``, see
    ``docs/testing.rst``).
``kafka``
    real Apache Kafka brokers (``KafkaCluster``: three JVMs on 127.0.0.1 running Kafka's
    ``RackAwareReplicaSelector``; Java 17+, jars cached by ``make kafka-jars``). The
    brokers run with the full JIT and a 512 MiB heap (:data:`KAFKA_JVM_OPTIONS`), and share
    the machine's cores with the clients.

Each dataset is produced once, in ~1 MB producer batches (the mock answers a Fetch with
exactly one batch per partition), into a topic with many partitions (the mock keeps at most
5 MiB per partition). Real Kafka has neither limit (a Fetch returns up to
``max_partition_fetch_bytes`` per partition, several batches); the datasets are the same on
both engines so that the two sets of ratios compare. Then every client consumes the same
data, each in a fresh child process (same Python), ``--repeat`` times; the median is
reported.

Every client: ``auto_offset_reset`` earliest, manual assignment of all partitions (no group),
CRC checks on, default fetch sizes. Every client's loop touches each record
(``len(value)``), and checks per batch that offsets continue where the previous batch of the
partition ended. Measured in the child: throughput from the first record to the last, time
from process spawn to the last record, CPU seconds of the whole process
(``getrusage(RUSAGE_SELF)``: user + system, all threads) and peak RSS (``ru_maxrss``).

Clients (``--clients``; a client whose package is missing is reported as skipped):

==================  ===========================================================================
``rackafka``        ``getmany()``
``rackafka-getone`` ``getone()`` (on the first ``getone`` records only)
``rackafka-rack``   ``getmany()`` with ``client_rack="az-b"``: on the mock, the cluster
                    emulates ``RackAwareReplicaSelector`` for az-b; on Kafka, the brokers' own
                    selector chooses; reports the same-rack byte share
``aiokafka-c``      aiokafka ``getmany()`` with its C extensions
``aiokafka-py``     aiokafka ``getmany()``, pure Python (``AIOKAFKA_NO_EXTENSIONS=1``)
``aiokafka-getone`` aiokafka ``getone()`` with its C extensions
``kafka-python``    kafka-python ``poll()``
``confluent``       confluent-kafka's batch ``consume(num_messages=...)``
                    (``fetch.queue.backoff.ms=10``, ``check.crcs=true``)
``confluent-tuned`` the same loop, with librdkafka tuned for throughput (below) and
                    ``consume()`` asking for ~4 MB of records a call
``*-front``         rackafka / aiokafka-C through a PLAINTEXT ``rackafka.testing.SecureFront``
                    (a Python proxy in the benchmark's process: its own cost, for reference)
``*-sasl-ssl``      the same through a SASL_SSL front (TLS + SCRAM-SHA-512): the cost of
                    security is the ratio to ``*-front``
==================  ===========================================================================

``confluent-tuned`` is the client a user picks when Python is too slow, set up as a
throughput-minded user would (:data:`CONFLUENT_TUNED`). librdkafka's configuration
reference documents a high-level consumer that prefetches into one local queue bounded by
``queued.max.messages.kbytes`` (64 MiB by default) and, once that bound is reached, waits
``fetch.queue.backoff.ms`` (1 s by default) before fetching again; its introduction ranks
the batch consume call above one message at a time. Confluent's "Optimize clients for throughput"
guide raises ``fetch.min.bytes`` (to ~100 KB) so that brokers answer with fuller responses.
So: ``queued.max.messages.kbytes`` 256 MiB (4x), ``fetch.queue.backoff.ms`` 10 ms (as
``confluent``), ``max.partition.fetch.bytes`` 10 MiB (10x: several batches of a partition
per Fetch on real Kafka; the mock answers one batch anyway), ``fetch.max.bytes`` 100 MiB
(2x; Kafka brokers cap a response at their own ``fetch.max.bytes``, 55 MiB by default),
``fetch.min.bytes`` 100,000 with ``fetch.wait.max.ms`` 100 (fuller responses; the shorter
wait bounds the last, partial responses at the end of the backlog), ``check.crcs`` on like
every client, and ``consume(num_messages=...)`` for ~4 MB of records a call
(:data:`TUNED_CALL_BYTES`; ``--max-records`` overrides it as for every client). It touches
every value as the others do. Each rate is also shown relative to it (``vs cfT``).

The slow clients (pure-Python aiokafka, kafka-python) and the ``getone`` clients read a
prefix of each dataset (column ``records``) so that the default run fits in ~10 minutes.
Each batch call (``getmany``/``poll``/``consume``) asks for at most ~1 MB of records
(10,000 of 100 B, 100 of 10 KB; ``--max-records``): otherwise the first ``getmany`` would
decode everything prefetched before the first record is seen, and the "first record to last
record" window would miss most of the work.

Usage::

    python benchmarks/consume.py [--engine mock|kafka] [--quick] [--repeat N]
        [--clients a,b] [--datasets x,y]

Results: a table on stdout (with the load average before and after the run: the machine may
be shared), ``benchmarks/results/consume.json`` and ``benchmarks/results/consume.png`` for
the mock, ``consume-kafka.json`` and ``consume-kafka.png`` for real Kafka. ``--profile``
also writes a cProfile file per rackafka run to
``benchmarks/results/profile-<client>-<dataset>.prof``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RACKS = ("az-a", "az-b", "az-c")
CLIENT_RACK = "az-b"
BATCH_BYTES = 1_000_000  # producer batch.size: one ~1 MB batch per partition per Fetch
MAX_PARTITION_BYTES = int(4.5 * 1024 * 1024)  # the mock keeps 5 MiB per partition
RECORD_OVERHEAD = 12  # bytes per record in a v2 batch besides the value (null key)
CALL_BYTES = 1_000_000  # a getmany/poll/consume call returns at most ~1 MB of records
TUNED_CALL_BYTES = 4_000_000  # confluent-tuned's consume() asks for ~4 MB of records
#: librdkafka consumer settings of ``confluent-tuned`` (see the module docstring).
CONFLUENT_TUNED: dict[str, Any] = {
    "queued.max.messages.kbytes": 256 * 1024,
    "fetch.queue.backoff.ms": 10,
    "max.partition.fetch.bytes": 10 * 1024 * 1024,
    "fetch.max.bytes": 100 * 1024 * 1024,
    "fetch.min.bytes": 100_000,
    "fetch.wait.max.ms": 100,
}
STALL_S = 60.0  # a child that gets no record for this long gives up
ENGINES = ("mock", "kafka")
#: The real brokers' JVM options: unlike the test tier's (C1 only, for a quick start), the
#: full JIT, so that the brokers are not what the clients wait for.
KAFKA_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms256m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
)


def open_cluster(engine: str) -> Any:
    """The run's 3-broker, 3-rack cluster (not started): the mock or real Kafka."""
    if engine == "kafka":
        from rackafka.testing import KafkaCluster

        return KafkaCluster(brokers=3, racks=RACKS, jvm_options=KAFKA_JVM_OPTIONS)
    from rackafka.testing import EmbeddedCluster

    return EmbeddedCluster(brokers=3, racks=RACKS)


def result_name(engine: str) -> str:
    """The results' file stem: ``consume`` (mock) or ``consume-kafka``."""
    return "consume" if engine == "mock" else f"consume-{engine}"


def rackafka_origin() -> str:
    """Which rackafka the benchmark measures: ``"rackafka <version> from <dir>"``, with a
    warning when it is not this checkout's ``src`` (a venv installed from another
    checkout measures that one; set ``PYTHONPATH=src`` to measure this one)."""
    import rackafka

    where = Path(rackafka.__file__).resolve().parent
    text = f"rackafka {rackafka.__version__} from {where}"
    if where != Path(__file__).resolve().parents[1] / "src" / "rackafka":
        text += " (NOT this checkout's src)"
    return text


def load_average() -> str:
    """``os.getloadavg()`` as ``"1.00 0.80 0.50"`` (1, 5, 15 minutes)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


# -- datasets and clients --------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """A topic filled once and read by every client."""

    name: str
    value_size: int
    compression: str
    partitions: int
    per_partition: int
    slow_limit: int  # records read by the slow clients
    getone_limit: int  # records read by the getone clients
    #: "events": keys, JSON values of varying size, two headers (see event_factory);
    #: "json": the same records, and every client deserializes the values with json.loads.
    shape: str = "fixed"

    @property
    def records(self) -> int:
        return self.partitions * self.per_partition

    @property
    def max_records(self) -> int:
        """Most records per getmany/poll/consume call: about one producer batch."""
        return max(1, CALL_BYTES // self.value_size)

    @property
    def tuned_max_records(self) -> int:
        """Most records per ``consume()`` call of confluent-tuned: ~4 MB of records."""
        return max(1, TUNED_CALL_BYTES // self.value_size)

    @property
    def topic(self) -> str:
        if self.shape == "json":  # the events topic, read with json.loads
            return "bench-" + self.name.lower().replace("json", "events")
        return "bench-" + self.name.lower().replace(" ", "")

    def check(self) -> None:
        size = self.per_partition * (self.value_size + RECORD_OVERHEAD)
        if size > MAX_PARTITION_BYTES:
            raise ValueError(
                f"dataset {self.name}: {size} bytes per partition would exceed the mock's "
                f"retention; use more partitions"
            )


def _datasets(quick: bool) -> list[Dataset]:
    if quick:
        return [
            Dataset("100B", 100, "none", 32, 15_625, 60_000, 100_000),
            Dataset("100B-lz4", 100, "lz4", 32, 15_625, 60_000, 100_000),
            Dataset("10KB", 10_000, "none", 32, 400, 2_000, 12_800),
            Dataset("10KB-lz4", 10_000, "lz4", 32, 400, 2_000, 12_800),
            Dataset("events", EVENT_SIZE, "none", 32, 3_125, 20_000, 40_000, "events"),
            Dataset("events-lz4", EVENT_SIZE, "lz4", 32, 3_125, 20_000, 40_000, "events"),
            Dataset("json", EVENT_SIZE, "none", 32, 3_125, 20_000, 40_000, "json"),
        ]
    return [
        Dataset("100B", 100, "none", 96, 31_250, 200_000, 300_000),
        Dataset("100B-lz4", 100, "lz4", 96, 31_250, 200_000, 300_000),
        Dataset("10KB", 10_000, "none", 256, 400, 4_000, 102_400),
        Dataset("10KB-lz4", 10_000, "lz4", 256, 400, 4_000, 102_400),
        Dataset("events", EVENT_SIZE, "none", 96, 3_125, 50_000, 100_000, "events"),
        Dataset("events-lz4", EVENT_SIZE, "lz4", 96, 3_125, 50_000, 100_000, "events"),
        Dataset("json", EVENT_SIZE, "none", 96, 3_125, 50_000, 100_000, "json"),
    ]


@dataclass(frozen=True)
class Client:
    """One way of consuming: a library, an API and its settings."""

    name: str
    library: str  # rackafka | aiokafka | kafka-python | confluent
    api: str  # getmany | getone | poll | consume
    limit: str = "all"  # all | slow | getone
    env: dict[str, str] = field(default_factory=dict)
    rack: str | None = None
    extension: str | None = None  # aiokafka: "c" or "py"
    #: None: straight to the brokers; "front": through a PLAINTEXT SecureFront (the
    #: proxy's own cost); "sasl_ssl": through a SASL_SSL SecureFront (SCRAM-SHA-512).
    via: str | None = None
    #: confluent: librdkafka tuned for throughput (CONFLUENT_TUNED, bigger consume() calls)
    tuned: bool = False

    def count(self, ds: Dataset) -> int:
        if self.limit == "slow":
            return min(ds.records, ds.slow_limit)
        if self.limit == "getone":
            return min(ds.records, ds.getone_limit)
        return ds.records


CLIENTS = [
    Client("rackafka", "rackafka", "getmany"),
    Client("rackafka-getone", "rackafka", "getone", limit="getone"),
    Client("rackafka-rack", "rackafka", "getmany", rack=CLIENT_RACK),
    Client("aiokafka-c", "aiokafka", "getmany", extension="c"),
    Client(
        "aiokafka-py",
        "aiokafka",
        "getmany",
        limit="slow",
        env={"AIOKAFKA_NO_EXTENSIONS": "1"},
        extension="py",
    ),
    Client("aiokafka-getone", "aiokafka", "getone", limit="getone", extension="c"),
    Client("kafka-python", "kafka-python", "poll", limit="slow"),
    Client("confluent", "confluent", "consume"),
    Client("confluent-tuned", "confluent", "consume", tuned=True),
    Client("rackafka-front", "rackafka", "getmany", via="front"),
    Client("rackafka-sasl-ssl", "rackafka", "getmany", via="sasl_ssl"),
    Client("aiokafka-c-front", "aiokafka", "getmany", extension="c", via="front"),
    Client("aiokafka-c-sasl-ssl", "aiokafka", "getmany", extension="c", via="sasl_ssl"),
]
#: The SASL_SSL front's only user (SCRAM-SHA-512).
BENCH_USER = ("bench", "bench-password")
REFERENCE = "aiokafka-c"
#: The second reference: each rate relative to librdkafka tuned for throughput ("vs cfT").
TUNED_REFERENCE = "confluent-tuned"
SAME_API_REFERENCE = {"getone": "aiokafka-getone"}


@functools.cache
def make_corpus() -> bytes:
    """Text-like filler: compressible (lz4 about 2x), but not trivially."""
    rnd = random.Random(42)
    letters = b"abcdefghijklmnopqrstuvwxyz"
    words = [bytes(rnd.choice(letters) for _ in range(rnd.randint(2, 9))) for _ in range(500)]
    return b" ".join(rnd.choice(words) for _ in range(400_000))


#: Average value size of the events datasets (for sizing; values vary from 60 to 1200 B).
EVENT_SIZE = 320
_EVENT_TYPES = ("page_view", "click", "add_to_cart", "purchase", "search")


@functools.lru_cache(maxsize=8)
def event_record(n: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    """Record ``n`` of the events datasets, the same in every process: key ``user-NNNNNN``,
    a JSON value of 60-400 bytes (one in ten 400-1200), headers ``traceparent`` (W3C) and
    ``content-type``."""
    rnd = random.Random(n)
    key = b"user-%06d" % rnd.randrange(1_000_000)
    size = rnd.randint(400, 1200) if rnd.random() < 0.1 else rnd.randint(60, 400)
    head = (
        f'{{"user":"{key.decode()}","event":"{_EVENT_TYPES[n % 5]}",'
        f'"ts":{1_700_000_000_000 + n},"n":{n},"payload":"'
    )
    pad = max(0, size - len(head) - 2)
    corpus = make_corpus()
    start = (n * 7919) % (len(corpus) - pad - 1)
    text = corpus[start : start + pad].decode("ascii").replace('"', " ").replace("\\", " ")
    value = (head + text + '"}').encode()
    trace = f"00-{rnd.getrandbits(128):032x}-{rnd.getrandbits(64):016x}-01"
    return key, value, [("traceparent", trace.encode()), ("content-type", b"application/json")]


def value_factory(size: int, base: int) -> Callable[[int], bytes]:
    """Values of exactly ``size`` bytes: ``"<index>|"`` then a slice of the corpus."""
    corpus = make_corpus()
    span = len(corpus) - size - 1

    def value(i: int) -> bytes:
        n = base + i
        prefix = b"%d|" % n
        start = (n * 7919) % span
        return (prefix + corpus[start : start + size])[:size]

    return value


# -- the child: one client, one dataset, one run ------------------------------------------------


class Tally:
    """Counts records and bytes, checks offsets per batch, takes the times."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.n = 0
        self.nbytes = 0
        self.n_first = 0
        self.t_start = 0.0
        self.t_first = 0.0
        self.t_last = 0.0
        self.wall_first = 0.0
        self.next_offset: dict[int, int] = {}
        self.offset_errors = 0

    def start(self) -> None:
        """Called right before the first fetch call (getmany/getone/poll/consume)."""
        self.t_start = time.perf_counter()

    def batch(self, partition: int, first: int, last: int, count: int, nbytes: int) -> None:
        if self.n == 0:
            self.t_first = time.perf_counter()
            self.wall_first = time.time()
            self.n_first = count
        if first != self.next_offset.get(partition, 0):
            self.offset_errors += 1
        self.next_offset[partition] = last + 1
        self.n += count
        self.nbytes += nbytes

    def one(self, nbytes: int) -> None:
        if self.n == 0:
            self.t_first = time.perf_counter()
            self.wall_first = time.time()
            self.n_first = 1
        self.n += 1
        self.nbytes += nbytes

    @property
    def done(self) -> bool:
        return self.n >= self.target


class Unsupported(Exception):
    """The client cannot read this dataset (e.g. a missing codec package)."""


class Stalled(RuntimeError):
    """No record arrived for ``STALL_S`` seconds."""


def _stall_check(tally: Tally, last_progress: float) -> float:
    now = time.monotonic()
    if now - last_progress > STALL_S:
        raise Stalled(f"no record for {STALL_S:.0f}s at {tally.n}/{tally.target}")
    return now


async def run_asyncio_client(spec: dict[str, Any], tally: Tally) -> dict[str, Any]:
    """rackafka or aiokafka: same code, since rackafka is a drop-in."""
    extra: dict[str, Any] = {}
    if spec["library"] == "rackafka":
        import rackafka as lib

        extra["version"] = lib.__version__
    else:
        import aiokafka as lib
        from aiokafka.record import default_records

        module = default_records.DefaultRecordBatch.__module__
        extra["version"] = lib.__version__
        extra["records_module"] = module
        has_c = "_crecords" in module
        if spec["extension"] == "c" and not has_c:
            raise ModuleNotFoundError("aiokafka's C extension is not available")
        if spec["extension"] == "py" and has_c:
            raise RuntimeError("AIOKAFKA_NO_EXTENSIONS=1 did not disable the C extension")
    kwargs: dict[str, Any] = {
        "bootstrap_servers": spec["bootstrap"],
        "auto_offset_reset": "earliest",
    }
    if spec["rack"]:
        kwargs["client_rack"] = spec["rack"]
    json_values = spec.get("shape") == "json"
    if json_values:
        kwargs["value_deserializer"] = json.loads
    if spec.get("ca_file"):
        from importlib import import_module

        helpers = import_module(f"{lib.__name__}.helpers")
        kwargs.update(
            security_protocol="SASL_SSL",
            ssl_context=helpers.create_ssl_context(cafile=spec["ca_file"]),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=BENCH_USER[0],
            sasl_plain_password=BENCH_USER[1],
        )
    consumer = lib.AIOKafkaConsumer(**kwargs)
    await consumer.start()
    try:
        topic = spec["topic"]
        consumer.assign([lib.TopicPartition(topic, p) for p in range(spec["partitions"])])
        progress = time.monotonic()
        tally.start()
        if spec["api"] == "getone":
            getone = consumer.getone
            while tally.n < tally.target:
                record = await getone()
                tally.one(record.serialized_value_size if json_values else len(record.value))
        else:
            getmany = consumer.getmany
            max_records = spec["max_records"] or None
            while tally.n < tally.target:
                data = await getmany(timeout_ms=1000, max_records=max_records)
                if not data:
                    progress = _stall_check(tally, progress)
                    continue
                progress = time.monotonic()
                for tp, records in data.items():
                    tally.batch(
                        tp.partition,
                        records[0].offset,
                        records[-1].offset,
                        len(records),
                        sum([r.serialized_value_size for r in records])
                        if json_values
                        else sum([len(r.value) for r in records]),
                    )
        tally.t_last = time.perf_counter()
        if spec["library"] == "rackafka" and spec["rack"]:
            stats = consumer.fetch_stats()
            total = stats.total_bytes
            extra["fetch_stats"] = {
                "same_rack_bytes": stats.same_rack_bytes,
                "cross_rack_bytes": stats.cross_rack_bytes,
                "same_rack_share": (stats.same_rack_bytes / total) if total else None,
                "routing_changes": stats.routing_changes,
                "bytes_per_node": {str(n): c.bytes for n, c in stats.nodes.items()},
            }
    finally:
        await consumer.stop()
    return extra


def run_kafka_python(spec: dict[str, Any], tally: Tally) -> dict[str, Any]:
    """kafka-python's ``poll()`` loop."""
    import kafka
    from kafka import KafkaConsumer, TopicPartition

    if spec["compression"] == "lz4":
        from kafka import codec

        if not codec.has_lz4():
            raise Unsupported("kafka-python needs the 'lz4' package to read lz4 data")
    consumer = KafkaConsumer(
        bootstrap_servers=spec["bootstrap"].split(","),
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        # The mock's answer to ApiVersions v3+ is malformed and kafka-python 3 does not fall
        # back; a configured 2.3 makes it send ApiVersions v2 (and still use Fetch v11).
        api_version=(2, 3),
        **({"value_deserializer": json.loads} if spec.get("shape") == "json" else {}),
    )
    try:
        topic = spec["topic"]
        consumer.assign([TopicPartition(topic, p) for p in range(spec["partitions"])])
        progress = time.monotonic()
        max_records = spec["max_records"] or None
        tally.start()
        while tally.n < tally.target:
            data = consumer.poll(timeout_ms=1000, max_records=max_records)
            if not data:
                progress = _stall_check(tally, progress)
                continue
            progress = time.monotonic()
            for tp, records in data.items():
                tally.batch(
                    tp.partition,
                    records[0].offset,
                    records[-1].offset,
                    len(records),
                    sum([r.serialized_value_size for r in records]),
                )
        tally.t_last = time.perf_counter()
    finally:
        consumer.close()
    return {"version": kafka.__version__}


def confluent_config(spec: dict[str, Any]) -> dict[str, Any]:
    """librdkafka's settings for the ``confluent`` client, or ``confluent-tuned``'s
    (:data:`CONFLUENT_TUNED` on top) when ``spec["tuned"]``."""
    conf: dict[str, Any] = {
        "bootstrap.servers": spec["bootstrap"],
        "group.id": "rackafka-bench",  # required by the client; no group is joined
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "check.crcs": True,
        "fetch.queue.backoff.ms": 10,
    }
    if spec.get("tuned"):
        conf.update(CONFLUENT_TUNED)
    return conf


def run_confluent(spec: dict[str, Any], tally: Tally) -> dict[str, Any]:
    """confluent-kafka's batch ``consume()`` loop (both ``confluent`` clients)."""
    import confluent_kafka
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    consumer = Consumer(confluent_config(spec))
    topic = spec["topic"]
    try:
        consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(spec["partitions"])]
        )
        progress = time.monotonic()
        consume = consumer.consume
        tally.start()
        while tally.n < tally.target:
            # consume() waits for num_messages (or the timeout): never ask for more than remain
            wanted = min(spec["max_records"] or 1_000_000, tally.target - tally.n)
            messages = consume(num_messages=wanted, timeout=1.0)
            if not messages:
                progress = _stall_check(tally, progress)
                continue
            progress = time.monotonic()
            nbytes = 0
            json_values = spec.get("shape") == "json"
            for m in messages:
                if m.error():
                    raise KafkaException(m.error())
                value = m.value()
                nbytes += len(value)
                if json_values:
                    json.loads(value)
            if tally.n == 0:
                tally.t_first = time.perf_counter()
                tally.wall_first = time.time()
                tally.n_first = len(messages)
            tally.n += len(messages)
            tally.nbytes += nbytes
        tally.t_last = time.perf_counter()
        if tally.target == spec["total"]:
            # the batch API hides partition boundaries: check the final positions instead
            positions = consumer.position(
                [TopicPartition(topic, p) for p in range(spec["partitions"])]
            )
            tally.next_offset = {tp.partition: tp.offset for tp in positions}
    finally:
        consumer.close()
    return {"version": confluent_kafka.version()[0], "librdkafka": confluent_kafka.libversion()[0]}


def peak_rss_mb(usage: resource.struct_rusage) -> float:
    """Peak RSS of this process.

    ``ru_maxrss`` survives ``exec``: a child spawned by a big parent reports at least the
    parent's size. Linux's ``VmHWM`` belongs to the new address space, so it is preferred.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement; returns the JSON-able result."""
    tally = Tally(spec["target"])
    profiler = None
    if spec.get("profile"):
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        if spec["library"] in ("rackafka", "aiokafka"):
            extra = asyncio.run(run_asyncio_client(spec, tally))
        elif spec["library"] == "kafka-python":
            extra = run_kafka_python(spec, tally)
        else:
            extra = run_confluent(spec, tally)
    except ModuleNotFoundError as exc:
        return {"skipped": str(exc)}
    except Unsupported as exc:
        return {"skipped": str(exc), "per_dataset": True}
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(spec["profile"])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    from_start = tally.t_last - tally.t_start
    window = tally.t_last - tally.t_first
    steady = tally.n - tally.n_first
    problems = []
    if tally.offset_errors:
        problems.append(f"{tally.offset_errors} batch(es) did not continue the previous one")
    if tally.n > tally.target and tally.target == spec["total"]:
        problems.append(f"{tally.n - tally.target} record(s) more than the topic holds")
    if tally.target == spec["total"] and tally.next_offset:
        high = spec["high"]
        short = [p for p in range(spec["partitions"]) if tally.next_offset.get(p) != high[p]]
        if short:
            problems.append(f"{len(short)} partition(s) not read to the end, e.g. {short[:3]}")
    if spec.get("shape", "fixed") == "fixed":
        expected_bytes = tally.n * spec["value_size"]
        if tally.nbytes != expected_bytes:
            problems.append(f"value bytes {tally.nbytes} != {expected_bytes}")
    elif tally.target == spec["total"] and tally.nbytes != spec["total_bytes"]:
        problems.append(f"value bytes {tally.nbytes} != {spec['total_bytes']}")
    per_record = tally.nbytes / tally.n if tally.n else spec["value_size"]
    return {
        "records": tally.n,
        "bytes": tally.nbytes,
        "window_s": window,
        "msgs_per_s": steady / window if window > 0 else None,
        "mb_per_s": steady * per_record / window / 1e6 if window > 0 else None,
        "msgs_per_s_from_loop_start": tally.n / from_start if from_start > 0 else None,
        "first_record_s": tally.wall_first - spec["spawn_wall"],
        "total_s": tally.wall_first + window - spec["spawn_wall"],
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_mb": peak_rss_mb(usage),
        "problems": problems,
        **extra,
    }


def child_main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    try:
        result = child(spec)
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result), flush=True)
    return 0


# -- the parent --------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def produce_dataset(cluster: Any, ds: Dataset) -> list[int]:
    """Create and fill the dataset's topic; returns each partition's high watermark."""
    cluster.create_topic(ds.topic, ds.partitions, 3)
    for p in range(ds.partitions):
        base = p * ds.per_partition
        if ds.shape == "fixed":
            records: dict[str, Any] = {"value": value_factory(ds.value_size, base)}
        else:
            records = {
                "key": lambda i, b=base: event_record(b + i)[0],
                "value": lambda i, b=base: event_record(b + i)[1],
                "headers": lambda i, b=base: event_record(b + i)[2],
            }
        cluster.produce(
            ds.topic,
            ds.per_partition,
            **records,
            partition=p,
            batch_size=BATCH_BYTES,
            linger_ms=20,
            compression=ds.compression,
            timeout=120,
        )
    return check_watermarks(cluster, ds)


def check_watermarks(cluster: Any, ds: Dataset) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "wm"})
    try:
        marks = [
            consumer.get_watermark_offsets(TopicPartition(ds.topic, p), timeout=10)
            for p in range(ds.partitions)
        ]
    finally:
        consumer.close()
    bad = [(p, lo, hi) for p, (lo, hi) in enumerate(marks) if lo != 0 or hi != ds.per_partition]
    if bad:
        raise RuntimeError(
            f"dataset {ds.name}: unexpected watermarks {bad[:3]} (retention exceeded?)"
        )
    return [hi for _lo, hi in marks]


def run_child(spec: dict[str, Any], env_extra: dict[str, str], timeout: float) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("AIOKAFKA_NO_EXTENSIONS", None)
    env.update(env_extra)
    spec = {**spec, "spawn_wall": time.time()}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f}s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": f"exit status {proc.returncode}: {' | '.join(tail)}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def median_of(runs: list[dict[str, Any]], key: str) -> Any:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in runs if "error" not in r and "skipped" not in r]
    if not ok:
        first = runs[0] if runs else {}
        return {"status": "skipped" if "skipped" in first else "error", **first}
    out: dict[str, Any] = {"status": "ok", "runs": len(ok)}
    for key in (
        "records",
        "msgs_per_s",
        "mb_per_s",
        "msgs_per_s_from_loop_start",
        "first_record_s",
        "total_s",
        "cpu_s",
        "rss_mb",
    ):
        out[key] = median_of(ok, key)
    problems = sorted({p for r in ok for p in r.get("problems", [])})
    if problems:
        out["problems"] = problems
    shares = [
        r["fetch_stats"]["same_rack_share"]
        for r in ok
        if r.get("fetch_stats", {}).get("same_rack_share") is not None
    ]
    if shares:
        out["same_rack_share"] = statistics.median(shares)
    for key in ("version", "records_module", "librdkafka"):
        if key in ok[0]:
            out[key] = ok[0][key]
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        out["failed_runs"] = errors
    return out


def ratio(summary: dict[str, dict[str, Any]], key: str, reference: str) -> float | None:
    """msgs/s of ``key`` (``client/dataset``) over that of ``reference`` on the same dataset;
    None unless both ran."""
    s = summary.get(key, {})
    ref = summary.get(f"{reference}/{key.partition('/')[2]}", {})
    if s.get("status") != "ok" or ref.get("status") != "ok":
        return None
    if not s.get("msgs_per_s") or not ref.get("msgs_per_s"):
        return None
    return float(s["msgs_per_s"] / ref["msgs_per_s"])


def add_ratios(summary: dict[str, dict[str, Any]]) -> None:
    """Note in each measured case its rate relative to aiokafka-C (``vs_aiokafka_c``) and to
    librdkafka tuned for throughput (``vs_confluent_tuned``), as the table shows them."""
    for key, s in summary.items():
        if s.get("status") == "ok":
            s["vs_aiokafka_c"] = ratio(summary, key, REFERENCE)
            s["vs_confluent_tuned"] = ratio(summary, key, TUNED_REFERENCE)


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(
    clients: list[Client], datasets: list[Dataset], summary: dict[str, dict[str, Any]]
) -> str:
    head = (
        f"{'client':<16} {'dataset':<9} {'records':>9} {'msgs/s':>10} {'MB/s':>8} "
        f"{'CPU s':>7} {'RSS MB':>7} {'first s':>7} {'total s':>7} {'vs akC':>7} {'vs cfT':>7} "
        f"{'vs API':>7}  note"
    )
    lines = [head, "-" * len(head)]
    for ds in datasets:
        for c in clients:
            s = summary.get(f"{c.name}/{ds.name}")
            if s is None:
                continue
            if s["status"] != "ok":
                reason = s.get("skipped") or s.get("error", "?")
                lines.append(f"{c.name:<16} {ds.name:<9} {s['status']}: {reason}")
                continue
            rate = s["msgs_per_s"]
            vs_ref = ratio(summary, f"{c.name}/{ds.name}", REFERENCE)
            vs_tuned = ratio(summary, f"{c.name}/{ds.name}", TUNED_REFERENCE)
            same = summary.get(f"{SAME_API_REFERENCE.get(c.api, REFERENCE)}/{ds.name}", {})
            vs_api = None
            if same.get("status") == "ok" and rate and same.get("msgs_per_s"):
                vs_api = rate / same["msgs_per_s"]
            notes = []
            if "same_rack_share" in s:
                notes.append(f"same-rack bytes {s['same_rack_share']:.0%}")
            if s.get("problems"):
                notes.append("PROBLEMS: " + "; ".join(s["problems"]))
            if s.get("failed_runs"):
                notes.append(f"{len(s['failed_runs'])} failed run(s)")
            lines.append(
                f"{c.name:<16} {ds.name:<9} {s['records']:>9.0f} {fmt(rate, ',.0f'):>10} "
                f"{fmt(s['mb_per_s'], '.1f'):>8} {fmt(s['cpu_s'], '.2f'):>7} "
                f"{fmt(s['rss_mb'], '.0f'):>7} {fmt(s['first_record_s'], '.2f'):>7} "
                f"{fmt(s['total_s'], '.2f'):>7} "
                f"{fmt(vs_ref, '.2f'):>7} {fmt(vs_tuned, '.2f'):>7} {fmt(vs_api, '.2f'):>7}  "
                f"{', '.join(notes)}"
            )
        lines.append("")
    return "\n".join(lines)


def chart(
    clients: list[Client],
    datasets: list[Dataset],
    summary: dict[str, dict[str, Any]],
    path: Path,
    engine: str = "mock",
) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        log("matplotlib is not installed: no chart")
        return False
    cols = 2 if len(datasets) > 1 else 1
    rows = (len(datasets) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 0.45 * len(clients) * rows + 1.5))
    flat = list(axes.flat) if hasattr(axes, "flat") else [axes]
    for ax, ds in zip(flat, datasets):
        names, rates, colors, labels = [], [], [], []
        for c in clients:
            s = summary.get(f"{c.name}/{ds.name}", {})
            if s.get("status") != "ok" or not s.get("msgs_per_s"):
                continue
            names.append(c.name)
            rates.append(s["msgs_per_s"])
            labels.append(f" {s['msgs_per_s'] / 1000:,.0f}k/s, {s['mb_per_s']:,.0f} MB/s")
            colors.append("tab:red" if c.library == "rackafka" else "tab:gray")
        ax.barh(names[::-1], rates[::-1], color=colors[::-1])
        for y, (rate, label) in enumerate(zip(rates[::-1], labels[::-1])):
            ax.text(rate, y, label, va="center", fontsize=8)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x / 1000:,.0f}k"))
        ax.set_title(f"{ds.name} ({ds.compression}, {ds.value_size} B values)")
        ax.set_xlabel("records/s (median)")
        ax.margins(x=0.35)
    for ax in flat[len(datasets) :]:
        ax.set_visible(False)
    where = "real Apache Kafka" if engine == "kafka" else "the embedded cluster"
    fig.suptitle(f"Consumer throughput on {where} (higher is better)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for dist in (
        "rackafka",
        "aiokafka",
        "kafka-python",
        "confluent-kafka",
        "crc32c",
        "cramjam",
        "lz4",
    ):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def pick(names: str | None, items: Iterable[Any], what: str) -> list[Any]:
    items = list(items)
    if not names:
        return items
    by_name = {i.name: i for i in items}
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)}; choose from {', '.join(by_name)}")
    return [by_name[n] for n in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="mock",
        help="the brokers: librdkafka's mock (default) or real Apache Kafka",
    )
    parser.add_argument("--quick", action="store_true", help="small datasets, 1 repeat")
    parser.add_argument("--repeat", type=int, default=None, help="runs per measurement (3)")
    parser.add_argument("--clients", help="comma-separated: " + ",".join(c.name for c in CLIENTS))
    parser.add_argument(
        "--datasets", help="comma-separated: 100B,100B-lz4,10KB,10KB-lz4,events,events-lz4,json"
    )
    parser.add_argument(
        "--max-records",
        type=int,
        default=None,
        help="most records per getmany/poll/consume call; 0: no limit "
        f"(default: {CALL_BYTES:,} bytes' worth, 10,000 records of 100 B)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the rackafka children into --out"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child)

    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    if repeat < 1:
        parser.error("--repeat must be >= 1")
    datasets = pick(args.datasets, _datasets(args.quick), "dataset")
    clients = pick(args.clients, CLIENTS, "client")
    for ds in datasets:
        ds.check()

    try:
        cluster_cm = open_cluster(args.engine)
    except ImportError as exc:
        raise SystemExit(f"the cluster needs rackafka[testing]: {exc}") from None

    load_before = load_average()
    log(f"engine {args.engine}; {rackafka_origin()}; load average {load_before}")
    started = time.monotonic()
    raw: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, dict[str, Any]] = {}
    highs: dict[str, list[int]] = {}
    total_bytes: dict[str, int] = {}
    with cluster_cm as cluster, contextlib.ExitStack() as fronts:
        # the mock emulates the selector for a client rack; Kafka runs its own
        emulate = cluster.emulate_rack_aware_selector if args.engine == "mock" else None
        routes: dict[str | None, tuple[str, str | None]] = {None: (cluster.bootstrap_servers, None)}
        if any(c.via for c in clients):
            from rackafka.testing import SecureFront

            backends = {n: (b.host, b.port) for n, b in cluster.brokers.items()}
            plain = fronts.enter_context(SecureFront(backends, security_protocol="PLAINTEXT"))
            secure = fronts.enter_context(
                SecureFront(
                    backends,
                    security_protocol="SASL_SSL",
                    sasl_mechanisms=("SCRAM-SHA-512",),
                    users=dict([BENCH_USER]),
                )
            )
            routes["front"] = (plain.bootstrap_servers, None)
            routes["sasl_ssl"] = (secure.bootstrap_servers, secure.ca_file)
        by_topic: dict[str, list[int]] = {}
        for ds in datasets:
            if ds.shape != "fixed":
                total_bytes[ds.name] = sum(len(event_record(n)[1]) for n in range(ds.records))
            if ds.topic in by_topic:  # json reads the events topic
                highs[ds.name] = by_topic[ds.topic]
                continue
            t = time.monotonic()
            highs[ds.name] = by_topic[ds.topic] = produce_dataset(cluster, ds)
            log(
                f"produced {ds.name}: {ds.records:,} records in {ds.partitions} partitions "
                f"({time.monotonic() - t:.1f}s)"
            )
        for run in range(repeat):
            for ds in datasets:
                for c in clients:
                    key = f"{c.name}/{ds.name}"
                    # a missing package stays missing (kafka-python lz4 is per dataset)
                    skip = skipped.get(key) or skipped.get(c.name)
                    if skip is not None:
                        raw.setdefault(key, []).append(skip)
                        continue
                    target = c.count(ds)
                    spec = {
                        "client": c.name,
                        "library": c.library,
                        "api": c.api,
                        "extension": c.extension,
                        "rack": c.rack,
                        "bootstrap": routes[c.via][0],
                        "ca_file": routes[c.via][1],
                        "topic": ds.topic,
                        "partitions": ds.partitions,
                        "value_size": ds.value_size,
                        "shape": ds.shape,
                        "total_bytes": total_bytes.get(ds.name, 0),
                        "compression": ds.compression,
                        "total": ds.records,
                        "target": target,
                        "high": highs[ds.name],
                        "tuned": c.tuned,
                        "max_records": (ds.tuned_max_records if c.tuned else ds.max_records)
                        if args.max_records is None
                        else args.max_records,
                    }
                    if args.profile and c.library == "rackafka":
                        args.out.mkdir(parents=True, exist_ok=True)
                        spec["profile"] = str(args.out / f"profile-{c.name}-{ds.name}.prof")
                    if c.rack and emulate is not None:
                        emulate(c.rack, [ds.topic])
                    try:
                        result = run_child(spec, c.env, timeout=120 + target / 5_000)
                    finally:
                        if c.rack and emulate is not None:
                            cluster.clear_preferred_read_replicas([ds.topic])
                    result["run"] = run
                    raw.setdefault(key, []).append(result)
                    if "skipped" in result:
                        skipped[key if result.get("per_dataset") else c.name] = result
                        log(f"[{run + 1}/{repeat}] {key}: skipped ({result['skipped']})")
                    elif "error" in result:
                        log(f"[{run + 1}/{repeat}] {key}: ERROR {result['error']}")
                    else:
                        log(
                            f"[{run + 1}/{repeat}] {key}: {result['msgs_per_s']:,.0f} msgs/s "
                            f"{result['mb_per_s']:.1f} MB/s cpu {result['cpu_s']:.2f}s "
                            f"rss {result['rss_mb']:.0f} MB"
                            + (f" {result['problems']}" if result["problems"] else "")
                        )

    summary = {key: summarize(runs) for key, runs in raw.items()}
    add_ratios(summary)
    text = table(clients, datasets, summary)
    elapsed = time.monotonic() - started
    load_after = load_average()
    print(text)
    print(
        f"engine {args.engine}; median of {repeat} run(s); 'vs akC': msgs/s relative to "
        f"aiokafka-c getmany; 'vs cfT': relative to confluent-tuned (librdkafka tuned for "
        f"throughput); 'vs API': relative to aiokafka with the same API; "
        f"total {elapsed:.0f}s; load average before {load_before}, after {load_after}"
    )
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "meta": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "versions": versions(),
            "engine": args.engine,
            "load_average_before": load_before,
            "load_average_after": load_after,
            "repeat": repeat,
            "quick": args.quick,
            "elapsed_s": elapsed,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
        "datasets": [{**asdict(ds), "records": ds.records} for ds in datasets],
        "clients": [asdict(c) for c in clients],
        "summary": summary,
        "runs": raw,
        "table": text,
    }
    stem = result_name(args.engine)
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    if chart(clients, datasets, summary, args.out / f"{stem}.png", args.engine):
        log(f"wrote {args.out / (stem + '.json')} and {args.out / (stem + '.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
