"""Compression bombs: a small batch that inflates to gigabytes is refused with bounded memory.

Each case runs in its own process (tests/consumer/_bomb_client.py) so that its peak RSS is
its own.  Before the limit, a 128 KiB zstd batch inflating to 4 GiB killed the process
inside the codec, and a 16 KiB one inflating to 512 MiB peaked at 1.5 GB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The consumer's default limit is 2 x fetch_max_bytes (100 MiB): the peak may pass it by
#: 64 MiB at most, the interpreter, the fake broker and the library included (about 45).
MAX_RSS_MB = 100 + 64


def run(codec: str, size: int) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "tests.consumer._bomb_client", codec, str(size)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize(
    ("codec", "size"),
    [("zstd", 512 << 20), ("zstd", 4 << 30), ("lz4", 512 << 20), ("gzip", 512 << 20)],
)
def test_a_compression_bomb_is_refused_with_bounded_memory(codec: str, size: int) -> None:
    result = run(codec, size)
    assert result["error"] == "RecordTooLargeError", result
    assert result["delivered"] == [0], result  # the record before it, nothing after
    assert result["position"] == 1, result
    assert isinstance(result["max_rss_mb"], float) and result["max_rss_mb"] < MAX_RSS_MB, result


def test_a_big_batch_below_the_limit_is_delivered() -> None:
    result = run("zstd", 30 << 20)
    assert result["error"] is None, result
    assert result["delivered"] == [0, 1, 2], result
