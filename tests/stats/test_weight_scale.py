"""Metrics that are ratios of weighted sums do not depend on the scale of ``sample_weight``.

Witness: scikit-learn's ``roc_auc_score`` on the same weights, and each function's own
value at weights of ordinary size; weights of 1e-300 or 1e300 must neither underflow in
products of class totals (nan) nor fall below an absolute guard (a different answer).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from medaudit.stats import (
    partial_roc_auc,
    roc_auc,
    sensitivity_at_specificities,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
)

SCALES = [1e-300, 1e-170, 1e-13, 0.37, 1e160, 1e300]


def _data(seed=1, n=300):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(float)
    s = np.round(rng.normal(size=n) + y, 1)  # ties too
    return y, s, rng.random(n) + 0.05


FUNCTIONS = {
    "roc_auc": lambda y, s, w: roc_auc(y, s, sample_weight=w),
    "partial_roc_auc": lambda y, s, w: partial_roc_auc(y, s, sample_weight=w),
    "partial_roc_auc[se]": lambda y, s, w: partial_roc_auc(y, s, bounds=(0.8, 1.0), focus="sensitivity",
                                                           correct=True, sample_weight=w),
    "sensitivity_at_specificity": lambda y, s, w: sensitivity_at_specificity(y, s, sample_weight=w),
    "specificity_at_sensitivity": lambda y, s, w: specificity_at_sensitivity(y, s, sample_weight=w),
    "sensitivity_at_specificities": lambda y, s, w: sensitivity_at_specificities(
        y, s, [0.5, 0.8, 0.9], sample_weight=w),
}


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("uniform", [True, False], ids=["uniform", "random"])
def test_weight_scale_does_not_change_the_value(name, scale, uniform):
    y, s, w = _data()
    if uniform:
        w = np.ones_like(w)
    fn = FUNCTIONS[name]
    want = np.asarray(fn(y, s, w), dtype=float)
    got = np.asarray(fn(y, s, w * scale), dtype=float)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_weighted_roc_auc_is_scikit_learns_at_any_scale(scale):
    y, s, w = _data(seed=4)
    assert roc_auc(y, s, sample_weight=w * scale) == pytest.approx(
        roc_auc_score(y, s, sample_weight=w), rel=1e-12)
