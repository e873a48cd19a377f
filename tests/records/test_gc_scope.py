"""The bounds of rackafka's deferral of young collections (``rackafka.records._gc``): it
can be turned off, it is never renewed past ``MAX_SECONDS`` nor above ``MAX_RAISE``, and
another thread's garbage is collected while batches are decoded back to back."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rackafka.records import _gc, encode_batch, iter_batches

TS = 1_700_000_000_000


@pytest.fixture
def default_collector() -> Iterator[None]:
    """The collector enabled at the interpreter's default thresholds (restored after)."""
    enabled = gc.isenabled()
    threshold = gc.get_threshold()
    gc.set_threshold(*_gc.DEFAULT_THRESHOLD)
    gc.collect()
    gc.enable()
    yield
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()
    else:
        gc.disable()


def _batch(n: int) -> Any:
    (batch,) = iter_batches(encode_batch([(TS, b"k%d" % i, b"v", [("h", b"x")]) for i in range(n)]))
    return batch


_OFF_CHILD = """
import gc
from rackafka.records import _gc, encode_batch, iter_batches
(batch,) = iter_batches(encode_batch([(1, b"k", b"v", [])] * 3000))
seen = []
gc.collect()
batch.records(lambda *a: seen.append(gc.isenabled()))
print(_gc.enabled, all(seen), gc.get_threshold() == _gc.DEFAULT_THRESHOLD)
"""


@pytest.mark.parametrize("value", ["0", "off", "False"])
def test_rackafka_defer_gc_0_leaves_the_collector_alone(value: str) -> None:
    env = dict(os.environ, RACKAFKA_DEFER_GC=value)
    out = subprocess.run(
        [sys.executable, "-c", _OFF_CHILD], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["False", "True", "True"]


def test_the_switch_is_on_by_default_before_python_3_14() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RACKAFKA_DEFER_GC"}
    out = subprocess.run(
        [sys.executable, "-c", _OFF_CHILD], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    on = sys.version_info < (3, 14)
    # On: the collector was paused during the decoding and its threshold is raised.
    assert out == [str(on), str(not on), str(not on)]


def test_the_off_switch_in_process(
    default_collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_gc, "enabled", False)
    seen: list[bool] = []
    _batch(2000).records(lambda *args: seen.append(gc.isenabled()))
    assert seen == [True] * 2000
    assert gc.get_threshold() == _gc.DEFAULT_THRESHOLD


def test_a_raise_is_not_renewed_past_max_seconds(
    default_collector: None, collections: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_gc, "MAX_SECONDS", 0.05)
    batch = _batch(3000)
    collections.clear()
    held = [batch.records()]
    assert gc.get_threshold()[0] > _gc.DEFAULT_THRESHOLD[0] and collections == []
    held.append(batch.records())  # within MAX_SECONDS: renewed
    assert gc.get_threshold()[0] > _gc.DEFAULT_THRESHOLD[0] and collections == []
    time.sleep(0.06)
    seen: list[bool] = []
    held.append(batch.records(lambda *args: seen.append(gc.isenabled()) or args))
    # Too long: the default threshold again, and this decoding ran with the collector on
    # and collected as it would without rackafka.
    assert seen == [True] * 3000
    assert gc.get_threshold() == _gc.DEFAULT_THRESHOLD
    junk = [[] for _ in range(100)]
    assert collections and junk
    # After that, a new raise may begin.
    held.append(batch.records())
    assert gc.get_threshold()[0] > _gc.DEFAULT_THRESHOLD[0]


class _Cycle:
    made = 0
    freed = 0

    def __init__(self) -> None:
        self.me = self
        _Cycle.made += 1

    def __del__(self) -> None:
        _Cycle.freed += 1


def test_another_thread_s_garbage_is_collected_while_batches_decode(
    default_collector: None, collections: list[int]
) -> None:
    """A thread makes garbage cycles while the main thread decodes batches back to back
    (the records held a moment, then dropped, as a consumer's application does): the
    collector still runs at least every ``MAX_SECONDS`` or so, and the threshold never
    goes past ``MAX_RAISE`` above the default."""
    batch = _batch(5000)
    stop = threading.Event()
    peak = [0]

    def make_garbage() -> None:
        while not stop.is_set():
            for _ in range(20):
                _Cycle()
            peak[0] = max(peak[0], _Cycle.made - _Cycle.freed)
            time.sleep(0.0005)

    gc.collect()
    collections.clear()
    worker = threading.Thread(target=make_garbage)
    worker.start()
    highest = 0
    start = time.monotonic()
    try:
        while time.monotonic() - start < 2.0:
            records = batch.records()
            highest = max(highest, gc.get_threshold()[0])
            del records
    finally:
        stop.set()
        worker.join()
    elapsed = time.monotonic() - start
    young = collections.count(0) + collections.count(1) + collections.count(2)
    # Without the time bound: no collection at all in these 2 s (the records freed
    # after each batch keep the count under the raised threshold).
    assert elapsed / _gc.MAX_SECONDS >= 3 and young >= 2, collections
    assert highest <= _gc.DEFAULT_THRESHOLD[0] + _gc.MAX_RAISE
    assert _Cycle.made > 1000
    gc.collect()
    assert _Cycle.made == _Cycle.freed
    assert peak[0] < _Cycle.made  # some were collected before the end


def test_a_threshold_set_during_a_decoding_is_kept(default_collector: None) -> None:
    """A deserializer (or another thread) that tunes the collector while a batch decodes
    keeps its setting."""
    tuned = (5000, *_gc.DEFAULT_THRESHOLD[1:])

    def factory(*args: Any) -> Any:
        if args[2] == 0:
            gc.set_threshold(*tuned)
        return args

    _batch(3000).records(factory)
    assert gc.get_threshold() == tuned and gc.isenabled()
