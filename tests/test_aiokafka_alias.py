"""``rackafka.install_as_aiokafka()``: after the call, code written for aiokafka imports
rackafka's own modules and objects; without it nothing changes. Each check runs in a child
interpreter, so that this process's ``sys.modules`` stays as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rackafka import _aiokafka_alias as alias

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "migrating.rst").read_text()


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _json(code: str) -> object:
    done = _run(code)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_what_frameworks_import_is_rackafka() -> None:
    # The imports of FastStream's Kafka broker, each checked to be rackafka's object.
    found = _json("""
        import json, sys
        import rackafka
        rackafka.install_as_aiokafka()

        import aiokafka
        import aiokafka.admin
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
        from aiokafka import ConsumerRebalanceListener
        from aiokafka.abc import AbstractTokenProvider
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic
        from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from aiokafka.errors import ConsumerStoppedError, KafkaError, UnsupportedCodecError
        from aiokafka.partitioner import DefaultPartitioner
        from aiokafka.producer.producer import _missing
        from aiokafka.structs import RecordMetadata

        import rackafka.abc, rackafka.admin, rackafka.errors, rackafka.structs
        import rackafka.coordinator.assignors.abstract as abstract
        import rackafka.coordinator.assignors.roundrobin as roundrobin
        import rackafka.producer.config as producer_config
        import rackafka.producer.partitioner as partitioner

        print(json.dumps({
            "consumer": AIOKafkaConsumer is rackafka.AIOKafkaConsumer,
            "producer": AIOKafkaProducer is rackafka.AIOKafkaProducer,
            "record": ConsumerRecord is rackafka.ConsumerRecord,
            "tp": TopicPartition is rackafka.TopicPartition,
            "listener": ConsumerRebalanceListener is rackafka.ConsumerRebalanceListener,
            "token": AbstractTokenProvider is rackafka.abc.AbstractTokenProvider,
            "admin": AIOKafkaAdminClient is rackafka.AIOKafkaAdminClient,
            "admin_attr": aiokafka.admin.client.AIOKafkaAdminClient is AIOKafkaAdminClient,
            "new_topic": NewTopic is rackafka.admin.NewTopic,
            "abstract": AbstractPartitionAssignor is abstract.AbstractPartitionAssignor,
            "roundrobin": RoundRobinPartitionAssignor
                is roundrobin.RoundRobinPartitionAssignor,
            "errors": [ConsumerStoppedError, KafkaError, UnsupportedCodecError]
                == [rackafka.errors.ConsumerStoppedError, rackafka.errors.KafkaError,
                    rackafka.errors.UnsupportedCodecError],
            "partitioner": DefaultPartitioner is partitioner.DefaultPartitioner,
            "missing": _missing is producer_config.MISSING,
            "metadata": RecordMetadata is rackafka.RecordMetadata,
            "version": aiokafka.__version__,
            "structs": sys.modules["aiokafka.structs"] is rackafka.structs,
        }))
    """)
    assert isinstance(found, dict)
    assert found.pop("version") == alias.AIOKAFKA_API_VERSION
    assert {k for k, same in found.items() if same is not True} == set()


def test_every_alias_is_the_rackafka_module_by_import_and_by_attribute() -> None:
    found = _json(f"""
        import importlib, json, sys
        import rackafka
        rackafka.install_as_aiokafka()
        wrong = []
        for name, target in {alias.ALIASES!r}.items():
            module = importlib.import_module(name)
            walked = importlib.import_module("aiokafka")
            for part in name.split(".")[1:]:
                walked = getattr(walked, part)
            if not (module is walked is sys.modules[target]):
                wrong.append(name)
        print(json.dumps(wrong))
    """)
    assert found == []


def test_aiokafkas_public_paths_are_aliased() -> None:
    # The aiokafka paths docs/migrating.rst's test checks exist in rackafka (under rackafka's
    # name) also exist under aiokafka's once installed.
    migrating = pytest.importorskip("tests.docs.test_migrating")
    assert set(migrating.AIOKAFKA_PATHS) <= set(alias.ALIASES)


def test_every_module_of_aiokafka_is_aliased_or_listed_as_not_provided() -> None:
    aiokafka = pytest.importorskip("aiokafka", reason="aiokafka (test extra) is the reference")
    import pkgutil

    theirs = {
        m.name
        for m in pkgutil.walk_packages(aiokafka.__path__, "aiokafka.")
        if not m.name.rsplit(".", 1)[-1].startswith("_")
    }
    unlisted = {
        name
        for name in theirs - set(alias.ALIASES)
        if not any(name == p or name.startswith(p + ".") for p in alias.NOT_PROVIDED)
    }
    assert unlisted == set()
    for name in alias.NOT_PROVIDED:
        assert f"``{name}``" in PAGE, name


def test_an_internal_module_raises_saying_why_and_none_is_loaded_twice() -> None:
    found = _json("""
        import json, sys
        import rackafka
        rackafka.install_as_aiokafka()
        errors = {}
        # aiokafka's internals, and rackafka's own modules under an aiokafka name (which
        # would be a second copy of rackafka's code)
        for name in ("aiokafka.conn", "aiokafka.record.util", "aiokafka.admin.descriptions"):
            try:
                __import__(name)
            except ModuleNotFoundError as exc:
                errors[name] = [exc.name, "install_as_aiokafka" in str(exc)]
        errors["copies"] = sorted(
            n for n, m in sys.modules.items()
            if n.startswith("aiokafka.") and not m.__name__.startswith("rackafka.")
        )
        print(json.dumps(errors))
    """)
    assert found == {
        "aiokafka.conn": ["aiokafka.conn", True],
        "aiokafka.record.util": ["aiokafka.record", True],
        "aiokafka.admin.descriptions": ["aiokafka.admin.descriptions", True],
        "copies": [],
    }


def test_nothing_changes_without_the_call() -> None:
    found = _json("""
        import json, sys
        before = list(sys.meta_path)
        import rackafka, rackafka.admin, rackafka.testing
        print(json.dumps({
            "modules": sorted(n for n in sys.modules if n.split(".")[0] == "aiokafka"),
            "hooks": [type(f).__name__ for f in sys.meta_path if f not in before],
        }))
    """)
    assert found == {"modules": [], "hooks": []}


def test_without_the_call_aiokafka_is_the_real_one() -> None:
    pytest.importorskip("aiokafka", reason="aiokafka (test extra) is the reference")
    found = _json("""
        import json
        import rackafka
        import aiokafka
        print(json.dumps([aiokafka.AIOKafkaConsumer is rackafka.AIOKafkaConsumer,
                          hasattr(aiokafka, "__rackafka_version__")]))
    """)
    assert found == [False, False]


def test_a_second_call_changes_nothing() -> None:
    found = _json("""
        import json, sys
        import rackafka
        rackafka.install_as_aiokafka()
        first = dict((n, m) for n, m in sys.modules.items() if n.split(".")[0] == "aiokafka")
        hooks = len(sys.meta_path)
        rackafka.install_as_aiokafka()
        second = dict((n, m) for n, m in sys.modules.items() if n.split(".")[0] == "aiokafka")
        print(json.dumps([
            first.keys() == second.keys() and all(first[n] is second[n] for n in first),
            len(sys.meta_path) == hooks,
        ]))
    """)
    assert found == [True, True]


def test_the_real_aiokafka_imported_first_raises_and_installs_nothing() -> None:
    pytest.importorskip("aiokafka", reason="aiokafka (test extra) is the reference")
    found = _json("""
        import json, sys
        import aiokafka.structs
        import rackafka
        real = aiokafka.structs.TopicPartition
        try:
            rackafka.install_as_aiokafka()
        except RuntimeError as exc:
            outcome = [type(exc).__name__, "before anything imports aiokafka" in str(exc)]
        else:
            outcome = "installed"
        import aiokafka.structs as after
        print(json.dumps([outcome, after.TopicPartition is real]))
    """)
    assert found == [["AiokafkaAlreadyImportedError", True], True]


def test_the_real_aiokafka_imported_first_raises_without_aiokafka_installed() -> None:
    # The same check without relying on the test extra: a stand-in ``aiokafka`` module.
    found = _json("""
        import json, sys, types
        sys.modules["aiokafka"] = types.ModuleType("aiokafka")
        import rackafka
        try:
            rackafka.install_as_aiokafka()
        except RuntimeError as exc:
            print(json.dumps(str(exc)))
    """)
    assert isinstance(found, str) and "aiokafka is already imported" in found
