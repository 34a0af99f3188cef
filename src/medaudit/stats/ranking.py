"""Ranking metrics: AUROC with mid-ranks and non-interpolated average precision."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import check_option
from medaudit.exceptions import MedauditError, TiedScoresWarning
from medaudit.stats import _kernels as K
from medaudit.stats._common import labels_scores, unit_scaled, warn, warn_if_one_class, weights
from medaudit.stats._docs import fill_doc

__all__ = ["roc_auc", "average_precision", "AP_TIES", "AP_TIE_TOLERANCE"]

AP_TIES = ("individual", "pooled")


@fill_doc
def roc_auc(y_true: ArrayLike, y_score: ArrayLike, *,
            sample_weight: ArrayLike | None = None) -> float:
    r"""Area under the ROC curve, ties counted one half (mid-ranks).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels, 1 = positive.  Nothing else is accepted.
    y_score : array-like of shape (n_samples,)
        Scores, higher meaning more likely positive.  Never flipped.
    {sample_weight}

    Returns
    -------
    float
        ``P(s_pos > s_neg) + 0.5 P(s_pos = s_neg)``; ``nan`` (with
        :class:`~medaudit.exceptions.UndefinedMetricWarning`) when one class is absent.

    Notes
    -----
    .. math:: \mathrm{AUC} = \frac{R_P - |P|(|P|+1)/2}{|P||N|}

    with :math:`R_P` the sum of mid-ranks of the positives (paper 000, M0.7).
    Computed from one stable sort and cumulative sums over tie blocks, O(n log n).
    Equals :func:`sklearn.metrics.roc_auc_score` and the mean DeLong placement.

    Examples
    --------
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc([0, 1], [0.5, 0.5])
    0.5
    """
    y, s = labels_scores(y_true, y_score)
    w, n_pos, n_neg = weights(sample_weight, y)
    if warn_if_one_class(n_pos, n_neg, "roc_auc"):
        return math.nan
    r = K.rank(y, s)
    # kernels read weights in the sorted order; a power-of-two scale keeps tiny or huge
    # weights from underflowing in the product of class totals (same bits otherwise)
    return float(K.auroc(unit_scaled(w)[r.order], r))


#: |AP(individual ranks) - AP(pooled ties)| above which average_precision warns
AP_TIE_TOLERANCE = 1e-3


@fill_doc
def average_precision(y_true: ArrayLike, y_score: ArrayLike, *, ties: str = "individual",
                      sample_weight: ArrayLike | None = None) -> float:
    r"""Non-interpolated average precision (area under the precision–recall steps).

    With tied scores the default individual-rank AP depends on the row order of the
    input (a constant scorer gets AP = 1.0 on a file that lists its positives first, and
    less than the prevalence when they come last); when ties move it by more than
    :data:`AP_TIE_TOLERANCE` from the tie-pooled value, a
    :class:`~medaudit.exceptions.TiedScoresWarning` says so and carries both values
    (``.individual``, ``.pooled``) for a report to show.

    Parameters
    ----------
    {y_true}
    {y_score}
    ties : {"individual", "pooled"}, default="individual"
        ``"individual"`` (paper 000's convention): tied scores each take their own
        rank, in input order (a stable descending sort).  ``"pooled"``: each set
        of tied scores is one threshold, as in
        :func:`sklearn.metrics.average_precision_score`.
    {sample_weight}
        With ``ties="individual"`` the weights must be integers: copies, which take
        consecutive individual ranks (so there scaling the weights is not neutral);
        ``ties="pooled"`` takes any non-negative weights.

    Returns
    -------
    float
        ``nan`` (with a warning) when there are no positives.

    Notes
    -----
    .. math:: \mathrm{AP} = \frac{1}{|P|}\sum_{k:\,y_{(k)}=1} \frac{TP_k}{k}

    over images sorted by descending score.  On untied data with weights of 0 and 1 both
    conventions agree exactly; a weight ``k > 1`` is ``k`` copies tied with each other, so
    there they differ as on tied scores (``ties="pooled"`` is then scikit-learn's weighted
    AP), with the same warning.  Defined without negatives (it is then 1).

    Examples
    --------
    >>> round(average_precision([1, 0, 1], [0.9, 0.8, 0.7]), 12)  # (1/1 + 2/3) / 2
    0.833333333333
    >>> average_precision([0, 1], [0.5, 0.5]), average_precision([0, 1], [0.5, 0.5], ties="pooled")
    (0.5, 0.5)
    >>> average_precision([1, 0], [0.5, 0.5])
    1.0
    """
    ties = check_option(ties, AP_TIES, name="ties")
    y, s = labels_scores(y_true, y_score)
    w, n_pos, _ = weights(sample_weight, y)
    if ties == "individual" and sample_weight is not None and np.any(w != np.round(w)):
        raise MedauditError("average_precision(ties='individual') needs integer sample_weight "
                            "(a weight k is k copies with individual ranks); use "
                            "ties='pooled' for fractional weights.")
    if n_pos == 0:
        warn_if_one_class(0.0, 1.0, "average_precision")
        return math.nan
    r = K.rank(y, s)
    w = w[r.order]  # kernels read weights in the sorted order
    copies = bool(np.any(w > 1.0))  # an item's copies tie with each other
    pooled = (float(K.average_precision_grouped(w, r))
              if (ties == "pooled" or r.has_ties or copies) else None)
    if ties == "pooled":
        return pooled
    value = float(K.average_precision_stable(w, r))
    if pooled is not None and abs(value - pooled) > AP_TIE_TOLERANCE:
        why = ("tied scores make the individual-rank AP ({v:.4g}) depend on the row order"
               if r.has_ties else "sample_weight above 1 makes copies of an item, tied with "
               "each other, which the individual-rank AP ({v:.4g}) ranks one by one")
        warn(TiedScoresWarning(
            f"average_precision: {why.format(v=value)}; with ties pooled it is {pooled:.4g} "
            "(ties='pooled', scikit-learn's average_precision_score).",
            individual=value, pooled=pooled))
    return value
