"""Agreement and association: Cohen's kappa, Jaccard overlap, Spearman and Kendall."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import as_1d_float, check_option, check_same_length, missing_mask
from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats._common import warn
from medaudit.stats._results import TestResult

__all__ = ["cohen_kappa", "jaccard", "spearman", "kendall"]


def cohen_kappa(rater_a: ArrayLike, rater_b: ArrayLike) -> TestResult:
    r"""Cohen's kappa for two raters' categorical verdicts on the same items.

    .. math:: \kappa = \frac{p_o - p_e}{1 - p_e}

    ``estimate`` is kappa; ``details`` holds the raw agreement ``p_o`` and the
    chance agreement ``p_e``.  Kappa is nan (undefined) when ``p_e = 1``.  No test
    is run (statistic and p-value are nan).

    Examples
    --------
    >>> r = cohen_kappa([1, 1, 0, 0, 1], [1, 0, 0, 0, 1])
    >>> round(r.estimate, 6), r.details["observed_agreement"]
    (0.615385, 0.8)
    """
    a = np.asarray(rater_a, dtype=object)
    b = np.asarray(rater_b, dtype=object)
    for name, r in (("rater_a", a), ("rater_b", b)):
        if r.ndim != 1:
            raise MedauditError(f"{name} must be one-dimensional (one verdict per item); got shape "
                                f"{r.shape}.")
    check_same_length(rater_a=a, rater_b=b)
    if a.size == 0:
        raise MedauditError("rater_a is empty; at least one item is needed.")
    for name, r in (("rater_a", a), ("rater_b", b)):
        gone = np.flatnonzero(missing_mask(r)).tolist()
        if gone:
            # NaN != NaN would make every missing verdict a category of its own (two raters
            # agreeing on everything else then disagree on each gap), so none is guessed
            raise MedauditError(
                f"{name} has missing verdicts (None/NaN) at position(s) {gone[:5]}; Cohen's "
                "kappa needs a verdict from both raters on every item: drop those items, or "
                "code a missing verdict as a category of its own (e.g. 'missing').")
    kinds = {name: {_kind(v) for v in r.tolist()} for name, r in (("rater_a", a), ("rater_b", b))}
    if len(kinds["rater_a"] | kinds["rater_b"]) > 1:
        # 1 and "1" are different categories to a set: every item would read as a disagreement
        raise MedauditError(
            f"the raters' verdicts mix kinds of values (rater_a: {', '.join(sorted(kinds['rater_a']))}"
            f"; rater_b: {', '.join(sorted(kinds['rater_b']))}); code both raters the same way "
            "(e.g. both as text).")
    cats = sorted(set(a.tolist()) | set(b.tolist()), key=repr)
    index = {c: i for i, c in enumerate(cats)}
    ia = np.array([index[v] for v in a])
    ib = np.array([index[v] for v in b])
    k = len(cats)
    cm = np.bincount(ia * k + ib, minlength=k * k).reshape(k, k) / a.size
    po = float(np.trace(cm))
    pe = float(cm.sum(axis=1) @ cm.sum(axis=0))
    kappa = (po - pe) / (1.0 - pe) if pe < 1.0 else math.nan
    if pe >= 1.0:
        warn(f"cohen_kappa: both raters give every item the same verdict ({cats[0]!r}): chance "
             "agreement is 1 and kappa is undefined; returning nan.", UndefinedMetricWarning)
    return TestResult(method="cohen_kappa", statistic=math.nan, pvalue=math.nan, estimate=kappa,
                      n=int(a.size), details={"observed_agreement": po, "chance_agreement": pe,
                                              "categories": [repr(c) for c in cats]})


def _kind(v: Any) -> str:
    """``"number"`` (bool, int, float, numpy numbers) or the type's name (``"str"``, ...)."""
    return "number" if isinstance(v, (bool, int, float, np.number, np.bool_)) else type(v).__name__


def jaccard(set_a: Iterable[Any], set_b: Iterable[Any]) -> float:
    """Jaccard overlap ``|A ∩ B| / |A ∪ B|``; nan when both sets are empty.

    Examples
    --------
    >>> jaccard({"a", "b", "c"}, {"b", "c", "d"})
    0.5
    """
    sets = []
    for name, x in (("set_a", set_a), ("set_b", set_b)):
        try:
            sets.append(set(x))
        except TypeError:
            raise MedauditError(f"{name} must be a collection of hashable ids (e.g. a list of "
                                f"image ids); got {type(x).__name__} {str(x)[:60]!r}.") from None
    a, b = sets
    union = a | b
    if not union:
        warn("jaccard: both sets are empty; the overlap is undefined, returning nan.",
             UndefinedMetricWarning)
        return math.nan
    return len(a & b) / len(union)


def _pair(x, y):
    xa = as_1d_float(x, name="x")
    ya = as_1d_float(y, name="y")
    check_same_length(x=xa, y=ya)
    if xa.size < 2:
        raise MedauditError("x and y need at least 2 items for a rank correlation.")
    return xa, ya


def _constant(xa: np.ndarray, ya: np.ndarray, name: str) -> bool:
    """Warn (at the caller, as medaudit's UndefinedMetricWarning) and return True when x or y
    is constant: a rank correlation is then undefined.  scipy warns for Spearman alone, with
    its own class, at a line inside medaudit; for Kendall it says nothing."""
    which = [n for n, v in (("x", xa), ("y", ya)) if np.all(v == v[0])]
    if not which:
        return False
    warn(f"{name}: {' and '.join(which)} {'is' if len(which) == 1 else 'are'} constant, so the rank "
         "correlation is undefined; returning nan.", UndefinedMetricWarning)
    return True


def spearman(x: ArrayLike, y: ArrayLike, *, alternative: str = "two-sided") -> TestResult:
    """Spearman rank correlation (scipy), ties by average ranks.

    Examples
    --------
    >>> round(spearman([1, 2, 3, 4], [1, 3, 2, 4]).estimate, 12)
    0.8
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    alternative = check_option(alternative, ("two-sided", "greater", "less"), name="alternative")
    xa, ya = _pair(x, y)
    if _constant(xa, ya, "spearman"):
        return TestResult(method="spearman", statistic=math.nan, pvalue=math.nan,
                          estimate=math.nan, alternative=alternative, n=int(xa.size))
    res = stats.spearmanr(xa, ya, alternative=alternative)
    return TestResult(method="spearman", statistic=float(res.statistic), pvalue=float(res.pvalue),
                      estimate=float(res.statistic), alternative=alternative, n=int(xa.size))


def kendall(x: ArrayLike, y: ArrayLike, *, alternative: str = "two-sided",
            variant: str = "b") -> TestResult:
    """Kendall's tau (scipy; tau-b by default, which handles ties).

    Examples
    --------
    >>> round(kendall([1, 2, 3, 4], [1, 3, 2, 4]).estimate, 6)
    0.666667
    """
    from scipy import stats  # here, not at the top: ~0.5 s to import, and most audits never call this
    alternative = check_option(alternative, ("two-sided", "greater", "less"), name="alternative")
    variant = check_option(variant, ("b", "c"), name="variant")
    xa, ya = _pair(x, y)
    if _constant(xa, ya, "kendall"):
        return TestResult(method=f"kendall_tau_{variant}", statistic=math.nan, pvalue=math.nan,
                          estimate=math.nan, alternative=alternative, n=int(xa.size))
    res = stats.kendalltau(xa, ya, alternative=alternative, variant=variant)
    return TestResult(method=f"kendall_tau_{variant}", statistic=float(res.statistic),
                      pvalue=float(res.pvalue), estimate=float(res.statistic),
                      alternative=alternative, n=int(xa.size))
