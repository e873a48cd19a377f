"""A watchdog process that ends the test brokers' JVMs when the Python process that started
them dies in any way (an exception, a signal, SIGKILL, a crashed pytest-xdist worker).

The parent keeps the write end of a pipe open to the reaper's stdin and tells it, one line
each, which process groups it started (``+PGID``) and which it ended itself (``-PGID``).
When the pipe closes (the parent is gone, or :func:`shutdown` at interpreter exit) the
reaper sends SIGTERM to every group still listed, then SIGKILL to those still alive after a
grace period, and exits.
"""

from __future__ import annotations

import atexit
import subprocess
import sys
import threading

__all__ = ["forget", "watch"]

_GRACE_SECONDS = 15.0

_lock = threading.Lock()
_proc: subprocess.Popen[bytes] | None = None


#: The reaper's program, run with ``python -c`` so that it imports nothing of ours.
_PROGRAM = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups = set()
for line in sys.stdin:
    line = line.strip()
    if len(line) > 1 and line[1:].isdigit():
        (groups.add if line[0] == "+" else groups.discard)(int(line[1:]))
def send(sig):
    for pgid in list(groups):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            groups.discard(pgid)
send(signal.SIGTERM)
deadline = time.monotonic() + GRACE
while groups and time.monotonic() < deadline:
    time.sleep(0.2)
    send(0)
send(signal.SIGKILL)
"""


def _send(line: str) -> None:
    global _proc
    with _lock:
        if _proc is None or _proc.poll() is not None:
            _proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-c",
                    _PROGRAM.replace("GRACE", repr(_GRACE_SECONDS)),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        assert _proc.stdin is not None
        try:
            _proc.stdin.write(line.encode() + b"\n")
            _proc.stdin.flush()
        except OSError:  # pragma: no cover - the reaper died; the next call starts another
            _proc = None


def watch(pgid: int) -> None:
    """End process group ``pgid`` if this process dies before calling :func:`forget`."""
    _send(f"+{pgid}")


def forget(pgid: int) -> None:
    """The group ended (or was ended) normally: stop watching it."""
    _send(f"-{pgid}")


@atexit.register
def _shutdown() -> None:
    global _proc
    with _lock:
        proc, _proc = _proc, None
    if proc is not None and proc.stdin is not None:
        try:
            proc.stdin.close()
        except OSError:  # pragma: no cover
            pass
