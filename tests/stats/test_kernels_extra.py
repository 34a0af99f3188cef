"""Witnesses for medaudit.stats._kernels_extra, the weighted kernels behind partial AUC, the
sensitivity-at-specificity grid and the rates at a threshold.

Each kernel is checked on replicate rows of integer counts (a bootstrap batch) and of
fractional weights against scikit-learn with ``sample_weight`` or a slow per-row
implementation written from the definition here, never against medaudit's own output.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score, roc_curve

from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX


def _sample(seed, n=40, grid=None):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(float)
    y[:2] = (1.0, 0.0)  # both classes present
    s = rng.normal(size=n) + y
    if grid:
        s = np.round(s * grid) / grid  # heavy ties, some across the classes
    return y, s


def _rows(seed, n, b=6, fractional=False):
    rng = np.random.default_rng(seed)
    if fractional:
        return rng.random((b, n)) * 3.0
    return rng.multinomial(n, np.full(n, 1.0 / n), size=b).astype(float)


def _inputs(y, s, w):
    r = K.rank(y, s)
    wp, wn = KX.class_totals(w, y)
    return KX.cols_from_items(w, r), r, wp, wn


def _slow_roc(y, s, w):
    """(fpr, tpr) at every distinct threshold from scikit-learn, with the origin."""
    fpr, tpr, _ = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    return fpr, tpr


def _slow_se_at_fpr(fpr, tpr, t):
    """Sensitivity on the ROC curve at FPR ``t``: the top of a vertical segment at ``t``,
    else linear interpolation inside the segment holding it (pROC's ``ci.se`` reading)."""
    at = np.isclose(fpr, t, rtol=0, atol=1e-12)
    if at.any():
        return float(tpr[at].max())
    j = int(np.searchsorted(fpr, t, side="right"))
    f0, f1, t0, t1 = fpr[j - 1], fpr[j], tpr[j - 1], tpr[j]
    return float(t0 + (t - f0) * (t1 - t0) / (f1 - f0))


@pytest.mark.parametrize("grid", [None, 4])
@pytest.mark.parametrize("fractional", [False, True])
def test_full_range_partial_area_is_the_auroc_of_scikit_learn(grid, fractional):
    y, s = _sample(1, grid=grid)
    w = _rows(2, y.size, fractional=fractional)
    cols, r, wp, wn = _inputs(y, s, w)
    area = KX.pauc_fpr(cols, r, wp, wn, 0.0, 1.0)
    want = [roc_auc_score(y, s, sample_weight=row) for row in w]
    np.testing.assert_allclose(area, want, rtol=1e-12)
    # over the whole sensitivity range, on the dual ranking, the same area
    dual = KX.pauc(cols, KX.cols_from_items(w, KX.dual(r)), r, wp, wn, focus="se", lo=0.0, hi=1.0,
                   correct=False)
    np.testing.assert_allclose(dual, want, rtol=1e-12)


@pytest.mark.parametrize("max_fpr", [0.1, 0.25, 0.5])
@pytest.mark.parametrize("grid", [None, 4])
def test_mcclish_partial_area_is_scikit_learns_max_fpr(max_fpr, grid):
    """scikit-learn's ``roc_auc_score(max_fpr=f)`` is the McClish-standardised area over FPR
    [0, f], i.e. over specificity [1 - f, 1]."""
    y, s = _sample(3, n=60, grid=grid)
    w = _rows(4, y.size)
    cols, r, wp, wn = _inputs(y, s, w)
    got = KX.pauc(cols, None, r, wp, wn, focus="sp", lo=1.0 - max_fpr, hi=1.0, correct=True)
    want = [roc_auc_score(y, s, sample_weight=row, max_fpr=max_fpr) for row in w]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_mcclish_by_hand():
    # chance diagonal over specificity [0.8, 1] (FPR [0, 0.2]): area 0.02 -> 0.5; the
    # perfect curve: area 0.2 -> 1
    np.testing.assert_allclose(KX.mcclish(np.array([0.02, 0.2]), 0.8, 1.0), [0.5, 1.0], rtol=1e-12)


@pytest.mark.parametrize("grid", [None, 3])
def test_sensitivity_grid_matches_the_slow_reading_of_the_curve(grid):
    y, s = _sample(5, n=50, grid=grid)
    w = _rows(6, y.size)
    spec = np.array([0.0, 0.3, 0.5, 0.8, 0.9, 0.95, 1.0])
    cols, r, wp, wn = _inputs(y, s, w)
    got = KX.se_at_sp_grid(cols, r, wp, wn, spec)
    for b, row in enumerate(w):
        fpr, tpr = _slow_roc(y, s, row)
        want = [_slow_se_at_fpr(fpr, tpr, 1.0 - x) for x in spec]
        np.testing.assert_allclose(got[b], want, rtol=1e-12, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), tau=st.floats(-2.0, 3.0))
def test_threshold_cells_are_weighted_counts_of_the_rule(seed, tau):
    y, s = _sample(seed, n=25, grid=2)
    w = _rows(seed + 1, y.size, b=3, fractional=seed % 2 == 1)
    tp, fp, fn, tn = KX.threshold_counts(w, y, s, tau)
    flag = s >= tau
    for b, row in enumerate(w):
        want = [row[(y == 1) & flag].sum(), row[(y == 0) & flag].sum(),
                row[(y == 1) & ~flag].sum(), row[(y == 0) & ~flag].sum()]
        np.testing.assert_allclose([tp[b], fp[b], fn[b], tn[b]], want, rtol=1e-12, atol=0)
    assert min(tp.min(), fp.min(), fn.min(), tn.min()) >= 0.0  # never a negative residue


def test_rates_by_hand():
    r = KX.rates(np.array([8.0]), np.array([2.0]), np.array([2.0]), np.array([18.0]))
    assert r["sensitivity"][0] == 0.8 and r["specificity"][0] == 0.9
    assert r["ppv"][0] == 0.8 and r["npv"][0] == 0.9
    assert r["lr_positive"][0] == pytest.approx(0.8 / 0.1, rel=1e-12)
    assert r["lr_negative"][0] == pytest.approx(0.2 / 0.9, rel=1e-12)
    assert r["f1"][0] == pytest.approx(16 / 20, rel=1e-12)
    assert r["accuracy"][0] == pytest.approx(26 / 30, rel=1e-12)
    assert r["balanced_accuracy"][0] == pytest.approx(0.85, rel=1e-12)
    # Bayes' rule at prevalence 0.5: PPV = 0.8 / (0.8 + 0.1), NPV = 0.9 / (0.9 + 0.2)
    b = KX.rates(np.array([8.0]), np.array([2.0]), np.array([2.0]), np.array([18.0]), prevalence=0.5)
    assert b["ppv"][0] == pytest.approx(0.8 / 0.9, rel=1e-12)
    assert b["npv"][0] == pytest.approx(0.9 / 1.1, rel=1e-12)
    # an empty denominator is undefined, not 0 or 1
    e = KX.rates(np.array([0.0]), np.array([0.0]), np.array([3.0]), np.array([5.0]))
    assert np.isnan(e["ppv"][0]) and np.isnan(e["lr_positive"][0]) and e["sensitivity"][0] == 0.0


@pytest.mark.parametrize(("value", "want"), [("0.9:1", (0.9, 1.0)), ((1.0, 0.9), (0.9, 1.0)),
                                             ([0, 0.2], (0.0, 0.2))])
def test_parse_range_reads_both_spellings(value, want):
    assert KX.parse_range(value, name="pauc sp") == want


@pytest.mark.parametrize("value", ["0.9", "0.9:1:2", "a:b", (0.5, 0.5), (-0.1, 0.5), (0.5, 1.5),
                                   (0.1, float("nan")), None])
def test_parse_range_refuses_with_the_option_name(value):
    with pytest.raises(MedauditError, match=r"^pauc sp must be a range 'lo:hi'"):
        KX.parse_range(value, name="pauc sp")
