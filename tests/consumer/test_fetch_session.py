"""KIP-227 fetch session bookkeeping (pure logic)."""

from __future__ import annotations

from rackafka.consumer.fetch_session import FetchSession, PartitionFetchState
from rackafka.errors import FetchSessionIdNotFound

FETCH_SESSION_ID_NOT_FOUND = FetchSessionIdNotFound.errno


def st(offset: int, epoch: int = 1) -> PartitionFetchState:
    return PartitionFetchState(offset, epoch, -1, 1 << 20)


def test_first_request_is_full_and_asks_for_a_session() -> None:
    s: FetchSession[str] = FetchSession(1)
    req = s.build({"a": st(0), "b": st(5)})
    assert req.full and req.session_id == 0 and req.epoch == 0
    assert req.partitions == {"a": st(0), "b": st(5)}
    assert req.forgotten == []


def test_broker_without_sessions_keeps_us_on_full_fetches() -> None:
    s: FetchSession[str] = FetchSession(1)
    s.build({"a": st(0)})
    assert s.handle_response(0, session_id=0)
    req = s.build({"a": st(3)})
    assert req.full and req.session_id == 0 and req.epoch == 0
    assert req.partitions == {"a": st(3)}


def test_incremental_requests_carry_only_changes_and_forgotten() -> None:
    s: FetchSession[str] = FetchSession(1)
    s.build({"a": st(0), "b": st(5), "c": st(9)})
    s.handle_response(0, session_id=77)
    req = s.build({"a": st(10), "b": st(5), "d": st(0)})
    assert not req.full
    assert (req.session_id, req.epoch) == (77, 1)
    assert req.partitions == {"a": st(10), "d": st(0)}  # b unchanged, c gone
    assert req.forgotten == ["c"]
    s.handle_response(0, session_id=77)
    req = s.build({"a": st(10), "b": st(5), "d": st(0)})
    assert (req.epoch, req.partitions, req.forgotten) == (2, {}, [])


def test_leader_epoch_change_is_a_change() -> None:
    s: FetchSession[str] = FetchSession(1)
    s.build({"a": st(0, epoch=1)})
    s.handle_response(0, session_id=5)
    req = s.build({"a": st(0, epoch=2)})
    assert req.partitions == {"a": st(0, epoch=2)}


def test_session_error_and_failure_start_over_with_a_full_fetch() -> None:
    s: FetchSession[str] = FetchSession(1)
    s.build({"a": st(0)})
    s.handle_response(0, session_id=5)
    s.build({"a": st(1)})
    assert not s.handle_response(FETCH_SESSION_ID_NOT_FOUND, session_id=0)
    req = s.build({"a": st(1)})
    assert req.full and req.session_id == 0 and req.partitions == {"a": st(1)}
    s.handle_response(0, session_id=6)
    s.build({"a": st(2)})
    s.handle_failure()
    req = s.build({"a": st(2)})
    assert req.full and req.epoch == 0


def test_epoch_wraps_to_one() -> None:
    s: FetchSession[str] = FetchSession(1)
    s.build({"a": st(0)})
    s.handle_response(0, session_id=5)
    s.epoch = 0x7FFFFFFF
    s.build({"a": st(0)})
    s.handle_response(0, session_id=5)
    assert s.epoch == 1
