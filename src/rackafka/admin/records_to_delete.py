"""Where to cut a partition: :class:`RecordsToDelete` (``rackafka.admin.RecordsToDelete``)."""

from __future__ import annotations

__all__ = ["RecordsToDelete"]


class RecordsToDelete:
    """The records of a partition to delete, for
    :meth:`~rackafka.admin.AIOKafkaAdminClient.delete_records`.

    Arguments:
        before_offset (int): delete every record before this offset (-1: up
            to the high watermark).

    Raises:
        TypeError: ``before_offset`` is not an int.
        ValueError: ``before_offset`` is below -1.
    """

    def __init__(self, before_offset: int) -> None:
        if isinstance(before_offset, bool) or not isinstance(before_offset, int):
            raise TypeError(f"before_offset must be an int, not {before_offset!r}")
        if before_offset < -1:
            raise ValueError(f"before_offset must be >= -1, not {before_offset}")
        self.before_offset = before_offset

    def __repr__(self) -> str:
        return f"RecordsToDelete(before_offset={self.before_offset})"
