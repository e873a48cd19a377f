"""Every fatal group error reaches the application from its next call, never a silent stall.

OffsetFetch refused (GROUP_AUTHORIZATION_FAILED), an assignor that raises, an assignment
or a subscription that cannot be decoded: each is raised by the next getmany()/getone()
(or commit()), for the classic protocol and, where it applies, KIP-848's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rackafka.group.classic as classic_module
from rackafka import AIOKafkaConsumer
from rackafka.errors import (
    GroupAuthorizationFailedError,
    IllegalStateError,
    KafkaProtocolError,
)
from rackafka.group.assignors import AssignmentInput, PartitionAssignor
from rackafka.structs import TopicPartition
from rackafka.testing import EmbeddedCluster

GROUP_AUTHORIZATION_FAILED = GroupAuthorizationFailedError.errno
WAIT = 30.0


async def raised_by_getmany(consumer: AIOKafkaConsumer[Any, Any], kind: type) -> BaseException:
    """Poll until getmany() raises (it must, well within WAIT seconds)."""

    async def poll() -> BaseException:
        while True:
            try:
                await consumer.getmany(timeout_ms=200)
            except kind as exc:
                return exc

    return await asyncio.wait_for(poll(), WAIT)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
async def test_offset_fetch_group_authorization_failed_is_raised(protocol: str) -> None:
    async with EmbeddedCluster(brokers=1, racks=None) as cluster:
        cluster.create_topic("gaf", 1, 1)
        cluster.produce("gaf", 3, value_size=10)
        # Every OffsetFetch for a long while answers GROUP_AUTHORIZATION_FAILED.
        cluster.push_request_errors("OffsetFetch", *[GROUP_AUTHORIZATION_FAILED] * 2000)
        consumer = AIOKafkaConsumer(
            "gaf",
            bootstrap_servers=cluster.bootstrap_servers,
            group_id=f"gaf-{protocol}",
            group_protocol=protocol,
            auto_offset_reset="earliest",
            **(
                {"session_timeout_ms": 6000, "heartbeat_interval_ms": 200}
                if protocol == "classic"
                else {}
            ),
        )
        try:
            await consumer.start()
            exc = await raised_by_getmany(consumer, GroupAuthorizationFailedError)
            assert "OffsetFetch" in str(exc)
            # Raised again on the next poll while the broker keeps refusing (not once and
            # then a stall), and no record was handed out from a made-up position.
            await raised_by_getmany(consumer, GroupAuthorizationFailedError)
            # Once allowed again, the consumer reads from the reset position.
            cluster.clear_request_errors("OffsetFetch")

            async def read() -> int:
                got = 0
                while got < 3:
                    try:
                        batch = await consumer.getmany(timeout_ms=200)
                    except GroupAuthorizationFailedError:
                        continue  # (raised once more before the retry succeeded)
                    got += sum(len(v) for v in batch.values())
                return got

            assert await asyncio.wait_for(read(), WAIT) == 3
        finally:
            await consumer.stop()


class Exploding(PartitionAssignor):
    name = "exploding"

    def assign(self, data: AssignmentInput) -> dict[str, list[TopicPartition]]:
        raise ValueError("the assignor's own bug")


async def test_an_assignor_that_raises_is_raised_by_getmany_and_commit() -> None:
    async with EmbeddedCluster(brokers=1, racks=None) as cluster:
        cluster.create_topic("boom", 2, 1)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="boom",
            partition_assignment_strategy=(Exploding,),
            session_timeout_ms=6000,
            heartbeat_interval_ms=200,
        )
        try:
            await consumer.start()
            consumer.subscribe(["boom"])
            exc = await raised_by_getmany(consumer, ValueError)
            assert "the assignor's own bug" in str(exc)

            # commit() raises it too (the group retries the rebalance, fails again).
            async def commit_raises() -> None:
                while True:
                    try:
                        await consumer.commit()
                    except ValueError:
                        return
                    except Exception:
                        await asyncio.sleep(0.1)

            await asyncio.wait_for(commit_raises(), WAIT)
        finally:
            await consumer.stop()


async def test_an_assignment_that_cannot_be_decoded_is_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bytes the leader sent in SyncGroup cannot be decoded (as if a foreign leader
    # wrote them): the protocol error would be retried forever; it is fatal and raised.
    def undecodable(data: bytes) -> Any:
        raise KafkaProtocolError("truncated ConsumerProtocolAssignment")

    monkeypatch.setattr(classic_module, "decode_assignment", undecodable)
    async with EmbeddedCluster(brokers=1, racks=None) as cluster:
        cluster.create_topic("undecodable", 1, 1)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="undecodable",
            session_timeout_ms=6000,
            heartbeat_interval_ms=200,
        )
        try:
            await consumer.start()
            consumer.subscribe(["undecodable"])
            exc = await raised_by_getmany(consumer, IllegalStateError)
            assert "cannot be decoded" in str(exc) and "truncated" in str(exc)
        finally:
            await consumer.stop()
