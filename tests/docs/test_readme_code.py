"""The README's Python examples are code that works: each ``.. code-block:: python`` of
README.rst compiles, imports only names rackafka has, and passes the client classes only
arguments their constructors take."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import rackafka

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.rst"
_PYTHON_BLOCK = re.compile(r"^(\s*)\.\. code-block:: python\s*$")
CLIENTS = ("AIOKafkaConsumer", "AIOKafkaProducer", "AIOKafkaAdminClient")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, code) of each ``.. code-block:: python`` of an rST text, without
    the block's indent."""
    lines = text.splitlines()
    blocks = []
    for i, line in enumerate(lines):
        directive = _PYTHON_BLOCK.match(line)
        if not directive:
            continue
        indent = len(directive.group(1))
        j = i + 1
        while j < len(lines) and lines[j].strip().startswith(":"):
            j += 1
        body: list[str] = []
        start = j
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
        ):
            body.append(lines[j])
            j += 1
        code = [b for b in body if b.strip()]
        base = min(len(b) - len(b.lstrip()) for b in code) if code else 0
        while body and not body[0].strip():
            body.pop(0)
            start += 1
        blocks.append((start + 1, "\n".join(b[base:] for b in body).rstrip() + "\n"))
    return blocks


def problems(code: str) -> list[str]:
    """What is wrong with a README example: a name imported from rackafka that does not
    exist, or an argument a client class does not take. Raises SyntaxError when the code
    does not compile."""
    tree = ast.parse(code)
    compile(tree, "<README>", "exec")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rackafka"):
            module = importlib.import_module(node.module or "")
            found += [
                f"{node.module} has no {a.name}" for a in node.names if not hasattr(module, a.name)
            ]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("rackafka"):
                    importlib.import_module(alias.name)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in CLIENTS
        ):
            params = inspect.signature(getattr(rackafka, node.func.id)).parameters
            found += [
                f"{node.func.id} takes no {kw.arg}"
                for kw in node.keywords
                if kw.arg is not None and kw.arg not in params
            ]
    return found


BLOCKS = python_blocks(README.read_text())


def test_the_readme_has_its_quick_start_examples() -> None:
    code = "\n".join(c for _, c in BLOCKS)
    for what in ("AIOKafkaConsumer(", "group_id=", "AIOKafkaProducer(", "rackafka.spark"):
        assert what in code, what


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line{n}" for n, _ in BLOCKS])
def test_a_readme_example_is_valid(line: int, code: str) -> None:
    if "rackafka.spark" in code:
        pytest.importorskip("pyspark", reason="the Spark example imports rackafka.spark")
    try:
        assert problems(code) == [], f"README.rst line {line}"
    except SyntaxError as e:
        pytest.fail(f"README.rst line {line + (e.lineno or 1) - 1}: {e.msg}")


def test_the_checks_find_broken_examples() -> None:
    text = (
        "Intro.\n\n.. code-block:: python\n\n    from rackafka import AIOKafkaConsumer, Nope\n\n"
        "    c = AIOKafkaConsumer('t', client_rak='a', group_id='g')\n\n"
        "Text.\n\n.. code-block:: python\n\n    def f(:\n        pass\n\n"
        ".. code-block:: bash\n\n    pip install rackafka\n"
    )
    blocks = python_blocks(text)
    assert [n for n, _ in blocks] == [5, 13]
    assert problems(blocks[0][1]) == [
        "rackafka has no Nope",
        "AIOKafkaConsumer takes no client_rak",
    ]
    with pytest.raises(SyntaxError):
        problems(blocks[1][1])
