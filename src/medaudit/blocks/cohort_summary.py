"""A one-cohort audit: per-model metrics with intervals, paired comparisons, control spectrum.

This is the foundation's end-to-end path (the full paper-000 blocks build on the
same pieces).  Every row carries its evaluation specification
E = (m, p, C, N, pi, tau, r) plus the resampling design, B, seed and, for tests,
the multiplicity family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from medaudit.blocks._base import cell_rng
from medaudit.exceptions import SchemaError
from medaudit.io.schema import SCORE_COLUMNS, validate_score_table
from medaudit.stats import (
    adjust_pvalues,
    delong_test,
    negative_group_permutation_test,
    paired_bootstrap,
    shared_positive_bootstrap,
)

__all__ = ["CohortSummary", "summarize_cohorts", "REQUIRED_COLUMNS"]

REQUIRED_COLUMNS = SCORE_COLUMNS  # one definition, in io.schema
METRICS = (
    "roc_auc",
    "average_precision",
    "brier_score",
    ("ece", {"n_bins": 15}),
    "aurc",
    ("selective_risk", {"coverage": 0.8}),
    ("selective_risk", {"coverage": 0.9}),
)


@dataclass(frozen=True)
class CohortSummary:
    """Tidy result tables of :func:`summarize_cohorts`."""

    metrics: pd.DataFrame
    comparisons: pd.DataFrame
    spectrum: pd.DataFrame


def _validate(table: pd.DataFrame) -> pd.DataFrame:
    # the one ScoreTable check (io.schema), keyed without the seed: one row per image here
    return validate_score_table(table, source="score table")


def _wide(group: pd.DataFrame, cohort: str, prompt: str) -> pd.DataFrame:
    wide = group.pivot(index="image_id", columns="model", values="score")
    if wide.isna().any().any():
        missing = {m: wide.index[wide[m].isna()].tolist()[:5] for m in wide.columns
                   if wide[m].isna().any()}
        raise SchemaError(f"paired analysis needs every model scored on the same images in cohort "
                          f"{cohort!r}, prompt {prompt!r}; missing (first 5 per model): {missing}.")
    return wide.sort_index()


def _spec(model, prompt, cohort, negatives, criterion, **extra) -> dict[str, Any]:
    return {"model": model, "prompt": prompt, "cohort": cohort, "negatives": negatives,
            "prevalence": "observed", "threshold": None, "criterion": criterion, **extra}


def summarize_cohorts(
    table: pd.DataFrame, *, n_resamples: int = 2000, n_permutations: int = 10_000,
    confidence_level: float = 0.95, seed: int = 2026,
) -> CohortSummary:
    """Audit every (cohort, prompt) of a long score table.

    Parameters
    ----------
    table : DataFrame
        Long score table (columns ``image_id, cohort, model, prompt, score, label``
        and optionally ``negative_group``).
    n_resamples : int, default=2000
        Bootstrap replicates (ordinary image bootstrap, paired across models).
    n_permutations : int, default=10000
        Permutations of negative-group membership.
    confidence_level : float, default=0.95
    seed : int, default=2026
        Run seed; every cell (cohort, prompt, analysis, model) gets a generator from
        the seed and its hashed key (:func:`~medaudit.blocks._base.cell_rng`), so a
        cell's result does not depend on which other cohorts or models are present.

    Returns
    -------
    CohortSummary
    """
    t = _validate(table)
    rows, comps, spec_rows = [], [], []
    keys = sorted(t.groupby(["cohort", "prompt"]).groups)
    for cohort, prompt in keys:
        g = t[(t["cohort"] == cohort) & (t["prompt"] == prompt)]
        wide = _wide(g, cohort, prompt)
        meta = g.drop_duplicates("image_id").set_index("image_id").loc[wide.index]
        y = meta["label"].to_numpy(dtype=float)
        models = list(wide.columns)
        res = paired_bootstrap(y, {m: wide[m].to_numpy() for m in models}, metrics=METRICS,
                               n_resamples=n_resamples, confidence_level=confidence_level,
                               rng=cell_rng(seed, "summary", cohort, prompt, "bootstrap"))
        for (m, mid), r in res.marginal.items():
            rows.append({**_spec(m, prompt, cohort, "all", mid), "estimate": r.estimate,
                         "ci_low": r.ci_low, "ci_high": r.ci_high, "design": r.design,
                         "n_resamples": r.n_resamples, "n_degenerate": r.n_degenerate,
                         "seed": seed, "seed_key": f"summary|{cohort}|{prompt}|bootstrap",
                         "n": r.n, "n_pos": r.n_pos, "n_neg": r.n_neg})
        pvals = []
        for i, a in enumerate(models):
            for b in models[i + 1:]:
                dl = delong_test(y, wide[a].to_numpy(), wide[b].to_numpy(),
                                 confidence_level=confidence_level)
                boot = res.differences[(a, b, "roc_auc")]
                pvals.append(dl.pvalue)
                comps.append({**_spec(f"{a} - {b}", prompt, cohort, "all", "roc_auc_difference"),
                              "estimate": dl.estimate, "delong_ci_low": dl.ci_low,
                              "delong_ci_high": dl.ci_high, "z": dl.statistic,
                              "pvalue": dl.pvalue, "boot_ci_low": boot.ci_low,
                              "boot_ci_high": boot.ci_high, "design": boot.design,
                              "n_resamples": n_resamples, "seed": seed,
                              "family": f"pairwise-models|{cohort}|{prompt}"})
        if pvals:
            adj = adjust_pvalues(pvals, method="holm").pvalues_adjusted
            for row, pa in zip(comps[len(comps) - len(pvals):], adj, strict=True):
                row["pvalue_holm"] = float(pa)
        groups = sorted(set(meta.get("negative_group", pd.Series(dtype=str))) - {""})
        if len(groups) == 2:
            spec_rows += _spectrum(wide, meta, models, groups, cohort, prompt,
                                   n_resamples, n_permutations, confidence_level, seed)
    metrics = pd.DataFrame(rows)
    comparisons = pd.DataFrame(comps)
    spectrum = pd.DataFrame(spec_rows)
    if not spectrum.empty:
        spectrum["pvalue_holm"] = adjust_pvalues(spectrum["perm_pvalue"].to_numpy(),
                                                 method="holm").pvalues_adjusted
        spectrum["family"] = "negative-spectrum|all strata"
    return CohortSummary(metrics=metrics, comparisons=comparisons, spectrum=spectrum)


def _spectrum(wide, meta, models, groups, cohort, prompt, n_resamples, n_permutations, level,
              seed):
    out = []
    pos = meta["label"].to_numpy() == 1
    ga, gb = groups
    in_a = (meta["negative_group"] == ga).to_numpy()
    in_b = (meta["negative_group"] == gb).to_numpy()
    for m in models:
        s = wide[m].to_numpy()
        perm = negative_group_permutation_test(s[pos], s[in_a], s[in_b], n_resamples=n_permutations,
                                               rng=cell_rng(seed, "summary", cohort, prompt,
                                                            "permutation", m))
        sp = shared_positive_bootstrap(s[pos], {ga: s[in_a], gb: s[in_b]}, metrics=["roc_auc"],
                                       n_resamples=n_resamples, confidence_level=level,
                                       rng=cell_rng(seed, "summary", cohort, prompt,
                                                    "shared_positive", m))
        d = sp.differences[(ga, gb, "roc_auc")]
        out.append({**_spec(m, prompt, cohort, f"{ga} vs {gb}", "roc_auc_difference"),
                    "group_a": ga, "group_b": gb,
                    "auroc_a": sp.marginal[(ga, "roc_auc")].estimate,
                    "auroc_b": sp.marginal[(gb, "roc_auc")].estimate,
                    "estimate": d.estimate, "ci_low": d.ci_low, "ci_high": d.ci_high,
                    "design": d.design, "n_resamples": n_resamples,
                    "perm_pvalue": perm.pvalue, "n_permutations": n_permutations, "seed": seed})
    return out
