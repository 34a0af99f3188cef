"""Selective prediction (medaudit.stats.selective; M0.7): risk at a coverage and AURC.

Witnesses: hand-worked cases and the slow oracles of ``tests/_oracles.py``; trap T5 by name.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from medaudit.stats import (
    aurc,
    risk_coverage_curve,
    selective_risk,
)
from tests import _oracles as oracle
from tests.stats._helpers import (
    ATOL_ZERO,
    RTOL,
    _approx,
    _cases,
)


# ======================================================== selective prediction (M0.7)
def test_selective_risk_toy():
    # confidence max(s, 1-s): .95 .9 .6 .55 (already descending); decision 1{s >= .5}:
    #   1 1 0 1 vs y 1 0 1 0 -> errors 0 1 1 1; risk(k) = 0, 1/2, 2/3, 3/4
    y, s = [1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55]
    assert selective_risk(y, s, coverage=0.5) == 0.5  # k = ceil(2) = 2
    assert selective_risk(y, s, coverage=0.25) == 0.0
    assert selective_risk(y, s, coverage=1.0) == 0.75
    assert selective_risk(y, s, coverage=0.6) == _approx(2 / 3, rel=RTOL)  # k = ceil(2.4)
    # s = 0.5 is predicted positive (T5: not argmax-with-0.5-negative)
    assert selective_risk([1], [0.5], coverage=1.0) == 0.0
    assert selective_risk([0], [0.5], coverage=1.0) == 1.0


@pytest.mark.parametrize("tied", [True, False], ids=["tied-confidence", "untied"])
def test_selective_risk_matches_oracle(tied):
    rng = np.random.default_rng(14)
    for y, s in _cases(14, tied=tied):
        for c in (0.1, 0.5, 0.8, 0.9, 1.0, float(rng.uniform(0.01, 1.0))):
            assert_allclose(
                selective_risk(y, s, coverage=c), oracle.risk_at_coverage(y, s, c), rtol=RTOL, atol=0
            )


def test_selective_risk_montgomery_k():
    # M0.7 [VERIFIED]: Montgomery (n = 138) matches k = ceil(c n): 0.8 * 138 = 110.4 -> 111,
    # 0.9 * 138 = 124.2 -> 125 (round() would give 110 and 124).  Confidence strictly
    # decreasing, every image predicted positive; the only errors are the negatives at
    # confidence ranks 111 and 125, so neighbouring k give different risks:
    #   risk(110) = 0, risk(111) = 1/111, risk(112) = 1/112
    #   risk(124) = 1/124, risk(125) = 2/125, risk(126) = 2/126
    n = 138
    s = 1.0 - np.arange(n) / 1000.0
    y = np.ones(n)
    y[[110, 124]] = 0.0
    curve = risk_coverage_curve(y, s).risk
    assert curve[[109, 110, 111]].tolist() == [0.0, 1 / 111, 1 / 112]
    assert curve[[123, 124, 125]].tolist() == [1 / 124, 2 / 125, 2 / 126]
    assert selective_risk(y, s, coverage=0.8) == _approx(1 / 111, rel=RTOL)
    assert selective_risk(y, s, coverage=0.9) == _approx(2 / 125, rel=RTOL)


def test_aurc_toy_and_T5_not_normalised():
    # risks 0, 1/2, 2/3, 3/4 (see test_selective_risk_toy); trapezoid over coverage 1/4..1:
    #   (1/4) [(0 + 1/2)/2 + (1/2 + 2/3)/2 + (2/3 + 3/4)/2] = (1/4)(6 + 14 + 17)/24 = 37/96
    y, s = [1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55]
    assert aurc(y, s) == _approx(37 / 96, rel=RTOL)
    # T5: torch-uncertainty rescales by 1/(1 - 1/n) -> 37/72 = 0.5139; medaudit does not
    assert aurc(y, s) != _approx((37 / 96) / (1 - 1 / 4), rel=1e-6)
    assert oracle.aurc(y, s) == _approx(37 / 96, rel=RTOL)


def test_aurc_single_image_is_zero():
    assert aurc([1], [0.9]) == 0.0
    assert aurc([0], [0.9]) == 0.0  # risk 1, but the area over one coverage point is 0
    curve = risk_coverage_curve([0], [0.9])
    assert curve.coverage.tolist() == [1.0]
    assert curve.risk.tolist() == [1.0]


@pytest.mark.parametrize("tied", [True, False], ids=["tied-confidence", "untied"])
def test_aurc_matches_oracle_and_trapezoid_of_curve(tied):
    for y, s in _cases(15, tied=tied, n_min=1):
        got = aurc(y, s)
        assert_allclose(got, oracle.aurc(y, s), rtol=RTOL, atol=ATOL_ZERO)
        curve = risk_coverage_curve(y, s)
        assert_allclose(got, np.trapezoid(curve.risk, curve.coverage), rtol=RTOL, atol=ATOL_ZERO)


def test_risk_coverage_curve_matches_oracle():
    for y, s in _cases(16, tied=True, n_cases=60):
        curve = risk_coverage_curve(y, s)
        n = y.size
        assert_allclose(curve.coverage, np.arange(1, n + 1) / n, rtol=RTOL)
        for k in range(1, n + 1):
            assert_allclose(curve.risk[k - 1], oracle.risk_at_coverage(y, s, k / n), rtol=RTOL)
        conf = np.maximum(s, 1 - s)
        assert (np.diff(curve.confidence) <= 0).all()
        assert sorted(curve.confidence.tolist()) == sorted(conf.tolist())


def test_aurc_is_exact_when_the_only_error_is_least_confident():
    # 999 correct confident images, then 1 error: risk(k) = 0 for k < 1000, risk(1000) =
    # 1/1000; only the last trapezoid is non-zero: (1/1000)(0 + 1/1000)/2 = 5e-7 exactly.
    # np.trapezoid of medaudit's own risk-coverage curve gets this to ~1e-15.  Regression
    # test: an AURC kernel built on harmonic-number differences cancelled catastrophically
    # here (4.999999996663789e-07, relative error 7e-10; ~5e-7 at n = 1e5).
    n = 1000
    s = np.linspace(0.999, 0.6, n)
    y = np.r_[np.ones(n - 1), 0.0]
    curve = risk_coverage_curve(y, s)
    assert np.trapezoid(curve.risk, curve.coverage) == _approx(5e-7, rel=RTOL)
    assert oracle.aurc(y, s) == _approx(5e-7, rel=RTOL)
    assert aurc(y, s) == _approx(5e-7, rel=RTOL)


def _every_order(y, p):
    """aurc and selective_risk(0.5) on every permutation of the rows (brute force)."""
    import itertools
    import warnings

    vals = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for perm in itertools.permutations(range(len(y))):
            i = list(perm)
            vals.append((aurc(y[i], p[i]), selective_risk(y[i], p[i], coverage=0.5)))
    return np.mean(vals, axis=0)


def test_tied_confidences_warn_with_the_value_averaged_over_every_order():
    from medaudit.exceptions import TiedScoresWarning

    # 0.3 and 0.7 tie in confidence (0.7); the tie holds an error and a correct decision
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    p = np.array([0.7, 0.7, 0.3, 0.9, 0.2, 0.6])
    want_aurc, want_risk = _every_order(y, p)
    with pytest.warns(TiedScoresWarning, match="depends on the row order") as rec:
        got = aurc(y, p)
    assert rec[0].message.individual == got
    assert rec[0].message.pooled == pytest.approx(want_aurc, abs=1e-12)
    with pytest.warns(TiedScoresWarning, match="selective_risk") as rec:
        selective_risk(y, p, coverage=0.5)
    assert rec[0].message.pooled == pytest.approx(want_risk, abs=1e-12)


def test_no_tie_warning_where_every_order_agrees():
    import warnings

    rng = np.random.default_rng(5)
    y = (rng.random(200) < 0.4).astype(float)
    p = rng.random(200)  # untied
    q = np.where(y == 1, 0.9, 0.1)  # tied, but every tie is all correct
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aurc(y, p), selective_risk(y, p, coverage=0.7), aurc(y, q), selective_risk(y, q, coverage=0.3)


def test_ties_averaged_is_the_mean_over_every_order_and_does_not_warn():
    import warnings

    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    p = np.array([0.7, 0.7, 0.3, 0.9, 0.2, 0.6])
    want_aurc, want_risk = _every_order(y, p)  # brute force over all 720 row orders
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got_aurc = aurc(y, p, ties="averaged")
        got_risk = selective_risk(y, p, coverage=0.5, ties="averaged")
    assert got_aurc == pytest.approx(want_aurc, abs=1e-12)
    assert got_risk == pytest.approx(want_risk, abs=1e-12)
    # and no row order moves it
    rng = np.random.default_rng(11)
    for _ in range(20):
        i = rng.permutation(y.size)
        assert aurc(y[i], p[i], ties="averaged") == pytest.approx(got_aurc, abs=1e-15)


def test_ties_averaged_equals_input_order_where_ties_do_not_matter():
    rng = np.random.default_rng(12)
    y = (rng.random(300) < 0.3).astype(float)
    p = rng.random(300)
    assert aurc(y, p, ties="averaged") == aurc(y, p)
    assert selective_risk(y, p, coverage=0.6, ties="averaged") == selective_risk(y, p, coverage=0.6)


def test_ties_option_is_checked():
    from medaudit.exceptions import MedauditError

    with pytest.raises(MedauditError, match="ties"):
        aurc([1, 0], [0.6, 0.2], ties="pooled")
    with pytest.raises(MedauditError, match="ties"):
        selective_risk([1, 0], [0.6, 0.2], coverage=0.5, ties="stable")
