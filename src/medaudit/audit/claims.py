"""Claims built from block results, and the portability matrix (paper 000 M0.1).

A claim is a typed statement with an evaluation specification E, an estimate,
an interval and a verdict.  Its portability is judged by changing one element of
E at a time and reading the verdict under the changed specification from the
block tables (never recomputing a statistic here):

* ``holds``      — the interval excludes the null on the claimed side;
* ``reversed``   — the interval excludes the null on the other side;
* ``unresolved`` — the interval spans the decision boundary (a first-class verdict);
* ``not defined``— the stratum is degenerate (e.g. undefined metric);
* ``unaffected`` — the claim's criterion does not depend on this element (AUROC and π);
* ``does not hold`` — a level or retention claim fails under the changed specification.

Claims: rankings ("A ranks above B on AUROC", with the Brier criterion and every π
as changes of r, and soft labels as a change of the reference standard y),
reliability ("m has AUROC ≥ L", ``claims.auroc_at_least``) and operating
constraints ("τ chosen on S keeps Se ≥ 0.95"); paper 001 and 002 claims (rankings
under soft labels, error rates and reliability estimates across institutions) are
built in :mod:`medaudit.audit.claims_extra`.

Qualifications (documented exposure, small groups, degenerate replicates) travel
with each cell.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from medaudit.blocks._base import BlockResult

__all__ = ["build_claims", "CLAIM_COLUMNS"]

CLAIM_COLUMNS = ("claim_id", "claim", "kind", "change", "changed_to", "model", "prompt", "cohort",
                 "negatives", "prevalence", "threshold", "criterion", "estimate", "ci_low",
                 "ci_high", "verdict", "qualification", "source_table", "other_criterion",
                 "other_estimate")


def _verdict_diff(est: float, lo: float, hi: float, sign: int) -> str:
    """Verdict for a claim that ``sign * difference > 0``."""
    if any(math.isnan(x) for x in (est, lo, hi)):
        return "not defined"
    lo_s, hi_s = sorted((sign * lo, sign * hi))
    if lo_s > 0:
        return "holds"
    if hi_s < 0:
        return "reversed"
    return "unresolved"


def _table(results: dict[str, BlockResult], block: str, name: str) -> pd.DataFrame:
    res = results.get(block)
    if res is None or name not in res.tables:
        return pd.DataFrame()
    return res.tables[name]


def _q(*parts: Any) -> str:
    return "; ".join(sorted({str(p) for p in parts if isinstance(p, str) and p}))


def _pair_rows(df: pd.DataFrame, a: str, b: str, criterion: str) -> pd.DataFrame:
    if df.empty:
        return df
    m = (df["criterion"] == criterion) & (
        ((df["model_a"] == a) & (df["model_b"] == b)) | ((df["model_a"] == b) & (df["model_b"] == a)))
    return df[m]


def _cell(claim: dict, change: str, changed_to: str, row: pd.Series | None, better: str,
          *, lower_is_better: bool = False, verdict: str | None = None, note: str = "",
          source: str = "", criterion: str | None = None) -> dict[str, Any]:
    """One matrix cell; the difference is oriented as ``better - other``."""
    out = {**claim, "change": change, "changed_to": changed_to, "source_table": source,
           "estimate": math.nan, "ci_low": math.nan, "ci_high": math.nan, "qualification": note,
           "verdict": verdict or "not assessed"}
    if criterion is not None:
        out["criterion"] = criterion
    if row is None:
        # nothing to read: still name the changed element of E
        column = {"C": "cohort", "p": "prompt", "N": "negatives"}.get(change)
        if column and changed_to:
            out[column] = changed_to
        return out
    orient = 1.0 if row["model_a"] == better else -1.0
    est = orient * row["estimate"]
    lo, hi = sorted((orient * row["ci_low"], orient * row["ci_high"]))
    out.update(estimate=est, ci_low=lo, ci_high=hi,
               qualification=_q(note, row.get("qualification", "")))
    if verdict is None:
        out["verdict"] = _verdict_diff(est, lo, hi, -1 if lower_is_better else 1)
    for k in ("prompt", "cohort", "negatives", "prevalence", "threshold"):
        if k in row.index:
            out[k] = row[k]
    return out


def _ranking_claims(results, spec) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    diffs = _table(results, "discrimination", "model_differences")
    if diffs.empty:
        return rows
    by_prompt = _table(results, "prompts", "model_differences_by_prompt")
    by_group = _table(results, "spectrum", "model_differences")
    prev = _table(results, "prevalence", "differences")
    primary = [c for c, v in spec.cohorts.items() if v.role in ("primary", "extension")]
    n = 0
    for cohort in primary:
        base = diffs[(diffs["cohort"] == cohort) & (diffs["criterion"] == "roc_auc_difference")]
        for _, r in base.sort_values(["model_a", "model_b"]).iterrows():
            a, b = r["model_a"], r["model_b"]
            sign = 1 if r["estimate"] >= 0 else -1
            hi_m, lo_m = (a, b) if sign > 0 else (b, a)
            n += 1
            claim = {"claim_id": f"R{n:02d}", "claim": f"{hi_m} ranks above {lo_m} on AUROC",
                     "kind": "ranking", "model": f"{hi_m} vs {lo_m}", "prompt": r["prompt"],
                     "cohort": cohort, "negatives": r["negatives"], "prevalence": "observed",
                     "threshold": None, "criterion": "roc_auc", "verdict": ""}
            rows.append(_cell(claim, "at E", "", r, hi_m, source="discrimination.model_differences"))
            for other in spec.cohorts:
                if other == cohort:
                    continue
                o = _pair_rows(diffs[diffs["cohort"] == other], a, b, "roc_auc_difference")
                rows.append(_cell(claim, "C", other, o.iloc[0] if len(o) else None, hi_m,
                                  source="discrimination.model_differences"))
            if not by_prompt.empty:
                bp = by_prompt[(by_prompt["cohort"] == cohort)
                               & (by_prompt["prompt"] != r["prompt"])]
                for p in dict.fromkeys(bp["prompt"]):
                    o = _pair_rows(bp[bp["prompt"] == p], a, b, "roc_auc_difference")
                    rows.append(_cell(claim, "p", p, o.iloc[0] if len(o) else None, hi_m,
                                      source="prompts.model_differences_by_prompt"))
            if not by_group.empty:
                bg = by_group[by_group["cohort"] == cohort]
                for g in dict.fromkeys(bg["negatives"]):
                    o = _pair_rows(bg[bg["negatives"] == g], a, b, "roc_auc_difference")
                    rows.append(_cell(claim, "N", g, o.iloc[0] if len(o) else None, hi_m,
                                      source="spectrum.model_differences"))
            rows.append(_cell(claim, "π", "any", None, hi_m, verdict="unaffected",
                              note="AUROC does not depend on prevalence"))
            o = _pair_rows(diffs[diffs["cohort"] == cohort], a, b, "soft_roc_auc_difference")
            if len(o):  # the cohort has soft labels: the reference standard as a changed element
                rows.append(_cell(claim, "y", "soft labels", o.iloc[0], hi_m,
                                  source="discrimination.model_differences",
                                  criterion="soft_roc_auc"))
            o = _pair_rows(diffs[diffs["cohort"] == cohort], a, b, "brier_score_difference")
            rows.append(_cell(claim, "r", "brier_score", o.iloc[0] if len(o) else None, hi_m,
                              lower_is_better=True, source="discrimination.model_differences",
                              criterion="brier_score"))
            if not prev.empty:
                pv = prev[prev["cohort"] == cohort]
                for pi in dict.fromkeys(pv["prevalence"]):
                    o = _pair_rows(pv[pv["prevalence"] == pi], a, b, "brier_score_difference")
                    rows.append(_cell(claim, "r, π", f"brier_score at π={pi}",
                                      o.iloc[0] if len(o) else None, hi_m, lower_is_better=True,
                                      source="prevalence.differences",
                                      criterion=f"brier_score[prevalence={pi}]"))
    return rows


def _threshold_claims(results, spec) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    tr = _table(results, "transport", "transport")
    named = _table(results, "transport", "named_groups")
    if tr.empty:
        return rows
    n = 0
    by = ["source", "rule", "model", "threshold"] + (["target_value"] if "target_value" in tr.columns
                                                    else [])
    keys = tr[by].drop_duplicates()
    for _, k in keys.iterrows():
        sub = tr[(tr["source"] == k["source"]) & (tr["rule"] == k["rule"]) & (tr["model"] == k["model"])]
        if "target_value" in tr.columns:
            sub = sub[sub["target_value"] == k["target_value"]]
        crit = "sensitivity" if k["rule"] == "sensitivity" else "specificity"
        tv = float(sub["target_value"].iloc[0]) if "target_value" in sub.columns else next(
            (t.target_value for t in spec.transport if t.source == k["source"]), 0.95)
        n += 1
        claim = {"claim_id": f"T{n:02d}",
                 "claim": f"{k['model']}: τ chosen on {k['source']} for {crit} ≥ {tv:g} keeps "
                          f"{crit} ≥ {tv:g}",
                 "kind": "operating constraint", "model": k["model"], "prompt": spec.primary_prompt,
                 "cohort": k["source"], "negatives": "all", "prevalence": "observed",
                 "threshold": k["threshold"], "criterion": crit, "verdict": "holds"}
        rows.append({**claim, "change": "at E", "changed_to": "", "estimate": math.nan,
                     "ci_low": math.nan, "ci_high": math.nan,
                     "qualification": "holds on the source by construction",
                     "source_table": "transport.thresholds"})
        for _, t in sub[sub["criterion"] == crit].iterrows():
            other = sub[(sub["cohort"] == t["cohort"]) & (sub["criterion"] != crit)]
            note = _q(t.get("qualification", ""))
            other_crit, other_est = None, math.nan
            if len(other):
                o = other.iloc[0]
                other_crit, other_est = o["criterion"], float(o["estimate"])
                if o["estimate"] < 0.05:  # the constraint is met by flagging (almost) everyone
                    note = _q(note, f"flagged: useless operating point ({o['criterion']} < 0.05)")
            verdict = "holds" if bool(t["retained"]) else "does not hold"
            rows.append({**claim, "change": "C", "changed_to": t["cohort"], "cohort": t["cohort"],
                         "estimate": t["estimate"],
                         "ci_low": t["ci_low"], "ci_high": t["ci_high"], "verdict": verdict,
                         "qualification": note, "source_table": "transport.transport",
                         "other_criterion": other_crit, "other_estimate": other_est})
        if not named.empty:
            ng = named[(named["source"] == k["source"]) & (named["rule"] == k["rule"])
                       & (named["model"] == k["model"])]
            for _, g in ng.iterrows():
                rows.append({**claim, "change": "N", "changed_to": f"{g['cohort']}: {g['negatives']}",
                             "cohort": g["cohort"], "negatives": g["negatives"],
                             "criterion": "specificity",
                             "estimate": g["estimate"], "ci_low": math.nan, "ci_high": math.nan,
                             "verdict": "specificity only",
                             "qualification": _q(g.get("qualification", "")),
                             "source_table": "transport.named_groups"})
    return rows


def _level_verdict(est: float, lo: float, hi: float, level: float) -> str:
    if any(math.isnan(x) for x in (est, lo, hi)):
        return "not defined"
    if lo >= level:
        return "holds"
    if hi < level:
        return "does not hold"
    return "unresolved"


def _reliability_claims(results, spec) -> list[dict[str, Any]]:
    """"m separates positives from controls with AUROC >= L" (paper 000's reliability claims)."""
    level = spec.claims.auroc_at_least
    metrics = _table(results, "discrimination", "metrics")
    if level is None or metrics.empty:
        return []
    auc = metrics[metrics["criterion"] == "roc_auc"]
    matrix = _table(results, "prompts", "auroc_matrix")
    groups = _table(results, "spectrum", "groups")
    rows: list[dict[str, Any]] = []
    n = 0
    primary = [c for c, v in spec.cohorts.items() if v.role in ("primary", "extension")]
    for cohort in primary:
        base = auc[(auc["cohort"] == cohort) & (auc["estimate"] >= level)]
        for _, r in base.sort_values("model").iterrows():
            n += 1
            m = r["model"]
            claim = {"claim_id": f"L{n:02d}", "claim": f"{m} separates positives from controls "
                     f"with AUROC ≥ {level:g}", "kind": "reliability", "model": m,
                     "prompt": r["prompt"], "cohort": cohort, "negatives": r["negatives"],
                     "prevalence": "observed", "threshold": None, "criterion": "roc_auc"}

            def cell(change, to, row, note="", source="discrimination.metrics", _claim=claim, **e):
                out = {**_claim, **e, "change": change, "changed_to": to, "source_table": source,
                       "estimate": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                       "verdict": "not assessed", "qualification": note}
                if row is not None:
                    lo, hi = row.get("ci_low", math.nan), row.get("ci_high", math.nan)
                    out.update(estimate=row["estimate"], ci_low=lo, ci_high=hi,
                               qualification=_q(note, row.get("qualification", "")))
                    if isinstance(lo, float) and math.isnan(lo):  # a point estimate only
                        out["verdict"] = "holds" if row["estimate"] >= level else "does not hold"
                        out["qualification"] = _q(out["qualification"], "point estimate, no interval")
                    else:
                        out["verdict"] = _level_verdict(row["estimate"], lo, hi, level)
                return out

            rows.append(cell("at E", "", r))
            for other in spec.cohorts:
                if other != cohort:
                    o = auc[(auc["cohort"] == other) & (auc["model"] == m)]
                    rows.append(cell("C", other, o.iloc[0] if len(o) else None, cohort=other))
            if not matrix.empty:
                mp = matrix[(matrix["cohort"] == cohort) & (matrix["model"] == m)
                            & (matrix["prompt"] != r["prompt"])
                            & (matrix["criterion"] == "roc_auc" if "criterion" in matrix
                               else True)]
                for _, o in mp.iterrows():
                    rows.append(cell("p", o["prompt"], o, source="prompts.auroc_matrix",
                                     prompt=o["prompt"]))
            if not groups.empty:
                g = groups[(groups["cohort"] == cohort) & (groups["model"] == m)
                           & (groups["criterion"] == "roc_auc")]
                for _, o in g.iterrows():
                    rows.append(cell("N", o["negatives"], o, source="spectrum.groups",
                                     negatives=o["negatives"]))
            rows.append({**cell("π", "any", None), "verdict": "unaffected",
                         "qualification": "AUROC does not depend on prevalence"})
            soft = metrics[(metrics["cohort"] == cohort) & (metrics["model"] == m)
                           & (metrics["prompt"] == r["prompt"])
                           & (metrics["negatives"] == r["negatives"])
                           & (metrics["criterion"] == "soft_roc_auc")]
            if len(soft):
                rows.append(cell("y", "soft labels", soft.iloc[0], criterion="soft_roc_auc"))
    return rows


def build_claims(results: dict[str, BlockResult], spec) -> pd.DataFrame:
    """The portability matrix in long form: one row per claim × changed element."""
    from medaudit.audit.claims_extra import agreement_claims, institution_claims, label_claims

    rows = (_ranking_claims(results, spec) + _reliability_claims(results, spec)
            + _threshold_claims(results, spec) + label_claims(results, spec)
            + institution_claims(results, spec) + agreement_claims(results, spec))
    if not rows:
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    df = pd.DataFrame(rows)
    for c in CLAIM_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df[list(CLAIM_COLUMNS)]
