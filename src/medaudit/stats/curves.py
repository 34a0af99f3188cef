"""ROC and precision–recall curves as data, and their pointwise bootstrap bands.

Coordinates are taken at every observed threshold with the rule ``s >= t`` (tied
scores form one threshold), plus ``+inf`` for the ROC curve.  Nothing is dropped unless
``drop_intermediate=True``, which applies scikit-learn's rule exactly (anchors trap T1:
its default drops collinear points and can move a threshold chosen from the curve).

The band (:func:`roc_curve_band`) is pROC's ``ci.se``: at each specificity of a fixed
grid the sensitivity of every bootstrap replicate is read off that replicate's curve
("vertical averaging"), and the percentile interval is taken per grid point.  The
replicates are the engine's weights (:mod:`medaudit.stats.designs`).

The precision–recall band (:func:`precision_recall_band`) is its counterpart at fixed
recalls.  A PR curve is not read by linear interpolation (precision is not linear between
two operating points; Davis & Goadrich 2006), so each replicate's precision at recall
``r`` is taken at an operating point of that replicate: by default the highest threshold
whose recall is at least ``r`` (M0.8's rule for a sensitivity target, so the full-sample
value is the PPV at ``threshold_for_sensitivity(y, s, min_sensitivity=r)``), or with
``method="interpolated"`` the largest precision over the thresholds whose recall is at
least ``r`` (information retrieval's interpolated precision, monotone in ``r``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import RNGLike, as_1d_float, as_generator, check_option
from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX
from medaudit.stats._common import labels_scores, unit_scaled, warn, warn_if_one_class
from medaudit.stats._docs import fill_doc
from medaudit.stats._ranked import (
    bootstrap_plan,
    columns_batches,
    ranked_batches,
    sample_weights,
)
from medaudit.stats._results import _ToDict
from medaudit.stats.bootstrap import _common_options, percentile_interval

__all__ = ["roc_curve", "precision_recall_curve", "roc_curve_band", "RocCurve",
           "PrecisionRecallCurve", "RocBand", "sensitivity_at_specificities",
           "specificity_at_sensitivities",
           "precision_at_recalls", "precision_recall_band", "PrecisionRecallBand", "PR_METHODS"]

#: how precision is read at a recall: at the highest threshold reaching it, or the largest
#: precision over every threshold reaching it
PR_METHODS = ("threshold", "interpolated")


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
class _Band(_ToDict):
    """What a pointwise band carries besides its grid and curve: the interval arrays (one
    entry per grid point), the resampling provenance and the replicates."""

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


@dataclass(frozen=True, slots=True, kw_only=True)
class RocBand(_Band):
    """Sensitivity at fixed specificities with pointwise percentile intervals (pROC ``ci.se``).

    ``n_degenerate`` replicates (a class drawn empty) are left out of every interval.
    ``replicates`` has shape ``(n_resamples, len(specificity))``.
    """

    specificity: NDArray[np.float64]
    sensitivity: NDArray[np.float64]

    _array_fields = ("specificity", "sensitivity", "ci_low", "ci_high", "replicates")


@dataclass(frozen=True, slots=True, kw_only=True)
class PrecisionRecallBand(_Band):
    """Precision at fixed recalls with pointwise percentile intervals.

    ``method`` says how a curve is read at a recall (:data:`PR_METHODS`, module docstring).
    ``n_degenerate`` replicates (no positive drawn) are left out of every interval.
    ``replicates`` has shape ``(n_resamples, len(recall))``.
    """

    recall: NDArray[np.float64]
    precision: NDArray[np.float64]
    method: str

    _array_fields = ("recall", "precision", "ci_low", "ci_high", "replicates")


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


@fill_doc
def roc_curve(y_true: ArrayLike, y_score: ArrayLike, *, sample_weight: ArrayLike | None = None,
              drop_intermediate: bool = False) -> RocCurve:
    """ROC curve over the observed thresholds (all of them by default).

    Parameters
    ----------
    {y_true}
    {y_score}
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


def _grid(values, name: str = "specificities") -> NDArray[np.float64]:
    """A grid of rates in [0, 1] (default 101 points from 0 to 1)."""
    if values is None:
        return np.linspace(0.0, 1.0, 101)
    g = as_1d_float(values, name=name)
    if ((g < 0) | (g > 1)).any():
        raise MedauditError(f"{name} must lie in [0, 1]; got values from {float(g.min())!r} to "
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
    w = unit_scaled(w)  # the same rates at any weight scale (the kernel's guards are absolute)
    wp, wn = KX.class_totals(w, y)
    if warn_if_one_class(float(wp[0]), float(wn[0]), "sensitivity_at_specificities"):
        return np.full(g.size, np.nan)
    r = K.rank(y, s)
    return KX.se_at_sp_grid(KX.cols_from_items(w, r), r, wp, wn, g)[0]


def specificity_at_sensitivities(y_true: ArrayLike, y_score: ArrayLike, sensitivities: ArrayLike,
                                 *, sample_weight: ArrayLike | None = None
                                 ) -> NDArray[np.float64]:
    """Specificity read off the ROC curve at each given sensitivity (pROC ``coords``).

    The twin of :func:`sensitivity_at_specificities`: linear interpolation inside a
    segment; on a horizontal segment (one sensitivity, several specificities) its end of
    largest specificity -- what pROC's ``coords(roc, x, input = "sensitivity", ret =
    "specificity")`` returns.  The ROC curve of ``(1 - y, -s)`` is this curve with Se and Sp
    trading places (its vertices are the same tie-block corners), so this is
    :func:`sensitivity_at_specificities` read on that curve.

    Examples
    --------
    >>> specificity_at_sensitivities([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], [1.0, 0.75, 0.5])
    array([0.5, 0.5, 1. ])
    """
    g = _grid(sensitivities, name="sensitivities")
    y, s, w = _weighted(y_true, y_score, sample_weight)
    w = unit_scaled(w)
    wp, wn = KX.class_totals(w, y)
    if warn_if_one_class(float(wp[0]), float(wn[0]), "specificity_at_sensitivities"):
        return np.full(g.size, np.nan)
    yf, sf = 1.0 - y, -s
    r = K.rank(yf, sf)
    return KX.se_at_sp_grid(KX.cols_from_items(w, r), r, wn, wp, g)[0]


@dataclass(frozen=True, slots=True)
class _PRLayout:
    """Items counted into (tie block, class) columns, so that a PR curve is two cumsums.

    Columns ``0..P-1`` hold the positives of each tie block that has positives (descending
    score), columns ``P..`` the negatives of each block that has negatives.  A threshold
    at positive column ``j``'s block calls ``cumsum(pos)[j]`` positives and the negatives
    of the first ``neg_upto[j]`` negative columns.  The engine's plans count draws straight
    into these columns (``columns=``), so no ``(B, n)`` gather or sort is needed.
    """

    column: NDArray[np.intp]  # item -> column
    n_pos_cols: int
    neg_upto: NDArray[np.intp]  # (P,) negative columns at or above positive column j
    pos_block: NDArray[np.intp]  # (P,) tie block of positive column j
    neg_block: NDArray[np.intp]  # (N,) tie block of negative column k
    by_column: NDArray[np.intp]  # items ordered by column (to sum item-order weights)
    col_starts: NDArray[np.intp]  # first position of each column in by_column


def _pr_layout(y: NDArray[np.float64], s: NDArray[np.float64]) -> _PRLayout:
    r = K.rank(y, s)
    block = np.empty(y.size, dtype=np.intp)
    new = np.zeros(y.size, dtype=np.intp)
    new[r.starts] = 1
    block[r.order] = np.cumsum(new) - 1
    pos = y == 1.0
    pos_block, neg_block = np.unique(block[pos]), np.unique(block[~pos])
    column = np.where(pos, np.searchsorted(pos_block, block),
                      pos_block.size + np.searchsorted(neg_block, block))
    by_column = np.argsort(column, kind="stable")
    col_starts = np.searchsorted(column[by_column], np.arange(pos_block.size + neg_block.size))
    return _PRLayout(column, int(pos_block.size),
                     np.searchsorted(neg_block, pos_block, side="right"), pos_block, neg_block,
                     by_column, col_starts)


def _pr_columns(w: NDArray, lay: _PRLayout) -> NDArray:
    """Item-order weights ``(B, n)`` summed into the layout's columns ``(B, P + N)``."""
    return np.add.reduceat(np.take(np.atleast_2d(w), lay.by_column, axis=1), lay.col_starts,
                           axis=1)


def _first_at_least(c: NDArray, need: NDArray[np.float64], *, strict: bool = False
                    ) -> NDArray[np.intp]:
    """Per row of the non-decreasing ``c`` ``(B, m)``, the first column with ``c >= need``
    (``c > need`` when ``strict``) for each query column of ``need`` ``(B, G)``; ``m`` if none.

    Integer counts (every bootstrap replicate) are searched exactly, in one
    :func:`numpy.searchsorted` over the rows laid end to end with integer offsets; other
    weights (a point estimate with case weights) row by row.
    """
    b, m = c.shape
    if c.dtype.kind not in "iu":
        side = "right" if strict else "left"
        return np.stack([np.searchsorted(c[i], need[i], side=side) for i in range(b)])
    # for integer c: c >= need <=> c >= ceil(need); c > need <=> c >= floor(need) + 1
    q = np.clip(np.floor(need) + 1.0 if strict else np.ceil(need), 0, None).astype(np.int64)
    span = int(max(int(c.max(initial=0)), int(q.max(initial=0)))) + 2
    off = np.arange(b, dtype=np.int64)[:, None] * span
    idx = np.searchsorted((c + off).ravel(), (q + off).ravel(), side="left")
    return idx.reshape(need.shape) - np.arange(b)[:, None] * m


def _precision_at_recall(counts: NDArray, lay: _PRLayout, recall: NDArray[np.float64],
                         method: str) -> NDArray[np.float64]:
    """Precision read off each row's PR operating points at each recall: ``(B, G)``.

    The points are the tie blocks observed in the row (rule ``s >= t``).  At recall ``x``
    the point is the highest threshold with recall ``>= x - 1e-12`` (M0.8's guard): for
    ``x > 0`` the block where the positive count first reaches ``x n_pos``, for ``x = 0``
    the row's top block (precision 0 when it holds only negatives).  ``"interpolated"``
    takes the largest precision from that point down; only blocks with positives can hold
    it (a block of negatives lowers precision).
    """
    c = np.atleast_2d(counts)
    b, p = c.shape[0], lay.n_pos_cols
    cp = np.cumsum(c[:, :p], axis=1)
    cn = np.zeros((b, c.shape[1] - p + 1), dtype=cp.dtype)
    np.cumsum(c[:, p:], axis=1, out=cn[:, 1:])
    wp = cp[:, -1].astype(np.float64)
    need = (recall[None, :] - K._TOL) * wp[:, None]
    top = need <= 0.0  # recall 0: the row's highest observed threshold
    zero = np.zeros((b, 1))
    first_pos = _first_at_least(cp, zero, strict=True)[:, 0]  # first block with a positive
    first_neg = _first_at_least(cn[:, 1:], zero, strict=True)[:, 0]
    neg_block = np.r_[lay.neg_block, np.iinfo(np.intp).max]  # "none drawn" sorts last
    neg_on_top = neg_block[first_neg] < lay.pos_block[np.minimum(first_pos, p - 1)]
    j = np.where(top, first_pos[:, None], _first_at_least(cp, need))
    j = np.minimum(j, p - 1)  # only reached by a row without positives (nan below)
    if method == "interpolated":
        called = np.take(cn, lay.neg_upto, axis=1)
        called += cp
        with np.errstate(divide="ignore", invalid="ignore"):
            prec = np.divide(cp, called, dtype=np.float64)  # 0/0 = nan before the first draw
        # fmax skips those nans: the largest precision at or below each vertex
        out = np.take_along_axis(np.fmax.accumulate(prec[:, ::-1], axis=1)[:, ::-1], j, axis=1)
    else:
        tp = np.take_along_axis(cp, j, axis=1).astype(np.float64)
        fp = np.take_along_axis(cn, lay.neg_upto[j], axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = tp / (tp + fp)
        out = np.where(top & neg_on_top[:, None], 0.0, out)
    return np.where((wp > 0)[:, None], out, np.nan)


def precision_at_recalls(y_true: ArrayLike, y_score: ArrayLike, recalls: ArrayLike, *,
                         method: str = "threshold", sample_weight: ArrayLike | None = None
                         ) -> NDArray[np.float64]:
    """Precision at each given recall, read at an operating point of the PR curve.

    Parameters
    ----------
    y_true, y_score : array-like of shape (n_samples,)
        Labels (1 = positive) and scores (higher = more likely positive).
    recalls : array-like
        Recalls in [0, 1].
    method : {"threshold", "interpolated"}, default="threshold"
        ``"threshold"``: the precision at the highest observed threshold whose recall is at
        least ``r`` (the PPV at :func:`~medaudit.stats.threshold_for_sensitivity` with
        ``min_sensitivity=r``).  ``"interpolated"``: the largest precision over the
        thresholds whose recall is at least ``r`` (monotone non-increasing in ``r``).
    sample_weight : array-like of shape (n_samples,), optional
        Case weights; weight 0 removes a case.

    Returns
    -------
    ndarray
        nan (with :class:`~medaudit.exceptions.UndefinedMetricWarning`) without positives.

    Examples
    --------
    >>> y, s = [1, 0, 1, 0, 1], [0.9, 0.8, 0.7, 0.6, 0.5]
    >>> precision_at_recalls(y, s, [0.3, 0.5, 1.0]).tolist()  # 1/1, 2/3, 3/5
    [1.0, 0.6666666666666666, 0.6]
    >>> precision_at_recalls(y, s, [0.5], method="interpolated").tolist()  # max(2/3, 3/5)
    [0.6666666666666666]
    """
    method = check_option(method, PR_METHODS, name="method")
    g = _grid(recalls, "recalls")
    y, s, w = _weighted(y_true, y_score, sample_weight)
    if warn_if_one_class(float(w @ y), 1.0, "precision_at_recalls"):
        return np.full(g.size, np.nan)
    lay = _pr_layout(y, s)
    return _precision_at_recall(_pr_columns(w, lay), lay, g, method)[0]


def _pointwise(grid, point, reps, level, keep_replicates, name: str, empty: str):
    """A band's pointwise percentile ends over the replicates with no nan (a loop over grid
    points, not replicates), the count of the others with a warning, frozen arrays."""
    bad = np.isnan(reps).any(axis=1)
    lo = np.empty(grid.size)
    hi = np.empty(grid.size)
    for j in range(grid.size):
        lo[j], hi[j] = percentile_interval(reps[~bad, j], level)
    n_deg = int(bad.sum())
    if n_deg:
        warn(f"{name}: {n_deg} of {reps.shape[0]} replicates {empty}; the band uses the others.",
             DegenerateDataWarning)
    if not keep_replicates:
        reps = np.empty((0, grid.size))
    grid = grid.copy()
    _frozen(grid, point, lo, hi, reps)
    return grid, lo, hi, n_deg, reps


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
    rng: RNGLike = None,
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
    g, lo, hi, n_deg, reps = _pointwise(g, point, reps, level, keep_replicates,
                                        "roc_curve_band", "had a class drawn empty")
    return RocBand(specificity=g, sensitivity=point, ci_low=lo, ci_high=hi,
                   confidence_level=level, design=design, n_resamples=n_res, n_degenerate=n_deg,
                   seed=rec["seed"], n_pos=float(wp[0]), n_neg=float(wn[0]),
                   options={"rng": rec}, replicates=reps)


def precision_recall_band(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    recalls: ArrayLike | None = None,
    method: str = "threshold",
    design: str = "within_label",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
    keep_replicates: bool = True,
) -> PrecisionRecallBand:
    """Pointwise bootstrap band of precision at fixed recalls (the PR twin of the ROC band).

    Each replicate reads its own PR curve at every recall of the grid
    (:func:`precision_at_recalls`: the same operating-point rule), so the band is the
    counterpart of pROC's ``ci.se`` with precision and recall in place of Se and Sp.

    Parameters
    ----------
    y_true, y_score : array-like of shape (n_samples,)
        Labels and scores.
    recalls : array-like, optional
        The grid (default 101 points from 0 to 1).
    method : {"threshold", "interpolated"}, default="threshold"
        As in :func:`precision_at_recalls`.
    design : {"within_label", "ordinary", "cluster"}, default="within_label"
    cluster, strata, n_resamples, confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics`.
    keep_replicates : bool, default=True
        Keep the ``(n_resamples, G)`` replicate matrix in the result.

    Returns
    -------
    PrecisionRecallBand
        ``precision`` is the full-sample value at the grid; intervals are percentile
        endpoints over the replicates that drew a positive (``n_degenerate`` the others,
        with :class:`~medaudit.exceptions.DegenerateDataWarning`).

    Notes
    -----
    The engine's plans count each draw straight into a (tie block, class) column (no
    re-sorting, no gather), and every replicate is read with two cumulative sums and one
    search: O(n) per replicate.
    Verified against precision read off :func:`sklearn.metrics.precision_recall_curve`
    of each materialised resample (tests/stats/test_curves.py).

    Examples
    --------
    >>> y = [0, 0, 0, 0, 1, 1, 1, 1]
    >>> s = [.1, .2, .3, .6, .4, .7, .8, .9]
    >>> band = precision_recall_band(y, s, recalls=[0.5, 1.0], n_resamples=200, rng=0)
    >>> band.precision.tolist(), bool((band.ci_low <= band.precision).all())
    ([1.0, 0.8], True)
    """
    method = check_option(method, PR_METHODS, name="method")
    g = _grid(recalls, "recalls")
    n_res, level, _, batch = _common_options(n_resamples, confidence_level, "percentile", batch)
    y, s = labels_scores(y_true, y_score)
    n_pos, n_neg = float(y.sum()), float(y.size - y.sum())
    if warn_if_one_class(n_pos, n_neg, "precision_recall_band"):
        raise MedauditError("precision_recall_band needs both positives and negatives in y_true.")
    plan = bootstrap_plan(design, y, cluster=cluster, strata=strata)
    gen, rec = as_generator(rng)
    lay = _pr_layout(y, s)
    point = _precision_at_recall(_pr_columns(np.ones(y.size), lay), lay, g, method)[0]
    # draws counted straight into the layout's columns; a cluster design draws clusters,
    # whose item counts are summed into the columns
    counts = columns_batches(plan, lay.column, n_res, gen, batch)
    if counts is None:
        counts = (_pr_columns(w, lay) for w in plan.batches(n_res, gen, batch))
    reps = np.concatenate([_precision_at_recall(c, lay, g, method) for c in counts])
    g, lo, hi, n_deg, reps = _pointwise(g, point, reps, level, keep_replicates,
                                        "precision_recall_band", "drew no positive")
    return PrecisionRecallBand(recall=g, precision=point, ci_low=lo, ci_high=hi, method=method,
                               confidence_level=level, design=design, n_resamples=n_res,
                               n_degenerate=n_deg, seed=rec["seed"], n_pos=n_pos, n_neg=n_neg,
                               options={"rng": rec}, replicates=reps)
