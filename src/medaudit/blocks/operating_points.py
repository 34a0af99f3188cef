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

from typing import Any

import numpy as np
import pandas as pd

from medaudit.blocks.block import Block, BlockResult, TableSchema
from medaudit.blocks.cells import BootstrapCell, run_cells
from medaudit.blocks.context import AuditContext
from medaudit.blocks.notes import degenerate_cells_note, degenerate_note, exposure_note, join
from medaudit.blocks.rows import interval, spec_row
from medaudit.stats import risk_coverage_curve

__all__ = ["OperatingPoints", "METRICS"]

NAME = "operating_points"
METRICS = (
    ("sensitivity_at_specificity", {"min_specificity": 0.95}),
    ("specificity_at_sensitivity", {"min_sensitivity": 0.95}),
    ("selective_risk", {"coverage": 0.8}),
    ("selective_risk", {"coverage": 0.9}),
)
#: coverage points kept for the risk-coverage curves (the full curve has n points)
CURVE_POINTS = 101


class OperatingPoints(Block):
    """Se at Sp >= 0.95, Sp at Se >= 0.95 and selective risk per model and cohort."""

    name = NAME
    title = "Operating points and selective risk"
    summary = ("Se at Sp >= 0.95, Sp at Se >= 0.95, selective risk at 80/90 % coverage "
               "(paper 000 Table 5)")
    tables = (
        TableSchema("operating_points", "one row per cohort x model x criterion, with its interval",
                    ("estimate", "ci_low", "ci_high", "n_degenerate", "n", "n_pos", "n_neg",
                     "qualification")),
        TableSchema("risk_coverage", "risk-coverage curves at about 101 coverages (point estimates)",
                    ("coverage", "k", "estimate")),
    )
    figures = ("fig8_risk_coverage",)

    def run(self, ctx: AuditContext, config: Any) -> BlockResult:
        prompt, models = ctx.primary_prompt, ctx.models()
        # selective prediction needs probabilities (confidence max(s, 1-s), decision s >= 0.5)
        metrics = METRICS if ctx.probabilities else METRICS[:2]
        cells = []
        for cohort in ctx.cohorts:
            ctx.tick(f"{NAME}: bootstrap {cohort}")
            w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
            cells.append(BootstrapCell(key=(NAME, cohort, prompt), label=w.label,
                                       scores=w.vectors(models, prompt), metrics=metrics,
                                       design=ctx.cohort_design(cohort)))
        rows: list[dict] = []
        for cohort, res in zip(ctx.cohorts, run_cells(ctx, cells), strict=True):
            for m in models:
                for spec_, mid in zip(metrics, res.metric_ids, strict=True):
                    r = res.marginal[(m, mid)]
                    rows.append(spec_row(
                        model=m, prompt=prompt, cohort=cohort,
                        threshold=0.5 if spec_[0] == "selective_risk" else None, criterion=mid,
                        design=r.design, n_resamples=r.n_resamples, seed=res.seed, **interval(r),
                        qualification=join(exposure_note(ctx, m, cohort),
                                           degenerate_note(r.n_degenerate, r.n_resamples))))
        notes = [
            f"Within-cohort operating points (not transported thresholds); percentile intervals, "
            f"level {ctx.resampling.confidence_level}, B = {ctx.resampling.n_resamples}, one paired "
            "bootstrap per cohort with the operating point re-chosen in "
            "each replicate (design per cohort in column `design`).",
            "Selective risk: confidence max(s, 1-s), decision s >= 0.5, k = ceil(coverage * n)."
            if ctx.probabilities else "score_scale is 'logits': selective risk needs probabilities "
            "and is not reported.",
        ]
        notes += degenerate_cells_note(sum(int(r["n_degenerate"] > 0) for r in rows))
        return BlockResult(name=NAME, tables={"operating_points": pd.DataFrame(rows),
                                              "risk_coverage": _risk_coverage(ctx, prompt, models)},
                           notes=tuple(notes))


def _risk_coverage(ctx: AuditContext, prompt: str, models: list[str]) -> pd.DataFrame:
    """Risk-coverage curves (point estimates) at ~101 coverages k/n, for figures."""
    if not ctx.probabilities:
        return pd.DataFrame()
    rows = []
    for cohort in ctx.cohorts:
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
