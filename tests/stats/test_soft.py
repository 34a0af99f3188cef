"""Soft AUROC and soft AP against probabilistic labels (methods.md M1.2, M1.3; anchors T9).

Witnesses: the worked examples of M1.2/M1.3 by hand; the double-sum oracles of
``tests/_oracles.py`` and scikit-learn on the duplicated data set (each item becomes a
positive copy of weight p and a negative copy of weight 1 - p) at ``rtol=1e-12``;
hypothesis properties, chiefly the soft -> hard reduction.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.exceptions import UndefinedMetricWarning
from medaudit.stats import average_precision, roc_auc, soft_average_precision, soft_roc_auc
from tests import _oracles as oracle

RTOL = 1e-12
# Hypothesis draws soft labels such as 3.6e-289 whose metric is itself ~1e-289; a running
# sum that has already passed 0.5 cannot resolve that, so near-zero results get an
# absolute slack of a few ulps of 1 (the scale of the summands).
ATOL = 1e-14
VARIANTS = ("inclusive", "strict", "trapezoid")
ORACLE_AUROC = {
    "inclusive": oracle.soft_auroc_inclusive,
    "strict": oracle.soft_auroc_strict,
    "trapezoid": oracle.soft_auroc_trapezoid,
}


def _approx(expected, rel=RTOL):
    return pytest.approx(expected, rel=rel, abs=0.0)


def _random_soft_case(rng: np.random.Generator, n: int, *, tied: bool):
    """Soft labels with some exact 0s and 1s and n+ > 0, n- > 0; scores tied or not."""
    p = rng.random(n)
    p[rng.random(n) < 0.2] = 0.0
    p[rng.random(n) < 0.2] = 1.0
    i, j = rng.choice(n, size=2, replace=False)
    p[i], p[j] = 1.0, 0.0
    s = rng.integers(0, 5, n) / 4.0 if tied else rng.random(n)
    return p, s


def _cases(seed: int, *, tied: bool, n_cases: int = 150, n_max: int = 30):
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        yield _random_soft_case(rng, int(rng.integers(2, n_max + 1)), tied=tied)


def _duplicated(p, s):
    """The duplicated data set of M1.2: positive copy weight p, negative copy weight 1 - p."""
    p, s = np.asarray(p, dtype=float), np.asarray(s, dtype=float)
    return np.r_[np.ones(p.size), np.zeros(p.size)], np.r_[s, s], np.r_[p, 1.0 - p]


def _reference_sklearn_soft_auroc(p, s):
    y, ss, w = _duplicated(p, s)
    return roc_auc_score(y, ss, sample_weight=w)


def _reference_sklearn_soft_ap(p, s):
    y, ss, w = _duplicated(p, s)
    return average_precision_score(y, ss, sample_weight=w)


@st.composite
def soft_labelled(draw, *, unique: bool = False, max_size: int = 25):
    """(p, s): soft labels in [0, 1] with n+ > 0 and n- > 0; scores in [-100, 100]."""
    n = draw(st.integers(2, max_size))
    p = draw(arrays(np.float64, n, elements=st.floats(0.0, 1.0)))
    i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    p[i], p[j] = 1.0, 0.0
    s = draw(
        arrays(
            np.float64,
            n,
            unique=unique,
            elements=st.floats(-100.0, 100.0, allow_nan=False, allow_infinity=False, allow_subnormal=False),
        )
    )
    return p, s


@st.composite
def binary_labelled(draw, *, unique: bool, max_size: int = 25):
    """(y, s) with binary y (both classes present); tied scores on a coarse grid if allowed."""
    n = draw(st.integers(2, max_size))
    y = draw(arrays(np.int8, n, elements=st.integers(0, 1))).astype(float)
    i, j = draw(st.lists(st.integers(0, n - 1), min_size=2, max_size=2, unique=True))
    y[i], y[j] = 1.0, 0.0
    if unique:
        s = draw(
            arrays(
                np.float64,
                n,
                unique=True,
                elements=st.floats(
                    -100.0, 100.0, allow_nan=False, allow_infinity=False, allow_subnormal=False
                ),
            )
        )
    else:
        s = draw(arrays(np.int64, n, elements=st.integers(0, 4))) / 4.0
    return y, s


# ================================================================== worked examples
def test_worked_example_m1_2():
    # scores .9 .8 .7 .6 (already descending); p = 1, .5, 0, .5; n+ = n- = 2
    # cumulative n+_i = 1, 1.5, 1.5, 2; strictly before i: 0, 1, 1.5, 1.5
    #   inclusive = sum (1 - p_i) n+_i / 4 = (0*1 + .5*1.5 + 1*1.5 + .5*2) / 4 = 3.25/4 = .8125
    #   strict    = sum (1 - p_i) n+_{<i} / 4 = (0 + .5*1 + 1*1.5 + .5*1.5) / 4 = 2.75/4 = .6875
    #   trapezoid = (.8125 + .6875) / 2 = .75
    #   s-AP = sum (n+_i / i)(p_i / n+) = (1/1*1 + 1.5/2*.5 + 0 + 2/4*.5) / 2 = 1.625/2 = .8125
    #   s-AP known_self = sum p_i (1 + n+_{<i}) / i / n+ = (1 + .5*2/2 + 0 + .5*2.5/4)/2 = .90625
    s, p = [0.9, 0.8, 0.7, 0.6], [1.0, 0.5, 0.0, 0.5]
    assert soft_roc_auc(p, s) == 0.6875  # strict is the default (paper 001 Table 4)
    assert soft_roc_auc(p, s, variant="inclusive") == 0.8125
    assert soft_roc_auc(p, s, variant="strict") == 0.6875
    assert soft_roc_auc(p, s, variant="trapezoid") == 0.75
    assert soft_average_precision(p, s, variant="as_written") == 0.8125  # Definition 2.2
    assert soft_average_precision(p, s) == 0.90625  # known_self is the default (Table 4)
    # no ties: the tie options agree; trapezoid = sklearn on the duplicated data
    assert soft_roc_auc(p, s, variant="trapezoid", ties="grouped") == 0.75
    for v in VARIANTS:
        assert soft_roc_auc(p, s, variant=v, ties="grouped") == _approx(soft_roc_auc(p, s, variant=v))
    assert _reference_sklearn_soft_auroc(p, s) == _approx(0.75)
    assert soft_average_precision(p, s, variant="as_written", ties="grouped") == _approx(0.8125)
    assert soft_average_precision(p, s, ties="grouped") == _approx(0.90625)
    assert _reference_sklearn_soft_ap(p, s) == _approx(0.8125)


def test_tie_example_m1_2_and_m1_3():
    # s = .9 .7 .7 .7 .2 .1, y = 1 0 1 1 0 0 (binary, so all AUROC variants coincide)
    # stable order 1 0 1 1 0 0: sum (1 - p_i) n+_i = 1 (the 0 at rank 2) + 3 + 3 = 7 -> 7/9
    # grouped: 0.9 beats 3 negatives (3); the two tied positives each beat .2 and .1 (4)
    #   and tie the negative .7 (2 * 1/2 = 1) -> 8/9
    s, y = [0.9, 0.7, 0.7, 0.7, 0.2, 0.1], [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    for variant in VARIANTS:
        assert soft_roc_auc(y, s, variant=variant) == _approx(7 / 9)
    assert round(soft_roc_auc(y, s), 4) == 0.7778
    assert soft_roc_auc(y, s, ties="grouped") == _approx(8 / 9)
    assert round(soft_roc_auc(y, s, ties="grouped"), 4) == 0.8889
    assert soft_roc_auc(y, s, ties="grouped") == _approx(roc_auc(y, s))
    # s-AP stable: positives at ranks 1, 3, 4 -> (1 + 2/3 + 3/4)/3 = 29/36 = .8056
    # s-AP grouped: 1/3 * 1 + 2/3 * 3/4 = 5/6 = .8333 = sklearn AP
    assert soft_average_precision(y, s) == _approx(29 / 36)
    assert round(soft_average_precision(y, s), 4) == 0.8056
    assert soft_average_precision(y, s, ties="grouped") == _approx(5 / 6)
    assert soft_average_precision(y, s, ties="grouped") == _approx(average_precision_score(y, s))


# ================================================================= against oracles
@pytest.mark.parametrize("tied", [True, False], ids=["tied-stable-order", "untied"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_soft_roc_auc_matches_oracle(variant, tied):
    for p, s in _cases(20, tied=tied):
        assert_allclose(soft_roc_auc(p, s, variant=variant), ORACLE_AUROC[variant](p, s), rtol=RTOL)


@pytest.mark.parametrize("tied", [True, False], ids=["tied-stable-order", "untied"])
def test_soft_average_precision_matches_oracle(tied):
    for p, s in _cases(21, tied=tied):
        assert_allclose(soft_average_precision(p, s, variant="as_written"), oracle.soft_ap(p, s),
                        rtol=RTOL)
        assert_allclose(soft_average_precision(p, s), oracle.soft_ap_known_self(p, s), rtol=RTOL)


@given(soft_labelled())
def test_soft_metrics_match_oracle_property(ps):
    p, s = ps
    for variant in VARIANTS:
        assert_allclose(
            soft_roc_auc(p, s, variant=variant), ORACLE_AUROC[variant](p, s), rtol=RTOL, atol=ATOL
        )
    assert_allclose(soft_average_precision(p, s, variant="as_written"), oracle.soft_ap(p, s),
                    rtol=RTOL, atol=ATOL)
    assert_allclose(soft_average_precision(p, s), oracle.soft_ap_known_self(p, s), rtol=RTOL,
                    atol=ATOL)


# ======================================================= sklearn on duplicated data
def test_sklearn_duplication_identities_untied():
    # M1.2/M1.3 [INV], T9: on untied scores sklearn on the duplicated data gives s-AP exactly
    # and the *trapezoid* s-AUROC exactly (the two copies of an item tie: half credit).
    for p, s in _cases(22, tied=False):
        assert_allclose(soft_average_precision(p, s, variant="as_written"),
                        _reference_sklearn_soft_ap(p, s), rtol=RTOL)
        assert_allclose(
            soft_roc_auc(p, s, variant="trapezoid"), _reference_sklearn_soft_auroc(p, s), rtol=RTOL
        )


def test_sklearn_duplication_identities_grouped_with_ties():
    # ties="grouped" pools a tied block into one threshold, exactly as sklearn does, so the
    # identities hold with ties too.
    for p, s in _cases(23, tied=True):
        assert_allclose(soft_roc_auc(p, s, variant="trapezoid", ties="grouped"),
                        _reference_sklearn_soft_auroc(p, s), rtol=RTOL)
        assert_allclose(soft_average_precision(p, s, variant="as_written", ties="grouped"),
                        _reference_sklearn_soft_ap(p, s), rtol=RTOL)


def test_T9_inclusive_minus_strict_is_the_self_pair_term():
    # inclusive - strict = sum p_i (1 - p_i) / (n+ n-)  (M1.2); sklearn on the duplicated
    # data sits halfway: sklearn = strict + (1/2) sum p(1-p)/(n+ n-) = trapezoid.
    for p, s in _cases(24, tied=False):
        n_pos, n_neg = p.sum(), (1.0 - p).sum()
        self_pairs = np.sum(p * (1.0 - p)) / (n_pos * n_neg)
        inclusive = soft_roc_auc(p, s, variant="inclusive")
        strict = soft_roc_auc(p, s, variant="strict")
        assert_allclose(inclusive, strict + self_pairs, rtol=RTOL)
        assert_allclose(_reference_sklearn_soft_auroc(p, s), strict + 0.5 * self_pairs, rtol=RTOL)


# ========================================================== soft -> hard reduction
@given(binary_labelled(unique=True))
def test_binary_soft_labels_reduce_to_hard_metrics_untied(ys):
    y, s = ys
    for variant in VARIANTS:
        for ties in ("stable", "grouped"):
            assert_allclose(soft_roc_auc(y, s, variant=variant, ties=ties), roc_auc(y, s), rtol=RTOL)
    for ties in ("stable", "grouped"):
        assert_allclose(soft_average_precision(y, s, ties=ties), average_precision(y, s), rtol=RTOL)


@given(binary_labelled(unique=False))
def test_binary_soft_labels_reduce_to_hard_metrics_with_ties(ys):
    # only the grouped options equal mid-rank AUROC / pooled AP when scores tie (M1.2);
    # the stable s-AP keeps individual ranks, i.e. average_precision(ties="individual").
    y, s = ys
    assert_allclose(soft_roc_auc(y, s, ties="grouped"), roc_auc(y, s), rtol=RTOL)
    assert_allclose(
        soft_average_precision(y, s, ties="grouped"), average_precision(y, s, ties="pooled"), rtol=RTOL
    )
    assert_allclose(
        soft_average_precision(y, s, ties="stable"), average_precision(y, s, ties="individual"), rtol=RTOL
    )


# ================================================================ other properties
@given(soft_labelled(unique=True))
def test_soft_roc_auc_reversal_identities(ps):
    # Reversing the order swaps "j <= i" for "j >= i": inclusive(p, -s) + strict(p, s) = 1
    # (all ordered pairs sum to n+ n-), and the trapezoid is a proper complement.
    p, s = ps
    assert_allclose(
        soft_roc_auc(p, -s, variant="inclusive") + soft_roc_auc(p, s, variant="strict"), 1.0, rtol=RTOL
    )
    assert_allclose(
        soft_roc_auc(p, -s, variant="trapezoid"),
        1.0 - soft_roc_auc(p, s, variant="trapezoid"),
        rtol=RTOL,
        atol=ATOL,
    )
    # swapping the roles of positive and negative mass and negating the scores
    assert_allclose(
        soft_roc_auc(1.0 - p, -s, variant="trapezoid"),
        soft_roc_auc(p, s, variant="trapezoid"),
        rtol=RTOL,
        atol=ATOL,
    )


@given(soft_labelled())
def test_soft_metrics_invariant_to_increasing_transform(ps):
    # exp(s / 10) is increasing; rounding can only merge neighbours, never swap them, so
    # draws where two distinct scores collide are discarded.
    p, s = ps
    t = np.exp(s / 10.0)
    assume(np.unique(t).size == np.unique(s).size)
    for variant in VARIANTS:
        assert soft_roc_auc(p, t, variant=variant) == _approx(soft_roc_auc(p, s, variant=variant))
    for ties in ("stable", "grouped"):
        assert soft_average_precision(p, t, ties=ties) == _approx(soft_average_precision(p, s, ties=ties))


@given(soft_labelled())
def test_soft_metric_ranges_and_variant_order(ps):
    p, s = ps
    strict = soft_roc_auc(p, s, variant="strict")
    trapezoid = soft_roc_auc(p, s, variant="trapezoid")
    inclusive = soft_roc_auc(p, s, variant="inclusive")
    assert 0.0 <= strict <= trapezoid * (1 + RTOL) + ATOL
    assert trapezoid <= inclusive * (1 + RTOL) + ATOL
    assert inclusive <= 1.0 + RTOL
    assert 0.0 < soft_average_precision(p, s) <= 1.0 + RTOL


# ======================================================================= edge cases
def test_soft_labels_exactly_zero_and_one():
    # binary p: the self-pair term p(1-p) vanishes, so all variants agree even with ties
    y = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    s = [0.8, 0.8, 0.5, 0.5, 0.5, 0.1]
    values = [soft_roc_auc(y, s, variant=v) for v in VARIANTS]
    assert values[0] == values[1] == values[2]
    # stable order 1 0 1 0 1 0: each negative counts the positives above it: 1 + 2 + 3 = 6
    assert values[0] == _approx(6 / 9)
    # grouped = mid-rank AUROC: positive .8 vs negatives .8/.5/.1: 1/2 + 1 + 1 = 2.5;
    # each positive .5: 0 + 1/2 + 1 = 1.5; (2.5 + 1.5 + 1.5) / 9 = 5.5/9
    assert soft_roc_auc(y, s, ties="grouped") == _approx(5.5 / 9)
    assert soft_roc_auc(y, s, ties="grouped") == _approx(roc_auc(y, s))


def test_soft_labels_without_negative_or_positive_mass():
    s = [0.9, 0.5, 0.1]
    for p in ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0]):
        with pytest.warns(UndefinedMetricWarning, match="undefined"):
            assert math.isnan(soft_roc_auc(p, s))
        with pytest.warns(UndefinedMetricWarning, match="undefined"):
            assert math.isnan(soft_roc_auc(p, s, ties="grouped"))
    with pytest.warns(UndefinedMetricWarning, match="undefined"):
        assert math.isnan(soft_average_precision([0.0, 0.0, 0.0], s))
    # like average_precision, s-AP only needs positive mass (M1.3: n+ = 0 gives NaN)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert soft_average_precision([1.0, 1.0, 1.0], s) == 1.0
        assert soft_average_precision([1.0, 1.0, 1.0], s) == average_precision([1, 1, 1], s)
        # all items half positive: precision 1/2 at every rank (Definition 2.2); with the
        # own label known, (1 + 0.5 (i - 1)) / i: (1 + 0.75 + 2/3) / 3
        assert soft_average_precision([0.5, 0.5, 0.5], s, variant="as_written") == _approx(0.5)
        assert soft_average_precision([0.5, 0.5, 0.5], s) == _approx((1 + 0.75 + 2 / 3) / 3)
        assert soft_roc_auc([0.5, 0.5, 0.5], s, variant="trapezoid") == _approx(0.5)


def test_soft_average_precision_is_exact_when_positive_ranked_last():
    # 999 items with p = 0 scored above one item with p = 1: s-AP = n+_1000/1000 = 1/1000.
    # Regression test shared with average_precision(ties="individual"): a harmonic-number
    # kernel cancelled catastrophically here (9.999999996663789e-04; see test_metrics.py).
    n = 1000
    p = np.r_[np.zeros(n - 1), 1.0]
    s = np.linspace(1.0, 0.0, n)
    assert _reference_sklearn_soft_ap(p, s) == _approx(1e-3)
    assert soft_average_precision(p, s, ties="grouped") == _approx(1e-3)
    assert soft_average_precision(p, s) == _approx(1e-3)


# ============================================== s-AP with the own label known (Table 4)
@pytest.mark.parametrize("tied", [True, False], ids=["tied-stable-order", "untied"])
def test_soft_ap_known_self_matches_the_double_sum(tied):
    """``(1/n+) sum_i p_i (1 + sum_{j ranked above i} p_j) / i`` against a double loop, and
    its margin over Definition 2.2: ``(1/n+) sum_i p_i (1 - p_i) / i`` (the self-term)."""
    for p, s in _cases(31, tied=tied):
        got = soft_average_precision(p, s, variant="known_self")
        assert_allclose(got, oracle.soft_ap_known_self(p, s), rtol=RTOL)
        order = np.argsort(-np.asarray(s), kind="stable")
        ps = np.asarray(p)[order]
        margin = np.sum(ps * (1 - ps) / np.arange(1, ps.size + 1)) / ps.sum()
        assert_allclose(got - soft_average_precision(p, s, variant="as_written"), margin,
                        rtol=1e-9, atol=1e-15)


@given(binary_labelled(unique=False))
def test_every_soft_variant_reduces_to_the_ordinary_metric_on_binary_labels(ys):
    y, s = ys
    for ties, ap_ties in (("stable", "individual"), ("grouped", "pooled")):
        for v in ("known_self", "as_written"):
            assert_allclose(soft_average_precision(y, s, variant=v, ties=ties),
                            average_precision(y, s, ties=ap_ties), rtol=RTOL)
    for v in VARIANTS:
        assert_allclose(soft_roc_auc(y, s, variant=v, ties="grouped"), roc_auc(y, s), rtol=RTOL)


def _grouped_double_sum_auroc(p, s, self_weight):
    """Pairs (i, j): p_j (1 - p_i) times 1 if s_j > s_i, 1/2 if tied (j != i), and the self
    pair with ``self_weight``; over n+ n-."""
    p, s = np.asarray(p, float), np.asarray(s, float)
    total = 0.0
    for i in range(p.size):
        for j in range(p.size):
            k = self_weight if i == j else (1.0 if s[j] > s[i] else 0.5 if s[j] == s[i] else 0.0)
            total += p[j] * (1 - p[i]) * k
    return total / (p.sum() * (p.size - p.sum()))


def _grouped_known_self_ap(p, s):
    p, s = np.asarray(p, float), np.asarray(s, float)
    total = 0.0
    for i in range(p.size):
        through = s >= s[i]
        total += p[i] * (1.0 + p[through].sum() - p[i]) / through.sum()
    return total / p.sum()


def test_grouped_ties_apply_every_variant():
    """The reported defect: with ties="grouped" the variant was ignored (all three gave the
    trapezoid, 0.6875); now the variant weights the self pair under both tie rules."""
    p, s = [1, 0.5, 0, 0.5], [0.9, 0.7, 0.7, 0.6]
    got = {v: soft_roc_auc(p, s, variant=v, ties="grouped") for v in VARIANTS}
    assert got == {"inclusive": 0.75, "strict": 0.625, "trapezoid": 0.6875}
    for q, t in _cases(32, tied=True, n_cases=60):
        for v, w in (("inclusive", 1.0), ("strict", 0.0), ("trapezoid", 0.5)):
            assert_allclose(soft_roc_auc(q, t, variant=v, ties="grouped"),
                            _grouped_double_sum_auroc(q, t, w), rtol=RTOL)
        assert_allclose(soft_average_precision(q, t, ties="grouped"), _grouped_known_self_ap(q, t),
                        rtol=RTOL)


def test_soft_metric_options_is_the_one_rule():
    from medaudit.exceptions import MedauditError
    from medaudit.stats.soft import SOFT_DEFAULTS, soft_metric_options
    assert SOFT_DEFAULTS == {"soft_roc_auc": ("strict", "stable"),
                             "soft_average_precision": ("known_self", "stable")}
    for v in VARIANTS:
        for t in ("stable", "grouped"):
            assert soft_metric_options("soft_roc_auc", variant=v, ties=t) == (v, t)
    with pytest.raises(MedauditError, match="variant='strict' is not a valid option"):
        soft_metric_options("soft_average_precision", variant="strict")
    with pytest.raises(MedauditError, match="ties"):
        soft_metric_options("soft_roc_auc", ties="pooled")


# ----------------------------------------------------------------------------- the ceiling
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("metric", ["soft_roc_auc", "soft_average_precision"])
def test_the_ceiling_is_the_best_any_ordering_reaches(seed, metric):
    """Brute force: over every ordering of 7 items (every scorer without ties), the largest
    soft metric equals the soft metric of the scorer equal to the soft label."""
    import itertools

    from medaudit.stats.soft import soft_ceiling

    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 0.2, 0.5, 0.8, 1.0], size=7)
    p[:2] = (0.0, 1.0)  # both classes carry mass
    fn = oracle.soft_auroc_strict if metric == "soft_roc_auc" else oracle.soft_ap_known_self
    best = max(fn(p, np.asarray(order, dtype=float)) for order in itertools.permutations(range(7)))
    assert soft_ceiling(p, metric=metric) == pytest.approx(best, abs=1e-12)
    assert soft_ceiling(p, metric=metric) == pytest.approx(fn(p, p), abs=1e-12)


def test_the_ceiling_of_hard_labels_is_one_and_falls_with_disagreement():
    from medaudit.stats.soft import soft_ceiling

    assert soft_ceiling([1, 0, 1, 0, 0]) == 1.0
    # two readers of four disagree on one item: that item pairs with itself only in part
    assert soft_ceiling([1, 0, 0.5]) < 1.0
    assert soft_ceiling([1, 0, 0.5, 0.5]) < soft_ceiling([1, 0, 0.5])


@pytest.mark.parametrize("case", ["untied", "rounded", "signed_zero", "infinite", "one", "two_tied"])
def test_labels_by_score_is_the_stable_descending_order(case):
    """The complex-packed sort gives the labels in exactly the order of a stable
    descending argsort (ties in input order), whatever the ties; the label never breaks
    a tie, although it is the imaginary part the sort compares second."""
    from medaudit.stats.soft import _labels_by_score

    rng = np.random.default_rng(7)
    n = 1 if case == "one" else 2 if case == "two_tied" else 2_000
    s = rng.normal(size=n)
    p = rng.random(n)
    if case == "rounded":
        s = np.round(s, 1)
    elif case == "signed_zero":
        s[:500] = 0.0
        s[500:1000] = -0.0
    elif case == "infinite":
        s[:3] = np.inf
        s[3:6] = -np.inf
    elif case == "two_tied":
        s[:] = 0.5
        p[:] = [0.9, 0.1]
    labels, a, b = _labels_by_score(p, s)
    np.testing.assert_array_equal(labels, p[np.argsort(-s, kind="stable")])
    assert labels.flags.c_contiguous and a.size == b.size == n
    assert not np.shares_memory(labels, a) and not np.shares_memory(labels, b)
    assert not np.shares_memory(a, b)
