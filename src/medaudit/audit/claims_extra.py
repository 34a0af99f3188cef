"""Claims of papers 001 and 002 for the portability matrix (read from block tables only).

* **Label claims** (paper 001, block ``label_uncertainty``): "A ranks above B on the
  ordinary metric against the aggregated hard label"; the changed element is the
  reference standard ``y`` (soft labels from the annotations).  The block reports
  point estimates and their order (``order_ordinary``/``order_soft``, ties to the
  block's rank precision), so the verdict reads that order (``holds`` / ``reversed``;
  a tie is ``unresolved``) and the cell says it is a point
  comparison; the annotation-bootstrap stability of the ranking is its own claim
  (``soft more stable`` from the one-sided binomial test).
* **Institution claims** (paper 002, block ``error_structure``): "m's FPR (FNR) on
  finding k at institution a carries over to institution b", with every institution
  as a (each contrast read in both directions).  A BH-significant Fisher contrast means
  it ``does not hold``; otherwise the difference was not detected, which is not
  equality, so the cell is ``unresolved`` with the study-clustered interval of the
  difference.  A model outside the BH family (``descriptive``) is ``not assessed``.
* **Agreement claims** (paper 002, block ``agreement``): the Beta–Binomial
  predictive intervals reach their nominal coverage at each held-out institution
  (point estimate of coverage over the held-out cells), and the family Brier gap.

Nothing here computes a statistic; verdicts compare what the blocks reported.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from medaudit.blocks._base import BlockResult

__all__ = ["label_claims", "institution_claims", "agreement_claims"]


def _table(results: dict[str, BlockResult], block: str, name: str) -> pd.DataFrame:
    res = results.get(block)
    if res is None or name not in res.tables:
        return pd.DataFrame()
    return res.tables[name]


def _f(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _q(*parts: Any) -> str:
    return "; ".join(dict.fromkeys(str(p) for p in parts if isinstance(p, str) and p))


def _base(claim_id: str, text: str, kind: str, *, model: str, prompt: Any, cohort: Any,
          negatives: Any = "all", criterion: str) -> dict[str, Any]:
    return {"claim_id": claim_id, "claim": text, "kind": kind, "model": model, "prompt": prompt,
            "cohort": cohort, "negatives": negatives, "prevalence": "observed", "threshold": None,
            "criterion": criterion}


def _cell(claim: dict[str, Any], change: str, changed_to: str, *, verdict: str, estimate: float,
          ci_low: float = math.nan, ci_high: float = math.nan, note: str = "", source: str,
          **e: Any) -> dict[str, Any]:
    return {**claim, **e, "change": change, "changed_to": changed_to, "estimate": estimate,
            "ci_low": ci_low, "ci_high": ci_high, "verdict": verdict, "qualification": note,
            "source_table": source}


# ------------------------------------------------------------------------------ paper 001
def label_claims(results: dict[str, BlockResult], spec: Any) -> list[dict[str, Any]]:
    """Rankings under hard labels, re-read under soft labels; ranking stability claims."""
    rows: list[dict[str, Any]] = []
    changes = _table(results, "label_uncertainty", "rank_changes")
    n = 0
    if not changes.empty:
        for _, r in changes.iterrows():
            # the block's own order (ties to RANK_DECIMALS, as its ranks): a last-bit float
            # difference between mathematically equal metrics is neither a claim nor a reversal
            order = str(r["order_ordinary"])
            if order not in ("a_higher", "b_higher"):
                continue  # tie or undefined: no hard-label order to claim
            oa, ob = _f(r["ordinary_a"]), _f(r["ordinary_b"])
            hi_m, lo_m = (r["model_a"], r["model_b"]) if order == "a_higher" else (
                r["model_b"], r["model_a"])
            sign = 1.0 if order == "a_higher" else -1.0
            n += 1
            crit = str(r["ordinary_criterion"])
            claim = _base(f"Y{n:02d}", f"{hi_m} ranks above {lo_m} on {crit} (hard labels)",
                          "ranking", model=f"{hi_m} vs {lo_m}", prompt=r["prompt"],
                          cohort=r["cohort"], negatives=r["negatives"], criterion=crit)
            note = "point estimates (no interval); ranking stability in label_uncertainty.stability"
            rows.append(_cell(claim, "at E", "", verdict="holds", estimate=sign * (oa - ob),
                              note=note, source="label_uncertainty.rank_changes"))
            soft = str(r["order_soft"])
            verdict = ("holds" if soft == order else "unresolved" if soft == "tie"
                       else "reversed" if soft in ("a_higher", "b_higher") else "not defined")
            rows.append(_cell(claim, "y", "soft labels", verdict=verdict,
                              estimate=sign * (_f(r["soft_a"]) - _f(r["soft_b"])), note=note,
                              source="label_uncertainty.rank_changes", criterion=str(r["criterion"])))
    tests = _table(results, "label_uncertainty", "stability_test")
    for _, r in tests.iterrows() if not tests.empty else ():
        n += 1
        claim = _base(f"Y{n:02d}", f"rankings by {r['criterion']} are more stable under annotation "
                      f"resampling than by {r['ordinary_criterion']}", "stability", model="all",
                      prompt=r["prompt"], cohort=r["cohort"], criterion=str(r["criterion"]))
        p = _f(r["pvalue"])
        sig = str(r.get("significant")).lower() == "true"
        verdict = "not defined" if not math.isfinite(p) else "holds" if sig else "unresolved"
        rows.append(_cell(claim, "y", "annotation bootstrap", verdict=verdict,
                          estimate=_f(r["stability_soft"]) - _f(r["stability_ordinary"]),
                          note=_q(f"one-sided binomial p = {p:.3g} (k = {r['k']} of {r['n']})",
                                  r.get("qualification")),
                          source="label_uncertainty.stability_test"))
    return rows


# ------------------------------------------------------------------------------ paper 002
def institution_claims(results: dict[str, BlockResult], spec: Any) -> list[dict[str, Any]]:
    """Error rates carried from one institution to another (error_structure.contrasts)."""
    con = _table(results, "error_structure", "contrasts")
    if con.empty:
        return []
    rates = _table(results, "error_structure", "rates")
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
        claim = _base(f"I{n:02d}", f"{model}'s {rate.upper()} on {finding} at {source} carries "
                      "over to other institutions", "institution", model=model, prompt=prompt,
                      cohort=source, negatives=finding, criterion=rate)
        at = rates[(rates["model"] == model) & (rates["prompt"] == prompt)
                   & (rates["cohort"] == source) & (rates["negatives"] == finding)
                   & (rates["criterion"] == rate)] if not rates.empty else rates
        if len(at):  # the rate as measured at its own institution (the claim at E)
            a = at.iloc[0]
            rows.append(_cell(claim, "at E", "", verdict="holds", estimate=_f(a["estimate"]),
                              ci_low=_f(a["ci_low"]), ci_high=_f(a["ci_high"]),
                              note=_q("the rate measured at its own institution",
                                      a.get("qualification")), source="error_structure.rates"))
        for _, r in g.sort_values("_other").iterrows():
            sig = r.get("significant")  # NA outside the BH family (family "descriptive")
            in_family = r.get("family") != "descriptive" and not (sig is None or pd.isna(sig))
            s = r["_sign"]
            lo, hi = sorted((s * _f(r["ci_low"]), s * _f(r["ci_high"])))
            if not math.isfinite(_f(r["pvalue"])):
                verdict = "not defined"
            elif not in_family:
                verdict = "not assessed"
            else:
                verdict = "does not hold" if str(sig).lower() == "true" else "unresolved"
            note = _q(f"{r.get('family', '')}: p_adj = {_f(r.get('pvalue_adj')):.3g}"
                      if in_family else "outside the BH family (descriptive contrast)",
                      "difference not detected (equality not shown)"
                      if verdict == "unresolved" else "", r.get("qualification"))
            # the estimate is rate(other) - rate(source): what changes when the claim travels
            rows.append(_cell(claim, "C", str(r["_other"]), verdict=verdict,
                              estimate=s * _f(r["estimate"]), ci_low=lo, ci_high=hi, note=note,
                              source="error_structure.contrasts"))
    return rows


def agreement_claims(results: dict[str, BlockResult], spec: Any) -> list[dict[str, Any]]:
    """Predictive-interval coverage per held-out institution; the family Brier gap."""
    rows: list[dict[str, Any]] = []
    cov = _table(results, "agreement", "coverage")
    n = 0
    if not cov.empty:
        prim = cov[(cov.get("analysis", "primary") == "primary")] if "analysis" in cov else cov
        overall = prim[(prim["cohort"] == "all") & (prim.get("direction", "all") == "all")]
        by_inst = prim[(prim["cohort"] != "all") & (prim.get("stratum", "") == "institution")]
        for _, r in overall.iterrows():
            crit = str(r["criterion"])
            level = _f(crit.split("level=")[-1].rstrip("]")) if "level=" in crit else 0.95
            n += 1
            claim = _base(f"A{n:02d}", f"Beta–Binomial {level:g} predictive intervals for held-out "
                          "agreement counts reach their nominal coverage", "coverage",
                          model=str(r["model"]), prompt=r["prompt"], cohort="all", criterion=crit)

            def cell(change: str, to: str, row: pd.Series, _claim=claim, _level=level,
                     **e: Any) -> dict[str, Any]:
                est = _f(row["estimate"])
                v = "not defined" if not math.isfinite(est) else (
                    "holds" if est >= _level else "does not hold")
                return _cell(_claim, change, to, verdict=v, estimate=est,
                             note=_q(f"point estimate over {int(_f(row['n']))} held-out cells",
                                     row.get("qualification")),
                             source="agreement.coverage", **e)

            rows.append(cell("at E", "", r))
            for _, o in by_inst[(by_inst["model"] == r["model"])
                                & (by_inst["criterion"] == r["criterion"])].iterrows():
                rows.append(cell("C", str(o["cohort"]), o, cohort=o["cohort"]))
    gap = _table(results, "agreement", "family_gap")
    if not gap.empty:
        for est_pair, g in gap.groupby("estimator", sort=True):
            top = g[g["cohort"] == "all"]
            if top.empty:
                continue
            t = top.iloc[0]
            a, b = (s.strip() for s in str(est_pair).split(" - ", 1))
            d = _f(t["estimate"])  # Brier(a) - Brier(b): lower is better
            better, worse, sign = (b, a, -1.0) if d > 0 else (a, b, 1.0)
            n += 1
            claim = _base(f"A{n:02d}", f"{better} estimates reference agreement with lower Brier "
                          f"than {worse}", "estimator", model=str(t["model"]), prompt=t["prompt"],
                          cohort="all", criterion="brier_score")
            lo, hi = sorted((-sign * _f(t["ci_low"]), -sign * _f(t["ci_high"])))
            est = -sign * d
            v = ("not defined" if not (math.isfinite(lo) and math.isfinite(hi)) else
                 "holds" if lo > 0 else "reversed" if hi < 0 else "unresolved")
            rows.append(_cell(claim, "at E", "", verdict=v, estimate=est, ci_low=lo, ci_high=hi,
                              note=f"design {t['design']}", source="agreement.family_gap"))
            for _, o in g[g["cohort"] != "all"].sort_values("cohort").iterrows():
                e = -sign * _f(o["estimate"])
                v = "not defined" if not math.isfinite(e) else (
                    "holds" if e > 0 else "reversed" if e < 0 else "unresolved")
                rows.append(_cell(claim, "C", str(o["cohort"]), verdict=v, estimate=e,
                                  note="point estimate at one held-out institution",
                                  source="agreement.family_gap", cohort=o["cohort"]))
    return rows
