"""Peer witness (scikit-learn 1.9): Brier score, log loss and the reliability curve
(``calibration_curve``) on edges the other calibration tests skip: one-class inputs,
fractional and zero weights, probabilities of exactly 0 and 1, ties that collapse quantile
bins, and scores sitting exactly on a uniform bin edge.

Documented conventions tested as relations, not as defects:

* ``log_loss`` clips with a declared ``eps`` (default 1e-15); scikit-learn >= 1.5 clips
  with the float type's machine epsilon.  With ``eps=np.finfo(float).eps`` the two agree.
* Equal-width bins use M0.7's rule ``min(floor(n s), n - 1)`` (conventions.md, 'Binned
  calibration'): a score on an inner edge belongs to the bin *above* it, whereas
  scikit-learn's ``np.searchsorted(edges, s)`` puts it in the bin below.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn.metrics as skm
from sklearn.calibration import calibration_curve

from medaudit.stats import brier_score, log_loss, reliability_curve


def _data(seed, n=80):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    y = (rng.random(n) < p).astype(int)
    return y, p, rng.random(n) * 2


@pytest.mark.parametrize("seed", range(4))
def test_brier_and_log_loss_one_class_and_zero_weights(seed):
    y, p, w = _data(seed)
    w[::4] = 0.0
    for yy in (y, np.ones_like(y), np.zeros_like(y)):
        assert brier_score(yy, p, sample_weight=w) == pytest.approx(
            skm.brier_score_loss(yy, p, sample_weight=w), abs=1e-14)
        assert log_loss(yy, p, sample_weight=w) == pytest.approx(
            skm.log_loss(yy, p, sample_weight=w, labels=[0, 1]), rel=1e-12)


def test_log_loss_at_exact_zero_and_one_is_sklearns_with_machine_epsilon():
    y = np.array([1, 0, 1, 1, 0, 0, 1])
    p = np.array([0.0, 1.0, 0.3, 1.0, 0.0, 0.5, 1e-300])
    eps = np.finfo(np.float64).eps
    assert log_loss(y, p, eps=eps) == pytest.approx(skm.log_loss(y, p), rel=1e-13)
    # the documented default clips harder (1e-15): the confident errors cost less
    assert log_loss(y, p) < skm.log_loss(y, p)
    q = np.clip(p, 1e-15, 1 - 1e-15)
    want = -np.mean(y * np.log(q) + (1 - y) * np.log1p(-q))
    assert log_loss(y, p) == pytest.approx(want, rel=1e-12)


def test_brier_large_n_weighted():
    rng = np.random.default_rng(5)
    n = 300_000
    p = rng.random(n)
    y = (rng.random(n) < p ** 1.3).astype(int)
    w = rng.gamma(0.5, size=n)
    assert brier_score(y, p, sample_weight=w) == pytest.approx(
        skm.brier_score_loss(y, p, sample_weight=w), rel=1e-12)


def _curve(y, p, strategy):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = reliability_curve(y, p, n_bins=10, strategy=strategy, n_resamples=5, rng=0)
    keep = np.asarray(rc.count) > 0
    return np.asarray(rc.fraction_positive)[keep], np.asarray(rc.mean_score)[keep]


@pytest.mark.parametrize("case", ["rounded", "saturated", "constant"])
def test_quantile_reliability_curve_with_ties_is_sklearns(case):
    rng = np.random.default_rng(7)
    p = {"rounded": np.round(rng.random(200), 1),
         "saturated": np.r_[np.zeros(50), np.ones(50), rng.random(100)],
         "constant": np.full(100, 0.3)}[case]
    y = (rng.random(p.size) < p).astype(int)
    frac, mean = _curve(y, p, "quantile")
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="quantile")
    np.testing.assert_allclose(frac, prob_true, rtol=1e-12)
    np.testing.assert_allclose(mean, prob_pred, rtol=1e-12)


def test_uniform_bins_on_edges_follow_the_floor_rule():
    rng = np.random.default_rng(8)
    p = np.round(rng.random(300), 1)  # every score k/10 sits on an edge
    y = (rng.random(p.size) < p).astype(int)
    frac, mean = _curve(y, p, "uniform")
    # scikit-learn puts an edge value in the bin below, so the curves differ here ...
    prob_true, _ = calibration_curve(y, p, n_bins=10, strategy="uniform")
    assert prob_true.size != frac.size or not np.allclose(prob_true, frac)
    # ... and agree once every edge value is moved just above its edge (M0.7's bin)
    shifted = np.minimum(p + 1e-9, 1.0)
    prob_true, prob_pred = calibration_curve(y, shifted, n_bins=10, strategy="uniform")
    np.testing.assert_allclose(frac, prob_true, rtol=1e-12)
    np.testing.assert_allclose(mean, prob_pred, rtol=0, atol=2e-9)
    # the rule itself
    k = np.minimum(np.floor(10 * p), 9).astype(int)
    want = [y[k == b].mean() for b in range(10) if np.any(k == b)]
    np.testing.assert_allclose(frac, want, rtol=1e-12)


def test_a_probability_on_an_inner_edge_is_binned_apart_from_sklearns_calibration_curve():
    """Documented in the binning parameter: scikit-learn's calibration_curve closes its bins
    on the right (searchsorted over the inner edges), so 0.5 of 10 bins falls in (0.4, 0.5];
    medaudit's two rules put it in [0.5, 0.6).  Witness: the ECE on sklearn's own bins."""
    import numpy as np
    from sklearn.calibration import calibration_curve

    from medaudit.stats import ece

    y, p = np.array([0, 1, 1]), np.array([0.5, 0.45, 0.45])
    frac, mean = calibration_curve(y, p, n_bins=10, strategy="uniform")
    edges = np.linspace(0.0, 1.0, 11)
    ids = np.searchsorted(edges[1:-1], p)  # sklearn's binning (calibration_curve's source)
    counts = np.bincount(ids, minlength=10)
    sk = sum(counts[b] / p.size * abs(p[ids == b].mean() - y[ids == b].mean())
             for b in range(10) if counts[b])
    assert frac.size == 1 and sk == pytest.approx(0.2, abs=1e-15)  # one bin holds all three
    for binning in ("floor", "linspace"):
        assert ece(y, p, n_bins=10, binning=binning) == pytest.approx(0.5333333333333333, abs=1e-15)
    # continuous probabilities (none on an edge) agree
    rng = np.random.default_rng(4)
    y, p = (rng.random(400) < 0.4).astype(int), rng.random(400)
    ids = np.searchsorted(edges[1:-1], p)
    counts = np.bincount(ids, minlength=10)
    sk = sum(counts[b] / p.size * abs(p[ids == b].mean() - y[ids == b].mean())
             for b in range(10) if counts[b])
    assert ece(y, p, n_bins=10) == pytest.approx(sk, abs=1e-12)
