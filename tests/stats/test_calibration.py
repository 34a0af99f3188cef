"""Calibration metrics (methods.md M0.7): the bin rule, ECE and reliability diagrams.

Witnesses: the slow oracles of ``tests/_oracles.py`` (pure-Python bin rule), the bin edges
checked exactly for every k/n, n = 2..50, and torchmetrics' ``binary_calibration_error``
for the ``"linspace"`` rule off its float32 edges (the anchors' netcal convention, trap T3/T4).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.metrics import (
    brier_score_loss,
)

from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import (
    bootstrap_metrics,
    brier_score,
    ece,
    log_loss,
    reliability_diagram,
)
from tests import _oracles as O
from tests import _oracles as oracle
from tests.stats._helpers import (
    ATOL_ZERO,
    RTOL,
    _approx,
    _cases,
    _prevalence_weights,
    _reference_manual_log_loss,
    _reference_sklearn_log_loss,
    labelled,
)

NS = range(2, 51)


# ------------------------------------------------------------------- the bin rule, exactly
@pytest.mark.parametrize("n", NS)
def test_every_edge_k_over_n_under_both_rules(n):
    x = np.array([k / n for k in range(n + 1)])  # the doubles a user types as k/n
    floor, lin = K.bin_index(x, n, "floor"), K.bin_index(x, n, "linspace")
    edges = np.linspace(0, 1, n + 1)
    assert edges.tolist() == O.linspace_edges(n)  # the oracle's edges are numpy's
    for k, v in enumerate(x.tolist()):
        assert floor[k] == O.bin_of(v, n, "floor") == min(math.floor(n * v), n - 1)
        assert lin[k] == O.bin_of(v, n, "linspace")
        if k < n:
            # floor: the double k/n lands in bin k or, where n * (k/n) rounds below k, k - 1
            assert floor[k] in (k - 1, k)
            # linspace: the bin whose float64 edges bracket the value
            assert edges[lin[k]] <= v < edges[lin[k] + 1]
        else:  # 1.0: the last bin (floor), a bin of its own (linspace, torchmetrics)
            assert (floor[k], lin[k]) == (n - 1, n)


def test_the_rules_differ_where_the_anchors_say():
    def differing(n):
        x = np.array([k / n for k in range(n)])
        return [k for k in range(n) if K.bin_index(x, n)[k] != K.bin_index(x, n, "linspace")[k]]
    assert differing(10) == [3, 6, 7]
    assert len(differing(20)) == 7
    assert differing(15) == []  # the 15-bin default is not affected


def test_anchor_example_both_rules():
    y, s = [1, 0, 0], [0.3, 0.3, 0.25]
    assert ece(y, s, n_bins=10) == pytest.approx((0.4 + 0.25) / 3, rel=1e-12)  # 0.2167
    assert ece(y, s, n_bins=10, binning="linspace") == pytest.approx(0.05, rel=1e-12)


@pytest.mark.parametrize("binning", ["floor", "linspace"])
@pytest.mark.parametrize("n_bins", [2, 7, 10, 15, 20])
def test_ece_matches_the_oracle_on_edge_values(binning, n_bins):
    rng = np.random.default_rng(n_bins)
    grid = np.r_[np.arange(n_bins + 1) / n_bins, rng.random(30)]
    s = rng.choice(grid, 80)
    y = (rng.random(80) < s).astype(float)
    assert ece(y, s, n_bins=n_bins, binning=binning) == pytest.approx(
        O.ece(y, s, n_bins, binning=binning), rel=1e-12, abs=1e-15)
    assert ece(y, s, n_bins=n_bins, binning=binning, prevalence=0.3) == pytest.approx(
        O.ece(y, s, n_bins, 0.3, binning=binning), rel=1e-12, abs=1e-15)


def test_linspace_rule_reproduces_torchmetrics_off_its_float32_edges():
    torch = pytest.importorskip("torch")
    tm = pytest.importorskip("torchmetrics.functional.classification")
    rng = np.random.default_rng(5)

    def theirs(y, s, n):
        return float(tm.binary_calibration_error(torch.tensor(s, dtype=torch.float64),
                                                 torch.tensor(y, dtype=torch.int64),
                                                 n_bins=n, norm="l1"))
    assert theirs([1, 0, 0], [0.3, 0.3, 0.25], 10) == pytest.approx(0.05, rel=1e-12)
    # probe finding, now documented: torchmetrics' edges are float32, and float32(0.7) lies
    # below the double 0.7, so 0.7 falls in [0.7, 0.8) there, as under "floor", not in
    # [0.6, 0.7) as on numpy's float64 edges
    assert theirs([1, 0], [0.7, 0.65], 10) == pytest.approx(ece([1, 0], [0.7, 0.65], n_bins=10),
                                                            rel=1e-12)
    assert ece([1, 0], [0.7, 0.65], n_bins=10, binning="linspace") == pytest.approx(0.175)
    for n in (2, 4, 8, 10, 15, 16, 32):
        s = rng.random(200)
        s[:5] = [0.0, 1.0, 1.0, 0.5, 0.25]
        if n in (2, 4, 8, 16, 32):  # torch.linspace gives numpy's edges exactly here
            s[5:5 + n + 1] = np.arange(n + 1) / n
        y = (rng.random(200) < s).astype(int)
        assert ece(y, s, n_bins=n, binning="linspace") == pytest.approx(theirs(y, s, n),
                                                                        rel=1e-12, abs=1e-15)


def test_reliability_diagram_uses_the_same_rule():
    y, s = [1, 0, 0, 1], [0.3, 0.3, 0.25, 1.0]
    rf = reliability_diagram(y, s, n_bins=10)
    rl = reliability_diagram(y, s, n_bins=10, binning="linspace")
    assert rf.bin_index.tolist() == [2, 3, 9]
    assert rl.bin_index.tolist() == [2, 10]  # 1.0 in its own bin
    assert rl.bin_low.tolist() == [0.2, 1.0] and rl.bin_high.tolist()[1] == 1.0
    assert rl.count.tolist() == [3, 1]


def test_bootstrap_ece_takes_the_rule():
    y, s = np.array([1, 0, 0, 1, 0, 1.0]), np.array([0.3, 0.3, 0.25, 0.7, 0.6, 0.9])
    r = bootstrap_metrics(y, s, metrics=[("ece", {"n_bins": 10, "binning": "linspace"}), "ece"],
                          n_resamples=20, rng=1, design="within_label")
    assert r["ece[binning=linspace,n_bins=10]"].estimate == pytest.approx(
        ece(y, s, n_bins=10, binning="linspace"), rel=1e-12)
    with pytest.raises(MedauditError, match="binning"):
        ece(y, s, binning="edges")


# ========================================================================== Brier (M0.7)
def test_brier_toy():
    # ((0.2 - 0)^2 + (0.6 - 1)^2) / 2 = (0.04 + 0.16) / 2 = 0.1
    assert brier_score([0, 1], [0.2, 0.6]) == _approx(0.1, rel=RTOL)
    # pi = 0.5: B_P = ((1-.6)^2 + (1-.9)^2 + 0)/3 = 0.17/3; B_N = 0.2^2 = 0.04
    #   BS_pi = 0.5 * 0.17/3 + 0.5 * 0.04 = 0.0483333...
    assert brier_score([0, 1, 1, 1], [0.2, 0.6, 0.9, 1.0], prevalence=0.5) == _approx(
        0.5 * 0.17 / 3 + 0.5 * 0.04, rel=RTOL
    )


@pytest.mark.parametrize("tied", [True, False], ids=["grid-with-0-and-1", "continuous"])
def test_brier_matches_sklearn_and_oracle(tied):
    for y, s in _cases(4, tied=tied):
        got = brier_score(y, s)
        assert_allclose(got, brier_score_loss(y, s), rtol=RTOL, atol=ATOL_ZERO)
        assert_allclose(got, oracle.brier(y, s), rtol=RTOL, atol=ATOL_ZERO)


def test_brier_prevalence_matches_weighted_sklearn_and_oracle():
    rng = np.random.default_rng(5)
    for y, s in _cases(5, tied=False):
        pi = float(rng.uniform(0.01, 0.99))
        got = brier_score(y, s, prevalence=pi)
        w = _prevalence_weights(y, pi)
        assert_allclose(got, brier_score_loss(y, s, sample_weight=w), rtol=RTOL)
        assert_allclose(got, oracle.brier_prevalence(y, s, pi), rtol=RTOL)


@given(labelled(prob=True), st.floats(0.01, 0.99))
def test_brier_prevalence_is_linear_in_pi(ys, pi):
    # M0.7 [INV]: BS_pi = B_N + pi (B_P - B_N), B_P / B_N the mean squared error per class.
    y, s = ys
    b_pos = brier_score(y[y == 1], s[y == 1])
    b_neg = brier_score(y[y == 0], s[y == 0])
    assert_allclose(brier_score(y, s, prevalence=pi), b_neg + pi * (b_pos - b_neg), rtol=RTOL, atol=ATOL_ZERO)


@given(labelled(prob=True))
def test_prevalence_weighting_at_observed_prevalence_is_unweighted(ys):
    # At pi = |P|/n every weight is 1/n: the standardised metric is the raw one.
    y, s = ys
    pi = float(y.mean())
    assert_allclose(brier_score(y, s, prevalence=pi), brier_score(y, s), rtol=RTOL, atol=ATOL_ZERO)
    assert_allclose(log_loss(y, s, prevalence=pi), log_loss(y, s), rtol=RTOL, atol=ATOL_ZERO)
    assert_allclose(ece(y, s, prevalence=pi), ece(y, s), rtol=RTOL, atol=ATOL_ZERO)


# ======================================================================= log loss (M0.7)
def test_log_loss_toy():
    # -(ln 0.5 + ln 0.5)/2 = ln 2
    assert log_loss([0, 1], [0.5, 0.5]) == _approx(math.log(2), rel=RTOL)
    # -(ln 0.8 + ln(1 - 0.4))/2 = (0.22314 + 0.51083)/2 = 0.36698
    assert log_loss([1, 0], [0.8, 0.4]) == _approx(-(math.log(0.8) + math.log(0.6)) / 2, rel=RTOL)


@pytest.mark.parametrize("tied", [True, False], ids=["grid-with-0-and-1", "continuous"])
def test_log_loss_matches_sklearn_oracle_and_formula(tied):
    for y, s in _cases(6, tied=tied):
        got = log_loss(y, s)
        assert_allclose(got, _reference_sklearn_log_loss(y, s), rtol=RTOL, atol=ATOL_ZERO)
        assert_allclose(got, oracle.log_loss(y, s), rtol=RTOL, atol=ATOL_ZERO)
        assert_allclose(got, _reference_manual_log_loss(y, s), rtol=RTOL, atol=ATOL_ZERO)


@pytest.mark.parametrize("eps", [1e-15, 1e-7, 1e-3])
def test_log_loss_prevalence_matches_weighted_sklearn_and_oracle(eps):
    rng = np.random.default_rng(7)
    for y, s in _cases(7, tied=True):
        pi = float(rng.uniform(0.01, 0.99))
        got = log_loss(y, s, eps=eps, prevalence=pi)
        w = _prevalence_weights(y, pi)
        assert_allclose(
            got, _reference_sklearn_log_loss(y, s, eps=eps, sample_weight=w), rtol=RTOL, atol=ATOL_ZERO
        )
        assert_allclose(got, oracle.log_loss(y, s, eps=eps, pi=pi), rtol=RTOL, atol=ATOL_ZERO)


def test_log_loss_is_finite_at_exact_zero_and_one():
    # a confident error costs -ln(eps), not infinity:
    # y = (1, 0), s = (0, 0): (-ln(1e-15) - ln(1 - 1e-15)) / 2 = (34.538776... + 1e-15) / 2
    assert log_loss([1, 0], [0.0, 0.0]) == _approx((-math.log(1e-15) - math.log1p(-1e-15)) / 2, rel=RTOL)
    assert log_loss([1, 0], [0.0, 0.0], eps=1e-7) == _approx(
        (-math.log(1e-7) - math.log1p(-1e-7)) / 2, rel=RTOL
    )
    # perfect predictions at exactly 0 and 1 cost (almost) nothing, finitely
    perfect = log_loss([1, 0], [1.0, 0.0])
    assert 0.0 < perfect < 2e-15
    for pi in (0.1, 0.5):
        assert math.isfinite(log_loss([1, 0, 1], [0.0, 1.0, 1.0], prevalence=pi))


# ============================================================================ ECE (M0.7)
def test_ece_toy():
    # 15 bins: 0.1 -> bin 1, 0.9 -> bin 13, 1.0 -> bin 14; |0.1 - 0| + |0.9 - 1| + |1 - 1|
    #   = (0.1 + 0.1 + 0) / 3
    assert ece([0, 1, 1], [0.1, 0.9, 1.0]) == _approx(0.2 / 3, rel=RTOL)


def test_T2_score_of_exactly_one_is_in_the_last_bin():
    # 0.95 >= 14/15 = 0.9333 -> bin 14; 1.0 must join it (not an extra 16th bucket):
    #   same bin:  |(1.0 - 0) + (0.95 - 1)| / 2 = 0.95 / 2 = 0.475
    #   own bucket: (|1.0 - 0| + |0.95 - 1|) / 2 = 1.05 / 2 = 0.525
    assert ece([0, 1], [1.0, 0.95], n_bins=15) == _approx(0.475, rel=RTOL)
    assert oracle.ece([0, 1], [1.0, 0.95], 15) == _approx(0.475, rel=RTOL)
    assert reliability_diagram([0], [1.0]).bin_index.tolist() == [9]
    assert reliability_diagram([0], [1.0], n_bins=15).bin_index.tolist() == [14]


def test_ece_score_of_one_fifteenth_is_in_bin_one():
    # B_1 = [0, 1/15), B_2 = [1/15, 2/15): the float 1/15 lands in bin index 1
    # (min(floor(15 * s), 14) = floor(1.0) = 1).  With 0.05 in bin 0:
    #   separate bins: (|1/15 - 1| + |0.05 - 0|) / 2 = (14/15 + 0.05) / 2 = 0.491667
    #   one bin:       |1/15 - 1 + 0.05| / 2 = 0.441667
    assert reliability_diagram([1], [1 / 15], n_bins=15).bin_index.tolist() == [1]
    assert ece([1, 0], [1 / 15, 0.05]) == _approx((1 - 1 / 15 + 0.05) / 2, rel=RTOL)


def test_ece_empty_bins_contribute_zero():
    # 4 images in 2 of 15 bins, 13 bins empty:
    #   bin 3 ([0.2, 0.2667)): s = 0.25, 0.21; y = 0, 1 -> |0.25 + 0.21 - 1| = 0.54
    #   bin 12 ([0.8, 0.8667)): s = 0.85, 0.80; y = 1, 1 -> |1.65 - 2| = 0.35
    #   ECE = (0.54 + 0.35) / 4 = 0.2225
    y, s = [0, 1, 1, 1], [0.25, 0.21, 0.85, 0.80]
    assert ece(y, s) == _approx(0.89 / 4, rel=RTOL)
    assert reliability_diagram(y, s, n_bins=15).bin_index.tolist() == [3, 12]


def test_T3_bins_are_fixed_on_unit_interval_not_on_observed_range():
    # s = 0.21 (y = 1) and 0.25 (y = 0) both fall in the fixed bin [0.2, 0.2667):
    #   ECE = |0.21 - 1 + 0.25 - 0| / 2 = 0.27
    # Bins spread over the observed range [0.21, 0.25] (FairMedFM's pd.cut) would separate
    # them: (0.79 + 0.25) / 2 = 0.52.
    y, s = np.array([1.0, 0.0]), np.array([0.21, 0.25])
    assert ece(y, s) == _approx(0.27, rel=RTOL)
    edges = np.linspace(s.min(), s.max(), 16)
    b = np.minimum(np.searchsorted(edges, s, side="right") - 1, 14)
    range_ece = sum(abs(np.sum(s[b == k] - y[b == k])) for k in np.unique(b)) / s.size
    assert range_ece == _approx(0.52, rel=RTOL)
    assert ece(y, s) != _approx(range_ece)


@pytest.mark.parametrize("tied", [True, False], ids=["grid-with-0-and-1", "continuous"])
@pytest.mark.parametrize("n_bins", [1, 10, 15, 49])
def test_ece_matches_oracle(tied, n_bins):
    rng = np.random.default_rng(8)
    for y, s in _cases(8 + n_bins, tied=tied, n_cases=60):
        assert_allclose(ece(y, s, n_bins=n_bins), oracle.ece(y, s, n_bins), rtol=RTOL, atol=ATOL_ZERO)
        pi = float(rng.uniform(0.01, 0.99))
        assert_allclose(
            ece(y, s, n_bins=n_bins, prevalence=pi), oracle.ece(y, s, n_bins, pi), rtol=RTOL, atol=ATOL_ZERO
        )


# =========================================================== reliability diagram (M0.7)
def test_reliability_diagram_toy():
    # 10 bins: 0.05 -> bin 0; 0.95, 1.0 -> bin 9 (the last bin includes 1.0)
    rb = reliability_diagram([0, 1, 1], [0.05, 0.95, 1.0])
    assert rb.n_bins == 10
    assert rb.bin_index.tolist() == [0, 9]
    assert rb.count.tolist() == [1, 2]
    assert_allclose(rb.mean_score, [0.05, 0.975], rtol=RTOL)
    assert rb.fraction_positive.tolist() == [0.0, 1.0]
    assert_allclose(rb.bin_low, [0.0, 0.9], rtol=RTOL)
    assert_allclose(rb.bin_high, [0.1, 1.0], rtol=RTOL)


def test_reliability_diagram_matches_manual_binning():
    for y, s in _cases(9, tied=True, n_cases=60):
        rb = reliability_diagram(y, s)
        b = np.array([min(math.floor(10 * v), 9) for v in s])
        present = sorted(set(b.tolist()))
        assert rb.n_bins == 10
        assert rb.bin_index.tolist() == present  # empty bins omitted
        assert int(rb.count.sum()) == y.size
        assert (rb.count > 0).all()
        for k, idx in enumerate(present):
            members = b == idx
            assert rb.count[k] == members.sum()
            assert_allclose(rb.mean_score[k], s[members].mean(), rtol=RTOL)
            assert_allclose(rb.fraction_positive[k], y[members].mean(), rtol=RTOL)
        # the diagram carries the ECE: sum_b |B_b|/n |mean s - mean y| (M0.7 eq. 5)
        gap = np.sum(rb.count / y.size * np.abs(rb.mean_score - rb.fraction_positive))
        assert_allclose(gap, ece(y, s, n_bins=10), rtol=RTOL, atol=ATOL_ZERO)
