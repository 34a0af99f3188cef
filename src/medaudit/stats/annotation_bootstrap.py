r"""Label rules and the annotation bootstrap of paper 001 (M1.1, M1.7, M1.8).

The annotation bootstrap resamples *annotators*, not cases: in each replicate every
item's ratings are drawn with replacement (as many as it has), the soft and hard
labels are rebuilt with the same rules as the original aggregation, the four
metrics (ordinary AUROC and AP against the hard label, soft AUROC and soft AP
against the soft label) are recomputed for every model with the scores fixed, the
models are re-ranked, and each replicate's ranking is correlated with the original
one (Spearman ρ and Kendall τ-b).

Implementation.  :func:`resampled_item_sums` draws the resampled per-item sums (integer
multinomial counts per item, one uniform per rating slot, independent of the batch
size); :func:`labels_from_sums` turns them into labels (the single definition of the
rules, shared with :mod:`medaudit.labels.aggregate`).  Each model's scores are sorted
once and every metric is a weighted cumulative-sum kernel of :mod:`medaudit.stats._kernels`
(O(n) per replicate).  An item whose hard label is a tie under ``tie="exclude"`` gets
weight 0 in that replicate; their number is recorded per replicate.

Pure numpy/scipy: arrays in, a frozen result out.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import RNGLike, as_1d_float, as_generator, check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import _progress
from medaudit.stats._common import check_batch, check_n_resamples
from medaudit.stats._metricspec import MetricSpec
from medaudit.stats._results import TestResult, _ToDict
from medaudit.stats.contingency import binomial_test
from medaudit.stats.soft import SOFT_DEFAULTS, soft_metric_options

__all__ = [
    "HEDGE_POLICIES", "HARD_RULES", "TIE_RULES", "resolve_hedges", "labels_from_sums", "label_rule",
    "metric_ids", "min_rank", "pearson_r", "pearson_r2", "annotation_bootstrap", "AnnotationBootstrapResult",
    "rank_stability_test", "RANK_DECIMALS", "resampled_item_sums",
]

HEDGE_POLICIES = ("negative", "positive", "exclude", "half")
HARD_RULES = ("majority", "threshold")
TIE_RULES = ("negative", "positive", "exclude")
_BATCH_ELEMENTS = 1 << 20  # elements of one (batch, n_ratings) work array
#: metric values are compared after rounding to this many decimals when ranking, so that
#: two models whose metrics are mathematically equal tie even if the floating-point sums
#: differ in the last bit (the metrics live in [0, 1]; 1e-12 is far below any real gap)
RANK_DECIMALS = 12


# ------------------------------------------------------------------------- label rules
def _scale(scale: tuple[float, float]) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in scale)
    except (TypeError, ValueError):
        raise MedauditError(f"scale must be (min, max) numbers; got {scale!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise MedauditError(f"scale must be finite (min, max) with min < max; got {scale!r}.")
    return lo, hi


def resolve_hedges(
    values: ArrayLike, hedged: ArrayLike, *, policy: str | None, scale: tuple[float, float]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Apply the declared hedge policy to ratings on the original scale.

    Parameters
    ----------
    values : array-like of shape (n_ratings,)
        Ratings on the scale (any value where ``hedged`` is true is ignored).
    hedged : array-like of bool, shape (n_ratings,)
        Which ratings are hedged / uncertain.
    policy : {"negative", "positive", "exclude", "half"} or None
        A hedged rating counts as the scale minimum, the maximum, is removed, or
        counts as the midpoint (normalised 0.5).  ``None`` refuses hedged ratings.
    scale : (min, max)

    Returns
    -------
    values : ndarray
        Ratings with hedges resolved (excluded ones left as they were).
    keep : ndarray of bool
        False for the excluded ratings (policy ``"exclude"``).

    Examples
    --------
    >>> v, keep = resolve_hedges([0, 1, np.nan], [False, False, True], policy="half",
    ...                          scale=(0, 1))
    >>> v.tolist(), keep.tolist()
    ([0.0, 1.0, 0.5], [True, True, True])
    """
    lo, hi = _scale(scale)
    h = np.asarray(hedged, dtype=bool).ravel()
    v = np.array(values, dtype=np.float64).ravel()
    if v.shape != h.shape:
        raise MedauditError(f"values and hedged must have the same length; got {v.size} and {h.size}.")
    keep = np.ones(v.size, dtype=bool)
    if not h.any():
        return v, keep
    if policy is None:
        raise MedauditError(
            f"{int(h.sum())} rating(s) are hedged (e.g. index {int(np.flatnonzero(h)[0])}); declare "
            "how they count with hedge= 'negative', 'positive', 'exclude' or 'half'.")
    policy = check_option(policy, HEDGE_POLICIES, name="hedge")
    if policy == "exclude":
        keep = ~h
    else:
        v[h] = {"negative": lo, "positive": hi, "half": 0.5 * (lo + hi)}[policy]
    return v, keep


def labels_from_sums(
    sum_raw: ArrayLike, count: ArrayLike, *, scale: tuple[float, float] = (0.0, 1.0),
    hard_rule: str = "majority", threshold: float | None = None, threshold_rule: str = ">",
    tie: str = "negative",
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Soft and hard labels from per-item sums and counts of ratings (paper 001, M1.1).

    Parameters
    ----------
    sum_raw, count : array-like
        Sum of an item's ratings on the original scale and their number (any shape).
    scale : (min, max), default=(0, 1)
    hard_rule : {"majority", "threshold"}, default="majority"
        ``"majority"``: positive when the normalised mean exceeds 1/2, a tie at exactly
        1/2; ``"threshold"``: positive when the raw mean is ``> threshold`` (or ``>=``).
    threshold : float, optional
        Required by ``hard_rule="threshold"`` (ENHANCE: 1).
    threshold_rule : {">", ">="}, default=">"
    tie : {"negative", "positive", "exclude"}, default="negative"
        Majority ties: 0 (strict majority, M1.1 default), 1, or NaN (item excluded).

    Returns
    -------
    soft : ndarray
        :math:`(\bar r - \min)/(\max - \min)`; NaN where ``count`` is 0.
    hard : ndarray
        1.0, 0.0, or NaN (no ratings, or an excluded tie).

    Notes
    -----
    The comparisons are made on sums, ``2(S - k\min)`` against ``k(\max-\min)`` and
    ``S`` against ``k t``, never on a divided mean, so integer ratings decide ties
    exactly (a mean of 4/8 is a tie, not 0.49999...); fractional ratings tie within
    ``1e-9 (max - min)`` per rating (0.2 + 0.8 against 2 × 0.5).

    Examples
    --------
    Three binary votes 1, 1, 0 and four votes 1, 1, 0, 0:

    >>> soft, hard = labels_from_sums([2, 2], [3, 4])
    >>> soft.round(4).tolist(), hard.tolist()
    ([0.6667, 0.5], [1.0, 0.0])
    >>> labels_from_sums([3], [2], scale=(0, 2), hard_rule="threshold", threshold=1)[1].tolist()
    [1.0]
    """
    to_labels = label_rule(scale=scale, hard_rule=hard_rule, threshold=threshold,
                           threshold_rule=threshold_rule, tie=tie)
    s = np.asarray(sum_raw, dtype=np.float64)
    k = np.asarray(count, dtype=np.float64)
    lo, hi = to_labels.keywords["lo"], to_labels.keywords["hi"]
    _check_sums(s, k, lo, hi, _tolerance(k, lo, hi))
    return to_labels(s, k)


def label_rule(*, scale: tuple[float, float] = (0.0, 1.0), hard_rule: str = "majority",
               threshold: float | None = None, threshold_rule: str = ">", tie: str = "negative"
               ) -> functools.partial:
    """The rules of :func:`labels_from_sums`, checked once: ``f(sums, counts) -> (soft, hard)``.

    For resampling loops, whose sums are of ratings already checked to lie on the scale: the
    sums are trusted there (the per-batch check would be passes over every replicate for
    nothing); :func:`labels_from_sums` checks them.
    """
    lo, hi = _scale(scale)
    hard_rule = check_option(hard_rule, HARD_RULES, name="hard_rule")
    tie = check_option(tie, TIE_RULES, name="tie")
    threshold_rule = check_option(threshold_rule, (">", ">="), name="threshold_rule")
    if hard_rule == "threshold" and threshold is None:
        raise MedauditError("hard_rule='threshold' needs threshold= on the original scale "
                            "(ENHANCE: 1, i.e. mean rating > 1).")
    return functools.partial(_labels, lo=lo, hi=hi, hard_rule=hard_rule, threshold=threshold,
                             threshold_rule=threshold_rule, tie=tie)


def _tolerance(k: NDArray[np.float64], lo: float, hi: float) -> NDArray[np.float64]:
    # Sums of integer ratings decide ties exactly, but ratings stored as decimals or
    # normalised fractions (0.2 + 0.8, 1/3 + 2/3) carry rounding of a few ulps per
    # rating: a relative tolerance far above that noise (1e-9 of the scale per rating)
    # and far below any real difference between two ratings treats them as the ties they are.
    return 1e-9 * np.maximum(k, 1.0) * (hi - lo)


def _labels(s: NDArray[np.float64], k: NDArray[np.float64], *, lo: float, hi: float,
            hard_rule: str, threshold: float | None, threshold_rule: str, tie: str
            ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    s = np.asarray(s, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    empty = k <= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        soft = (s / k - lo) / (hi - lo)
    tol = _tolerance(k, lo, hi)
    if hard_rule == "majority":
        d = 2.0 * (s - k * lo) - k * (hi - lo)
        hard = np.where(d > tol, 1.0, 0.0)
        tie_value = {"negative": 0.0, "positive": 1.0, "exclude": np.nan}[tie]
        hard = np.where(np.abs(d) <= tol, tie_value, hard)
    else:
        d = s - k * float(threshold)
        hard = np.where(d > tol if threshold_rule == ">" else d >= -tol, 1.0, 0.0)
    soft = np.where(empty, np.nan, soft)
    hard = np.where(empty, np.nan, hard)
    return soft, hard


def _check_sums(s: NDArray[np.float64], k: NDArray[np.float64], lo: float, hi: float,
                tol: NDArray[np.float64]) -> None:
    """Counts are whole and non-negative, and each sum is one of ``k`` ratings on the scale."""
    try:
        s, k, tol = np.broadcast_arrays(s, k, tol)
    except ValueError:
        raise MedauditError(f"sum_raw and count must have the same shape; got {s.shape} and "
                            f"{k.shape}.") from None
    bad_k = ~np.isfinite(k) | (k < 0) | (k != np.round(k))
    if bad_k.any():
        i = int(np.flatnonzero(bad_k.ravel())[0])
        raise MedauditError(f"count must be whole numbers >= 0; item {i} has {k.ravel()[i]!r}.")
    bad = (k > 0) & (~np.isfinite(s) | (s < k * lo - tol) | (s > k * hi + tol))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise MedauditError(
            f"sum_raw must lie between count x {lo:g} and count x {hi:g} (ratings on the scale "
            f"({lo:g}, {hi:g})); item {i} has sum {s.ravel()[i]!r} of {int(k.ravel()[i])} "
            "rating(s). Check scale=.")


# ------------------------------------------------------------------- ranks, correlations
def soft_options(soft_variant: str | None = None, soft_ties: str | None = None,
                 soft_ap_variant: str | None = None) -> dict[str, str]:
    """The soft metrics' options resolved by the one rule of :func:`~medaudit.stats.soft.
    soft_metric_options` (``None`` = the defaults that reproduce paper 001's Table 4)."""
    auc_variant, ties = soft_metric_options("soft_roc_auc", variant=soft_variant, ties=soft_ties)
    ap_variant, _ = soft_metric_options("soft_average_precision", variant=soft_ap_variant,
                                        ties=soft_ties)
    return {"soft_variant": auc_variant, "soft_ties": ties, "soft_ap_variant": ap_variant}


def _soft_id(metric: str, variant: str, ties: str) -> str:
    d_variant, d_ties = SOFT_DEFAULTS[metric]
    opts = {k: v for k, v, d in (("variant", variant, d_variant), ("ties", ties, d_ties)) if v != d}
    return MetricSpec(metric, opts).id


def metric_ids(*, ap_ties: str = "pooled", soft_variant: str | None = None,
               soft_ties: str | None = None, soft_ap_variant: str | None = None
               ) -> tuple[str, str, str, str]:
    """Result-table ids of the four metrics (as :func:`~medaudit.stats.bootstrap_metrics`
    names them): ordinary AUROC, ordinary AP, soft AUROC, soft AP.

    An option at its default is left out of the id, so ``soft_roc_auc`` is the strict form
    and ``soft_average_precision`` the known-self form (the defaults of
    :data:`~medaudit.stats.soft.SOFT_DEFAULTS`).

    Examples
    --------
    >>> metric_ids()
    ('roc_auc', 'average_precision[ties=pooled]', 'soft_roc_auc', 'soft_average_precision')
    >>> metric_ids(soft_variant="inclusive", soft_ties="grouped")[2:]
    ('soft_roc_auc[ties=grouped,variant=inclusive]', 'soft_average_precision[ties=grouped]')
    """
    ap_ties = check_option(ap_ties, ("pooled", "individual"), name="ap_ties")
    o = soft_options(soft_variant, soft_ties, soft_ap_variant)
    ap = MetricSpec("average_precision", {"ties": ap_ties} if ap_ties != "individual" else {})
    return ("roc_auc", ap.id, _soft_id("soft_roc_auc", o["soft_variant"], o["soft_ties"]),
            _soft_id("soft_average_precision", o["soft_ap_variant"], o["soft_ties"]))


def min_rank(values: ArrayLike) -> NDArray[np.float64]:
    """Competition ("min") ranks along the last axis, 1 = highest value; NaN stays NaN.

    Tied values share the smallest rank and the next value skips (M1.5: four models
    tied at rank 3, the next is rank 7).  Values equal to :data:`RANK_DECIMALS` decimals
    tie (floating-point noise is not a ranking).

    Examples
    --------
    >>> min_rank([0.9, 0.8, 0.8, 0.8, 0.8, 0.7]).tolist()
    [1.0, 2.0, 2.0, 2.0, 2.0, 6.0]
    """
    x = np.round(np.asarray(values, dtype=np.float64), RANK_DECIMALS)
    greater = (x[..., None, :] > x[..., :, None]).sum(axis=-1)
    return np.where(np.isnan(x), np.nan, 1.0 + greater)


def _average_ranks(x: NDArray[np.float64]) -> NDArray[np.float64]:
    less = (x[..., None, :] < x[..., :, None]).sum(axis=-1)
    equal = (x[..., None, :] == x[..., :, None]).sum(axis=-1)
    return 1.0 + less + 0.5 * (equal - 1.0)


def _spearman_rows(x: NDArray[np.float64], ref: NDArray[np.float64]) -> NDArray[np.float64]:
    """Spearman rho (average ranks, as scipy) of each row of ``x`` with ``ref``; NaN when
    a row has a NaN or either ranking is constant (values rounded as in :func:`min_rank`)."""
    x, ref = np.round(x, RANK_DECIMALS), np.round(ref, RANK_DECIMALS)
    rx = _average_ranks(x)
    rx -= rx.mean(axis=-1, keepdims=True)
    rr = _average_ranks(ref)
    rr = rr - rr.mean()
    num = np.einsum("...j,j->...", rx, rr)
    den = np.sqrt(np.einsum("...j,...j->...", rx, rx) * float(rr @ rr))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return np.where((den > 0) & ~np.isnan(x).any(axis=-1), out, np.nan)


def _kendall_rows(x: NDArray[np.float64], ref: NDArray[np.float64]) -> NDArray[np.float64]:
    """Kendall tau-b of each row of ``x`` with ``ref`` (as scipy's default; values rounded
    as in :func:`min_rank`)."""
    x, ref = np.round(x, RANK_DECIMALS), np.round(ref, RANK_DECIMALS)
    i, j = np.triu_indices(ref.size, k=1)
    sx = np.sign(x[..., i] - x[..., j])
    sr = np.sign(ref[i] - ref[j])
    n0 = float(i.size)
    n1 = (sx == 0).sum(axis=-1)
    n2 = float((sr == 0).sum())
    den = np.sqrt((n0 - n1) * (n0 - n2))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.einsum("...j,j->...", sx, sr) / den
    return np.where((den > 0) & ~np.isnan(x).any(axis=-1), out, np.nan)


def pearson_r2(x: ArrayLike, y: ArrayLike) -> float:
    """Squared Pearson correlation across models (paper 001 M1.6: ordinary vs soft values).

    NaN when fewer than 3 pairs are given (two points always give r^2 = 1) or either
    side is constant.

    Examples
    --------
    >>> round(pearson_r2([1, 2, 3, 4], [1, 3, 2, 4]), 4)
    0.64
    """
    r = pearson_r(x, y)
    return r * r


def pearson_r(x: ArrayLike, y: ArrayLike) -> float:
    """Pearson correlation (scipy) with the NaN rules of :func:`pearson_r2`.

    Examples
    --------
    >>> round(pearson_r([1, 2, 3, 4], [1, 3, 2, 4]), 4)
    0.8
    """
    from scipy import stats

    xa = as_1d_float(x, name="x")
    ya = as_1d_float(y, name="y")
    if xa.size != ya.size:
        raise MedauditError(f"x and y must have the same length; got {xa.size} and {ya.size}.")
    if xa.size < 3 or np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return math.nan
    return float(stats.pearsonr(xa, ya).statistic)


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True, slots=True, kw_only=True)
class AnnotationBootstrapResult(_ToDict):
    """Original metrics and ranks, and their annotation-bootstrap replicates.

    ``estimate[m]`` and ``rank[m]`` have one entry per model (order of ``models``) on
    the original annotations; ``replicates[m]`` is ``(n_resamples, n_models)``;
    ``spearman[m]`` / ``kendall[m]`` hold one correlation with the original ranking per
    replicate (NaN when the metric is undefined in the replicate — counted in
    ``n_degenerate`` — or a ranking is constant, counted in ``n_undefined``).
    """

    models: tuple[str, ...]
    metrics: tuple[str, ...]
    estimate: dict[str, NDArray[np.float64]]
    rank: dict[str, NDArray[np.float64]]
    n_items: int
    n_ratings: int
    n_pos: float  # positives of the original hard label
    n_pos_soft: float  # positive mass of the original soft label (sum of p)
    n_excluded_original: int  # items whose original hard label is an excluded tie
    n_resamples: int
    seed: int | None
    n_degenerate: dict[str, int]
    n_undefined: dict[str, int]  # "metric|method" -> replicates with an undefined correlation
    replicates: dict[str, NDArray[np.float64]]
    spearman: dict[str, NDArray[np.float64]]
    kendall: dict[str, NDArray[np.float64]]
    n_excluded: NDArray[np.intp]  # per replicate: items excluded by the tie rule
    options: dict[str, Any] = field(default_factory=dict)

    _array_fields = ("replicates", "spearman", "kendall", "n_excluded")

    def correlations(self, metric: str, method: str = "spearman") -> NDArray[np.float64]:
        method = check_option(method, ("spearman", "kendall"), name="method")
        check_option(metric, self.metrics, name="metric")
        return (self.spearman if method == "spearman" else self.kendall)[metric]

    def stability(self, metric: str, method: str = "spearman") -> float:
        """Mean correlation with the original ranking over the defined replicates (M1.7)."""
        c = self.correlations(metric, method)
        c = c[~np.isnan(c)]
        return float(c.mean()) if c.size else math.nan


# -------------------------------------------------------------------------- engine
@dataclass(frozen=True)
class _Model:
    order: NDArray[np.intp]
    score: NDArray[np.float64]
    starts: NDArray[np.intp]
    has_ties: bool

    def ranked(self, label_sorted: NDArray[np.float64]) -> K.Ranked:
        return K.Ranked(self.order, self.score, label_sorted, self.starts, self.has_ties)


def _evaluate(soft, hard, models: list[_Model], opts) -> list[NDArray[np.float64]]:
    """The four metrics, each ``(b, n_models)``, for label rows ``soft``/``hard`` (b, n)."""
    w = (~np.isnan(hard)).astype(np.float64)
    hard0 = np.nan_to_num(hard, nan=0.0)  # weight 0 anyway; 0 * NaN would be NaN
    soft0 = np.where(w > 0, soft, 0.0)
    out = [np.empty((w.shape[0], len(models))) for _ in range(4)]
    for j, m in enumerate(models):
        ws = np.take(w, m.order, axis=1)
        rh = m.ranked(np.take(hard0, m.order, axis=1))
        rs = m.ranked(np.take(soft0, m.order, axis=1))
        out[0][:, j] = K.auroc(ws, rh)
        out[1][:, j] = (K.average_precision_grouped(ws, rh) if opts["ap_ties"] == "pooled"
                        else K.average_precision_stable(ws, rh))
        grouped = opts["soft_ties"] == "grouped"
        out[2][:, j] = (K.soft_auroc_grouped(ws, rs, opts["soft_variant"]) if grouped
                        else K.soft_auroc_stable(ws, rs, opts["soft_variant"]))
        out[3][:, j] = (K.soft_ap_grouped(ws, rs, opts["soft_ap_variant"]) if grouped
                        else K.average_precision_stable(ws, rs, opts["soft_ap_variant"]))
    return out


def _check_inputs(ratings, item, scores):
    r = as_1d_float(ratings, name="ratings")
    it = np.asarray(item)
    if it.ndim != 1 or it.size != r.size:
        raise MedauditError(f"item must be 1-dimensional with one entry per rating ({r.size}); "
                            f"got shape {it.shape}.")
    if it.dtype.kind not in "iu" or (it.size and it.min() < 0):
        raise MedauditError("item must hold non-negative integer item indices (0..n_items-1).")
    if not isinstance(scores, Mapping) or not scores:
        raise MedauditError("scores must be a non-empty mapping of model -> score vector.")
    arrays = {str(k): as_1d_float(v, name=f"scores[{k!r}]") for k, v in scores.items()}
    sizes = {k: v.size for k, v in arrays.items()}
    if len(set(sizes.values())) != 1:
        raise MedauditError(f"every score vector needs one score per item; sizes {sizes}.")
    n_items = next(iter(sizes.values()))
    if it.size and it.max() >= n_items:
        raise MedauditError(f"item index {int(it.max())} has no score (there are {n_items} items).")
    k = np.bincount(it, minlength=n_items)
    if (k == 0).any():
        bad = np.flatnonzero(k == 0)
        raise MedauditError(f"{bad.size} item(s) have no ratings (indices {bad[:10].tolist()}); "
                            "every scored item needs at least one rating.")
    return r, it.astype(np.intp), arrays, k


def resampled_item_sums(
    ratings: NDArray[np.float64], count: NDArray[np.intp], *, n_resamples: int,
    rng: np.random.Generator, batch: int | None = None,
) -> Iterator[NDArray[np.float64]]:
    """Per-item sums of ratings resampled with replacement within each item, in batches.

    The draw contract shared by :func:`annotation_bootstrap` and
    :func:`medaudit.labels.label_stability`: ``ratings`` are grouped by item (item 0's
    ``count[0]`` ratings first, ...); each replicate draws one uniform per rating slot in
    row order (``rng.random``) and takes rating ``floor(u * k)`` of the slot's item, so
    the replicates do not depend on the batch size.

    Yields
    ------
    ndarray of shape (b, n_items)
        Sums of the resampled ratings, ``b`` replicates at a time (``n_resamples`` in all).
    """
    n_r, n_items = ratings.size, count.size
    offsets = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.intp)
    item = np.repeat(np.arange(n_items), count)
    slot_size = count[item].astype(np.float64) * (1.0 - 2.0**-52)  # floor(u * k) < k for all u < 1
    slot_offset = offsets[item]
    size = min(batch, n_resamples) if batch else max(1, min(n_resamples, _BATCH_ELEMENTS // max(n_r, 1)))
    u_buf = np.empty((size, n_r))
    d_buf = np.empty((size, n_r), dtype=np.intp)
    done = 0
    while done < n_resamples:
        b = min(size, n_resamples - done)
        u = rng.random(out=u_buf[:b])
        # the product cast straight into a reused integer buffer (truncation = floor, as u >= 0)
        draw = np.multiply(u, slot_size, out=d_buf[:b], casting="unsafe")
        draw += slot_offset
        draw += (np.arange(b, dtype=np.intp) * n_r)[:, None]
        # integer multinomial counts: how often each rating of its item was drawn
        counts = np.bincount(draw.ravel(), minlength=b * n_r).reshape(b, n_r)
        yield np.add.reduceat(counts * ratings, offsets, axis=1)
        done += b
        _progress.report("bootstrap", done, n_resamples)


def annotation_bootstrap(
    ratings: ArrayLike,
    item: ArrayLike,
    scores: Mapping[str, ArrayLike],
    *,
    scale: tuple[float, float] = (0.0, 1.0),
    hard_rule: str = "majority",
    threshold: float | None = None,
    threshold_rule: str = ">",
    tie: str = "negative",
    ap_ties: str = "pooled",
    soft_variant: str | None = None,
    soft_ties: str | None = None,
    soft_ap_variant: str | None = None,
    n_resamples: int = 1000,
    rng: RNGLike = None,
    batch: int | None = None,
) -> AnnotationBootstrapResult:
    """Annotation bootstrap of model rankings (paper 001, M1.7).

    Parameters
    ----------
    ratings : array-like of shape (n_ratings,)
        Every usable rating on the original scale (hedges already resolved with
        :func:`resolve_hedges`; excluded ones removed).
    item : array-like of int, shape (n_ratings,)
        The item (0..n_items-1) of each rating; every item needs at least one.
    scores : mapping of str to array-like of shape (n_items,)
        Each model's scores on the items (fixed across replicates).
    scale, hard_rule, threshold, threshold_rule, tie
        The label rules, as in :func:`labels_from_sums`.
    ap_ties : {"pooled", "individual"}, default="pooled"
        Ordinary AP convention (M1.4: scikit-learn pools tied scores).
    soft_variant, soft_ties
        As in :func:`~medaudit.stats.soft_roc_auc` (default: the strict form, stable ties).
    soft_ap_variant : {"known_self", "as_written"}, optional
        As ``variant`` of :func:`~medaudit.stats.soft_average_precision` (default known_self).
    n_resamples : int, default=1000
    rng : int, SeedSequence or Generator, optional
    batch : int, optional
        Replicates per batch (memory bound); the results do not depend on it.

    Returns
    -------
    AnnotationBootstrapResult

    Examples
    --------
    >>> r = annotation_bootstrap([1, 1, 0, 0, 1, 0, 1, 1, 1], [0, 0, 0, 1, 1, 1, 2, 2, 2],
    ...                          {"a": [0.9, 0.2, 0.5], "b": [0.1, 0.8, 0.7]},
    ...                          n_resamples=50, rng=0)
    >>> r.metrics[0], r.estimate["roc_auc"].tolist(), r.rank["roc_auc"].tolist()
    ('roc_auc', [1.0, 0.0], [1.0, 2.0])
    """
    n_res, batch = check_n_resamples(n_resamples), check_batch(batch)
    lo, hi = _scale(scale)
    r, it, arrays, k = _check_inputs(ratings, item, scores)
    out_of_scale = (r < lo) | (r > hi)
    if out_of_scale.any():
        raise MedauditError(f"ratings must lie on the scale [{lo}, {hi}]; index "
                            f"{int(np.flatnonzero(out_of_scale)[0])} holds "
                            f"{float(r[out_of_scale][0])!r}.")
    rules = dict(scale=(lo, hi), hard_rule=hard_rule, threshold=threshold,
                 threshold_rule=threshold_rule, tie=tie)
    to_labels = label_rule(**rules)  # validates the rule options up front
    ids = metric_ids(ap_ties=ap_ties, soft_variant=soft_variant, soft_ties=soft_ties,
                     soft_ap_variant=soft_ap_variant)
    opts = {"ap_ties": ap_ties, **soft_options(soft_variant, soft_ties, soft_ap_variant)}
    gen, rec = as_generator(rng)
    n_items = k.size
    # ratings grouped by item (stable: input order within an item)
    by_item = np.argsort(it, kind="stable")
    r, it = r[by_item], it[by_item]
    n_r = r.size
    names = list(arrays)
    models = []
    for name in names:
        rk = K.rank(np.zeros(n_items), arrays[name])
        models.append(_Model(rk.order, rk.score, rk.starts, rk.has_ties))

    sum0 = np.bincount(it, weights=r, minlength=n_items)
    soft0, hard0 = labels_from_sums(sum0[None, :], k[None, :], **rules)
    base = _evaluate(soft0, hard0, models, opts)
    estimate = {m: base[i][0] for i, m in enumerate(ids)}
    rank = {m: min_rank(estimate[m]) for m in ids}

    reps: list[list[NDArray[np.float64]]] = [[] for _ in ids]
    n_excl: list[NDArray[np.intp]] = []
    for sums in resampled_item_sums(r, k, n_resamples=n_res, rng=gen, batch=batch):
        soft, hard = to_labels(sums, k[None, :])
        n_excl.append(np.isnan(hard).sum(axis=1).astype(np.intp))
        for i, v in enumerate(_evaluate(soft, hard, models, opts)):
            reps[i].append(v)
    replicates = {m: np.concatenate(reps[i]) for i, m in enumerate(ids)}
    spear, kend, n_deg, n_und = {}, {}, {}, {}
    for m in ids:
        x = replicates[m]
        deg = np.isnan(x).any(axis=1)
        n_deg[m] = int(deg.sum())
        if np.isnan(estimate[m]).any():
            spear[m] = kend[m] = np.full(n_res, np.nan)
        else:
            spear[m] = _spearman_rows(x, estimate[m])
            kend[m] = _kendall_rows(x, estimate[m])
        for meth, c in (("spearman", spear[m]), ("kendall", kend[m])):
            n_und[f"{m}|{meth}"] = int((np.isnan(c) & ~deg).sum())
    return AnnotationBootstrapResult(
        models=tuple(names), metrics=ids, estimate=estimate, rank=rank, n_items=int(n_items),
        n_ratings=int(n_r), n_pos=float(np.nansum(hard0)),
        n_pos_soft=float(np.nansum(np.where(np.isnan(hard0), np.nan, soft0))),
        n_excluded_original=int(np.isnan(hard0).sum()), n_resamples=n_res, seed=rec["seed"],
        n_degenerate=n_deg, n_undefined=n_und, replicates=replicates, spearman=spear,
        kendall=kend, n_excluded=np.concatenate(n_excl),
        options={**rules, "scale": [lo, hi], **opts, "rng": rec,
                 "resampling": "annotations within item, with replacement",
                 "rank_ties": "min", "correlations": "spearman (average ranks), kendall tau-b"})


def rank_stability_test(
    soft_corr: ArrayLike, ordinary_corr: ArrayLike, *, ties: str = "exclude",
    confidence_level: float = 0.95,
) -> TestResult:
    """One-sided binomial test that soft metrics give more stable rankings (M1.8).

    ``k = #{b: soft_b > ordinary_b}`` out of ``n`` replicates, tested against 1/2
    with H1 "greater" (:func:`scipy.stats.binomtest`).  Replicates where either
    correlation is NaN are left out and counted (``details["n_undefined"]``).

    Parameters
    ----------
    soft_corr, ordinary_corr : array-like of shape (n_resamples,)
        Per-replicate correlations with the original ranking.
    ties : {"exclude", "failure"}, default="exclude"
        Equal correlations: left out (a sign test, ``n`` = untied replicates) or
        counted as failures (``n`` = all defined replicates).

    Examples
    --------
    >>> r = rank_stability_test([0.9, 1.0, 0.8, 1.0], [0.5, 1.0, 0.4, 0.2])
    >>> r.statistic, r.n, r.details["n_ties"], round(r.pvalue, 4)
    (3.0, 3, 1, 0.125)
    """
    ties = check_option(ties, ("exclude", "failure"), name="ties")
    level = check_fraction(confidence_level, name="confidence_level")
    s = np.asarray(soft_corr, dtype=np.float64).ravel()
    o = np.asarray(ordinary_corr, dtype=np.float64).ravel()
    if s.shape != o.shape:
        raise MedauditError(f"soft_corr and ordinary_corr must have the same length; got "
                            f"{s.size} and {o.size}.")
    ok = ~(np.isnan(s) | np.isnan(o))
    s, o = s[ok], o[ok]
    wins = int((s > o).sum())
    n_ties = int((s == o).sum())
    n = int(s.size - n_ties) if ties == "exclude" else int(s.size)
    details = {"n_ties": n_ties, "n_undefined": int((~ok).sum()), "ties": ties,
               "n_losses": int((s < o).sum()), "p_null": 0.5}
    if n == 0:
        return TestResult(method="binomial_exact", statistic=float(wins), pvalue=math.nan,
                          alternative="greater", n=0, confidence_level=level,
                          details={**details, "reason": "no untied, defined replicate"})
    res = binomial_test(wins, n, p=0.5, alternative="greater", confidence_level=level)
    return TestResult(method=res.method, statistic=res.statistic, pvalue=res.pvalue,
                      estimate=res.estimate, ci_low=res.ci_low, ci_high=res.ci_high,
                      confidence_level=level, alternative="greater", n=n, details=details)
