"""The error of the Spark source's and sink's options (every ``rackafka.spark`` module
raises it; it imports nothing of theirs)."""

from __future__ import annotations

from rackafka.errors import KafkaConfigurationError

__all__ = ["InvalidOptionError"]


class InvalidOptionError(KafkaConfigurationError, ValueError):
    """An option of the ``rackafka`` source is unknown, missing or has an invalid value.

    The message names the option.
    """
