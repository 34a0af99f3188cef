"""Calibration slope and intercepts (logistic recalibration) with Wald and bootstrap intervals.

Witnesses: R's glm (y ~ qlogis(p), and y ~ 1 with offset) with confint.default
(tests/reference/recalibration_R.csv); scikit-learn's unpenalised LogisticRegression;
the vectorised Newton replicates against statsmodels refits of materialised resamples;
hand cases (perfect calibration, separation).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import special
from sklearn.linear_model import LogisticRegression

from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import calibration_slope_intercept, calibration_slope_intercept_ci
from medaudit.stats.designs import make_plan
from medaudit.stats.recalibration import logistic_rows

REF = Path(__file__).resolve().parents[1] / "reference"
DATA = pd.read_csv(REF / "recalibration_R_data.csv", comment="#")
FITS = pd.read_csv(REF / "recalibration_R.csv", comment="#").set_index("dataset")


@pytest.mark.r_reference
@pytest.mark.parametrize("name", list(FITS.index))
def test_matches_R_glm(name):
    d = DATA[DATA.dataset == name].sort_values("item")
    fit = calibration_slope_intercept(d.y_true, d.y_prob)
    ref = FITS.loc[name]
    for field, col in [("slope", "slope"), ("slope_se", "slope_se"),
                       ("slope_ci_low", "slope_low"), ("slope_ci_high", "slope_high"),
                       ("intercept", "intercept"), ("intercept_se", "intercept_se"),
                       ("intercept_ci_low", "intercept_low"), ("intercept_ci_high", "intercept_high"),
                       ("intercept_joint", "intercept_joint"),
                       ("intercept_joint_se", "intercept_joint_se"),
                       ("intercept_joint_ci_low", "intercept_joint_low"),
                       ("intercept_joint_ci_high", "intercept_joint_high")]:
        # coefficients to 1e-9; standard errors (and so the bounds) to 1e-7: R's glm takes
        # them from the weights of its last IRLS step, statsmodels from the converged fit
        tol = 1e-9 if field in ("slope", "intercept", "intercept_joint") else 1e-7
        assert getattr(fit, field) == pytest.approx(ref[col], rel=tol), field
    assert fit.converged


def test_sklearn_unpenalised_logistic_regression():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.03, 0.97, 400)
    y = (rng.random(400) < special.expit(-0.5 + 1.3 * special.logit(p))).astype(int)
    fit = calibration_slope_intercept(y, p)
    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(
        special.logit(p)[:, None], y)
    assert fit.slope == pytest.approx(lr.coef_[0, 0], rel=1e-6)
    assert fit.intercept_joint == pytest.approx(lr.intercept_[0], rel=1e-6, abs=1e-7)


def test_perfectly_calibrated_in_the_large_and_weights():
    # labels at exactly the predicted rates: the offset model's intercept is 0
    p = np.repeat([0.2, 0.5, 0.8], 10)
    y = np.r_[np.repeat([1, 0], [2, 8]), np.repeat([1, 0], [5, 5]), np.repeat([1, 0], [8, 2])]
    fit = calibration_slope_intercept(y, p)
    assert fit.intercept == pytest.approx(0.0, abs=1e-10)
    assert fit.slope == pytest.approx(1.0, abs=1e-8) and fit.intercept_joint == pytest.approx(0, abs=1e-8)
    w = np.arange(30) % 3 + 1.0
    rep = calibration_slope_intercept(np.repeat(y, w.astype(int)), np.repeat(p, w.astype(int)))
    got = calibration_slope_intercept(y, p, sample_weight=w)
    assert got.slope == pytest.approx(rep.slope, rel=1e-9)
    assert got.slope_se == pytest.approx(rep.slope_se, rel=1e-9)


def _equal_statsmodels_refits(draws, x, y, a, b, a0):
    """Each row's (a, b) and offset intercept a0 equal statsmodels' refit of the resample
    materialised from that row's counts."""
    for i in range(draws.shape[0]):
        idx = np.repeat(np.arange(y.size), draws[i])
        f1 = sm.GLM(y[idx], sm.add_constant(x[idx]), family=sm.families.Binomial()).fit(tol=1e-13)
        f2 = sm.GLM(y[idx], np.ones((idx.size, 1)), family=sm.families.Binomial(),
                    offset=x[idx]).fit(tol=1e-13)
        assert (a[i], b[i], a0[i]) == pytest.approx((f1.params[0], f1.params[1], f2.params[0]),
                                                    rel=1e-8, abs=1e-10)


def test_newton_rows_equal_statsmodels_on_materialised_resamples():
    rng = np.random.default_rng(0)
    n = 250
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < special.expit(0.3 + 0.7 * special.logit(p))).astype(float)
    x = special.logit(p)
    draws = np.concatenate(list(make_plan("ordinary", y).batches(25, np.random.default_rng(4))))
    a, b = logistic_rows(draws, x, y, slope=True)
    a0, _ = logistic_rows(draws, x, y, slope=False)
    res = calibration_slope_intercept_ci(y, p, n_resamples=25, rng=4)
    np.testing.assert_array_equal(res.slope.replicates, b)
    _equal_statsmodels_refits(draws, x, y, a, b, a0)


@pytest.mark.parametrize("true_slope, n, seed", [(-0.3, 500, 1), (0.0, 50, 7), (-1.5, 300, 2)])
def test_fits_far_from_perfect_calibration_converge_for_every_replicate(true_slope, n, seed):
    """Probe finding: plain Newton from (a, b) = (0, 1) overshot and diverged where the
    slope is near 0 or negative, so well-defined replicates (48 of 200 at slope -0.3,
    n = 500) came back as degenerate -- only negative slopes, which biased the interval.
    With step halving every replicate converges, each to statsmodels' refit of the
    materialised resample."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < special.expit(true_slope * special.logit(p))).astype(float)
    x = special.logit(p)
    draws = np.concatenate(list(make_plan("ordinary", y).batches(40, np.random.default_rng(3))))
    a, b = logistic_rows(draws, x, y, slope=True)
    a0, _ = logistic_rows(draws, x, y, slope=False)
    assert np.isfinite(a).all() and np.isfinite(b).all() and np.isfinite(a0).all()
    _equal_statsmodels_refits(draws, x, y, a, b, a0)
    res = calibration_slope_intercept_ci(y, p, n_resamples=200, rng=0)
    assert res.slope.n_degenerate == 0 and res.intercept_joint.n_degenerate == 0


def test_separation_is_degenerate_not_a_crash():
    y = [0, 0, 0, 1, 1, 1]
    p = [0.1, 0.2, 0.3, 0.7, 0.8, 0.9]
    with pytest.warns(DegenerateDataWarning, match="separates"):
        fit = calibration_slope_intercept(y, p)
    assert np.isnan(fit.slope) and not fit.converged
    a, b = logistic_rows(np.ones((1, 6)), special.logit(np.array(p)), np.array(y, float), slope=True)
    assert np.isnan(b[0])
    with pytest.raises(MedauditError, match="nothing to resample"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateDataWarning)
            calibration_slope_intercept_ci(y, p, n_resamples=5)


def test_a_zero_weight_case_does_not_hide_a_separation():
    """Probe finding: with a case of weight 0 that logit(p) does not separate, statsmodels'
    check missed the separation of the others and a slope of 35.9 (SE 4.6e6) came back. A
    case of weight 0 is left out of the fit, which is the same likelihood."""
    y, p, w = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], [1, 1, 0, 1]
    with pytest.warns(DegenerateDataWarning, match="separates"):
        got = calibration_slope_intercept(y, p, sample_weight=w)
    with pytest.warns(DegenerateDataWarning, match="separates"):
        want = calibration_slope_intercept([0, 0, 1], [0.1, 0.4, 0.8])
    assert np.isnan(got.slope) and got.intercept == pytest.approx(want.intercept, rel=1e-12)
    assert got.n == 4 and got.n_pos == 1.0
    # and where the fit exists, zero-weight cases change nothing
    rng = np.random.default_rng(3)
    p = rng.uniform(0.05, 0.95, 80)
    y = (rng.random(80) < p).astype(float)
    w = (rng.random(80) < 0.8).astype(float)
    a = calibration_slope_intercept(y, p, sample_weight=w)
    b = calibration_slope_intercept(y[w > 0], p[w > 0])
    assert (a.slope, a.slope_se, a.intercept) == pytest.approx((b.slope, b.slope_se, b.intercept), rel=1e-10)


@pytest.mark.parametrize("y, p0", [([0, 1, 0, 1], 0.5), ([0, 1, 0, 1, 1], 0.3)])
def test_one_probability_for_every_case_has_no_slope(y, p0):
    """Probe finding: with every p equal the design is singular and a pseudo-inverse slope
    (0.0, SE 0.0; or -0.2, SE 0.45) came back; statsmodels' own Logit raises. The slope is
    nan with a warning; the offset model still has its MLE, logit(mean y) - logit(p)."""
    with pytest.warns(DegenerateDataWarning, match="takes one value"):
        fit = calibration_slope_intercept(y, [p0] * len(y))
    assert np.isnan(fit.slope) and np.isnan(fit.slope_se) and np.isnan(fit.intercept_joint)
    assert fit.intercept == pytest.approx(special.logit(np.mean(y)) - special.logit(p0), rel=1e-10)
    with pytest.raises(MedauditError, match="one value of p for every case"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateDataWarning)
            calibration_slope_intercept_ci(y * 10, [p0] * (10 * len(y)), n_resamples=5)


def test_zero_or_one_probabilities_need_eps():
    with pytest.raises(MedauditError, match="eps"):
        calibration_slope_intercept([0, 1, 0, 1], [0.0, 0.6, 0.4, 1.0])
    fit = calibration_slope_intercept([0, 1, 0, 1, 1, 0], [0.0, 0.6, 0.45, 1.0, 0.4, 0.5], eps=1e-6)
    assert fit.eps == 1e-6 and np.isfinite(fit.slope)
