"""Proportion intervals: statsmodels through proportion_ci, against R (binom.test, prop.test, the
Agresti-Coull formula written out in R; tests/reference/proportions_R.csv) and hand cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats import proportion_ci

REF = pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "proportions_R.csv",
                  comment="#")


@pytest.mark.r_reference
@pytest.mark.parametrize("row", list(REF.itertuples(index=False)),
                         ids=lambda r: f"{r.count}/{r.nobs}@{r.level}")
def test_matches_R(row):
    cp = proportion_ci(row.count, row.nobs, method="clopper_pearson", confidence_level=row.level)
    np.testing.assert_allclose([cp.ci_low, cp.ci_high], [row.cp_low, row.cp_high], rtol=1e-9,
                               atol=1e-12)
    wi = proportion_ci(row.count, row.nobs, method="wilson", confidence_level=row.level)
    np.testing.assert_allclose([wi.ci_low, wi.ci_high], [row.wilson_low, row.wilson_high],
                               rtol=1e-12, atol=1e-14)
    ac = proportion_ci(row.count, row.nobs, method="agresti_coull", confidence_level=row.level)
    # R's formula is unclipped; statsmodels (and medaudit) truncate to [0, 1]
    np.testing.assert_allclose([ac.ci_low, ac.ci_high],
                               np.clip([row.ac_low, row.ac_high], 0, 1), rtol=1e-12, atol=1e-14)
    assert cp.estimate == row.count / row.nobs


def test_hand_cases_and_zero_cells():
    r = proportion_ci(0, 10, method="clopper_pearson")
    assert r.ci_low == 0.0 and r.ci_high == pytest.approx(1 - 0.025 ** 0.1, rel=1e-12)
    r = proportion_ci(10, 10, method="clopper_pearson")
    assert r.ci_high == 1.0 and r.ci_low == pytest.approx(0.025 ** 0.1, rel=1e-12)
    z = 1.959963984540054
    w = proportion_ci(5, 10)
    half = z * math.sqrt(0.25 / 10 + z * z / 400) / (1 + z * z / 10)
    assert (w.ci_low, w.ci_high) == pytest.approx((0.5 - half, 0.5 + half), rel=1e-12)


def test_undefined_and_bad_input():
    with pytest.warns(UndefinedMetricWarning, match="nobs is 0"):
        assert math.isnan(proportion_ci(0, 0).estimate)
    with pytest.raises(MedauditError, match="exceed"):
        proportion_ci(5, 4)
    with pytest.raises(MedauditError, match="method"):
        proportion_ci(1, 4, method="exact")
    with pytest.raises(MedauditError, match="count"):
        proportion_ci(-1, 4)
