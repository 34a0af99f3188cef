"""Agreement among several readers: Fleiss' kappa and Krippendorff's alpha, with item bootstrap.

Ratings are a matrix of shape ``(n_items, n_raters)`` with ``nan`` where a reader did
not rate an item (the orientation of statsmodels' ``aggregate_raters``; the
``krippendorff`` package takes the transpose).  The point estimates come from
statsmodels (:func:`statsmodels.stats.inter_rater.fleiss_kappa`) and the
``krippendorff`` package.  Intervals resample *items* (percentile bootstrap): every
replicate is a row of item counts, and both coefficients are sums over items of
per-item terms (category counts for kappa, coincidence contributions for alpha), so all
replicates come from one matrix product; neither library takes weights, which is the
only reason those sums are written out here (checked against the libraries on
materialised resamples in the tests).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import RNGLike, as_generator, check_fraction, check_option, missing_mask
from medaudit.exceptions import DegenerateDataWarning, MedauditError, UndefinedMetricWarning
from medaudit.stats._common import check_batch, check_n_resamples, warn
from medaudit.stats._results import _ToDict
from medaudit.stats.bootstrap import percentile_interval
from medaudit.stats.designs import make_plan

__all__ = ["fleiss_kappa", "krippendorff_alpha", "Agreement", "ALPHA_LEVELS", "KAPPA_METHODS"]

ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")
KAPPA_METHODS = ("fleiss", "randolph")


@dataclass(frozen=True, slots=True, kw_only=True)
class Agreement(_ToDict):
    """An agreement coefficient with its item-bootstrap percentile interval.

    ``n_resamples = 0`` means no interval was asked for (``ci_*`` nan).  Replicates on
    which the coefficient is undefined (e.g. one category only) are counted in
    ``n_degenerate`` and left out.
    """

    method: str
    estimate: float
    ci_low: float
    ci_high: float
    confidence_level: float
    n_items: int
    n_raters: int
    categories: list[float]
    n_resamples: int
    n_degenerate: int
    seed: int | None
    details: dict[str, Any] = field(default_factory=dict)
    replicates: NDArray[np.float64] = field(repr=False, default_factory=lambda: np.empty(0))

    _array_fields = ("replicates",)


def _ratings(ratings: ArrayLike) -> NDArray[np.float64]:
    try:
        r = np.asarray(ratings, dtype=np.float64)
    except (TypeError, ValueError):
        # pandas' missing values (pd.NA in nullable columns, None) are missing ratings
        raw = np.asarray(ratings, dtype=object)
        missing = missing_mask(raw)
        try:
            r = np.where(missing, np.nan, np.where(missing, 0.0, raw)).astype(np.float64)
        except (TypeError, ValueError):
            raise MedauditError("ratings must be numeric, shape (n_items, n_raters), with nan for "
                                "a missing rating; map category labels to numbers first."
                                ) from None
    if r.ndim != 2 or r.shape[0] < 1 or r.shape[1] < 2:
        raise MedauditError(f"ratings must have shape (n_items, n_raters) with at least two "
                            f"raters; got shape {r.shape}.")
    if np.isinf(r).any():
        raise MedauditError("ratings contains inf; use nan for a missing rating.")
    return r


def _counts(r: NDArray[np.float64], categories) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(category values, item x category counts)."""
    present = np.unique(r[~np.isnan(r)])
    cats = present if categories is None else np.unique(np.asarray(categories, dtype=np.float64))
    unknown = np.setdiff1d(present, cats)
    if unknown.size:
        raise MedauditError(f"ratings contain values {unknown.tolist()} that are not in "
                            f"categories {cats.tolist()}.")
    idx = np.searchsorted(cats, np.where(np.isnan(r), cats[0] if cats.size else 0.0, r))
    table = np.zeros((r.shape[0], cats.size))
    rows = np.broadcast_to(np.arange(r.shape[0])[:, None], r.shape)
    ok = ~np.isnan(r)
    np.add.at(table, (rows[ok], idx[ok]), 1.0)
    return cats, table


def _agreement(common, point_fn, unit_terms, n_resamples, confidence_level, rng, batch
               ) -> Agreement:
    """The :class:`Agreement` of a point estimate, with its item bootstrap unless B = 0."""
    if n_resamples == 0:
        return Agreement(ci_low=math.nan, ci_high=math.nan, confidence_level=math.nan,
                         n_resamples=0, n_degenerate=0, seed=None, **common)
    lo, hi, level, n_res, n_deg, rec, reps = _interval(
        point_fn, unit_terms, unit_terms.shape[0], n_resamples, confidence_level, rng, batch)
    return Agreement(ci_low=lo, ci_high=hi, confidence_level=level, n_resamples=n_res,
                     n_degenerate=n_deg, seed=rec["seed"], replicates=reps, **common)


def _interval(point_fn, unit_terms, n_items, n_resamples, confidence_level, rng, batch):
    """Item-bootstrap replicates of ``point_fn(w @ unit_terms)`` (B x terms, one product)."""
    n_res = check_n_resamples(n_resamples)
    level = check_fraction(confidence_level, name="confidence_level")
    batch = check_batch(batch)
    plan = make_plan("ordinary", np.zeros(n_items))
    gen, rec = as_generator(rng)
    # einsum, not BLAS: a replicate's rounding must not depend on the batch it sits in
    reps = np.concatenate([point_fn(np.einsum("bi,ij->bj", np.asarray(w, dtype=np.float64),
                                              unit_terms))
                           for w in plan.batches(n_res, gen, batch)])
    lo, hi = percentile_interval(reps, level)
    n_deg = int(np.isnan(reps).sum())
    if n_deg:
        warn(f"{n_deg} of {n_res} item-bootstrap replicates left the coefficient "
             "undefined (e.g. a single category drawn); the interval uses the others.",
             DegenerateDataWarning)
    return lo, hi, level, n_res, n_deg, rec, reps


# ------------------------------------------------------------------------ Fleiss' kappa
def _fleiss_from_sums(sums: NDArray[np.float64], m: int, k: int, method: str) -> NDArray[np.float64]:
    """Kappa per row from item sums ``[sum_i 1, sum_i n_ij (k cols), sum_i sum_j n_ij^2]``."""
    n = sums[:, 0]
    cat = sums[:, 1:1 + k]
    sq = sums[:, 1 + k]
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = (sq - n * m) / (n * m * (m - 1.0))
        if method == "fleiss":
            pj = cat / (n[:, None] * m)
            pe = (pj * pj).sum(axis=1)
        else:  # Randolph's free-marginal kappa
            pe = np.full(n.shape, 1.0 / k)
        kappa = (p_bar - pe) / (1.0 - pe)
    return np.where(np.isclose(pe, 1.0, rtol=0, atol=1e-15) | (n <= 0), np.nan, kappa)


def fleiss_kappa(
    ratings: ArrayLike,
    *,
    categories: ArrayLike | None = None,
    method: str = "fleiss",
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
) -> Agreement:
    """Fleiss' kappa for several readers rating every item (statsmodels), with an item bootstrap.

    Parameters
    ----------
    ratings : array-like of shape (n_items, n_raters)
        Numeric category codes; every item needs the same number of ratings (Fleiss'
        design).  Missing ratings (nan) are only accepted when each item still has the
        same count; otherwise use :func:`krippendorff_alpha`.
    categories : array-like, optional
        All possible categories (default: those observed).  Matters for
        ``method="randolph"``, whose chance agreement is ``1 / k``.
    method : {"fleiss", "randolph"}, default="fleiss"
    n_resamples : int, default=2000
        Item-bootstrap replicates; 0 for the point estimate only.
    confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics`.

    Returns
    -------
    Agreement

    Notes
    -----
    Fleiss (1971)'s worked example (10 subjects, 14 raters, 5 categories) gives 0.210
    (tests/stats/test_interrater.py).  Kappa is undefined (nan, with
    :class:`~medaudit.exceptions.UndefinedMetricWarning`) when one category takes every
    rating (chance agreement 1).

    Examples
    --------
    >>> r = fleiss_kappa([[1, 1, 1], [1, 2, 2], [2, 2, 2], [1, 1, 2]], n_resamples=0)
    >>> round(r.estimate, 6)
    0.333333
    """
    method = check_option(method, KAPPA_METHODS, name="method")
    r = _ratings(ratings)
    cats, table = _counts(r, categories)
    per_item = table.sum(axis=1)
    if per_item.min() != per_item.max() or per_item[0] < 2:
        raise MedauditError("fleiss_kappa needs the same number (at least two) of ratings on every "
                            f"item; counts range from {int(per_item.min())} to "
                            f"{int(per_item.max())}. Use krippendorff_alpha for missing ratings.")
    m, k = int(per_item[0]), int(cats.size)
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    terms = np.column_stack([np.ones(r.shape[0]), table, (table * table).sum(axis=1)])
    observed = np.unique(r[~np.isnan(r)]).size
    if (method == "fleiss" and observed < 2) or k < 2:
        warn("fleiss_kappa is undefined: every rating is the same category; returning nan.",
             UndefinedMetricWarning)
        est = math.nan
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            est = float(sm_fleiss(table, method=method))
    common = dict(method=f"fleiss_kappa[{method}]", estimate=est, n_items=int(r.shape[0]),
                  n_raters=m, categories=cats.tolist(), details={"ratings_per_item": m})
    return _agreement(common, lambda s: _fleiss_from_sums(s, m, k, method), terms, n_resamples,
                      confidence_level, rng, batch)


# ------------------------------------------------------------------ Krippendorff's alpha
def _delta2(level: str, cats: NDArray[np.float64], marg: NDArray[np.float64]) -> NDArray[np.float64]:
    """Squared distances between categories, ``(B, V, V)`` (ordinal depends on the marginals)."""
    c = cats[None, :, None]
    k = cats[None, None, :]
    if level == "nominal":
        d = (c != k).astype(np.float64)
        return np.broadcast_to(d, (marg.shape[0], cats.size, cats.size))
    if level == "interval":
        return np.broadcast_to((c - k) ** 2, (marg.shape[0], cats.size, cats.size))
    if level == "ratio":
        with np.errstate(divide="ignore", invalid="ignore"):
            d = np.where((c + k) != 0, ((c - k) / (c + k)) ** 2, 0.0)
        return np.broadcast_to(d, (marg.shape[0], cats.size, cats.size))
    # ordinal: (sum_{g between c and k} n_g - (n_c + n_k) / 2)^2, by rank of the categories
    cum = np.cumsum(marg, axis=1)
    lo_i = np.minimum.outer(np.arange(cats.size), np.arange(cats.size))
    hi_i = np.maximum.outer(np.arange(cats.size), np.arange(cats.size))
    between = cum[:, hi_i] - np.concatenate([np.zeros((marg.shape[0], 1)), cum], axis=1)[:, lo_i]
    return (between - (marg[:, lo_i] + marg[:, hi_i]) / 2.0) ** 2


def _alpha_from_coincidences(o_flat: NDArray[np.float64], cats, level) -> NDArray[np.float64]:
    v = cats.size
    o = o_flat.reshape(-1, v, v)
    marg = o.sum(axis=2)
    n = marg.sum(axis=1)
    d2 = _delta2(level, cats, marg)
    do = (o * d2).sum(axis=(1, 2))
    de = (marg[:, :, None] * marg[:, None, :] * d2).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        a = 1.0 - (n - 1.0) * do / de
    return np.where(de > 0, a, np.nan)


def krippendorff_alpha(
    ratings: ArrayLike,
    *,
    level: str = "nominal",
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
) -> Agreement:
    """Krippendorff's alpha (the ``krippendorff`` package), with an item bootstrap.

    Parameters
    ----------
    ratings : array-like of shape (n_items, n_raters)
        Numeric values, nan where missing; items with fewer than two ratings carry no
        pairable values and drop out, as in the package.
    level : {"nominal", "ordinal", "interval", "ratio"}, default="nominal"
        Level of measurement (distance metric).  Ordinal uses the ranks of the observed
        values.
    n_resamples, confidence_level, rng, batch
        As in :func:`fleiss_kappa`.

    Returns
    -------
    Agreement

    Notes
    -----
    Krippendorff (2011)'s example of four observers on 12 units gives 0.743 (nominal),
    0.815 (ordinal), 0.849 (interval) and 0.797 (ratio) — the package and these sums
    reproduce them (tests/stats/test_interrater.py).

    Examples
    --------
    Four items, two readers, one disagreement: ``1 - (n - 1) * 2 / 42 = 2/3`` with the
    marginals 3, 3, 2 of the 8 pairable values.

    >>> r = krippendorff_alpha([[1, 1], [2, 2], [1, 2], [3, 3]], n_resamples=0)
    >>> round(r.estimate, 6)
    0.666667
    """
    level = check_option(level, ALPHA_LEVELS, name="level")
    r = _ratings(ratings)
    cats, table = _counts(r, None)
    import krippendorff as kd

    m_u = table.sum(axis=1)
    pairable = m_u >= 2
    # the values of items rated twice or more are the only ones alpha compares (a value on an
    # item with one rating is no pair): counted among those, not among all ratings
    n_values = int((table[pairable].sum(axis=0) > 0).sum())
    if not pairable.any() or n_values < 2:
        why = ("no item has two ratings, so no rating can be compared with another"
               if not pairable.any() else
               "fewer than two distinct values among the ratings of items rated twice or more")
        warn(f"krippendorff_alpha is undefined: {why}; returning nan.", UndefinedMetricWarning)
        est = math.nan
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            est = float(kd.alpha(reliability_data=r.T, level_of_measurement=level,
                                 value_domain=cats))
    # per-unit coincidences o_ck = n_c (n_k - [c = k]) / (m_u - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        o_u = (table[:, :, None] * table[:, None, :]
               - table[:, :, None] * np.eye(cats.size)[None]) / (m_u - 1.0)[:, None, None]
    o_u = np.where(pairable[:, None, None], o_u, 0.0).reshape(r.shape[0], -1)
    common = dict(method=f"krippendorff_alpha[{level}]", estimate=est, n_items=int(r.shape[0]),
                  n_raters=int(r.shape[1]), categories=cats.tolist(),
                  details={"n_pairable_items": int(pairable.sum()),
                           "n_pairable_values": float(m_u[pairable].sum())})
    return _agreement(common, lambda s: _alpha_from_coincidences(s, cats, level), o_u,
                      n_resamples, confidence_level, rng, batch)
