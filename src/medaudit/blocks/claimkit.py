"""What every block's claims share: the matrix columns, the change axes, table look-ups and the verdicts.

A claim is a typed statement with an evaluation specification E, an estimate, an
interval and a verdict.  Its portability is judged by changing one element of E at a
time.  Each matrix row names the changed element in words (:data:`AXES`): a column of
the matrix always holds one kind of change, whatever the paper —

* ``cohort`` / ``institution`` / ``task`` / ``finding`` — another cohort, named by what
  moving to it changes (``cohorts: {name: {kind: task}}`` in the spec: ENHANCE's border
  and colour are tasks, paper 002's sites are institutions);
* ``prompt``, ``negatives``, ``prevalence``, ``threshold``, ``reference`` (the reference
  standard: soft labels from the raw annotations), ``subgroup`` (a level of a declared
  subgroup column), ``criterion`` and ``criterion at prevalence``.

A claim gets a row only for the changes that can affect it: AUROC does not depend on
prevalence, so an AUROC claim has no prevalence row (no "unaffected" filler).

Verdicts (:data:`VERDICTS`):

* ``holds``      — the interval excludes the null on the claimed side;
* ``reversed``   — the interval excludes the null on the other side;
* ``unresolved`` — the interval spans the decision boundary (a first-class verdict);
* ``does not hold`` — a level, non-inferiority or retention claim fails;
* ``not attainable`` — a level claim under a reference standard whose achievable ceiling
  (the soft metric of a scorer equal to the soft label) is below the claimed level;
* ``by construction`` — true because of how E was chosen (a threshold rule on its own
  source, a rate at its own institution): not evidence, and not counted as holding;
* ``not defined`` — the stratum is degenerate (e.g. undefined metric);
* ``not assessed`` — no result to read for this change;
* ``specificity only`` — specificity against one named negative group.

Each block's :meth:`~medaudit.blocks.block.Block.claims` returns one row per claim ×
changed element with the columns :data:`CLAIM_COLUMNS`; ``medaudit.audit.claims`` puts
them together, declared claims first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["CLAIM_COLUMNS", "AXES", "VERDICTS", "COHORT_KINDS", "NOT_EVIDENCE", "table", "qualify",
           "qualify_sorted", "to_float", "verdict_difference", "verdict_level", "verdict_at_most",
           "verdict_ceiling", "PairIndex", "claim_base", "claim_cell", "cohort_axis"]

CLAIM_COLUMNS = ("claim_id", "claim", "kind", "origin", "change", "changed_to", "model", "prompt",
                 "cohort", "negatives", "prevalence", "threshold", "criterion", "task", "estimate",
                 "ci_low", "ci_high", "ceiling", "verdict", "qualification", "source_table",
                 "other_criterion", "other_estimate", "other_ci_low", "other_ci_high",
                 "claim_value", "claim_side", "n_pos", "n_neg")

#: what moving a claim to another cohort changes (a cohort's declared ``kind``)
COHORT_KINDS = ("cohort", "institution", "task", "finding")

#: change word -> (symbol of E, header word, what it changes to); the matrix's column order
AXES: dict[str, tuple[str, str, str]] = {
    "at E": ("at E", "", "the claim at its own specification E"),
    "cohort": ("C", "cohort", "another cohort"),
    "institution": ("C", "institution", "another institution"),
    "task": ("C", "task", "another task (the same images rated for another property)"),
    "finding": ("C", "finding", "another finding"),
    "prompt": ("p", "prompt", "another prompt family"),
    "negatives": ("N", "negatives", "another negative (control) class"),
    "prevalence": ("π", "prevalence", "another prevalence (scores re-weighted to it)"),
    "threshold": ("τ", "threshold", "the threshold chosen again, on the cohort itself"),
    "subgroup": ("g", "subgroup", "one level of a declared subgroup column"),
    "reference": ("y", "reference standard", "soft labels from the raw annotations, or the "
                                              "annotations resampled (paper 001)"),
    "criterion": ("r", "criterion", "another criterion (score error instead of ranking)"),
    "criterion at prevalence": ("r + π", "criterion at π",
                                "another criterion at each prevalence of the grid"),
}

#: verdict -> meaning; the legend lists them in this order
VERDICTS: dict[str, str] = {
    "holds": "the interval excludes the null on the claimed side (operating constraint: met "
             "at the target by point estimate)",
    "reversed": "the interval excludes the null on the other side",
    "unresolved": "the interval spans the decision boundary",
    "does not hold": "the claimed level or constraint is not met",
    "not attainable": "the claimed level is above the ceiling a perfect scorer reaches under "
                      "this reference standard",
    "by construction": "true because of how E was chosen (not evidence; not counted as holding)",
    "not defined": "the stratum is degenerate; the metric is undefined",
    "specificity only": "specificity against one named negative group (no positives there to "
                        "re-check the constraint)",
    "not assessed": "no result to read for this change",
}

#: verdicts at E that are not evidence for the claim (left out of the "holds at E" count)
NOT_EVIDENCE = frozenset({"by construction"})

#: the qualification of a cell judged on its point estimate (its changed table has no
#: interval); the report's legend says so wherever a cell whose qualification holds
#: :data:`POINT_MARK` is in the matrix (agreement and label_uncertainty word theirs so too)
POINT_ONLY = "point estimate, no interval"
POINT_MARK = "point estimate"


def cohort_axis(study: Any, cohort: Any) -> str:
    """The change word for moving a claim to ``cohort``: its declared kind (default "cohort")."""
    spec = getattr(study, "cohorts", {}).get(cohort) if study is not None else None
    return getattr(spec, "kind", "cohort") or "cohort"


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


def deciding_part(verdicts: Sequence[str], verdict: str | None, *,
                  met: Sequence[str] = ("holds",)) -> int:
    """Which part of a claim with several constraints its row shows (the others beside it).

    The first part whose verdict is the claim's (Se unresolved and Sp not holding: the claim
    does not hold because of Sp, so Sp); else the first part not met; else the first.  So the
    interval, the claimed value and the counts on the row are those that decide it.  A claim
    that holds (``verdict`` in ``met`` or None) shows its first part.

    >>> deciding_part(["unresolved", "does not hold"], "does not hold")
    1
    >>> deciding_part(["holds", "unresolved"], "unresolved"), deciding_part(["holds", "holds"], "holds")
    (1, 0)
    """
    if verdict is not None and verdict not in met and verdict in verdicts:
        return list(verdicts).index(verdict)
    return next((i for i, v in enumerate(verdicts) if v not in met), 0)


def verdict_at_most(est: float, lo: float, hi: float, level: float) -> str:
    """Verdict for a claim that a metric is at most ``level`` (ECE <= 0.05)."""
    if any(math.isnan(x) for x in (est, lo, hi)):
        return "not defined"
    if hi <= level:
        return "holds"
    if lo > level:
        return "does not hold"
    return "unresolved"


def verdict_ceiling(verdict: str, ceiling: float, level: float) -> str:
    """A level claim's verdict under a reference whose achievable ceiling is below the level.

    ``verdict_level`` would read "does not hold" for every model, whatever its quality,
    when even a scorer equal to the soft label cannot reach ``level``: the claim is then
    not attainable under this reference, which says something about the reference, not
    the model.  A claim that holds all the same (impossible in exact arithmetic) keeps
    its verdict.
    """
    if math.isfinite(ceiling) and ceiling < level and verdict != "holds":
        return "not attainable"
    return verdict


#: the verdicts an interval decides
DECIDED = frozenset({"holds", "does not hold", "reversed"})


def verdict_untrusted(verdict: str, qualification: str, *, small: bool, n_degenerate: Any,
                      n_resamples: Any) -> tuple[str, str]:
    """(verdict, qualification) of a cell whose interval is not trusted to decide a claim.

    A percentile interval of a small subgroup (a handful of images, all resampled from the
    same few positives) is too narrow, and one that left replicates out because a class was
    absent from them is conditional on the draws that had both: the interval is reported,
    and the verdict goes no further than "unresolved", with the reason.

    Examples
    --------
    >>> verdict_untrusted("holds", "", small=True, n_degenerate=0, n_resamples=200)
    ('unresolved', 'holds by its interval, judged unresolved: too few images')
    >>> verdict_untrusted("unresolved", "x", small=True, n_degenerate=3, n_resamples=200)
    ('unresolved', 'x')
    """
    why = ["too few images"] if small else []
    n_deg = to_float(n_degenerate)
    if math.isfinite(n_deg) and n_deg > 0:
        why.append(f"{int(n_deg)} of {int(to_float(n_resamples))} replicates undefined")
    if not why or verdict not in DECIDED:
        return verdict, qualification
    extra = f"{verdict} by its interval, judged unresolved: {' and '.join(why)}"
    return "unresolved", "; ".join(p for p in (qualification, extra) if p)


def verdict_at_bound(verdict: str, qualification: str, *, criterion: Any, side: Any, level: Any,
                     ci_low: Any, ci_high: Any, n_pos: Any, n_neg: Any,
                     confidence_level: float) -> tuple[str, str]:
    """(verdict, qualification) of a level claim that holds by an interval of zero width
    at the favourable bound of its metric (AUROC 1, or ECE 0, on every replicate).

    The bootstrap shows no uncertainty there (every resample of a perfectly separated
    sample separates it too), however few the cases: 8 + 8 images made "AUROC >= 0.95"
    hold.  For AUROC an exact bound stands in: matched one to one, ``m = min(n_pos,
    n_neg)`` disjoint positive-negative pairs are independent trials, each concordant with
    probability AUROC, and all ``m`` were; the two-sided Clopper-Pearson lower end for
    ``m`` of ``m``, ``((1 - confidence_level) / 2) ** (1 / m)``, is a valid (conservative)
    lower bound of the AUROC.  The claim holds when its level is at most that bound, else it
    is unresolved; for the other metrics, unresolved.  Any other verdict, interval or side
    is returned as given: an interval at a bound that refutes a claim refutes it.

    Examples
    --------
    >>> kw = dict(criterion="roc_auc", side="greater", ci_low=1.0, ci_high=1.0, n_pos=8,
    ...           n_neg=8, confidence_level=0.95)
    >>> verdict_at_bound("holds", "", level=0.95, **kw)[0], verdict_at_bound("holds", "", level=0.6, **kw)[0]
    ('unresolved', 'holds')
    """
    from medaudit.stats.metric_ids import metric_range

    lo, hi, level = to_float(ci_low), to_float(ci_high), to_float(level)
    name = str(criterion).split("[", 1)[0]
    if verdict != "holds" or lo != hi or side not in ("greater", "less"):
        return verdict, qualification
    low, high = metric_range(name)
    if lo != (high if side == "greater" else low):
        return verdict, qualification
    npos, nneg = to_float(n_pos), to_float(n_neg)
    if name == "roc_auc" and side == "greater" and min(npos, nneg) >= 1 and (
            npos.is_integer() and nneg.is_integer()):
        m = int(min(npos, nneg))
        bound = ((1.0 - confidence_level) / 2.0) ** (1.0 / m)
        said = (f"every replicate gave AUROC 1 (an interval of zero width, which shows no "
                f"uncertainty); the exact lower bound from {m} disjoint positive-negative pairs, "
                f"all concordant, is {bound:.4f} (Clopper-Pearson, {confidence_level:g})")
        if level <= bound:
            return "holds", "; ".join(p for p in (qualification, f"{said}: holds by it") if p)
        return "unresolved", "; ".join(p for p in (qualification, f"holds by its interval, judged "
                                                   f"unresolved: {said}, below the claimed "
                                                   f"{level:g}") if p)
    said = (f"holds by its interval, judged unresolved: every replicate gave {lo:g}, an interval "
            "of zero width at the bound of the metric, which shows no uncertainty")
    return "unresolved", "; ".join(p for p in (qualification, said) if p)


class PairIndex:
    """The first row of ``df`` per (values of ``by``, criterion, unordered model pair).

    The same row as the first of ``df`` filtered on ``by == key``, ``criterion`` and the pair
    (``model_a, model_b`` in either order), found by one dict lookup: a ranking claim reads a
    difference under every changed element of E, and filtering the whole table for each of
    those cells cost most of the claims' time.
    Keys holding None or NaN are left out, as a comparison never matches them.
    """

    def __init__(self, df: pd.DataFrame, by: Sequence[str] = ()):
        self.df, self._at = df, {}
        if df.empty:
            return
        cols = [*by, "criterion", "model_a", "model_b"]
        for i, (*key, crit, a, b) in enumerate(zip(*(df[c].tolist() for c in cols), strict=True)):
            if not any(v is None or (isinstance(v, float) and math.isnan(v)) for v in key):
                self._at.setdefault((*key, crit, frozenset((a, b))), i)

    def first(self, a: str, b: str, criterion: str, *key: Any) -> pd.Series | None:
        """The first row comparing ``a`` and ``b`` (either order) on ``criterion`` at ``key``."""
        i = self._at.get((*key, criterion, frozenset((a, b))))
        return None if i is None else self.df.iloc[i]


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
