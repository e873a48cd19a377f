"""What mypy says about code that uses rackafka as aiokafka users write it (issue: typing
of a drop-in): no annotation needed without deserializers, ``json.loads`` accepted as a
deserializer, and ``--strict`` happy with a bare ``AIOKafkaConsumer`` annotation."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api", reason="mypy (test extra) checks the typing")

SNIPPET = textwrap.dedent(
    """
    import json
    from typing import Any

    from rackafka import AIOKafkaConsumer


    async def main() -> None:
        plain = AIOKafkaConsumer("t", bootstrap_servers="localhost:9092")
        reveal_type(plain)
        decoded = AIOKafkaConsumer("t", value_deserializer=json.loads)
        reveal_type(decoded)
        texts = AIOKafkaConsumer(
            "t",
            key_deserializer=lambda b: b.decode() if b is not None else None,
            value_deserializer=bytes.decode,
        )
        reveal_type(texts)
        record = await decoded.getone()
        value: Any = record.value
        print(value, record.offset)


    def bare(consumer: AIOKafkaConsumer) -> None:
        print(consumer)
    """
)


def test_mypy_strict_accepts_aiokafka_style_code(tmp_path: Path) -> None:
    path = tmp_path / "usage.py"
    path.write_text(SNIPPET)
    out, err, status = api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--python-version",
            "3.10",
            str(path),
        ]
    )
    # mypy before 2.0 spells the same types "builtins.bytes" and "Union[Any, None]".
    out = re.sub(r"Union\[([^\[\],]+), None\]", r"\1 | None", out.replace("builtins.", ""))
    lines = [line for line in out.splitlines() if "error" in line]
    assert not lines, out + err
    assert "AIOKafkaConsumer[bytes, bytes]" in out, out  # defaults (PEP 696)
    assert "AIOKafkaConsumer[bytes, Any]" in out, out  # json.loads
    # lambda, bytes.decode (mypy 1.10 simplifies ``Any | None`` to ``Any``)
    assert re.search(r"AIOKafkaConsumer\[Any( \| None)?, str\]", out), out
    assert status in (0, 1)  # reveal_type notes are not errors
