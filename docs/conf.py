"""Sphinx configuration of rackafka's documentation (``make docs``).

Builds offline: no intersphinx, a theme that ships with Sphinx. The pages link to each
other as ``<page.rst>``_ so that they also read well as plain files; those links are
pointed at the built pages when Sphinx reads them.
"""

from __future__ import annotations

import os
import re
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
html_theme = "alabaster"
html_static_path: list[str] = []
templates_path: list[str] = []

_RST_LINK = re.compile(r"<([A-Za-z0-9_./-]+)\.rst(#[^>]*)?>`_")


def _rst_links_to_pages(_app: Any, _docname: str, source: list[str]) -> None:
    source[0] = _RST_LINK.sub(lambda m: f"<{m.group(1)}.html{m.group(2) or ''}>`_", source[0])


def setup(app: Any) -> None:
    """Point ``<page.rst>``_ links at the built HTML pages."""
    app.connect("source-read", _rst_links_to_pages)
