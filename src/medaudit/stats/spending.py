"""Lan-DeMets alpha spending: spending functions and group-sequential boundaries over planned looks.

The fallback of :mod:`medaudit.stats.sequential` when a site plans its looks in advance:
:func:`spending_function` (O'Brien-Fleming-type or Pocock-type) and
:func:`spending_bounds`, the z boundaries at each look computed by recursive numerical
integration (Armitage, McPherson & Rowe 1969; Jennison & Turnbull 2000, ch. 19).  The
repeated confidence intervals built on them are in :mod:`medaudit.stats.sequential`.

Witness: rpact 3.3.4 ``getDesignGroupSequential`` (tests/reference/spending_rpact.csv) and the
crossing probabilities of two looks integrated directly (tests/stats/test_sequential.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from medaudit._validation import as_1d_float, check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats._results import _ToDict

__all__ = ["SpendingBounds", "spending_function", "spending_bounds", "SPENDING_FUNCTIONS"]

Spending = Literal["obrien_fleming", "pocock"]
SPENDING_FUNCTIONS = ("obrien_fleming", "pocock")
_SQRT2PI = math.sqrt(2.0 * math.pi)


def _readonly(a: ArrayLike) -> NDArray[np.float64]:
    out = np.array(a, dtype=np.float64)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SpendingBounds(_ToDict):
    """Group-sequential z boundaries from an alpha-spending function.

    At look *k* the test rejects when ``|Z_k| >= bounds[k]`` (``Z_k >= bounds[k]`` when
    ``alternative="one-sided"``); ``alpha_spent`` is the cumulative error spent by look *k*
    and ``nominal_alpha`` the error of a single test at that boundary
    (``2 (1 - Phi(c))`` two-sided).  A look whose spending increment is zero has bound +inf.
    """

    bounds: NDArray[np.float64]
    alpha_spent: NDArray[np.float64]
    nominal_alpha: NDArray[np.float64]
    fractions: NDArray[np.float64]
    information: NDArray[np.float64]
    alpha: float
    spending: str
    alternative: str



def spending_function(t: ArrayLike, *, alpha: float = 0.05, spending: Spending = "obrien_fleming",
                      alternative: Literal["two-sided", "one-sided"] = "two-sided"
                      ) -> NDArray[np.float64]:
    """Cumulative error spent by information fraction ``t`` (Lan & DeMets 1983).

    One-sided, with error ``a``: ``"obrien_fleming"`` spends ``2 - 2 Phi(z_{1 - a/2} /
    sqrt(t))``, ``"pocock"`` spends ``a log(1 + (e - 1) t)``.  Two-sided with total error
    ``alpha``, each side spends the one-sided function at ``a = alpha / 2`` and the result is
    their sum (the convention of rpact, gsDesign and ldbounds: a two-sided O'Brien-Fleming-type
    design at 0.05 has the boundaries of the one-sided design at 0.025).  Fractions above 1
    spend ``alpha`` (the plan is used up); ``t = 0`` spends nothing.

    Examples
    --------
    >>> np.round(spending_function([0.5, 1.0], alpha=0.05), 6).tolist()
    [0.003051, 0.05]
    >>> np.round(spending_function([0.5, 1.0], alpha=0.05, alternative="one-sided"), 6).tolist()
    [0.005575, 0.05]
    >>> np.round(spending_function([0.5, 1.0], alpha=0.05, spending="pocock"), 6).tolist()
    [0.031006, 0.05]
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    a = check_fraction(alpha, name="alpha")
    kind = check_option(spending, SPENDING_FUNCTIONS, name="spending")
    alt = check_option(alternative, ("two-sided", "one-sided"), name="alternative")
    raw = as_1d_float(t, name="t") if np.ndim(t) else as_1d_float([t], name="t")
    if (raw < 0).any():
        raise MedauditError(f"t (information fractions) must be >= 0; got {float(raw.min())!r}.")
    tt = np.minimum(raw, 1.0).reshape(np.shape(t))
    if kind == "obrien_fleming":
        sides = 2.0 if alt == "two-sided" else 1.0
        z = stats.norm.isf(a / sides / 2.0)
        with np.errstate(divide="ignore"):
            out = sides * 2.0 * stats.norm.sf(z / np.sqrt(tt))
    else:
        out = a * np.log1p((math.e - 1.0) * tt)
    return np.where(tt >= 1.0, a, out)


def _simpson(lo: float, hi: float, sd: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Simpson nodes and weights on [lo, hi], spaced at most ``sd / 12`` (201 to 4001 nodes)."""
    m = int(np.clip(math.ceil((hi - lo) / (sd / 12.0) / 2.0), 100, 2000))
    x = np.linspace(lo, hi, 2 * m + 1)
    w = np.ones(2 * m + 1)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return x, w * (x[1] - x[0]) / 3.0


def _excess_crossing(c: float, nodes: NDArray[np.float64], mass: NDArray[np.float64], sd: float,
                     root: float, two: bool, target: float) -> float:
    """P(no crossing before, crossing at this look with boundary ``c``) minus ``target``.

    ``mass`` is the density of the previous look's score statistic times the Simpson
    weights at ``nodes``; ``sd`` the increment's standard deviation; ``root = sqrt(I_k)``.
    """
    b = c * root
    # special.ndtr directly: scipy.stats.norm adds ~50 us of argument handling per call
    cross = special.ndtr((nodes - b) / sd)
    if two:
        cross = cross + special.ndtr((-b - nodes) / sd)
    return float(mass @ cross) - target


def spending_bounds(information: ArrayLike, *, alpha: float = 0.05,
                    spending: Spending = "obrien_fleming", fractions: ArrayLike | None = None,
                    alternative: Literal["two-sided", "one-sided"] = "two-sided") -> SpendingBounds:
    """Group-sequential boundaries from an alpha-spending function over the looks given.

    Parameters
    ----------
    information : array-like of shape (n_looks,)
        Cumulative statistical information at each look, increasing (any unit: the number of
        trials for a rate); it sets the correlation ``sqrt(I_j / I_k)`` of the z statistics.
    alpha : float, default=0.05
        Total error (two-sided: both sides together).
    spending : {"obrien_fleming", "pocock"}, default="obrien_fleming"
        The spending function (:func:`spending_function`).
    fractions : array-like of shape (n_looks,), optional
        Where the spending function is read at each look (non-decreasing, in (0, 1]); default
        ``information / information[-1]`` (the last look is the planned end).  Spending by
        planned looks, ``k / K``, with the correlation from the real information, is allowed
        (Lan & DeMets 1989).
    alternative : {"two-sided", "one-sided"}, default="two-sided"
        Symmetric two-sided boundaries, or an upper boundary only.

    Returns
    -------
    SpendingBounds

    Notes
    -----
    The boundary at look *k* solves ``P(no crossing before k, crossing at k) = alpha(t_k) -
    alpha(t_{k-1})`` under the null, the score statistic having independent normal
    increments (Armitage, McPherson & Rowe 1969).  The density of the statistic on the
    continuation region is carried from look to look by Simpson's rule on a grid spaced at
    most a twelfth of the next increment's standard deviation (201 to 4001 nodes; the
    region is cut at 10 standard deviations where no boundary applies), and each boundary
    is found by Brent's method.  Verified against rpact 3.3.4 ``getDesignGroupSequential``
    (``typeOfDesign = "asOF"``/``"asP"``, one- and two-sided, equal and unequal spacing).

    References
    ----------
    Lan, K. K. G. & DeMets, D. L. (1983). Discrete sequential boundaries for clinical trials.
    Biometrika 70(3), 659-663. doi:10.1093/biomet/70.3.659

    Examples
    --------
    One-sided alpha = 0.025, five equally spaced looks, O'Brien-Fleming-type spending (the
    classical table value is 4.877, 3.357, 2.680, 2.290, 2.031):

    >>> b = spending_bounds([1, 2, 3, 4, 5], alpha=0.025, alternative="one-sided")
    >>> np.round(b.bounds, 3).tolist()
    [4.877, 3.357, 2.68, 2.29, 2.031]
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    a = check_fraction(alpha, name="alpha")
    kind = check_option(spending, SPENDING_FUNCTIONS, name="spending")
    alt = check_option(alternative, ("two-sided", "one-sided"), name="alternative")
    info = as_1d_float(information, name="information")
    if (info <= 0).any() or (np.diff(info) <= 0).any():
        raise MedauditError(f"information must be positive and strictly increasing over looks; "
                            f"got {info.tolist()!r}.")
    if fractions is None:
        frac = info / info[-1]
    else:
        frac = as_1d_float(fractions, name="fractions")
        if frac.size != info.size or (frac <= 0).any() or (frac > 1).any() or (
                np.diff(frac) < 0).any():
            raise MedauditError(f"fractions must give one non-decreasing value in (0, 1] per look "
                                f"({info.size} looks); got {frac.tolist()!r}.")
    spent = spending_function(frac, alpha=a, spending=kind, alternative=alt)
    inc = np.diff(np.r_[0.0, spent])
    two = alt == "two-sided"
    bounds = np.empty(info.size)
    nodes = weights = dens = None
    for k in range(info.size):
        if k == 0:
            c = stats.norm.isf(inc[0] / (2.0 if two else 1.0)) if inc[0] > 0 else math.inf
        else:
            args = (nodes, weights * dens, math.sqrt(info[k] - info[k - 1]), math.sqrt(info[k]),
                    two, inc[k])
            if inc[k] <= 0:
                c = math.inf
            elif _excess_crossing(0.0, *args) <= 0:
                c = 0.0
            else:
                from scipy import optimize  # here, not at the top: ~0.3 s to import

                c = optimize.brentq(_excess_crossing, 0.0, 40.0, args=args, xtol=1e-13, rtol=1e-13)
        bounds[k] = c
        # the density of S_k = Z_k sqrt(I_k) on the continuation region, for the next look
        if k + 1 < info.size:
            sd_next = math.sqrt(info[k + 1] - info[k])
            root = math.sqrt(info[k])
            hi = min(c * root, 10.0 * root) if math.isfinite(c) else 10.0 * root
            lo = -hi if two else -10.0 * root
            new_nodes, new_w = _simpson(lo, hi, sd_next)
            if k == 0:
                new_dens = np.exp(-0.5 * (new_nodes / root) ** 2) / (root * _SQRT2PI)
            else:
                sd = math.sqrt(info[k] - info[k - 1])
                kernel = np.exp(-0.5 * ((new_nodes[:, None] - nodes[None, :]) / sd) ** 2) / (
                    sd * _SQRT2PI)
                new_dens = kernel @ (weights * dens)
            nodes, weights, dens = new_nodes, new_w, new_dens
    nominal = stats.norm.sf(bounds) * (2.0 if two else 1.0)
    return SpendingBounds(bounds=_readonly(bounds), alpha_spent=_readonly(spent),
                          nominal_alpha=_readonly(nominal), fractions=_readonly(frac),
                          information=_readonly(info), alpha=a, spending=kind, alternative=alt)
