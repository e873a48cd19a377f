"""Custom assignors written for aiokafka port by changing the import.

``rackafka.coordinator.assignors.*`` mirrors ``aiokafka.coordinator.assignors.*``; a
subclass of ``AbstractPartitionAssignor`` (rackafka's or aiokafka's) is run as aiokafka
runs it: ``metadata()`` on join, ``assign(cluster, members)`` on the leader,
``on_assignment()`` on every member.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from rackafka import AIOKafkaConsumer, TopicPartition
from rackafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from rackafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from rackafka.group.assignors import (
    RangePartitionAssignor,
    RoundRobinPartitionAssignor,
    StickyPartitionAssignor,
)
from rackafka.testing import EmbeddedCluster

PATHS = {
    "coordinator.assignors.abstract": ["AbstractPartitionAssignor"],
    "coordinator.assignors.roundrobin": ["RoundRobinPartitionAssignor"],
    "coordinator.assignors.range": ["RangePartitionAssignor"],
    "coordinator.assignors.sticky.sticky_assignor": ["StickyPartitionAssignor"],
    "coordinator.protocol": ["ConsumerProtocolMemberMetadata", "ConsumerProtocolMemberAssignment"],
}


@pytest.mark.parametrize("module", sorted(PATHS))
def test_aiokafkas_import_paths_exist(module: str) -> None:
    ours = importlib.import_module(f"rackafka.{module}")
    for name in PATHS[module]:
        assert hasattr(ours, name), (module, name)


@pytest.mark.parametrize("module", sorted(PATHS))
def test_the_paths_are_aiokafkas(module: str) -> None:
    theirs = pytest.importorskip(f"aiokafka.{module}", reason="aiokafka is not installed")
    for name in PATHS[module]:
        assert hasattr(theirs, name), (module, name)


def test_builtin_assignors_are_abstract_partition_assignors() -> None:
    for cls in (RoundRobinPartitionAssignor, RangePartitionAssignor, StickyPartitionAssignor):
        assert issubclass(cls, AbstractPartitionAssignor)


def test_assignment_partitions() -> None:
    a = ConsumerProtocolMemberAssignment(0, [("t", [0, 2]), ("u", [1])], b"")
    assert a.partitions() == [
        TopicPartition("t", 0),
        TopicPartition("t", 2),
        TopicPartition("u", 1),
    ]


class Calls:
    metadata: list[list[str]] = []
    assign: list[dict[str, Any]] = []
    on_assignment: list[list[TopicPartition]] = []


def everything_to_the_tagged_member(base: type) -> type:
    """An aiokafka-style assignor (class methods, aiokafka's types): all partitions go to
    the member whose user data is b"take-all" (else to the first member)."""

    class TakeAll(base):  # type: ignore[misc, valid-type]
        name = "take-all"
        version = 0
        tag = b""

        @classmethod
        def metadata(cls, topics: Iterable[str]) -> Any:
            Calls.metadata.append(sorted(topics))
            return ConsumerProtocolMemberMetadata(cls.version, list(topics), cls.tag)

        @classmethod
        def assign(cls, cluster: Any, members: Mapping[str, Any]) -> dict[str, Any]:
            Calls.assign.append(
                {m: (sorted(md.subscription), md.user_data) for m, md in members.items()}
            )
            topics = sorted({t for md in members.values() for t in md.subscription})
            everything = [(t, sorted(cluster.partitions_for_topic(t) or ())) for t in topics]
            takers = [m for m, md in sorted(members.items()) if md.user_data == b"take-all"]
            taker = takers[0] if takers else min(members)
            return {
                m: ConsumerProtocolMemberAssignment(
                    cls.version, everything if m == taker else [], b""
                )
                for m in members
            }

        @classmethod
        def on_assignment(cls, assignment: Any) -> None:
            Calls.on_assignment.append(sorted(assignment.partitions()))

    return TakeAll


def bases() -> list[Any]:
    out: list[Any] = [pytest.param(AbstractPartitionAssignor, id="rackafka")]
    try:
        from aiokafka.coordinator.assignors.abstract import (
            AbstractPartitionAssignor as TheirAbstract,
        )
    except ImportError:
        out.append(pytest.param(None, id="aiokafka", marks=pytest.mark.skip("no aiokafka")))
    else:
        out.append(pytest.param(TheirAbstract, id="aiokafka"))
    return out


@pytest.mark.parametrize("base", bases())
async def test_a_custom_aiokafka_assignor_decides(base: type) -> None:
    Calls.metadata, Calls.assign, Calls.on_assignment = [], [], []
    taker_cls = everything_to_the_tagged_member(base)

    class Other(taker_cls):  # type: ignore[misc, valid-type]
        tag = b"other"

    class Taker(taker_cls):  # type: ignore[misc, valid-type]
        tag = b"take-all"

    async with EmbeddedCluster(brokers=1, racks=None) as cluster:
        cluster.create_topic("ca", 3, 1)
        common = {
            "bootstrap_servers": cluster.bootstrap_servers,
            "group_id": "custom-assignor",
            "session_timeout_ms": 6000,
            "heartbeat_interval_ms": 200,
        }
        first = AIOKafkaConsumer("ca", partition_assignment_strategy=(Other,), **common)
        second = AIOKafkaConsumer("ca", partition_assignment_strategy=(Taker,), **common)
        try:
            await first.start()
            await second.start()
            everything = {TopicPartition("ca", p) for p in range(3)}

            async def settled() -> None:
                while not (second.assignment() == everything and not first.assignment()):
                    await first.getmany(timeout_ms=50)
                    await second.getmany(timeout_ms=50)

            await asyncio.wait_for(settled(), 30)
        finally:
            await first.stop()
            await second.stop()
    assert ["ca"] in Calls.metadata
    # The leader's assign() saw both members with their subscriptions and user data.
    assert any(
        sorted(v for v in seen.values()) == [(["ca"], b"other"), (["ca"], b"take-all")]
        for seen in Calls.assign
    )
    assert sorted(everything) in Calls.on_assignment
