"""DeLong placements, variance, intervals and tests for AUROCs (DeLong et al. 1988).

Placements come from one stable sort per score vector and cumulative class counts
over tie blocks (O(n log n)); no pairwise comparison is ever formed.  At run time
the mean placement is checked against the AUROC (pROC's theta == AUC guard).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from medaudit._validation import as_scores, check_fraction, check_option, check_same_length
from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats._common import labels_scores
from medaudit.stats._results import AUCInterval, PairedAUCTest

__all__ = [
    "delong_placements",
    "delong_variance",
    "delong_ci",
    "delong_test",
    "delong_test_unpaired",
    "ALTERNATIVES",
]

ALTERNATIVES = ("two-sided", "greater", "less")


def _placements(y: NDArray[np.float64], s: NDArray[np.float64]):
    """Return (V10 over positives, V01 over negatives), each in input order."""
    order = np.argsort(s)  # tied scores form one block: their order does not matter
    ss, ys = s[order], y[order]
    new = np.empty(ss.size, dtype=bool)
    new[:1] = True
    np.not_equal(ss[1:], ss[:-1], out=new[1:])
    if new.all():
        return _placements_untied(y, order, ys)
    block = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    bp = np.add.reduceat(ys, starts)
    bn = np.add.reduceat(1.0 - ys, starts)
    n_pos, n_neg = bp.sum(), bn.sum()
    neg_below = np.cumsum(bn) - bn  # negatives strictly below each block (ascending)
    pos_above = n_pos - np.cumsum(bp)  # positives strictly above
    v10_sorted = (neg_below + 0.5 * bn)[block] / n_neg
    v01_sorted = (pos_above + 0.5 * bp)[block] / n_pos
    v10 = np.empty(s.size)
    v01 = np.empty(s.size)
    v10[order] = v10_sorted
    v01[order] = v01_sorted
    return v10[y == 1.0], v01[y == 0.0]


def _placements_untied(y, order, ys):
    """:func:`_placements` when no two scores tie (continuous scores): every block is one
    item, so one cumulative count of positives gives both placements.  The values are
    the same integer counts over the same class sizes, hence bit-identical.
    """
    n = ys.size
    cum_p = np.cumsum(ys)  # positives at or below each sorted position
    n_pos = cum_p[-1]
    n_neg = n - n_pos
    # positive at sorted position i: i + 1 - cum_p[i] negatives below it, none tied;
    # negative: n_pos - cum_p[i] positives above it
    v = np.where(ys == 1.0, (np.arange(1.0, n + 1.0) - cum_p) / n_neg, (n_pos - cum_p) / n_pos)
    v_in = np.empty(n)
    v_in[order] = v
    is_pos = y == 1.0
    return v_in[is_pos], v_in[~is_pos]


def delong_placements(y_true: ArrayLike, y_score: ArrayLike):
    """Structural components V10 (one per positive) and V01 (one per negative).

    ``V10_i`` is the fraction of negatives scored below positive ``i`` (ties 1/2);
    ``V01_j`` the fraction of positives scored above negative ``j``.  Both have
    mean equal to the AUROC.

    Examples
    --------
    >>> v10, v01 = delong_placements([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> v10.tolist(), v01.tolist()
    ([0.5, 1.0], [1.0, 0.5])
    """
    y, s = labels_scores(y_true, y_score)
    _need_both(y)
    return _placements(y, s)


def _need_both(y: NDArray[np.float64], min_each: int = 1) -> tuple[int, int]:
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos < min_each or n_neg < min_each:
        raise MedauditError(
            f"DeLong needs at least {min_each} positive(s) and {min_each} negative(s); got "
            f"{n_pos} positive(s) and {n_neg} negative(s) in y_true."
        )
    return n_pos, n_neg


def _checked_auc(v10: NDArray[np.float64], v01: NDArray[np.float64]) -> float:
    a, b = v10.mean(), v01.mean()
    if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):  # pROC's theta == AUC guard
        raise RuntimeError(f"internal error: DeLong placements disagree ({a!r} vs {b!r}).")
    return float(a)


def _var(x: NDArray[np.float64]) -> float:
    # a class with a single case has no sample variance (R's var() gives NA, and so does
    # pROC's DeLong); nan keeps a test from looking certain when it cannot be assessed
    return float(np.var(x, ddof=1)) if x.size > 1 else math.nan



def delong_variance(y_true: ArrayLike, y_score: ArrayLike) -> float:
    """DeLong variance of one AUROC: ``var(V10)/|P| + var(V01)/|N|`` (sample variances).

    Matches ``var(roc, method = "delong")`` of R's pROC.  With a single positive or
    negative the sample variance is undefined and the result is nan.

    Examples
    --------
    >>> round(delong_variance([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]), 12)
    0.125
    """
    y, s = labels_scores(y_true, y_score)
    n_pos, n_neg = _need_both(y)
    v10, v01 = _placements(y, s)
    _checked_auc(v10, v01)
    return _var(v10) / n_pos + _var(v01) / n_neg


def _z_interval(level: float) -> float:
    return float(special.ndtri(0.5 + level / 2.0))


def _pvalue(z: float, alternative: str) -> float:
    if math.isnan(z):
        return math.nan
    # special.ndtr directly: scipy.stats.norm.sf/cdf compute the same ndtr(-z)/ndtr(z)
    # behind ~50 us of argument handling per call
    if alternative == "greater":
        return float(special.ndtr(-z))
    if alternative == "less":
        return float(special.ndtr(z))
    return float(min(1.0, 2.0 * special.ndtr(-abs(z))))


def delong_ci(y_true: ArrayLike, y_score: ArrayLike, *, confidence_level: float = 0.95) -> AUCInterval:
    """AUROC with its DeLong normal-theory interval ``AUC ± z sqrt(var)``.

    The bounds are not clipped to [0, 1] (pROC clips; clip only for display).

    Examples
    --------
    >>> r = delong_ci([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> r.estimate, round(r.ci_low, 6), round(r.ci_high, 6)
    (0.75, 0.057048, 1.442952)
    """
    level = check_fraction(confidence_level, name="confidence_level")
    y, s = labels_scores(y_true, y_score)
    n_pos, n_neg = _need_both(y)
    v10, v01 = _placements(y, s)
    auc = _checked_auc(v10, v01)
    var = _var(v10) / n_pos + _var(v01) / n_neg
    half = _z_interval(level) * math.sqrt(var)
    return AUCInterval(estimate=auc, variance=var, ci_low=auc - half, ci_high=auc + half,
                       confidence_level=level, n_pos=n_pos, n_neg=n_neg)


def _finish(delta, var, auc_a, auc_b, level, alternative, paired, n_pos, n_neg) -> PairedAUCTest:
    if math.isnan(var):
        warnings.warn("DeLong variance is undefined with a single positive or negative; "
                      "returning nan for z, p and the interval.", UndefinedMetricWarning,
                      stacklevel=3)
        return PairedAUCTest(estimate=delta, statistic=math.nan, pvalue=math.nan,
                             ci_low=math.nan, ci_high=math.nan, confidence_level=level,
                             auc_a=auc_a, auc_b=auc_b, variance=math.nan,
                             alternative=alternative, paired=paired, n_pos=n_pos, n_neg=n_neg)
    if var <= 0.0:
        # identical rankings (or degenerate placements): a model compared with itself
        z = 0.0 if delta == 0.0 else math.copysign(math.inf, delta)
    else:
        z = delta / math.sqrt(var)
    half = _z_interval(level) * math.sqrt(max(var, 0.0))
    p = 1.0 if (var <= 0.0 and delta == 0.0) else _pvalue(z, alternative)
    return PairedAUCTest(estimate=delta, statistic=z, pvalue=p, ci_low=delta - half,
                         ci_high=delta + half, confidence_level=level, auc_a=auc_a, auc_b=auc_b,
                         variance=var, alternative=alternative, paired=paired,
                         n_pos=n_pos, n_neg=n_neg)


def delong_test(
    y_true: ArrayLike,
    y_score_a: ArrayLike,
    y_score_b: ArrayLike,
    *,
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
) -> PairedAUCTest:
    r"""Paired DeLong test of two correlated AUROCs on the same images.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels shared by both score vectors.
    y_score_a, y_score_b : array-like of shape (n_samples,)
        Two score vectors on the same images, in the same order.
    alternative : {"two-sided", "greater", "less"}, default="two-sided"
        ``"greater"`` tests AUROC_a > AUROC_b.
    confidence_level : float, default=0.95
        Level of the normal interval for the difference.

    Returns
    -------
    PairedAUCTest
        ``estimate = auc_a - auc_b``, ``statistic = z``, ``pvalue``, interval and
        ``variance`` of the difference.  A model compared with itself gives
        ``z = 0, p = 1``.

    Notes
    -----
    .. math:: \mathrm{Var}(\hat A - \hat B) = \frac{S^{10}_{aa} + S^{10}_{bb} - 2S^{10}_{ab}}{|P|}
              + \frac{S^{01}_{aa} + S^{01}_{bb} - 2S^{01}_{ab}}{|N|}

    with sample (co)variances of the placements.  Verified against R's pROC
    ``roc.test(method = "delong", paired = TRUE)`` (tests/reference).

    Examples
    --------
    >>> r = delong_test([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], [0.1, 0.4, 0.35, 0.8])
    >>> r.estimate, r.statistic, r.pvalue
    (0.0, 0.0, 1.0)
    """
    alternative = check_option(alternative, ALTERNATIVES, name="alternative")
    level = check_fraction(confidence_level, name="confidence_level")
    y, sa = labels_scores(y_true, y_score_a, score_name="y_score_a")
    sb = as_scores(y_score_b, name="y_score_b")  # the labels are validated once, above
    check_same_length(y_true=y, y_score_b=sb)
    n_pos, n_neg = _need_both(y)
    a10, a01 = _placements(y, sa)
    b10, b01 = _placements(y, sb)
    auc_a, auc_b = _checked_auc(a10, a01), _checked_auc(b10, b01)
    d10, d01 = a10 - b10, a01 - b01
    var = _var(d10) / n_pos + _var(d01) / n_neg
    return _finish(auc_a - auc_b, var, auc_a, auc_b, level, alternative, True, n_pos, n_neg)


def delong_test_unpaired(
    y_true_a: ArrayLike,
    y_score_a: ArrayLike,
    y_true_b: ArrayLike,
    y_score_b: ArrayLike,
    *,
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
) -> PairedAUCTest:
    """DeLong comparison of two AUROCs on independent samples: ``z = ΔA / sqrt(var_a + var_b)``.

    The p-value uses the standard normal.  (R's pROC refers the same statistic
    to a Welch-type t distribution for unpaired curves; its normal p-value is
    what this function reproduces.)

    Examples
    --------
    >>> r = delong_test_unpaired([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8], [0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8])
    >>> r.estimate, r.pvalue
    (0.0, 1.0)
    """
    alternative = check_option(alternative, ALTERNATIVES, name="alternative")
    level = check_fraction(confidence_level, name="confidence_level")
    ya, sa = labels_scores(y_true_a, y_score_a, score_name="y_score_a")
    yb, sb = labels_scores(y_true_b, y_score_b, score_name="y_score_b")
    pa, na = _need_both(ya)
    pb, nb = _need_both(yb)
    a10, a01 = _placements(ya, sa)
    b10, b01 = _placements(yb, sb)
    auc_a, auc_b = _checked_auc(a10, a01), _checked_auc(b10, b01)
    var = _var(a10) / pa + _var(a01) / na + _var(b10) / pb + _var(b01) / nb
    return _finish(auc_a - auc_b, var, auc_a, auc_b, level, alternative, False, pa + pb, na + nb)
