"""The house rules of the source tree, checked from the code itself.

- no import cycle between modules of ``src/rackafka``, counting imports inside functions
  and under ``TYPE_CHECKING`` (a cycle means a concept lives in the wrong file);
- lower floors never import higher ones (the floors of docs/architecture.rst);
- no module over 1,000 lines but the error table;
- Kafka error codes are declared once, in ``errors.py``: no other module names one as an
  integer constant or compares a response's error code with a number other than 0.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from rackafka import errors

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "rackafka"

#: Floor of each top-level piece of the package (docs/architecture.rst); a module may import
#: its own floor and the floors below.
FLOORS: dict[str, int] = {
    "errors": 0,
    "structs": 0,
    "_version": 0,
    "_config": 0,
    "_backoff": 0,
    "_lifecycle": 0,
    "_tasks": 0,
    "abc": 0,
    "helpers": 0,
    "protocol": 0,
    "records": 0,
    "net": 1,
    "config": 2,
    "cluster": 2,
    "client": 2,
    "subscription": 2,
    "zones": 2,
    "admin": 3,
    "consumer": 3,
    "producer": 3,
    "group": 3,
    "coordinator": 3,
    "metrics": 4,
    "instrumentation": 4,
    "doctor": 4,
    "spark": 4,
    "testing": 4,
    "__main__": 4,
    "_aiokafka_alias": 4,
    "": 4,  # rackafka/__init__.py: the public names
}
LARGEST = 1000
TABLES = {"rackafka.errors"}


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(), str(path)) for name, path in MODULES.items()}


TREES = _trees()


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if MODULES[module].name != "__init__.py":
                package.pop()
            package = package[: len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        # ``from pkg import mod`` imports the module pkg.mod, not only pkg's __init__.
        targets = [
            f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
            for alias in node.names
        ]
    found = []
    for target in targets:
        while target not in MODULES and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in MODULES and target != module:
            found.append(target)
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, tree in TREES.items():
        graph[name] = {
            target
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target in _imported(name, node)
        }
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _floor(module: str) -> int:
    piece = module.split(".")[1] if "." in module else ""
    return FLOORS[piece]


def test_the_probe_sees_the_imports_it_should() -> None:
    # The checks below are only as good as the graph: it must see imports at every level.
    graph = _graph()
    assert "rackafka.errors" in graph["rackafka.protocol.schema"]
    assert "rackafka.consumer" in graph["rackafka.doctor"] or any(
        m.startswith("rackafka.consumer") for m in graph["rackafka.doctor"]
    )
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_every_piece_has_a_floor() -> None:
    assert {_floor(m) for m in MODULES} <= set(FLOORS.values())


def test_no_import_goes_up_a_floor() -> None:
    upward = sorted(
        f"{module} (floor {_floor(module)}) imports {target} (floor {_floor(target)})"
        for module, targets in _graph().items()
        for target in targets
        if _floor(target) > _floor(module)
    )
    assert upward == []


def test_no_module_over_a_thousand_lines() -> None:
    sizes = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    assert {n: s for n, s in sizes.items() if s > LARGEST and n not in TABLES} == {}


_CODE_NAMES = {cls.message for cls in errors.ERROR_CODES.values()} - {"NONE", ""}


def _is_int(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    ) or (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
    )


def _mentions_error_code(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return "error_code" in text or text.endswith("errno") or text in {"code", "err_code"}


@pytest.mark.parametrize("module", sorted(set(MODULES) - {"rackafka.errors"}))
def test_error_codes_are_asked_of_errors_py(module: str) -> None:
    found = []
    for node in ast.walk(TREES[module]):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Name)
                    and target.id.lstrip("_") in _CODE_NAMES
                    and _is_int(node.value)
                ):
                    found.append(f"line {node.lineno}: {target.id} = {ast.unparse(node.value)}")
        if isinstance(node, ast.Compare) and _mentions_error_code(node.left):
            for right in node.comparators:
                numbers = (
                    list(right.elts)
                    if isinstance(right, (ast.Tuple, ast.Set, ast.List))
                    else [right]
                )
                if any(_is_int(n) and getattr(n, "value", None) != 0 for n in numbers):
                    found.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert found == []
