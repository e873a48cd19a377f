"""The README and the docs point only at files that exist, and the API reference covers every
public name of ``rackafka`` (``make docs`` fails on a missing entry: docs/conf.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

import rackafka

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.rst", ROOT / "DEVELOPERS.md", *sorted((ROOT / "docs").glob("*.rst"))]
# `text <target>`_ and `text <target>`__ (reStructuredText), [text](target) (Markdown).
_RST_LINK = re.compile(r"`[^`<]*<([^>`]+)>`__?")
_MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
_INCLUDE = re.compile(r"^\s*\.\. (?:include|literalinclude)::\s*(\S+)", re.M)


def local_links(page: Path) -> list[str]:
    """Targets of the page's links and includes that are files of the project."""
    text = page.read_text()
    targets = _RST_LINK.findall(text) + _MD_LINK.findall(text) + _INCLUDE.findall(text)
    return [
        t
        for t in targets
        if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#") and not t.endswith("_")
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_to_a_file_resolves(page: Path) -> None:
    missing = [
        t for t in local_links(page) if not (page.parent / t.split("#", 1)[0]).resolve().exists()
    ]
    assert not missing, f"{page.relative_to(ROOT)} links to missing files: {missing}"


def test_a_missing_file_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.rst"
    page.write_text(
        "See `the notes <CHANGES.rst>`__, `a page <docs/a.rst#part>`_, "
        "`Kafka <https://kafka.apache.org>`__ and `Benchmarks`_.\n"
    )
    assert local_links(page) == ["CHANGES.rst", "docs/a.rst#part"]


def _conf() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rackafka_docs_conf", ROOT / "docs" / "conf.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_build_names_public_names_without_an_api_entry() -> None:
    conf = _conf()
    everything = {
        f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
        for obj in (getattr(rackafka, n) for n in rackafka.__all__)
    } | {f"rackafka.{n}" for n in rackafka.__all__}
    assert conf.undocumented_public_names(everything) == []
    without_producer = everything - {
        "rackafka.AIOKafkaProducer",
        "rackafka.producer.producer.AIOKafkaProducer",
    }
    assert conf.undocumented_public_names(without_producer) == ["AIOKafkaProducer"]


def test_the_api_reference_documents_every_public_class() -> None:
    # What the docs build checks, read from docs/api.rst without Sphinx: each public class
    # or function is named in a directive or in a module's members list.
    api = (ROOT / "docs" / "api.rst").read_text()
    for name in rackafka.__all__:
        if name.startswith("__") or name in ("errors", "structs"):
            continue
        assert re.search(rf"(rackafka\.{name}\b|[ ,]{name}\b)", api), name


def test_the_changelog_page_is_rendered_from_the_fragments() -> None:
    pytest.importorskip("towncrier", reason="towncrier (docs extra) renders the changelog")
    notes = _conf().changelog_notes()
    assert "(unreleased)" in notes.splitlines()[0]
    assert "Bugfixes" in notes and "Features" in notes
    assert not any(set(line) == {"="} for line in notes.splitlines() if line)
