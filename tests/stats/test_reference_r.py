"""Compare medaudit.stats.multiplicity with reference values produced by R's stats::p.adjust.

``padjust_R.csv`` lives in ``tests/reference`` with ``generate_padjust_R.R`` (methods holm
and BH); regenerate with ``Rscript tests/reference/generate_padjust_R.R``.  R is not needed
to run these tests.  The pROC references of the DeLong routines are in test_delong.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.stats import (
    adjust_pvalues,
)

pytestmark = pytest.mark.r_reference

REFERENCE_DIR = Path(__file__).parents[1] / "reference"

P_RTOL = 1e-9  # p-values
P_ATOL = 1e-15

_PADJUST = pd.read_csv(REFERENCE_DIR / "padjust_R.csv", comment="#", dtype={"n_arg": str})


# --------------------------------------------------------------------------------------------
# p-value adjustment: stats::p.adjust(method = "holm" | "BH")
# --------------------------------------------------------------------------------------------

_METHOD = {"holm": "holm", "BH": "bh"}
_PADJUST_GROUPS = [
    (case, method, n_arg)
    for (case, method, n_arg), _ in _PADJUST.groupby(["case", "method", "n_arg"], sort=False)
]


def _padjust_group(case: str, method: str, n_arg: str) -> tuple[np.ndarray, np.ndarray]:
    g = _PADJUST[
        (_PADJUST["case"] == case) & (_PADJUST["method"] == method) & (_PADJUST["n_arg"] == n_arg)
    ].sort_values("index")
    assert list(g["index"]) == list(range(1, len(g) + 1))
    return g["p"].to_numpy(dtype=np.float64), g["p_adjusted"].to_numpy(dtype=np.float64)


def _padjust_cases() -> list:
    """One pytest param per (case, method, nan_policy) with the R call it corresponds to.

    n_arg == "default": p.adjust(p, method) -- NAs held out and not counted -> "omit";
    for vectors without NAs every nan_policy must give R's result.
    n_arg == "<int>": p.adjust(p, method, n = length(p)) with the NAs counted -> "count".
    """
    params = []
    for case, method, n_arg in _PADJUST_GROUPS:
        p, _ = _padjust_group(case, method, n_arg)
        has_nan = bool(np.isnan(p).any())
        if n_arg == "default":
            policies = ["omit"] if has_nan else ["omit", "count", "raise"]
        else:
            assert int(n_arg) == len(p), "the R script passes n = length(p) including the NAs"
            policies = ["count"]
        for policy in policies:
            params.append(
                pytest.param(case, method, n_arg, policy, id=f"{case}-{method}-n={n_arg}-{policy}")
            )
    return params


@pytest.mark.parametrize(("case", "method", "n_arg", "nan_policy"), _padjust_cases())
def test_adjust_pvalues_matches_R(case, method, n_arg, nan_policy):
    p, expected = _padjust_group(case, method, n_arg)
    res = adjust_pvalues(p, method=_METHOD[method], nan_policy=nan_policy)
    actual = np.asarray(res.pvalues_adjusted, dtype=np.float64)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(
        np.isnan(actual), np.isnan(expected), err_msg=f"{case}/{method}: NaN positions differ"
    )
    keep = ~np.isnan(expected)
    np.testing.assert_allclose(
        actual[keep],
        expected[keep],
        rtol=P_RTOL,
        atol=P_ATOL,
        err_msg=f"{case} {method} n={n_arg} nan_policy={nan_policy}",
    )


def test_padjust_reference_covers_the_na_conventions():
    """The R file must hold both NA conventions for the vector with NAs."""
    groups = set(_PADJUST_GROUPS)
    for method in ("holm", "BH"):
        assert ("with_na", method, "default") in groups
        assert ("with_na", method, "8") in groups
