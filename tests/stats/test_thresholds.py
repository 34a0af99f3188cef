"""Operating points and the source-threshold rules (medaudit.stats.thresholds; M0.7, M0.8).

Witnesses: hand-worked cases, the slow oracles of ``tests/_oracles.py`` and scikit-learn's
``roc_curve``; trap T1 (drop_intermediate) by name.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from medaudit.stats import (
    operating_point,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    threshold_for_sensitivity,
    threshold_for_specificity,
)
from tests import _oracles as oracle
from tests.stats._helpers import (
    RTOL,
    _approx,
    _cases,
    _reference_sklearn_threshold_for_sensitivity,
    labelled,
)


# ============================================================ operating points (M0.7)
def test_operating_points_toy():
    # y = 0 0 0 0 1 1, s = .1 .2 .3 .7 .6 .8; thresholds (Se, Sp):
    #   .8 (.5, 1)  .7 (.5, .75)  .6 (1, .75)  .3 (1, .5) ...  +inf (0, 1)
    y, s = [0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.7, 0.6, 0.8]
    assert sensitivity_at_specificity(y, s, min_specificity=0.75) == 1.0
    assert sensitivity_at_specificity(y, s, min_specificity=1.0) == 0.5
    assert specificity_at_sensitivity(y, s, min_sensitivity=1.0) == 0.75
    assert specificity_at_sensitivity(y, s, min_sensitivity=0.5) == 1.0
    # only the t = +inf point has Sp >= 1 when the top score is a negative
    assert sensitivity_at_specificity([0, 1], [0.9, 0.1], min_specificity=1.0) == 0.0


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_se_at_sp_and_sp_at_se_match_oracle(tied):
    rng = np.random.default_rng(10)
    for y, s in _cases(10, tied=tied):
        for x in (0.0, 0.5, 0.9, 0.95, 1.0, float(rng.random())):
            assert_allclose(
                sensitivity_at_specificity(y, s, min_specificity=x), oracle.se_at_sp(y, s, x), rtol=RTOL
            )
            assert_allclose(
                specificity_at_sensitivity(y, s, min_sensitivity=x), oracle.sp_at_se(y, s, x), rtol=RTOL
            )


# ===================================================== source-threshold rules (M0.8)
def test_threshold_for_sensitivity_toy():
    # positives .9 .8 .7 .2; k = ceil(0.75 * 4) = 3 -> 3rd largest positive = 0.7
    assert threshold_for_sensitivity([1, 1, 1, 1, 0], [0.9, 0.8, 0.7, 0.2, 0.5], min_sensitivity=0.75) == 0.7


def test_threshold_for_specificity_tie_break_toy():
    # y: pos .9, .5; neg .8, .6, .2, .1.  min_specificity = 0.75:
    #   t = .9: Se 1/2, Sp 4/4   feasible
    #   t = .8: Se 1/2, Sp 3/4   feasible   <- same Se; the rule prefers the higher Sp
    #   t = .6: Se 1/2, Sp 2/4   infeasible
    #   t = .5: Se 2/2, Sp 2/4   infeasible
    # max Se = 1/2 at t in {.9, .8}; ties -> higher Sp -> t = 0.9 (not the lowest t, 0.8,
    # which a scan of the ROC curve to its last feasible point would return).
    y = [1, 0, 0, 1, 0, 0]
    s = [0.9, 0.8, 0.6, 0.5, 0.2, 0.1]
    assert threshold_for_specificity(y, s, min_specificity=0.75) == 0.9
    assert oracle.tau_specificity(y, s, 0.75) == 0.9
    # min_specificity = 0.5 admits t = .5 with Se = 1: it maximises Se
    assert threshold_for_specificity(y, s, min_specificity=0.5) == 0.5


def test_threshold_for_specificity_infeasible_is_inf():
    # top score is a negative: every observed t has Sp < 1, so nothing meets Sp >= 0.95
    assert threshold_for_specificity([0, 1], [0.9, 0.1], min_specificity=0.95) == math.inf
    assert oracle.tau_specificity([0, 1], [0.9, 0.1], 0.95) == math.inf
    # the same sample with the +inf threshold: Se = 0, Sp = 1
    op = operating_point([0, 1], [0.9, 0.1], threshold=math.inf)
    assert (op.sensitivity, op.specificity) == (0.0, 1.0)


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_threshold_rules_match_oracle(tied):
    rng = np.random.default_rng(11)
    for y, s in _cases(11, tied=tied, n_cases=300):
        for x in (0.0, 0.5, 0.8, 0.9, 0.95, 1.0, float(rng.random())):
            assert threshold_for_sensitivity(y, s, min_sensitivity=x) == oracle.tau_sensitivity(y, s, x)
            assert threshold_for_specificity(y, s, min_specificity=x) == oracle.tau_specificity(y, s, x)


@given(labelled(prob=False), st.floats(0.0, 1.0))
def test_threshold_rules_are_observed_scores_and_consistent(ys, x):
    y, s = ys
    observed = set(s.tolist())
    t_se = threshold_for_sensitivity(y, s, min_sensitivity=x)
    t_sp = threshold_for_specificity(y, s, min_specificity=x)
    assert t_se in observed
    assert t_sp in observed or t_sp == math.inf
    # tau_sp attains sensitivity_at_specificity (the +inf point gives Se = 0 when infeasible)
    assert operating_point(y, s, threshold=t_sp).sensitivity == _approx(
        sensitivity_at_specificity(y, s, min_specificity=x), rel=RTOL
    )
    op = operating_point(y, s, threshold=t_se)
    assert op.sensitivity >= x - 1e-12
    if x > 1e-12:  # x <= the 1e-12 guard is also met by t = +inf (Sp = 1), not observed
        assert op.specificity == _approx(specificity_at_sensitivity(y, s, min_sensitivity=x), rel=RTOL)


def test_T1_sklearn_drop_intermediate_can_give_a_lower_threshold():
    # T1: "highest tau with Se >= 0.95" read off sklearn's roc_curve with the default
    # drop_intermediate=True can land on a lower threshold, because the ROC point where Se
    # first reaches 0.95 may lie on a collinear segment and be dropped.  With
    # drop_intermediate=False every distinct score is a threshold and sklearn agrees.
    x = 0.95
    differing = None
    for seed in range(300):  # deterministic search for a small cohort that shows the trap
        rng = np.random.default_rng(seed)
        y = np.r_[np.ones(20), np.zeros(40)]
        s = np.round(np.r_[rng.normal(1.0, 1.0, 20), rng.normal(0.0, 1.0, 40)], 1)
        ours = threshold_for_sensitivity(y, s, min_sensitivity=x)
        assert _reference_sklearn_threshold_for_sensitivity(y, s, x, drop_intermediate=False) == ours
        dropped = _reference_sklearn_threshold_for_sensitivity(y, s, x, drop_intermediate=True)
        assert dropped <= ours
        if dropped < ours:
            differing = (seed, ours, dropped)
            break
    assert differing is not None, "no seed in 0..299 showed the drop_intermediate trap"
    seed, ours, dropped = differing
    assert operating_point(y, s, threshold=ours).sensitivity >= x
    # both thresholds reach Se >= 0.95; sklearn's costs specificity
    assert (
        operating_point(y, s, threshold=dropped).specificity
        < operating_point(y, s, threshold=ours).specificity
    )


def test_threshold_for_sensitivity_570_of_600_is_feasible():
    # M0.8: the source Se is exactly 570/600 = 0.95.  600 distinct positive scores; the
    # rule returns the k-th largest with k = ceil(0.95 * 600) = 570.
    pos = (np.arange(600) + 0.5) / 600.0
    neg = np.random.default_rng(12).random(300)
    y, s = np.r_[np.ones(600), np.zeros(300)], np.r_[pos, neg]
    kth = np.sort(pos)[::-1][569]
    assert threshold_for_sensitivity(y, s, min_sensitivity=0.95) == kth
    assert operating_point(y, s, threshold=kth).sensitivity == 0.95  # 570/600, exactly
    # float noise above 0.95 (one ulp) must not push the rule to the 571st positive ...
    assert threshold_for_sensitivity(y, s, min_sensitivity=np.nextafter(0.95, 1.0)) == kth
    # ... but a genuinely higher target does: ceil((0.95 + 1e-9) * 600) = 571
    assert threshold_for_sensitivity(y, s, min_sensitivity=0.95 + 1e-9) == np.sort(pos)[::-1][570]


def test_threshold_for_specificity_5700_of_6000_is_feasible():
    # M0.8: the source Sp is exactly 5,700/6,000 = 0.95.  Negatives (j + 0.5)/6000; the
    # 5,700th smallest is 0.949917 and the 5,701st 0.950083.  A positive at 0.95 sits
    # between them: at t = 0.95 exactly 5,700 negatives are below t -> Sp = 0.95, and it is
    # the lowest feasible observed score, so it maximises Se.
    neg = (np.arange(6000) + 0.5) / 6000.0
    pos = np.r_[0.95, np.linspace(0.96, 1.0, 50), np.linspace(0.1, 0.9, 49)]
    y, s = np.r_[np.zeros(6000), np.ones(pos.size)], np.r_[neg, pos]
    assert threshold_for_specificity(y, s, min_specificity=0.95) == 0.95
    assert operating_point(y, s, threshold=0.95).specificity == 0.95
    assert threshold_for_specificity(y, s, min_specificity=np.nextafter(0.95, 1.0)) == 0.95


def test_operating_point_toy():
    # s >= 0.5: TP = 2 of 2 positives, TN = 1 of 2 negatives (0.5 is predicted positive)
    op = operating_point([0, 0, 1, 1], [0.2, 0.5, 0.5, 0.9], threshold=0.5)
    assert (op.sensitivity, op.specificity, op.n_pos, op.n_neg) == (1.0, 0.5, 2.0, 2.0)
    assert op.threshold == 0.5
    op = operating_point([0, 0, 1, 1], [0.2, 0.5, 0.5, 0.9], threshold=math.inf)
    assert (op.sensitivity, op.specificity) == (0.0, 1.0)


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_operating_point_matches_oracle(tied):
    rng = np.random.default_rng(13)
    for y, s in _cases(13, tied=tied):
        for tau in (*rng.choice(s, 3), math.inf, -1.0, 2.0, float(rng.random())):
            op = operating_point(y, s, threshold=tau)
            se, sp = oracle.se_sp_at(y, s, tau)
            assert (op.sensitivity, op.specificity) == _approx((se, sp), rel=RTOL)


def test_operating_point_absent_class_rate_is_nan():
    op = operating_point([1, 1], [0.2, 0.3], threshold=0.25)
    assert op.sensitivity == 0.5
    assert math.isnan(op.specificity)


def test_operating_point_accepts_both_infinite_thresholds():
    """+inf: nothing predicted positive (Se 0, Sp 1); -inf: everything (Se 1, Sp 0),
    as the oracle's rule s >= t gives."""
    y, s = [0, 0, 1, 1, 0], [0.2, 0.5, 0.5, 0.9, 0.1]
    for t, want in ((math.inf, (0.0, 1.0)), (-math.inf, (1.0, 0.0))):
        op = operating_point(y, s, threshold=t)
        assert (op.sensitivity, op.specificity) == want == oracle.se_sp_at(y, s, t)
        assert op.threshold == t


@pytest.mark.parametrize("y, w, rate", [([1, 1, 1], None, "specificity"), ([0, 0, 0], None, "sensitivity"),
                                        ([0, 1, 1], [0.0, 1.0, 1.0], "specificity")])
def test_operating_point_warns_where_a_rate_is_undefined(y, w, rate):
    from medaudit.exceptions import UndefinedMetricWarning

    with pytest.warns(UndefinedMetricWarning, match=f"{rate} is undefined"):
        op = operating_point(y, [0.2, 0.6, 0.9], threshold=0.5, sample_weight=w)
    assert math.isnan(getattr(op, rate))
