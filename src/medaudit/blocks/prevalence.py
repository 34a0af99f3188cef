"""Prevalence standardisation (paper 000 M0.7; Tables 12-13, Figure 5).

For every entry of ``spec.prevalence`` (cohorts, grid, primary pi) and every cohort,
all models at the primary prompt share one within-label paired bootstrap (B-WL /
B-WL-PAIRED, M0.10) of the prevalence-weighted Brier score, ECE15 and log loss at
each pi of the grid: positives carry total weight pi and negatives 1 - pi; scores
and labels are unchanged (no recalibration).

Tables
------
``metrics``
    One row per cohort x model x pi x metric (``brier_score``, ``ece[n_bins=15]``,
    ``log_loss``) with the interval; ``prevalence`` holds pi, ``primary`` marks the
    entry's primary pi and ``family`` is ``prevalence-grid|primary=<pi>``.
``differences``
    Paired Brier differences A - B at each pi from the same shared draws, with a
    verdict: ``a_better`` (interval entirely below 0: A has the lower Brier),
    ``b_better`` (entirely above 0) or ``unresolved``.
``reversals``
    Per cohort and model pair, the ordering of the point Brier estimates at each pi
    (``a<b``, ``a>b`` or ``a=b``, joined by ``|`` in grid order) and whether it flips.

Entries with different primary pi are never pooled: each row carries its entry's
family, and the same cohort in two entries gets two separate analyses.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from medaudit.blocks._base import AuditContext, BlockResult, cell_rng, spec_row, verdict
from medaudit.stats import paired_bootstrap

NAME = "prevalence"

# (metric name, options other than prevalence) -> the criterion id without pi
_METRICS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("brier_score", {}, "brier_score"),
    ("ece", {"n_bins": 15}, "ece[n_bins=15]"),
    ("log_loss", {}, "log_loss"),
)


def _grid_label(grid: list[float]) -> str:
    return "|".join(f"{p:g}" for p in grid)


def _qual(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _order(a: float, b: float) -> str:
    if math.isnan(a) or math.isnan(b):
        return "nan"
    if a < b:
        return "a<b"
    if a > b:
        return "a>b"
    return "a=b"


def _bootstrap_cell(cell: dict[str, Any]):
    """One cohort's within-label paired bootstrap over the grid (an independent cell).

    Module level so that a backend can ship it to a worker; it draws from
    ``cell_rng(seed, *key)`` and nothing else.
    """
    return paired_bootstrap(cell["label"], cell["scores"], metrics=cell["metrics"],
                            contrasts=cell["contrasts"], design="within_label",
                            n_resamples=cell["n_resamples"],
                            confidence_level=cell["confidence_level"],
                            rng=cell_rng(cell["seed"], *cell["key"]))


def run(ctx: AuditContext) -> BlockResult:
    spec = ctx.spec
    prompt = spec.primary_prompt
    models = ctx.models()
    cohort_rank = {c: i for i, c in enumerate(spec.cohorts)}
    metric_rows: list[dict[str, Any]] = []
    diff_rows: list[dict[str, Any]] = []
    rev_rows: list[dict[str, Any]] = []
    notes: list[str] = []

    if spec.score_scale != "probabilities" and spec.prevalence:
        notes.append("score_scale is 'logits': every prevalence-standardised metric needs "
                     "probabilities, so this block reports nothing.")
        return BlockResult(name=NAME, tables={"metrics": pd.DataFrame(),
                                              "differences": pd.DataFrame(),
                                              "reversals": pd.DataFrame()}, notes=tuple(notes))
    for entry in spec.prevalence:
        grid = sorted(dict.fromkeys(float(p) for p in entry.grid))
        primary = float(entry.primary)
        family = f"prevalence-grid|primary={primary:g}"
        glabel = _grid_label(grid)
        cells = [(p, name, crit) for p in grid for name, _, crit in _METRICS]
        metrics = [(name, {**opts, "prevalence": p}) for p in grid for name, opts, _ in _METRICS]
        pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1:]]
        cohorts = sorted(dict.fromkeys(entry.cohorts), key=lambda c: cohort_rank.get(c, 1 << 30))
        jobs = []
        for cohort in cohorts:
            ctx.tick(f"{NAME}: bootstrap {cohort}")
            w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
            jobs.append({"label": w.label, "scores": {m: w.scores[f"{m}|{prompt}"] for m in models},
                         "metrics": metrics, "contrasts": pairs, "n_resamples": spec.n_resamples,
                         "confidence_level": spec.confidence_level, "seed": ctx.seed,
                         "key": (NAME, cohort, f"grid={glabel}", f"primary={primary:g}")})
        for cohort, res in zip(cohorts, ctx.map(_bootstrap_cell, jobs), strict=True):
            # metric ids in the order given (e.g. "ece[n_bins=15,prevalence=0.5]")
            mid = dict(zip(cells, res.options["metrics"], strict=True))
            base = dict(prompt=prompt, cohort=cohort, design=res.design,
                        n_resamples=res.n_resamples, seed=ctx.seed, family=family)
            for m in models:
                q = ctx.exposure(m, cohort)
                for p in grid:
                    for name, _, crit in _METRICS:
                        r = res.marginal[(m, mid[(p, name, crit)])]
                        metric_rows.append(spec_row(
                            model=m, prevalence=p, criterion=crit, **base,
                            estimate=r.estimate, ci_low=r.ci_low, ci_high=r.ci_high,
                            n_degenerate=r.n_degenerate, n=r.n, n_pos=r.n_pos, n_neg=r.n_neg,
                            primary=bool(p == primary), qualification=q))
            for a, b in pairs:
                q = _qual(*(f"{m}: {ctx.exposure(m, cohort)}" for m in (a, b)
                            if ctx.exposure(m, cohort)))
                orders = []
                for p in grid:
                    bid = mid[(p, "brier_score", "brier_score")]
                    d = res.differences[(a, b, bid)]
                    diff_rows.append(spec_row(
                        model=f"{a} - {b}", prevalence=p, criterion="brier_score_difference",
                        **base, model_a=a, model_b=b, estimate=d.estimate, ci_low=d.ci_low,
                        ci_high=d.ci_high, n_degenerate=d.n_degenerate, n=d.n, n_pos=d.n_pos,
                        n_neg=d.n_neg, verdict=verdict(d.ci_low, d.ci_high, -1),
                        primary=bool(p == primary), qualification=q))
                    orders.append(_order(res.marginal[(a, bid)].estimate,
                                         res.marginal[(b, bid)].estimate))
                strict = {o for o in orders if o in ("a<b", "a>b")}
                rev_rows.append(spec_row(
                    model=f"{a} - {b}", prompt=prompt, cohort=cohort, prevalence=glabel,
                    criterion="brier_score_difference", design="point_estimate",
                    n_resamples=None, seed=ctx.seed, family=family, model_a=a, model_b=b,
                    order_at_each_pi="|".join(orders), reversed=len(strict) > 1,
                    qualification=q))
        notes.append(f"{family}: cohorts {cohorts}, grid {grid}; within-label paired bootstrap "
                     f"(B={spec.n_resamples}); log loss clips scores to [1e-15, 1 - 1e-15].")

    return BlockResult(name=NAME, tables={"metrics": pd.DataFrame(metric_rows),
                                          "differences": pd.DataFrame(diff_rows),
                                          "reversals": pd.DataFrame(rev_rows)},
                       notes=tuple(notes))
