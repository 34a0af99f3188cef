"""docs/methods-coverage.md is complete and every name in it exists.

Witnesses: the flat checklist of ``../shared/docs/methods.md`` (the units, in order and with
their wording) and its ``### M<p>.<k>`` section headings, read here with a regular expression;
``importlib`` for every module and function the page names; ``ast`` for every test it names
(a ``def test_...`` in that file). The same check runs over the test references of
docs/conventions.md.
"""

from __future__ import annotations

import ast
import importlib
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "methods-coverage.md"
METHODS = ROOT.parent / "shared" / "docs" / "methods.md"
KINDS = {"hand", "oracle", "library", "R", "published"}
STATUS = re.compile(r"^(implemented\b.*|partial: .+|not implemented: .+)$")
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


def _rows(section: str) -> list[list[str]]:
    """The body rows of the first markdown table after the heading ``section`` (or the top)."""
    text = PAGE.read_text(encoding="utf-8")
    if section:
        text = text.split(f"\n## {section}\n", 1)[1]
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| id |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


@cache
def units() -> list[list[str]]:
    rows = _rows("")
    for r in rows:
        assert len(r) == 6, f"a unit row needs 6 cells (id, unit, code, tests, witness, status): {r}"
    return rows


def _ticks(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _methods_text() -> str:
    if not METHODS.is_file():
        pytest.skip(f"{METHODS} is not here (the shared folder sits beside the worktree)")
    return METHODS.read_text(encoding="utf-8")


def test_every_unit_of_methods_md_is_a_row_in_its_order_and_wording():
    checklist = _methods_text().split("## Flat checklist of implementable units", 1)[1]
    want = re.findall(r"^- \[(M\d\.\d+)\] (.+)$", checklist, flags=re.M)
    assert len(want) == 92
    assert [(r[0], r[1]) for r in units()] == want


def test_every_section_id_of_methods_md_is_on_the_page():
    ids = re.findall(r"^### (M\d\.\d+)\b", _methods_text(), flags=re.M)
    assert len(ids) == 15 + 10 + 14
    on_page = {r[0] for r in units()} | {r[0] for r in _rows("Summary sections")}
    assert [i for i in ids if i not in on_page] == []


def _resolve(name: str) -> object:
    """The object a dotted name designates: the longest importable module, then attributes."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def test_every_named_module_function_and_file_exists():
    missing = []
    for r in units():
        names = _ticks(r[2])
        assert names, f"{r[0]} {r[1]!r}: no code named"
        for name in names:
            if "/" in name:
                if not (ROOT / name).exists():
                    missing.append(f"{r[0]}: {name}")
                continue
            try:
                _resolve(name)
            except (ImportError, AttributeError) as e:
                missing.append(f"{r[0]}: {name} ({e})")
    assert missing == []


@cache
def _test_names(path: str) -> frozenset[str]:
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return frozenset(n.name for n in ast.walk(tree)
                     if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))


def _missing_tests(text: str) -> list[str]:
    out = []
    for path, name in TEST_REF.findall(text):
        if not (ROOT / path).is_file():
            out.append(f"{path} (no such file)")
        elif name not in _test_names(path):
            out.append(f"{path}::{name}")
    return out


def test_every_named_test_is_in_its_file():
    for r in units():
        refs = TEST_REF.findall(r[3])
        assert refs and len(refs) == len(_ticks(r[3])), (
            f"{r[0]} {r[1]!r}: witnesses must be `tests/<file>.py::test_<name>`: {r[3]}")
    assert _missing_tests(PAGE.read_text(encoding="utf-8")) == []


def test_status_and_witness_kinds_are_the_declared_ones():
    for r in units():
        kinds = {k.strip() for k in r[4].split(",")}
        assert kinds and kinds <= KINDS, f"{r[0]} {r[1]!r}: witness kinds {kinds - KINDS}"
        assert STATUS.match(r[5]), f"{r[0]} {r[1]!r}: status {r[5]!r}"


def test_the_conventions_page_names_existing_tests():
    text = (ROOT / "docs" / "conventions.md").read_text(encoding="utf-8")
    # a reference may continue a file named earlier in the sentence: `::test_x`
    full = TEST_REF.findall(text)
    assert full, "docs/conventions.md names no test"
    assert _missing_tests(text) == []
    last = None
    for m in re.finditer(r"`(tests/[\w/]+\.py)?::(test_\w+)`", text):
        last = m.group(1) or last
        assert last is not None and m.group(2) in _test_names(last), m.group(0)


def test_the_checker_catches_what_it_must():
    """The helpers above fail on a missing test, a missing attribute and a missing module."""
    assert _missing_tests("`tests/test_methods_coverage.py::test_no_such_test`") == [
        "tests/test_methods_coverage.py::test_no_such_test"]
    assert _missing_tests("`tests/no_such_file.py::test_x`") == ["tests/no_such_file.py (no such file)"]
    with pytest.raises(AttributeError):
        _resolve("medaudit.stats.ranking.no_such_function")
    with pytest.raises(ModuleNotFoundError):
        _resolve("no_such_package.module")
    assert _resolve("medaudit.stats.ranking.roc_auc").__name__ == "roc_auc"
    assert not STATUS.match("done") and not STATUS.match("partial")
