"""The cluster client waits by its policies: reconnects per address (reconnect_backoff_ms ..
reconnect_backoff_max_ms), coordinator look-ups and metadata refreshes (retry_backoff_ms ..
retry_backoff_max_ms). Waits are checked by the policy's values or as bounds that hold on any
machine, never by timing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rackafka import errors
from rackafka.client import KafkaClient
from rackafka.errors import KafkaConnectionError, KafkaTimeoutError
from rackafka.testing.fake_broker import FakeBroker, FakeRequest
from tests._policies import RecordingPolicy


def test_the_policies_come_from_the_java_named_settings() -> None:
    client = KafkaClient(
        "127.0.0.1:1",
        retry_backoff_ms=10,
        retry_backoff_max_ms=250,
        reconnect_backoff_ms=5,
        reconnect_backoff_max_ms=40,
    )
    assert (client.retry_policy.initial, client.retry_policy.maximum) == (0.01, 0.25)
    assert (client.reconnect_policy.initial, client.reconnect_policy.maximum) == (0.005, 0.04)
    assert client.retry_policy.jitter == client.reconnect_policy.jitter == 0.2
    # A maximum below the first wait: every wait is the first one (as before).
    low = KafkaClient("127.0.0.1:1", retry_backoff_ms=300, retry_backoff_max_ms=100)
    assert low.retry_policy.maximum == low.retry_backoff_max == 0.3


async def test_reconnect_waits_double_per_address_and_stop_at_the_maximum() -> None:
    async with FakeBroker(close_on_accept=True) as broker:
        client = KafkaClient(
            broker.bootstrap_servers,
            # (long enough that a loaded machine does not outrun the pause between the
            # ready() check and the refused attempt)
            reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=200,
            request_timeout_ms=5000,
        )
        key = (broker.host, broker.port)
        try:
            for failure in range(6):
                backoff = client._reconnect.get(key)
                if backoff is not None:
                    # Backing off: refused without a connection attempt.
                    accepted = broker.connections
                    if not backoff.ready():
                        with pytest.raises(KafkaConnectionError, match="not connecting"):
                            await client._open_address(*key)
                        assert broker.connections == accepted
                    await asyncio.sleep(backoff.remaining())
                before = time.monotonic()
                with pytest.raises(KafkaConnectionError):
                    await client._open_address(*key)
                after = time.monotonic()
                backoff = client._reconnect[key]
                assert backoff.attempts == failure + 1
                # The wait set is between these two bounds, whatever the machine's speed.
                longest, shortest = backoff.until - before, backoff.until - after
                nominal = min(0.050 * 2**failure, 0.200)
                assert longest >= 0.8 * nominal - 1e-6
                assert shortest <= min(1.2 * nominal, 0.200) + 1e-6
        finally:
            await client.close()


async def test_find_coordinator_retries_by_the_retry_policy() -> None:
    answers = [errors.CoordinatorNotAvailableError.errno] * 4 + [0]

    def find(broker: FakeBroker, request: FakeRequest) -> Any:
        code = answers.pop(0)
        node = {"node_id": broker.node_id, "host": broker.host, "port": broker.port}
        return {
            "error_code": code,
            **node,
            "coordinators": [{"key": "g", "error_code": code, **node}],
        }

    async with FakeBroker() as broker:
        broker.handlers["FindCoordinator"] = find
        client = KafkaClient(broker.bootstrap_servers, retry_backoff_ms=5, retry_backoff_max_ms=20)
        policy = client.retry_policy = RecordingPolicy(5, 20)
        try:
            await client.bootstrap_cluster()
            assert await client.find_coordinator("g", 0, timeout=30) == broker.node_id
            assert policy.waits == [(0, 0.005), (1, 0.01), (2, 0.02), (3, 0.02)]
            # A look-up that keeps failing ends at its deadline.
            answers[:] = [errors.CoordinatorNotAvailableError.errno] * 1000
            with pytest.raises(KafkaTimeoutError, match="no coordinator"):
                await client.find_coordinator("g", 0, timeout=0.05)
        finally:
            await client.close()


async def test_metadata_refreshes_in_a_row_wait_longer_by_the_retry_policy() -> None:
    async with FakeBroker() as broker:
        client = KafkaClient(broker.bootstrap_servers)
        # Pauses long enough that each refresh is asked within the last one's pause even
        # on a slow, busy machine (with 5 ms pauses a CI run missed one).
        policy = client.retry_policy = RecordingPolicy(100, 400)
        try:
            await client.bootstrap_cluster()
            for _ in range(4):
                await client.refresh_metadata()  # each asked within the last one's pause
            assert policy.attempts() == [0, 1, 2, 3]
            assert [wait for _attempt, wait in policy.waits] == [0.1, 0.2, 0.4, 0.4]
        finally:
            await client.close()


async def test_refreshes_that_bring_news_and_new_topics_do_not_build_up_pauses() -> None:
    # As Java's client: only answers that tell nothing new make the pauses grow (its
    # "equivalent responses"); an answer that changed the metadata starts over, and a
    # new topic of interest is asked for at once, whatever pause came before.
    async with FakeBroker(topics={"t0": 1}) as broker:
        client = KafkaClient(broker.bootstrap_servers)
        policy = client.retry_policy = RecordingPolicy(100, 400)
        try:
            await client.bootstrap_cluster()
            client.want_all_topics()
            for n in range(1, 4):
                broker.topics[f"t{n}"] = 1  # the cluster changed: the answer is news
                await client.refresh_metadata()
            assert policy.attempts() == [0, 0, 0]
            for _ in range(2):
                await client.refresh_metadata()  # nothing new: the pause grows
            assert policy.attempts() == [0, 0, 0, 1, 2]
            assert client._next_refresh_at - time.monotonic() > 0.2  # a long pause set
            started = time.monotonic()
            client.add_topics(["t1"])  # a topic of interest never asked for
            await client.refresh_metadata()
            assert time.monotonic() - started < 0.2  # not after the pause
            assert client.cluster.partitions.get("t1")
        finally:
            await client.close()


async def test_periodic_refreshes_keep_metadata_max_age_after_refreshes_in_a_row(
    embedded_cluster: Any,
) -> None:
    # Refreshes asked for in a row wait longer and longer (KIP-580); the periodic refresh
    # of metadata_max_age_ms is not one of them: after a burst, metadata is refreshed every
    # metadata_max_age_ms again (a pattern subscription sees a new topic that soon).
    client = KafkaClient(
        embedded_cluster.bootstrap_servers,
        metadata_max_age_ms=200,
        retry_backoff_ms=100,
        retry_backoff_max_ms=1000,
    )
    await client.bootstrap_cluster()
    try:
        for _ in range(5):  # a burst: the pauses grow towards retry_backoff_max_ms
            await client.refresh_metadata()
        before = client.metadata_requests
        await asyncio.sleep(1.2)
        periodic = client.metadata_requests - before
        assert periodic >= 4, periodic  # every 200 ms, not every 1 s
    finally:
        await client.close()


async def test_a_connection_opened_while_the_client_closes_is_closed(
    embedded_cluster: Any,
) -> None:
    # A task that outlives close() (a lookup, a refresh) must not leave a socket for the
    # garbage collector (aiokafka's suite runs with ResourceWarning as an error).
    import gc
    import warnings

    client = KafkaClient(embedded_cluster.bootstrap_servers)
    host, port = client.bootstrap[0]
    opening = asyncio.ensure_future(client._open_address(host, port))
    await asyncio.sleep(0)  # the attempt is under way
    await client.close()
    with pytest.raises(KafkaConnectionError, match="closed"):
        await opening
    with pytest.raises(KafkaConnectionError, match="closed"):
        await client._open_address(host, port)  # and none is opened after close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del opening
        gc.collect()
        await asyncio.sleep(0)
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], caught
