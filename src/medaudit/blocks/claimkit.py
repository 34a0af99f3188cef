"""What every block's claims share: the matrix columns, table look-ups and the verdict rules.

A claim is a typed statement with an evaluation specification E, an estimate, an
interval and a verdict.  Its portability is judged by changing one element of E at a
time and reading the verdict under the changed specification from the block tables
(never recomputing a statistic):

* ``holds``      — the interval excludes the null on the claimed side;
* ``reversed``   — the interval excludes the null on the other side;
* ``unresolved`` — the interval spans the decision boundary (a first-class verdict);
* ``not defined``— the stratum is degenerate (e.g. undefined metric);
* ``unaffected`` — the claim's criterion does not depend on this element (AUROC and π);
* ``does not hold`` — a level or retention claim fails under the changed specification.

Each block's :meth:`~medaudit.blocks.block.Block.claims` returns one row per claim ×
changed element with the columns :data:`CLAIM_COLUMNS`; ``medaudit.audit.claims`` puts
them together in registry order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

__all__ = ["CLAIM_COLUMNS", "table", "qualify", "qualify_sorted", "to_float", "verdict_difference",
           "verdict_level", "pair_rows", "claim_base"]

CLAIM_COLUMNS = ("claim_id", "claim", "kind", "change", "changed_to", "model", "prompt", "cohort",
                 "negatives", "prevalence", "threshold", "criterion", "estimate", "ci_low",
                 "ci_high", "verdict", "qualification", "source_table", "other_criterion",
                 "other_estimate")


def table(results: Mapping[str, Any], block: str, name: str) -> pd.DataFrame:
    """Table ``name`` of ``block`` (an empty frame when the block or table is absent)."""
    res = results.get(block)
    if res is None or name not in res.tables:
        return pd.DataFrame()
    return res.tables[name]


def qualify(*parts: Any) -> str:
    """The non-empty text parts joined with "; ", first occurrence order, no repeats."""
    return "; ".join(dict.fromkeys(str(p) for p in parts if isinstance(p, str) and p))


def qualify_sorted(*parts: Any) -> str:
    """The non-empty text parts joined with "; ", sorted, no repeats (paper-000 claims)."""
    return "; ".join(sorted({str(p) for p in parts if isinstance(p, str) and p}))


def to_float(v: Any) -> float:
    """``v`` as a float (NaN when it is not a number)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def verdict_difference(est: float, lo: float, hi: float, sign: int) -> str:
    """Verdict for a claim that ``sign * difference > 0``."""
    if any(math.isnan(x) for x in (est, lo, hi)):
        return "not defined"
    lo_s, hi_s = sorted((sign * lo, sign * hi))
    if lo_s > 0:
        return "holds"
    if hi_s < 0:
        return "reversed"
    return "unresolved"


def verdict_level(est: float, lo: float, hi: float, level: float) -> str:
    """Verdict for a claim that a metric is at least ``level``."""
    if any(math.isnan(x) for x in (est, lo, hi)):
        return "not defined"
    if lo >= level:
        return "holds"
    if hi < level:
        return "does not hold"
    return "unresolved"


def pair_rows(df: pd.DataFrame, a: str, b: str, criterion: str) -> pd.DataFrame:
    """Rows of ``df`` comparing models ``a`` and ``b`` (either order) on ``criterion``."""
    if df.empty:
        return df
    m = (df["criterion"] == criterion) & (
        ((df["model_a"] == a) & (df["model_b"] == b)) | ((df["model_a"] == b) & (df["model_b"] == a)))
    return df[m]


def claim_base(claim_id: str, text: str, kind: str, *, model: str, prompt: Any, cohort: Any,
               negatives: Any = "all", criterion: str) -> dict[str, Any]:
    """The E of a claim at its own specification (prevalence observed, no threshold)."""
    return {"claim_id": claim_id, "claim": text, "kind": kind, "model": model, "prompt": prompt,
            "cohort": cohort, "negatives": negatives, "prevalence": "observed", "threshold": None,
            "criterion": criterion}


def claim_cell(claim: dict[str, Any], change: str, changed_to: str, *, verdict: str,
               estimate: float, ci_low: float = math.nan, ci_high: float = math.nan,
               note: str = "", source: str, **e: Any) -> dict[str, Any]:
    """One matrix row of ``claim`` under ``change`` (E overrides in ``e``)."""
    return {**claim, **e, "change": change, "changed_to": changed_to, "estimate": estimate,
            "ci_low": ci_low, "ci_high": ci_high, "verdict": verdict, "qualification": note,
            "source_table": source}
