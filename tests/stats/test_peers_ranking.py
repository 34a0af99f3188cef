"""Peer witness (scikit-learn 1.9): AUROC, average precision, ROC/PR curves and McClish's
partial AUC on the cases scikit-learn's own test suite uses (sklearn/metrics/tests/
test_ranking.py: toy curves, duplicate and tied values, constant scores, partial AUC) and on
edges the other stats tests do not reach: tiny and on-vertex ``max_fpr``, perfect /
inverted / constant scorers, fractional weights that empty a class, large n with ties.

Reference values are computed live by scikit-learn on the same inputs.  Where medaudit
differs by a documented convention (AP without positives is nan; tied AP with the
default ``ties="individual"``; no (recall 0, precision 1) point on the PR curve), the
documented relation is tested instead.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn.metrics as skm

from medaudit.exceptions import TiedScoresWarning, UndefinedMetricWarning
from medaudit.stats import (
    average_precision,
    partial_roc_auc,
    precision_recall_curve,
    roc_auc,
    roc_curve,
)

# --------------------------------------------------------------------------- toy cases
# sklearn test_ranking.py::test_roc_curve_toydata / test_auc_score_non_binary_class-style
TOY = [
    ([0, 1], [0, 1], 1.0),
    ([0, 1], [1, 0], 0.0),
    ([1, 0], [1, 1], 0.5),
    ([1, 0], [1, 0], 1.0),
    ([1, 0], [0.5, 0.5], 0.5),
    ([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.75),
]


@pytest.mark.parametrize(("y", "s", "want"), TOY)
def test_toy_auc_and_curve_are_sklearns(y, s, want):
    assert roc_auc(y, s) == want == skm.roc_auc_score(y, s)
    c = roc_curve(y, s)
    fpr, tpr, thr = skm.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_array_equal(c.thresholds, thr)  # +inf first, as scikit-learn >= 1.3
    np.testing.assert_array_equal(c.fpr, fpr)
    np.testing.assert_array_equal(c.tpr, tpr)


@pytest.mark.parametrize(
    ("y", "s"),
    [
        ([0, 0, 0, 0, 1, 1], [0.0, 0.2, 0.5, 0.6, 0.7, 1.0]),
        ([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1], [0.0, 0.1, 0.6, 0.6, 0.7, 0.8, 0.9, 0.6, 0.7, 0.8,
                                                  0.9, 0.9]),
    ],
)
def test_drop_intermediate_thresholds_are_sklearns(y, s):
    # sklearn test_roc_curve_drop_intermediate: collinear points are dropped, +inf kept
    c = roc_curve(y, s, drop_intermediate=True)
    fpr, tpr, thr = skm.roc_curve(y, s, drop_intermediate=True)
    np.testing.assert_array_equal(c.thresholds, thr)
    np.testing.assert_array_equal(c.fpr, fpr)
    np.testing.assert_array_equal(c.tpr, tpr)
    # and the dropped curve has the same area
    assert np.trapezoid(c.tpr, c.fpr) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-15)


def test_ap_duplicate_values_perfect_ranking_is_one():
    # sklearn test_average_precision_score_duplicate_values: ties only within a class
    y = [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    s = [0, 0.1, 0.1, 0.4, 0.5, 0.6, 0.6, 0.9, 0.9, 1, 1]
    assert skm.average_precision_score(y, s) == 1.0
    assert average_precision(y, s, ties="pooled") == 1.0
    assert average_precision(y, s) == 1.0  # no tie crosses the classes: the conventions agree


def test_ap_tied_values_across_classes():
    # sklearn test_average_precision_score_tied_values: a 0 tied with a 1 is not perfect
    y, s = [0, 1, 1], [0.5, 0.5, 0.6]
    want = skm.average_precision_score(y, s)
    assert want != 1.0
    assert average_precision(y, s, ties="pooled") == pytest.approx(want, abs=1e-15)
    # documented convention (conventions.md, T8): individual ranks in input order; here the
    # negative comes first, so the tie costs the positive a rank
    assert average_precision(y, s) == pytest.approx((1 + 2 / 3) / 2, abs=1e-15)


def test_ap_constant_scores_pooled_is_prevalence_individual_depends_on_order():
    # sklearn test_average_precision_constant_values: constant score -> AP = prevalence
    y = np.zeros(100, dtype=int)
    y[::4] = 1
    s = np.ones(100)
    assert skm.average_precision_score(y, s) == 0.25
    assert average_precision(y, s, ties="pooled") == 0.25
    # individual ranks: the documented row-order dependence, with the warning carrying both
    with pytest.warns(TiedScoresWarning) as rec:
        got = average_precision(y, s)
    assert rec[0].message.pooled == pytest.approx(0.25, abs=1e-15)
    assert rec[0].message.individual == pytest.approx(got, abs=1e-15)
    order = np.argsort(-y, kind="stable")  # positives first -> 1.0
    with pytest.warns(TiedScoresWarning):
        assert average_precision(y[order], s) == 1.0


# ---------------------------------------------------------------- AP without positives
@pytest.mark.parametrize("how", ["no_positive", "zero_weight_positives"])
def test_ap_without_positives_is_nan_where_sklearn_says_zero(how):
    """Documented convention (average_precision docstring): nan with a warning when there
    are no positives; scikit-learn warns and returns 0.0."""
    y = np.array([0, 1, 0, 1, 0])
    s = np.array([0.1, 0.4, 0.35, 0.8, 0.2])
    if how == "no_positive":
        y = np.zeros(5, dtype=int)
        w = None
    else:
        w = np.where(y == 1, 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert skm.average_precision_score(y, s, sample_weight=w) == 0.0
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(average_precision(y, s, ties="pooled", sample_weight=w))


# ------------------------------------------------------- McClish partial AUC (max_fpr)
def _data(seed, n=40, decimals=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=n) + 0.8 * y, decimals)
    return y, s, rng.random(n) * 3


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_fpr", [1e-6, 1e-3, 0.05, 0.25, 0.5, 0.999])
def test_mcclish_partial_auc_is_sklearn_max_fpr(seed, max_fpr):
    y, s, w = _data(seed)
    assert partial_roc_auc(y, s, bounds=(1 - max_fpr, 1.0), correct=True) == pytest.approx(
        skm.roc_auc_score(y, s, max_fpr=max_fpr), abs=1e-12)
    got = partial_roc_auc(y, s, bounds=(1 - max_fpr, 1.0), correct=True, sample_weight=w)
    assert got == pytest.approx(skm.roc_auc_score(y, s, max_fpr=max_fpr, sample_weight=w),
                                abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_mcclish_at_a_vertex_fpr(seed):
    # max_fpr exactly on an ROC vertex: no interpolation inside the last segment
    y, s, _ = _data(seed)
    fpr = np.unique(skm.roc_curve(y, s)[0])
    for mf in fpr[(fpr > 0) & (fpr < 1)]:
        assert partial_roc_auc(y, s, bounds=(1 - mf, 1.0), correct=True) == pytest.approx(
            skm.roc_auc_score(y, s, max_fpr=mf), abs=1e-12)


@pytest.mark.parametrize("kind", ["perfect", "inverted", "constant"])
@pytest.mark.parametrize("max_fpr", [0.1, 0.2, 0.7])
def test_mcclish_on_degenerate_scorers(kind, max_fpr):
    y = np.r_[np.zeros(10), np.ones(10)].astype(int)
    s = {"perfect": np.arange(20.0), "inverted": -np.arange(20.0), "constant": np.ones(20)}[kind]
    want = skm.roc_auc_score(y, s, max_fpr=max_fpr)
    assert partial_roc_auc(y, s, bounds=(1 - max_fpr, 1.0), correct=True) == pytest.approx(
        want, abs=1e-12)


def test_mcclish_full_range_is_the_auc():
    y, s, w = _data(11)
    assert partial_roc_auc(y, s, bounds=(0.0, 1.0), correct=False, sample_weight=w) == \
        pytest.approx(skm.roc_auc_score(y, s, sample_weight=w), abs=1e-12)


# ------------------------------------------------------------- weights and large n
@pytest.mark.parametrize("seed", range(5))
def test_fractional_weights_that_drop_rows(seed):
    """Zero weights remove rows (their scores are no thresholds) under fractional weights."""
    y, s, w = _data(seed, n=60)
    w[::3] = 0.0
    assert roc_auc(y, s, sample_weight=w) == pytest.approx(
        skm.roc_auc_score(y, s, sample_weight=w), abs=1e-13)
    assert average_precision(y, s, ties="pooled", sample_weight=w) == pytest.approx(
        skm.average_precision_score(y, s, sample_weight=w), abs=1e-13)
    c = roc_curve(y, s, sample_weight=w)
    fpr, tpr, thr = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    np.testing.assert_array_equal(c.thresholds, thr)
    np.testing.assert_allclose(c.tpr, tpr, rtol=1e-13, atol=1e-15)


def test_large_n_with_heavy_ties():
    rng = np.random.default_rng(2026)
    n = 200_000
    y = (rng.random(n) < 0.1).astype(int)
    s = np.round(rng.normal(size=n) + 0.7 * y, 2)  # ~800 distinct values
    w = rng.random(n)
    assert roc_auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    assert roc_auc(y, s, sample_weight=w) == pytest.approx(
        skm.roc_auc_score(y, s, sample_weight=w), abs=1e-12)
    assert average_precision(y, s, ties="pooled") == pytest.approx(
        skm.average_precision_score(y, s), abs=1e-12)
    assert partial_roc_auc(y, s, bounds=(0.9, 1.0), correct=True) == pytest.approx(
        skm.roc_auc_score(y, s, max_fpr=0.1), abs=1e-12)


# -------------------------------------------------------------------------- PR curve
@pytest.mark.parametrize("seed", range(5))
def test_pr_curve_is_sklearns_without_the_appended_point(seed):
    """Documented convention (conventions.md, 'Precision-recall curves'): medaudit lists the
    observed thresholds only; scikit-learn appends (recall 0, precision 1), threshold-less."""
    y, s, w = _data(seed, n=30)
    pr = precision_recall_curve(y, s, sample_weight=w)
    p, r, t = skm.precision_recall_curve(y, s, sample_weight=w)
    assert (p[-1], r[-1]) == (1.0, 0.0) and len(t) == len(p) - 1
    np.testing.assert_array_equal(pr.thresholds, t[::-1])
    np.testing.assert_allclose(pr.precision, p[:-1][::-1], rtol=1e-13)
    np.testing.assert_allclose(pr.recall, r[:-1][::-1], rtol=1e-13)
    # sklearn's AP is the step sum over these same points
    ap = float(np.sum(np.diff(np.r_[0.0, pr.recall]) * pr.precision))
    assert ap == pytest.approx(skm.average_precision_score(y, s, sample_weight=w), abs=1e-13)
