"""``rackafka.install_as_aiokafka()``: code that imports ``aiokafka`` gets rackafka.

For frameworks built on aiokafka (FastStream and the like) that an application cannot edit:
called once, before the framework is imported, it puts aliases in :data:`sys.modules`, so
that ``import aiokafka.admin`` or ``from aiokafka.structs import TopicPartition`` hand out
rackafka's own modules and classes. Nothing is copied or wrapped; only the package
``aiokafka`` itself is a small module of its own, holding aiokafka's top-level names (taken
from rackafka) and an aiokafka-style ``__version__``.

Nothing happens unless the function is called: importing rackafka installs no import hook.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

from rackafka._version import __version__ as _rackafka_version

__all__ = ["AIOKAFKA_API_VERSION", "ALIASES", "NOT_PROVIDED", "install_as_aiokafka"]

#: The aiokafka release whose API rackafka follows: the alias's ``aiokafka.__version__``,
#: so that a framework's version check takes its newest code path.
AIOKAFKA_API_VERSION = "0.14.0"

#: Each aliased aiokafka module and the rackafka module it points at.
ALIASES: dict[str, str] = {
    "aiokafka.abc": "rackafka.abc",
    "aiokafka.admin": "rackafka.admin",
    "aiokafka.admin.client": "rackafka.admin.client",
    "aiokafka.admin.config_resource": "rackafka.admin.config_resource",
    "aiokafka.admin.new_partitions": "rackafka.admin.new_partitions",
    "aiokafka.admin.new_topic": "rackafka.admin.new_topic",
    "aiokafka.admin.records_to_delete": "rackafka.admin.records_to_delete",
    "aiokafka.consumer": "rackafka.consumer",
    "aiokafka.consumer.consumer": "rackafka.consumer.consumer",
    "aiokafka.coordinator": "rackafka.coordinator",
    "aiokafka.coordinator.assignors": "rackafka.coordinator.assignors",
    "aiokafka.coordinator.assignors.abstract": "rackafka.coordinator.assignors.abstract",
    "aiokafka.coordinator.assignors.range": "rackafka.coordinator.assignors.range",
    "aiokafka.coordinator.assignors.roundrobin": "rackafka.coordinator.assignors.roundrobin",
    "aiokafka.coordinator.assignors.sticky": "rackafka.coordinator.assignors.sticky",
    "aiokafka.coordinator.assignors.sticky.sticky_assignor": (
        "rackafka.coordinator.assignors.sticky.sticky_assignor"
    ),
    "aiokafka.coordinator.protocol": "rackafka.coordinator.protocol",
    "aiokafka.errors": "rackafka.errors",
    "aiokafka.helpers": "rackafka.helpers",
    "aiokafka.partitioner": "rackafka.producer.partitioner",
    "aiokafka.producer": "rackafka.producer",
    "aiokafka.producer.producer": "rackafka.producer.producer",
    "aiokafka.structs": "rackafka.structs",
}

#: aiokafka's modules that have no alias: its internals (the wire protocol, the record
#: formats, the connection, the low-level client, the consumer's and producer's machinery),
#: which rackafka implements differently. Importing one raises ``ModuleNotFoundError``
#: naming this list.
NOT_PROVIDED: tuple[str, ...] = (
    "aiokafka.client",
    "aiokafka.cluster",
    "aiokafka.codec",
    "aiokafka.conn",
    "aiokafka.consumer.fetcher",
    "aiokafka.consumer.group_coordinator",
    "aiokafka.consumer.subscription_state",
    "aiokafka.coordinator.assignors.sticky.partition_movements",
    "aiokafka.coordinator.assignors.sticky.sorted_set",
    "aiokafka.producer.message_accumulator",
    "aiokafka.producer.sender",
    "aiokafka.producer.transaction_manager",
    "aiokafka.protocol",
    "aiokafka.record",
    "aiokafka.util",
)

#: aiokafka's top-level names (its ``__all__``) and where rackafka keeps each; aiokafka's
#: ``AIOKafkaClient`` has no counterpart (docs/migrating.rst).
_TOP_LEVEL: dict[str, str] = {
    "AIOKafkaConsumer": "rackafka.consumer.consumer",
    "AIOKafkaProducer": "rackafka.producer.producer",
    "ConsumerRebalanceListener": "rackafka.abc",
    "ConsumerStoppedError": "rackafka.errors",
    "IllegalOperation": "rackafka.errors",
    "ConsumerRecord": "rackafka.structs",
    "OffsetAndMetadata": "rackafka.structs",
    "OffsetAndTimestamp": "rackafka.structs",
    "TopicPartition": "rackafka.structs",
}

#: Marks the alias package, so that a second call recognises its own work.
_MARK = "__rackafka_version__"


class AiokafkaAlreadyImportedError(RuntimeError):
    """The real aiokafka was imported before :func:`install_as_aiokafka`."""


class _NotProvided(importlib.abc.MetaPathFinder):
    """Answers the import of an ``aiokafka.*`` module that has no alias with an error that
    says why, instead of Python's bare "No module named"."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("aiokafka."):
            return None
        raise ModuleNotFoundError(
            f"{fullname} is not provided by rackafka.install_as_aiokafka(): only aiokafka's "
            f"public modules are aliased ({', '.join(sorted(ALIASES))}); aiokafka's "
            "internals have no counterpart",
            name=fullname,
        )


def _package() -> types.ModuleType:
    top = types.ModuleType("aiokafka", "rackafka, installed as aiokafka (install_as_aiokafka).")
    top.__spec__ = importlib.machinery.ModuleSpec("aiokafka", None, is_package=True)
    top.__path__ = []
    top.__package__ = "aiokafka"
    top.__version__ = AIOKAFKA_API_VERSION  # type: ignore[attr-defined]
    setattr(top, _MARK, _rackafka_version)
    for name, where in _TOP_LEVEL.items():
        setattr(top, name, getattr(importlib.import_module(where), name))
    top.__all__ = list(_TOP_LEVEL)  # type: ignore[attr-defined]
    return top


def _check_not_imported() -> None:
    real = sorted(
        name
        for name, module in sys.modules.items()
        if (name == "aiokafka" or name.startswith("aiokafka.")) and module is not None
    )
    if real:
        where = getattr(sys.modules.get(real[0]), "__file__", None) or "?"
        raise AiokafkaAlreadyImportedError(
            f"aiokafka is already imported ({real[0]} from {where}): call "
            "rackafka.install_as_aiokafka() before anything imports aiokafka (first thing "
            "in the application's entry point), so that no code holds aiokafka's own classes"
        )


def install_as_aiokafka() -> None:
    """Make ``import aiokafka`` (and its public submodules) give rackafka, for frameworks
    and libraries written for aiokafka that the application cannot change.

    Call it once, before anything imports aiokafka (the framework included)::

        import rackafka

        rackafka.install_as_aiokafka()

        from faststream.kafka import KafkaBroker  # its aiokafka imports now get rackafka

    Each public aiokafka module (``aiokafka.admin``, ``aiokafka.structs``,
    ``aiokafka.errors``, ``aiokafka.abc``, ``aiokafka.partitioner``,
    ``aiokafka.coordinator.assignors.*``, ... : :data:`ALIASES`) becomes the rackafka module
    that plays its part, in :data:`sys.modules`; ``aiokafka`` itself is a module holding
    aiokafka's top-level names (rackafka's classes) with ``__version__`` set to
    :data:`AIOKAFKA_API_VERSION`, the aiokafka release whose API rackafka follows.
    aiokafka's internals (:data:`NOT_PROVIDED`) raise ``ModuleNotFoundError`` saying so.
    A second call does nothing.

    Raises:
        AiokafkaAlreadyImportedError: the real aiokafka (a ``RuntimeError``) is already
            imported: code that imported it would keep aiokafka's classes next to
            rackafka's, so nothing is installed.
    """
    current = sys.modules.get("aiokafka")
    if current is not None and getattr(current, _MARK, None):
        return
    _check_not_imported()
    modules = {alias: importlib.import_module(target) for alias, target in ALIASES.items()}
    top = _package()
    for alias, module in modules.items():
        parent, _, child = alias.rpartition(".")
        if parent == "aiokafka":
            setattr(top, child, module)
    sys.modules.update(modules)
    sys.modules["aiokafka"] = top
    if not any(isinstance(finder, _NotProvided) for finder in sys.meta_path):
        # First, so that no other finder loads a second copy of a rackafka module under an
        # aiokafka name (``aiokafka.admin`` is rackafka.admin, with its ``__path__``).
        sys.meta_path.insert(0, _NotProvided())
