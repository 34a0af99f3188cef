"""Declared claims (issue 16 item 1): each kind judged by its own cell, against independent witnesses.

Witnesses: point estimates from scikit-learn (AUROC, AP), numpy counts (Se, Sp at a
threshold), the slow ECE oracle of ``tests/_oracles``; intervals from the public
single-metric functions of :mod:`medaudit.stats` run on the cell's own generator (the
claim's numbers must be exactly those of the documented estimator on the documented
stratum); verdicts recomputed here from those intervals by the definitions of the
module docstring.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from sklearn.metrics import roc_auc_score

from medaudit.audit.claims import build_claims
from medaudit.audit.spec import AuditSpec
from medaudit.blocks import claims as CL
from medaudit.blocks.claims import claim_key
from medaudit.blocks.context import cell_rng
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from medaudit.stats import bootstrap_ci, paired_bootstrap, threshold_transport
from tests import _oracles as oracle
from tests._support import context, run

B = 300
SEED = 11


def _table(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for site, n, shift in (("site-1", 150, 1.4), ("site-2", 130, 0.7)):
        y = (rng.random(n) < 0.4).astype(int)
        sex = rng.choice(["F", "M"], n)
        group = np.where(y == 1, "", rng.choice(["healthy", "other"], n))
        for m, d in (("a", shift), ("b", shift * 0.5)):
            z = rng.normal(size=n) + d * y
            p = 1 / (1 + np.exp(-(z - 0.5)))
            for i in range(n):
                rows.append({"image_id": f"{site}-{i:03d}", "cohort": site, "model": m,
                             "prompt": "none", "score": float(p[i]), "label": int(y[i]),
                             "sex": sex[i], "negative_group": group[i]})
    return pd.DataFrame(rows)


def _ctx(declared, table=None, **spec):
    t = validate_score_table(_table() if table is None else table, source="test")
    s = AuditSpec.model_validate({"name": "t", "scores": "x.csv", "seed": SEED, "n_resamples": B,
                                  "cohorts": {"site-1": {}, "site-2": {}},
                                  "claims": {"declared": declared}, **spec})
    return context(s, scores=t), s


def _rows(declared, **kw):
    ctx, spec = _ctx(declared, **kw)
    res = run(CL, ctx)
    return res.tables["claims"], ctx, spec, res


def _data(ctx, cohort, model, mask=None):
    w = ctx.wide(cohort, keys=[(m, "none") for m in ("a", "b")])
    keep = np.ones(w.label.size, bool) if mask is None else mask(w)
    return w.label[keep], w.scores[f"{model}|none"][keep], w, keep


def _key(spec, cid):
    """The key part of a declared claim's cells (what it states, hashed)."""
    (claim,) = [c for c in spec.block_config("claims").declared if c.id == cid]
    return claim_key(claim)


def _at(t, change="at E", changed_to=""):
    sel = (t["change"] == change) & (t["changed_to"].fillna("") == changed_to)
    assert sel.sum() == 1, (change, changed_to, t[["change", "changed_to"]].to_dict("records"))
    return t[sel].iloc[0]


# ----------------------------------------------------------------------------- level
def test_level_claim_at_e_and_under_a_cohort_change():
    t, ctx, spec, _ = _rows([{"model": "a", "metric": "roc_auc", "at_least": 0.7, "cohort": "site-1"}])
    for change, to, cohort in (("at E", "", "site-1"), ("cohort", "site-2", "site-2")):
        r = _at(t, change, to)
        y, s, _, _ = _data(ctx, cohort, "a")
        assert r["estimate"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        ref = bootstrap_ci(y, s, metric="roc_auc", n_resamples=B,
                           rng=cell_rng(SEED, "claims", _key(spec, "D01"), change, to))
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((ref.ci_low, ref.ci_high), abs=1e-12)
        want = ("holds" if ref.ci_low >= 0.7 else "does not hold" if ref.ci_high < 0.7
                else "unresolved")
        assert r["verdict"] == want and r["claim_value"] == 0.7 and r["claim_side"] == "greater"
        assert (r["n_pos"], r["n_neg"]) == (int(y.sum()), int((1 - y).sum()))
    # AUROC does not depend on prevalence: no prevalence row, not even "unaffected"
    assert "prevalence" not in set(t["change"])
    assert set(t["change"]) == {"at E", "cohort", "negatives"}


def _separated(n_per_class: int) -> pd.DataFrame:
    """One site whose model a separates the classes perfectly (b does not)."""
    rows = []
    for i in range(2 * n_per_class):
        y = int(i < n_per_class)
        for m, s in (("a", 0.6 + 0.3 * y + i * 1e-4), ("b", 0.5 + 0.01 * (i % 7))):
            rows.append({"image_id": f"i{i:03d}", "cohort": "site", "model": m, "prompt": "none",
                         "score": s, "label": y})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("n_per_class", [8, 40])
def test_a_perfectly_separated_site_holds_a_claim_only_by_an_exact_bound(n_per_class):
    """Probe finding: 8 + 8 perfectly separated images made "AUROC >= 0.95" hold by a
    percentile interval [1, 1], which shows no uncertainty.  Such a claim holds only up to
    the exact bound of m = min(n_pos, n_neg) disjoint concordant pairs (witness:
    statsmodels' Clopper-Pearson interval of m successes in m), else it is unresolved; an
    interval at a bound that refutes a claim (Se 0 of n), or a difference of 0 (two equal
    models) keeps its verdict (review finding)."""
    from statsmodels.stats.proportion import proportion_confint

    bound = proportion_confint(n_per_class, n_per_class, alpha=0.05, method="beta")[0]
    t = validate_score_table(_separated(n_per_class), source="test")
    spec = AuditSpec.model_validate({
        "name": "t", "scores": "x.csv", "seed": SEED, "n_resamples": B,
        "cohorts": {"site": {}},
        "claims": {"declared": [
            {"model": "a", "metric": "roc_auc", "at_least": 0.95},
            {"model": "b", "metric": "roc_auc", "at_least": 0.99},
            {"model": "a", "metric": "roc_auc", "at_least": round(bound - 0.01, 3)},
            {"model": "a", "metric": "sensitivity[threshold=0.99]", "at_least": 0.5},
            {"model": "a", "than": "a2", "metric": "roc_auc", "margin": 0.05}]}})
    t2 = t[t["model"] == "a"].assign(model="a2")
    t = validate_score_table(pd.concat([t, t2], ignore_index=True), source="test")
    res = run(CL, context(spec, scores=t))
    tab = res.tables["claims"].set_index("claim_id")
    at_e = tab[tab["change"] == "at E"]
    unres = at_e.loc["D01"]
    assert (unres["estimate"], unres["ci_low"], unres["ci_high"]) == (1.0, 1.0, 1.0)
    assert unres["verdict"] == "unresolved"
    assert (f"the exact lower bound from {n_per_class} disjoint positive-negative pairs, all "
            f"concordant, is {bound:.4f}") in unres["qualification"]
    assert "below the claimed 0.95" in unres["qualification"]
    refuted = at_e.loc["D02"]
    assert refuted["ci_low"] < refuted["ci_high"] < 0.99 and refuted["verdict"] == "does not hold"
    held = at_e.loc["D03"]
    assert held["verdict"] == "holds" and "holds by it" in held["qualification"]
    nothing = at_e.loc["D04"]  # Se 0 of n: an interval [0, 0] that refutes the claim
    assert (nothing["ci_low"], nothing["ci_high"]) == (0.0, 0.0)
    assert nothing["verdict"] == "does not hold"
    same = at_e.loc["D05"]  # a model against its copy: a difference of 0, within the margin
    assert (same["ci_low"], same["ci_high"]) == (0.0, 0.0) and same["verdict"] == "holds"


def test_at_most_claim_ece_at_a_declared_prevalence_and_the_prevalence_change():
    t, ctx, _, _ = _rows([{"model": "a", "metric": "ece[n_bins=10]", "at_most": 0.15,
                           "prevalence": 0.2, "cohort": "site-1"}])
    y, s, _, _ = _data(ctx, "site-1", "a")
    r = _at(t)
    assert r["criterion"] == "ece[n_bins=10,prevalence=0.2]"
    assert r["estimate"] == pytest.approx(oracle.ece(y, s, n_bins=10, pi=0.2), abs=1e-12)
    want = ("holds" if r["ci_high"] <= 0.15 else "does not hold" if r["ci_low"] > 0.15
            else "unresolved")
    assert r["verdict"] == want and r["claim_side"] == "less"
    # the prevalence change: back to the observed prevalence (no grid declared)
    obs = _at(t, "prevalence", "observed")
    assert obs["criterion"] == "ece[n_bins=10]" and obs["prevalence"] == "observed"
    assert obs["estimate"] == pytest.approx(oracle.ece(y, s, n_bins=10), abs=1e-12)


def test_prevalence_grid_of_the_claims_section():
    ctx, spec = _ctx([{"model": "a", "metric": "brier_score", "at_most": 0.3, "cohort": "site-1"}])
    spec = AuditSpec.model_validate({**spec.model_dump(mode="json", exclude_unset=True),
                                     "claims": {"declared": [{"model": "a", "metric": "brier_score",
                                                              "at_most": 0.3, "cohort": "site-1"}],
                                                "prevalences": [0.1, 0.5]}})
    t = run(CL, context(spec, scores=ctx.scores)).tables["claims"]
    y, s, _, _ = _data(ctx, "site-1", "a")
    for pi in (0.1, 0.5):
        r = _at(t, "prevalence", f"π={pi:g}")
        assert r["estimate"] == pytest.approx(oracle.brier_prevalence(y, s, pi), abs=1e-12)
    assert "observed" not in set(t.loc[t["change"] == "prevalence", "changed_to"])


# ----------------------------------------------------------------------------- comparison
def test_comparison_and_non_inferiority():
    t, ctx, spec, _ = _rows([
        {"model": "a", "than": "b", "metric": "roc_auc", "cohort": "site-1"},
        {"id": "NI", "model": "b", "than": "a", "metric": "roc_auc", "margin": 0.3,
         "cohort": "site-1"},
        {"id": "BR", "model": "a", "than": "b", "metric": "brier_score", "cohort": "site-1"}])
    y, sa, w, _ = _data(ctx, "site-1", "a")
    sb = w.scores["b|none"]
    for cid, (m, o), metric, margin in (("D01", ("a", "b"), "roc_auc", 0.0),
                                        ("NI", ("b", "a"), "roc_auc", 0.3),
                                        ("BR", ("a", "b"), "brier_score", 0.0)):
        r = _at(t[t["claim_id"] == cid])
        ref = paired_bootstrap(y, {m: w.scores[f"{m}|none"], o: w.scores[f"{o}|none"]},
                               metrics=[metric], contrasts=[(m, o)], n_resamples=B,
                               rng=cell_rng(SEED, "claims", _key(spec, cid), "at E", "")
                               ).differences[(m, o, metric)]
        assert (r["estimate"], r["ci_low"], r["ci_high"]) == pytest.approx(
            (ref.estimate, ref.ci_low, ref.ci_high), abs=1e-12)
        sign = -1 if metric == "brier_score" else 1
        lo, hi = sorted((sign * ref.ci_low, sign * ref.ci_high))
        if margin:
            want = "holds" if lo > -margin else "does not hold" if hi < -margin else "unresolved"
        else:
            want = "holds" if lo > 0 else "reversed" if hi < 0 else "unresolved"
        assert r["verdict"] == want, cid
    d01 = _at(t[t["claim_id"] == "D01"])
    assert d01["estimate"] == pytest.approx(roc_auc_score(y, sa) - roc_auc_score(y, sb), abs=1e-12)
    assert d01["criterion"] == "roc_auc_difference" and d01["model"] == "a vs b"
    assert _at(t[t["claim_id"] == "NI"])["claim_value"] == -0.3
    assert _at(t[t["claim_id"] == "BR"])["claim_side"] == "less"


def test_ranking_claim_every_adjacent_pair():
    t, ctx, _, _ = _rows([{"order": ["a", "b"], "metric": "roc_auc", "cohort": "site-1"},
                          {"id": "R2", "order": ["b", "a"], "metric": "roc_auc", "cohort": "site-1"}])
    r1, r2 = _at(t[t["claim_id"] == "D01"]), _at(t[t["claim_id"] == "R2"])
    assert r1["kind"] == "ranking" and r1["model"] == "a > b"
    assert r1["estimate"] == pytest.approx(-r2["estimate"], abs=1e-12)
    # the two orders are mirror claims: one holds exactly when the other is reversed
    assert {r1["verdict"], r2["verdict"]} in ({"holds", "reversed"}, {"unresolved"})


# ----------------------------------------------------------------------------- operating points
def test_operating_point_row_shows_the_constraint_that_fails_it():
    """Se unresolved and Sp not holding: the claim does not hold because of Sp, so the row's
    interval (and its claimed value) is Sp's, with Se beside it -- not the first that fails."""
    first, ctx, _, _ = _rows([{"model": "a", "sensitivity_at_least": 0.6,
                               "specificity_at_least": 0.55, "threshold": 0.5, "cohort": "site-1"}])
    r0 = _at(first)
    ci = {r0["criterion"]: (r0["estimate"], r0["ci_high"]),
          r0["other_criterion"]: (r0["other_estimate"], r0["other_ci_high"])}
    se_level = round(ci["sensitivity"][0], 6)  # inside Se's interval: unresolved
    sp_level = round(min(0.999, ci["specificity"][1] + 0.05), 6)  # above Sp's: does not hold
    t, _, _, _ = _rows([{"model": "a", "sensitivity_at_least": se_level,
                         "specificity_at_least": sp_level, "threshold": 0.5, "cohort": "site-1"}])
    r = _at(t)
    assert r["verdict"] == "does not hold"
    assert r["criterion"] == "specificity" and r["claim_value"] == sp_level
    assert r["ci_high"] < sp_level
    assert r["other_criterion"] == "sensitivity" and r["other_ci_low"] < se_level < r["other_ci_high"]


def test_operating_point_at_a_fixed_threshold_is_judged_on_both_rates():
    t, ctx, spec, _ = _rows([{"model": "a", "sensitivity_at_least": 0.6, "specificity_at_least": 0.55,
                           "threshold": 0.5, "cohort": "site-1"}])
    y, s, _, _ = _data(ctx, "site-1", "a")
    r = _at(t)
    se, sp = (s[y == 1] >= 0.5).mean(), (s[y == 0] < 0.5).mean()
    got = {r["criterion"]: (r["estimate"], r["ci_low"], r["ci_high"]),
           r["other_criterion"]: (r["other_estimate"], r["other_ci_low"], r["other_ci_high"])}
    assert got["sensitivity"][0] == pytest.approx(se, abs=1e-12)
    assert got["specificity"][0] == pytest.approx(sp, abs=1e-12)
    ref = paired_bootstrap(y, {"a": s}, metrics=[("sensitivity", {"threshold": 0.5}),
                                                 ("specificity", {"threshold": 0.5})],
                           n_resamples=B, rng=cell_rng(SEED, "claims", _key(spec, "D01"), "at E", ""))
    for rate in ("sensitivity", "specificity"):
        b = ref.marginal[("a", f"{rate}[threshold=0.5]")]
        assert got[rate][1:] == pytest.approx((b.ci_low, b.ci_high), abs=1e-12)
    parts = [("holds" if got[k][1] >= lv else "does not hold" if got[k][2] < lv else "unresolved")
             for k, lv in (("sensitivity", 0.6), ("specificity", 0.55))]
    want = ("holds" if all(p == "holds" for p in parts) else
            "does not hold" if "does not hold" in parts else "unresolved")
    assert r["verdict"] == want and r["threshold"] == 0.5


def test_a_rate_of_every_image_at_the_boundary_takes_the_exact_interval():
    """Probe finding: 16 of 16 negatives below τ give Sp = 1 in every replicate, so the
    percentile interval was [1, 1] and "Sp >= 0.95" held on 16 images.  Witness: scipy's
    beta quantiles (the Clopper-Pearson bounds) for k of n."""
    from scipy import stats as st

    t = _table()
    hi = (t["model"] == "a") & (t["cohort"] == "site-1")
    t.loc[hi & (t["label"] == 0), "score"] = 0.1  # every negative of a on site-1 below 0.5
    rows, ctx, _, _ = _rows([{"model": "a", "specificity_at_least": 0.95, "threshold": 0.5,
                              "cohort": "site-1"}], table=t)
    r = _at(rows)
    y, s, _, _ = _data(ctx, "site-1", "a")
    n = int((y == 0).sum())
    assert r["criterion"] == "specificity" and r["estimate"] == 1.0
    assert r["ci_low"] == pytest.approx(st.beta.ppf(0.025, n, 1), abs=1e-12)
    assert r["ci_high"] == 1.0
    want = "holds" if st.beta.ppf(0.025, n, 1) >= 0.95 else "unresolved"
    assert r["verdict"] == want
    assert f"Sp = {n}/{n}: every bootstrap replicate gives 1" in r["qualification"]
    # a rate away from the boundary keeps its bootstrap interval (and says nothing)
    rows, _, _, _ = _rows([{"model": "a", "sensitivity_at_least": 0.5, "threshold": 0.5,
                            "cohort": "site-1"}], table=t)
    assert "Clopper" not in _at(rows)["qualification"]


def test_se_at_sp_without_a_threshold():
    t, ctx, spec, _ = _rows([{"model": "a", "sensitivity_at_least": 0.5, "specificity_at_least": 0.8,
                           "cohort": "site-1"}])
    y, s, _, _ = _data(ctx, "site-1", "a")
    r = _at(t)
    assert r["criterion"] == "sensitivity_at_specificity[min_specificity=0.8]"
    assert r["estimate"] == pytest.approx(oracle.se_at_sp(y, s, 0.8), abs=1e-12)


def test_threshold_from_a_source_is_carried_and_holds_by_construction_on_its_source():
    claim = {"model": "a", "sensitivity_at_least": 0.8,
             "threshold": {"source": "site-1", "rule": "sensitivity", "target_value": 0.8},
             "cohort": "site-2"}
    t, ctx, spec, _ = _rows([claim])
    ys, ss, _, _ = _data(ctx, "site-1", "a")
    yt, st, _, _ = _data(ctx, "site-2", "a")
    ref = threshold_transport(ys, ss, yt, st, rule="sensitivity", target_value=0.8,
                              n_resamples=B, rng=cell_rng(SEED, "claims", _key(spec, "D01"), "at E", ""))
    r = _at(t)
    assert r["threshold"] == pytest.approx(ref.threshold, abs=0)
    # the rule's threshold: the highest source score with source Se >= 0.8
    cand = np.sort(ss[ys == 1])[::-1]
    tau = max(c for c in cand if (ss[ys == 1] >= c).mean() >= 0.8)
    assert ref.threshold == tau
    assert (r["estimate"], r["ci_low"], r["ci_high"]) == pytest.approx(
        (ref.target_sensitivity.estimate, ref.target_sensitivity.ci_low,
         ref.target_sensitivity.ci_high), abs=1e-12)
    # moved to the source itself: Se >= 0.8 is true there by construction, nothing else to judge
    own = _at(t, "cohort", "site-1")
    assert own["verdict"] == "by construction" and "by construction" in own["qualification"]
    # the threshold chosen again on the claim's own cohort
    again = _at(t, "threshold", "chosen on site-2")
    assert again["verdict"] == "by construction"
    assert again["threshold"] == max(c for c in np.sort(st[yt == 1]) if (st[yt == 1] >= c).mean() >= 0.8)


def test_by_construction_claims_are_left_out_of_the_headline():
    from medaudit.report.html import _matrix

    claim = {"model": "a", "sensitivity_at_least": 0.8, "cohort": "site-1",
             "threshold": {"source": "site-1", "rule": "sensitivity", "target_value": 0.8}}
    t, ctx, spec, res = _rows([claim, {"model": "a", "metric": "roc_auc", "at_least": 0.5,
                                       "cohort": "site-1"}])
    m = build_claims({"claims": res}, spec)
    assert _at(m[m["claim_id"] == "D01"])["verdict"] == "by construction"
    summary = " ".join(_matrix(m)["summary"])
    assert "1 claim true by construction" in summary and "not counted as holding" in summary


# ----------------------------------------------------------------------------- changes
def test_subgroup_and_negative_changes_are_judged_on_their_own_images():
    t, ctx, _, _ = _rows([{"model": "a", "metric": "roc_auc", "at_least": 0.6, "cohort": "site-1"}],
                         subgroups=["sex"])
    for level in ("F", "M"):
        r = _at(t, "subgroup", f"sex = {level}")
        sub = ctx.scores[(ctx.scores["cohort"] == "site-1") & (ctx.scores["model"] == "a")
                         & (ctx.scores["sex"] == level)]
        assert r["estimate"] == pytest.approx(roc_auc_score(sub["label"], sub["score"]), abs=1e-12)
        assert (r["subgroup"], r["group"]) == ("sex", level)
        assert r["n_pos"] + r["n_neg"] == len(sub)
    for g in ("healthy", "other"):
        r = _at(t, "negatives", g)
        sub = ctx.scores[(ctx.scores["cohort"] == "site-1") & (ctx.scores["model"] == "a")
                         & ((ctx.scores["label"] == 1) | (ctx.scores["negative_group"] == g))]
        assert r["estimate"] == pytest.approx(roc_auc_score(sub["label"], sub["score"]), abs=1e-12)
        assert r["negatives"] == g


def test_small_subgroups_are_qualified():
    table = _table()
    table.loc[table["image_id"].isin(table["image_id"].unique()[:12]), "sex"] = "X"
    t, *_ = _rows([{"model": "a", "metric": "roc_auc", "at_least": 0.6, "cohort": "site-1"}],
                  table=table, subgroups=["sex"])
    x = t[(t["change"] == "subgroup") & (t["changed_to"] == "sex = X")].iloc[0]
    assert "small group (n=12 < 30)" in x["qualification"]


def test_changes_restrict_what_is_assessed():
    t, *_ = _rows([{"model": "a", "metric": "roc_auc", "at_least": 0.6, "cohort": "site-1",
                    "changes": ["subgroup"]}], subgroups=["sex"])
    assert set(t["change"]) == {"at E", "subgroup"}


def test_reference_change_reports_the_ceiling_and_an_unattainable_level():
    table = _table()
    rng = np.random.default_rng(5)
    # readers disagree: soft labels away from 0/1 on most of the images
    soft = table.groupby("image_id")["label"].first().astype(float)
    fuzzy = soft.index[rng.random(soft.size) < 0.6]
    soft[fuzzy] = np.where(soft[fuzzy] > 0.5, 0.6, 0.4)
    table["label_soft"] = table["image_id"].map(soft)
    t, ctx, _, _ = _rows([{"model": "a", "metric": "roc_auc", "at_least": 0.95, "cohort": "site-1"}],
                         table=table)
    r = _at(t, "reference", "soft labels")
    w = ctx.wide("site-1", keys=[("a", "none")])
    p = w.label_soft
    assert r["criterion"] == "soft_roc_auc"
    assert r["estimate"] == pytest.approx(oracle.soft_auroc_strict(p, w.scores["a|none"]), abs=1e-12)
    assert r["ceiling"] == pytest.approx(oracle.soft_auroc_strict(p, p), abs=1e-12)
    assert r["ceiling"] < 0.95 and r["verdict"] == "not attainable"
    assert "ceiling" in r["qualification"]


# ----------------------------------------------------------------------------- the section
def test_kinds_are_inferred_from_the_keys_and_ids_default_in_order():
    c = CL.ClaimsConfig.model_validate([
        {"model": "a", "at_least": 0.8}, {"model": "a", "than": "b"}, {"order": ["a", "b"]},
        {"model": "a", "sensitivity_at_least": 0.9, "threshold": 0.3}, {"kind": "level", "id": "X",
                                                                         "model": "a", "at_most": 0.1,
                                                                         "metric": "ece"}])
    assert [type(x).__name__ for x in c.declared] == ["LevelClaim", "ComparisonClaim", "RankingClaim",
                                                     "OperatingPointClaim", "LevelClaim"]
    assert [x.id for x in c.declared] == ["D01", "D02", "D03", "D04", "X"]
    assert c.generated_kinds() == frozenset()
    assert CL.ClaimsConfig().generated_kinds() is None
    assert CL.ClaimsConfig(generate=["rankings", "thresholds"]).generated_kinds() == {
        "ranking", "operating constraint"}


@pytest.mark.parametrize("bad, match", [
    ({"model": "a", "at_least": 0.8, "at_most": 0.9}, "exactly one of"),
    ({"model": "a", "at_least": 0.8, "prevalence": 0.1}, "does not depend on prevalence"),
    ({"model": "a", "at_least": 0.8, "metric": "roc_auk"}, "roc_auc"),
    ({"model": "a", "than": "a"}, "two models"),
    ({"model": "a", "sensitivity_at_least": 0.9}, "Se ≥ x at Sp ≥ y"),
    ({"model": "a", "sensitivity_at_least": 1.5, "threshold": 0.5}, "sensitivity_at_least"),
    ({"model": "a", "sensitivity_at_least": 0.9,
      "threshold": {"source": "s", "rule": "sensitivity"}}, "target_value"),
    ({"model": "a"}, "kind"),
    ({"order": ["a", "a"]}, "each model once"),
    # levels, margins and yes/no values the metric cannot take
    ({"model": "a", "at_least": 1.5}, r"outside the values roc_auc can take \(\[0, 1\]\)"),
    ({"model": "a", "at_least": -0.2}, "outside the values"),
    ({"model": "a", "metric": "ece", "at_most": 2}, "outside the values"),
    ({"model": "a", "at_least": True}, "a yes/no value"),
    ({"model": "a", "than": "b", "margin": 5}, "margin 5 is not below the range"),
    ({"model": "a", "than": "b", "margin": 1}, "margin 1 is not below the range"),
    # the report's words and other tools' names point at the id to write
    ({"model": "a", "at_least": 0.8, "metric": "AUROC"}, "is written 'roc_auc'"),
    ({"model": "a", "at_most": 0.2, "metric": "brier"}, "is written 'brier_score'"),
    ({"model": "a", "at_most": 0.2, "metric": "ECE"}, "is written 'ece'"),
])
def test_bad_claims_are_refused_with_the_reason(bad, match):
    with pytest.raises(ValidationError, match=match):
        CL.ClaimsConfig.model_validate({"declared": [bad]})


def test_repeated_ids_are_refused():
    with pytest.raises(ValidationError, match="ids repeat"):
        CL.ClaimsConfig.model_validate([{"id": "A", "model": "a", "at_least": 0.5},
                                        {"id": "A", "model": "b", "at_least": 0.5}])


def test_names_are_checked_against_the_table():
    table = validate_score_table(_table(), source="t")
    cfg = CL.ClaimsConfig.model_validate([{"model": "aa", "at_least": 0.5, "cohort": "site-3"},
                                          {"model": "a", "at_least": 0.5}])
    errs = CL.Claims().check(cfg, table, ["site-1", "site-2"])
    text = "\n".join(errs)
    assert "unknown model 'aa' (did you mean 'a'?)" in text
    assert "unknown cohort 'site-3'" in text
    assert "(D02): name the claim's `cohort:`" in text


def test_a_name_differing_only_in_unicode_form_is_called_that():
    # probe finding: 'modèle' typed precomposed (NFC) against a table's combining accent
    # (NFD, e.g. from macOS) got "unknown model 'modèle' (did you mean 'modèle'?)"
    import unicodedata

    nfd, nfc = (unicodedata.normalize(f, "modèle") for f in ("NFD", "NFC"))
    assert nfd != nfc
    t = _table()
    table = validate_score_table(t.assign(model=t["model"].replace({"a": nfd})), source="t")
    cfg = CL.ClaimsConfig.model_validate([{"model": nfc, "at_least": 0.5, "cohort": "site-1"}])
    text = "\n".join(CL.Claims().check(cfg, table, ["site-1", "site-2"]))
    assert "is written with other Unicode code points than the table's" in text
    assert "did you mean" not in text and "write both the same way (Unicode NFC)" in text


def test_a_number_named_as_text_is_called_that():
    # probe finding: a DataFrame column named 0 (an int) asked for as subgroup '0' was said to
    # be "written with other Unicode code points"
    from medaudit.blocks.checks import unknown

    (line,) = unknown("subgroup column", ["0"], [0, "sex"], "subgroups")
    assert "'0' is text, the table's 0 a number" in line
    assert "df.columns = df.columns.map(str)" in line and "Unicode" not in line


def test_a_name_that_differs_only_in_case_is_the_one_suggested():
    # probe finding: 'Model-A' was answered "did you mean 'model-b'?" (difflib's ratio is
    # case-sensitive and ranked model-b closer)
    from medaudit.blocks.checks import unknown

    (line,) = unknown("model", ["Model-A"], ["model-b", "model-a"], "models")
    assert "unknown model 'Model-A' (did you mean 'model-a'?)" in line
    (line,) = unknown("model", ["modle-b"], ["model-b", "model-a"], "models")
    assert "did you mean 'model-b'?" in line


@pytest.mark.parametrize("metric, plain", [("soft_roc_auc", "roc_auc"),
                                           ("soft_average_precision", "average_precision")])
def test_a_claim_on_a_soft_metric_is_refused_with_the_way_to_state_it(metric, plain):
    # probe finding: `metric: soft_roc_auc` was judged on the hard labels, so it reported the
    # ordinary AUROC under the soft metric's name (0.908 where the soft AUROC is 0.824), with
    # no ceiling; the ordinary claim is judged under soft labels as the reference change
    with pytest.raises(ValidationError, match=rf"metric '{metric}' is the soft-label form of "
                                              rf"'{plain}': claim `metric: {plain}`"):
        CL.ClaimsConfig.model_validate([{"model": "a", "metric": metric, "at_least": 0.8}])
    with pytest.raises(ValidationError, match="soft-label form"):
        CL.ClaimsConfig.model_validate([{"model": "a", "than": "b", "metric": metric}])


def test_losses_may_claim_levels_above_one():
    c = CL.ClaimsConfig.model_validate([{"model": "a", "metric": "log_loss", "at_most": 1.3}])
    assert c.declared[0].level == 1.3


def test_negative_groups_and_fixed_thresholds_are_checked_against_the_table():
    table = validate_score_table(_table(), source="t")
    cfg = CL.ClaimsConfig.model_validate([
        {"model": "a", "at_least": 0.5, "cohort": "site-1", "negatives": "healthyy"},
        {"model": "a", "sensitivity_at_least": 0.5, "threshold": 1.7, "cohort": "site-1"},
        {"model": "a", "sensitivity_at_least": 0.5, "threshold": -3, "cohort": "site-1"},
        {"model": "a", "sensitivity_at_least": 0.5, "threshold": 0.5, "cohort": "site-1"}])
    text = "\n".join(CL.Claims().check(cfg, table, ["site-1", "site-2"]))
    assert "unknown negative group 'healthyy' (did you mean 'healthy'?)" in text
    assert "(D02): threshold 1.7 lies outside [0, 1], but the scores are probabilities" in text
    assert "called negative" in text and "(D03): threshold -3 lies outside [0, 1]" in text
    assert "(D04)" not in text
    logits = table.assign(score=np.log(table["score"] / (1 - table["score"])))
    text = "\n".join(CL.Claims().check(cfg, logits, ["site-1", "site-2"]))
    assert "threshold" not in text  # on logits 1.7 and -3 are thresholds like any other
    no_groups = table.drop(columns=["negative_group"])
    text = "\n".join(CL.Claims().check(cfg, no_groups, ["site-1", "site-2"]))
    assert "no `negative_group` column" in text


def test_a_small_subgroup_is_reported_but_never_decides_a_claim():
    # a subgroup of a few images whose positives all outrank its negatives: AUROC 1 in
    # every replicate, an interval [1, 1] -- too narrow to trust, so "unresolved"
    table = _table()
    ids = table.loc[table["cohort"] == "site-1"].drop_duplicates("image_id")
    s = table.loc[(table["model"] == "a") & (table["cohort"] == "site-1")].set_index("image_id")
    pos = s[s["label"] == 1]["score"].nlargest(3).index
    neg = s[s["label"] == 0]["score"].nsmallest(3).index
    tiny = set(pos) | set(neg)
    table["sex"] = np.where(table["image_id"].isin(tiny), "X", table["sex"])
    assert len(ids[ids["image_id"].isin(tiny)]) == 6
    t, *_ = _rows([{"model": "a", "metric": "roc_auc", "at_least": 0.6, "cohort": "site-1"}],
                  table=table, subgroups=["sex"])
    r = _at(t, "subgroup", "sex = X")
    assert (r["estimate"], r["ci_low"], r["ci_high"]) == (1.0, 1.0, 1.0)
    assert r["verdict"] == "unresolved"
    assert "small group (n=6 < 30)" in r["qualification"]
    assert "holds by its interval, judged unresolved: too few images" in r["qualification"]
    big = _at(t, "subgroup", "sex = F")
    assert "judged unresolved" not in big["qualification"]


def test_changes_asked_for_but_impossible_here_are_said_not_dropped():
    t, *_ = _rows([{"model": "a", "metric": "roc_auc", "at_least": 0.6, "cohort": "site-1",
                    "changes": ["subgroup", "prompt", "prevalence", "reference", "cohort"]}])
    got = {r["change"]: (r["verdict"], r["qualification"]) for _, r in t.iterrows()
           if r["change"] != "cohort"}
    assert got["subgroup"] == ("not assessed", "no subgroup columns are declared (`subgroups:`)")
    assert got["prompt"] == ("not assessed", "the claim's models have no other prompt on its cohort")
    assert got["prevalence"] == ("not assessed", "roc_auc does not depend on prevalence")
    assert got["reference"] == ("not assessed", "no soft labels (`label_soft`) on its cohort")
    assert (t["change"] == "cohort").sum() == 1 and "negatives" not in got  # not asked for


def test_a_claim_does_not_depend_on_the_other_claims_declared():
    one, *_ = _rows([{"model": "a", "metric": "roc_auc", "at_least": 0.7, "cohort": "site-1"}])
    two, *_ = _rows([{"id": "Z", "model": "b", "than": "a", "cohort": "site-2"},
                     {"model": "a", "metric": "roc_auc", "at_least": 0.7, "cohort": "site-1",
                      "id": "D01"}])
    a = one.reset_index(drop=True)
    b = two[two["claim_id"] == "D01"].reset_index(drop=True)
    pd.testing.assert_frame_equal(a.drop(columns=["model_a", "model_b"], errors="ignore"),
                                  b.drop(columns=["model_a", "model_b"], errors="ignore")
                                  [[c for c in a.columns if c not in ("model_a", "model_b")]])


def test_a_claims_interval_does_not_depend_on_its_id_its_wording_or_its_place():
    claim = {"model": "a", "metric": "roc_auc", "at_least": 0.7, "cohort": "site-1"}
    first, *_ = _rows([claim])
    moved, *_ = _rows([{"model": "b", "than": "a", "cohort": "site-1"},
                       {**claim, "id": "MINE", "text": "a is good"}])
    a = first[["change", "changed_to", "estimate", "ci_low", "ci_high", "verdict"]]
    b = moved[moved["claim_id"] == "MINE"][list(a.columns)]
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    # what the claim states is its key: another level is another claim, with its own draws
    other, *_ = _rows([{**claim, "at_least": 0.71}])
    assert _at(other)["ci_low"] != _at(first)["ci_low"] or _at(other)["ci_high"] != _at(first)["ci_high"]


def test_generated_claims_are_off_once_claims_are_declared_and_back_on_request():
    from medaudit.audit.run import audit

    base = {"name": "t", "simulate": "paper000", "simulate_scale": 0.03, "n_resamples": 40,
            "n_permutations": 19, "cohorts": {"montgomery": {}, "shenzhen": {}},
            "blocks": ["claims", "discrimination"], "primary_prompt": "clinical"}
    decl = [{"model": "sim-biomedclip", "metric": "roc_auc", "at_least": 0.5, "cohort": "shenzhen"}]
    only = audit(AuditSpec.model_validate({**base, "claims": {"declared": decl}})).claims
    assert set(only["origin"]) == {"declared"}
    both = audit(AuditSpec.model_validate({**base, "claims": {"declared": decl,
                                                              "generate": ["rankings"]}})).claims
    assert list(dict.fromkeys(both["origin"])) == ["declared", "discrimination"]
    assert set(both.loc[both["origin"] == "discrimination", "kind"]) == {"ranking"}
    none = audit(AuditSpec.model_validate(base)).claims
    assert {"ranking", "reliability"} <= set(none["kind"]) and "declared" not in set(none["origin"])
    assert math.isfinite(only.iloc[0]["estimate"])


@pytest.mark.parametrize("claims, want", [
    ([{"model": "a", "sensitivity_at_least": 0.5, "threshold": {"source": "x", "rul": "youden"}}],
     "claims.declared.0.threshold.rul: unknown key; did you mean 'rule'?"),
    ([{"model": "a", "than": "b", "marginn": 0.1}],
     "claims.declared.0.marginn: unknown key; did you mean 'margin'?"),
    ([{"model": "a", "sensitivity_at_least": 0.5, "threshold": "high"}],
     "claims.declared.0.threshold: Input should be a valid number"),
    ("abc", "`claims:` is a list of claims, or a mapping with `declared:`"),
    ({"declared": {"model": "a", "at_least": 0.5}}, "`declared:` is a list of claims"),
    # probe finding: one claim given as the section got "claims.model: unknown key" per key
    # on several lines ("did you mean 'auroc_at_least'?" for at_least)
    ({"model": "a", "metric": "roc_auc", "at_least": 0.5},
     "claims: `claims:` holds the keys of one claim (at_least, metric, model); a claim goes in a "
     "list: `claims: [{model: ..., metric: ..., at_least: ...}]`"),
])
def test_spec_messages_name_the_key_as_written(claims, want):
    """Key paths as the user wrote them: no union tags (`operating_point`, `rule`), and a
    "did you mean" from the keys of the claim kind that was written."""
    from medaudit.io.specfile import validate_model

    with pytest.raises(SchemaError) as e:
        validate_model({"name": "t", "scores": "x.csv", "claims": claims}, AuditSpec,
                       source="s.yaml", what="audit spec")
    text = str(e.value)
    assert want in text, text
    assert "operating_point." not in text and ".rule.rule" not in text and "~" not in text


def test_claims_written_with_nothing_under_them_are_no_claims():
    assert AuditSpec.model_validate({"name": "t", "scores": "x.csv", "claims": None}).claims.declared == []


def test_claim_text_states_the_options_once():
    c = CL.ClaimsConfig.model_validate([
        {"model": "a", "metric": "sensitivity_at_specificity", "options": {"min_specificity": 0.9},
         "at_least": 0.8},
        {"model": "a", "metric": "ppv[threshold=0.3]", "at_least": 0.1}])
    assert [CL._text(x) for x in c.declared] == ["a: Se at Sp [min_specificity=0.9] ≥ 0.8",
                                                 "a: ppv[threshold=0.3] ≥ 0.1"]


def test_a_constant_score_model_is_said_on_the_claim_cells_where_it_is_constant():
    """Model b scores every site-1 woman 0.5: the declared claims' cells on that stratum say
    its AUROC is 0.5 from ties alone (scikit-learn agrees), naming b where two models are
    compared; the other strata, and b's Brier claim, carry no such words."""
    table = _table()
    flat = (table["model"] == "b") & (table["cohort"] == "site-1") & (table["sex"] == "F")
    table.loc[flat, "score"] = 0.5
    t, ctx, _, _ = _rows([{"id": "L", "model": "b", "metric": "roc_auc", "at_least": 0.6,
                           "cohort": "site-1"},
                          {"id": "C", "model": "a", "than": "b", "metric": "roc_auc",
                           "cohort": "site-1"},
                          {"id": "B", "model": "b", "metric": "brier_score", "at_most": 0.3,
                           "cohort": "site-1"}], table=table, subgroups=["sex"])
    said = t[t["qualification"].fillna("").str.contains("constant scores", regex=False)]
    assert sorted(zip(said["claim_id"], said["changed_to"], strict=True)) == [
        ("C", "sex = F"), ("L", "sex = F")]
    level = said[said["claim_id"] == "L"].iloc[0]
    sub = table[flat]
    assert level["estimate"] == roc_auc_score(sub["label"], sub["score"]) == 0.5
    assert level["qualification"].startswith("constant scores")
    assert "b: constant scores" in said[said["claim_id"] == "C"].iloc[0]["qualification"]


def test_a_threshold_chosen_on_the_cohort_binds_only_the_whole_cohort_not_its_subgroups():
    """Probe finding: 'Se >= 0.8 at the τ the sensitivity rule chose on this cohort' was 'by
    construction' in every subgroup too, hiding a subgroup whose whole interval lay below
    0.8. Only the cases the rule was chosen on are bound by it; a part of them is judged."""
    import warnings

    import medaudit
    from medaudit.blocks import claimkit as ck

    rng = np.random.default_rng(5)
    n = 400
    y = (rng.random(n) < 0.35).astype(int)
    sex = rng.choice(["F", "M"], n)
    s = 1 / (1 + np.exp(-(rng.normal(size=n) + np.where(sex == "M", 2.5, 0.6) * y - 1)))
    df = pd.DataFrame({"image_id": [f"i{i}" for i in range(n)], "model": "a", "label": y,
                       "sex": sex, "score": s})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = medaudit.audit(df, n_resamples=300, seed=3, subgroups=["sex"], claims=[
            {"model": "a", "sensitivity_at_least": 0.8,
             "threshold": {"source": "all", "rule": "sensitivity", "target_value": 0.8}}])
    t = res.tables["claims.claims"].set_index("changed_to")
    # the witness: τ is the highest threshold with Se >= 0.8 on all positives
    pos = np.sort(s[y == 1])[::-1]
    tau = pos[int(np.ceil(0.8 * pos.size)) - 1]
    se = {g: float(np.mean(s[(y == 1) & (sex == g)] >= tau)) for g in ("F", "M")}
    assert t.loc["", "threshold"] == pytest.approx(tau) and t.loc["", "verdict"] == "by construction"
    for g in ("F", "M"):
        row = t.loc[f"sex = {g}"]
        assert row["estimate"] == pytest.approx(se[g])
        want = ck.verdict_level(row["estimate"], row["ci_low"], row["ci_high"], 0.8)
        assert row["verdict"] == want
    assert t.loc["sex = F", "verdict"] == "does not hold" and t.loc["sex = M", "verdict"] == "holds"


def test_generate_takes_one_name_without_a_list():
    # report probe: `generate: all` was refused although the message listed 'all' as allowed
    assert CL.ClaimsConfig.model_validate({"generate": "all"}).generate == ["all"]
    assert CL.ClaimsConfig.model_validate({"generate": "rankings"}).generate == ["rankings"]
    with pytest.raises(Exception, match="rankings"):
        CL.ClaimsConfig.model_validate({"generate": "rankngs"})


def test_a_declared_id_that_a_generated_claim_also_takes_is_refused():
    """Probe finding: a declared claim with `id: L01` beside the generated reliability
    claims ran, and the matrix held two different claims called L01; exporting it then
    said that results.json was damaged.  The run refuses it, naming the id, before writing."""
    import medaudit
    from medaudit.exceptions import MedauditError

    df = _table()
    # at the door (probe finding: first after every block had run): the form of a generated id
    with pytest.raises(MedauditError, match=r"declared claim id 'L01' has the form of the ids of "
                                            r"the generated claims"):
        medaudit.audit(df, n_resamples=50, seed=1, blocks=["discrimination", "claims"], claims={
            "declared": [{"id": "L01", "model": "a", "metric": "roc_auc", "at_least": 0.6,
                          "cohort": "site-1"}], "generate": ["reliability"], "auroc_at_least": 0.6})
    # only the letters of the kinds generated are taken: without generated claims the form
    # is free, K01 (the shipped port example) or C01 never, R01 only with rankings
    def ids(declared_ids, **cfg):
        return [c.id for c in CL.ClaimsConfig.model_validate({**cfg, "declared": [
            {"id": i, "model": "a", "metric": "roc_auc", "at_least": 0.6}
            for i in declared_ids]}).declared]

    assert ids(declared_ids=["L01"]) == ["L01"]
    assert ids(generate="all", declared_ids=["D07", "K01", "C01"]) == ["D07", "K01", "C01"]
    assert ids(generate="reliability", declared_ids=["R01"]) == ["R01"]
    assert ids(generate="rankings", declared_ids=["R001", "R0"]) == ["R001", "R0"]  # never generated
    with pytest.raises(Exception, match="'R01' has the form"):
        ids(generate="rankings", declared_ids=["R01"])
    # the table of letters is the one the blocks use: every id an audit generates has its
    # kind's letter
    gen = medaudit.audit(df, n_resamples=50, seed=1, blocks=["discrimination", "claims"],
                         claims={"generate": "all", "auroc_at_least": 0.6}).matrix
    assert {"ranking", "reliability"} <= set(gen["kind"])
    for cid, kind in set(zip(gen["claim_id"], gen["kind"], strict=True)):
        assert cid[0] in CL.ID_LETTERS[kind], (cid, kind)
    # and what the run generated is checked again before anything is written
    from medaudit.audit.claims import _check_ids

    with pytest.raises(MedauditError, match=r"claims\.declared: the id 'X9' is also the id of "
                                            r"a generated claim"):
        _check_ids([{"claim_id": "X9", "_block": "claims"},
                    {"claim_id": "X9", "_block": "discrimination"}])
    # the same claim under its own id runs beside them
    res = medaudit.audit(df, n_resamples=50, seed=1, blocks=["discrimination", "claims"], claims={
        "declared": [{"id": "mine", "model": "a", "metric": "roc_auc", "at_least": 0.6,
                      "cohort": "site-1"}], "generate": ["reliability"], "auroc_at_least": 0.6})
    assert {"mine", "L01"} <= set(res.matrix["claim_id"])


def test_an_unpaired_comparison_names_its_mismatches_in_its_one_line_reason():
    # probe finding: the reason ended on "...; mismatches:" (only the first line was kept)
    t = _table()
    t = t[~((t["model"] == "b") & (t["image_id"] == "site-1-007"))]
    tab, *_ = _rows([{"model": "a", "than": "b", "metric": "roc_auc", "cohort": "site-1"}], table=t)
    r = _at(tab)
    assert r["verdict"] == "not assessed"
    assert "\n" not in r["qualification"]
    assert ("mismatches: model 'b', prompt 'none' lacks 1 image(s): ['site-1-007']"
            in r["qualification"]), r["qualification"]


def test_rows_of_cohorts_the_spec_does_not_declare_are_listed_not_dropped_silently():
    # probe finding: a period whose rows named another cohort vanished from a monitor's series,
    # and an audit left such rows out without a word; the inputs now list them
    import medaudit

    res = medaudit.audit(_table(), n_resamples=50, seed=1, blocks=["discrimination"],
                         cohorts={"site-1": {}})
    left = res.provenance["inputs"]["cohorts_not_declared"]
    assert left["rows_left_out"] == {"site-2": 260} and "declare a cohort" in left["why"]
    res = medaudit.audit(_table(), n_resamples=50, seed=1, blocks=["discrimination"])
    assert "cohorts_not_declared" not in res.provenance["inputs"]
