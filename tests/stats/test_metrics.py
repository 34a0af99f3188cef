"""Properties shared by the point metrics of medaudit.stats (ranking, calibration,
operating points, selective prediction): invariances under transforms and order, ranges,
and edge cases.  Each metric's own witnesses are in the test file named after its module
(test_ranking.py, test_calibration.py, test_thresholds.py, test_selective.py); soft labels
in test_soft.py; bad inputs in tests/test_validation.py.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.metrics import (
    average_precision_score,
    brier_score_loss,
    roc_auc_score,
)

from medaudit.exceptions import UndefinedMetricWarning
from medaudit.stats import (
    aurc,
    average_precision,
    brier_score,
    ece,
    log_loss,
    reliability_diagram,
    roc_auc,
    selective_risk,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    threshold_for_sensitivity,
    threshold_for_specificity,
)
from tests.stats._helpers import (
    ATOL_ZERO,
    RTOL,
    _approx,
    _prevalence_weights,
    _reference_sklearn_log_loss,
    labelled,
    labelled_grid,
)


# ============================================================ hypothesis properties
@given(labelled_grid())
def test_ranking_metrics_invariant_to_strictly_increasing_transforms(ys):
    y, s = ys
    for f in (lambda v: v**3 + 2.0, np.exp):
        t = f(s)
        assert roc_auc(y, t) == _approx(roc_auc(y, s), rel=RTOL)
        for ties in ("individual", "pooled"):
            assert average_precision(y, t, ties=ties) == _approx(average_precision(y, s, ties=ties), rel=RTOL)
        for x in (0.5, 0.95):
            assert sensitivity_at_specificity(y, t, min_specificity=x) == sensitivity_at_specificity(
                y, s, min_specificity=x
            )
            # the threshold moves with the transform: same image, transformed score
            tau = threshold_for_sensitivity(y, s, min_sensitivity=x)
            assert threshold_for_sensitivity(y, t, min_sensitivity=x) == t[s == tau][0]


@given(labelled(prob=False))
def test_roc_auc_of_negated_scores_is_complement(ys):
    y, s = ys
    assert_allclose(roc_auc(y, -s), 1.0 - roc_auc(y, s), rtol=RTOL, atol=ATOL_ZERO)


@given(labelled(prob=False))
def test_roc_auc_symmetric_under_label_swap_and_negation(ys):
    y, s = ys
    assert_allclose(roc_auc(1.0 - y, -s), roc_auc(y, s), rtol=RTOL)


@given(labelled(prob=True), st.randoms(use_true_random=False))
def test_metrics_invariant_to_sample_order(ys, random):
    y, s = ys
    perm = np.array(random.sample(range(y.size), y.size))
    yp, sp = y[perm], s[perm]
    assert_allclose(roc_auc(yp, sp), roc_auc(y, s), rtol=RTOL)
    assert_allclose(
        average_precision(yp, sp, ties="pooled"), average_precision(y, s, ties="pooled"), rtol=RTOL
    )
    assert_allclose(brier_score(yp, sp), brier_score(y, s), rtol=RTOL, atol=ATOL_ZERO)
    assert_allclose(log_loss(yp, sp), log_loss(y, s), rtol=RTOL, atol=ATOL_ZERO)
    assert_allclose(ece(yp, sp), ece(y, s), rtol=RTOL, atol=ATOL_ZERO)
    assert_allclose(ece(yp, sp, prevalence=0.3), ece(y, s, prevalence=0.3), rtol=RTOL, atol=ATOL_ZERO)


@given(labelled(prob=True))
def test_metric_ranges(ys):
    y, s = ys
    assert 0.0 <= roc_auc(y, s) <= 1.0
    assert 0.0 < average_precision(y, s) <= 1.0
    assert 0.0 <= brier_score(y, s) <= 1.0
    assert 0.0 <= ece(y, s) <= 1.0
    assert 0.0 <= aurc(y, s) <= 1.0


# =================================================================== edge cases
def test_all_scores_tied():
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.0])
    s = np.full(5, 0.3)
    assert roc_auc(y, s) == 0.5  # every pair tied, counted 1/2
    # pooled: one threshold, precision = prevalence = 2/5, recall 1
    assert average_precision(y, s, ties="pooled") == _approx(0.4, rel=RTOL)
    # individual (stable): positives at ranks 1 and 4 -> (1/1 + 2/4)/2 = 0.75
    assert average_precision(y, s) == _approx(0.75, rel=RTOL)
    # t = 0.3 gives (Se, Sp) = (1, 0); t = +inf gives (0, 1)
    assert sensitivity_at_specificity(y, s, min_specificity=0.5) == 0.0
    assert specificity_at_sensitivity(y, s, min_sensitivity=0.5) == 0.0
    assert threshold_for_specificity(y, s, min_specificity=0.5) == math.inf


def test_one_positive_one_negative():
    assert roc_auc([0, 1], [0.2, 0.8]) == 1.0
    assert roc_auc([0, 1], [0.8, 0.2]) == 0.0
    assert roc_auc([0, 1], [0.5, 0.5]) == 0.5
    assert average_precision([0, 1], [0.8, 0.2]) == 0.5  # positive at rank 2: 1/2
    assert average_precision([0, 1], [0.5, 0.5], ties="pooled") == 0.5


def test_perfect_separation():
    y = np.array([0, 1, 0, 1, 1, 0], dtype=float)
    s = np.array([0.1, 0.7, 0.3, 0.9, 0.8, 0.2])
    assert roc_auc(y, s) == 1.0
    assert average_precision(y, s) == 1.0
    assert average_precision(y, s, ties="pooled") == 1.0
    assert sensitivity_at_specificity(y, s, min_specificity=1.0) == 1.0
    assert specificity_at_sensitivity(y, s, min_sensitivity=1.0) == 1.0
    assert threshold_for_sensitivity(y, s, min_sensitivity=1.0) == 0.7
    assert threshold_for_specificity(y, s, min_specificity=1.0) == 0.7


@pytest.fixture(scope="module")
def imbalanced():
    """n = 1000 with 1% positives (10), untied continuous scores."""
    rng = np.random.default_rng(17)
    y = np.zeros(1000)
    y[rng.choice(1000, size=10, replace=False)] = 1.0
    s = rng.beta(2.0 + 3.0 * y, 5.0)
    assert np.unique(s).size == s.size
    return y, s


def test_extreme_imbalance_matches_sklearn(imbalanced):
    y, s = imbalanced
    assert_allclose(roc_auc(y, s), roc_auc_score(y, s), rtol=RTOL)
    assert_allclose(average_precision(y, s, ties="pooled"), average_precision_score(y, s), rtol=RTOL)
    assert_allclose(brier_score(y, s), brier_score_loss(y, s), rtol=RTOL)
    assert_allclose(log_loss(y, s), _reference_sklearn_log_loss(y, s), rtol=RTOL)
    w = _prevalence_weights(y, 0.5)
    assert_allclose(brier_score(y, s, prevalence=0.5), brier_score_loss(y, s, sample_weight=w), rtol=RTOL)


def test_extreme_imbalance_individual_ap_matches_sklearn(imbalanced):
    # T8 on untied data: the paper's individual-rank AP equals sklearn's pooled AP
    y, s = imbalanced
    assert_allclose(average_precision(y, s, ties="individual"), average_precision_score(y, s), rtol=RTOL)


def test_probability_metrics_at_exact_zero_and_one():
    # confident errors: y = (1, 0), s = (0, 1)
    assert brier_score([1, 0], [0.0, 1.0]) == 1.0
    assert ece([1, 0], [0.0, 1.0]) == 1.0  # bins 0 and 14: (1 + 1)/2
    assert math.isfinite(log_loss([1, 0], [0.0, 1.0]))
    # confident and right: y = (1, 0), s = (1, 0)
    assert brier_score([1, 0], [1.0, 0.0]) == 0.0
    assert ece([1, 0], [1.0, 0.0]) == 0.0
    assert reliability_diagram([1, 0], [1.0, 0.0]).bin_index.tolist() == [0, 9]


ONE_CLASS_UNDEFINED = {
    "roc_auc": lambda y, s: roc_auc(y, s),
    "average_precision": lambda y, s: average_precision(y, s),
    "average_precision_pooled": lambda y, s: average_precision(y, s, ties="pooled"),
    "brier_score_prevalence": lambda y, s: brier_score(y, s, prevalence=0.5),
    "ece_prevalence": lambda y, s: ece(y, s, prevalence=0.5),
    "log_loss_prevalence": lambda y, s: log_loss(y, s, prevalence=0.5),
    "sensitivity_at_specificity": lambda y, s: sensitivity_at_specificity(y, s),
    "specificity_at_sensitivity": lambda y, s: specificity_at_sensitivity(y, s),
    "threshold_for_sensitivity": lambda y, s: threshold_for_sensitivity(y, s),
    "threshold_for_specificity": lambda y, s: threshold_for_specificity(y, s),
}


_ONE_CLASS_CASES = [
    (name, label)
    for name in ONE_CLASS_UNDEFINED
    for label in (0.0, 1.0)
    # AP is defined without negatives (it is 1): see the test below
    if not (name.startswith("average_precision") and label == 1.0)
]


@pytest.mark.parametrize("name, label", _ONE_CLASS_CASES)
def test_single_class_gives_nan_with_warning(name, label):
    y, s = np.full(4, label), np.array([0.1, 0.4, 0.6, 0.9])
    with pytest.warns(UndefinedMetricWarning, match="undefined"):
        got = ONE_CLASS_UNDEFINED[name](y, s)
    assert math.isnan(got)


def test_single_class_defined_cases_do_not_warn():
    s = [0.1, 0.4, 0.6, 0.9]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert average_precision([1, 1, 1, 1], s) == 1.0
        assert average_precision([1, 1, 1, 1], s, ties="pooled") == 1.0
        # the unweighted probability metrics do not need both classes
        assert brier_score([1, 1, 1, 1], s) == _approx((0.81 + 0.36 + 0.16 + 0.01) / 4, rel=RTOL)
        assert ece([0, 0, 0, 0], s) == _approx(0.5, rel=RTOL)  # 4 bins, all s - 0
        assert math.isfinite(log_loss([0, 0, 0, 0], s))
        assert selective_risk([0, 0, 0, 0], s, coverage=1.0) == 0.5
