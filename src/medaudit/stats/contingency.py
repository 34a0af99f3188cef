"""Tests on counts: Fisher exact, Cochran–Mantel–Haenszel, exact binomial.

Thin, documented wrappers around scipy and statsmodels that validate their input
and return :class:`~medaudit.stats.TestResult` with the common conventions.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from medaudit._validation import check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats._results import TestResult

__all__ = ["fisher_exact", "cmh_test", "binomial_test"]


def _table(table: ArrayLike, name: str = "table") -> np.ndarray:
    try:
        t = np.asarray(table, dtype=np.float64)
    except (TypeError, ValueError):
        raise MedauditError(f"{name} must be a numeric 2x2 table of counts.") from None
    if t.shape != (2, 2):
        raise MedauditError(f"{name} must have shape (2, 2); got {t.shape}.")
    if not np.all(np.isfinite(t)) or (t < 0).any() or (t != np.round(t)).any():
        raise MedauditError(f"{name} must hold non-negative integer counts; got {t.tolist()}.")
    return t.astype(np.int64)


def fisher_exact(table: ArrayLike, *, alternative: str = "two-sided") -> TestResult:
    """Fisher's exact test of a 2x2 table ``[[a, b], [c, d]]`` (scipy).

    A table with an empty row or column (e.g. zero events in both groups) gives
    ``p = 1`` and an undefined (nan) odds ratio; such contrasts are kept, not dropped.

    Examples
    --------
    >>> r = fisher_exact([[8, 2], [1, 5]])
    >>> round(r.pvalue, 6), round(r.estimate, 6)
    (0.034965, 20.0)
    >>> fisher_exact([[0, 10], [0, 12]]).pvalue
    1.0
    """
    alternative = check_option(alternative, ("two-sided", "greater", "less"), name="alternative")
    t = _table(table)
    res = stats.fisher_exact(t, alternative=alternative)
    a, b, c, d = t.ravel()
    odds = (a * d) / (b * c) if b * c > 0 else (math.inf if a * d > 0 else math.nan)
    return TestResult(method="fisher_exact", statistic=float(res.statistic), pvalue=float(res.pvalue),
                      estimate=float(odds), alternative=alternative, n=int(t.sum()),
                      details={"table": t.tolist(), "scipy_odds_ratio": float(res.statistic)})


def cmh_test(tables: ArrayLike, *, correction: bool = True) -> TestResult:
    """Cochran–Mantel–Haenszel test of a common odds ratio of 1 over K strata (statsmodels).

    Parameters
    ----------
    tables : array-like of shape (K, 2, 2)
        One 2x2 table per stratum.
    correction : bool, default=True
        Continuity correction of the CMH statistic.

    Returns
    -------
    TestResult
        ``estimate`` is the Mantel–Haenszel pooled odds ratio; ``details`` lists
        the strata dropped because they carry no information (a zero row or column
        margin) — dropped strata are reported, never hidden.

    Examples
    --------
    >>> r = cmh_test([[[10, 5], [3, 12]], [[8, 4], [4, 9]], [[0, 0], [3, 4]]])
    >>> r.details["dropped_strata"], round(r.pvalue, 4)
    ([2], 0.0053)
    """
    from statsmodels.stats.contingency_tables import StratifiedTable

    try:
        t = np.asarray(tables, dtype=np.float64)
    except (TypeError, ValueError):
        raise MedauditError("tables must be numeric, shape (K, 2, 2).") from None
    if t.ndim != 3 or t.shape[1:] != (2, 2):
        raise MedauditError(f"tables must have shape (K, 2, 2); got {t.shape}.")
    for k in range(t.shape[0]):
        _table(t[k], name=f"tables[{k}]")
    informative = (t.sum(axis=2) > 0).all(axis=1) & (t.sum(axis=1) > 0).all(axis=1)
    dropped = np.flatnonzero(~informative).tolist()
    kept = t[informative]
    if kept.shape[0] == 0:
        return TestResult(method="cmh", statistic=math.nan, pvalue=math.nan, n=int(t.sum()),
                          details={"dropped_strata": dropped, "n_strata_used": 0,
                                   "reason": "no informative stratum"})
    st = StratifiedTable(np.moveaxis(kept, 0, -1))
    # statsmodels divides by zero when the pooled odds ratio is infinite (every informative
    # stratum has a zero off-diagonal cell); the test statistic is still defined and the
    # estimate is honestly inf, so the warning carries no information
    with np.errstate(divide="ignore", invalid="ignore"):
        res = st.test_null_odds(correction=correction)
        estimate = float(st.oddsratio_pooled)
    return TestResult(method="cmh", statistic=float(res.statistic), pvalue=float(res.pvalue),
                      estimate=estimate, n=int(t.sum()),
                      details={"dropped_strata": dropped, "n_strata_used": int(kept.shape[0]),
                               "correction": bool(correction)})


def binomial_test(
    k: int, n: int, *, p: float = 0.5, alternative: str = "two-sided", confidence_level: float = 0.95
) -> TestResult:
    """Exact binomial test of ``k`` successes in ``n`` trials (scipy), with Clopper–Pearson CI.

    Examples
    --------
    >>> r = binomial_test(10, 13, alternative="greater")
    >>> round(r.pvalue, 6)
    0.046143
    """
    alternative = check_option(alternative, ("two-sided", "greater", "less"), name="alternative")
    p = check_fraction(p, name="p", closed="both")
    level = check_fraction(confidence_level, name="confidence_level")
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise MedauditError(f"n must be a positive integer; got {n!r}.")
    if isinstance(k, bool) or int(k) != k or not 0 <= k <= n:
        raise MedauditError(f"k must be an integer in [0, n={n}]; got {k!r}.")
    res = stats.binomtest(int(k), int(n), p=p, alternative=alternative)
    ci = res.proportion_ci(confidence_level=level, method="exact")
    return TestResult(method="binomial_exact", statistic=float(k), pvalue=float(res.pvalue),
                      estimate=float(k / n), ci_low=float(ci.low), ci_high=float(ci.high),
                      confidence_level=level, alternative=alternative, n=int(n),
                      details={"p_null": p})
