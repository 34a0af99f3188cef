"""Tests on counts: Fisher exact, Cochran–Mantel–Haenszel, Breslow–Day, exact binomial.

Thin, documented wrappers around scipy and statsmodels that validate their input
and return :class:`~medaudit.stats.TestResult` with the common conventions.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats._results import TestResult

__all__ = ["fisher_exact", "cmh_test", "breslow_day_test", "binomial_test"]


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
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    alternative = check_option(alternative, ("two-sided", "greater", "less"), name="alternative")
    t = _table(table)
    res = stats.fisher_exact(t, alternative=alternative)
    a, b, c, d = t.ravel()
    odds = (a * d) / (b * c) if b * c > 0 else (math.inf if a * d > 0 else math.nan)
    return TestResult(method="fisher_exact", statistic=float(res.statistic), pvalue=float(res.pvalue),
                      estimate=float(odds), alternative=alternative, n=int(t.sum()),
                      details={"table": t.tolist(), "scipy_odds_ratio": float(res.statistic)})


def _strata(tables: ArrayLike):
    """(all tables, informative tables, dropped stratum indices) of a (K, 2, 2) array."""
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
    return t, t[informative], dropped


def cmh_test(tables: ArrayLike, *, correction: bool = True,
             confidence_level: float = 0.95) -> TestResult:
    """Cochran–Mantel–Haenszel test of a common odds ratio of 1 over K strata (statsmodels).

    Parameters
    ----------
    tables : array-like of shape (K, 2, 2)
        One 2x2 table per stratum.
    correction : bool, default=True
        Continuity correction of the CMH statistic.
    confidence_level : float, default=0.95
        Level of the interval of the pooled odds ratio.

    Returns
    -------
    TestResult
        ``estimate`` is the Mantel–Haenszel pooled odds ratio with its interval
        (``ci_low``, ``ci_high``: normal on the log scale with the Robins–Breslow–
        Greenland variance, statsmodels ``oddsratio_pooled_confint``, as R's
        ``mantelhaen.test``); ``details`` lists the strata dropped because they carry
        no information (a zero row or column margin) — dropped strata are reported,
        never hidden.

    Examples
    --------
    >>> r = cmh_test([[[10, 5], [3, 12]], [[8, 4], [4, 9]], [[0, 0], [3, 4]]])
    >>> r.details["dropped_strata"], round(r.pvalue, 4)
    ([2], 0.0053)
    >>> round(r.estimate, 4), round(r.ci_low, 4), round(r.ci_high, 4)
    (6.0351, 1.863, 19.5499)
    """
    from statsmodels.stats.contingency_tables import StratifiedTable

    level = check_fraction(confidence_level, name="confidence_level")
    t, kept, dropped = _strata(tables)
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
        lo, hi = (float(v) for v in st.oddsratio_pooled_confint(alpha=1.0 - level))
    return TestResult(method="cmh", statistic=float(res.statistic), pvalue=float(res.pvalue),
                      estimate=estimate, ci_low=lo, ci_high=hi, confidence_level=level,
                      n=int(t.sum()),
                      details={"dropped_strata": dropped, "n_strata_used": int(kept.shape[0]),
                               "correction": bool(correction)})


def breslow_day_test(tables: ArrayLike, *, tarone: bool = False) -> TestResult:
    """Breslow–Day test that the odds ratio is the same in every stratum (statsmodels).

    Parameters
    ----------
    tables : array-like of shape (K, 2, 2)
        One 2x2 table per stratum; strata with a zero row or column margin are dropped
        and listed, as in :func:`cmh_test`.
    tarone : bool, default=False
        Tarone's (1985) correction of the statistic (statsmodels ``adjust=True``).

    Returns
    -------
    TestResult
        Chi-square statistic on ``K - 1`` degrees of freedom (``details["df"]``);
        nan with fewer than two informative strata.

    Notes
    -----
    :meth:`statsmodels.stats.contingency_tables.StratifiedTable.test_equal_odds`;
    checked against R's ``epiR::epi.2by2`` (tests/reference/contingency_R.csv) and a
    direct evaluation of the Breslow–Day sum in the tests.

    Examples
    --------
    >>> r = breslow_day_test([[[10, 5], [3, 12]], [[8, 4], [4, 9]], [[2, 8], [6, 3]]])
    >>> round(r.statistic, 4), round(r.pvalue, 4), r.details["df"]
    (11.8046, 0.0027, 2)
    """
    from statsmodels.stats.contingency_tables import StratifiedTable

    t, kept, dropped = _strata(tables)
    details = {"dropped_strata": dropped, "n_strata_used": int(kept.shape[0]),
               "tarone": bool(tarone), "df": max(int(kept.shape[0]) - 1, 0)}
    if kept.shape[0] < 2:
        return TestResult(method="breslow_day", statistic=math.nan, pvalue=math.nan,
                          n=int(t.sum()), details={**details,
                                                   "reason": "fewer than two informative strata"})
    st = StratifiedTable(np.moveaxis(kept, 0, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        res = st.test_equal_odds(adjust=tarone)
    return TestResult(method="breslow_day_tarone" if tarone else "breslow_day",
                      statistic=float(res.statistic), pvalue=float(res.pvalue), n=int(t.sum()),
                      details=details)


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
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
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
