"""README.rst's "Same API" claim lists its exceptions: every difference docs/migrating.rst
lists (each row of its tables, each "**No ...**" paragraph) is named in the claim, and the
claim names nothing the page does not explain. The test fails when the two drift apart."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.rst").read_text()
MIGRATING = (ROOT / "docs" / "migrating.rst").read_text()

_CODE = re.compile(r"``([^`]+)``")
_ROW = re.compile(r"^(\s*)\* - (.*)$")
_BOLD_LEAD = re.compile(r"^\*\*([^*]+)\.\*\* (.*)$")


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def same_api_claim(readme: str) -> str:
    """The README bullet that begins with "**Same API", up to the next unindented line."""
    lines = readme.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("* **Same API"))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()),
        len(lines),
    )
    return "\n".join(lines[start:end]).rstrip()


def listed_differences(page: str) -> list[str]:
    """The first cell of every row (the header rows left out) of the page's list-tables, and
    the bold lead of every paragraph that begins with one (``**No admin client.**``)."""
    found: list[str] = []
    lines = page.splitlines()
    in_table = False
    header_rows = 0
    for i, line in enumerate(lines):
        if line.startswith(".. list-table::"):
            in_table, header_rows = True, 0
            continue
        if in_table and line and not line[0].isspace():
            in_table = False
        if in_table:
            rows = re.match(r"\s+:header-rows:\s*(\d+)", line)
            if rows:
                header_rows = int(rows.group(1))
                continue
            row = _ROW.match(line)
            if row:
                cell = [row.group(2)]
                indent = len(row.group(1)) + 4
                for more in lines[i + 1 :]:
                    if not more.strip() or more.lstrip().startswith(("- ", "* ")):
                        break
                    if len(more) - len(more.lstrip()) < indent:
                        break
                    cell.append(more.strip())
                if header_rows:
                    header_rows -= 1
                else:
                    found.append(" ".join(cell))
        else:
            lead = _BOLD_LEAD.match(line)
            if lead:
                names = _CODE.findall(lead.group(2))
                found.append(f"``{names[0]}``" if names else lead.group(1))
    return found


def missing_from_claim(page: str, claim: str) -> list[str]:
    """The differences of ``page`` that ``claim`` does not name: a cell of inline code only
    (``"``client_id`` default"``) by every name in it, any other by its words (without a
    leading article)."""
    text = _norm(claim)
    missing = []
    for what in listed_differences(page):
        names = _CODE.findall(what)
        rest = _CODE.sub("", what).replace(",", " ").split()
        if names and rest in ([], ["default"]):
            if any(f"``{name}``".casefold() not in text for name in names):
                missing.append(what)
        elif _norm(re.sub(r"^(A|An|The) ", "", what)) not in text:
            missing.append(what)
    return missing


def unknown_in_claim(page: str, claim: str) -> list[str]:
    """Inline code of ``claim`` that ``page`` never mentions."""
    return [name for name in _CODE.findall(claim) if f"``{name}``" not in page]


def test_the_readme_claim_names_every_listed_difference() -> None:
    claim = same_api_claim(README)
    assert "<docs/migrating.rst>" in claim, "the claim links the list of differences"
    assert len(listed_differences(MIGRATING)) >= 20, listed_differences(MIGRATING)
    assert missing_from_claim(MIGRATING, claim) == []


def test_the_readme_claim_names_only_what_the_page_explains() -> None:
    assert unknown_in_claim(MIGRATING, same_api_claim(README)) == []


PAGE = """\
**No admin client.** aiokafka's ``AIOKafkaAdminClient`` has no counterpart.

.. list-table::
   :header-rows: 1
   :widths: 30 70

   * - What
     - rackafka
   * - ``client_id`` default
     - ``"rackafka-<version>"``
   * - ``retry_backoff_max_ms``,
       ``reconnect_backoff_ms``
     - exponential backoff
   * - A deserializer that
       raises
     - ``RecordDeserializationError``

Below the table.
"""


def test_the_checks_find_a_row_the_claim_leaves_out() -> None:
    assert listed_differences(PAGE) == [
        "``AIOKafkaAdminClient``",
        "``client_id`` default",
        "``retry_backoff_max_ms``, ``reconnect_backoff_ms``",
        "A deserializer that raises",
    ]
    claim = (
        "* **Same API.** Except ``AIOKafkaAdminClient``, ``client_id``,\n"
        "  ``retry_backoff_max_ms`` and a deserializer that\n  raises, and ``made_up``.\n"
    )
    assert missing_from_claim(PAGE, claim) == ["``retry_backoff_max_ms``, ``reconnect_backoff_ms``"]
    assert unknown_in_claim(PAGE, claim) == ["made_up"]
    assert missing_from_claim(PAGE, claim.replace("a deserializer", "one")) == [
        "``retry_backoff_max_ms``, ``reconnect_backoff_ms``",
        "A deserializer that raises",
    ]
    readme = f"Intro\n\n{claim}\nRequires Python.\n\n* **Same API** later\n"
    assert same_api_claim(readme) == claim.rstrip("\n")
