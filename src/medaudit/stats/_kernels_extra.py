"""Weighted kernels of the metrics added for the pROC / scikit-learn / statsmodels users.

Same contract as :mod:`medaudit.stats._kernels`: a replicate is a row of non-negative
weights (integer counts for the bootstrap, ones or case weights for a point estimate),
a batch is a ``(B, n)`` matrix, every row is evaluated with cumulative sums and nothing
is re-sorted.  The ROC-type kernels read weights in *rank order* (descending score,
:class:`~medaudit.stats._kernels.Ranked`); they take a callable ``cols(m)`` returning
the first ``m`` rank-ordered columns, so that a caller holding counts already in rank
order (drawn binned, :meth:`~medaudit.stats.designs.WeightPlan.batches` with
``columns=``) slices them for free, and one holding weights in item order gathers only
the columns it needs.  That is why a partial AUC over high specificities touches only
the top of the ranking.

Curve conventions.  The empirical ROC curve joins the points ``(FPR, TPR)`` after each
tie block (a block of equal scores is one diagonal segment), so its area is the
mid-rank AUROC.  A value read off the curve at a fixed FPR uses linear interpolation
inside a segment and, on a vertical segment, its *top* (the largest sensitivity at that
specificity), as pROC's ``coords(input = "specificity")`` and ``ci.se`` do.  Exact
comparisons use the relative guard ``1e-12`` of :mod:`~medaudit.stats._kernels`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from medaudit._validation import shown
from medaudit.stats import _kernels as K

_TOL = K._TOL
Cols = Callable[[int], NDArray]


# ------------------------------------------------------------------------- rankings
def dual(r: K.Ranked) -> K.Ranked:
    """The ranking of ``(1 - y, -s)``: ascending scores with the classes swapped.

    Its ROC curve is the original one reflected, ``(FPR', TPR') = (1 - Se, Sp)``, so an
    area "over a sensitivity range" is the ordinary area of the dual over an FPR range.
    Order within a tie block is irrelevant to the curve (blocks are pooled).
    """
    score = -r.score[::-1]
    new = np.empty(score.size, dtype=bool)
    new[:1] = True
    np.not_equal(score[1:], score[:-1], out=new[1:])
    return K.Ranked(np.ascontiguousarray(r.order[::-1]), score, 1.0 - r.label[::-1],
                    np.flatnonzero(new), r.has_ties)


def cols_from_items(w: NDArray, r: K.Ranked) -> Cols:
    """Rank-ordered columns gathered from weights in item order (only those asked for)."""
    w2 = np.atleast_2d(w)
    return lambda m: np.take(w2, r.order[:m], axis=1)


def cols_from_ranked(wr: NDArray) -> Cols:
    """Rank-ordered columns from a matrix that is already in rank order (a slice)."""
    w2 = np.atleast_2d(wr)
    return lambda m: w2[:, :m]


def class_totals(w: NDArray, y: NDArray) -> tuple[NDArray, NDArray]:
    """Per-row positive and negative weight (item order: ``y`` aligned with ``w``)."""
    w2 = np.atleast_2d(w)
    wp = K._dot(w2, y)
    return wp, K._dot(w2, 1.0 - y)


# ------------------------------------------------------------------------- vertices
def vertices(cols: Cols, r: K.Ranked, n_blocks: int | None = None
             ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Cumulative positive / negative weight after each of the first ``n_blocks`` tie
    blocks, with a leading zero column: two ``(B, L + 1)`` arrays ``(cp, cn)``.
    """
    n_all = r.starts.size
    L = n_all if n_blocks is None else int(n_blocks)
    m = r.score.size if L >= n_all else int(r.starts[L])
    w = cols(m)
    wp = w * r.label[:m]
    wn = w - wp
    if r.has_ties:
        st = r.starts[:L]
        wp = np.add.reduceat(wp, st, axis=1)
        wn = np.add.reduceat(wn, st, axis=1)
    cp = np.zeros((w.shape[0], L + 1))
    cn = np.zeros((w.shape[0], L + 1))
    np.cumsum(wp, axis=1, out=cp[:, 1:])
    np.cumsum(wn, axis=1, out=cn[:, 1:])
    return cp, cn


def _locate(cn: NDArray[np.float64], t: NDArray[np.float64]
            ) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """Per row, the last vertex with ``cn <= t`` (guarded) for each query column of ``t``.

    ``cn`` is non-decreasing along each row; shifting row ``i`` by ``i * span`` makes the
    flattened array non-decreasing, so one :func:`numpy.searchsorted` answers every
    (row, query) pair at once.  Returns the indices ``(B, G)`` and whether the query
    sits exactly on that vertex (within the guard).
    """
    b, m = cn.shape
    guard = _TOL * np.maximum(t, 1.0)
    span = float(np.ceil(max(float(cn.max(initial=0.0)), float(t.max(initial=0.0))) * 2.0 + 2.0))
    off = np.arange(b, dtype=np.float64)[:, None] * span
    flat = (cn + off).ravel()
    q = (t + guard + off).ravel()
    idx = np.searchsorted(flat, q, side="right").reshape(t.shape) - 1 - np.arange(b)[:, None] * m
    idx = np.clip(idx, 0, m - 1)
    at = np.take_along_axis(cn, idx, axis=1)
    return idx, (t - at) <= guard


def height_at(cp, cn, t, located=None) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Positive weight on the curve at negative weight ``t`` (``(B, G)`` queries).

    Top of a vertical segment when ``t`` is (within the guard) a vertex; otherwise
    linear interpolation inside the segment holding ``t``.  The second array flags
    queries beyond the last vertex given (a prefix too short; the caller widens it).
    ``located`` passes on a :func:`_locate` already done for these queries.
    """
    idx, exact = _locate(cn, t) if located is None else located
    last = cn.shape[1] - 1
    beyond = ~exact & (idx >= last)
    nxt = np.minimum(idx + 1, last)
    c0 = np.take_along_axis(cn, idx, axis=1)
    p0 = np.take_along_axis(cp, idx, axis=1)
    c1 = np.take_along_axis(cn, nxt, axis=1)
    p1 = np.take_along_axis(cp, nxt, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = p0 + (t - c0) * (p1 - p0) / (c1 - c0)
    return np.where(exact | beyond, p0, h), beyond


def area_to(cp, cn, t, *, tied: bool = True) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Area under the curve (in weight units) from negative weight 0 to ``t``, per query.

    ``tied=False`` promises one item per vertex (no tie blocks), so every segment is
    vertical or horizontal and its trapezoid is just ``dcn * cp``: one product fewer.
    """
    acc = np.zeros_like(cn)
    if tied:
        seg = np.diff(cn, axis=1) * (cp[:, 1:] + cp[:, :-1]) * 0.5
    else:
        seg = np.diff(cn, axis=1) * cp[:, 1:]
    np.cumsum(seg, axis=1, out=acc[:, 1:])
    idx, exact = located = _locate(cn, t)
    last = cn.shape[1] - 1
    beyond = ~exact & (idx >= last)
    h, _ = height_at(cp, cn, t, located)
    c0 = np.take_along_axis(cn, idx, axis=1)
    p0 = np.take_along_axis(cp, idx, axis=1)
    d = np.where(exact | beyond, 0.0, t - c0)
    return np.take_along_axis(acc, idx, axis=1) + d * (p0 + h) * 0.5, beyond


# ------------------------------------------------------------------------ prefixes
def _prefix_blocks(r: K.Ranked, f_max: float) -> int:
    """Tie blocks needed, with a wide margin, to reach a fraction ``f_max`` of the
    negative weight in a resample (the count of resampled negatives above a fixed rank
    is about binomial, so six standard deviations plus ten cases rarely fall short)."""
    neg = 1.0 - r.label
    n_neg = float(neg.sum())
    need = f_max * n_neg + 6.0 * np.sqrt(max(n_neg * f_max * (1.0 - f_max), 1.0)) + 10.0
    if need >= n_neg:
        return r.starts.size
    cum = np.cumsum(neg)[np.r_[r.starts[1:] - 1, neg.size - 1]]  # negatives after each block
    return int(min(np.searchsorted(cum, need, side="left") + 1, r.starts.size))


def _with_prefix(cols: Cols, r: K.Ranked, f_max: float, fn):
    """Run ``fn(cp, cn)`` on a prefix of the ranking; redo it on the whole ranking when
    some row needed more (the prefix only saves work, it never changes a value)."""
    L = _prefix_blocks(r, f_max)
    cp, cn = vertices(cols, r, L)
    out, beyond = fn(cp, cn)
    if L < r.starts.size and beyond.any():
        cp, cn = vertices(cols, r, None)
        out, _ = fn(cp, cn)
    return out


# ---------------------------------------------------------------------- partial AUC
def pauc_fpr(cols: Cols, r: K.Ranked, wp_tot, wn_tot, f_lo: float, f_hi: float
             ) -> NDArray[np.float64]:
    """Area under the ROC curve between FPR ``f_lo`` and ``f_hi``, per row (not rescaled)."""
    wp_tot = np.atleast_1d(wp_tot).astype(np.float64)
    wn_tot = np.atleast_1d(wn_tot).astype(np.float64)
    t = np.stack([f_lo * wn_tot, f_hi * wn_tot], axis=1)

    if f_lo == 0.0:  # the area from FPR 0 to 0 is 0: ask only for the upper bound
        t = t[:, 1:]

    def fn(cp, cn):
        a, beyond = area_to(cp, cn, t, tied=r.has_ties)
        return (a[:, -1] - a[:, 0] if a.shape[1] == 2 else a[:, 0]), beyond.any(axis=1)

    area = _with_prefix(cols, r, f_hi, fn)
    return K._safe_div(area, wp_tot * wn_tot)


def mcclish(area: NDArray[np.float64], lo: float, hi: float) -> NDArray[np.float64]:
    """McClish (1989) standardisation of a partial area over ``[lo, hi]`` (either focus).

    ``(1 + (A - min) / (max - min)) / 2`` with ``min = (hi - lo)(1 - (lo + hi)/2)``, the
    area under the chance diagonal, and ``max = hi - lo`` (pROC's
    ``partial.auc.correct = TRUE``; scikit-learn's ``roc_auc_score(max_fpr=)``).
    """
    amin = (hi - lo) * (1.0 - 0.5 * (lo + hi))
    amax = hi - lo
    return 0.5 * (1.0 + (area - amin) / (amax - amin))


def pauc(cols_fwd: Cols, cols_dual: Cols | None, r: K.Ranked, wp_tot, wn_tot, *, focus: str,
         lo: float, hi: float, correct: bool, r_dual: K.Ranked | None = None
         ) -> NDArray[np.float64]:
    """Partial AUC over a specificity (``focus="sp"``) or sensitivity range, per row.

    Specificity range ``[lo, hi]`` is the FPR range ``[1 - hi, 1 - lo]``; a sensitivity
    range is that FPR range on the :func:`dual` ranking, whose weights are read from
    ``cols_dual`` (rank order of the dual: ascending scores).
    """
    if focus == "sp":
        area = pauc_fpr(cols_fwd, r, wp_tot, wn_tot, 1.0 - hi, 1.0 - lo)
    else:
        area = pauc_fpr(cols_dual, dual(r) if r_dual is None else r_dual, wn_tot, wp_tot,
                        1.0 - hi, 1.0 - lo)
    return mcclish(area, lo, hi) if correct else area


def se_at_sp_grid(cols: Cols, r: K.Ranked, wp_tot, wn_tot, specificity: NDArray[np.float64]
                  ) -> NDArray[np.float64]:
    """Sensitivity read off the curve at each specificity of the grid: ``(B, G)``."""
    wp_tot = np.atleast_1d(wp_tot).astype(np.float64)
    wn_tot = np.atleast_1d(wn_tot).astype(np.float64)
    t = (1.0 - specificity)[None, :] * wn_tot[:, None]
    f_max = float(1.0 - specificity.min())

    def fn(cp, cn):
        h, beyond = height_at(cp, cn, t)
        return h, beyond

    h = _with_prefix(cols, r, f_max, fn)
    out = K._safe_div(h, np.broadcast_to(wp_tot[:, None], h.shape))
    # h is cumulated in rank order, the total in item order: under fractional weights the
    # whole can exceed its total by an ulp (Se 1.0000000000000002); a rate is at most 1
    np.minimum(out, 1.0, out=out)
    return np.where((wn_tot > 0)[:, None], out, np.nan)


@dataclass(frozen=True, slots=True)
class SplitOrder:
    """Negatives then positives, each in descending score order, for curves whose tie
    blocks never mix the classes (every segment vertical or horizontal).

    ``position`` maps an item to its column (negatives ``0..n_neg-1``, positives after);
    ``pos_above[j]`` counts the positives ranked above negative ``j`` (``n_pos`` appended).
    """

    position: NDArray[np.intp]
    n_neg: int
    pos_above: NDArray[np.intp]


def split_order(y: NDArray[np.float64], s: NDArray[np.float64]) -> SplitOrder | None:
    """:class:`SplitOrder` of a labelled score vector, or None when a positive ties a negative."""
    neg = np.flatnonzero(y == 0.0)
    pos = np.flatnonzero(y == 1.0)
    sn = np.sort(s[neg])
    sp_ = np.sort(s[pos])
    if np.intersect1d(sn, sp_).size:
        return None
    neg_desc = neg[K.argsort_stable(s[neg], descending=True)]
    pos_desc = pos[K.argsort_stable(s[pos], descending=True)]
    position = np.empty(y.size, dtype=np.intp)
    position[neg_desc] = np.arange(neg.size)
    position[pos_desc] = neg.size + np.arange(pos.size)
    # positives strictly above each negative (no score is shared across the classes)
    above = pos.size - np.searchsorted(sp_, s[neg_desc], side="right")
    return SplitOrder(position, int(neg.size), np.r_[above, pos.size].astype(np.intp))


def se_at_sp_split(counts: NDArray, so: SplitOrder, specificity: NDArray[np.float64]
                   ) -> NDArray[np.float64]:
    """:func:`se_at_sp_grid` for integer counts laid out by :class:`SplitOrder`.

    Without mixed ties the curve is a staircase: over the FPR-count interval
    ``(c - 1, c)`` it sits at the positives above the negative holding copy ``c``, and at
    an integer count it takes the top of the vertical step, i.e. copy ``c + 1``.  So the
    height at ``t`` is the positive count above the negative holding copy
    ``floor(t) + 1`` — one cumulative sum per class instead of a curve per row.
    """
    b = counts.shape[0]
    cn = np.cumsum(counts[:, :so.n_neg], axis=1)
    cp = np.zeros((b, counts.shape[1] - so.n_neg + 1), dtype=cn.dtype)
    np.cumsum(counts[:, so.n_neg:], axis=1, out=cp[:, 1:])
    wn = cn[:, -1].astype(np.float64) if so.n_neg else np.zeros(b)
    wp = cp[:, -1].astype(np.float64)
    t = (1.0 - specificity)[None, :] * wn[:, None]
    # integer counts and integer queries: the search runs on the counts' own dtype, with
    # no float copy of the (B, n_neg) matrix
    copy = (np.floor(t + _TOL * np.maximum(t, 1.0)) + 1.0).astype(cn.dtype)
    span = int(wn.max(initial=0.0)) + 2
    off = np.arange(b, dtype=cn.dtype)[:, None] * span
    j = np.searchsorted((cn + off).ravel(), (copy + off).ravel(), side="left").reshape(t.shape)
    j = np.minimum(j - np.arange(b)[:, None] * so.n_neg, so.n_neg)  # past the last: all positives
    h = np.take_along_axis(cp, so.pos_above[j], axis=1).astype(np.float64)
    out = K._safe_div(h, np.broadcast_to(wp[:, None], h.shape))
    return np.where((wn > 0)[:, None], out, np.nan)


# ------------------------------------------------------------------------ cut-points
CUTPOINT_METHODS = ("youden", "closest_topleft")


def cutpoint_weight(cost: float, prevalence: float) -> float:
    """pROC's ``r = (1 - prevalence) / (cost * prevalence)`` from ``best.weights``."""
    return (1.0 - prevalence) / (cost * prevalence)


def cutpoint(cols: Cols, r: K.Ranked, wp_tot, wn_tot, *, method: str, weight: float
             ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                        NDArray[np.intp]]:
    """Best threshold by ``method`` per row: ``(threshold, se, sp, vertex)``.

    Candidates are +inf (vertex 0: nothing positive) and every score observed in the row
    (a tie block with positive weight; rule ``s >= t``).  Youden maximises
    ``Se + weight * Sp``; closest-to-(0, 1) minimises ``(1 - Se)^2 + weight (1 - Sp)^2``.
    Ties within a relative ``1e-12`` go to the highest threshold, i.e. the highest
    specificity.
    """
    wp_tot = np.atleast_1d(wp_tot).astype(np.float64)
    wn_tot = np.atleast_1d(wn_tot).astype(np.float64)
    cp, cn = vertices(cols, r, None)
    # rates against each row's cumulated totals (scikit-learn's tps / tps[-1]), not the
    # class totals summed in item order: under fractional weights those differ by an ulp
    # and Se came out 1.0000000000000002; integer counts are exact either way
    se = K._safe_div(cp, np.broadcast_to(cp[:, -1:], cp.shape))
    sp = 1.0 - K._safe_div(cn, np.broadcast_to(cn[:, -1:], cn.shape))
    if method == "youden":
        crit = se + weight * sp
    else:
        crit = -((1.0 - se) ** 2 + weight * (1.0 - sp) ** 2)
    observed = np.ones_like(cp, dtype=bool)
    observed[:, 1:] = (np.diff(cp, axis=1) + np.diff(cn, axis=1)) > 0
    crit = np.where(observed, crit, -np.inf)
    best = np.max(crit, axis=1, keepdims=True)
    scale = np.maximum(np.abs(best), 1.0)
    k = np.argmax(crit >= best - _TOL * scale, axis=1)
    thr = np.r_[np.inf, r.score[r.starts]][k]
    rows = np.arange(k.size)
    ok = (wp_tot > 0) & (wn_tot > 0)
    nan = np.full(k.size, np.nan)
    return (np.where(ok, thr, nan), np.where(ok, se[rows, k], nan), np.where(ok, sp[rows, k], nan),
            k)


# --------------------------------------------------------------- at a threshold
def threshold_counts(w: NDArray, y: NDArray, s: NDArray, tau: float
                     ) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """``(tp, fp, fn, tn)`` weights per row for the rule ``s >= tau`` (item order).

    Each cell is its own weighted sum rather than a difference of sums: under fractional
    weights a difference leaves a rounding residue (an empty cell of 1e-15, or -4e-15),
    which turned an undefined NPV into 1.0; a sum of non-negative terms is 0 exactly when
    empty and never negative.  Integer counts give the same exact cells either way.
    """
    w2 = np.atleast_2d(w)
    m = (s >= tau).astype(np.float64)
    yn = 1.0 - y
    mn = 1.0 - m
    return K._dot(w2, y * m), K._dot(w2, yn * m), K._dot(w2, y * mn), K._dot(w2, yn * mn)


def rates(tp, fp, fn, tn, prevalence: float | None = None) -> dict[str, NDArray[np.float64]]:
    """Every rate at a threshold from the four cells (nan where a denominator is 0).

    With ``prevalence`` the predictive values are re-expressed by Bayes' rule at that
    prevalence from the sensitivity and specificity (the cells' own prevalence is not
    used for them).
    """
    sd = K._safe_div
    se, sp = sd(tp, tp + fn), sd(tn, tn + fp)
    out = {"sensitivity": se, "specificity": sp}
    if prevalence is None:
        out["ppv"], out["npv"] = sd(tp, tp + fp), sd(tn, tn + fn)
    else:
        pi = prevalence
        out["ppv"] = sd(se * pi, se * pi + (1.0 - sp) * (1.0 - pi))
        out["npv"] = sd(sp * (1.0 - pi), sp * (1.0 - pi) + (1.0 - se) * pi)
    # from the cells, tp (fp + tn) / (fp (tp + fn)), as scikit-learn's class_likelihood_ratios
    # (fewer roundings than Se / (1 - Sp)); undefined when the denominator rate is 0
    out["lr_positive"] = np.where(fp > 0, sd(tp * (fp + tn), fp * (tp + fn)), np.nan)
    out["lr_negative"] = np.where(tn > 0, sd(fn * (fp + tn), tn * (tp + fn)), np.nan)
    out["f1"] = sd(2.0 * tp, 2.0 * tp + fp + fn)
    out["accuracy"] = sd(tp + tn, tp + fp + fn + tn)
    out["balanced_accuracy"] = 0.5 * (se + sp)
    return out


# ---------------------------------------------------------------- binned calibration
CE_BINNINGS = ("auto", "equal_mass", "discrete")


def _item_at_copy(cum: NDArray, k: NDArray[np.float64]) -> NDArray[np.intp]:
    """Per row, the item holding copy ``k`` (1-based): the first ``j`` with ``cum[j] >= k``."""
    b, n = cum.shape
    span = float(cum[:, -1].max(initial=0)) + 2.0
    off = np.arange(b, dtype=np.float64)[:, None] * span
    j = np.searchsorted((cum + off).ravel(), (k + off).ravel(), side="left").reshape(k.shape)
    return np.clip(j - np.arange(b)[:, None] * n, 0, n - 1)


def equal_mass_bounds(c_asc: NDArray, p_asc: NDArray[np.float64], n_bins: int
                      ) -> NDArray[np.float64]:
    """Upper bin boundaries of the equal-mass bins of Kumar et al.'s ``get_equal_bins``, per row.

    The sorted values (each item repeated by its count) are split as
    ``numpy.array_split`` splits them (package version 0.1.4): ``min(n_bins, N)``
    consecutive parts, the first ``N mod parts`` of them one value longer; a boundary is
    the midpoint between the last value of a part and the first of the next; the
    missing parts when ``N < n_bins`` give boundary 1.0 (an empty bin).  A value equal
    to a boundary belongs to the lower bin.
    """
    cum = np.cumsum(c_asc, axis=1)
    tot = cum[:, -1].astype(np.float64)
    parts = np.minimum(float(n_bins), tot)
    q = np.floor(tot / np.maximum(parts, 1.0))
    rem = tot - q * parts
    i = np.arange(1, n_bins, dtype=np.float64)[None, :]
    k_last = i * q[:, None] + np.minimum(i, rem[:, None])  # last copy of part i - 1
    valid = i < parts[:, None]
    k_last = np.where(valid, k_last, 1.0)
    a = p_asc[_item_at_copy(cum, k_last)]
    b = p_asc[_item_at_copy(cum, k_last + 1.0)]
    return np.where(valid, (a + b) / 2.0, 1.0)


def discrete_bounds(p_asc: NDArray[np.float64]) -> NDArray[np.float64]:
    """Kumar et al.'s ``get_discrete_bins``: midpoints between consecutive distinct values."""
    u = np.unique(p_asc)
    return (u[:-1] + u[1:]) / 2.0


def is_discrete(p: NDArray[np.float64]) -> bool:
    """Kumar et al.'s heuristic: fewer than n / 4 distinct values."""
    return np.unique(p).size < p.size / 4.0


def binned_calibration(c_asc: NDArray, p_asc: NDArray[np.float64], y_asc: NDArray[np.float64],
                       bounds: NDArray[np.float64], kind: str) -> NDArray[np.float64]:
    r"""Binned calibration error per row from upper boundaries ``bounds`` (``(B, m)`` or ``(m,)``).

    ``kind="l1"``: :math:`\sum_b |\sum_{i \in b} (p_i - y_i)| / N`, the ECE.
    ``kind="debiased_l2"``: :math:`\sqrt{\max(0, \sum_b \frac{n_b}{N}[(\bar p_b -
    \bar y_b)^2 - \bar y_b(1 - \bar y_b)/(n_b - 1)])}` with bins of fewer than two
    values contributing 0 (Kumar et al. 2019, ``unbiased_l2_ce``).
    """
    c2 = np.atleast_2d(c_asc)
    bsz = c2.shape[0]
    bnd = np.broadcast_to(np.atleast_2d(bounds), (bsz, np.shape(bounds)[-1]))
    ends = np.concatenate([np.searchsorted(p_asc, bnd, side="right"),
                           np.full((bsz, 1), p_asc.size)], axis=1)
    ends = np.maximum.accumulate(ends, axis=1)

    def binsum(v):
        acc = np.zeros((bsz, p_asc.size + 1))
        np.cumsum(v, axis=1, out=acc[:, 1:])
        return np.diff(np.take_along_axis(acc, ends, axis=1), axis=1, prepend=0.0)

    nb = binsum(c2)
    sp = binsum(c2 * p_asc)
    sy = binsum(c2 * y_asc)
    tot = nb.sum(axis=1)
    if kind == "l1":
        return K._safe_div(np.abs(sp - sy).sum(axis=1), tot)
    with np.errstate(divide="ignore", invalid="ignore"):
        ybar = sy / nb
        term = (nb / tot[:, None]) * ((sp / nb - ybar) ** 2 - ybar * (1.0 - ybar) / (nb - 1.0))
    sq = np.where(nb >= 2, term, 0.0).sum(axis=1)
    return np.where(tot > 0, np.sqrt(np.maximum(sq, 0.0)), np.nan)


def calibration_bounds(c_asc, p_asc, *, binning: str, n_bins: int, full_p):
    """Boundaries of the named binning for each row (``auto`` decided on the full sample)."""
    if binning == "auto":
        binning = "discrete" if is_discrete(full_p) else "equal_mass"
    if binning == "discrete":
        return discrete_bounds(full_p)
    return equal_mass_bounds(c_asc, p_asc, n_bins)


# ------------------------------------------------------------------------ engine glue
RATE_METRICS = ("ppv", "npv", "lr_positive", "lr_negative", "f1", "accuracy", "balanced_accuracy")


def parse_range(value, *, name: str) -> tuple[float, float]:
    """``"0.9:1"`` or ``(0.9, 1.0)`` -> ``(0.9, 1.0)``, checked to lie in [0, 1], lo < hi."""
    from medaudit.exceptions import MedauditError

    try:
        if isinstance(value, str):
            parts = value.split(":")
            if len(parts) != 2:
                raise ValueError
            lo, hi = float(parts[0]), float(parts[1])
        else:
            lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise MedauditError(f"{name} must be a range 'lo:hi' or (lo, hi) inside [0, 1], e.g. "
                            f"'0.9:1'; got {value!r}.") from None
    lo, hi = min(lo, hi), max(lo, hi)
    if not (0.0 <= lo < hi <= 1.0) or not np.isfinite([lo, hi]).all():
        raise MedauditError(f"{name} must be a range 'lo:hi' with 0 <= lo < hi <= 1; got {value!r}.")
    return lo, hi


def pauc_options(o) -> tuple[str, float, float, bool]:
    """(focus, lo, hi, correct) from a ``pauc`` metric's options."""
    from medaudit.exceptions import MedauditError

    given = [k for k in ("sp", "se") if k in o]
    if len(given) != 1:
        raise MedauditError("metric 'pauc' needs exactly one range, sp='lo:hi' (specificity) or "
                            "se='lo:hi' (sensitivity), e.g. ('pauc', {'sp': '0.9:1'}).")
    lo, hi = parse_range(o[given[0]], name=f"pauc {given[0]}")
    correct = o.get("correct", False)
    if not isinstance(correct, (bool, np.bool_)):
        raise MedauditError(f"pauc correct must be True or False (McClish); got {correct!r}.")
    return given[0], lo, hi, bool(correct)


def _engine_pauc(p, w, wr, wc, o, c):
    focus, lo, hi, correct = pauc_options(o)
    wp_tot, wn_tot = class_totals(w, p.y)
    r = p.ranked
    fwd = cols_from_items(w, r)
    dl = cols_from_items(w, dual(r)) if focus == "se" else None
    return pauc(fwd, dl, r, wp_tot, wn_tot, focus=focus, lo=lo, hi=hi, correct=correct)


def _engine_rate(name):
    def kernel(p, w, wr, wc, o, c):
        tau = float(o["threshold"])
        key = ("peers_counts", tau)
        if key not in c:
            c[key] = threshold_counts(w, p.y, p.s, tau)
        return rates(*c[key], prevalence=o.get("prevalence"))[name]
    return kernel


def _engine_cutpoint(part):
    def kernel(p, w, wr, wc, o, c):
        method = o.get("method", "youden")
        weight = cutpoint_weight(float(o.get("cost", 1.0)), float(o.get("prevalence", 0.5)))
        key = ("peers_cut", method, weight)
        if key not in c:
            wp_tot, wn_tot = class_totals(w, p.y)
            c[key] = cutpoint(cols_from_items(w, p.ranked), p.ranked, wp_tot, wn_tot,
                              method=method, weight=weight)
        return c[key][part]
    return kernel


def _engine_ce(p, wr, kind, binning, n_bins):
    c_asc = np.atleast_2d(wr())[:, ::-1]  # ascending probability: the rank order reversed
    p_asc, y_asc = p.ranked.score[::-1], p.ranked.label[::-1]
    bounds = calibration_bounds(c_asc, p_asc, binning=binning, n_bins=n_bins, full_p=p.s)
    return binned_calibration(c_asc, p_asc, y_asc, bounds, kind)


#: name -> (needs probabilities, needs confidence sort, allowed options, kernel), as in
#: ``_metricspec.REGISTRY``; merged there.
REGISTRY_EXTRA = {
    "pauc": (False, False, ("sp", "se", "correct"), _engine_pauc),
    **{m: (False, False, ("threshold", "prevalence") if m in ("ppv", "npv") else ("threshold",),
           _engine_rate(m)) for m in RATE_METRICS},
    "cutpoint_threshold": (False, False, ("method", "cost", "prevalence"), _engine_cutpoint(0)),
    "cutpoint_sensitivity": (False, False, ("method", "cost", "prevalence"), _engine_cutpoint(1)),
    "cutpoint_specificity": (False, False, ("method", "cost", "prevalence"), _engine_cutpoint(2)),
}
REGISTRY_EXTRA.update({
    "ece_equal_mass": (True, False, ("n_bins",), lambda p, w, wr, wc, o, c: _engine_ce(
        p, wr, "l1", "equal_mass", int(o.get("n_bins", 10)))),
    "debiased_l2_ce": (True, False, ("n_bins", "binning"), lambda p, w, wr, wc, o, c: _engine_ce(
        p, wr, "debiased_l2", o.get("binning", "auto"), int(o.get("n_bins", 15)))),
})
REQUIRED_EXTRA = {m: ("threshold",) for m in RATE_METRICS}


def check_values(spec) -> None:
    """Validate the options of a metric of :data:`REGISTRY_EXTRA` (called at parse time)."""
    from medaudit._validation import check_fraction, check_option
    from medaudit.exceptions import MedauditError

    o = spec.options
    if spec.name == "pauc":
        pauc_options(o)
    if "binning" in o:
        check_option(o["binning"], CE_BINNINGS, name=f"{spec.name} binning")
    if spec.name.startswith("cutpoint_"):
        check_option(o.get("method", "youden"), CUTPOINT_METHODS, name=f"{spec.name} method")
        check_fraction(o.get("prevalence", 0.5), name=f"{spec.name} prevalence")
        cost = o.get("cost", 1.0)
        if not (isinstance(cost, (int, float, np.number)) and np.isfinite(cost) and cost > 0):
            raise MedauditError(f"{spec.name} cost must be a positive number; got {cost!r}.")
    if "threshold" in o:
        check_threshold(spec)


def check_threshold(spec) -> None:
    """A metric's ``threshold`` option: a number or +inf (the rule ``s >= threshold``; NaN
    would flag no image and -inf every image, so neither is a threshold)."""
    from medaudit.exceptions import MedauditError

    o = spec.options
    if isinstance(o["threshold"], (bool, np.bool_)):  # (text: metric ids spell +inf "inf")
        raise MedauditError(f"{spec.name} threshold must be a number; got {shown(o['threshold'])}.")
    try:
        tau = float(o["threshold"])
    except (TypeError, ValueError):
        raise MedauditError(f"{spec.name} threshold must be a number; got "
                            f"{shown(o['threshold'])}.") from None
    if np.isnan(tau) or tau == -np.inf:
        raise MedauditError(f"{spec.name} threshold must be a number or +inf; got {tau!r}.")
