"""Operating points and the source-threshold rules of paper 000 (M0.7, M0.8).

The decision rule is always ``predict positive iff s >= threshold``.  Thresholds
range over the observed scores (plus +inf, where Se = 0 and Sp = 1), found
exactly from one sort; no ROC points are dropped (unlike scikit-learn's
``roc_curve(drop_intermediate=True)``, anchors trap T1).  Comparisons such as
``Se >= 0.95`` use a relative guard of 1e-12 so that 570/600 counts as 0.95.
"""

from __future__ import annotations

import math

from numpy.typing import ArrayLike

from medaudit._validation import check_fraction, shown
from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats import _kernels as K
from medaudit.stats._common import labels_scores, unit_scaled, warn, warn_if_one_class, weights
from medaudit.stats._results import OperatingPoint

__all__ = [
    "sensitivity_at_specificity",
    "specificity_at_sensitivity",
    "threshold_for_sensitivity",
    "threshold_for_specificity",
    "operating_point",
]


#: public rule -> (its ranked kernel of :mod:`._kernels`, the name of its target argument)
_RULES = {
    "sensitivity_at_specificity": (K.se_at_sp, "min_specificity"),
    "specificity_at_sensitivity": (K.sp_at_se, "min_sensitivity"),
    "threshold_for_sensitivity": (K.tau_sensitivity, "min_sensitivity"),
    "threshold_for_specificity": (K.tau_specificity, "min_specificity"),
}


def _at(metric: str, y_true: ArrayLike, y_score: ArrayLike, target: float,
        sample_weight: ArrayLike | None = None) -> float:
    """Rule ``metric``'s kernel at the validated ``target`` on the ranked sample, its weights
    in sorted order; nan, with a warning, when a class has no weight.  The four public rules
    differ only in the kernel and the target's name (:data:`_RULES`)."""
    kernel, name = _RULES[metric]
    x = check_fraction(target, name=name, low=0.0, high=1.0, closed="both")
    y, s = labels_scores(y_true, y_score)
    w, n_pos, n_neg = weights(sample_weight, y)
    if warn_if_one_class(n_pos, n_neg, metric):
        return math.nan
    r = K.rank(y, s)
    return float(kernel(unit_scaled(w)[r.order], r, x))  # the same ratios at any weight scale


def sensitivity_at_specificity(
    y_true: ArrayLike, y_score: ArrayLike, *, min_specificity: float = 0.95,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Largest sensitivity over thresholds whose specificity is at least ``min_specificity``.

    Uses the cohort's own ROC curve (a within-cohort operating point, not a
    transported threshold).  ``sample_weight``: as in :func:`operating_point`.

    Only observed thresholds count (paper 000 M0.8; anchors A3): the value is read from
    scikit-learn's ``roc_curve(..., drop_intermediate=False)``.  R's pROC
    (``coords(roc, x, input="specificity")``) interpolates linearly between ROC points and
    can report more; :func:`~medaudit.stats.sensitivity_at_specificities` gives pROC's value.

    Examples
    --------
    >>> sensitivity_at_specificity([0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.7, 0.6, 0.8],
    ...                            min_specificity=0.75)
    1.0
    >>> sensitivity_at_specificity([0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.7, 0.6, 0.8],
    ...                            min_specificity=1.0)
    0.5

    Observed thresholds against pROC's interpolation:

    >>> from medaudit.stats import sensitivity_at_specificities
    >>> y, s = [0, 0, 1, 1], [0.1, 0.5, 0.5, 0.9]
    >>> sensitivity_at_specificity(y, s, min_specificity=0.8)
    0.5
    >>> sensitivity_at_specificities(y, s, [0.8]).round(12).tolist()  # pROC coords: 0.7
    [0.7]
    """
    return _at("sensitivity_at_specificity", y_true, y_score, min_specificity, sample_weight)


def specificity_at_sensitivity(
    y_true: ArrayLike, y_score: ArrayLike, *, min_sensitivity: float = 0.95,
    sample_weight: ArrayLike | None = None,
) -> float:
    """Largest specificity over thresholds whose sensitivity is at least ``min_sensitivity``.

    ``sample_weight``: as in :func:`operating_point`.  Observed thresholds only, as
    :func:`sensitivity_at_specificity` (pROC's ``coords`` interpolates between ROC points).

    Examples
    --------
    >>> specificity_at_sensitivity([0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.7, 0.6, 0.8],
    ...                            min_sensitivity=1.0)
    0.75
    """
    return _at("specificity_at_sensitivity", y_true, y_score, min_sensitivity, sample_weight)


def threshold_for_sensitivity(
    y_true: ArrayLike, y_score: ArrayLike, *, min_sensitivity: float = 0.95
) -> float:
    """Highest observed score ``t`` with ``Se(t) >= min_sensitivity`` (M0.8 primary rule).

    This is the k-th largest positive score with ``k = ceil(min_sensitivity * |P|)``.

    Examples
    --------
    >>> threshold_for_sensitivity([1, 1, 1, 1, 0], [0.9, 0.8, 0.7, 0.2, 0.5],
    ...                           min_sensitivity=0.75)
    0.7
    """
    return _at("threshold_for_sensitivity", y_true, y_score, min_sensitivity)


def threshold_for_specificity(
    y_true: ArrayLike, y_score: ArrayLike, *, min_specificity: float = 0.95
) -> float:
    """Threshold maximising Se subject to ``Sp(t) >= min_specificity`` (M0.8 secondary rule).

    Among observed scores ``t`` with ``Sp(t) = #{N: s < t}/|N| >= min_specificity``
    the one with the largest sensitivity; ties go to the higher specificity, then to
    the highest ``t``.  Returns ``inf`` when no observed score is feasible.

    Examples
    --------
    >>> threshold_for_specificity([0, 0, 0, 0, 1, 1], [0.1, 0.2, 0.3, 0.7, 0.6, 0.8],
    ...                           min_specificity=0.75)
    0.6
    >>> threshold_for_specificity([0, 1], [0.9, 0.1], min_specificity=0.95)
    inf
    """
    return _at("threshold_for_specificity", y_true, y_score, min_specificity)


def operating_point(y_true: ArrayLike, y_score: ArrayLike, *, threshold: float,
                    sample_weight: ArrayLike | None = None) -> OperatingPoint:
    """Sensitivity and specificity at ``threshold`` with the rule ``s >= threshold``.

    ``threshold`` may be ``inf`` (nothing predicted positive: Se = 0, Sp = 1) or ``-inf``
    (everything predicted positive: Se = 1, Sp = 0).  A class that is absent gives
    ``nan`` for its rate.  ``sample_weight`` (non-negative, scikit-learn's semantics: an
    integer weight is that many copies of the row, 0 removes it) weights the rates and
    ``n_pos``/``n_neg`` become the weighted class masses.

    Examples
    --------
    >>> op = operating_point([0, 0, 1, 1], [0.2, 0.5, 0.5, 0.9], threshold=0.5)
    >>> op.sensitivity, op.specificity
    (1.0, 0.5)
    >>> op = operating_point([0, 0, 1, 1], [0.2, 0.5, 0.5, 0.9], threshold=float("-inf"))
    >>> op.sensitivity, op.specificity
    (1.0, 0.0)
    """
    try:
        tau = float(threshold)
    except (TypeError, ValueError):
        raise MedauditError(f"threshold must be a number or +/-inf; got {shown(threshold)}.") from None
    if math.isnan(tau):
        raise MedauditError(f"threshold must be a number or +/-inf; got {shown(threshold)}.")
    y, s = labels_scores(y_true, y_score)
    w, n_pos, n_neg = weights(sample_weight, y)
    # a class without weight leaves its rate undefined (nan): say so, as threshold_metrics does
    for rate, cls, mass in (("sensitivity", "positive", n_pos), ("specificity", "negative", n_neg)):
        if not mass > 0:
            warn(f"operating_point: {rate} is undefined (no {cls} weight in the sample); it is "
                 "nan.", UndefinedMetricWarning)
    r = K.rank(y, s)
    se, sp = K.rates_at(w[r.order], r, tau)
    return OperatingPoint(threshold=tau, sensitivity=float(se), specificity=float(sp),
                          n_pos=n_pos, n_neg=n_neg)
