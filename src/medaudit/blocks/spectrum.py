"""Negative spectrum: how a model's AUROC depends on which negatives it is asked to reject.

Paper 000 M0.9 (estimands) and M0.10 (shared-positive bootstrap, permutation test of
group membership, Holm over the declared family); Tables 9-11.

For each entry of the spec's ``spectrum:`` list (cohort C, negative groups G_1..G_k, optional
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

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.cells import SOFT_METRICS, BootstrapCell, run_cells
from medaudit.blocks.context import AuditContext, Resampling, cell_rng
from medaudit.blocks.notes import constant_scores_note, exposure_note, join
from medaudit.blocks.rows import interval, spec_row, verdict
from medaudit.exceptions import SchemaError
from medaudit.io.specfile import fraction
from medaudit.stats import (
    adjust_pvalues,
    bootstrap_metrics,
    negative_group_permutation_test,
    shared_positive_bootstrap,
)

__all__ = ["Spectrum", "SpectrumEntry", "SharedPositiveCell", "run_shared_positive", "SMALL_GROUP",
           "PERMUTATION_FAMILY"]

NAME = "spectrum"
#: groups with fewer images than this get a "small group" qualification
SMALL_GROUP = 30
PERMUTATION_FAMILY = "negative-spectrum-Holm"
DESCRIPTIVE_FAMILY = "descriptive"


class SpectrumEntry(BlockConfig):
    """One cohort's negative groups: the positives against each named control group."""

    cohort: str
    groups: list[str] = Field(min_length=2)
    #: named-group contrasts against this reference group (paper 000 Tables 10-11)
    reference: str | None = None
    #: permutation test of group membership for two-group contrasts (Table 9)
    test: Literal["permutation", "none"] = "permutation"
    prevalence: float | None = None  # Brier against each group at this pi (descriptive)

    @model_validator(mode="after")
    def _check(self) -> SpectrumEntry:
        if len(set(self.groups)) != len(self.groups):
            raise ValueError(f"groups repeat a name: {self.groups}")
        if self.reference is not None and self.reference not in self.groups:
            raise ValueError(f"reference {self.reference!r} must be one of groups {self.groups}")
        if self.prevalence is not None:
            fraction(self.prevalence, "prevalence")
        return self


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
    """Interval columns with integer counts; soft-label results pass the image counts
    (their n_pos is a label mass)."""
    return interval(r, n_pos=int(r.n_pos) if n_pos is None else int(n_pos),
                    n_neg=int(r.n_neg) if n_neg is None else int(n_neg))


def _entry_arrays(ctx: AuditContext, i: int, entry: SpectrumEntry
                  ) -> tuple[Any, np.ndarray, dict[str, np.ndarray]]:
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
                          f"{ctx.primary_prompt!r}: " + "; ".join(problems)
                          + ". Every declared group needs images and the cohort needs positives.")
    return w, pos, masks


@dataclasses.dataclass(frozen=True, eq=False)
class SharedPositiveCell:
    """One entry x model: the positives against each declared group, resampled together."""

    key: tuple[Any, ...]
    positives: np.ndarray
    #: group -> the scores of its negatives
    negatives: Mapping[str, np.ndarray]
    groups: tuple[str, ...]
    metrics: tuple[Any, ...]
    contrasts: tuple[tuple[str, str], ...]
    permutation_pairs: tuple[tuple[str, str], ...]
    #: the cohort's marginal design ("ordinary": B-ORD group intervals)
    design: str
    soft_positives: np.ndarray | None = None
    soft_negatives: Mapping[str, np.ndarray] | None = None

    #: three passes over the cell's arrays per replicate: the shared-positive draw, the
    #: B-ORD marginals and the permutation tests (for the local pool's work estimate)
    work_factor = 3.0


# Each cell draws only from cell_rng(seed, *key, ...) with the keys the block has always used.
def run_shared_positive(cell: SharedPositiveCell, resampling: Resampling
                        ) -> tuple[Any, dict, dict, dict | None]:
    """Shared-positive bootstrap, B-ORD marginals, permutation tests, and the soft-label
    marginals when the cell carries soft labels (else None)."""
    seed, key, pos, neg = resampling.seed, cell.key, cell.positives, dict(cell.negatives)
    n_res, level, metrics = resampling.n_resamples, resampling.confidence_level, cell.metrics
    soft = cell.soft_positives is not None
    # the soft metrics ride on the same call (so on the very same replicate weights);
    # extra metrics consume no random numbers, so the ordinary results do not change
    sp = shared_positive_bootstrap(
        pos, neg, metrics=list(metrics) + (list(SOFT_METRICS) if soft else []),
        contrasts=list(cell.contrasts), n_resamples=n_res, confidence_level=level,
        p_true_pos=cell.soft_positives if soft else None,
        p_true_negatives=dict(cell.soft_negatives) if soft else None,
        rng=cell_rng(seed, *key, "shared_positive", cell.groups))
    marginal = sp.marginal
    if cell.design == "ordinary":
        # M0.10: TBX marginal intervals are B-ORD on the P ∪ G subset (class mix
        # varies); the shared-positive draw serves the contrasts
        marginal = {}
        for g, sg in neg.items():
            # positives first, then the group (each by image_id): the item order the
            # shared-positive engine sees, so tie order in confidence (AURC) agrees
            yg = np.r_[np.ones(pos.size), np.zeros(sg.size)]
            res = bootstrap_metrics(yg, np.r_[pos, sg], metrics=list(metrics), design="ordinary",
                                    n_resamples=n_res, confidence_level=level,
                                    rng=cell_rng(seed, *key, "marginal", g))
            marginal.update({(g, mid): r for mid, r in res.items()})
    perms = {(a, b): negative_group_permutation_test(
        pos, neg[a], neg[b], n_resamples=resampling.n_permutations,
        rng=cell_rng(seed, *key, "permutation", a, b)) for a, b in cell.permutation_pairs}
    return sp, marginal, perms, _soft_marginals(cell, sp, resampling)


def _soft_marginals(cell: SharedPositiveCell, sp, resampling: Resampling) -> dict | None:
    """Soft AUROC/AP of P ∪ G per group (see the module docstring for the designs)."""
    if cell.soft_positives is None:
        return None
    if cell.design != "ordinary":  # the shared-positive draw of the ordinary rows
        return {(g, mid): sp.marginal[(g, mid)] for g in cell.negatives for mid in SOFT_METRICS}
    out = {}
    for g, sg in cell.negatives.items():
        # the B-ORD marginal's own key and layout (P, then G): the same draws
        res = bootstrap_metrics(np.r_[cell.soft_positives, cell.soft_negatives[g]],
                                np.r_[cell.positives, sg], metrics=SOFT_METRICS, design="ordinary",
                                n_resamples=resampling.n_resamples,
                                confidence_level=resampling.confidence_level,
                                rng=cell_rng(resampling.seed, *cell.key, "marginal", g))
        out.update({(g, mid): r for mid, r in res.items()})
    return out


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


class Spectrum(Block):
    """Shared positives against each named control group (paper 000 Tables 9-11)."""

    name = NAME
    title = "Negative spectrum"
    summary = ("shared positives vs each control group, shared-positive bootstrap, permutation "
               "test + Holm (paper 000 Tables 9-11)")
    config = SpectrumEntry
    many = True
    no_entries = ("no `spectrum:` entries are declared (a cohort and its named negative groups, "
                  "from the `negative_group` column)")
    tables = (
        TableSchema("groups", "per entry x model x group: AUROC(P, G) and AURC on P ∪ G",
                    ("entry", "group", "estimate", "ci_low", "ci_high", "n_degenerate", "n", "n_pos",
                     "n_neg", "qualification")),
        TableSchema("contrasts", "every pair of groups: AUROC(P, a) - AUROC(P, b)",
                    ("entry", "group_a", "group_b", "contrast", "estimate", "ci_low", "ci_high",
                     "pvalue", "pvalue_adj", "significant", "test")),
        TableSchema("model_differences", "model differences A - B on P ∪ G per group",
                    ("entry", "group", "model_a", "model_b", "estimate", "ci_low", "ci_high",
                     "verdict")),
    )
    figures = ("fig3_spectrum",)

    def multiplicity(self, config: list[SpectrumEntry]) -> str:
        return "Holm over all negative-group permutation tests"

    def check(self, config: list[SpectrumEntry], table: pd.DataFrame, cohorts) -> list[str]:
        from medaudit.blocks.checks import unknown

        errs: list[str] = []
        present = set(table["cohort"].unique())
        for i, sp in enumerate(config):
            errs += unknown("cohort", [sp.cohort], cohorts, f"spectrum[{i}].cohort")
            if sp.cohort in present and "negative_group" in table.columns:
                g = table.loc[(table["cohort"] == sp.cohort) & (table["label"] == 0), "negative_group"]
                errs += unknown("negative group", sp.groups, set(g.unique()) - {""},
                                f"spectrum[{i}].groups")
            elif "negative_group" not in table.columns:
                errs.append(f"  - spectrum[{i}]: the table has no 'negative_group' column")
        return errs


    def run(self, ctx: AuditContext, config: list[SpectrumEntry]) -> BlockResult:
        """Negative-spectrum tables ``groups``, ``contrasts`` and ``model_differences``."""
        cohort_order = ctx.cohorts
        entries = sorted(enumerate(config),
                         key=lambda e: (cohort_order.index(e[1].cohort)
                                        if e[1].cohort in cohort_order else len(cohort_order), e[0]))
        group_rows: list[dict[str, Any]] = []
        contrast_rows: list[dict[str, Any]] = []
        diff_rows: list[dict[str, Any]] = []
        notes: list[str] = []
        soft_entries: list[str] = []
        if not ctx.probabilities and entries:
            notes.append("score_scale is 'logits': AURC and Brier need probabilities and are not "
                         "reported; AUROC contrasts are unaffected.")
        for i, entry in entries:
            ctx.tick(f"{NAME}: entry {entry.cohort}")
            w, pos, masks = _entry_arrays(ctx, i, entry)
            if w.label_soft is not None:
                soft_entries.append(f"spectrum[{i}] {entry.cohort}")
            sizes = {g: int(mk.sum()) for g, mk in masks.items()}
            _group_rows(ctx, i, entry, w, pos, masks, sizes, group_rows, contrast_rows)
            if len(ctx.models()) >= 2:
                diff_rows += _model_difference_rows(ctx, i, entry, w, pos, masks, sizes)
        contrasts = _adjust(ctx, pd.DataFrame(contrast_rows), notes)
        if soft_entries:
            notes.append(f"Soft labels (label_soft) in {', '.join(soft_entries)}: soft_roc_auc and "
                         "soft_average_precision of P ∪ G per group (membership by the hard label "
                         "and negative_group; each image weighted by its own soft label), "
                         "soft_roc_auc_difference group contrasts and model differences, each from "
                         "the very draws of the ordinary row beside it (group rows: B-ORD on "
                         "ordinary-design cohorts, shared-positive otherwise; contrasts: "
                         "shared-positive; model differences: the paired cells). Soft contrasts are "
                         "descriptive: the permutation test of group membership is defined for hard "
                         "labels only. n, n_pos, n_neg count images.")
        tables = {"groups": pd.DataFrame(group_rows), "contrasts": contrasts,
                  "model_differences": pd.DataFrame(diff_rows)}
        if entries:  # no entry, no intervals to describe
            notes.append(_design_note(tables))
        for t in tables.values():
            if "prevalence" in t.columns:  # "observed" or a number: keep one dtype whatever the mix
                t["prevalence"] = t["prevalence"].astype(object)
        return BlockResult(name=NAME, tables=tables, notes=tuple(notes))


#: what each design of this block's rows means (the ``design`` column holds the id)
_DESIGN_WORDS = {
    "ordinary": "the ordinary bootstrap of P ∪ G",
    "shared_positive": "positives resampled once per replicate, each group within itself",
    "ordinary+paired": "the paired ordinary bootstrap of P ∪ G",
    "within_label+paired": "the paired within-label bootstrap of P ∪ G",
}


def _design_note(tables: Mapping[str, pd.DataFrame]) -> str:
    """How each table's intervals were resampled, read from its ``design`` column (so the
    note and the column cannot disagree), with the cohorts of each design."""
    parts = []
    for name, what in (("groups", "Group AUROC/AURC rows"), ("contrasts", "Group contrasts"),
                       ("model_differences", "Model differences")):
        t = tables[name]
        if t.empty or "design" not in t.columns:
            continue
        hard = t[~t["criterion"].astype(str).str.startswith("soft_")] if "criterion" in t else t
        by: dict[str, list[str]] = {}
        for d, c in zip(hard["design"].astype(str), hard["cohort"].astype(str), strict=True):
            by.setdefault(d, [])
            if c not in by[d]:
                by[d].append(c)
        parts.append(f"{what}: " + "; ".join(
            f"design {d} ({', '.join(cs)}), {_DESIGN_WORDS.get(d, d)}" for d, cs in by.items()))
    return "Intervals (column design): " + ". ".join(parts) + "."


def _group_rows(ctx: AuditContext, i: int, entry: SpectrumEntry, w, pos, masks, sizes,
                group_rows: list, contrast_rows: list) -> None:
    """Group metrics and group contrasts of one entry (one shared-positive cell per model)."""
    prompt, models, cohort, groups = ctx.primary_prompt, ctx.models(), entry.cohort, list(entry.groups)
    soft = w.label_soft
    n_res, n_perm = ctx.resampling.n_resamples, ctx.resampling.n_permutations
    metrics: list[Any] = ["roc_auc"]
    if ctx.probabilities:
        metrics.append("aurc")
        if entry.prevalence is not None:
            metrics.append(("brier_score", {"prevalence": entry.prevalence}))
    pairs = _contrast_pairs(groups, entry.reference)
    cells = [SharedPositiveCell(
        key=(NAME, cohort, m), positives=w.scores[f"{m}|{prompt}"][pos],
        negatives={g: w.scores[f"{m}|{prompt}"][masks[g]] for g in groups}, groups=tuple(groups),
        metrics=tuple(metrics), contrasts=tuple((a, b) for a, b, _ in pairs),
        permutation_pairs=(tuple((a, b) for a, b, _ in pairs) if entry.test == "permutation"
                           else ()),
        design=ctx.cohort_design(cohort),
        soft_positives=None if soft is None else soft[pos],
        soft_negatives=None if soft is None else {g: soft[masks[g]] for g in groups})
        for m in models]
    run = functools.partial(run_shared_positive, resampling=ctx.resampling)
    for m, cell, (sp, marginal, perms, smarg) in zip(models, cells, ctx.map(run, cells),
                                                     strict=True):
        expo = exposure_note(ctx, m, cohort, label="")
        for g in groups:
            qual = join(expo, _small([g], sizes))
            # the positives and this group scored alike: the rank metrics say so on their rows
            alike = np.r_[cell.positives, cell.negatives[g]]
            for mid in [x for x in sp.options["metrics"] if x not in SOFT_METRICS]:
                r = marginal[(g, mid)]
                prev = entry.prevalence if mid.startswith("brier_score") else "observed"
                group_rows.append(spec_row(
                    model=m, prompt=prompt, cohort=cohort, negatives=g, prevalence=prev,
                    criterion=mid, design=r.design, n_resamples=n_res,
                    family=None, entry=i, group=g, **_interval(r),
                    qualification=join(qual, constant_scores_note(alike, mid))))
            for mid in SOFT_METRICS if smarg is not None else ():
                r = smarg[(g, mid)]
                group_rows.append(spec_row(
                    model=m, prompt=prompt, cohort=cohort, negatives=g, prevalence="observed",
                    criterion=mid, design=r.design, n_resamples=n_res,
                    family=None, entry=i, group=g, **_interval(r, pos.sum(), sizes[g]),
                    qualification=qual))
        for a, b, kind in pairs:
            d = sp.differences[(a, b, "roc_auc")]
            row = spec_row(
                model=m, prompt=prompt, cohort=cohort, negatives=f"{a} - {b}",
                criterion="roc_auc_difference", design=d.design, n_resamples=n_res,
                family=DESCRIPTIVE_FAMILY, entry=i, group_a=a, group_b=b,
                contrast=kind, auroc_a=sp.marginal[(a, "roc_auc")].estimate,
                auroc_b=sp.marginal[(b, "roc_auc")].estimate,
                **{**_interval(d), "n": int(pos.sum()) + sizes[a] + sizes[b],
                   "n_neg": sizes[a] + sizes[b]},
                pvalue=math.nan, pvalue_adj=math.nan, significant=pd.NA,
                test="none", n_permutations=0,
                qualification=join(expo, _small([a, b], sizes)))
            if entry.test == "permutation":
                perm = perms[(a, b)]
                row.update(family=PERMUTATION_FAMILY, pvalue=perm.pvalue, test="permutation",
                           n_permutations=n_perm)
            contrast_rows.append(row)
            if smarg is not None:
                contrast_rows.append(_soft_contrast(row, sp, a, b, int(pos.sum()),
                                                    sizes[a] + sizes[b]))


def _model_difference_rows(ctx: AuditContext, i: int, entry: SpectrumEntry, w, pos, masks,
                           sizes) -> list[dict[str, Any]]:
    """Model differences A - B on P ∪ G, one paired cell (and its soft twin) per group."""
    prompt, models, cohort, groups = ctx.primary_prompt, ctx.models(), entry.cohort, list(entry.groups)
    soft = w.label_soft
    subs = [pos | masks[g] for g in groups]
    cells = [BootstrapCell(key=(NAME, cohort, "model_differences", g), label=w.label[sub],
                           scores={m: w.scores[f"{m}|{prompt}"][sub] for m in models},
                           metrics=("roc_auc",), design=ctx.cohort_design(cohort),
                           label_soft=None if soft is None else soft[sub],
                           soft_metrics=("soft_roc_auc",))
             for g, sub in zip(groups, subs, strict=True)]
    rows = []
    for g, res in zip(groups, run_cells(ctx, cells), strict=True):
        counts = (int(pos.sum()), sizes[g])
        for j, a in enumerate(models):
            for b in models[j + 1:]:
                for r, mid, cnt in [(res.hard, "roc_auc", (None, None))] + (
                        [(res.soft, "soft_roc_auc", counts)] if res.soft is not None else []):
                    d = r.differences[(a, b, mid)]
                    rows.append(spec_row(
                        model=f"{a} - {b}", prompt=prompt, cohort=cohort, negatives=g,
                        criterion=f"{mid}_difference", design=d.design,
                        n_resamples=ctx.resampling.n_resamples, family=None,
                        entry=i, group=g, model_a=a, model_b=b,
                        auroc_a=r.marginal[(a, mid)].estimate, auroc_b=r.marginal[(b, mid)].estimate,
                        **_interval(d, *cnt),
                        verdict=verdict(d.ci_low, d.ci_high, +1, n_degenerate=d.n_degenerate),
                        qualification=join(exposure_note(ctx, (a, b), cohort, label="{model}: "),
                                           _small([g], sizes))))
    return rows


def _adjust(ctx: AuditContext, contrasts: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Holm over every permutation test of the block (the declared family)."""
    if contrasts.empty:
        return contrasts
    fam = (contrasts["family"] == PERMUTATION_FAMILY).to_numpy()
    alpha = round(1.0 - ctx.resampling.confidence_level, 12)
    if fam.any():
        adj = adjust_pvalues(contrasts.loc[fam, "pvalue"].to_numpy(), method="holm",
                             alpha=alpha, family=PERMUTATION_FAMILY)
        contrasts.loc[fam, "pvalue_adj"] = adj.pvalues_adjusted
        contrasts["significant"] = contrasts["significant"].astype("boolean")
        contrasts.loc[fam, "significant"] = adj.reject
        notes.append(f"Permutation tests of negative-group membership "
                     f"({ctx.resampling.n_permutations} permutations, two-sided, p = (1+b)/(1+B)) "
                     f"are Holm-adjusted over the declared family {PERMUTATION_FAMILY!r} of m = "
                     f"{adj.m} tests (all entries and models); significant at alpha = {alpha:g}.")
    contrasts["significant"] = contrasts["significant"].astype("boolean")
    return contrasts
