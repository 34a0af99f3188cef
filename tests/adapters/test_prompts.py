"""The five prompt families are paper 000 Table 3 verbatim (witness: the methods.md table text)."""

from __future__ import annotations

import re

import pytest

from medaudit.adapters.prompts import PAPER000_FAMILIES, PromptFamily, get_families
from medaudit.exceptions import MedauditError
from tests.adapters.conftest import DOCS


def _methods_table() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    path = DOCS / "methods.md"
    if not path.exists():
        pytest.skip(f"{path} is absent; the witness is its M0.5 table")
    text = path.read_text(encoding="utf-8")
    section = text.split("### M0.5", 1)[1].split("###", 1)[0]
    out = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*\*\*(\w+)\*\*[^|]*\|([^|]*)\|([^|]*)\|", line)
        if m:
            pos = tuple(re.findall(r"`([^`]*)`", m.group(2)))
            neg = tuple(re.findall(r"`([^`]*)`", m.group(3)))
            out[m.group(1).lower()] = (pos, neg)
    return out


def test_families_verbatim_against_methods_table():
    table = _methods_table()
    assert list(table) == ["clinical", "photo", "report", "presence", "normal"]
    for fam in PAPER000_FAMILIES:
        assert (fam.positive, fam.negative) == table[fam.name], fam.name


def test_family_shape_and_order():
    assert [f.name for f in PAPER000_FAMILIES] == ["clinical", "photo", "report", "presence", "normal"]
    assert [(len(f.positive), len(f.negative)) for f in PAPER000_FAMILIES] == [(4, 4)] + [(1, 1)] * 4
    # the capital X of "X-ray" occurs in the Photo family only (M0.5)
    with_capital = {f.name for f in PAPER000_FAMILIES for t in (*f.positive, *f.negative) if "X-ray" in t}
    assert with_capital == {"photo"}


def test_get_families_selects_in_requested_order_and_rejects_unknown():
    assert [f.name for f in get_families(["normal", "clinical"])] == ["normal", "clinical"]
    with pytest.raises(MedauditError, match="unknown prompt family.*clinical"):
        get_families(["clinicl"])
    with pytest.raises(MedauditError, match="repeat"):
        get_families(["photo", "photo"])
    with pytest.raises(MedauditError, match="non-empty tuple"):
        PromptFamily(name="x", positive=(), negative=("a",))
    with pytest.raises(MedauditError, match=r"\|"):
        PromptFamily(name="a|b", positive=("a",), negative=("b",))


def _paper_table3() -> list[str]:
    """The lines of paper 000's extracted Table 3 (between its caption and its footnote)."""
    seeds = sorted((DOCS.parent / "seeds").glob("000_*.txt"))
    if not seeds:
        pytest.skip(f"{DOCS.parent / 'seeds'} lacks paper 000; the witness is its Table 3 text")
    text = seeds[0].read_text(encoding="utf-8")
    block = text.split("Table 3: Exact text supplied to each frozen text encoder.", 1)[1]
    block = block.split("Clinical averages four normalized text embeddings", 1)[0]
    return [ln.strip() for ln in block.splitlines() if ln.strip()]


def test_families_verbatim_against_the_paper_text():
    lines = _paper_table3()
    fams = {f.name: f for f in PAPER000_FAMILIES}
    # Clinical: each class's four texts, in order, make one extracted line (case-sensitive)
    assert " ".join(fams["clinical"].positive) in lines
    assert " ".join(fams["clinical"].negative) in lines
    for name in ("photo", "presence", "normal"):
        assert fams[name].positive[0] in lines and fams[name].negative[0] in lines, name
    # Report: the PDF interleaved two columns, each broken in two: A C B D with pos = A B, neg = C D
    pos, neg = fams["report"].positive[0].split(), fams["report"].negative[0].split()
    row = next(ln for ln in lines if ln.startswith("chest radiograph findings"))
    splits = {" ".join(pos[:i] + neg[:j] + pos[i:] + neg[j:])
              for i in range(1, len(pos)) for j in range(1, len(neg))}
    assert row in splits
