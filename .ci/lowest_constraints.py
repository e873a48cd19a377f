"""Print pip constraints that pin each dependency of pyproject.toml to its lowest version.

``python .ci/lowest_constraints.py pyproject.toml test`` prints ``name==X`` for every
``name>=X`` of the runtime dependencies and of the named extras (``==`` pins are kept,
environment markers too), so that ``pip install --constraint`` installs the oldest
versions the project claims to support (pip has no ``--resolution lowest-direct``).
Tools the unit suite does not run (ruff) are left to the resolver.
"""

from __future__ import annotations

import re
import sys

try:
    import tomllib
except ImportError:  # Python 3.10: the TOML reader pip itself vendors
    from pip._vendor import tomli as tomllib  # type: ignore[no-redef]

#: Not exercised by the unit suite, or only as a command line tool: newest is fine.
UNPINNED = {"ruff"}

REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(>=|==)\s*([^,;\s]+)\s*$")


def lowest(requirements: list[str]) -> list[str]:
    """``name==lowest`` (with the requirement's marker) for each bounded requirement."""
    out = []
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        match = REQ.match(spec)
        if match is None:
            continue  # no lower bound, or a range: left to the resolver
        name, _, version = match.groups()
        if name.lower() in UNPINNED:
            continue
        out.append(f"{name}=={version}" + (f"; {marker.strip()}" if marker else ""))
    return out


def main(argv: list[str]) -> int:
    with open(argv[1], "rb") as f:
        project = tomllib.load(f)["project"]
    requirements = list(project.get("dependencies", []))
    for extra in argv[2:]:
        requirements += project["optional-dependencies"][extra]
    pins: dict[str, str] = {}
    for pin in lowest(requirements):
        pins.setdefault(pin.split("==")[0].lower(), pin)
    print("\n".join(pins.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
