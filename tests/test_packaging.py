"""The package's metadata (pyproject.toml) says what users need to know: the version comes
from one place, the extras have the names the docs use, the Python versions and links are
there, and the files the package needs at run time are package data. ``.ci/wheel-check``
checks the built wheel itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import rackafka
from rackafka._version import __version__

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_is_written_once() -> None:
    config = _pyproject()
    assert "version" not in config["project"]
    assert config["project"]["dynamic"] == ["version"]
    attr = config["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "rackafka._version.__version__"
    assert rackafka.__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", rackafka.__version__)


def test_the_metadata_describes_the_whole_package() -> None:
    project = _pyproject()["project"]
    assert "consumer" not in project["description"].split(",")[0]
    for what in ("producer", "admin", "Spark"):
        assert what in project["description"], what
    classifiers = project["classifiers"]
    for minor in range(10, 14):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert any(c.startswith("Topic :: ") for c in classifiers)
    assert set(project["urls"]) >= {"Documentation", "Changelog", "Source", "Issues"}
    assert project["keywords"]
    assert project["license"] == "Apache-2.0"
    for name in project["license-files"]:
        assert (ROOT / name).is_file(), name


def test_the_extras_have_the_names_users_expect() -> None:
    extras = _pyproject()["project"]["optional-dependencies"]
    assert {"spark", "testing", "aws", "gssapi", "prometheus", "opentelemetry"} <= set(extras)
    # .ci/wheel-check builds and checks the package with these (the test extra).
    assert any(d.startswith("build") for d in extras["test"])
    assert any(d.startswith("twine") for d in extras["test"])


def test_the_files_needed_at_run_time_are_package_data() -> None:
    data = _pyproject()["tool"]["setuptools"]["package-data"]["rackafka"]
    package = ROOT / "src" / "rackafka"
    for pattern in data:
        assert list(package.glob(pattern)), pattern
    assert "py.typed" in data
    assert list(package.glob("testing/kafka-*.sha256"))
    assert any(Path("testing/kafka-1.sha256").match(p) for p in data)


def test_towncrier_writes_the_changelog_the_docs_include() -> None:
    towncrier = _pyproject()["tool"]["towncrier"]
    changes = ROOT / towncrier["filename"]
    assert ".. towncrier release notes start" in changes.read_text()
    assert "include:: ../CHANGES.rst" in (ROOT / "docs" / "changelog.rst").read_text()
    types = {t["directory"] for t in towncrier["type"]}
    assert {"feature", "bugfix", "doc", "misc"} <= types
