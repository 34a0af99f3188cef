"""Everything at a threshold: the 2x2 table and the rates read from it, with intervals.

Rule ``predict positive iff s >= threshold``.  From the cells ``tp, fp, fn, tn``:
sensitivity, specificity, PPV, NPV, LR+ = Se / (1 - Sp), LR- = (1 - Se) / Sp,
F1 = 2 tp / (2 tp + fp + fn), accuracy, balanced accuracy = (Se + Sp) / 2.  With a
declared ``prevalence`` the predictive values are re-expressed by Bayes' rule from Se
and Sp (the sample's own prevalence no longer enters them).  A rate whose denominator
is 0 is nan with :class:`~medaudit.exceptions.UndefinedMetricWarning` (LR+ when there
is no false positive, LR- when there is no true negative, as scikit-learn's
``class_likelihood_ratios``; F1 when the table has no positive cell, where scikit-learn
returns 0).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import RNGLike, check_fraction, check_option, shown
from medaudit.exceptions import MedauditError, UndefinedMetricWarning
from medaudit.stats import _kernels_extra as KX
from medaudit.stats._common import labels_scores, warn
from medaudit.stats._docs import fill_doc
from medaudit.stats._ranked import sample_weights
from medaudit.stats._results import BootstrapResult, _ToDict
from medaudit.stats.bootstrap import bootstrap_metrics
from medaudit.stats.proportions import PROPORTION_METHODS, ProportionInterval, proportion_ci

__all__ = ["threshold_metrics", "threshold_metrics_ci", "predictive_values", "ThresholdMetrics",
           "ThresholdMetricsCI", "RATE_NAMES"]

RATE_NAMES = ("sensitivity", "specificity", "ppv", "npv", "lr_positive", "lr_negative", "f1",
              "accuracy", "balanced_accuracy")


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdMetrics(_ToDict):
    """The 2x2 table at ``threshold`` and every rate read from it.

    ``ppv``/``npv`` are at the sample's prevalence, or at ``declared_prevalence`` when
    one was given (then ``ppv_sample``/``npv_sample`` keep the sample's values).
    """

    threshold: float
    tp: float
    fp: float
    fn: float
    tn: float
    sensitivity: float
    specificity: float
    ppv: float
    npv: float
    lr_positive: float
    lr_negative: float
    f1: float
    accuracy: float
    balanced_accuracy: float
    sample_prevalence: float
    declared_prevalence: float | None = None
    ppv_sample: float = math.nan
    npv_sample: float = math.nan
    rule: str = "s >= threshold"

    def rates(self) -> dict[str, float]:
        """The rates by name (:data:`RATE_NAMES`)."""
        return {k: getattr(self, k) for k in RATE_NAMES}


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdMetricsCI(_ToDict):
    """Point values, bootstrap intervals of every rate, and exact/score intervals of the
    rates that are proportions of counts (Se, Sp, accuracy, and PPV/NPV at the sample's
    prevalence).  ``bootstrap[name]`` and ``proportion[name]`` are keyed by rate name."""

    point: ThresholdMetrics
    bootstrap: dict[str, BootstrapResult]
    proportion: dict[str, ProportionInterval] = field(default_factory=dict)

    def to_dict(self, *, include_arrays: bool = False) -> dict[str, Any]:
        return {"point": self.point.to_dict(),
                "bootstrap": {k: v.to_dict(include_arrays=include_arrays)
                              for k, v in self.bootstrap.items()},
                "proportion": {k: v.to_dict() for k, v in self.proportion.items()}}


def _threshold(threshold) -> float:
    try:
        tau = float(threshold)
    except (TypeError, ValueError):
        raise MedauditError(f"threshold must be a number or +inf; got {shown(threshold)}.") from None
    if math.isnan(tau) or tau == -math.inf:
        raise MedauditError(f"threshold must be a number or +inf; got {shown(threshold)}.")
    return tau


def _prevalence(prevalence) -> float | None:
    return None if prevalence is None else check_fraction(prevalence, name="prevalence")


def predictive_values(sensitivity: float, specificity: float, prevalence: float
                      ) -> tuple[float, float]:
    r"""PPV and NPV at a prevalence by Bayes' rule.

    .. math:: PPV = \frac{Se\,\pi}{Se\,\pi + (1 - Sp)(1 - \pi)}, \quad
              NPV = \frac{Sp\,(1 - \pi)}{Sp\,(1 - \pi) + (1 - Se)\,\pi}

    Examples
    --------
    >>> ppv, npv = predictive_values(0.9, 0.8, 0.1)
    >>> round(ppv, 6), round(npv, 6)
    (0.333333, 0.986301)
    """
    se = check_fraction(sensitivity, name="sensitivity", closed="both")
    sp = check_fraction(specificity, name="specificity", closed="both")
    pi = check_fraction(prevalence, name="prevalence")
    z = np.zeros(1)
    out = KX.rates(z + se, z + 1.0 - sp, z + 1.0 - se, z + sp, prevalence=pi)
    # rates() takes cells; Se/Sp given directly stand for cells (se, 1-sp) / (1-se, sp)
    ppv, npv = float(out["ppv"][0]), float(out["npv"][0])
    for name, value, why in (("PPV", ppv, "Se = 0 and Sp = 1: the rule calls no case positive"),
                             ("NPV", npv, "Se = 1 and Sp = 0: the rule calls no case negative")):
        if math.isnan(value):
            warn(f"predictive_values: {name} is undefined ({why}); returning nan.",
                 UndefinedMetricWarning)
    return ppv, npv


@fill_doc
def threshold_metrics(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    threshold: float,
    prevalence: float | None = None,
    sample_weight: ArrayLike | None = None,
) -> ThresholdMetrics:
    """The confusion table at ``threshold`` and every rate from it.

    Parameters
    ----------
    {y_true}
    y_score : array-like of shape (n_samples,)
        Scores; positive prediction when ``s >= threshold``.
    threshold : float
        May be ``inf`` (nothing predicted positive).
    prevalence : float in (0, 1), optional
        Re-express PPV and NPV at this prevalence.
    sample_weight : array-like of shape (n_samples,), optional
        Case weights (cells are weighted counts).

    Returns
    -------
    ThresholdMetrics

    Notes
    -----
    Verified against scikit-learn's ``confusion_matrix``, ``recall_score``,
    ``precision_score``, ``f1_score``, ``accuracy_score``, ``balanced_accuracy_score``
    and ``class_likelihood_ratios`` with and without ``sample_weight``.

    Examples
    --------
    >>> m = threshold_metrics([0, 0, 0, 1, 1], [0.1, 0.4, 0.6, 0.5, 0.9], threshold=0.5)
    >>> (m.tp, m.fp, m.fn, m.tn), m.ppv, m.lr_positive
    ((2.0, 1.0, 0.0, 2.0), 0.6666666666666666, 3.0)
    >>> round(threshold_metrics([0, 0, 0, 1, 1], [0.1, 0.4, 0.6, 0.5, 0.9], threshold=0.5,
    ...                         prevalence=0.1).ppv, 6)
    0.25
    """
    tau = _threshold(threshold)
    pi = _prevalence(prevalence)
    y, s = labels_scores(y_true, y_score)
    w = sample_weights(sample_weight, y.size)
    cells = [float(c[0]) for c in KX.threshold_counts(w, y, s, tau)]
    arr = [np.array([c]) for c in cells]
    sample = {k: float(v[0]) for k, v in KX.rates(*arr).items()}
    declared = {k: float(v[0]) for k, v in KX.rates(*arr, prevalence=pi).items()}
    undefined = [k for k, v in declared.items() if math.isnan(v)]
    if undefined:
        warnings.warn(f"threshold_metrics at threshold={tau!r}: {', '.join(undefined)} undefined "
                      f"(a zero denominator; cells tp, fp, fn, tn = {cells}); returning nan.",
                      UndefinedMetricWarning, stacklevel=2)
    tp, fp, fn, tn = cells
    tot = tp + fp + fn + tn
    return ThresholdMetrics(threshold=tau, tp=tp, fp=fp, fn=fn, tn=tn,
                            sample_prevalence=(tp + fn) / tot if tot > 0 else math.nan,
                            declared_prevalence=pi,
                            ppv_sample=sample["ppv"] if pi is not None else math.nan,
                            npv_sample=sample["npv"] if pi is not None else math.nan,
                            **{k: declared[k] for k in RATE_NAMES})


def threshold_metrics_ci(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    threshold: float,
    prevalence: float | None = None,
    proportion_method: str = "wilson",
    design: str = "ordinary",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
) -> ThresholdMetricsCI:
    """Every rate at a threshold with bootstrap intervals (one draw) and proportion intervals.

    Parameters
    ----------
    threshold, prevalence
        As in :func:`threshold_metrics`.
    proportion_method : {"wilson", "clopper_pearson", "agresti_coull", "jeffreys", "normal"}
        Interval of the rates that are proportions of counts: Se (tp of tp + fn), Sp,
        accuracy, and PPV/NPV when no prevalence is declared.
    design : {"ordinary", "within_label", "cluster"}, default="ordinary"
        ``"ordinary"`` lets the class mix vary, as it does in a cohort sample (PPV and NPV
        then carry the prevalence's sampling variation); ``"within_label"`` fixes it, as
        a case-control design does.
    cluster, strata, n_resamples, confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics`; the engine metrics are
        ``sensitivity``, ``specificity``, ``ppv``, ``npv``, ``lr_positive``,
        ``lr_negative``, ``f1``, ``accuracy``, ``balanced_accuracy`` with option
        ``threshold`` (and ``prevalence`` for PPV/NPV).

    Returns
    -------
    ThresholdMetricsCI

    Examples
    --------
    >>> y = np.array([0, 0, 0, 0, 1, 1, 1, 1] * 10)
    >>> s = np.array([.1, .2, .3, .6, .4, .7, .8, .9] * 10)
    >>> r = threshold_metrics_ci(y, s, threshold=0.5, n_resamples=200, rng=0)
    >>> r.point.sensitivity, r.bootstrap["sensitivity"].estimate, r.point.lr_positive
    (0.75, 0.75, 3.0)
    >>> r.bootstrap["lr_positive"].ci_low < 3.0 < r.bootstrap["lr_positive"].ci_high
    True
    >>> round(r.proportion["sensitivity"].ci_low, 4), r.proportion["sensitivity"].method
    (0.5981, 'wilson')
    """
    pm = check_option(proportion_method, tuple(PROPORTION_METHODS), name="proportion_method")
    tau = _threshold(threshold)
    pi = _prevalence(prevalence)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # reported by the point call
        point = threshold_metrics(y_true, y_score, threshold=tau, prevalence=pi)
    if any(math.isnan(v) for v in point.rates().values()):
        warnings.warn(f"threshold_metrics_ci at threshold={tau!r}: some rates are undefined on "
                      "the full sample (nan); their intervals use the replicates where they are "
                      "defined.", UndefinedMetricWarning, stacklevel=2)
    specs = []
    for name in RATE_NAMES:
        opts: dict[str, Any] = {"threshold": tau}
        if name in ("ppv", "npv") and pi is not None:
            opts["prevalence"] = pi
        specs.append((name, opts))
    res = bootstrap_metrics(y_true, y_score, metrics=specs, design=design, cluster=cluster,
                            strata=strata, n_resamples=n_resamples,
                            confidence_level=confidence_level, rng=rng, batch=batch)
    from medaudit.stats._metricspec import MetricSpec

    boot = {name: res[MetricSpec(name, opts).id] for name, opts in specs}
    tp, fp, fn, tn = point.tp, point.fp, point.fn, point.tn
    cells = {"sensitivity": (tp, tp + fn), "specificity": (tn, tn + fp),
             "accuracy": (tp + tn, tp + fp + fn + tn)}
    if pi is None:
        cells.update(ppv=(tp, tp + fp), npv=(tn, tn + fn))
    prop = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for name, (k, n) in cells.items():
            prop[name] = proportion_ci(k, n, method=pm, confidence_level=confidence_level)
    return ThresholdMetricsCI(point=point, bootstrap=boot, proportion=prop)
