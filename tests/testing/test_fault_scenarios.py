"""The pure parts of the fault scenarios (rackafka.testing.faults): the seeded schedule and
the checks made on what a run saw. The runs themselves are tests/kafka/test_group_faults.py."""

from __future__ import annotations

import pytest

from rackafka.testing._fault_checks import (
    Ledger,
    MemberStats,
    RackWindow,
    ScenarioReport,
    check_duplicates,
    check_exceptions,
    check_no_loss,
    check_rack,
)
from rackafka.testing.faults import (
    FAULT_KINDS,
    SCENARIOS,
    FaultSchedule,
    seed_from_env,
)


def test_a_seed_draws_one_schedule() -> None:
    a = FaultSchedule.draw(5, ["kill", "replace"])
    assert a == FaultSchedule.draw(5, ["kill", "replace"])
    assert sorted(f.kind for f in a) == ["kill", "replace"]
    others = {FaultSchedule.draw(s, FAULT_KINDS).faults for s in range(20)}
    assert len(others) == 20  # targets, holds, gaps and order come from the seed
    for f in FaultSchedule.draw(9, FAULT_KINDS):
        assert f.broker in (None, 1, 2, 3) and f.fallback in (1, 2, 3)
        assert sorted(f.order) == [1, 2, 3]
        assert (8 <= f.hold <= 12) if f.kind == "freeze" else (3 <= f.hold <= 8)
        assert str(f).startswith(f"after {f.gap:.0f} s: ")


def test_a_long_schedule_has_every_kind_and_fills_the_time() -> None:
    short = FaultSchedule.draw(3, FAULT_KINDS)
    assert sorted(f.kind for f in short) == sorted(FAULT_KINDS)
    long = FaultSchedule.draw(3, FAULT_KINDS, seconds=600)
    assert set(f.kind for f in long) == set(FAULT_KINDS)
    assert len(long.faults) > len(FAULT_KINDS)
    assert long.faults[: len(FAULT_KINDS)] == short.faults


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="fault kinds must be some of"):
        FaultSchedule.draw(1, ["kill", "meteor"])
    with pytest.raises(ValueError):
        FaultSchedule.draw(1, [])


def test_every_scenario_names_known_kinds() -> None:
    assert set(SCENARIOS) == {"cooperative-sticky", "eager", "kip848", "transactional"}
    covered = {k for s in SCENARIOS.values() for k in s.short_faults}
    assert covered == set(FAULT_KINDS) - {"rolling"}


def test_seed_from_env() -> None:
    assert seed_from_env({}) == 37
    assert seed_from_env({"RACKAFKA_FAULT_SEED": " 123 "}) == 123
    drawn = seed_from_env({"RACKAFKA_FAULT_SEED": "random"})
    assert isinstance(drawn, int) and drawn > 0


def ledger_with(acked: int, delivered: dict[tuple[int, int], int]) -> Ledger:
    ledger = Ledger(2)
    for seq in range(acked):
        ledger.ack(seq, seq % 2, seq // 2)
    for (p, o), times in delivered.items():
        for _ in range(times):
            ledger.deliver(p, o, 2 * o + p, ok=True)
    return ledger


def test_no_loss_names_what_was_never_consumed() -> None:
    every = {(s % 2, s // 2): 1 for s in range(10)}
    assert check_no_loss(ledger_with(10, every)).ok
    partial = dict(every)
    del partial[(1, 3)]
    check = check_no_loss(ledger_with(10, partial))
    assert not check.ok and "1 never consumed, first [(1, 3)]" in check.detail
    assert not check_no_loss(ledger_with(0, {})).ok  # nothing written proves nothing
    corrupt = ledger_with(2, {(0, 0): 1, (1, 0): 1})
    corrupt.deliver(0, 0, 7, ok=False)
    assert not check_no_loss(corrupt).ok


def test_duplicates_are_bounded_by_ownership_changes() -> None:
    ledger = ledger_with(10, {(0, o): 2 for o in range(3)})
    check = check_duplicates(ledger, max_records=2)
    assert not check.ok and "p0: 3 > 0" in check.detail  # never changed owner
    ledger.owned("m1", [0, 1])
    ledger.owned("m2", [0])  # one change of partition 0: at most 2 re-deliveries
    assert not check_duplicates(ledger, max_records=2).ok
    assert check_duplicates(ledger, max_records=3).ok
    assert "3 duplicate deliveries" in check_duplicates(ledger, max_records=3).detail


def test_exceptions() -> None:
    ledger = Ledger(1)
    calm = MemberStats("m1", "az-a", assigned_calls=3)  # 2 rebalances after the first
    calm.commit_failures["CommitFailedError"] = 2
    calm.txn_errors["ProducerFenced"] = 1
    assert check_exceptions([calm], ledger).ok
    calm.commit_failures["RebalanceInProgressError"] = 1  # one under way at the end
    assert check_exceptions([calm], ledger).ok
    calm.commit_failures["RebalanceInProgressError"] += 1
    check = check_exceptions([calm], ledger)
    assert not check.ok and "4 commit failures" in check.detail and "3 allowed" in check.detail
    for field, kind in (
        ("poll_errors", "InconsistentGroupProtocolError"),
        ("commit_errors", "KafkaTimeoutError"),
        ("start_errors", "UnknownMemberIdError"),
        ("txn_errors", "KafkaTimeoutError"),
    ):
        m = MemberStats("m2", "az-b")
        getattr(m, field)[kind] += 1
        check = check_exceptions([m], ledger)
        assert not check.ok and kind in check.detail
    ledger.send_failed(TimeoutError("lost"))
    assert not check_exceptions([], ledger).ok


def test_rack_window() -> None:
    good = RackWindow("m1", "az-a", 1000, 0, {})
    assert check_rack([good], 6).ok
    assert not check_rack([], 6).ok
    assert not check_rack([good, RackWindow("m2", "az-b", 1000, 10, {"p1": (1, "az-a")})], 6).ok
    assert not check_rack([RackWindow("m3", "az-c", 0, 0, {})], 6).ok  # read nothing


def test_a_failed_report_names_the_seed_and_the_checks() -> None:
    report = ScenarioReport("eager", 4242, 45)
    report.checks.append(check_no_loss(ledger_with(0, {})))
    with pytest.raises(AssertionError, match="seed=4242: failed no loss") as info:
        report.assert_ok()
    assert "RACKAFKA_FAULT_SEED=4242" in str(info.value)
    report.checks.clear()
    report.assert_ok()
