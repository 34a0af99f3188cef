"""Published-number checks: what papers 000, 001 and 002 print, recomputed from their own text.

Every number a test here uses is read from a CSV under ``tests/reference/published/`` whose
``source`` column names the table and row (or quotes the sentence) it comes from in
``../shared/seeds/*.txt``; ``test_*_fixtures_are_quoted`` checks the CSVs against the seed text
where the seeds are present.  ``docs/published-numbers.md`` lists every check and its tolerance.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

REFERENCE = Path(__file__).resolve().parents[1] / "reference"
PUBLISHED = REFERENCE / "published"
SEEDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "seeds"
SEED_FILES = {"000": "000_6d6fe0676d9eee5b.txt", "001": "001_e3f0cc34222da935.txt",
              "002": "002_ebc8d583ec5dd3da.txt"}

#: a value printed at d decimals stands for an interval of half-width HALF[d]
HALF = {3: 0.0005, 4: 0.00005}


def load(name: str) -> pd.DataFrame:
    """One fixture table (comment lines starting with '#' are its provenance header)."""
    return pd.read_csv(PUBLISHED / name, comment="#")


def seed_text(paper: str) -> str:
    """The extracted text of one paper; the test is skipped where the seeds are absent."""
    path = SEEDS / SEED_FILES[paper]
    if not path.exists():
        pytest.skip(f"{path} is absent; these checks compare the fixtures with the paper's text")
    return path.read_text(encoding="utf-8")


def flat(text: str) -> str:
    """Text with LaTeX, citations, Unicode dashes/signs and all whitespace taken out.

    The CSV quotes are written in ASCII; the extracted text has LaTeX math ("$6\\times 3$"),
    citation brackets and page-break junk between words, none of which a quote keeps.
    """
    text = text.replace("{,}", ",")
    text = re.sub(r"\[\d+(?:\s*[,–-]\s*\d+)*\]", "", text)
    for a, b in (("−", "-"), ("–", "-"), ("—", "-"), ("’", "'"), ("×", "x"), ("\\times", "x"),
                 ("\\%", "%"), ("\\alpha", "alpha"), ("$", ""), ("{", ""), ("}", ""), ("\\,", "")):
        text = text.replace(a, b)
    text = re.sub(r"\\mathrm|\\text", "", text)
    return re.sub(r"\s+", "", text)


def missing_quotes(table: pd.DataFrame, paper: str) -> list[str]:
    """The quoted fragments (between '...' in ``source``) that the seed text does not contain."""
    seed = flat(seed_text(paper))
    out = []
    for source in table["source"]:
        m = re.search(r"'(.*)'", source)
        for frag in (m.group(1).split("...") if m else ()):
            frag = flat(frag).strip(",.")
            if frag and frag not in seed:
                out.append(frag)
    return out


def seed_numbers(paper: str, start: str, stop: str) -> list[float]:
    """The decimal numbers of one table block of the seed text, in reading order."""
    text = seed_text(paper).replace("−", "-")
    i = text.index(start)
    block = text[i:text.index(stop, i)]
    return [float(x) for x in re.findall(r"-?\d+\.\d+", block)]
