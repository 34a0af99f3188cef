"""DeLong placements, variance, intervals and tests (methods.md M0.9; anchors T12).

Witnesses: hand-worked cases and the brute-force double sums of ``tests/_oracles.py``;
R's pROC on four data sets (``tests/reference/delong_pROC*.csv`` from
``generate_delong_pROC.R``) and, for the unpaired t test, on independent samples of
different sizes (``delong_unpaired_pROC*.csv`` from ``generate_delong_unpaired_pROC.R``).
pROC on the real kwang311 cohorts is in ``test_delong_kwang311.py``.  R is not needed to
run these tests: they read the committed CSV files.

Known differences from pROC, handled here:

* ``pROC::ci.auc(method="delong")`` clips the interval to [0, 1]; medaudit does not.  Where
  pROC clipped a bound (flag columns ``ci_*_clipped``) the comparison with pROC's bound is
  skipped, and the bound is compared with the unclipped interval the R script computes with
  pROC's own expression (``ci_*_raw`` columns).
* ``pROC::roc.test(paired=FALSE, method="delong")`` refers its statistic to a Student t
  distribution with Welch-Satterthwaite-type df; ``delong_test_unpaired`` does so with
  ``distribution="t"`` and uses the normal by default.
* medaudit never flips scores (pROC's ``direction="auto"`` does); the R scripts fix
  ``direction = "<"``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special
from scipy import stats as sps

from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import (
    delong_ci,
    delong_placements,
    delong_test,
    delong_test_unpaired,
    delong_variance,
    roc_auc,
)
from tests import _oracles as O


# ---------------------------------------------------------- hand-worked and brute force
def _tied_data(seed, n=40, grid=6):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    sa = rng.integers(0, grid, n) / grid + 0.3 * y
    sb = rng.integers(0, grid, n) / grid + 0.1 * y
    return y.astype(float), sa, sb


# ------------------------------------------------------------------------ DeLong
@pytest.mark.parametrize("seed", range(8))
def test_delong_placements_match_bruteforce(seed):
    y, sa, _ = _tied_data(seed)
    v10, v01 = delong_placements(y, sa)
    o10, o01 = O.delong_placements(y, sa)
    np.testing.assert_allclose(v10, o10, rtol=1e-12)
    np.testing.assert_allclose(v01, o01, rtol=1e-12)
    # theta == AUC (pROC's runtime guard), against the pairwise definition
    assert math.isclose(v10.mean(), O.auroc_pairwise(y, sa), rel_tol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_delong_variance_and_paired_z_match_bruteforce(seed):
    y, sa, sb = _tied_data(seed)
    assert math.isclose(delong_variance(y, sa), O.delong_var(y, sa), rel_tol=1e-12)
    delta, var, z = O.delong_paired_z(y, sa, sb)
    r = delong_test(y, sa, sb)
    assert math.isclose(r.estimate, delta, rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(r.variance, var, rel_tol=1e-10)
    assert math.isclose(r.statistic, z, rel_tol=1e-10)
    assert math.isclose(r.pvalue, 2 * sps.norm.sf(abs(z)), rel_tol=1e-10)


def test_delong_hand_worked():
    # y = 0 0 1 1, s = .1 .4 .35 .8: V10 = (1/2, 1), V01 = (1, 1/2); var = .125/2 + .125/2
    r = delong_ci([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    assert r.estimate == 0.75 and math.isclose(r.variance, 0.125)
    half = sps.norm.ppf(0.975) * math.sqrt(0.125)
    assert math.isclose(r.ci_low, 0.75 - half) and math.isclose(r.ci_high, 0.75 + half)


def test_delong_self_comparison_and_swap():
    y, sa, sb = _tied_data(3)
    same = delong_test(y, sa, sa)
    assert (same.estimate, same.statistic, same.pvalue) == (0.0, 0.0, 1.0)
    ab, ba = delong_test(y, sa, sb), delong_test(y, sb, sa)
    assert ab.estimate == -ba.estimate and ab.statistic == -ba.statistic
    assert ab.pvalue == ba.pvalue
    g = delong_test(y, sa, sb, alternative="greater")
    l_ = delong_test(y, sa, sb, alternative="less")
    assert math.isclose(g.pvalue + l_.pvalue, 1.0)


def test_delong_unpaired_matches_sum_of_variances():
    y1, s1, _ = _tied_data(1)
    y2, s2, _ = _tied_data(2, n=55)
    r = delong_test_unpaired(y1, s1, y2, s2)
    var = O.delong_var(y1, s1) + O.delong_var(y2, s2)
    z = (O.auroc_pairwise(y1, s1) - O.auroc_pairwise(y2, s2)) / math.sqrt(var)
    assert math.isclose(r.statistic, z, rel_tol=1e-10)
    assert r.paired is False


def test_delong_scales_monotone_transform_invariant():
    y, sa, sb = _tied_data(5)
    r1, r2 = delong_test(y, sa, sb), delong_test(y, np.exp(3 * sa), sb**3 + 1)
    assert math.isclose(r1.statistic, r2.statistic, rel_tol=1e-12)


def test_delong_needs_both_classes():
    with pytest.raises(MedauditError, match="at least 1 positive"):
        delong_test([1, 1, 1], [0.1, 0.2, 0.3], [0.3, 0.2, 0.1])


def test_delong_mismatched_lengths():
    with pytest.raises(MedauditError, match="y_score_b"):
        delong_test([0, 1, 0], [0.1, 0.2, 0.3], [0.3, 0.2])


def test_delong_unpaired_messages_name_the_sample_at_fault():
    a = ([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8])
    with pytest.raises(MedauditError, match=r"3 positive\(s\) and 0 negative\(s\) in y_true_b\."):
        delong_test_unpaired(*a, [1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(MedauditError, match="y_true_b has 3, y_score_b has 2"):
        delong_test_unpaired(*a, [0, 1, 1], [0.1, 0.2])
    with pytest.raises(MedauditError, match="^y_true_a must contain only 0 and 1"):
        delong_test_unpaired([0, 1, 2, 1], a[1], *a)


def test_roc_auc_consistent_with_delong_ci_estimate():
    y, sa, _ = _tied_data(11)
    assert roc_auc(y, sa) == delong_ci(y, sa).estimate


def test_delong_single_case_class_is_undefined_not_certain():
    # R's var() of one value is NA; a one-positive comparison cannot be assessed
    from medaudit.exceptions import UndefinedMetricWarning

    with pytest.warns(UndefinedMetricWarning, match="single positive or negative"):
        r = delong_test([1, 0, 0, 0, 0], [.9, .1, .2, .3, .4], [.05, .1, .2, .3, .4])
    assert r.estimate == 1.0 and math.isnan(r.statistic) and math.isnan(r.pvalue)  # 1 - 0
    assert math.isnan(delong_variance([1, 0, 0], [0.9, 0.1, 0.2]))


# --------------------------------------------------------------- pROC, four data sets
REFERENCE_DIR = Path(__file__).parents[1] / "reference"

RTOL = 1e-10  # AUCs, variances, statistics, interval bounds
P_RTOL = 1e-9  # p-values
P_ATOL = 1e-15

_DELONG_DATA = pd.read_csv(REFERENCE_DIR / "delong_pROC_data.csv", comment="#")
_DELONG_REF = pd.read_csv(REFERENCE_DIR / "delong_pROC.csv", comment="#").set_index("dataset")

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


# -------------------------------------------------- pROC, unpaired samples of two sizes
_UNPAIRED_DATA = pd.read_csv(REFERENCE_DIR / "delong_unpaired_pROC_data.csv", comment="#")
_UNPAIRED = pd.read_csv(REFERENCE_DIR / "delong_unpaired_pROC.csv", comment="#").set_index("dataset")


def _unpaired_inputs(dataset):
    d = _UNPAIRED_DATA[_UNPAIRED_DATA["dataset"] == dataset]
    out = []
    for smp in ("a", "b"):
        x = d[d["sample"] == smp].sort_values("item")
        out += [x["y_true"].to_numpy(float), x["score"].to_numpy(float)]
    return out


@pytest.mark.parametrize("dataset", list(_UNPAIRED.index))
def test_unpaired_t_reproduces_pROC_roc_test(dataset):
    """pROC refers the unpaired statistic to Student's t with Welch-type df over the two
    samples' sizes; ``distribution="t"`` reproduces its p-value for every alternative."""
    ya, sa, yb, sb = _unpaired_inputs(dataset)
    ref = _UNPAIRED.loc[dataset]
    for alt, col in (("two-sided", "p_two_sided"), ("greater", "p_greater"), ("less", "p_less")):
        r = delong_test_unpaired(ya, sa, yb, sb, alternative=alt, distribution="t")
        assert r.auc_a == pytest.approx(ref["auc_a"], rel=1e-12)
        assert r.auc_b == pytest.approx(ref["auc_b"], rel=1e-12)
        assert r.statistic == pytest.approx(ref["statistic"], rel=1e-10)
        assert r.df == pytest.approx(ref["df"], rel=1e-10)
        assert r.pvalue == pytest.approx(ref[col], rel=1e-9), alt
        assert r.distribution == "t"
        z = delong_test_unpaired(ya, sa, yb, sb, alternative=alt)
        assert (z.statistic, z.variance, z.ci_low) == (r.statistic, r.variance, r.ci_low)
        assert z.distribution == "normal" and math.isnan(z.df)
    normal = delong_test_unpaired(ya, sa, yb, sb)
    assert normal.pvalue == pytest.approx(2 * special.ndtr(-abs(ref["statistic"])), rel=1e-9)


def test_unpaired_distribution_is_checked():
    with pytest.raises(MedauditError, match="distribution"):
        delong_test_unpaired([0, 1], [0.1, 0.9], [0, 1], [0.2, 0.8], distribution="student")


@pytest.mark.parametrize("tied", [False, True])
def test_int32_and_int64_counts_give_the_same_test_to_the_last_bit(monkeypatch, tied):
    """Untied counts are held in int32 below 2**30 items (half the memory traffic); above, in
    int64.  Both paths give bit-identical results: the counts are the same integers, and
    a mix with a tied curve (scale 2) rescales them without overflow."""
    from medaudit.stats import delong as D

    rng = np.random.default_rng(31)
    n = 4_000
    y = (rng.random(n) < 0.2).astype(float)
    a = rng.normal(size=n) + y
    b = 0.5 * a + rng.normal(size=n)
    if tied:
        b = np.round(b, 1)  # b tied, a not: the rescale path
    small = delong_test(y, a, b)
    v_small = delong_placements(y, a)
    assert D._counts(y == 1.0, a, int(y.sum()))[0].dtype == np.int32
    monkeypatch.setattr(D, "_INT32_BELOW", 0)
    assert D._counts(y == 1.0, a, int(y.sum()))[0].dtype == np.int64
    big = delong_test(y, a, b)
    assert (small.statistic, small.pvalue, small.variance, small.auc_a, small.auc_b) == (
        big.statistic, big.pvalue, big.variance, big.auc_a, big.auc_b)
    for u, v in zip(v_small, delong_placements(y, a), strict=True):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("seed", range(6))
def test_paired_variance_is_the_exact_variance_correctly_rounded(seed, monkeypatch):
    """Witness: the paired variance from exact rational arithmetic (``fractions``) on the
    brute-force placements, rounded once; the integer sums give exactly that double for
    each class's variance.  The float two-pass fallback (forced) agrees to 1e-13."""
    from fractions import Fraction

    from medaudit.stats import delong as D

    y, sa, sb = _tied_data(seed, n=40 + 17 * seed)
    pa, na = O.delong_placements(y, sa)
    pb, nb = O.delong_placements(y, sb)
    n_pos, n_neg = len(pa), len(na)

    def exact_var(u, v, denom):  # placements are k / denom for integers k (ties: halves)
        d = [Fraction(round(2 * denom * (x - z)), 2 * denom) for x, z in zip(u, v, strict=True)]
        mean = sum(d) / len(d)
        return sum((x - mean) ** 2 for x in d) / (len(d) - 1)

    want = (float(exact_var(pa, pb, n_neg)) / n_pos, float(exact_var(na, nb, n_pos)) / n_neg)
    got = delong_test(y, sa, sb).variance
    assert got == want[0] + want[1]
    monkeypatch.setattr(D, "_INT64_SUMS_BELOW", 0)  # the float two-pass form of large n
    assert math.isclose(delong_test(y, sa, sb).variance, got, rel_tol=1e-13)


def test_zero_variance_with_a_difference_is_infinite_z_and_says_so():
    """A perfect model against an all-tied one: every placement is constant within its class,
    so the DeLong variance of the difference is 0 (by hand: V10_a = V01_a = 1, V10_b = V01_b =
    1/2) and z = +inf, p = 0 by the formula, as pROC gives; a warning says it overstates."""
    with pytest.warns(DegenerateDataWarning, match="variance of the AUROC difference is 0"):
        r = delong_test([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9], [0.5, 0.5, 0.5, 0.5])
    assert (r.estimate, r.variance, r.statistic, r.pvalue) == (0.5, 0.0, math.inf, 0.0)
    assert r.ci_low == r.ci_high == 0.5
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a model against itself: z = 0, p = 1, no warning
        same = delong_test([0, 0, 1, 1], [0.5] * 4, [0.5] * 4)
    assert (same.statistic, same.pvalue) == (0.0, 1.0)
