"""Compare medaudit.stats with committed reference values produced by R.

The reference files live in ``tests/reference`` together with the R scripts that made them:

* ``delong_pROC_data.csv`` / ``delong_pROC.csv`` -- ``generate_delong_pROC.R`` (R + pROC):
  AUROC, DeLong variance and interval, paired and unpaired DeLong tests on four data sets.
* ``padjust_R.csv`` -- ``generate_padjust_R.R`` (``stats::p.adjust``, methods holm and BH).

Regenerate with ``Rscript tests/reference/generate_delong_pROC.R`` and
``Rscript tests/reference/generate_padjust_R.R`` from the repository root.  R is not needed
to run these tests: they only read the committed CSV files.

Known differences from pROC, handled here:

* ``pROC::ci.auc(method="delong")`` clips the interval to [0, 1]; medaudit does not.  Where
  pROC clipped a bound (flag columns ``ci_*_clipped``; only ``small_ties`` in the committed
  data) the comparison with pROC's bound is skipped, and the bound is instead compared with
  the unclipped interval that the R script computes with pROC's own expression
  (``ci_*_raw`` columns, :func:`test_delong_ci_unclipped_matches_R`).
* ``pROC::roc.test(paired=FALSE, method="delong")`` refers its statistic to a Student t
  distribution with Welch-Satterthwaite-type df (column ``unpaired_pvalue_t``).  medaudit's
  unpaired test reports a z statistic, so its p-value is compared with the normal p-value of
  the same statistic, ``2 * pnorm(-|D|)`` computed in R (column ``unpaired_pvalue_normal``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.stats import (
    adjust_pvalues,
    delong_ci,
    delong_test,
    delong_test_unpaired,
    delong_variance,
    roc_auc,
)

pytestmark = pytest.mark.r_reference

REFERENCE_DIR = Path(__file__).parents[1] / "reference"

RTOL = 1e-10  # AUCs, variances, statistics, interval bounds
P_RTOL = 1e-9  # p-values
P_ATOL = 1e-15

_DELONG_DATA = pd.read_csv(REFERENCE_DIR / "delong_pROC_data.csv", comment="#")
_DELONG_REF = pd.read_csv(REFERENCE_DIR / "delong_pROC.csv", comment="#").set_index("dataset")
_PADJUST = pd.read_csv(REFERENCE_DIR / "padjust_R.csv", comment="#", dtype={"n_arg": str})

DATASETS = list(_DELONG_REF.index)
CURVES = ["a", "b"]


def _inputs(dataset: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y_true, score_a, score_b exactly as R used them (ordered by item)."""
    d = _DELONG_DATA[_DELONG_DATA["dataset"] == dataset].sort_values("item")
    assert len(d) > 0, f"no input rows for {dataset!r}"
    y = d["y_true"].to_numpy(dtype=np.int64)
    return y, d["score_a"].to_numpy(dtype=np.float64), d["score_b"].to_numpy(dtype=np.float64)


def _ref(dataset: str, column: str) -> float:
    return float(_DELONG_REF.loc[dataset, column])


def _score(dataset: str, curve: str) -> tuple[np.ndarray, np.ndarray]:
    y, a, b = _inputs(dataset)
    return y, (a if curve == "a" else b)


def _close(actual: float, expected: float, *, what: str, rtol: float = RTOL, atol: float = 0.0):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def _pclose(actual: float, expected: float, *, what: str):
    _close(actual, expected, what=what, rtol=P_RTOL, atol=P_ATOL)


# --------------------------------------------------------------------------------------------
# Sanity of the committed files
# --------------------------------------------------------------------------------------------


def test_reference_files_cover_the_same_datasets():
    assert set(_DELONG_DATA["dataset"]) == set(DATASETS)
    assert {"aSAH", "small_ties", "binormal_200", "imbalanced"} <= set(DATASETS)


@pytest.mark.parametrize("dataset", DATASETS)
def test_input_counts_match_reference(dataset):
    y, a, b = _inputs(dataset)
    assert set(np.unique(y)) <= {0, 1}
    assert len(y) == int(_ref(dataset, "n_items"))
    assert int((y == 1).sum()) == int(_ref(dataset, "n_pos"))
    assert int((y == 0).sum()) == int(_ref(dataset, "n_neg"))
    assert np.isfinite(a).all() and np.isfinite(b).all()


# --------------------------------------------------------------------------------------------
# Single AUC: estimate, DeLong variance, DeLong interval
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_roc_auc_matches_pROC(dataset, curve):
    y, s = _score(dataset, curve)
    _close(roc_auc(y, s), _ref(dataset, f"auc_{curve}"), what=f"{dataset} auc_{curve}")


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_pROC_delong_theta_equals_auc(dataset, curve):
    """pROC's DeLong placement mean (theta) is the AUC; medaudit's roc_auc must equal it."""
    theta = _ref(dataset, f"theta_{curve}")
    _close(theta, _ref(dataset, f"auc_{curve}"), what=f"{dataset}: pROC theta vs pROC auc")
    y, s = _score(dataset, curve)
    _close(roc_auc(y, s), theta, what=f"{dataset}: medaudit roc_auc vs pROC theta_{curve}")


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_delong_variance_matches_pROC(dataset, curve):
    y, s = _score(dataset, curve)
    _close(delong_variance(y, s), _ref(dataset, f"var_{curve}"), what=f"{dataset} var_{curve}")


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_delong_ci_estimate_and_variance_match_pROC(dataset, curve):
    y, s = _score(dataset, curve)
    res = delong_ci(y, s, confidence_level=0.95)
    _close(res.estimate, _ref(dataset, f"auc_{curve}"), what=f"{dataset} estimate")
    _close(res.variance, _ref(dataset, f"var_{curve}"), what=f"{dataset} variance")


@pytest.mark.parametrize("bound", ["low", "high"])
@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_delong_ci_matches_pROC(dataset, curve, bound):
    """pROC's ci.auc(method="delong") bound, except where pROC clipped it to [0, 1]."""
    if int(_ref(dataset, f"ci_{curve}_{bound}_clipped")):
        # Sanity of the reference: a clipped bound is exactly 0 or 1 in pROC's output.
        assert _ref(dataset, f"ci_{curve}_{bound}") == (0.0 if bound == "low" else 1.0)
        # medaudit does not clip (clip only for display); clipping our bound reproduces pROC
        y, s = _score(dataset, curve)
        res = delong_ci(y, s, confidence_level=0.95)
        actual = res.ci_low if bound == "low" else res.ci_high
        assert (actual < 0.0) if bound == "low" else (actual > 1.0)
        assert min(max(actual, 0.0), 1.0) == _ref(dataset, f"ci_{curve}_{bound}")
        return
    y, s = _score(dataset, curve)
    res = delong_ci(y, s, confidence_level=0.95)
    actual = res.ci_low if bound == "low" else res.ci_high
    _close(actual, _ref(dataset, f"ci_{curve}_{bound}"), what=f"{dataset} ci_{curve}_{bound}")


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("dataset", DATASETS)
def test_delong_ci_unclipped_matches_R(dataset, curve):
    """The same normal interval without pROC's clipping (computed in the R script)."""
    y, s = _score(dataset, curve)
    res = delong_ci(y, s, confidence_level=0.95)
    _close(res.ci_low, _ref(dataset, f"ci_{curve}_low_raw"), what=f"{dataset} ci_{curve}_low_raw")
    _close(
        res.ci_high, _ref(dataset, f"ci_{curve}_high_raw"), what=f"{dataset} ci_{curve}_high_raw"
    )


# --------------------------------------------------------------------------------------------
# Paired DeLong test: roc.test(r_a, r_b, method="delong", paired=TRUE)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", DATASETS)
def test_paired_delong_test_matches_pROC(dataset):
    y, a, b = _inputs(dataset)
    res = delong_test(y, a, b, alternative="two-sided", confidence_level=0.95)
    _close(res.auc_a, _ref(dataset, "auc_a"), what=f"{dataset} auc_a")
    _close(res.auc_b, _ref(dataset, "auc_b"), what=f"{dataset} auc_b")
    _close(res.estimate, _ref(dataset, "paired_estimate"), what=f"{dataset} estimate (a - b)")
    _close(res.variance, _ref(dataset, "paired_variance"), what=f"{dataset} variance of a - b")
    _close(res.statistic, _ref(dataset, "paired_statistic"), what=f"{dataset} z")
    _close(res.ci_low, _ref(dataset, "paired_ci_low"), what=f"{dataset} ci_low")
    _close(res.ci_high, _ref(dataset, "paired_ci_high"), what=f"{dataset} ci_high")
    _pclose(res.pvalue, _ref(dataset, "paired_pvalue"), what=f"{dataset} two-sided p")


@pytest.mark.parametrize("dataset", DATASETS)
def test_paired_delong_test_greater_matches_pROC(dataset):
    """alternative="greater" means auc_a > auc_b (pROC: roc1 > roc2)."""
    y, a, b = _inputs(dataset)
    res = delong_test(y, a, b, alternative="greater", confidence_level=0.95)
    _close(res.statistic, _ref(dataset, "paired_statistic"), what=f"{dataset} z")
    _pclose(res.pvalue, _ref(dataset, "paired_pvalue_greater"), what=f"{dataset} p (greater)")


# --------------------------------------------------------------------------------------------
# Unpaired DeLong test: roc.test(r_a, r_b, method="delong", paired=FALSE), i.e. the two
# curves of one data set treated as independent samples.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", DATASETS)
def test_unpaired_delong_test_matches_pROC(dataset):
    y, a, b = _inputs(dataset)
    res = delong_test_unpaired(y, a, y, b, alternative="two-sided", confidence_level=0.95)
    _close(res.auc_a, _ref(dataset, "auc_a"), what=f"{dataset} auc_a")
    _close(res.auc_b, _ref(dataset, "auc_b"), what=f"{dataset} auc_b")
    _close(res.estimate, _ref(dataset, "unpaired_estimate"), what=f"{dataset} estimate (a - b)")
    _close(res.variance, _ref(dataset, "unpaired_variance"), what=f"{dataset} variance of a - b")
    _close(res.statistic, _ref(dataset, "unpaired_statistic"), what=f"{dataset} statistic")
    # pROC's own p-value uses a t distribution (unpaired_pvalue_t); medaudit's z test is
    # compared with the normal p-value of pROC's statistic (see the module docstring).
    _pclose(res.pvalue, _ref(dataset, "unpaired_pvalue_normal"), what=f"{dataset} p (normal)")


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
