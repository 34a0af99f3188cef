"""DeLong placements, variance, intervals and tests for AUROCs (DeLong et al. 1988).

Placements come from one stable sort per score vector and cumulative class counts
over tie blocks (O(n log n)); no pairwise comparison is ever formed.  At run time
the mean placement is checked against the AUROC (pROC's theta == AUC guard).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from medaudit._validation import as_scores, check_fraction, check_option, check_same_length
from medaudit.exceptions import DegenerateDataWarning, MedauditError, UndefinedMetricWarning
from medaudit.stats import _kernels as K
from medaudit.stats._common import labels_scores, warn
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
#: untied counts are held in int32 below this many items: a count is at most n, and twice
#: it (rescaled to another curve's tie scale) must still fit
_INT32_BELOW = 2**30
#: the variance of the placement differences is summed in int64 while the sum of squares
#: is sure to fit (m scale^2 below this)
_INT64_SUMS_BELOW = 2**63


def _counts(is_pos: NDArray[np.bool_], s: NDArray[np.float64], n_pos: int
            ) -> tuple[NDArray[np.signedinteger], int]:
    """Per item (input order) the DeLong count in integers, and its scale (1 or 2).

    A positive's count is the number of negatives scored below it, a negative's the
    number of positives scored above it; a tie counts one half, so with ties the counts
    are doubled (scale 2) to stay integers.  Placements are ``count / (scale * n_other)``.

    One sort (:func:`~medaudit.stats._kernels.argsort_stable`, faster than numpy's
    unstable argsort; tied scores form one block, so the order within ties does not
    matter here; it says whether any scores tie), and cumulative class counts; no
    pairwise comparison is formed.
    """
    order, tied = K.argsort_stable(s, return_ties=True)
    ys = is_pos[order]
    n = s.size
    if not tied:
        # untied: a positive at sorted position i has i + 1 - cum_p[i] negatives below,
        # a negative n_pos - cum_p[i] positives above: v = n_pos - cum + ys (i + 1 - n_pos).
        # Every count is at most n, and twice it (a rescale to another curve's ties) must fit:
        # int32 below 2**30 halves the memory traffic of these passes and of the scatter
        dt = np.int32 if n < _INT32_BELOW else np.int64
        cum = K.cumsum_counts(ys, out=np.empty(n, dtype=dt))
        v = np.arange(1 - n_pos, n + 1 - n_pos, dtype=dt)
        v *= ys
        v -= cum
        v += n_pos
        out = np.empty(n, dtype=dt)
        out[order] = v
        return out, 1
    ss = s[order]
    out = np.empty(n, dtype=np.int64)
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(ss[1:], ss[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    block = np.cumsum(new) - 1
    bp = np.add.reduceat(ys.astype(np.int64), starts)
    bn = np.diff(np.r_[starts, n]) - bp
    neg_below2 = 2 * (np.cumsum(bn) - bn) + bn  # twice the negatives below, ties one half
    pos_above2 = 2 * (n_pos - np.cumsum(bp)) + bp
    out[order] = np.where(ys, neg_below2[block], pos_above2[block])
    return out, 2


def _split(y: NDArray[np.float64]):
    is_pos = y == 1.0
    return is_pos, np.flatnonzero(is_pos), np.flatnonzero(~is_pos)


def _placements(y: NDArray[np.float64], s: NDArray[np.float64]):
    """Return (V10 over positives, V01 over negatives), each in input order."""
    is_pos, pos_idx, neg_idx = _split(y)
    cnt, scale = _counts(is_pos, s, pos_idx.size)
    return (np.take(cnt, pos_idx) / (scale * neg_idx.size),
            np.take(cnt, neg_idx) / (scale * pos_idx.size))


def _var_counts(d: NDArray[np.signedinteger], scale: int) -> float:
    """Sample variance of ``d / scale`` for integer ``d`` with ``|d| <= scale``.

    From the exact integer sums ``S1 = sum d`` and ``S2 = sum d^2``:
    ``(m S2 - S1^2) / (m (m - 1) scale^2)`` in Python integers, so the one rounding is
    the final division (correctly rounded), where the float two-pass form rounds at
    every item; and two integer passes cost about half as much as the float ones.
    Where ``S2`` could pass 2^63 (``m scale^2``, from about 10^6 items up) the two
    float passes are used.
    """
    m = d.size
    if m < 2:
        return math.nan
    if m * scale * scale >= _INT64_SUMS_BELOW:
        x = d / scale
        x -= x.mean()
        return float(np.dot(x, x) / (m - 1))
    d64 = d.astype(np.int64, copy=False)
    s1, s2 = int(d64.sum()), int(np.dot(d64, d64))
    return (m * s2 - s1 * s1) / (m * (m - 1) * scale * scale)


def delong_placements(y_true: ArrayLike, y_score: ArrayLike):
    """Structural components V10 (one per positive) and V01 (one per negative).

    Scores are never flipped: a higher score always means more likely positive, so an
    AUROC below 0.5 stays below 0.5 (pROC's ``direction="auto"`` would flip it).

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


def _need_both(y: NDArray[np.float64], min_each: int = 1, *, name: str = "y_true"
               ) -> tuple[int, int]:
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos < min_each or n_neg < min_each:
        raise MedauditError(
            f"DeLong needs at least {min_each} positive(s) and {min_each} negative(s); got "
            f"{n_pos} positive(s) and {n_neg} negative(s) in {name}."
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

    Scores are never flipped: a higher score always means more likely positive, so an
    AUROC below 0.5 stays below 0.5 (pROC's ``direction="auto"`` would flip it).

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
    return _single_case_nan(_var(v10) / n_pos + _var(v01) / n_neg)


def _single_case_nan(var: float) -> float:
    if math.isnan(var):
        warn("DeLong variance is undefined with a single positive or negative; returning nan.",
             UndefinedMetricWarning)
    return var


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

    Scores are never flipped: a higher score always means more likely positive, so an
    AUROC below 0.5 stays below 0.5 (pROC's ``direction="auto"`` would flip it).

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
    var = _single_case_nan(_var(v10) / n_pos + _var(v01) / n_neg)
    half = _z_interval(level) * math.sqrt(var)
    return AUCInterval(estimate=auc, variance=var, ci_low=auc - half, ci_high=auc + half,
                       confidence_level=level, n_pos=n_pos, n_neg=n_neg)


def _finish(delta, var, auc_a, auc_b, level, alternative, paired, n_pos, n_neg) -> PairedAUCTest:
    if math.isnan(var):
        warn("DeLong variance is undefined with a single positive or negative; "
             "returning nan for z, p and the interval.", UndefinedMetricWarning)
        return PairedAUCTest(estimate=delta, statistic=math.nan, pvalue=math.nan,
                             ci_low=math.nan, ci_high=math.nan, confidence_level=level,
                             auc_a=auc_a, auc_b=auc_b, variance=math.nan,
                             alternative=alternative, paired=paired, n_pos=n_pos, n_neg=n_neg)
    if var <= 0.0:
        # identical rankings (or degenerate placements): a model compared with itself
        z = 0.0 if delta == 0.0 else math.copysign(math.inf, delta)
        if delta != 0.0:
            # pROC gives the same infinite z; said aloud, since p = 0 from a handful of
            # cases (a perfect model against an all-tied one) is no evidence of certainty
            warn("DeLong variance of the AUROC difference is 0 while the difference is not "
                 "(each model's placements are constant within each class, as for a perfect "
                 "or an all-tied model): z is infinite and p = 0 by the formula, which "
                 "overstates the certainty; use a bootstrap or permutation test instead.",
                 DegenerateDataWarning)
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

    Scores are never flipped: a higher score always means more likely positive, so an
    AUROC below 0.5 stays below 0.5 (pROC's ``direction="auto"`` would flip it).

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
        ``z = 0, p = 1``; a zero variance with a nonzero difference gives
        ``z = ±inf, p = 0`` as pROC does, with a :class:`DegenerateDataWarning`.

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
    is_pos, pos_idx, neg_idx = _split(y)
    (ca, fa), (cb, fb) = _counts(is_pos, sa, n_pos), _counts(is_pos, sb, n_pos)
    auc_a, auc_b = _auc_of_counts(ca, fa, pos_idx, n_pos, n_neg), _auc_of_counts(cb, fb, pos_idx,
                                                                                  n_pos, n_neg)
    scale = max(fa, fb)
    # the placement differences in integers (one subtraction over all items, then split by
    # class), so only the variance itself rounds
    d = (ca if fa == scale else ca * 2) - (cb if fb == scale else cb * 2)
    var = (_var_counts(np.take(d, pos_idx), scale * n_neg) / n_pos
           + _var_counts(np.take(d, neg_idx), scale * n_pos) / n_neg)
    return _finish(auc_a - auc_b, var, auc_a, auc_b, level, alternative, True, n_pos, n_neg)


def _auc_of_counts(cnt, scale: int, pos_idx, n_pos: int, n_neg: int) -> float:
    """The mean placement from one curve's counts in input order.  The positives' sum and
    the negatives' (the rest of the total) count every pair once, so they agree exactly
    in these integers (pROC's theta == AUC guard), checked."""
    total = int(cnt.sum())
    num_p = int(np.take(cnt, pos_idx).sum())
    if total != 2 * num_p:
        raise RuntimeError(f"internal error: DeLong placements disagree ({num_p} vs "
                           f"{total - num_p}).")
    return num_p / (scale * n_pos * n_neg)


def delong_test_unpaired(
    y_true_a: ArrayLike,
    y_score_a: ArrayLike,
    y_true_b: ArrayLike,
    y_score_b: ArrayLike,
    *,
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    distribution: str = "normal",
) -> PairedAUCTest:
    r"""DeLong comparison of two AUROCs on independent samples: ``D = ΔA / sqrt(var_a + var_b)``.

    Scores are never flipped: a higher score always means more likely positive, so an
    AUROC below 0.5 stays below 0.5 (pROC's ``direction="auto"`` would flip it).

    Parameters
    ----------
    y_true_a, y_score_a, y_true_b, y_score_b : array-like
        Labels and scores of the two independent samples.
    alternative : {"two-sided", "greater", "less"}, default="two-sided"
        ``"greater"`` tests AUROC_a > AUROC_b.
    confidence_level : float, default=0.95
        Level of the normal interval for the difference.
    distribution : {"normal", "t"}, default="normal"
        Reference distribution of ``D`` for the p-value.  ``"normal"``: the standard normal
        (a z test).  ``"t"``: Student's t with the Welch-Satterthwaite-type degrees of
        freedom R's pROC uses for unpaired ``roc.test``,
        :math:`\nu = (V_a + V_b)^2 / (V_a^2/(n_a - 1) + V_b^2/(n_b - 1))` with
        :math:`V` the DeLong variances and :math:`n` the sample sizes (recorded as
        ``df``), so pROC's p-values are reproduced.  The statistic, variance and interval
        are the same under both.

    Examples
    --------
    >>> r = delong_test_unpaired([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8], [0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8])
    >>> r.estimate, r.pvalue
    (0.0, 1.0)
    >>> r = delong_test_unpaired([0, 1, 0, 1, 1], [0.1, 0.9, 0.7, 0.8, 0.3],
    ...                          [0, 1, 0, 0, 1, 0], [0.2, 0.6, 0.1, 0.4, 0.5, 0.3],
    ...                          distribution="t")
    >>> round(r.statistic, 6), r.df, round(r.pvalue, 6)  # pROC: D = -0.707107, df = 4, p = 0.518519
    (-0.707107, 4.0, 0.518519)
    """
    alternative = check_option(alternative, ALTERNATIVES, name="alternative")
    level = check_fraction(confidence_level, name="confidence_level")
    distribution = check_option(distribution, ("normal", "t"), name="distribution")
    ya, sa = labels_scores(y_true_a, y_score_a, score_name="y_score_a", label_name="y_true_a")
    yb, sb = labels_scores(y_true_b, y_score_b, score_name="y_score_b", label_name="y_true_b")
    pa, na = _need_both(ya, name="y_true_a")
    pb, nb = _need_both(yb, name="y_true_b")
    a10, a01 = _placements(ya, sa)
    b10, b01 = _placements(yb, sb)
    auc_a, auc_b = _checked_auc(a10, a01), _checked_auc(b10, b01)
    var_a = _var(a10) / pa + _var(a01) / na
    var_b = _var(b10) / pb + _var(b01) / nb
    res = _finish(auc_a - auc_b, var_a + var_b, auc_a, auc_b, level, alternative, False,
                  pa + pb, na + nb)
    if distribution == "normal":
        return res
    # pROC's delong.unpaired.test: t with Welch-type df over the two samples' sizes
    den = var_a**2 / (ya.size - 1) + var_b**2 / (yb.size - 1)
    df = (var_a + var_b) ** 2 / den if den > 0 else math.nan
    p = res.pvalue
    if math.isfinite(res.statistic) and not math.isnan(df):
        t = res.statistic
        p = {"greater": special.stdtr(df, -t), "less": special.stdtr(df, t),
             "two-sided": min(1.0, 2.0 * special.stdtr(df, -abs(t)))}[alternative]
    return dataclasses.replace(res, pvalue=float(p), df=float(df), distribution="t")
