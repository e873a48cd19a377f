"""``partition_assignment_strategy``: from what users pass to assignor objects."""

from __future__ import annotations

from typing import Any

from rackafka.errors import KafkaConfigurationError

#: Assignor names (as in Kafka and aiokafka) and the rackafka class for each.
KNOWN = {
    "roundrobin": "RoundRobinPartitionAssignor",
    "range": "RangePartitionAssignor",
    "sticky": "StickyPartitionAssignor",
    "cooperative-sticky": "CooperativeStickyAssignor",
}


def _by_name(name: str) -> Any:
    from rackafka.group import assignors

    return getattr(assignors, KNOWN[name])()


def resolve_assignors(strategy: Any) -> list[Any]:
    """Turn ``partition_assignment_strategy`` into assignor instances.

    Accepts, alone or in a list/tuple in order of preference: an assignor name
    (``"roundrobin"``, ``"range"``, ``"sticky"``, ``"cooperative-sticky"``), a
    rackafka assignor class or instance, an aiokafka assignor class (it is
    replaced by rackafka's assignor of the same name, which speaks the same
    protocol and is rack-aware where Kafka's is), or a custom assignor written for
    aiokafka (an ``AbstractPartitionAssignor`` subclass, run as aiokafka runs it).
    Default: round robin, as in aiokafka.

    Raises:
        KafkaConfigurationError: an entry is none of these (the message names
            ``partition_assignment_strategy``).
    """
    if strategy is None:
        return [_by_name("roundrobin")]
    from rackafka.coordinator.assignors.abstract import adapt_assignor

    items = list(strategy) if isinstance(strategy, (list, tuple)) else [strategy]
    if not items:
        raise KafkaConfigurationError("partition_assignment_strategy is empty")
    out = []
    for item in items:
        name = item if isinstance(item, str) else getattr(item, "name", None)
        module = getattr(item, "__module__", "") or ""
        if isinstance(item, str) or module.startswith("aiokafka"):
            if name not in KNOWN:
                raise KafkaConfigurationError(
                    f"partition_assignment_strategy: unknown assignor {item!r}; "
                    f"use one of {', '.join(KNOWN)}"
                )
            out.append(_by_name(str(name)))
        elif (adapted := adapt_assignor(item)) is not None:
            out.append(adapted)  # a custom assignor written for aiokafka
        elif isinstance(item, type) and callable(getattr(item, "assign", None)) and name:
            out.append(item())
        elif callable(getattr(item, "assign", None)) and name:
            out.append(item)
        else:
            raise KafkaConfigurationError(
                f"partition_assignment_strategy: {item!r} is not an assignor "
                f"(expected a name among {', '.join(KNOWN)} or an assignor class)"
            )
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise KafkaConfigurationError(f"partition_assignment_strategy repeats an assignor: {names}")
    return out
