"""Named resampling designs, compiled into replicate-weight draws.

A design says which units are resampled and within which strata (paper 000
M0.10, paper 002 M2.9).  Every design draws *weights* — how often each item
appears in a replicate — never index arrays, and draws them in batches from one
recorded :class:`numpy.random.Generator`:

* ``ordinary``      — n draws with replacement from all items (class mix varies);
* ``within_label``  — positives and negatives resampled separately (sizes kept);
* ``cluster``       — whole clusters (patients, studies, institutions) resampled,
  optionally within strata that contain whole clusters;
* ``shared_positive`` — one positive resample shared by all contrasts, each
  negative group resampled independently within itself.

Paired analyses apply one draw to several score vectors on the same images;
threshold transport draws source and target independently.

Each replicate consumes one uniform per resampled unit from ``rng.random``, in
row order, so the draws — and therefore every interval — do not depend on the
batch size used to bound memory; and replicates ``start`` to ``stop`` of a run can be
drawn on their own (:meth:`WeightPlan.skip` jumps the generator past the first
``start``), so a run cut into replicate ranges draws exactly the replicates of the
whole run, whatever the cut.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import check_option, missing_mask
from medaudit.exceptions import MedauditError
from medaudit.stats import _progress

__all__ = ["DESIGNS", "WeightPlan", "make_plan", "skip_uniforms"]

DESIGNS = ("ordinary", "within_label", "cluster", "shared_positive")

#: elements of a (batch, n) work array: 2 MiB per array of 8-byte elements, so that the
#: bincount that counts a batch's draws and the kernels' passes over its counts stay within a
#: core's L2 cache (measured on a 2-core Xeon with 2 MiB L2 per core: 1 << 18 ran the paper-000
#: audit in 5.7 s against 6.5 s at 1 << 21, and bincount of 2e8 draws in 0.40 s against
#: 0.68 s); the draws, and so every replicate, do not depend on it
_BATCH_ELEMENTS = 1 << 18


@dataclass(frozen=True, slots=True)
class WeightPlan:
    """A compiled design: how to turn uniforms into per-item replicate counts."""

    design: str
    n_items: int
    n_units: int
    unit_of_item: NDArray[np.intp] | None  # None when units are the items themselves
    units_by_stratum: NDArray[np.intp]  # unit ids grouped by stratum
    col_offset: NDArray[np.intp]  # for draw slot k: where its stratum starts in units_by_stratum
    col_size: NDArray[np.intp]  # for draw slot k: its stratum's number of units
    base: NDArray[np.float64]  # weights of the full sample (1 for every item in the analysis)

    def skip(self, rng: np.random.Generator, n_replicates: int) -> None:
        """Advance ``rng`` past ``n_replicates`` replicates of this plan (one uniform per
        unit each), so that the next draw is replicate ``n_replicates`` of the run.

        A bit generator that can jump (PCG64, the default, and PCG64DXSM) jumps in O(1);
        any other draws the skipped uniforms and drops them.
        """
        skip_uniforms(rng, int(n_replicates) * self.n_units)

    def batches(self, n_resamples: int, rng: np.random.Generator, batch: int | None = None,
                columns: NDArray[np.intp] | None = None) -> Iterator[NDArray[np.float64]]:
        """Yield ``(b, n_items)`` integer count matrices summing to ``n_resamples`` rows.

        ``columns`` (item -> output column, many-to-one allowed; units must be the items,
        not clusters) yields ``(b, columns.max() + 1)`` matrices whose column ``c`` holds
        the total count of the items mapped to ``c``: the same draws, so the same
        replicates, summed or reordered while counting, at no extra pass over the
        ``(b, n)`` counts (a kernel that only needs sums over fixed runs of items, in
        its own order, then never gathers or cumulates the full matrix).
        """
        # a batch larger than the draw would only size the work buffers larger than needed
        auto = max(1, min(n_resamples, _BATCH_ELEMENTS // max(self.n_items, 1)))
        size = min(batch, n_resamples) if batch else auto
        single = bool(np.all(self.col_offset == 0)) and np.array_equal(
            self.units_by_stratum, np.arange(self.n_units))
        # (1 - 2**-52) keeps u * m < m for every u < 1, so floor() never reaches m (a power
        # of two m could otherwise round up); the bias is 2**-52 relative, far below noise
        scale = (self.col_size[0] if single else self.col_size) * (1.0 - 2.0**-52)
        keep = self.base > 0
        masked = not bool(np.all(keep))
        # draw slot k -> the bincount bin of the unit drawn: units_by_stratum[k + offset]
        # (the identity for one stratum), relabelled to output columns when asked
        table = None if single else self.units_by_stratum
        n_cols = self.n_units
        if columns is not None:
            if self.unit_of_item is not None:
                raise ValueError("columns= needs units that are items (not a cluster design).")
            columns = np.asarray(columns, dtype=np.intp)
            n_cols = int(columns.max()) + 1 if columns.size else 0
            if masked:  # excluded items count into one extra column, dropped below
                columns = np.where(keep, columns, n_cols)
            table = columns if single else columns[self.units_by_stratum]
        n_bins = n_cols + (columns is not None and masked)
        # work buffers reused across batches: fresh (b, n) arrays each batch would pay for
        # page faults on every batch; rng.random(out=...) draws exactly the same stream
        u_buf = np.empty((size, self.n_units))
        k_buf = np.empty((size, self.n_units), dtype=np.intp)
        t_buf = u_buf.view(np.intp)  # the relabelled draws overwrite the dead uniforms
        done = 0
        while done < n_resamples:
            b = min(size, n_resamples - done)
            u = rng.random(out=u_buf[:b])
            # the product cast straight into the integer buffer (truncation = floor, as
            # u >= 0): the same values as a float pass then a copy, in one pass
            k = np.multiply(u, scale, out=k_buf[:b], casting="unsafe")
            if table is not None:
                if not single:
                    k += self.col_offset
                # every index is in range, so mode="clip" only skips the bounds check (and
                # the defensive copy numpy makes of `out` under the default mode)
                k = np.take(table, k, out=t_buf[:b], mode="clip")
            k += (np.arange(b, dtype=np.intp) * n_bins)[:, None]
            counts = np.bincount(k.ravel(), minlength=b * n_bins).reshape(b, n_bins)
            # integer counts: gathers and cumulative sums stay exact and skip a float pass;
            # kernels promote to float where they divide or mix with scores
            if columns is not None:
                yield counts[:, :n_cols] if masked else counts
            else:
                w = counts if self.unit_of_item is None else counts[:, self.unit_of_item]
                if masked:
                    w *= keep
                yield w
            done += b
            _progress.report("bootstrap", done, n_resamples)

    def jackknife_strata(self) -> NDArray[np.intp]:
        """The stratum of each row :meth:`jackknife` yields (one id per stratum; the
        BCa acceleration centres each stratum's leave-one-out values on their own mean)."""
        uoi = np.arange(self.n_items) if self.unit_of_item is None else self.unit_of_item
        return self.col_offset[np.unique(uoi[self.base > 0])]

    def jackknife(self, batch: int | None = None) -> Iterator[NDArray[np.float64]]:
        """Yield leave-one-unit-out weights (for BCa acceleration), in batches."""
        auto = max(1, min(self.n_units, _BATCH_ELEMENTS // max(self.n_items, 1)))
        size = min(batch, self.n_units) if batch else auto
        uoi = np.arange(self.n_items) if self.unit_of_item is None else self.unit_of_item
        units = np.unique(uoi[self.base > 0])
        for start in range(0, units.size, size):
            drop = units[start:start + size]
            w = np.broadcast_to(self.base, (drop.size, self.n_items)).copy()
            w[uoi[None, :] == drop[:, None]] = 0.0
            yield w


def skip_uniforms(rng: np.random.Generator, n: int) -> None:
    """Advance ``rng`` past ``n`` draws of ``rng.random`` (one 64-bit output each).

    Examples
    --------
    >>> a = np.random.default_rng(5).random(10)
    >>> g = np.random.default_rng(5)
    >>> skip_uniforms(g, 7)
    >>> bool(np.array_equal(g.random(3), a[7:]))
    True
    """
    if n < 0:
        raise ValueError(f"cannot skip a negative number of draws ({n}).")
    if not n:
        return
    bitgen = rng.bit_generator
    if hasattr(bitgen, "advance") and not isinstance(bitgen, np.random.Philox):
        # PCG64 / PCG64DXSM: ``advance(k)`` is k calls of the 64-bit generator, and every
        # float64 of ``random`` is one such call
        bitgen.advance(n)
        return
    chunk = 1 << 20
    while n > 0:  # any other bit generator: draw and drop, a bounded buffer at a time
        rng.random(min(n, chunk))
        n -= chunk


def _codes(x: ArrayLike, name: str, n: int) -> NDArray[np.intp]:
    arr = np.asarray(x)
    if arr.ndim != 1 or arr.size != n:
        raise MedauditError(f"{name} must be 1-dimensional with one entry per item ({n}); "
                            f"got shape {arr.shape}.")
    missing = missing_mask(arr)
    if missing.any():
        raise MedauditError(f"{name} has {int(missing.sum())} missing value(s) (None, NaN, NA or "
                            f"NaT; first at index {int(np.flatnonzero(missing)[0])}); every item "
                            "needs a value.")
    try:
        _, codes = np.unique(arr, return_inverse=True)
    except TypeError:  # values that do not compare: numbers beside text, say
        kinds = sorted({type(v).__name__ for v in arr.tolist()})
        raise MedauditError(f"{name} mixes kinds of values ({', '.join(kinds)}); give every item "
                            "the same kind of id (e.g. all text).") from None
    return codes.astype(np.intp).reshape(-1)


def _compile(design: str, unit_stratum: NDArray[np.intp], unit_of_item, n_items,
             base) -> WeightPlan:
    n_units = unit_stratum.size
    active_units = np.ones(n_units, dtype=bool)
    if base is not None:
        uoi = np.arange(n_items) if unit_of_item is None else unit_of_item
        active_units = np.zeros(n_units, dtype=bool)
        active_units[uoi[base > 0]] = True
    # inactive units form their own never-counted stratum (their weight is masked by base)
    strat = np.where(active_units, unit_stratum, -1)
    order = np.argsort(strat, kind="stable").astype(np.intp)
    s_sorted = strat[order]
    uniq, start, size = np.unique(s_sorted, return_index=True, return_counts=True)
    pos = np.searchsorted(uniq, strat)
    return WeightPlan(design=design, n_items=n_items, n_units=n_units, unit_of_item=unit_of_item,
                      units_by_stratum=order, col_offset=start[pos].astype(np.intp),
                      col_size=size[pos].astype(np.intp),
                      base=np.ones(n_items) if base is None else base.astype(np.float64))


def make_plan(
    design: str,
    y: NDArray[np.float64],
    *,
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    base: NDArray[np.float64] | None = None,
) -> WeightPlan:
    """Compile ``design`` for labels ``y`` (and cluster/strata ids) into a :class:`WeightPlan`.

    ``strata`` (items) resamples within each stratum (e.g. institution, or the
    positive set and each negative group for ``shared_positive``); for the
    ``cluster`` design strata must hold whole clusters.  ``base`` marks the items
    of the analysis (1) and items carried along but excluded (0).
    """
    design = check_option(design, DESIGNS, name="design")
    n = y.size
    if design == "cluster":
        if cluster is None:
            raise MedauditError("design='cluster' needs cluster= (one cluster id per item, e.g. "
                                "patient_id or study_id).")
        cl = _codes(cluster, "cluster", n)
        n_cl = int(cl.max()) + 1
        if strata is None:
            st_unit = np.zeros(n_cl, dtype=np.intp)
        else:
            st = _codes(strata, "strata", n)
            st_unit = np.full(n_cl, -1, dtype=np.intp)
            st_unit[cl] = st
            if np.any(st_unit[cl] != st):
                bad = int(np.flatnonzero(st_unit[cl] != st)[0])
                raise MedauditError(
                    f"strata must contain whole clusters: cluster of item {bad} spans several "
                    "strata. Resample at a coarser level or fix the cluster ids.")
        per_stratum = np.bincount(st_unit[np.unique(cl)])
        if per_stratum.max(initial=0) < 2:
            # every replicate would redraw the same clusters: an interval of zero width
            # that looks like certainty
            where = "" if strata is None else " in any stratum"
            raise MedauditError(
                f"design='cluster' needs at least two clusters{where} to resample; cluster= "
                f"holds {n_cl} distinct id(s){where and ' with at most one per stratum'}. Give "
                "one id per patient or study, or resample items (design='ordinary').")
        return _compile(design, st_unit, cl, n, base)
    if cluster is not None:
        raise MedauditError(f"cluster= is only used with design='cluster', not {design!r}.")
    if design == "ordinary":
        st = np.zeros(n, dtype=np.intp) if strata is None else _codes(strata, "strata", n)
        if strata is not None and n > 1 and np.bincount(st).max() < 2:
            # as for clusters above: every replicate would be the sample itself, an
            # interval of zero width that looks like certainty
            raise MedauditError(
                f"strata= gives every item a stratum of its own ({n} strata for {n} items), so "
                "no resample differs from the sample; use coarser strata (a site, a scanner), or "
                "leave strata out.")
    elif design == "within_label":
        st = y.astype(np.intp) if strata is None else (
            _codes(strata, "strata", n) * 2 + y.astype(np.intp))
        if strata is not None and n > 1 and np.bincount(st).max() < 2:
            # the same zero-width interval: every stratum holds at most one item of each class
            raise MedauditError(
                "strata= leaves at most one item of each class in every stratum, so with "
                "design='within_label' no resample differs from the sample; use coarser strata "
                "(a site, a scanner), or leave strata out.")
    else:  # shared_positive: strata are the groups; positives form one stratum
        if strata is None:
            raise MedauditError("design='shared_positive' needs strata= (the negative group of "
                                "each item; positives share one stratum).")
        st = _codes(strata, "strata", n)
    return _compile(design, st.astype(np.intp), None, n, base)
