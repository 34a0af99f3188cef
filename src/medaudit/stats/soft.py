"""Soft AUROC and soft AP for probabilistic labels (paper 001, M1.2 and M1.3).

A soft label ``p_i`` in [0, 1] is the probability that item ``i`` is positive.
Both metrics cost one sort plus O(n) and reduce exactly to the ordinary metrics
when every ``p_i`` is 0 or 1.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import check_option
from medaudit.exceptions import UndefinedMetricWarning
from medaudit.stats import _kernels as K
from medaudit.stats._common import soft_scores

__all__ = ["soft_roc_auc", "soft_average_precision", "SOFT_AUROC_VARIANTS", "SOFT_TIES"]

SOFT_AUROC_VARIANTS = ("inclusive", "strict", "trapezoid")
SOFT_TIES = ("stable", "grouped")


def _undefined(p, name, need_neg=True) -> bool:
    n_pos = float(p.sum())
    n_neg = float(p.size - n_pos)
    if n_pos > 0 and (n_neg > 0 or not need_neg):
        return False
    warnings.warn(f"{name} is undefined: total positive or negative label mass is zero; "
                  "returning nan.", UndefinedMetricWarning, stacklevel=3)
    return True


def soft_roc_auc(
    p_true: ArrayLike, y_score: ArrayLike, *, variant: str = "inclusive", ties: str = "stable"
) -> float:
    r"""Soft AUROC against probabilistic labels (paper 001, Definition 2.1).

    Parameters
    ----------
    p_true : array-like of shape (n_samples,)
        Soft labels in [0, 1].
    y_score : array-like of shape (n_samples,)
        Scores, higher meaning more likely positive.
    variant : {"inclusive", "strict", "trapezoid"}, default="inclusive"
        With items sorted by descending score, :math:`n^+_i = \sum_{j\le i} p_j`:

        * ``"inclusive"`` :math:`\sum_i (1-p_i)\, n^+_i / (n^+ n^-)` — the paper's
          first line, the form its linear-time implementation computes.  It is the
          default because it is the published definition users will compare with.
        * ``"strict"`` excludes the self pair (:math:`j < i`), the paper's second
          line; it differs by :math:`\sum_i p_i(1-p_i)/(n^+n^-)`.  (Our anchor survey,
          trap T9, reads the paper's eq. 4 as this self-pair-excluding form; the method
          inventory reads the first line as canonical.  Both are offered by name so a
          user can match either reading.)
        * ``"trapezoid"`` is their mean, and equals
          :func:`sklearn.metrics.roc_auc_score` on the data duplicated as a positive
          copy of weight :math:`p_i` and a negative copy of weight :math:`1-p_i`.
    ties : {"stable", "grouped"}, default="stable"
        ``"stable"`` keeps input order within tied scores (the paper's formula);
        ``"grouped"`` pools each tied block and uses the trapezoid inside it, so
        that binary labels with ties give the ordinary mid-rank AUROC.  With
        ``"grouped"`` the variant does not apply (the block trapezoid is used).

    Returns
    -------
    float
        ``nan`` with a warning when :math:`n^+` or :math:`n^-` is 0.

    Examples
    --------
    Paper 001's worked example (M1.2):

    >>> s, p = [0.9, 0.8, 0.7, 0.6], [1, 0.5, 0, 0.5]
    >>> [soft_roc_auc(p, s, variant=v) for v in ("inclusive", "strict", "trapezoid")]
    [0.8125, 0.6875, 0.75]
    """
    variant = check_option(variant, SOFT_AUROC_VARIANTS, name="variant")
    ties = check_option(ties, SOFT_TIES, name="ties")
    p, s = soft_scores(p_true, y_score)
    if _undefined(p, "soft_roc_auc"):
        return math.nan
    if ties == "grouped":
        return float(K.auroc(np.ones(p.size), K.rank(p, s)))
    # point estimate without weights: one sort, one gather, one cumulative sum
    ps, cum = _labels_by_score(p, s)
    np.cumsum(ps, out=cum)
    n_pos = cum[-1]
    self_term = {"inclusive": 1.0, "strict": 0.0, "trapezoid": 0.5}[variant]
    # sum_i (1 - p_i) * (C_before_i + self_term * p_i), C_before_i = cum_i - p_i, formed
    # in place (the same floating-point operations, so the same value): at n = 10^7
    # every fresh temporary costs a pass plus its page faults
    if self_term != 1.0:  # inclusive: cum - 0 * ps is cum itself
        cum -= (1.0 - self_term) * ps
    num = np.dot(np.subtract(1.0, ps, out=ps), cum)
    return float(num / (n_pos * (p.size - n_pos)))


def _labels_by_score(p: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Soft labels in descending score order, ties in input order (as ``K.order_desc``),
    and a free scratch array of the same size.

    Untied data takes numpy's fastest sort, read backwards; only with ties is the
    order redone with a stable sort.  The sorted scores are needed only to look for
    ties, so they go to the scratch array the caller reuses, and the reversed order
    is read through a view rather than copied.
    """
    order = np.argsort(s)
    scratch = np.empty(s.size)
    # every index is valid: mode="clip" skips the bounds check and the copy of `out`
    # that numpy's default mode makes
    ss = np.take(s, order, out=scratch, mode="clip")
    if ss.size > 1 and np.any(ss[1:] == ss[:-1]):
        return p[np.argsort(-s, kind="stable")], scratch
    return p[order[::-1]], scratch


def soft_average_precision(p_true: ArrayLike, y_score: ArrayLike, *, ties: str = "stable") -> float:
    r"""Soft average precision against probabilistic labels (paper 001, Definition 2.2).

    .. math:: \text{s-AP} = \sum_i \frac{n^+_i}{i}\cdot\frac{p_i}{n^+}

    Parameters
    ----------
    p_true : array-like of shape (n_samples,)
        Soft labels in [0, 1].
    y_score : array-like of shape (n_samples,)
        Scores.
    ties : {"stable", "grouped"}, default="stable"
        ``"stable"``: individual ranks in input order (binary labels give AP with
        ``ties="individual"``); ``"grouped"``: tied scores pooled into one
        threshold (binary labels give scikit-learn's AP).

    Examples
    --------
    >>> soft_average_precision([1, 0.5, 0, 0.5], [0.9, 0.8, 0.7, 0.6])
    0.8125
    """
    ties = check_option(ties, SOFT_TIES, name="ties")
    p, s = soft_scores(p_true, y_score)
    if _undefined(p, "soft_average_precision", need_neg=False):
        return math.nan
    if ties == "grouped":
        return float(K.average_precision_grouped(np.ones(p.size), K.rank(p, s)))
    # point estimate without weights: precision at rank i is cum_i / i
    ps, cum = _labels_by_score(p, s)
    np.cumsum(ps, out=cum)
    prec = np.arange(1.0, p.size + 1.0)
    np.divide(cum, prec, out=prec)
    return float(np.dot(ps, prec) / cum[-1])
