"""Peer witness: Cohen's kappa (scikit-learn ``cohen_kappa_score``, statsmodels
``cohens_kappa``), Fleiss' and Randolph's kappa (statsmodels ``fleiss_kappa``) and
Krippendorff's alpha (the ``krippendorff`` package), on edges the other interrater tests
skip: labels of mixed types (int/float/bool), one category, disjoint categories,
declared-but-unobserved categories, missing ratings.

A missing rating (NaN / None) is refused by scikit-learn; medaudit's ``cohen_kappa``
treats every NaN as a category of its own (refused since the fix; tested below).
"""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, to_table
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from medaudit.exceptions import MedauditError
from medaudit.stats import cohen_kappa, fleiss_kappa, krippendorff_alpha

_PAIRS = [
    ([0, 1, 1, 0], [0.0, 1.0, 1.0, 0.0]),          # int vs float codes: same categories
    ([True, False, True], [1, 0, 1]),               # bool vs int
    ([1, 1, 1], [0, 0, 0]),                         # disjoint categories: kappa 0
    ([0, 1, 2, 2, 1], [0, 1, 2, 1, 1]),
    (["a", "b", "a"], ["a", "b", "b"]),
    ([1, 2, 3, 4], [2, 3, 4, 1]),                   # total disagreement: negative kappa
    ([0, 1, 1, 0, 1, 0, 0, 1, 1, 1], [0, 1, 0, 0, 1, 1, 0, 1, 1, 0]),
]


@pytest.mark.parametrize(("a", "b"), _PAIRS)
def test_cohen_kappa_is_sklearns(a, b):
    assert cohen_kappa(a, b).estimate == pytest.approx(cohen_kappa_score(a, b), abs=1e-14)


def test_cohen_kappa_one_category_is_undefined_as_in_sklearn():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(cohen_kappa_score([1, 1, 1], [1, 1, 1]))
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]).estimate)


def test_cohen_kappa_agreements_are_statsmodels():
    a = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 2, 2]
    b = [0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 2, 1]
    table = to_table(np.c_[a, b])[0]
    sm = cohens_kappa(table)
    r = cohen_kappa(a, b)
    assert r.estimate == pytest.approx(sm.kappa, abs=1e-14)
    po = np.trace(table) / table.sum()
    assert r.details["observed_agreement"] == pytest.approx(po, abs=1e-15)


def test_cohen_kappa_refuses_missing_ratings():
    a = np.array([0, 1, np.nan, np.nan, 1.0])
    with warnings.catch_warnings(), pytest.raises(ValueError, match="NaN"):
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's cast warning before the check
        cohen_kappa_score(a, a)
    with pytest.raises(MedauditError):
        cohen_kappa(a, a)


@pytest.mark.parametrize("missing", [None, float("nan"), "pd.NA"])
def test_cohen_kappa_names_the_rater_and_positions_of_missing_verdicts(missing):
    import pandas as pd

    gap = pd.NA if missing == "pd.NA" else missing
    a = [0, 1, 1, 0, 1]
    b = [0, 1, gap, 0, gap]
    with pytest.raises(MedauditError, match=r"rater_b has missing verdicts .* \[2, 4\]"):
        cohen_kappa(a, b)
    # coded as a category of its own, as the message advises, it is an ordinary verdict
    coded = ["0", "1", "missing", "0", "missing"]
    assert cohen_kappa([str(v) for v in a], coded).estimate == pytest.approx(
        cohen_kappa_score([str(v) for v in a], coded), abs=1e-14)


_RNG = np.random.default_rng(5)
_RATINGS = {
    "random_3cat": _RNG.integers(0, 3, (20, 4)),
    "fleiss_like": _RNG.integers(1, 6, (10, 14)),
    "small": np.array([[1, 1, 1], [1, 2, 2], [2, 2, 2], [1, 1, 2]]),
    "perfect": np.array([[1, 1], [1, 1], [2, 2]]),
    "anti": np.array([[0, 1], [1, 0], [0, 1]]),
    "many_items": _RNG.integers(0, 2, (500, 3)),
    "noncontiguous_codes": np.array([[5, 5, 5], [5, 5, 7]]),
    "fractional_codes": np.array([[1.5, 2.5], [2.5, 2.5]]),
}


@pytest.mark.parametrize("method", ["fleiss", "randolph"])
@pytest.mark.parametrize("name", list(_RATINGS))
def test_fleiss_kappa_is_statsmodels(name, method):
    r = _RATINGS[name]
    table, _ = aggregate_raters(r)
    got = fleiss_kappa(r, method=method, n_resamples=0).estimate
    assert got == pytest.approx(sm_fleiss_kappa(table, method=method), abs=1e-13)


@pytest.mark.parametrize("method", ["fleiss", "randolph"])
def test_declared_unobserved_category(method):
    # Randolph's chance agreement is 1/k: a declared, never used category changes it
    r = _RATINGS["small"]
    table, _ = aggregate_raters(r)
    table3 = np.c_[table, np.zeros(len(r))]
    got = fleiss_kappa(r, method=method, categories=[1, 2, 3], n_resamples=0).estimate
    assert got == pytest.approx(sm_fleiss_kappa(table3, method=method), abs=1e-13)


_ALPHA = {
    "missing": np.array([[1, np.nan, 1], [2, 2, np.nan], [np.nan, 3, 3], [1, 2, 3.0]]),
    "random_missing": np.where(_RNG.random((30, 5)) < 0.3, np.nan,
                               _RNG.integers(1, 6, (30, 5)).astype(float)),
    "fractional": np.array([[1.5, 2.5], [2.5, 2.5], [0.1, 0.1]]),
    "one_unpairable_item": np.array([[1, np.nan], [2, 2.0], [3, 3]]),
    "two_items": np.array([[1, 2], [2, 1.0]]),
}


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("name", list(_ALPHA))
def test_krippendorff_alpha_is_the_packages(name, level):
    r = _ALPHA[name]
    want = krippendorff.alpha(reliability_data=r.T, level_of_measurement=level)
    got = krippendorff_alpha(r, level=level, n_resamples=0).estimate
    assert got == pytest.approx(want, abs=1e-12)


def test_krippendorff_alpha_one_value_is_nan_where_the_package_refuses():
    r = np.ones((3, 2))
    with pytest.raises(ValueError):
        krippendorff.alpha(reliability_data=r.T, level_of_measurement="nominal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(krippendorff_alpha(r, n_resamples=0).estimate)
