"""Selective prediction: risk at a coverage and the area under the risk–coverage curve.

Confidence is ``max(s, 1 - s)``, the decision stays ``1{s >= 0.5}`` and the error
is ``1{decision != y}`` (paper 000 M0.7).  Items are ordered by confidence,
descending, with a stable sort (ties keep input order; the paper leaves this
open).  This is not the accuracy-rejection or argmax convention of some
libraries, and AURC is not rescaled by 1/(1 - 1/n) (anchors trap T5).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import check_fraction
from medaudit.stats import _kernels as K
from medaudit.stats._common import labels_scores
from medaudit.stats._docs import fill_doc
from medaudit.stats._results import RiskCoverageCurve

__all__ = ["selective_risk", "aurc", "risk_coverage_curve"]


@fill_doc
def selective_risk(y_true: ArrayLike, y_prob: ArrayLike, *, coverage: float) -> float:
    """Error rate among the ``k = ceil(coverage * n)`` most confident images.

    Parameters
    ----------
    {y_true}
    {y_prob}
    coverage : float in (0, 1]
        Fraction retained.  ``k`` uses ``ceil(round(coverage * n, 9))`` so that
        0.8 * 138 gives 111, not 112 from floating-point noise.

    Examples
    --------
    >>> selective_risk([1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55], coverage=0.5)
    0.5
    """
    c = check_fraction(coverage, name="coverage", low=0.0, high=1.0, closed="right")
    y, s = labels_scores(y_true, y_prob, prob=True)
    return float(K.selective_risk(np.ones(y.size), K.rank_confidence(y, s), c))


def aurc(y_true: ArrayLike, y_prob: ArrayLike) -> float:
    r"""Area under the risk–coverage curve by the trapezoid rule, coverage 1/n to 1.

    .. math:: \mathrm{AURC} = \sum_{k=2}^{n} \frac{1}{n}\,\frac{r(k-1) + r(k)}{2}

    Not normalised; a single image gives 0.

    Examples
    --------
    >>> round(aurc([1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55]), 12)  # risks 0, 1/2, 2/3, 3/4
    0.385416666667
    """
    y, s = labels_scores(y_true, y_prob, prob=True)
    return float(K.aurc(np.ones(y.size), K.rank_confidence(y, s)))


def risk_coverage_curve(y_true: ArrayLike, y_prob: ArrayLike) -> RiskCoverageCurve:
    """Risk at every coverage k/n, k = 1..n, with the confidence of the k-th image.

    Examples
    --------
    >>> curve = risk_coverage_curve([1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55])
    >>> curve.risk.tolist()
    [0.0, 0.5, 0.6666666666666666, 0.75]
    """
    y, s = labels_scores(y_true, y_prob, prob=True)
    cr = K.rank_confidence(y, s)
    k = np.arange(1, y.size + 1)
    return RiskCoverageCurve(
        coverage=k / y.size,
        risk=np.cumsum(cr.error) / k,
        confidence=np.maximum(s, 1.0 - s)[cr.order],
    )
