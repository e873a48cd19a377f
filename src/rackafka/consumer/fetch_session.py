"""Incremental fetch sessions (KIP-227), one per broker: pure bookkeeping.

The first request to a broker is a *full* fetch (session id 0, epoch 0) that
lists every partition and asks the broker to open a session.  When the broker
answers with a session id, later requests are *incremental*: they carry the
session id and the next epoch and list only partitions that are new or whose
fetch state changed, plus the partitions to forget.  A broker that answers
with session id 0 keeps us on full fetches; a session error or a failed request
starts over with a full fetch.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from rackafka.errors import (
    BrokerResponseError,
    FetchSessionIdNotFound,
    FetchSessionTopicIdError,
    InvalidFetchSessionEpoch,
)

K = TypeVar("K", bound=Hashable)

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 0x7FFFFFFF

#: Top-level Fetch errors that mean the broker lost or rejects our session: the next
#: request is a full fetch, at once.
SESSION_ERRORS: tuple[type[BrokerResponseError], ...] = (
    FetchSessionIdNotFound,
    InvalidFetchSessionEpoch,
    FetchSessionTopicIdError,
)


class PartitionFetchState(NamedTuple):
    """What a fetch request says about one partition (a tuple: cheap to make and compare,
    as the fetcher makes one per partition per request)."""

    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    max_bytes: int


@dataclass(frozen=True)
class SessionRequest(Generic[K]):
    """The partition part of the next fetch request to one broker."""

    session_id: int
    epoch: int
    full: bool
    partitions: dict[K, PartitionFetchState]
    forgotten: list[K]


class FetchSession(Generic[K]):
    """The fetch session with one broker."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        #: What the broker's session holds (as of the last request sent).
        self._held: dict[K, PartitionFetchState] = {}
        self._pending: dict[K, PartitionFetchState] | None = None

    @property
    def established(self) -> bool:
        """Whether requests are incremental."""
        return self.session_id != 0 and self.epoch > 0

    def build(self, wanted: Mapping[K, PartitionFetchState]) -> SessionRequest[K]:
        """The next request for the partitions we want from this broker now."""
        wanted = dict(wanted)
        self._pending = wanted
        if not self.established:
            return SessionRequest(0, INITIAL_EPOCH, True, wanted, [])
        changed = {k: s for k, s in wanted.items() if self._held.get(k) != s}
        forgotten = [k for k in self._held if k not in wanted]
        return SessionRequest(self.session_id, self.epoch, False, changed, forgotten)

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Account for the response to the last request built.

        Returns ``False`` when the broker rejected the request at the top
        level (the next request is then a full fetch).
        """
        pending, self._pending = self._pending, None
        if error_code != 0:
            self.reset()
            return False
        was_full = not self.established
        if was_full:
            if session_id != 0:
                self.session_id = session_id
                self.epoch = 1
            else:
                self.session_id = 0
                self.epoch = INITIAL_EPOCH
        else:
            self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1
        self._held = pending if pending is not None else {}
        return True

    def handle_failure(self) -> None:
        """The request failed (connection error, timeout): start over."""
        self._pending = None
        self.reset()

    def reset(self) -> None:
        """Forget the session; the next request is a full fetch."""
        self.session_id = 0
        self.epoch = INITIAL_EPOCH
        self._held = {}

    def held(self) -> dict[K, PartitionFetchState]:
        """A copy of the partitions the broker's session holds."""
        return dict(self._held)
