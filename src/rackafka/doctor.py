"""``rackafka-doctor``: does this process read Kafka from its own zone?

Run as ``python -m rackafka doctor`` or ``rackafka-doctor``::

    rackafka-doctor --bootstrap-servers b-1.example:9092 --topic events --topic orders

It prints, in order:

1. **rack**: the ``client_rack`` it checks (``--client-rack``, default ``auto``: the zone
   found as ``client_rack="auto"`` finds it) and how it was found;
2. **brokers**: every broker and its ``broker.rack``;
3. **coverage**: per topic, the share of partitions with an in-sync replica in this rack
   (a partition without one is always read from another zone);
4. **selector**: a live probe: one Fetch (v11+) with the rack to the leader of each
   partition that has a replica in this rack but a leader elsewhere.  A broker with
   ``replica.selector.class`` set to ``RackAwareReplicaSelector`` names that replica as
   preferred read replica; one without it names none;
5. **sample**: a short read of the newest records of every partition with that rack:
   bytes per rack, the cross-rack share, and each partition still read from a leader in
   another rack, with the reason;
6. **reassign**: when partitions have no replica in the rack, the smallest reassignment
   that gives each one a replica there (one new replica on the rack's least loaded broker,
   in place of a second replica of another rack, or added), the bytes it copies (from
   ``DescribeLogDirs``), as Kafka's reassignment file (``--reassignment-file``).  With
   ``--apply`` (never by default) the doctor makes it, waits until the brokers finish it
   and checks again.

Exit status: 0 when reads stay in the zone; otherwise the first problem found:
``2`` no rack (nothing detected, or not a broker rack), ``3`` the brokers' replica selector
is not active, ``4`` partitions without an in-sync replica in the rack, ``5`` the sample
read bytes from another rack, ``6`` the reassignment of ``--apply`` failed or did not
finish in time, ``1`` the cluster could not be reached.  ``--json`` prints
the whole report as one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rackafka.admin import AIOKafkaAdminClient
from rackafka.client import KafkaClient
from rackafka.config import CLIENT, Settings, security_kwargs
from rackafka.consumer import AIOKafkaConsumer
from rackafka.errors import KafkaError
from rackafka.helpers import create_ssl_context
from rackafka.protocol.apis.fetch import FETCH
from rackafka.protocol.schema import UUID_ZERO
from rackafka.structs import TopicPartition
from rackafka.zones import RackDecision, resolve_rack
from rackafka.zones.reassign import ReassignmentPlan, plan_rack_reassignment

__all__ = ["EXIT_CODES", "DoctorReport", "apply_reassignment", "main", "run_doctor"]

#: Exit status of each problem (0: reads stay in the zone).
EXIT_CODES: Mapping[str, int] = {
    "unreachable": 1,
    "no-rack": 2,
    "selector-inactive": 3,
    "no-replica-in-rack": 4,
    "cross-rack-reads": 5,
    "reassignment-failed": 6,
}
_RACK_AWARE_FETCH = 11
_TOPIC_ID_FETCH = 13
_MAX_FETCH = 15
_PASSWORD_ENV = "RACKAFKA_SASL_PASSWORD"


@dataclass
class DoctorReport:
    """Everything the doctor found; ``problems`` is empty when reads stay in the zone."""

    client_rack: str | None = None
    #: The rack given with ``client_rack``/``--client-rack`` (even one no broker has).
    requested_rack: str | None = None
    rack_source: str = ""
    candidates: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    brokers: list[dict[str, Any]] = field(default_factory=list)
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    selector: dict[str, Any] = field(default_factory=dict)
    sample: dict[str, Any] = field(default_factory=dict)
    problems: list[dict[str, str]] = field(default_factory=list)
    #: The proposed reassignment (:meth:`ReassignmentPlan.to_dict`), when partitions
    #: have no replica in the rack.
    reassignment: dict[str, Any] = field(default_factory=dict)
    #: What ``apply=True`` did before this (second) check: ``completed``, ``seconds``...
    applied: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 when reads stay in the zone, else the code of the first problem."""
        return EXIT_CODES[self.problems[0]["code"]] if self.problems else 0

    def problem(self, code: str, message: str) -> None:
        """Record a problem (``code`` is a key of :data:`EXIT_CODES`)."""
        self.problems.append({"code": code, "message": message})

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        out = asdict(self)
        out["exit_code"] = self.exit_code
        out["ok"] = not self.problems
        return out


async def run_doctor(
    bootstrap_servers: str | Sequence[str],
    topics: Sequence[str],
    *,
    client_rack: str = "auto",
    sample_seconds: float = 5.0,
    sample_records: int = 200,
    environ: Mapping[str, str] | None = None,
    detect_timeout: float = 1.0,
    apply: bool = False,
    apply_timeout: float = 600.0,
    progress: Callable[[str], None] | None = None,
    **security: Any,
) -> DoctorReport:
    """Check whether a consumer here reads ``topics`` from its own zone.

    Arguments:
        bootstrap_servers: as for :class:`~rackafka.AIOKafkaConsumer`.
        topics: the topics to check.
        client_rack: the rack to check, or ``"auto"`` to detect it as the consumer does.
        sample_seconds: at most this long for the sample read.
        sample_records: per partition, how many of the newest records the sample reads.
        environ: the environment for zone detection (default ``os.environ``).
        detect_timeout: seconds for each metadata service.
        apply: make the proposed reassignment (``report.reassignment``), wait until the
            brokers finish it, and check again: the report returned is the second check's,
            with ``applied`` telling what happened.  Never by default.
        apply_timeout: at most this many seconds for the brokers to finish it (they go
            on after that: the report says which partitions were still moving).
        progress: called with a line of text as the reassignment progresses.
        security: ``security_protocol``, ``ssl_context``, ``sasl_mechanism``,
            ``sasl_plain_username``, ``sasl_plain_password``... as for the consumer.
    """
    _check_seconds("apply_timeout", apply_timeout)
    report = DoctorReport()
    plan: ReassignmentPlan | None = None
    # Checked as every client checks them (the security arguments become one object).
    cfg = CLIENT.check(
        {
            "bootstrap_servers": bootstrap_servers,
            "client_id": "rackafka-doctor",
            "client_rack": client_rack,
            **security,
        }
    )
    client = KafkaClient(**cfg.client_kwargs())
    try:
        client.want_all_topics()
        await client.bootstrap_cluster()
        cluster = await client.fetch_all_metadata()
    except (KafkaError, OSError) as exc:
        report.problem("unreachable", f"cannot read the cluster's metadata: {exc}")
        await client.close()
        return report
    try:
        racks = {b.node_id: b.rack for b in cluster.brokers.values()}
        report.brokers = [
            {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in sorted(cluster.brokers.values(), key=lambda b: b.node_id)
        ]
        await _decide_rack(report, client_rack, racks.values(), environ, detect_timeout)
        rack = report.client_rack
        if not any(racks.values()):
            report.notes.append("no broker has a rack (broker.rack is not set)")
        _coverage(report, cluster, topics, racks)
        plan = await _propose(report, cfg, cluster, topics, racks)
        if rack is not None:
            await _probe(report, client, cluster, topics, racks)
            await _sample(report, cfg, cluster, topics, sample_seconds, sample_records)
        _judge(report)
    finally:
        await client.close()
    if not apply or plan is None or not plan.changes:
        return report
    say = progress or (lambda line: None)
    try:
        async with _admin(cfg) as admin:
            applied = await apply_reassignment(admin, plan, timeout=apply_timeout, progress=say)
    except (KafkaError, OSError) as exc:
        applied = {"partitions": len(plan.changes), "completed": False, "error": str(exc)}
    say("checking again")
    again = await run_doctor(
        bootstrap_servers,
        topics,
        client_rack=client_rack,
        sample_seconds=sample_seconds,
        sample_records=sample_records,
        environ=environ,
        detect_timeout=detect_timeout,
        **security,
    )
    again.applied = {**applied, "reassignment_json": plan.kafka_json()}
    if not applied["completed"]:
        why = applied.get("error") or (
            f"{len(applied.get('pending', ()))} partition(s) still moving after "
            f"{apply_timeout:g} s (the brokers go on: run the doctor again later)"
        )
        again.problems.insert(
            0, {"code": "reassignment-failed", "message": f"the reassignment: {why}"}
        )
    return again


def _admin(cfg: Settings) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(
        bootstrap_servers=cfg["bootstrap_servers"],
        client_id=cfg["client_id"],
        **security_kwargs(cfg.security),
    )


async def apply_reassignment(
    admin: Any,
    plan: ReassignmentPlan,
    *,
    timeout: float = 600.0,
    poll: float = 1.0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Make ``plan``'s reassignment and wait until the brokers no longer list it.

    Arguments:
        admin: a started :class:`~rackafka.admin.AIOKafkaAdminClient`.
        plan: what :func:`~rackafka.zones.reassign.plan_rack_reassignment` proposed.
        timeout: at most this many seconds of waiting (the brokers go on after it).
        poll: seconds between two ``list_partition_reassignments``.
        progress: called with a line of text: the start, every change of the number
            of partitions still moving (at least every 10 s), the end.

    Returns:
        ``partitions`` (how many), ``completed`` (none still listed), ``seconds``,
        ``pending`` (those still moving, as ``{"topic", "partition"}``).

    Raises:
        KafkaError: the brokers refused the reassignment (the error names the partition).
        TypeError, ValueError: ``timeout`` or ``poll`` is not a number of seconds
            (``poll`` > 0, ``timeout`` >= 0).
    """
    _check_seconds("timeout", timeout)
    _check_seconds("poll", poll, positive=True)
    say = progress or (lambda line: None)
    wanted = plan.reassignments()
    tps = sorted(wanted)
    start = time.monotonic()
    if tps:
        await admin.alter_partition_reassignments(wanted)
        say(
            f"reassigning {len(tps)} partition(s): {len(plan.grown)} gain a replica, "
            f"{_human(plan.bytes_moved)} to copy"
        )
    last: tuple[int, float] = (-1, start)
    ongoing: Mapping[TopicPartition, Any] = {}
    while True:
        pending = []
        if tps:
            ongoing = await admin.list_partition_reassignments(tps)
            pending = [tp for tp in tps if tp in ongoing]
        elapsed = time.monotonic() - start
        if not pending or elapsed >= timeout:
            done = not pending
            say(
                f"reassignment done in {elapsed:.1f} s"
                if done
                else f"{len(pending)} of {len(tps)} partition(s) still moving after "
                f"{elapsed:.0f} s: stopped waiting"
            )
            return {
                "partitions": len(tps),
                "completed": done,
                "seconds": round(elapsed, 3),
                "pending": [{"topic": tp.topic, "partition": tp.partition} for tp in pending],
            }
        now = time.monotonic()
        if len(pending) != last[0] or now - last[1] >= 10:
            moving = ", ".join(
                f"{tp.topic}[{tp.partition}] +{list(ongoing[tp].adding_replicas)}"
                for tp in pending[:5]
            )
            more = f" and {len(pending) - 5} more" if len(pending) > 5 else ""
            say(
                f"{len(tps) - len(pending)}/{len(tps)} partition(s) done after "
                f"{elapsed:.0f} s; moving: {moving}{more}"
            )
            last = (len(pending), now)
        await asyncio.sleep(min(poll, max(timeout - elapsed, 0.0)))


def _check_seconds(name: str, value: object, *, positive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {value!r}")
    if value < 0 or (positive and value == 0) or value != value:
        raise ValueError(f"{name} must be {'> 0' if positive else '>= 0'} seconds, not {value!r}")


async def _propose(
    report: DoctorReport,
    cfg: Settings,
    cluster: Any,
    topics: Sequence[str],
    racks: Mapping[int, str | None],
) -> ReassignmentPlan | None:
    """The reassignment giving every partition of ``topics`` a replica in the rack (also
    in ``report.reassignment``); None when there is no rack to plan for."""
    rack = report.client_rack or report.requested_rack
    if rack is None:
        return None
    replicas: dict[TopicPartition, tuple[int, ...]] = {}
    leaders: dict[TopicPartition, int] = {}
    for topic in topics:
        for p, info in (cluster.partitions.get(topic) or {}).items():
            if info.replicas:
                replicas[TopicPartition(topic, p)] = tuple(info.replicas)
                if info.leader >= 0:
                    leaders[TopicPartition(topic, p)] = info.leader
    plan = plan_rack_reassignment(replicas, racks, rack, leaders=leaders)
    if plan.unfixable_racks:
        report.notes.append(
            f"no broker is in rack {rack!r}: no reassignment can give its partitions a "
            "replica there (a broker with that broker.rack is needed)"
        )
    planned = {c.tp for c in plan.changes} | set(plan.unfixed)
    for topic, v in report.topics.items():
        for p in v.get("without_replica_in_rack", ()):
            if TopicPartition(topic, p) not in planned:
                report.notes.append(
                    f"{topic}[{p}] has a replica in {rack} that is not in sync: it serves "
                    "reads once it catches up (no reassignment needed)"
                )
    if plan.changes:
        sizes, per_broker, source = await _log_dir_sizes(cfg)
        plan = plan_rack_reassignment(
            replicas, racks, rack, sizes, leaders=leaders, broker_bytes=per_broker
        )
        report.reassignment = {**plan.to_dict(), "sizes_from": source}
    elif plan.unfixed:
        report.reassignment = plan.to_dict()
    return plan


async def _log_dir_sizes(
    cfg: Settings,
) -> tuple[dict[TopicPartition, int], dict[int, int] | None, str]:
    """Each partition's size (its largest replica), the bytes of each broker, and where
    they come from (``DescribeLogDirs``, or why they are unknown)."""
    try:
        async with _admin(cfg) as admin:
            dirs = await admin.describe_log_dirs()
    except (KafkaError, OSError) as exc:
        return {}, None, f"unknown: DescribeLogDirs failed ({exc})"
    sizes: dict[TopicPartition, int] = {}
    per_broker: dict[int, int] = {}
    for broker, by_dir in dirs.items():
        for described in by_dir.values():
            for tp, info in described.replicas.items():
                if info.is_future:
                    continue
                per_broker[broker] = per_broker.get(broker, 0) + info.size
                sizes[tp] = max(sizes.get(tp, 0), info.size)
    return sizes, per_broker, "DescribeLogDirs"


def _human(n: int) -> str:
    """Bytes for a reader: ``1.2 MiB (1258291 B)``."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit} ({n} B)"


async def _decide_rack(
    report: DoctorReport,
    client_rack: str,
    broker_racks: Any,
    environ: Mapping[str, str] | None,
    timeout: float,
) -> None:
    if client_rack == "auto":
        decision = await resolve_rack(list(broker_racks), environ, timeout=timeout)
    else:
        report.requested_rack = client_rack
        known = {r for r in broker_racks if r}
        notes = (
            ()
            if client_rack in known
            else (f"the given rack {client_rack!r} is not a broker rack",)
        )
        decision = RackDecision(
            client_rack if client_rack in known else None,
            "--client-rack",
            broker_racks=tuple(sorted(known)),
            notes=notes,
        )
    report.client_rack = decision.rack
    report.rack_source = decision.source
    report.candidates = [{"value": c.value, "source": c.source} for c in decision.candidates]
    report.notes.extend(decision.notes)
    if decision.rack is None and report.requested_rack is not None:
        report.problem(
            "no-rack",
            f"the given rack {report.requested_rack!r} matches no broker: broker racks "
            f"{', '.join(decision.broker_racks) or 'none'} (a typo, or brokers without "
            "broker.rack)",
        )
    elif decision.rack is None:
        found = ", ".join(c.value for c in decision.candidates) or "none"
        report.problem(
            "no-rack",
            f"no client rack: candidates {found}, broker racks "
            f"{', '.join(decision.broker_racks) or 'none'} (set client_rack or "
            "RACKAFKA_CLIENT_RACK to one of the broker racks)",
        )


def _coverage(
    report: DoctorReport, cluster: Any, topics: Sequence[str], racks: Mapping[int, str | None]
) -> None:
    # A rack given that no broker has: nothing is in it (None would match rack-less brokers).
    rack = report.client_rack or report.requested_rack
    for topic in topics:
        parts = cluster.partitions.get(topic) or {}
        if not parts:
            report.topics[topic] = {"partitions": 0, "error": "unknown topic"}
            continue
        covered = [p for p, info in parts.items() if any(racks.get(r) == rack for r in info.isr)]
        led = [p for p, info in parts.items() if racks.get(info.leader) == rack]
        report.topics[topic] = {
            "partitions": len(parts),
            "with_in_sync_replica_in_rack": len(covered),
            "share_with_replica_in_rack": len(covered) / len(parts),
            "leaders_in_rack": len(led),
            "without_replica_in_rack": sorted(set(parts) - set(covered)),
        }


async def _probe(
    report: DoctorReport,
    client: KafkaClient,
    cluster: Any,
    topics: Sequence[str],
    racks: Mapping[int, str | None],
) -> None:
    """Ask each leader outside the rack, for a partition with a replica in the rack,
    whether it names a preferred read replica."""
    rack = report.client_rack
    wanted: dict[int, list[tuple[str, int]]] = {}
    for topic in topics:
        for p, info in (cluster.partitions.get(topic) or {}).items():
            in_rack = [r for r in info.isr if racks.get(r) == rack]
            if in_rack and racks.get(info.leader) != rack:
                wanted.setdefault(info.leader, []).append((topic, p))
    probed = hinted = 0
    details: list[dict[str, Any]] = []
    old: list[int] = []
    for leader, tps in sorted(wanted.items()):
        try:
            version = min(await client.api_version(leader, FETCH), _MAX_FETCH)
        except (KafkaError, OSError) as exc:
            details.append({"leader": leader, "error": str(exc)})
            continue
        if version < _RACK_AWARE_FETCH:
            old.append(leader)
            continue
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for topic, p in tps:
            by_topic.setdefault(topic, []).append(
                {
                    "partition": p,
                    "current_leader_epoch": -1,
                    "fetch_offset": 0,
                    "last_fetched_epoch": -1,
                    "log_start_offset": -1,
                    "partition_max_bytes": 1,
                }
            )
        request = FETCH.Request(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                {
                    "topic": t,
                    "topic_id": cluster.topic_ids.get(t, UUID_ZERO)
                    if version >= _TOPIC_ID_FETCH
                    else UUID_ZERO,
                    "partitions": parts,
                }
                for t, parts in by_topic.items()
            ],
            forgotten_topics_data=[],
            rack_id=rack or "",
        )
        try:
            response = await client.send(leader, FETCH, request, version=version)
        except (KafkaError, OSError) as exc:
            details.append({"leader": leader, "error": str(exc)})
            continue
        names = {tid: name for name, tid in cluster.topic_ids.items()}
        for rt in response.responses:
            name = names.get(rt.topic_id, rt.topic) if version >= _TOPIC_ID_FETCH else rt.topic
            for rp in rt.partitions:
                probed += 1
                named = rp.preferred_read_replica
                if named >= 0:
                    hinted += 1
                details.append(
                    {
                        "topic": name,
                        "partition": rp.partition_index,
                        "leader": leader,
                        "error_code": rp.error_code,
                        "preferred_read_replica": named,
                        "preferred_rack": racks.get(named) if named >= 0 else None,
                    }
                )
    if not wanted:
        status = "not-needed"
    elif probed == 0:
        status = "unsupported" if old else "unknown"
    elif hinted == 0:
        status = "inactive"
    elif hinted < probed:
        status = "partial"
    else:
        status = "active"
    report.selector = {
        "status": status,
        "probed": probed,
        "named_a_replica": hinted,
        "brokers_below_fetch_v11": old,
        "details": details,
    }


async def _sample(
    report: DoctorReport,
    cfg: Settings,
    cluster: Any,
    topics: Sequence[str],
    seconds: float,
    per_partition: int,
) -> None:
    tps = [TopicPartition(t, p) for t in topics for p in sorted(cluster.partitions.get(t) or {})]
    if not tps or seconds <= 0:
        report.sample = {"skipped": "nothing to read" if not tps else "--sample-seconds 0"}
        return
    consumer: AIOKafkaConsumer[bytes, bytes] = AIOKafkaConsumer(
        bootstrap_servers=cfg["bootstrap_servers"],
        client_id=cfg["client_id"],
        client_rack=report.client_rack,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **security_kwargs(cfg.security),
    )
    await consumer.start()
    try:
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        starts = await consumer.beginning_offsets(tps)
        remaining = {tp for tp in tps if ends[tp] > starts[tp]}
        for tp in tps:
            consumer.seek(tp, max(starts[tp], ends[tp] - per_partition))
        records = 0
        deadline = time.monotonic() + seconds
        while remaining and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for tp, batch in batches.items():
                records += len(batch)
                if batch and batch[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)
        stats = consumer.fetch_stats()
        fallbacks = []
        for tp, route in sorted(stats.partitions.items()):
            if route.read_from_rack != report.client_rack:
                fallbacks.append(
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "read_from": route.read_from,
                        "read_from_rack": route.read_from_rack,
                        "reason": _reason(report, tp, route),
                    }
                )
        total = stats.total_bytes
        report.sample = {
            "records": records,
            "bytes": total,
            "bytes_by_rack": {str(r): c.bytes for r, c in stats.racks.items() if c.bytes},
            "cross_rack_bytes": stats.cross_rack_bytes,
            "cross_rack_share": stats.cross_rack_bytes / total if total else 0.0,
            "partitions_not_read_in_rack": fallbacks,
            "unfinished_partitions": len(remaining),
        }
    finally:
        await consumer.stop()


def _reason(report: DoctorReport, tp: TopicPartition, route: Any) -> str:
    info = report.topics.get(tp.topic, {})
    if tp.partition in info.get("without_replica_in_rack", ()):
        return "no in-sync replica in this rack"
    if report.selector.get("status") in ("inactive", "partial"):
        return "the leader names no preferred read replica (replica.selector.class not set)"
    if route.leader in report.selector.get("brokers_below_fetch_v11", ()):
        return "the leader is older than Kafka 2.4 (Fetch v11)"
    return "read from the leader (no preferred read replica yet)"


def _judge(report: DoctorReport) -> None:
    if report.client_rack is None:
        return
    status = report.selector.get("status")
    if status in ("inactive", "unsupported"):
        report.problem(
            "selector-inactive",
            "the leaders name no preferred read replica: set replica.selector.class="
            "org.apache.kafka.common.replica.RackAwareReplicaSelector on the brokers"
            if status == "inactive"
            else "the brokers are older than Kafka 2.4: no fetching from followers",
        )
    uncovered = {
        t: v["without_replica_in_rack"] for t, v in report.topics.items() if v.get("partitions")
    }
    missing = sum(len(v) for v in uncovered.values())
    if missing:
        report.problem(
            "no-replica-in-rack",
            f"{missing} partition(s) have no in-sync replica in "
            f"{report.client_rack or report.requested_rack}: "
            "they are read from another zone"
            + (
                " (the proposed reassignment gives each one a replica there)"
                if report.reassignment.get("partitions")
                else " (spread their replicas over all racks)"
            ),
        )
    cross = report.sample.get("cross_rack_bytes", 0)
    if cross:
        share = report.sample.get("cross_rack_share", 0.0)
        report.problem(
            "cross-rack-reads",
            f"the sample read {cross} bytes ({share:.0%}) from other racks",
        )
    for t, v in report.topics.items():
        if v.get("error"):
            report.notes.append(f"topic {t}: {v['error']}")


# -- the command line ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rackafka-doctor",
        description="Check that a consumer here reads Kafka from its own zone.",
    )
    parser.add_argument("--bootstrap-servers", required=True, help="host:port[,host:port]")
    parser.add_argument("--topic", action="append", required=True, help="a topic (repeat)")
    parser.add_argument("--client-rack", default="auto", help="the rack to check (default auto)")
    parser.add_argument("--security-protocol", default="PLAINTEXT")
    parser.add_argument("--sasl-mechanism", default=None)
    parser.add_argument("--sasl-username", default=None)
    parser.add_argument(
        "--sasl-password-env",
        default=_PASSWORD_ENV,
        help=f"the environment variable holding the SASL password (default {_PASSWORD_ENV})",
    )
    parser.add_argument("--ssl-cafile", default=None, help="CA bundle (PEM)")
    parser.add_argument("--ssl-certfile", default=None, help="client certificate (PEM)")
    parser.add_argument("--ssl-keyfile", default=None, help="client key (PEM)")
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--sample-records", type=int, default=200, help="per partition")
    parser.add_argument("--detect-timeout", type=float, default=1.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--reassignment-file",
        default=None,
        metavar="PATH",
        help="write the proposed reassignment there (kafka-reassign-partitions' "
        "--reassignment-json-file format)",
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="make the proposed reassignment, wait until it is done, and check again",
    )
    parser.add_argument(
        "--apply-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for the reassignment (default 600)",
    )
    return parser


def _security(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"security_protocol": args.security_protocol}
    if args.security_protocol in ("SSL", "SASL_SSL"):
        out["ssl_context"] = create_ssl_context(
            cafile=args.ssl_cafile, certfile=args.ssl_certfile, keyfile=args.ssl_keyfile
        )
    if args.security_protocol.startswith("SASL_"):
        out["sasl_mechanism"] = args.sasl_mechanism or "PLAIN"
        out["sasl_plain_username"] = args.sasl_username
        out["sasl_plain_password"] = environ.get(args.sasl_password_env)
    return out


def format_report(report: DoctorReport) -> str:
    """The report as text for a terminal."""
    lines = []
    rack = report.client_rack
    if rack is None and report.requested_rack is not None:
        # Given, but no broker is in it: say which, and count replicas in it (none).
        rack = report.requested_rack
        lines.append(f"rack:      {rack} (matches no broker rack)  [{report.rack_source}]")
    else:
        lines.append(f"rack:      {rack or '(none)'}  [{report.rack_source}]")
    if report.candidates:
        found = ", ".join(f"{c['value']} ({c['source']})" for c in report.candidates)
        lines.append(f"           candidates: {found}")
    lines.extend(f"           note: {note}" for note in report.notes)
    lines.append("brokers:   " + ", ".join(f"{b['node_id']}={b['rack']}" for b in report.brokers))
    for topic, v in report.topics.items():
        if not v.get("partitions"):
            lines.append(f"topic {topic}: {v.get('error', 'no partitions')}")
            continue
        lines.append(
            f"topic {topic}: {v['with_in_sync_replica_in_rack']}/{v['partitions']} partitions "
            f"have an in-sync replica in {rack} ({v['share_with_replica_in_rack']:.0%}), "
            f"{v['leaders_in_rack']} led from it"
        )
    if report.selector:
        s = report.selector
        lines.append(
            f"selector:  {s['status']} ({s['named_a_replica']} of {s['probed']} probed "
            "partitions named a preferred read replica)"
        )
    if report.sample:
        s = report.sample
        if "skipped" in s:
            lines.append(f"sample:    skipped: {s['skipped']}")
        else:
            by_rack = ", ".join(f"{r}: {n} B" for r, n in s["bytes_by_rack"].items()) or "none"
            lines.append(
                f"sample:    {s['records']} records, {s['bytes']} B ({by_rack}); "
                f"cross-rack {s['cross_rack_bytes']} B ({s['cross_rack_share']:.0%})"
            )
            lines.extend(
                f"           {f['topic']}[{f['partition']}] read from broker "
                f"{f['read_from']} ({f['read_from_rack']}): {f['reason']}"
                for f in s["partitions_not_read_in_rack"]
            )
    lines.extend(_format_reassignment(report))
    if report.problems:
        lines.extend(f"PROBLEM ({p['code']}): {p['message']}" for p in report.problems)
    else:
        lines.append("OK: reads stay in the zone")
    return "\n".join(lines)


_SHOWN = 20


def _format_reassignment(report: DoctorReport) -> list[str]:
    lines = []
    a = report.applied
    if a:
        if a.get("completed"):
            lines.append(
                f"applied:   {a['partitions']} partition(s) reassigned in {a['seconds']:.1f} s"
            )
        else:
            pending = len(a.get("pending", ()))
            why = a.get("error") or f"{pending} partition(s) still moving"
            lines.append(f"applied:   unfinished: {why}")
    r = report.reassignment
    if not r:
        return lines
    rack = ", ".join(r["racks"])
    if r["unfixable_racks"]:
        lines.append(
            f"reassign:  cannot be fixed by reassignment: no broker is in rack "
            f"{', '.join(r['unfixable_racks'])} ({len(r['unfixed'])} partition(s) lack it)"
        )
    changes = r["partitions"]
    if not changes:
        return lines
    lines.append(
        f"reassign:  {len(changes)} partition(s) lack a replica in {rack}; the proposal "
        f"copies {_human(r['bytes_to_move'])}"
        + (f" and {len(r['unknown_sizes'])} of unknown size" if r["unknown_sizes"] else "")
    )
    for c in changes[:_SHOWN]:
        what = ", ".join(
            [f"{new} replaces {old}" for new, old in zip(c["added"], c["removed"], strict=False)]
            + [f"adds {new}" for new in c["added"][len(c["removed"]) :]]
        )
        grows = (
            f"; replication factor {len(c['current'])} -> {len(c['replicas'])}"
            if len(c["replicas"]) > len(c["current"])
            else ""
        )
        size = f", {_human(c['size'])}" if c["size"] is not None else ""
        lines.append(
            f"           {c['topic']}[{c['partition']}]: {c['current']} -> {c['replicas']} "
            f"({what}{grows}{size})"
        )
    if len(changes) > _SHOWN:
        lines.append(f"           ... and {len(changes) - _SHOWN} more (--json shows all)")
    if r["unknown_sizes"]:
        lines.append(
            f"           size unknown for {len(r['unknown_sizes'])} partition(s), not counted "
            f"({r.get('sizes_from', 'unknown')})"
        )
    if r["replication_factor_grows"]:
        lines.append(
            f"           {len(r['replication_factor_grows'])} partition(s) gain a replica "
            "(no other rack holds two to give one up)"
        )
    lines.append(
        "           to make it: --apply, or --reassignment-file FILE and "
        "kafka-reassign-partitions --execute --reassignment-json-file FILE"
    )
    return lines


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """The ``rackafka-doctor`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    env = os.environ if environ is None else environ
    report = asyncio.run(
        run_doctor(
            args.bootstrap_servers,
            args.topic,
            client_rack=args.client_rack,
            sample_seconds=args.sample_seconds,
            sample_records=args.sample_records,
            environ=env,
            detect_timeout=args.detect_timeout,
            apply=args.apply,
            apply_timeout=args.apply_timeout,
            progress=lambda line: print(f"rackafka-doctor: {line}", file=sys.stderr, flush=True),
            **_security(args, env),
        )
    )
    if args.reassignment_file:
        # the proposal that was checked (and made, with --apply), else the current one
        kafka_file = report.applied.get("reassignment_json") or report.reassignment.get(
            "reassignment_json"
        )
        if kafka_file and kafka_file["partitions"]:
            with open(args.reassignment_file, "w", encoding="utf-8") as out:
                json.dump(kafka_file, out, indent=2)
                out.write("\n")
            report.notes.append(f"reassignment written to {args.reassignment_file}")
        else:
            report.notes.append(f"nothing to reassign: {args.reassignment_file} not written")
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        print(format_report(report))
    return report.exit_code


def console_main() -> None:
    """Entry point of the ``rackafka-doctor`` console script."""
    sys.exit(main())
