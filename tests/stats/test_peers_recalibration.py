"""Peer witness (statsmodels GLM, binomial logit; R's glm gives the same numbers): the
calibration slope / intercept on edges: frequency weights, probabilities within 1e-12 of 0
and 1, and complete separation of the labels by ``logit(p)``.

Under separation the *slope* model ``y ~ logit(p)`` has no finite fit (documented: nan
with a DegenerateDataWarning, anchors T16), but the calibration intercept is the
offset-only model ``y ~ 1 + offset(logit(p))``, whose likelihood is strictly concave in
one parameter and has a finite maximum whenever both classes occur.  statsmodels and R
(``glm(y ~ 1, offset = qlogis(p), binomial)``: 0.14996092035642361, se
0.79023843355894452 on the data below) fit it; medaudit returned nan before the fix (tested below).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import logit

from medaudit.exceptions import DegenerateDataWarning
from medaudit.stats import calibration_slope_intercept


def _sm(y, p, w=None):
    x = logit(p)
    kw = {} if w is None else {"freq_weights": w}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joint = sm.GLM(y, sm.add_constant(x), family=sm.families.Binomial(), **kw).fit(tol=1e-13)
        large = sm.GLM(y, np.ones((y.size, 1)), family=sm.families.Binomial(), offset=x,
                       **kw).fit(tol=1e-13)
    return joint, large


@pytest.mark.parametrize("case", ["plain", "ties", "near_0_and_1", "weighted"])
def test_slope_and_intercepts_are_statsmodels(case):
    rng = np.random.default_rng(0)
    n = 200
    p = rng.random(n) * 0.98 + 0.01
    if case == "ties":
        p = np.round(p, 1).clip(0.05, 0.95)
    if case == "near_0_and_1":
        p[:4] = [1e-12, 1 - 1e-12, 1e-9, 1 - 1e-9]
    y = (rng.random(n) < p).astype(int)
    y[:2] = [0, 1]
    w = rng.integers(1, 4, n).astype(float) if case == "weighted" else None
    r = calibration_slope_intercept(y, p, sample_weight=w)
    joint, large = _sm(y, p, w)
    assert r.slope == pytest.approx(joint.params[1], rel=1e-8)
    assert r.intercept_joint == pytest.approx(joint.params[0], rel=1e-8, abs=1e-10)
    assert r.intercept == pytest.approx(large.params[0], rel=1e-8, abs=1e-10)
    assert r.intercept_se == pytest.approx(large.bse[0], rel=1e-7)


_Y = np.array([0, 1, 0, 0, 1, 1, 1, 0])
_P = np.array([0.30, 0.62, 0.15, 0.41, 0.55, 0.81, 0.70, 0.22])  # logit(p) separates y


def test_separation_slope_is_nan_as_documented():
    with pytest.warns(DegenerateDataWarning):
        r = calibration_slope_intercept(_Y, _P)
    assert np.isnan(r.slope) and np.isnan(r.intercept_joint)
    _, large = _sm(_Y, _P)
    assert large.converged and np.isfinite(large.params[0])  # the peer's offset fit exists


def test_separation_keeps_the_calibration_intercept():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        r = calibration_slope_intercept(_Y, _P)
    assert r.intercept == pytest.approx(0.14996092035642361, rel=1e-7)
    assert r.intercept_se == pytest.approx(0.79023843355894452, rel=1e-6)
