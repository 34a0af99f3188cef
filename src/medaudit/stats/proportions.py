"""Confidence intervals for a binomial proportion (statsmodels ``proportion_confint``).

Named methods, one canonical name each: ``"wilson"`` (score), ``"clopper_pearson"``
(exact, statsmodels' ``"beta"``), ``"agresti_coull"``, ``"jeffreys"`` and ``"normal"``
(Wald).  For sensitivity, specificity, PPV, NPV and accuracy at a threshold these sit
beside the bootstrap intervals of :func:`~medaudit.stats.threshold_metrics_ci`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from medaudit._validation import check_fraction, check_option, shown
from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats._results import _ToDict

__all__ = ["proportion_ci", "ProportionInterval", "PROPORTION_METHODS"]

#: canonical name -> statsmodels ``proportion_confint`` method
PROPORTION_METHODS = {"wilson": "wilson", "clopper_pearson": "beta",
                      "agresti_coull": "agresti_coull", "jeffreys": "jeffreys", "normal": "normal"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProportionInterval(_ToDict):
    """A proportion ``count / nobs`` with its interval (two-sided)."""

    estimate: float
    ci_low: float
    ci_high: float
    count: float
    nobs: float
    method: str
    confidence_level: float


def _count(x, name: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise MedauditError(f"{name} must be a non-negative number; got {shown(x)}.") from None
    if not math.isfinite(v) or v < 0:
        raise MedauditError(f"{name} must be a non-negative number; got {shown(x)}.")
    return v


def proportion_ci(count: float, nobs: float, *, method: str = "wilson",
                  confidence_level: float = 0.95) -> ProportionInterval:
    """Two-sided interval for the proportion ``count / nobs``.

    Parameters
    ----------
    count : float
        Successes (e.g. true positives); weighted counts are accepted and used as given.
    nobs : float
        Trials (e.g. positives).  ``nobs = 0`` gives nan with
        :class:`~medaudit.exceptions.UndefinedMetricWarning`.
    method : {"wilson", "clopper_pearson", "agresti_coull", "jeffreys", "normal"}, default="wilson"
    confidence_level : float, default=0.95

    Returns
    -------
    ProportionInterval

    Notes
    -----
    Computed by :func:`statsmodels.stats.proportion.proportion_confint`; checked against
    R's ``binom.test`` (Clopper–Pearson), ``prop.test(correct = FALSE)`` (Wilson) and
    the Agresti–Coull formula written out in R (tests/reference/proportions_R.csv).
    Zero cells are fine: ``count = 0`` gives a lower bound of exactly 0 and
    ``count = nobs`` an upper bound of exactly 1, for every method.  For ``"jeffreys"``
    this is Brown, Cai & DasGupta's (2001) boundary modification, which statsmodels does
    not make (its bound at ``count = 0`` is ``beta.ppf(alpha / 2, 0.5, nobs + 0.5)`` > 0,
    an interval that excludes the estimate); elsewhere it equals statsmodels to rounding.

    Examples
    --------
    >>> r = proportion_ci(18, 20, method="clopper_pearson")
    >>> round(r.ci_low, 6), round(r.ci_high, 6)
    (0.683017, 0.987651)
    >>> proportion_ci(0, 10).ci_low
    0.0
    """
    m = check_option(method, tuple(PROPORTION_METHODS), name="method")
    level = check_fraction(confidence_level, name="confidence_level")
    k, n = _count(count, "count"), _count(nobs, "nobs")
    if k > n:
        raise MedauditError(f"count ({k!r}) cannot exceed nobs ({n!r}).")
    if n == 0:
        warnings.warn("proportion_ci: nobs is 0, so the proportion is undefined; returning nan.",
                      UndefinedMetricWarning, stacklevel=2)
        return ProportionInterval(estimate=math.nan, ci_low=math.nan, ci_high=math.nan, count=k,
                                  nobs=n, method=m, confidence_level=level)
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(k, n, alpha=1.0 - level, method=PROPORTION_METHODS[m])
    # statsmodels already truncates the Wald and Agresti-Coull ends to [0, 1] (documented
    # here because R's formula does not); the clip only guards rounding
    lo, hi = float(np.clip(lo, 0.0, 1.0)), float(np.clip(hi, 0.0, 1.0))
    # at count 0 (count = nobs) every interval contains the estimate 0 (1): Wilson's bound
    # is 0 exactly but statsmodels' formula leaves a 1e-17 residue, and the Jeffreys bound
    # is set to 0 (1) as Brown, Cai & DasGupta (2001) do (statsmodels does not)
    if k == 0:
        lo = 0.0
    if k == n:
        hi = 1.0
    return ProportionInterval(estimate=k / n, ci_low=lo, ci_high=hi, count=k, nobs=n, method=m,
                              confidence_level=level)
