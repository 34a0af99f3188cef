"""Everything at a threshold: the 2x2 table, PPV/NPV (also at a declared prevalence), LR+/-, F1,
accuracy, balanced accuracy, with bootstrap and proportion intervals.

Witnesses: scikit-learn (confusion_matrix, precision/recall/f1/accuracy/balanced accuracy,
class_likelihood_ratios) with and without sample_weight; a loop oracle; Bayes' rule by
hand; replicates against the point function on materialised resamples.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sklearn.metrics as skm

from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats import (
    bootstrap_metrics,
    predictive_values,
    proportion_ci,
    threshold_metrics,
    threshold_metrics_ci,
)
from medaudit.stats.designs import make_plan
from tests.stats import _oracles_peers as O


@pytest.mark.parametrize("seed", range(40))
def test_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 60))
    y = (rng.random(n) < 0.4).astype(int)
    y[:4] = [0, 1, 0, 1]
    s = np.round(rng.random(n), 1)
    s[:4] = [0.0, 1.0, 1.0, 0.0]  # at least one of every cell at tau = 0.5
    w = rng.integers(1, 4, size=n).astype(float) if seed % 2 else None
    tau = 0.5
    m = threshold_metrics(y, s, threshold=tau, sample_weight=w)
    pred = (s >= tau).astype(int)
    tn, fp, fn, tp = skm.confusion_matrix(y, pred, sample_weight=w).ravel()
    assert (m.tp, m.fp, m.fn, m.tn) == pytest.approx((tp, fp, fn, tn), abs=1e-12)
    assert m.sensitivity == pytest.approx(skm.recall_score(y, pred, sample_weight=w), rel=1e-14)
    assert m.ppv == pytest.approx(skm.precision_score(y, pred, sample_weight=w), rel=1e-14)
    assert m.f1 == pytest.approx(skm.f1_score(y, pred, sample_weight=w), rel=1e-14)
    assert m.accuracy == pytest.approx(skm.accuracy_score(y, pred, sample_weight=w), rel=1e-14)
    assert m.balanced_accuracy == pytest.approx(
        skm.balanced_accuracy_score(y, pred, sample_weight=w), rel=1e-14)
    lr_pos, lr_neg = skm.class_likelihood_ratios(y, pred, sample_weight=w)
    assert (m.lr_positive, m.lr_negative) == pytest.approx((lr_pos, lr_neg), rel=1e-14)
    tp_, fp_, fn_, tn_ = O.cells(y, s, tau, w)
    assert m.npv == pytest.approx(tn_ / (tn_ + fn_), rel=1e-14)
    assert m.specificity == pytest.approx(tn_ / (tn_ + fp_), rel=1e-14)


def test_declared_prevalence_by_hand():
    # Se = 1, Sp = 2/3 at tau = 0.5; at prevalence 0.1: PPV = .1 / (.1 + .9/3) = 0.25
    m = threshold_metrics([0, 0, 0, 1, 1], [0.1, 0.4, 0.6, 0.5, 0.9], threshold=0.5, prevalence=0.1)
    assert m.ppv == pytest.approx(0.25, rel=1e-15) and m.npv == 1.0
    assert m.ppv_sample == pytest.approx(2 / 3, rel=1e-15) and m.declared_prevalence == 0.1
    assert m.sample_prevalence == 0.4
    ppv, npv = predictive_values(0.9, 0.8, 0.1)
    assert ppv == pytest.approx(0.09 / (0.09 + 0.18), rel=1e-14)
    assert npv == pytest.approx(0.72 / (0.72 + 0.01), rel=1e-14)
    # at the sample's own prevalence Bayes' rule gives back the sample's PPV
    m0 = threshold_metrics([0, 0, 0, 1, 1], [0.1, 0.4, 0.6, 0.5, 0.9], threshold=0.5, prevalence=0.4)
    assert m0.ppv == pytest.approx(m0.ppv_sample, rel=1e-14)


def test_zero_cells_are_nan_with_a_warning():
    # tau above every score: nothing positive, so PPV and LR- ... see which are undefined
    with pytest.warns(UndefinedMetricWarning, match="ppv"):
        m = threshold_metrics([0, 1, 1], [0.1, 0.4, 0.8], threshold=math.inf)
    assert (m.tp, m.fp) == (0.0, 0.0) and math.isnan(m.ppv) and math.isnan(m.lr_positive)
    assert m.sensitivity == 0.0 and m.specificity == 1.0 and m.f1 == 0.0
    with pytest.warns(UndefinedMetricWarning, match="lr_negative"):
        m = threshold_metrics([0, 1], [0.6, 0.9], threshold=0.5)  # no true negative
    assert m.lr_positive == 1.0 and math.isnan(m.lr_negative)


def test_bootstrap_on_materialised_resamples_and_proportion_intervals():
    rng = np.random.default_rng(7)
    n = 80
    y = (rng.random(n) < 0.4).astype(float)
    s = np.round(rng.random(n) * 0.6 + 0.4 * y, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate LR replicates are counted, not hidden
        r = threshold_metrics_ci(y, s, threshold=0.45, prevalence=0.2, n_resamples=50, rng=3,
                                 batch=6, proportion_method="clopper_pearson")
    draws = np.concatenate(list(make_plan("ordinary", y).batches(50, np.random.default_rng(3), 6)))
    for b in range(0, 50, 3):
        yb, sb = O.materialise(y, s, draws[b])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            want = threshold_metrics(yb, sb, threshold=0.45, prevalence=0.2)
        for name, res in r.bootstrap.items():
            np.testing.assert_allclose(res.replicates[b], getattr(want, name), rtol=1e-13,
                                       atol=1e-15, equal_nan=True, err_msg=name)
    assert r.bootstrap["ppv"].metric == "ppv[prevalence=0.2,threshold=0.45]"
    assert set(r.proportion) == {"sensitivity", "specificity", "accuracy"}  # PPV at pi: no
    p = r.point
    assert r.proportion["sensitivity"] == proportion_ci(p.tp, p.tp + p.fn, method="clopper_pearson")


def test_engine_metric_errors():
    with pytest.raises(MedauditError, match="needs option 'threshold'"):
        bootstrap_metrics([0, 1], [0.1, 0.2], metrics=["ppv"], n_resamples=5)
    with pytest.raises(MedauditError, match="threshold"):
        bootstrap_metrics([0, 1], [0.1, 0.2], metrics=[("ppv", {"threshold": "x"})], n_resamples=5)
    with pytest.raises(MedauditError, match="prevalence"):
        threshold_metrics([0, 1], [0.1, 0.2], threshold=0.5, prevalence=1.5)
    with pytest.raises(MedauditError, match="threshold"):
        threshold_metrics([0, 1], [0.1, 0.2], threshold=float("nan"))


def test_predictive_values_warn_where_undefined():
    """Probe finding: PPV at Se = 0, Sp = 1 (0/0) came back nan without a word."""
    from medaudit.exceptions import UndefinedMetricWarning
    from medaudit.stats import predictive_values

    with pytest.warns(UndefinedMetricWarning, match="PPV is undefined"):
        ppv, npv = predictive_values(0.0, 1.0, 0.3)
    assert math.isnan(ppv) and npv == pytest.approx(0.7)
    with pytest.warns(UndefinedMetricWarning, match="NPV is undefined"):
        ppv, npv = predictive_values(1.0, 0.0, 0.3)
    assert ppv == pytest.approx(0.3) and math.isnan(npv)


def test_all_zero_weights_are_named_as_such():
    from medaudit.exceptions import UndefinedMetricWarning
    from medaudit.stats import roc_auc

    with pytest.warns(UndefinedMetricWarning, match="every case has weight 0"):
        assert math.isnan(roc_auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], sample_weight=[0, 0, 0, 0]))
    with pytest.warns(UndefinedMetricWarning, match="the sample has no positives"):
        assert math.isnan(roc_auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], sample_weight=[1, 1, 0, 0]))
