"""Discrimination and calibration per model and cohort, and paired model differences.

Paper 000 M0.7 / Table 4 (clinical prompt): AUROC, AUPRC (non-interpolated average
precision, tied scores ranked individually), Brier, ECE15 and AURC for every model
on every cohort at the primary prompt, each with a percentile interval.  One
:func:`~medaudit.stats.paired_bootstrap` call per cohort draws the images once for
all models (design ``ctx.cohort_design(cohort)``, paired), so the marginal
intervals and the model differences come from the same replicates.

Tables
------
``metrics``
    One row per cohort x model x criterion (``roc_auc``, ``average_precision``,
    ``brier_score``, ``ece[n_bins=15]``, ``aurc``).  When the cohort carries soft labels
    (``label_soft``, e.g. attached from ``annotations:``; paper 001), ``soft_roc_auc``
    and ``soft_average_precision`` follow, from a paired bootstrap with the same design,
    B and cell generator: the very same resampled images under every design (within-label
    strata are the hard labels, see :func:`soft_twin`).
``model_differences``
    One row per cohort x ordered pair (A, B), A < B alphabetically, x criterion
    (``roc_auc_difference``, ``brier_score_difference``): the bootstrap estimate
    A - B with its interval from the shared draw.  AUROC rows add the paired DeLong
    test (``delong_z``, ``pvalue``, ``delong_ci_low``, ``delong_ci_high``) with a
    Holm adjustment over the cohort's model pairs (``pvalue_adj``, ``significant``).
    With soft labels, ``soft_roc_auc_difference`` rows give the bootstrap difference
    (no DeLong test: it is defined for hard labels).
    ``verdict`` is ``"a_better"`` / ``"b_better"`` when the bootstrap interval
    excludes 0 (better = higher AUROC, lower Brier), else ``"unresolved"``.

Cells: every cohort's bootstrap (and its soft twin) and its DeLong tests are independent
cells sent through ``ctx.map`` (:func:`run_paired_cell`), so a backend such as Ray can
run them; results are identical to the in-process path.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from medaudit.blocks._base import AuditContext, BlockResult, Wide, cell_rng, spec_row, verdict
from medaudit.blocks.label_uncertainty import tied_items
from medaudit.exceptions import DegenerateDataWarning
from medaudit.stats import adjust_pvalues, delong_test, paired_bootstrap, reliability_diagram

__all__ = ["NAME", "run", "METRICS", "DIFFERENCE_METRICS", "SOFT_METRICS", "verdict", "soft_twin",
           "run_paired_cell", "bootstrap_cell"]

NAME = "discrimination"
METRICS = ("roc_auc", "average_precision", "brier_score", ("ece", {"n_bins": 15}), "aurc")
#: metric id -> +1 when higher is better, -1 when lower is better
DIFFERENCE_METRICS = {"roc_auc": +1, "brier_score": -1}
#: soft-label metrics reported beside the ordinary ones when a cohort has ``label_soft``
SOFT_METRICS = ("soft_roc_auc", "soft_average_precision")
SOFT_DIFFERENCE_METRICS = {"soft_roc_auc": +1}


def run_paired_cell(cell: dict[str, Any]):
    """One paired bootstrap of several score vectors (an independent cell for ``ctx.map``).

    Module level, so a backend can ship it to a worker; it draws only from
    ``cell_rng(seed, *key)``.  Degenerate replicates are not warned about: callers count
    them in ``n_degenerate`` and qualify the rows.  ``as_design`` (set by
    :func:`soft_twin`) renames the design recorded in the result to the one whose
    draws it reproduces.
    """
    opts = {k: v for k, v in cell.items() if k not in ("label", "scores", "seed", "key", "as_design")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        res = paired_bootstrap(cell["label"], cell["scores"],
                               rng=cell_rng(cell["seed"], *cell["key"]), **opts)
    if cell.get("as_design") is None:
        return res
    name = f"{cell['as_design']}+paired"
    return dataclasses.replace(
        res, design=name,
        marginal={k: dataclasses.replace(r, design=name) for k, r in res.marginal.items()},
        differences={k: dataclasses.replace(r, design=name) for k, r in res.differences.items()})


def soft_twin(cell: dict[str, Any], label_soft: np.ndarray, *,
              metrics: Sequence[Any] = SOFT_METRICS) -> dict[str, Any]:
    """The soft-label twin of a hard-label bootstrap cell: same images drawn, soft metrics.

    Same key (so the same generator), B, level and contrasts; labels ``label_soft`` and
    ``metrics`` (soft ids) replace the hard ones.  Under ``within_label`` the strata are
    the *hard* labels of the cell (the cohort's sampling classes), not ``label_soft > 0.5``
    as the stats layer would take for soft labels: the ordinary design with
    ``strata=label`` compiles to exactly the within-label plan, so the soft and the
    ordinary rows are computed on the very same resampled images under every design.
    """
    twin = {**cell, "label": np.asarray(label_soft, dtype=np.float64), "metrics": tuple(metrics)}
    if cell["design"] == "within_label":
        twin.update(design="ordinary", strata=np.asarray(cell["label"]), as_design="within_label")
    return twin


def _delong_cell(cell: dict[str, Any]) -> list:
    """Paired DeLong tests of every model pair (A < B) of one cohort."""
    y, s, level = cell["label"], cell["scores"], cell["confidence_level"]
    return [delong_test(y, s[a], s[b], confidence_level=level) for a, b in cell["pairs"]]


def bootstrap_cell(ctx: AuditContext, block: str, cohort: str, prompt: str, w: Wide,
                   models: list[str], metrics) -> dict[str, Any]:
    """The hard-label cell of one cohort: all models, the cohort's design, B and level.

    Key ``(block, cohort, prompt)``: operating_points draws with the same key.
    """
    return {"label": w.label, "scores": {m: w.scores[f"{m}|{prompt}"] for m in models},
            "metrics": metrics, "design": ctx.cohort_design(cohort),
            "n_resamples": ctx.spec.n_resamples, "confidence_level": ctx.spec.confidence_level,
            "seed": ctx.seed, "key": (block, cohort, prompt)}


def cohort_bootstrap(ctx: AuditContext, block: str, cohort: str, prompt: str, models: list[str],
                     metrics) -> tuple:
    """One paired bootstrap of all models on a cohort (the cohort's design, B and level).

    Returns the aligned arrays, the score vectors by model and the result (in process;
    :func:`run` sends the same cells through ``ctx.map``).
    """
    w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
    cell = bootstrap_cell(ctx, block, cohort, prompt, w, models, metrics)
    return w, cell["scores"], run_paired_cell(cell)


def soft_cohort_bootstrap(ctx: AuditContext, block: str, cohort: str, prompt: str,
                          models: list[str], w, scores) -> object | None:
    """The soft-label twin of :func:`cohort_bootstrap` (None when the cohort has no soft labels)."""
    if w.label_soft is None:
        return None
    cell = bootstrap_cell(ctx, block, cohort, prompt, w, models, ("roc_auc",))
    return run_paired_cell(soft_twin(cell, w.label_soft))


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _degenerate_note(n_deg: int, n_res: int) -> str:
    return (f"{n_deg} of {n_res} bootstrap replicates degenerate (metric undefined); "
            "interval from the rest") if n_deg else ""


def _exposure_note(ctx: AuditContext, cohort: str, *models: str) -> str:
    return _join(*(f"exposure ({m}): {e}" for m in models if (e := ctx.exposure(m, cohort))))


def run(ctx: AuditContext) -> BlockResult:
    prompt = ctx.spec.primary_prompt
    models = ctx.models()
    B, level = ctx.spec.n_resamples, ctx.spec.confidence_level
    alpha = 1.0 - level
    metric_rows: list[dict] = []
    diff_rows: list[dict] = []
    n_degenerate_cells = 0
    soft_cohorts: list[str] = []
    soft_ties: list[str] = []
    probabilities = ctx.spec.score_scale == "probabilities"
    # with raw logits only the rank metrics are defined (Brier, ECE, AURC need probabilities)
    metrics = METRICS if probabilities else ("roc_auc", "average_precision")
    cohorts = list(ctx.spec.cohorts)
    pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1:]]
    # every cohort's hard-label cell, then its soft twin when it has soft labels: one
    # ctx.map over all of them (independent cells), then DeLong per cohort
    cells, where, hard = [], [], []
    for cohort in cohorts:
        ctx.tick(f"{NAME}: bootstrap {cohort}")
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        cell = bootstrap_cell(ctx, NAME, cohort, prompt, w, models, metrics)
        hard.append(cell)
        cells.append(cell)
        where.append((cohort, False))
        if w.label_soft is not None:
            cells.append(soft_twin(cell, w.label_soft))
            where.append((cohort, True))
    boot = dict(zip(where, ctx.map(run_paired_cell, cells), strict=True))
    tests = ctx.map(_delong_cell, [{"label": c["label"], "scores": c["scores"], "pairs": pairs,
                                    "confidence_level": level} for c in hard])
    for cohort, cell, delong in zip(cohorts, hard, tests, strict=True):
        scores = cell["scores"]
        res, soft = boot[(cohort, False)], boot.get((cohort, True))
        mids = res.options["metrics"]
        marginal = dict(res.marginal)
        all_mids = list(mids)
        if soft is not None:
            marginal.update(soft.marginal)
            all_mids += list(SOFT_METRICS)
            soft_cohorts.append(cohort)
            if tied := tied_items(scores):
                soft_ties.append(f"{cohort} ({', '.join(f'{m}: {n}' for m, n in tied.items())})")
        for m in models:
            for mid in all_mids:
                r = marginal[(m, mid)]
                n_degenerate_cells += r.n_degenerate > 0
                metric_rows.append(spec_row(
                    model=m, prompt=prompt, cohort=cohort, criterion=mid, design=r.design,
                    n_resamples=r.n_resamples, seed=ctx.seed, estimate=r.estimate, ci_low=r.ci_low,
                    ci_high=r.ci_high, n_degenerate=r.n_degenerate, n=r.n, n_pos=r.n_pos,
                    n_neg=r.n_neg, qualification=_join(_exposure_note(ctx, cohort, m),
                                                       _degenerate_note(r.n_degenerate, r.n_resamples))))
        family = f"{NAME}|model pairs|{cohort}|{prompt}|roc_auc"
        first = len(diff_rows)
        for (a, b), dl in zip(pairs, delong, strict=True):
            for mid, direction in DIFFERENCE_METRICS.items():
                if mid not in mids:
                    continue
                d = res.differences[(a, b, mid)]
                n_degenerate_cells += d.n_degenerate > 0
                is_auc = mid == "roc_auc"
                diff_rows.append(spec_row(
                    model=f"{a} - {b}", prompt=prompt, cohort=cohort,
                    criterion=f"{mid}_difference", design=d.design, n_resamples=d.n_resamples,
                    seed=ctx.seed, family=family if is_auc else None, model_a=a, model_b=b,
                    estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high,
                    n_degenerate=d.n_degenerate, n=d.n, n_pos=d.n_pos, n_neg=d.n_neg,
                    delong_z=dl.statistic if is_auc else np.nan,
                    pvalue=dl.pvalue if is_auc else np.nan,
                    delong_ci_low=dl.ci_low if is_auc else np.nan,
                    delong_ci_high=dl.ci_high if is_auc else np.nan,
                    pvalue_adj=np.nan, significant=None,
                    verdict=verdict(d.ci_low, d.ci_high, direction),
                    qualification=_join(_exposure_note(ctx, cohort, a, b),
                                        _degenerate_note(d.n_degenerate, d.n_resamples))))
            if soft is None:
                continue
            for mid, direction in SOFT_DIFFERENCE_METRICS.items():
                d = soft.differences[(a, b, mid)]
                n_degenerate_cells += d.n_degenerate > 0
                diff_rows.append(spec_row(
                    model=f"{a} - {b}", prompt=prompt, cohort=cohort,
                    criterion=f"{mid}_difference", design=d.design, n_resamples=d.n_resamples,
                    seed=ctx.seed, family=None, model_a=a, model_b=b, estimate=d.estimate,
                    ci_low=d.ci_low, ci_high=d.ci_high, n_degenerate=d.n_degenerate, n=d.n,
                    n_pos=d.n_pos, n_neg=d.n_neg, delong_z=np.nan, pvalue=np.nan,
                    delong_ci_low=np.nan, delong_ci_high=np.nan, pvalue_adj=np.nan,
                    significant=None, verdict=verdict(d.ci_low, d.ci_high, direction),
                    qualification=_join(_exposure_note(ctx, cohort, a, b),
                                        _degenerate_note(d.n_degenerate, d.n_resamples))))
        auc_rows = [r for r in diff_rows[first:] if r["criterion"] == "roc_auc_difference"]
        if auc_rows:
            adj = adjust_pvalues([r["pvalue"] for r in auc_rows], method="holm", alpha=alpha,
                                 family=family)
            for r, pa in zip(auc_rows, adj.pvalues_adjusted, strict=True):
                r["pvalue_adj"] = float(pa)
                r["significant"] = bool(pa < alpha) if np.isfinite(pa) else None
    notes = ([] if probabilities else [
        "score_scale is 'logits': Brier, ECE and AURC need probabilities and are not reported."]) + [
        f"Intervals: percentile, level {level}, B = {B}; one paired bootstrap per cohort shared by "
        "all models (design per cohort in column `design`).",
        "average_precision ranks tied scores individually (stable descending order).",
        "Model differences are A - B with A < B alphabetically; verdict from the bootstrap "
        "interval (better = higher AUROC, lower Brier). DeLong p-values are Holm-adjusted over "
        "the model pairs within each cohort (family column); intervals are descriptive.",
    ]
    if soft_cohorts:
        notes.append(f"Soft labels (label_soft) in {', '.join(soft_cohorts)}: soft_roc_auc (inclusive "
                     "variant) and soft_average_precision (stable tie order) with the same design "
                     "and generator as the ordinary metrics (paper 001).")
    if soft_ties:
        notes.append("Tied scores (items in tied blocks) in " + "; ".join(soft_ties) + ": the soft "
                     "metrics take them in image_id order (stable ties, M1.2), so their values "
                     "depend on that order; the label_uncertainty block offers soft_ties: grouped.")
    if n_degenerate_cells:
        notes.append(f"{n_degenerate_cells} cell(s) had degenerate bootstrap replicates; see "
                     "n_degenerate and qualification.")
    return BlockResult(name=NAME, tables={"metrics": pd.DataFrame(metric_rows),
                                          "model_differences": pd.DataFrame(diff_rows),
                                          "reliability": _reliability(ctx, prompt, models)},
                       notes=tuple(notes))


def _reliability(ctx: AuditContext, prompt: str, models: list[str]) -> pd.DataFrame:
    """Reliability-diagram data (10 equal-width bins, empty bins omitted; paper 000 Fig. 4)."""
    if ctx.spec.score_scale != "probabilities":
        return pd.DataFrame()
    rows = []
    for cohort in ctx.spec.cohorts:
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        for m in models:
            rb = reliability_diagram(w.label, w.scores[f"{m}|{prompt}"], n_bins=10)
            for i in range(rb.bin_index.size):
                rows.append(spec_row(
                    model=m, prompt=prompt, cohort=cohort, criterion="reliability[n_bins=10]",
                    design="point_estimate", seed=ctx.seed, bin=int(rb.bin_index[i]),
                    bin_low=float(rb.bin_low[i]), bin_high=float(rb.bin_high[i]),
                    count=int(rb.count[i]), mean_score=float(rb.mean_score[i]),
                    fraction_positive=float(rb.fraction_positive[i]),
                    qualification=_exposure_note(ctx, cohort, m)))
    return pd.DataFrame(rows)
