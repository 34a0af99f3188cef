"""Witnesses for medaudit.stats.association: scikit-learn's Cohen's kappa, scipy's rank
correlations, and hand-worked cases."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats.association import cohen_kappa, jaccard, kendall, spearman


@given(st.lists(st.tuples(st.sampled_from(["pos", "neg", "unsure"]),
                          st.sampled_from(["pos", "neg", "unsure"])), min_size=2, max_size=60))
def test_kappa_is_sklearns(pairs):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    r = cohen_kappa(a, b)
    if len(set(a) | set(b)) == 1:  # chance agreement 1: undefined (sklearn divides 0 by 0)
        assert math.isnan(r.estimate)
        return
    assert r.estimate == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert r.details["observed_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b)))


def test_kappa_by_hand():
    # 10 items: 4 both yes, 3 both no, 2 yes/no, 1 no/yes -> po = .7,
    # pe = .6*.5 + .4*.5 = .5, kappa = (.7 - .5) / .5 = .4
    a = [1] * 6 + [0] * 4
    b = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0]
    r = cohen_kappa(a, b)
    assert r.details["chance_agreement"] == pytest.approx(0.5)
    assert r.estimate == pytest.approx(0.4)


def test_jaccard_by_hand():
    assert jaccard({"a", "b"}, {"b", "c", "d"}) == pytest.approx(1 / 4)
    assert jaccard(set(), {"a"}) == 0.0
    assert math.isnan(jaccard(set(), set()))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_rank_correlations_with_ties_are_scipys(alternative):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 5, 40).astype(float)  # many ties
    y = x + rng.integers(0, 3, 40)
    s = spearman(x, y, alternative=alternative)
    ref = stats.spearmanr(x, y, alternative=alternative)
    assert (s.estimate, s.pvalue) == pytest.approx((ref.statistic, ref.pvalue), abs=1e-12)
    for variant in ("b", "c"):
        k = kendall(x, y, alternative=alternative, variant=variant)
        ref = stats.kendalltau(x, y, alternative=alternative, variant=variant)
        assert (k.estimate, k.pvalue) == pytest.approx((ref.statistic, ref.pvalue), abs=1e-12)


def test_kendall_tau_b_by_hand():
    # x = 1 2 3 4, y = 1 3 2 4: 5 concordant, 1 discordant pair, no ties -> (5 - 1) / 6
    assert kendall([1, 2, 3, 4], [1, 3, 2, 4]).estimate == pytest.approx(4 / 6)


def test_bad_inputs():
    with pytest.raises(MedauditError, match="at least 2"):
        spearman([1.0], [2.0])
    with pytest.raises(MedauditError, match="empty"):
        cohen_kappa([], [])
    with pytest.raises(MedauditError):
        kendall([1, 2], [1, 2, 3])


@pytest.mark.parametrize("fn", [spearman, kendall])
def test_a_constant_variable_is_undefined_with_medaudits_warning_at_the_callers_line(fn):
    # probe finding: Spearman passed on scipy's ConstantInputWarning, pointing at a line inside
    # medaudit; Kendall returned nan without a word
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fn([1, 1, 1, 1], [1, 2, 3, 4])
    assert math.isnan(res.estimate) and math.isnan(res.pvalue) and res.n == 4
    assert [w.category for w in caught] == [UndefinedMetricWarning]
    assert "x is constant" in str(caught[0].message) and caught[0].filename == __file__
