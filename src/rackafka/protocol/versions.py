"""Picking the version to speak for each API.

A broker advertises, per API key, the range of versions it handles (ApiVersions);
we speak a range of our own per API.  The version used is the highest version in
both ranges.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rackafka.errors import UnsupportedVersionError
from rackafka.protocol.schema import Api


@dataclass(frozen=True)
class VersionRange:
    """An inclusive range of API versions."""

    min_version: int
    max_version: int


def pick_version(api: Api, broker: VersionRange | None) -> int:
    """Return the highest version of ``api`` that both sides speak.

    Raises:
        UnsupportedVersionError: the broker does not know the API at all, or
            its range does not overlap ours.  The message names the API and
            both ranges.
    """
    if broker is None:
        raise UnsupportedVersionError(
            f"the broker does not support {api.name} (API key {api.key}); "
            f"rackafka needs a version in {api.min_version}-{api.max_version}"
        )
    top = min(api.max_version, broker.max_version)
    if top < max(api.min_version, broker.min_version):
        raise UnsupportedVersionError(
            f"no common version of {api.name} (API key {api.key}): the broker speaks "
            f"{broker.min_version}-{broker.max_version}, rackafka speaks "
            f"{api.min_version}-{api.max_version}"
        )
    return top


class VersionTable:
    """The broker's advertised ranges, and the version picked for each API."""

    def __init__(self, broker_ranges: Mapping[int, VersionRange]) -> None:
        self._ranges = dict(broker_ranges)
        self._picked: dict[int, int] = {}

    @classmethod
    def from_api_versions(cls, api_keys: Iterable[object]) -> VersionTable:
        """Build from the ``api_keys`` list of an ApiVersions response."""
        return cls(
            {
                int(k.api_key): VersionRange(int(k.min_version), int(k.max_version))  # type: ignore[attr-defined]
                for k in api_keys
            }
        )

    def broker_range(self, api_key: int) -> VersionRange | None:
        """The range the broker advertised for ``api_key``, if any."""
        return self._ranges.get(api_key)

    def supports(self, api: Api) -> bool:
        """Whether some version of ``api`` is spoken by both sides."""
        try:
            self.version(api)
        except UnsupportedVersionError:
            return False
        return True

    def version(self, api: Api) -> int:
        """The version to use for ``api`` (cached)."""
        v = self._picked.get(api.key)
        if v is None:
            v = pick_version(api, self._ranges.get(api.key))
            self._picked[api.key] = v
        return v
