"""Soft AUROC and soft AP for probabilistic labels (paper 001, M1.2 and M1.3).

A soft label ``p_i`` in [0, 1] is the probability that item ``i`` is positive.
Both metrics cost one sort plus O(n) and reduce exactly to the ordinary metrics
when every ``p_i`` is 0 or 1.

Defaults reproduce paper 001's Table 4.  Its s-AUROC values are those of the strict
(self-pair-excluding) form, and its s-AP values lie 0.004-0.020 above Definition 2.2
as written; they are reproduced by the form in which an item's own label counts as
known at its own rank (``variant="known_self"``).  The written definitions stay
selectable by name (``variant="inclusive"`` and ``variant="as_written"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import check_option
from medaudit.exceptions import UndefinedMetricWarning
from medaudit.stats import _kernels as K
from medaudit.stats._common import soft_scores, warn

__all__ = ["soft_roc_auc", "soft_average_precision", "soft_metric_options", "soft_ceiling",
           "SOFT_AUROC_VARIANTS", "SOFT_AP_VARIANTS", "SOFT_TIES", "SOFT_DEFAULTS"]

SOFT_AUROC_VARIANTS = ("strict", "inclusive", "trapezoid")
SOFT_AP_VARIANTS = ("known_self", "as_written")
SOFT_TIES = ("stable", "grouped")
#: metric -> (default variant, default ties): the forms that reproduce paper 001's Table 4
SOFT_DEFAULTS = {"soft_roc_auc": ("strict", "stable"),
                 "soft_average_precision": ("known_self", "stable")}


def soft_metric_options(metric: str, *, variant: str | None = None, ties: str | None = None
                        ) -> tuple[str, str]:
    """Validate and resolve the options of a soft metric: the one rule for every caller.

    The variant says how an item's pairing with itself enters; ``ties`` says how distinct
    items with tied scores pair (``"stable"``: in input order; ``"grouped"``: pooled, each
    tied pair counting one half).  The two are independent, so every combination is
    valid and each variant applies under both tie rules.  ``None`` takes the default of
    :data:`SOFT_DEFAULTS`.  The spec validator and the resampling engine call this too.

    Parameters
    ----------
    metric : {"soft_roc_auc", "soft_average_precision"}
    variant : str, optional
        ``soft_roc_auc``: one of :data:`SOFT_AUROC_VARIANTS`; ``soft_average_precision``:
        one of :data:`SOFT_AP_VARIANTS`.
    ties : {"stable", "grouped"}, optional

    Returns
    -------
    (variant, ties)

    Examples
    --------
    >>> soft_metric_options("soft_roc_auc")
    ('strict', 'stable')
    >>> soft_metric_options("soft_average_precision", ties="grouped")
    ('known_self', 'grouped')
    """
    metric = check_option(metric, tuple(SOFT_DEFAULTS), name="soft metric")
    d_variant, d_ties = SOFT_DEFAULTS[metric]
    allowed = SOFT_AUROC_VARIANTS if metric == "soft_roc_auc" else SOFT_AP_VARIANTS
    v = d_variant if variant is None else check_option(variant, allowed, name="variant")
    t = d_ties if ties is None else check_option(ties, SOFT_TIES, name="ties")
    return v, t


def _undefined(n_pos: float, n_neg: float, name: str, need_neg: bool = True) -> bool:
    if n_pos > 0 and (n_neg > 0 or not need_neg):
        return False
    warn(f"{name} is undefined: total positive or negative label mass is zero; "
         "returning nan.", UndefinedMetricWarning)
    return True


_SELF = {"inclusive": 1.0, "strict": 0.0, "trapezoid": 0.5}  # weight of the self pair


def soft_roc_auc(
    p_true: ArrayLike, y_score: ArrayLike, *, variant: str | None = None, ties: str | None = None
) -> float:
    r"""Soft AUROC against probabilistic labels (paper 001, Definition 2.1); by default
    the strict form, which reproduces paper 001's Table 4.

    Parameters
    ----------
    p_true : array-like of shape (n_samples,)
        Soft labels in [0, 1].
    y_score : array-like of shape (n_samples,)
        Scores, higher meaning more likely positive.  Never flipped.
    variant : {"strict", "inclusive", "trapezoid"}, default="strict"
        With items sorted by descending score, :math:`n^+_i = \sum_{j\le i} p_j`:

        * ``"strict"`` :math:`\sum_i (1-p_i) \sum_{j<i} p_j / (n^+ n^-)` excludes the self
          pair (the paper's second line; our anchor survey, trap T9, reads eq. 4 this way).
          It is the default because it reproduces the s-AUROC values of Table 4.
        * ``"inclusive"`` :math:`\sum_i (1-p_i)\, n^+_i / (n^+ n^-)`, the paper's first
          line and the form its linear-time implementation computes; it exceeds the
          strict form by :math:`\sum_i p_i(1-p_i)/(n^+n^-)`.
        * ``"trapezoid"`` is their mean, and equals
          :func:`sklearn.metrics.roc_auc_score` on the data duplicated as a positive
          copy of weight :math:`p_i` and a negative copy of weight :math:`1-p_i`.
    ties : {"stable", "grouped"}, default="stable"
        How distinct items with tied scores pair.  ``"stable"`` keeps input order within
        tied scores (the paper's formula); ``"grouped"`` counts each tied pair one half,
        so that binary labels with ties give the ordinary mid-rank AUROC.  The variant
        applies under both (see :func:`soft_metric_options`).

    Returns
    -------
    float
        ``nan`` with a warning when :math:`n^+` or :math:`n^-` is 0.

    Examples
    --------
    Paper 001's worked example (M1.2):

    >>> s, p = [0.9, 0.8, 0.7, 0.6], [1, 0.5, 0, 0.5]
    >>> [soft_roc_auc(p, s, variant=v) for v in ("strict", "inclusive", "trapezoid")]
    [0.6875, 0.8125, 0.75]
    >>> s = [0.9, 0.7, 0.7, 0.6]
    >>> [soft_roc_auc(p, s, variant=v, ties="grouped") for v in ("strict", "trapezoid")]
    [0.625, 0.6875]
    """
    variant, ties = soft_metric_options("soft_roc_auc", variant=variant, ties=ties)
    p, s = soft_scores(p_true, y_score)
    if ties == "grouped":
        n_pos = float(p.sum())
        if _undefined(n_pos, p.size - n_pos, "soft_roc_auc"):
            return math.nan
        return _grouped(K.soft_auroc_grouped, p, s, variant)
    # point estimate without weights: one sort, one gather, one cumulative sum
    ps, cum, tmp = _labels_by_score(p, s)
    n_pos = cum[-1]
    if _undefined(n_pos, p.size - n_pos, "soft_roc_auc"):
        return math.nan
    self_term = _SELF[variant]
    # sum_i (1 - p_i) * (C_before_i + self_term * p_i), C_before_i = cum_i - p_i, formed
    # in the scratch arrays: at n = 10^7 every fresh temporary costs a pass plus its page
    # faults
    if self_term == 0.0:
        cum -= ps
    elif self_term != 1.0:  # inclusive: cum - 0 * ps is cum itself
        cum -= np.multiply(ps, 1.0 - self_term, out=tmp)
    num = np.dot(np.subtract(1.0, ps, out=tmp), cum)
    return float(num / (n_pos * (p.size - n_pos)))


def _grouped(kernel: Callable[..., np.ndarray], p: np.ndarray, s: np.ndarray, variant: str) -> float:
    """A grouped-ties soft metric from its weighted kernel, with every weight 1."""
    return float(kernel(np.ones((1, p.size)), K.rank(p, s), variant)[0])


def _labels_by_score(p: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Soft labels in descending score order, ties in input order (as ``K.order_desc``),
    their cumulative sum, and a free scratch array of the same size.

    One exact stable sort (:func:`~medaudit.stats._kernels.argsort_stable`, which sorts
    packed integer keys with numpy's vectorised sort: about a third of one
    ``np.argsort`` of the scores at n = 10^7) and one gather of the labels.  It replaced
    sorting score and label packed into one complex number, which needed a second,
    stable sort whenever scores tied.
    """
    order = K.argsort_stable(s, descending=True)
    labels = p[order]
    # the order is spent once gathered: its buffer holds the cumulative sum (a fresh
    # n-sized array costs its page faults, ~25 ms at n = 10^7)
    cum = np.cumsum(labels, out=order.view(np.float64) if order.itemsize == 8 else None)
    return labels, cum, np.empty_like(labels)


def soft_average_precision(
    p_true: ArrayLike, y_score: ArrayLike, *, variant: str | None = None, ties: str | None = None
) -> float:
    r"""Soft average precision against probabilistic labels (paper 001, M1.3); by default
    the form that reproduces paper 001's Table 4, in which an item's own label counts as
    known at its own rank.

    With items sorted by descending score (rank :math:`i = 1..n`) and
    :math:`n^+ = \sum_i p_i`:

    * ``variant="known_self"`` (default), the AP counterpart of the strict s-AUROC:

      .. math:: \text{s-AP} = \frac{1}{n^+}\sum_i p_i\,\frac{1 + \sum_{j<i} p_j}{i}

      Table 4's s-AP values lie 0.004-0.020 above Definition 2.2 and are reproduced
      by this form.
    * ``variant="as_written"``, Definition 2.2 as the paper writes it, whose precision
      at an item's own rank includes its own soft label (a :math:`p_i^2` self-term):

      .. math:: \text{s-AP} = \frac{1}{n^+}\sum_i p_i\,\frac{\sum_{j\le i} p_j}{i}

    Both reduce to the ordinary AP on binary labels.

    Parameters
    ----------
    p_true : array-like of shape (n_samples,)
        Soft labels in [0, 1].
    y_score : array-like of shape (n_samples,)
        Scores.  Never flipped.
    variant : {"known_self", "as_written"}, default="known_self"
    ties : {"stable", "grouped"}, default="stable"
        ``"stable"``: individual ranks in input order (binary labels give AP with
        ``ties="individual"``); ``"grouped"``: tied scores pooled into one threshold
        whose precision is that of the whole tied block (binary labels give
        scikit-learn's AP); under ``known_self`` the item's own label again counts as 1
        in its block's positive mass: :math:`p_i (1 + C_b - p_i) / K_b` with
        :math:`C_b, K_b` the positive mass and count through its block.

    Examples
    --------
    >>> p, s = [1, 0.5, 0, 0.5], [0.9, 0.8, 0.7, 0.6]
    >>> soft_average_precision(p, s), soft_average_precision(p, s, variant="as_written")
    (0.90625, 0.8125)
    """
    variant, ties = soft_metric_options("soft_average_precision", variant=variant, ties=ties)
    p, s = soft_scores(p_true, y_score)
    if ties == "grouped":
        if _undefined(float(p.sum()), 1.0, "soft_average_precision", need_neg=False):
            return math.nan
        return _grouped(K.soft_ap_grouped, p, s, variant)
    # point estimate without weights: the precision at rank i is (self + C_before_i) / i
    ps, cum, prec = _labels_by_score(p, s)
    n_pos = cum[-1]
    if _undefined(n_pos, 1.0, "soft_average_precision", need_neg=False):
        return math.nan
    if variant == "known_self":  # 1 + C_i - p_i: the own label counts as 1
        cum -= ps
        cum += 1.0
    prec[:] = np.arange(1.0, p.size + 1.0)
    np.divide(cum, prec, out=prec)
    return float(np.dot(ps, prec) / n_pos)


def soft_ceiling(p_true: ArrayLike, *, metric: str = "soft_roc_auc", variant: str | None = None,
                 ties: str | None = None) -> float:
    r"""The achievable ceiling of a soft metric: its value for a scorer equal to the soft label.

    Where annotators disagree, soft AUROC and soft AP stay below 1 for every scorer: an
    item with :math:`0 < p_i < 1` is partly a positive and partly a negative, and no
    ordering ranks it above itself.  Sorting the items by their own soft label is the
    best any scorer can do: exchanging two adjacent items :math:`a` before :math:`b`
    changes s-AUROC by a multiple of :math:`p_a - p_b` and s-AP by
    :math:`(p_a - p_b)\,c\,(1/i - 1/(i+1))` with :math:`c > 0`, so the descending order of
    :math:`p` is optimal, for every variant; items with equal :math:`p` are exchangeable, so
    the tie rule does not change the value.  A level claim judged against these labels
    cannot hold above this ceiling whatever the model.

    Parameters
    ----------
    p_true : array-like of shape (n_samples,)
        Soft labels in [0, 1].
    metric : {"soft_roc_auc", "soft_average_precision"}, default="soft_roc_auc"
    variant, ties : str, optional
        As in :func:`soft_roc_auc` / :func:`soft_average_precision` (defaults:
        :data:`SOFT_DEFAULTS`).

    Returns
    -------
    float
        1.0 when every label is 0 or 1 (both classes present); ``nan`` with a warning when
        the metric is undefined.

    Examples
    --------
    >>> soft_ceiling([1, 0, 1, 0])
    1.0
    >>> soft_ceiling([1, 0.5, 0, 0.5])  # two half-positive items cannot outrank each other
    0.8125
    """
    metric = check_option(metric, tuple(SOFT_DEFAULTS), name="soft metric")
    p = np.asarray(p_true, dtype=np.float64)
    fn = soft_roc_auc if metric == "soft_roc_auc" else soft_average_precision
    return fn(p, p, variant=variant, ties=ties)
