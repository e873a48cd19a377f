"""Zones: where this process runs, found without configuration (``client_rack="auto"``).

:func:`detect_candidates` asks the environment and the platform metadata services for
candidate zone strings; :func:`choose_rack` picks the one the brokers use as a rack.  One
place for the consumer, the producer and the Spark source.  Nothing here runs unless
``client_rack="auto"`` is asked for.
"""

from rackafka.zones.detect import (
    AUTO_RACK,
    CLIENT_RACK_ENV,
    Candidate,
    RackDecision,
    choose_rack,
    decide_client_rack,
    detect_candidates,
    resolve_rack,
)

__all__ = [
    "AUTO_RACK",
    "CLIENT_RACK_ENV",
    "Candidate",
    "RackDecision",
    "choose_rack",
    "decide_client_rack",
    "detect_candidates",
    "resolve_rack",
]
