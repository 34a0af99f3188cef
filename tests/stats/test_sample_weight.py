"""``sample_weight`` in the point metrics (issue 17), with scikit-learn's semantics.

Witnesses: scikit-learn's own ``sample_weight`` (roc_auc_score, average_precision_score,
brier_score_loss, log_loss, recall_score, roc_curve); the invariances that define the
semantics (an integer weight is that many repeated rows, weight 0 removes the row,
scaling every weight changes nothing) as hypothesis properties, for every weighted metric.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn import metrics as skm

from medaudit.exceptions import MedauditError, TiedScoresWarning, UndefinedMetricWarning
from medaudit.stats import (
    average_precision,
    brier_score,
    ece,
    log_loss,
    operating_point,
    roc_auc,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
)

RTOL = 1e-12


def _op(attr, t):
    return lambda y, s, **kw: getattr(operating_point(y, s, threshold=t, **kw), attr)


# every weighted metric: name -> f(y, s, sample_weight=...)
WEIGHTED = {
    "roc_auc": roc_auc,
    "average_precision": average_precision,
    "average_precision[pooled]": lambda y, s, **kw: average_precision(y, s, ties="pooled", **kw),
    "brier_score": brier_score,
    "brier_score[prevalence]": lambda y, s, **kw: brier_score(y, s, prevalence=0.3, **kw),
    "log_loss": log_loss,
    "log_loss[prevalence]": lambda y, s, **kw: log_loss(y, s, prevalence=0.4, **kw),
    "ece": ece,
    "ece[prevalence,10]": lambda y, s, **kw: ece(y, s, n_bins=10, prevalence=0.3, **kw),
    "sensitivity": _op("sensitivity", 0.5),
    "specificity": _op("specificity", 0.5),
    "sensitivity_at_specificity": lambda y, s, **kw: sensitivity_at_specificity(
        y, s, min_specificity=0.7, **kw),
    "specificity_at_sensitivity": lambda y, s, **kw: specificity_at_sensitivity(
        y, s, min_sensitivity=0.6, **kw),
}


def _data(seed, n=60):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(float)
    y[:2] = [0, 1]
    s = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0.01, 0.99), 1)  # ties
    return y, s


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TiedScoresWarning)
        return fn(*args, **kw)


# --------------------------------------------------------------- against scikit-learn
@pytest.mark.parametrize("seed", range(6))
def test_fractional_weights_match_scikit_learn(seed):
    y, s = _data(seed)
    w = np.random.default_rng(seed + 50).random(y.size) * 3
    w[3] = 0.0
    assert roc_auc(y, s, sample_weight=w) == pytest.approx(
        skm.roc_auc_score(y, s, sample_weight=w), rel=RTOL)
    assert average_precision(y, s, ties="pooled", sample_weight=w) == pytest.approx(
        skm.average_precision_score(y, s, sample_weight=w), rel=RTOL)
    assert brier_score(y, s, sample_weight=w) == pytest.approx(
        skm.brier_score_loss(y, s, sample_weight=w), rel=RTOL)
    assert log_loss(y, s, sample_weight=w) == pytest.approx(
        skm.log_loss(y, s, sample_weight=w), rel=RTOL)
    op = operating_point(y, s, threshold=0.5, sample_weight=w)
    pred = (s >= 0.5).astype(int)
    assert op.sensitivity == pytest.approx(skm.recall_score(y, pred, sample_weight=w), rel=RTOL)
    assert op.specificity == pytest.approx(
        skm.recall_score(y, pred, pos_label=0, sample_weight=w), rel=RTOL)
    assert (op.n_pos, op.n_neg) == pytest.approx((w @ y, w @ (1 - y)), rel=RTOL)
    fpr, tpr, _ = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    assert sensitivity_at_specificity(y, s, min_specificity=0.7, sample_weight=w) == pytest.approx(
        tpr[1 - fpr >= 0.7 - 1e-12].max(), rel=RTOL)
    assert specificity_at_sensitivity(y, s, min_sensitivity=0.6, sample_weight=w) == pytest.approx(
        (1 - fpr)[tpr >= 0.6 - 1e-12].max(), rel=RTOL)


# ------------------------------------------------------------------------ invariances
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([0.5, 3.0, 1e3]))
def test_weights_are_repeated_rows_zero_removes_and_scaling_changes_nothing(seed, scale):
    y, s = _data(seed, n=30)
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 4, y.size).astype(float)
    w[:2] = [1, 2]  # both classes kept
    rows = np.repeat(np.arange(y.size), w.astype(int))
    keep = w > 0
    for name, f in WEIGHTED.items():
        weighted = _quiet(f, y, s, sample_weight=w)
        assert weighted == pytest.approx(_quiet(f, y[rows], s[rows]), rel=RTOL, abs=1e-15), name
        if "average_precision" == name:
            continue  # individual ranks: copies, so only integer weights (checked below)
        assert _quiet(f, y, s, sample_weight=w * scale) == pytest.approx(
            weighted, rel=RTOL, abs=1e-15), name
    for name, f in WEIGHTED.items():
        w01 = keep.astype(float)
        assert _quiet(f, y, s, sample_weight=w01) == pytest.approx(
            _quiet(f, y[keep], s[keep]), rel=RTOL, abs=1e-15), name


def test_unit_weights_change_nothing():
    y, s = _data(9)
    for name, f in WEIGHTED.items():
        assert _quiet(f, y, s, sample_weight=np.ones(y.size)) == _quiet(f, y, s), name


# ----------------------------------------------------------------------------- refusals
def test_bad_weights_are_refused_naming_the_parameter():
    y, s = _data(1, n=10)
    with pytest.raises(MedauditError, match="sample_weight must be non-negative"):
        roc_auc(y, s, sample_weight=-np.ones(10))
    with pytest.raises(MedauditError, match="one weight per sample"):
        brier_score(y, s, sample_weight=np.ones(9))
    with pytest.raises(MedauditError, match="sample_weight contains NaN"):
        ece(y, s, sample_weight=np.r_[np.nan, np.ones(9)])
    with pytest.raises(MedauditError, match="integer sample_weight"):
        average_precision(y, s, sample_weight=np.full(10, 0.5))


def test_a_class_with_zero_weight_is_undefined():
    y, s = _data(2, n=10)
    w = (y == 0).astype(float)  # every positive weighted 0
    with pytest.warns(UndefinedMetricWarning, match="no positives"):
        assert math.isnan(roc_auc(y, s, sample_weight=w))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(average_precision(y, s, sample_weight=w))
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(brier_score(y, s, prevalence=0.3, sample_weight=w))


def test_integer_weights_above_one_make_tied_copies_and_the_ap_conventions_warn():
    """Untied scores, but a weight of 2 is two copies tied with each other: the negative
    at rank 1, the positive's copies at ranks 2 and 3 give AP = (1/2 + 2/3) / 2 = 7/12
    (individual ranks), while pooling the copies into one threshold gives 2/3, which is
    scikit-learn's weighted AP.  The conventions differ, so the warning says so."""
    y, s, w = [0, 1], [0.9, 0.8], [1, 2]
    with pytest.warns(TiedScoresWarning, match="sample_weight above 1") as rec:
        got = average_precision(y, s, sample_weight=w)
    assert got == pytest.approx(7 / 12, rel=1e-15)
    assert rec[0].message.individual == pytest.approx(7 / 12, rel=1e-15)
    assert rec[0].message.pooled == pytest.approx(2 / 3, rel=1e-15)
    pooled = average_precision(y, s, sample_weight=w, ties="pooled")
    assert pooled == pytest.approx(skm.average_precision_score(y, s, sample_weight=w), rel=1e-15)
    # the same data written out as copies: the same value and the same kind of warning
    with pytest.warns(TiedScoresWarning):
        assert average_precision([0, 1, 1], [0.9, 0.8, 0.8]) == pytest.approx(7 / 12, rel=1e-15)


def test_weights_of_zero_and_one_on_untied_scores_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = average_precision([0, 1, 1, 0], [0.9, 0.8, 0.3, 0.1], sample_weight=[1, 0, 1, 1])
    assert got == pytest.approx(skm.average_precision_score(
        [0, 1, 1, 0], [0.9, 0.8, 0.3, 0.1], sample_weight=[1, 0, 1, 1]), rel=1e-15)
