"""The metric vocabulary as users write it: ids, direction, what a metric depends on.

A metric id is the stable name of a metric with its options, as every result table
writes it: ``roc_auc``, ``ece[n_bins=10]``, ``sensitivity[threshold=0.42]``,
``brier_score[prevalence=0.1]`` (:attr:`~medaudit.stats._metricspec.MetricSpec.id`).
:func:`parse_metric_id` reads one back into a validated spec, so a declared claim can
name its criterion the way the tables print it.  The direction of a metric (higher or
lower is better) and whether it depends on prevalence are stated here once, for every
caller that judges a claim.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from medaudit.exceptions import MedauditError
from medaudit.stats._metricspec import REGISTRY, MetricSpec, parse_metrics

__all__ = ["parse_metric_id", "metric_spec", "higher_is_better", "depends_on_prevalence",
           "needs_probabilities", "LOWER_IS_BETTER", "METRIC_NAMES"]

#: every metric the engine computes
METRIC_NAMES = tuple(REGISTRY)
#: metrics where a lower value is better (errors and losses); every other metric: higher
LOWER_IS_BETTER = frozenset({"brier_score", "log_loss", "ece", "aurc", "selective_risk",
                             "ece_equal_mass", "debiased_l2_ce"})
# cut-point coordinates are thresholds and rates chosen by a rule, not a quality to rank
_NO_DIRECTION = frozenset({"cutpoint_threshold"})

_ID = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[(.*)\])?\s*$", re.S)


def _value(text: str) -> Any:
    t = text.strip()
    for cast in (int, float):
        try:
            v = cast(t)
        except ValueError:
            continue
        if isinstance(v, float) and not math.isfinite(v):
            break
        return v
    return t


def parse_metric_id(text: str) -> MetricSpec:
    """The validated :class:`MetricSpec` of a metric id such as ``"ece[n_bins=10]"``.

    Parameters
    ----------
    text : str
        ``name`` or ``name[key=value,...]``; values are read as integers, then floats,
        then text.

    Returns
    -------
    MetricSpec

    Raises
    ------
    MedauditError
        Unknown metric or option (with the closest names), malformed id.

    Examples
    --------
    >>> parse_metric_id("ece[n_bins=10]").options
    {'n_bins': 10}
    >>> parse_metric_id("sensitivity[threshold=0.42]").id
    'sensitivity[threshold=0.42]'
    """
    if not isinstance(text, str):
        raise MedauditError(f"a metric id is text such as 'roc_auc' or 'ece[n_bins=10]'; got {text!r}.")
    m = _ID.match(text)
    if m is None:
        raise MedauditError(f"metric {text[:80]!r} is not a metric id: write a name such as 'roc_auc' "
                            "or a name with options such as 'ece[n_bins=10]'.")
    opts: dict[str, Any] = {}
    if m.group(2) is not None and m.group(2).strip():
        for part in m.group(2).split(","):
            if "=" not in part:
                raise MedauditError(f"metric {text[:80]!r}: option {part.strip()[:40]!r} needs "
                                    "the form key=value.")
            k, v = part.split("=", 1)
            opts[k.strip()] = _value(v)
    return metric_spec(m.group(1), opts)


def metric_spec(name: str, options: Mapping[str, Any] | None = None) -> MetricSpec:
    """A validated :class:`MetricSpec` from a name (or an id) and options."""
    if "[" in name:
        spec = parse_metric_id(name)
        if options:
            spec = MetricSpec(spec.name, {**spec.options, **dict(options)})
            return parse_metrics([(spec.name, dict(spec.options))])[0]
        return spec
    return parse_metrics([(name, dict(options or {}))])[0]


def higher_is_better(name: str) -> bool | None:
    """True when a higher value of metric ``name`` is better, False when lower, None for
    coordinates that are not a quality (a cut-point's threshold)."""
    base = name.split("[", 1)[0]
    if base in _NO_DIRECTION:
        return None
    return base not in LOWER_IS_BETTER


def depends_on_prevalence(name: str) -> bool:
    """Whether metric ``name`` takes a target prevalence (its value changes with π)."""
    base = name.split("[", 1)[0]
    return base in REGISTRY and "prevalence" in REGISTRY[base][2]


def needs_probabilities(name: str) -> bool:
    """Whether metric ``name`` reads scores as probabilities (calibration, losses)."""
    base = name.split("[", 1)[0]
    return base in REGISTRY and bool(REGISTRY[base][0])
