"""Witness for medaudit.stats.decomposition: statsmodels' ANOVA table of the same balanced
three-way layout (main effects and two-way interactions; the residual is the three-way
term), and the identity that the seven sums of squares add up to the total."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.formula.api import ols

from medaudit.exceptions import MedauditError
from medaudit.stats.decomposition import variance_decomposition


@pytest.mark.parametrize("shape", [(2, 3, 4), (4, 5, 3), (3, 2, 2)])
def test_sums_of_squares_are_statsmodels_anova(shape):
    rng = np.random.default_rng(sum(shape))
    y = rng.normal(size=shape) + np.arange(shape[0])[:, None, None] * 0.3
    r = variance_decomposition(y, ("m", "c", "p"))
    rows = [{"m": f"m{i}", "c": f"c{j}", "p": f"p{k}", "y": y[i, j, k]}
            for i, j, k in itertools.product(*map(range, shape))]
    fit = ols("y ~ C(m) + C(c) + C(p) + C(m):C(c) + C(m):C(p) + C(c):C(p)",
              data=pd.DataFrame(rows)).fit()
    table = sm.stats.anova_lm(fit, typ=1)
    want = {"m": "C(m)", "c": "C(c)", "p": "C(p)", "m:c": "C(m):C(c)", "m:p": "C(m):C(p)",
            "c:p": "C(c):C(p)", "m:c:p": "Residual"}
    for term, name in want.items():
        assert r.ss[term] == pytest.approx(table.loc[name, "sum_sq"], rel=1e-10, abs=1e-12), term
        assert r.df[term] == int(table.loc[name, "df"]), term
    assert sum(r.ss.values()) == pytest.approx(r.ss_total, rel=1e-12)
    assert r.ss_total == pytest.approx(((y - y.mean()) ** 2).sum(), rel=1e-12)
    assert sum(r.share_percent.values()) == pytest.approx(100.0)


def test_constant_layout_has_no_shares():
    r = variance_decomposition(np.full((2, 2, 2), 0.7))
    assert r.ss_total == 0.0 and all(math.isnan(v) for v in r.share_percent.values())


def test_incomplete_layouts_are_refused():
    y = np.ones((2, 2, 2))
    y[1, 0, 1] = np.nan
    with pytest.raises(MedauditError, match=r"\(i, j, k\) = \[\(1, 0, 1\)\]"):
        variance_decomposition(y)
    with pytest.raises(MedauditError, match="3-way"):
        variance_decomposition(np.ones((2, 2)))
