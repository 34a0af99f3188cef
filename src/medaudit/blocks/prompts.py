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
every AUROC above gets a soft twin beside it (inclusive soft AUROC, ties in image_id
order, as in the discrimination block): ``auroc_matrix`` a ``soft_roc_auc`` row per
cell; ``average`` and ``model_differences_by_prompt`` a ``soft_roc_auc_difference``
row from the *same* bootstrap cell key, hence the same resampled images (under
``within_label`` the strata stay the hard labels, see
:func:`medaudit.blocks.discrimination.soft_twin`); ``contrasts`` a
``soft_roc_auc_difference`` row per contrast with a paired bootstrap interval (key
extended by the criterion; family ``descriptive``, no p-value: the paired DeLong test
has no soft-label form, and none is invented here); ``decomposition`` the terms of
``soft_roc_auc``.  The ordinary rows are unchanged.  ``n``, ``n_pos``, ``n_neg`` count
images by the hard label in every row.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from medaudit.blocks._base import AuditContext, BlockResult, cell_rng, spec_row, verdict
from medaudit.blocks.discrimination import run_paired_cell, soft_twin
from medaudit.exceptions import DegenerateDataWarning, MedauditError, SchemaError
from medaudit.stats import (
    adjust_pvalues,
    brier_score,
    delong_test,
    ece,
    paired_bootstrap,
    roc_auc,
    soft_roc_auc,
)

__all__ = ["NAME", "run", "variance_decomposition", "DECOMPOSITION_TERMS", "BH_FAMILY"]

NAME = "prompts"
BH_FAMILY = "prompt-contrasts-BH"
DESCRIPTIVE = "descriptive"
AVERAGE = "average"
#: the seven terms of a three-way layout without replication, in table order
DECOMPOSITION_TERMS = ("model", "cohort", "prompt", "model:cohort", "model:prompt", "cohort:prompt",
                       "model:cohort:prompt")
_ECE_ID = "ece[n_bins=15]"
SOFT_AUC = "soft_roc_auc"


# ----------------------------------------------------------------------------- decomposition
def variance_decomposition(values: np.ndarray,
                           factors: Sequence[str] = ("model", "cohort", "prompt")) -> dict:
    r"""Balanced three-way sum-of-squares decomposition without replication (paper 000 M0.11).

    Parameters
    ----------
    values : array-like of shape (I, J, K)
        One finite value per cell of a complete, balanced layout (e.g. model x cohort
        x prompt AUROCs).
    factors : three str, default=("model", "cohort", "prompt")
        Names of the three axes; terms are named from them (``"model:cohort"``, ...).

    Returns
    -------
    dict
        ``terms`` (the 7 term names, main effects, two-way interactions, then the
        three-way term), ``ss`` / ``df`` / ``share_percent`` (dicts keyed by term),
        ``ss_total`` and ``shape``.  ``share_percent = 100 * ss / ss_total`` (NaN when
        every cell is equal, i.e. ``ss_total == 0``).

    Notes
    -----
    With grand mean :math:`\bar y` and marginal means,
    :math:`SS_A = JK\sum_i(\bar y_{i..}-\bar y)^2`,
    :math:`SS_{AB} = K\sum_{ij}(\bar y_{ij.}-\bar y_{i..}-\bar y_{.j.}+\bar y)^2`
    (likewise for the others) and the three-way term is the residual
    :math:`SS_{ABC} = SS_T - (\text{all others})`, computed here directly as the sum of
    squared three-way residuals (identical, without cancellation).  No F-tests: with
    one value per cell the three-way term has no error term to be tested against.

    Examples
    --------
    >>> v = np.arange(8.0).reshape(2, 2, 2)  # purely additive: 4a + 2b + c
    >>> r = variance_decomposition(v)
    >>> [round(r["share_percent"][t], 6) for t in r["terms"]]
    [76.190476, 19.047619, 4.761905, 0.0, 0.0, 0.0, 0.0]
    """
    if isinstance(factors, str) or len(factors) != 3 or len(set(factors)) != 3:
        raise MedauditError(f"factors must be three distinct names; got {factors!r}.")
    try:
        y = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise MedauditError("variance_decomposition needs a balanced (I, J, K) numeric array; the "
                            "values given are ragged or not numeric.") from None
    if y.ndim != 3:
        raise MedauditError(f"variance_decomposition needs a balanced 3-way array of shape "
                            f"(I, J, K); got {y.ndim} dimension(s), shape {y.shape}.")
    if min(y.shape) < 1:
        raise MedauditError(f"variance_decomposition needs at least one level per factor; got "
                            f"shape {y.shape}.")
    bad = ~np.isfinite(y)
    if bad.any():
        where = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:5]]
        raise MedauditError(
            f"variance_decomposition needs a complete, balanced matrix (one finite value per cell); "
            f"{int(bad.sum())} of {y.size} cell(s) are missing or not finite, e.g. (i, j, k) = "
            f"{where}.")
    a, b, c = factors
    n_i, n_j, n_k = y.shape
    g = y.mean()
    m_i = y.mean(axis=(1, 2))
    m_j = y.mean(axis=(0, 2))
    m_k = y.mean(axis=(0, 1))
    m_ij = y.mean(axis=2)
    m_ik = y.mean(axis=1)
    m_jk = y.mean(axis=0)
    e_ij = m_ij - m_i[:, None] - m_j[None, :] + g
    e_ik = m_ik - m_i[:, None] - m_k[None, :] + g
    e_jk = m_jk - m_j[:, None] - m_k[None, :] + g
    e_ijk = (y - m_ij[:, :, None] - m_ik[:, None, :] - m_jk[None, :, :]
             + m_i[:, None, None] + m_j[None, :, None] + m_k[None, None, :] - g)
    terms = (a, b, c, f"{a}:{b}", f"{a}:{c}", f"{b}:{c}", f"{a}:{b}:{c}")
    ss_vals = (n_j * n_k * float(np.sum((m_i - g) ** 2)),
               n_i * n_k * float(np.sum((m_j - g) ** 2)),
               n_i * n_j * float(np.sum((m_k - g) ** 2)),
               n_k * float(np.sum(e_ij ** 2)),
               n_j * float(np.sum(e_ik ** 2)),
               n_i * float(np.sum(e_jk ** 2)),
               float(np.sum(e_ijk ** 2)))
    dfs = (n_i - 1, n_j - 1, n_k - 1, (n_i - 1) * (n_j - 1), (n_i - 1) * (n_k - 1),
           (n_j - 1) * (n_k - 1), (n_i - 1) * (n_j - 1) * (n_k - 1))
    total = float(np.sum((y - g) ** 2))
    shares = [100.0 * s / total if total > 0 else math.nan for s in ss_vals]
    return {"terms": terms, "ss": dict(zip(terms, ss_vals, strict=True)),
            "df": dict(zip(terms, dfs, strict=True)),
            "share_percent": dict(zip(terms, shares, strict=True)),
            "ss_total": total, "shape": (n_i, n_j, n_k)}


# ----------------------------------------------------------------------------- helpers
def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _exposure(ctx: AuditContext, models: Sequence[str], cohort: str) -> str:
    out = []
    for m in models:
        e = ctx.exposure(m, cohort)
        if e:
            out.append(e if len(models) == 1 else f"{m}: {e}")
    return _join(*out)


def _degenerate(r) -> str:
    if r.n_degenerate:
        return (f"{r.n_degenerate} of {r.n_resamples} replicates degenerate (metric undefined); "
                "interval from the rest")
    return ""


def _boot(*args, **kwargs):
    """paired_bootstrap with degenerate-replicate warnings recorded in the rows instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return paired_bootstrap(*args, **kwargs)


# ----------------------------------------------------------------------------- cells
# Independent cells for ``ctx.map`` (module level, so a backend can ship them to workers):
# each takes a dict of aligned arrays and options and draws from cell_rng(seed, *key).
def _boot_cell(cell: dict[str, Any]):
    """One paired bootstrap (``_boot``) with the cell's own generator."""
    opts = {k: v for k, v in cell.items() if k not in ("label", "scores", "seed", "key")}
    return _boot(cell["label"], cell["scores"], rng=cell_rng(cell["seed"], *cell["key"]), **opts)


def _delong_cell(cell: dict[str, Any]) -> list:
    """Paired DeLong tests of each alternative score vector against the reference one."""
    return [delong_test(cell["label"], s, cell["reference"],
                        confidence_level=cell["confidence_level"]) for s in cell["alternatives"]]


def _test_cohorts(ctx: AuditContext) -> list[str]:
    declared = ctx.spec.prompts.test_cohorts
    chosen = set(declared) if declared is not None else set(ctx.spec.cohorts_with_role("primary"))
    return [c for c in ctx.spec.cohorts if c in chosen]


def _decomposition_cohorts(ctx: AuditContext, test: list[str]) -> list[str]:
    declared = ctx.spec.prompts.decomposition_cohorts
    if declared is None:
        return test
    return [c for c in ctx.spec.cohorts if c in set(declared)]


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
    for cohort in ctx.spec.cohorts:
        for m in models:
            for p in prompts:
                v = cells[cohort].get((m, p))
                if v is None:
                    continue
                for crit in ("roc_auc", SOFT_AUC):
                    if crit not in v:
                        continue
                    rows.append(spec_row(model=m, prompt=p, cohort=cohort, criterion=crit,
                                         design=None, n_resamples=None, seed=ctx.seed, family=None,
                                         estimate=v[crit], n=v["n"], n_pos=v["n_pos"],
                                         n_neg=v["n_neg"], qualification=ctx.exposure(m, cohort)))
    return pd.DataFrame(rows)


def _contrasts(ctx, models, prompts, test) -> tuple[pd.DataFrame, str]:
    primary, alts = prompts[0], prompts[1:]
    level = ctx.spec.confidence_level
    rows = []
    where, cells, soft_cells = [], [], []
    for cohort in ctx.spec.cohorts:
        ctx.tick(f"{NAME}: contrasts {cohort}")
        for m in models:
            w = ctx.wide(cohort, keys=[(m, p) for p in prompts])
            where.append((cohort, m, w.label))
            cells.append({"label": w.label, "reference": w.scores[f"{m}|{primary}"],
                          "alternatives": [w.scores[f"{m}|{p}"] for p in alts],
                          "confidence_level": level})
            if w.label_soft is not None and alts:
                # no soft DeLong: a paired bootstrap of the same contrasts, key + criterion
                soft_cells.append(soft_twin({
                    "label": w.label, "scores": {p: w.scores[f"{m}|{p}"] for p in prompts},
                    "metrics": ("roc_auc",), "contrasts": [(p, primary) for p in alts],
                    "design": ctx.cohort_design(cohort), "n_resamples": ctx.spec.n_resamples,
                    "confidence_level": level, "seed": ctx.seed,
                    "key": (NAME, "contrasts", cohort, m, SOFT_AUC)}, w.label_soft,
                    metrics=(SOFT_AUC,)))
    soft_res = iter(ctx.map(run_paired_cell, soft_cells))
    for (cohort, m, y), tests in zip(where, ctx.map(_delong_cell, cells), strict=True):
        in_family = cohort in test
        for p, dl in zip(alts, tests, strict=True):
            rows.append(spec_row(
                model=m, prompt=f"{p} - {primary}", cohort=cohort,
                criterion="roc_auc_difference", design="delong_paired", n_resamples=None,
                seed=ctx.seed, family=BH_FAMILY if in_family else DESCRIPTIVE,
                prompt_a=p, prompt_b=primary, auroc_a=dl.auc_a, auroc_b=dl.auc_b,
                estimate=dl.estimate, ci_low=dl.ci_low, ci_high=dl.ci_high, z=dl.statistic,
                pvalue=dl.pvalue, pvalue_adj=math.nan, significant=pd.NA,
                **_counts(y), qualification=ctx.exposure(m, cohort)))
        if not soft_cells:
            continue
        res = next(soft_res)
        for p in alts:
            d = res.differences[(p, primary, SOFT_AUC)]
            rows.append(spec_row(
                model=m, prompt=f"{p} - {primary}", cohort=cohort,
                criterion=f"{SOFT_AUC}_difference", design=d.design, n_resamples=d.n_resamples,
                seed=ctx.seed, family=DESCRIPTIVE, prompt_a=p, prompt_b=primary,
                auroc_a=res.marginal[(p, SOFT_AUC)].estimate,
                auroc_b=res.marginal[(primary, SOFT_AUC)].estimate,
                estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high, z=math.nan,
                pvalue=math.nan, pvalue_adj=math.nan, significant=pd.NA, **_counts(y),
                qualification=_join(ctx.exposure(m, cohort), _degenerate(d)),
                n_degenerate=d.n_degenerate))
    df = pd.DataFrame(rows)
    note = "no alternative prompt families: no prompt contrasts."
    if not df.empty:  # None for DeLong rows, B for soft bootstrap rows: keep None, not NaN
        df["n_resamples"] = pd.Series([r["n_resamples"] for r in rows], dtype=object)
    if df.empty:
        return df, note
    fam = (df["family"] == BH_FAMILY).to_numpy()
    df["significant"] = df["significant"].astype("boolean")
    if fam.any():
        adj = adjust_pvalues(df.loc[fam, "pvalue"].to_numpy(), method="bh",
                             alpha=ctx.spec.prompts.alpha, family=BH_FAMILY)
        df.loc[fam, "pvalue_adj"] = adj.pvalues_adjusted
        df.loc[fam, "significant"] = adj.reject
        note = (f"prompt contrasts: Benjamini-Hochberg at q = {ctx.spec.prompts.alpha} over the declared "
                f"family of {int(fam.sum())} = {len(alts)} alternative(s) x {len(models)} model(s) x "
                f"{len(test)} cohort(s) ({', '.join(test)}); {int(adj.reject.sum())} significant after "
                f"BH, {int((df.loc[fam, 'pvalue'] < ctx.spec.prompts.alpha).sum())} at unadjusted "
                f"p < {ctx.spec.prompts.alpha}; contrasts on other cohorts are descriptive.")
    else:
        note = "prompt contrasts: no test cohort declared; every contrast is descriptive."
    if (df["criterion"] == f"{SOFT_AUC}_difference").any():
        note += (f" Soft labels: each contrast also has a {SOFT_AUC}_difference row with a paired "
                 f"bootstrap interval (B = {ctx.spec.n_resamples}, the cohort's design), descriptive: "
                 "the paired DeLong test is defined for hard labels only and has no soft form, so "
                 "these rows carry no z or p-value and are outside the BH family.")
    df["pvalue_adj"] = df["pvalue_adj"].astype(np.float64)
    return df, note


def _average(ctx, models, prompts, test, probabilities) -> pd.DataFrame:
    primary = prompts[0]
    metrics = ["roc_auc", "brier_score"] if probabilities else ["roc_auc"]
    rows = []
    where, cells = [], []
    for cohort in test:
        ctx.tick(f"{NAME}: average {cohort}")
        design = ctx.cohort_design(cohort)
        for m in models:
            w = ctx.wide(cohort, keys=[(m, p) for p in prompts])
            avg = np.mean(np.stack([w.scores[f"{m}|{p}"] for p in prompts]), axis=0)
            where.append((cohort, m, w))
            cells.append({"label": w.label,
                          "scores": {AVERAGE: avg, primary: w.scores[f"{m}|{primary}"]},
                          "metrics": metrics, "contrasts": [(AVERAGE, primary)], "design": design,
                          "n_resamples": ctx.spec.n_resamples,
                          "confidence_level": ctx.spec.confidence_level, "seed": ctx.seed,
                          "key": (NAME, "average", cohort, m)})
    soft = _soft_results(ctx, [w for _, _, w in where], cells)
    for (cohort, m, w), res, sres in zip(where, ctx.map(_boot_cell, cells), soft, strict=True):
        for r, mid in [(res, mid) for mid in metrics] + ([(sres, SOFT_AUC)] if sres else []):
            d = r.differences[(AVERAGE, primary, mid)]
            rows.append(spec_row(
                model=m, prompt=f"{AVERAGE} - {primary}", cohort=cohort,
                criterion=f"{mid}_difference", design=d.design, n_resamples=d.n_resamples,
                seed=ctx.seed, family=None, prompt_a=AVERAGE, prompt_b=primary,
                value_a=r.marginal[(AVERAGE, mid)].estimate,
                value_b=r.marginal[(primary, mid)].estimate,
                estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high,
                n_degenerate=d.n_degenerate, **_counts(w.label),
                qualification=_join(ctx.exposure(m, cohort), _degenerate(d))))
    return pd.DataFrame(rows)


def _soft_results(ctx: AuditContext, wides: list, cells: list[dict]) -> list:
    """Soft twins of hard-label bootstrap cells (same keys, same draws); None without soft labels."""
    twins = [soft_twin({**c, "metrics": ("roc_auc",)}, w.label_soft, metrics=(SOFT_AUC,))
             for w, c in zip(wides, cells, strict=True) if w.label_soft is not None]
    done = iter(ctx.map(run_paired_cell, twins))
    return [next(done) if w.label_soft is not None else None for w in wides]


def _model_differences(ctx, models, prompts, test) -> pd.DataFrame:
    rows = []
    pairs = [(a, b) for i, a in enumerate(models) for b in models[i + 1:]]
    if not pairs:
        return pd.DataFrame(rows)
    keys = [(m, p) for m in models for p in prompts]
    contrasts = [(f"{a}|{p}", f"{b}|{p}") for p in prompts for a, b in pairs]
    wides, cells = [], []
    for cohort in test:
        ctx.tick(f"{NAME}: rankings {cohort}")
        w = ctx.wide(cohort, keys=keys)
        wides.append(w)
        cells.append({"label": w.label, "scores": {f"{m}|{p}": w.scores[f"{m}|{p}"] for m, p in keys},
                      "metrics": ["roc_auc"], "contrasts": contrasts,
                      "design": ctx.cohort_design(cohort), "n_resamples": ctx.spec.n_resamples,
                      "confidence_level": ctx.spec.confidence_level, "seed": ctx.seed,
                      "key": (NAME, "model_differences", cohort)})
    soft = _soft_results(ctx, wides, cells)
    for cohort, w, res, sres in zip(test, wides, ctx.map(_boot_cell, cells), soft, strict=True):
        for a, b in pairs:
            for p in prompts:
                for r, mid in [(res, "roc_auc")] + ([(sres, SOFT_AUC)] if sres else []):
                    d = r.differences[(f"{a}|{p}", f"{b}|{p}", mid)]
                    rows.append(spec_row(
                        model=f"{a} - {b}", prompt=p, cohort=cohort, criterion=f"{mid}_difference",
                        design=d.design, n_resamples=d.n_resamples, seed=ctx.seed, family=None,
                        model_a=a, model_b=b, auroc_a=r.marginal[(f"{a}|{p}", mid)].estimate,
                        auroc_b=r.marginal[(f"{b}|{p}", mid)].estimate,
                        estimate=d.estimate, ci_low=d.ci_low, ci_high=d.ci_high,
                        n_degenerate=d.n_degenerate, verdict=verdict(d.ci_low, d.ci_high, +1),
                        **_counts(w.label),
                        qualification=_join(_exposure(ctx, [a, b], cohort), _degenerate(d))))
    return pd.DataFrame(rows)


def _decomposition(ctx, cells, models, prompts, cohorts, probabilities) -> pd.DataFrame:
    criteria = ["roc_auc", "brier_score", _ECE_ID] if probabilities else ["roc_auc"]
    if "label_soft" in ctx.scores.columns:
        criteria.append(SOFT_AUC)
    missing = [f"(model {m!r}, cohort {c!r}, prompt {p!r})" for m in models for c in cohorts
               for p in prompts if (m, p) not in cells[c]]
    if missing:
        raise SchemaError("the prompt variance decomposition needs a complete, balanced model x "
                          f"cohort x prompt matrix; {len(missing)} cell(s) have no scores: "
                          + ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else ""))
    exposure = _join(*[f"{m} on {c}: {ctx.exposure(m, c)}" for m in models for c in cohorts
                       if ctx.exposure(m, c)])
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
                criterion=crit, design=None, n_resamples=None, seed=ctx.seed, family=None,
                term=term, ss=dec["ss"][term], df=dec["df"][term],
                share_percent=dec["share_percent"][term], ss_total=dec["ss_total"],
                qualification=exposure))
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- run
def run(ctx: AuditContext) -> BlockResult:
    """Prompt-sensitivity tables (see the module docstring)."""
    models = ctx.models()
    prompts = ctx.prompts()
    if not prompts or prompts[0] != ctx.spec.primary_prompt:
        raise SchemaError(f"prompts.families must start with the primary prompt "
                          f"{ctx.spec.primary_prompt!r}; got {prompts}.")
    probabilities = ctx.spec.score_scale == "probabilities"
    test = _test_cohorts(ctx)
    decomp = _decomposition_cohorts(ctx, test)
    cells = {c: _cell_metrics(ctx, c, models, prompts, probabilities) for c in ctx.spec.cohorts}
    notes = []
    if not probabilities:
        notes.append("scores are logits: Brier and ECE15 are left out (they need probabilities), and "
                     "the prompt average is the mean of the logits, not of probabilities.")

    auroc = _auroc_matrix(ctx, cells, models, prompts)
    contrasts, note = _contrasts(ctx, models, prompts, test)
    notes.append(note)
    if ctx.spec.prompts.average and len(prompts) > 1:
        average = _average(ctx, models, prompts, test, probabilities)
        notes.append(f"average: equal-weight mean of the {len(prompts)} family scores "
                     f"({', '.join(prompts)}) minus {prompts[0]}, paired bootstrap "
                     f"(B = {ctx.spec.n_resamples}), test cohorts only; descriptive.")
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
            notes.append(f"decomposition: balanced {len(models)} x {len(decomp)} x {len(prompts)} "
                         f"sums of squares over {', '.join(decomp)} (no F-tests; descriptive).")
        else:
            decomposition = pd.DataFrame()
    if "label_soft" in ctx.scores.columns:
        notes.append("Soft labels (label_soft): soft_roc_auc (inclusive, tied scores in image_id "
                     "order) beside every AUROC: auroc_matrix rows, soft_roc_auc_difference rows in "
                     "average and model_differences_by_prompt from the same bootstrap draws as the "
                     "ordinary rows (strata: the hard labels), soft contrast rows with bootstrap "
                     "intervals, and the soft_roc_auc decomposition; n, n_pos, n_neg count images by "
                     "the hard label.")
    return BlockResult(name=NAME, tables={"auroc_matrix": auroc, "contrasts": contrasts,
                                          "average": average,
                                          "model_differences_by_prompt": differences,
                                          "decomposition": decomposition},
                       notes=tuple(notes))
