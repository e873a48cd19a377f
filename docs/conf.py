"""Sphinx configuration of rackafka's documentation (``make docs``).

Builds offline: no intersphinx; the theme, Furo (the ``docs`` extra), ships its assets, and
``_static/rackafka.css`` makes wide tables wrap to the page. The pages link to each other as
``<page.rst>``_ so that they also read well as plain files; those links are pointed at the
built pages when Sphinx reads them.
"""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from typing import Any

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src")))

import rackafka  # noqa: E402

project = "rackafka"
author = "the rackafka authors"
copyright = "2026, the rackafka authors"  # noqa: A001
release = rackafka.__version__
version = release

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_custom_sections = [("Arguments", "params_style")]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = f"rackafka {release}"
html_static_path = ["_static"]
# Wide tables (docs/migrating.rst) wrap inside the page instead of scrolling sideways.
html_css_files = ["rackafka.css"]
templates_path: list[str] = []

_RST_LINK = re.compile(r"<([A-Za-z0-9_./-]+)\.rst(#[^>]*)?>`_")


def _rst_links_to_pages(_app: Any, _docname: str, source: list[str]) -> None:
    source[0] = _RST_LINK.sub(lambda m: f"<{m.group(1)}.html{m.group(2) or ''}>`_", source[0])


_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
_UNDERLINES = {"=": "-", "-": "~"}


def changelog_notes() -> str:
    """The unreleased notes of ``CHANGES/``, rendered by towncrier (as the project's
    ``[tool.towncrier]`` says), their headings below the changelog page's title (towncrier
    is configured so; a top-level ``=`` heading would be moved one level down)."""
    out = subprocess.run(
        [sys.executable, "-m", "towncrier", "build", "--draft", "--version", release,
         "--date", "unreleased", "--dir", _ROOT],
        capture_output=True, text=True, check=True, cwd=_ROOT,
    ).stdout  # fmt: skip
    lines = out.splitlines()
    if not any(line and set(line) == {"="} for line in lines):
        return "\n".join(lines) + "\n"
    demoted = [
        _UNDERLINES[line[0]] * len(line)
        if line and line[0] in _UNDERLINES and set(line) == {line[0]}
        else line
        for line in lines
    ]
    return "\n".join(demoted) + "\n"


_NOTES_HERE = ".. The notes are inserted here by docs/conf.py when the page is read."


def _insert_changelog(_app: Any, docname: str, source: list[str]) -> None:
    if docname == "changelog":
        notes = "\n" + changelog_notes()
        if _NOTES_HERE in source[0]:
            source[0] = source[0].replace(_NOTES_HERE, notes, 1)
        else:
            source[0] += notes


def undocumented_public_names(documented: set[str]) -> list[str]:
    """Names of ``rackafka.__all__`` with no entry among ``documented`` (full names of the
    objects of the API reference): neither ``rackafka.NAME`` nor where the object lives."""
    missing = []
    for name in rackafka.__all__:
        if name.startswith("__"):
            continue
        obj = getattr(rackafka, name)
        where = getattr(obj, "__name__", None) if inspect.ismodule(obj) else None
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        candidates = {f"rackafka.{name}", where, f"{module}.{qualname}" if module else None}
        if not candidates & documented:
            missing.append(name)
    return missing


def _check_api_reference(app: Any, env: Any) -> None:
    """Every public name of ``rackafka`` has an entry in the API reference (a warning,
    which ``make docs`` turns into an error)."""
    from sphinx.util import logging as sphinx_logging

    domain = env.get_domain("py")
    documented = {name for name, *_rest in domain.get_objects()}
    for name in undocumented_public_names(documented):
        sphinx_logging.getLogger(__name__).warning(
            "rackafka.%s is public (rackafka.__all__) but has no entry in docs/api.rst", name
        )


def setup(app: Any) -> None:
    """Point ``<page.rst>``_ links at the built HTML pages, fill the changelog page, and
    check that the API reference covers ``rackafka.__all__``."""
    app.connect("source-read", _rst_links_to_pages)
    app.connect("source-read", _insert_changelog)
    app.connect("env-check-consistency", _check_api_reference)
