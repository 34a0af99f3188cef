"""Point metrics of medaudit.stats: ranking, calibration, operating points, selective prediction.

Every statistic has three witnesses (house style, testing rule 2):

* a hand-worked toy case, with the arithmetic in a comment;
* an independent implementation at ``rtol=1e-12``: the slow loop oracles of
  ``tests/_oracles.py`` (written from the definitions in methods.md M0.7/M0.8) and, where
  the convention is the same, scikit-learn (``_reference_sklearn_*`` helpers below);
* property tests (hypothesis, deterministic profile from ``tests/conftest.py``).

The convention traps of anchors.md section 4 are tested by name (T1, T2, T3, T5, T8).
Soft-label metrics are in ``test_soft.py``; bad inputs in ``tests/test_validation.py``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose
from sklearn.metrics import (
    average_precision_score,
    brier_score_loss,
    roc_auc_score,
    roc_curve,
)
from sklearn.metrics import log_loss as sklearn_log_loss

from medaudit.exceptions import UndefinedMetricWarning
from medaudit.stats import (
    aurc,
    average_precision,
    brier_score,
    ece,
    log_loss,
    operating_point,
    reliability_diagram,
    risk_coverage_curve,
    roc_auc,
    selective_risk,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    threshold_for_sensitivity,
    threshold_for_specificity,
)
from tests import _oracles as oracle

RTOL = 1e-12
# Absolute slack only where the exact value can be 0 (ECE of a calibrated bin, the log loss
# of a perfect prediction clipped at eps): there a relative tolerance means nothing.
ATOL_ZERO = 1e-15
EPS = 1e-15  # medaudit's default log-loss clipping


# ------------------------------------------------------------------------------ helpers
def _approx(expected, rel=RTOL, abs=0.0):  # noqa: A002 - pytest.approx's own keyword
    """pytest.approx without its default abs=1e-12, which would swamp small values."""
    return pytest.approx(expected, rel=rel, abs=abs)


def _random_case(rng: np.random.Generator, n: int, *, tied: bool):
    """Labels with >= 1 positive and >= 1 negative (n >= 2); probabilities, tied or not.

    The tied grid {0, 0.2, ..., 1} gives heavy ties and also exact 0 and 1.
    """
    y = rng.integers(0, 2, n).astype(float)
    if n >= 2:  # n = 1 is only asked for by metrics defined on one class (AURC)
        i, j = rng.choice(n, size=2, replace=False)
        y[i], y[j] = 1.0, 0.0
    s = rng.integers(0, 6, n) / 5.0 if tied else rng.random(n)
    return y, s


def _cases(seed: int, *, tied: bool, n_cases: int = 150, n_min: int = 2, n_max: int = 30):
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        yield _random_case(rng, int(rng.integers(n_min, n_max + 1)), tied=tied)


def _prevalence_weights(y, pi):
    """Per-image weights of M0.7: pi/|P| for positives, (1-pi)/|N| for negatives."""
    y = np.asarray(y, dtype=float)
    n_pos = y.sum()
    return np.where(y == 1, pi / n_pos, (1.0 - pi) / (y.size - n_pos))


def _reference_sklearn_log_loss(y, s, *, eps=EPS, sample_weight=None):
    # sklearn >= 1.5 dropped ``eps``; clip ourselves exactly as medaudit declares it does.
    return sklearn_log_loss(
        y,
        np.clip(np.asarray(s, dtype=float), eps, 1 - eps),
        labels=[0, 1],
        sample_weight=sample_weight,
    )


def _reference_manual_log_loss(y, s, *, eps=EPS):
    y = np.asarray(y, dtype=float)
    c = np.clip(np.asarray(s, dtype=float), eps, 1 - eps)
    return float(np.mean(-(y * np.log(c) + (1 - y) * np.log1p(-c))))


def _reference_sklearn_threshold_for_sensitivity(y, s, x, *, drop_intermediate):
    """Highest ROC threshold with TPR >= x, read off sklearn's roc_curve."""
    _, tpr, thr = roc_curve(y, s, drop_intermediate=drop_intermediate)
    return float(thr[np.argmax(tpr >= x)])


# ------------------------------------------------------------------ hypothesis strategies
@st.composite
def labelled(
    draw, *, prob: bool, ties: bool | None = None, min_size: int = 2, max_size: int = 30, unique: bool = False
):
    """(y, s) with at least one positive and one negative.

    ``prob``: scores in [0, 1] (else in [-1e3, 1e3]).  ``ties``: draw scores from a coarse
    grid (heavy ties); ``None`` lets hypothesis choose.  ``unique``: no tied scores.
    """
    n = draw(st.integers(min_size, max_size))
    y = draw(arrays(np.int8, n, elements=st.integers(0, 1))).astype(float)
    i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    y[i], y[j] = 1.0, 0.0
    use_grid = (draw(st.booleans()) if ties is None else ties) and not unique
    if use_grid:
        k = draw(arrays(np.int64, n, elements=st.integers(0, 10)))
        s = k / 10.0 if prob else (k - 5.0) * 7.0
    else:
        lo, hi = (0.0, 1.0) if prob else (-1e3, 1e3)
        s = draw(
            arrays(
                np.float64,
                n,
                unique=unique,
                elements=st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False),
            )
        )
    return y, s


@st.composite
def labelled_grid(draw, max_size: int = 30):
    """(y, s) with s on the grid k/50, k in [-500, 500]: both tied and untied values.

    On this grid s**3 + 2 and exp(s) are strictly increasing *in floating point too*
    (neighbours stay distinct), so rank invariance can be asserted exactly.
    """
    n = draw(st.integers(2, max_size))
    y = draw(arrays(np.int8, n, elements=st.integers(0, 1))).astype(float)
    i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    y[i], y[j] = 1.0, 0.0
    s = draw(arrays(np.int64, n, elements=st.integers(-500, 500))) / 50.0
    return y, s


# ===================================================================== AUROC (M0.7)
def test_roc_auc_toy():
    # pairs (pos, neg): (0.35, 0.1) = 1, (0.35, 0.4) = 0, (0.8, 0.1) = 1, (0.8, 0.4) = 1 -> 3/4
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
    # with a tie: pos {0.5, 0.9}, neg {0.5, 0.1}: 0.5 + 1 + 1 + 1 = 3.5 of 4 pairs.
    # Mid-ranks (ascending): 0.1 -> 1, 0.5 -> 2.5, 0.5 -> 2.5, 0.9 -> 4; R_P = 6.5;
    # (R_P - |P|(|P|+1)/2) / (|P||N|) = (6.5 - 3) / 4 = 0.875
    assert roc_auc([0, 1, 1, 0], [0.5, 0.5, 0.9, 0.1]) == 0.875


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_roc_auc_matches_oracle_and_sklearn(tied):
    for y, s in _cases(1, tied=tied):
        got = roc_auc(y, s)
        assert_allclose(got, oracle.auroc_pairwise(y, s), rtol=RTOL)
        assert_allclose(got, roc_auc_score(y, s), rtol=RTOL)


@given(labelled(prob=False))
def test_roc_auc_matches_oracle_property(ys):
    y, s = ys
    assert_allclose(roc_auc(y, s), oracle.auroc_pairwise(y, s), rtol=RTOL)


# ============================================================ average precision (M0.7)
def test_average_precision_toy():
    # ranks 1 (pos), 2 (neg), 3 (pos): (TP_1/1 + TP_3/3)/|P| = (1/1 + 2/3)/2 = 5/6
    assert average_precision([1, 0, 1], [0.9, 0.8, 0.7]) == _approx(5 / 6, rel=RTOL)
    assert average_precision([1, 0, 1], [0.9, 0.8, 0.7], ties="pooled") == _approx(5 / 6, rel=RTOL)


def test_average_precision_tie_conventions_toy():
    # M1.2 tie example: s = 0.9, 0.7, 0.7, 0.7, 0.2, 0.1 with y = 1, 0, 1, 1, 0, 0.
    s, y = [0.9, 0.7, 0.7, 0.7, 0.2, 0.1], [1, 0, 1, 1, 0, 0]
    # individual (stable, input order in the tie): positives at ranks 1, 3, 4
    #   (1/1 + 2/3 + 3/4)/3 = 29/36 = 0.80556
    assert average_precision(y, s) == _approx(29 / 36, rel=RTOL)
    # pooled: t = 0.9 -> recall 1/3, precision 1/1; t = 0.7 -> recall 1, precision 3/4
    #   1/3 * 1 + (1 - 1/3) * 3/4 = 5/6 = 0.83333 (sklearn's convention)
    assert average_precision(y, s, ties="pooled") == _approx(5 / 6, rel=RTOL)
    # individual ranks depend on the order inside the tie: positives first -> ranks 1, 2, 3
    assert average_precision([1, 1, 1, 0, 0, 0], s) == _approx(1.0, rel=RTOL)
    assert average_precision([1, 1, 1, 0, 0, 0], s, ties="pooled") == _approx(5 / 6, rel=RTOL)


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_average_precision_pooled_matches_sklearn_and_oracle(tied):
    for y, s in _cases(2, tied=tied):
        got = average_precision(y, s, ties="pooled")
        assert_allclose(got, average_precision_score(y, s), rtol=RTOL)
        assert_allclose(got, oracle.average_precision_pooled(y, s), rtol=RTOL)


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_average_precision_individual_matches_oracle(tied):
    for y, s in _cases(3, tied=tied):
        assert_allclose(
            average_precision(y, s, ties="individual"), oracle.average_precision_individual(y, s), rtol=RTOL
        )


@given(labelled(prob=False, unique=True))
def test_T8_average_precision_conventions_agree_without_ties(ys):
    # T8: the paper orders ties individually, sklearn pools them; untied, they coincide.
    y, s = ys
    individual = average_precision(y, s, ties="individual")
    assert_allclose(individual, average_precision(y, s, ties="pooled"), rtol=RTOL)
    assert_allclose(individual, average_precision_score(y, s), rtol=RTOL)


def test_average_precision_individual_is_exact_when_positive_ranked_last():
    # 999 negatives scored above 1 positive: the positive sits at rank 1000 with TP = 1, so
    # AP = (1/|P|) * TP/k = 1/1000 exactly (individual and pooled agree: no ties).
    # sklearn gets 0.001 to the last bit.  Regression test: a kernel that evaluated the
    # precision as 1 + (C - K)(H[K+1] - H[K]) from a cumulative harmonic table cancelled
    # catastrophically here (two ~7.5-sized harmonic numbers times C - K = -999): it gave
    # 9.999999996663789e-04, relative error 3e-10, growing to ~4e-7 at n = 1e5.
    n = 1000
    y = np.r_[np.zeros(n - 1), 1.0]
    s = np.linspace(1.0, 0.0, n)
    assert average_precision_score(y, s) == _approx(1e-3, rel=RTOL)
    assert average_precision(y, s, ties="pooled") == _approx(1e-3, rel=RTOL)
    assert average_precision(y, s, ties="individual") == _approx(1e-3, rel=RTOL)


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


# ============================================================ operating points (M0.7)
def test_operating_points_toy():
    # y = 0 0 0 0 1 1, s = .1 .2 .3 .7 .6 .8; thresholds (Se, Sp):
    #   .8 (.5, 1)  .7 (.5, .75)  .6 (1, .75)  .3 (1, .5) ...  +inf (0, 1)
    y, s = [0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.7, 0.6, 0.8]
    assert sensitivity_at_specificity(y, s, min_specificity=0.75) == 1.0
    assert sensitivity_at_specificity(y, s, min_specificity=1.0) == 0.5
    assert specificity_at_sensitivity(y, s, min_sensitivity=1.0) == 0.75
    assert specificity_at_sensitivity(y, s, min_sensitivity=0.5) == 1.0
    # only the t = +inf point has Sp >= 1 when the top score is a negative
    assert sensitivity_at_specificity([0, 1], [0.9, 0.1], min_specificity=1.0) == 0.0


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_se_at_sp_and_sp_at_se_match_oracle(tied):
    rng = np.random.default_rng(10)
    for y, s in _cases(10, tied=tied):
        for x in (0.0, 0.5, 0.9, 0.95, 1.0, float(rng.random())):
            assert_allclose(
                sensitivity_at_specificity(y, s, min_specificity=x), oracle.se_at_sp(y, s, x), rtol=RTOL
            )
            assert_allclose(
                specificity_at_sensitivity(y, s, min_sensitivity=x), oracle.sp_at_se(y, s, x), rtol=RTOL
            )


# ===================================================== source-threshold rules (M0.8)
def test_threshold_for_sensitivity_toy():
    # positives .9 .8 .7 .2; k = ceil(0.75 * 4) = 3 -> 3rd largest positive = 0.7
    assert threshold_for_sensitivity([1, 1, 1, 1, 0], [0.9, 0.8, 0.7, 0.2, 0.5], min_sensitivity=0.75) == 0.7


def test_threshold_for_specificity_tie_break_toy():
    # y: pos .9, .5; neg .8, .6, .2, .1.  min_specificity = 0.75:
    #   t = .9: Se 1/2, Sp 4/4   feasible
    #   t = .8: Se 1/2, Sp 3/4   feasible   <- same Se; the rule prefers the higher Sp
    #   t = .6: Se 1/2, Sp 2/4   infeasible
    #   t = .5: Se 2/2, Sp 2/4   infeasible
    # max Se = 1/2 at t in {.9, .8}; ties -> higher Sp -> t = 0.9 (not the lowest t, 0.8,
    # which a scan of the ROC curve to its last feasible point would return).
    y = [1, 0, 0, 1, 0, 0]
    s = [0.9, 0.8, 0.6, 0.5, 0.2, 0.1]
    assert threshold_for_specificity(y, s, min_specificity=0.75) == 0.9
    assert oracle.tau_specificity(y, s, 0.75) == 0.9
    # min_specificity = 0.5 admits t = .5 with Se = 1: it maximises Se
    assert threshold_for_specificity(y, s, min_specificity=0.5) == 0.5


def test_threshold_for_specificity_infeasible_is_inf():
    # top score is a negative: every observed t has Sp < 1, so nothing meets Sp >= 0.95
    assert threshold_for_specificity([0, 1], [0.9, 0.1], min_specificity=0.95) == math.inf
    assert oracle.tau_specificity([0, 1], [0.9, 0.1], 0.95) == math.inf
    # the same sample with the +inf threshold: Se = 0, Sp = 1
    op = operating_point([0, 1], [0.9, 0.1], threshold=math.inf)
    assert (op.sensitivity, op.specificity) == (0.0, 1.0)


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_threshold_rules_match_oracle(tied):
    rng = np.random.default_rng(11)
    for y, s in _cases(11, tied=tied, n_cases=300):
        for x in (0.0, 0.5, 0.8, 0.9, 0.95, 1.0, float(rng.random())):
            assert threshold_for_sensitivity(y, s, min_sensitivity=x) == oracle.tau_sensitivity(y, s, x)
            assert threshold_for_specificity(y, s, min_specificity=x) == oracle.tau_specificity(y, s, x)


@given(labelled(prob=False), st.floats(0.0, 1.0))
def test_threshold_rules_are_observed_scores_and_consistent(ys, x):
    y, s = ys
    observed = set(s.tolist())
    t_se = threshold_for_sensitivity(y, s, min_sensitivity=x)
    t_sp = threshold_for_specificity(y, s, min_specificity=x)
    assert t_se in observed
    assert t_sp in observed or t_sp == math.inf
    # tau_sp attains sensitivity_at_specificity (the +inf point gives Se = 0 when infeasible)
    assert operating_point(y, s, threshold=t_sp).sensitivity == _approx(
        sensitivity_at_specificity(y, s, min_specificity=x), rel=RTOL
    )
    op = operating_point(y, s, threshold=t_se)
    assert op.sensitivity >= x - 1e-12
    if x > 1e-12:  # x <= the 1e-12 guard is also met by t = +inf (Sp = 1), not observed
        assert op.specificity == _approx(specificity_at_sensitivity(y, s, min_sensitivity=x), rel=RTOL)


def test_T1_sklearn_drop_intermediate_can_give_a_lower_threshold():
    # T1: "highest tau with Se >= 0.95" read off sklearn's roc_curve with the default
    # drop_intermediate=True can land on a lower threshold, because the ROC point where Se
    # first reaches 0.95 may lie on a collinear segment and be dropped.  With
    # drop_intermediate=False every distinct score is a threshold and sklearn agrees.
    x = 0.95
    differing = None
    for seed in range(300):  # deterministic search for a small cohort that shows the trap
        rng = np.random.default_rng(seed)
        y = np.r_[np.ones(20), np.zeros(40)]
        s = np.round(np.r_[rng.normal(1.0, 1.0, 20), rng.normal(0.0, 1.0, 40)], 1)
        ours = threshold_for_sensitivity(y, s, min_sensitivity=x)
        assert _reference_sklearn_threshold_for_sensitivity(y, s, x, drop_intermediate=False) == ours
        dropped = _reference_sklearn_threshold_for_sensitivity(y, s, x, drop_intermediate=True)
        assert dropped <= ours
        if dropped < ours:
            differing = (seed, ours, dropped)
            break
    assert differing is not None, "no seed in 0..299 showed the drop_intermediate trap"
    seed, ours, dropped = differing
    assert operating_point(y, s, threshold=ours).sensitivity >= x
    # both thresholds reach Se >= 0.95; sklearn's costs specificity
    assert (
        operating_point(y, s, threshold=dropped).specificity
        < operating_point(y, s, threshold=ours).specificity
    )


def test_threshold_for_sensitivity_570_of_600_is_feasible():
    # M0.8: the source Se is exactly 570/600 = 0.95.  600 distinct positive scores; the
    # rule returns the k-th largest with k = ceil(0.95 * 600) = 570.
    pos = (np.arange(600) + 0.5) / 600.0
    neg = np.random.default_rng(12).random(300)
    y, s = np.r_[np.ones(600), np.zeros(300)], np.r_[pos, neg]
    kth = np.sort(pos)[::-1][569]
    assert threshold_for_sensitivity(y, s, min_sensitivity=0.95) == kth
    assert operating_point(y, s, threshold=kth).sensitivity == 0.95  # 570/600, exactly
    # float noise above 0.95 (one ulp) must not push the rule to the 571st positive ...
    assert threshold_for_sensitivity(y, s, min_sensitivity=np.nextafter(0.95, 1.0)) == kth
    # ... but a genuinely higher target does: ceil((0.95 + 1e-9) * 600) = 571
    assert threshold_for_sensitivity(y, s, min_sensitivity=0.95 + 1e-9) == np.sort(pos)[::-1][570]


def test_threshold_for_specificity_5700_of_6000_is_feasible():
    # M0.8: the source Sp is exactly 5,700/6,000 = 0.95.  Negatives (j + 0.5)/6000; the
    # 5,700th smallest is 0.949917 and the 5,701st 0.950083.  A positive at 0.95 sits
    # between them: at t = 0.95 exactly 5,700 negatives are below t -> Sp = 0.95, and it is
    # the lowest feasible observed score, so it maximises Se.
    neg = (np.arange(6000) + 0.5) / 6000.0
    pos = np.r_[0.95, np.linspace(0.96, 1.0, 50), np.linspace(0.1, 0.9, 49)]
    y, s = np.r_[np.zeros(6000), np.ones(pos.size)], np.r_[neg, pos]
    assert threshold_for_specificity(y, s, min_specificity=0.95) == 0.95
    assert operating_point(y, s, threshold=0.95).specificity == 0.95
    assert threshold_for_specificity(y, s, min_specificity=np.nextafter(0.95, 1.0)) == 0.95


def test_operating_point_toy():
    # s >= 0.5: TP = 2 of 2 positives, TN = 1 of 2 negatives (0.5 is predicted positive)
    op = operating_point([0, 0, 1, 1], [0.2, 0.5, 0.5, 0.9], threshold=0.5)
    assert (op.sensitivity, op.specificity, op.n_pos, op.n_neg) == (1.0, 0.5, 2.0, 2.0)
    assert op.threshold == 0.5
    op = operating_point([0, 0, 1, 1], [0.2, 0.5, 0.5, 0.9], threshold=math.inf)
    assert (op.sensitivity, op.specificity) == (0.0, 1.0)


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_operating_point_matches_oracle(tied):
    rng = np.random.default_rng(13)
    for y, s in _cases(13, tied=tied):
        for tau in (*rng.choice(s, 3), math.inf, -1.0, 2.0, float(rng.random())):
            op = operating_point(y, s, threshold=tau)
            se, sp = oracle.se_sp_at(y, s, tau)
            assert (op.sensitivity, op.specificity) == _approx((se, sp), rel=RTOL)


def test_operating_point_absent_class_rate_is_nan():
    op = operating_point([1, 1], [0.2, 0.3], threshold=0.25)
    assert op.sensitivity == 0.5
    assert math.isnan(op.specificity)


# ======================================================== selective prediction (M0.7)
def test_selective_risk_toy():
    # confidence max(s, 1-s): .95 .9 .6 .55 (already descending); decision 1{s >= .5}:
    #   1 1 0 1 vs y 1 0 1 0 -> errors 0 1 1 1; risk(k) = 0, 1/2, 2/3, 3/4
    y, s = [1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55]
    assert selective_risk(y, s, coverage=0.5) == 0.5  # k = ceil(2) = 2
    assert selective_risk(y, s, coverage=0.25) == 0.0
    assert selective_risk(y, s, coverage=1.0) == 0.75
    assert selective_risk(y, s, coverage=0.6) == _approx(2 / 3, rel=RTOL)  # k = ceil(2.4)
    # s = 0.5 is predicted positive (T5: not argmax-with-0.5-negative)
    assert selective_risk([1], [0.5], coverage=1.0) == 0.0
    assert selective_risk([0], [0.5], coverage=1.0) == 1.0


@pytest.mark.parametrize("tied", [True, False], ids=["tied-confidence", "untied"])
def test_selective_risk_matches_oracle(tied):
    rng = np.random.default_rng(14)
    for y, s in _cases(14, tied=tied):
        for c in (0.1, 0.5, 0.8, 0.9, 1.0, float(rng.uniform(0.01, 1.0))):
            assert_allclose(
                selective_risk(y, s, coverage=c), oracle.risk_at_coverage(y, s, c), rtol=RTOL, atol=0
            )


def test_selective_risk_montgomery_k():
    # M0.7 [VERIFIED]: Montgomery (n = 138) matches k = ceil(c n): 0.8 * 138 = 110.4 -> 111,
    # 0.9 * 138 = 124.2 -> 125 (round() would give 110 and 124).  Confidence strictly
    # decreasing, every image predicted positive; the only errors are the negatives at
    # confidence ranks 111 and 125, so neighbouring k give different risks:
    #   risk(110) = 0, risk(111) = 1/111, risk(112) = 1/112
    #   risk(124) = 1/124, risk(125) = 2/125, risk(126) = 2/126
    n = 138
    s = 1.0 - np.arange(n) / 1000.0
    y = np.ones(n)
    y[[110, 124]] = 0.0
    curve = risk_coverage_curve(y, s).risk
    assert curve[[109, 110, 111]].tolist() == [0.0, 1 / 111, 1 / 112]
    assert curve[[123, 124, 125]].tolist() == [1 / 124, 2 / 125, 2 / 126]
    assert selective_risk(y, s, coverage=0.8) == _approx(1 / 111, rel=RTOL)
    assert selective_risk(y, s, coverage=0.9) == _approx(2 / 125, rel=RTOL)


def test_aurc_toy_and_T5_not_normalised():
    # risks 0, 1/2, 2/3, 3/4 (see test_selective_risk_toy); trapezoid over coverage 1/4..1:
    #   (1/4) [(0 + 1/2)/2 + (1/2 + 2/3)/2 + (2/3 + 3/4)/2] = (1/4)(6 + 14 + 17)/24 = 37/96
    y, s = [1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55]
    assert aurc(y, s) == _approx(37 / 96, rel=RTOL)
    # T5: torch-uncertainty rescales by 1/(1 - 1/n) -> 37/72 = 0.5139; medaudit does not
    assert aurc(y, s) != _approx((37 / 96) / (1 - 1 / 4), rel=1e-6)
    assert oracle.aurc(y, s) == _approx(37 / 96, rel=RTOL)


def test_aurc_single_image_is_zero():
    assert aurc([1], [0.9]) == 0.0
    assert aurc([0], [0.9]) == 0.0  # risk 1, but the area over one coverage point is 0
    curve = risk_coverage_curve([0], [0.9])
    assert curve.coverage.tolist() == [1.0]
    assert curve.risk.tolist() == [1.0]


@pytest.mark.parametrize("tied", [True, False], ids=["tied-confidence", "untied"])
def test_aurc_matches_oracle_and_trapezoid_of_curve(tied):
    for y, s in _cases(15, tied=tied, n_min=1):
        got = aurc(y, s)
        assert_allclose(got, oracle.aurc(y, s), rtol=RTOL, atol=ATOL_ZERO)
        curve = risk_coverage_curve(y, s)
        assert_allclose(got, np.trapezoid(curve.risk, curve.coverage), rtol=RTOL, atol=ATOL_ZERO)


def test_risk_coverage_curve_matches_oracle():
    for y, s in _cases(16, tied=True, n_cases=60):
        curve = risk_coverage_curve(y, s)
        n = y.size
        assert_allclose(curve.coverage, np.arange(1, n + 1) / n, rtol=RTOL)
        for k in range(1, n + 1):
            assert_allclose(curve.risk[k - 1], oracle.risk_at_coverage(y, s, k / n), rtol=RTOL)
        conf = np.maximum(s, 1 - s)
        assert (np.diff(curve.confidence) <= 0).all()
        assert sorted(curve.confidence.tolist()) == sorted(conf.tolist())


def test_aurc_is_exact_when_the_only_error_is_least_confident():
    # 999 correct confident images, then 1 error: risk(k) = 0 for k < 1000, risk(1000) =
    # 1/1000; only the last trapezoid is non-zero: (1/1000)(0 + 1/1000)/2 = 5e-7 exactly.
    # np.trapezoid of medaudit's own risk-coverage curve gets this to ~1e-15.  Regression
    # test: an AURC kernel built on harmonic-number differences cancelled catastrophically
    # here (4.999999996663789e-07, relative error 7e-10; ~5e-7 at n = 1e5).
    n = 1000
    s = np.linspace(0.999, 0.6, n)
    y = np.r_[np.ones(n - 1), 0.0]
    curve = risk_coverage_curve(y, s)
    assert np.trapezoid(curve.risk, curve.coverage) == _approx(5e-7, rel=RTOL)
    assert oracle.aurc(y, s) == _approx(5e-7, rel=RTOL)
    assert aurc(y, s) == _approx(5e-7, rel=RTOL)


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


def test_operating_point_accepts_both_infinite_thresholds():
    """+inf: nothing predicted positive (Se 0, Sp 1); -inf: everything (Se 1, Sp 0),
    as the oracle's rule s >= t gives."""
    y, s = [0, 0, 1, 1, 0], [0.2, 0.5, 0.5, 0.9, 0.1]
    for t, want in ((math.inf, (0.0, 1.0)), (-math.inf, (1.0, 0.0))):
        op = operating_point(y, s, threshold=t)
        assert (op.sensitivity, op.specificity) == want == oracle.se_sp_at(y, s, t)
        assert op.threshold == t


def test_ties_that_move_average_precision_warn_with_both_values():
    """The individual-rank default depends on row order under ties: a constant scorer gets
    AP 1.0 with the positives listed first; the warning carries the pooled value."""
    from medaudit.exceptions import TiedScoresWarning
    from medaudit.stats.ranking import AP_TIE_TOLERANCE
    y = np.r_[np.ones(18), np.zeros(82)]
    s = np.full(100, 0.5)
    for labels, individual in ((y, 1.0), (y[::-1], oracle.average_precision_individual(y[::-1], s))):
        with pytest.warns(TiedScoresWarning, match="ties pooled it is 0.18") as rec:
            assert average_precision(labels, s) == pytest.approx(individual, rel=1e-12)
        w = rec[0].message
        assert w.individual == pytest.approx(individual, rel=1e-12)
        assert w.pooled == pytest.approx(average_precision_score(labels, s), rel=1e-12)
    # no warning without ties, or when ties move AP by less than the tolerance
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        average_precision([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6])
        y2, s2 = np.r_[1.0, 0.0, np.ones(3000), np.zeros(3000)], np.r_[0.5, 0.5, np.arange(6000.0)]
        gap = abs(average_precision(y2, s2) - average_precision(y2, s2, ties="pooled"))
        assert 0 < gap <= AP_TIE_TOLERANCE
