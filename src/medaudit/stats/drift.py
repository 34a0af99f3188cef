"""Drift of the score distribution between periods: two-sample KS and the population stability index.

Labels reach a site late (a diagnosis is confirmed weeks after the image); scores do not.
A shift in where the model puts its scores is an early signal that a claim may stop
holding, before the labels that would show it arrive.  Per period, against a reference
period, for all scores and — where labels are known — for positives and negatives
separately:

* the two-sample Kolmogorov-Smirnov test (:func:`ks_drift`: scipy's ``ks_2samp``, exact
  for small samples, asymptotic for large);
* the population stability index (:func:`population_stability_index`) over bins declared
  from the reference period's quantiles.

These are descriptive signals: no correction is made for the number of periods.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import as_1d_float, check_fraction, missing_mask
from medaudit.exceptions import MedauditError
from medaudit.stats._results import TestResult, _ToDict

__all__ = ["PSIResult", "DriftResult", "psi_edges", "population_stability_index", "ks_drift",
           "score_drift", "PSI_BANDS", "DRIFT_COLUMNS", "period_order"]

#: conventional reading of a PSI value (Siddiqi 2006): below 0.1 stable, 0.1-0.25 a moderate
#: shift, 0.25 and above a major shift
PSI_BANDS = ((0.1, "stable"), (0.25, "moderate shift"), (math.inf, "major shift"))
DRIFT_COLUMNS = ("period", "subset", "reference", "n_reference", "n", "ks_statistic", "ks_pvalue",
                 "ks_method", "psi", "psi_band", "n_bins", "status")


@dataclass(frozen=True, slots=True, kw_only=True)
class PSIResult(_ToDict):
    """A population stability index with the bins it was computed over.

    ``edges`` are the interior bin edges (bin *i* is ``[edges[i-1], edges[i])``, the outer
    bins open); ``expected``/``actual`` the reference and current fractions per bin before
    the floor; ``psi`` uses fractions floored at ``min_fraction``.
    """

    psi: float
    band: str
    edges: NDArray[np.float64]
    expected: NDArray[np.float64]
    actual: NDArray[np.float64]
    n_reference: int
    n: int
    min_fraction: float


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


def psi_edges(reference: ArrayLike, *, n_bins: int = 10) -> NDArray[np.float64]:
    """Interior bin edges at the reference's ``k / n_bins`` quantiles (numpy "linear"), ties merged.

    Examples
    --------
    >>> psi_edges(np.arange(1, 11), n_bins=2).tolist()
    [5.5]
    >>> psi_edges([1, 1, 1, 2], n_bins=4).tolist()  # tied quantiles make one edge
    [1.0, 1.25]
    """
    ref = as_1d_float(reference, name="reference")
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 2:
        raise MedauditError(f"n_bins must be an integer of at least 2; got {n_bins!r}.")
    return np.unique(np.quantile(ref, np.arange(1, n_bins) / n_bins))


def _band(psi: float) -> str:
    if math.isnan(psi):
        return ""
    return next(name for top, name in PSI_BANDS if psi < top)


def population_stability_index(reference: ArrayLike, current: ArrayLike, *, n_bins: int = 10,
                               edges: ArrayLike | None = None, min_fraction: float = 1e-4
                               ) -> PSIResult:
    """Population stability index of ``current`` against ``reference``.

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

    Returns
    -------
    PSIResult

    Notes
    -----
    ``PSI = sum_i (a_i - e_i) log(a_i / e_i)`` with ``e_i`` the reference fraction and
    ``a_i`` the current fraction of bin *i*: the symmetrised Kullback-Leibler divergence of
    the binned distributions.  Read with :data:`PSI_BANDS` (below 0.1 stable, 0.1-0.25
    moderate, 0.25 and above major; Siddiqi 2006, *Credit Risk Scorecards*).

    Examples
    --------
    Reference 1..10 in two bins at the median 5.5; the current 1..8 puts 5/8 in the lower
    bin: ``(5/8 - 1/2) log(5/4) + (3/8 - 1/2) log(3/4)``:

    >>> r = population_stability_index(np.arange(1, 11), np.arange(1, 9), n_bins=2)
    >>> round(r.psi, 6), r.band
    (0.063853, 'stable')
    """
    ref = as_1d_float(reference, name="reference")
    cur = as_1d_float(current, name="current")
    floor = check_fraction(min_fraction, name="min_fraction")
    if edges is None:
        e = psi_edges(ref, n_bins=n_bins)
    else:
        e = as_1d_float(edges, name="edges", allow_empty=True)
        if (np.diff(e) <= 0).any():
            raise MedauditError(f"edges must be strictly increasing; got {e.tolist()!r}.")
    k = e.size + 1
    expected = np.bincount(np.searchsorted(e, ref, side="right"), minlength=k) / ref.size
    actual = np.bincount(np.searchsorted(e, cur, side="right"), minlength=k) / cur.size
    ef, af = np.maximum(expected, floor), np.maximum(actual, floor)
    psi = float(np.sum((af - ef) * np.log(af / ef)))
    for a in (e, expected, actual):
        a.flags.writeable = False
    return PSIResult(psi=psi, band=_band(psi), edges=e, expected=expected, actual=actual,
                     n_reference=int(ref.size), n=int(cur.size), min_fraction=floor)


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
    how = "exact" if max(ref.size, cur.size) <= 10_000 else "asymptotic"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = stats.ks_2samp(ref, cur, method="auto")
    # scipy falls back to the asymptotic p-value (with a RuntimeWarning) when its exact
    # recursion cannot finish, e.g. on some heavily tied samples: say so instead of warning
    if any("Switching to" in str(w.message) for w in caught):
        how = "asymptotic (the exact calculation did not finish)"
    elif how == "exact" and np.unique(np.r_[ref, cur]).size < ref.size + cur.size:
        # scipy's exact distribution of D assumes continuous data; with tied values the
        # p-value it gives is conservative (too large), not exact
        how = "exact for untied data, conservative here: tied values"
    return TestResult(method=f"two-sample Kolmogorov-Smirnov (scipy ks_2samp, {how} p-value)",
                      statistic=float(res.statistic), pvalue=float(res.pvalue), n=int(cur.size),
                      details={"n_reference": int(ref.size)})


def period_order(period: Sequence[Any] | NDArray[Any], periods: Sequence[Any] | None) -> list[Any]:
    """The periods in order: ``periods`` as declared (every value must be listed), else sorted.

    Values are compared as given; ISO months ("2026-07") and integers sort as time does.
    """
    arr = np.asarray(period, dtype=object)
    missing = missing_mask(arr) | np.array([isinstance(v, str) and not v.strip() for v in arr.tolist()],
                                           dtype=bool).reshape(arr.shape)
    if missing.any():
        # each NaN is a value of its own to dict.fromkeys: one empty period per missing row
        raise MedauditError(f"the period column has {int(missing.sum())} missing or blank value(s) (first "
                            f"at index {int(np.flatnonzero(missing)[0])}); give every score its "
                            "period, or drop the rows without one.")
    present = list(dict.fromkeys(arr.tolist()))
    if periods is not None:
        order = list(periods)
        if len(set(order)) != len(order):
            raise MedauditError(f"periods lists a period twice: {order!r}.")
        missing = [p for p in present if p not in set(order)]
        if missing:
            raise MedauditError(f"the period column has {missing[:5]!r}, which periods= does not "
                                "list; declare every period, in order.")
        return order
    try:
        return sorted(present)
    except TypeError:
        raise MedauditError("the period column mixes kinds of values (e.g. numbers and text), so "
                            "its order is unknown; give periods= in order.") from None


def score_drift(period: ArrayLike, y_score: ArrayLike, *, y_true: ArrayLike | None = None,
                periods: Sequence[Any] | None = None, reference: Sequence[Any] | None = None,
                n_bins: int = 10, min_fraction: float = 1e-4) -> DriftResult:
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
        See :func:`population_stability_index`.

    Returns
    -------
    DriftResult
        Rows with :data:`DRIFT_COLUMNS`; a subset empty in the period or the reference has
        nan statistics and ``status`` saying which.  Reference periods are compared with the
        reference too (their rows are not evidence of stability).

    Examples
    --------
    >>> per = ["2026-01"] * 4 + ["2026-02"] * 4
    >>> r = score_drift(per, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], n_bins=2)
    >>> [(row["period"], row["ks_statistic"], round(row["psi"], 4)) for row in r.rows]
    [('2026-01', 0.0, 0.0), ('2026-02', 1.0, 4.6043)]
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
    order = period_order(per, periods)
    ref_periods = [order[0]] if reference is None else list(reference)
    unknown = [p for p in ref_periods if p not in set(order)]
    if unknown:
        raise MedauditError(f"reference period(s) {unknown!r} are not among the periods {order!r}.")
    in_ref = np.isin(per, np.array(ref_periods, dtype=object))
    subsets = {"all": np.ones(s.size, dtype=bool)}
    if y_true is not None:
        subsets.update(positives=y == 1, negatives=y == 0)
    ref_label = ", ".join(map(str, ref_periods))
    rows = []
    for p in order:
        here = per == p
        for name, mask in subsets.items():
            ref, cur = s[in_ref & mask], s[here & mask]
            row = dict.fromkeys(DRIFT_COLUMNS)
            row.update(period=p, subset=name, reference=ref_label, n_reference=int(ref.size),
                       n=int(cur.size), ks_statistic=math.nan, ks_pvalue=math.nan, psi=math.nan,
                       psi_band="", n_bins=0, status="")
            if ref.size == 0 or cur.size == 0:
                row["status"] = ("no scores in the reference" if ref.size == 0
                                 else "no scores in this period")
            else:
                ks = ks_drift(ref, cur)
                ps = population_stability_index(ref, cur, n_bins=n_bins, min_fraction=min_fraction)
                row.update(ks_statistic=ks.statistic, ks_pvalue=ks.pvalue, ks_method=ks.method,
                           psi=ps.psi, psi_band=ps.band, n_bins=int(ps.edges.size + 1),
                           status="reference" if p in ref_periods else "")
            rows.append(row)
    return DriftResult(rows=tuple(rows), periods=tuple(order), reference=tuple(ref_periods),
                       options={"n_bins": n_bins, "min_fraction": min_fraction,
                                "bins": "reference quantiles k/n_bins (numpy linear), ties merged",
                                "multiplicity": "descriptive (no correction over periods)"})
