"""Block `operating_points`: Table 5 within-cohort operating points (paper 000 M0.7).

Witnesses: the loop oracles in tests/_oracles.py (Se@Sp, Sp@Se, risk at coverage),
a hand-worked cohort, and arithmetic properties of the shared paired draw.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit.blocks import operating_points as OP
from medaudit.exceptions import SchemaError
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
