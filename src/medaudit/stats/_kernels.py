"""Weighted metric kernels: the one implementation behind point metrics and every bootstrap.

A sample is sorted once (:class:`Ranked`).  A replicate is a row of non-negative
integer weights (multinomial counts: how often each item was drawn), so a whole
batch of replicates is a ``(B, n)`` matrix.  Every kernel evaluates all rows with
cumulative sums in O(n) per row and never re-sorts.  Point estimates use a single
row of ones, so the full-sample value and the replicates share one code path.

Duplicate semantics.  A weight ``w`` means ``w`` identical copies of the item,
placed next to each other in the sorted order.  Copies of one item are tied, so
"grouped" (tie-pooling) metrics treat them as one block, and "stable"
(individual-rank) metrics give them consecutive ranks; their per-copy terms are
summed by :func:`copies_sum`, which is why resampling weights are integer counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

_TOL = 1e-12  # relative guard for ">= 0.95"-type comparisons of exact count ratios


@dataclass(frozen=True, slots=True)
class Ranked:
    """One score vector sorted once, descending with a stable tie order (input order)."""

    order: NDArray[np.intp]  # sorted position -> original position
    score: NDArray[np.float64]  # scores in sorted order (descending)
    label: NDArray[np.float64]  # labels (hard 0/1 or soft p) in sorted order
    starts: NDArray[np.intp]  # first sorted position of each tie block
    has_ties: bool


def order_desc(s: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Descending order of ``s`` with ties in input order, and the sorted scores.

    Untied data (the common case for continuous scores) takes numpy's fastest sort; only
    when ties are found is the order redone with a stable sort, so that tied items keep
    their input order as every "stable" convention here promises.
    """
    order = np.argsort(s)[::-1]
    ss = s[order]
    if ss.size > 1 and np.any(ss[1:] == ss[:-1]):
        order = np.argsort(-s, kind="stable")
        ss = s[order]
    return np.ascontiguousarray(order), ss


def rank(y: NDArray[np.float64], s: NDArray[np.float64]) -> Ranked:
    """Sort ``s`` descending (stable: ties keep input order) and find the tie blocks."""
    order, ss = order_desc(s)
    new_block = np.empty(ss.size, dtype=bool)
    new_block[:1] = True
    np.not_equal(ss[1:], ss[:-1], out=new_block[1:])
    starts = np.flatnonzero(new_block)
    return Ranked(order, ss, y[order], starts, starts.size < ss.size)


def _blocks(x: NDArray[np.float64], r: Ranked) -> NDArray[np.float64]:
    return np.add.reduceat(x, r.starts, axis=-1) if r.has_ties else x


def _safe_div(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return np.where(den > 0, out, np.nan)


# --------------------------------------------------------------------------- ranking
def auroc(w: NDArray[np.float64], r: Ranked) -> NDArray[np.float64]:
    """Mid-rank AUROC (ties count 1/2) for each weight row; works for soft labels (grouped)."""
    wp = w * r.label
    bp = _blocks(wp, r)
    bn = _blocks(w, r) - bp
    cum_p = np.cumsum(bp, axis=-1)
    num = _rowsum(bn * (cum_p - 0.5 * bp))
    return _safe_div(num, cum_p[..., -1] * _rowsum(bn))


@dataclass(frozen=True, slots=True)
class Placement:
    """Static index sets for the AUROC of hard labels without sorting the weights.

    ``neg_order`` lists the negatives by ascending score and ``pos`` the positives
    by ascending score; for each positive, ``lo``/``hi`` count the negatives scored
    strictly below / at most its score.  Only those counts matter, so the sorted
    negatives fall into segments cut at every distinct ``lo``/``hi`` (``starts``,
    ending with ``n_neg``), and ``lo_col``/``hi_col`` locate each positive's cut.
    ``bins`` maps every item to a column of the binned counts :func:`auroc_binned`
    reads: negatives to their segment, positives to a column each, after the segments.
    """

    neg_order: NDArray[np.intp]
    pos: NDArray[np.intp]
    lo: NDArray[np.intp]
    hi: NDArray[np.intp]
    ties: bool
    starts: NDArray[np.intp]
    lo_col: NDArray[np.intp]
    hi_col: NDArray[np.intp]
    bins: NDArray[np.intp]


def placement(y: NDArray[np.float64], s: NDArray[np.float64]) -> Placement:
    """Prepare :func:`auroc_placement` and :func:`auroc_binned` (one sort per class)."""
    neg = np.flatnonzero(y == 0.0)
    neg_order = neg[np.argsort(s[neg])]  # order within ties is irrelevant here
    sn = s[neg_order]
    pos = np.flatnonzero(y == 1.0)
    pos = pos[np.argsort(s[pos], kind="stable")]  # in score order the gathers read in order
    lo = np.searchsorted(sn, s[pos], side="left")
    hi = np.searchsorted(sn, s[pos], side="right")
    starts = np.unique(np.concatenate([[0], lo, hi, [neg.size]])).astype(np.intp)
    n_seg = starts.size - 1
    bins = np.empty(y.size, dtype=np.intp)
    bins[neg_order] = np.searchsorted(starts, np.arange(neg.size), side="right") - 1
    bins[pos] = n_seg + np.arange(pos.size)
    return Placement(neg_order, pos, lo, hi, bool(np.any(lo != hi)), starts,
                     np.searchsorted(starts, lo), np.searchsorted(starts, hi), bins)


def _auroc_from_below(wp, c, lo, hi, ties: bool) -> NDArray[np.float64]:
    """``sum_i w_i (N_below(i) + N_tied(i)/2) / (W_P W_N)`` from the positives' weights
    ``wp`` and cumulative negative weights ``c`` (last column: W_N) read at ``lo``/``hi``.

    With integer counts the numerator is exact integer arithmetic (whatever the
    summation order) until the final division.
    """
    below2 = np.take(c, lo, axis=1)  # twice the negative weight below (ties count 1/2)
    below2 += np.take(c, hi, axis=1) if ties else below2
    num = np.einsum("ij,ij->i", wp, below2) * 0.5
    return _safe_div(num, _rowsum(wp) * c[:, -1].astype(np.float64))


def auroc_placement(w: NDArray[np.float64], pl: Placement) -> NDArray[np.float64]:
    """Mid-rank AUROC of hard labels on weight rows, touching each column about once.

    The negative weight below each positive is read from one cumulative sum over
    the negatives (weights in original item order).
    """
    w2 = np.atleast_2d(w)
    wn = np.take(w2, pl.neg_order, axis=1)
    c = np.empty((w2.shape[0], wn.shape[1] + 1), dtype=wn.dtype)
    c[:, 0] = 0
    np.cumsum(wn, axis=1, out=c[:, 1:])
    out = _auroc_from_below(np.take(w2, pl.pos, axis=1), c, pl.lo, pl.hi, pl.ties)
    return out[0] if np.ndim(w) == 1 else out


def auroc_binned(counts: NDArray[np.intp], pl: Placement) -> NDArray[np.float64]:
    """:func:`auroc_placement` on counts binned by ``pl.bins`` (``WeightPlan.batches``
    with ``columns=pl.bins``): per row, the negative count of each segment, then each
    positive's count.  A cumulative sum over the few segment totals replaces the one
    over all negatives and no column is gathered, so the work per replicate is
    O(n_pos) instead of O(n).
    """
    n_seg = pl.starts.size - 1
    c = np.zeros((counts.shape[0], n_seg + 1), dtype=counts.dtype)
    np.cumsum(counts[:, :n_seg], axis=1, out=c[:, 1:])  # c[:, j]: negatives below starts[j]
    return _auroc_from_below(counts[:, n_seg:], c, pl.lo_col, pl.hi_col, pl.ties)


def soft_auroc_stable(
    w: NDArray[np.float64], r: Ranked, variant: str
) -> NDArray[np.float64]:
    """Soft AUROC with individual ranks (paper 001 eq. 4) in the named variant.

    For an item with soft label p, count w and positive mass C ranked strictly
    before it, its copies contribute (1-p)(wC + p*w(w+1)/2) (inclusive),
    (1-p)(wC + p*w(w-1)/2) (strict) or their mean (trapezoid).
    """
    p = r.label
    wp = w * p
    cum_before = np.cumsum(wp, axis=-1) - wp
    self_term = {"inclusive": w * (w + 1.0), "strict": w * (w - 1.0), "trapezoid": w * w}[variant]
    num = _rowsum((1.0 - p) * (w * cum_before + 0.5 * p * self_term))
    n_pos = _rowsum(wp)
    return _safe_div(num, n_pos * (_rowsum(w) - n_pos))


def copies_sum(a: NDArray[np.float64], b: NDArray[np.float64], k: NDArray[np.float64],
               w: NDArray[np.float64]) -> NDArray[np.float64]:
    """Elementwise ``sum_{j=1..w} (a + j b) / (k + j)`` for integer counts ``w >= 0``.

    The sum over an item's copies is accumulated term by term: the closed form in
    harmonic numbers, ``w b + (a - b k)(H[k+w] - H[k])``, cancels catastrophically
    when ``a`` is small and ``k`` large (an AP of 1/1000 came out with relative
    error 3e-10).  Most counts are 0 or 1, so after the first term only the few
    entries drawn twice or more are visited again (gathered once, sparsely).
    """
    b_full = np.broadcast_to(b, w.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (a + b_full) / (k + 1.0)
    # C order whatever the inputs' layout: the flat indices below are C-order positions,
    # and ravel() of an F-ordered array would be a copy, silently dropping the extra terms
    out = np.ascontiguousarray(np.where(w >= 1, out, 0.0))
    wf = np.ascontiguousarray(w).ravel()
    idx = np.flatnonzero(wf >= 2)
    if idx.size:
        a_s = np.ascontiguousarray(a).ravel().take(idx)
        k_s = np.ascontiguousarray(k).ravel().take(idx)
        w_s = wf.take(idx)
        b_s = (b.take(idx % b.shape[-1]) if np.ndim(b) == 1
               else np.ascontiguousarray(b_full).ravel().take(idx))
        # order by count, descending: the entries still needing term j form a prefix
        order = np.argsort(-w_s, kind="stable")
        a_s, b_s, k_s, w_s, idx = a_s[order], b_s[order], k_s[order], w_s[order], idx[order]
        extra = np.zeros(idx.size)
        j = 2
        n_live = idx.size
        while n_live:
            extra[:n_live] += (a_s[:n_live] + j * b_s[:n_live]) / (k_s[:n_live] + j)
            j += 1
            n_live = int(np.count_nonzero(w_s[:n_live] >= j))
        flat = out.reshape(-1)  # a view: out is C-contiguous
        flat[idx] += extra
    return out


def average_precision_stable(w: NDArray[np.float64], r: Ranked) -> NDArray[np.float64]:
    """Non-interpolated AP with individual ranks; soft labels allowed (paper 001 eq. 5).

    An item with label p, count w, K items and C positive mass ranked before it
    contributes ``p * sum_{j=1..w} (C + j p) / (K + j)`` (precision at each copy).
    """
    p = r.label
    wp = w * p
    k_before = np.cumsum(w, axis=-1) - w
    c_before = np.cumsum(wp, axis=-1) - wp
    num = _rowsum(p * copies_sum(c_before, p, k_before, w))
    return _safe_div(num, _rowsum(wp))


def average_precision_grouped(w: NDArray[np.float64], r: Ranked) -> NDArray[np.float64]:
    """AP pooling tied scores into one threshold (scikit-learn's convention)."""
    bp = _blocks(w * r.label, r)
    bw = _blocks(w, r)
    cum_p = np.cumsum(bp, axis=-1)
    cum_w = np.cumsum(bw, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(cum_w > 0, cum_p / cum_w, 0.0)
    return _safe_div(_rowsum(bp * prec), cum_p[..., -1])


# ------------------------------------------------------------------ operating points
def _roc_points(w: NDArray[np.float64], r: Ranked):
    bp = _blocks(w * r.label, r)
    bw = _blocks(w, r)
    cum_p = np.cumsum(bp, axis=-1)
    cum_n = np.cumsum(bw - bp, axis=-1)
    n_pos = cum_p[..., -1:]
    n_neg = cum_n[..., -1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        se = cum_p / n_pos
        sp = 1.0 - cum_n / n_neg
    return bp, bw, cum_p, cum_n, se, sp, n_pos[..., 0], n_neg[..., 0]


def se_at_sp(w: NDArray[np.float64], r: Ranked, x: float, points=None) -> NDArray[np.float64]:
    """Largest Se over thresholds t (observed scores and +inf) with Sp(t) >= x."""
    *_, se, sp, n_pos, n_neg = points if points is not None else _roc_points(w, r)
    best = np.max(np.where(sp >= x - _TOL, se, 0.0), axis=-1)
    return np.where((n_pos > 0) & (n_neg > 0), best, np.nan)


def sp_at_se(w: NDArray[np.float64], r: Ranked, x: float, points=None) -> NDArray[np.float64]:
    """Largest Sp over thresholds t (observed scores and +inf) with Se(t) >= x."""
    *_, se, sp, n_pos, n_neg = points if points is not None else _roc_points(w, r)
    inf_ok = 0.0 >= x - _TOL  # t = +inf has Se = 0, Sp = 1
    best = np.max(np.where(se >= x - _TOL, sp, -np.inf), axis=-1)
    if inf_ok:
        best = np.maximum(best, 1.0)
    return np.where((n_pos > 0) & (n_neg > 0), best, np.nan)


def _block_scores(r: Ranked) -> NDArray[np.float64]:
    return r.score[r.starts]


def tau_sensitivity(w: NDArray[np.float64], r: Ranked, x: float) -> NDArray[np.float64]:
    """Highest observed score t with Se(t) >= x (paper 000 M0.8, primary rule)."""
    _, bw, _, _, se, _, n_pos, n_neg = _roc_points(w, r)
    ok = (se >= x - _TOL) & (bw > 0)  # only thresholds observed in this (re)sample
    first = np.argmax(ok, axis=-1)
    tau = _block_scores(r)[first]
    return np.where((n_pos > 0) & (n_neg > 0) & ok.any(axis=-1), tau, np.nan)


def tau_specificity(w: NDArray[np.float64], r: Ranked, x: float) -> NDArray[np.float64]:
    """Threshold maximising Se subject to Sp(t) >= x; ties -> higher Sp, then highest t.

    Only thresholds observed in the (re)sample qualify; +inf when none is feasible.
    """
    _, bw, cum_p, _, _, sp, n_pos, n_neg = _roc_points(w, r)
    feasible = (sp >= x - _TOL) & (bw > 0)
    best_cum = np.max(np.where(feasible, cum_p, -1.0), axis=-1, keepdims=True)
    cand = feasible & (cum_p == best_cum)
    first = np.argmax(cand, axis=-1)
    tau = np.where(cand.any(axis=-1), _block_scores(r)[first], np.inf)
    return np.where((n_pos > 0) & (n_neg > 0), tau, np.nan)


def rates_at(
    w: NDArray[np.float64], r: Ranked, tau: NDArray[np.float64] | float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Se and Sp at threshold ``tau`` (one per weight row) with the rule s >= tau."""
    w2 = np.atleast_2d(w)
    tau_arr = np.broadcast_to(np.asarray(tau, dtype=np.float64), w2.shape[:1])
    asc = r.score[::-1]
    # number of items with s >= tau; NaN thresholds select nothing and give NaN below
    m = r.score.size - np.searchsorted(asc, np.nan_to_num(tau_arr, nan=np.inf), side="left")
    wp = w2 * r.label
    cum_p = np.concatenate([np.zeros((w2.shape[0], 1)), np.cumsum(wp, axis=-1)], axis=-1)
    cum_w = np.concatenate([np.zeros((w2.shape[0], 1)), np.cumsum(w2, axis=-1)], axis=-1)
    tp = np.take_along_axis(cum_p, m[:, None], axis=-1)[:, 0]
    pp = np.take_along_axis(cum_w, m[:, None], axis=-1)[:, 0]
    n_pos, n_all = cum_p[:, -1], cum_w[:, -1]
    se = _safe_div(tp, n_pos)
    sp = _safe_div((n_all - n_pos) - (pp - tp), n_all - n_pos)
    bad = np.isnan(tau_arr)
    se, sp = np.where(bad, np.nan, se), np.where(bad, np.nan, sp)
    if np.ndim(w) == 1:
        return se[0], sp[0]
    return se, sp


# --------------------------------------------------------------------- calibration
def _rowsum(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Sum over the last axis with a rounding independent of the batch shape and memory layout.

    ``np.sum`` picks its summation order from the array layout (fancy indexing can
    return Fortran-ordered blocks), so the same replicate could differ in the last
    bit between batch sizes; einsum sums each row the same way whatever the shape.
    """
    return np.einsum("...j->...", np.ascontiguousarray(x))


def _dot(w: NDArray[np.float64], v: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise dot product whose rounding does not depend on the number of rows.

    BLAS ``w @ v`` blocks rows differently for different batch shapes, which would
    make replicate values depend (in the last bit) on the memory batch size.
    """
    return np.einsum("...j,j->...", w, v)


def class_sums(
    w: NDArray[np.float64], y: NDArray[np.float64], v: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return (sum_P w v, sum_N w v, W_P, W_N) for each weight row (original order)."""
    return _dot(w, y * v), _dot(w, (1.0 - y) * v), _dot(w, y), _dot(w, 1.0 - y)


def mean_loss(
    w: NDArray[np.float64], y: NDArray[np.float64], loss: NDArray[np.float64],
    prevalence: float | None,
) -> NDArray[np.float64]:
    """Weighted mean of a per-item loss; class-weighted to prevalence pi when given."""
    sp_, sn_, wp, wn = class_sums(w, y, loss)
    if prevalence is None:
        return _safe_div(sp_ + sn_, wp + wn)
    out = prevalence * _safe_div(sp_, wp) + (1.0 - prevalence) * _safe_div(sn_, wn)
    return out


def bin_index(prob: NDArray[np.float64], n_bins: int) -> NDArray[np.intp]:
    """Equal-width bin of each probability; the last bin includes 1.0."""
    return np.minimum(np.floor(prob * n_bins).astype(np.intp), n_bins - 1)


def ece(
    w: NDArray[np.float64], r: Ranked, n_bins: int, prevalence: float | None
) -> NDArray[np.float64]:
    """Expected calibration error with equal-width bins (empty bins contribute 0).

    Bins are contiguous in the descending score order, so the per-bin sums are one
    ``reduceat`` over the sorted weights.
    """
    y, s = r.label, r.score
    b = bin_index(s, n_bins)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    d = s - y
    wd_p = np.add.reduceat(w * (y * d), starts, axis=-1)
    wd_n = np.add.reduceat(w * ((1.0 - y) * d), starts, axis=-1)
    wp = _dot(w, y)
    wn = _rowsum(w) - wp
    if prevalence is None:
        tot = wp + wn
        return _safe_div(_rowsum(np.abs(wd_p + wd_n)), tot)
    cp = _safe_div(np.full_like(wp, prevalence), wp)
    cn = _safe_div(np.full_like(wn, 1.0 - prevalence), wn)
    return _rowsum(np.abs(cp[..., None] * wd_p + cn[..., None] * wd_n))


# ------------------------------------------------------------------------ selective
@dataclass(frozen=True, slots=True)
class ConfidenceRanked:
    """Items sorted once by confidence max(s, 1-s), descending and stable."""

    order: NDArray[np.intp]
    error: NDArray[np.float64]  # 1{ 1{s >= 0.5} != y } in that order


def rank_confidence(y: NDArray[np.float64], s: NDArray[np.float64]) -> ConfidenceRanked:
    """Sort by confidence (stable: ties keep input order) and record each item's error."""
    conf = np.maximum(s, 1.0 - s)
    order, _ = order_desc(conf)
    err = ((s >= 0.5).astype(np.float64) != y).astype(np.float64)
    return ConfidenceRanked(order, err[order])


def selective_risk(
    w: NDArray[np.float64], c: ConfidenceRanked, coverage: float
) -> NDArray[np.float64]:
    """Risk among the k = ceil(coverage * N) most confident (N = total weight)."""
    w2 = np.atleast_2d(w)
    cw = np.cumsum(w2, axis=-1)
    ce = np.cumsum(w2 * c.error, axis=-1)
    total = cw[:, -1]
    # ceil with a float guard (0.8 * 138 -> 111), and at least one image for any coverage > 0
    k = np.maximum(np.ceil(np.round(coverage * total, 9)), np.minimum(total, 1.0))
    j = np.count_nonzero(cw < k[:, None], axis=-1)  # the item holding the k-th copy
    j = np.minimum(j, w2.shape[1] - 1)
    c_before = np.take_along_axis(cw, j[:, None], -1)[:, 0] - w2[np.arange(w2.shape[0]), j]
    e_before = np.take_along_axis(ce, j[:, None], -1)[:, 0] - (w2 * c.error)[np.arange(len(j)), j]
    risk = _safe_div(e_before + (k - c_before) * c.error[j], k)
    risk = np.where(k >= 1, risk, np.nan)
    return risk[0] if np.ndim(w) == 1 else risk


def aurc(w: NDArray[np.float64], c: ConfidenceRanked) -> NDArray[np.float64]:
    """Trapezoid area under risk(k) vs coverage k/N for k = 1..N, not rescaled.

    Within the run of copies of item j (k from C_{j-1}+1 to C_j) the risk is
    (E_{j-1} + (k - C_{j-1}) e_j) / k, summed copy by copy (:func:`copies_sum`).
    """
    w2 = np.atleast_2d(w)
    e = c.error
    cw = np.cumsum(w2, axis=-1)
    we = w2 * e
    ce = np.cumsum(we, axis=-1)
    c_before = cw - w2
    e_before = ce - we
    sum_risk = _rowsum(copies_sum(e_before, e, c_before, w2))
    total = cw[:, -1]
    first = np.argmax(w2 > 0, axis=-1)
    risk_first = e[first]
    risk_last = _safe_div(ce[:, -1], total)
    out = _safe_div(sum_risk - 0.5 * (risk_first + risk_last), total)
    return out[0] if np.ndim(w) == 1 else out
