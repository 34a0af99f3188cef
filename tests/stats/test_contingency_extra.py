"""CMH with an infinite pooled odds ratio (a zero off-diagonal cell in every stratum)."""

import math

import numpy as np
from scipy import stats as ss

from medaudit.stats import cmh_test


def test_cmh_infinite_pooled_odds_ratio_gives_inf_estimate_and_defined_test():
    # a[k] * d[k] > 0 and b[k] * c[k] = 0 in every stratum -> Mantel-Haenszel OR = inf
    tables = np.array([[[5, 0], [2, 6]], [[4, 1], [0, 3]]], dtype=float)
    r = cmh_test(tables, correction=False)  # pytest turns RuntimeWarning into errors
    assert math.isinf(r.estimate) and r.estimate > 0
    # hand-worked CMH statistic: sum(a - E[a])^2 / sum Var(a) on 1 df
    num, var = 0.0, 0.0
    for t in tables:
        (a, b), (c, d) = t
        n = t.sum()
        r1, c1 = a + b, a + c
        num += a - r1 * c1 / n
        var += r1 * (c + d) * c1 * (b + d) / (n * n * (n - 1))
    stat = num * num / var
    assert math.isclose(r.statistic, stat, rel_tol=1e-12)
    assert math.isclose(r.pvalue, ss.chi2.sf(stat, 1), rel_tol=1e-12)
