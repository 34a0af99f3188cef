"""Block `operating_points`: Table 5 within-cohort operating points (paper 000 M0.7).

Witnesses: the loop oracles in tests/_oracles.py (Se@Sp, Sp@Se, risk at coverage),
a hand-worked cohort, and arithmetic properties of the shared paired draw.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from medaudit.blocks import operating_points as OP
from medaudit.exceptions import DegenerateDataWarning, SchemaError
from tests import _oracles as O
from tests._support import run
from tests.blocks.test_discrimination import PROMPT, _untied, _value, make_context

SE_SP = "sensitivity_at_specificity[min_specificity=0.95]"
SP_SE = "specificity_at_sensitivity[min_sensitivity=0.95]"
R80, R90 = "selective_risk[coverage=0.8]", "selective_risk[coverage=0.9]"
CRITERIA = [SE_SP, SP_SE, R80, R90]


@pytest.fixture(scope="module")
def hand():
    rng = np.random.default_rng(21)
    y1, a1 = _untied(rng, 30, 50, 1.5)
    _, b1 = _untied(rng, 30, 50, 0.5)
    y2, a2 = _untied(rng, 20, 100, 2.5)
    _, b2 = _untied(rng, 20, 100, 1.0)
    b2 = np.round(b2, 1)  # heavy ties
    cohorts = {"one": (y1, {"ma": a1, "mb": b1}), "two": (y2, {"ma": a2, "mb": b2})}
    ctx = make_context(cohorts, designs={"two": "within_label"},
                       exposure={"ma": {"two": "seen in pretraining"}})
    return cohorts, ctx, run(OP, ctx)


def test_estimates_match_oracles(hand):
    cohorts, _, res = hand
    t = res.tables["operating_points"]
    for c, (y, by_model) in cohorts.items():
        for m, s in by_model.items():
            def est(crit, c=c, m=m):
                return _value(t, cohort=c, model=m, criterion=crit)["estimate"]
            assert est(SE_SP) == pytest.approx(O.se_at_sp(y, s, 0.95), abs=1e-12)
            assert est(SP_SE) == pytest.approx(O.sp_at_se(y, s, 0.95), abs=1e-12)
            assert est(R80) == pytest.approx(O.risk_at_coverage(y, s, 0.8), abs=1e-12)
            assert est(R90) == pytest.approx(O.risk_at_coverage(y, s, 0.9), abs=1e-12)


def test_hand_worked_cohort():
    # 20 negatives at 0.01..0.20, 10 positives at 0.15..0.60 (step 0.05).
    neg = np.round(np.arange(1, 21) * 0.01, 2)
    pos = np.round(0.15 + 0.05 * np.arange(10), 2)
    y = np.r_[np.zeros(20), np.ones(10)]
    s = np.r_[neg, pos]
    # Sp >= 0.95 allows at most 1 negative >= t: t in (0.19, 0.20] -> t = 0.20, positives >= 0.20
    # are 0.20..0.60 -> 9/10.
    # Se >= 0.95 needs all 10 positives (9/10 < 0.95): t <= 0.15 -> negatives < 0.15 are 14 -> 0.70.
    # Selective risk (confidence max(s, 1-s), decision s >= 0.5): the errors are the 7 positives
    # below 0.5. n = 30, so k80 = 24 and k90 = 27. By confidence: the 20 negatives (0.99..0.80) and
    # the positives 0.15 (0.85) and 0.20 (0.80) fill the first 22 places (2 errors); then positives
    # 0.25 (0.75), 0.30 (0.70) -> k = 24 with 4 errors; 0.35 (0.65), then 0.40 and 0.60 (both 0.60)
    # -> k = 27 with 6 errors.
    ctx = make_context({"c": (y, {"m": s})}, n_resamples=50)
    t = run(OP, ctx).tables["operating_points"]
    assert _value(t, criterion=SE_SP)["estimate"] == pytest.approx(0.9)
    assert _value(t, criterion=SP_SE)["estimate"] == pytest.approx(0.7)
    assert _value(t, criterion=R80)["estimate"] == pytest.approx(4 / 24)
    assert _value(t, criterion=R90)["estimate"] == pytest.approx(6 / 27)


def test_shape_order_columns_and_threshold(hand):
    _, _, res = hand
    t = res.tables["operating_points"]
    assert len(t) == 2 * 2 * 4
    assert list(t["cohort"].unique()) == ["one", "two"]
    for _, g in t.groupby("cohort", sort=False):
        assert list(g["model"]) == sorted(g["model"])
        for _, gm in g.groupby("model"):
            assert list(gm["criterion"]) == CRITERIA
    for col in ("model", "prompt", "cohort", "negatives", "prevalence", "threshold", "criterion",
                "design", "n_resamples", "seed", "family", "estimate", "ci_low", "ci_high",
                "n_degenerate", "n", "n_pos", "n_neg", "qualification"):
        assert col in t.columns
    assert (t["prompt"] == PROMPT).all()
    sel = t["criterion"].str.startswith("selective_risk")
    assert (t.loc[sel, "threshold"] == 0.5).all()
    assert t.loc[~sel, "threshold"].isna().all()


def test_design_recorded_per_cohort_and_intervals(hand):
    _, _, res = hand
    t = res.tables["operating_points"]
    assert set(t.loc[t["cohort"] == "one", "design"]) == {"ordinary+paired"}
    assert set(t.loc[t["cohort"] == "two", "design"]) == {"within_label+paired"}
    assert (t.loc[t["cohort"] == "two", "n_degenerate"] == 0).all()
    assert ((t["ci_low"] <= t["estimate"] + 1e-12) | t["ci_low"].isna()).all()
    assert ((t["estimate"] <= t["ci_high"] + 1e-12) | t["ci_high"].isna()).all()
    assert ((t["ci_low"] >= 0) & (t["ci_high"] <= 1)).all()


def test_perfect_separator_has_degenerate_free_unit_interval():
    # a perfect separator has Se@Sp = Sp@Se = 1 on every within-label replicate
    y = np.r_[np.ones(15), np.zeros(25)]
    s = np.r_[np.linspace(0.7, 0.95, 15), np.linspace(0.05, 0.3, 25)]
    ctx = make_context({"c": (y, {"m": s})}, designs={"c": "within_label"}, n_resamples=100)
    t = run(OP, ctx).tables["operating_points"]
    for crit in (SE_SP, SP_SE):
        r = _value(t, criterion=crit)
        assert (r["estimate"], r["ci_low"], r["ci_high"], r["n_degenerate"]) == (1.0, 1.0, 1.0, 0)
    for crit in (R80, R90):  # every decision s >= 0.5 is right
        r = _value(t, criterion=crit)
        assert (r["estimate"], r["ci_low"], r["ci_high"]) == (0.0, 0.0, 0.0)


def test_exposure_qualification(hand):
    _, _, res = hand
    t = res.tables["operating_points"]
    flagged = t["qualification"].str.contains("seen in pretraining")
    assert (flagged == ((t["model"] == "ma") & (t["cohort"] == "two"))).all()


def test_refuses_mismatched_image_sets():
    rng = np.random.default_rng(2)
    y, a = _untied(rng, 10, 10, 1.0)
    _, b = _untied(rng, 10, 10, 1.0)
    ctx = make_context({"c": (y, {"a": a, "b": b})}, drop=("c", "a", 17), n_resamples=20)
    with pytest.raises(SchemaError, match=r"c-017") as err:
        run(OP, ctx)
    assert "'a'" in str(err.value) and "lacks 1 image" in str(err.value)


def test_deterministic_and_order_independent(hand):
    cohorts, _, res = hand
    kw = dict(designs={"two": "within_label"}, exposure={"ma": {"two": "seen in pretraining"}})
    again = run(OP, make_context(cohorts, **kw))
    pd.testing.assert_frame_equal(res.tables["operating_points"], again.tables["operating_points"])
    alone = run(OP, make_context({"two": cohorts["two"]}, **kw)).tables["operating_points"]
    t = res.tables["operating_points"]
    pd.testing.assert_frame_equal(t[t["cohort"] == "two"].reset_index(drop=True), alone)


def test_simulated_study_smoke(ctx):
    res = run(OP, ctx)
    t = res.tables["operating_points"]
    cohorts, models = list(ctx.spec.cohorts), ctx.models()
    assert len(t) == len(cohorts) * len(models) * 4
    assert list(t["cohort"].unique()) == cohorts
    for c in cohorts:
        assert set(t.loc[t["cohort"] == c, "design"]) == {f"{ctx.cohort_design(c)}+paired"}
    cx = (t["model"] == "sim-chexficient") & (t["cohort"] == "vindr")
    assert t.loc[cx, "qualification"].str.contains("exposure").all()
    assert ((t["estimate"] >= 0) & (t["estimate"] <= 1)).all()
    assert res.name == "operating_points" and res.notes


# ----------------------------------------------------------------------------- on request (issue 17)
# Witnesses: scikit-learn (rates at a threshold, ROC/PR coordinates, max_fpr partial AUC, the
# quantile reliability bins, an unpenalised logistic fit), statsmodels (proportion intervals),
# loop oracles written here (Youden / closest-to-(0, 1) by brute force, the partial area by
# clipping the ROC polyline), and the stats functions run on the same arrays with the generator
# of the block's cell key (the intervals come from those draws, nothing else).
FULL = {"thresholds": [0.5, 0.3],
        "rules": ["youden", {"rule": "closest_topleft", "cost": 2, "prevalence": 0.2}],
        "prevalence": 0.1,
        "partial_auc": [{"specificity": [0.9, 1]}, {"specificity": [0.8, 1], "correct": True},
                        {"sensitivity": [0.9, 1]}],
        "curves": {"grid": 21}, "calibration": True}
RATES = ["sensitivity", "specificity", "ppv", "npv", "lr_positive", "lr_negative", "f1", "accuracy",
         "balanced_accuracy"]


def _spec(ctx, section):
    from medaudit.blocks.operating_points import OperatingPointsConfig

    return ctx.spec.model_copy(update={"operating_points": OperatingPointsConfig.model_validate(
        section)})


@pytest.fixture(scope="module")
def full(hand):
    cohorts, ctx, base = hand
    return cohorts, ctx, base, run(OP, ctx, _spec(ctx, FULL))


def _design(cohort):
    return "within_label" if cohort == "two" else "ordinary"


def _brute_cut(y, s, method, cost=1.0, prevalence=0.5):
    """Best observed threshold (or +inf) by definition; ties to the highest threshold."""
    r = (1 - prevalence) / (cost * prevalence)
    best = None
    for t in sorted(set(s.tolist()) | {np.inf}):
        se, sp = O.se_sp_at(y, s, t)
        crit = se + r * sp if method == "youden" else -((1 - se) ** 2 + r * (1 - sp) ** 2)
        if best is None or crit >= best[0] - 1e-12 * max(abs(best[0]), 1):
            best = (crit, t) if best is None or crit > best[0] + 1e-12 * max(abs(best[0]), 1) \
                else (best[0], t)
    return best[1]


def _clipped_area(x, y, hi):
    """Area under the polyline (x, y) (x non-decreasing) from x[0] to ``hi``."""
    area = 0.0
    for i in range(len(x) - 1):
        x0, x1, y0, y1 = x[i], x[i + 1], y[i], y[i + 1]
        if x0 >= hi:
            break
        if x1 > hi:
            y1 = y0 + (hi - x0) * (y1 - y0) / (x1 - x0)
            x1 = hi
        area += (x1 - x0) * (y0 + y1) / 2
    return area


def test_requests_leave_the_paper_tables_unchanged(full):
    _, _, base, res = full
    assert set(base.tables) == {"operating_points", "risk_coverage"}
    for name in ("operating_points", "risk_coverage"):
        pd.testing.assert_frame_equal(base.tables[name], res.tables[name])
    assert set(res.tables) == {"operating_points", "risk_coverage", "threshold_metrics", "cutpoints",
                               "partial_auc", "partial_auc_differences", "roc_curve", "pr_curve",
                               "roc_band", "pr_band", "calibration", "calibration_curve"}
    assert len(res.notes) > len(base.notes)


def test_rates_at_declared_thresholds_against_sklearn(full):
    from sklearn.metrics import (
        accuracy_score,
        balanced_accuracy_score,
        confusion_matrix,
        f1_score,
        precision_score,
        recall_score,
    )

    cohorts, _, _, res = full
    t = res.tables["threshold_metrics"]
    for c, (y, by_model) in cohorts.items():
        for m, s in by_model.items():
            for tau in (0.5, 0.3):
                pred = (s >= tau).astype(int)
                tn, fp, fn, tp = confusion_matrix(y, pred, labels=[0, 1]).ravel()
                se, sp = tp / (tp + fn), tn / (tn + fp)
                want = {"sensitivity": recall_score(y, pred), "specificity": sp,
                        "ppv": precision_score(y, pred, zero_division=np.nan),
                        "npv": tn / (tn + fn) if tn + fn else np.nan,
                        "lr_positive": se / (1 - sp) if fp else np.nan,
                        "lr_negative": (1 - se) / sp if tn else np.nan,
                        "f1": f1_score(y, pred), "accuracy": accuracy_score(y, pred),
                        "balanced_accuracy": balanced_accuracy_score(y, pred)}
                g = t[(t["cohort"] == c) & (t["model"] == m) & (t["threshold"] == tau)]
                assert set(g["threshold_rule"]) == {"declared"}
                obs = g[g["prevalence"] == "observed"].set_index("criterion")
                assert list(obs.index) == RATES
                for k, v in want.items():
                    np.testing.assert_allclose(obs.loc[k, "estimate"], v, rtol=1e-12, equal_nan=True)
                # Bayes' rule at the declared prevalence 0.1
                at = g[g["prevalence"] == 0.1].set_index("criterion")
                assert list(at.index) == ["ppv", "npv"]
                ppv = se * 0.1 / (se * 0.1 + (1 - sp) * 0.9)
                npv = sp * 0.9 / (sp * 0.9 + (1 - se) * 0.1)
                np.testing.assert_allclose(at["estimate"], [ppv, npv], rtol=1e-12)


def test_proportion_intervals_against_statsmodels(full):
    from statsmodels.stats.proportion import proportion_confint

    _, _, _, res = full
    t = res.tables["threshold_metrics"]
    done = 0
    for _, r in t.iterrows():
        if r["prevalence"] != "observed" or r["criterion"] not in (
                "sensitivity", "specificity", "ppv", "npv", "accuracy"):
            for m in ("wilson", "clopper_pearson", "agresti_coull"):
                assert np.isnan(r[f"{m}_low"]) and np.isnan(r[f"{m}_high"])
            continue
        if not r["nobs"] > 0:
            continue
        assert r["count"] / r["nobs"] == pytest.approx(r["estimate"], rel=1e-12)
        for m, sm in (("wilson", "wilson"), ("clopper_pearson", "beta"),
                      ("agresti_coull", "agresti_coull")):
            lo, hi = proportion_confint(r["count"], r["nobs"], alpha=0.05, method=sm)
            assert r[f"{m}_low"] == pytest.approx(max(lo, 0.0), abs=1e-12)
            assert r[f"{m}_high"] == pytest.approx(min(hi, 1.0), abs=1e-12)
        done += 1
    assert done > 50


def test_rate_intervals_are_the_cohorts_paired_draws(full):
    """The block's bootstrap columns are paired_bootstrap on the cohort's images with the
    generator of the cohort's cell key (the same draws as the Table 5 operating points)."""
    from medaudit.blocks.context import cell_rng
    from medaudit.stats import paired_bootstrap

    cohorts, ctx, _, res = full
    t = res.tables["threshold_metrics"]
    for c, (y, by_model) in cohorts.items():
        metrics = list(OP.METRICS) + [(n, {"threshold": 0.5}) for n in RATES]
        pb = paired_bootstrap(y, by_model, metrics=metrics, design=_design(c), n_resamples=300,
                              rng=cell_rng(ctx.seed, "operating_points", c, PROMPT))
        for m in by_model:
            for n in RATES:
                r = pb.marginal[(m, f"{n}[threshold=0.5]")]
                row = _value(t, cohort=c, model=m, threshold=0.5, criterion=n, prevalence="observed")
                np.testing.assert_array_equal([row["ci_low"], row["ci_high"], row["n_degenerate"]],
                                              [r.ci_low, r.ci_high, r.n_degenerate])
            base = _value(res.tables["operating_points"], cohort=c, model=m, criterion=SE_SP)
            r = pb.marginal[(m, SE_SP)]
            assert (base["ci_low"], base["ci_high"]) == (r.ci_low, r.ci_high)


def test_rule_chosen_thresholds_by_brute_force_and_their_intervals(full):
    from medaudit.blocks.context import cell_rng
    from medaudit.stats import best_threshold_ci

    cohorts, ctx, _, res = full
    tm, cp = res.tables["threshold_metrics"], res.tables["cutpoints"]
    rules = (("youden", "youden", 1.0, 0.5),
             ("closest_topleft[cost=2,prevalence=0.2]", "closest_topleft", 2.0, 0.2))
    for c, (y, by_model) in cohorts.items():
        for m, s in by_model.items():
            for label, method, cost, prev in rules:
                tau = _brute_cut(y, s, method, cost, prev)
                g = tm[(tm["cohort"] == c) & (tm["model"] == m) & (tm["threshold_rule"] == label)]
                assert set(g["threshold"]) == {tau}
                se, sp = O.se_sp_at(y, s, tau)
                obs = g[g["prevalence"] == "observed"].set_index("criterion")
                assert (obs.loc["sensitivity", "estimate"], obs.loc["specificity", "estimate"]) == \
                    pytest.approx((se, sp), abs=1e-12)
                ci = best_threshold_ci(y, s, method=method, weights=(cost, prev),
                                       design=_design(c), n_resamples=300,
                                       rng=cell_rng(ctx.seed, "operating_points", c, PROMPT,
                                                    "cutpoint", label, m))
                rows = cp[(cp["cohort"] == c) & (cp["model"] == m) & (cp["rule"] == label)]
                assert list(rows["criterion"]) == [ci.threshold.metric, ci.sensitivity.metric,
                                                   ci.specificity.metric]
                for (_, row), b in zip(rows.iterrows(), (ci.threshold, ci.sensitivity,
                                                         ci.specificity), strict=True):
                    assert row["threshold"] == tau
                    assert (row["estimate"], row["ci_low"], row["ci_high"]) == (
                        b.estimate, b.ci_low, b.ci_high)
                assert rows["criterion_value"].iloc[0] == pytest.approx(
                    ci.cutpoint.criterion, rel=1e-12)


def test_tied_youden_thresholds_go_to_the_highest():
    # J = Se + Sp - 1 is 1/2 at thresholds 0.4 and 0.2 (pROC returns both, 0.35 and 0.15);
    # the documented convention returns the highest, with every tied threshold listed
    y = np.array([0, 1, 0, 1])
    s = np.array([0.1, 0.2, 0.3, 0.4])
    ctx = make_context({"c": (y, {"m": s})}, n_resamples=30)
    res = run(OP, ctx, _spec(ctx, {"rules": ["youden"]}))
    cp = res.tables["cutpoints"]
    assert set(cp["threshold"]) == {0.4}
    assert set(cp["tied_thresholds"]) == {"0.4|0.2"}
    assert cp["criterion_value"].iloc[0] == pytest.approx(1.5)  # pROC's Se + Sp
    tm = res.tables["threshold_metrics"].set_index("criterion")
    assert (tm.loc["sensitivity", "estimate"], tm.loc["specificity", "estimate"]) == (0.5, 1.0)


def test_a_rule_that_calls_nothing_positive_is_named_in_the_notes():
    """A score unrelated to the label: in many replicates Youden's J is <= 0 at every observed
    threshold and the rule keeps +inf, so the threshold interval has no finite upper end;
    the note names the model and cohort (the stats layer's count is the witness)."""
    from medaudit.blocks.context import cell_rng
    from medaudit.stats import best_threshold_ci

    rng = np.random.default_rng(0)
    y = np.r_[np.ones(20), np.zeros(20)]
    weak, good = rng.uniform(size=40), 1.0 / (1.0 + np.exp(-(rng.normal(size=40) + 3.0 * y)))
    ctx = make_context({"c": (y, {"weak": weak, "good": good})}, n_resamples=400)
    res = run(OP, ctx, _spec(ctx, {"rules": ["youden"]}))
    cp, notes = res.tables["cutpoints"], res.notes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        ci = {m: best_threshold_ci(y, s, design="ordinary", n_resamples=400,
                                   rng=cell_rng(ctx.seed, "operating_points", "c", PROMPT,
                                                "cutpoint", "youden", m))
              for m, s in (("weak", weak), ("good", good))}
    assert ci["weak"].n_no_positive > 10 and ci["good"].n_no_positive == 0  # 2.5 % of 400 = 10
    row = cp[(cp["model"] == "weak") & cp["criterion"].str.startswith("cutpoint_threshold")]
    assert row["ci_high"].isna().all() and np.isfinite(row["ci_low"]).all()
    note = [n for n in notes if "no finite end" in n]
    assert len(note) == 1 and "weak in c (youden)" in note[0] and "good in c" not in note[0]


def test_partial_auc_against_sklearn_and_the_clipped_curve(full):
    from sklearn.metrics import roc_auc_score, roc_curve

    cohorts, ctx, _, res = full
    pa, pd_ = res.tables["partial_auc"], res.tables["partial_auc_differences"]
    assert list(dict.fromkeys(pa["criterion"])) == [
        "pauc[sp=0.9:1]", "pauc[correct=True,sp=0.8:1]", "pauc[se=0.9:1]"]
    for c, (y, by_model) in cohorts.items():
        est = {}
        for m, s in by_model.items():
            fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
            sp_area = _clipped_area(fpr, tpr, 0.1)
            # over Se in [0.9, 1]: the area between the curve's Sp and 0, Se from 0.9 to 1
            se_area = _clipped_area(tpr[::-1] * -1 + 1, (1 - fpr)[::-1], 0.1)
            got = pa[(pa["cohort"] == c) & (pa["model"] == m)].set_index("criterion")["estimate"]
            assert got["pauc[sp=0.9:1]"] == pytest.approx(sp_area, abs=1e-12)
            assert got["pauc[correct=True,sp=0.8:1]"] == pytest.approx(
                roc_auc_score(y, s, max_fpr=0.2), abs=1e-12)
            assert got["pauc[se=0.9:1]"] == pytest.approx(se_area, abs=1e-12)
            est[m] = got
        for _, d in pd_[pd_["cohort"] == c].iterrows():
            crit = d["criterion"].replace("pauc_difference", "pauc")
            assert d["estimate"] == pytest.approx(est[d["model_a"]][crit] - est[d["model_b"]][crit],
                                                  abs=1e-12)
            want = ("a_better" if d["ci_low"] > 0 else "b_better" if d["ci_high"] < 0
                    else "unresolved")
            assert d["verdict"] == want
        assert len(pd_[pd_["cohort"] == c]) == 3  # one pair x three ranges


def test_curves_against_sklearn_and_the_band_function(full):
    from sklearn.metrics import precision_recall_curve, roc_curve

    from medaudit.blocks.context import cell_rng
    from medaudit.stats import roc_curve_band

    cohorts, ctx, _, res = full
    rc, pr, band = res.tables["roc_curve"], res.tables["pr_curve"], res.tables["roc_band"]
    for c, (y, by_model) in cohorts.items():
        for m, s in by_model.items():
            fpr, tpr, thr = roc_curve(y, s, drop_intermediate=False)
            g = rc[(rc["cohort"] == c) & (rc["model"] == m)]
            np.testing.assert_array_equal(g["threshold"], thr)
            np.testing.assert_allclose(g["sensitivity"], tpr, rtol=1e-12)
            np.testing.assert_allclose(1 - g["specificity"], fpr, atol=1e-12)
            prec, rec, pthr = precision_recall_curve(y, s, drop_intermediate=False)
            g = pr[(pr["cohort"] == c) & (pr["model"] == m)]
            np.testing.assert_array_equal(g["threshold"], pthr[::-1])
            np.testing.assert_allclose(g["precision"], prec[:-1][::-1], rtol=1e-12)
            np.testing.assert_allclose(g["recall"], rec[:-1][::-1], rtol=1e-12)
            b = roc_curve_band(y, s, specificities=np.linspace(0, 1, 21), design=_design(c),
                               n_resamples=300, rng=cell_rng(ctx.seed, "operating_points", c,
                                                             PROMPT, "roc_band", m))
            g = band[(band["cohort"] == c) & (band["model"] == m)]
            np.testing.assert_array_equal(g["specificity"], b.specificity)
            for col, v in (("estimate", b.sensitivity), ("ci_low", b.ci_low), ("ci_high", b.ci_high)):
                np.testing.assert_array_equal(g[col], v)
            assert set(g["design"]) == {_design(c)}


def test_pr_band_is_the_band_function_on_its_own_key(full):
    """Witness: precision_recall_band on the same data and cell key (its own key, so the
    ROC band's draws did not change when the PR band was added); the full-sample precision
    at a recall r is the PPV at the highest threshold whose recall reaches r (sklearn)."""
    from sklearn.metrics import precision_recall_curve

    from medaudit.blocks.context import cell_rng
    from medaudit.stats import precision_recall_band

    cohorts, ctx, _, res = full
    band = res.tables["pr_band"]
    for c, (y, by_model) in cohorts.items():
        for m, s in by_model.items():
            b = precision_recall_band(y, s, recalls=np.linspace(0, 1, 21), design=_design(c),
                                      n_resamples=300, rng=cell_rng(ctx.seed, "operating_points", c,
                                                                    PROMPT, "pr_band", m))
            g = band[(band["cohort"] == c) & (band["model"] == m)]
            np.testing.assert_array_equal(g["recall"], b.recall)
            for col, v in (("estimate", b.precision), ("ci_low", b.ci_low), ("ci_high", b.ci_high)):
                np.testing.assert_array_equal(g[col], v)
            assert set(g["criterion"]) == {"precision_at_recall[method=threshold]"}
            prec, rec, _ = precision_recall_curve(y, s, drop_intermediate=False)
            for r, got in zip(g["recall"], g["estimate"], strict=True):
                # thresholds (ascending) whose recall reaches r; a grid float such as
                # 0.7000000000000001 stands for 0.7 (the engine's tolerance)
                ok = rec[:-1] >= r - 1e-9
                want = prec[:-1][ok][-1] if ok.any() else np.nan
                assert got == pytest.approx(want, abs=1e-12), (c, m, r)
            assert (g["ci_low"] <= g["estimate"] + 1e-12).all()
            assert (g["estimate"] <= g["ci_high"] + 1e-12).all()


def test_calibration_tables(full):
    from sklearn.calibration import calibration_curve
    from sklearn.linear_model import LogisticRegression

    from medaudit.blocks.context import cell_rng
    from medaudit.stats import (
        calibration_slope_intercept_ci,
        debiased_l2_calibration_error,
        ece_equal_mass,
        reliability_curve,
    )

    cohorts, ctx, _, res = full
    cal, curve = res.tables["calibration"], res.tables["calibration_curve"]
    warnings.simplefilter("ignore", DegenerateDataWarning)  # counted in the rows; pytest restores
    for c, (y, by_model) in cohorts.items():
        for m, s in by_model.items():
            g = cal[(cal["cohort"] == c) & (cal["model"] == m)].set_index("criterion")
            assert g.loc["ece_equal_mass[n_bins=10]", "estimate"] == pytest.approx(
                ece_equal_mass(y, s, n_bins=10), abs=1e-12)
            assert g.loc["debiased_l2_ce[binning=auto,n_bins=15]", "estimate"] == pytest.approx(
                debiased_l2_calibration_error(y, s), abs=1e-12)
            key = cell_rng(ctx.seed, "operating_points", c, PROMPT, "slope", m)
            fit = calibration_slope_intercept_ci(y, s, design=_design(c), n_resamples=300, rng=key)
            for crit, b, wald in (("calibration_slope", fit.slope, "slope"),
                                  ("calibration_intercept", fit.intercept, "intercept"),
                                  ("calibration_intercept_joint", fit.intercept_joint,
                                   "intercept_joint")):
                row = g.loc[crit]
                assert (row["estimate"], row["ci_low"], row["ci_high"]) == (
                    b.estimate, b.ci_low, b.ci_high)
                assert row["wald_low"] == getattr(fit.fit, f"{wald}_ci_low")
            x = np.log(s / (1 - s))
            lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x[:, None], y)
            assert g.loc["calibration_slope", "estimate"] == pytest.approx(lr.coef_[0, 0], rel=1e-5)
            # equal-mass bins: scikit-learn's quantile bins (empty bins dropped by both)
            true, pred = calibration_curve(y, s, n_bins=10, strategy="quantile")
            h = curve[(curve["cohort"] == c) & (curve["model"] == m)]
            np.testing.assert_allclose(h["fraction_positive"], true, rtol=1e-12)
            np.testing.assert_allclose(h["mean_score"], pred, rtol=1e-12)
            rc = reliability_curve(y, s, n_bins=10, strategy="quantile", design=_design(c),
                                   n_resamples=300,
                                   rng=cell_rng(ctx.seed, "operating_points", c, PROMPT,
                                                "reliability", m))
            np.testing.assert_array_equal(h["ci_low"], rc.ci_low)
            np.testing.assert_array_equal(h["prop_high"], rc.prop_high)


def test_requested_tables_are_deterministic(full, hand):
    cohorts, ctx, _, res = full
    again = run(OP, ctx, _spec(ctx, FULL))
    for name, df in res.tables.items():
        pd.testing.assert_frame_equal(df, again.tables[name])
    kw = dict(designs={"two": "within_label"}, exposure={"ma": {"two": "seen in pretraining"}})
    alone_ctx = make_context({"two": cohorts["two"]}, **kw)
    alone = run(OP, alone_ctx, _spec(alone_ctx, FULL))
    for name in ("threshold_metrics", "cutpoints", "roc_band", "pr_band", "calibration_curve"):
        t = res.tables[name]
        pd.testing.assert_frame_equal(t[t["cohort"] == "two"].reset_index(drop=True),
                                      alone.tables[name])


@pytest.mark.parametrize("section, message", [
    ({"thresholds": [0.5, 0.5]}, "lists a value twice"),
    ({"rules": ["youden", "youden"]}, "lists a rule twice"),
    ({"rules": [{"rule": "youden", "cost": 0}]}, "greater than 0"),
    ({"rules": ["youdn"]}, "youden"),
    ({"prevalence": 1.0}, "strictly between 0 and 1"),
    ({"partial_auc": [{"specificity": [0.9, 1], "sensitivity": [0.9, 1]}]}, "exactly one"),
    ({"partial_auc": [{"specificity": [0.9, 1.2]}]}, "0 <= lo < hi <= 1"),
    ({"curves": {"grid": 1}}, "greater than or equal to 2"),
    ({"calibrate": True}, "calibrat"),
])
def test_section_errors_name_the_key(section, message):
    from pydantic import ValidationError

    from medaudit.blocks.operating_points import OperatingPointsConfig

    with pytest.raises(ValidationError, match=message):
        OperatingPointsConfig.model_validate(section)


def test_probabilities_of_exactly_zero_or_one_need_eps():
    from medaudit.exceptions import MedauditError

    y = np.r_[np.ones(10), np.zeros(10)]
    s = np.r_[np.linspace(0.3, 1.0, 10), np.linspace(0.0, 0.6, 10)]
    ctx = make_context({"c": (y, {"m": s})}, n_resamples=30)
    with pytest.raises(MedauditError, match=r"calibration\.eps"):
        run(OP, ctx, _spec(ctx, {"calibration": True}))
    res = run(OP, ctx, _spec(ctx, {"calibration": {"eps": 1e-6}}))
    assert set(res.tables["calibration"]["eps"].dropna()) == {1e-6}


def test_logits_get_no_calibration_and_say_so(hand):
    cohorts, ctx, _ = hand
    spec = _spec(ctx, {"calibration": True, "thresholds": [0.0]}).model_copy(
        update={"score_scale": "logits"})
    from tests._support import context

    lctx = context(scores=ctx.scores, spec=spec)
    res = run(OP, lctx, spec)
    assert "calibration" not in res.tables and "calibration_curve" not in res.tables
    assert "threshold_metrics" in res.tables
    assert any("calibration needs probabilities" in n for n in res.notes)


def test_one_class_cohort_gets_rates_but_no_curves():
    rng = np.random.default_rng(5)
    y, a = _untied(rng, 15, 20, 1.0)
    ctx = make_context({"ok": (y, {"m": a}), "pos": (np.ones(8), {"m": rng.uniform(size=8)})},
                       n_resamples=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        res = run(OP, ctx, _spec(ctx, {"thresholds": [0.5], "rules": ["youden"], "curves": True}))
    assert set(res.tables["cutpoints"]["cohort"]) == {"ok"}
    assert set(res.tables["roc_curve"]["cohort"]) == {"ok"}
    tm = res.tables["threshold_metrics"]
    pos = tm[tm["cohort"] == "pos"].set_index("criterion")
    assert pos.loc["sensitivity", "estimate"] == pytest.approx(np.mean(
        ctx.wide("pos").scores["m|clinical"] >= 0.5))
    assert np.isnan(pos.loc["specificity", "estimate"])
    assert "zero denominator" in pos.loc["specificity", "qualification"]
    assert any("one class" in n and "pos" in n for n in res.notes)
