"""Peer witness (statsmodels 0.15, scipy): proportion intervals, p-value adjustment,
stratified 2x2 tables and the exact/rank tests, on edges the R-reference tests do not
reach: fractional counts, ``count = 0`` and ``count = nobs`` with ``nobs`` from 1 to
5e6, levels from 0.5 to 1 - 1e-6, every ``multipletests`` method on families with p = 0,
p = 1, ties, a single p-value and 300 p-values (with the reject decisions), one-sided
exact tests and a table with a zero cell.

Reference values are computed live by the peers on the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import StratifiedTable
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from medaudit.stats import (
    adjust_pvalues,
    binomial_test,
    breslow_day_test,
    cmh_test,
    fisher_exact,
    kendall,
    proportion_ci,
    spearman,
)

# ------------------------------------------------------------------------ proportions
_SM = {"wilson": "wilson", "clopper_pearson": "beta", "agresti_coull": "agresti_coull",
       "jeffreys": "jeffreys", "normal": "normal"}
_COUNTS = [(0, 1), (1, 1), (0, 10), (10, 10), (1, 10), (9, 10), (0, 1000), (1000, 1000),
           (1, 100_000), (99_999, 100_000), (3.5, 7.2), (0.0, 0.5), (2, 3), (5, 5e6),
           (50, 100)]


@pytest.mark.parametrize("method", list(_SM))
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99, 0.999999])
@pytest.mark.parametrize(("count", "nobs"), _COUNTS)
def test_proportion_ci_is_proportion_confint(count, nobs, level, method):
    r = proportion_ci(count, nobs, method=method, confidence_level=level)
    lo, hi = proportion_confint(count, nobs, alpha=1 - level, method=_SM[method])
    if method == "jeffreys":  # Brown, Cai & DasGupta's boundary modification (not statsmodels')
        lo = 0.0 if count == 0 else lo
        hi = 1.0 if count == nobs else hi
    assert r.ci_low == pytest.approx(lo, rel=1e-10, abs=1e-15)
    assert r.ci_high == pytest.approx(hi, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("method", list(_SM))
@pytest.mark.parametrize("nobs", [1, 7, 25, 100, 10_000])
def test_proportion_ci_contains_the_estimate_at_zero_and_full_count(method, nobs):
    lo = proportion_ci(0, nobs, method=method)
    hi = proportion_ci(nobs, nobs, method=method)
    assert lo.ci_low == 0.0 <= lo.estimate
    assert hi.ci_high == 1.0 >= hi.estimate


@pytest.mark.parametrize("nobs", [1, 25, 10_000])
def test_jeffreys_contains_the_estimate_at_zero_and_full_count(nobs):
    assert proportion_ci(0, nobs, method="jeffreys").ci_low == 0.0
    assert proportion_ci(nobs, nobs, method="jeffreys").ci_high == 1.0


@pytest.mark.parametrize("nobs", [7, 25, 100])
def test_wilson_lower_bound_is_exactly_zero_at_zero_count(nobs):
    assert proportion_ci(0, nobs, method="wilson").ci_low == 0.0


def test_jeffreys_equals_statsmodels_except_at_the_boundary_modification():
    # statsmodels leaves the Jeffreys bound at count 0 above 0 (beta.ppf(0.025, 0.5, 25.5));
    # medaudit sets it to 0 as Brown, Cai & DasGupta (2001) do, and keeps the other end
    lo, hi = proportion_confint(0, 25, alpha=0.05, method="jeffreys")
    r = proportion_ci(0, 25, method="jeffreys")
    assert lo > 0.0 and r.ci_low == 0.0
    assert r.ci_high == pytest.approx(hi, rel=1e-12)
    lo, hi = proportion_confint(7, 25, alpha=0.05, method="jeffreys")
    r = proportion_ci(7, 25, method="jeffreys")
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))


# ----------------------------------------------------------------------- multiplicity
_MT = {"bonferroni": "bonferroni", "sidak": "sidak", "holm": "holm", "holm_sidak": "holm-sidak",
       "hochberg": "simes-hochberg", "hommel": "hommel", "bh": "fdr_bh", "by": "fdr_by",
       "bh_two_stage": "fdr_tsbh", "bky_two_stage": "fdr_tsbky"}
_RNG = np.random.default_rng(3)
_FAMILIES = {
    "single": np.array([0.5]),
    "zero_and_one": np.array([0.0, 1.0]),
    "tiny": np.array([1e-300, 1e-20, 0.5, 1.0]),
    "skewed": _RNG.random(20) ** 3,
    "rounded_ties": np.round(_RNG.random(15), 2),
    "all_equal_small": np.full(5, 0.01),
    "all_equal_boundary": np.full(4, 0.04),
    "large": _RNG.random(300) ** 4,
}


@pytest.mark.parametrize("alpha", [0.05, 0.1])
@pytest.mark.parametrize("method", list(_MT))
@pytest.mark.parametrize("family", list(_FAMILIES))
def test_adjust_pvalues_is_multipletests(family, method, alpha):
    p = _FAMILIES[family]
    r = adjust_pvalues(p, method=method, alpha=alpha)
    with np.errstate(divide="ignore"):  # statsmodels' Sidak takes log1p(-1) at p = 1
        reject, adjusted, _, _ = multipletests(p, alpha=alpha, method=_MT[method])
    np.testing.assert_allclose(r.pvalues_adjusted, adjusted, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(np.asarray(r.reject), reject)


def test_adjusted_pvalues_are_monotone_in_the_raw_order():
    # the monotonicity bug home-grown Holm/BH keep shipping (anchors, statsmodels notes)
    p = _FAMILIES["large"]
    order = np.argsort(p, kind="stable")
    for method in ("holm", "hochberg", "hommel", "bh", "by", "holm_sidak"):
        adj = np.asarray(adjust_pvalues(p, method=method).pvalues_adjusted)[order]
        assert np.all(np.diff(adj) >= -1e-15), method


# ------------------------------------------------------------------------ contingency
_TABLES = {
    "three": np.array([[[10, 5], [3, 12]], [[8, 4], [4, 9]], [[2, 0], [6, 3]]]),
    "sparse": np.array([[[1, 0], [0, 1]], [[2, 1], [0, 3]], [[0, 2], [1, 1]], [[5, 1], [1, 0]]]),
    "big": np.array([[[400, 120], [95, 380]], [[230, 70], [60, 260]]]),
}


@pytest.mark.parametrize("name", list(_TABLES))
def test_cmh_and_breslow_day_are_stratified_tables(name):
    tabs = _TABLES[name]
    st = StratifiedTable(tabs.transpose(1, 2, 0).astype(float))
    for corr in (False, True):
        r = cmh_test(tabs, correction=corr)
        t = st.test_null_odds(correction=corr)
        assert r.statistic == pytest.approx(t.statistic, rel=1e-10)
        assert r.pvalue == pytest.approx(t.pvalue, rel=1e-9, abs=1e-300)
    r = cmh_test(tabs)
    lo, hi = st.oddsratio_pooled_confint()
    assert r.estimate == pytest.approx(st.oddsratio_pooled, rel=1e-12)
    assert (r.ci_low, r.ci_high) == (pytest.approx(lo, rel=1e-10), pytest.approx(hi, rel=1e-10))
    for tarone in (False, True):
        r = breslow_day_test(tabs, tarone=tarone)
        t = st.test_equal_odds(adjust=tarone)
        assert r.statistic == pytest.approx(t.statistic, rel=1e-8)
        assert r.pvalue == pytest.approx(t.pvalue, rel=1e-8)


@pytest.mark.parametrize("table", [[[3, 1], [1, 3]], [[3, 0], [1, 3]], [[8, 2], [1, 5]],
                                   [[0, 0], [4, 5]], [[120, 30], [25, 140]]])
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_fisher_exact_is_scipys(table, alternative):
    r = fisher_exact(table, alternative=alternative)
    want = stats.fisher_exact(table, alternative=alternative)
    assert r.pvalue == pytest.approx(want.pvalue, rel=1e-12, abs=1e-300)
    assert r.estimate == pytest.approx(want.statistic, rel=1e-12, nan_ok=True)


@pytest.mark.parametrize(("k", "n", "p0"), [(3, 10, 0.5), (0, 10, 0.1), (10, 10, 0.5),
                                            (7, 20, 0.3), (55, 100, 0.6), (1, 1000, 0.001),
                                            (500, 1000, 0.5)])
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_binomial_test_is_binomtest(k, n, p0, alternative):
    r = binomial_test(k, n, p=p0, alternative=alternative)
    want = stats.binomtest(k, n, p0, alternative=alternative)
    ci = want.proportion_ci(confidence_level=0.95, method="exact")
    assert r.pvalue == pytest.approx(want.pvalue, rel=1e-12)
    assert r.ci_low == pytest.approx(ci.low, rel=1e-10, abs=1e-15)
    assert r.ci_high == pytest.approx(ci.high, rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_rank_correlations_with_ties_are_scipys(alternative):
    rng = np.random.default_rng(9)
    x = np.round(rng.random(30), 1)
    z = np.round(x + rng.random(30), 1)
    r, want = spearman(x, z, alternative=alternative), stats.spearmanr(x, z, alternative=alternative)
    assert (r.estimate, r.pvalue) == (pytest.approx(want.statistic, rel=1e-12),
                                      pytest.approx(want.pvalue, rel=1e-9, abs=1e-300))
    for variant in ("b", "c"):
        r = kendall(x, z, alternative=alternative, variant=variant)
        want = stats.kendalltau(x, z, alternative=alternative, variant=variant)
        assert (r.estimate, r.pvalue) == (pytest.approx(want.statistic, rel=1e-12),
                                          pytest.approx(want.pvalue, rel=1e-9, abs=1e-300))
    # small untied samples: scipy's exact Kendall p-value
    assert kendall([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]).pvalue == pytest.approx(
        stats.kendalltau([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]).pvalue, rel=1e-12)
