"""The SCRAM users of :class:`~rackafka.testing.SecureFront`, as a broker stores them.
Test material only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._security import _require


class _ScramUsers:
    """SCRAM credentials of the users, as a broker stores them (salted, never the
    password itself), made with the ``scramp`` package."""

    def __init__(self, mechanism: str, users: Mapping[str, str]) -> None:
        scramp = _require("scramp")
        self.scramp = scramp
        self.mechanism = scramp.ScramMechanism(mechanism)
        self.info = {
            name: self.mechanism.make_auth_info(password, iteration_count=4096)
            for name, password in users.items()
        }

    def server(self) -> tuple[Any, list[str]]:
        """A server for one exchange, and the list that receives the user's name."""
        names: list[str] = []

        def lookup(name: str) -> Any:
            names.append(name)
            return self.info[name]  # KeyError: unknown user, a failed authentication

        return self.mechanism.make_server(lookup), names
