"""Zone detection against small HTTP servers on 127.0.0.1 that imitate each metadata
service (the IMDSv2 token dance included), and slow, absent or garbage services.  A guard
fails any connection that is not to loopback."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rackafka.testing import offline_zone_environ
from rackafka.zones import Candidate, choose_rack, detect_candidates, resolve_rack

Route = Callable[[BaseHTTPRequestHandler], tuple[int, str]]


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        assert host in ("127.0.0.1", "::1", "localhost"), f"connection to {host} refused"
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


class FakeService:
    """An HTTP server on 127.0.0.1 answering ``routes[(method, path)](handler)``."""

    def __init__(self, routes: dict[tuple[str, str], Route], delay: float = 0.0) -> None:
        service = self
        self.routes = routes
        self.requests: list[tuple[str, str, dict[str, str]]] = []

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                service.requests.append((self.command, self.path, dict(self.headers)))
                if delay:
                    time.sleep(delay)
                route = service.routes.get((self.command, self.path))
                status, body = route(self) if route else (404, "not found")
                data = body.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            do_GET = do_PUT = _answer  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Every source pointed at a closed loopback port: nothing found, nothing leaves."""
    return offline_zone_environ(tmp_path)


@pytest.fixture
def services() -> Iterator[list[FakeService]]:
    made: list[FakeService] = []
    yield made
    for s in made:
        s.close()


def serve(made: list[FakeService], routes: dict[tuple[str, str], Route], **kw: Any) -> FakeService:
    service = FakeService(routes, **kw)
    made.append(service)
    return service


def detect(env: dict[str, str], timeout: float = 1.0) -> list[Candidate]:
    return asyncio.run(detect_candidates(env, timeout=timeout))


def test_nothing_found_when_every_service_is_absent(env: dict[str, str]) -> None:
    assert detect(env) == []


def test_environment_variables(env: dict[str, str]) -> None:
    env["KAFKA_CLIENT_RACK"] = "use1-az2"
    assert detect(env) == [Candidate("use1-az2", "environment KAFKA_CLIENT_RACK")]


def test_kubernetes_downward_api_labels(env: dict[str, str], tmp_path: Path) -> None:
    labels = tmp_path / "labels"
    labels.write_text('app="x"\ntopology.kubernetes.io/zone="us-east-1a"\n')
    env["RACKAFKA_PODINFO_LABELS"] = str(labels)
    (c,) = detect(env)
    assert c.value == "us-east-1a" and "topology.kubernetes.io/zone" in c.source


def test_aws_imds_v2_token_dance(env: dict[str, str], services: list[FakeService]) -> None:
    def token(h: BaseHTTPRequestHandler) -> tuple[int, str]:
        assert h.headers["X-aws-ec2-metadata-token-ttl-seconds"]
        return 200, "tok-123"

    def guarded(value: str) -> Route:
        def route(h: BaseHTTPRequestHandler) -> tuple[int, str]:
            return (
                (200, value)
                if h.headers.get("X-aws-ec2-metadata-token") == "tok-123"
                else (401, "")
            )

        return route

    imds = serve(
        services,
        {
            ("PUT", "/latest/api/token"): token,
            ("GET", "/latest/meta-data/placement/availability-zone-id"): guarded("use1-az4"),
            ("GET", "/latest/meta-data/placement/availability-zone"): guarded("us-east-1b"),
        },
    )
    env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.url
    assert [(c.value, c.source) for c in detect(env)] == [
        ("use1-az4", "aws-imds availability-zone-id"),
        ("us-east-1b", "aws-imds availability-zone"),
    ]


def test_aws_imds_disabled_is_not_asked(env: dict[str, str], services: list[FakeService]) -> None:
    imds = serve(services, {("PUT", "/latest/api/token"): lambda h: (200, "t")})
    env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.url
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    assert detect(env) == [] and imds.requests == []


def test_ecs_task_metadata(env: dict[str, str], services: list[FakeService]) -> None:
    ecs = serve(
        services,
        {("GET", "/v4/abc/task"): lambda h: (200, json.dumps({"AvailabilityZone": "eu-west-1c"}))},
    )
    env["ECS_CONTAINER_METADATA_URI_V4"] = ecs.url + "/v4/abc"
    assert [c.value for c in detect(env)] == ["eu-west-1c"]


def test_lambda_metadata_with_its_token(env: dict[str, str], services: list[FakeService]) -> None:
    def route(h: BaseHTTPRequestHandler) -> tuple[int, str]:
        if h.headers.get("Authorization") != "Bearer lambda-token":
            return 401, ""
        return 200, json.dumps({"AvailabilityZoneID": "euw1-az3"})

    lam = serve(services, {("GET", "/2026-01-15/metadata/execution-environment"): route})
    env["AWS_LAMBDA_METADATA_API"] = f"127.0.0.1:{lam.port}"
    env["AWS_LAMBDA_METADATA_TOKEN"] = "lambda-token"
    assert [(c.value, c.source) for c in detect(env)] == [
        ("euw1-az3", "lambda metadata AvailabilityZoneID")
    ]


def gce_zone(letter: str) -> Route:
    def route(h: BaseHTTPRequestHandler) -> tuple[int, str]:
        if h.headers.get("Metadata-Flavor") != "Google":
            return 403, ""
        return 200, f"projects/1234/zones/europe-west1-{letter}"

    return route


def test_gce_metadata(env: dict[str, str], services: list[FakeService]) -> None:
    gce = serve(services, {("GET", "/computeMetadata/v1/instance/zone"): gce_zone("b")})
    env["GCE_METADATA_HOST"] = f"127.0.0.1:{gce.port}"
    assert [c.value for c in detect(env)] == ["europe-west1-b"]


def test_azure_imds(env: dict[str, str], services: list[FakeService]) -> None:
    def route(h: BaseHTTPRequestHandler) -> tuple[int, str]:
        if h.headers.get("Metadata") != "true":
            return 400, ""
        return 200, json.dumps({"zone": "2", "location": "westeurope"})

    az = serve(services, {("GET", "/metadata/instance/compute?api-version=2021-02-01"): route})
    env["RACKAFKA_AZURE_IMDS_ENDPOINT"] = az.url
    assert [c.value for c in detect(env)] == ["westeurope-2", "2"]


def test_slow_services_time_out_quickly(env: dict[str, str], services: list[FakeService]) -> None:
    slow = serve(services, {("PUT", "/latest/api/token"): lambda h: (200, "t")}, delay=5.0)
    env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = slow.url
    env["GCE_METADATA_HOST"] = f"127.0.0.1:{slow.port}"
    started = time.monotonic()
    assert detect(env, timeout=0.3) == []
    assert time.monotonic() - started < 2.0


def test_a_silent_imds_is_reported_as_a_possible_hop_limit(
    env: dict[str, str], services: list[FakeService]
) -> None:
    """In a pod behind a hop limit of 1 the token PUT gets no answer: say so, fast."""
    silent = serve(services, {("PUT", "/latest/api/token"): lambda h: (200, "t")}, delay=5.0)
    env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = silent.url
    notes: list[str] = []
    started = time.monotonic()
    assert asyncio.run(detect_candidates(env, timeout=0.3, notes=notes)) == []
    assert time.monotonic() - started < 2.0
    assert any("hop limit" in n and "EC2" in n for n in notes), notes


def test_the_services_are_asked_once_per_process(
    env: dict[str, str], services: list[FakeService]
) -> None:
    """Many consumers (or Spark tasks) in one process do not ask, or wait, again."""
    gce = serve(services, {("GET", "/computeMetadata/v1/instance/zone"): gce_zone("b")})
    env["GCE_METADATA_HOST"] = f"127.0.0.1:{gce.port}"
    first = detect(env)
    assert [c.value for c in first] == ["europe-west1-b"]
    asked = len(gce.requests)
    assert detect(env) == first and len(gce.requests) == asked
    # Another endpoint is another question; cache=False asks anew.
    assert asyncio.run(detect_candidates(env, cache=False)) == first
    assert len(gce.requests) == asked * 2


def test_silence_is_remembered_only_for_a_while(
    env: dict[str, str], services: list[FakeService], monkeypatch: pytest.MonkeyPatch
) -> None:
    routes: dict[tuple[str, str], Route] = {}
    gce = serve(services, routes)
    env["GCE_METADATA_HOST"] = f"127.0.0.1:{gce.port}"
    assert detect(env) == []
    routes[("GET", "/computeMetadata/v1/instance/zone")] = gce_zone("c")
    assert detect(env) == []  # still remembered
    monkeypatch.setattr("rackafka.zones.detect.NEGATIVE_CACHE_SECONDS", 0.0)
    assert [c.value for c in detect(env)] == ["europe-west1-c"]


def test_resolve_rack_keeps_the_notes_and_the_override_wins(
    env: dict[str, str], services: list[FakeService]
) -> None:
    silent = serve(services, {("PUT", "/latest/api/token"): lambda h: (200, "t")}, delay=5.0)
    env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = silent.url
    env["TOPOLOGY_ZONE"] = "use1-az2"
    decision = asyncio.run(resolve_rack(["use1-az1", "use1-az2"], env, timeout=0.3))
    assert (decision.rack, decision.source) == ("use1-az2", "environment TOPOLOGY_ZONE")
    env["RACKAFKA_CLIENT_RACK"] = "use1-az1"
    decision = asyncio.run(resolve_rack(["use1-az1", "use1-az2"], env, timeout=0.3))
    assert (decision.rack, decision.source) == ("use1-az1", "environment RACKAFKA_CLIENT_RACK")
    del env["RACKAFKA_CLIENT_RACK"], env["TOPOLOGY_ZONE"]
    decision = asyncio.run(resolve_rack(["use1-az1"], env, timeout=0.3))
    assert decision.rack is None
    assert any("hop limit" in n for n in decision.notes)


@pytest.mark.parametrize("body", ["<html>oops</html>", "{not json", json.dumps([1, 2]), "x" * 500])
def test_garbage_answers_give_nothing(
    env: dict[str, str], services: list[FakeService], body: str
) -> None:
    junk = serve(
        services,
        {
            ("GET", "/v4/t/task"): lambda h: (200, body),
            ("GET", "/metadata/instance/compute?api-version=2021-02-01"): lambda h: (200, body),
            ("PUT", "/latest/api/token"): lambda h: (200, "t"),
            ("GET", "/latest/meta-data/placement/availability-zone-id"): lambda h: (200, body),
            ("GET", "/latest/meta-data/placement/availability-zone"): lambda h: (500, body),
        },
    )
    env["ECS_CONTAINER_METADATA_URI_V4"] = junk.url + "/v4/t"
    env["RACKAFKA_AZURE_IMDS_ENDPOINT"] = junk.url
    env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = junk.url
    found = detect(env)
    # Only a plain short line could pass as a zone; none of these is one.
    assert all(len(c.value) < 64 and "<" not in c.value and "{" not in c.value for c in found)
    assert not [c for c in found if "task" in c.source or "azure" in c.source]


def test_choose_rack_prefers_a_candidate_the_brokers_use() -> None:
    cands = [
        Candidate("us-east-1b", "aws-imds availability-zone"),
        Candidate("use1-az4", "aws-imds availability-zone-id"),
    ]
    decision = choose_rack(cands, ["use1-az1", "use1-az2", "use1-az4", None])
    assert decision.rack == "use1-az4" and decision.source == "aws-imds availability-zone-id"
    # Strimzi on EKS: racks are AZ names.
    assert choose_rack(cands, ["us-east-1a", "us-east-1b"]).rack == "us-east-1b"
    assert choose_rack([Candidate("US-EAST-1B", "env")], ["us-east-1b"]).rack == "us-east-1b"


def test_choose_rack_without_a_match_reads_leaders_and_says_why() -> None:
    decision = choose_rack([Candidate("europe-west1-b", "gce")], ["use1-az1"])
    assert decision.rack is None and decision.broker_racks == ("use1-az1",)
    assert "no candidate" in decision.notes[0]
    assert choose_rack([], ["a"]).notes[0].startswith("no zone found")
