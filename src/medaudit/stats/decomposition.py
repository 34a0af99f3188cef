"""Balanced three-way sums of squares without replication (paper 000 M0.11, Table 8).

How much of the variation of a metric over a model x cohort x prompt matrix is due to
each factor and interaction: the descriptive decomposition paper 000 reports for
AUROC, Brier and ECE15 (no F-tests: with one value per cell the three-way term has no
error term).  Witnessed by statsmodels' type-I ANOVA and by Table 6 -> Table 8.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from medaudit.exceptions import MedauditError
from medaudit.stats._results import _ToDict

__all__ = ["VarianceDecomposition", "variance_decomposition"]


@dataclass(frozen=True, slots=True, kw_only=True)
class VarianceDecomposition(_ToDict):
    """Sums of squares, degrees of freedom and shares of each term of a 3-way layout."""

    #: the 7 term names: main effects, two-way interactions, the three-way term
    terms: tuple[str, ...]
    ss: dict[str, float]
    df: dict[str, int]
    #: 100 * ss / ss_total (NaN when every cell is equal)
    share_percent: dict[str, float]
    ss_total: float
    shape: tuple[int, int, int]


def variance_decomposition(values: ArrayLike,
                           factors: Sequence[str] = ("model", "cohort", "prompt")
                           ) -> VarianceDecomposition:
    r"""Balanced three-way sum-of-squares decomposition without replication (paper 000 M0.11).

    Parameters
    ----------
    values : array-like of shape (I, J, K)
        One finite value per cell of a complete, balanced layout (e.g. model x cohort
        x prompt AUROCs).
    factors : three str, default=("model", "cohort", "prompt")
        Names of the three axes; terms are named from them (``"model:cohort"``, ...).

    Returns
    -------
    VarianceDecomposition
        ``terms`` (the 7 term names, main effects, two-way interactions, then the
        three-way term), ``ss`` / ``df`` / ``share_percent`` (dicts keyed by term),
        ``ss_total`` and ``shape``.  ``share_percent = 100 * ss / ss_total`` (NaN when
        every cell is equal, i.e. ``ss_total == 0``).

    Notes
    -----
    With grand mean :math:`\bar y` and marginal means,
    :math:`SS_A = JK\sum_i(\bar y_{i..}-\bar y)^2`,
    :math:`SS_{AB} = K\sum_{ij}(\bar y_{ij.}-\bar y_{i..}-\bar y_{.j.}+\bar y)^2`
    (likewise for the others) and the three-way term is the residual
    :math:`SS_{ABC} = SS_T - (\text{all others})`, computed here directly as the sum of
    squared three-way residuals (identical, without cancellation).  No F-tests: with
    one value per cell the three-way term has no error term to be tested against.

    Examples
    --------
    >>> v = np.arange(8.0).reshape(2, 2, 2)  # purely additive: 4a + 2b + c
    >>> r = variance_decomposition(v)
    >>> [round(r.share_percent[t], 6) for t in r.terms]
    [76.190476, 19.047619, 4.761905, 0.0, 0.0, 0.0, 0.0]
    """
    if isinstance(factors, str) or len(factors) != 3 or len(set(factors)) != 3:
        raise MedauditError(f"factors must be three distinct names; got {factors!r}.")
    try:
        y = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise MedauditError("variance_decomposition needs a balanced (I, J, K) numeric array; the "
                            "values given are ragged or not numeric.") from None
    if y.ndim != 3:
        raise MedauditError(f"variance_decomposition needs a balanced 3-way array of shape "
                            f"(I, J, K); got {y.ndim} dimension(s), shape {y.shape}.")
    if min(y.shape) < 1:
        raise MedauditError(f"variance_decomposition needs at least one level per factor; got "
                            f"shape {y.shape}.")
    bad = ~np.isfinite(y)
    if bad.any():
        where = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:5]]
        raise MedauditError(
            f"variance_decomposition needs a complete, balanced matrix (one finite value per cell); "
            f"{int(bad.sum())} of {y.size} cell(s) are missing or not finite, e.g. (i, j, k) = "
            f"{where}.")
    a, b, c = factors
    n_i, n_j, n_k = y.shape
    g = y.mean()
    m_i = y.mean(axis=(1, 2))
    m_j = y.mean(axis=(0, 2))
    m_k = y.mean(axis=(0, 1))
    m_ij = y.mean(axis=2)
    m_ik = y.mean(axis=1)
    m_jk = y.mean(axis=0)
    e_ij = m_ij - m_i[:, None] - m_j[None, :] + g
    e_ik = m_ik - m_i[:, None] - m_k[None, :] + g
    e_jk = m_jk - m_j[:, None] - m_k[None, :] + g
    e_ijk = (y - m_ij[:, :, None] - m_ik[:, None, :] - m_jk[None, :, :]
             + m_i[:, None, None] + m_j[None, :, None] + m_k[None, None, :] - g)
    terms = (a, b, c, f"{a}:{b}", f"{a}:{c}", f"{b}:{c}", f"{a}:{b}:{c}")
    ss_vals = (n_j * n_k * float(np.sum((m_i - g) ** 2)),
               n_i * n_k * float(np.sum((m_j - g) ** 2)),
               n_i * n_j * float(np.sum((m_k - g) ** 2)),
               n_k * float(np.sum(e_ij ** 2)),
               n_j * float(np.sum(e_ik ** 2)),
               n_i * float(np.sum(e_jk ** 2)),
               float(np.sum(e_ijk ** 2)))
    dfs = (n_i - 1, n_j - 1, n_k - 1, (n_i - 1) * (n_j - 1), (n_i - 1) * (n_k - 1),
           (n_j - 1) * (n_k - 1), (n_i - 1) * (n_j - 1) * (n_k - 1))
    total = float(np.sum((y - g) ** 2))
    shares = [100.0 * s / total if total > 0 else math.nan for s in ss_vals]
    return VarianceDecomposition(terms=terms, ss=dict(zip(terms, ss_vals, strict=True)),
                                 df=dict(zip(terms, dfs, strict=True)),
                                 share_percent=dict(zip(terms, shares, strict=True)),
                                 ss_total=total, shape=(n_i, n_j, n_k))
