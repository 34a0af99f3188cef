"""Ranking metrics (medaudit.stats.ranking; methods.md M0.7): AUROC and average precision.

Witnesses: hand-worked toy cases, the slow oracles of ``tests/_oracles.py`` and scikit-learn
at ``rtol=1e-12``, hypothesis properties; traps T8 (AP tie conventions) by name.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from numpy.testing import assert_allclose
from sklearn.metrics import (
    average_precision_score,
    roc_auc_score,
)

from medaudit.stats import (
    average_precision,
    roc_auc,
)
from tests import _oracles as oracle
from tests.stats._helpers import (
    RTOL,
    _approx,
    _cases,
    labelled,
)


# ===================================================================== AUROC (M0.7)
def test_roc_auc_toy():
    # pairs (pos, neg): (0.35, 0.1) = 1, (0.35, 0.4) = 0, (0.8, 0.1) = 1, (0.8, 0.4) = 1 -> 3/4
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
    # with a tie: pos {0.5, 0.9}, neg {0.5, 0.1}: 0.5 + 1 + 1 + 1 = 3.5 of 4 pairs.
    # Mid-ranks (ascending): 0.1 -> 1, 0.5 -> 2.5, 0.5 -> 2.5, 0.9 -> 4; R_P = 6.5;
    # (R_P - |P|(|P|+1)/2) / (|P||N|) = (6.5 - 3) / 4 = 0.875
    assert roc_auc([0, 1, 1, 0], [0.5, 0.5, 0.9, 0.1]) == 0.875


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_roc_auc_matches_oracle_and_sklearn(tied):
    for y, s in _cases(1, tied=tied):
        got = roc_auc(y, s)
        assert_allclose(got, oracle.auroc_pairwise(y, s), rtol=RTOL)
        assert_allclose(got, roc_auc_score(y, s), rtol=RTOL)


@given(labelled(prob=False))
def test_roc_auc_matches_oracle_property(ys):
    y, s = ys
    assert_allclose(roc_auc(y, s), oracle.auroc_pairwise(y, s), rtol=RTOL)


# ============================================================ average precision (M0.7)
def test_average_precision_toy():
    # ranks 1 (pos), 2 (neg), 3 (pos): (TP_1/1 + TP_3/3)/|P| = (1/1 + 2/3)/2 = 5/6
    assert average_precision([1, 0, 1], [0.9, 0.8, 0.7]) == _approx(5 / 6, rel=RTOL)
    assert average_precision([1, 0, 1], [0.9, 0.8, 0.7], ties="pooled") == _approx(5 / 6, rel=RTOL)


def test_average_precision_tie_conventions_toy():
    # M1.2 tie example: s = 0.9, 0.7, 0.7, 0.7, 0.2, 0.1 with y = 1, 0, 1, 1, 0, 0.
    s, y = [0.9, 0.7, 0.7, 0.7, 0.2, 0.1], [1, 0, 1, 1, 0, 0]
    # individual (stable, input order in the tie): positives at ranks 1, 3, 4
    #   (1/1 + 2/3 + 3/4)/3 = 29/36 = 0.80556
    assert average_precision(y, s) == _approx(29 / 36, rel=RTOL)
    # pooled: t = 0.9 -> recall 1/3, precision 1/1; t = 0.7 -> recall 1, precision 3/4
    #   1/3 * 1 + (1 - 1/3) * 3/4 = 5/6 = 0.83333 (sklearn's convention)
    assert average_precision(y, s, ties="pooled") == _approx(5 / 6, rel=RTOL)
    # individual ranks depend on the order inside the tie: positives first -> ranks 1, 2, 3
    assert average_precision([1, 1, 1, 0, 0, 0], s) == _approx(1.0, rel=RTOL)
    assert average_precision([1, 1, 1, 0, 0, 0], s, ties="pooled") == _approx(5 / 6, rel=RTOL)


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_average_precision_pooled_matches_sklearn_and_oracle(tied):
    for y, s in _cases(2, tied=tied):
        got = average_precision(y, s, ties="pooled")
        assert_allclose(got, average_precision_score(y, s), rtol=RTOL)
        assert_allclose(got, oracle.average_precision_pooled(y, s), rtol=RTOL)


@pytest.mark.parametrize("tied", [True, False], ids=["heavy-ties", "untied"])
def test_average_precision_individual_matches_oracle(tied):
    for y, s in _cases(3, tied=tied):
        assert_allclose(
            average_precision(y, s, ties="individual"), oracle.average_precision_individual(y, s), rtol=RTOL
        )


@given(labelled(prob=False, unique=True))
def test_T8_average_precision_conventions_agree_without_ties(ys):
    # T8: the paper orders ties individually, sklearn pools them; untied, they coincide.
    y, s = ys
    individual = average_precision(y, s, ties="individual")
    assert_allclose(individual, average_precision(y, s, ties="pooled"), rtol=RTOL)
    assert_allclose(individual, average_precision_score(y, s), rtol=RTOL)


def test_average_precision_individual_is_exact_when_positive_ranked_last():
    # 999 negatives scored above 1 positive: the positive sits at rank 1000 with TP = 1, so
    # AP = (1/|P|) * TP/k = 1/1000 exactly (individual and pooled agree: no ties).
    # sklearn gets 0.001 to the last bit.  Regression test: a kernel that evaluated the
    # precision as 1 + (C - K)(H[K+1] - H[K]) from a cumulative harmonic table cancelled
    # catastrophically here (two ~7.5-sized harmonic numbers times C - K = -999): it gave
    # 9.999999996663789e-04, relative error 3e-10, growing to ~4e-7 at n = 1e5.
    n = 1000
    y = np.r_[np.zeros(n - 1), 1.0]
    s = np.linspace(1.0, 0.0, n)
    assert average_precision_score(y, s) == _approx(1e-3, rel=RTOL)
    assert average_precision(y, s, ties="pooled") == _approx(1e-3, rel=RTOL)
    assert average_precision(y, s, ties="individual") == _approx(1e-3, rel=RTOL)


def test_ties_that_move_average_precision_warn_with_both_values():
    """The individual-rank default depends on row order under ties: a constant scorer gets
    AP 1.0 with the positives listed first; the warning carries the pooled value."""
    from medaudit.exceptions import TiedScoresWarning
    from medaudit.stats.ranking import AP_TIE_TOLERANCE
    y = np.r_[np.ones(18), np.zeros(82)]
    s = np.full(100, 0.5)
    for labels, individual in ((y, 1.0), (y[::-1], oracle.average_precision_individual(y[::-1], s))):
        with pytest.warns(TiedScoresWarning, match="ties pooled it is 0.18") as rec:
            assert average_precision(labels, s) == pytest.approx(individual, rel=1e-12)
        w = rec[0].message
        assert w.individual == pytest.approx(individual, rel=1e-12)
        assert w.pooled == pytest.approx(average_precision_score(labels, s), rel=1e-12)
    # no warning without ties, or when ties move AP by less than the tolerance
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        average_precision([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.6])
        y2, s2 = np.r_[1.0, 0.0, np.ones(3000), np.zeros(3000)], np.r_[0.5, 0.5, np.arange(6000.0)]
        gap = abs(average_precision(y2, s2) - average_precision(y2, s2, ties="pooled"))
        assert 0 < gap <= AP_TIE_TOLERANCE
