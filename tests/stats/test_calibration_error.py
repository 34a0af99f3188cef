"""Equal-mass ECE, debiased l2 calibration error (paper 002 M2.5) and reliability curves.

Witnesses: the reference package of Kumar et al. (``uncertainty-calibration`` 0.1.4,
module ``calibration``) for the bins and both estimators; scikit-learn's
``calibration_curve``; hand-worked bins; engine replicates (which re-bin every
resample) against the point functions on materialised resamples; Wilson intervals per bin.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from medaudit.exceptions import MedauditError
from medaudit.stats import (
    bootstrap_metrics,
    debiased_l2_calibration_error,
    ece_equal_mass,
    equal_mass_bins,
    proportion_ci,
    reliability_curve,
)
from medaudit.stats.designs import make_plan
from tests.stats import _oracles_peers as O

kumar = pytest.importorskip("calibration")  # uncertainty-calibration, a test-only witness


def _case(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(12, 250))
    p = rng.random(n)
    if seed % 3 == 0:
        p = np.round(p, 1)  # discrete outputs: Kumar's "auto" picks one bin per value
    elif seed % 3 == 1:
        p = np.round(p, 2)
    y = (rng.random(n) < p).astype(int)
    y[:2] = [0, 1]
    return y, p


@pytest.mark.parametrize("seed", range(45))
def test_matches_the_reference_package(seed):
    y, p = _case(seed)
    for nb in (5, 10, 15):
        np.testing.assert_array_equal(equal_mass_bins(p, n_bins=nb), kumar.get_equal_bins(list(p), nb))
        want = kumar.lower_bound_scaling_ce(p, y, p=1, debias=False, num_bins=nb,
                                            binning_scheme=kumar.get_equal_bins)
        assert ece_equal_mass(y, p, n_bins=nb) == pytest.approx(want, rel=1e-12, abs=1e-15)
        want = kumar.lower_bound_scaling_ce(p, y, p=2, debias=True, num_bins=nb,
                                            binning_scheme=kumar.get_equal_bins)
        got = debiased_l2_calibration_error(y, p, n_bins=nb, binning="equal_mass")
        assert got == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert debiased_l2_calibration_error(y, p) == pytest.approx(
        kumar.get_calibration_error(p, y), rel=1e-12, abs=1e-15)
    assert debiased_l2_calibration_error(y, p, binning="discrete") == pytest.approx(
        kumar.get_binning_ce(p, y), rel=1e-12, abs=1e-15)


def test_hand_worked():
    # two equal-mass bins {.1, .3} and {.6, .8}: |0.4 - 0| + |1.4 - 2| over 4 = 0.25
    assert ece_equal_mass([0, 0, 1, 1], [0.1, 0.3, 0.6, 0.8], n_bins=2) == 0.25
    assert equal_mass_bins([0.1, 0.3, 0.6, 0.8], n_bins=2).tolist() == [(0.3 + 0.6) / 2, 1.0]
    # discrete bins 0.1 (labels 1,1,1,0: mean .75) and 0.9 (0,0,0,1: mean .25): each
    # (0.65)^2 - 0.1875/3 = 0.36, weighted 1/2 each -> sqrt(0.36) = 0.6
    y, p = [1, 1, 1, 0, 0, 0, 0, 1], [0.1] * 4 + [0.9] * 4
    assert debiased_l2_calibration_error(y, p, binning="discrete") == pytest.approx(0.6, rel=1e-12)
    # (0.2 - 0.5)^2 - 0.25/3 and (0.8 - 0.75)^2 - 0.1875/3 sum below 0: clipped to 0
    y, p = [0, 0, 1, 1, 0, 1, 1, 1], [0.2] * 4 + [0.8] * 4
    assert debiased_l2_calibration_error(y, p, binning="discrete") == 0.0
    # perfectly calibrated in expectation can go below zero before the clip: reported as 0
    assert debiased_l2_calibration_error([0, 1, 0, 1], [0.5] * 4, binning="discrete") == 0.0


@pytest.mark.parametrize("metric, opts, point", [
    ("ece_equal_mass", {"n_bins": 10}, lambda y, p: ece_equal_mass(y, p, n_bins=10)),
    ("debiased_l2_ce", {}, lambda y, p: debiased_l2_calibration_error(y, p)),
    ("debiased_l2_ce", {"binning": "equal_mass", "n_bins": 8},
     lambda y, p: debiased_l2_calibration_error(y, p, n_bins=8, binning="equal_mass")),
])
@pytest.mark.parametrize("discrete", [False, True])
def test_engine_replicates_rebin_each_materialised_resample(metric, opts, point, discrete):
    rng = np.random.default_rng(12)
    n = 90
    p = rng.random(n)
    if discrete:
        p = np.round(p, 1)
    y = (rng.random(n) < p).astype(float)
    res = bootstrap_metrics(y, p, metrics=[(metric, opts)], n_resamples=30, rng=5, batch=7)
    r = next(iter(res.values()))
    draws = np.concatenate(list(make_plan("ordinary", y).batches(30, np.random.default_rng(5), 7)))
    for b in range(30):
        yb, pb = O.materialise(y, p, draws[b])
        if discrete and metric == "debiased_l2_ce" and opts.get("binning", "auto") == "auto":
            # "auto" is decided once on the full sample (discrete here) and kept
            want = debiased_l2_calibration_error(yb, pb, binning="discrete")
        else:
            want = point(yb, pb)
        assert r.replicates[b] == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert r.estimate == pytest.approx(point(y, p), rel=1e-15)


@pytest.mark.parametrize("strategy", ["quantile", "uniform"])
@pytest.mark.parametrize("seed", range(15))
def test_reliability_curve_points_match_sklearn(strategy, seed):
    rng = np.random.default_rng(seed)
    n = 200
    p = rng.random(n) * 0.999 + 0.0005  # no value on an inner uniform edge
    y = (rng.random(n) < p).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = reliability_curve(y, p, n_bins=10, strategy=strategy, n_resamples=20, rng=0)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy=strategy)
    np.testing.assert_allclose(rc.fraction_positive, prob_true, rtol=1e-12)
    np.testing.assert_allclose(rc.mean_score, prob_pred, rtol=1e-12)


def test_reliability_curve_band_on_materialised_resamples():
    rng = np.random.default_rng(2)
    n = 150
    p = rng.random(n)
    y = (rng.random(n) < p).astype(float)
    rc = reliability_curve(y, p, n_bins=4, design="within_label", n_resamples=400, rng=8)
    draws = np.concatenate(list(make_plan("within_label", y).batches(400, np.random.default_rng(8))))
    bins = np.minimum((p * 4).astype(int), 3)
    frac = np.array([[(d * y)[bins == j].sum() / d[bins == j].sum() for j in range(4)]
                     for d in draws])
    for j in range(4):
        lo, hi = np.percentile(frac[:, j], [2.5, 97.5])
        assert (rc.ci_low[j], rc.ci_high[j]) == pytest.approx((lo, hi), rel=1e-12)
        k, m = (y * (bins == j)).sum(), (bins == j).sum()
        w = proportion_ci(k, m)
        assert (rc.prop_low[j], rc.prop_high[j]) == (w.ci_low, w.ci_high)
    assert rc.count.sum() == n and rc.n_empty.sum() == 0


def test_errors():
    with pytest.raises(MedauditError, match="probabilities"):
        ece_equal_mass([0, 1], [0.2, 1.3])
    with pytest.raises(MedauditError, match="n_bins"):
        ece_equal_mass([0, 1], [0.2, 0.3], n_bins=0)
    with pytest.raises(MedauditError, match="binning"):
        debiased_l2_calibration_error([0, 1], [0.2, 0.3], binning="quantile")
    with pytest.raises(MedauditError, match="binning"):
        bootstrap_metrics([0, 1], [0.2, 0.3], metrics=[("debiased_l2_ce", {"binning": "x"})],
                          n_resamples=5)
    with pytest.raises(MedauditError, match="strategy"):
        reliability_curve([0, 1], [0.2, 0.3], strategy="equal")
