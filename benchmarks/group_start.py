"""How long a group consumer's ``start()`` takes, rackafka against aiokafka, on real Kafka.

``start()`` of a consumer with a ``group_id`` and a subscription returns once the group gave
it its partitions (both clients): it bootstraps, loads the topic's metadata, finds the group
coordinator, joins (JoinGroup), assigns as the group's leader and syncs (SyncGroup). Each
round starts one consumer of each client, alternating, each in a new group of its own (so
that no earlier member is waited for), and stops it; the median of ``--repeat`` rounds is
reported with the ratio to aiokafka.

Real Kafka only (``rackafka.testing.KafkaCluster``, one broker with
``group.initial.rebalance.delay.ms=0`` as the test tier's): librdkafka's mock coordinator
waits seconds before a new group's first join, which would hide what the clients do.

Usage: ``python benchmarks/group_start.py [--repeat 15] [--bootstrap HOST:PORT --topic T]``
(``--bootstrap`` measures against a running cluster instead of starting one; the topic must
exist).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import time
import uuid
from typing import Any

CLIENTS = ("rackafka", "aiokafka")


async def one_start(client: str, bootstrap: str, topic: str) -> float:
    """Seconds one group consumer of ``client`` takes in ``start()``."""
    module: Any = importlib.import_module(client)
    consumer = module.AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"bench-start-{uuid.uuid4().hex[:12]}",
        auto_offset_reset="earliest",
    )
    began = time.perf_counter()
    await consumer.start()
    took = time.perf_counter() - began
    try:
        if not consumer.assignment():
            raise RuntimeError(f"{client}: start() returned without an assignment")
    finally:
        await consumer.stop()
    return took


async def measure(bootstrap: str, topic: str, repeat: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {c: [] for c in CLIENTS}
    for _ in range(repeat):
        for client in CLIENTS:
            times[client].append(await one_start(client, bootstrap, topic))
    return times


def report(times: dict[str, list[float]]) -> None:
    base = statistics.median(times["aiokafka"])
    print(f"{'client':<10} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'x aiokafka':>11}")
    for client, values in times.items():
        med = statistics.median(values)
        print(
            f"{client:<10} {med * 1000:>10.1f} {min(values) * 1000:>8.1f} "
            f"{max(values) * 1000:>8.1f} {med / base:>11.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--bootstrap", help="a running cluster (default: start one)")
    parser.add_argument("--topic", default="bench-start")
    args = parser.parse_args()
    if args.bootstrap:
        report(asyncio.run(measure(args.bootstrap, args.topic, args.repeat)))
        return
    from rackafka.testing import KafkaCluster

    with KafkaCluster(brokers=1, racks=None) as kafka:
        kafka.create_topic(args.topic, 4, 1)
        asyncio.run(measure(kafka.bootstrap_servers, args.topic, 1))  # warm-up, not counted
        report(asyncio.run(measure(kafka.bootstrap_servers, args.topic, args.repeat)))


if __name__ == "__main__":
    main()
