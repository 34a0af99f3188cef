"""Error structure of categorical verdicts across institutions (paper 002, M2.9 and M2.11).

Reads ``ctx.judgments`` (the evaluable JudgmentTable of
:func:`medaudit.agreement.judgments.validate_judgments`) and its spec section
``error_structure`` (:class:`ErrorStructureConfig`, with its own B).  E columns:
``model``, ``prompt`` = protocol, ``cohort`` = institution (``"A - B"`` for contrasts,
with ``cohort_a``/``cohort_b``), ``negatives`` = finding (or ``"all"``).  Tables:

``rates``
    FPR = #{y-hat=1, y=0}/#{y=0} and FNR = #{y-hat=0, y=1}/#{y=1} per model x institution x
    finding (criteria ``fpr``, ``fnr``) at the error-pattern protocol, with study-clustered
    bootstrap percentile intervals (design ``cluster(study) within institution``).
``contrasts``
    Rate differences A - B for every institution pair (``fpr_difference``,
    ``fnr_difference``): cluster-bootstrap interval (replicates with a zero denominator are
    dropped and counted in ``n_degenerate``), two-sided Fisher exact test of
    [events, non-events] x [A, B] (zero events at both: p = 1, kept), Benjamini-Hochberg
    applied **separately** to the FPR family and the FNR family of the ``family_models``
    (other models: family ``descriptive``), and ``verdict`` (lower rate better).
``cmh``
    Finding-stratified Cochran-Mantel-Haenszel test per model x institution pair x metric;
    strata that carry no information are dropped and named in ``dropped_strata``;
    ``direction`` says where events are more likely (pooled odds ratio vs 1).
``jaccard``
    ``|A ∩ B| / |A ∪ B|`` of two family models' sets of BH-significant contrasts
    (finding x institution pair), per metric, on all cells and (``subset = "shared"``) on
    the (study, finding) pairs every family model has; with each set's size.
``assertion``
    The degeneracy detector (M2.11): predicted-present rate per model x protocol x
    institution x finding, and a summary row (``negatives = "all"``) flagging a deployment
    whose rate is 0 (or 1) for every finding (``degenerate``, ``kind``), with accuracy and
    1 - reference prevalence (equal for a never-present system).
``concordance``
    Protocol agreement on matched (study, finding) pairs per model (and institution):
    raw agreement, Cohen's kappa and accuracy(a) - accuracy(b) for ``protocol_pair`` (a, b).
``logit_auroc``
    Where logits are recorded: AUROC of p_yes = sigma(logit_yes - logit_no) against the
    reference (``roc_auc[reference]``) and of the confidence in the emitted verdict
    (p_yes if present else 1 - p_yes) against correctness (``roc_auc[correct]``), pooled
    over findings and per finding, per institution and pooled.  Point estimates only.
``reader_audit``
    Where the judgment table has a ``reader_label`` column (the single-reader audit of
    M2.12, :mod:`medaudit.agreement.reader_audit`), for the ``family_models`` at the
    error-pattern protocol: Cohen's kappa between reader and reference over the unique
    audited (study, finding) pairs with a definite reader label (criterion
    ``cohen_kappa[reader,reference]``, pooled and per institution; ``n_pairs_evaluable``
    counts the audited pairs with an evaluable record); the reader-flagged error rate of
    the model-expanded records in each risk tertile of their reliability cells
    (``reader_flagged_error_rate``, ``risk_tertile`` bottom/middle/top, with ``n_errors``,
    ``n_studies``, ``n_cells``, ``risk_low``, ``risk_high``) and the top - bottom
    difference (``reader_flagged_error_rate_difference``).  Counts only, no test.

One study-clustered draw per (model, protocol) (``ctx.rng(NAME, "bootstrap", model,
protocol)``) is shared by all of that model's rates and contrasts, so they are resampled
jointly, as a paired design is.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator
from scipy.special import expit

from medaudit.blocks import claimkit as ck
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.context import AuditContext, Study
from medaudit.blocks.notes import join
from medaudit.blocks.rows import spec_row, verdict
from medaudit.exceptions import SchemaError
from medaudit.io.limits import NResamples
from medaudit.io.specfile import fraction
from medaudit.stats import adjust_pvalues, cmh_test, cohen_kappa, fisher_exact, jaccard, roc_auc
from medaudit.stats.bootstrap import percentile_interval
from medaudit.stats.designs import make_plan

__all__ = ["ErrorStructure", "ErrorStructureConfig", "error_counts", "rate_replicates",
           "assertion_rates", "METRICS"]

NAME = "error_structure"
#: metric -> (reference label of the denominator, prediction that is an event)
METRICS = {"fpr": (0, 1), "fnr": (1, 0)}
DESIGN = "cluster(study) within institution"
_SEP = "\x1f"  # joins institution and study id into one cluster key


class ErrorStructureConfig(BlockConfig):
    """Settings of the error-structure block (M2.9, M2.11)."""

    #: study-clustered bootstrap replicates for rates and rate differences (paper: 10,000)
    n_resamples: NResamples = 10_000
    #: BH false discovery rate, applied separately to the FPR and the FNR families
    alpha: float = 0.05
    #: protocol of the error-pattern analyses (rates, tests, bootstrap, Jaccard)
    protocol: str = "narrative"
    #: models in the BH families and the Jaccard overlap (None = every model); others are
    #: reported as descriptive (paper 002 leaves the degenerate LLaVA-Med out)
    family_models: list[str] | None = None
    #: institution order (contrasts are earlier - later); None = sorted names
    institutions: list[str] | None = None
    #: continuity correction of the CMH statistic
    cmh_correction: bool = True
    #: protocols compared by the concordance table (a - b)
    protocol_pair: list[str] = Field(default_factory=lambda: ["narrative", "binary"],
                                     min_length=2, max_length=2)
    #: repeat the BH families and Jaccard on the (study, finding) pairs every family model has
    shared_cells: bool = True
    #: the single-reader audit (table ``reader_audit``): None = when the judgment table has a
    #: ``reader_label`` column; true requires it
    reader_audit: bool | None = None

    @field_validator("alpha")
    @classmethod
    def _alpha(cls, v: float) -> float:
        return fraction(v, "alpha")

    @model_validator(mode="after")
    def _pair(self) -> ErrorStructureConfig:
        if self.protocol_pair[0] == self.protocol_pair[1]:
            raise ValueError(f"protocol_pair needs two different protocols; got "
                             f"{self.protocol_pair}")
        return self


def _div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    out = np.full(np.broadcast(a, b).shape, np.nan)
    np.divide(a, b, out=out, where=b > 0)
    return out


# ----------------------------------------------------------------------------- counts
def error_counts(table: pd.DataFrame, institutions: list[str], findings: list[str]
                 ) -> dict[str, np.ndarray]:
    """Events and denominators of FPR and FNR for one model, shape (n_inst, n_find).

    Keys ``fpr_events, fpr_n, fnr_events, fnr_n``.  Absent cells count 0.
    """
    ii = pd.Categorical(table["institution"], categories=institutions).codes
    ff = pd.Categorical(table["finding"], categories=findings).codes
    ok = (ii >= 0) & (ff >= 0)
    cell = ii[ok] * len(findings) + ff[ok]
    y = table["reference"].to_numpy()[ok]
    p = table["prediction"].to_numpy()[ok]
    size = len(institutions) * len(findings)
    out = {}
    for m, (lab, ev) in METRICS.items():
        den = y == lab
        out[f"{m}_n"] = np.bincount(cell[den], minlength=size).reshape(len(institutions), -1)
        out[f"{m}_events"] = np.bincount(cell[den & (p == ev)], minlength=size).reshape(
            len(institutions), -1)
    return out


def rate_replicates(table: pd.DataFrame, institutions: list[str], findings: list[str], *,
                    n_resamples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Study-clustered bootstrap replicates of FPR and FNR for one model.

    Studies (institution-qualified ids) are resampled with replacement within each
    institution (:func:`medaudit.stats.designs.make_plan`, design ``cluster`` with
    ``strata=institution``); each replicate's rates are ratios of the resampled counts.
    The draws equal those of the row-level cluster plan (the same sorted clusters and
    strata), which the tests use to materialise resamples.

    Returns
    -------
    dict
        ``fpr`` and ``fnr``: arrays of shape (n_resamples, n_inst, n_find), NaN where a
        replicate has no denominator.
    """
    key = (table["institution"].astype(str) + _SEP + table["study_id"].astype(str)).to_numpy()
    studies, code = np.unique(key, return_inverse=True)
    inst_of_study = np.array([s.split(_SEP, 1)[0] for s in studies], dtype=object)
    ni, nf = len(institutions), len(findings)
    ii = pd.Categorical(table["institution"], categories=institutions).codes.astype(np.intp)
    ff = pd.Categorical(table["finding"], categories=findings).codes.astype(np.intp)
    y = table["reference"].to_numpy()
    p = table["prediction"].to_numpy()
    # per-study counts, columns (quantity, institution, finding): a replicate is one matmul
    cols = []
    for lab, ev in METRICS.values():
        cols.append(y == lab)
        cols.append((y == lab) & (p == ev))
    n_cols = len(cols) * ni * nf
    s_mat = np.zeros((studies.size, n_cols))
    base = ii * nf + ff
    for q, mask in enumerate(cols):
        np.add.at(s_mat, (code[mask], q * ni * nf + base[mask]), 1.0)
    plan = make_plan("cluster", np.zeros(studies.size), cluster=np.arange(studies.size),
                     strata=inst_of_study)
    chunks = [w.astype(np.float64) @ s_mat for w in plan.batches(n_resamples, rng)]
    c = np.concatenate(chunks).reshape(n_resamples, len(cols), ni, nf)
    return {"fpr": _div(c[:, 1], c[:, 0]), "fnr": _div(c[:, 3], c[:, 2])}


def assertion_rates(table: pd.DataFrame) -> pd.DataFrame:
    """Predicted-present rate per (model, protocol, institution, finding), with accuracy.

    Columns ``n, n_present, present_rate, n_reference_positive, reference_prevalence,
    accuracy``.
    """
    g = table.groupby(["model", "protocol", "institution", "finding"], sort=True)
    out = pd.DataFrame({"n": g.size(), "n_present": g["prediction"].sum(),
                        "n_reference_positive": g["reference"].sum(),
                        "n_correct": g["correct"].sum()}).reset_index()
    out["present_rate"] = out["n_present"] / out["n"]
    out["reference_prevalence"] = out["n_reference_positive"] / out["n"]
    out["accuracy"] = out["n_correct"] / out["n"]
    return out


# ----------------------------------------------------------------------------- the block
def _order(values: list[str], declared: list[str] | None, what: str) -> list[str]:
    if declared is None:
        return sorted(values)
    unknown = [v for v in declared if v not in values]
    if unknown:
        raise SchemaError(f"error_structure.{what} names {unknown} that the judgment table lacks; "
                          f"it has {sorted(values)}.")
    return [v for v in declared if v in values] + sorted(set(values) - set(declared))


def _degenerate_notes(assertion: pd.DataFrame) -> dict[tuple[str, str, str], str]:
    out = {}
    for r in assertion[assertion["negatives"] == "all"].itertuples():
        if r.degenerate:
            what = "never" if r.kind == "never_present" else "always"
            out[(r.model, r.prompt, r.cohort)] = (f"degenerate: {what} asserts present, for every "
                                                  f"finding at {r.cohort} (M2.11)")
    return out


def _assertion_table(t: pd.DataFrame, ctx: AuditContext, inst: list[str]) -> pd.DataFrame:
    a = assertion_rates(t)
    rows = []
    rank = {c: i for i, c in enumerate(inst)}
    for (m, prot, c), g in sorted(a.groupby(["model", "protocol", "institution"], sort=True),
                                  key=lambda kv: (kv[0][0], kv[0][1], rank[kv[0][2]])):
        rates = g["present_rate"].to_numpy()
        never, always = bool(np.all(rates == 0)), bool(np.all(rates == 1))
        kind = "never_present" if never else "always_present" if always else ""
        # finding rows carry their deployment's flag: degeneracy is a property of the deployment
        for r in g.itertuples():
            rows.append(spec_row(model=m, prompt=prot, cohort=c, negatives=r.finding,
                                 criterion="present_rate", estimate=r.present_rate,
                                 n=int(r.n), n_present=int(r.n_present),
                                 reference_prevalence=r.reference_prevalence,
                                 accuracy=r.accuracy, degenerate=never or always, kind=kind,
                                 qualification=""))
        n = int(g["n"].sum())
        prev = float(g["n_reference_positive"].sum() / n)
        rows.append(spec_row(
            model=m, prompt=prot, cohort=c, negatives="all", criterion="present_rate",
            estimate=float(g["n_present"].sum() / n), n=n,
            n_present=int(g["n_present"].sum()), reference_prevalence=prev,
            accuracy=float(g["n_correct"].sum() / n), degenerate=never or always, kind=kind,
            present_rate_min=float(rates.min()), present_rate_max=float(rates.max()),
            n_findings=int(rates.size), qualification=""))
    return pd.DataFrame(rows)


def _contrast_pairs(inst: list[str]) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(len(inst)), 2))


def _fisher_family(counts: dict[str, dict[str, np.ndarray]], models: list[str], inst: list[str],
                   findings: list[str]) -> dict[tuple[str, str, int, int, int], float]:
    """Two-sided Fisher p per (metric, model, finding index, inst a, inst b); nan if a side is empty."""
    out = {}
    for m in models:
        c = counts[m]
        for metric in METRICS:
            ev, n = c[f"{metric}_events"], c[f"{metric}_n"]
            for (a, b), f in itertools.product(_contrast_pairs(inst), range(len(findings))):
                if n[a, f] == 0 or n[b, f] == 0:
                    out[(metric, m, f, a, b)] = math.nan
                    continue
                tab = [[ev[a, f], n[a, f] - ev[a, f]], [ev[b, f], n[b, f] - ev[b, f]]]
                out[(metric, m, f, a, b)] = fisher_exact(tab).pvalue
    return out


def _significant_sets(pvals: dict, family: list[str], alpha: float
                      ) -> tuple[dict, dict[tuple[str, str], set]]:
    """BH per metric over the family's contrasts: adjusted p per key, significant sets."""
    adj: dict = {}
    sets: dict[tuple[str, str], set] = {}
    for metric in METRICS:
        keys = [k for k in sorted(pvals, key=str) if k[0] == metric and k[1] in family]
        if not keys:
            continue
        res = adjust_pvalues([pvals[k] for k in keys], method="bh", alpha=alpha,
                             nan_policy="omit", family=metric)
        for k, pa, rj in zip(keys, res.pvalues_adjusted, res.reject, strict=True):
            adj[k] = (float(pa), bool(rj), int(res.m))
            if rj:
                sets.setdefault((metric, k[1]), set()).add(k[2:])
    return adj, sets


def _rate_rows(ctx, m, prot, inst, findings, c, reps, degen, level) -> list[dict[str, Any]]:
    rows = []
    for metric in METRICS:
        ev, n = c[f"{metric}_events"], c[f"{metric}_n"]
        for i, f in itertools.product(range(len(inst)), range(len(findings))):
            if n[i, f] == 0 and ev[i, f] == 0 and not _present(c, i, f):
                continue  # the model has no row for this finding at this institution
            r = reps[metric][:, i, f]
            lo, hi = percentile_interval(r, level)
            n_deg = int(np.isnan(r).sum())
            q = join(degen.get((m, prot, inst[i]), ""),
                      f"no {'negatives' if metric == 'fpr' else 'positives'}: rate undefined"
                      if n[i, f] == 0 else "",
                      f"{n_deg} bootstrap replicate(s) with no denominator dropped" if n_deg else "")
            rows.append(spec_row(
                model=m, prompt=prot, cohort=inst[i], negatives=findings[f], criterion=metric,
                design=DESIGN, n_resamples=len(r), family=None,
                estimate=float(_div(ev[i, f], n[i, f])), ci_low=lo, ci_high=hi,
                n_degenerate=n_deg, events=int(ev[i, f]), n=int(n[i, f]), qualification=q))
    return rows


def _present(c, i, f) -> bool:
    return bool(c["fpr_n"][i, f] + c["fnr_n"][i, f] > 0)


def _contrast_rows(ctx, m, prot, inst, findings, c, reps, degen, level, pvals, adj, family
                   ) -> list[dict[str, Any]]:
    rows = []
    for metric in METRICS:
        ev, n = c[f"{metric}_events"], c[f"{metric}_n"]
        for (a, b), f in itertools.product(_contrast_pairs(inst), range(len(findings))):
            if not (_present(c, a, f) and _present(c, b, f)):
                continue
            d = reps[metric][:, a, f] - reps[metric][:, b, f]
            lo, hi = percentile_interval(d, level)
            n_deg = int(np.isnan(d).sum())
            key = (metric, m, f, a, b)
            pa, sig, m_fam = adj.get(key, (math.nan, False, 0))
            in_fam = m in family
            est = float(_div(ev[a, f], n[a, f]) - _div(ev[b, f], n[b, f]))
            q = join(degen.get((m, prot, inst[a]), ""), degen.get((m, prot, inst[b]), ""),
                      "a denominator is 0: contrast undefined, held out of the BH family"
                      if n[a, f] == 0 or n[b, f] == 0 else "",
                      "zero events at both institutions (p = 1, kept)"
                      if ev[a, f] == 0 and ev[b, f] == 0 and n[a, f] and n[b, f] else "",
                      f"{n_deg} bootstrap replicate(s) with a zero denominator dropped"
                      if n_deg else "")
            rows.append(spec_row(
                model=m, prompt=prot, cohort=f"{inst[a]} - {inst[b]}", negatives=findings[f],
                criterion=f"{metric}_difference", design=DESIGN, n_resamples=len(d),
                family=f"bh[{metric}]" if in_fam else "descriptive",
                cohort_a=inst[a], cohort_b=inst[b], estimate=est, ci_low=lo, ci_high=hi,
                n_degenerate=n_deg, events_a=int(ev[a, f]), n_a=int(n[a, f]),
                events_b=int(ev[b, f]), n_b=int(n[b, f]), pvalue=pvals[key],
                pvalue_adj=pa if in_fam else math.nan, significant=bool(sig) if in_fam else None,
                family_size=m_fam if in_fam else None, excludes_zero=bool(
                    np.isfinite(lo) and np.isfinite(hi) and (lo > 0 or hi < 0)),
                verdict=verdict(lo, hi, -1, n_degenerate=n_deg), qualification=q))
    return rows


def _cmh_rows(ctx, m, prot, inst, findings, c, es) -> list[dict[str, Any]]:
    rows = []
    for metric in METRICS:
        ev, n = c[f"{metric}_events"], c[f"{metric}_n"]
        for a, b in _contrast_pairs(inst):
            # every finding is a stratum: one the model lacks at either institution is an
            # empty table, dropped by cmh_test and named below (never left out unreported)
            fs = list(range(len(findings)))
            if not any(_present(c, a, f) or _present(c, b, f) for f in fs):
                continue
            tabs = [[[ev[a, f], n[a, f] - ev[a, f]], [ev[b, f], n[b, f] - ev[b, f]]] for f in fs]
            # statsmodels divides by zero for an infinite pooled odds ratio (no b*c anywhere);
            # the result (inf) is what we want, the numpy warning is not
            with np.errstate(divide="ignore", invalid="ignore"):
                r = cmh_test(tabs, correction=es.cmh_correction)
            dropped = [findings[fs[k]] for k in r.details["dropped_strata"]]
            orr = r.estimate
            direction = ("not defined" if not np.isfinite(orr) or math.isnan(r.pvalue) else
                         f"higher at {inst[a]}" if orr > 1 else
                         f"higher at {inst[b]}" if orr < 1 else "equal")
            rows.append(spec_row(
                model=m, prompt=prot, cohort=f"{inst[a]} - {inst[b]}", negatives="all",
                criterion=f"{metric}_cmh", family="descriptive",
                cohort_a=inst[a], cohort_b=inst[b], statistic=r.statistic, pvalue=r.pvalue,
                estimate=orr, n_strata=len(fs), n_strata_used=r.details["n_strata_used"],
                dropped_strata=", ".join(dropped), direction=direction,
                correction=es.cmh_correction,
                qualification=(f"{len(dropped)} empty or uninformative stratum(s) dropped"
                               if dropped else "")))
    return rows


def _jaccard_rows(ctx, prot, sets, family, findings, inst, subset, n_sig) -> list[dict]:
    rows = []
    for metric in METRICS:
        for a, b in itertools.combinations(sorted(family), 2):
            sa, sb = sets.get((metric, a), set()), sets.get((metric, b), set())
            rows.append(spec_row(
                model=f"{a} & {b}", prompt=prot, cohort="all", negatives="all",
                criterion=f"jaccard[{metric}_significant]", family=f"bh[{metric}]",
                model_a=a, model_b=b, subset=subset, estimate=jaccard(sa, sb),
                n_intersection=len(sa & sb), n_union=len(sa | sb), n_a=len(sa), n_b=len(sb),
                n_significant_a=n_sig.get((metric, a), 0), n_significant_b=n_sig.get((metric, b), 0),
                qualification="both sets empty: undefined" if not (sa or sb) else ""))
    return rows


def _shared(t: pd.DataFrame, family: list[str]) -> pd.DataFrame:
    sub = t[t["model"].isin(family)]
    k = sub.groupby(["study_id", "finding"], sort=False)["model"].nunique()
    keep = k[k == len(family)].index
    idx = pd.MultiIndex.from_frame(sub[["study_id", "finding"]])
    return sub[idx.isin(keep)]


def _concordance(t: pd.DataFrame, ctx: AuditContext, inst: list[str], pair) -> list[dict]:
    a, b = pair
    rows = []
    if not {a, b} <= set(t["protocol"]):
        return rows
    key = ["model", "institution", "study_id", "finding"]
    ta = t[t["protocol"] == a][[*key, "prediction", "correct"]]
    tb = t[t["protocol"] == b][[*key, "prediction", "correct"]]
    mm = ta.merge(tb, on=key, suffixes=("_a", "_b"), sort=True)
    for m in sorted(mm["model"].unique()):
        g_m = mm[mm["model"] == m]
        for c in [*[i for i in inst if i in set(g_m["institution"])], "all"]:
            g = g_m if c == "all" else g_m[g_m["institution"] == c]
            pa, pb = g["prediction_a"].to_numpy(), g["prediction_b"].to_numpy()
            k = cohen_kappa(pa, pb)
            acc_a, acc_b = float(g["correct_a"].mean()), float(g["correct_b"].mean())
            common = dict(model=m, prompt=f"{a} - {b}", cohort=c, negatives="all",
                          prompt_a=a, prompt_b=b, n=len(g), accuracy_a=acc_a, accuracy_b=acc_b)
            q = "" if np.isfinite(k.estimate) else "kappa undefined (chance agreement 1)"
            rows.append(spec_row(criterion="raw_agreement",
                                 estimate=k.details["observed_agreement"], qualification="",
                                 **common))
            rows.append(spec_row(criterion="cohen_kappa", estimate=k.estimate, qualification=q,
                                 **common))
            rows.append(spec_row(criterion="accuracy_difference", estimate=acc_a - acc_b,
                                 qualification="", **common))
    return rows


def _auroc(y: np.ndarray, s: np.ndarray) -> tuple[float, str]:
    n_pos = int(y.sum())
    if n_pos == 0 or n_pos == y.size:
        return math.nan, f"one class only ({'positives' if n_pos else 'negatives'}): undefined"
    return roc_auc(y, s), ""


def _logit_rows(t: pd.DataFrame, ctx: AuditContext, inst: list[str]) -> list[dict]:
    if not {"logit_yes", "logit_no"} <= set(t.columns):
        return []
    lt = t[np.isfinite(t["logit_yes"].to_numpy(dtype=float))
           & np.isfinite(t["logit_no"].to_numpy(dtype=float))]
    rows = []
    for (m, prot), g_mp in lt.groupby(["model", "protocol"], sort=True):
        for c in [*[i for i in inst if i in set(g_mp["institution"])], "all"]:
            g_c = g_mp if c == "all" else g_mp[g_mp["institution"] == c]
            for f in ["all", *sorted(g_c["finding"].unique())]:
                g = g_c if f == "all" else g_c[g_c["finding"] == f]
                p_yes = expit(g["logit_yes"].to_numpy(dtype=float) - g["logit_no"].to_numpy(dtype=float))
                pred = g["prediction"].to_numpy()
                conf = np.where(pred == 1, p_yes, 1.0 - p_yes)
                for crit, y, s in (("roc_auc[reference]", g["reference"].to_numpy(), p_yes),
                                   ("roc_auc[correct]", g["correct"].to_numpy(), conf)):
                    est, q = _auroc(y.astype(np.float64), s)
                    rows.append(spec_row(model=m, prompt=prot, cohort=c, negatives=f,
                                         criterion=crit, estimate=est, n=len(g),
                                         n_pos=int(y.sum()), n_neg=int(len(g) - y.sum()),
                                         qualification=q))
    return rows


def _run(ctx: AuditContext, es: ErrorStructureConfig) -> BlockResult:
    """Error rates, institution contrasts, CMH, Jaccard, degeneracy, concordance, logit AUROCs."""
    if ctx.judgments is None:
        raise SchemaError("block 'error_structure' needs a judgment table (`judgments:` in the spec).")
    level = ctx.resampling.confidence_level
    t_all = ctx.judgments
    inst = _order(list(t_all["institution"].unique()), es.institutions, "institutions")
    notes = [f"Error-pattern protocol {es.protocol!r}; FPR/FNR intervals and differences: "
             f"percentile, {es.n_resamples} study-clustered replicates resampled within each "
             "institution (one draw per model, shared by its contrasts)."]
    ctx.tick("error_structure: degeneracy")
    assertion = _assertion_table(t_all, ctx, inst)
    degen = _degenerate_notes(assertion)
    t = t_all[t_all["protocol"] == es.protocol]
    if t.empty:
        raise SchemaError(f"error_structure.protocol is {es.protocol!r}, but the judgment table has "
                          f"protocols {sorted(t_all['protocol'].unique())}; set "
                          "`error_structure: {protocol: ...}` in the spec.")
    models = sorted(t["model"].unique())
    family = models if es.family_models is None else es.family_models
    missing = [m for m in family if m not in models]
    if missing:
        raise SchemaError(f"error_structure.family_models names {missing} with no {es.protocol!r} "
                          f"judgments; models present: {models}.")
    findings = sorted(t["finding"].unique())
    by_model = {m: g for m, g in t.groupby("model", sort=True)}
    counts = {m: error_counts(g, inst, findings) for m, g in by_model.items()}
    pvals = _fisher_family(counts, models, inst, findings)
    adj, sets = _significant_sets(pvals, family, es.alpha)
    rate_rows, con_rows, cmh_rows = [], [], []
    for m in models:
        ctx.tick(f"error_structure: cluster bootstrap {m}")
        reps = rate_replicates(by_model[m], inst, findings, n_resamples=es.n_resamples,
                               rng=ctx.rng(NAME, "bootstrap", m, es.protocol))
        rate_rows += _rate_rows(ctx, m, es.protocol, inst, findings, counts[m], reps, degen, level)
        con_rows += _contrast_rows(ctx, m, es.protocol, inst, findings, counts[m], reps, degen,
                                   level, pvals, adj, family)
        cmh_rows += _cmh_rows(ctx, m, es.protocol, inst, findings, counts[m], es)
    tables = {"rates": pd.DataFrame(rate_rows), "contrasts": pd.DataFrame(con_rows),
              "cmh": pd.DataFrame(cmh_rows), "assertion": assertion}
    return _patterns(ctx, es, t_all, t, inst, family, findings, sets, tables, notes)


def _patterns(ctx: AuditContext, es: ErrorStructureConfig, t_all: pd.DataFrame, t: pd.DataFrame,
              inst: list[str], family: list[str], findings: list[str], sets: dict,
              tables: dict[str, pd.DataFrame], notes: list[str]) -> BlockResult:
    """Jaccard of significant sets, degeneracy, protocol concordance and logit AUROCs."""
    assertion = tables["assertion"]
    n_sig = {k: len(v) for k, v in sets.items()}
    jac = _jaccard_rows(ctx, es.protocol, sets, family, findings, inst, "all", n_sig)
    if es.shared_cells and len(family) > 1:
        sh = _shared(t, family)
        c_sh = {m: error_counts(g, inst, findings) for m, g in sh.groupby("model", sort=True)}
        _, sets_sh = _significant_sets(_fisher_family(c_sh, sorted(c_sh), inst, findings),
                                       family, es.alpha)
        jac += _jaccard_rows(ctx, es.protocol, sets_sh, family, findings, inst, "shared",
                             {k: len(v) for k, v in sets_sh.items()})
        notes.append(f"Shared cells: {sh[['study_id', 'finding']].drop_duplicates().shape[0]} "
                     "(study, finding) pairs judged by every family model.")
    ctx.tick("error_structure: concordance and logit AUROC")
    conc = _concordance(t_all, ctx, inst, es.protocol_pair)
    if not conc:
        notes.append(f"Protocol concordance not computed: the table lacks protocol(s) "
                     f"{sorted(set(es.protocol_pair) - set(t_all['protocol']))}.")
    logit = _logit_rows(t_all, ctx, inst)
    if not logit:
        notes.append("Logit AUROCs not computed: no row carries both logit_yes and logit_no.")
    reader = _reader_rows(t_all, ctx, es, family)
    if reader:
        notes.append("Reader audit (M2.12): kappa over unique audited (study, finding) pairs with a "
                     "definite reader label; reader-flagged error rates of model-expanded records "
                     "by risk tertile of their cells (empirical cell error rate); descriptive.")
    n_deg = sum(bool(v) for v in assertion.loc[assertion["negatives"] == "all", "degenerate"])
    if n_deg:
        notes.append(f"{n_deg} degenerate deployment(s) (assertion rate 0 or 1 for every finding); "
                     "their rows carry a qualification.")
    con = tables["contrasts"]
    if not con.empty:  # NA (not None) where a contrast is outside the BH families
        con["significant"] = con["significant"].astype("boolean")
        con["family_size"] = con["family_size"].astype("Int64")
    tables = {"rates": tables["rates"], "contrasts": con, "cmh": tables["cmh"],
              "jaccard": pd.DataFrame(jac), "assertion": assertion,
              "concordance": pd.DataFrame(conc), "logit_auroc": pd.DataFrame(logit)}
    if reader:
        tables["reader_audit"] = pd.DataFrame(reader)
    return BlockResult(name=NAME, tables=tables, notes=tuple(notes))


def _reader_rows(t: pd.DataFrame, ctx: AuditContext, es: ErrorStructureConfig,
                 family: list[str]) -> list[dict[str, Any]]:
    """The reader audit's rows (kappa pooled and per institution; tertile error rates)."""
    if es.reader_audit is False or (es.reader_audit is None and "reader_label" not in t.columns):
        return []
    from medaudit.agreement.reader_audit import reader_audit

    r = reader_audit(t, protocol=es.protocol, models=family)
    common = dict(model=", ".join(family), prompt=es.protocol, negatives="all",
                  design="reader_audit")
    crit = "cohen_kappa[reader,reference]"
    rows = [spec_row(cohort="all", criterion=crit, estimate=r.kappa, n=r.n_pairs,
                     n_pairs_evaluable=r.n_pairs_evaluable, raw_agreement=r.raw_agreement,
                     qualification="" if math.isfinite(r.kappa) else "kappa undefined", **common)]
    rows += [spec_row(cohort=b["institution"], criterion=crit, estimate=b["kappa"], n=b["n_pairs"],
                      raw_agreement=b["raw_agreement"], qualification="", **common)
             for b in r.by_institution.to_dict("records")]
    tert = r.tertiles.set_index("tertile")
    for name, x in tert.iterrows():
        rows.append(spec_row(cohort="all", criterion="reader_flagged_error_rate", risk_tertile=name,
                             estimate=x["error_rate"], n=int(x["n_records"]),
                             n_errors=int(x["n_errors"]), n_studies=int(x["n_studies"]),
                             n_cells=int(x["n_cells"]), risk_low=x["risk_low"],
                             risk_high=x["risk_high"], n_records=r.n_records,
                             qualification="descriptive (model-expanded records)", **common))
    rows.append(spec_row(cohort="all", criterion="reader_flagged_error_rate_difference",
                         risk_tertile="top - bottom",
                         estimate=tert.loc["top", "error_rate"] - tert.loc["bottom", "error_rate"],
                         n=int(tert.loc["top", "n_records"] + tert.loc["bottom", "n_records"]),
                         qualification="counts only; no test (records cluster by study)", **common))
    return rows


class ErrorStructure(Block):
    """FPR/FNR by institution and finding, Fisher + BH, CMH, degeneracy, concordance (paper 002)."""

    name = NAME
    title = "Error structure across institutions"
    summary = ("paper 002: error rates by institution and finding, Fisher + BH, CMH, degeneracy, "
               "protocol concordance")
    config = ErrorStructureConfig
    requires = ("judgments",)
    tables = (
        TableSchema("rates", "FPR and FNR per model x institution x finding, clustered intervals",
                    ("estimate", "ci_low", "ci_high")),
        TableSchema("contrasts", "rate differences between institutions, Fisher + BH",
                    ("cohort_a", "cohort_b", "estimate", "ci_low", "ci_high", "pvalue",
                     "pvalue_adj", "significant")),
        TableSchema("cmh", "finding-stratified CMH per model x institution pair x metric",
                    ("pvalue", "dropped_strata")),
        TableSchema("jaccard", "overlap of two family models' sets of significant contrasts",
                    ("estimate",)),
        TableSchema("assertion", "predicted-present rate and the degeneracy flag",
                    ("estimate", "degenerate")),
        TableSchema("concordance", "protocol agreement, kappa and accuracy change", ()),
        TableSchema("logit_auroc", "AUROC of logit-derived confidences (point estimates)",
                    ("estimate",)),
        TableSchema("reader_audit", "M2.12 single-reader audit: kappa against the reference and "
                    "risk-tertile reader-flagged error rates", ("estimate", "n")),
    )
    figures = ("fig11_error_rates",)
    claim_kinds = ("institution",)

    def provenance(self, ctx: AuditContext, config: ErrorStructureConfig) -> dict[str, Any]:
        return {"n_resamples": config.n_resamples}

    def run(self, ctx: AuditContext, config: ErrorStructureConfig) -> BlockResult:
        return _run(ctx, config)

    def claims(self, results: Mapping[str, BlockResult], study: Study,
               config: ErrorStructureConfig) -> list[dict[str, Any]]:
        return _institution_claims(results)


# ----------------------------------------------------------------------------- claims
def _institution_claims(results: Mapping[str, BlockResult]) -> list[dict[str, Any]]:
    """Error rates carried from one institution to another (error_structure.contrasts)."""
    con = ck.table(results, NAME, "contrasts")
    if con.empty:
        return []
    rates = ck.table(results, NAME, "rates")
    # the block lists each pair once (estimate = rate(cohort_a) - rate(cohort_b)); every
    # institution is a claim's source, so each contrast is read from both ends: seen from
    # its cohort_b the difference rate(other) - rate(source) is the estimate as reported,
    # seen from its cohort_a it is the negated estimate with the interval flipped
    fwd = con.assign(_source=con["cohort_a"], _other=con["cohort_b"], _sign=-1.0)
    back = con.assign(_source=con["cohort_b"], _other=con["cohort_a"], _sign=1.0)
    both = pd.concat([fwd, back], ignore_index=True)
    rows: list[dict[str, Any]] = []
    n = 0
    keys = ["model", "prompt", "criterion", "negatives", "_source"]
    for key, g in both.groupby(keys, sort=True, dropna=False):
        model, prompt, crit, finding, source = key
        rate = str(crit).removesuffix("_difference")
        n += 1
        claim = {**ck.claim_base(f"I{n:02d}", f"{model}'s {rate.upper()} on {finding} at {source} "
                                 "carries over to other institutions", "institution", model=model,
                                 prompt=prompt, cohort=source, criterion=rate), "task": finding}
        at = rates[(rates["model"] == model) & (rates["prompt"] == prompt)
                   & (rates["cohort"] == source) & (rates["negatives"] == finding)
                   & (rates["criterion"] == rate)] if not rates.empty else rates
        if len(at):  # the rate as measured at its own institution (the claim at E)
            a = at.iloc[0]
            # measured where the claim is made: the starting point, not evidence that it travels
            rows.append(ck.claim_cell(claim, "at E", "", verdict="by construction",
                              estimate=ck.to_float(a["estimate"]),
                              ci_low=ck.to_float(a["ci_low"]), ci_high=ck.to_float(a["ci_high"]),
                              note=ck.qualify("the rate measured at its own institution",
                                      a.get("qualification")), source="error_structure.rates"))
        for _, r in g.sort_values("_other").iterrows():
            sig = r.get("significant")  # NA outside the BH family (family "descriptive")
            in_family = r.get("family") != "descriptive" and not (sig is None or pd.isna(sig))
            s = r["_sign"]
            lo, hi = sorted((s * ck.to_float(r["ci_low"]), s * ck.to_float(r["ci_high"])))
            if not math.isfinite(ck.to_float(r["pvalue"])):
                verdict = "not defined"
            elif not in_family:
                verdict = "not assessed"
            else:
                verdict = "does not hold" if str(sig).lower() == "true" else "unresolved"
            note = ck.qualify(f"{r.get('family', '')}: p_adj = {ck.to_float(r.get('pvalue_adj')):.3g}"
                      if in_family else "outside the BH family (descriptive contrast)",
                      "difference not detected (equality not shown)"
                      if verdict == "unresolved" else "", r.get("qualification"))
            # the estimate is rate(other) - rate(source): what changes when the claim travels
            rows.append(ck.claim_cell(claim, "institution", str(r["_other"]), verdict=verdict,
                              estimate=s * ck.to_float(r["estimate"]), ci_low=lo, ci_high=hi, note=note,
                              source="error_structure.contrasts"))
    return rows
