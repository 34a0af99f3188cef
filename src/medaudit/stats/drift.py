"""Drift of the score distribution between periods: two-sample KS and the population stability index.

Labels reach a site late (a diagnosis is confirmed weeks after the image); scores do not.
A shift in where the model puts its scores is an early signal that a claim may stop
holding, before the labels that would show it arrive.  Per period, against a reference
period, for all scores and — where labels are known — for positives and negatives
separately:

* the two-sample Kolmogorov-Smirnov test (:func:`ks_drift`: scipy's ``ks_2samp``, exact
  for small samples, asymptotic for large);
* the population stability index (:func:`population_stability_index`) over bins declared
  from the reference period's quantiles, with a permutation p-value: the conventional bands
  (0.1, 0.25) are fixed numbers, but the PSI of two samples from one distribution is about
  ``(k - 1)(1/n_ref + 1/n)`` for k bins (Yurdakul 2018) and larger still when a bin is empty
  (the floor), so 20 cases a period read "major shift" with no drift at all.  A shift is read
  from the bands only where the permutation test says it is beyond chance.

These are descriptive signals: no correction is made for the number of periods.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import (
    RNGLike,
    as_1d_float,
    as_generator,
    check_batch,
    check_fraction,
    check_n_resamples,
    check_option,
    missing_mask,
)
from medaudit.exceptions import MedauditError
from medaudit.stats._results import TestResult, _ToDict

__all__ = ["PSIResult", "DriftResult", "psi_edges", "population_stability_index", "ks_drift",
           "score_drift", "PSI_BANDS", "DRIFT_COLUMNS", "period_order", "ordered_categories",
           "WITHIN_CHANCE", "ONE_BIN", "ASYMPTOTIC_MIN_EXPECTED", "PSI_METHODS"]

#: conventional reading of a PSI value (Siddiqi 2006): below 0.1 stable, 0.1-0.25 a moderate
#: shift, 0.25 and above a major shift
PSI_BANDS = ((0.1, "stable"), (0.25, "moderate shift"), (math.inf, "major shift"))
#: the reading of a band of "moderate" or "major" shift whose permutation p-value is not
#: below alpha: a PSI that large is what two samples of these sizes give with no drift
WITHIN_CHANCE = "within chance at this size"
#: the reading where the reference occupies one bin: PSI then cannot see a shift at all
#: (every current score above the reference's value falls in the same bin); read the KS test
ONE_BIN = "not readable: the reference occupies one bin"
#: stream of each subset of a period (fixed, so that labels do not move the "all" rows' draws)
_SUBSET_KEYS = {"all": 0, "positives": 1, "negatives": 2}
DRIFT_COLUMNS = ("period", "subset", "reference", "n_reference", "n", "ks_statistic", "ks_pvalue",
                 "ks_method", "psi", "psi_band", "psi_pvalue", "psi_critical", "psi_reading",
                 "psi_method", "psi_n_resamples", "n_bins", "status")

#: permutations per batch: a batch holds (batch, n_reference + n) counts of int32
_CELLS = 1 << 22
#: ``method="auto"`` takes the chi-square approximation once every bin expects at least this
#: many values of each sample: there its level was within Monte Carlo error of alpha (6,000
#: null pairs each at 1,000 + 1,000, 2,000 + 1,000, 5,000 + 2,000 values, 10 bins: 4.5-5.3 %
#: at 5 %), and a permutation null of 20,000 + 20,000 values costs seconds per period
ASYMPTOTIC_MIN_EXPECTED = 100
PSI_METHODS = ("auto", "permutation", "asymptotic")
#: permutations draw only the smaller sample's positions where it is at most 1/8 of the pool
#: (a period of 500 against a reference of a million: 47 s on the full pool)
_SPARSE_RATIO = 8
_REL_TOL = 1e-12  # PSI values that differ by rounding only count as equal (as scipy does)


@dataclass(frozen=True, slots=True, kw_only=True)
class PSIResult(_ToDict):
    """A population stability index with the bins it was computed over.

    ``edges`` are the interior bin edges (bin *i* is ``[edges[i-1], edges[i])``, the outer
    bins open); ``expected``/``actual`` the reference and current fractions per bin before
    the floor; ``psi`` uses fractions floored at ``min_fraction``.  ``band`` is the
    conventional reading of the value alone (:data:`PSI_BANDS`); ``reading`` is the band
    where the test finds the PSI beyond chance (``pvalue < alpha``) or the band is
    "stable", else :data:`WITHIN_CHANCE`, and :data:`ONE_BIN` where the reference occupies
    one bin.  ``critical`` is the test's boundary: a PSI above it has ``pvalue < alpha``
    (permutations: the largest null value whose p-value is still at least ``alpha``; the
    approximation: the chi-square's ``1 - alpha`` quantile, scaled), so with no drift a PSI
    exceeds it at most ``alpha`` of the time.  Without a test (``n_resamples=0``) the three
    are nan, nan and ``band``; ``method`` says which null was used.
    """

    psi: float
    band: str
    edges: NDArray[np.float64]
    expected: NDArray[np.float64]
    actual: NDArray[np.float64]
    n_reference: int
    n: int
    min_fraction: float
    pvalue: float = math.nan
    critical: float = math.nan
    reading: str = ""
    alpha: float = 0.05
    n_resamples: int = 0
    seed: int | None = None
    method: str = ""
    null_distribution: NDArray[np.float64] | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftResult(_ToDict):
    """Per period x subset drift rows (:data:`DRIFT_COLUMNS`), periods in order."""

    rows: tuple[dict[str, Any], ...]
    periods: tuple[Any, ...]
    reference: tuple[Any, ...]
    options: dict[str, Any] = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        """The rows as a list of plain dicts (one per period x subset)."""
        return [dict(r) for r in self.rows]

    def to_frame(self):
        """The rows as a pandas DataFrame with :data:`DRIFT_COLUMNS` (pandas imported here)."""
        import pandas as pd

        return pd.DataFrame(self.records(), columns=list(DRIFT_COLUMNS))


def _check_bins(n_bins: int) -> None:
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 2:
        raise MedauditError(f"n_bins must be an integer of at least 2; got {n_bins!r}.")


def psi_edges(reference: ArrayLike, *, n_bins: int = 10) -> NDArray[np.float64]:
    """Interior bin edges at the reference's ``k / n_bins`` quantiles (numpy "linear"), ties merged.

    A tied value on which a quantile falls (0.0 for 95 % of the reference, say: several
    quantiles, or the lowest one at the minimum) gets a bin of its own: an edge is added at
    the next reference value above it, unless an edge already comes first.  Bins are
    ``[e_{i-1}, e_i)``, so without that edge the tied value would share its bin with every
    value up to the next quantile above it, or with all of them, and PSI could not see a
    shift between the tied value and the rest (95 % zeros becoming 50 % would read 0).

    Examples
    --------
    >>> psi_edges(np.arange(1, 11), n_bins=2).tolist()
    [5.5]
    >>> psi_edges([1, 1, 1, 2], n_bins=4).tolist()  # tied quantiles make one edge
    [1.0, 1.25]
    >>> psi_edges([0] * 19 + [1], n_bins=10).tolist()  # 0 gets its bin [0, 1)
    [0.0, 1.0]
    """
    ref = as_1d_float(reference, name="reference")
    _check_bins(n_bins)
    ref_sorted = np.sort(ref)
    cuts = np.quantile(ref_sorted, np.arange(1, n_bins) / n_bins)[None, :]

    def next_above(v):
        at = np.searchsorted(ref_sorted, v, side="right")
        return np.where(at < ref_sorted.size, ref_sorted[np.minimum(at, ref_sorted.size - 1)], np.inf)

    return np.unique(_isolate_ties(cuts, next_above, ref_sorted[:1]))


def _isolate_ties(cuts: NDArray[np.float64], next_above, lowest: NDArray[np.float64]
                  ) -> NDArray[np.float64]:
    """Each row of sorted quantile ``cuts`` (k, m) with, for every tied value a cut falls on,
    an edge at ``next_above(cuts)`` (the next reference value above it, +inf for none) where
    that comes before the next higher cut: (k, 2m), sorted, duplicates kept (a repeated edge
    makes a bin empty in both samples, which adds ``0 * log 1``).

    A cut is on a tied value where two or more cuts fall on it, or where it is the row's
    reference minimum ``lowest`` (k,): a quantile strictly inside the sample equals the
    minimum only if two values or more do, and the bin below it is then empty (at two bins
    the one cut can sit there alone).
    """
    m = cuts.shape[1]
    if m == 0:
        return cuts
    tied = cuts == np.asarray(lowest, dtype=np.float64).reshape(-1, 1)
    same = cuts[:, 1:] == cuts[:, :-1]
    tied[:, 1:] |= same
    tied[:, :-1] |= same
    higher = np.full(cuts.shape, np.inf)  # the next cut above each cut's value
    for j in range(m - 2, -1, -1):
        higher[:, j] = np.where(cuts[:, j + 1] > cuts[:, j], cuts[:, j + 1], higher[:, j + 1])
    nxt = next_above(cuts)
    extra = np.where(tied & (nxt < higher), nxt, cuts)
    return np.sort(np.concatenate([cuts, extra], axis=1), axis=1)


def _band(psi: float) -> str:
    if math.isnan(psi):
        return ""
    return next(name for top, name in PSI_BANDS if psi < top)


def _psi_from_counts(c_ref: NDArray[Any], c_cur: NDArray[Any], n_ref: int, n_cur: int,
                     floor: float) -> NDArray[np.float64]:
    """PSI along the last axis from bin counts: the one formula the statistic and its null share."""
    ef = np.maximum(c_ref / n_ref, floor)
    af = np.maximum(c_cur / n_cur, floor)
    return np.sum((af - ef) * np.log(af / ef), axis=-1)


def _psi_below(below_ref: NDArray[np.int64], below_cur: NDArray[np.int64], n_ref: int, n_cur: int,
               floor: float) -> NDArray[np.float64]:
    """PSI of each row from the counts of each sample below each interior edge (k, edges)."""
    zeros = np.zeros((below_ref.shape[0], 1), dtype=np.int64)
    c_ref = np.diff(np.hstack([zeros, below_ref, zeros + n_ref]), axis=1)
    c_cur = np.diff(np.hstack([zeros, below_cur, zeros + n_cur]), axis=1)
    return _psi_from_counts(c_ref, c_cur, n_ref, n_cur, floor)


def _permutation_masks(gen: np.random.Generator, k: int, n_ref: int, n_cur: int) -> NDArray[np.bool_]:
    """``k`` random splits of the pooled sample: True marks the ``n_ref`` values of the reference."""
    pattern = np.r_[np.ones(n_ref, dtype=bool), np.zeros(n_cur, dtype=bool)]
    return gen.permuted(np.broadcast_to(pattern, (k, pattern.size)), axis=1)


def _psi_null(xs: NDArray[np.float64], masks: NDArray[np.bool_], n_ref: int, floor: float, *,
              n_bins: int, edges: NDArray[np.float64] | None) -> NDArray[np.float64]:
    """PSI of each split of the sorted pooled values ``xs`` (rows of ``masks``).

    Without declared ``edges`` each split is binned afresh: its reference is ``xs[mask]``
    (sorted, as ``xs`` is), so its quantile edges are numpy's own on the same values (the
    statistic's arithmetic, to the bit).  The count of values below an edge comes from the
    pooled order without a per-split sort: the pooled values below it (one
    ``searchsorted`` for every edge of the batch) less the reference values among them (a
    cumulative count of the mask).  Tied edges give bins empty in both samples, which add
    ``0 * log 1``: merging them, as :func:`psi_edges` does, changes nothing; a value on
    which several quantiles of a split fall gets its bin, as there (:func:`_isolate_ties`).
    """
    k, n_pool = masks.shape
    n_cur = n_pool - n_ref
    ref_cum = np.zeros((k, n_pool + 1), dtype=np.int32)
    np.cumsum(masks, axis=1, dtype=np.int32, out=ref_cum[:, 1:])
    if edges is None:
        ref_sorted = np.broadcast_to(xs, masks.shape)[masks].reshape(k, n_ref)
        cuts = np.quantile(ref_sorted, np.arange(1, n_bins) / n_bins, axis=1).T  # (k, n_bins - 1)

        def next_above(v):  # the split's reference values up to v, then the one after them
            upto = np.searchsorted(xs, v.ravel(), side="right").reshape(v.shape)
            at = np.take_along_axis(ref_cum, upto, axis=1)
            got = np.take_along_axis(ref_sorted, np.minimum(at, n_ref - 1), axis=1)
            return np.where(at < n_ref, got, np.inf)

        cuts = _isolate_ties(cuts, next_above, ref_sorted[:, 0])
    else:
        cuts = np.broadcast_to(edges, (k, edges.size))
    below_pool = np.searchsorted(xs, cuts.ravel(), side="left").reshape(cuts.shape)
    below_ref = np.take_along_axis(ref_cum, below_pool, axis=1)
    return _psi_below(below_ref, below_pool - below_ref, n_ref, n_cur, floor)


def _linear_edges(sorted_at: Any, n: int, n_bins: int) -> NDArray[np.float64]:
    """numpy's "linear" quantiles at ``k / n_bins`` of a sorted sample of size ``n``, read
    through ``sorted_at(index_array)`` (the values at those order statistics), in numpy's
    own arithmetic: virtual index ``(n - 1) q``, and ``b - (b - a)(1 - g)`` for ``g >= 0.5``.
    :func:`population_stability_index` checks the result against ``np.quantile`` on the
    observed reference before trusting it.
    """
    q = np.arange(1, n_bins) / n_bins
    virtual = (n - 1) * q
    below = np.floor(virtual)
    g = virtual - below
    lo = np.clip(below.astype(np.int64), 0, n - 1)
    hi = np.clip(lo + 1, 0, n - 1)
    lo = np.where(virtual >= n - 1, n - 1, np.where(virtual < 0, 0, lo))
    a, b = sorted_at(lo), sorted_at(hi)
    diff = b - a
    return np.where(g >= 0.5, b - diff * (1 - g), a + diff * g)


def _psi_null_sparse(xs: NDArray[np.float64], few: NDArray[np.int64], n_ref: int, floor: float, *,
                     n_bins: int, edges: NDArray[np.float64] | None, few_are_reference: bool
                     ) -> NDArray[np.float64]:
    """PSI of each split given by the sorted pooled positions ``few`` (k, s) of the smaller sample.

    The null of a small period against a large reference (or the reverse) without a
    (k, pooled) matrix: the reference's order statistic ``t`` sits at pooled position
    ``t + #{j: few_j - j <= t}`` when the few are the current period, at ``few_t`` when they
    are the reference; the counts below an edge are one ``searchsorted`` of the pooled
    values and one of the few positions (rows kept apart by an offset of the pool size).
    """
    k, n_few = few.shape
    n_pool = xs.size
    n_cur = n_pool - n_ref
    rows = np.arange(k)[:, None]
    span = n_pool + 1  # integers of one row never reach the next row's offset
    few_keys = (few + rows * span).ravel()

    def few_below(pos):  # per row, the few positions below pooled positions pos (k, m)
        return (np.searchsorted(few_keys, (pos + rows * span).ravel(), side="left").reshape(pos.shape)
                - rows * n_few)

    if edges is None:
        if few_are_reference:
            def sorted_at(t):  # t: (m,) order statistics of every row, or (k, m) per row
                return xs[few[:, t]] if t.ndim == 1 else xs[np.take_along_axis(few, t, axis=1)]
        else:
            gaps = (few - np.arange(n_few)) + rows * span  # non-decreasing within, across rows

            def sorted_at(t):
                pos = t + np.searchsorted(gaps.ravel(), (t + rows * span).ravel(),
                                          side="right").reshape(np.broadcast(t, rows).shape)
                return xs[pos - rows * n_few]

        def next_above(v):  # the split's reference values up to v, then the one after them
            upto = np.searchsorted(xs, v.ravel(), side="right").reshape(v.shape)
            at = few_below(upto) if few_are_reference else upto - few_below(upto)
            return np.where(at < n_ref, sorted_at(np.minimum(at, n_ref - 1)), np.inf)

        lowest = sorted_at(np.zeros((k, 1), dtype=np.intp))[:, 0]
        cuts = _isolate_ties(_linear_edges(sorted_at, n_ref, n_bins), next_above, lowest)
    else:
        cuts = np.broadcast_to(edges, (k, edges.size))
    below_pool = np.searchsorted(xs, cuts.ravel(), side="left").reshape(cuts.shape)
    below_few = few_below(below_pool)
    below_ref, below_cur = (below_few, below_pool - below_few) if few_are_reference else (
        below_pool - below_few, below_few)
    return _psi_below(below_ref, below_cur, n_ref, n_cur, floor)


def population_stability_index(reference: ArrayLike, current: ArrayLike, *, n_bins: int = 10,
                               edges: ArrayLike | None = None, min_fraction: float = 1e-4,
                               n_resamples: int = 999, alpha: float = 0.05, method: str = "auto",
                               rng: RNGLike = None, batch: int | None = None) -> PSIResult:
    """Population stability index of ``current`` against ``reference``, with a p-value against chance.

    Parameters
    ----------
    reference : array-like of shape (n_reference,)
        Scores of the reference period.
    current : array-like of shape (n,)
        Scores of the period compared.
    n_bins : int, default=10
        Bins at the reference's quantiles (:func:`psi_edges`) when ``edges`` is not given.
    edges : array-like, optional
        Interior edges declared in advance (increasing); bin *i* is ``[e_{i-1}, e_i)``.
    min_fraction : float, default=1e-4
        Floor of a bin's fraction, so that a bin empty in one period gives a large but
        finite term (the usual 0.01 %).
    n_resamples : int, default=999
        Random splits of the pooled scores for the p-value; 0: no test.
    alpha : float, default=0.05
        Level at which a PSI counts as beyond chance (``reading``; ``critical``).
    method : {"auto", "permutation", "asymptotic"}, default="auto"
        The null of the p-value: the permutation distribution, or Yurdakul's chi-square
        approximation; "auto" takes the approximation only where every bin expects at least
        :data:`ASYMPTOTIC_MIN_EXPECTED` values of each sample (1,000 of each for 10 bins),
        the permutations otherwise.
    rng : int, SeedSequence or Generator, optional
    batch : int, optional
        Splits per batch (memory bound); None: as many as 4 Mi counts hold.

    Returns
    -------
    PSIResult

    Notes
    -----
    ``PSI = sum_i (a_i - e_i) log(a_i / e_i)`` with ``e_i`` the reference fraction and
    ``a_i`` the current fraction of bin *i*: the symmetrised Kullback-Leibler divergence of
    the binned distributions.  Read with :data:`PSI_BANDS` (below 0.1 stable, 0.1-0.25
    moderate, 0.25 and above major; Siddiqi 2006, *Credit Risk Scorecards*).

    The bands ignore sample size.  With no drift, PSI is about ``(k - 1)(1/n_ref + 1/n)``
    for k bins (asymptotically that times a chi-square of k - 1 degrees of freedom;
    Yurdakul 2018, *Statistical properties of the population stability index*), and more
    at small sizes, where a bin is often empty and meets the floor: 20 scores against 20
    give a PSI near 1.9 on average.  The p-value therefore comes from the definition of
    "no drift": both periods' scores exchangeable.  Each split of the pooled scores into
    samples of the two sizes is binned afresh at its own reference's quantiles (or at the
    declared ``edges``), and ``pvalue = (1 + b) / (1 + n_resamples)`` with ``b`` the splits
    whose PSI is at least the observed one.  Where one sample is at most 1/8 of the pool
    (a small period against a large reference), each split draws only that sample's
    positions, and the other's order statistics are read from them, so a split costs the
    small sample's size, not the pool's.  Where every bin expects many values of both
    samples the approximation is as good and far cheaper: ``pvalue`` is then the chi-square
    tail of ``PSI / (1/n_ref + 1/n)`` with k - 1 degrees of freedom (k the bins holding
    reference values; nan where that is one bin).

    Examples
    --------
    Reference 1..10 in two bins at the median 5.5; the current 1..8 puts 5/8 in the lower
    bin: ``(5/8 - 1/2) log(5/4) + (3/8 - 1/2) log(3/4)``:

    >>> r = population_stability_index(np.arange(1, 11), np.arange(1, 9), n_bins=2, rng=0)
    >>> round(r.psi, 6), r.band, r.reading
    (0.063853, 'stable', 'stable')
    """
    ref = as_1d_float(reference, name="reference")
    cur = as_1d_float(current, name="current")
    floor = check_fraction(min_fraction, name="min_fraction")
    level = check_fraction(alpha, name="alpha")
    tests = 0 if isinstance(n_resamples, (int, np.integer)) and not isinstance(n_resamples, bool) \
        and n_resamples == 0 else check_n_resamples(n_resamples)
    batch = check_batch(batch)
    how = check_option(method, PSI_METHODS, name="method")
    if tests and how != "asymptotic" and 1.0 / (1 + tests) >= level:
        raise MedauditError(f"n_resamples={tests} gives permutation p-values of at least "
                            f"1/{tests + 1}, never below alpha={level:g}; use at least "
                            f"{math.ceil(1 / level)} permutations.")
    if edges is None:
        e = psi_edges(ref, n_bins=n_bins)
    else:
        _check_bins(n_bins)  # unused then, but a bad value is still a mistake to name
        e = as_1d_float(edges, name="edges", allow_empty=True)
        if (np.diff(e) <= 0).any():
            raise MedauditError(f"edges must be strictly increasing; got {e.tolist()!r}.")
    k = e.size + 1
    c_ref = np.bincount(np.searchsorted(e, ref, side="right"), minlength=k)
    c_cur = np.bincount(np.searchsorted(e, cur, side="right"), minlength=k)
    psi = float(_psi_from_counts(c_ref, c_cur, ref.size, cur.size, floor))
    expected, actual = c_ref / ref.size, c_cur / cur.size
    band = _band(psi)
    pvalue = critical = math.nan
    null, seed, used = None, None, ""
    # the bins the reference occupies: one it leaves empty (below a minimum tied at the
    # first decile, say) expects nothing of either sample under no drift
    least = min(ref.size, cur.size) * float(expected[c_ref > 0].min())
    if tests and how == "auto":
        how = "asymptotic" if least >= ASYMPTOTIC_MIN_EXPECTED else "permutation"
    elif tests and how == "asymptotic" and least < ASYMPTOTIC_MIN_EXPECTED:
        warnings.warn(f"population_stability_index: method='asymptotic' with {least:.3g} values "
                      f"expected in the emptiest bin (under {ASYMPTOTIC_MIN_EXPECTED}): the "
                      "chi-square approximation is anti-conservative there (20 against 20 "
                      "reject about half of the null pairs at 5 %); 'auto' would permute.",
                      UserWarning, stacklevel=2)
    if tests and how == "asymptotic":
        from scipy import stats

        df = int(np.count_nonzero(c_ref)) - 1  # bins the reference occupies
        scale = 1.0 / ref.size + 1.0 / cur.size
        if df > 0:  # a reference in one bin has no chi-square to compare with: nan
            pvalue = float(stats.chi2.sf(psi / scale, df))
            critical = float(stats.chi2.ppf(1 - level, df) * scale)
        used = f"asymptotic: PSI / (1/n_ref + 1/n) ~ chi-square({df}) (Yurdakul 2018)"
    elif tests:
        gen, rec = as_generator(rng)
        seed = rec["seed"]
        xs = np.sort(np.r_[ref, cur])
        null = np.empty(tests)
        n_few = min(ref.size, cur.size)
        sparse = n_few * _SPARSE_RATIO <= xs.size
        if sparse and edges is None:  # trust the edges' arithmetic only where it is numpy's
            ref_sorted = np.sort(ref)
            sparse = np.array_equal(_linear_edges(ref_sorted.__getitem__, ref.size, n_bins),
                                    np.quantile(ref, np.arange(1, n_bins) / n_bins))
        if sparse:
            # a small sample against a large one: draw the small one's positions only
            step = batch or max(1, _CELLS // max(n_few, 1))
            for lo in range(0, tests, step):
                k = min(step, tests - lo)
                few = np.sort(np.stack([gen.choice(xs.size, n_few, replace=False) for _ in range(k)]),
                              axis=1)
                null[lo:lo + k] = _psi_null_sparse(xs, few, ref.size, floor, n_bins=n_bins,
                                                   edges=None if edges is None else e,
                                                   few_are_reference=ref.size == n_few)
        else:
            step = batch or max(1, _CELLS // xs.size)
            for lo in range(0, tests, step):
                masks = _permutation_masks(gen, min(step, tests - lo), ref.size, cur.size)
                null[lo:lo + masks.shape[0]] = _psi_null(xs, masks, ref.size, floor, n_bins=n_bins,
                                                         edges=None if edges is None else e)
        b = int((null >= psi - _REL_TOL * max(psi, 1.0)).sum())
        pvalue = (1 + b) / (1 + tests)
        # the boundary of the test: the largest null value whose own p-value is >= alpha
        ranked = np.sort(null)
        at_least = tests - np.searchsorted(ranked, ranked - _REL_TOL * np.maximum(ranked, 1.0))
        critical = float(ranked[(1 + at_least) / (1 + tests) >= level][-1])
        null.flags.writeable = False
        used = f"permutation ({tests} splits of the pooled scores, rebinned per split)"
    if np.count_nonzero(c_ref) < 2:
        reading = ONE_BIN
    else:
        reading = WITHIN_CHANCE if band != PSI_BANDS[0][1] and pvalue >= level else band
    for a in (e, expected, actual):
        a.flags.writeable = False
    return PSIResult(psi=psi, band=band, edges=e, expected=expected, actual=actual,
                     n_reference=int(ref.size), n=int(cur.size), min_fraction=floor, pvalue=pvalue,
                     critical=critical, reading=reading, alpha=level,
                     n_resamples=0 if null is None else tests, seed=seed, method=used,
                     null_distribution=null)


def ks_drift(reference: ArrayLike, current: ArrayLike) -> TestResult:
    """Two-sample Kolmogorov-Smirnov test of ``current`` against ``reference`` (two-sided).

    Computed by :func:`scipy.stats.ks_2samp` (``method="auto"``: exact when both samples
    have at most 10,000 values, else Smirnov's asymptotic distribution); ``statistic`` is
    ``D = sup_x |F_ref(x) - F_cur(x)|``.  Checked against the definition (both empirical
    distribution functions at every observed value) and, for small untied samples, against
    the permutation distribution of ``D`` enumerated in full.

    Examples
    --------
    >>> r = ks_drift([1, 2, 3, 4], [3.5, 5, 6, 7])
    >>> r.statistic, round(r.pvalue, 6)
    (0.75, 0.228571)
    """
    from scipy import stats

    ref = as_1d_float(reference, name="reference")
    cur = as_1d_float(current, name="current")
    how = "exact p-value" if max(ref.size, cur.size) <= 10_000 else "asymptotic p-value"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = stats.ks_2samp(ref, cur, method="auto")
    # scipy falls back to the asymptotic p-value (with a RuntimeWarning) when its exact
    # recursion cannot finish, e.g. on some heavily tied samples: say so instead of warning
    if any("Switching to" in str(w.message) for w in caught):
        how = "asymptotic (the exact calculation did not finish) p-value"
    elif how == "exact p-value" and np.unique(np.r_[ref, cur]).size < ref.size + cur.size:
        # scipy's exact distribution of D assumes continuous data; with tied values the
        # p-value it gives is conservative (too large), not exact
        how = "p-value conservative here: tied values (exact only for untied data)"
    return TestResult(method=f"two-sample Kolmogorov-Smirnov (scipy ks_2samp, {how})",
                      statistic=float(res.statistic), pvalue=float(res.pvalue), n=int(cur.size),
                      details={"n_reference": int(ref.size)})


#: month names: sorted as text they leave time order ("apr" < "jan")
_MONTH_NAME = re.compile(r"(?i)\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?"
                         r"|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?)\b")
_NUMBER = re.compile(r"[0-9]+")


def _misordered_text(values: Sequence[Any]) -> str | None:
    """What makes the text periods' sort unsafe as time order (quoted values), or None.

    Refused: month names; text holding two or more numbers whose first is not a four-digit
    year ("Q4 2025" sorts after "Q1 2026", "10/15/2025" after "1/15/2026", "15.01.2026"
    after "01.02.2026"); numbers of different widths at one place ("p10" before
    "p2", "2026-10" before "2026-7"); and year-first periods in different forms
    ("2026-03" beside "2026-Q1", which overlap; "2026/02" beside "2026-11").  One period
    has no order to get wrong; year-first text ("2026-07", "2026/07/15", "2026-Q3") and
    other labels sort as given.
    """
    text = [v for v in values if isinstance(v, str)]
    if len(set(values)) < 2 or not text:
        return None
    for v in text:
        numbers = _NUMBER.findall(v)
        if _MONTH_NAME.search(v) or (len(numbers) >= 2 and len(numbers[0]) != 4):
            return repr(v)
    if len(text) == len(set(values)) and all(_ISO_PERIOD.match(v) for v in text):
        # year-first periods in different forms: of different lengths ("2026-01" beside
        # "2026-Q1" or "2026", which overlap, so no order of them is time order) or with
        # other separators ("2026/02" sorts after "2026-11" as text)
        forms = {re.sub(r"[0-9]", "9", v): v for v in sorted(text)}
        if len(forms) > 1:
            a, b = sorted(forms.values())[:2]
            return (f"{a!r} and {b!r} are written in different forms (periods of different "
                    "lengths overlap; other separators sort apart)")

    def natural(v: str) -> tuple:  # ASCII digit runs as numbers, the rest as text
        return tuple((0, int(part), "") if part[0] in "0123456789" else (1, 0, part)
                     for part in re.findall(r"[0-9]+|[^0-9]+", v))

    as_text = sorted(text)
    as_numbers = sorted(text, key=natural)
    if as_text != as_numbers:
        # the first place where the orders part: text puts a before b ("2026-10" before
        # "2026-2"); both are named, since either may be the one written oddly
        a, b = next((a, b) for a, b in zip(as_text, as_numbers, strict=True) if a != b)
        return f"{b!r} sorts after {a!r} as text"
    return None


def ordered_categories(values: Any) -> list[Any] | None:
    """The categories of an *ordered* pandas categorical that occur in ``values``, in their
    declared order (None for anything else): such a column says its own order ("Jan" before
    "Feb"), which sorting its values as text would lose."""
    dtype = getattr(values, "dtype", None)
    if getattr(dtype, "name", None) != "category" or not getattr(dtype, "ordered", False):
        return None
    present = set(np.asarray(values, dtype=object).tolist())
    return [c for c in dtype.categories.tolist() if c in present]


#: year-first period labels whose text order is their time order: 2026, 2026-07, 2026/07/15,
#: 2026-Q3, 2026-W05
_ISO_PERIOD = re.compile(r"^[0-9]{4}(?:[-/](?:[0-9]{2}|Q[1-4]|W[0-9]{2})(?:[-/][0-9]{2})?)?$")


def warn_if_out_of_time_order(order: Sequence[Any], *, stacklevel: int = 2) -> None:
    """Warn where declared periods are all year-first dates of one form but not in time order
    (a hand-typed --periods or --period-files list): the looks run in the order declared,
    which is then most likely not the order the data were read in.  Called once per run by
    the monitor (:func:`period_order` runs for every claim and score column)."""
    order = list(order)
    if len(order) < 2 or not all(isinstance(p, str) and _ISO_PERIOD.match(p) for p in order):
        return
    if len({len(p) for p in order}) != 1 or order == sorted(order):
        return
    first = next(b for a, b in zip(order, sorted(order), strict=True) if a != b)
    at = order.index(first)
    warnings.warn(f"the periods are declared out of time order ({order[at - 1]!r} before "
                  f"{first!r}): the looks run in the order declared; if that was not meant, "
                  "give them in time order.", UserWarning, stacklevel=stacklevel + 1)


def period_order(period: Sequence[Any] | NDArray[Any], periods: Sequence[Any] | None, *,
                 warn_empty: bool = False) -> list[Any]:
    """The periods in order: ``periods`` as declared (every value must be listed), else the
    order of an ordered categorical column, else sorted.

    Values are compared as given; numbers, dates and ISO text ("2026-07", "2026-Q3") sort as
    time does.  Text whose sort may not be its time order (month names, "10/15/2025",
    "p10" before "p2") is refused without ``periods``: the looks would run out of order.
    ``warn_empty``: warn where ``periods`` lists a period no row has (once per run: the
    monitor's own check of the periods a user declared, not its calls per claim).
    """
    if periods is None:
        periods = ordered_categories(period)
    arr = np.asarray(period, dtype=object)
    missing = missing_mask(arr) | np.array([isinstance(v, str) and not v.strip() for v in arr.tolist()],
                                           dtype=bool).reshape(arr.shape)
    if missing.any():
        # each NaN is a value of its own to dict.fromkeys: one empty period per missing row
        raise MedauditError(f"the period column has {int(missing.sum())} missing or blank value(s) (first "
                            f"at index {int(np.flatnonzero(missing)[0])}); give every score its "
                            "period, or drop the rows without one.")
    present = list(dict.fromkeys(arr.tolist()))
    if periods is None and (bad := _misordered_text(present)) is not None:
        raise MedauditError(
            f"the period column holds text whose sorted order need not be its time order "
            f"({bad}; ISO forms sort as time: 2026-07, 2026-07-15, 2026-Q3); give the "
            "periods in order (periods=[...], or --periods), or write them in ISO form.")
    if periods is not None:
        order = list(periods)
        if len(set(order)) != len(order):
            raise MedauditError(f"periods lists a period twice: {order!r}.")
        missing = [p for p in present if p not in set(order)]
        if missing:
            raise MedauditError(f"the period column has {missing[:5]!r}, which periods= does not "
                                "list; declare every period, in order.")
        if warn_empty and (empty := [p for p in order if p not in set(present)]):
            # a look without a case tells nothing, yet counts among the looks (and, under
            # alpha spending, spends its share): said, not refused (a batch may be empty)
            what = ("its look has no case but still counts as a look" if len(empty) == 1
                    else "their looks have no case but still count as looks")
            warnings.warn(f"the declared periods (--periods, periods=) list {empty[:5]!r}, which "
                          f"no row has: {what}.", UserWarning, stacklevel=3)
        return order
    try:
        return sorted(present)
    except TypeError:
        raise MedauditError("the period column mixes kinds of values (e.g. numbers and text), so "
                            "its order is unknown; give periods= in order.") from None


def _base_sequence(rng: RNGLike) -> tuple[np.random.SeedSequence, dict[str, Any]]:
    """The seed sequence the rows' streams derive from, without advancing a caller's sequence.

    A SeedSequence given is copied (spawning from it would change it, so the same object
    would give other draws next time); a Generator gives one draw of entropy.
    """
    if isinstance(rng, np.random.Generator):
        ss = np.random.SeedSequence(int(rng.integers(2**63)))
        return ss, {"seed": None, "entropy": int(ss.entropy), "spawn_key": [],
                    "seed_source": "one draw of the generator given"}
    if isinstance(rng, np.random.SeedSequence):
        ss = np.random.SeedSequence(rng.entropy, spawn_key=rng.spawn_key, pool_size=rng.pool_size)
        ent = ss.entropy
        return ss, {"seed": int(ent) if isinstance(ent, (int, np.integer)) else None,
                    "entropy": ent if isinstance(ent, (int, np.integer)) else [int(x) for x in ent],
                    "spawn_key": list(ss.spawn_key), "seed_source": "SeedSequence"}
    gen, rec = as_generator(rng)
    return gen.bit_generator.seed_seq, rec


def score_drift(period: ArrayLike, y_score: ArrayLike, *, y_true: ArrayLike | None = None,
                periods: Sequence[Any] | None = None, reference: Sequence[Any] | None = None,
                n_bins: int = 10, min_fraction: float = 1e-4, n_resamples: int = 999,
                alpha: float = 0.05, method: str = "auto", rng: RNGLike = None) -> DriftResult:
    """KS and PSI of each period's scores against a reference, for all, positives and negatives.

    Parameters
    ----------
    period : array-like of shape (n_samples,)
        Period of each case (e.g. "2026-07").
    y_score : array-like of shape (n_samples,)
        Scores (finite).
    y_true : array-like of shape (n_samples,), optional
        Labels 0/1, NaN where not known yet; positives and negatives are compared
        separately among the labelled cases.  Without labels only ``"all"`` rows.
    periods : sequence, optional
        The periods in order (default: the sorted values of ``period``).
    reference : sequence, optional
        Period(s) whose scores form the reference (default: the first period).  Bins are
        declared from the reference's quantiles, per subset.
    n_bins : int, default=10
    min_fraction : float, default=1e-4
    n_resamples : int, default=999
    alpha : float, default=0.05
    method : {"auto", "permutation", "asymptotic"}, default="auto"
        See :func:`population_stability_index` (``n_resamples`` permutations for each PSI
        p-value, 0: none; the chi-square approximation where every bin expects 100 values).
    rng : int, SeedSequence or Generator, optional
        Each row's permutations draw from their own stream, spawned in row order.

    Returns
    -------
    DriftResult
        Rows with :data:`DRIFT_COLUMNS`; a subset empty in the period or the reference has
        nan statistics and ``status`` saying which.  Reference periods are compared with the
        reference too (their rows are not evidence of stability, and get no KS or PSI p-value).
        ``psi_band`` reads the value alone; ``psi_reading`` is the band where the shift is
        beyond chance (``psi_pvalue < alpha``), else "within chance at this size";
        ``psi_critical`` is the PSI that samples of these sizes exceed by chance with
        probability ``alpha``; ``psi_n_resamples`` the permutations behind ``psi_pvalue``
        (0 for the chi-square approximation), whose smallest value is ``1 / (1 + B)``.

    Examples
    --------
    >>> per = ["2026-01"] * 4 + ["2026-02"] * 4
    >>> r = score_drift(per, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], n_bins=2, rng=0)
    >>> [(row["period"], row["ks_statistic"], round(row["psi"], 4)) for row in r.rows]
    [('2026-01', 0.0, 0.0), ('2026-02', 1.0, 4.6043)]
    >>> r.rows[1]["psi_band"], r.rows[1]["psi_reading"]  # 4 against 4: 1 split in 7 is as far
    ('major shift', 'within chance at this size')
    """
    s = as_1d_float(y_score, name="y_score")
    per = np.asarray(period, dtype=object)
    if per.ndim != 1 or per.size != s.size:
        raise MedauditError(f"period must give one value per score; got {per.size} for {s.size} "
                            "scores.")
    if y_true is None:
        y = np.full(s.size, np.nan)
    else:
        y = np.asarray(y_true, dtype=np.float64)
        if y.shape != s.shape:
            raise MedauditError(f"y_true must give one value per score; got {y.size} for "
                                f"{s.size} scores.")
        known = ~np.isnan(y)
        if ((y[known] != 0) & (y[known] != 1)).any():
            raise MedauditError("y_true must be 0, 1 or NaN (not labelled yet); found "
                                f"{float(y[known][(y[known] != 0) & (y[known] != 1)][0])!r}.")
    order = period_order(per, ordered_categories(period) if periods is None else periods)
    if isinstance(reference, (str, bytes)):
        raise MedauditError(f"reference must be a list of periods; got the text {reference!r} "
                            f"(write reference=[{reference!r}]).")
    ref_periods = [order[0]] if reference is None else list(reference)
    if not ref_periods or len(set(ref_periods)) != len(ref_periods):
        raise MedauditError(f"reference must list one or more periods, each once; got {ref_periods!r}.")
    unknown = [p for p in ref_periods if p not in set(order)]
    if unknown:
        raise MedauditError(f"reference period(s) {unknown!r} are not among the periods {order!r}.")
    in_ref = np.isin(per, np.array(ref_periods, dtype=object))
    subsets = {"all": np.ones(s.size, dtype=bool)}
    if y_true is not None:
        subsets.update(positives=y == 1, negatives=y == 0)
    ref_label = ", ".join(map(str, ref_periods))
    base, rec = _base_sequence(rng)
    rows = []
    for i, p in enumerate(order):
        here = per == p
        for name, mask in subsets.items():
            ref, cur = s[in_ref & mask], s[here & mask]
            # one stream per (period, subset) by position: labels or later periods added
            # do not move the draws of a row
            stream = np.random.SeedSequence(base.entropy, spawn_key=(*base.spawn_key, i,
                                                                    _SUBSET_KEYS[name]))
            row = dict.fromkeys(DRIFT_COLUMNS)
            row.update(period=p, subset=name, reference=ref_label, n_reference=int(ref.size),
                       n=int(cur.size), ks_statistic=math.nan, ks_pvalue=math.nan, psi=math.nan,
                       psi_band="", psi_pvalue=math.nan, psi_critical=math.nan, psi_reading="",
                       psi_method="", psi_n_resamples=0, ks_method="", n_bins=0, status="")
            if ref.size == 0 or cur.size == 0:
                row["status"] = ("no scores in the reference" if ref.size == 0
                                 else "no scores in this period")
            else:
                is_ref = p in ref_periods
                ks = ks_drift(ref, cur)
                ps = population_stability_index(ref, cur, n_bins=n_bins, min_fraction=min_fraction,
                                                n_resamples=0 if is_ref else n_resamples,
                                                alpha=alpha, method=method, rng=stream)
                # a reference period is part of the sample it is compared with: D says how far
                # it sits from the pooled reference, but no p-value tests that (as for PSI)
                ks_p, ks_how = ((math.nan, "two-sample Kolmogorov-Smirnov D only: this period is "
                                 "part of the reference, so no p-value") if is_ref
                                else (ks.pvalue, ks.method))
                row.update(ks_statistic=ks.statistic, ks_pvalue=ks_p, ks_method=ks_how,
                           psi=ps.psi, psi_band=ps.band, psi_pvalue=ps.pvalue,
                           psi_critical=ps.critical, psi_reading="" if is_ref else ps.reading,
                           psi_method=ps.method, psi_n_resamples=ps.n_resamples,
                           n_bins=int(ps.edges.size + 1),
                           status="reference" if is_ref else ("" if ps.reading != ONE_BIN else
                                                              "PSI blind here (the reference "
                                                              "occupies one bin): read the KS test"))
            rows.append(row)
    return DriftResult(rows=tuple(rows), periods=tuple(order), reference=tuple(ref_periods),
                       options={"n_bins": n_bins, "min_fraction": min_fraction,
                                "bins": "reference quantiles k/n_bins (numpy linear), ties merged; a value "
                                        "holding several quantiles gets its own bin",
                                "psi_test": f"{method}: permutation ({n_resamples} splits of the pooled "
                                            "scores, rebinned per split), or the chi-square "
                                            "approximation where every bin expects "
                                            f"{ASYMPTOTIC_MIN_EXPECTED}; alpha {alpha}",
                                "seed": rec["seed"], "entropy": rec["entropy"],
                                "spawn_key": rec["spawn_key"],
                                "streams": "SeedSequence(entropy, spawn_key + (period index, "
                                           "subset: all 0, positives 1, negatives 2))",
                                "multiplicity": "descriptive (no correction over periods)"})
