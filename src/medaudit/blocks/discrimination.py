"""Discrimination and calibration per model and cohort, and paired model differences.

Paper 000 M0.7 / Table 4 (clinical prompt): AUROC, AUPRC (non-interpolated average
precision, tied scores ranked individually), Brier, ECE15 and AURC for every model
on every cohort at the primary prompt, each with a percentile interval.  One paired
bootstrap cell per cohort (:class:`~medaudit.blocks.cells.BootstrapCell`, key
``(discrimination, cohort, prompt)``) draws the images once for all models (design
``ctx.cohort_design(cohort)``), so the marginal intervals and the model differences
come from the same replicates.

Tables
------
``metrics``
    One row per cohort x model x criterion (``roc_auc``, ``average_precision``,
    ``brier_score``, ``ece[n_bins=15]``, ``aurc``).  When the cohort carries soft labels
    (``label_soft``, e.g. attached from ``annotations:``; paper 001), ``soft_roc_auc``
    and ``soft_average_precision`` follow, from the cell's soft twin: the very same
    resampled images under every design (see :mod:`medaudit.blocks.cells`).
``model_differences``
    One row per cohort x ordered pair (A, B), A < B alphabetically, x criterion
    (``roc_auc_difference``, ``brier_score_difference``): the bootstrap estimate
    A - B with its interval from the shared draw.  AUROC rows add the paired DeLong
    test (``delong_z``, ``pvalue``, ``delong_ci_low``, ``delong_ci_high``) with a
    Holm adjustment over the cohort's model pairs (``pvalue_adj``, ``significant``).
    With soft labels, ``soft_roc_auc_difference`` rows give the bootstrap difference
    (no DeLong test: it is defined for hard labels).
    ``verdict`` is ``"a_better"`` / ``"b_better"`` when the bootstrap interval
    excludes 0 (better = higher AUROC, lower Brier), else ``"unresolved"``; an interval
    that left replicates out (``n_degenerate`` > 0) is ``"unresolved"`` whatever it spans.
``reliability``
    Reliability-diagram data (10 equal-width bins, empty bins omitted; Fig. 4).

Claims: rankings ("A ranks above B on AUROC" in a primary or extension cohort, read
under another cohort, prompt, control group, soft labels and the Brier criterion at
every prevalence) and reliability ("m separates positives from controls with
AUROC ≥ L", ``claims.auroc_at_least``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from medaudit.blocks import claimkit as ck
from medaudit.blocks.block import Block, BlockResult, TableSchema
from medaudit.blocks.cells import (
    SOFT_METRICS,
    BootstrapCell,
    DeLongCell,
    run_cells,
    run_delong_cells,
)
from medaudit.blocks.context import AuditContext, Study
from medaudit.blocks.notes import (
    below_chance_note,
    clustered_images_note,
    constant_scores_note,
    degenerate_cells_note,
    degenerate_note,
    exposure_note,
    join,
    outside_interval_note,
    tied_items,
)
from medaudit.blocks.rows import interval, spec_row, verdict
from medaudit.blocks.subgroups import ALL, subgroup_rows
from medaudit.exceptions import TiedScoresWarning
from medaudit.stats import adjust_pvalues, aurc, average_precision, reliability_diagram
from medaudit.stats.ranking import AP_TIE_TOLERANCE
from medaudit.stats.selective import RISK_TIE_TOLERANCE
from medaudit.stats.soft import soft_ceiling

__all__ = ["Discrimination", "METRICS", "DIFFERENCE_METRICS", "SOFT_DIFFERENCE_METRICS",
           "cohort_cell"]

NAME = "discrimination"
METRICS = ("roc_auc", "average_precision", "brier_score", ("ece", {"n_bins": 15}), "aurc")
#: metric id -> +1 when higher is better, -1 when lower is better
DIFFERENCE_METRICS = {"roc_auc": +1, "brier_score": -1}
SOFT_DIFFERENCE_METRICS = {"soft_roc_auc": +1}


def cohort_cell(ctx: AuditContext, block: str, cohort: str, prompt: str, models: list[str],
                metrics: tuple[Any, ...], *, soft: bool = True) -> BootstrapCell:
    """The paired bootstrap cell of one cohort: all models, the cohort's design, key
    ``(block, cohort, prompt)`` (the soft twin rides along when the cohort has soft labels)."""
    w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
    return BootstrapCell(key=(block, cohort, prompt), label=w.label, scores=w.vectors(models, prompt),
                         metrics=metrics, design=ctx.cohort_design(cohort),
                         label_soft=w.label_soft if soft else None)


class Discrimination(Block):
    """AUROC, AP, Brier, ECE15 and AURC per model and cohort; paired model differences."""

    name = NAME
    title = "Discrimination and score error"
    summary = ("AUROC [CI], AUPRC, Brier, ECE15, AURC per model x cohort; paired model "
               "differences with DeLong (paper 000 Table 4)")
    tables = (
        TableSchema("metrics", "one row per cohort x model x criterion, with its interval",
                    ("estimate", "ci_low", "ci_high", "n_degenerate", "n", "n_pos", "n_neg",
                     "qualification")),
        TableSchema("model_differences", "one row per cohort x model pair x criterion (A - B)",
                    ("model_a", "model_b", "estimate", "ci_low", "ci_high", "n_degenerate", "pvalue",
                     "pvalue_adj", "significant", "verdict", "qualification")),
        TableSchema("reliability", "reliability-diagram bins per cohort x model (point estimates)",
                    ("bin", "bin_low", "bin_high", "count", "mean_score", "fraction_positive")),
    )
    figures = ("fig1_discrimination", "fig4_reliability")
    claim_kinds = ("ranking", "reliability")

    def run(self, ctx: AuditContext, config: Any) -> BlockResult:
        prompt, models = ctx.primary_prompt, ctx.models()
        # with raw logits only the rank metrics are defined (Brier, ECE, AURC need probabilities)
        metrics = METRICS if ctx.probabilities else ("roc_auc", "average_precision")
        cohorts = ctx.cohorts
        pairs = tuple((a, b) for i, a in enumerate(models) for b in models[i + 1:])
        cells = []
        for cohort in cohorts:
            ctx.tick(f"{NAME}: bootstrap {cohort}")
            cells.append(cohort_cell(ctx, NAME, cohort, prompt, models, metrics))
        boot = run_cells(ctx, cells)
        tests = run_delong_cells(ctx, [DeLongCell(c.label, c.scores, pairs) for c in cells])
        metric_rows, diff_rows, soft_cohorts, soft_ties = [], [], [], []
        for cohort, cell, res, delong in zip(cohorts, cells, boot, tests, strict=True):
            if res.soft is not None:
                soft_cohorts.append(cohort)
                if tied := tied_items(dict(cell.scores)):
                    soft_ties.append(f"{cohort} ({', '.join(f'{m}: {n}' for m, n in tied.items())})")
            metric_rows += _metric_rows(ctx, cohort, prompt, models, res, cell.label_soft,
                                        dict(cell.scores))
            diff_rows += _difference_rows(ctx, cohort, prompt, pairs, res, delong)
        n_degenerate_cells = sum(int(r["n_degenerate"] > 0) for r in metric_rows + diff_rows)
        metrics_table = pd.DataFrame(metric_rows)
        return BlockResult(name=NAME, tables={"metrics": metrics_table,
                                              "model_differences": pd.DataFrame(diff_rows),
                                              "reliability": _reliability(ctx, prompt, models)},
                           notes=tuple(_notes(ctx, soft_cohorts, soft_ties, n_degenerate_cells,
                                              metrics_table)))

    def claims(self, results: Mapping[str, BlockResult], study: Study, config: Any
               ) -> list[dict[str, Any]]:
        return _ranking_claims(results, study) + _reliability_claims(results, study)


def _metric_rows(ctx: AuditContext, cohort: str, prompt: str, models: list[str], res,
                 label_soft: np.ndarray | None, scores: Mapping[str, np.ndarray]) -> list[dict]:
    ids = res.metric_ids + (list(SOFT_METRICS) if res.soft is not None else [])
    # a soft metric's achievable ceiling: its value for a scorer equal to the soft label
    ceiling = {mid: soft_ceiling(label_soft, metric=mid) for mid in SOFT_METRICS
               if res.soft is not None and label_soft is not None}
    return [spec_row(model=m, prompt=prompt, cohort=cohort, criterion=mid, design=r.design,
                     n_resamples=r.n_resamples, **interval(r),
                     **({"ceiling": ceiling.get(mid, math.nan)} if ceiling else {}),
                     qualification=join(exposure_note(ctx, m, cohort),
                                        degenerate_note(r.n_degenerate, r.n_resamples),
                                        constant_scores_note(scores[m], mid),
                                        outside_interval_note(r.estimate, r.ci_low, r.ci_high)))
            for m in models for mid in ids for r in [res.marginal[(m, mid)]]]


def _difference_rows(ctx: AuditContext, cohort: str, prompt: str, pairs, res, delong) -> list[dict]:
    """Model differences A - B of one cohort; DeLong p-values Holm-adjusted over its pairs."""
    family = f"{NAME}|model pairs|{cohort}|{prompt}|roc_auc"
    rows = []
    for (a, b), dl in zip(pairs, delong, strict=True):
        criteria = [(mid, d) for mid, d in DIFFERENCE_METRICS.items() if mid in res.metric_ids]
        if res.soft is not None:
            criteria += list(SOFT_DIFFERENCE_METRICS.items())
        for mid, direction in criteria:
            d = res.differences[(a, b, mid)]
            is_auc = mid == "roc_auc"
            rows.append(spec_row(
                model=f"{a} - {b}", prompt=prompt, cohort=cohort, criterion=f"{mid}_difference",
                design=d.design, n_resamples=d.n_resamples,
                family=family if is_auc else None, model_a=a, model_b=b, **interval(d),
                delong_z=dl.statistic if is_auc else np.nan,
                pvalue=dl.pvalue if is_auc else np.nan,
                delong_ci_low=dl.ci_low if is_auc else np.nan,
                delong_ci_high=dl.ci_high if is_auc else np.nan,
                pvalue_adj=np.nan, significant=None, verdict=verdict(d.ci_low, d.ci_high, direction,
                                                                 n_degenerate=d.n_degenerate),
                qualification=join(exposure_note(ctx, (a, b), cohort),
                                   degenerate_note(d.n_degenerate, d.n_resamples))))
    auc_rows = [r for r in rows if r["criterion"] == "roc_auc_difference"]
    if auc_rows:
        alpha = 1.0 - ctx.resampling.confidence_level
        adj = adjust_pvalues([r["pvalue"] for r in auc_rows], method="holm", alpha=alpha,
                             family=family)
        for r, pa in zip(auc_rows, adj.pvalues_adjusted, strict=True):
            r["pvalue_adj"] = float(pa)
            r["significant"] = bool(pa < alpha) if np.isfinite(pa) else None
    return rows


def _ap_ties_note(ctx: AuditContext, metrics: pd.DataFrame) -> str:
    """The AP tie rule, and the tie-pooled AP beside the reported one wherever scores tie."""
    note = ("average_precision ranks tied scores individually (paper 000's rule: a stable "
            "descending sort, tied images in image_id order), so with ties its value depends on "
            "that order; scikit-learn's average_precision_score pools each set of tied scores "
            "into one threshold (medaudit.stats.average_precision(ties='pooled')).")
    if metrics.empty:
        return note
    ap = metrics[metrics["criterion"] == "average_precision"]
    prompt, models = ctx.primary_prompt, ctx.models()
    tied = []
    for cohort in ctx.cohorts:
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        if not 0 < w.label.sum() < w.label.size:
            continue
        for m, n_tied in tied_items(w.vectors(models, prompt)).items():
            row = ap[(ap["cohort"] == cohort) & (ap["model"] == m)]
            if row.empty:
                continue
            ind = float(row["estimate"].iloc[0])
            pooled = average_precision(w.label, w.scores[f"{m}|{prompt}"], ties="pooled")
            gap = (f", more than {AP_TIE_TOLERANCE:g} apart: the row order matters"
                   if abs(ind - pooled) > AP_TIE_TOLERANCE else "")
            tied.append(f"{m} in {cohort} ({n_tied} tied images): reported {ind!r}, ties pooled "
                        f"{pooled!r}{gap}")
    return note + (" Where scores tie: " + "; ".join(tied) + "." if tied else "")


def _aurc_ties_note(ctx: AuditContext, metrics: pd.DataFrame) -> list[str]:
    """Where tied confidences hold both errors and correct decisions, the reported AURC
    (ties in image_id order) beside its average over every order of the ties."""
    if metrics.empty or not ctx.probabilities:
        return []
    rows = metrics[metrics["criterion"] == "aurc"]
    prompt, models = ctx.primary_prompt, ctx.models()
    tied = []
    for cohort in ctx.cohorts:
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        for m in models:
            row = rows[(rows["cohort"] == cohort) & (rows["model"] == m)]
            if row.empty:
                continue
            y, p = w.label, w.scores[f"{m}|{prompt}"]
            averaged = aurc(y, p, ties="averaged")
            with warnings.catch_warnings():  # the note says it: no warning beside it
                warnings.simplefilter("ignore", TiedScoresWarning)
                if aurc(y, p) == averaged:  # no tie holds both kinds: every order agrees
                    continue
            # the engine's AURC (a harmonic-number sum) may differ from the point
            # function's risk sum in the last bits: the reported value is the table's
            reported = float(row["estimate"].iloc[0])
            gap = (f", more than {RISK_TIE_TOLERANCE:g} apart: the row order matters"
                   if abs(reported - averaged) > RISK_TIE_TOLERANCE else "")
            tied.append(f"{m} in {cohort}: reported {reported!r}, averaged over the orders of "
                        f"the ties {averaged!r}{gap}")
    if not tied:
        return []
    return ["aurc orders images by confidence max(p, 1 - p) with tied confidences in image_id "
            "order (a stable sort; paper 000 leaves the order open), so where a tie holds both "
            "errors and correct decisions the value depends on that order; "
            "medaudit.stats.aurc(ties='averaged') gives the expected value over every order of "
            "the ties. Where this happens: " + "; ".join(tied) + "."]


def _notes(ctx: AuditContext, soft_cohorts: list[str], soft_ties: list[str],
           n_degenerate_cells: int, metrics: pd.DataFrame) -> list[str]:
    notes = [] if ctx.probabilities else [
        "score_scale is 'logits': Brier, ECE and AURC need probabilities and are not reported."]
    notes += [
        f"Intervals: percentile, level {ctx.resampling.confidence_level}, "
        f"B = {ctx.resampling.n_resamples}; one paired bootstrap per cohort shared by "
        "all models (design per cohort in column `design`).",
        _ap_ties_note(ctx, metrics),
        *_aurc_ties_note(ctx, metrics),
        "Model differences are A - B with A < B alphabetically; verdict from the bootstrap "
        "interval (better = higher AUROC, lower Brier). DeLong p-values are Holm-adjusted over "
        "the model pairs within each cohort (family column); intervals are descriptive.",
    ]
    if soft_cohorts:
        notes.append(f"Soft labels (label_soft) in {', '.join(soft_cohorts)}: soft_roc_auc (strict: "
                     "an item's pair with itself left out) and soft_average_precision (an item's own "
                     "label known at its own rank), the defaults chosen to reproduce paper 001's "
                     "Table 4 (docs/conventions.md), tied scores in image_id order, with the same "
                     "design and generator as the ordinary metrics.")
    if soft_ties:
        notes.append("Tied scores (items in tied blocks) in " + "; ".join(soft_ties) + ": the soft "
                     "metrics take them in image_id order (stable ties, M1.2), so their values "
                     "depend on that order; the label_uncertainty block offers soft_ties: grouped.")
    notes += below_chance_note(metrics, probabilities=ctx.probabilities)
    notes += clustered_images_note(ctx.scores)
    return notes + degenerate_cells_note(n_degenerate_cells)


def _reliability(ctx: AuditContext, prompt: str, models: list[str]) -> pd.DataFrame:
    """Reliability-diagram data (10 equal-width bins, empty bins omitted; paper 000 Fig. 4)."""
    if not ctx.probabilities:
        return pd.DataFrame()
    rows = []
    for cohort in ctx.cohorts:
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        for m in models:
            rb = reliability_diagram(w.label, w.scores[f"{m}|{prompt}"], n_bins=10)
            for i in range(rb.bin_index.size):
                rows.append(spec_row(
                    model=m, prompt=prompt, cohort=cohort, criterion="reliability[n_bins=10]",
                    design="point_estimate", bin=int(rb.bin_index[i]),
                    bin_low=float(rb.bin_low[i]), bin_high=float(rb.bin_high[i]),
                    count=int(rb.count[i]), mean_score=float(rb.mean_score[i]),
                    fraction_positive=float(rb.fraction_positive[i]),
                    qualification=exposure_note(ctx, m, cohort)))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- claims
def _cell(claim: dict, change: str, changed_to: str, row: pd.Series | None, better: str,
          *, lower_is_better: bool = False, verdict: str | None = None, note: str = "",
          source: str = "", criterion: str | None = None) -> dict[str, Any]:
    """One matrix cell of a ranking claim; the difference is oriented as ``better - other``."""
    out = {**claim, "change": change, "changed_to": changed_to, "source_table": source,
           "estimate": math.nan, "ci_low": math.nan, "ci_high": math.nan, "qualification": note,
           "verdict": verdict or "not assessed"}
    if criterion is not None:
        out["criterion"] = criterion
    if row is None:
        # nothing to read: still name the changed element of E
        column = {"prompt": "prompt", "negatives": "negatives",
                  **{k: "cohort" for k in ck.COHORT_KINDS}}.get(change)
        if column and changed_to:
            out[column] = changed_to
        return out
    orient = 1.0 if row["model_a"] == better else -1.0
    est = orient * row["estimate"]
    lo, hi = sorted((orient * row["ci_low"], orient * row["ci_high"]))
    out.update(estimate=est, ci_low=lo, ci_high=hi,
               qualification=ck.qualify_sorted(note, row.get("qualification", "")))
    if verdict is None:
        out["verdict"] = ck.verdict_difference(est, lo, hi, -1 if lower_is_better else 1)
        # an interval that left replicates out decides nothing (as a declared claim's)
        out["verdict"], out["qualification"] = ck.verdict_untrusted(
            out["verdict"], out["qualification"], small=False,
            n_degenerate=row.get("n_degenerate"), n_resamples=row.get("n_resamples"))
    for k in ("prompt", "cohort", "negatives", "prevalence", "threshold"):
        if k in row.index:
            out[k] = row[k]
    return out


def _first(df: pd.DataFrame) -> pd.Series | None:
    return df.iloc[0] if len(df) else None


def _ranking_claims(results: Mapping[str, BlockResult], study: Study) -> list[dict[str, Any]]:
    """"A ranks above B on AUROC" per primary/extension cohort, read under every change."""
    rows: list[dict[str, Any]] = []
    diffs = ck.table(results, NAME, "model_differences")
    if diffs.empty:
        return rows
    by_prompt = ck.table(results, "prompts", "model_differences_by_prompt")
    by_group = ck.table(results, "spectrum", "model_differences")
    prev = ck.table(results, "prevalence", "differences")
    # each cell below is one lookup (the first row per key and model pair, as the filters
    # it replaces found it), not a filter of the whole table
    at_cohort = ck.PairIndex(diffs, ["cohort"])
    at_prompt = ck.PairIndex(by_prompt, ["cohort", "prompt"])
    at_group = ck.PairIndex(by_group, ["cohort", "negatives"])
    at_prev = ck.PairIndex(prev, ["cohort", "prevalence"])
    n = 0
    for cohort in study.cohorts_with_role("primary", "extension"):
        base = diffs[(diffs["cohort"] == cohort) & (diffs["criterion"] == "roc_auc_difference")]
        for _, r in base.sort_values(["model_a", "model_b"]).iterrows():
            a, b = r["model_a"], r["model_b"]
            hi_m, lo_m = (a, b) if r["estimate"] >= 0 else (b, a)
            n += 1
            claim = {"claim_id": f"R{n:02d}", "claim": f"{hi_m} ranks above {lo_m} on AUROC",
                     "kind": "ranking", "model": f"{hi_m} vs {lo_m}", "prompt": r["prompt"],
                     "cohort": cohort, "negatives": r["negatives"], "prevalence": "observed",
                     "threshold": None, "criterion": "roc_auc", "verdict": ""}
            src = f"{NAME}.model_differences"
            rows.append(_cell(claim, "at E", "", r, hi_m, source=src))
            for other in study.cohorts:
                if other != cohort:
                    o = at_cohort.first(a, b, "roc_auc_difference", other)
                    rows.append(_cell(claim, ck.cohort_axis(study, other), other, o, hi_m,
                                      source=src))
            if not by_prompt.empty:
                bp = by_prompt[(by_prompt["cohort"] == cohort) & (by_prompt["prompt"] != r["prompt"])]
                for p in dict.fromkeys(bp["prompt"]):
                    o = at_prompt.first(a, b, "roc_auc_difference", cohort, p)
                    rows.append(_cell(claim, "prompt", p, o, hi_m,
                                      source="prompts.model_differences_by_prompt"))
            if not by_group.empty:
                bg = by_group[by_group["cohort"] == cohort]
                for g in dict.fromkeys(bg["negatives"]):
                    o = at_group.first(a, b, "roc_auc_difference", cohort, g)
                    rows.append(_cell(claim, "negatives", g, o, hi_m,
                                      source="spectrum.model_differences"))
            o = at_cohort.first(a, b, "soft_roc_auc_difference", cohort)
            if o is not None:  # the cohort has soft labels: the reference standard as a changed element
                rows.append(_cell(claim, "reference", "soft labels", o, hi_m, source=src,
                                  criterion="soft_roc_auc"))
            o = at_cohort.first(a, b, "brier_score_difference", cohort)
            rows.append(_cell(claim, "criterion", "brier_score", o, hi_m, lower_is_better=True,
                              source=src, criterion="brier_score"))
            if not prev.empty:
                pv = prev[prev["cohort"] == cohort]
                for pi in dict.fromkeys(pv["prevalence"]):
                    o = at_prev.first(a, b, "brier_score_difference", cohort, pi)
                    rows.append(_cell(claim, "criterion at prevalence", f"brier_score at π={pi}",
                                      o, hi_m,
                                      lower_is_better=True, source="prevalence.differences",
                                      criterion=f"brier_score[prevalence={pi}]"))
    return rows


def _level_cell(claim: dict[str, Any], level: float, change: str, to: str, row: Any,
                note: str = "", source: str = f"{NAME}.metrics", **e: Any) -> dict[str, Any]:
    """One matrix cell of an "AUROC >= level" claim read from ``row`` (None: not assessed)."""
    out = {**claim, **e, "change": change, "changed_to": to, "source_table": source,
           "estimate": math.nan, "ci_low": math.nan, "ci_high": math.nan,
           "verdict": "not assessed", "qualification": note}
    if row is not None:
        lo, hi = row.get("ci_low", math.nan), row.get("ci_high", math.nan)
        out.update(estimate=row["estimate"], ci_low=lo, ci_high=hi,
                   qualification=ck.qualify_sorted(note, row.get("qualification", "")))
        est = pd.to_numeric(row["estimate"], errors="coerce")
        if not np.isfinite(est):  # undefined (e.g. a subgroup without positives): no verdict
            out["verdict"] = "not defined"
        elif isinstance(lo, float) and math.isnan(lo):  # a point estimate only
            out["verdict"] = "holds" if est >= level else "does not hold"
            out["qualification"] = ck.qualify_sorted(out["qualification"], ck.POINT_ONLY)
        else:
            out["verdict"], out["qualification"] = ck.verdict_untrusted(
                ck.verdict_level(row["estimate"], lo, hi, level), out["qualification"],
                small=False, n_degenerate=row.get("n_degenerate"),
                n_resamples=row.get("n_resamples"))
    return out


def _reliability_claims(results: Mapping[str, BlockResult], study: Study) -> list[dict[str, Any]]:
    """"m separates positives from controls with AUROC >= L" (paper 000's reliability claims)."""
    level = study.auroc_at_least
    metrics = ck.table(results, NAME, "metrics")
    if level is None or metrics.empty:
        return []
    auc = metrics[metrics["criterion"] == "roc_auc"]
    matrix = ck.table(results, "prompts", "auroc_matrix")
    groups = ck.table(results, "spectrum", "groups")
    rows: list[dict[str, Any]] = []
    n = 0
    for cohort in study.cohorts_with_role("primary", "extension"):
        base = auc[(auc["cohort"] == cohort) & (auc["estimate"] >= level)]
        for _, r in base.sort_values("model").iterrows():
            n += 1
            m = r["model"]
            claim = {"claim_id": f"L{n:02d}", "claim": f"{m} separates positives from controls "
                     f"with AUROC ≥ {level:g}", "kind": "reliability", "model": m,
                     "prompt": r["prompt"], "cohort": cohort, "negatives": r["negatives"],
                     "prevalence": "observed", "threshold": None, "criterion": "roc_auc"}
            rows.append(_level_cell(claim, level, "at E", "", r))
            for other in study.cohorts:
                if other != cohort:
                    o = auc[(auc["cohort"] == other) & (auc["model"] == m)]
                    rows.append(_level_cell(claim, level, ck.cohort_axis(study, other), other,
                                            _first(o), cohort=other))
            if not matrix.empty:
                mp = matrix[(matrix["cohort"] == cohort) & (matrix["model"] == m)
                            & (matrix["prompt"] != r["prompt"])
                            & (matrix["criterion"] == "roc_auc" if "criterion" in matrix
                               else True)]
                for _, o in mp.iterrows():
                    rows.append(_level_cell(claim, level, "prompt", o["prompt"], o,
                                            source="prompts.auroc_matrix", prompt=o["prompt"]))
            if not groups.empty:
                g = groups[(groups["cohort"] == cohort) & (groups["model"] == m)
                           & (groups["criterion"] == "roc_auc")]
                for _, o in g.iterrows():
                    rows.append(_level_cell(claim, level, "negatives", o["negatives"], o,
                                            source="spectrum.groups", negatives=o["negatives"]))
            sub = results.get("subgroups")
            if sub is not None and r["prompt"] == study.primary_prompt:
                lv = subgroup_rows(sub.tables, model=m, cohort=cohort, criterion="roc_auc")
                for _, o in (lv[lv["group"] != ALL] if len(lv) else lv).iterrows():
                    cell = _level_cell(claim, level, "subgroup", f"{o['subgroup']} = {o['group']}",
                                       o, source="subgroups.metrics")
                    cell["verdict"], cell["qualification"] = ck.verdict_untrusted(
                        cell["verdict"], cell["qualification"],
                        small="small group" in str(o.get("qualification", "")),
                        n_degenerate=o.get("n_degenerate"), n_resamples=o.get("n_resamples"))
                    rows.append(cell)
            soft = metrics[(metrics["cohort"] == cohort) & (metrics["model"] == m)
                           & (metrics["prompt"] == r["prompt"])
                           & (metrics["negatives"] == r["negatives"])
                           & (metrics["criterion"] == "soft_roc_auc")]
            if len(soft):
                cell = _level_cell(claim, level, "reference", "soft labels", soft.iloc[0],
                                   criterion="soft_roc_auc")
                ceiling = ck.to_float(soft.iloc[0].get("ceiling"))
                if math.isfinite(ceiling):
                    cell["ceiling"] = ceiling
                    cell["verdict"] = ck.verdict_ceiling(cell["verdict"], ceiling, level)
                    cell["qualification"] = ck.qualify_sorted(
                        cell["qualification"], f"achievable ceiling under soft labels "
                        f"{ceiling:.3f}" + (f" is below {level:g}" if ceiling < level else ""))
                rows.append(cell)
    return rows
