"""Sending a request to a group's coordinator: the coordinator found (or given), its moves
and loading retried, every other answer left to the caller."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rackafka.admin import _checks as check
from rackafka.admin._core import AdminCore
from rackafka.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
    for_code,
)
from rackafka.protocol.schema import Api

#: The codes after which a request goes again to the group's coordinator, looked up anew:
#: it moved, is not known yet or is loading the group.
COORDINATOR_CODES = frozenset(
    {
        NotCoordinatorError.errno,
        CoordinatorNotAvailableError.errno,
        CoordinatorLoadInProgressError.errno,
    }
)


def check_group_id(value: Any, name: str = "group_id") -> str:
    """``value`` if it is a non-empty str."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {value!r}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    return value


def check_coordinator(value: Any) -> int | None:
    """``group_coordinator_id``: ``None`` or a broker id."""
    if value is None:
        return None
    return check.check_int("group_coordinator_id", value)


class GroupCore(AdminCore):
    """What the group calls stand on."""

    async def _coordinated(
        self,
        group_id: str,
        coordinator: int | None,
        api: Api,
        build: Callable[[int], Any],
        codes: Callable[[Any], Iterable[int]],
    ) -> tuple[Any, int]:
        """Send ``build(version)`` to the coordinator of ``group_id`` (``coordinator``, or
        the one FindCoordinator names) and return the answer and the coordinator's id.
        While ``codes(answer)`` holds a code of :data:`COORDINATOR_CODES`, or the
        coordinator cannot be found or reached, the request goes again after the backoff
        (for ``request_timeout_ms``; then that error is raised)."""

        async def attempt() -> tuple[Any, int]:
            node = coordinator
            if node is None:
                node = await self._client.lookup_coordinator(group_id, 0)
            resp, _ = await self._send(api, build, node)
            for code in codes(resp):
                if code in COORDINATOR_CODES:
                    raise for_code(code)(f"{api.name}: the coordinator of group {group_id!r}")
            return resp, node

        self._check_running()
        return await self._retrying(attempt, api.name)
