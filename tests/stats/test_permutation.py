"""Witnesses for medaudit.stats.permutation: the statistic is the difference of two
scikit-learn AUROCs, and the Monte Carlo p-value converges to the exact permutation
p-value computed by enumerating every relabelling of a small pair of groups."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from medaudit.exceptions import MedauditError
from medaudit.stats import adjust_pvalues
from medaudit.stats.permutation import negative_group_permutation_test
from tests import _oracles as O

RTOL = 1e-12


def _auc(pos, neg):
    y = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    return roc_auc_score(y, np.r_[pos, neg])


def _exact_p(pos, a, b, alternative):
    """Every split of the pooled negatives into groups of the original sizes."""
    neg = np.r_[a, b]
    d_obs = _auc(pos, a) - _auc(pos, b)
    ds = []
    for idx in itertools.combinations(range(neg.size), len(a)):
        mask = np.zeros(neg.size, bool)
        mask[list(idx)] = True
        ds.append(_auc(pos, neg[mask]) - _auc(pos, neg[~mask]))
    ds = np.array(ds)
    tol = 1e-12
    if alternative == "two-sided":
        return np.mean(np.abs(ds) >= abs(d_obs) - tol), d_obs
    if alternative == "greater":
        return np.mean(ds >= d_obs - tol), d_obs
    return np.mean(ds <= d_obs + tol), d_obs


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_pvalue_converges_to_the_exact_permutation_pvalue(alternative):
    rng = np.random.default_rng(7)
    pos = rng.normal(1.0, 1.0, 6)
    a = rng.normal(0.0, 1.0, 5)
    b = np.round(rng.normal(0.6, 1.0, 5), 1)  # ties between groups and with the positives
    b[0] = pos[0]
    exact, d_obs = _exact_p(pos, a, b, alternative)
    B = 20_000
    r = negative_group_permutation_test(pos, a, b, n_resamples=B, alternative=alternative, rng=3)
    assert r.statistic == pytest.approx(d_obs, abs=1e-12)
    # (1 + b) / (1 + B) around the exact p: within 4.5 binomial standard errors
    se = np.sqrt(exact * (1 - exact) / B) + 1 / B
    assert abs(r.pvalue - exact) < 4.5 * se, (r.pvalue, exact)
    assert r.pvalue == (1 + r.n_extreme) / (1 + B) and r.pvalue > 0


def test_the_null_distribution_is_centred_and_reproducible():
    rng = np.random.default_rng(0)
    pos, a, b = rng.normal(1, 1, 30), rng.normal(0, 1, 40), rng.normal(0, 1, 25)
    one = negative_group_permutation_test(pos, a, b, n_resamples=4000, rng=11, batch=300)
    two = negative_group_permutation_test(pos, a, b, n_resamples=4000, rng=11, batch=4000)
    assert np.array_equal(one.null_distribution, two.null_distribution)  # batch-free
    # under relabelling the difference has mean 0 (the groups are exchangeable)
    assert abs(one.null_distribution.mean()) < 4 * one.null_distribution.std() / np.sqrt(4000)
    # the same groups: a p-value that is uniform-ish, never 0; a shift: small
    assert stats.kstest(one.null_distribution / one.null_distribution.std(), "norm").pvalue > 1e-3
    far = negative_group_permutation_test(pos, a, b + 3.0, n_resamples=999, rng=1)
    assert far.pvalue == pytest.approx(1 / 1000)


# -------------------------------------------------------------- permutation test
def _tied_groups(seed, n_pos=15, n_a=12, n_b=14, shift_b=0.3):
    rng = np.random.default_rng(seed)
    pos = np.round(rng.normal(1.0, 1.0, n_pos), 1)
    a = np.round(rng.normal(0.0, 1.0, n_a), 1)
    b = np.round(rng.normal(shift_b, 1.0, n_b), 1)
    return pos, a, b


def _auroc_with(pos, neg):
    return O.auroc_pairwise(np.r_[np.ones(pos.size), np.zeros(neg.size)], np.r_[pos, neg])


def _count_extreme(null, d_obs, alternative):
    tol = 1e-9  # far below the lattice spacing of D (multiples of 1/(2 n_pos n_a n_b))
    if alternative == "two-sided":
        return int(np.sum(np.abs(null) >= abs(d_obs) - tol))
    if alternative == "greater":
        return int(np.sum(null >= d_obs - tol))
    return int(np.sum(null <= d_obs + tol))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_permutation_statistic_and_pvalue(alternative):
    pos, a, b = _tied_groups(1)
    n_res = 999
    r = negative_group_permutation_test(pos, a, b, n_resamples=n_res, alternative=alternative,
                                        rng=2026)
    assert r.statistic == pytest.approx(_auroc_with(pos, a) - _auroc_with(pos, b), rel=RTOL)
    assert r.null_distribution.shape == (n_res,)
    b_count = _count_extreme(r.null_distribution, r.statistic, alternative)
    assert r.n_extreme == b_count
    assert r.pvalue == (1 + b_count) / (1 + n_res)
    if alternative == "two-sided":
        assert r.pvalue == O.permutation_pvalue(r.null_distribution, r.statistic)
    assert 0 < r.pvalue <= 1
    assert (r.n_resamples, r.alternative, r.seed) == (n_res, alternative, 2026)


def test_permutation_null_values_are_splits_of_the_pooled_negatives():
    """Each null value is AUROC(P, A*) - AUROC(P, B*) for a re-split of A u B into groups of
    the original sizes (P fixed).  The re-splits are reproduced from the seed:
    ``Generator.permuted`` shuffles each row independently of the values it holds."""
    pos, a, b = _tied_groups(4, n_pos=10, n_a=7, n_b=9)
    n_res, batch, seed = 60, 25, 11
    r = negative_group_permutation_test(pos, a, b, n_resamples=n_res, rng=seed, batch=batch)
    pool = np.r_[a, b]
    gen = np.random.default_rng(seed)
    perms = np.vstack([gen.permuted(np.broadcast_to(np.arange(pool.size), (k, pool.size)), axis=1)
                       for k in (25, 25, 10)])
    expected = [_auroc_with(pos, pool[p[:a.size]]) - _auroc_with(pos, pool[p[a.size:]])
                for p in perms]
    np.testing.assert_allclose(r.null_distribution, expected, rtol=1e-12, atol=1e-15)


def test_permutation_pvalue_is_never_zero():
    pos = np.linspace(5, 6, 20)
    a = np.linspace(-3, -2, 30)  # far below the positives
    b = np.linspace(5.2, 7, 30)  # among and above them
    r = negative_group_permutation_test(pos, a, b, n_resamples=999, rng=0)
    assert r.statistic == pytest.approx(_auroc_with(pos, a) - _auroc_with(pos, b))
    assert r.n_extreme == 0
    assert r.pvalue == 1 / 1000


def test_identical_groups_give_pvalue_one():
    pos, a, _ = _tied_groups(2)
    r = negative_group_permutation_test(pos, a, a.copy(), n_resamples=199, rng=3)
    assert r.statistic == 0.0
    assert r.n_extreme == 199 and r.pvalue == 1.0


def test_holm_over_four_minimal_pvalues_gives_four_over_10001():
    pvals = []
    for k in range(4):
        rng = np.random.default_rng(k)
        pos = rng.normal(4.0, 0.3, 40)
        r = negative_group_permutation_test(pos, rng.normal(-4.0, 0.3, 60),
                                            rng.normal(4.0, 0.3, 60), n_resamples=10_000,
                                            rng=2026)
        pvals.append(r.pvalue)
    assert pvals == [1 / 10_001] * 4
    adj = adjust_pvalues(pvals, method="holm").pvalues_adjusted
    np.testing.assert_allclose(adj, 4 / 10_001, rtol=1e-15)
    np.testing.assert_allclose(adj, O.holm(pvals), rtol=1e-15)


def test_pvalues_are_uniform_under_the_null():
    """A and B from one distribution: P(p <= k/200) = k/200 exactly with B = 199."""
    n_sim = 200
    pvals = np.empty(n_sim)
    for i in range(n_sim):
        rng = np.random.default_rng(10_000 + i)
        pos = rng.normal(1.0, 1.0, 15)
        neg = rng.normal(0.0, 1.0, 26)
        pvals[i] = negative_group_permutation_test(pos, neg[:12], neg[12:], n_resamples=199,
                                                   rng=i).pvalue
    for alpha in (0.05, 0.25, 0.5):
        k = int(np.sum(pvals <= alpha))
        assert stats.binomtest(k, n_sim, alpha).pvalue > 0.01, (alpha, k)
    assert stats.kstest(pvals, "uniform").pvalue > 0.01


def test_permutation_same_seed_same_null():
    pos, a, b = _tied_groups(5)
    r1 = negative_group_permutation_test(pos, a, b, n_resamples=300, rng=8)
    r2 = negative_group_permutation_test(pos, a, b, n_resamples=300, rng=8)
    np.testing.assert_array_equal(r1.null_distribution, r2.null_distribution)
    assert r1.pvalue == r2.pvalue


@pytest.mark.parametrize("kw, pattern", [
    (dict(alternative="two_sided"), r"alternative='two_sided'.*Did you mean 'two-sided'"),
    (dict(n_resamples=0), r"n_resamples must be a positive integer"),
    (dict(batch=0), r"batch must be a positive integer"),
])
def test_permutation_bad_options(kw, pattern):
    with pytest.raises(MedauditError, match=pattern):
        negative_group_permutation_test([0.9, 0.8], [0.1], [0.5], **kw)


def test_permutation_refuses_non_finite_scores():
    with pytest.raises(MedauditError, match=r"y_score_b contains NaN"):
        negative_group_permutation_test([0.9, 0.8], [0.1], [math.nan])
