"""Peer witness (scikit-learn 1.9): the rates at a threshold (``confusion_matrix``,
``recall_score``, ``precision_score``, ``f1_score``, ``accuracy_score``,
``balanced_accuracy_score``, ``class_likelihood_ratios``) at the edges: thresholds that
call everything or nothing positive, fractional ``sample_weight``.

scikit-learn counts each cell directly (a weighted bincount), so an empty cell is exactly
0 and a rate over it is undefined.  medaudit's ``threshold_counts`` forms ``fn`` and ``tn``
by subtraction from the totals, which with fractional weights leaves a rounding residue
(+-1e-15) in a cell that is empty: a negative count, a negative specificity, or an NPV of
1.0 and LR- of 0 where both are undefined (fixed: each cell is its own sum; tested below).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sklearn.metrics as skm

from medaudit.stats import threshold_metrics


def _sk(y, s, tau, w):
    pred = (s >= tau).astype(int)
    tn, fp, fn, tp = skm.confusion_matrix(y, pred, labels=[0, 1], sample_weight=w).ravel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lrp, lrn = skm.class_likelihood_ratios(y, pred, labels=[0, 1], sample_weight=w,
                                               replace_undefined_by=np.nan)
        kw = dict(sample_weight=w, zero_division=np.nan)
        return dict(
            tp=tp, fp=fp, fn=fn, tn=tn,
            sensitivity=skm.recall_score(y, pred, **kw),
            specificity=skm.recall_score(1 - y, 1 - pred, **kw),
            ppv=skm.precision_score(y, pred, **kw),
            npv=skm.precision_score(1 - y, 1 - pred, **kw),
            f1=skm.f1_score(y, pred, **kw),
            accuracy=skm.accuracy_score(y, pred, sample_weight=w),
            balanced_accuracy=skm.balanced_accuracy_score(y, pred, sample_weight=w),
            lr_positive=lrp, lr_negative=lrn)


def _ours(y, s, tau, w):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = threshold_metrics(y, s, threshold=tau, sample_weight=w)
    return {k: getattr(m, k) for k in _sk(y, s, tau, w)}


def _same(a, b, atol):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= atol


def _data(seed, n=40):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    return y, np.round(rng.random(n), 1), rng.random(n)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("where", ["inside", "above_max"])
def test_rates_match_sklearn_with_fractional_weights(seed, where):
    y, s, w = _data(seed)
    tau = 0.5 if where == "inside" else 1.1
    ours, sk = _ours(y, s, tau, w), _sk(y, s, tau, w)
    for k in sk:
        assert _same(ours[k], sk[k], 1e-12), (k, ours[k], sk[k])


@pytest.mark.parametrize("seed", range(8))
def test_rates_match_sklearn_unweighted_everything_positive(seed):
    y, s, _ = _data(seed)
    ours, sk = _ours(y, s, float(s.min()), None), _sk(y, s, float(s.min()), None)
    for k in sk:
        assert _same(ours[k], sk[k], 0.0), (k, ours[k], sk[k])


# Found by this witness: y, s, w as below, threshold at or below the lowest score.
# scikit-learn: tn = fn = 0, specificity 0, npv and LR- undefined (nan).
# medaudit:     tn = 8.9e-16, specificity 2.3e-16, npv = 1.0, LR- = 0.0.
_Y = [0, 1, 0, 1, 0, 0, 1, 0, 0, 0]
_S = [0.328, 0.265, 0.477, 0.405, 0.958, 0.899, 0.723, 0.894, 0.252, 0.262]
_W = [0.1526007149307348, 0.9621808195115411, 0.5635771881813422, 0.9199261482297884,
      0.9540854182970347, 0.602239859931887, 0.9138974428219186, 0.42012053428746254,
      0.29700731916110046, 0.811348673913899]


def test_empty_cells_are_exactly_zero_with_fractional_weights():
    y, s, w = np.array(_Y), np.array(_S), np.array(_W)
    ours, sk = _ours(y, s, 0.0, w), _sk(y, s, 0.0, w)
    assert sk["tn"] == 0.0 and sk["fn"] == 0.0 and math.isnan(sk["npv"])
    assert ours["tn"] == 0.0 and ours["fn"] == 0.0
    assert ours["specificity"] == 0.0
    assert math.isnan(ours["npv"]) and math.isnan(ours["lr_negative"])


def test_no_cell_or_rate_is_negative_with_fractional_weights():
    bad = []
    for seed in range(30):
        y, s, w = _data(seed)
        ours = _ours(y, s, float(s.min()), w)
        bad += [(seed, k, v) for k, v in ours.items() if not math.isnan(v) and v < 0]
    assert not bad, bad[:5]


# ------------------------------------------------ rates stay in [0, 1] under fractional weights
# scikit-learn's roc_curve divides the cumulative weights by their own last value, so the
# curve ends at exactly (1, 1); medaudit's roc_curve does the same (first test).  The
# cut-point and curve-reading kernels divide by the class totals (w @ y), summed in another
# order, and can report a sensitivity of 1.0000000000000002.
_Y4 = [0, 1, 1, 1]


@pytest.mark.parametrize("seed", range(20))
def test_roc_curve_ends_at_exactly_one_as_sklearn(seed):
    rng = np.random.default_rng(seed)
    y, s, w = rng.integers(0, 2, 25), rng.random(25), rng.random(25)
    y[:2] = [0, 1]
    from medaudit.stats import roc_curve

    c = roc_curve(y, s, sample_weight=w)
    fpr, tpr, _ = skm.roc_curve(y, s, sample_weight=w)
    assert (c.fpr[-1], c.tpr[-1]) == (fpr[-1], tpr[-1]) == (1.0, 1.0)


def test_sensitivity_at_specificity_zero_is_at_most_one():
    from medaudit.stats import sensitivity_at_specificities

    s, w = [0.91, 0.83, 0.69, 0.37], [0.33, 0.76, 0.67, 0.03]
    assert skm.roc_curve(_Y4, s, sample_weight=w)[1].max() == 1.0
    assert sensitivity_at_specificities(_Y4, s, [0.0], sample_weight=w)[0] <= 1.0


def test_best_threshold_sensitivity_is_at_most_one():
    from medaudit.stats import best_threshold

    s, w = [0.41, 0.59, 0.79, 0.57], [0.16, 0.84, 0.8200000000000001, 0.73]
    cp = best_threshold(_Y4, s, sample_weight=w)
    fpr, tpr, thr = skm.roc_curve(_Y4, s, sample_weight=w, drop_intermediate=False)
    assert tpr[list(thr).index(cp.threshold)] == 1.0
    assert cp.sensitivity <= 1.0
