"""Retained-target comparisons and optimisation-seed summaries (paper 000 Tables 18-20).

Four tables:

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

``composition`` (M0.13 comparison (i), the target-composition effect)
    One row per entry x cohort: score set ``a`` alone on its FULL targets (every image
    ``a`` scores) and on the retained targets (the images ``b`` also scores):
    ``auroc_all``, ``auroc_retained`` and ``estimate = AUROC(a, retained) - AUROC(a,
    all)`` with percentile intervals from one nested bootstrap (``design`` below).
    ``a`` is compared with itself on two target sets, so this never aligns ``a`` with
    ``b``'s scores; ``b`` only defines which images are retained (``targets_from``).

``exclusion`` (Table 19)
    Per entry x cohort, counts from the score table: ``n_original`` (images ``a``
    scores), ``n_excluded`` (of those, images ``b`` lacks), ``n_retained``,
    ``n_pos_retained``, ``n_neg_retained`` (``source = "scores"``); then the counts
    that only the training run knows (the source cohort and its optimisation/selection
    roles), read from the ``training`` entries ``exclusion[<cohort>]`` of ``b``'s model
    card (``source = "model card"``; written by ``medaudit train supervised``, see
    :func:`exclusion_card_entries`).  A card entry for a scored cohort is checked against
    the score-table counts; a disagreement is stated in ``qualification``.

Soft labels (paper 001; issue 4 item 2).  When the score table has ``label_soft``, a
``soft_roc_auc_difference`` row follows each comparison: the soft twin of its paired
within-label bootstrap (same key, strata the hard labels, so the very same resampled
images; no DeLong test, which has no soft form), with the soft seed-delta summary; and
``seeds`` gets ``soft_roc_auc`` rows (per seed, summary, ensemble: point estimates with
``design = "point_estimate"``) and ``soft_roc_auc_difference`` seed-delta rows.  The
composition table stays hard-label: its nested interval rests on a masking trick that
needs 0/1 labels.

The column ``seed`` is the analysis (run) seed, as in every block; the optimisation
seed of a model is ``model_seed``.  The seed SD describes optimisation variability;
it is not a confidence interval.

Design of the composition interval (``within_label[label x retained]+nested``): the
retained targets are a subset of the full targets, so the two AUROCs share most of
their images and must be resampled together.  Each replicate draws the images once,
within the four strata label x retained/excluded, and computes AUROC(a, all) on every
drawn image and AUROC(a, retained) on the drawn retained ones.  Stratifying by
retention keeps both target sets' class counts fixed in every replicate: the exclusion
list is a fixed output of the overlap screen, not sampling noise, just as B-WL treats
the class sizes as fixed.  Conditional on the fitted score set ``a``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from medaudit.blocks._exclusion import COUNT_FIELDS, exclusion_rows
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.cells import BootstrapCell, DeLongCell, run_cells, run_delong_cells
from medaudit.blocks.context import AuditContext, Resampling, cell_rng
from medaudit.blocks.notes import exposure_note, join
from medaudit.blocks.rows import spec_row
from medaudit.exceptions import SchemaError
from medaudit.stats import delong_ci, delong_test, paired_bootstrap, roc_auc, soft_roc_auc
from medaudit.stats.bootstrap import percentile_interval

__all__ = ["Retained", "RetainedEntry", "COUNT_FIELDS"]

NAME = "retained"
SOFT = "soft_roc_auc"  # the soft AUROC reported beside each AUROC when label_soft is present
SD_DDOF = 1
_MIN_SEEDS = 2  # a model "has seeds" when it has at least this many distinct seeds
COMPOSITION_DESIGN = "within_label[label x retained]+nested"


class RetainedEntry(BlockConfig):
    """Compare two score sets on identical targets (e.g. ensembles before/after exclusion)."""

    a: str
    b: str
    cohorts: list[str] = Field(min_length=1)
    prompt: str | None = None


def _first(ids, k: int = 5) -> str:
    ids = list(ids)
    return f"{ids[:k]}{' ...' if len(ids) > k else ''}"


def _sd(values: list[float]) -> float:
    """Sample SD (ddof=1); nan for fewer than two values."""
    return float(np.std(values, ddof=SD_DDOF)) if len(values) > SD_DDOF else math.nan


def _exposure(ctx: AuditContext, cohort: str, *models: str) -> str:
    return exposure_note(ctx, models, cohort, label="{model}: ")


def _cohorts(ctx: AuditContext, names: list[str], where: str) -> list[str]:
    unknown = [c for c in names if c not in ctx.cohorts]
    if unknown:
        raise SchemaError(f"{where} names cohort(s) {unknown} that the spec does not declare; "
                          f"declared: {ctx.cohorts}.")
    return [c for c in ctx.cohorts if c in set(names)]


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
def _retained_targets(ctx: AuditContext, entry: RetainedEntry, cohort: str, prompt: str):
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
    return ids, y, sa, sb, only_a, only_b, _soft_labels(ga, gb, ids, what)


def _soft_labels(ga: pd.DataFrame, gb: pd.DataFrame, ids: list, what: str) -> np.ndarray | None:
    """label_soft of the retained targets (None without the column).  a and b agree: the score
    table's validation refuses an image whose rows carry different soft labels."""
    if "label_soft" not in ga.columns:
        return None
    return ga.loc[ids, "label_soft"].to_numpy(dtype=np.float64)


def _comparison_cells(ctx: AuditContext, entry: RetainedEntry, cohort: str, prompt: str
                      ) -> tuple[tuple, BootstrapCell, DeLongCell]:
    """The retained targets of one entry x cohort and the cells that compare b - a on them:
    a B-WL-PAIRED bootstrap (with its soft twin when the targets have ``label_soft``) and
    the paired DeLong test."""
    ids, y, sa, sb, only_a, only_b, p = _retained_targets(ctx, entry, cohort, prompt)
    scores = {"a": sa, "b": sb}
    boot = BootstrapCell(key=(NAME, "comparisons", cohort, entry.a, entry.b, prompt), label=y,
                         scores=scores, metrics=("roc_auc",), design="within_label",
                         contrasts=(("b", "a"),), label_soft=p, soft_metrics=(SOFT,))
    return (ids, y, only_a, only_b), boot, DeLongCell(y, scores, (("b", "a"),))


def _comparison_row(ctx: AuditContext, entry: RetainedEntry, cohort: str, prompt: str,
                    targets: tuple, result: tuple[Any, Any],
                    seed_delta: tuple[float, float, int] | None, mid: str = "roc_auc"
                    ) -> dict[str, Any]:
    """The row of ``b - a``; ``mid = SOFT`` for the soft twin (``result``'s DeLong is None)."""
    a, b = entry.a, entry.b
    ids, y, only_a, only_b = targets
    boot, dl = result
    d = boot.differences[("b", "a", mid)]
    nan = math.nan
    qual = join(_exposure(ctx, cohort, a, b),
                 f"{d.n_degenerate} degenerate bootstrap replicate(s)" if d.n_degenerate else "")
    mean, sd, n_seeds = seed_delta if seed_delta is not None else (math.nan, math.nan, 0)
    return spec_row(
        model=f"{b} - {a}", prompt=prompt, cohort=cohort, criterion=f"{mid}_difference",
        design=d.design, n_resamples=d.n_resamples, family=None,
        model_a=a, model_b=b,
        auroc_a=boot.marginal[("a", mid)].estimate,
        auroc_b=boot.marginal[("b", mid)].estimate,
        estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high, n_degenerate=d.n_degenerate,
        n=len(ids), n_pos=int(y.sum()), n_neg=int(y.size - y.sum()),
        n_retained=len(ids), n_only_a=len(only_a), n_only_b=len(only_b),
        **({"delong_ci_low": dl.ci_low, "delong_ci_high": dl.ci_high, "z": dl.statistic,
            "pvalue": dl.pvalue} if dl is not None else
           {"delong_ci_low": nan, "delong_ci_high": nan, "z": nan, "pvalue": nan}),
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
                        & ctx.seed_scores["cohort"].isin(ctx.cohorts)]
    return {k: int(v) for k, v in t.groupby(["model", "cohort"])["seed"].nunique().items()}


@dataclasses.dataclass(frozen=True, eq=False)
class SeedCell:
    """One model x cohort: every optimisation seed and the seed ensemble on the same images."""

    label: np.ndarray
    ensemble: np.ndarray
    label_soft: np.ndarray | None
    model_seeds: tuple[int, ...]
    seeds: tuple[np.ndarray, ...]


def run_seed(cell: SeedCell, resampling: Resampling) -> tuple[list, Any]:
    """Each seed against the ensemble (paired DeLong) and the ensemble's DeLong interval."""
    y, s_ens, level = cell.label, cell.ensemble, resampling.confidence_level
    tests = [delong_test(y, s, s_ens, confidence_level=level) for s in cell.seeds]
    return tests, delong_ci(y, s_ens, confidence_level=level)


def _seed_job(ctx: AuditContext, model: str, cohort: str, prompt: str) -> SeedCell:
    """The aligned per-seed and ensemble scores of one model x cohort (checked)."""
    wide = _seed_matrix(ctx, model, cohort, prompt)
    ens = ctx.scores[(ctx.scores["cohort"] == cohort) & (ctx.scores["model"] == model)
                     & (ctx.scores["prompt"] == prompt)].set_index("image_id").loc[wide.index]
    y = ens["label"].to_numpy(dtype=np.float64)
    _need_both_classes(y, f"seeds of model {model!r} on cohort {cohort!r}, prompt {prompt!r}")
    return SeedCell(label=y, ensemble=ens["score"].to_numpy(dtype=np.float64),
                    label_soft=(ens["label_soft"].to_numpy(dtype=np.float64)
                                if "label_soft" in ens.columns else None),
                    model_seeds=tuple(int(s) for s in wide.columns),
                    seeds=tuple(wide[s].to_numpy(dtype=np.float64) for s in wide.columns))


def _model_seed_rows(ctx: AuditContext, model: str, cohort: str, prompt: str,
                     cell: SeedCell, result: tuple[list, Any]) -> list[dict]:
    y = cell.label
    n, n_pos = int(y.size), int(y.sum())
    counts = dict(n=n, n_pos=n_pos, n_neg=n - n_pos)
    expo = ctx.exposure(model, cohort)
    common = dict(model=model, prompt=prompt, cohort=cohort, family=None)
    tests, ci = result
    rows, aucs = [], []
    for s, dl in zip(cell.model_seeds, tests, strict=True):
        aucs.append(dl.auc_a)
        rows.append(spec_row(**common, criterion="roc_auc", design="delong+paired",
                             kind="seed", model_seed=s, estimate=dl.auc_a, **counts,
                             difference_vs_ensemble=dl.estimate, z=dl.statistic,
                             pvalue=dl.pvalue, qualification=expo))
    rows.append(spec_row(**common, criterion="roc_auc", design=None, kind="seed_summary",
                         model_seed=None, estimate=float(np.mean(aucs)), sd=_sd(aucs),
                         sd_ddof=SD_DDOF, n_seeds=len(aucs), **counts,
                         qualification=join(expo, "SD over seeds describes optimisation "
                                                   "variability, not a confidence interval")))
    rows.append(spec_row(**common, criterion="roc_auc", design="delong", kind="ensemble",
                         model_seed=None, estimate=ci.estimate, ci_low=ci.ci_low,
                         ci_high=ci.ci_high, n_seeds=len(aucs), **counts, qualification=expo))
    p = cell.label_soft
    if p is None:
        return rows
    # soft twins: point estimates (DeLong has no soft form), the seed SD as above
    ens = soft_roc_auc(p, cell.ensemble)
    soft = [soft_roc_auc(p, s) for s in cell.seeds]
    summary = {**rows[-2], "criterion": SOFT, "estimate": float(np.mean(soft)), "sd": _sd(soft)}
    rows += [spec_row(**common, criterion=SOFT, design="point_estimate", kind="seed",
                      model_seed=s, estimate=v, **counts, difference_vs_ensemble=v - ens,
                      z=math.nan, pvalue=math.nan, qualification=expo)
             for s, v in zip(cell.model_seeds, soft, strict=True)]
    rows.append(summary)
    rows.append(spec_row(**common, criterion=SOFT, design="point_estimate", kind="ensemble",
                         model_seed=None, estimate=ens, ci_low=math.nan, ci_high=math.nan,
                         n_seeds=len(aucs), **counts, qualification=expo))
    return rows


def _seed_delta_rows(ctx: AuditContext, entry: RetainedEntry, cohort: str, prompt: str
                     ) -> tuple[list[dict], dict[str, tuple[float, float, int]] | None, str]:
    """Seed-paired AUROC_b(s) - AUROC_a(s) on the retained targets, and their mean/SD
    (by criterion: ``roc_auc``, and ``soft_roc_auc`` when the targets have soft labels)."""
    a, b = entry.a, entry.b
    ids, y, _, _, _, _, p = _retained_targets(ctx, entry, cohort, prompt)
    wa = _seed_matrix(ctx, a, cohort, prompt).loc[ids]
    wb = _seed_matrix(ctx, b, cohort, prompt).loc[ids]
    seeds = sorted(set(wa.columns) & set(wb.columns))
    if not seeds:
        return [], None, (f"retained {b!r} - {a!r} on {cohort!r}: no optimisation seed in common "
                          f"({a!r} has {sorted(wa.columns)}, {b!r} has {sorted(wb.columns)}); "
                          "no seed-paired changes.")
    n, n_pos = len(ids), int(y.sum())
    common = dict(model=f"{b} - {a}", prompt=prompt, cohort=cohort, criterion="roc_auc_difference",
                  family=None, model_a=a, model_b=b, n=n, n_pos=n_pos,
                  n_neg=n - n_pos, n_retained=n)
    expo = _exposure(ctx, cohort, a, b)
    rows, summary = [], {}
    for mid, metric in [("roc_auc", lambda s: roc_auc(y, s))] + (
            [(SOFT, lambda s: soft_roc_auc(p, s))] if p is not None else []):
        common["criterion"] = f"{mid}_difference"
        deltas = []
        for s in seeds:
            auc_a = metric(wa[s].to_numpy(dtype=np.float64))
            auc_b = metric(wb[s].to_numpy(dtype=np.float64))
            deltas.append(auc_b - auc_a)
            rows.append(spec_row(**common, design=None, kind="seed", model_seed=int(s),
                                 auroc_a=auc_a, auroc_b=auc_b, estimate=auc_b - auc_a,
                                 qualification=expo))
        mean, sd = float(np.mean(deltas)), _sd(deltas)
        rows.append(spec_row(**common, design=None, kind="seed_summary", model_seed=None,
                             estimate=mean, sd=sd, sd_ddof=SD_DDOF, n_seeds=len(deltas),
                             qualification=join(
                                 expo, "seed-paired changes; SD describes optimisation variability",
                                 "one common seed: SD undefined" if len(deltas) < 2 else "")))
        summary[mid] = (mean, sd, len(deltas))
    return rows, summary, ""


# ----------------------------------------------------------------------------- composition
@dataclasses.dataclass(frozen=True, eq=False)
class CompositionCell:
    """Score set ``a`` on its full targets, with the flag of the retained ones."""

    key: tuple[Any, ...]
    label: np.ndarray
    score: np.ndarray
    retained: np.ndarray


def _composition_job(ctx: AuditContext, entry: RetainedEntry, cohort: str, prompt: str
                     ) -> tuple[dict[str, Any], CompositionCell]:
    """``a``'s full targets with a retained flag (images ``b`` also scores), and the cell."""
    a, b = entry.a, entry.b
    what = (f"target composition of {a!r} (retained = images {b!r} scores) on cohort "
            f"{cohort!r}, prompt {prompt!r}")
    ga = _series(ctx.scores, cohort, a, prompt, what).sort_index()
    ib = set(_series(ctx.scores, cohort, b, prompt, what).index)
    keep = ga.index.isin(list(ib))
    y = ga["label"].to_numpy(dtype=np.float64)
    _need_both_classes(y, f"{what}: the {y.size} image(s) {a!r} scores")
    if not keep.any():
        raise SchemaError(f"{what}: {b!r} scores none of the {y.size} image(s) {a!r} scores, e.g. "
                          f"{_first(ga.index)}; retained targets are the images both score.")
    _need_both_classes(y[keep], f"{what}: the {int(keep.sum())} retained image(s)")
    info = {"y": y, "keep": keep, "n_only_b": len(ib - set(ga.index))}
    return info, CompositionCell(key=(NAME, "composition", cohort, a, b, prompt), label=y,
                                 score=ga["score"].to_numpy(dtype=np.float64), retained=keep)


def run_composition(cell: CompositionCell, resampling: Resampling) -> dict[str, Any]:
    """AUROC on all and on the retained images from one nested within-label bootstrap.

    One :func:`paired_bootstrap` draw (strata label x retained) scores two vectors: the
    scores themselves (AUROC on all images) and a copy in which every excluded positive
    sits below and every excluded negative above all other scores, so that every pair
    with an excluded image is discordant and the copy's AUROC counts only retained
    pairs: ``AUROC(copy) = AUROC(retained) * n_pos_r * n_neg_r / (n_pos * n_neg)``.  The
    strata fix those counts in every replicate, so rescaling gives the retained AUROC
    of the same draw exactly (the tests recompute replicates on materialised resamples).
    """
    y, s, keep, level = cell.label, cell.score, cell.retained, resampling.confidence_level
    pos = y == 1
    masked = np.where(keep, s, np.where(pos, s.min() - 1.0, s.max() + 1.0))
    boot = paired_bootstrap(y, {"all": s, "masked": masked}, metrics=["roc_auc"], contrasts=[],
                            design="within_label", strata=keep,
                            n_resamples=resampling.n_resamples, confidence_level=level,
                            rng=cell_rng(resampling.seed, *cell.key))
    scale = (pos.sum() * (~pos).sum()) / ((pos & keep).sum() * (~pos & keep).sum())
    rep_all = boot.marginal[("all", "roc_auc")].replicates
    rep_ret = boot.marginal[("masked", "roc_auc")].replicates * scale
    out = {"auroc_all": roc_auc(y, s), "auroc_retained": roc_auc(y[keep], s[keep]),
           "n_resamples": boot.n_resamples, "rep_all": rep_all, "rep_retained": rep_ret}
    for name, reps in (("all", rep_all), ("retained", rep_ret), ("difference", rep_ret - rep_all)):
        out[f"ci_{name}"] = percentile_interval(reps, level)
        out[f"n_degenerate_{name}"] = int(np.isnan(reps).sum())
    return out


def _composition_row(ctx: AuditContext, entry: RetainedEntry, cohort: str, prompt: str,
                     info: dict[str, Any], res: dict[str, Any]) -> dict[str, Any]:
    a, b = entry.a, entry.b
    y, keep = info["y"], info["keep"]
    n, n_pos = int(y.size), int(y.sum())
    r_pos, r_neg = int(y[keep].sum()), int((y[keep] == 0).sum())
    n_deg = res["n_degenerate_difference"]
    qual = join(_exposure(ctx, cohort, a),
                 "no image excluded: the target sets coincide" if keep.all() else "",
                 f"{info['n_only_b']} image(s) only {b!r} scores are in neither target set"
                 if info["n_only_b"] else "",
                 f"{n_deg} degenerate bootstrap replicate(s)" if n_deg else "")
    return spec_row(
        model=a, prompt=prompt, cohort=cohort, criterion="roc_auc_difference",
        design=COMPOSITION_DESIGN, n_resamples=res["n_resamples"], family=None,
        contrast="retained - all", targets_from=b,
        auroc_all=res["auroc_all"], auroc_all_ci_low=res["ci_all"][0],
        auroc_all_ci_high=res["ci_all"][1], auroc_retained=res["auroc_retained"],
        auroc_retained_ci_low=res["ci_retained"][0], auroc_retained_ci_high=res["ci_retained"][1],
        estimate=res["auroc_retained"] - res["auroc_all"], ci_low=res["ci_difference"][0],
        ci_high=res["ci_difference"][1], n_degenerate=n_deg, n=n, n_pos=n_pos, n_neg=n - n_pos,
        n_retained=r_pos + r_neg, n_pos_retained=r_pos, n_neg_retained=r_neg,
        n_excluded=n - r_pos - r_neg, n_pos_excluded=n_pos - r_pos,
        n_neg_excluded=n - n_pos - r_neg, qualification=qual)


# ----------------------------------------------------------------------------- block
class Retained(Block):
    """Two score sets on identical targets, per-seed AUROCs and seed ensembles (Tables 18-20)."""

    name = NAME
    title = "Retained targets and training seeds"
    summary = ("two score sets on identical targets; per-seed AUROCs, SD, seed ensembles, DeLong "
               "of seeds vs ensemble (paper 000 Tables 18, 20)")
    config = RetainedEntry
    many = True
    tables = (
        TableSchema("comparisons", "per entry x cohort: AUROC(b) - AUROC(a) on the shared images",
                    ("model_a", "model_b", "estimate", "ci_low", "ci_high", "n_only_a", "n_only_b",
                     "pvalue")),
        TableSchema("seeds", "per-seed AUROCs, their mean and SD, and the seed ensemble",
                    ("kind", "model_seed", "estimate")),
        TableSchema("composition", "score set a on all its targets and on the retained ones",
                    ("auroc_all", "auroc_retained", "estimate", "ci_low", "ci_high")),
        TableSchema("exclusion", "Table 19 counts per entry x cohort",
                    ("source", "n_original", "n_excluded", "n_retained")),
    )
    figures = ("fig7_seeds",)

    def check(self, config: list[RetainedEntry], table: pd.DataFrame, cohorts) -> list[str]:
        from medaudit.blocks.checks import unknown

        errs: list[str] = []
        models, prompts = set(table["model"].unique()), set(table["prompt"].unique())
        for i, rt in enumerate(config):
            errs += unknown("model", [rt.a, rt.b], models, f"retained[{i}]")
            errs += unknown("cohort", rt.cohorts, cohorts, f"retained[{i}].cohorts")
            if rt.prompt is not None:
                errs += unknown("prompt", [rt.prompt], prompts, f"retained[{i}].prompt")
        return errs

    def skip(self, ctx: AuditContext, config: list[RetainedEntry]) -> str | None:
        if not config and ctx.seed_scores is None:
            return ("the spec has no `retained:` entries and the score table has no `seed` column")
        return None

    def run(self, ctx: AuditContext, config: list[RetainedEntry]) -> BlockResult:
        """Retained-target comparisons (``comparisons``) and per-seed summaries (``seeds``)."""
        notes: list[str] = []
        primary = ctx.primary_prompt
        has_seeds = ctx.seed_scores is not None
        if not config and not has_seeds:
            return BlockResult(name=NAME, tables={"comparisons": pd.DataFrame(),
                                                  "seeds": pd.DataFrame()},
                               notes=("retained: the spec has no `retained` entries and the score "
                                      "table has no `seed` column; nothing to report.",))
        entries = [(e, e.prompt or primary,
                    _cohorts(ctx, e.cohorts, f"retained entry {e.b!r} - {e.a!r}")) for e in config]
        for e, _, _ in entries:
            if e.a == e.b:
                raise SchemaError(f"retained entry compares model {e.a!r} with itself; `a` and `b` "
                                  "must name two score sets.")
        seed_rows, seed_delta = (_seed_tables(ctx, entries, notes) if has_seeds else
                                 ({c: [] for c in ctx.cohorts}, {}))
        where = [(i, e, prompt, cohort) for cohort in ctx.cohorts
                 for i, (e, prompt, cohorts) in enumerate(entries) if cohort in cohorts]
        comparisons, comp_rows = _comparisons(ctx, where, seed_delta)
        # comparison (i): `a` against itself on its full and on the retained targets; never
        # aligned with `b`'s scores (the two score different image sets by design)
        mix_jobs = [_composition_job(ctx, e, cohort, prompt) for _, e, prompt, cohort in where]
        mix = ctx.map(functools.partial(run_composition, resampling=ctx.resampling),
                      [cell for _, cell in mix_jobs])
        composition = pd.DataFrame([
            _composition_row(ctx, e, cohort, prompt, info, res)
            for (_, e, prompt, cohort), (info, _), res in zip(where, mix_jobs, mix, strict=True)])
        infos = {(i, cohort): info for (i, _, _, cohort), (info, _) in zip(where, mix_jobs,
                                                                           strict=True)}
        per_entry = [exclusion_rows(ctx, e, prompt, cohorts, {c: infos[(i, c)] for c in cohorts})
                     for i, (e, prompt, cohorts) in enumerate(entries)]
        exclusion = pd.DataFrame([per_entry[i][0][cohort] for i, _, _, cohort in where]
                                 + [r for _, card_only in per_entry for r in card_only])
        seeds = pd.DataFrame([r for c in ctx.cohorts for r in seed_rows[c]])
        if not seeds.empty:
            seeds["model_seed"] = seeds["model_seed"].astype("Int64")
        notes += _notes(config, comp_rows, seeds, has_seeds, primary)
        return BlockResult(name=NAME, tables={"comparisons": comparisons, "seeds": seeds,
                                              "composition": composition, "exclusion": exclusion},
                           notes=tuple(notes))


def _seed_tables(ctx: AuditContext, entries: list, notes: list[str]
                 ) -> tuple[dict[str, list[dict]], dict[tuple[int, str], dict]]:
    """Per-seed rows by cohort, and the seed-paired change summaries by (entry, cohort)."""
    primary = ctx.primary_prompt
    seed_rows_by_cohort: dict[str, list[dict]] = {c: [] for c in ctx.cohorts}
    seed_delta: dict[tuple[int, str], dict[str, tuple[float, float, int]]] = {}
    n_seeds = _seeded(ctx, primary)
    single = sorted({m for (m, _), k in n_seeds.items() if k < _MIN_SEEDS})
    if single:
        notes.append(f"seeds: model(s) {single} have a single seed on some cohort at prompt "
                     f"{primary!r}; no seed summary for those cells.")
    elsewhere = sorted(set(ctx.seed_scores["model"]) - {m for m, _ in n_seeds})
    if elsewhere:
        notes.append(f"seeds: model(s) {elsewhere} have no per-seed scores at the primary "
                     f"prompt {primary!r} on a declared cohort; no seed summary for them.")
    where = [(cohort, model) for cohort in ctx.cohorts
             for model in sorted(m for (m, c), k in n_seeds.items()
                                 if c == cohort and k >= _MIN_SEEDS)]
    cells = [_seed_job(ctx, model, cohort, primary) for cohort, model in where]
    results = ctx.map(functools.partial(run_seed, resampling=ctx.resampling), cells)
    for (cohort, model), cell, res in zip(where, cells, results, strict=True):
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
    return seed_rows_by_cohort, seed_delta


def _comparisons(ctx: AuditContext, where: list, seed_delta: dict) -> tuple[pd.DataFrame, list]:
    """The ``comparisons`` table: b - a on the retained targets (and its soft twin rows)."""
    jobs = [_comparison_cells(ctx, e, cohort, prompt) for _, e, prompt, cohort in where]
    boots = run_cells(ctx, [boot for _, boot, _ in jobs])
    tests = run_delong_cells(ctx, [dl for _, _, dl in jobs])
    comp_rows = []
    for (i, e, prompt, cohort), (targets, _, _), res, dl in zip(where, jobs, boots, tests,
                                                                 strict=True):
        sd = seed_delta.get((i, cohort), {})
        comp_rows.append(_comparison_row(ctx, e, cohort, prompt, targets, (res.hard, dl[0]),
                                         sd.get("roc_auc")))
        if res.soft is not None:
            comp_rows.append(_comparison_row(ctx, e, cohort, prompt, targets, (res.soft, None),
                                             sd.get(SOFT), mid=SOFT))
    return pd.DataFrame(comp_rows), comp_rows


def _notes(config: Sequence[RetainedEntry], comp_rows: list, seeds: pd.DataFrame,
           has_seeds: bool, primary: str) -> list[str]:
    notes = []
    if comp_rows:
        notes.append("comparisons: AUROC(b) - AUROC(a) on the images both score sets have "
                     "(n_only_a / n_only_b images dropped); interval from a paired within-label "
                     "bootstrap conditional on both fitted score sets (B-WL-PAIRED); p from the "
                     "paired DeLong test (descriptive, no multiplicity family).")
    elif list(config) == []:
        notes.append("comparisons: the spec has no `retained` entries.")
    if any(c.get("criterion", "").startswith("soft_") for c in comp_rows) or (
            not seeds.empty and seeds["criterion"].str.startswith("soft_").any()):
        notes.append("Soft labels (label_soft): soft_roc_auc_difference comparisons from the same "
                     "draws as the ordinary rows (strata the hard labels; no DeLong test, which has "
                     "no soft form) and soft_roc_auc seed rows (point estimates); the composition "
                     "table has no soft rows (its nested interval needs 0/1 labels).")
    if has_seeds and not seeds.empty:
        notes.append(f"seeds: per-seed AUROC, mean and SD (ddof={SD_DDOF}) over seeds, and the "
                     "mean-probability seed ensemble with its DeLong interval at prompt "
                     f"{primary!r}; each seed is tested against the ensemble with the paired "
                     "DeLong test. Column `model_seed` is the optimisation seed; `seed` is the "
                     "analysis seed.")
    elif not has_seeds:
        notes.append("seeds: the score table has no `seed` column; no per-seed table.")
    if comp_rows:
        notes.append("composition: AUROC of score set a on all its targets and on the retained "
                     "targets (the images b also scores), difference retained - all; intervals "
                     "from one bootstrap within label x retained strata shared by both target "
                     f"sets ({COMPOSITION_DESIGN}), conditional on the fitted score set a.")
        notes.append("exclusion: Table 19 counts per cohort from the score table (images a scores, "
                     "those b lacks, those retained by label); rows with source 'model card' are "
                     "the training run's counts for cohorts the audit does not score.")
    return notes
