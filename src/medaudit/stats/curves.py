"""ROC and precision–recall curves as data, and pointwise bootstrap bands of the ROC curve.

Coordinates are taken at every observed threshold with the rule ``s >= t`` (tied
scores form one threshold), plus ``+inf`` for the ROC curve.  Nothing is dropped unless
``drop_intermediate=True``, which applies scikit-learn's rule exactly (anchors trap T1:
its default drops collinear points and can move a threshold chosen from the curve).

The band (:func:`roc_curve_band`) is pROC's ``ci.se``: at each specificity of a fixed
grid the sensitivity of every bootstrap replicate is read off that replicate's curve
("vertical averaging"), and the percentile interval is taken per grid point.  The
replicates are the engine's weights (:mod:`medaudit.stats.designs`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import as_1d_float, as_generator
from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX
from medaudit.stats._common import labels_scores, warn_if_one_class
from medaudit.stats._ranked import (
    bootstrap_plan,
    columns_batches,
    ranked_batches,
    sample_weights,
)
from medaudit.stats._results import _ToDict
from medaudit.stats.bootstrap import _common_options, percentile_interval

__all__ = ["roc_curve", "precision_recall_curve", "roc_curve_band", "RocCurve",
           "PrecisionRecallCurve", "RocBand", "sensitivity_at_specificities"]


def _frozen(*arrays: NDArray) -> None:
    for a in arrays:
        a.flags.writeable = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RocCurve(_ToDict):
    """Empirical ROC curve: one point per observed threshold, plus ``+inf`` first.

    ``thresholds`` descend; point ``k`` predicts positive when ``s >= thresholds[k]``
    (``fpr[0] = tpr[0] = 0`` at ``+inf``).  ``tp``/``fp`` are (weighted) counts.
    """

    thresholds: NDArray[np.float64]
    fpr: NDArray[np.float64]
    tpr: NDArray[np.float64]
    tp: NDArray[np.float64]
    fp: NDArray[np.float64]
    n_pos: float
    n_neg: float
    drop_intermediate: bool

    _array_fields = ("thresholds", "fpr", "tpr", "tp", "fp")

    @property
    def sensitivity(self) -> NDArray[np.float64]:
        return self.tpr

    @property
    def specificity(self) -> NDArray[np.float64]:
        return 1.0 - self.fpr


@dataclass(frozen=True, slots=True, kw_only=True)
class PrecisionRecallCurve(_ToDict):
    """Precision and recall at each observed threshold (descending), rule ``s >= t``.

    scikit-learn's ``precision_recall_curve`` returns the same points in ascending
    threshold order followed by an extra point (recall 0, precision 1) that has no
    threshold: ``sk_precision[:-1][::-1] == precision``.
    """

    thresholds: NDArray[np.float64]
    precision: NDArray[np.float64]
    recall: NDArray[np.float64]
    tp: NDArray[np.float64]
    fp: NDArray[np.float64]
    n_pos: float
    drop_intermediate: bool

    _array_fields = ("thresholds", "precision", "recall", "tp", "fp")


@dataclass(frozen=True, slots=True, kw_only=True)
class RocBand(_ToDict):
    """Sensitivity at fixed specificities with pointwise percentile intervals (pROC ``ci.se``).

    ``n_degenerate`` replicates (a class drawn empty) are left out of every interval.
    ``replicates`` has shape ``(n_resamples, len(specificity))``.
    """

    specificity: NDArray[np.float64]
    sensitivity: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    confidence_level: float
    design: str
    n_resamples: int
    n_degenerate: int
    seed: int | None
    n_pos: float
    n_neg: float
    options: dict[str, Any] = field(default_factory=dict)
    replicates: NDArray[np.float64] = field(repr=False, default_factory=lambda: np.empty((0, 0)))

    _array_fields = ("specificity", "sensitivity", "ci_low", "ci_high", "replicates")


def _weighted(y_true, y_score, sample_weight):
    """Validated labels, scores and weights with zero-weight cases removed (as scikit-learn)."""
    y, s = labels_scores(y_true, y_score)
    w = sample_weights(sample_weight, y.size)
    keep = w > 0
    return y[keep], s[keep], w[keep]


def _curve_counts(y, s, w):
    r = K.rank(y, s)
    cp, cn = KX.vertices(KX.cols_from_items(w, r), r)
    return r, cp[0], cn[0]


def roc_curve(y_true: ArrayLike, y_score: ArrayLike, *, sample_weight: ArrayLike | None = None,
              drop_intermediate: bool = False) -> RocCurve:
    """ROC curve over the observed thresholds (all of them by default).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels, 1 = positive.
    y_score : array-like of shape (n_samples,)
        Scores, higher meaning more likely positive.
    sample_weight : array-like of shape (n_samples,), optional
        Case weights; cases of weight 0 are removed, as in scikit-learn.
    drop_intermediate : bool, default=False
        Drop the thresholds scikit-learn's ``roc_curve(drop_intermediate=True)`` drops
        (points collinear with both neighbours, by its second-difference test on the
        counts).  The curve and its area are unchanged; the thresholds are not.

    Returns
    -------
    RocCurve
        A class with zero total weight gives nan rates for it, with
        :class:`~medaudit.exceptions.UndefinedMetricWarning`.

    Notes
    -----
    Identical (thresholds, fpr, tpr) to :func:`sklearn.metrics.roc_curve` with the same
    ``drop_intermediate`` (tests/stats/test_curves.py), except that the first threshold
    is ``+inf`` in both.

    Examples
    --------
    >>> c = roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> c.thresholds.tolist(), c.fpr.tolist(), c.tpr.tolist()
    ([inf, 0.8, 0.4, 0.35, 0.1], [0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0])
    """
    y, s, w = _weighted(y_true, y_score, sample_weight)
    if y.size == 0:
        raise MedauditError("sample_weight is 0 for every case; nothing is left to draw.")
    r, tp, fp = _curve_counts(y, s, w)
    thr = np.r_[np.inf, r.score[r.starts]]
    if drop_intermediate and tp.size > 3:
        fps, tps = fp[1:], tp[1:]
        keep = np.flatnonzero(np.r_[True, (np.diff(fps, 2) != 0) | (np.diff(tps, 2) != 0), True])
        keep = np.r_[0, keep + 1]
        thr, tp, fp = thr[keep], tp[keep], fp[keep]
    n_pos, n_neg = float(tp[-1]), float(fp[-1])
    warn_if_one_class(n_pos, n_neg, "roc_curve")
    tpr = tp / n_pos if n_pos > 0 else np.full(tp.size, np.nan)
    fpr = fp / n_neg if n_neg > 0 else np.full(fp.size, np.nan)
    _frozen(thr, fpr, tpr, tp, fp)
    return RocCurve(thresholds=thr, fpr=fpr, tpr=tpr, tp=tp, fp=fp, n_pos=n_pos, n_neg=n_neg,
                    drop_intermediate=bool(drop_intermediate))


def precision_recall_curve(y_true: ArrayLike, y_score: ArrayLike, *,
                           sample_weight: ArrayLike | None = None,
                           drop_intermediate: bool = False) -> PrecisionRecallCurve:
    """Precision and recall at every observed threshold (descending).

    Parameters
    ----------
    y_true, y_score, sample_weight
        As in :func:`roc_curve`.
    drop_intermediate : bool, default=False
        scikit-learn's rule: keep a threshold only where the true-positive count
        changes on one side of it (plus both ends).

    Returns
    -------
    PrecisionRecallCurve
        Recall is nan (with :class:`~medaudit.exceptions.UndefinedMetricWarning`) when
        there are no positives; scikit-learn sets it to 1 instead.

    Examples
    --------
    >>> c = precision_recall_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> c.thresholds.tolist(), c.precision.tolist(), c.recall.tolist()
    ([0.8, 0.4, 0.35, 0.1], [1.0, 0.5, 0.6666666666666666, 0.5], [0.5, 0.5, 1.0, 1.0])
    """
    y, s, w = _weighted(y_true, y_score, sample_weight)
    if y.size == 0:
        raise MedauditError("sample_weight is 0 for every case; nothing is left to draw.")
    r, tp, fp = _curve_counts(y, s, w)
    thr, tp, fp = r.score[r.starts], tp[1:], fp[1:]
    if drop_intermediate and tp.size > 2:
        keep = np.flatnonzero(np.r_[True, (np.diff(tp[:-1]) != 0) | (np.diff(tp[1:]) != 0), True])
        thr, tp, fp = thr[keep], tp[keep], fp[keep]
    n_pos = float(tp[-1])
    precision = tp / (tp + fp)
    if warn_if_one_class(n_pos, 1.0, "recall (precision_recall_curve)"):
        recall = np.full(tp.size, np.nan)
    else:
        recall = tp / n_pos
    thr = thr.copy()
    _frozen(thr, precision, recall, tp, fp)
    return PrecisionRecallCurve(thresholds=thr, precision=precision, recall=recall, tp=tp, fp=fp,
                                n_pos=n_pos, drop_intermediate=bool(drop_intermediate))


def _grid(specificities) -> NDArray[np.float64]:
    if specificities is None:
        return np.linspace(0.0, 1.0, 101)
    g = as_1d_float(specificities, name="specificities")
    if ((g < 0) | (g > 1)).any():
        raise MedauditError(f"specificities must lie in [0, 1]; got values from {float(g.min())!r} to "
                            f"{float(g.max())!r}.")
    return g


def sensitivity_at_specificities(y_true: ArrayLike, y_score: ArrayLike, specificities: ArrayLike,
                                 *, sample_weight: ArrayLike | None = None
                                 ) -> NDArray[np.float64]:
    """Sensitivity read off the ROC curve at each given specificity (pROC ``coords``).

    Linear interpolation inside a segment; on a vertical segment (one specificity, several
    sensitivities) its top, the largest sensitivity at that specificity — what pROC's
    ``coords(roc, x, input = "specificity", ret = "sensitivity")`` returns.

    Examples
    --------
    >>> sensitivity_at_specificities([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], [1.0, 0.75, 0.5])
    array([0.5, 0.5, 1. ])
    """
    g = _grid(specificities)
    y, s, w = _weighted(y_true, y_score, sample_weight)
    wp, wn = KX.class_totals(w, y)
    if warn_if_one_class(float(wp[0]), float(wn[0]), "sensitivity_at_specificities"):
        return np.full(g.size, np.nan)
    r = K.rank(y, s)
    return KX.se_at_sp_grid(KX.cols_from_items(w, r), r, wp, wn, g)[0]


def roc_curve_band(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    specificities: ArrayLike | None = None,
    design: str = "within_label",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: Any = None,
    batch: int | None = None,
    keep_replicates: bool = True,
) -> RocBand:
    """Pointwise bootstrap band of sensitivity at fixed specificities (pROC ``ci.se``).

    Parameters
    ----------
    y_true, y_score : array-like of shape (n_samples,)
        Labels and scores.
    specificities : array-like, optional
        The grid (default 101 points from 0 to 1; pROC's default is ``seq(0, 1, 0.1)``).
    design : {"within_label", "ordinary", "cluster"}, default="within_label"
        ``"within_label"`` is pROC's ``boot.stratified = TRUE``.
    cluster, strata, n_resamples, confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics`.
    keep_replicates : bool, default=True
        Keep the ``(n_resamples, G)`` replicate matrix in the result.

    Returns
    -------
    RocBand
        ``sensitivity`` is the full-sample curve read at the grid
        (:func:`sensitivity_at_specificities`); intervals are percentile endpoints over
        the non-degenerate replicates (pROC drops NA replicates the same way, but
        reports the quantile median instead of the full-sample value).

    Examples
    --------
    >>> y = [0, 0, 0, 0, 1, 1, 1, 1]
    >>> s = [.1, .2, .3, .6, .4, .7, .8, .9]
    >>> band = roc_curve_band(y, s, specificities=[1.0, 0.5], n_resamples=200, rng=0)
    >>> band.sensitivity.tolist(), bool((band.ci_low <= band.sensitivity).all())
    ([0.75, 1.0], True)
    """
    g = _grid(specificities)
    n_res, level, _, batch = _common_options(n_resamples, confidence_level, "percentile", batch)
    y, s = labels_scores(y_true, y_score)
    ones = np.ones(y.size)
    wp, wn = KX.class_totals(ones, y)
    if warn_if_one_class(float(wp[0]), float(wn[0]), "roc_curve_band"):
        raise MedauditError("roc_curve_band needs both positives and negatives in y_true.")
    plan = bootstrap_plan(design, y, cluster=cluster, strata=strata)
    gen, rec = as_generator(rng)
    r = K.rank(y, s)
    point = KX.se_at_sp_grid(KX.cols_from_items(ones, r), r, wp, wn, g)[0]
    chunks = []
    so = KX.split_order(y, s)
    split = None if so is None else columns_batches(plan, so.position, n_res, gen, batch)
    if split is not None:  # no positive ties a negative: a staircase, one cumsum per class
        for counts in split:
            chunks.append(KX.se_at_sp_split(counts, so, g))
    else:
        for counts in ranked_batches(plan, r.order, n_res, gen, batch):
            tp = K._dot(counts, r.label)
            chunks.append(KX.se_at_sp_grid(KX.cols_from_ranked(counts), r, tp,
                                           K._rowsum(counts) - tp, g))
    reps = np.concatenate(chunks)
    bad = np.isnan(reps).any(axis=1)
    lo = np.empty(g.size)
    hi = np.empty(g.size)
    for j in range(g.size):  # a loop over grid points, not replicates
        lo[j], hi[j] = percentile_interval(reps[~bad, j], level)
    n_deg = int(bad.sum())
    if n_deg:
        warnings.warn(f"roc_curve_band: {n_deg} of {n_res} replicates had a class drawn empty; "
                      "the band uses the others.", DegenerateDataWarning, stacklevel=2)
    if not keep_replicates:
        reps = np.empty((0, g.size))
    g = g.copy()
    _frozen(g, point, lo, hi, reps)
    return RocBand(specificity=g, sensitivity=point, ci_low=lo, ci_high=hi,
                   confidence_level=level, design=design, n_resamples=n_res, n_degenerate=n_deg,
                   seed=rec["seed"], n_pos=float(wp[0]), n_neg=float(wn[0]),
                   options={"rng": rec}, replicates=reps)
