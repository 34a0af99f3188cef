"""Selective prediction: risk at a coverage and the area under the risk–coverage curve.

Confidence is ``max(s, 1 - s)``, the decision stays ``1{s >= 0.5}`` and the error
is ``1{decision != y}`` (paper 000 M0.7).  Items are ordered by confidence,
descending, with a stable sort (ties keep input order; the paper leaves this
open).  Where tied confidences hold both errors and correct decisions, the value
depends on that order: :func:`aurc` and :func:`selective_risk` then warn
(:class:`~medaudit.exceptions.TiedScoresWarning`) with the value averaged over
every order of the ties beside it, and ``ties="averaged"`` returns that average itself.
This is not the accuracy-rejection or argmax
convention of some libraries, and AURC is not rescaled by 1/(1 - 1/n) (anchors
trap T5).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import check_fraction, check_option
from medaudit.exceptions import TiedScoresWarning
from medaudit.stats import _kernels as K
from medaudit.stats._common import labels_scores, warn
from medaudit.stats._docs import fill_doc
from medaudit.stats._results import RiskCoverageCurve

__all__ = ["selective_risk", "aurc", "risk_coverage_curve", "RISK_TIES"]

#: how aurc and selective_risk order images with tied confidences: "input" (a stable sort,
#: ties in input order, the paper's reading and the default) or "averaged" (the expected
#: value over every order of the ties, which no row order can move)
RISK_TIES = ("input", "averaged")

#: |value in input order - value averaged over the orders of tied confidences| above which
#: aurc and selective_risk warn (the tolerance average_precision uses for its tie warning)
RISK_TIE_TOLERANCE = 1e-3


def _order_free_risks(s: NDArray[np.float64], cr: K.ConfidenceRanked
                      ) -> NDArray[np.float64] | None:
    """Risk at coverage k/n, k = 1..n, averaged over every order of tied confidences; None
    when no tie holds both an error and a correct decision (then every order agrees).

    Within a tie block of m images holding e errors, after E errors before it, the j-th
    image brings the expected error count to E + j e / m (each order equally likely).
    """
    conf = np.maximum(s, 1.0 - s)[cr.order]
    n = conf.size
    new = np.empty(n, dtype=bool)
    new[:1] = True
    np.not_equal(conf[1:], conf[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], n]
    cum = np.r_[0.0, np.cumsum(cr.error)]
    size = ends - starts
    errs = cum[ends] - cum[starts]
    if not np.any((errs > 0) & (errs < size)):
        return None
    block = np.cumsum(new) - 1
    j = np.arange(1, n + 1) - starts[block]
    expected = cum[starts][block] + j * (errs / size)[block]
    return expected / np.arange(1, n + 1)


def _warn_tied(name: str, value: float, order_free: float) -> None:
    if abs(value - order_free) > RISK_TIE_TOLERANCE:
        warn(TiedScoresWarning(
            f"{name}: tied confidences (max(p, 1 - p)) hold both errors and correct decisions, "
            f"so the value in input order ({value:.4g}) depends on the row order; averaged "
            f"over every order of the ties it is {order_free:.4g}.",
            individual=value, pooled=order_free))


def _aurc_of(risks: NDArray[np.float64]) -> float:
    """The trapezoid AURC of the risks at coverage 1/n .. 1."""
    return float((risks.sum() - 0.5 * (risks[0] + risks[-1])) / risks.size)


@fill_doc
def selective_risk(y_true: ArrayLike, y_prob: ArrayLike, *, coverage: float,
                   ties: str = "input") -> float:
    """Error rate among the ``k = ceil(coverage * n)`` most confident images.

    Parameters
    ----------
    {y_true}
    {y_prob}
    coverage : float in (0, 1]
        Fraction retained.  ``k`` uses ``ceil(round(coverage * n, 9))`` so that
        0.8 * 138 gives 111, not 112 from floating-point noise.
    {risk_ties}

    Examples
    --------
    >>> selective_risk([1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55], coverage=0.5)
    0.5
    >>> selective_risk([1, 0, 0, 1], [0.7, 0.3, 0.7, 0.3], coverage=0.5, ties="averaged")
    0.5
    """
    c = check_fraction(coverage, name="coverage", low=0.0, high=1.0, closed="right")
    ties = check_option(ties, RISK_TIES, name="ties")
    y, s = labels_scores(y_true, y_prob, prob=True)
    cr = K.rank_confidence(y, s)
    value = float(K.selective_risk(np.ones(y.size), cr, c))
    risks = _order_free_risks(s, cr)
    if risks is not None:
        k = max(math.ceil(round(c * y.size, 9)), 1)  # the kernel's k for unit weights
        if ties == "averaged":
            return float(risks[k - 1])
        _warn_tied("selective_risk", value, float(risks[k - 1]))
    return value


@fill_doc
def aurc(y_true: ArrayLike, y_prob: ArrayLike, *, ties: str = "input") -> float:
    r"""Area under the risk–coverage curve by the trapezoid rule, coverage 1/n to 1.

    .. math:: \mathrm{AURC} = \sum_{k=2}^{n} \frac{1}{n}\,\frac{r(k-1) + r(k)}{2}

    Not normalised; a single image gives 0.

    Parameters
    ----------
    {y_true}
    {y_prob}
    {risk_ties}

    Examples
    --------
    >>> round(aurc([1, 0, 1, 0], [0.95, 0.9, 0.4, 0.55]), 12)  # risks 0, 1/2, 2/3, 3/4
    0.385416666667
    """
    ties = check_option(ties, RISK_TIES, name="ties")
    y, s = labels_scores(y_true, y_prob, prob=True)
    cr = K.rank_confidence(y, s)
    value = float(K.aurc(np.ones(y.size), cr))
    risks = _order_free_risks(s, cr)
    if risks is not None:
        if ties == "averaged":
            return _aurc_of(risks)
        _warn_tied("aurc", value, _aurc_of(risks))
    return value


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
