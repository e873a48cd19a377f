"""An environment in which ``client_rack="auto"`` finds nothing and asks nobody."""

from __future__ import annotations

import os
import socket

from rackafka.zones.detect import CLIENT_RACK_ENV, ENDPOINT_ENV, PODINFO_LABELS_ENV, ZONE_ENV

__all__ = ["offline_zone_environ"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def offline_zone_environ(scratch_dir: str | os.PathLike[str], **extra: str) -> dict[str, str]:
    """Variables for zone detection in a test: every metadata endpoint points at a closed
    port on 127.0.0.1 (nothing leaves the machine, nothing is found), the Kubernetes
    labels file at a missing file in ``scratch_dir``, and the zone variables are empty;
    ``extra`` adds or overrides variables (``TOPOLOGY_ZONE="az-b"``).

    Use it as ``environ`` of :func:`rackafka.zones.resolve_rack`, or set it with
    ``monkeypatch.setenv`` for a consumer with ``client_rack="auto"``.
    """
    dead = f"127.0.0.1:{_closed_port()}"
    out = {name: "" for name in (CLIENT_RACK_ENV, *ZONE_ENV)}
    for name, form in ENDPOINT_ENV.items():
        out[name] = form.format(dead)
    out[PODINFO_LABELS_ENV] = os.path.join(os.fspath(scratch_dir), "no-labels")
    out.update(extra)
    return out
