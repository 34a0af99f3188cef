"""Calibration as people read it: equal-mass ECE, debiased ℓ2 error, reliability curves with bands.

Paper 002's sensitivity metrics (M2.5) follow the reference package of Kumar et al.
(2019), ``uncertainty-calibration`` (module ``calibration``):

* :func:`ece_equal_mass` — the ℓ1 binned error over equal-mass bins (10 by default):
  ``lower_bound_scaling_ce(p, y, p=1, debias=False, num_bins=10,
  binning_scheme=get_equal_bins)``;
* :func:`debiased_l2_calibration_error` — per bin ``(p̄_b - ȳ_b)^2 - ȳ_b(1 - ȳ_b)/(n_b -
  1)``, weighted by ``n_b/N``, summed, clipped at 0, square-rooted; with the package's
  own choice of bins (``binning="auto"``: one bin per distinct value when there are
  fewer than n/4 distinct values, else 15 equal-mass bins), which is
  ``get_calibration_error(p, y)``.

Equal-mass bins are Kumar's (package 0.1.4): the sorted values split into ``n_bins``
parts as ``numpy.array_split`` does, boundaries at the midpoints between parts, a value
on a boundary in the lower bin (so tied values may leave fewer non-empty bins).  Both are engine metrics
(``ece_equal_mass[n_bins=10]``, ``debiased_l2_ce[binning=auto,n_bins=15]``) whose
bootstrap replicates re-bin each resample, as the package's own bootstrap does.

The equal-width, positive-class ECE of paper 000 is :func:`~medaudit.stats.ece`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import RNGLike, as_generator, check_option
from medaudit.exceptions import DegenerateDataWarning
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX
from medaudit.stats._common import labels_scores
from medaudit.stats._docs import fill_doc
from medaudit.stats._ranked import bootstrap_plan, columns_batches
from medaudit.stats._results import _ToDict
from medaudit.stats.bootstrap import _common_options, percentile_interval
from medaudit.stats.calibration import _n_bins
from medaudit.stats.proportions import PROPORTION_METHODS, proportion_ci

__all__ = ["ece_equal_mass", "debiased_l2_calibration_error", "equal_mass_bins",
           "reliability_curve", "ReliabilityCurve", "RELIABILITY_STRATEGIES"]

RELIABILITY_STRATEGIES = ("uniform", "quantile")


def _asc(y_true, y_prob):
    y, s = labels_scores(y_true, y_prob, prob=True)
    order = K.argsort_stable(s)
    return y, s, order, s[order], y[order]


def equal_mass_bins(y_prob: ArrayLike, *, n_bins: int = 10) -> NDArray[np.float64]:
    """Upper boundaries of Kumar et al.'s equal-mass bins (``get_equal_bins``), 1.0 last.

    Examples
    --------
    >>> equal_mass_bins([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], n_bins=3).tolist()
    [0.25, 0.45, 1.0]
    """
    nb = _n_bins(n_bins)
    _, s, _, p_asc, _ = _asc(np.zeros(np.size(y_prob)), y_prob)
    b = KX.equal_mass_bounds(np.ones((1, s.size)), p_asc, nb)[0]
    return np.unique(np.r_[b, 1.0])


@fill_doc
def ece_equal_mass(y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 10) -> float:
    r"""Expected calibration error over equal-mass bins (paper 002 M2.5, Kumar et al.'s bins).

    .. math:: \mathrm{ECE} = \sum_b \frac{n_b}{N}\,|\bar p_b - \bar y_b|

    Parameters
    ----------
    {y_true}
    y_prob : array-like of shape (n_samples,)
        Probabilities in [0, 1] (never clipped).
    n_bins : int, default=10

    Returns
    -------
    float

    Notes
    -----
    Equals ``calibration.lower_bound_scaling_ce(y_prob, y_true, p=1, debias=False,
    num_bins=n_bins, binning_scheme=calibration.get_equal_bins)`` of the
    ``uncertainty-calibration`` package (tests/stats/test_calibration_error.py).

    Examples
    --------
    >>> round(ece_equal_mass([0, 0, 1, 1], [0.1, 0.3, 0.6, 0.8], n_bins=2), 12)  # (.4 + .6)/4
    0.25
    """
    nb = _n_bins(n_bins)
    y, s, _, p_asc, y_asc = _asc(y_true, y_prob)
    ones = np.ones((1, s.size))
    bounds = KX.equal_mass_bounds(ones, p_asc, nb)
    return float(KX.binned_calibration(ones, p_asc, y_asc, bounds, "l1")[0])


@fill_doc
def debiased_l2_calibration_error(y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15,
                                  binning: str = "auto") -> float:
    r"""Debiased ℓ2 calibration error of Kumar et al. (2019) (paper 002 M2.5).

    .. math:: \sqrt{\max\Big(0, \sum_b \frac{n_b}{N}\Big[(\bar p_b - \bar y_b)^2 -
              \frac{\bar y_b(1 - \bar y_b)}{n_b - 1}\Big]\Big)}

    Parameters
    ----------
    {y_true}
    {y_prob}
    n_bins : int, default=15
        Equal-mass bins (the package's default).
    binning : {"auto", "equal_mass", "discrete"}, default="auto"
        ``"discrete"``: one bin per distinct value; ``"auto"``: discrete when there are
        fewer than n/4 distinct values, else equal mass — the reference package's
        choice (M2.5 [AMBIG] resolved by following it).

    Returns
    -------
    float

    Notes
    -----
    With the defaults, equals ``calibration.get_calibration_error(y_prob, y_true)``
    (p = 2, debias = True) of the ``uncertainty-calibration`` package.  Bins with fewer
    than two values contribute 0, as in the package.

    Examples
    --------
    Two values, four cases each; in both bins ``(0.65)^2 - 0.75 * 0.25 / 3 = 0.36``:

    >>> y = [1, 1, 1, 0, 0, 0, 0, 1]
    >>> p = [0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9]
    >>> round(debiased_l2_calibration_error(y, p, binning="discrete"), 12)
    0.6
    """
    nb = _n_bins(n_bins)
    binning = check_option(binning, KX.CE_BINNINGS, name="binning")
    y, s, _, p_asc, y_asc = _asc(y_true, y_prob)
    ones = np.ones((1, s.size))
    bounds = KX.calibration_bounds(ones, p_asc, binning=binning, n_bins=nb, full_p=s)
    return float(KX.binned_calibration(ones, p_asc, y_asc, bounds, "debiased_l2")[0])


@dataclass(frozen=True, slots=True, kw_only=True)
class ReliabilityCurve(_ToDict):
    """Observed fraction of positives against mean probability per bin, with intervals.

    Bins are fixed on the full sample and only non-empty bins are listed.
    ``ci_low``/``ci_high`` are bootstrap percentile intervals of the fraction positive
    in each bin (replicates where a bin is drawn empty are left out for that bin and
    counted in ``n_empty``); ``prop_low``/``prop_high`` the per-bin proportion interval
    (``proportion_method``) of ``positives / count``.
    """

    strategy: str
    n_bins: int
    bin_low: NDArray[np.float64]
    bin_high: NDArray[np.float64]
    count: NDArray[np.int64]
    mean_score: NDArray[np.float64]
    fraction_positive: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    prop_low: NDArray[np.float64]
    prop_high: NDArray[np.float64]
    n_empty: NDArray[np.int64]
    confidence_level: float
    proportion_method: str
    design: str
    n_resamples: int
    seed: int | None
    options: dict[str, Any] = field(default_factory=dict)

    _array_fields = ()


def _bins(s: NDArray[np.float64], nb: int, strategy: str):
    """(bin index per item, edges of the bins) for the strategy."""
    if strategy == "uniform":  # medaudit's convention (ece, reliability_diagram): last bin closed
        return K.bin_index(s, nb), np.linspace(0.0, 1.0, nb + 1)
    # scikit-learn's calibration_curve(strategy="quantile") exactly
    edges = np.percentile(s, np.linspace(0, 1, nb + 1) * 100)
    return np.searchsorted(edges[1:-1], s), edges


@fill_doc
def reliability_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    proportion_method: str = "wilson",
    design: str = "ordinary",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
) -> ReliabilityCurve:
    """Reliability-diagram data with a bootstrap band and per-bin proportion intervals.

    Parameters
    ----------
    {y_true}
    {y_prob}
    n_bins : int, default=10
    strategy : {"uniform", "quantile"}, default="uniform"
        ``"uniform"``: equal-width bins with medaudit's edge rule (``[(b-1)/n, b/n)``,
        last bin closed; as :func:`~medaudit.stats.reliability_diagram`).
        ``"quantile"``: scikit-learn's ``calibration_curve(strategy="quantile")`` bins
        (``np.percentile`` edges, a value on an inner edge in the lower bin).
    proportion_method : str, default="wilson"
        See :func:`~medaudit.stats.proportion_ci`.
    design, cluster, strata, n_resamples, confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics`.

    Returns
    -------
    ReliabilityCurve

    Notes
    -----
    ``mean_score`` and ``fraction_positive`` equal scikit-learn's ``calibration_curve``
    (``prob_pred``, ``prob_true``) for ``strategy="quantile"``, and for ``"uniform"``
    whenever no probability sits on an inner bin edge.

    Examples
    --------
    >>> y = np.array([0, 0, 1, 0, 1, 1, 1, 0] * 5)
    >>> p = np.array([0.1, 0.15, 0.2, 0.6, 0.65, 0.7, 0.9, 0.95] * 5)
    >>> rc = reliability_curve(y, p, n_bins=2, n_resamples=200, rng=0)
    >>> rc.count.tolist(), rc.fraction_positive.tolist()
    ([15, 25], [0.3333333333333333, 0.6])
    >>> bool((rc.ci_low < rc.fraction_positive).all()), rc.n_empty.tolist()
    (True, [0, 0])
    """
    nb = _n_bins(n_bins)
    strategy = check_option(strategy, RELIABILITY_STRATEGIES, name="strategy")
    pm = check_option(proportion_method, tuple(PROPORTION_METHODS), name="proportion_method")
    n_res, level, _, batch = _common_options(n_resamples, confidence_level, "percentile", batch)
    y, s = labels_scores(y_true, y_prob, prob=True)
    b, edges = _bins(s, nb, strategy)
    cnt = np.bincount(b, minlength=nb)
    keep = np.flatnonzero(cnt > 0)
    ssum = np.bincount(b, weights=s, minlength=nb)
    ysum = np.bincount(b, weights=y, minlength=nb)
    plan = bootstrap_plan(design, y, cluster=cluster, strata=strata)
    gen, rec = as_generator(rng)
    col = b * 2 + y.astype(np.intp)  # (bin, class) cell of each item
    batches = columns_batches(plan, col, n_res, gen, batch)
    if batches is None:  # cluster design: counts per item, summed into cells by a product
        onehot = np.zeros((y.size, 2 * nb))
        onehot[np.arange(y.size), col] = 1.0
        batches = (w @ onehot for w in plan.batches(n_res, gen, batch))
    pos, tot = [], []
    for cells in batches:
        cells = np.asarray(cells, dtype=np.float64)
        if cells.shape[1] < 2 * nb:  # columns= sizes the matrix by the largest cell used
            cells = np.pad(cells, ((0, 0), (0, 2 * nb - cells.shape[1])))
        pos.append(cells[:, 1::2])
        tot.append(cells[:, 0::2] + cells[:, 1::2])
    pos_a, tot_a = np.concatenate(pos), np.concatenate(tot)
    frac = K._safe_div(pos_a, tot_a)
    lo, hi, empty = [], [], []
    for j in keep:  # a loop over bins, not replicates
        v = frac[:, j]
        lo_j, hi_j = percentile_interval(v, level)
        lo.append(lo_j)
        hi.append(hi_j)
        empty.append(int(np.isnan(v).sum()))
    if any(empty):
        warnings.warn(f"reliability_curve: some bins were drawn empty in some replicates "
                      f"(counts {empty}); each band uses that bin's other replicates.",
                      DegenerateDataWarning, stacklevel=2)
    props = [proportion_ci(ysum[j], cnt[j], method=pm, confidence_level=level) for j in keep]
    return ReliabilityCurve(
        strategy=strategy, n_bins=nb, bin_low=edges[keep], bin_high=edges[keep + 1],
        count=cnt[keep].astype(np.int64), mean_score=ssum[keep] / cnt[keep],
        fraction_positive=ysum[keep] / cnt[keep], ci_low=np.array(lo), ci_high=np.array(hi),
        prop_low=np.array([p.ci_low for p in props]), prop_high=np.array([p.ci_high for p in props]),
        n_empty=np.array(empty, dtype=np.int64), confidence_level=level, proportion_method=pm,
        design=design, n_resamples=n_res, seed=rec["seed"], options={"rng": rec})
