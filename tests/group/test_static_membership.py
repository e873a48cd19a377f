"""Static membership (KIP-345): needs a coordinator that implements it (real Kafka)."""

from __future__ import annotations

import asyncio

import pytest

from tests.group.test_group_consumer import group_consumer, wait_until


async def test_static_member_restart_without_rebalance(kafka_cluster) -> None:
    from rackafka.testing import EmbeddedCluster

    if isinstance(kafka_cluster, EmbeddedCluster):
        pytest.skip(
            "librdkafka's mock group coordinator rebalances on every JoinGroup: it does not "
            "implement static membership (KIP-345); run with --kafka=real (or compose) against "
            "real Kafka"
        )
    c = kafka_cluster
    c.create_topic("static", partitions=4, replication_factor=3)
    a = group_consumer(c, "g-static", group_instance_id="a", session_timeout_ms=10000)
    b = group_consumer(c, "g-static", group_instance_id="b", session_timeout_ms=10000)
    for m in (a, b):
        m.subscribe(["static"])
        await m.start()
    try:
        await wait_until(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, 20, "split")
        await asyncio.sleep(0.5)
        before_a = a.assignment()
        rebalances_b = b._coordinator.rebalances
        generation = b._coordinator.state.generation_id
        await a.stop()  # a static member does not leave
        a2 = group_consumer(c, "g-static", group_instance_id="a", session_timeout_ms=10000)
        a2.subscribe(["static"])
        await a2.start()
        await wait_until(lambda: a2.assignment() == before_a, 15, "same assignment back")
        await asyncio.sleep(1.0)
        assert b._coordinator.rebalances == rebalances_b
        assert b._coordinator.state.generation_id == generation
        await a2.stop()
    finally:
        await b.stop()
