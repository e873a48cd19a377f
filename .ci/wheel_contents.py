"""The files of rackafka's sdist and wheel (``.ci/wheel-check``): what each must hold, and
what the wheel must not.

Usage: ``python .ci/wheel_contents.py CHECKOUT DIST_DIR``. Exits 1 with the list of problems.
"""

from __future__ import annotations

import re
import sys
import tarfile
import zipfile
from pathlib import Path, PurePosixPath


def wheel_problems(names: list[str], src: Path) -> list[str]:
    """What is wrong with a wheel whose members are ``names``, against the checkout's
    ``src`` directory: every module and data file of ``src/rackafka`` must be in it, and
    nothing but the package and its ``.dist-info``."""
    problems = []
    have = set(names)
    package = src / "rackafka"
    for path in sorted(package.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(src).as_posix()
        wanted = path.suffix in (".py", ".sha256") or path.name == "py.typed"
        if wanted and rel not in have:
            problems.append(f"missing from the wheel: {rel}")
    if not any(re.fullmatch(r"rackafka/testing/kafka-[\d.]+\.sha256", n) for n in names):
        problems.append("no pinned Kafka checksums (rackafka/testing/kafka-*.sha256)")
    if "rackafka/py.typed" not in have:
        problems.append("no rackafka/py.typed")
    for name in names:
        parts = PurePosixPath(name).parts
        top = parts[0]
        if not (top == "rackafka" or re.fullmatch(r"rackafka-[^/]+\.dist-info", top)):
            problems.append(f"outside the package: {name}")
        if "__pycache__" in parts or name.endswith((".pyc", ".pyo")):
            problems.append(f"a cache file: {name}")
        if any(p in ("tests", "test", "examples", "benchmarks", "docs") for p in parts):
            problems.append(f"not for users: {name}")
        if ".egg-info" in name:
            problems.append(f"build metadata: {name}")
    dist_info = [n for n in names if re.fullmatch(r"rackafka-[^/]+\.dist-info/[^/]+", n)]
    in_dist_info = {n.split(".dist-info/", 1)[1] for n in names if ".dist-info/" in n}
    problems += [
        f"no {needed} in the .dist-info ({dist_info})"
        for needed in ("METADATA", "entry_points.txt", "licenses/LICENSE")
        if needed not in in_dist_info
    ]
    return problems


def sdist_problems(names: list[str]) -> list[str]:
    """What is missing from an sdist whose members are ``names`` (without its top folder)."""
    needed = ["pyproject.toml", "README.rst", "LICENSE", "src/rackafka/__init__.py"]
    needed += ["src/rackafka/py.typed", "src/rackafka/_version.py"]
    problems = [f"missing from the sdist: {n}" for n in needed if n not in names]
    if not any(re.fullmatch(r"src/rackafka/testing/kafka-[\d.]+\.sha256", n) for n in names):
        problems.append("no pinned Kafka checksums in the sdist")
    problems += [f"a cache file in the sdist: {n}" for n in names if "__pycache__" in n]
    return problems


def main(argv: list[str]) -> int:
    root, dist = Path(argv[1]), Path(argv[2])
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"expected one wheel and one sdist in {dist}: {wheels} {sdists}")
        return 1
    with zipfile.ZipFile(wheels[0]) as zf:
        wheel_names = [n for n in zf.namelist() if not n.endswith("/")]
    with tarfile.open(sdists[0]) as tf:
        sdist_names = [m.name.split("/", 1)[1] for m in tf.getmembers() if m.isfile()]
    problems = wheel_problems(wheel_names, root / "src") + sdist_problems(sdist_names)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(
        f"{wheels[0].name}: {len(wheel_names)} files; {sdists[0].name}: "
        f"{len(sdist_names)} files; package data, py.typed and LICENSE present, "
        "no tests or caches"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
