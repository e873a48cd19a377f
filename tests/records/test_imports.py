"""What importing rackafka costs, and the CRC32C function it loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rackafka.records import _crc

#: Modules a consumer process does not need at import time: the crc32c package's
#: ``__init__`` (which imports importlib.metadata, ~3.5 MB resident) and cramjam (only
#: needed for compressed batches).
AVOIDED = ("crc32c", "importlib.metadata", "cramjam")

_LIST = "import json, sys; print(json.dumps(sorted(m for m in {avoided!r} if m in sys.modules)))"


def _loaded(prefix: str) -> list[str]:
    code = prefix + _LIST.format(avoided=AVOIDED)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_the_consumer_skips_heavy_modules() -> None:
    already = set(_loaded(""))  # whatever the interpreter's start-up imports itself
    loaded = set(_loaded("import rackafka; from rackafka import AIOKafkaConsumer; "))
    assert loaded - already == set()


def test_cramjam_is_imported_for_the_first_compressed_batch() -> None:
    code = (
        "from rackafka.records import compress, decompress, CODEC_LZ4, CODEC_NONE; "
        "assert decompress(CODEC_NONE, b'abc') == b'abc'; "
        "import sys; assert 'cramjam' not in sys.modules; "
        "data = b'kafka' * 1000; assert decompress(CODEC_LZ4, compress(CODEC_LZ4, data)) == data; "
    )
    assert "cramjam" in _loaded(code)


def test_crc32c_is_the_castagnoli_crc() -> None:
    import crc32c as package

    assert _crc.crc32c(b"123456789") == 0xE3069283  # the standard check value of CRC-32C
    data = os.urandom(100_000)
    assert _crc.crc32c(data) == package.crc32c(data)
    assert _crc.crc32c(memoryview(data)[7:]) == package.crc32c(data[7:])


def test_extension_loads_without_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "crc32c", raising=False)
    monkeypatch.delitem(sys.modules, "crc32c._crc32c", raising=False)
    function = _crc._load_extension()
    assert function is not None
    assert "crc32c" not in sys.modules
    assert function(b"123456789") == 0xE3069283


def test_an_imported_package_is_used_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    import crc32c as package

    monkeypatch.delitem(sys.modules, "crc32c._crc32c", raising=False)
    assert _crc._load_extension() is None
    assert _crc._load() is package.crc32c
