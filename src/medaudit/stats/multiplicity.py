"""Multiplicity adjustment over a declared family of p-values (statsmodels underneath).

NaN policy (anchors trap T13): statsmodels propagates a NaN to every adjusted
value, so NaNs are handled here explicitly.

* ``"omit"`` (default): NaN p-values (undefined contrasts) are held out and the
  family size ``m`` is the number of defined p-values — R's ``p.adjust`` default.
* ``"count"``: NaNs are held out but still counted in ``m``, as if each were a
  p-value of 1 — R's ``p.adjust(p, n = length(p))``; conservative.
* ``"raise"``: a NaN is an error.

NaN positions stay NaN (and ``reject`` False) in the output.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats._results import MultipleTestResult

__all__ = ["adjust_pvalues", "MULTIPLICITY_METHODS", "NAN_POLICIES", "ALPHA_DEPENDENT"]

#: canonical name -> statsmodels ``multipletests`` method
MULTIPLICITY_METHODS = {"holm": "holm", "bh": "fdr_bh", "bonferroni": "bonferroni", "by": "fdr_by",
                        "hochberg": "simes-hochberg", "hommel": "hommel", "sidak": "sidak",
                        "holm_sidak": "holm-sidak", "bh_two_stage": "fdr_tsbh",
                        "bky_two_stage": "fdr_tsbky"}
#: methods whose adjusted p-values depend on ``alpha`` (two-stage estimates of m0)
ALPHA_DEPENDENT = ("bh_two_stage", "bky_two_stage")
NAN_POLICIES = ("omit", "count", "raise")


def _holm(p: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm step-down, statsmodels' ``multipletests(method="holm")`` step for step.

    Computed here because statsmodels runs ``gc.collect()`` on every Holm call (tens of
    milliseconds in a full audit process, once per declared family); the tests hold it
    equal to statsmodels and to R's ``p.adjust``.
    """
    order = np.argsort(p)
    ps = np.take(p, order)
    steps = np.arange(ps.size, 0, -1)
    notreject = ps > alpha / steps
    first = np.flatnonzero(notreject)
    notreject[(first[0] if first.size else ps.size):] = True
    corrected = np.maximum.accumulate(ps * steps)
    corrected[corrected > 1] = 1
    pa, r = np.empty_like(corrected), np.empty_like(notreject)
    pa[order], r[order] = corrected, ~notreject
    return r, pa


def _bh(p: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini–Hochberg step-up, statsmodels' ``multipletests(method="fdr_bh")`` step for step.

    Computed here so that an audit whose families are Holm and BH (the defaults) never
    imports statsmodels (about a second per process); the tests hold it equal to
    statsmodels and to R's ``p.adjust``.
    """
    order = np.argsort(p)
    ps = np.take(p, order)
    ecdf = np.arange(1, ps.size + 1) / float(ps.size)
    reject = ps <= ecdf * alpha
    if reject.any():
        reject[:int(np.flatnonzero(reject)[-1])] = True
    corrected = np.minimum.accumulate((ps / ecdf)[::-1])[::-1]
    corrected[corrected > 1] = 1
    pa, r = np.empty_like(corrected), np.empty_like(reject)
    pa[order], r[order] = corrected, reject
    return r, pa


#: the methods computed here (statsmodels' steps, witnessed against it) rather than imported
_OWN = {"holm": _holm, "bh": _bh}


def adjust_pvalues(
    pvalues: ArrayLike,
    *,
    method: str = "holm",
    alpha: float = 0.05,
    nan_policy: str = "omit",
    family: str | None = None,
) -> MultipleTestResult:
    """Adjust a family of p-values (Holm step-down, Benjamini–Hochberg step-up, ...).

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Raw p-values in [0, 1]; NaN marks an undefined test (see ``nan_policy``).
    method : str, default="holm"
        Family-wise error control: ``"bonferroni"``, ``"sidak"`` (one step),
        ``"holm"``, ``"holm_sidak"`` (step-down), ``"hochberg"`` (step-up, Simes;
        independent or positively dependent tests), ``"hommel"`` (closed Simes).
        False discovery rate: ``"bh"``, ``"by"`` (any dependence),
        ``"bh_two_stage"`` (two-stage BH estimating the number of true nulls from a
        first BH pass at ``alpha``; statsmodels ``fdr_tsbh``) and ``"bky_two_stage"``
        (Benjamini, Krieger and Yekutieli 2006, first pass at ``alpha / (1 + alpha)``;
        ``fdr_tsbky``).  The two-stage adjusted p-values depend on ``alpha``.
    alpha : float, default=0.05
        Family-wise error rate or false discovery rate.
    nan_policy : {"omit", "count", "raise"}, default="omit"
    family : str, optional
        Name of the declared multiplicity family, recorded in the result.

    Returns
    -------
    MultipleTestResult

    Notes
    -----
    Computed with :func:`statsmodels.stats.multitest.multipletests` (Holm and BH with
    its steps written out here, so the default families need no statsmodels); verified
    against R's ``p.adjust`` (tests/reference/padjust_R.csv for Holm and BH,
    tests/reference/multiplicity_R.csv for Hochberg, Hommel, Šidák and Holm–Šidák, the
    last two written out in R) and, for the two-stage methods, a loop over the
    definition in the tests.

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03], method="holm").pvalues_adjusted.tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues([0.01, float("nan"), 0.03], method="bh").pvalues_adjusted.tolist()
    [0.02, nan, 0.03]
    """
    method = check_option(method, tuple(MULTIPLICITY_METHODS), name="method")
    nan_policy = check_option(nan_policy, NAN_POLICIES, name="nan_policy")
    alpha = check_fraction(alpha, name="alpha")
    try:
        p = np.asarray(pvalues, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise MedauditError(f"pvalues must be numeric; got {pvalues!r}.") from None
    nan = np.isnan(p)
    bad = ~nan & ((p < 0) | (p > 1))
    if bad.any():
        raise MedauditError(f"pvalues must lie in [0, 1]; found {float(p[bad][0])!r} at index "
                            f"{int(np.flatnonzero(bad)[0])}.")
    if nan.any() and nan_policy == "raise":
        raise MedauditError(f"pvalues contains NaN at index {np.flatnonzero(nan).tolist()} and "
                            "nan_policy='raise'; use 'omit' or 'count' to hold undefined tests out.")
    adj = np.full(p.size, np.nan)
    rej = np.zeros(p.size, dtype=bool)
    defined = p[~nan]
    m = int(defined.size + (nan.sum() if nan_policy == "count" else 0))
    if defined.size:
        padded = np.r_[defined, np.ones(m - defined.size)]
        # Sidak-type methods take log1p(-p), which is -inf at p = 1 (also the padding of
        # nan_policy="count"); the adjusted value that comes out, 1, is the right one
        if method in _OWN:
            r, pa = _OWN[method](padded, alpha)
        else:
            # lazy, and only here: importing statsmodels costs about a second, and Holm
            # and BH (the families an audit declares by default) never need it
            from statsmodels.stats.multitest import multipletests

            with np.errstate(divide="ignore"):
                r, pa, _, _ = multipletests(padded, alpha=alpha, method=MULTIPLICITY_METHODS[method])
        adj[~nan] = pa[: defined.size]
        rej[~nan] = r[: defined.size]
    return MultipleTestResult(pvalues=p, pvalues_adjusted=adj, reject=rej, method=method,
                              alpha=alpha, nan_policy=nan_policy, m=m, family=family)
