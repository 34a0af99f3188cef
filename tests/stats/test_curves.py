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

from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX
from medaudit.stats import (
    precision_recall_curve,
    roc_auc,
    roc_curve,
    roc_curve_band,
    sensitivity_at_specificities,
)
from medaudit.stats.designs import make_plan
from tests.stats import _oracles_peers as O

REF = Path(__file__).resolve().parents[1] / "reference"
DATA = pd.read_csv(REF / "peers_pROC_data.csv", comment="#")
COORDS_SP = pd.read_csv(REF / "coords_sp_pROC.csv", comment="#")


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


@pytest.mark.r_reference
@pytest.mark.parametrize("key", sorted(set(zip(COORDS_SP.dataset, COORDS_SP.curve, strict=True))))
def test_sensitivity_at_specificities_matches_pROC(key):
    ref = COORDS_SP[(COORDS_SP.dataset == key[0]) & (COORDS_SP.curve == key[1])]
    d = DATA[DATA.dataset == key[0]].sort_values("item")
    got = sensitivity_at_specificities(d.y_true, d[f"score_{key[1]}"], ref.specificity)
    np.testing.assert_allclose(got, ref.sensitivity, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(40))
def test_sensitivity_at_specificities_oracle(seed):
    y, s, w = _case(seed, weights=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    grid = np.r_[0.0, 1.0, rng.random(6), O.curve_sp_se(y, s, w)[2][0]]  # incl. a vertex
    got = sensitivity_at_specificities(y, s, grid, sample_weight=w)
    want = [O.se_at_sp(y, s, x, w) for x in grid]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


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
