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
from typing import Any

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


#: below this many values numpy's own sorts win (the packed-key sort has a fixed cost)
_PACKED_SORT_MIN = 2048
_SIGN_BIT = np.int64(-(2**63))
_INTP_BITS = np.dtype(np.intp).itemsize * 8  # the packed keys' order is read as intp
#: the packed keys of -inf and +inf (a NaN's key lies beyond one of them)
_KEY_NEG_INF = 0x000F_FFFF_FFFF_FFFF
_KEY_POS_INF = 0xFFF0_0000_0000_0000
#: the index ramp OR-ed into the keys (512 KiB, made once; longer arrays reuse it in slices)
_RAMP = np.arange(1 << 16, dtype=np.uint64)
_RAMP.flags.writeable = False


def argsort_stable(x: NDArray[np.float64], *, descending: bool = False,
                   return_ties: bool = False) -> Any:
    """``np.argsort(x, kind="stable")`` exactly (of ``-x`` with ``descending``), about
    2-7x faster for large ``x``; with ``return_ties``, ``(order, whether two values tie)``.

    The stable order is unique (ties in input order), so any exact method gives the
    same permutation, and every result computed from it is unchanged to the last bit.
    numpy sorts plain 64-bit integers with its vectorised sorts (x86-simd-sort) but
    ``argsort`` of floats far more slowly (and its stable kind, timsort, slower still),
    so the order is found by sorting values: each float is mapped to an unsigned
    integer of the same order (sign bit flipped for positives, all bits for
    negatives), its low ``ceil(log2 n)`` bits replaced by the item's index, and the
    keys sorted.  Items whose truncated keys collide (exact ties, and values within
    about ``2**-(52 - log2 n)`` relative of each other) come out in index order; those
    runs are checked against the exact values and re-sorted only where the values
    disagree with that order.  Tied values always collide, so where nothing collides
    nothing ties, which ``return_ties`` reports without a pass over the sorted values.
    NaN (which the mapping would misplace by its sign bit; two NaNs count as tied) and
    short arrays take numpy's own sorts.  Input is read as float64 (integers beyond 2**53
    merge); only 1-D arrays.  Timings in ``BENCHMARKS.md``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"argsort_stable sorts a 1-D array; got shape {x.shape}.")
    n = x.size
    if n < _PACKED_SORT_MIN or _INTP_BITS != 64:
        return _numpy_stable(x, descending, return_ties)
    bits = (n - 1).bit_length()
    low = np.uint64((1 << bits) - 1)
    # two n-sized buffers in all (the keys, then the order in the shift's buffer): at
    # n = 10^7 each fresh array costs ~25 ms of page faults, more than a pass over it.
    # 0 - x and x + 0 turn -0.0 into 0.0, which numpy calls equal to it
    with np.errstate(invalid="ignore"):  # a signalling NaN (handed to numpy's sorts below)
        f = np.subtract(0.0, x) if descending else np.add(x, 0.0)
    key = f.view(np.int64)
    out = np.right_shift(key, 63)  # -1 for negatives (flip every bit), 0 else (the sign bit)
    out |= _SIGN_BIT
    key ^= out
    u = key.view(np.uint64)
    u &= ~low
    ramp = _RAMP
    if ramp.size < n:
        # the index ramp in slices of one reused ramp, not a fresh n-sized one
        step = ramp.size
        tmp = np.empty_like(ramp)
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            np.add(ramp[:hi - lo], np.uint64(lo), out=tmp[:hi - lo])
            u[lo:hi] |= tmp[:hi - lo]
    else:
        u |= ramp[:n]
    u.sort()
    # a NaN's key lies beyond those of -inf (sign bit set) or +inf: only keys at or beyond
    # theirs (after truncation) send the array to numpy's sorts, which place NaN last
    if (int(u[0]) >> bits <= _KEY_NEG_INF >> bits or int(u[-1]) >> bits >= _KEY_POS_INF >> bits) \
            and np.isnan(x).any():
        return _numpy_stable(x, descending, return_ties)
    order = out.view(np.uint64)
    np.bitwise_and(u, low, out=order)
    order = out.view(np.intp)
    u >>= np.uint64(bits)
    same = u[1:] == u[:-1]  # neighbours whose truncated keys collide
    if not same.any():
        return (order, False) if return_ties else order
    member = np.zeros(n, dtype=bool)
    member[:-1] = same
    member[1:] |= same
    pos = np.flatnonzero(member)
    # a colliding run is a chain of equal neighbours; within it the items are in index
    # order, which is right unless the exact values say otherwise
    cont = np.zeros(pos.size, dtype=bool)
    cont[1:] = same[pos[1:] - 1]
    run = np.cumsum(~cont)
    items = order[pos]
    vals = (np.negative(x[items]) if descending else x[items]) + 0.0
    wrong = cont[1:] & (vals[1:] < vals[:-1])
    if wrong.any():
        redo = np.zeros(int(run[-1]) + 1, dtype=bool)
        redo[run[1:][wrong]] = True
        sel = redo[run]
        # lexsort is stable: by run, then value, ties keeping the index order they have
        perm = np.lexsort((vals[sel], run[sel]))
        order[pos[sel]] = items[sel][perm]
        vals[sel] = vals[sel][perm]
    if not return_ties:
        return order
    return order, bool(np.any(cont[1:] & (vals[1:] == vals[:-1])))


def _numpy_stable(x: NDArray[np.float64], descending: bool, return_ties: bool) -> Any:
    """:func:`argsort_stable` by numpy's own sorts (short arrays, NaN)."""
    v = -x if descending else x
    # untied data has one order, which numpy's fastest sort finds; only ties, and two or
    # more NaNs (sorted last, never equal), need the stable kind
    order = np.argsort(v)
    vs = v[order]
    many_nan = vs.size > 1 and bool(np.isnan(vs[-2]))
    tied = vs.size > 1 and (many_nan or bool(np.any(vs[1:] == vs[:-1])))
    if tied:
        order = np.argsort(v, kind="stable")
    return (order, tied) if return_ties else order


def order_desc(s: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """Descending order of ``s`` with ties in input order, and the sorted scores.

    The stable ascending order of ``-s`` (:func:`argsort_stable`): tied items keep their
    input order, as every "stable" convention here promises.
    """
    order = argsort_stable(s, descending=True)
    return order, s[order]


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
#: below this many columns numpy's own cumulative sum is as fast (the pair pass costs calls)
_PAIR_MIN = 64


def cumsum_counts(x: NDArray, out: NDArray | None = None) -> NDArray:
    """Cumulative sum of integer (or boolean) counts along the last axis, into ``out``.

    numpy's accumulate loop reads each partial sum back from memory before adding the
    next element, so it runs at the store-to-load latency (about 2 ns per element
    here) however simple the addition.  Adding neighbouring pairs first (one vector
    pass), cumulating the pair sums (a chain half as long) and recovering the odd
    positions by one subtraction costs about 1.25 ns per element.  Integer addition is
    exact, so the result equals ``np.cumsum`` to the last bit; floats take numpy's
    order, since regrouping their sums would change the rounding.
    """
    x = np.asarray(x)
    n = x.shape[-1] if x.ndim else 0
    h = n // 2
    if h < _PAIR_MIN or x.dtype.kind not in "biu" or (out is not None and out.dtype.kind not in "iu"):
        return np.cumsum(x, axis=-1, out=out)
    if out is None:
        # numpy's default: counts of a narrower integer (or bool) cumulate in 64 bits
        out = np.empty(x.shape, dtype=np.uint64 if x.dtype.kind == "u" else np.int64)
    odd_in = x[..., 1:2 * h:2]
    odd = out[..., 1:2 * h:2]
    np.add(x[..., 0:2 * h:2], odd_in, out=odd, dtype=out.dtype)  # dtype: bool + bool is or
    np.cumsum(odd, axis=-1, out=odd)
    np.subtract(odd, odd_in, out=out[..., 0:2 * h:2], dtype=out.dtype)
    if n % 2:
        np.add(odd[..., -1], x[..., -1], out=out[..., -1], dtype=out.dtype)
    return out


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
    neg_order = neg[argsort_stable(s[neg])]  # order within ties is irrelevant here
    sn = s[neg_order]
    pos = np.flatnonzero(y == 1.0)
    pos = pos[argsort_stable(s[pos])]  # in score order the gathers read in order
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
    cumsum_counts(wn, out=c[:, 1:])
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
    cumsum_counts(counts[:, :n_seg], out=c[:, 1:])  # c[:, j]: negatives below starts[j]
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


def soft_auroc_grouped(w: NDArray[np.float64], r: Ranked, variant: str) -> NDArray[np.float64]:
    """Soft AUROC with tied scores pooled (each tied pair of distinct copies counts 1/2)
    and the self pair of every copy weighted by the variant: :func:`auroc` counts it 1/2
    (the trapezoid), the strict form 0, the inclusive form 1, i.e. the trapezoid
    -/+ ``sum w p (1 - p) / 2`` over ``n+ n-``."""
    out = auroc(w, r)
    if variant == "trapezoid":
        return out
    p = r.label
    wp = w * p
    n_pos = _rowsum(wp)
    half_self = 0.5 * _rowsum(wp * (1.0 - p))
    adj = _safe_div(half_self, n_pos * (_rowsum(w) - n_pos))
    return out - adj if variant == "strict" else out + adj


def soft_ap_grouped(w: NDArray[np.float64], r: Ranked, variant: str) -> NDArray[np.float64]:
    """Soft AP with tied scores pooled into one threshold.  ``"as_written"``: each copy
    of an item in a tied block adds ``p C_b / K_b`` (:func:`average_precision_grouped`);
    ``"known_self"``: ``p (1 + C_b - p) / K_b``, its own label counted as 1."""
    if variant == "as_written":
        return average_precision_grouped(w, r)
    p = r.label
    wp = w * p
    bp = _blocks(wp, r)
    bp2 = _blocks(wp * p, r)
    cum_p = np.cumsum(bp, axis=-1)
    cum_w = np.cumsum(_blocks(w, r), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(cum_w > 0, (bp * (1.0 + cum_p) - bp2) / cum_w, 0.0)
    return _safe_div(_rowsum(terms), cum_p[..., -1])


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


def average_precision_stable(w: NDArray[np.float64], r: Ranked,
                             variant: str = "as_written") -> NDArray[np.float64]:
    """Non-interpolated AP with individual ranks; soft labels allowed (paper 001 eq. 5).

    An item with label p, count w, K items and C positive mass ranked before it
    contributes ``p * sum_{j=1..w} (C + j p) / (K + j)`` (precision at each copy;
    ``variant="known_self"``: ``p * sum_j (1 + C + (j - 1) p) / (K + j)``, the copy's own
    label counted as 1).  Items with p = 0 contribute nothing and are skipped; on binary
    labels both variants are the ordinary AP.
    """
    w2 = np.atleast_2d(w)
    p = r.label
    k_before = np.cumsum(w2, axis=-1) - w2
    wp = w2 * p
    c_before = np.cumsum(wp, axis=-1) - wp
    if p.ndim == 1:  # one label vector: only the columns with positive mass
        nz = np.flatnonzero(p > 0)
        p_nz = p[nz]
        c_before, k_before = np.take(c_before, nz, axis=1), np.take(k_before, nz, axis=1)
        w_nz = np.take(w2, nz, axis=1)
    else:  # a label row per weight row (the annotation bootstrap)
        p_nz, w_nz = p, w2
    binary = p.ndim == 1 and bool(np.all(p_nz == 1.0))
    if variant == "known_self" and not binary:
        c_before = c_before + (1.0 - p_nz)  # C + j p + (1 - p) = 1 + C + (j - 1) p
    num = _ap_copies(c_before, k_before + 1, w_nz, None if binary else p_nz)
    out = _safe_div(num, _rowsum(wp))
    return out[0] if np.ndim(w) == 1 else out


def _ap_copies(c_before, den, w, p) -> NDArray[np.float64]:
    """Per row, ``sum_i p_i sum_{j=1..w_i} (C_i + j p_i) / (K_i + j)`` with ``den = K + 1``
    (``p=None``: hard labels, p = 1).  One formula for hard and soft labels, so binary soft
    labels give the hard-label AP to the last bit."""
    c_before = np.ascontiguousarray(c_before)
    den = np.ascontiguousarray(den)
    if p is None:
        first = np.add(c_before, 1.0)
    else:
        first = c_before + p
    np.divide(first, den, out=first)
    if p is not None:
        first *= p
    num = _first_copies(first, w)
    cf, df = c_before.reshape(-1), den.reshape(-1)
    # copies j0..w: (C + j p) / (K + j) = p + (C - p K) / (K + j), so their sum is
    # p L + (C - p K) S with L = w - j0 + 1 and S = sum_j 1 / (K + j), K + j = df + j - 1
    if p is None:
        num += _extra_copies(w, lambda i, j: (cf[i] + j) / (df[i] + (j - 1)),
                             lambda i, j0, wi: (wi - j0 + 1) + (cf[i] - (df[i] - 1)) * _harmonic_gap(
                                 df[i] + (j0 - 1), df[i] + wi))
    else:
        pf = np.ascontiguousarray(np.broadcast_to(p, w.shape)).reshape(-1)
        num += _extra_copies(w, lambda i, j: pf[i] * ((cf[i] + j * pf[i]) / (df[i] + (j - 1))),
                             lambda i, j0, wi: pf[i] * (pf[i] * (wi - j0 + 1) + (
                                 cf[i] - pf[i] * (df[i] - 1)) * _harmonic_gap(
                                 df[i] + (j0 - 1), df[i] + wi)))
    return num


def _harmonic_gap(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``sum_{k=x}^{y-1} 1/k = psi(y) - psi(x)`` for whole numbers ``1 <= x <= y``, to a few ulps.

    A difference of two digammas loses the digits they share (at x = 10^9 and y = x + 100,
    eight of them), so the gap is formed from the asymptotic series, term by term: the
    logarithm as ``log1p((y - x) / x)`` and each power as its own small difference, after
    summing the first terms below 128 directly (where the series is not yet accurate).
    """
    x = np.asarray(x, dtype=np.float64).copy()
    y = np.asarray(y, dtype=np.float64)
    out = np.zeros(np.broadcast(x, y).shape)
    while True:  # at most 127 steps, each a vector pass over the few entries below 128
        low = (x < 128.0) & (x < y)
        if not low.any():
            break
        out[low] += 1.0 / x[low]
        x[low] += 1.0
    big = x < y
    xb, yb = x[big], y[big]
    ix2, iy2 = 1.0 / (xb * xb), 1.0 / (yb * yb)
    # psi(t) = ln t - 1/(2t) - 1/(12 t^2) + 1/(120 t^4) - 1/(252 t^6) + ..., t >= 128: the
    # next term is below 1e-24 of the value
    out[big] += (np.log1p((yb - xb) / xb) + (yb - xb) / (2.0 * xb * yb)
                 - (iy2 - ix2) / 12.0 + (iy2 * iy2 - ix2 * ix2) / 120.0
                 - (iy2 ** 3 - ix2 ** 3) / 252.0)
    return out


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


def tau_sensitivity(w: NDArray[np.float64], r: Ranked, x: float, points=None
                    ) -> NDArray[np.float64]:
    """Highest observed score t with Se(t) >= x (paper 000 M0.8, primary rule).

    ``points``: the :func:`_roc_points` of ``w`` when already computed (shared by rules)."""
    _, bw, _, _, se, _, n_pos, n_neg = points if points is not None else _roc_points(w, r)
    ok = (se >= x - _TOL) & (bw > 0)  # only thresholds observed in this (re)sample
    first = np.argmax(ok, axis=-1)
    tau = _block_scores(r)[first]
    return np.where((n_pos > 0) & (n_neg > 0) & ok.any(axis=-1), tau, np.nan)


def tau_specificity(w: NDArray[np.float64], r: Ranked, x: float, points=None
                    ) -> NDArray[np.float64]:
    """Threshold maximising Se subject to Sp(t) >= x; ties -> higher Sp, then highest t.

    Only thresholds observed in the (re)sample qualify; +inf when none is feasible.
    """
    _, bw, cum_p, _, _, sp, n_pos, n_neg = points if points is not None else _roc_points(w, r)
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


BINNINGS = ("floor", "linspace")


def bin_index(prob: NDArray[np.float64], n_bins: int, binning: str = "floor") -> NDArray[np.intp]:
    """Equal-width calibration bin of each probability: the one rule of every binned metric.

    * ``"floor"`` (paper 000 M0.7, the default): ``min(floor(n_bins * s), n_bins - 1)``
      computed in float64, so the last bin includes 1.0 and a typed 0.3 lands in
      ``[0.3, 0.4)`` (``10 * 0.3`` rounds to 3.0000000000000004).
    * ``"linspace"`` (netcal): bin ``b`` holds ``e_b <= s < e_{b+1}`` for the float64
      edges ``e = np.linspace(0, 1, n_bins + 1)`` and ``s == 1.0`` forms bin ``n_bins`` of
      its own, as ``torch.bucketize(s, e, right=True) - 1`` leaves it.  The edge ``e_3`` of
      10 bins is 0.30000000000000004, above the double 0.3, so a typed 0.3 lands in
      ``[0.2, 0.3)`` here.  torchmetrics bins so too, but on float32 edges, which sit on
      the other side of some values (0.7 of 10 bins).
    """
    if binning == "floor":
        return np.minimum(np.floor(prob * n_bins).astype(np.intp), n_bins - 1)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return (np.searchsorted(edges, prob, side="right") - 1).astype(np.intp)


def bin_edges(index: NDArray[np.intp], n_bins: int, binning: str = "floor"
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Lower and upper edge of the bins ``index`` under ``binning`` (the 1.0 bin of
    ``"linspace"`` is ``[1, 1]``)."""
    if binning == "floor":
        return index / n_bins, (index + 1) / n_bins
    edges = np.r_[np.linspace(0.0, 1.0, n_bins + 1), 1.0]
    return edges[index], edges[index + 1]


def ece(
    w: NDArray[np.float64], r: Ranked, n_bins: int, prevalence: float | None,
    binning: str = "floor",
) -> NDArray[np.float64]:
    """Expected calibration error with equal-width bins (empty bins contribute 0).

    Bins are contiguous in the descending score order, so the per-bin sums are one
    ``reduceat`` over the sorted weights.
    """
    y, s = r.label, r.score
    b = bin_index(s, n_bins, binning)
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


# ------------------------------------------------------------ one pass for many metrics
# The kernels above each read the counts in their own order (ranked, confidence or
# original) and cumulate them again.  For hard labels every metric of the engine can be
# read from one matrix instead: the counts laid out as the positives, then the negatives,
# each class in descending score order (ties in input order), and one cumulative sum of
# it.  A metric then reads a few precomputed columns of that cumulative sum (integer
# counts, so every cumulated quantity is exact) or sums contiguous slices of the counts
# (a class, a calibration bin).  Drawing the counts directly into this layout
# (``WeightPlan.batches(columns=...)``) costs no gather at all.


def _interval_counts(c: NDArray, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> NDArray:
    """``c[:, hi] - c[:, lo]``: the counts in layout columns ``[lo, hi)`` from the padded
    cumulative sum ``c`` (column 0 is 0)."""
    return np.take(c, hi, axis=1) - np.take(c, lo, axis=1)


@dataclass(frozen=True, slots=True)
class ConfidenceCuts:
    """For the ``m`` most confident items (one cut per row of the arrays), the layout
    intervals that hold them: ``[0, a_pos)`` (confident positives, s >= 0.5),
    ``[lo_mid, hi_mid)`` (the low positives after a tie block, then the confident
    negatives: the two runs meet at the class boundary) and ``[lo_neg, n)`` (the low
    negatives), plus at most one partial tie block per class (``[bs, q)``; empty when no
    cut falls inside a tie block).  Errors among them: the confident negatives and the
    low positives."""

    a_pos: NDArray[np.intp]
    lo_mid: NDArray[np.intp]
    hi_mid: NDArray[np.intp]
    lo_neg: NDArray[np.intp]
    bs_pos: NDArray[np.intp]
    q_pos: NDArray[np.intp]
    bs_neg: NDArray[np.intp]
    q_neg: NDArray[np.intp]
    partial: bool

    def take(self, i: NDArray[np.intp]) -> ConfidenceCuts:
        f = [getattr(self, k)[i] for k in ("a_pos", "lo_mid", "hi_mid", "lo_neg", "bs_pos",
                                           "q_pos", "bs_neg", "q_neg")]
        return ConfidenceCuts(*f, partial=bool(np.any(f[4] != f[5]) or np.any(f[6] != f[7])))

    def copies(self, c: NDArray, total: NDArray) -> NDArray:
        """Copies among the cut's items, per row of the padded cumulative sum ``c``."""
        out = np.take(c, self.a_pos, axis=1) + _interval_counts(c, self.lo_mid, self.hi_mid)
        out += total[:, None] - np.take(c, self.lo_neg, axis=1)
        if self.partial:
            out += _interval_counts(c, self.bs_pos, self.q_pos)
            out += _interval_counts(c, self.bs_neg, self.q_neg)
        return out


def _low_part_cuts(conf_rank: NDArray[np.intp], s: NDArray[np.float64], t: NDArray[np.intp]):
    """Within one class's low-confidence part (columns in descending score order, their
    confidence ranks ``conf_rank``): for cuts ``t``, the suffix start ``be`` of the tie
    blocks entirely among the ``t`` most confident and the partial block ``[bs, q)``.

    Confidence rises as the score falls, so whole tie blocks enter from the end; inside a
    tie block confidence ties are broken by input order, which is the column order.
    """
    m = s.size
    if m == 0:
        z = np.zeros(t.size, dtype=np.intp)
        return z, z, z
    new = np.r_[True, s[1:] != s[:-1]]
    st = np.flatnonzero(new)
    en = np.r_[st[1:], m]
    blockmax = conf_rank[en - 1]  # decreasing along the blocks
    n_high = np.searchsorted(-blockmax, -t, side="right")  # blocks not wholly inside
    be = np.where(n_high < st.size, st[np.minimum(n_high, st.size - 1)], m)
    inside = np.searchsorted(np.sort(conf_rank), t)
    part = inside - (m - be)
    bs = np.where(part > 0, st[np.maximum(n_high - 1, 0)], 0)
    q = np.where(part > 0, bs + part, 0)
    return be.astype(np.intp), bs.astype(np.intp), q.astype(np.intp)


@dataclass(frozen=True, slots=True)
class Layout:
    """Column layout of hard-label count matrices: positives, then negatives, each in
    descending score order with ties in input order, and what each metric reads of it.

    Indices refer to the padded cumulative sum ``c`` of a layout row (``c[:, j]`` is the
    count in columns ``< j``): the positives ranked before positive ``j`` are ``c[j]``,
    the negatives before column ``n_pos + k`` are ``c[n_pos + k] - W_P``.
    """

    order: NDArray[np.intp]  # column -> item
    column: NDArray[np.intp]  # item -> column
    n: int
    n_pos: int
    score: NDArray[np.float64]  # per column
    label: NDArray[np.float64]  # per column (1 then 0)
    neg_before: NDArray[np.intp]  # per positive: c-index of the negatives ranked before it
    neg_above: NDArray[np.intp]  # per positive: c-index, negatives with a higher score
    neg_through: NDArray[np.intp]  # per positive: c-index, negatives scoring at least as high
    ties: bool  # some positive ties a negative
    blk_start: NDArray[np.intp]  # per positive tie block: first column
    blk_end: NDArray[np.intp]  # ... one past its last column
    blk_neg_through: NDArray[np.intp]  # ... c-index of the negatives scoring at least as high
    conf: ConfidenceRanked | None = None  # the general path's confidence order
    cuts: ConfidenceCuts | None = None  # cuts after 0..n most confident items (None: no fast path)
    err_cuts: ConfidenceCuts | None = None  # the cuts just before each error item
    err_conf: NDArray[np.intp] | None = None  # error items' confidence ranks (ascending)
    err_col: NDArray[np.intp] | None = None  # ... and their columns
    bins: dict[int, tuple] = None  # n_bins -> (pos slices, neg slices) per occupied bin


def layout(y: NDArray[np.float64], s: NDArray[np.float64], r: Ranked,
           cr: ConfidenceRanked | None) -> Layout:
    """Prepare the one-pass kernels for hard labels ``y``, scores ``s`` sorted as ``r``
    (and ``cr`` for the confidence metrics)."""
    ranked = r.order
    yr = y[ranked]
    pos, neg = ranked[yr == 1.0], ranked[yr == 0.0]
    order = np.concatenate([pos, neg])
    n, n_pos = y.size, pos.size
    column = np.empty(n, dtype=np.intp)
    column[order] = np.arange(n)
    g = np.empty(n, dtype=np.intp)
    g[ranked] = np.arange(n)  # ranked position
    sp, sn = s[pos], s[neg]
    neg_before = n_pos + np.searchsorted(g[neg], g[pos])
    neg_above = n_pos + np.searchsorted(-sn, -sp, side="left")
    neg_through = n_pos + np.searchsorted(-sn, -sp, side="right")
    new = np.r_[True, sp[1:] != sp[:-1]] if n_pos else np.zeros(0, dtype=bool)
    blk_start = np.flatnonzero(new)
    blk_end = np.r_[blk_start[1:], n_pos].astype(np.intp)
    lay = dict(order=order, column=column, n=n, n_pos=n_pos, score=s[order], label=y[order],
               neg_before=neg_before, neg_above=neg_above, neg_through=neg_through,
               ties=bool(np.any(neg_above != neg_through)), blk_start=blk_start,
               blk_end=blk_end, blk_neg_through=neg_through[blk_start], bins={})
    if cr is not None:
        lay["conf"] = cr
        lay.update(_confidence_cuts(y, s, order, n_pos, cr))
    return Layout(**lay)


def _confidence_cuts(y, s, order, n_pos, cr: ConfidenceRanked) -> dict:
    """The cuts of :class:`ConfidenceCuts` after 0..n most confident items, or nothing
    when the layout cannot express them as intervals: a confidence tie across the 0.5
    line (s and 1 - s) or between low scores that differ (1 - s rounds them together);
    the general kernels then handle the confidence order."""
    n = y.size
    conf = np.maximum(s, 1.0 - s)
    high = s >= 0.5
    if np.intersect1d(conf[high], conf[~high]).size:
        return {}
    rank_of = np.empty(n, dtype=np.intp)
    rank_of[cr.order] = np.arange(n)
    t = np.arange(n + 1)
    parts = []
    for lo_col, hi_col in ((0, n_pos), (n_pos, n)):
        cols = np.arange(lo_col, hi_col)
        items = order[cols]
        h = high[items]
        n_high = int(h.sum())  # the confident items lead each class (descending score)
        low_items = items[n_high:]
        ls = s[low_items]
        lc = conf[low_items]
        if ls.size > 1 and np.any((lc[1:] == lc[:-1]) != (ls[1:] == ls[:-1])):
            return {}
        a = np.searchsorted(rank_of[items[:n_high]], t)
        be, bs, q = _low_part_cuts(rank_of[low_items], ls, t)
        off = lo_col + n_high
        parts.append((lo_col + a, off + be, off + bs, off + q))
    (a_p, be_p, bs_p, q_p), (a_n, be_n, bs_n, q_n) = parts
    cuts = ConfidenceCuts(a_pos=a_p, lo_mid=be_p, hi_mid=a_n, lo_neg=be_n, bs_pos=bs_p,
                          q_pos=q_p, bs_neg=bs_n, q_neg=q_n,
                          partial=bool(np.any(bs_p != q_p) or np.any(bs_n != q_n)))
    err = cr.error.astype(bool)
    err_conf = np.flatnonzero(err)
    column = np.empty(n, dtype=np.intp)
    column[order] = np.arange(n)
    return {"cuts": cuts, "err_cuts": cuts.take(err_conf), "err_conf": err_conf,
            "err_col": column[cr.order[err_conf]]}


def layout_bins(lay: Layout, n_bins: int, binning: str = "floor") -> tuple:
    """Per occupied calibration bin, its column slice among the positives and the negatives
    (descending scores make every bin one contiguous run within each class)."""
    key = (n_bins, binning)
    if key not in lay.bins:
        b = bin_index(lay.score, n_bins, binning)
        out = []
        for lo, hi in ((0, lay.n_pos), (lay.n_pos, lay.n)):
            bb = b[lo:hi]
            if not bb.size:  # a class with no item (a group without positives) has no bins
                out.append({})
                continue
            st = lo + np.flatnonzero(np.r_[True, bb[1:] != bb[:-1]])
            en = np.r_[st[1:], hi].astype(np.intp)
            out.append({int(b[i]): (int(i), int(j)) for i, j in zip(st, en, strict=True)})
        occupied = sorted(set(out[0]) | set(out[1]), reverse=True)
        lay.bins[key] = tuple((out[0].get(k), out[1].get(k)) for k in occupied)
    return lay.bins[key]


class LayoutSums:
    """The shared quantities of one batch of layout rows, computed on first use.

    ``c`` is the padded cumulative sum of the rows (one pass; integer for integer counts),
    from which ``W_P``, ``W_N`` and every cumulated count are read.
    """

    def __init__(self, w: NDArray, lay: Layout, scratch: dict | None = None, *,
                 float_passes: int = 0):
        self.w, self.lay = w, lay
        self.scratch = {} if scratch is None else scratch
        c = self._buffer("c", (w.shape[0], lay.n + 1), w.dtype)
        # dot products of integer counts with float vectors convert every element on the
        # fly, at about twice the cost of a float pass: with two or more such passes (say
        # Brier and ECE) one conversion, into a reused buffer, is cheaper
        self.wf = w
        if float_passes >= 2 and w.dtype != np.float64:
            self.wf = self._buffer("wf", w.shape, np.float64)
            np.copyto(self.wf, w, casting="unsafe")
        c[:, 0] = 0
        cumsum_counts(w, out=c[:, 1:])
        self.c = c
        self.total = c[:, -1]
        self.w_pos = c[:, lay.n_pos]
        self.w_neg = self.total - self.w_pos
        self._cache: dict[str, Any] = {}

    def _buffer(self, key, shape, dtype) -> NDArray:
        """A work array reused across batches: a fresh (b, n) array per batch would pay
        its page faults every time."""
        buf = self.scratch.get(key)
        if buf is None or buf.shape[0] < shape[0] or buf.shape[1:] != shape[1:] or (
                buf.dtype != dtype):
            buf = self.scratch[key] = np.empty(shape, dtype=dtype)
        return buf[:shape[0]]

    def cached(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    def pos_counts(self) -> NDArray:
        return self.w[:, :self.lay.n_pos]

    def slice_dot(self, lo: int, hi: int, v: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.einsum("ij,j->i", self.wf[:, lo:hi], v[lo:hi])


def auroc_layout(t: LayoutSums) -> NDArray[np.float64]:
    """Mid-rank AUROC: ``sum_P w (negatives below + tied/2) / (W_P W_N)`` in integers
    (the same integers as :func:`auroc_placement`, so the same value to the last bit)."""
    lay, c = t.lay, t.c
    # twice the negatives below each positive, ties counted one half
    through = np.take(c, lay.neg_through, axis=1)
    if lay.ties:
        below2 = 2 * t.total[:, None] - through
        below2 -= np.take(c, lay.neg_above, axis=1)
    else:
        below2 = t.total[:, None] - through
        below2 *= 2
    num = np.einsum("ij,ij->i", t.pos_counts(), below2) * 0.5
    return _safe_div(num, t.w_pos * t.w_neg.astype(np.float64))


#: copies summed one by one before a closed-form tail takes over (bootstrap counts never
#: come near it: the loop, and so every replicate, is unchanged; an integer sample_weight
#: of 10^9 would otherwise cost 10^9 passes)
_COPY_LOOP = 64


def _extra_copies(w: NDArray, term, tail=None) -> NDArray[np.float64]:
    """Per row, ``sum over entries with count w >= 2 of sum_{j=2..w} term(flat index, j)``.

    Most counts are 0 or 1, so only the entries drawn twice or more are visited again:
    gathered once, then the live set is compressed for each further copy (no sort).
    Each row's sum runs over its entries in column order, so it does not depend on the
    number of rows in the batch.  ``tail(flat index, j0, w)``, when given, is the closed
    form of ``sum_{j=j0..w} term(index, j)``, used past :data:`_COPY_LOOP` copies.
    """
    b, m = w.shape
    many = w >= 2  # a fresh C-ordered mask whatever the layout of w (a view, say)
    idx = np.flatnonzero(many)
    if not idx.size:
        return np.zeros(b)
    extra = term(idx, 2)
    # the counts of those entries, in C order as idx: take() reads w through its C-order
    # flat index whatever its memory layout, at a fraction of the cost of w[many]
    w_s = np.take(w, idx)
    live = np.flatnonzero(w_s >= 3)
    j = 3
    while live.size:
        if tail is not None and j > _COPY_LOOP:
            extra[live] += tail(idx[live], j, w_s[live])
            break
        extra[live] += term(idx[live], j)
        j += 1
        live = live[w_s[live] >= j]
    # per-row sums: bincount adds each row's entries one by one in column order, so a row's
    # sum does not depend on the other rows of the batch (add.reduceat sums a run
    # pairwise, with a rounding that depends on where the run starts in memory)
    return np.bincount(idx // m, weights=extra, minlength=b)


def _first_copies(terms: NDArray[np.float64], w: NDArray) -> NDArray[np.float64]:
    """Per row, ``sum of terms`` over the entries drawn at least once (one pass)."""
    return np.einsum("ij,ij->i", terms, np.minimum(w, 1))


def average_precision_layout(t: LayoutSums) -> NDArray[np.float64]:
    """AP with individual ranks, summed over the positives only: a positive with count w,
    C positives and K items ranked before it adds ``sum_{j=1..w} (C + j) / (K + j)``.

    The per-copy terms are those of the per-item formula; the sums run over the
    positives only (no zero terms for the negatives), the same arithmetic as
    :func:`average_precision_stable` now uses for every label kind.
    """
    lay, c = t.lay, t.c
    c_before = np.ascontiguousarray(c[:, :lay.n_pos])  # positives ranked before each positive
    # items ranked before it, plus one: positives + negatives before (c - W_P) + 1
    den = np.take(c, lay.neg_before, axis=1)
    den += c_before
    den -= (t.w_pos - 1)[:, None]
    num = _ap_copies(c_before, den, t.pos_counts(), None)
    return _safe_div(num, t.w_pos.astype(np.float64))


def _block_points(t: LayoutSums):
    """Per positive tie block: positives and all items at or above its score."""
    def make():
        lay, c = t.lay, t.c
        cum_p = np.take(c, lay.blk_end, axis=1)
        cum_n = np.take(c, lay.blk_neg_through, axis=1) - t.w_pos[:, None]
        return cum_p, cum_n
    return t.cached("block_points", make)


def average_precision_pooled_layout(t: LayoutSums) -> NDArray[np.float64]:
    """AP with tied scores pooled into one threshold, over the blocks holding positives."""
    cum_p, cum_n = _block_points(t)
    bp = cum_p - np.take(t.c, t.lay.blk_start, axis=1)
    cum_w = cum_p + cum_n
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(cum_w > 0, cum_p / cum_w, 0.0)
    return _safe_div(_rowsum(bp * prec), t.w_pos.astype(np.float64))


def _rates_at_blocks(t: LayoutSums):
    cum_p, cum_n = _block_points(t)
    n_pos, n_neg = t.w_pos[:, None], t.w_neg[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return cum_p / n_pos, 1.0 - cum_n / n_neg


def se_at_sp_layout(t: LayoutSums, x: float) -> NDArray[np.float64]:
    """:func:`se_at_sp` from the positive blocks only (a threshold inside a run of
    negatives has the Se of the positive block above it and a lower Sp)."""
    se, sp = _rates_at_blocks(t)
    best = np.max(np.where(sp >= x - _TOL, se, 0.0), axis=-1, initial=0.0)
    return np.where((t.w_pos > 0) & (t.w_neg > 0), best, np.nan)


def sp_at_se_layout(t: LayoutSums, x: float) -> NDArray[np.float64]:
    """:func:`sp_at_se` from the positive blocks only (and +inf, where Se = 0, Sp = 1)."""
    se, sp = _rates_at_blocks(t)
    best = np.max(np.where(se >= x - _TOL, sp, -np.inf), axis=-1, initial=-np.inf)
    if 0.0 >= x - _TOL:
        best = np.maximum(best, 1.0)
    return np.where((t.w_pos > 0) & (t.w_neg > 0), best, np.nan)


def _ranked_rows(t: LayoutSums, r: Ranked, rows: NDArray[np.intp]) -> NDArray:
    """The layout rows ``rows`` of ``t`` gathered into ranked order (for the general kernels)."""
    return np.take(t.w[rows], t.lay.column[r.order], axis=1)


def tau_sensitivity_layout(t: LayoutSums, r: Ranked, x: float) -> NDArray[np.float64]:
    """:func:`tau_sensitivity` from the positive tie blocks of the layout.

    For ``x > 0`` the first threshold (descending) with Se >= x is a block holding a
    drawn positive, since Se rises only there: its score is tau, read from the cumulated
    positives at the block ends, with the same float Se as the ranked kernel.  ``x <= 0``
    (every threshold qualifies; the highest drawn item decides) takes the ranked kernel.
    """
    lay = t.lay
    b = t.w.shape[0]
    if x - _TOL <= 0 or lay.n_pos == 0:
        return tau_sensitivity(_ranked_rows(t, r, np.arange(b)), r, x)
    cum_p = np.take(t.c, lay.blk_end, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = cum_p / t.w_pos[:, None] >= x - _TOL
    first = np.argmax(ok, axis=1)
    tau = lay.score[lay.blk_start][first]
    return np.where((t.w_pos > 0) & (t.w_neg > 0) & ok.any(axis=1), tau, np.nan)


def tau_specificity_layout(t: LayoutSums, r: Ranked, x: float) -> NDArray[np.float64]:
    """:func:`tau_specificity` from the positive tie blocks of the layout.

    Sp falls and Se rises as the threshold falls, so the feasible thresholds (Sp >= x)
    form a prefix; the highest Se on it is reached first at the last feasible block that
    holds a drawn positive, which is tau (ties to the higher Sp and threshold as the
    ranked kernel breaks them).  Rows where no such block is feasible (Se = 0 at best:
    the ranked kernel then picks the highest drawn item or +inf) take the ranked kernel.
    """
    lay = t.lay
    b = t.w.shape[0]
    if lay.n_pos == 0:
        return tau_specificity(_ranked_rows(t, r, np.arange(b)), r, x)
    c = t.c
    cum_n = np.take(c, lay.blk_neg_through, axis=1)
    cum_n -= t.w_pos[:, None]
    drawn = np.take(c, lay.blk_end, axis=1) > np.take(c, lay.blk_start, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        feasible = 1.0 - cum_n / t.w_neg[:, None] >= x - _TOL
    feasible &= drawn
    last = feasible.shape[1] - 1 - np.argmax(feasible[:, ::-1], axis=1)
    tau = lay.score[lay.blk_start][last]
    found = feasible.any(axis=1)
    if not found.all():
        rows = np.flatnonzero(~found)
        tau[rows] = tau_specificity(_ranked_rows(t, r, rows), r, x)
    return np.where((t.w_pos > 0) & (t.w_neg > 0), tau, np.nan)


def rates_at_layout(t: LayoutSums, tau: NDArray[np.float64] | float
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`rates_at` from one cumulative sum of layout rows: the columns with s >= tau
    are a prefix of each class, so TP and FP are two reads (the same exact counts, so the
    same Se and Sp to the last bit)."""
    lay = t.lay
    b = t.w.shape[0]
    tau_arr = np.broadcast_to(np.asarray(tau, dtype=np.float64), (b,))
    tt = np.nan_to_num(tau_arr, nan=np.inf)
    asc_p = lay.score[:lay.n_pos][::-1]
    asc_n = lay.score[lay.n_pos:][::-1]
    m_p = lay.n_pos - np.searchsorted(asc_p, tt, side="left")
    m_n = (lay.n - lay.n_pos) - np.searchsorted(asc_n, tt, side="left")
    rows = np.arange(b)
    tp = t.c[rows, m_p]
    fp = t.c[rows, lay.n_pos + m_n] - t.w_pos
    se = _safe_div(tp, t.w_pos)
    sp = _safe_div(t.w_neg - fp, t.w_neg)
    bad = np.isnan(tau_arr)
    return np.where(bad, np.nan, se), np.where(bad, np.nan, sp)


def mean_loss_layout(t: LayoutSums, loss: NDArray[np.float64], prevalence: float | None
                     ) -> NDArray[np.float64]:
    """:func:`mean_loss` with the per-item loss in layout order: one pass over the counts."""
    n_pos = t.lay.n_pos
    sp_ = t.slice_dot(0, n_pos, loss)
    sn_ = t.slice_dot(n_pos, t.lay.n, loss)
    if prevalence is None:
        return _safe_div(sp_ + sn_, t.total.astype(np.float64))
    return (prevalence * _safe_div(sp_, t.w_pos.astype(np.float64))
            + (1.0 - prevalence) * _safe_div(sn_, t.w_neg.astype(np.float64)))


def ece_layout(t: LayoutSums, n_bins: int, prevalence: float | None,
               binning: str = "floor") -> NDArray[np.float64]:
    """:func:`ece` from per-bin sums of ``w (s - y)`` over contiguous column slices."""
    lay = t.lay
    d = lay.score - lay.label
    zero = np.zeros(t.w.shape[0])
    if prevalence is None:
        cp = cn = None
    else:
        cp = _safe_div(np.full(zero.shape, prevalence), t.w_pos.astype(np.float64))
        cn = _safe_div(np.full(zero.shape, 1.0 - prevalence), t.w_neg.astype(np.float64))
    acc = np.zeros_like(zero)
    for ps, ns in layout_bins(lay, n_bins, binning):
        wp = t.slice_dot(*ps, d) if ps else zero
        wn = t.slice_dot(*ns, d) if ns else zero
        acc += np.abs(wp + wn) if cp is None else np.abs(cp * wp + cn * wn)
    if prevalence is None:
        return _safe_div(acc, t.total.astype(np.float64))
    return acc


_H_CACHE: list[NDArray[np.float64]] = [np.zeros(1)]


def harmonic(m: int) -> NDArray[np.float64]:
    """``H_0..H_m`` (``H_k = sum_{i<=k} 1/i``), each to about one ulp (digamma, not a
    running sum whose rounding errors would accumulate)."""
    if _H_CACHE[0].size <= m:
        from scipy import special
        size = 1 << max(10, int(m).bit_length())
        _H_CACHE[0] = special.digamma(np.arange(1.0, size + 2.0)) + np.euler_gamma
        _H_CACHE[0][0] = 0.0
    return _H_CACHE[0]


def aurc_layout(t: LayoutSums) -> NDArray[np.float64]:
    """AURC as a sum over error copies: with ``q`` a copy's position in the confidence
    order, ``sum_k r(k) = sum_k E(k)/k = sum_q e_q (H_N - H_{q-1})``.

    Only the error items are visited: their counts and the copies before them (read
    from the cumulative sum at their confidence cuts).  Differs from the copy-by-copy
    risk sum of :func:`aurc` by rounding only (a few 1e-15).
    """
    lay, c = t.lay, t.c
    total = t.total.astype(np.intp)  # counts are integers (floats only for the point estimate)
    h = harmonic(int(total.max(initial=0)))
    w_err = np.take(t.w, lay.err_col, axis=1)
    # copies before each error item: the error copies before it (a cumulative sum over
    # the error items, in confidence order) and the correct ones, which are the
    # confident positives and the low negatives of its cut (two reads of c)
    cut = lay.err_cuts
    k = cumsum_counts(w_err)
    k -= w_err
    k += np.take(c, cut.a_pos, axis=1)
    k -= np.take(c, cut.lo_neg, axis=1)
    k += t.total[:, None]
    if cut.partial:
        k += _interval_counts(c, cut.bs_neg, cut.q_neg)
    k = k.astype(np.intp, copy=False)
    h_n = h[total]
    terms = h[k]
    np.subtract(h_n[:, None], terms, out=terms)
    sum_risk = _first_copies(terms, w_err)
    m = w_err.shape[1]
    kf = k.reshape(-1)
    sum_risk += _extra_copies(w_err, lambda i, j: h_n[i // m] - h[kf[i] + (j - 1)])
    # the error copies: the confident negatives and the low positives, two column runs
    n_err = (c[:, lay.cuts.hi_mid[-1]] - c[:, lay.cuts.lo_mid[-1]]).astype(np.float64)
    tot = total.astype(np.float64)
    risk_last = _safe_div(n_err, tot)
    return _safe_div(sum_risk - 0.5 * (_first_is_error(k, w_err) + risk_last), tot)


def _first_is_error(k: NDArray[np.intp], w_err: NDArray) -> NDArray[np.float64]:
    """Risk at coverage 1/N: 1 when the most confident copy is an error, i.e. when an
    error item with copies has none before it.  ``k`` rises along each row, so only a
    short prefix of the error items can qualify; the rest of the row is read only when
    that prefix is longer than the window."""
    win = min(k.shape[1], 64)
    out = np.any((k[:, :win] == 0) & (w_err[:, :win] > 0), axis=1)
    long = np.flatnonzero(k[:, win - 1] == 0) if win else np.zeros(0, dtype=np.intp)
    if long.size:
        out[long] = np.any((k[long] == 0) & (w_err[long] > 0), axis=1)
    return out.astype(np.float64)


def selective_risk_layout(t: LayoutSums, coverage: float) -> NDArray[np.float64]:
    """:func:`selective_risk` by bisection on the copies among the most confident items
    (17 probes of the cumulative sum for n = 10^5 instead of a pass over the counts)."""
    lay = t.lay
    total = t.total
    tot = total.astype(np.float64)
    k = np.maximum(np.ceil(np.round(coverage * tot, 9)), np.minimum(tot, 1.0))
    rows = np.arange(total.size)
    cuts = lay.cuts

    c = t.c

    def copies_before(m):  # copies among the m most confident items, one m per row
        cm = cuts.take(m)
        out = c[rows, cm.a_pos] + c[rows, cm.hi_mid] - c[rows, cm.lo_mid] + total
        out -= c[rows, cm.lo_neg]
        if cuts.partial:
            out += c[rows, cm.q_pos] - c[rows, cm.bs_pos] + c[rows, cm.q_neg] - c[rows, cm.bs_neg]
        return out

    # j: the confidence position holding the k-th copy = #{positions whose inclusive count < k}
    lo = np.zeros(total.size, dtype=np.intp)
    hi = np.full(total.size, lay.n - 1, dtype=np.intp)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        below = copies_before(mid + 1) < k
        lo = np.where(below, mid + 1, lo)
        hi = np.where(below, hi, mid)
    j = lo
    c_before = copies_before(j)
    # errors among the j most confident: confident negatives and low positives
    cj = cuts.take(j)
    e_before = c[rows, cj.hi_mid] - c[rows, cj.lo_mid]
    if cuts.partial:
        e_before += c[rows, cj.q_pos] - c[rows, cj.bs_pos]
    e_j = lay.conf.error[j]
    risk = _safe_div(e_before + (k - c_before) * e_j, k)
    return np.where(k >= 1, risk, np.nan)
