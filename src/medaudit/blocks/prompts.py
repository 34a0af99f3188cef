"""Prompt sensitivity (paper 000 M0.10-M0.11; Tables 6-8, Figure 2).

Does a model's discrimination, and a ranking of models, survive a change of the
prompt family?  Tables:

``auroc_matrix``
    AUROC of every model x cohort x prompt family (point estimates; Table 6).
``contrasts``
    Paired DeLong test of AUROC(p) - AUROC(primary) for every alternative family
    p, per cohort and model (Figure 2).  Benjamini-Hochberg over the declared
    family (every contrast in ``prompts.test_cohorts``; default the primary
    cohorts); contrasts elsewhere are descriptive (``pvalue_adj`` NaN).
``average``
    The equal-weight mean of the family *scores* (M0.6 step 7, not an average of
    text embeddings) against the primary prompt: differences in AUROC and raw Brier
    with paired bootstrap intervals, on the test cohorts (Table 7).
``model_differences_by_prompt``
    Pairwise model AUROC differences A - B under each prompt family, with paired
    bootstrap intervals and a verdict (does a model ranking hold when the prompt
    changes?).
``decomposition``
    Balanced three-way sums of squares of the model x cohort x prompt matrix of
    AUROC, raw Brier and raw ECE15 (M0.11, Table 8), as shares of the total.

Soft labels (paper 001; issue 4 item 2).  When the score table has ``label_soft``,
every AUROC above gets a soft twin beside it (strict soft AUROC, the stats default; ties
in image_id order, as in the discrimination block): ``auroc_matrix`` a ``soft_roc_auc`` row per
cell; ``average`` and ``model_differences_by_prompt`` a ``soft_roc_auc_difference``
row from the *same* bootstrap cell key, hence the same resampled images (under
``within_label`` the strata stay the hard labels, see
:mod:`medaudit.blocks.cells`); ``contrasts`` a
``soft_roc_auc_difference`` row per contrast with a paired bootstrap interval (key
extended by the criterion; family ``descriptive``, no p-value: the paired DeLong test
has no soft-label form, and none is invented here); ``decomposition`` the terms of
``soft_roc_auc``.  The ordinary rows are unchanged.  ``n``, ``n_pos``, ``n_neg`` count
images by the hard label in every row.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pandas as pd
from pydantic import field_validator

from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.cells import BootstrapCell, DeLongCell, run_cells, run_delong
from medaudit.blocks.context import AuditContext
from medaudit.blocks.notes import degenerate_note, exposure_note, join
from medaudit.blocks.rows import spec_row, verdict
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.specfile import fraction
from medaudit.stats import (
    adjust_pvalues,
    brier_score,
    ece,
    roc_auc,
    soft_roc_auc,
    variance_decomposition,
)

__all__ = ["Prompts", "PromptsConfig", "DECOMPOSITION_TERMS", "BH_FAMILY"]

NAME = "prompts"
BH_FAMILY = "prompt-contrasts-BH"
DESCRIPTIVE = "descriptive"
AVERAGE = "average"
#: the seven terms of a three-way layout without replication, in table order
DECOMPOSITION_TERMS = ("model", "cohort", "prompt", "model:cohort", "model:prompt", "cohort:prompt",
                       "model:cohort:prompt")
_ECE_ID = "ece[n_bins=15]"
SOFT_AUC = "soft_roc_auc"


class PromptsConfig(BlockConfig):
    """Which prompt families are compared, and the declared BH family of the contrasts."""

    families: list[str] | None = None  # default: every prompt in the table, primary first
    test_cohorts: list[str] | None = None  # the declared BH family; default: primary cohorts
    alpha: float = 0.05
    average: bool = True  # equal-weight average of family scores vs the primary
    decomposition_cohorts: list[str] | None = None  # default: test cohorts

    @field_validator("alpha")
    @classmethod
    def _alpha(cls, v: float) -> float:
        return fraction(v, "alpha")


# ----------------------------------------------------------------------------- helpers
def _degenerate(r) -> str:
    return degenerate_note(r.n_degenerate, r.n_resamples, noun="replicates")


def _test_cohorts(ctx: AuditContext, config: PromptsConfig) -> list[str]:
    declared = config.test_cohorts
    chosen = set(declared) if declared is not None else set(ctx.study.cohorts_with_role("primary"))
    return [c for c in ctx.cohorts if c in chosen]


def _decomposition_cohorts(ctx: AuditContext, config: PromptsConfig, test: list[str]) -> list[str]:
    declared = config.decomposition_cohorts
    if declared is None:
        return test
    return [c for c in ctx.cohorts if c in set(declared)]


def _counts(y: np.ndarray) -> dict:
    n_pos = int(y.sum())
    return {"n": int(y.size), "n_pos": n_pos, "n_neg": int(y.size) - n_pos}


def _cell_metrics(ctx: AuditContext, cohort: str, models: list[str], prompts: list[str],
                  probabilities: bool) -> dict[tuple[str, str], dict]:
    """Point metrics of every (model, prompt) present in one cohort (no pairing required)."""
    sub = ctx.scores[ctx.scores["cohort"] == cohort]
    out = {}
    for m in models:
        for p in prompts:
            g = sub[(sub["model"] == m) & (sub["prompt"] == p)]
            if g.empty:
                continue
            y = g["label"].to_numpy(dtype=np.float64)
            s = g["score"].to_numpy(dtype=np.float64)
            vals = {"roc_auc": roc_auc(y, s), **_counts(y)}
            if "label_soft" in g.columns:
                # tied scores in image_id order, as in the aligned arrays of every block
                o = np.argsort(g["image_id"].to_numpy(dtype=object), kind="stable")
                vals[SOFT_AUC] = soft_roc_auc(g["label_soft"].to_numpy(dtype=np.float64)[o], s[o])
            if probabilities:
                vals["brier_score"] = brier_score(y, s)
                vals[_ECE_ID] = ece(y, s, n_bins=15)
            out[(m, p)] = vals
    return out


# ----------------------------------------------------------------------------- tables
def _auroc_matrix(ctx, cells, models, prompts) -> pd.DataFrame:
    rows = []
    for cohort in ctx.cohorts:
        for m in models:
            for p in prompts:
                v = cells[cohort].get((m, p))
                if v is None:
                    continue
                for crit in ("roc_auc", SOFT_AUC):
                    if crit not in v:
                        continue
                    rows.append(spec_row(model=m, prompt=p, cohort=cohort, criterion=crit,
                                         design=None, n_resamples=None, family=None,
                                         estimate=v[crit], n=v["n"], n_pos=v["n_pos"],
                                         n_neg=v["n_neg"], qualification=ctx.exposure(m, cohort)))
    return pd.DataFrame(rows)


def _contrasts(ctx: AuditContext, config: PromptsConfig, models, prompts, test
               ) -> tuple[pd.DataFrame, str]:
    primary, alts = prompts[0], prompts[1:]
    B = ctx.resampling.n_resamples
    rows = []
    where, cells, soft_cells = [], [], []
    for cohort in ctx.cohorts:
        ctx.tick(f"{NAME}: contrasts {cohort}")
        for m in models:
            w = ctx.wide(cohort, keys=[(m, p) for p in prompts])
            where.append((cohort, m, w.label))
            scores = {p: w.scores[f"{m}|{p}"] for p in prompts}
            cells.append(DeLongCell(w.label, scores, tuple((p, primary) for p in alts)))
            if w.label_soft is not None and alts:
                # no soft DeLong: a paired bootstrap of the same contrasts, key + criterion
                soft_cells.append(BootstrapCell(
                    key=(NAME, "contrasts", cohort, m, SOFT_AUC), label=w.label, scores=scores,
                    metrics=(), design=ctx.cohort_design(cohort),
                    contrasts=tuple((p, primary) for p in alts), label_soft=w.label_soft,
                    soft_metrics=(SOFT_AUC,)))
    soft_res = iter(run_cells(ctx, soft_cells))
    tests = ctx.map(functools.partial(run_delong, resampling=ctx.resampling), cells)
    for (cohort, m, y), tests_ in zip(where, tests, strict=True):
        in_family = cohort in test
        for p, dl in zip(alts, tests_, strict=True):
            rows.append(spec_row(
                model=m, prompt=f"{p} - {primary}", cohort=cohort,
                criterion="roc_auc_difference", design="delong_paired", n_resamples=None,
                family=BH_FAMILY if in_family else DESCRIPTIVE,
                prompt_a=p, prompt_b=primary, auroc_a=dl.auc_a, auroc_b=dl.auc_b,
                estimate=dl.estimate, ci_low=dl.ci_low, ci_high=dl.ci_high, z=dl.statistic,
                pvalue=dl.pvalue, pvalue_adj=math.nan, significant=pd.NA,
                **_counts(y), qualification=ctx.exposure(m, cohort)))
        if not soft_cells:
            continue
        res = next(soft_res).soft
        for p in alts:
            d = res.differences[(p, primary, SOFT_AUC)]
            rows.append(_difference_row(
                m, cohort, p, primary, d, criterion=f"{SOFT_AUC}_difference", family=DESCRIPTIVE,
                values={"auroc_a": res.marginal[(p, SOFT_AUC)].estimate,
                        "auroc_b": res.marginal[(primary, SOFT_AUC)].estimate},
                after={"z": math.nan, "pvalue": math.nan, "pvalue_adj": math.nan,
                       "significant": pd.NA, **_counts(y),
                       "qualification": join(ctx.exposure(m, cohort), _degenerate(d)),
                       "n_degenerate": d.n_degenerate}))
    df = pd.DataFrame(rows)
    note = "no alternative prompt families: no prompt contrasts."
    if not df.empty:  # None for DeLong rows, B for soft bootstrap rows: keep None, not NaN
        df["n_resamples"] = pd.Series([r["n_resamples"] for r in rows], dtype=object)
    if df.empty:
        return df, note
    fam = (df["family"] == BH_FAMILY).to_numpy()
    df["significant"] = df["significant"].astype("boolean")
    alpha = config.alpha
    if fam.any():
        adj = adjust_pvalues(df.loc[fam, "pvalue"].to_numpy(), method="bh", alpha=alpha,
                             family=BH_FAMILY)
        df.loc[fam, "pvalue_adj"] = adj.pvalues_adjusted
        df.loc[fam, "significant"] = adj.reject
        note = (f"prompt contrasts: Benjamini-Hochberg at q = {alpha} over the declared "
                f"family of {int(fam.sum())} = {len(alts)} alternative(s) x {len(models)} model(s) x "
                f"{len(test)} cohort(s) ({', '.join(test)}); {int(adj.reject.sum())} significant after "
                f"BH, {int((df.loc[fam, 'pvalue'] < alpha).sum())} at unadjusted "
                f"p < {alpha}; contrasts on other cohorts are descriptive.")
    else:
        note = "prompt contrasts: no test cohort declared; every contrast is descriptive."
    if (df["criterion"] == f"{SOFT_AUC}_difference").any():
        note += (f" Soft labels: each contrast also has a {SOFT_AUC}_difference row with a paired "
                 f"bootstrap interval (B = {B}, the cohort's design), descriptive: "
                 "the paired DeLong test is defined for hard labels only and has no soft form, so "
                 "these rows carry no z or p-value and are outside the BH family.")
    df["pvalue_adj"] = df["pvalue_adj"].astype(np.float64)
    return df, note


def _difference_row(m: str, cohort: str, a: str, b: str, d: Any, *, criterion: str,
                    family: str | None, values: dict[str, Any], after: dict[str, Any]
                    ) -> dict[str, Any]:
    """A bootstrap row of prompt ``a`` - prompt ``b``: E, the two values, the interval, ``after``."""
    return spec_row(model=m, prompt=f"{a} - {b}", cohort=cohort, criterion=criterion,
                    design=d.design, n_resamples=d.n_resamples, family=family, prompt_a=a,
                    prompt_b=b, **values, estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high,
                    **after)


def _average(ctx: AuditContext, models, prompts, test, probabilities) -> pd.DataFrame:
    primary = prompts[0]
    metrics = ("roc_auc", "brier_score") if probabilities else ("roc_auc",)
    rows = []
    where, cells = [], []
    for cohort in test:
        ctx.tick(f"{NAME}: average {cohort}")
        design = ctx.cohort_design(cohort)
        for m in models:
            w = ctx.wide(cohort, keys=[(m, p) for p in prompts])
            avg = np.mean(np.stack([w.scores[f"{m}|{p}"] for p in prompts]), axis=0)
            where.append((cohort, m, w))
            cells.append(BootstrapCell(key=(NAME, "average", cohort, m), label=w.label,
                                       scores={AVERAGE: avg, primary: w.scores[f"{m}|{primary}"]},
                                       metrics=metrics, design=design,
                                       contrasts=((AVERAGE, primary),), label_soft=w.label_soft,
                                       soft_metrics=(SOFT_AUC,)))
    for (cohort, m, w), res in zip(where, run_cells(ctx, cells), strict=True):
        for r, mid in [(res.hard, mid) for mid in metrics] + ([(res.soft, SOFT_AUC)] if res.soft
                                                             else []):
            d = r.differences[(AVERAGE, primary, mid)]
            rows.append(_difference_row(
                m, cohort, AVERAGE, primary, d, criterion=f"{mid}_difference", family=None,
                values={"value_a": r.marginal[(AVERAGE, mid)].estimate,
                        "value_b": r.marginal[(primary, mid)].estimate},
                after={"n_degenerate": d.n_degenerate, **_counts(w.label),
                       "qualification": join(ctx.exposure(m, cohort), _degenerate(d))}))
    return pd.DataFrame(rows)


def _model_differences(ctx: AuditContext, models, prompts, test) -> pd.DataFrame:
    rows = []
    pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1:]]
    if not pairs:
        return pd.DataFrame(rows)
    keys = [(m, p) for m in models for p in prompts]
    contrasts = tuple((f"{a}|{p}", f"{b}|{p}") for p in prompts for a, b in pairs)
    wides, cells = [], []
    for cohort in test:
        ctx.tick(f"{NAME}: rankings {cohort}")
        w = ctx.wide(cohort, keys=keys)
        wides.append(w)
        cells.append(BootstrapCell(key=(NAME, "model_differences", cohort), label=w.label,
                                   scores={f"{m}|{p}": w.scores[f"{m}|{p}"] for m, p in keys},
                                   metrics=("roc_auc",), design=ctx.cohort_design(cohort),
                                   contrasts=contrasts, label_soft=w.label_soft,
                                   soft_metrics=(SOFT_AUC,)))
    for cohort, w, res in zip(test, wides, run_cells(ctx, cells), strict=True):
        for a, b in pairs:
            for p in prompts:
                for r, mid in [(res.hard, "roc_auc")] + ([(res.soft, SOFT_AUC)] if res.soft else []):
                    d = r.differences[(f"{a}|{p}", f"{b}|{p}", mid)]
                    rows.append(spec_row(
                        model=f"{a} - {b}", prompt=p, cohort=cohort, criterion=f"{mid}_difference",
                        design=d.design, n_resamples=d.n_resamples, family=None,
                        model_a=a, model_b=b, auroc_a=r.marginal[(f"{a}|{p}", mid)].estimate,
                        auroc_b=r.marginal[(f"{b}|{p}", mid)].estimate,
                        estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high,
                        n_degenerate=d.n_degenerate,
                        verdict=verdict(d.ci_low, d.ci_high, +1, n_degenerate=d.n_degenerate),
                        **_counts(w.label),
                        qualification=join(exposure_note(ctx, (a, b), cohort,
                                                         label="{model}: "), _degenerate(d))))
    return pd.DataFrame(rows)


def _decomposition(ctx: AuditContext, cells, models, prompts, cohorts, probabilities
                   ) -> pd.DataFrame:
    criteria = ["roc_auc", "brier_score", _ECE_ID] if probabilities else ["roc_auc"]
    if "label_soft" in ctx.scores.columns:
        criteria.append(SOFT_AUC)
    missing = [f"(model {m!r}, cohort {c!r}, prompt {p!r})" for m in models for c in cohorts
               for p in prompts if (m, p) not in cells[c]]
    if missing:
        raise SchemaError("the prompt variance decomposition needs a complete, balanced model x "
                          f"cohort x prompt matrix; {len(missing)} cell(s) have no scores: "
                          + ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""))
    exposure = exposure_note(ctx, models, cohorts, label="{model} on {cohort}: ")
    rows = []
    for crit in criteria:
        values = np.array([[[cells[c][(m, p)][crit] for p in prompts] for c in cohorts]
                           for m in models], dtype=np.float64)
        try:
            dec = variance_decomposition(values)
        except MedauditError as exc:
            raise MedauditError(f"prompt variance decomposition of {crit}: {exc}") from None
        for term in DECOMPOSITION_TERMS:
            rows.append(spec_row(
                model=", ".join(models), prompt=", ".join(prompts), cohort=", ".join(cohorts),
                criterion=crit, design=None, n_resamples=None, family=None,
                term=term, ss=dec.ss[term], df=dec.df[term],
                share_percent=dec.share_percent[term], ss_total=dec.ss_total,
                qualification=exposure))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- block
class Prompts(Block):
    """Prompt-family sensitivity of AUROC and of model rankings (paper 000 Tables 6-8, Fig. 2)."""

    name = NAME
    title = "Prompt families"
    summary = ("AUROC matrix (Table 6); every family vs the primary, paired DeLong + BH over the "
               "declared family (Fig. 2); equal-weight score average vs primary (Table 7); "
               "three-way SS decomposition (Table 8); model rankings per prompt")
    config = PromptsConfig
    tables = (
        TableSchema("auroc_matrix", "AUROC of every model x cohort x prompt (point estimates)",
                    ("estimate", "n", "n_pos", "n_neg", "qualification")),
        TableSchema("contrasts", "AUROC(p) - AUROC(primary) per cohort x model, paired DeLong",
                    ("prompt_a", "prompt_b", "estimate", "ci_low", "ci_high", "z", "pvalue",
                     "pvalue_adj", "significant")),
        TableSchema("average", "the equal-weight family average against the primary prompt",
                    ("prompt_a", "prompt_b", "value_a", "value_b", "estimate", "ci_low", "ci_high")),
        TableSchema("model_differences_by_prompt", "model differences A - B under each prompt",
                    ("model_a", "model_b", "estimate", "ci_low", "ci_high", "verdict")),
        TableSchema("decomposition", "balanced three-way sums of squares of AUROC, Brier, ECE15",
                    ("term", "ss", "df", "share_percent", "ss_total")),
    )
    figures = ("fig2_prompt_contrasts",)

    def multiplicity(self, config: PromptsConfig) -> str:
        return (f"BH at q={config.alpha} over alternatives x models x "
                f"{config.test_cohorts or 'primary cohorts'}")

    def check(self, config: PromptsConfig, table: pd.DataFrame, cohorts) -> list[str]:
        from medaudit.blocks.checks import unknown

        errs = unknown("prompt", config.families or [], set(table["prompt"].unique()),
                       "prompts.families")
        for key in ("test_cohorts", "decomposition_cohorts"):
            errs += unknown("cohort", getattr(config, key) or [], cohorts, f"prompts.{key}")
        return errs

    def skip(self, ctx: AuditContext, config: PromptsConfig) -> str | None:
        prompts = ctx.prompts(config.families)
        if len(prompts) < 2:
            return (f"the score table has one prompt ({prompts[0] if prompts else 'none'}); "
                    "prompt contrasts need two or more (a `prompt` column, or `prompts.families`)")
        return None

    def run(self, ctx: AuditContext, config: PromptsConfig) -> BlockResult:
        """Prompt-sensitivity tables (see the module docstring)."""
        models = ctx.models()
        prompts = ctx.prompts(config.families)
        if not prompts or prompts[0] != ctx.primary_prompt:
            raise SchemaError(f"prompts.families must start with the primary prompt "
                              f"{ctx.primary_prompt!r}; got {prompts}.")
        probabilities = ctx.probabilities
        B = ctx.resampling.n_resamples
        test = _test_cohorts(ctx, config)
        decomp = _decomposition_cohorts(ctx, config, test)
        cells = {c: _cell_metrics(ctx, c, models, prompts, probabilities) for c in ctx.cohorts}
        notes = []
        if not probabilities:
            notes.append("scores are logits: Brier and ECE15 are left out (they need probabilities), "
                         "and the prompt average is the mean of the logits, not of probabilities.")
        auroc = _auroc_matrix(ctx, cells, models, prompts)
        contrasts, note = _contrasts(ctx, config, models, prompts, test)
        notes.append(note)
        if config.average and len(prompts) > 1:
            average = _average(ctx, models, prompts, test, probabilities)
            notes.append(f"average: equal-weight mean of the {len(prompts)} family scores "
                         f"({', '.join(prompts)}) minus {prompts[0]}, paired bootstrap "
                         f"(B = {B}), test cohorts only; descriptive.")
        else:
            average = pd.DataFrame()
        if len(prompts) < 2:
            # nothing varies with the prompt: rankings by prompt and prompt shares are void
            differences, decomposition = pd.DataFrame(), pd.DataFrame()
            notes.append(f"only one prompt family ({prompts[0]!r}): no model differences by prompt "
                         "and no variance decomposition.")
        else:
            differences = _model_differences(ctx, models, prompts, test)
            if decomp:
                decomposition = _decomposition(ctx, cells, models, prompts, decomp, probabilities)
                notes.append(f"decomposition: balanced {len(models)} x {len(decomp)} x "
                             f"{len(prompts)} sums of squares over {', '.join(decomp)} (no F-tests; "
                             "descriptive).")
            else:
                decomposition = pd.DataFrame()
        if "label_soft" in ctx.scores.columns:
            notes.append("Soft labels (label_soft): soft_roc_auc (strict, the default; tied scores in "
                         "image_id order) beside every AUROC: auroc_matrix rows, "
                         "soft_roc_auc_difference rows in average and model_differences_by_prompt "
                         "from the same bootstrap draws as the ordinary rows (strata: the hard "
                         "labels), soft contrast rows with bootstrap intervals, and the soft_roc_auc "
                         "decomposition; n, n_pos, n_neg count images by the hard label.")
        return BlockResult(name=NAME, tables={"auroc_matrix": auroc, "contrasts": contrasts,
                                              "average": average,
                                              "model_differences_by_prompt": differences,
                                              "decomposition": decomposition},
                           notes=tuple(notes))
