"""Label uncertainty: ordinary vs soft metrics, rank changes and annotation-bootstrap stability.

Paper 001 M1.4-M1.8, for a set of models scored on the same items of a cohort:
ordinary AUROC and AP against the aggregated hard label and soft AUROC / soft AP
against the soft label, each with a percentile interval from one paired case
bootstrap (the cohort's design; hard and soft metrics draw from the same cell
generator); the models' min-rank per metric and which pairs change order between
the ordinary and the soft metric; Pearson R^2 between ordinary and soft values
across models (Figure 1); the annotation bootstrap (each item's annotations
resampled with replacement, labels rebuilt with the spec's rules, all four metrics
recomputed, models re-ranked, Spearman rho and Kendall tau-b with the original
ranking); and the one-sided binomial test that the soft metric gives more stable
rankings than its ordinary counterpart (Table 1).

Tables
------
``metrics``
    cohort x model x criterion (the four metric ids): ``estimate, ci_low, ci_high,
    n_degenerate, n, n_pos, n_neg, rank`` (min-rank among the models, 1 = best).
``annotation_intervals``
    cohort x model x criterion: the metric on the original annotations with the
    percentile interval of its annotation-bootstrap replicates, and ``mean_rank``.
``rank_changes``
    cohort x pair (A < B) x metric pair: the order under the ordinary (``order_ordinary``)
    and the soft metric (``order_soft``: ``a_higher``/``b_higher``/``tie``) and ``changed``.
``agreement``
    cohort x metric pair: Pearson ``r`` and ``r2`` of ordinary vs soft values across models.
``stability``
    cohort x criterion x correlation: mean correlation with the original ranking
    (``estimate``; M1.7 stability), spread (``ci_low``/``ci_high``), counts.
``stability_test``
    cohort x metric pair: ``k`` replicates where the soft correlation beats the
    ordinary one out of ``n``, one-sided exact binomial ``pvalue`` (M1.8),
    ``significant`` (raw p < alpha, as the paper) and a Holm ``pvalue_adj`` over the
    block's tests.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from medaudit.blocks import claimkit as ck
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.context import AuditContext, Study
from medaudit.blocks.notes import exposure_note, join, tied_items
from medaudit.blocks.rows import interval, spec_row
from medaudit.exceptions import DegenerateDataWarning, SchemaError
from medaudit.io.limits import NResamples
from medaudit.io.specfile import fraction
from medaudit.stats import adjust_pvalues, paired_bootstrap
from medaudit.stats.annotation_bootstrap import (
    RANK_DECIMALS,
    annotation_bootstrap,
    labels_from_sums,
    metric_ids,
    min_rank,
    pearson_r,
    rank_stability_test,
    resolve_hedges,
    soft_options,
)
from medaudit.stats.bootstrap import percentile_interval
from medaudit.stats.soft import SOFT_DEFAULTS

__all__ = ["LabelUncertainty", "LabelUncertaintyConfig"]

NAME = "label_uncertainty"


class LabelUncertaintyConfig(BlockConfig):
    """Settings of the label-uncertainty block (paper 001, M1.4-M1.8)."""

    #: cohorts to analyse (default: every cohort of the spec)
    cohorts: list[str] | None = None
    #: models to rank (default: every model in the table, at the primary prompt)
    models: list[str] | None = None
    prompt: str | None = None
    #: annotation-bootstrap replicates (M1.7: 1,000)
    n_resamples: NResamples = 1000
    #: model ranking per metric: min-rank (competition ranking, M1.5)
    rank_ties: Literal["min"] = "min"
    #: ordinary AP: "pooled" ties (scikit-learn, M1.4) or "individual" ranks (paper 000)
    ap_ties: Literal["pooled", "individual"] = "pooled"
    #: soft AUROC's self pair (default strict, which reproduces paper 001's Table 4)
    soft_variant: Literal["inclusive", "strict", "trapezoid"] | None = None
    #: soft AP: an item's own label known at its rank (default known_self, Table 4) or as
    #: Definition 2.2 is written (as_written)
    soft_ap_variant: Literal["known_self", "as_written"] | None = None
    soft_ties: Literal["stable", "grouped"] = "stable"
    #: correlation the binomial test compares (M1.8 [AMBIG]: Spearman assumed)
    test_correlation: Literal["spearman", "kendall"] = "spearman"
    #: replicates where soft and ordinary correlations are equal: excluded (sign test) or failures
    test_ties: Literal["exclude", "failure"] = "exclude"
    alpha: float = 0.05
    #: replicates per batch of the annotation bootstrap (memory bound; results do not depend on it)
    batch: int | None = Field(None, ge=1)

    @field_validator("alpha")
    @classmethod
    def _alpha(cls, v: float) -> float:
        return fraction(v, "alpha")

    @model_validator(mode="after")
    def _variant(self) -> LabelUncertaintyConfig:
        # the one rule for soft options (stats.soft): every variant applies under both ties
        soft_options(self.soft_variant, self.soft_ties, self.soft_ap_variant)
        return self

    @field_validator("models", "cohorts")
    @classmethod
    def _unique(cls, v):
        if v is not None and len(set(v)) != len(v):
            raise ValueError(f"names repeat: {v}")
        return v


class LabelUncertainty(Block):
    """Ordinary vs soft metrics, rank changes and annotation-bootstrap stability (paper 001)."""

    name = NAME
    title = "Label uncertainty"
    summary = ("paper 001: ordinary vs soft AUROC/AP, rank changes, R², annotation bootstrap, "
               "binomial stability test")
    config = LabelUncertaintyConfig
    requires = ("scores", "annotations")
    tables = (
        TableSchema("metrics", "cohort x model x criterion (ordinary and soft), with min-rank",
                    ("estimate", "ci_low", "ci_high", "rank")),
        TableSchema("annotation_intervals", "the metrics with annotation-bootstrap intervals",
                    ("estimate", "ci_low", "ci_high", "mean_rank")),
        TableSchema("rank_changes", "cohort x model pair x metric pair: order under each metric",
                    ("model_a", "model_b", "order_ordinary", "order_soft", "changed")),
        TableSchema("agreement", "Pearson r and r2 of ordinary vs soft values across models",
                    ("r", "r2")),
        TableSchema("stability", "mean correlation with the original ranking over replicates",
                    ("estimate",)),
        TableSchema("stability_test", "one-sided binomial test: soft rankings more stable",
                    ("k", "n", "pvalue", "pvalue_adj", "significant", "verdict")),
    )
    figures = ("fig9_soft_vs_ordinary", "fig10_rank_stability")
    claim_kinds = ("ranking", "stability")

    def provenance(self, ctx: AuditContext, config: LabelUncertaintyConfig) -> dict[str, Any]:
        return {"n_resamples": {"case bootstrap": ctx.resampling.n_resamples,
                                "annotation bootstrap": config.n_resamples}}

    def run(self, ctx: AuditContext, config: LabelUncertaintyConfig) -> BlockResult:
        return _run(ctx, config)

    def claims(self, results: Mapping[str, BlockResult], study: Study,
               config: LabelUncertaintyConfig) -> list[dict[str, Any]]:
        return _label_claims(results)


def _metric_specs(lu) -> tuple[list, list]:
    """(hard specs, soft specs) for the case bootstrap, named as :func:`metric_ids` names them."""
    ap = ("average_precision", {"ties": "pooled"}) if lu.ap_ties == "pooled" else "average_precision"
    o = soft_options(lu.soft_variant, lu.soft_ties, lu.soft_ap_variant)
    soft = [(m, {k: v for k, v, d in (("variant", variant, SOFT_DEFAULTS[m][0]),
                                      ("ties", o["soft_ties"], SOFT_DEFAULTS[m][1])) if v != d})
            for m, variant in (("soft_roc_auc", o["soft_variant"]),
                               ("soft_average_precision", o["soft_ap_variant"]))]
    return ["roc_auc", ap], [(m, opts) if opts else m for m, opts in soft]


def _rules(ann) -> dict:
    hard_rule = "threshold" if ann.hard == "threshold" else "majority"
    return dict(hard_rule=hard_rule, threshold=ann.threshold, threshold_rule=ann.threshold_rule,
                tie=ann.tie)


def _cohort_annotations(ctx: AuditContext, cohort: str, image_id: np.ndarray):
    """Usable ratings of one cohort's items (hedge policy applied), their item index, and
    the number of annotation rows whose item has no score in this cohort."""
    ann, spec = ctx.annotations, ctx.annotation_rules
    sub = ann[ann["cohort"] == cohort] if "cohort" in ann.columns else ann
    index = pd.Index(image_id.astype(str))
    item = index.get_indexer(sub["item_id"].astype(str).to_numpy())
    scale = (spec.scale.low, spec.scale.high)
    values, keep = resolve_hedges(sub["value"].to_numpy(dtype=np.float64),
                                  sub["hedged"].to_numpy(dtype=bool), policy=spec.hedge, scale=scale)
    use = keep & (item >= 0)
    return values[use], item[use].astype(np.intp), int((item < 0).sum()), scale


def _run(ctx: AuditContext, lu: LabelUncertaintyConfig) -> BlockResult:
    ann = ctx.annotation_rules
    if ann is None or ctx.annotations is None:
        raise SchemaError("block 'label_uncertainty' needs `annotations:` in the spec.")
    prompt, models, cohorts = _selection(ctx, lu)
    ids = metric_ids(ap_ties=lu.ap_ties, soft_variant=lu.soft_variant, soft_ties=lu.soft_ties,
                     soft_ap_variant=lu.soft_ap_variant)
    pairs = ((ids[0], ids[2]), (ids[1], ids[3]))
    bootstrappable = ann.soft == "mean" and ann.hard != "posterior"
    T: dict[str, list[dict]] = {k: [] for k in ("metrics", "annotation_intervals", "rank_changes",
                                               "agreement", "stability", "stability_test")}
    notes: list[str] = []
    for cohort in cohorts:
        ctx.tick(f"{NAME}: case bootstrap {cohort}")
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        if w.label_soft is None:
            raise SchemaError(f"cohort {cohort!r} has no label_soft; the label_uncertainty block "
                              "reads soft labels attached from `annotations:`.")
        scores = {m: w.scores[f"{m}|{prompt}"] for m in models}
        est = _case_bootstrap(T, notes, ctx, lu, w, cohort, prompt, scores, ids)
        for o_id, s_id in pairs:
            _ranking_rows(T, est, models, cohort, prompt, o_id, s_id)
        if not bootstrappable:
            notes.append(f"{cohort}: soft labels from {ann.soft} (hard: {ann.hard}) are not "
                         "annotation-bootstrapped (paper 001 bootstraps mean-vote labels only).")
            continue
        ctx.tick(f"{NAME}: annotation bootstrap {cohort}")
        ab = _annotation_part(T, notes, ctx, lu, w, cohort, prompt, scores, models)
        T["stability_test"] += [_stability_test_row(ab, lu, cohort, prompt, o_id, s_id,
                                                    ctx.resampling.confidence_level)
                                for o_id, s_id in pairs]
    tests = T["stability_test"]
    if tests:
        adj = adjust_pvalues([r["pvalue"] for r in tests], method="holm", alpha=lu.alpha,
                             family=f"{NAME}|stability tests")
        for r, pa in zip(tests, adj.pvalues_adjusted, strict=True):
            r["pvalue_adj"] = float(pa)
    notes += _method_notes(ctx, lu)
    frames = {k: pd.DataFrame(v) for k, v in T.items()}
    return BlockResult(name=NAME, tables=frames, notes=tuple(notes))


def _selection(ctx: AuditContext, lu: LabelUncertaintyConfig) -> tuple[str, list[str], list[str]]:
    """The prompt, models and cohorts the block reads, checked against the study."""
    prompt = lu.prompt or ctx.primary_prompt
    known = ctx.models()
    models = sorted(lu.models) if lu.models else known
    unknown = [m for m in models if m not in known]
    if unknown:
        raise SchemaError(f"label_uncertainty.models names {unknown}, not in the score table "
                          f"(models: {known}).")
    cohorts = lu.cohorts or ctx.cohorts
    bad = [c for c in cohorts if c not in ctx.cohorts]
    if bad:
        raise SchemaError(f"label_uncertainty.cohorts names {bad}, not among the spec's cohorts "
                          f"{ctx.cohorts}.")
    return prompt, models, cohorts


def _case_bootstrap(T: dict[str, list[dict]], notes: list[str], ctx: AuditContext,
                    lu: LabelUncertaintyConfig, w: Any, cohort: str, prompt: str,
                    scores: dict[str, np.ndarray], ids: tuple[str, ...]
                    ) -> dict[str, np.ndarray]:
    """The case bootstrap of one cohort: its ``metrics`` rows; the estimates by metric id."""
    models = list(scores)
    if lu.soft_ties == "stable" and (tied := tied_items(scores)):
        notes.append(f"{cohort}: tied scores ({_counts(tied)} items in tied blocks) are taken "
                     "in image_id order by the stable soft metrics, so their values depend on "
                     "that order; label_uncertainty.soft_ties: grouped makes them tie-aware.")
    hard_specs, soft_specs = _metric_specs(lu)
    # one generator key for both calls: under the ordinary design hard and soft metrics
    # see the very same resampled images
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        res = {}
        for y, specs in ((w.label, hard_specs), (w.label_soft, soft_specs)):
            r = paired_bootstrap(y, scores, metrics=specs, design=ctx.cohort_design(cohort),
                                 n_resamples=ctx.resampling.n_resamples,
                                 confidence_level=ctx.resampling.confidence_level,
                                 rng=ctx.rng(NAME, cohort, prompt))
            res.update(r.marginal)
    est = {mid: np.array([res[(m, mid)].estimate for m in models]) for mid in ids}
    ranks = {mid: min_rank(est[mid]) for mid in ids}
    for j, m in enumerate(models):
        for mid in ids:
            r = res[(m, mid)]
            T["metrics"].append(spec_row(
                model=m, prompt=prompt, cohort=cohort, criterion=mid, design=r.design,
                n_resamples=r.n_resamples, **interval(r), rank=float(ranks[mid][j]),
                qualification=join(exposure_note(ctx, m, cohort, label="exposure: "),
                                   f"{r.n_degenerate} of {r.n_resamples} replicates degenerate"
                                   if r.n_degenerate else "")))
    return est


def _ranking_rows(T: dict[str, list[dict]], est: dict[str, np.ndarray], models: list[str],
                  cohort: str, prompt: str, o_id: str, s_id: str) -> None:
    """Pairwise order changes and the ordinary-vs-soft correlation of one metric pair."""
    for i, a in enumerate(models):
        for j in range(i + 1, len(models)):
            b = models[j]
            oo = _order(est[o_id][i], est[o_id][j])
            os_ = _order(est[s_id][i], est[s_id][j])
            T["rank_changes"].append(spec_row(
                model=f"{a} - {b}", prompt=prompt, cohort=cohort, criterion=s_id,
                design="point_estimate", ordinary_criterion=o_id,
                model_a=a, model_b=b, ordinary_a=est[o_id][i], ordinary_b=est[o_id][j],
                soft_a=est[s_id][i], soft_b=est[s_id][j], order_ordinary=oo,
                order_soft=os_, changed=oo != os_))
    r = pearson_r(est[o_id], est[s_id]) if np.isfinite(est[o_id]).all() and np.isfinite(
        est[s_id]).all() else np.nan
    T["agreement"].append(spec_row(
        model="all", prompt=prompt, cohort=cohort, criterion=s_id, design="point_estimate",
        ordinary_criterion=o_id, n_models=len(models), r=r, r2=r * r,
        qualification="" if len(models) >= 3 else "fewer than 3 models: R^2 undefined"))


def _annotation_part(T: dict[str, list[dict]], notes: list[str], ctx: AuditContext,
                     lu: LabelUncertaintyConfig, w: Any, cohort: str, prompt: str,
                     scores: dict[str, np.ndarray], models: list[str]) -> Any:
    """The annotation bootstrap of one cohort (M1.6): its rows and notes; the result."""
    ann = ctx.annotation_rules
    ratings, item, n_unscored, scale = _cohort_annotations(ctx, cohort, w.image_id)
    if n_unscored:
        notes.append(f"{cohort}: {n_unscored} annotation row(s) of items without scores in "
                     "this cohort are not used.")
    k = np.bincount(item, minlength=w.image_id.size)
    soft0, hard0 = labels_from_sums(np.bincount(item, weights=ratings, minlength=k.size), k,
                                    scale=scale, **_rules(ann))
    n_dis = int(np.sum(hard0 != w.label) + np.sum(~np.isclose(soft0, w.label_soft, rtol=0,
                                                             atol=1e-12)))
    if n_dis:
        notes.append(f"{cohort}: the score table's labels differ from the annotation labels on "
                     f"{n_dis} item-label(s); `metrics` uses the table's labels, the annotation "
                     "bootstrap the annotations'.")
    ab = annotation_bootstrap(ratings, item, scores, scale=scale, **_rules(ann),
                              ap_ties=lu.ap_ties, soft_variant=lu.soft_variant,
                              soft_ties=lu.soft_ties, soft_ap_variant=lu.soft_ap_variant,
                              n_resamples=lu.n_resamples,
                              rng=ctx.rng(NAME, cohort, prompt, "annotations"), batch=lu.batch)
    one = bool(k.max(initial=0) <= 1)
    if one:
        # resampling an item's annotators redraws its one rating: no label can change
        notes.append(f"{cohort}: every item has one rating, so the annotation bootstrap cannot "
                     "change any label: its intervals have no width and its rankings are stable "
                     "by construction (several annotators per item are needed).")
    _annotation_rows(T, ctx, ab, cohort, prompt, models, ctx.resampling.confidence_level,
                     one_rating=one)
    excl = int(ab.n_excluded.sum())
    if excl:
        notes.append(f"{cohort}: {excl} item-replicate(s) of the annotation bootstrap had an "
                     "excluded tie (tie: exclude) and were left out of that replicate.")
    return ab


def _stability_test_row(ab: Any, lu: LabelUncertaintyConfig, cohort: str, prompt: str,
                        o_id: str, s_id: str, level: float) -> dict[str, Any]:
    """The binomial rank-stability test (M1.8) of one soft/ordinary pair; Holm comes later."""
    t = rank_stability_test(ab.correlations(s_id, lu.test_correlation),
                            ab.correlations(o_id, lu.test_correlation), ties=lu.test_ties,
                            confidence_level=level)
    return spec_row(
        model="all", prompt=prompt, cohort=cohort, criterion=s_id,
        design="annotation_bootstrap", n_resamples=ab.n_resamples,
        family=f"{NAME}|stability tests", ordinary_criterion=o_id,
        correlation=lu.test_correlation, ties=lu.test_ties, k=int(t.statistic), n=t.n,
        n_ties=t.details["n_ties"], n_undefined=t.details["n_undefined"],
        stability_soft=ab.stability(s_id, lu.test_correlation),
        stability_ordinary=ab.stability(o_id, lu.test_correlation), pvalue=t.pvalue,
        pvalue_adj=np.nan, alpha=lu.alpha,
        significant=bool(t.pvalue < lu.alpha) if np.isfinite(t.pvalue) else None,
        verdict=("soft more stable" if np.isfinite(t.pvalue) and t.pvalue < lu.alpha
                 else "not shown" if np.isfinite(t.pvalue) else "not defined"),
        qualification="" if t.n else "no untied, defined replicate")


def _method_notes(ctx: AuditContext, lu: LabelUncertaintyConfig) -> list[str]:
    ann = ctx.annotation_rules
    B, level = ctx.resampling.n_resamples, ctx.resampling.confidence_level
    return [
        f"Case-bootstrap intervals: percentile, level {level}, B = {B}, one paired draw per cohort "
        "(hard and soft metrics from the same generator).",
        f"Annotation bootstrap: B = {lu.n_resamples}; each item's usable ratings resampled with "
        f"replacement; labels rebuilt with soft = normalised mean, hard = {ann.hard}"
        + (f" (raw mean {ann.threshold_rule} {ann.threshold})" if ann.hard == "threshold" else
           f" (ties: {ann.tie})") + f"; hedged ratings: {ann.hedge}.",
        "Ranks: min-rank (1 = best); stability = mean Spearman rho / Kendall tau-b with the "
        "original ranking over the defined replicates.",
        f"Binomial test (M1.8): one-sided, H1 soft more stable, {lu.test_correlation} "
        f"correlations, ties {lu.test_ties}d; significant uses the raw p as the paper; pvalue_adj "
        "is Holm over the block's tests.",
    ]


def _counts(tied: dict[str, int]) -> str:
    return ", ".join(f"{m}: {n}" for m, n in tied.items())


def _order(a: float, b: float) -> str:
    """Which model is higher; equal to RANK_DECIMALS decimals is a tie (as in the ranks)."""
    if not (np.isfinite(a) and np.isfinite(b)):
        return "not defined"
    a, b = round(float(a), RANK_DECIMALS), round(float(b), RANK_DECIMALS)
    return "a_higher" if a > b else "b_higher" if b > a else "tie"


def _annotation_rows(T, ctx, ab, cohort, prompt, models, level, *, one_rating: bool = False
                     ) -> None:
    by_construction = "one rating per item: stable by construction" if one_rating else ""
    n_used = float(ab.n_items - ab.n_excluded_original)
    for i, mid in enumerate(ab.metrics):
        reps = ab.replicates[mid]
        n_pos = ab.n_pos if i < 2 else ab.n_pos_soft  # hard count, or soft label mass
        rk = min_rank(reps)
        n_ok = np.isfinite(rk).sum(axis=0)
        # a model's mean rank over the replicates where its metric is defined
        mean_rank = np.where(n_ok > 0, np.nansum(rk, axis=0) / np.maximum(n_ok, 1), np.nan)
        for j, m in enumerate(models):
            lo, hi = percentile_interval(reps[:, j], level)
            n_deg = int(np.isnan(reps[:, j]).sum())
            T["annotation_intervals"].append(spec_row(
                model=m, prompt=prompt, cohort=cohort, criterion=mid, design="annotation_bootstrap",
                n_resamples=ab.n_resamples, estimate=float(ab.estimate[mid][j]),
                ci_low=lo, ci_high=hi, n_degenerate=n_deg, n=ab.n_items, n_pos=n_pos,
                n_neg=n_used - n_pos,
                rank=float(ab.rank[mid][j]), mean_rank=float(mean_rank[j]),
                qualification=f"{n_deg} of {ab.n_resamples} replicates degenerate" if n_deg else ""))
        for meth in ("spearman", "kendall"):
            c = ab.correlations(mid, meth)
            lo, hi = percentile_interval(c, level)
            T["stability"].append(spec_row(
                model="all", prompt=prompt, cohort=cohort, criterion=mid,
                design="annotation_bootstrap", n_resamples=ab.n_resamples,
                correlation=meth, estimate=ab.stability(mid, meth), ci_low=lo, ci_high=hi,
                n_valid=int(np.isfinite(c).sum()), n_degenerate=ab.n_degenerate[mid],
                n_undefined=ab.n_undefined[f"{mid}|{meth}"], n_models=len(models),
                qualification=join("" if len(models) >= 2 else "one model: no ranking",
                                   by_construction)))


# ----------------------------------------------------------------------------- claims
def _label_claims(results: Mapping[str, BlockResult]) -> list[dict[str, Any]]:
    """Rankings under hard labels, re-read under soft labels; ranking stability claims."""
    rows: list[dict[str, Any]] = []
    changes = ck.table(results, NAME, "rank_changes")
    n = 0
    if not changes.empty:
        for _, r in changes.iterrows():
            # the block's own order (ties to RANK_DECIMALS, as its ranks): a last-bit float
            # difference between mathematically equal metrics is neither a claim nor a reversal
            order = str(r["order_ordinary"])
            if order not in ("a_higher", "b_higher"):
                continue  # tie or undefined: no hard-label order to claim
            oa, ob = ck.to_float(r["ordinary_a"]), ck.to_float(r["ordinary_b"])
            hi_m, lo_m = (r["model_a"], r["model_b"]) if order == "a_higher" else (
                r["model_b"], r["model_a"])
            sign = 1.0 if order == "a_higher" else -1.0
            n += 1
            crit = str(r["ordinary_criterion"])
            claim = ck.claim_base(f"Y{n:02d}", f"{hi_m} ranks above {lo_m} on {crit} (hard labels)",
                          "ranking", model=f"{hi_m} vs {lo_m}", prompt=r["prompt"],
                          cohort=r["cohort"], negatives=r["negatives"], criterion=crit)
            note = "point estimates (no interval); ranking stability in label_uncertainty.stability"
            rows.append(ck.claim_cell(claim, "at E", "", verdict="holds", estimate=sign * (oa - ob),
                              note=note, source="label_uncertainty.rank_changes"))
            soft = str(r["order_soft"])
            verdict = ("holds" if soft == order else "unresolved" if soft == "tie"
                       else "reversed" if soft in ("a_higher", "b_higher") else "not defined")
            rows.append(ck.claim_cell(claim, "reference", "soft labels", verdict=verdict,
                              estimate=sign * (ck.to_float(r["soft_a"]) - ck.to_float(r["soft_b"])),
                              note=note,
                              source="label_uncertainty.rank_changes", criterion=str(r["criterion"])))
    tests = ck.table(results, NAME, "stability_test")
    for _, r in tests.iterrows() if not tests.empty else ():
        n += 1
        claim = ck.claim_base(f"Y{n:02d}", f"rankings by {r['criterion']} are more stable under annotation "
                      f"resampling than by {r['ordinary_criterion']}", "stability", model="all",
                      prompt=r["prompt"], cohort=r["cohort"], criterion=str(r["criterion"]))
        p = ck.to_float(r["pvalue"])
        sig = str(r.get("significant")).lower() == "true"
        verdict = "not defined" if not math.isfinite(p) else "holds" if sig else "unresolved"
        rows.append(ck.claim_cell(claim, "reference", "annotation bootstrap", verdict=verdict,
                          estimate=ck.to_float(r["stability_soft"]) - ck.to_float(r["stability_ordinary"]),
                          note=ck.qualify(f"one-sided binomial p = {p:.3g} (k = {r['k']} of {r['n']})",
                                  r.get("qualification")),
                          source="label_uncertainty.stability_test"))
    return rows
