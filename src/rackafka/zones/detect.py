"""Candidate zone strings from the environment and the cloud metadata services.

Each source has a short timeout and runs in a worker thread (never on the event loop);
a source that is absent, slow or answers garbage gives nothing and says why at DEBUG.
Endpoints honour the variables the platforms and their SDKs use
(``AWS_EC2_METADATA_SERVICE_ENDPOINT``, ``ECS_CONTAINER_METADATA_URI_V4``,
``AWS_LAMBDA_METADATA_API``, ``GCE_METADATA_HOST``) and ``RACKAFKA_AZURE_IMDS_ENDPOINT``,
so tests point every one of them at a fake on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

log = logging.getLogger(__name__)

#: Set, it is the rack: no detection.
CLIENT_RACK_ENV = "RACKAFKA_CLIENT_RACK"
#: Other variables deployments commonly set to the zone (checked in this order).
ZONE_ENV = ("KAFKA_CLIENT_RACK", "CLIENT_RACK", "TOPOLOGY_ZONE", "NODE_ZONE")
#: A Kubernetes downward-API file of pod labels (``key="value"`` lines).
PODINFO_LABELS_ENV = "RACKAFKA_PODINFO_LABELS"
PODINFO_LABELS_DEFAULT = "/etc/podinfo/labels"
ZONE_LABEL = "topology.kubernetes.io/zone"
#: The endpoint variables of the metadata services, with the form of their value for an
#: address ``host:port`` (ECS and Lambda are asked only when their variable is set).
ENDPOINT_ENV = {
    "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://{}",
    "GCE_METADATA_HOST": "{}",
    "RACKAFKA_AZURE_IMDS_ENDPOINT": "http://{}",
    "ECS_CONTAINER_METADATA_URI_V4": "",
    "AWS_LAMBDA_METADATA_API": "",
}
_AWS_IMDS = "http://169.254.169.254"
_GCE_HOST = "metadata.google.internal"
_AZURE_IMDS = "http://169.254.169.254"
_LAMBDA_PATH = "/2026-01-15/metadata/execution-environment"


@dataclass(frozen=True)
class Candidate:
    """A zone string and where it came from (``"aws-imds availability-zone-id"``...)."""

    value: str
    source: str


@dataclass(frozen=True)
class RackDecision:
    """What ``client_rack="auto"`` decided, and why."""

    rack: str | None
    source: str
    candidates: tuple[Candidate, ...] = ()
    broker_racks: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _http(url: str, headers: Mapping[str, str], timeout: float, method: str = "GET") -> str:
    request = urllib.request.Request(url, headers=dict(headers), method=method)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    with opener.open(request, timeout=timeout) as response:
        return str(response.read(65536).decode("utf-8", "replace"))


def _env_sources(environ: Mapping[str, str]) -> list[Candidate]:
    out = []
    for name in ZONE_ENV:
        value = environ.get(name, "").strip()
        if _ok(value):
            out.append(Candidate(value, f"environment {name}"))
    return out


def _podinfo(environ: Mapping[str, str]) -> list[Candidate]:
    path = environ.get(PODINFO_LABELS_ENV, PODINFO_LABELS_DEFAULT)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(65536)
    except OSError:
        return []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == ZONE_LABEL:
            value = value.strip().strip('"')
            if _ok(value):
                return [Candidate(value, f"kubernetes label {ZONE_LABEL} ({path})")]
    return []


def _aws_imds(environ: Mapping[str, str], timeout: float, notes: list[str]) -> list[Candidate]:
    if environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
        return []
    base = environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT", _AWS_IMDS).rstrip("/")
    try:
        token = _http(
            base + "/latest/api/token",
            {"X-aws-ec2-metadata-token-ttl-seconds": "60"},
            timeout,
            method="PUT",
        ).strip()
    except (OSError, urllib.error.URLError) as exc:
        # In a pod, a hop limit of 1 drops the answer: it times out instead of failing.
        if _timed_out(exc):
            _note(
                notes,
                "EC2 IMDSv2: no token within the timeout: not on EC2, or a pod behind an "
                "instance metadata hop limit of 1 (set HttpPutResponseHopLimit to 2)",
            )
        else:
            log.debug("EC2 IMDSv2 token: %s", exc)
        return []
    out = []
    for path, what in (
        ("/latest/meta-data/placement/availability-zone-id", "availability-zone-id"),
        ("/latest/meta-data/placement/availability-zone", "availability-zone"),
    ):
        try:
            value = _http(base + path, {"X-aws-ec2-metadata-token": token}, timeout).strip()
        except (OSError, urllib.error.URLError) as exc:
            _note(notes, f"EC2 IMDS {what}: {_reason(exc)}")
            continue
        if _ok(value):
            out.append(Candidate(value, f"aws-imds {what}"))
    return out


def _ecs(environ: Mapping[str, str], timeout: float, notes: list[str]) -> list[Candidate]:
    base = environ.get("ECS_CONTAINER_METADATA_URI_V4")
    if not base:
        return []
    url = base.rstrip("/") + "/task"
    return _json_zone(url, {}, timeout, notes, "ECS task metadata", "AvailabilityZone")


def _lambda(environ: Mapping[str, str], timeout: float, notes: list[str]) -> list[Candidate]:
    address = environ.get("AWS_LAMBDA_METADATA_API")
    token = environ.get("AWS_LAMBDA_METADATA_TOKEN", "")
    if not address:
        return []
    headers = {"Authorization": f"Bearer {token}"}
    url = f"http://{address}{_LAMBDA_PATH}"
    return _json_zone(url, headers, timeout, notes, "Lambda metadata", "AvailabilityZoneID")


def _json_zone(
    url: str,
    headers: Mapping[str, str],
    timeout: float,
    notes: list[str],
    what: str,
    field: str,
) -> list[Candidate]:
    """The zone in ``field`` of the JSON object at ``url`` (a note naming ``what`` when the
    request fails)."""
    try:
        data = json.loads(_http(url, headers, timeout))
    except (OSError, urllib.error.URLError, ValueError) as exc:
        _note(notes, f"{what}: {_reason(exc)}")
        return []
    value = data.get(field) if isinstance(data, dict) else None
    return [Candidate(str(value), f"{what.lower()} {field}")] if _ok(value) else []


def _gce(environ: Mapping[str, str], timeout: float, notes: list[str]) -> list[Candidate]:
    host = environ.get("GCE_METADATA_HOST", _GCE_HOST)
    try:
        text = _http(
            f"http://{host}/computeMetadata/v1/instance/zone",
            {"Metadata-Flavor": "Google"},
            timeout,
        ).strip()
    except (OSError, urllib.error.URLError) as exc:
        if host != _GCE_HOST or _timed_out(exc):
            _note(notes, f"GCP metadata: {_reason(exc)}")
        else:
            log.debug("GCE metadata: %s", exc)  # not on GCP: its name does not resolve
        return []
    value = text.rsplit("/", 1)[-1]  # projects/123/zones/europe-west1-b
    return [Candidate(value, "gce metadata instance/zone")] if _ok(value) else []


def _azure(environ: Mapping[str, str], timeout: float, notes: list[str]) -> list[Candidate]:
    base = environ.get("RACKAFKA_AZURE_IMDS_ENDPOINT", _AZURE_IMDS).rstrip("/")
    try:
        data = json.loads(
            _http(
                base + "/metadata/instance/compute?api-version=2021-02-01",
                {"Metadata": "true"},
                timeout,
            )
        )
    except (OSError, urllib.error.URLError, ValueError) as exc:
        if _timed_out(exc):
            log.debug("Azure IMDS: %s", exc)  # not on Azure (the EC2 note says the rest)
        else:
            _note(notes, f"Azure IMDS: {_reason(exc)}")
        return []
    if not isinstance(data, dict):
        return []
    zone, location = str(data.get("zone") or ""), str(data.get("location") or "")
    out = []
    if location and zone:
        out.append(Candidate(f"{location}-{zone}", "azure imds location-zone"))
    if zone:
        out.append(Candidate(zone, "azure imds zone"))
    return [c for c in out if _ok(c.value)]


def _timed_out(exc: BaseException) -> bool:
    reason = getattr(exc, "reason", exc)
    return isinstance(reason, TimeoutError) or "timed out" in str(reason)


def _reason(exc: BaseException) -> str:
    if _timed_out(exc):
        return "no answer within the timeout"
    if isinstance(exc, ValueError):
        return "an answer that is not the expected JSON"
    return str(getattr(exc, "reason", exc))


def _note(notes: list[str], text: str) -> None:
    log.debug("zone detection: %s", text)
    notes.append(text)


_ZONE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,62}\Z")


def _ok(value: Any) -> bool:
    """A plausible zone or rack string (``use1-az1``, ``us-east-1a``, ``westeurope-2``)."""
    return isinstance(value, str) and _ZONE.match(value) is not None


#: The network sources, in order of preference.
NETWORK_SOURCES: tuple[Callable[[Mapping[str, str], float, list[str]], list[Candidate]], ...] = (
    _lambda,
    _ecs,
    _aws_imds,
    _gce,
    _azure,
)


#: How long a process remembers that the metadata services gave no zone (seconds); a zone
#: they gave is remembered for the life of the process (a process does not change zone).
NEGATIVE_CACHE_SECONDS = 60.0
#: The variables that change what the metadata services are asked.
_NETWORK_ENV = (*ENDPOINT_ENV, "AWS_EC2_METADATA_DISABLED")
_network_cache: dict[tuple[Any, ...], tuple[float, list[Candidate], list[str]]] = {}


async def detect_candidates(
    environ: Mapping[str, str] | None = None,
    *,
    timeout: float = 1.0,
    notes: list[str] | None = None,
    cache: bool = True,
) -> list[Candidate]:
    """Every candidate zone string, environment first, then the metadata services (all
    asked at once, each in a worker thread with ``timeout`` seconds).

    ``notes``, when given, receives a sentence for each source that was expected to
    answer and did not (a timeout, garbage), such as an EC2 hop limit in a pod.

    The metadata services are asked once per process (for the same endpoint variables):
    later calls reuse their answer, or for :data:`NEGATIVE_CACHE_SECONDS` their silence,
    so that many consumers or Spark tasks in one process do not wait for them again.
    ``cache=False`` asks them anew.
    """
    env = os.environ if environ is None else environ
    out = _env_sources(env) + _podinfo(env)
    key = (timeout, *(env.get(name) for name in _NETWORK_ENV))
    cached = _network_cache.get(key) if cache else None
    now = time.monotonic()
    if cached is None or (not cached[1] and now - cached[0] > NEGATIVE_CACHE_SECONDS):
        found: list[Candidate] = []
        said: list[str] = []
        results = await asyncio.gather(
            *(asyncio.to_thread(source, env, timeout, said) for source in NETWORK_SOURCES),
            return_exceptions=True,
        )
        for result in results:
            if isinstance(result, BaseException):
                log.debug("zone source failed: %r", result)
            else:
                found.extend(result)
        cached = (now, found, said)
        if cache:
            _network_cache[key] = cached
    out.extend(cached[1])
    if notes is not None:
        notes.extend(cached[2])
    seen: set[str] = set()
    unique = []
    for c in out:
        if c.value not in seen:
            seen.add(c.value)
            unique.append(c)
    return unique


def choose_rack(
    candidates: Iterable[Candidate], broker_racks: Iterable[str | None]
) -> RackDecision:
    """The first candidate that is a broker's rack; else no rack (leaders are read).

    Matching is exact, then case-insensitive: Strimzi copies node labels as they are.
    """
    cands = tuple(candidates)
    racks = tuple(sorted({r for r in broker_racks if r}))
    for c in cands:
        if c.value in racks:
            return RackDecision(c.value, c.source, cands, racks)
    lowered = {r.lower(): r for r in racks}
    for c in cands:
        if c.value.lower() in lowered:
            return RackDecision(lowered[c.value.lower()], c.source, cands, racks)
    note = (
        "no candidate zone matches a broker rack"
        if cands
        else "no zone found in the environment or the metadata services"
    )
    return RackDecision(None, "none", cands, racks, (note,))


async def resolve_rack(
    broker_racks: Iterable[str | None],
    environ: Mapping[str, str] | None = None,
    *,
    timeout: float = 1.0,
) -> RackDecision:
    """What ``client_rack="auto"`` means here: ``RACKAFKA_CLIENT_RACK`` when set, else the
    detected zone string that is one of ``broker_racks`` (:func:`choose_rack`), with the
    detection's notes."""
    env = os.environ if environ is None else environ
    forced = env.get(CLIENT_RACK_ENV, "").strip()
    racks = tuple(sorted({r for r in broker_racks if r}))
    if forced:
        return RackDecision(forced, f"environment {CLIENT_RACK_ENV}", (), racks)
    notes: list[str] = []
    decision = choose_rack(await detect_candidates(env, timeout=timeout, notes=notes), racks)
    if notes:
        decision = replace(decision, notes=decision.notes + tuple(notes))
    return decision


#: The ``client_rack`` value that asks for the zone to be found.
AUTO_RACK = "auto"


async def decide_client_rack(
    broker_racks: Iterable[str | None], role: str, logger: logging.Logger
) -> RackDecision:
    """:func:`resolve_rack` for a client's ``client_rack="auto"``, logged on ``logger``:
    the choice at INFO, a WARNING saying what to set when no rack was found (``role``
    tells what the client then does, e.g. "reading from the leaders")."""
    decision = await resolve_rack(broker_racks)
    if decision.rack is None:
        logger.warning(
            "client_rack='auto': %s (candidates: %s; broker racks: %s): %s. "
            "Set client_rack or %s to one of the racks",
            "; ".join(decision.notes) if decision.notes else "no rack",
            ", ".join(f"{c.value} ({c.source})" for c in decision.candidates) or "none",
            ", ".join(decision.broker_racks) or "none",
            role,
            CLIENT_RACK_ENV,
        )
    logger.info("client_rack='auto' chose %r (%s)", decision.rack, decision.source)
    return decision
