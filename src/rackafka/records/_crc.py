"""CRC32C (Castagnoli) of record batches v2, from the ``crc32c`` package.

``import crc32c`` runs the package's ``__init__``, which looks up its own version with
:mod:`importlib.metadata` and so imports ``email``, ``zipfile``, ``csv``, ``pathlib`` and
more: about 3.5 MB of resident memory in every process that reads Kafka records, for a
version string nobody reads.  Only the package's C function is needed, so its extension
module ``crc32c._crc32c`` is loaded on its own when it is found next to the package;
otherwise (another layout of the package, or it is imported already) the package is
imported as usual.  Either way the function is the package's own.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["crc32c"]

_EXTENSION = "_crc32c"


def _load_extension() -> Callable[..., int] | None:
    """``crc32c._crc32c.crc32c`` without running the package's ``__init__``, or ``None``."""
    module: Any = sys.modules.get("crc32c." + _EXTENSION)
    if module is None:
        if "crc32c" in sys.modules:
            return None  # imported already: nothing to save
        try:
            spec = importlib.util.find_spec("crc32c")  # finds, does not import
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        path = None
        for folder in spec.submodule_search_locations:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                candidate = os.path.join(folder, _EXTENSION + suffix)
                if os.path.isfile(candidate):
                    path = candidate
                    break
            if path is not None:
                break
        if path is None:
            return None
        name = "crc32c." + _EXTENSION
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        ext_spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        if ext_spec is None:
            return None
        try:
            module = importlib.util.module_from_spec(ext_spec)
            loader.exec_module(module)
        except ImportError:
            return None
    function = getattr(module, "crc32c", None)
    return function if callable(function) else None


def _load() -> Callable[..., int]:
    function = _load_extension()
    if function is not None:
        return function
    import crc32c as package

    return package.crc32c


#: ``crc32c(data) -> int``: the CRC32C of a bytes-like object.
crc32c: Callable[..., int] = _load()
