"""docs/migrating.rst lists every difference between rackafka's and aiokafka's consumer and
producer that can be seen from their signatures: this test fails when one is added and not
documented."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import rackafka

aiokafka = pytest.importorskip("aiokafka", reason="aiokafka (test extra) is the reference")

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "migrating.rst").read_text()


def _public(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")}


CLASSES = ["AIOKafkaConsumer", "AIOKafkaProducer"]


@pytest.mark.parametrize("cls", CLASSES)
def test_every_constructor_difference_is_documented(cls: str) -> None:
    ours = inspect.signature(getattr(rackafka, cls).__init__).parameters
    theirs = inspect.signature(getattr(aiokafka, cls).__init__).parameters
    assert not set(theirs) - set(ours), "aiokafka arguments rackafka lacks"
    for name in set(ours) - set(theirs):
        assert f"``{name}``" in PAGE, name
    for name in set(ours) & set(theirs):
        if ours[name].default != theirs[name].default:
            assert f"``{name}`` default" in PAGE, name


@pytest.mark.parametrize("cls", CLASSES)
def test_every_method_difference_is_documented(cls: str) -> None:
    ours = _public(getattr(rackafka, cls))
    theirs = _public(getattr(aiokafka, cls))
    assert not theirs - ours, "aiokafka methods rackafka lacks"
    for name in ours - theirs:
        assert f"``{name}" in PAGE, name
    for name in ours & theirs:
        a, b = getattr(getattr(rackafka, cls), name), getattr(getattr(aiokafka, cls), name)
        if callable(a) and callable(b):
            assert list(inspect.signature(a).parameters) == list(inspect.signature(b).parameters), (
                name
            )


def test_every_missing_top_level_name_is_documented() -> None:
    for name in set(aiokafka.__all__) - set(dir(rackafka)):
        assert f"``{name}``" in PAGE, name


def _aiokafka_errors() -> dict[str, type]:
    theirs = pytest.importorskip("aiokafka.errors", reason="aiokafka is the reference")
    return {
        n: c
        for n, c in vars(theirs).items()
        if not n.startswith("_") and inspect.isclass(c) and issubclass(c, BaseException)
    }


def test_every_exception_hierarchy_difference_is_documented() -> None:
    # The page says the exceptions have aiokafka's base classes "with one added": every
    # base class rackafka adds to an aiokafka exception is named on the page, with the
    # exception, and none of aiokafka's is missing.
    import rackafka.errors as ours

    theirs = _aiokafka_errors()
    for x, their_x in theirs.items():
        for y, their_y in theirs.items():
            mine = issubclass(getattr(ours, x), getattr(ours, y))
            assert mine or not issubclass(their_x, their_y), f"{x} is no {y} here"
            if mine and not issubclass(their_x, their_y):
                assert f"``{x}``" in PAGE and f"``{y}``" in PAGE, (x, y)


AIOKAFKA_PATHS = [
    "aiokafka.coordinator.assignors.abstract",
    "aiokafka.coordinator.assignors.roundrobin",
    "aiokafka.coordinator.assignors.range",
    "aiokafka.coordinator.assignors.sticky.sticky_assignor",
    "aiokafka.coordinator.protocol",
    "aiokafka.errors",
    "aiokafka.structs",
    "aiokafka.abc",
    "aiokafka.helpers",
    "aiokafka.consumer",
    "aiokafka.producer",
]


@pytest.mark.parametrize("path", AIOKAFKA_PATHS)
def test_aiokafkas_module_paths_exist_or_are_documented(path: str) -> None:
    import importlib

    ported = "rackafka" + path[len("aiokafka") :]
    try:
        importlib.import_module(ported)
    except ImportError:
        assert f"``{ported}``" in PAGE, ported
