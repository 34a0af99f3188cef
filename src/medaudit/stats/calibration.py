"""Probability metrics: Brier score, ECE, log loss, reliability-diagram data.

Each accepts ``prevalence=pi`` for the class-weighted (prevalence-standardised)
version of paper 000 M0.7: positives carry total weight pi and negatives 1 - pi,
with scores and labels unchanged (no recalibration).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import check_fraction, check_option
from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats import _kernels as K
from medaudit.stats._common import labels_scores, warn, warn_if_one_class, weights
from medaudit.stats._docs import fill_doc
from medaudit.stats._results import ReliabilityBins

__all__ = ["brier_score", "ece", "log_loss", "reliability_diagram", "DEFAULT_LOG_LOSS_EPS"]

DEFAULT_LOG_LOSS_EPS = 1e-15


def _prevalence(prevalence: float | None) -> float | None:
    if prevalence is None:
        return None
    return check_fraction(prevalence, name="prevalence", low=0.0, high=1.0)


def _n_bins(n_bins: int) -> int:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise MedauditError(f"n_bins must be a positive integer; got {n_bins!r}.")
    return int(n_bins)


def _undefined_for_prevalence(n_pos, n_neg, prevalence, metric) -> bool:
    """Whether the metric is undefined (warned): a class without weight at a prevalence, or
    no weight at all (every ``sample_weight`` 0), where the mean is 0 / 0."""
    if prevalence is None:
        if n_pos + n_neg > 0:
            return False
        warn(f"{metric}: every sample_weight is 0, so the mean is undefined; returning nan.",
             UndefinedMetricWarning)
        return True
    return warn_if_one_class(n_pos, n_neg, f"{metric} at prevalence={prevalence}")


@fill_doc
def brier_score(y_true: ArrayLike, y_prob: ArrayLike, *, prevalence: float | None = None,
                sample_weight: ArrayLike | None = None) -> float:
    r"""Brier score, optionally standardised to a specified prevalence.

    Parameters
    ----------
    {y_true}
    y_prob : array-like of shape (n_samples,)
        Probabilities in [0, 1]; values outside raise (they are never clipped).
    prevalence : float in (0, 1), optional
        If given, return :math:`BS_\pi = \frac{\pi}{|P|}\sum_P (1-s_i)^2 +
        \frac{1-\pi}{|N|}\sum_N s_i^2` (paper 000 eq. 6).
    {sample_weight}

    Returns
    -------
    float
        The mean squared error of the probabilities (of :math:`BS_\pi` when
        ``prevalence`` is given); nan, with a warning, when ``prevalence`` is given and a
        class is absent.

    Notes
    -----
    :math:`BS_\pi` is linear in :math:`\pi` and equals the raw Brier score at the
    sample's own prevalence.

    Examples
    --------
    >>> round(brier_score([0, 1], [0.2, 0.6]), 12)
    0.1
    >>> round(brier_score([0, 1, 1, 1], [0.2, 0.6, 0.9, 1.0], prevalence=0.5), 12)
    0.048333333333
    """
    y, s = labels_scores(y_true, y_prob, prob=True)
    pi = _prevalence(prevalence)
    w, n_pos, n_neg = weights(sample_weight, y)
    if _undefined_for_prevalence(n_pos, n_neg, pi, "brier_score"):
        return math.nan
    return float(K.mean_loss(w, y, (s - y) ** 2, pi))


def _binning(binning: str) -> str:
    return check_option(binning, K.BINNINGS, name="binning")


@fill_doc
def ece(
    y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15, prevalence: float | None = None,
    binning: str = "floor", sample_weight: ArrayLike | None = None,
) -> float:
    r"""Expected calibration error of the positive-class probability, equal-width bins.

    A probability ``s`` goes to bin ``min(floor(n_bins * s), n_bins - 1)`` computed in
    float64 (paper 000 M0.7; ``binning="linspace"`` for netcal's edges).

    Parameters
    ----------
    {y_true}
    {y_prob}
    n_bins : int, default=15
        Number of equal-width bins on [0, 1].  Empty bins contribute 0.
    prevalence : float in (0, 1), optional
        Class-weighted version :math:`\sum_b |\sum_{i\in B_b} w_i (s_i - y_i)|` with
        :math:`w_i = \pi/|P|` for positives and :math:`(1-\pi)/|N|` for negatives.
    {binning}
    {sample_weight}

    Returns
    -------
    float
        The ECE in [0, 1]; nan, with a warning, when ``prevalence`` is given and a class
        is absent.

    Notes
    -----
    .. math:: \mathrm{ECE} = \frac{1}{n}\sum_b \Big|\sum_{i \in B_b} (s_i - y_i)\Big|

    This is the positive-class ("binary") ECE of paper 000 eq. 5, not the top-label
    confidence ECE used by some libraries (anchors trap T4); bins are fixed on
    [0, 1], never on the observed score range (T3).

    Examples
    --------
    >>> round(ece([0, 1, 1], [0.1, 0.9, 1.0], n_bins=15), 12)  # (0.1 + 0.1 + 0)/3
    0.066666666667
    """
    nb = _n_bins(n_bins)
    rule = _binning(binning)
    y, s = labels_scores(y_true, y_prob, prob=True)
    pi = _prevalence(prevalence)
    w, n_pos, n_neg = weights(sample_weight, y)
    if _undefined_for_prevalence(n_pos, n_neg, pi, "ece"):
        return math.nan
    r = K.rank(y, s)
    return float(K.ece(w[r.order], r, nb, pi, rule))  # weights in the sorted order


@fill_doc
def log_loss(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    eps: float = DEFAULT_LOG_LOSS_EPS,
    prevalence: float | None = None,
    sample_weight: ArrayLike | None = None,
) -> float:
    r"""Mean negative log-likelihood with declared clipping of the probabilities.

    Parameters
    ----------
    {y_true}
    y_prob : array-like of shape (n_samples,)
        Probabilities in [0, 1] (validated before clipping).
    eps : float, default=1e-15
        Probabilities are clipped to ``[eps, 1 - eps]`` only inside the logarithm so
        that a confident error costs ``-log(eps)`` rather than infinity.  Record it.
        scikit-learn (1.5 on) clips at the machine epsilon of the input's dtype:
        ``eps=numpy.finfo(float).eps`` gives its value for float64 probabilities.
    prevalence : float in (0, 1), optional
        Class-weighted version :math:`-\frac{\pi}{|P|}\sum_P \ln s_i -
        \frac{1-\pi}{|N|}\sum_N \ln(1 - s_i)`.
    {sample_weight}

    Returns
    -------
    float

    Examples
    --------
    >>> round(log_loss([0, 1], [0.5, 0.5]), 12)
    0.69314718056

    A confident error costs ``-log(eps)`` (scikit-learn's clip with ``eps`` set to its):

    >>> import numpy as np
    >>> round(log_loss([0, 1], [1.0, 0.0]), 6), round(log_loss([0, 1], [1.0, 0.0],
    ...                                                        eps=np.finfo(float).eps), 6)
    (34.539176, 36.043653)
    """
    eps = check_fraction(eps, name="eps", low=0.0, high=0.5, closed="neither")
    y, s = labels_scores(y_true, y_prob, prob=True)
    pi = _prevalence(prevalence)
    w, n_pos, n_neg = weights(sample_weight, y)
    if _undefined_for_prevalence(n_pos, n_neg, pi, "log_loss"):
        return math.nan
    c = np.clip(s, eps, 1.0 - eps)
    loss = -(y * np.log(c) + (1.0 - y) * np.log1p(-c))
    return float(K.mean_loss(w, y, loss, pi))


@fill_doc
def reliability_diagram(y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 10,
                        binning: str = "floor") -> ReliabilityBins:
    """Data for a reliability diagram: equal-width bins, empty bins omitted.

    A probability ``s`` goes to bin ``min(floor(n_bins * s), n_bins - 1)`` computed in
    float64, the rule of :func:`ece` (``binning="linspace"`` for netcal's edges).

    Parameters
    ----------
    {y_true}
    {y_prob}
    n_bins : int, default=10
        Number of equal-width bins on [0, 1].
    {binning}

    Returns
    -------
    ReliabilityBins
        Per non-empty bin: index, edges, count, mean score and observed fraction
        of positives (no prevalence reweighting).

    Examples
    --------
    >>> rb = reliability_diagram([0, 1, 1], [0.05, 0.95, 1.0])
    >>> rb.bin_index.tolist(), rb.count.tolist(), rb.fraction_positive.tolist()
    ([0, 9], [1, 2], [0.0, 1.0])
    """
    nb = _n_bins(n_bins)
    rule = _binning(binning)
    y, s = labels_scores(y_true, y_prob, prob=True)
    b = K.bin_index(s, nb, rule)
    count = np.bincount(b, minlength=nb)
    ssum = np.bincount(b, weights=s, minlength=nb)
    ysum = np.bincount(b, weights=y, minlength=nb)
    keep = count > 0
    idx = np.flatnonzero(keep)
    low, high = K.bin_edges(idx, nb, rule)
    return ReliabilityBins(
        bin_index=idx.astype(np.int64),
        bin_low=low,
        bin_high=high,
        count=count[keep].astype(np.int64),
        mean_score=ssum[keep] / count[keep],
        fraction_positive=ysum[keep] / count[keep],
        n_bins=nb,
    )

