"""Retained-target comparisons and optimisation-seed summaries (paper 000 Tables 18 and 20).

Two tables:

``comparisons``
    One row per ``retained`` spec entry x cohort: score set ``a`` (e.g. the original
    ensemble) against score set ``b`` (e.g. the ensemble retrained after overlap
    exclusion) on IDENTICAL targets, the images both score.  Images only one side
    has are dropped and counted (``n_only_a``, ``n_only_b``); ``n_retained`` is the
    size of the intersection.  ``estimate = AUROC(b) - AUROC(a)`` (``model = "b - a"``,
    ``model_a``/``model_b`` are the spec's ``a``/``b``) with a paired within-label
    bootstrap interval (B-WL-PAIRED, conditional on both fitted score sets) and the
    paired DeLong test.  When both models carry per-seed scores, the seed-paired
    change summary (mean and SD over common seeds) is added in ``seed_delta_*``.

``seeds``
    When the input had a ``seed`` column (``ctx.seed_scores``; ``ctx.scores`` then
    holds the mean-probability seed ensemble): per model x cohort at the primary
    prompt, rows of ``kind``

    * ``"seed"`` -- AUROC of each optimisation seed (``model_seed``) with the paired
      DeLong test of that seed against the ensemble (``difference_vs_ensemble``,
      ``z``, ``pvalue``);
    * ``"seed_summary"`` -- mean and SD of the seed AUROCs (``sd_ddof = 1``);
    * ``"ensemble"`` -- the ensemble AUROC with its DeLong interval;

    and, for ``retained`` entries whose two models both have seeds, rows with
    ``criterion = "roc_auc_difference"``: per common seed ``AUROC_b(s) - AUROC_a(s)``
    on the retained targets (``kind = "seed"``) and their mean and SD
    (``kind = "seed_summary"``) -- Table 20's "seed delta mean +/- SD".

The column ``seed`` is the analysis (run) seed, as in every block; the optimisation
seed of a model is ``model_seed``.  The seed SD describes optimisation variability;
it is not a confidence interval.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from medaudit.blocks._base import AuditContext, BlockResult, cell_rng, spec_row
from medaudit.exceptions import SchemaError
from medaudit.io.spec import RetainedSpec
from medaudit.stats import delong_ci, delong_test, paired_bootstrap, roc_auc

__all__ = ["NAME", "run"]

NAME = "retained"
SD_DDOF = 1
_MIN_SEEDS = 2  # a model "has seeds" when it has at least this many distinct seeds


def _first(ids, k: int = 5) -> str:
    ids = list(ids)
    return f"{ids[:k]}{' ...' if len(ids) > k else ''}"


def _sd(values: list[float]) -> float:
    """Sample SD (ddof=1); nan for fewer than two values."""
    return float(np.std(values, ddof=SD_DDOF)) if len(values) > SD_DDOF else math.nan


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _exposure(ctx: AuditContext, cohort: str, *models: str) -> str:
    return _join(*(f"{m}: {ctx.exposure(m, cohort)}" for m in models if ctx.exposure(m, cohort)))


def _cohorts(ctx: AuditContext, names: list[str], where: str) -> list[str]:
    unknown = [c for c in names if c not in ctx.spec.cohorts]
    if unknown:
        raise SchemaError(f"{where} names cohort(s) {unknown} that the spec does not declare; "
                          f"declared: {list(ctx.spec.cohorts)}.")
    return [c for c in ctx.spec.cohorts if c in set(names)]


def _series(table: pd.DataFrame, cohort: str, model: str, prompt: str, what: str) -> pd.DataFrame:
    g = table[(table["cohort"] == cohort) & (table["model"] == model) & (table["prompt"] == prompt)]
    if g.empty:
        raise SchemaError(f"{what}: cohort {cohort!r} has no scores for model {model!r}, "
                          f"prompt {prompt!r}.")
    return g.set_index("image_id")


def _need_both_classes(y: np.ndarray, what: str) -> None:
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.size:
        only = "positives" if n_pos else "negatives"
        raise SchemaError(f"{what}: all {y.size} image(s) are {only}; an AUROC needs positives "
                          "and negatives.")


# ----------------------------------------------------------------------------- comparisons
def _retained_targets(ctx: AuditContext, entry: RetainedSpec, cohort: str, prompt: str):
    """Images both score sets have (sorted), their labels and the two aligned score vectors."""
    a, b = entry.a, entry.b
    what = f"retained comparison {b!r} - {a!r} on cohort {cohort!r}, prompt {prompt!r}"
    ga = _series(ctx.scores, cohort, a, prompt, what)
    gb = _series(ctx.scores, cohort, b, prompt, what)
    ia, ib = set(ga.index), set(gb.index)
    ids = sorted(ia & ib)
    only_a, only_b = sorted(ia - ib), sorted(ib - ia)
    if not ids:
        raise SchemaError(f"{what}: the two score sets share no image ({a!r} has {len(ia)}, e.g. "
                          f"{_first(sorted(ia))}; {b!r} has {len(ib)}, e.g. {_first(sorted(ib))}); "
                          "retained targets are the images both score.")
    y = ga.loc[ids, "label"].to_numpy(dtype=np.float64)
    _need_both_classes(y, f"{what}: the {len(ids)} shared (retained) image(s)")
    sa = ga.loc[ids, "score"].to_numpy(dtype=np.float64)
    sb = gb.loc[ids, "score"].to_numpy(dtype=np.float64)
    return ids, y, sa, sb, only_a, only_b


def _comparison_cell(cell: dict[str, Any]) -> tuple[Any, Any]:
    """B-WL-PAIRED bootstrap and paired DeLong test of b - a (an independent cell).

    Module level so that a backend can ship it to a worker; draws only from
    ``cell_rng(seed, *key)``.
    """
    y, sa, sb, level = cell["label"], cell["a"], cell["b"], cell["confidence_level"]
    boot = paired_bootstrap(y, {"a": sa, "b": sb}, metrics=["roc_auc"], contrasts=[("b", "a")],
                            design="within_label", n_resamples=cell["n_resamples"],
                            confidence_level=level, rng=cell_rng(cell["seed"], *cell["key"]))
    return boot, delong_test(y, sb, sa, confidence_level=level)


def _comparison_job(ctx: AuditContext, entry: RetainedSpec, cohort: str, prompt: str
                    ) -> tuple[tuple, dict[str, Any]]:
    """The retained targets of one entry x cohort and the cell that compares them."""
    ids, y, sa, sb, only_a, only_b = _retained_targets(ctx, entry, cohort, prompt)
    cell = {"label": y, "a": sa, "b": sb, "n_resamples": ctx.spec.n_resamples,
            "confidence_level": ctx.spec.confidence_level, "seed": ctx.seed,
            "key": (NAME, "comparisons", cohort, entry.a, entry.b, prompt)}
    return (ids, y, only_a, only_b), cell


def _comparison_row(ctx: AuditContext, entry: RetainedSpec, cohort: str, prompt: str,
                    targets: tuple, result: tuple[Any, Any],
                    seed_delta: tuple[float, float, int] | None) -> dict[str, Any]:
    a, b = entry.a, entry.b
    ids, y, only_a, only_b = targets
    boot, dl = result
    d = boot.differences[("b", "a", "roc_auc")]
    qual = _join(_exposure(ctx, cohort, a, b),
                 f"{d.n_degenerate} degenerate bootstrap replicate(s)" if d.n_degenerate else "")
    mean, sd, n_seeds = seed_delta if seed_delta is not None else (math.nan, math.nan, 0)
    return spec_row(
        model=f"{b} - {a}", prompt=prompt, cohort=cohort, criterion="roc_auc_difference",
        design=d.design, n_resamples=d.n_resamples, seed=ctx.seed, family=None,
        model_a=a, model_b=b,
        auroc_a=boot.marginal[("a", "roc_auc")].estimate,
        auroc_b=boot.marginal[("b", "roc_auc")].estimate,
        estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high, n_degenerate=d.n_degenerate,
        n=len(ids), n_pos=int(y.sum()), n_neg=int(y.size - y.sum()),
        n_retained=len(ids), n_only_a=len(only_a), n_only_b=len(only_b),
        delong_ci_low=dl.ci_low, delong_ci_high=dl.ci_high, z=dl.statistic, pvalue=dl.pvalue,
        seed_delta_mean=mean, seed_delta_sd=sd, seed_delta_n_seeds=n_seeds,
        qualification=qual)


# ----------------------------------------------------------------------------- seeds
def _seed_matrix(ctx: AuditContext, model: str, cohort: str, prompt: str) -> pd.DataFrame:
    """image_id x seed scores of one model; every image must have every seed and the ensemble."""
    assert ctx.seed_scores is not None
    what = f"per-seed scores of model {model!r} on cohort {cohort!r}, prompt {prompt!r}"
    g = ctx.seed_scores[(ctx.seed_scores["cohort"] == cohort) & (ctx.seed_scores["model"] == model)
                        & (ctx.seed_scores["prompt"] == prompt)]
    dup = g.duplicated(["image_id", "seed"], keep=False)
    if dup.any():
        raise SchemaError(f"{what}: {int(dup.sum())} rows repeat an (image_id, seed) pair, e.g. "
                          f"{_first(sorted(set(g.loc[dup, 'image_id'])))}; keep one row per pair.")
    wide = g.pivot(index="image_id", columns="seed", values="score").sort_index()
    wide = wide[sorted(wide.columns)]
    problems = [f"  - seed {s} lacks {int(wide[s].isna().sum())} image(s): "
                f"{_first(wide.index[wide[s].isna()].tolist())}"
                for s in wide.columns if wide[s].isna().any()]
    if problems:
        raise SchemaError(f"{what}: every seed must score every image (paired seed analyses refuse "
                          "mismatched image sets); mismatches:\n" + "\n".join(problems))
    ens = _series(ctx.scores, cohort, model, prompt, f"seed ensemble of {what}")
    missing_ens = sorted(set(wide.index) - set(ens.index))
    missing_seed = sorted(set(ens.index) - set(wide.index))
    if missing_ens or missing_seed:
        raise SchemaError(f"{what}: the seed ensemble and the per-seed scores cover different "
                          f"images; ensemble lacks {len(missing_ens)}: {_first(missing_ens)}; "
                          f"seeds lack {len(missing_seed)}: {_first(missing_seed)}.")
    return wide


def _seeded(ctx: AuditContext, prompt: str) -> dict[tuple[str, str], int]:
    """(model, cohort) -> number of distinct seeds, at ``prompt``, for declared cohorts."""
    assert ctx.seed_scores is not None
    t = ctx.seed_scores[(ctx.seed_scores["prompt"] == prompt)
                        & ctx.seed_scores["cohort"].isin(list(ctx.spec.cohorts))]
    return {k: int(v) for k, v in t.groupby(["model", "cohort"])["seed"].nunique().items()}


def _seed_cell(cell: dict[str, Any]) -> tuple[list, Any]:
    """Each seed against the ensemble (paired DeLong) and the ensemble's DeLong interval."""
    y, s_ens, level = cell["label"], cell["ensemble"], cell["confidence_level"]
    tests = [delong_test(y, s, s_ens, confidence_level=level) for s in cell["seeds"]]
    return tests, delong_ci(y, s_ens, confidence_level=level)


def _seed_job(ctx: AuditContext, model: str, cohort: str, prompt: str) -> dict[str, Any]:
    """The aligned per-seed and ensemble scores of one model x cohort (checked)."""
    wide = _seed_matrix(ctx, model, cohort, prompt)
    ens = ctx.scores[(ctx.scores["cohort"] == cohort) & (ctx.scores["model"] == model)
                     & (ctx.scores["prompt"] == prompt)].set_index("image_id").loc[wide.index]
    y = ens["label"].to_numpy(dtype=np.float64)
    _need_both_classes(y, f"seeds of model {model!r} on cohort {cohort!r}, prompt {prompt!r}")
    return {"label": y, "ensemble": ens["score"].to_numpy(dtype=np.float64),
            "model_seeds": [int(s) for s in wide.columns],
            "seeds": [wide[s].to_numpy(dtype=np.float64) for s in wide.columns],
            "confidence_level": ctx.spec.confidence_level}


def _model_seed_rows(ctx: AuditContext, model: str, cohort: str, prompt: str,
                     cell: dict[str, Any], result: tuple[list, Any]) -> list[dict]:
    y = cell["label"]
    n, n_pos = int(y.size), int(y.sum())
    counts = dict(n=n, n_pos=n_pos, n_neg=n - n_pos)
    expo = ctx.exposure(model, cohort)
    common = dict(model=model, prompt=prompt, cohort=cohort, seed=ctx.seed, family=None)
    tests, ci = result
    rows, aucs = [], []
    for s, dl in zip(cell["model_seeds"], tests, strict=True):
        aucs.append(dl.auc_a)
        rows.append(spec_row(**common, criterion="roc_auc", design="delong+paired",
                             kind="seed", model_seed=s, estimate=dl.auc_a, **counts,
                             difference_vs_ensemble=dl.estimate, z=dl.statistic,
                             pvalue=dl.pvalue, qualification=expo))
    rows.append(spec_row(**common, criterion="roc_auc", design=None, kind="seed_summary",
                         model_seed=None, estimate=float(np.mean(aucs)), sd=_sd(aucs),
                         sd_ddof=SD_DDOF, n_seeds=len(aucs), **counts,
                         qualification=_join(expo, "SD over seeds describes optimisation "
                                                   "variability, not a confidence interval")))
    rows.append(spec_row(**common, criterion="roc_auc", design="delong", kind="ensemble",
                         model_seed=None, estimate=ci.estimate, ci_low=ci.ci_low,
                         ci_high=ci.ci_high, n_seeds=len(aucs), **counts, qualification=expo))
    return rows


def _seed_delta_rows(ctx: AuditContext, entry: RetainedSpec, cohort: str, prompt: str
                     ) -> tuple[list[dict], tuple[float, float, int] | None, str]:
    """Seed-paired AUROC_b(s) - AUROC_a(s) on the retained targets, and their mean/SD."""
    a, b = entry.a, entry.b
    ids, y, _, _, _, _ = _retained_targets(ctx, entry, cohort, prompt)
    wa = _seed_matrix(ctx, a, cohort, prompt).loc[ids]
    wb = _seed_matrix(ctx, b, cohort, prompt).loc[ids]
    seeds = sorted(set(wa.columns) & set(wb.columns))
    if not seeds:
        return [], None, (f"retained {b!r} - {a!r} on {cohort!r}: no optimisation seed in common "
                          f"({a!r} has {sorted(wa.columns)}, {b!r} has {sorted(wb.columns)}); "
                          "no seed-paired changes.")
    n, n_pos = len(ids), int(y.sum())
    common = dict(model=f"{b} - {a}", prompt=prompt, cohort=cohort, criterion="roc_auc_difference",
                  seed=ctx.seed, family=None, model_a=a, model_b=b, n=n, n_pos=n_pos,
                  n_neg=n - n_pos, n_retained=n)
    expo = _exposure(ctx, cohort, a, b)
    rows, deltas = [], []
    for s in seeds:
        auc_a = roc_auc(y, wa[s].to_numpy(dtype=np.float64))
        auc_b = roc_auc(y, wb[s].to_numpy(dtype=np.float64))
        deltas.append(auc_b - auc_a)
        rows.append(spec_row(**common, design=None, kind="seed", model_seed=int(s),
                             auroc_a=auc_a, auroc_b=auc_b, estimate=auc_b - auc_a,
                             qualification=expo))
    mean, sd = float(np.mean(deltas)), _sd(deltas)
    rows.append(spec_row(**common, design=None, kind="seed_summary", model_seed=None,
                         estimate=mean, sd=sd, sd_ddof=SD_DDOF, n_seeds=len(deltas),
                         qualification=_join(
                             expo, "seed-paired changes; SD describes optimisation variability",
                             "one common seed: SD undefined" if len(deltas) < 2 else "")))
    return rows, (mean, sd, len(deltas)), ""


# ----------------------------------------------------------------------------- block
def run(ctx: AuditContext) -> BlockResult:
    """Retained-target comparisons (``comparisons``) and per-seed summaries (``seeds``)."""
    notes: list[str] = []
    primary = ctx.spec.primary_prompt
    has_seeds = ctx.seed_scores is not None
    if not ctx.spec.retained and not has_seeds:
        return BlockResult(name=NAME, tables={"comparisons": pd.DataFrame(),
                                              "seeds": pd.DataFrame()},
                           notes=("retained: the spec has no `retained` entries and the score "
                                  "table has no `seed` column; nothing to report.",))

    entries = [(e, e.prompt or primary,
                _cohorts(ctx, e.cohorts, f"retained entry {e.b!r} - {e.a!r}"))
               for e in ctx.spec.retained]
    for e, _, _ in entries:
        if e.a == e.b:
            raise SchemaError(f"retained entry compares model {e.a!r} with itself; `a` and `b` "
                              "must name two score sets.")

    seed_rows_by_cohort: dict[str, list[dict]] = {c: [] for c in ctx.spec.cohorts}
    seed_delta: dict[tuple[int, str], tuple[float, float, int]] = {}
    if has_seeds:
        n_seeds = _seeded(ctx, primary)
        single = sorted({m for (m, _), k in n_seeds.items() if k < _MIN_SEEDS})
        if single:
            notes.append(f"seeds: model(s) {single} have a single seed on some cohort at prompt "
                         f"{primary!r}; no seed summary for those cells.")
        elsewhere = sorted(set(ctx.seed_scores["model"]) - {m for m, _ in n_seeds})
        if elsewhere:
            notes.append(f"seeds: model(s) {elsewhere} have no per-seed scores at the primary "
                         f"prompt {primary!r} on a declared cohort; no seed summary for them.")
        where = [(cohort, model) for cohort in ctx.spec.cohorts
                 for model in sorted(m for (m, c), k in n_seeds.items()
                                     if c == cohort and k >= _MIN_SEEDS)]
        cells = [_seed_job(ctx, model, cohort, primary) for cohort, model in where]
        for (cohort, model), cell, res in zip(where, cells, ctx.map(_seed_cell, cells), strict=True):
            seed_rows_by_cohort[cohort] += _model_seed_rows(ctx, model, cohort, primary, cell, res)
        for i, (e, prompt, cohorts) in enumerate(entries):
            k_seeds = _seeded(ctx, prompt) if prompt != primary else n_seeds
            for cohort in cohorts:
                if min(k_seeds.get((e.a, cohort), 0), k_seeds.get((e.b, cohort), 0)) < _MIN_SEEDS:
                    continue
                rows, summary, note = _seed_delta_rows(ctx, e, cohort, prompt)
                seed_rows_by_cohort[cohort] += rows
                if summary is not None:
                    seed_delta[(i, cohort)] = summary
                if note:
                    notes.append(note)

    where = [(i, e, prompt, cohort) for cohort in ctx.spec.cohorts
             for i, (e, prompt, cohorts) in enumerate(entries) if cohort in cohorts]
    jobs = [_comparison_job(ctx, e, cohort, prompt) for _, e, prompt, cohort in where]
    results = ctx.map(_comparison_cell, [cell for _, cell in jobs])
    comp_rows = [_comparison_row(ctx, e, cohort, prompt, targets, res, seed_delta.get((i, cohort)))
                 for (i, e, prompt, cohort), (targets, _), res in zip(where, jobs, results, strict=True)]
    comparisons = pd.DataFrame(comp_rows)
    seeds = pd.DataFrame([r for c in ctx.spec.cohorts for r in seed_rows_by_cohort[c]])
    if not seeds.empty:
        seeds["model_seed"] = seeds["model_seed"].astype("Int64")
    if comp_rows:
        notes.append("comparisons: AUROC(b) - AUROC(a) on the images both score sets have "
                     "(n_only_a / n_only_b images dropped); interval from a paired within-label "
                     "bootstrap conditional on both fitted score sets (B-WL-PAIRED); p from the "
                     "paired DeLong test (descriptive, no multiplicity family).")
    elif ctx.spec.retained == []:
        notes.append("comparisons: the spec has no `retained` entries.")
    if has_seeds and not seeds.empty:
        notes.append(f"seeds: per-seed AUROC, mean and SD (ddof={SD_DDOF}) over seeds, and the "
                     "mean-probability seed ensemble with its DeLong interval at prompt "
                     f"{primary!r}; each seed is tested against the ensemble with the paired "
                     "DeLong test. Column `model_seed` is the optimisation seed; `seed` is the "
                     "analysis seed.")
    elif not has_seeds:
        notes.append("seeds: the score table has no `seed` column; no per-seed table.")
    return BlockResult(name=NAME, tables={"comparisons": comparisons, "seeds": seeds},
                       notes=tuple(notes))
