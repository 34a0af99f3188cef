"""Witnesses for medaudit.stats.permutation: the statistic is the difference of two
scikit-learn AUROCs, and the Monte Carlo p-value converges to the exact permutation
p-value computed by enumerating every relabelling of a small pair of groups."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from medaudit.stats.permutation import negative_group_permutation_test


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
