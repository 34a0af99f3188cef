"""Intervals that stay valid when a site looks at its data again and again.

A receiving site that re-checks a claim every month looks many times; an ordinary 95 %
interval read at every look excludes a true value far more often than 5 % of the time.
Two remedies, declared by name:

* **confidence sequences** (``"confseq"``): valid simultaneously at every look, however
  many, with no plan needed —
  :func:`proportion_cs` for a rate (sensitivity, specificity at a fixed threshold): the
  beta-binomial mixture confidence sequence of Howard, Ramdas, McAuliffe & Sekhon (2021),
  valid at every single observation; :func:`auroc_cs` for an AUROC: Hoeffding's bound for
  two-sample U-statistics at look *k* with error ``alpha / (k (k + 1))`` (these sum to
  ``alpha`` over any number of looks);
* **alpha spending over K planned looks** (``"alpha_spending"``): the repeated confidence
  intervals of Jennison & Turnbull (1989) with Lan & DeMets (1983) spending —
  :func:`spending_bounds` (O'Brien-Fleming-type or Pocock-type spending function,
  boundaries by recursive numerical integration, in :mod:`medaudit.stats.spending`),
  :func:`proportion_rci` and
  :func:`auroc_rci`.  Narrower than a confidence sequence when the plan is kept, but the
  number of looks must be declared in advance.

Every interval is two-sided, so a claim "rate ≥ L" is judged as in the audit: holds when the
lower end reaches L, does not hold when the upper end is below L.  Intervals are not
intersected over looks, so that a change in the rate shows in the next interval.

Reference witnesses (tests/stats/test_sequential.py): the confseq library's
``bernoulli_confidence_interval`` (values committed in tests/reference/confseq_bernoulli.csv
with the script that made them); an exact dynamic-programming computation of the chance that
the sequence ever misses; rpact 3.3.4's ``getDesignGroupSequential`` for the spending
boundaries (tests/reference/spending_rpact.csv); and simulated coverage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from medaudit._validation import as_1d_float, check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats._common import labels_scores
from medaudit.stats._docs import fill_doc
from medaudit.stats._results import _ToDict
from medaudit.stats.spending import (
    SPENDING_FUNCTIONS,
    Spending,
    SpendingBounds,
    _readonly,
    spending_bounds,
    spending_function,
)

__all__ = ["ConfidenceSequence", "SpendingBounds", "proportion_cs", "auroc_cs", "spending_function",
           "spending_bounds", "proportion_rci", "auroc_rci", "union_alpha", "wilson_interval",
           "SPENDING_FUNCTIONS"]

_BISECTIONS = 64  # halvings of [0, 1]: the bounds are exact to 2**-64


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfidenceSequence(_ToDict):
    """Two-sided intervals at a sequence of looks, valid at all looks together.

    ``estimate``, ``ci_low`` and ``ci_high`` have one value per look; ``alpha_look`` is the
    error the interval at that look was built at (``alpha`` itself for a confidence
    sequence; ``alpha / (k (k + 1))`` for the AUROC bound; the nominal level of the
    boundary for a repeated confidence interval).  ``counts`` holds the cumulative counts at
    each look (``successes``/``trials`` for a rate, ``n_pos``/``n_neg`` for an AUROC).
    """

    estimate: NDArray[np.float64]
    ci_low: NDArray[np.float64]
    ci_high: NDArray[np.float64]
    alpha_look: NDArray[np.float64]
    counts: dict[str, NDArray[np.float64]]
    confidence_level: float
    method: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def n_looks(self) -> int:
        """Number of looks."""
        return int(self.estimate.size)


# ----------------------------------------------------------------------------- input checks

def _cumulative_counts(successes: ArrayLike, trials: ArrayLike) -> tuple[NDArray[np.float64],
                                                                        NDArray[np.float64]]:
    s = as_1d_float(successes, name="successes")
    n = as_1d_float(trials, name="trials")
    if s.size != n.size:
        raise MedauditError(f"successes and trials must have one value per look; got {s.size} and "
                            f"{n.size}.")
    if (s < 0).any() or (s > n).any():
        k = int(np.flatnonzero((s < 0) | (s > n))[0])
        raise MedauditError(f"look {k + 1}: successes ({float(s[k])!r}) must lie between 0 and "
                            f"trials ({float(n[k])!r}).")
    ds, dn = np.diff(s), np.diff(n)
    bad = (ds < 0) | (dn < 0) | (ds > dn)
    if bad.any():
        k = int(np.flatnonzero(bad)[0]) + 1
        raise MedauditError(
            f"look {k + 1}: counts must be cumulative (successes and trials never decrease, and "
            f"the new successes are at most the new trials); got successes {float(s[k - 1])!r} "
            f"-> {float(s[k])!r}, trials {float(n[k - 1])!r} -> {float(n[k])!r}.")
    return s, n


def _looks(looks: ArrayLike, n: int) -> NDArray[np.int64]:
    arr = as_1d_float(looks, name="looks")
    if (arr != np.round(arr)).any() or (arr < 0).any() or (arr > n).any():
        raise MedauditError(f"looks must be whole numbers of cases seen, between 0 and {n} (the "
                            f"length of y_true); got {arr.tolist()!r}.")
    if (np.diff(arr) < 0).any():
        raise MedauditError(f"looks must not decrease (cases seen at each look); got "
                            f"{arr.tolist()!r}.")
    return arr.astype(np.int64)


def union_alpha(k: ArrayLike, alpha: float) -> NDArray[np.float64]:
    """Error for look (or period) ``k = 1, 2, ...`` of an open-ended union bound: ``alpha / (k (k + 1))``.

    The terms telescope, ``sum_k alpha / (k (k + 1)) = alpha``, so intervals built at these
    errors are valid at every look together, however many looks follow.

    Examples
    --------
    >>> union_alpha([1, 2, 3], 0.05).tolist()
    [0.025, 0.008333333333333333, 0.004166666666666667]
    """
    kk = np.asarray(k, dtype=np.float64)
    return alpha / (kk * (kk + 1.0))


# ----------------------------------------------------------------------------- rates: confseq

def _log_mixture(p: NDArray[np.float64], s: NDArray[np.float64], n: NDArray[np.float64],
                 t_opt: float | NDArray[np.float64], alpha_opt: float | NDArray[np.float64]
                 ) -> NDArray[np.float64]:
    """log M_n(p) of the two-sided beta-binomial mixture (Howard et al. 2021, Prop. 6).

    With ``g = p``, ``h = 1 - p`` the mixture is the ratio of a Beta(r/(1-p), r/p)
    prior-predictive likelihood of the observed successes to the likelihood at ``p``: a
    nonnegative martingale under the rate ``p``, so Ville's inequality bounds the chance
    that it ever reaches ``1 / alpha``.  ``r`` is tuned (confseq's rule) so that the bound is
    tightest at ``t_opt`` trials.
    """
    v = p * (1.0 - p)
    lt = -np.log(alpha_opt)
    rho = v * t_opt / (2.0 * lt + np.log1p(2.0 * lt))
    r = np.maximum(rho - v, 1e-3 * v)
    a, b = r / p, r / (1.0 - p)
    return (special.betaln(a + n - s, b + s) - special.betaln(a, b)
            - s * np.log(p) - (n - s) * np.log1p(-p))


def _bisect(f, lo: NDArray[np.float64], hi: NDArray[np.float64], inside_at_hi: bool
            ) -> NDArray[np.float64]:
    """Vectorised bisection for the point where ``f`` (True = outside the set) switches."""
    lo, hi = lo.copy(), hi.copy()
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        out = f(mid)
        # the set is an interval around the estimate: move the end that lies on the same side
        if inside_at_hi:  # searching the lower end: outside below, inside above
            lo = np.where(out, mid, lo)
            hi = np.where(out, hi, mid)
        else:  # upper end: inside below, outside above
            lo = np.where(out, lo, mid)
            hi = np.where(out, mid, hi)
    return 0.5 * (lo + hi)


def _mixture_bounds(s: NDArray[np.float64], n: NDArray[np.float64], *,
                    alpha: float | NDArray[np.float64], t_opt: float | NDArray[np.float64],
                    alpha_opt: float | NDArray[np.float64]) -> tuple[NDArray[np.float64], ...]:
    """Estimate and interval ends of the mixture sequence at each (successes, trials) pair
    (``alpha``, ``t_opt`` and ``alpha_opt`` may differ from pair to pair)."""
    thr = -np.log(alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(n > 0, s / np.where(n > 0, n, 1.0), np.nan)
    phat = np.where(n > 0, np.nan_to_num(est), 0.5)

    def outside(p):
        return _log_mixture(p, s, n, t_opt, alpha_opt) >= thr

    # an end that is 0 (no successes) or 1 (all successes) is set below; its bisection runs
    # on p = 0 or 1 exactly, where the mixture is undefined, and is thrown away
    with np.errstate(invalid="ignore", divide="ignore"):
        low = _bisect(outside, np.zeros_like(phat), phat, inside_at_hi=True)
        high = _bisect(outside, phat, np.ones_like(phat), inside_at_hi=False)
    low = np.where((s == 0) | (n == 0), 0.0, low)
    high = np.where((s == n) | (n == 0), 1.0, high)
    return est, low, high


def proportion_cs(successes: ArrayLike, trials: ArrayLike, *, confidence_level: float = 0.95,
                  t_opt: float = 100.0, alpha_opt: float | None = None) -> ConfidenceSequence:
    """Confidence sequence for a binomial proportion, valid at every look together.

    Parameters
    ----------
    successes : array-like of shape (n_looks,)
        Cumulative successes at each look (e.g. true positives at a fixed threshold).
    trials : array-like of shape (n_looks,)
        Cumulative trials at each look (e.g. positives seen so far); never decreasing.
    confidence_level : float, default=0.95
        ``1 - alpha``: the chance that the true rate lies in the interval at *every* look,
        whenever and however often the site looks (including after every case).
    t_opt : float, default=100.0
        Number of trials at which the sequence is made tightest (declare it before looking:
        e.g. the positives expected over the monitoring horizon).  The sequence is valid
        for any value; only its width depends on it.
    alpha_opt : float, optional
        Error the tuning optimises for; default ``1 - confidence_level``.

    Returns
    -------
    ConfidenceSequence
        ``estimate = successes / trials`` (nan with no trials, interval [0, 1]).

    Notes
    -----
    The beta-binomial mixture of Howard, Ramdas, McAuliffe & Sekhon (2021), Propositions 6
    and 7, with ``g = p`` and ``h = 1 - p`` (the sub-Bernoulli case):

    .. math::

        M_n(p) = \\frac{B(r/p + n - S_n,\\ r/(1-p) + S_n)}{B(r/p,\\ r/(1-p))\\,
                 p^{S_n} (1-p)^{n - S_n}},
        \\qquad \\mathrm{CS}_n = \\{p : M_n(p) < 1/\\alpha\\}.

    Under the rate ``p`` the mixture is a nonnegative martingale with mean one, so by
    Ville's inequality ``P(exists n: M_n(p) >= 1/alpha) <= alpha``.  ``r = max(rho - p(1-p),
    10^-3 p(1-p))`` with ``rho = p(1-p) t_opt / (2 log(1/alpha_opt) + log(1 + 2 log(1/alpha_opt)))``
    (confseq's tuning).  Both ends are found by bisection to 2^-64 (``M_n`` is at most 1 at the
    estimate).  After a single trial ``M_1 = 1`` for every ``p``: the interval is [0, 1].

    Verified against confseq 0.0.11's ``bernoulli_confidence_interval`` (the same formulas in
    C++/Boost), and by an exact computation of the chance of ever missing (dynamic
    programming over the binomial lattice, a look after every trial).

    References
    ----------
    Howard, S. R., Ramdas, A., McAuliffe, J. & Sekhon, J. (2021). Time-uniform, nonparametric,
    nonasymptotic confidence sequences. Annals of Statistics 49(2), 1055-1080.
    doi:10.1214/20-AOS1991

    Examples
    --------
    >>> cs = proportion_cs([30, 55], [100, 200])
    >>> np.round(cs.ci_low, 4).tolist(), np.round(cs.ci_high, 4).tolist()
    ([0.1736, 0.1848], [0.4477, 0.3773])
    """
    level = check_fraction(confidence_level, name="confidence_level")
    alpha = 1.0 - level
    a_opt = alpha if alpha_opt is None else check_fraction(alpha_opt, name="alpha_opt")
    t = float(t_opt) if isinstance(t_opt, (int, float, np.integer, np.floating)) and not isinstance(
        t_opt, bool) else math.nan
    if not (math.isfinite(t) and t > 0):
        raise MedauditError(f"t_opt must be a positive number of trials; got {t_opt!r}.")
    s, n = _cumulative_counts(successes, trials)
    est, low, high = _mixture_bounds(s, n, alpha=alpha, t_opt=t, alpha_opt=a_opt)
    return ConfidenceSequence(
        estimate=_readonly(est), ci_low=_readonly(low), ci_high=_readonly(high),
        alpha_look=_readonly(np.full(s.size, alpha)),
        counts={"successes": _readonly(s), "trials": _readonly(n)}, confidence_level=level,
        method="beta-binomial mixture confidence sequence (Howard et al. 2021)",
        options={"t_opt": t, "alpha_opt": a_opt})


# ----------------------------------------------------------------------------- AUROC: confseq

def _auc_counts(y: NDArray[np.float64], s: NDArray[np.float64], looks: NDArray[np.int64]
                ) -> tuple[NDArray[np.float64], ...]:
    """AUROC (ties one half), positives, negatives and DeLong standard error among the first
    ``looks[k]`` cases (nan AUROC without both classes; nan standard error with a single case
    in a class, as pROC, or with a DeLong variance of 0)."""
    from medaudit.stats.delong import delong_placements

    out = np.full((4, looks.size), math.nan)
    for j, m in enumerate(looks):
        yy, ss = y[:m], s[:m]
        p = float(yy.sum())
        out[1, j], out[2, j] = p, m - p
        if p == 0 or p == m:
            continue
        v10, v01 = delong_placements(yy, ss)
        out[0, j] = float(np.mean(v10))
        if v10.size > 1 and v01.size > 1:
            var = np.var(v10, ddof=1) / v10.size + np.var(v01, ddof=1) / v01.size
            # zero variance (complete separation, or every score tied): a normal interval of
            # width 0 would read as certainty from a handful of cases; none is given
            out[3, j] = math.sqrt(var) if var > 0 else math.nan
    return out[0], out[1], out[2], out[3]


def _hoeffding(auc: NDArray[np.float64], n_pos: NDArray[np.float64], n_neg: NDArray[np.float64],
               alpha: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``AUC ± sqrt(log(2 / alpha) / (2 min(n_pos, n_neg)))`` in [0, 1]; [0, 1] where undefined."""
    m = np.minimum(n_pos, n_neg)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.sqrt(np.log(2.0 / alpha) / (2.0 * np.where(m > 0, m, 1.0)))
    defined = ~np.isnan(auc)
    low = np.where(defined, np.clip(np.nan_to_num(auc) - eps, 0.0, 1.0), 0.0)
    high = np.where(defined, np.clip(np.nan_to_num(auc) + eps, 0.0, 1.0), 1.0)
    return low, high


def wilson_interval(successes: NDArray[np.float64], trials: NDArray[np.float64],
                    z: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Wilson score interval with critical value ``z`` per look, in [0, 1].

    A look with no trials, or with an infinite ``z`` (nothing left to test), gets [0, 1].
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        zz = np.where(np.isfinite(z), z, 0.0)
        nn = np.where(trials > 0, trials, 1.0)
        ph = successes / nn
        centre = (ph + zz * zz / (2 * nn)) / (1 + zz * zz / nn)
        half = zz / (1 + zz * zz / nn) * np.sqrt(ph * (1 - ph) / nn + zz * zz / (4 * nn * nn))
    ok = np.isfinite(z) & (trials > 0)
    # the interval holds p-hat, and its bound at p-hat = 0 or 1 is exactly that p-hat: the
    # formula gives them only up to rounding (0.9999999999999999 for 11 of 11), which
    # would put a 100 % rate outside its own interval
    lo = np.where(successes <= 0, 0.0, np.minimum(np.clip(centre - half, 0.0, 1.0), ph))
    hi = np.where(successes >= nn, 1.0, np.maximum(np.clip(centre + half, 0.0, 1.0), ph))
    return np.where(ok, lo, 0.0), np.where(ok, hi, 1.0)


@fill_doc
def auroc_cs(y_true: ArrayLike, y_score: ArrayLike, *, looks: ArrayLike,
             confidence_level: float = 0.95) -> ConfidenceSequence:
    """AUROC bounds valid at every look together (Hoeffding, union over looks).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        0/1 labels in the order the cases arrived.
    {y_score}
    looks : array-like of int
        Number of cases seen at each look (non-decreasing); the AUROC at look *k* uses the
        first ``looks[k]`` cases.
    confidence_level : float, default=0.95
        The chance that the AUROC lies in the interval at every look together.

    Returns
    -------
    ConfidenceSequence
        ``ci_low``/``ci_high`` clipped to [0, 1]; a look without both classes has estimate
        nan and interval [0, 1].

    Notes
    -----
    Given the labels, the AUROC estimate is a two-sample U-statistic with a kernel in
    [0, 1], so Hoeffding (1963, section 5b) gives
    ``P(|AUC_k - AUC| >= eps) <= 2 exp(-2 min(n_pos, n_neg) eps^2)``.  Look *k* uses
    ``alpha_k = alpha / (k (k + 1))``:
    ``eps_k = sqrt(log(2 / alpha_k) / (2 min(n_pos, n_neg)))``, and the union bound over
    looks gives coverage ``1 - alpha`` at all looks together, for any number of looks, when
    *when to look* is fixed by the calendar or the batches (not by the scores).  This is a
    conservative, documented bound, not a martingale confidence sequence (no well-kept
    library offers one for the AUROC); it is checked by simulation in the tests.

    Examples
    --------
    >>> y = [0, 1] * 50
    >>> s = [0.2, 0.8] * 50
    >>> r = auroc_cs(y, s, looks=[50, 100])
    >>> r.estimate.tolist(), np.round(r.ci_low, 4).tolist()
    ([1.0, 1.0], [0.704, 0.7659])
    """
    level = check_fraction(confidence_level, name="confidence_level")
    alpha = 1.0 - level
    y, s = labels_scores(y_true, y_score)
    lk = _looks(looks, y.size)
    auc, n_pos, n_neg, _ = _auc_counts(y, s, lk)
    k = np.arange(1, lk.size + 1)
    a_k = union_alpha(k, alpha)
    low, high = _hoeffding(auc, n_pos, n_neg, a_k)
    return ConfidenceSequence(
        estimate=_readonly(auc), ci_low=_readonly(low), ci_high=_readonly(high),
        alpha_look=_readonly(a_k), counts={"n_pos": _readonly(n_pos), "n_neg": _readonly(n_neg)},
        confidence_level=level,
        method="Hoeffding U-statistic bound, alpha/(k(k+1)) at look k (union over looks)",
        options={"looks": lk.tolist()})


# ----------------------------------------------------------------------------- repeated CIs

def _planned_fractions(n_looks: int, planned_looks: int | None) -> NDArray[np.float64] | None:
    if planned_looks is None:
        return None
    if isinstance(planned_looks, bool) or not isinstance(planned_looks, (int, np.integer)) or (
            planned_looks < 1):
        raise MedauditError(f"planned_looks must be a positive integer; got {planned_looks!r}.")
    if n_looks > planned_looks:
        raise MedauditError(
            f"look {n_looks} is beyond the {planned_looks} planned looks of the alpha-spending "
            "plan (its error is spent); declare more planned looks before looking, or use the "
            "confidence sequence (correction 'confseq'), which needs no plan.")
    return np.arange(1, n_looks + 1) / planned_looks


def _rci_bounds(information: NDArray[np.float64], valid: NDArray[np.bool_], alpha: float,
                spending: str, planned_looks: int | None) -> NDArray[np.float64]:
    """Two-sided boundaries at the looks with information (others get +inf: nothing to test).

    Looks without new information (no new cases) repeat the previous boundary: the same
    data are tested again, which costs no error.
    """
    frac_all = _planned_fractions(information.size, planned_looks)
    c = np.full(information.size, math.inf)
    idx = np.flatnonzero(valid)
    if idx.size == 0:
        return c
    # looks where the information grew, and the look each repeated look copies
    grew = np.r_[True, np.diff(information[idx]) > 0]
    keep = idx[grew]
    frac = None if frac_all is None else frac_all[keep]
    if frac is None:
        frac = information[keep] / information[keep][-1]
    b = spending_bounds(information[keep], alpha=alpha, spending=spending, fractions=frac)
    c[keep] = b.bounds
    for j in idx[~grew]:
        c[j] = c[keep[keep < j][-1]]
    return c


def proportion_rci(successes: ArrayLike, trials: ArrayLike, *, confidence_level: float = 0.95,
                   spending: Spending = "obrien_fleming", planned_looks: int | None = None
                   ) -> ConfidenceSequence:
    """Repeated confidence intervals for a rate over planned looks (alpha spending).

    Parameters
    ----------
    successes, trials : array-like of shape (n_looks,)
        Cumulative counts at each look (as :func:`proportion_cs`).
    confidence_level : float, default=0.95
        Simultaneous coverage over the planned looks.
    spending : {"obrien_fleming", "pocock"}, default="obrien_fleming"
    planned_looks : int, optional
        Number of looks planned in advance; the spending function is read at ``k / K``.
        Default: the looks given are the whole plan (fractions ``trials / trials[-1]``, which
        is only right when the last look was planned as the last).  Looking beyond the plan
        is refused.

    Returns
    -------
    ConfidenceSequence
        At look *k*, the Wilson score interval with ``z = c_k``, the two-sided boundary of
        :func:`spending_bounds` with information = trials.  Looks with no trials get
        [0, 1].

    Notes
    -----
    Jennison & Turnbull (1989): the set of rates ``p`` whose score statistic
    ``(S_k - n_k p) / sqrt(n_k p (1 - p))`` stays inside the boundary at look *k* has
    simultaneous coverage ``1 - alpha`` over the looks under the normal approximation (the
    score statistics have the canonical joint distribution, correlation
    ``sqrt(n_j / n_k)``).  Approximate for small counts, unlike :func:`proportion_cs`.

    Examples
    --------
    >>> r = proportion_rci([30, 55], [100, 200], planned_looks=2)
    >>> np.round(r.ci_low, 4).tolist()
    [0.185, 0.2176]
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    level = check_fraction(confidence_level, name="confidence_level")
    kind = check_option(spending, SPENDING_FUNCTIONS, name="spending")
    s, n = _cumulative_counts(successes, trials)
    c = _rci_bounds(n, n > 0, 1.0 - level, kind, planned_looks)
    with np.errstate(invalid="ignore", divide="ignore"):
        est = np.where(n > 0, s / np.where(n > 0, n, 1.0), np.nan)
    low, high = wilson_interval(s, n, c)
    return ConfidenceSequence(
        estimate=_readonly(est), ci_low=_readonly(low), ci_high=_readonly(high),
        alpha_look=_readonly(2.0 * stats.norm.sf(c)),
        counts={"successes": _readonly(s), "trials": _readonly(n)}, confidence_level=level,
        method=f"repeated Wilson intervals, Lan-DeMets {kind.replace('_', '-')}-type spending",
        options={"spending": kind, "planned_looks": planned_looks})


def auroc_rci(y_true: ArrayLike, y_score: ArrayLike, *, looks: ArrayLike,
              confidence_level: float = 0.95, spending: Spending = "obrien_fleming",
              planned_looks: int | None = None) -> ConfidenceSequence:
    """Repeated confidence intervals for an AUROC over planned looks (alpha spending).

    At look *k*: ``AUC_k ± c_k SE_k`` with the DeLong standard error and the two-sided
    boundary ``c_k`` of :func:`spending_bounds`, whose information at a look is
    ``n_pos n_neg / (n_pos + n_neg)`` (proportional to the inverse variance of an AUROC when
    its kernel variance does not change).  Clipped to [0, 1]; a look without both classes
    gets [0, 1], and so does one with a single case in a class (no DeLong variance, as pROC)
    or with a DeLong variance of 0 (the classes completely separated, or every score tied).
    Arguments as :func:`auroc_cs` and :func:`proportion_rci`.

    Examples
    --------
    >>> y = [0, 0, 1, 1] * 25
    >>> s = [0.1, 0.6, 0.4, 0.9] * 25
    >>> r = auroc_rci(y, s, looks=[40, 100], planned_looks=2)
    >>> r.estimate.tolist()
    [0.75, 0.75]
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    level = check_fraction(confidence_level, name="confidence_level")
    kind = check_option(spending, SPENDING_FUNCTIONS, name="spending")
    y, s = labels_scores(y_true, y_score)
    lk = _looks(looks, y.size)
    auc, n_pos, n_neg, se = _auc_counts(y, s, lk)
    valid = ~np.isnan(auc) & ~np.isnan(se)
    with np.errstate(invalid="ignore", divide="ignore"):
        info = np.where(valid, n_pos * n_neg / (n_pos + n_neg), 0.0)
    c = _rci_bounds(info, valid, 1.0 - level, kind, planned_looks)
    finite = valid & np.isfinite(c)
    with np.errstate(invalid="ignore"):
        low = np.where(finite, np.clip(np.nan_to_num(auc) - np.nan_to_num(c * se), 0.0, 1.0), 0.0)
        high = np.where(finite, np.clip(np.nan_to_num(auc) + np.nan_to_num(c * se), 0.0, 1.0), 1.0)
    return ConfidenceSequence(
        estimate=_readonly(auc), ci_low=_readonly(low), ci_high=_readonly(high),
        alpha_look=_readonly(2.0 * stats.norm.sf(c)),
        counts={"n_pos": _readonly(n_pos), "n_neg": _readonly(n_neg)}, confidence_level=level,
        method=f"repeated DeLong intervals, Lan-DeMets {kind.replace('_', '-')}-type spending",
        options={"spending": kind, "planned_looks": planned_looks, "looks": lk.tolist()})
