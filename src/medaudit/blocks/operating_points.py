"""Within-cohort operating points per model and cohort (paper 000 M0.7, Table 5).

At the primary prompt, for every cohort and model: sensitivity at specificity
>= 0.95 and specificity at sensitivity >= 0.95 on the cohort's own ROC curve
(decision ``s >= t``, t over the observed scores and +inf; these are NOT
transported thresholds), and selective risk at coverage 0.8 and 0.9 (confidence
``max(s, 1 - s)``, decision ``s >= 0.5``, k = ceil(c n)).  Intervals come from one
:func:`~medaudit.stats.paired_bootstrap` call per cohort shared by all models
(design ``ctx.cohort_design(cohort)``); the operating point is re-chosen in every
replicate.

Table ``operating_points``: one row per cohort x model x criterion
(``sensitivity_at_specificity[min_specificity=0.95]``,
``specificity_at_sensitivity[min_sensitivity=0.95]``,
``selective_risk[coverage=0.8]``, ``selective_risk[coverage=0.9]``).  ``threshold``
is ``None`` for the two ROC operating points (chosen within the cohort) and 0.5
(the decision threshold) for selective risk.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from medaudit.blocks._base import AuditContext, BlockResult, cell_rng, spec_row
from medaudit.blocks.discrimination import _degenerate_note, _exposure_note, _join
from medaudit.exceptions import DegenerateDataWarning
from medaudit.stats import paired_bootstrap, risk_coverage_curve

__all__ = ["NAME", "run", "METRICS"]

NAME = "operating_points"
METRICS = (
    ("sensitivity_at_specificity", {"min_specificity": 0.95}),
    ("specificity_at_sensitivity", {"min_sensitivity": 0.95}),
    ("selective_risk", {"coverage": 0.8}),
    ("selective_risk", {"coverage": 0.9}),
)


def _bootstrap_cell(cell: dict[str, Any]):
    """One cohort's paired bootstrap of all models (an independent cell, see ``ctx.map``).

    The generator is ``cell_rng(seed, *key)`` with key ``(NAME, cohort, prompt)``: the
    draws of ``discrimination.cohort_bootstrap`` for this block.  Degenerate replicates
    are counted in the rows (``n_degenerate``), not warned about.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return paired_bootstrap(cell["label"], cell["scores"], metrics=cell["metrics"],
                                design=cell["design"], n_resamples=cell["n_resamples"],
                                confidence_level=cell["confidence_level"],
                                rng=cell_rng(cell["seed"], *cell["key"]))


def run(ctx: AuditContext) -> BlockResult:
    prompt = ctx.spec.primary_prompt
    models = ctx.models()
    B, level = ctx.spec.n_resamples, ctx.spec.confidence_level
    rows: list[dict] = []
    n_degenerate_cells = 0
    probabilities = ctx.spec.score_scale == "probabilities"
    # selective prediction needs probabilities (confidence max(s, 1-s), decision s >= 0.5)
    metrics = METRICS if probabilities else METRICS[:2]
    cohorts = list(ctx.spec.cohorts)
    cells = []
    for cohort in cohorts:
        ctx.tick(f"{NAME}: bootstrap {cohort}")
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        cells.append({"label": w.label, "scores": {m: w.scores[f"{m}|{prompt}"] for m in models},
                      "metrics": metrics, "design": ctx.cohort_design(cohort), "n_resamples": B,
                      "confidence_level": level, "seed": ctx.seed, "key": (NAME, cohort, prompt)})
    for cohort, res in zip(cohorts, ctx.map(_bootstrap_cell, cells), strict=True):
        for m in models:
            for spec_, mid in zip(metrics, res.options["metrics"], strict=True):
                r = res.marginal[(m, mid)]
                n_degenerate_cells += r.n_degenerate > 0
                rows.append(spec_row(
                    model=m, prompt=prompt, cohort=cohort,
                    threshold=0.5 if spec_[0] == "selective_risk" else None, criterion=mid,
                    design=r.design, n_resamples=r.n_resamples, seed=ctx.seed,
                    estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                    n_degenerate=r.n_degenerate, n=r.n, n_pos=r.n_pos, n_neg=r.n_neg,
                    qualification=_join(_exposure_note(ctx, cohort, m),
                                        _degenerate_note(r.n_degenerate, r.n_resamples))))
    notes = [
        f"Within-cohort operating points (not transported thresholds); percentile intervals, level "
        f"{level}, B = {B}, one paired bootstrap per cohort with the operating point re-chosen in "
        "each replicate (design per cohort in column `design`).",
        "Selective risk: confidence max(s, 1-s), decision s >= 0.5, k = ceil(coverage * n)."
        if probabilities else "score_scale is 'logits': selective risk needs probabilities and "
        "is not reported.",
    ]
    if n_degenerate_cells:
        notes.append(f"{n_degenerate_cells} cell(s) had degenerate bootstrap replicates; see "
                     "n_degenerate and qualification.")
    return BlockResult(name=NAME, tables={"operating_points": pd.DataFrame(rows),
                                          "risk_coverage": _risk_coverage(ctx, prompt, models)},
                       notes=tuple(notes))


#: coverage points kept for the risk-coverage curves (the full curve has n points)
CURVE_POINTS = 101


def _risk_coverage(ctx: AuditContext, prompt: str, models: list[str]) -> pd.DataFrame:
    """Risk-coverage curves (point estimates) at ~101 coverages k/n, for figures."""
    if ctx.spec.score_scale != "probabilities":
        return pd.DataFrame()
    rows = []
    for cohort in ctx.spec.cohorts:
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        n = w.label.size
        keep = np.unique(np.ceil(np.linspace(1, n, min(n, CURVE_POINTS))).astype(int)) - 1
        for m in models:
            curve = risk_coverage_curve(w.label, w.scores[f"{m}|{prompt}"])
            for i in keep:
                rows.append(spec_row(
                    model=m, prompt=prompt, cohort=cohort, threshold=0.5,
                    criterion="selective_risk", design="point_estimate", seed=ctx.seed,
                    coverage=float(curve.coverage[i]), k=int(i + 1), estimate=float(curve.risk[i])))
    return pd.DataFrame(rows)
