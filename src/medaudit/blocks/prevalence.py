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
from pydantic import Field, model_validator

from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.cells import BootstrapCell, run_cells
from medaudit.blocks.context import AuditContext
from medaudit.blocks.notes import exposure_note
from medaudit.blocks.rows import interval, spec_row, verdict
from medaudit.io.specfile import fraction

__all__ = ["Prevalence", "PrevalenceEntry"]

NAME = "prevalence"

# (metric name, options other than prevalence) -> the criterion id without pi
_METRICS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("brier_score", {}, "brier_score"),
    ("ece", {"n_bins": 15}, "ece[n_bins=15]"),
    ("log_loss", {}, "log_loss"),
)


class PrevalenceEntry(BlockConfig):
    """One prevalence grid: the cohorts, the grid of pi and the entry's primary pi."""

    cohorts: list[str] = Field(min_length=1)
    grid: list[float] = Field(min_length=1)
    primary: float

    @model_validator(mode="after")
    def _check(self) -> PrevalenceEntry:
        for v in self.grid:
            fraction(v, "prevalence grid value")
        fraction(self.primary, "primary prevalence")
        if self.primary not in self.grid:
            raise ValueError(f"primary prevalence {self.primary} must be in grid {self.grid}")
        return self


def _grid_label(grid: list[float]) -> str:
    return "|".join(f"{p:g}" for p in grid)


def _order(a: float, b: float) -> str:
    if math.isnan(a) or math.isnan(b):
        return "nan"
    if a < b:
        return "a<b"
    if a > b:
        return "a>b"
    return "a=b"


class Prevalence(Block):
    """Prevalence-standardised Brier, ECE15 and log loss over a grid of pi."""

    name = NAME
    title = "Prevalence-standardised score error"
    summary = ("Brier, ECE15, log loss at each pi with within-label intervals; paired "
               "differences; ranking reversals (paper 000 Tables 12-13)")
    config = PrevalenceEntry
    many = True
    no_entries = ("no prevalence grid is declared (`prevalence: [{cohorts: [...], grid: [...], "
                  "primary: ...}]`)")
    tables = (
        TableSchema("metrics", "one row per cohort x model x pi x metric, with its interval",
                    ("estimate", "ci_low", "ci_high", "n_degenerate", "n", "n_pos", "n_neg", "primary",
                     "qualification")),
        TableSchema("differences", "paired Brier differences A - B at each pi",
                    ("model_a", "model_b", "estimate", "ci_low", "ci_high", "verdict", "primary")),
        TableSchema("reversals", "per cohort and model pair, the Brier order at each pi",
                    ("model_a", "model_b", "order_at_each_pi", "reversed")),
    )
    figures = ("fig5_prevalence",)

    def check(self, config: list[PrevalenceEntry], table: pd.DataFrame, cohorts) -> list[str]:
        from medaudit.blocks.checks import unknown

        return [e for i, pv in enumerate(config)
                for e in unknown("cohort", pv.cohorts, cohorts, f"prevalence[{i}].cohorts")]


    def run(self, ctx: AuditContext, config: list[PrevalenceEntry]) -> BlockResult:
        if not ctx.probabilities and config:
            return BlockResult(name=NAME, tables={"metrics": pd.DataFrame(),
                                                  "differences": pd.DataFrame(),
                                                  "reversals": pd.DataFrame()},
                               notes=("score_scale is 'logits': every prevalence-standardised metric "
                                      "needs probabilities, so this block reports nothing.",))
        cohort_rank = {c: i for i, c in enumerate(ctx.cohorts)}
        metric_rows: list[dict[str, Any]] = []
        diff_rows: list[dict[str, Any]] = []
        rev_rows: list[dict[str, Any]] = []
        notes: list[str] = []
        for entry in config:
            cohorts = sorted(dict.fromkeys(entry.cohorts), key=lambda c: cohort_rank.get(c, 1 << 30))
            family = _entry(ctx, entry, cohorts, metric_rows, diff_rows, rev_rows)
            grid = sorted(dict.fromkeys(float(p) for p in entry.grid))
            notes.append(f"{family}: cohorts {cohorts}, grid {grid}; within-label paired bootstrap "
                         f"(B={ctx.resampling.n_resamples}); log loss clips scores to "
                         "[1e-15, 1 - 1e-15].")
        return BlockResult(name=NAME, tables={"metrics": pd.DataFrame(metric_rows),
                                              "differences": pd.DataFrame(diff_rows),
                                              "reversals": pd.DataFrame(rev_rows)},
                           notes=tuple(notes))


def _entry(ctx: AuditContext, entry: PrevalenceEntry, cohorts: list[str], metric_rows: list,
           diff_rows: list, rev_rows: list) -> str:
    """All models at the primary prompt share one within-label paired draw per cohort."""
    prompt, models = ctx.primary_prompt, ctx.models()
    grid = sorted(dict.fromkeys(float(p) for p in entry.grid))
    primary = float(entry.primary)
    family = f"prevalence-grid|primary={primary:g}"
    glabel = _grid_label(grid)
    cells = [(p, name, crit) for p in grid for name, _, crit in _METRICS]
    metrics = tuple((name, {**opts, "prevalence": p}) for p in grid for name, opts, _ in _METRICS)
    pairs = tuple((a, b) for i, a in enumerate(models) for b in models[i + 1:])
    jobs = []
    for cohort in cohorts:
        ctx.tick(f"{NAME}: bootstrap {cohort}")
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        jobs.append(BootstrapCell(key=(NAME, cohort, f"grid={glabel}", f"primary={primary:g}"),
                                  label=w.label, scores=w.vectors(models, prompt), metrics=metrics,
                                  design="within_label", contrasts=pairs))
    for cohort, res in zip(cohorts, run_cells(ctx, jobs), strict=True):
        # metric ids in the order given (e.g. "ece[n_bins=15,prevalence=0.5]")
        mid = dict(zip(cells, res.metric_ids, strict=True))
        base = dict(prompt=prompt, cohort=cohort, design=res.hard.design,
                    n_resamples=res.hard.n_resamples, family=family)
        for m in models:
            q = exposure_note(ctx, m, cohort, label="")
            for p in grid:
                for name, _, crit in _METRICS:
                    r = res.marginal[(m, mid[(p, name, crit)])]
                    metric_rows.append(spec_row(model=m, prevalence=p, criterion=crit, **base,
                                                **interval(r), primary=bool(p == primary),
                                                qualification=q))
        for a, b in pairs:
            q = exposure_note(ctx, (a, b), cohort, label="{model}: ")
            orders = []
            for p in grid:
                bid = mid[(p, "brier_score", "brier_score")]
                d = res.differences[(a, b, bid)]
                diff_rows.append(spec_row(
                    model=f"{a} - {b}", prevalence=p, criterion="brier_score_difference",
                    **base, model_a=a, model_b=b, **interval(d),
                    verdict=verdict(d.ci_low, d.ci_high, -1, n_degenerate=d.n_degenerate),
                    primary=bool(p == primary),
                    qualification=q))
                orders.append(_order(res.marginal[(a, bid)].estimate, res.marginal[(b, bid)].estimate))
            strict = {o for o in orders if o in ("a<b", "a>b")}
            rev_rows.append(spec_row(
                model=f"{a} - {b}", prompt=prompt, cohort=cohort, prevalence=glabel,
                criterion="brier_score_difference", design="point_estimate",
                n_resamples=None, family=family, model_a=a, model_b=b,
                order_at_each_pi="|".join(orders), reversed=len(strict) > 1, qualification=q))
    return family
