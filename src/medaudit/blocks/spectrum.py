"""Negative spectrum: how a model's AUROC depends on which negatives it is asked to reject.

Paper 000 M0.9 (estimands) and M0.10 (shared-positive bootstrap, permutation test of
group membership, Holm over the declared family); Tables 9-11.

For each entry of ``spec.spectrum`` (cohort C, negative groups G_1..G_k, optional
reference, test, optional prevalence pi) the positives P are the label-1 images of C
at the primary prompt and each control group G is the images with
``negative_group == G``.  The block returns three tidy tables:

``groups``
    Per model and group: ``AUROC(P, G)`` and ``AURC`` on ``P ∪ G`` (and, when the entry
    declares ``prevalence``, ``BS_pi`` on ``P ∪ G``) with shared-positive bootstrap
    intervals (positives resampled once per replicate, each group independently).
``contrasts``
    Every pair of groups: ``AUROC(P, a) - AUROC(P, b)`` with the shared-positive
    interval of the difference, oriented named-minus-reference when a ``reference`` is
    declared and in declared order otherwise.  For ``test: permutation`` each contrast
    also gets the permutation p-value of group membership, Holm-adjusted over every
    permutation test of the block (family ``negative-spectrum-Holm``); other contrasts
    are descriptive (``pvalue`` NaN, family ``descriptive``).
``model_differences``
    For each entry and group: pairwise model AUROC differences ``A - B`` (A < B
    alphabetically) on ``P ∪ G`` from a paired within-label bootstrap, with a verdict
    (``a_better`` / ``b_better`` / ``unresolved`` by whether the interval excludes 0):
    does a model ranking survive a change of control group?

Soft labels (paper 001; issue 4 item 2).  When the score table has ``label_soft``,
``groups`` gets ``soft_roc_auc`` and ``soft_average_precision`` rows per model and
group, ``contrasts`` ``soft_roc_auc_difference`` rows per pair of groups, and
``model_differences`` ``soft_roc_auc_difference`` rows.  What a soft label means for a
*named* negative group: membership is kept as declared (P = the label-1 images, G = the
label-0 images with ``negative_group == G``, fixed by the hard label and the metadata),
and inside ``P ∪ G`` every image carries its own soft label, so a control whose readers
partly saw disease counts partly as a positive and a doubtful positive partly as a
control.  The soft metric of group G is then the soft metric of the sub-cohort
``P ∪ G`` (positives first, then G, each by image_id: the order the ordinary engine
sees, which fixes tied scores); it equals the discrimination block's soft value on a
cohort holding only P and G (up to the order of tied scores), and with 0/1 soft labels
(untied scores) the ordinary one.  Designs: every soft row is computed on the very
same resampled images as the ordinary row beside it.  The shared-positive bootstrap
evaluates the soft metrics in the same call as the ordinary ones (soft labels enter
only the metric; the strata stay P and each declared group), so the soft group
contrasts and, for a ``within_label`` cohort, the soft group rows (design
``shared_positive``) come from the ordinary rows' draws; for an ``ordinary`` cohort the
soft group rows use the B-ORD key of the ordinary rows, and the soft model differences
the ordinary cells' keys (within-label strata stay the hard labels).  Soft contrasts are
descriptive: the permutation test of group membership has no soft form.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from medaudit.blocks._base import AuditContext, BlockResult, cell_rng, spec_row, verdict
from medaudit.blocks.discrimination import SOFT_METRICS, run_paired_cell, soft_twin
from medaudit.exceptions import SchemaError
from medaudit.stats import (
    adjust_pvalues,
    bootstrap_metrics,
    negative_group_permutation_test,
    paired_bootstrap,
    shared_positive_bootstrap,
)

__all__ = ["NAME", "run", "SMALL_GROUP", "PERMUTATION_FAMILY"]

NAME = "spectrum"
#: groups with fewer images than this get a "small group" qualification
SMALL_GROUP = 30
PERMUTATION_FAMILY = "negative-spectrum-Holm"
DESCRIPTIVE_FAMILY = "descriptive"


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _small(groups: list[str], sizes: dict[str, int]) -> str:
    small = [f"{g} (n={sizes[g]})" for g in groups if sizes[g] < SMALL_GROUP]
    return f"small group (n<{SMALL_GROUP}): " + ", ".join(small) if small else ""


def _contrast_pairs(groups: list[str], reference: str | None) -> list[tuple[str, str, str]]:
    """Every pair of groups as (a, b, kind); a pair with the reference is named - reference."""
    out = []
    for i, a in enumerate(groups):
        for b in groups[i + 1:]:
            if reference is not None and a == reference:
                out.append((b, a, "versus_reference"))
            elif reference is not None and b == reference:
                out.append((a, b, "versus_reference"))
            else:
                out.append((a, b, "pairwise"))
    return out


def _interval(r, n_pos: int | None = None, n_neg: int | None = None) -> dict[str, Any]:
    """Interval columns; soft-label results pass the image counts (their n_pos is a mass)."""
    n_pos = int(r.n_pos) if n_pos is None else int(n_pos)
    n_neg = int(r.n_neg) if n_neg is None else int(n_neg)
    return {"estimate": r.estimate, "ci_low": r.ci_low, "ci_high": r.ci_high,
            "n_degenerate": r.n_degenerate, "n": r.n, "n_pos": n_pos, "n_neg": n_neg}


def _entry_arrays(ctx: AuditContext, i: int, entry) -> tuple[Any, np.ndarray, dict[str, np.ndarray]]:
    """Aligned scores of the entry's cohort, the positive mask and one mask per group."""
    w = ctx.wide(entry.cohort)  # all models at the primary prompt; refuses mismatched image sets
    pos = w.label == 1
    neg = w.label == 0
    masks = {g: neg & (w.negative_group == g) for g in entry.groups}
    problems = []
    if not pos.any():
        problems.append("it has no positives (label 1)")
    empty = [g for g, mk in masks.items() if not mk.any()]
    if empty:
        present = sorted(set(w.negative_group[neg]) - {""})
        problems.append(f"declared group(s) {empty} have no negative images (groups present: "
                        f"{present})")
    if problems:
        raise SchemaError(f"spectrum[{i}] on cohort {entry.cohort!r} at prompt "
                          f"{ctx.spec.primary_prompt!r}: " + "; ".join(problems)
                          + ". Every declared group needs images and the cohort needs positives.")
    return w, pos, masks


# Independent cells for ``ctx.map`` (module level, so a backend can ship them to workers);
# each draws only from cell_rng(seed, *key) with the keys the block has always used.
def _model_cell(cell: dict[str, Any]) -> tuple[Any, dict, dict, dict | None]:
    """One entry x model: shared-positive bootstrap, B-ORD marginals, permutation tests,
    and the soft-label marginals when the cell carries soft labels (else None)."""
    seed, key, pos, neg = cell["seed"], cell["key"], cell["positives"], cell["negatives"]
    n_res, level, metrics = cell["n_resamples"], cell["confidence_level"], cell["metrics"]
    soft = cell.get("soft_positives") is not None
    # the soft metrics ride on the same call (so on the very same replicate weights);
    # extra metrics consume no random numbers, so the ordinary results do not change
    sp = shared_positive_bootstrap(
        pos, neg, metrics=list(metrics) + (list(SOFT_METRICS) if soft else []),
        contrasts=cell["contrasts"], n_resamples=n_res, confidence_level=level,
        p_true_pos=cell["soft_positives"] if soft else None,
        p_true_negatives=cell["soft_negatives"] if soft else None,
        rng=cell_rng(seed, *key, "shared_positive", cell["groups"]))
    marginal = sp.marginal
    if cell["design"] == "ordinary":
        # M0.10: TBX marginal intervals are B-ORD on the P ∪ G subset (class mix
        # varies); the shared-positive draw serves the contrasts
        marginal = {}
        for g, sg in neg.items():
            # positives first, then the group (each by image_id): the item order the
            # shared-positive engine sees, so tie order in confidence (AURC) agrees
            yg = np.r_[np.ones(pos.size), np.zeros(sg.size)]
            res = bootstrap_metrics(yg, np.r_[pos, sg], metrics=metrics, design="ordinary",
                                    n_resamples=n_res, confidence_level=level,
                                    rng=cell_rng(seed, *key, "marginal", g))
            marginal.update({(g, mid): r for mid, r in res.items()})
    perms = {(a, b): negative_group_permutation_test(
        pos, neg[a], neg[b], n_resamples=cell["n_permutations"],
        rng=cell_rng(seed, *key, "permutation", a, b)) for a, b in cell["permutation_pairs"]}
    return sp, marginal, perms, _soft_marginals(cell, sp)


def _soft_marginals(cell: dict[str, Any], sp) -> dict | None:
    """Soft AUROC/AP of P ∪ G per group (see the module docstring for the designs)."""
    if cell.get("soft_positives") is None:
        return None
    if cell["design"] != "ordinary":  # the shared-positive draw of the ordinary rows
        return {(g, mid): sp.marginal[(g, mid)] for g in cell["negatives"] for mid in SOFT_METRICS}
    seed, key, pos, neg = cell["seed"], cell["key"], cell["positives"], cell["negatives"]
    out = {}
    for g, sg in neg.items():
        # the B-ORD marginal's own key and layout (P, then G): the same draws
        res = bootstrap_metrics(np.r_[cell["soft_positives"], cell["soft_negatives"][g]],
                                np.r_[pos, sg], metrics=SOFT_METRICS, design="ordinary",
                                n_resamples=cell["n_resamples"],
                                confidence_level=cell["confidence_level"],
                                rng=cell_rng(seed, *key, "marginal", g))
        out.update({(g, mid): r for mid, r in res.items()})
    return out


def _differences_cell(cell: dict[str, Any]):
    """One entry x group: paired bootstrap of every model on P ∪ G."""
    return paired_bootstrap(cell["label"], cell["scores"], metrics=["roc_auc"],
                            design=cell["design"], n_resamples=cell["n_resamples"],
                            confidence_level=cell["confidence_level"],
                            rng=cell_rng(cell["seed"], *cell["key"]))


def _soft_contrast(row: dict[str, Any], sp, a: str, b: str, n_pos: int, n_neg: int
                   ) -> dict[str, Any]:
    """The soft twin of a group-contrast row: same draws, no permutation test.

    The permutation test of group membership is defined for hard labels only, so the
    soft row is descriptive whatever the entry's ``test``.
    """
    d = sp.differences[(a, b, "soft_roc_auc")]
    return {**row, "criterion": "soft_roc_auc_difference", "design": d.design,
            "family": DESCRIPTIVE_FAMILY, "auroc_a": sp.marginal[(a, "soft_roc_auc")].estimate,
            "auroc_b": sp.marginal[(b, "soft_roc_auc")].estimate,
            **_interval(d, n_pos, n_neg), "n": n_pos + n_neg, "pvalue": math.nan,
            "pvalue_adj": math.nan, "significant": pd.NA, "test": "none", "n_permutations": 0}


def run(ctx: AuditContext) -> BlockResult:
    """Negative-spectrum tables ``groups``, ``contrasts`` and ``model_differences``."""
    spec = ctx.spec
    prompt = spec.primary_prompt
    models = ctx.models()
    n_res, level, n_perm = spec.n_resamples, spec.confidence_level, spec.n_permutations
    probabilities = spec.score_scale == "probabilities"
    cohort_order = list(spec.cohorts)
    entries = sorted(enumerate(spec.spectrum),
                     key=lambda e: (cohort_order.index(e[1].cohort)
                                    if e[1].cohort in cohort_order else len(cohort_order), e[0]))
    group_rows: list[dict[str, Any]] = []
    contrast_rows: list[dict[str, Any]] = []
    diff_rows: list[dict[str, Any]] = []
    notes: list[str] = []
    soft_entries: list[str] = []
    if not probabilities and entries:
        notes.append("score_scale is 'logits': AURC and Brier need probabilities and are not "
                     "reported; AUROC contrasts are unaffected.")
    for i, entry in entries:
        ctx.tick(f"{NAME}: entry {entry.cohort}")
        cohort, groups = entry.cohort, list(entry.groups)
        w, pos, masks = _entry_arrays(ctx, i, entry)
        soft = w.label_soft
        if soft is not None:
            soft_entries.append(f"spectrum[{i}] {cohort}")
        sizes = {g: int(mk.sum()) for g, mk in masks.items()}
        metrics: list[Any] = ["roc_auc"]
        if probabilities:
            metrics.append("aurc")
            if entry.prevalence is not None:
                metrics.append(("brier_score", {"prevalence": entry.prevalence}))
        pairs = _contrast_pairs(groups, entry.reference)
        design = ctx.cohort_design(cohort)
        cells = [{"positives": w.scores[f"{m}|{prompt}"][pos],
                  "negatives": {g: w.scores[f"{m}|{prompt}"][masks[g]] for g in groups},
                  "groups": tuple(groups),
                  "metrics": metrics, "contrasts": [(a, b) for a, b, _ in pairs],
                  "permutation_pairs": ([(a, b) for a, b, _ in pairs]
                                        if entry.test == "permutation" else []),
                  "design": design, "n_resamples": n_res, "n_permutations": n_perm,
                  "confidence_level": level, "seed": ctx.seed, "key": (NAME, cohort, m),
                  "soft_positives": None if soft is None else soft[pos],
                  "soft_negatives": None if soft is None else {g: soft[masks[g]] for g in groups}}
                 for m in models]
        for m, (sp, marginal, perms, smarg) in zip(models, ctx.map(_model_cell, cells),
                                                   strict=True):
            expo = ctx.exposure(m, cohort)
            for g in groups:
                qual = _join(expo, _small([g], sizes))
                for mid in [x for x in sp.options["metrics"] if x not in SOFT_METRICS]:
                    r = marginal[(g, mid)]
                    prev = entry.prevalence if mid.startswith("brier_score") else "observed"
                    group_rows.append(spec_row(
                        model=m, prompt=prompt, cohort=cohort, negatives=g, prevalence=prev,
                        criterion=mid, design=r.design, n_resamples=n_res, seed=ctx.seed,
                        family=None, entry=i, group=g, **_interval(r), qualification=qual))
                for mid in SOFT_METRICS if smarg is not None else ():
                    r = smarg[(g, mid)]
                    group_rows.append(spec_row(
                        model=m, prompt=prompt, cohort=cohort, negatives=g, prevalence="observed",
                        criterion=mid, design=r.design, n_resamples=n_res, seed=ctx.seed,
                        family=None, entry=i, group=g, **_interval(r, pos.sum(), sizes[g]),
                        qualification=qual))
            for a, b, kind in pairs:
                d = sp.differences[(a, b, "roc_auc")]
                row = spec_row(
                    model=m, prompt=prompt, cohort=cohort, negatives=f"{a} - {b}",
                    criterion="roc_auc_difference", design=d.design, n_resamples=n_res,
                    seed=ctx.seed, family=DESCRIPTIVE_FAMILY, entry=i, group_a=a, group_b=b,
                    contrast=kind, auroc_a=sp.marginal[(a, "roc_auc")].estimate,
                    auroc_b=sp.marginal[(b, "roc_auc")].estimate,
                    **{**_interval(d), "n": int(pos.sum()) + sizes[a] + sizes[b],
                       "n_neg": sizes[a] + sizes[b]},
                    pvalue=math.nan, pvalue_adj=math.nan, significant=pd.NA,
                    test="none", n_permutations=0,
                    qualification=_join(expo, _small([a, b], sizes)))
                if entry.test == "permutation":
                    perm = perms[(a, b)]
                    row.update(family=PERMUTATION_FAMILY, pvalue=perm.pvalue, test="permutation",
                               n_permutations=n_perm)
                contrast_rows.append(row)
                if smarg is not None:
                    contrast_rows.append(_soft_contrast(row, sp, a, b, int(pos.sum()),
                                                        sizes[a] + sizes[b]))
        if len(models) >= 2:
            subs = [pos | masks[g] for g in groups]
            cells = [{"label": w.label[sub], "scores": {m: w.scores[f"{m}|{prompt}"][sub]
                                                        for m in models},
                      "design": design, "n_resamples": n_res, "confidence_level": level,
                      "seed": ctx.seed, "key": (NAME, cohort, "model_differences", g)}
                     for g, sub in zip(groups, subs, strict=True)]
            twins = [] if soft is None else [
                soft_twin({**c, "metrics": ("roc_auc",)}, soft[sub], metrics=("soft_roc_auc",))
                for c, sub in zip(cells, subs, strict=True)]
            results = ctx.map(_differences_cell, cells)
            soft_res = ctx.map(run_paired_cell, twins) if twins else [None] * len(groups)
            for g, pb, spb in zip(groups, results, soft_res, strict=True):
                counts = (int(pos.sum()), sizes[g])
                for j, a in enumerate(models):
                    for b in models[j + 1:]:
                        for r, mid, cnt in [(pb, "roc_auc", (None, None))] + (
                                [(spb, "soft_roc_auc", counts)] if spb is not None else []):
                            d = r.differences[(a, b, mid)]
                            diff_rows.append(spec_row(
                                model=f"{a} - {b}", prompt=prompt, cohort=cohort, negatives=g,
                                criterion=f"{mid}_difference", design=d.design, n_resamples=n_res,
                                seed=ctx.seed, family=None, entry=i, group=g, model_a=a,
                                model_b=b, auroc_a=r.marginal[(a, mid)].estimate,
                                auroc_b=r.marginal[(b, mid)].estimate, **_interval(d, *cnt),
                                verdict=verdict(d.ci_low, d.ci_high, +1),
                                qualification=_join(
                                    *(f"{x}: {ctx.exposure(x, cohort)}" for x in (a, b)
                                      if ctx.exposure(x, cohort)), _small([g], sizes))))
    contrasts = pd.DataFrame(contrast_rows)
    if not contrasts.empty:
        fam = (contrasts["family"] == PERMUTATION_FAMILY).to_numpy()
        alpha = round(1.0 - level, 12)
        if fam.any():
            adj = adjust_pvalues(contrasts.loc[fam, "pvalue"].to_numpy(), method="holm",
                                 alpha=alpha, family=PERMUTATION_FAMILY)
            contrasts.loc[fam, "pvalue_adj"] = adj.pvalues_adjusted
            contrasts["significant"] = contrasts["significant"].astype("boolean")
            contrasts.loc[fam, "significant"] = adj.reject
            notes.append(f"Permutation tests of negative-group membership ({n_perm} permutations, "
                         f"two-sided, p = (1+b)/(1+B)) are Holm-adjusted over the declared family "
                         f"{PERMUTATION_FAMILY!r} of m = {adj.m} tests (all entries and models); "
                         f"significant at alpha = {alpha:g}.")
        contrasts["significant"] = contrasts["significant"].astype("boolean")
    if soft_entries:
        notes.append(f"Soft labels (label_soft) in {', '.join(soft_entries)}: soft_roc_auc and "
                     "soft_average_precision of P ∪ G per group (membership by the hard label and "
                     "negative_group; each image weighted by its own soft label), "
                     "soft_roc_auc_difference group contrasts and model differences, each from the "
                     "very draws of the ordinary row beside it (group rows: B-ORD on ordinary-design "
                     "cohorts, shared-positive otherwise; contrasts: shared-positive; model "
                     "differences: the paired cells). Soft contrasts are descriptive: the "
                     "permutation test of group membership is defined for hard labels only. "
                     "n, n_pos, n_neg count images.")
    notes.append("Group AUROC/AURC intervals and group contrasts use the shared-positive bootstrap "
                 "(positives resampled once per replicate, each group within itself); model "
                 "differences use the paired within-label bootstrap on P ∪ G.")
    tables = {"groups": pd.DataFrame(group_rows), "contrasts": contrasts,
              "model_differences": pd.DataFrame(diff_rows)}
    for t in tables.values():
        if "prevalence" in t.columns:  # "observed" or a number: keep one dtype whatever the mix
            t["prevalence"] = t["prevalence"].astype(object)
    return BlockResult(name=NAME, tables=tables, notes=tuple(notes))
