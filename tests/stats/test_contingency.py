"""The pooled Mantel-Haenszel odds ratio's interval and the Breslow-Day homogeneity test.

Witnesses: R's mantelhaen.test (estimate, conf.int, statistics) and epiR::epi.2by2's
Breslow-Day statistic (tests/reference/contingency_R.csv); the Breslow-Day sum evaluated
directly (expected cell under the common odds ratio from its quadratic)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from medaudit.stats import breslow_day_test, cmh_test

REF = pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "contingency_R.csv",
                  comment="#")


def _tables(cells):
    v = np.array([float(c) for c in cells.split()])
    # R's array(v, dim = c(2, 2, K)) fills each 2x2 column-major: a, c, b, d
    return np.stack([v[i:i + 4].reshape(2, 2).T for i in range(0, v.size, 4)])


@pytest.mark.r_reference
@pytest.mark.parametrize("row", list(REF.itertuples(index=False)), ids=lambda r: r.set)
def test_matches_R(row):
    t = _tables(row.cells)
    r = cmh_test(t)
    assert r.estimate == pytest.approx(row.mh_estimate, rel=1e-12)
    assert (r.ci_low, r.ci_high) == pytest.approx((row.mh_ci_low, row.mh_ci_high), rel=1e-12)
    assert r.statistic == pytest.approx(row.cmh_stat_corrected, rel=1e-12)
    assert r.pvalue == pytest.approx(row.cmh_p_corrected, rel=1e-10)
    r0 = cmh_test(t, correction=False)
    assert r0.statistic == pytest.approx(row.cmh_stat, rel=1e-12)
    bd = breslow_day_test(t)
    assert bd.statistic == pytest.approx(row.bd_stat, rel=1e-10)
    assert bd.details["df"] == row.bd_df and bd.pvalue == pytest.approx(row.bd_p, rel=1e-9)


def _breslow_day(tables):
    """sum_k (a_k - E_k)^2 / Var_k with E_k the root of the common-OR quadratic."""
    t = np.asarray(tables, float)
    a, b, c, d = t[:, 0, 0], t[:, 0, 1], t[:, 1, 0], t[:, 1, 1]
    psi = (a * d / (a + b + c + d)).sum() / (b * c / (a + b + c + d)).sum()
    stat = 0.0
    for ak, bk, ck, dk in zip(a, b, c, d, strict=True):
        m1, n1, n0 = ak + ck, ak + bk, ck + dk  # column 1 total, row totals
        # (x (n0 - m1 + x)) / ((n1 - x)(m1 - x)) = psi, solved for x in its feasible range
        qa, qb, qc = psi - 1.0, -(psi * (n1 + m1) + (n0 - m1)), psi * n1 * m1
        roots = np.roots([qa, qb, qc]) if qa != 0 else np.array([-qc / qb])
        lo, hi = max(0.0, m1 - n0), min(n1, m1)
        x = next(float(r.real) for r in roots if lo - 1e-9 <= r.real <= hi + 1e-9)
        var = 1.0 / (1 / x + 1 / (n1 - x) + 1 / (m1 - x) + 1 / (n0 - m1 + x))
        stat += (ak - x) ** 2 / var
    return stat


def test_breslow_day_direct_sum():
    for t in ([[[10, 5], [3, 12]], [[8, 4], [4, 9]], [[2, 8], [6, 3]]],
              [[[20, 10], [10, 20]], [[15, 7], [8, 16]]]):
        bd = breslow_day_test(t)
        want = _breslow_day(t)
        assert bd.statistic == pytest.approx(want, rel=1e-9)
        assert bd.pvalue == pytest.approx(stats.chi2.sf(want, len(t) - 1), rel=1e-9)


def test_dropped_strata_and_too_few():
    bd = breslow_day_test([[[10, 5], [3, 12]], [[0, 0], [3, 4]], [[8, 4], [4, 9]]])
    assert bd.details["dropped_strata"] == [1] and bd.details["df"] == 1
    one = breslow_day_test([[[10, 5], [3, 12]], [[0, 0], [3, 4]]])
    assert math.isnan(one.statistic) and "fewer than two" in one.details["reason"]
    tarone = breslow_day_test([[[10, 5], [3, 12]], [[8, 4], [4, 9]]], tarone=True)
    assert tarone.method == "breslow_day_tarone"
