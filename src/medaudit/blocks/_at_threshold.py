"""Rates at a threshold and the data-driven threshold rules, shared by the blocks that read them.

``operating_points`` (declared and rule-chosen thresholds on each cohort), ``transport``
(the transported threshold on each target) and ``planning`` (Se and Sp at a threshold)
write the same columns for the same rates, and name the rules the same way:

* :class:`CutpointRule` — Youden's J or closest-to-(0, 1) with pROC's ``best.weights``
  (``cost``, ``prevalence``); a spec may give a rule by name (default weights);
* :func:`rate_metrics` — the engine metrics of every rate at a threshold;
* :func:`rate_rows` — one row per rate: the bootstrap interval beside the exact or score
  interval of each proportion method on the 2x2 counts.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from medaudit.blocks.block import BlockConfig
from medaudit.blocks.notes import degenerate_note
from medaudit.blocks.rows import interval
from medaudit.exceptions import UndefinedMetricWarning
from medaudit.io.specfile import fraction
from medaudit.stats import proportion_ci, threshold_metrics
from medaudit.stats.confusion import RATE_NAMES

__all__ = ["CutpointRule", "RuleName", "ProportionMethod", "as_rule", "rate_metrics", "rate_rows",
           "RATE_NAMES"]

RuleName = Literal["youden", "closest_topleft"]
ProportionMethod = Literal["wilson", "clopper_pearson", "agresti_coull", "jeffreys", "normal"]
#: the rates at a threshold that are a proportion count / nobs, by their 2x2 cells
_PROPORTIONS: dict[str, Callable[[Any], tuple[float, float]]] = {
    "sensitivity": lambda m: (m.tp, m.tp + m.fn), "specificity": lambda m: (m.tn, m.tn + m.fp),
    "ppv": lambda m: (m.tp, m.tp + m.fp), "npv": lambda m: (m.tn, m.tn + m.fn),
    "accuracy": lambda m: (m.tp + m.tn, m.tp + m.fp + m.fn + m.tn)}


# ----------------------------------------------------------------------------- the section
class CutpointRule(BlockConfig):
    """A data-driven threshold rule with pROC's ``best.weights`` (``cost``, ``prevalence``)."""

    rule: RuleName
    #: relative cost of a false negative to a false positive
    cost: float = Field(1.0, gt=0.0, allow_inf_nan=False)
    #: prevalence the weighting assumes (not the prevalence E is evaluated at)
    prevalence: float = 0.5

    @field_validator("prevalence")
    @classmethod
    def _prev(cls, v: float) -> float:
        return fraction(v, "prevalence")

    @property
    def weights(self) -> tuple[float, float]:
        return (float(self.cost), float(self.prevalence))

    @property
    def label(self) -> str:
        """``youden``, or ``youden[cost=2,prevalence=0.1]`` with weights other than (1, 0.5).

        Examples
        --------
        >>> CutpointRule(rule="youden").label, CutpointRule(rule="youden", cost=2, prevalence=0.1).label
        ('youden', 'youden[cost=2,prevalence=0.1]')
        """
        if self.weights == (1.0, 0.5):
            return self.rule
        return f"{self.rule}[cost={self.cost:g},prevalence={self.prevalence:g}]"


def as_rule(r: str | CutpointRule) -> CutpointRule:
    """A rule given by name (default weights) or in full, as :class:`CutpointRule`."""
    return r if isinstance(r, CutpointRule) else CutpointRule(rule=r)


# ----------------------------------------------------------------------------- rates at a threshold
def rate_metrics(threshold: float, prevalence: float | None) -> list[tuple[str, dict[str, Any]]]:
    """Engine metrics of every rate at ``threshold`` (and PPV/NPV at ``prevalence``).

    Examples
    --------
    >>> rate_metrics(0.5, 0.1)[-1]
    ('npv', {'threshold': 0.5, 'prevalence': 0.1})
    """
    out = [(n, {"threshold": float(threshold)}) for n in RATE_NAMES]
    if prevalence is not None:
        out += [(n, {"threshold": float(threshold), "prevalence": float(prevalence)})
                for n in ("ppv", "npv")]
    return out


def rate_rows(label: np.ndarray, score: np.ndarray, threshold: float, prevalence: float | None,
              boot: Mapping[tuple[str, float | None], Any], *, methods: list[str], level: float,
              row: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of every rate at ``threshold``: bootstrap ``boot[(rate, prevalence)]`` beside the
    exact/score intervals of ``methods`` on the 2x2 counts.  ``row(prevalence=, criterion=,
    **values)`` builds the row (E and provenance are the caller's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # nan rows are qualified below
        point = threshold_metrics(label, score, threshold=threshold)
    out = []
    for name, pi in [(n, None) for n in RATE_NAMES] + (
            [("ppv", prevalence), ("npv", prevalence)] if prevalence is not None else []):
        r = boot[(name, pi)]
        props: dict[str, float] = {}
        count = nobs = math.nan
        if pi is None and name in _PROPORTIONS:
            count, nobs = _PROPORTIONS[name](point)
        for m in methods:
            lo = hi = math.nan
            if nobs > 0:
                ci = proportion_ci(count, nobs, method=m, confidence_level=level)
                lo, hi = ci.ci_low, ci.ci_high
            props[f"{m}_low"], props[f"{m}_high"] = lo, hi
        undefined = "undefined at this threshold (a zero denominator)" if math.isnan(
            r.estimate) else ""
        out.append(row(prevalence="observed" if pi is None else pi, criterion=name, **interval(r),
                       count=count, nobs=nobs, **props, undefined=undefined,
                       degenerate=degenerate_note(r.n_degenerate, r.n_resamples)))
    return out


