"""Compare medaudit's AUROC / DeLong routines with R + pROC on real public data.

Data: per-image P(TB) of ImageNet ResNet-50s trained on 4 source cohorts (TBX11K, Shenzhen,
Montgomery, Qatar) x 5 seeds (42-46), on the Montgomery (n=28) and Shenzhen (n=114) test
sets, from kwang311/tbx11k-cross-cohort-eval at commit 0700004b (see the data folder's
README.md).  The data live OUTSIDE the repository, in ``../shared/data/
tb_cross_cohort_predictions_kwang311/`` relative to the repository root, and are never copied
into it; only the derived numbers in ``tests/reference/kwang311_pROC.csv`` are committed.
The module is skipped when the data folder is absent.

Reference values: ``Rscript tests/reference/generate_kwang311_pROC.R`` (from the repository
root); see that script for the exact pROC calls.  Known difference handled here: pROC's
``ci.auc(method="delong")`` clips the interval to [0, 1] and medaudit does not, so medaudit's
bounds are compared with the unclipped bounds ``auc -/+ qnorm(0.975) * sqrt(var)`` written by
the R script (rows ``ci_low_unclipped`` / ``ci_high_unclipped``); pROC's clipped bounds are
checked only for consistency (see :func:`test_pROC_clipped_bounds_are_the_unclipped_ones_clipped`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from medaudit.stats import delong_ci, delong_test, delong_variance, roc_auc

pytestmark = pytest.mark.r_reference

REFERENCE_CSV = Path(__file__).resolve().parents[1] / "reference" / "kwang311_pROC.csv"
DATA_NAME = "tb_cross_cohort_predictions_kwang311"
DATA_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / DATA_NAME

if not DATA_DIR.is_dir():
    pytest.skip(
        f"real-data folder {DATA_DIR} is absent (it lives outside the repository, in "
        "../shared/data relative to the repository root); the kwang311 pROC comparison needs it",
        allow_module_level=True,
    )

RTOL = 1e-10  # AUCs, variances, statistics, interval bounds
P_RTOL = 1e-9  # p-values
P_ATOL = 1e-300

COHORTS = ("Montgomery", "Shenzhen")
SOURCES = ("TBX11K", "Shenzhen", "Montgomery", "Qatar")
SEEDS = (42, 43, 44, 45, 46)
SCORE_COLUMNS = [f"s{seed}_{src}" for src in SOURCES for seed in SEEDS]

_REF = pd.read_csv(REFERENCE_CSV, comment="#", dtype={"a": str, "b": str}, keep_default_na=False)
_DATA: dict[str, pd.DataFrame] = {}


def _data(cohort: str) -> pd.DataFrame:
    if cohort not in _DATA:
        d = pd.read_csv(DATA_DIR / f"resnet50_full_test-{cohort}.csv")
        assert list(d.columns) == ["stem", "label", *SCORE_COLUMNS]
        _DATA[cohort] = d
    return _DATA[cohort]


def _y(cohort: str) -> np.ndarray:
    return _data(cohort)["label"].to_numpy(dtype=np.int64)


def _s(cohort: str, column: str) -> np.ndarray:
    return _data(cohort)[column].to_numpy(dtype=np.float64)


def _ensemble(cohort: str, source: str) -> np.ndarray:
    cols = [f"s{seed}_{source}" for seed in SEEDS]
    return _data(cohort)[cols].to_numpy(dtype=np.float64).mean(axis=1)


def _ref(cohort: str, kind: str, a: str, b: str, quantity: str) -> float:
    m = _REF[
        (_REF["cohort"] == cohort)
        & (_REF["kind"] == kind)
        & (_REF["a"] == a)
        & (_REF["b"] == b)
        & (_REF["quantity"] == quantity)
    ]
    assert len(m) == 1, f"expected one reference row for {(cohort, kind, a, b, quantity)}"
    return float(m["value"].iloc[0])


def _close(actual, expected, *, what, rtol=RTOL, atol=0.0):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def _keys(kind: str) -> list[tuple[str, str, str]]:
    sub = _REF[_REF["kind"] == kind]
    return list(dict.fromkeys(zip(sub["cohort"], sub["a"], sub["b"], strict=True)))


SINGLE = [pytest.param(c, a, id=f"{c}-{a}") for c, a, _ in _keys("single")]
PAIRED = [pytest.param(c, a, b, id=f"{c}-{a}-vs-{b}") for c, a, b in _keys("paired")]
ENSEMBLE = [pytest.param(c, a, id=f"{c}-ensemble_{a}") for c, a, _ in _keys("ensemble")]


# --------------------------------------------------------------------------------------------
# The data and the reference file
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cohort", COHORTS)
def test_data_labels_and_counts(cohort):
    d = _data(cohort)
    n, n_pos = {"Montgomery": (28, 12), "Shenzhen": (114, 58)}[cohort]
    assert len(d) == n and int(d["label"].sum()) == n_pos
    # label is the file-name suffix (_1 = TB)
    assert (d["stem"].str.rsplit("_", n=1).str[1].astype(int) == d["label"]).all()
    assert np.isfinite(d[SCORE_COLUMNS].to_numpy(dtype=np.float64)).all()


def test_reference_covers_the_planned_comparisons():
    expected_pairs = [(f"s42_{s}", f"s43_{s}") for s in SOURCES] + [
        (f"s42_{SOURCES[i]}", f"s42_{SOURCES[j]}")
        for i in range(len(SOURCES))
        for j in range(i + 1, len(SOURCES))
    ]
    for cohort in COHORTS:
        assert [a for c, a, _ in _keys("single") if c == cohort] == SCORE_COLUMNS
        assert [(a, b) for c, a, b in _keys("paired") if c == cohort] == expected_pairs
        assert [a for c, a, _ in _keys("ensemble") if c == cohort] == list(SOURCES)
    assert set(_REF["kind"]) == {"single", "paired", "ensemble"}
    assert (_REF.loc[_REF["kind"] != "paired", "b"] == "").all()


@pytest.mark.parametrize(("cohort", "column"), SINGLE)
def test_case_control_ties_match_R(cohort, column):
    """Tied (case, control) pairs exercise the 1/2 convention; counts must agree with R."""
    y, s = _y(cohort), _s(cohort, column)
    ties = int((s[y == 1][:, None] == s[y == 0][None, :]).sum())
    assert ties == int(_ref(cohort, "single", column, "", "n_ties_across"))


# --------------------------------------------------------------------------------------------
# Single AUC: roc_auc, delong_variance, delong_ci
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cohort", "column"), SINGLE)
def test_roc_auc_matches_pROC(cohort, column):
    y, s = _y(cohort), _s(cohort, column)
    _close(roc_auc(y, s), _ref(cohort, "single", column, "", "auc"), what=f"{cohort} {column} auc")


@pytest.mark.parametrize(("cohort", "column"), SINGLE)
def test_delong_variance_matches_pROC(cohort, column):
    y, s = _y(cohort), _s(cohort, column)
    _close(
        delong_variance(y, s),
        _ref(cohort, "single", column, "", "var"),
        what=f"{cohort} {column} var",
    )


@pytest.mark.parametrize(("cohort", "column"), SINGLE)
def test_delong_ci_matches_unclipped_pROC_interval(cohort, column):
    y, s = _y(cohort), _s(cohort, column)
    res = delong_ci(y, s, confidence_level=0.95)
    what = f"{cohort} {column}"
    _close(res.estimate, _ref(cohort, "single", column, "", "auc"), what=f"{what} estimate")
    _close(res.variance, _ref(cohort, "single", column, "", "var"), what=f"{what} variance")
    _close(
        res.ci_low,
        _ref(cohort, "single", column, "", "ci_low_unclipped"),
        what=f"{what} ci_low",
    )
    _close(
        res.ci_high,
        _ref(cohort, "single", column, "", "ci_high_unclipped"),
        what=f"{what} ci_high",
    )


@pytest.mark.parametrize(("cohort", "column"), SINGLE)
def test_pROC_clipped_bounds_are_the_unclipped_ones_clipped(cohort, column):
    """pROC's ci.auc bound equals medaudit's bound, or exactly 0 / 1 where pROC clipped it."""
    res = delong_ci(_y(cohort), _s(cohort, column), confidence_level=0.95)
    for bound, mine in (("ci_low", res.ci_low), ("ci_high", res.ci_high)):
        _close(
            _ref(cohort, "single", column, "", bound),
            min(max(mine, 0.0), 1.0),
            what=f"{cohort} {column} pROC {bound} vs clip(medaudit)",
        )


# --------------------------------------------------------------------------------------------
# Paired DeLong: roc.test(roc_a, roc_b, method="delong", paired=TRUE)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cohort", "a", "b"), PAIRED)
def test_paired_delong_test_matches_pROC(cohort, a, b):
    y = _y(cohort)
    res = delong_test(y, _s(cohort, a), _s(cohort, b))
    what = f"{cohort} {a} vs {b}"

    def ref(q):
        return _ref(cohort, "paired", a, b, q)

    _close(res.auc_a, ref("auc_a"), what=f"{what} auc_a")
    _close(res.auc_b, ref("auc_b"), what=f"{what} auc_b")
    _close(res.estimate, ref("estimate"), what=f"{what} estimate (a - b)")
    _close(res.variance, ref("variance"), what=f"{what} variance of a - b")
    _close(res.statistic, ref("statistic"), what=f"{what} z")
    _close(res.ci_low, ref("ci_low"), what=f"{what} ci_low")
    _close(res.ci_high, ref("ci_high"), what=f"{what} ci_high")
    _close(res.pvalue, ref("pvalue"), what=f"{what} two-sided p", rtol=P_RTOL, atol=P_ATOL)


# --------------------------------------------------------------------------------------------
# Seed ensemble: AUC of the row mean of a source's 5 seed columns
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cohort", "source"), ENSEMBLE)
def test_seed_ensemble_matches_pROC(cohort, source):
    y, s = _y(cohort), _ensemble(cohort, source)
    what = f"{cohort} ensemble {source}"
    _close(roc_auc(y, s), _ref(cohort, "ensemble", source, "", "auc"), what=f"{what} auc")
    res = delong_ci(y, s, confidence_level=0.95)
    _close(res.variance, _ref(cohort, "ensemble", source, "", "var"), what=f"{what} var")
    _close(
        res.ci_low,
        _ref(cohort, "ensemble", source, "", "ci_low_unclipped"),
        what=f"{what} ci_low",
    )
    _close(
        res.ci_high,
        _ref(cohort, "ensemble", source, "", "ci_high_unclipped"),
        what=f"{what} ci_high",
    )
