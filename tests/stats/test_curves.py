"""ROC and precision-recall curves as data, sensitivity at fixed specificities, the ci.se band.

Witnesses: scikit-learn's ``roc_curve`` / ``precision_recall_curve`` (points, thresholds,
``drop_intermediate`` both ways, ``sample_weight``); pROC 1.18 ``coords(input =
"specificity")`` (tests/reference/coords_sp_pROC.csv); a loop oracle over thresholds and
segments (tests/stats/_oracles_peers.py); band replicates against the point function on
materialised resamples; the staircase fast path against the general curve kernel.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sklearn.metrics as skm
from hypothesis import given
from hypothesis import strategies as st

from medaudit.exceptions import DegenerateDataWarning, MedauditError, UndefinedMetricWarning
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX
from medaudit.stats import (
    precision_at_recalls,
    precision_recall_band,
    precision_recall_curve,
    roc_auc,
    roc_curve,
    roc_curve_band,
    sensitivity_at_specificities,
    specificity_at_sensitivities,
    threshold_for_sensitivity,
)
from medaudit.stats.designs import make_plan
from tests.stats import _oracles_peers as O

REF = Path(__file__).resolve().parents[1] / "reference"
DATA = pd.read_csv(REF / "peers_pROC_data.csv", comment="#")
COORDS_SP = pd.read_csv(REF / "coords_sp_pROC.csv", comment="#")
COORDS_SE = pd.read_csv(REF / "coords_se_pROC.csv", comment="#")


def _case(seed, ties=True, weights=False):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 50))
    y = (rng.random(n) < 0.5).astype(float)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=n) + y, 1 if ties else 8)
    w = rng.integers(0, 4, size=n).astype(float) if weights else None
    if w is not None:
        w[:2] = 1.0
    return y, s, w


def test_hand_worked_points():
    c = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    assert c.thresholds.tolist() == [np.inf, 0.8, 0.4, 0.35, 0.1]
    assert c.tp.tolist() == [0, 1, 1, 2, 2] and c.fp.tolist() == [0, 0, 1, 1, 2]
    assert c.specificity.tolist() == [1.0, 1.0, 0.5, 0.5, 0.0]
    pr = precision_recall_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    assert pr.precision.tolist() == [1.0, 0.5, 2 / 3, 0.5]
    assert not c.fpr.flags.writeable  # frozen arrays


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("drop", [False, True])
def test_matches_sklearn(seed, drop):
    y, s, w = _case(seed, ties=seed % 3 != 0, weights=seed % 2 == 1)
    c = roc_curve(y, s, sample_weight=w, drop_intermediate=drop)
    fpr, tpr, thr = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=drop)
    np.testing.assert_array_equal(c.thresholds, thr)
    np.testing.assert_allclose(c.fpr, fpr, rtol=1e-15, atol=0)
    np.testing.assert_allclose(c.tpr, tpr, rtol=1e-15, atol=0)
    pr = precision_recall_curve(y, s, sample_weight=w, drop_intermediate=drop)
    p, r, t = skm.precision_recall_curve(y, s, sample_weight=w, drop_intermediate=drop)
    np.testing.assert_array_equal(pr.thresholds, t[::-1])
    np.testing.assert_allclose(pr.precision, p[:-1][::-1], rtol=1e-15, atol=0)
    np.testing.assert_allclose(pr.recall, r[:-1][::-1], rtol=1e-15, atol=0)


def test_drop_intermediate_moves_a_chosen_threshold():
    # anchors trap T1: collinear points vanish and with them thresholds one might pick
    y = [1, 1, 1, 0, 0, 0]
    s = [6, 5, 4, 3, 2, 1]
    assert roc_curve(y, s).thresholds.size == 7
    # the highest threshold with Se >= 2/3 (5.0) is gone from the dropped curve
    assert roc_curve(y, s, drop_intermediate=True).thresholds.tolist() == [np.inf, 6.0, 4.0, 1.0]


@pytest.mark.parametrize("seed", range(40))
def test_curve_against_loop_oracle(seed):
    y, s, w = _case(seed, weights=True)
    c = roc_curve(y, s, sample_weight=w)
    pts = O.roc_points(y, s, w)
    assert c.thresholds.tolist() == [p[0] for p in pts]
    np.testing.assert_allclose(c.tp, [p[1] for p in pts], rtol=0, atol=1e-12)
    np.testing.assert_allclose(c.fp, [p[2] for p in pts], rtol=0, atol=1e-12)
    assert np.trapezoid(c.tpr, c.fpr) == pytest.approx(skm.roc_auc_score(y, s, sample_weight=w),
                                                       abs=1e-12)


#: pROC's coords read both ways: (reference, function, the rate given, the rate read)
_COORDS = {"sp": (COORDS_SP, sensitivity_at_specificities, "specificity", "sensitivity"),
           "se": (COORDS_SE, specificity_at_sensitivities, "sensitivity", "specificity")}


@pytest.mark.r_reference
@pytest.mark.parametrize("given, key", [(g, k) for g, (ref, *_) in _COORDS.items()
                                        for k in sorted(set(zip(ref.dataset, ref.curve,
                                                                strict=True)))])
def test_rates_read_off_the_curve_match_pROC_coords(given, key):
    # input "sensitivity" is the peers' probe finding: it had no counterpart
    table, fn, x, out = _COORDS[given]
    ref = table[(table.dataset == key[0]) & (table.curve == key[1])]
    d = DATA[DATA.dataset == key[0]].sort_values("item")
    got = fn(d.y_true, d[f"score_{key[1]}"], ref[x])
    np.testing.assert_allclose(got, ref[out], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(40))
def test_sensitivity_at_specificities_oracle(seed):
    y, s, w = _case(seed, weights=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    grid = np.r_[0.0, 1.0, rng.random(6), O.curve_sp_se(y, s, w)[2][0]]  # incl. a vertex
    got = sensitivity_at_specificities(y, s, grid, sample_weight=w)
    want = [O.se_at_sp(y, s, x, w) for x in grid]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_specificity_at_sensitivities_by_hand_and_with_weights():
    y, s = [0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]
    # the curve's vertices (Sp, Se): (1, 0), (1, .5), (.5, .5), (.5, 1), (0, 1); Se = 0.5 is a
    # horizontal segment from Sp 0.5 to 1 (its end of largest Sp is read), Se 0.75 lies on the
    # vertical segment at Sp 0.5, and Se 0.25 halfway up the first one, at Sp 1
    assert specificity_at_sensitivities(y, s, [0.5, 0.75, 0.25, 1.0, 0.0]).tolist() == [
        1.0, 0.5, 1.0, 0.5, 1.0]
    rng = np.random.default_rng(4)
    yy = (rng.random(40) < 0.4).astype(float)
    yy[:2] = [0, 1]
    ss = np.round(rng.normal(size=40) + yy, 1)
    w = rng.integers(1, 4, size=40)
    grid = np.linspace(0, 1, 23)
    np.testing.assert_allclose(  # integer weights are repeated rows
        specificity_at_sensitivities(yy, ss, grid, sample_weight=w),
        specificity_at_sensitivities(np.repeat(yy, w), np.repeat(ss, w), grid), rtol=1e-12)
    with pytest.raises(MedauditError, match="sensitivities must lie in"):
        specificity_at_sensitivities(y, s, [1.5])


def test_vertical_segment_reads_its_top():
    # Sp = 0.5 is a vertical segment from Se 0.5 to Se 1 (the positive at 0.35)
    assert sensitivity_at_specificities([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], [0.5]).tolist() == [1.0]


@given(st.lists(st.integers(0, 5), min_size=4, max_size=25),
       st.lists(st.booleans(), min_size=4, max_size=25))
def test_monotone_in_specificity(svals, labels):
    n = min(len(svals), len(labels))
    y = np.array(labels[:n], dtype=float)
    y[:2] = [0, 1]
    s = np.array(svals[:n], dtype=float)
    g = np.linspace(0, 1, 41)
    se = sensitivity_at_specificities(y, s, g)
    assert np.all(np.diff(se) <= 1e-12) and se[0] == 1.0
    assert np.all((se >= 0) & (se <= 1))


def test_band_replicates_on_materialised_resamples():
    rng = np.random.default_rng(21)
    n = 70
    y = (rng.random(n) < 0.4).astype(float)
    s = np.round(rng.normal(size=n) + y, 1)  # mixed ties: the general kernel
    g = np.array([1.0, 0.95, 0.9, 0.7, 0.33, 0.0])
    band = roc_curve_band(y, s, specificities=g, design="ordinary", n_resamples=30, rng=9,
                          batch=8)
    draws = np.concatenate(list(make_plan("ordinary", y).batches(30, np.random.default_rng(9), 8)))
    for b in range(30):
        yb, sb = O.materialise(y, s, draws[b])
        if yb.min() == yb.max():
            assert np.isnan(band.replicates[b]).all()
            continue
        want = [O.se_at_sp(yb, sb, x) for x in g]
        np.testing.assert_allclose(band.replicates[b], want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(25))
def test_staircase_fast_path_equals_general_kernel(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    y = (rng.random(n) < 0.5).astype(float)
    y[:2] = [0, 1]
    # ties within a class only: negatives on a 0.1 grid, positives half-way between
    s = np.round(rng.normal(size=n), 1) + 0.05 * y + 3.0 * y * (seed % 2)
    so = KX.split_order(y, s)
    assert so is not None
    assert KX.split_order(np.array([0.0, 1.0]), np.array([0.5, 0.5])) is None
    counts = rng.integers(0, 4, size=(9, n))
    g = np.r_[np.linspace(0, 1, 11), rng.random(4)]
    r = K.rank(y, s)
    wr = np.take(counts, r.order, axis=1)
    tp = K._dot(wr, r.label)
    general = KX.se_at_sp_grid(KX.cols_from_ranked(wr), r, tp, K._rowsum(wr) - tp, g)
    laid = np.zeros_like(counts)
    laid[:, so.position] = counts
    np.testing.assert_allclose(KX.se_at_sp_split(laid, so, g), general, rtol=1e-14, atol=1e-15)


def test_band_fixed_seed_and_batch_independence():
    rng = np.random.default_rng(3)
    n = 500
    y = (rng.random(n) < 0.3).astype(float)
    s = rng.normal(size=n) + y
    a = roc_curve_band(y, s, n_resamples=300, rng=2026)
    b = roc_curve_band(y, s, n_resamples=300, rng=2026, batch=11)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert a.specificity.size == 101 and a.n_degenerate == 0 and a.seed == 2026
    np.testing.assert_allclose(a.sensitivity, sensitivity_at_specificities(y, s, a.specificity))
    assert np.all(a.ci_low <= a.sensitivity + 1e-12) and np.all(a.sensitivity <= a.ci_high + 1e-12)
    assert a.sensitivity[0] == 1.0 and a.ci_low[0] == 1.0  # Sp = 0: everything positive
    # the band's area is near the AUROC
    assert abs(np.trapezoid(a.sensitivity[::-1], 1 - a.specificity[::-1]) - roc_auc(y, s)) < 0.01


def test_one_class_and_bad_grids():
    with pytest.warns(UndefinedMetricWarning):
        c = roc_curve([1, 1], [0.2, 0.3])
    assert np.isnan(c.fpr).all()
    with pytest.raises(MedauditError, match="both positives and negatives"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            roc_curve_band([1, 1, 1], [0.1, 0.2, 0.3], n_resamples=5)
    with pytest.raises(MedauditError, match="specificities"):
        sensitivity_at_specificities([0, 1], [0.1, 0.2], [1.2])
    with pytest.raises(MedauditError, match="sample_weight"):
        roc_curve([0, 1], [0.1, 0.2], sample_weight=[0, 0])



# ----------------------------------------------------------------------------- precision-recall band
# Witnesses: hand-worked tie blocks; precision read off scikit-learn's precision_recall_curve
# (its points, highest threshold first) with the reading rule written out here; the PPV
# counted at M0.8's sensitivity threshold; materialised resamples for every replicate.
def _sk_precision_at(y, s, recalls, method, w=None):
    """Precision at each recall from sklearn's PR points (the last point has no threshold)."""
    prec, rec, _ = skm.precision_recall_curve(y, s, sample_weight=w)
    prec, rec = prec[:-1][::-1], rec[:-1][::-1]  # observed thresholds, highest first
    out = []
    for x in recalls:
        ok = np.flatnonzero(rec >= x - 1e-12)
        out.append(prec[ok[0]] if method == "threshold" else prec[ok].max())
    return np.array(out)


def test_pr_hand_worked_tie_blocks():
    # blocks (descending): .9 {1, 0} P 1/2 R 1/4; .7 {1} P 2/3 R 2/4; .5 {1, 0} P 3/5 R 3/4;
    # .2 {1} P 4/6 R 1
    y, s = [1, 0, 1, 0, 1, 1], [.9, .9, .7, .5, .5, .2]
    g = [0.0, 0.25, 0.3, 0.75, 1.0]
    assert precision_at_recalls(y, s, g).tolist() == [0.5, 0.5, 2 / 3, 0.6, 4 / 6]
    assert precision_at_recalls(y, s, g, method="interpolated").tolist() == [
        2 / 3, 2 / 3, 2 / 3, 4 / 6, 4 / 6]
    # a negative on top: at recall 0 the highest threshold calls it alone (precision 0)
    y, s = [0, 1, 1, 0], [.9, .8, .7, .1]
    assert precision_at_recalls(y, s, [0.0, 0.5, 1.0]).tolist() == [0.0, 0.5, 2 / 3]
    assert precision_at_recalls(y, s, [0.0], method="interpolated").tolist() == [2 / 3]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("method", ["threshold", "interpolated"])
def test_pr_precision_matches_sklearn_points(seed, method):
    y, s, w = _case(seed, ties=seed % 2 == 0, weights=seed % 3 == 0)
    g = np.r_[np.linspace(0, 1, 21), np.random.default_rng(seed).random(5)]
    got = precision_at_recalls(y, s, g, method=method, sample_weight=w)
    np.testing.assert_allclose(got, _sk_precision_at(y, s, g, method, w), rtol=1e-12, atol=0)


@pytest.mark.parametrize("seed", range(20))
def test_pr_precision_is_the_ppv_at_the_sensitivity_threshold(seed):
    y, s, _ = _case(seed)
    for x in (0.0, 0.1, 0.5, 0.8, 1.0):
        tau = threshold_for_sensitivity(y, s, min_sensitivity=x)
        pred = s >= tau
        want = (pred & (y == 1)).sum() / pred.sum()
        assert precision_at_recalls(y, s, [x])[0] == pytest.approx(want, rel=1e-12)


def test_pr_band_replicates_on_materialised_resamples():
    rng = np.random.default_rng(5)
    n = 40
    y = np.zeros(n)
    y[[1, 7]] = 1.0  # two positives: about 1 ordinary resample in 8 loses both
    s = np.round(rng.normal(size=n) + y, 1)
    g = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    for method in ("threshold", "interpolated"):
        with pytest.warns(DegenerateDataWarning, match="drew no positive"):
            band = precision_recall_band(y, s, recalls=g, method=method, design="ordinary",
                                         n_resamples=60, rng=9, batch=7)
        draws = np.concatenate(list(make_plan("ordinary", y).batches(60, np.random.default_rng(9),
                                                                     7)))
        n_bad = 0
        for b in range(60):
            yb, sb = O.materialise(y, s, draws[b])
            if yb.max() == 0:
                n_bad += 1
                assert np.isnan(band.replicates[b]).all()
                continue
            np.testing.assert_allclose(band.replicates[b], _sk_precision_at(yb, sb, g, method),
                                       rtol=1e-12, atol=0)
        assert band.n_degenerate == n_bad > 0
        ok = ~np.isnan(band.replicates).any(axis=1)
        np.testing.assert_array_equal(band.ci_low, np.percentile(band.replicates[ok], 2.5, axis=0))
        np.testing.assert_array_equal(band.ci_high,
                                      np.percentile(band.replicates[ok], 97.5, axis=0))


def test_pr_band_cluster_design_on_materialised_resamples():
    rng = np.random.default_rng(8)
    n = 60
    y = (rng.random(n) < 0.4).astype(float)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=n) + y, 1)
    patient = rng.integers(0, 20, size=n)  # several images per patient, classes mixed
    g = np.array([0.0, 0.3, 0.6, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        band = precision_recall_band(y, s, recalls=g, design="cluster", cluster=patient,
                                     n_resamples=40, rng=4, batch=6)
    plan = make_plan("cluster", y, cluster=patient)
    draws = np.concatenate(list(plan.batches(40, np.random.default_rng(4), 6)))
    for b in range(40):
        yb, sb = O.materialise(y, s, draws[b])
        if yb.max() == 0:
            assert np.isnan(band.replicates[b]).all()
            continue
        np.testing.assert_allclose(band.replicates[b], _sk_precision_at(yb, sb, g, "threshold"),
                                   rtol=1e-12, atol=0)
    assert band.design == "cluster"


def test_pr_band_fixed_seed_batch_independence_and_properties():
    rng = np.random.default_rng(3)
    n = 400
    y = (rng.random(n) < 0.3).astype(float)
    s = rng.normal(size=n) + y
    a = precision_recall_band(y, s, n_resamples=200, rng=2026)
    b = precision_recall_band(y, s, n_resamples=200, rng=2026, batch=13)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    assert a.recall.size == 101 and a.n_degenerate == 0 and a.seed == 2026
    assert a.design == "within_label" and a.method == "threshold"
    np.testing.assert_array_equal(a.precision, precision_at_recalls(y, s, a.recall))
    assert np.all(a.ci_low <= a.precision + 1e-12) and np.all(a.precision <= a.ci_high + 1e-12)
    # within label every replicate keeps n_pos and n_neg: at recall 1 everything down to the
    # lowest positive is called, at recall 0 the top score alone
    assert a.precision[-1] == pytest.approx(y.sum() / (s >= s[y == 1].min()).sum(), rel=1e-12)
    c = precision_recall_band(y, s, method="interpolated", n_resamples=200, rng=2026)
    assert np.all(c.replicates >= a.replicates)  # the envelope is never below the point
    assert np.all(np.diff(c.replicates, axis=1) <= 0)  # and it is monotone in recall
    # the band's mean precision approximates the average precision
    assert abs(np.mean(c.precision[1:]) - skm.average_precision_score(y, s)) < 0.02
    assert not a.ci_low.flags.writeable
    rec = a.to_dict()
    assert rec["method"] == "threshold" and "replicates" not in rec


@given(st.lists(st.floats(0, 1, allow_nan=False, width=32), min_size=4, max_size=30),
       st.integers(0, 2**31 - 1))
def test_pr_precision_invariant_to_monotone_transforms(svals, seed):
    s = np.asarray(svals, dtype=float)
    y = (np.random.default_rng(seed).random(s.size) < 0.5).astype(float)
    y[:2] = [0, 1]
    g = np.linspace(0, 1, 11)
    for method in ("threshold", "interpolated"):
        a = precision_at_recalls(y, s, g, method=method)
        dense = np.unique(s, return_inverse=True)[1]  # a strictly increasing map, exactly
        np.testing.assert_array_equal(a, precision_at_recalls(y, 3.0 * dense - 7.0, g,
                                                              method=method))
        assert np.all((a >= 0) & (a <= 1))


def test_pr_one_class_and_bad_grids():
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(precision_at_recalls([0, 0], [0.2, 0.3], [0.5])).all()
    with pytest.raises(MedauditError, match="both positives and negatives"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            precision_recall_band([1, 1, 1], [0.1, 0.2, 0.3], n_resamples=5)
    with pytest.raises(MedauditError, match="recalls"):
        precision_at_recalls([0, 1], [0.1, 0.2], [-0.1])
    with pytest.raises(MedauditError, match="method"):
        precision_at_recalls([0, 1], [0.1, 0.2], [0.5], method="linear")
