"""Frozen result dataclasses returned by the statistics core.

Every inferential result records how it was obtained (method, design, number of
resamples, seed) next to the numbers, so that a value never travels without its
provenance.  ``to_dict()`` gives plain Python types for JSON/tables; arrays of
replicates are left out unless asked for.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BootstrapResult",
    "AUCInterval",
    "PairedAUCTest",
    "TestResult",
    "MultipleTestResult",
    "PermutationResult",
    "ReliabilityBins",
    "RiskCoverageCurve",
    "OperatingPoint",
]


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class _ToDict:
    _array_fields: tuple[str, ...] = ()

    def to_dict(self, *, include_arrays: bool = False) -> dict[str, Any]:
        """Return the fields as plain Python values (NaN stays ``float('nan')``)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name in self._array_fields and not include_arrays:
                continue
            out[f.name] = _plain(getattr(self, f.name))
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class BootstrapResult(_ToDict):
    """A point estimate on the full sample with a resampling interval.

    The point estimate is always the statistic on the full data (never the
    bootstrap mean or median); the interval comes from the non-degenerate
    replicates, whose number is ``n_resamples - n_degenerate``.
    """

    metric: str
    estimate: float
    ci_low: float
    ci_high: float
    confidence_level: float
    ci_method: str
    design: str
    n_resamples: int
    n_degenerate: int
    seed: int | None
    n: int
    n_pos: float
    n_neg: float
    options: dict[str, Any] = field(default_factory=dict)
    replicates: NDArray[np.float64] = field(repr=False, default_factory=lambda: np.empty(0))

    _array_fields = ("replicates",)

    @property
    def n_valid(self) -> int:
        """Number of replicates on which the statistic was defined."""
        return self.n_resamples - self.n_degenerate


@dataclass(frozen=True, slots=True, kw_only=True)
class AUCInterval(_ToDict):
    """An AUROC with its DeLong variance and normal-theory interval (not clipped to [0, 1])."""

    estimate: float
    variance: float
    ci_low: float
    ci_high: float
    confidence_level: float
    n_pos: int
    n_neg: int
    method: str = "delong"


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedAUCTest(_ToDict):
    """DeLong comparison of two AUROCs; ``estimate = auc_a - auc_b``."""

    estimate: float
    statistic: float
    pvalue: float
    ci_low: float
    ci_high: float
    confidence_level: float
    auc_a: float
    auc_b: float
    variance: float
    alternative: str
    paired: bool
    n_pos: int
    n_neg: int
    method: str = "delong"
    #: reference distribution of the p-value ("normal", or "t" with ``df`` degrees of freedom)
    distribution: str = "normal"
    df: float = math.nan


@dataclass(frozen=True, slots=True, kw_only=True)
class TestResult(_ToDict):
    """A hypothesis test under the common conventions (statistic, p-value, optional estimate)."""

    method: str
    statistic: float
    pvalue: float
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    confidence_level: float = math.nan
    alternative: str = "two-sided"
    n: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    __test__ = False  # not a pytest test class despite the name


@dataclass(frozen=True, slots=True, kw_only=True)
class MultipleTestResult(_ToDict):
    """Adjusted p-values for one declared multiplicity family."""

    pvalues: NDArray[np.float64]
    pvalues_adjusted: NDArray[np.float64]
    reject: NDArray[np.bool_]
    method: str
    alpha: float
    nan_policy: str
    m: int
    family: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PermutationResult(_ToDict):
    """A permutation test with the (1 + b) / (1 + B) p-value."""

    statistic: float
    pvalue: float
    n_resamples: int
    n_extreme: int
    alternative: str
    seed: int | None
    method: str
    null_distribution: NDArray[np.float64] = field(repr=False, default_factory=lambda: np.empty(0))

    _array_fields = ("null_distribution",)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReliabilityBins(_ToDict):
    """Reliability-diagram data: non-empty equal-width bins only."""

    bin_index: NDArray[np.int64]
    bin_low: NDArray[np.float64]
    bin_high: NDArray[np.float64]
    count: NDArray[np.int64]
    mean_score: NDArray[np.float64]
    fraction_positive: NDArray[np.float64]
    n_bins: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RiskCoverageCurve(_ToDict):
    """Selective risk at each coverage k/n, k = 1..n (confidence max(s, 1-s), decision s >= 0.5)."""

    coverage: NDArray[np.float64]
    risk: NDArray[np.float64]
    confidence: NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatingPoint(_ToDict):
    """Sensitivity and specificity at a threshold with the decision rule ``s >= threshold``."""

    threshold: float
    sensitivity: float
    specificity: float
    n_pos: float
    n_neg: float
    rule: str = "s >= threshold"
