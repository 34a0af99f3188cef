"""Block `transport` (paper 000 M0.8, M0.10; Tables 14-17): witnesses from the loop oracles.

* tau on the source against ``tau_sensitivity`` / ``tau_specificity``; source and target
  Se/Sp at tau against ``se_sp_at`` (counting).
* Retention flags by hand on the point estimates (eq. 7): Se >= x for the sensitivity
  rule, Sp >= x for the specificity rule; retention counts by hand.
* Named-group specificity by counting (k/n), with the Sp < 0.05 qualification.
* Designs: ``fixed`` for the entry's fixed targets, else the entry's design.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import transport
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from tests import _oracles as O
from tests._support import SpecContext, context, run

PROMPT = "clinical"
MODELS = ("m-a", "m-b", "m-c")


def _cohort(rng, n_pos, groups: dict[str, tuple[int, float]], shift: float):
    """Labels, negative groups and per-model scores; groups: name -> (size, mean score)."""
    y = np.r_[np.ones(n_pos), np.zeros(sum(n for n, _ in groups.values()))]
    grp = np.r_[np.full(n_pos, ""), *[np.full(n, g) for g, (n, _) in groups.items()]]
    mu = np.r_[np.full(n_pos, 0.7 + shift), *[np.full(n, m) for n, m in groups.values()]]
    scores = {m: np.round(np.clip(mu + rng.normal(0, 0.15 + 0.03 * i, y.size), 0.001, 0.999), 3)
              for i, m in enumerate(MODELS)}  # rounding creates ties
    return y, grp, scores


def _table(cohorts) -> pd.DataFrame:
    rows = []
    for cohort, (y, grp, scores) in cohorts.items():
        for model, s in scores.items():
            for i in range(y.size):
                rows.append({"image_id": f"{cohort}-{i:03d}", "cohort": cohort, "model": model,
                             "prompt": PROMPT, "score": float(s[i]), "label": int(y[i]),
                             "negative_group": grp[i]})
    return pd.DataFrame(rows)


def _ctx(df: pd.DataFrame, entries: list[dict], n_resamples: int = 100) -> SpecContext:
    spec = AuditSpec.model_validate({
        "name": "hand", "scores": "hand.csv", "primary_prompt": PROMPT,
        "cohorts": {c: {"role": "primary"} for c in df["cohort"].unique()},
        "n_resamples": n_resamples, "blocks": ["transport"], "transport": entries})
    return context(scores=validate_score_table(df), spec=spec)


@pytest.fixture(scope="module")
def hand():
    rng = np.random.default_rng(2026)
    cohorts = {
        "src": _cohort(rng, 40, {"neg": (60, 0.35)}, 0.0),
        "tgt1": _cohort(rng, 25, {"healthy": (30, 0.25), "sick": (20, 0.9)}, -0.05),
        "tgt2": _cohort(rng, 30, {"neg": (35, 0.4)}, 0.05),
    }
    entries = [{"source": "src", "targets": ["tgt2", "tgt1"],
                "rules": ["sensitivity", "specificity"], "target_value": 0.9,
                "design": "reestimate", "fixed_targets": ["tgt2"]}]
    ctx = _ctx(_table(cohorts), entries)
    return cohorts, ctx, run(transport, ctx)


def _cell(t: pd.DataFrame, **eq) -> pd.Series:
    m = np.ones(len(t), dtype=bool)
    for k, v in eq.items():
        m &= (t[k] == v).to_numpy()
    assert m.sum() == 1, eq
    return t[m].iloc[0]


def _oracle_tau(rule, y, s, x):
    return (O.tau_sensitivity if rule == "sensitivity" else O.tau_specificity)(y, s, x)


def test_thresholds_match_oracles(hand):
    cohorts, _, res = hand
    t = res.tables["thresholds"]
    assert len(t) == 2 * len(MODELS)
    ys, _, ss = cohorts["src"]
    for rule in ("sensitivity", "specificity"):
        for m in MODELS:
            r = _cell(t, model=m, criterion=f"threshold[rule={rule},target=0.9]")
            tau = _oracle_tau(rule, ys, ss[m], 0.9)
            assert r.threshold == tau
            se, sp = O.se_sp_at(ys, ss[m], tau)
            assert (r.source_sensitivity, r.source_specificity) == (
                pytest.approx(se, abs=1e-12), pytest.approx(sp, abs=1e-12))
            assert r.cohort == "src" and r.rule == rule and r.target_value == 0.9
            if rule == "sensitivity":
                assert se >= 0.9
            else:
                assert sp >= 0.9


def test_transport_estimates_retention_and_designs(hand):
    cohorts, ctx, res = hand
    t = res.tables["transport"]
    assert len(t) == 2 * 2 * len(MODELS) * 2  # rules x targets x models x {Se, Sp}
    assert t["cohort"].drop_duplicates().tolist() == ["tgt1", "tgt2"]  # spec cohort order
    ys, _, ss = cohorts["src"]
    for rule in ("sensitivity", "specificity"):
        for tgt in ("tgt1", "tgt2"):
            yt, _, st = cohorts[tgt]
            for m in MODELS:
                tau = _oracle_tau(rule, ys, ss[m], 0.9)
                se, sp = O.se_sp_at(yt, st[m], tau)
                want = (se >= 0.9) if rule == "sensitivity" else (sp >= 0.9)
                for crit, val in (("sensitivity", se), ("specificity", sp)):
                    r = _cell(t, model=m, cohort=tgt, rule=rule, criterion=crit)
                    assert r.threshold == tau
                    assert r.estimate == pytest.approx(val, abs=1e-12)
                    assert r.ci_low <= r.ci_high
                    assert bool(r.retained) is bool(want)
                    assert r.source == "src" and r.target_value == 0.9
                    assert r.design == ("threshold_fixed" if tgt == "tgt2"
                                        else "threshold_reestimate")
                    assert r.n_resamples == 100 and r.seed == ctx.seed
                    assert (r.n, r.n_pos, r.n_neg) == (yt.size, yt.sum(), yt.size - yt.sum())
                    assert r.n_degenerate == 0
    assert t["retained"].dtype == bool


def test_fixed_design_only_resamples_the_target():
    # a target whose positives all score far above and negatives far below tau:
    # with tau fixed its Se and Sp are 1 in every replicate; re-estimating tau on a
    # resampled source whose positives straddle the target's scores moves them: tau is the
    # second-lowest source positive (0.178, below the target's lowest positive 0.2) and a
    # replicate drawing at most one copy of the two lowest (probability ~0.4) puts tau above
    # 0.2, so far more than 2.5 % of the re-estimating replicates lose a target positive
    rng = np.random.default_rng(1)
    y_s = np.r_[np.ones(30), np.zeros(30)]
    s_s = np.r_[np.linspace(0.15, 0.95, 30), rng.uniform(0.0, 0.04, 30)]
    y_t = np.r_[np.ones(20), np.zeros(20)]
    s_t = np.r_[np.linspace(0.2, 0.9, 20), np.full(20, 0.01)]
    scores_s = {m: s_s for m in MODELS}
    scores_t = {m: s_t for m in MODELS}
    df = _table({"src": (y_s, np.full(60, ""), scores_s), "fix": (y_t, np.full(40, ""), scores_t),
                 "re": (y_t, np.full(40, ""), scores_t)})
    ctx = _ctx(df, [{"source": "src", "targets": ["fix", "re"], "fixed_targets": ["fix"]}],
               n_resamples=200)
    t = run(transport, ctx).tables["transport"]
    tau = O.tau_sensitivity(y_s, s_s, 0.95)
    assert tau < 0.2
    fix = _cell(t, model="m-a", cohort="fix", criterion="sensitivity")
    re_ = _cell(t, model="m-a", cohort="re", criterion="sensitivity")
    assert (fix.estimate, fix.ci_low, fix.ci_high) == (1.0, 1.0, 1.0)
    assert re_.estimate == 1.0 and re_.ci_low < 1.0
    assert fix.design == "threshold_fixed" and re_.design == "threshold_reestimate"


def test_named_groups_by_counting(hand):
    cohorts, _, res = hand
    g = res.tables["named_groups"]
    ys, _, ss = cohorts["src"]
    # tgt1 has two groups, tgt2 one ("neg"); 2 rules x 3 models x 3 groups
    assert len(g) == 2 * len(MODELS) * 3
    for rule in ("sensitivity", "specificity"):
        for tgt in ("tgt1", "tgt2"):
            yt, grp, st = cohorts[tgt]
            for m in MODELS:
                tau = _oracle_tau(rule, ys, ss[m], 0.9)
                for name in sorted(set(grp) - {""}):
                    neg = st[m][grp == name]
                    k = sum(1 for v in neg if v < tau)
                    r = _cell(g, model=m, cohort=tgt, negatives=name, rule=rule)
                    assert r.fraction == f"{k}/{neg.size}"
                    assert (r.n_true_negative, r.n_neg) == (k, neg.size)
                    assert r.estimate == pytest.approx(k / neg.size, abs=1e-12)
                    assert r.threshold == tau and r.criterion == "specificity"
                    useless = "threshold useless for this group (Sp < 0.05)"
                    assert (useless in r.qualification) == (k / neg.size < 0.05)
    # the "sick" controls score near 0.9: the 90%-Se threshold is useless against them
    sick = g[(g["negatives"] == "sick") & (g["rule"] == "sensitivity")]
    assert (sick["estimate"] < 0.05).all()
    assert sick["qualification"].str.contains("Sp < 0.05").all()


def test_named_group_count_like_paper_table_15():
    # 1 of 210 pneumonia controls below tau -> 0.005 (paper 000: VinDr CX vs pneumonia)
    y_s = np.r_[np.ones(20), np.zeros(20)]
    s_s = np.r_[np.linspace(0.5, 0.99, 20), np.linspace(0.0, 0.4, 20)]
    tau = O.tau_sensitivity(y_s, s_s, 0.95)
    y_t = np.r_[np.ones(10), np.zeros(210)]
    s_t = np.r_[np.full(10, 0.9), [tau / 2], np.full(209, 0.95)]
    grp = np.r_[np.full(10, ""), np.full(210, "pneumonia")]
    df = _table({"src": (y_s, np.full(40, ""), {m: s_s for m in MODELS}),
                 "vin": (y_t, grp, {m: s_t for m in MODELS})})
    ctx = _ctx(df, [{"source": "src", "targets": ["vin"]}], n_resamples=20)
    r = _cell(run(transport, ctx).tables["named_groups"], model="m-a")
    assert r.fraction == "1/210" and round(r.estimate, 3) == 0.005
    assert r.negatives == "pneumonia"
    assert "Sp < 0.05" in r.qualification


def test_retention_counts_by_hand(hand):
    cohorts, _, res = hand
    rc = res.tables["retention_counts"]
    ys, _, ss = cohorts["src"]
    assert len(rc) == 2
    for rule in ("sensitivity", "specificity"):
        k = 0
        for tgt in ("tgt1", "tgt2"):
            yt, _, st = cohorts[tgt]
            for m in MODELS:
                se, sp = O.se_sp_at(yt, st[m], _oracle_tau(rule, ys, ss[m], 0.9))
                k += (se if rule == "sensitivity" else sp) >= 0.9
        r = _cell(rc, rule=rule)
        assert (r.n_retained, r.n_total) == (k, 2 * len(MODELS))
        assert r.fraction == f"{k}/{2 * len(MODELS)}" and r.source == "src"
        assert r.cohort == "src"


def test_refuses_mismatched_image_sets():
    rng = np.random.default_rng(4)
    cohorts = {"src": _cohort(rng, 10, {"neg": (10, 0.3)}, 0.0),
               "tgt": _cohort(rng, 10, {"neg": (10, 0.3)}, 0.0)}
    df = _table(cohorts)
    for drop in ("src-004", "tgt-013"):
        bad = df[~((df["model"] == "m-b") & (df["image_id"] == drop))]
        ctx = _ctx(bad, [{"source": "src", "targets": ["tgt"]}], n_resamples=10)
        with pytest.raises(SchemaError, match=rf"identical image sets[\s\S]*'m-b'[\s\S]*{drop}"):
            run(transport, ctx)


def test_simulated_context_transport_grid(ctx):
    res = run(transport, ctx)
    assert res.name == transport.NAME == "transport"
    t = res.tables["transport"]
    se_rows = t[t["criterion"] == "sensitivity"]
    n_models = len(ctx.models())
    assert n_models == 4
    tbx = se_rows[(se_rows["source"] == "tbx11k-train") & (se_rows["rule"] == "sensitivity")]
    assert len(tbx) == 16
    assert sorted(set(tbx["cohort"])) == ["montgomery", "shenzhen", "tbx11k-val", "vindr"]
    szh = se_rows[(se_rows["source"] == "shenzhen") & (se_rows["rule"] == "sensitivity")]
    assert len(szh) == 8 and sorted(set(szh["cohort"])) == ["montgomery", "tbx11k-val"]
    spec_rule = se_rows[se_rows["rule"] == "specificity"]
    assert len(spec_rule) == 16 and set(spec_rule["source"]) == {"tbx11k-train"}
    assert len(t) == 2 * (16 + 8 + 16)
    # VinDr uses the fixed-threshold design, the others re-estimate
    assert set(t.loc[t["cohort"] == "vindr", "design"]) == {"threshold_fixed"}
    assert set(t.loc[t["cohort"] != "vindr", "design"]) == {"threshold_reestimate"}
    # the transported tau is the source tau of the thresholds table
    thr = res.tables["thresholds"]
    assert len(thr) == 4 * 2 + 4
    for _, r in t.iterrows():
        s = _cell(thr, model=r.model, cohort=r.source,
                  criterion=f"threshold[rule={r.rule},target=0.95]")
        assert s.threshold == r.threshold
    # tau against the oracle on the simulated source (330 images)
    w = ctx.wide("tbx11k-train")
    for m in ctx.models():
        s = w.scores[f"{m}|{PROMPT}"]
        for rule in ("sensitivity", "specificity"):
            r = _cell(thr, model=m, cohort="tbx11k-train",
                      criterion=f"threshold[rule={rule},target=0.95]")
            assert r.threshold == _oracle_tau(rule, w.label, s, 0.95)
    # retention counts follow the transport rows
    rc = res.tables["retention_counts"]
    assert [(r.source, r.rule, r.n_total) for r in rc.itertuples()] == [
        ("tbx11k-train", "sensitivity", 16), ("tbx11k-train", "specificity", 16),
        ("shenzhen", "sensitivity", 8)]
    for r in rc.itertuples():
        sub = se_rows[(se_rows["source"] == r.source) & (se_rows["rule"] == r.rule)]
        assert r.n_retained == int(sub["retained"].sum())
    # exposure travels as a qualification (CheXficient on VinDr)
    q = t[(t["cohort"] == "vindr") & (t["model"] == "sim-chexficient")]["qualification"]
    assert (q != "").all()
    # named groups for VinDr include the paper's control groups
    g = res.tables["named_groups"]
    vin = set(g.loc[g["cohort"] == "vindr", "negatives"])
    assert {"no_finding", "pneumonia", "lung_tumor"} <= vin


def test_deterministic(ctx):
    from tests.blocks.conftest import small_context

    a = run(transport, ctx)
    b = run(transport, small_context())
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert a.notes == b.notes


# ----------------------------------------------------------------------------- cut-point rules (issue 17)
# Witnesses: Youden's J and closest-to-(0, 1) by brute force over the observed thresholds
# (ties to the highest), Se/Sp at tau by counting, the stats layer's transport_to_targets and
# paired_bootstrap run with the generator of the block's cell key, statsmodels for the
# proportion intervals, and the claims read by hand.
CUT = {"rule": "closest_topleft", "cost": 2, "prevalence": 0.2}
CUT_LABEL = "closest_topleft[cost=2,prevalence=0.2]"


def _brute_cut(y, s, method, cost=1.0, prevalence=0.5):
    r = (1 - prevalence) / (cost * prevalence)
    best, best_t = None, None
    for t in sorted(set(np.asarray(s).tolist()) | {np.inf}):
        se, sp = O.se_sp_at(y, s, t)
        crit = se + r * sp if method == "youden" else -((1 - se) ** 2 + r * (1 - sp) ** 2)
        if best is None or crit >= best - 1e-12 * max(abs(best), 1.0):
            if best is None or crit > best + 1e-12 * max(abs(best), 1.0):
                best = crit
            best_t = t  # ascending thresholds: the last tie is the highest
    return best_t


@pytest.fixture(scope="module")
def cut(hand):
    cohorts, _, _ = hand
    entries = [{"source": "src", "targets": ["tgt2", "tgt1"],
                "rules": ["sensitivity", "youden", CUT], "target_value": 0.9,
                "fixed_targets": ["tgt2"], "threshold_metrics": {"prevalence": 0.1}}]
    ctx = _ctx(_table(cohorts), entries)
    return cohorts, ctx, run(transport, ctx)


def test_cut_point_rules_chosen_on_the_source(cut):
    cohorts, _, res = cut
    t = res.tables["thresholds"]
    ys, _, ss = cohorts["src"]
    for label, crit, method, w in (("youden", "threshold[rule=youden]", "youden", (1.0, 0.5)),
                                   (CUT_LABEL, "threshold[rule=closest_topleft,cost=2,prevalence=0.2]",
                                    "closest_topleft", (2.0, 0.2))):
        for m in MODELS:
            r = _cell(t, model=m, criterion=crit)
            tau = _brute_cut(ys, ss[m], method, *w)
            assert r.threshold == tau and r.rule == label and np.isnan(r.target_value)
            se, sp = O.se_sp_at(ys, ss[m], tau)
            assert (r.source_sensitivity, r.source_specificity) == (
                pytest.approx(se, abs=1e-12), pytest.approx(sp, abs=1e-12))


def test_cut_point_transport_against_the_stats_layer(cut):
    from medaudit.blocks.context import cell_rng
    from medaudit.stats import transport_to_targets

    cohorts, ctx, res = cut
    t = res.tables["transport"]
    ys, _, ss = cohorts["src"]
    for label, name, w in (("youden", "youden", None), (CUT_LABEL, "closest_topleft", (2.0, 0.2))):
        for m in MODELS:
            # one draw per entry serves every model and rule: the stats layer's transport of
            # this model and rule alone, with the entry cell's generator, gives its numbers
            want = transport_to_targets(
                ys, ss[m], {g: (cohorts[g][0], cohorts[g][2][m]) for g in ("tgt1", "tgt2")},
                rule=name, weights=w, design={"tgt1": "reestimate", "tgt2": "fixed"},
                n_resamples=100, rng=cell_rng(ctx.seed, "transport", "src", "tgt1", "tgt2"))
            for g in ("tgt1", "tgt2"):
                yt, _, st = cohorts[g]
                tau = want[g].threshold
                se, sp = O.se_sp_at(yt, st[m], tau)
                src_se, src_sp = O.se_sp_at(ys, ss[m], tau)
                keep = se >= src_se - 1e-12 and sp >= src_sp - 1e-12  # both rates kept
                for crit, b, val in (("sensitivity", want[g].target_sensitivity, se),
                                     ("specificity", want[g].target_specificity, sp)):
                    r = _cell(t, model=m, cohort=g, rule=label, criterion=crit)
                    assert r.estimate == pytest.approx(val, abs=1e-12)
                    assert (r.threshold, r.ci_low, r.ci_high) == (tau, b.ci_low, b.ci_high)
                    assert bool(r.retained) is bool(keep) and np.isnan(r.target_value)
    rc = res.tables["retention_counts"]
    assert list(rc["rule"]) == ["sensitivity", "youden", CUT_LABEL]
    assert list(rc["criterion"])[1:] == ["threshold[rule=youden]",
                                        "threshold[rule=closest_topleft,cost=2,prevalence=0.2]"]
    for r in rc.itertuples():
        sub = t[(t["rule"] == r.rule) & (t["criterion"] == "sensitivity")]
        assert (r.n_retained, r.n_total) == (int(sub["retained"].sum()), len(sub))


def test_rates_at_the_transported_threshold(cut):
    from statsmodels.stats.proportion import proportion_confint

    from medaudit.blocks.context import cell_rng
    from medaudit.stats import paired_bootstrap

    cohorts, ctx, res = cut
    tm, tr = res.tables["threshold_metrics"], res.tables["transport"]
    assert set(tm["rule"]) == {"sensitivity", "youden", CUT_LABEL}
    for _, r in tr[tr["criterion"] == "sensitivity"].iterrows():
        yt, _, st = cohorts[r.cohort]
        g = tm[(tm["cohort"] == r.cohort) & (tm["model"] == r.model) & (tm["rule"] == r.rule)]
        assert set(g["threshold"]) == {r.threshold}
        pred = st[r.model] >= r.threshold
        tp, fp = int((pred & (yt == 1)).sum()), int((pred & (yt == 0)).sum())
        fn, tn = int(yt.sum()) - tp, int((yt == 0).sum()) - fp
        obs = g[g["prevalence"] == "observed"].set_index("criterion")
        assert obs.loc["sensitivity", "estimate"] == pytest.approx(tp / (tp + fn), abs=1e-12)
        assert obs.loc["accuracy", "estimate"] == pytest.approx((tp + tn) / yt.size, abs=1e-12)
        if tp + fp:
            assert obs.loc["ppv", "estimate"] == pytest.approx(tp / (tp + fp), abs=1e-12)
            lo, hi = proportion_confint(tp, tp + fp, method="beta")
            assert (obs.loc["ppv", "clopper_pearson_low"], obs.loc["ppv", "clopper_pearson_high"]) \
                == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
        se, sp = tp / (tp + fn), tn / (tn + fp)
        at = g[g["prevalence"] == 0.1].set_index("criterion")
        assert at.loc["ppv", "estimate"] == pytest.approx(se * .1 / (se * .1 + (1 - sp) * .9),
                                                          abs=1e-12)
        x = r.target_value
        pb = paired_bootstrap(yt, {r.model: st[r.model]},
                              metrics=[("f1", {"threshold": float(r.threshold)})],
                              n_resamples=100,
                              rng=cell_rng(ctx.seed, "transport", "threshold_metrics", "src", r.rule,
                                           x, r.cohort, r.model))
        b = next(iter(pb.marginal.values()))
        assert (obs.loc["f1", "ci_low"], obs.loc["f1", "ci_high"]) == (b.ci_low, b.ci_high)


def test_threshold_metrics_name_the_design_used(cut):
    """tau is held fixed at the source estimate in threshold_metrics (for the re-estimating
    targets too) and the target is resampled in its cohort's design: the label says both,
    while ``transport`` keeps the entry's designs."""
    cohorts, ctx, res = cut
    tm, tr = res.tables["threshold_metrics"], res.tables["transport"]
    for t in ("tgt1", "tgt2"):
        assert set(tm.loc[tm["cohort"] == t, "design"]) == {
            f"threshold_fixed[{ctx.cohort_design(t)}]"}
    assert set(tr.loc[tr["cohort"] == "tgt1", "design"]) == {"threshold_reestimate"}
    assert set(tr.loc[tr["cohort"] == "tgt2", "design"]) == {"threshold_fixed"}
    # every row of one (target, model, rule) holds the threshold the transport rows carry
    for (t, m, rule), g in tm.groupby(["cohort", "model", "rule"]):
        taus = set(tr[(tr["cohort"] == t) & (tr["model"] == m) & (tr["rule"] == rule)]["threshold"])
        assert set(g["threshold"]) == taus and len(taus) == 1


def test_cut_point_claims(cut):
    from medaudit.audit.claims import build_claims

    cohorts, ctx, res = cut
    claims = build_claims({"transport": res}, ctx.spec)
    y = claims[claims["claim"].str.contains("by youden")]
    assert y["claim_id"].nunique() == len(MODELS)
    first = y[y["claim_id"] == y["claim_id"].iloc[0]]
    assert first["claim"].iloc[0].endswith("keeps the source's sensitivity and specificity")
    t = res.tables["transport"]
    for _, c in first[first["change"] == "cohort"].iterrows():
        row = _cell(t, model=c.model, cohort=c.cohort, rule="youden", criterion="sensitivity")
        assert c.verdict == ("holds" if row.retained else "does not hold")
        assert c.criterion == "sensitivity" and c.other_criterion == "specificity"
    # the 90 %-Se claims are unchanged by the extra rules
    s = claims[claims["claim"].str.contains("for sensitivity ≥ 0.9")]
    assert s["claim_id"].nunique() == len(MODELS)


def test_default_entries_are_unchanged_by_the_extra_rules(hand, cut):
    _, _, base = hand
    _, _, res = cut
    for name in ("thresholds", "transport", "named_groups"):
        a, b = base.tables[name], res.tables[name]
        b = b[b["rule"].isin(["sensitivity", "specificity"])].reset_index(drop=True)
        a = a[a["rule"] == "sensitivity"].reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)
    assert "threshold_metrics" not in base.tables


@pytest.mark.parametrize("entry, message", [
    ({"rules": [{"rule": "youden", "cost": -1}]}, "greater than 0"),
    ({"rules": [{"rule": "youden", "prevalence": 1}]}, "strictly between 0 and 1"),
    ({"rules": ["yuoden"]}, "youden"),
    ({"threshold_metrics": {"prevalence": 0}}, "strictly between 0 and 1"),
])
def test_entry_errors(entry, message):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        transport.TransportEntry.model_validate({"source": "a", "targets": ["b"], **entry})


def test_a_target_that_is_the_source_is_refused():
    import pydantic

    from medaudit.blocks.transport import TransportEntry

    with pytest.raises(pydantic.ValidationError, match="targets list the source 's1'"):
        TransportEntry(source="s1", targets=["s2", "s1"])
    assert TransportEntry(source="s1", targets=["s2"]).targets == ["s2"]
