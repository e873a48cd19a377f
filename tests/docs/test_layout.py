"""The documentation site fits the page: code blocks keep their lines within what Furo's text
column shows without scrolling (about 90 characters of code at a 1280 or 800 pixel wide
window), and wide tables wrap (docs/_static/rackafka.css, hooked in docs/conf.py)."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.rst"))
# Furo's column is 46em of text; its code font shows about 90 characters on one line.
MAX_CODE_LINE = 88
_CODE_DIRECTIVE = re.compile(r"\.\. (?:code-block|code|sourcecode)::")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def code_blocks(text: str) -> Iterator[tuple[set[str], list[tuple[int, str]]]]:
    """Each literal block (after ``::``) and code directive of a page: its options
    (``:class: wrap-lines``) and its lines, numbered from 1, without the block's indent."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        directive = _CODE_DIRECTIVE.match(stripped)
        if not (directive or (stripped.endswith("::") and not stripped.startswith(".."))):
            i += 1
            continue
        indent = _indent(lines[i])
        j = i + 1
        options = set()
        while directive and j < len(lines) and lines[j].strip().startswith(":"):
            options.add(" ".join(lines[j].split()))
            j += 1
        body = []
        while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > indent):
            body.append((j + 1, lines[j].rstrip()))
            j += 1
        text_lines = [line for _, line in body if line.strip()]
        base = min((_indent(line) for line in text_lines), default=0)
        yield options, [(n, line[base:]) for n, line in body]
        i = j


def long_code_lines(text: str, limit: int = MAX_CODE_LINE) -> list[tuple[int, int]]:
    """(line number, length) of each code line longer than ``limit``; blocks with the class
    ``wrap-lines`` (log output, which the site wraps) are left out."""
    return [
        (n, len(line))
        for options, body in code_blocks(text)
        if ":class: wrap-lines" not in options
        for n, line in body
        if len(line) > limit
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_code_lines_fit_the_page(page: Path) -> None:
    assert long_code_lines(page.read_text()) == [], (
        f"docs/{page.name}: (line, length) of code lines over {MAX_CODE_LINE} characters, "
        "which scroll sideways on the site; shorten them, or give log output "
        "'.. code-block:: text' with ':class: wrap-lines'"
    )


def test_long_code_lines_are_found() -> None:
    long = "x" * 89
    page = (
        f"Text that is not code: {long}\n\n"
        f"An example::\n\n    ok = 1\n    {long}\n\n"
        f".. code-block:: python\n\n    {long}\n\n"
        f".. code-block:: text\n   :class: wrap-lines\n\n    {long}\n\n"
        f".. list-table::\n\n   * - {long}\n\n"
        f"Done.\n"
    )
    assert long_code_lines(page) == [(6, 89), (10, 89)]


def test_the_site_uses_furo_and_wraps_wide_tables() -> None:
    spec = importlib.util.spec_from_file_location("rackafka_docs_conf_layout", DOCS / "conf.py")
    assert spec is not None and spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    assert conf.html_theme == "furo"
    css = ""
    for name in conf.html_css_files:
        found = [DOCS / d / name for d in conf.html_static_path if (DOCS / d / name).is_file()]
        assert found, f"{name} is not in html_static_path {conf.html_static_path}"
        css += found[0].read_text()
    rules = " ".join(css.split())
    assert re.search(r"\.colwidths-given table\.docutils \{[^}]*table-layout: fixed", rules)
    assert re.search(r"table\.docutils td,[^{]*\{[^}]*overflow-wrap: anywhere", rules)
