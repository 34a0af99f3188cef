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
from medaudit.stats._metricspec import ALIASES, REGISTRY, MetricSpec, alias_error, parse_metrics

__all__ = ["parse_metric_id", "metric_spec", "higher_is_better", "depends_on_prevalence",
           "needs_probabilities", "metric_range", "LOWER_IS_BETTER", "METRIC_NAMES", "ALIASES"]

#: every metric the engine computes
METRIC_NAMES = tuple(REGISTRY)
#: metrics where a lower value is better (errors and losses); every other metric: higher
LOWER_IS_BETTER = frozenset({"brier_score", "log_loss", "ece", "aurc", "selective_risk",
                             "ece_equal_mass", "debiased_l2_ce"})
# cut-point coordinates are thresholds and rates chosen by a rule, not a quality to rank
_NO_DIRECTION = frozenset({"cutpoint_threshold"})

#: metrics whose values lie outside [0, 1] (losses, likelihood ratios, thresholds, the
#: debiased calibration error, which can fall below 0); every other one lies in [0, 1]
_UNBOUNDED = {"log_loss": (0.0, math.inf), "lr_positive": (0.0, math.inf),
              "lr_negative": (0.0, math.inf), "cutpoint_threshold": (-math.inf, math.inf),
              "debiased_l2_ce": (-math.inf, math.inf)}

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
    """A validated :class:`MetricSpec` from a name (or an id) and options.

    A name from :data:`ALIASES` (``AUROC``, ``auc``, ``brier``) is refused with the id to
    write instead: ids are what every table prints, so a claim and its rows agree.

    Examples
    --------
    >>> metric_spec("ece", {"n_bins": 10}).id
    'ece[n_bins=10]'
    >>> metric_spec("AUROC")
    Traceback (most recent call last):
    ...
    medaudit.exceptions.MedauditError: metric 'AUROC' is written 'roc_auc' in medaudit (the id every table prints); write metric: roc_auc.
    """  # noqa: E501
    if not isinstance(name, str):
        raise MedauditError(f"a metric id is text such as 'roc_auc' or 'ece[n_bins=10]'; got {name!r}.")
    alias_error(name)
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


def metric_range(name: str) -> tuple[float, float]:
    """The interval the values of metric ``name`` lie in: (0, 1) for rates, areas and
    calibration errors; wider for losses, likelihood ratios and thresholds.

    Examples
    --------
    >>> metric_range("roc_auc"), metric_range("log_loss")
    ((0.0, 1.0), (0.0, inf))
    """
    return _UNBOUNDED.get(name.split("[", 1)[0], (0.0, 1.0))


def needs_probabilities(name: str) -> bool:
    """Whether metric ``name`` reads scores as probabilities (calibration, losses)."""
    base = name.split("[", 1)[0]
    return base in REGISTRY and bool(REGISTRY[base][0])
