"""Multiplicity, tests on counts and association against oracles, scipy, statsmodels, sklearn and
hand work (DeLong is in test_delong.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from medaudit.exceptions import MedauditError
from medaudit.stats import (
    adjust_pvalues,
    binomial_test,
    cmh_test,
    cohen_kappa,
    fisher_exact,
    jaccard,
    kendall,
    spearman,
)
from tests import _oracles as O


# ------------------------------------------------------------------ multiplicity
# statsmodels' multipletests runs gc.collect() on every call (~40 ms): keep examples modest
@settings(max_examples=40)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_bh_match_loop_oracles(p):
    p = np.array(p)
    np.testing.assert_allclose(adjust_pvalues(p, method="holm").pvalues_adjusted, O.holm(p),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(adjust_pvalues(p, method="bh").pvalues_adjusted, O.bh(p),
                               rtol=1e-12, atol=1e-15)


@settings(max_examples=25)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_adjustment_properties(p):
    p = np.array(p)
    holm = adjust_pvalues(p, method="holm").pvalues_adjusted
    bonf = adjust_pvalues(p, method="bonferroni").pvalues_adjusted
    bh = adjust_pvalues(p, method="bh").pvalues_adjusted
    by = adjust_pvalues(p, method="by").pvalues_adjusted
    for adj in (holm, bonf, bh, by):
        assert np.all(adj >= p - 1e-15) and np.all(adj <= 1.0)
        order = np.argsort(p, kind="stable")
        assert np.all(np.diff(adj[order]) >= -1e-15)  # order preserving
    assert np.all(holm <= bonf + 1e-15) and np.all(bh <= by + 1e-15)


def test_nan_policies():
    p = [0.01, np.nan, 0.04, 0.03]
    omit = adjust_pvalues(p, method="holm")
    count = adjust_pvalues(p, method="holm", nan_policy="count")
    assert omit.m == 3 and count.m == 4
    np.testing.assert_allclose(omit.pvalues_adjusted[[0, 2, 3]], O.holm([0.01, 0.04, 0.03]))
    # counted NaN behaves as an unobserved p-value larger than all others (R p.adjust n=)
    np.testing.assert_allclose(count.pvalues_adjusted[[0, 2, 3]],
                               O.holm([0.01, 0.04, 0.03, 1.0])[:3])
    assert np.isnan(omit.pvalues_adjusted[1]) and not omit.reject[1]
    with pytest.raises(MedauditError, match="nan_policy='raise'"):
        adjust_pvalues(p, nan_policy="raise")
    with pytest.raises(MedauditError, match="Did you mean 'bh'"):
        adjust_pvalues(p, method="bhh")
    with pytest.raises(MedauditError, match=r"\[0, 1\]"):
        adjust_pvalues([0.5, 1.2])


def test_holm_floor_of_permutation_pvalues():
    # 4 tests at the smallest possible permutation p with 10,000 permutations
    adj = adjust_pvalues([1 / 10001] * 4, method="holm").pvalues_adjusted
    np.testing.assert_allclose(adj, 4 / 10001)


def test_bh_48_family_example():
    # BH rejects exactly the p-values below the largest k with p_(k) <= k q / m
    rng = np.random.default_rng(0)
    p = np.sort(np.r_[rng.uniform(0, 0.01, 20), rng.uniform(0, 1, 28)])
    q, m = 0.05, 48
    k = max([i + 1 for i in range(m) if p[i] <= (i + 1) * q / m], default=0)
    res = adjust_pvalues(p, method="bh", alpha=q)
    assert res.reject.sum() == k


# ------------------------------------------------------------- tests on counts
def test_fisher_against_hypergeometric_sum():
    table = np.array([[8, 2], [1, 5]])
    r = fisher_exact(table)
    # two-sided p: sum of hypergeometric probabilities no larger than the observed one
    row1, col1, n = table[0].sum(), table[:, 0].sum(), table.sum()
    dist = sps.hypergeom(n, col1, row1)
    support = np.arange(max(0, row1 + col1 - n), min(row1, col1) + 1)
    pobs = dist.pmf(table[0, 0])
    p = dist.pmf(support)[dist.pmf(support) <= pobs * (1 + 1e-7)].sum()
    assert math.isclose(r.pvalue, p, rel_tol=1e-9)
    assert r.estimate == (8 * 5) / (2 * 1)


def test_fisher_zero_events_both_groups_is_kept_with_p_one():
    r = fisher_exact([[0, 40], [0, 35]])
    assert r.pvalue == 1.0 and math.isnan(r.estimate)


def test_fisher_bad_table():
    with pytest.raises(MedauditError, match="shape"):
        fisher_exact([[1, 2, 3], [1, 2, 3]])
    with pytest.raises(MedauditError, match="non-negative integer"):
        fisher_exact([[1, -2], [1, 2]])


def test_cmh_hand_formula_and_dropped_strata():
    tables = np.array([[[10, 5], [3, 12]], [[8, 4], [4, 9]], [[0, 0], [3, 4]]], dtype=float)
    r = cmh_test(tables, correction=False)
    assert r.details["dropped_strata"] == [2]
    k = tables[:2]
    a = k[:, 0, 0]
    n = k.sum(axis=(1, 2))
    r1, c1 = k[:, 0].sum(1), k[:, :, 0].sum(1)
    r2, c2 = n - r1, n - c1
    e = r1 * c1 / n
    v = r1 * r2 * c1 * c2 / (n**2 * (n - 1))
    chi2 = (a.sum() - e.sum()) ** 2 / v.sum()
    assert math.isclose(r.statistic, chi2, rel_tol=1e-10)
    assert math.isclose(r.pvalue, sps.chi2.sf(chi2, 1), rel_tol=1e-10)
    mh = (k[:, 0, 0] * k[:, 1, 1] / n).sum() / (k[:, 0, 1] * k[:, 1, 0] / n).sum()
    assert math.isclose(r.estimate, mh, rel_tol=1e-10)
    rc = cmh_test(tables, correction=True)
    chi2c = (abs(a.sum() - e.sum()) - 0.5) ** 2 / v.sum()
    assert math.isclose(rc.statistic, chi2c, rel_tol=1e-10)


def test_cmh_all_strata_uninformative():
    r = cmh_test([[[0, 0], [1, 2]]])
    assert math.isnan(r.pvalue) and r.details["n_strata_used"] == 0


def test_binomial_test_by_hand():
    # P(X >= 10 | n = 13, p = .5) = sum_{k=10}^{13} C(13, k) / 2^13
    p = sum(math.comb(13, k) for k in range(10, 14)) / 2**13
    r = binomial_test(10, 13, alternative="greater")
    assert math.isclose(r.pvalue, p, rel_tol=1e-12)
    assert r.ci_low < 10 / 13 < r.ci_high
    with pytest.raises(MedauditError, match="k must be"):
        binomial_test(14, 13)


def test_cohen_kappa_against_sklearn_and_hand():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(1)
    a = rng.choice(["present", "absent", "unparsed"], 200)
    b = np.where(rng.random(200) < 0.7, a, rng.choice(["present", "absent", "unparsed"], 200))
    assert math.isclose(cohen_kappa(a, b).estimate, cohen_kappa_score(a, b), rel_tol=1e-12)
    # hand: po = 4/5; marginals a: 3 ones, b: 2 ones -> pe = (3*2 + 2*3)/25 = 12/25
    r = cohen_kappa([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
    assert math.isclose(r.estimate, (0.8 - 12 / 25) / (1 - 12 / 25))
    assert math.isnan(cohen_kappa([1, 1], [1, 1]).estimate)


def test_jaccard_paper_002_arithmetic():
    a = {f"c{i}" for i in range(12)}
    b = {f"c{i}" for i in range(6)} | {f"d{i}" for i in range(5)}
    assert math.isclose(jaccard(a, b), 6 / 17)
    assert math.isnan(jaccard(set(), set()))


def _ranks(x):
    # average ranks by a double loop
    x = list(x)
    return [sum(1 for v in x if v < xi) + (sum(1 for v in x if v == xi) + 1) / 2 for xi in x]


def test_spearman_is_pearson_of_average_ranks():
    rng = np.random.default_rng(2)
    x, y = rng.integers(0, 5, 30), rng.integers(0, 5, 30)
    r = spearman(x, y)
    assert math.isclose(r.estimate, np.corrcoef(_ranks(x), _ranks(y))[0, 1], rel_tol=1e-12)


def test_kendall_tau_b_by_pairs():
    rng = np.random.default_rng(3)
    x, y = rng.integers(0, 4, 25), rng.integers(0, 4, 25)
    c = d = tx = ty = 0
    for i in range(25):
        for j in range(i + 1, 25):
            sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            if sx and sy:
                c += sx == sy
                d += sx != sy
            elif sx and not sy:
                ty += 1
            elif sy and not sx:
                tx += 1
    tau_b = (c - d) / math.sqrt((c + d + tx) * (c + d + ty))
    assert math.isclose(kendall(x, y).estimate, tau_b, rel_tol=1e-12)
