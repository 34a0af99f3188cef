"""Threshold selection rules: Youden's J and closest-to-(0, 1), as pROC's ``coords(x = "best")``.

With ``weights = (cost, prevalence)`` (pROC's ``best.weights``) and
``r = (1 - prevalence) / (cost * prevalence)``:

* ``"youden"`` maximises ``Se + r * Sp`` (Youden's J = Se + Sp - 1 when r = 1);
* ``"closest_topleft"`` minimises ``(1 - Se)^2 + r * (1 - Sp)^2``.

Candidates are the observed scores with the rule ``s >= t`` (tied scores are one
threshold) and ``+inf`` (nothing positive).  pROC places its thresholds midway between
consecutive observed scores (and at ``-inf``/``+inf``); each of ours corresponds to one
of pROC's and gives the same Se and Sp, reported as ``threshold_midpoint``.

Ties (two thresholds with the same criterion, within a relative 1e-12): pROC returns all
of them; medaudit returns the *highest* threshold — the one with the highest
specificity, the convention of :func:`~medaudit.stats.threshold_for_specificity` — and
lists every tied threshold in ``tied_thresholds``.  On ``y = [0, 1, 0, 1]``, ``s = [1, 2,
3, 4]`` J is 1.5 at thresholds 4 and 2; 4 is returned (pROC: 3.5 and 1.5).  pROC compares
the criteria with ``==``, so a tie that is exact in rational arithmetic but differs in the
last bit of the floating-point sums (e.g. ``Se + 0.5 Sp`` with 80 positives and 120
negatives: ``(3 tp + tn) / 240``) is one here and may be missing from pROC's list; the
reference tests check that every such extra tie is exact.

The ``+inf`` candidate ("nothing positive", a threshold above every score) wins when no
observed threshold beats it — a weak or inverted score — and also takes the tie with
"everything positive" (Se 1, Sp 0) on a constant score.  It is a real choice of the rule,
and pROC reports it as ``Inf`` too.  In :func:`best_threshold_ci` those replicates stay in
the order statistics (leaving them out would narrow the interval), but an interval end
that falls on them is not a threshold on the score scale: it is reported as nan, with
:class:`~medaudit.exceptions.DegenerateDataWarning`, and their count is
``CutpointInterval.n_no_positive``.  Their Se and Sp (0 and 1) stay in those intervals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import RNGLike, as_generator, check_fraction, check_option, shown
from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX
from medaudit.stats._common import labels_scores, warn, warn_if_one_class
from medaudit.stats._docs import fill_doc
from medaudit.stats._ranked import (
    bootstrap_plan,
    nested_to_dict,
    ranked_batches,
    sample_weights,
)
from medaudit.stats._results import BootstrapResult, _ToDict
from medaudit.stats.bootstrap import _common_options, _result

__all__ = ["best_threshold", "best_threshold_ci", "Cutpoint", "CutpointInterval",
           "CUTPOINT_METHODS", "cutpoint_rule"]

CUTPOINT_METHODS = KX.CUTPOINT_METHODS


@dataclass(frozen=True, slots=True, kw_only=True)
class Cutpoint(_ToDict):
    """The best threshold by a rule, with its operating characteristics.

    ``criterion`` is pROC's reported value: ``Se + r Sp`` for Youden, the weighted
    squared distance ``(1 - Se)^2 + r (1 - Sp)^2`` for closest-to-(0, 1).
    """

    method: str
    threshold: float
    threshold_midpoint: float
    sensitivity: float
    specificity: float
    criterion: float
    cost: float
    prevalence: float
    r: float
    n_pos: float
    n_neg: float
    tied_thresholds: NDArray[np.float64] = field(default_factory=lambda: np.empty(0))
    rule: str = "s >= threshold"

    _array_fields = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CutpointInterval(_ToDict):
    """Bootstrap intervals of a chosen threshold and of its Se and Sp (one set of replicates).

    Every replicate re-applies the rule to its resample.  The threshold's interval uses
    order statistics (lower and higher neighbours, numpy ``method="lower"/"higher"``), so
    its ends are thresholds some replicate chose; Se and Sp use percentile endpoints.
    ``n_no_positive`` replicates chose ``+inf`` (nothing positive); an end of the threshold
    interval that falls on them is nan (see the module docstring).
    """

    cutpoint: Cutpoint
    threshold: BootstrapResult
    sensitivity: BootstrapResult
    specificity: BootstrapResult
    n_no_positive: int = 0

    def to_dict(self, *, include_arrays: bool = False) -> dict[str, Any]:
        return {**nested_to_dict(self, "cutpoint", ("threshold", "sensitivity", "specificity"),
                                 include_arrays), "n_no_positive": self.n_no_positive}


def _weights(weights) -> tuple[float, float, float]:
    try:
        cost, prev = (float(v) for v in weights)
    except (TypeError, ValueError):
        raise MedauditError(f"weights must be (cost, prevalence), e.g. (1, 0.5) (pROC's "
                            f"best.weights); got {shown(weights)}.") from None
    if not (math.isfinite(cost) and cost > 0):
        raise MedauditError(f"weights cost must be a positive number; got {shown(cost)}.")
    prev = check_fraction(prev, name="weights prevalence")
    return cost, prev, KX.cutpoint_weight(cost, prev)


def _midpoint(r: K.Ranked, k: int) -> float:
    blocks = r.score[r.starts]
    if k == 0:
        return math.inf
    if k >= blocks.size:
        return -math.inf
    return float((blocks[k - 1] + blocks[k]) / 2.0)


@fill_doc
def best_threshold(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    method: str = "youden",
    weights: tuple[float, float] = (1.0, 0.5),
    sample_weight: ArrayLike | None = None,
) -> Cutpoint:
    """The best threshold by Youden's J or closest-to-(0, 1) (pROC ``coords(x = "best")``).

    Parameters
    ----------
    {y_true}
    {y_score}
    method : {"youden", "closest_topleft"}, default="youden"
        pROC's ``best.method``.
    weights : (cost, prevalence), default=(1.0, 0.5)
        pROC's ``best.weights``: the relative cost of a false negative and the
        prevalence, entering as ``r = (1 - prevalence) / (cost * prevalence)``.
    sample_weight : array-like of shape (n_samples,), optional
        Case weights.

    Returns
    -------
    Cutpoint
        nan fields (with :class:`~medaudit.exceptions.UndefinedMetricWarning`) when a
        class is absent.

    Notes
    -----
    Verified against pROC 1.18 ``coords(roc, "best", best.method, best.weights,
    ret = c("threshold", "sensitivity", "specificity"))`` for both methods and several
    weights (tests/reference/coords_best_pROC.csv); pROC's thresholds are the
    midpoints, compared with ``threshold_midpoint``.  Ties: see the module docstring.

    Examples
    --------
    >>> c = best_threshold([0, 1, 0, 1], [1, 2, 3, 4])
    >>> c.threshold, c.sensitivity, c.specificity, c.criterion, c.tied_thresholds.tolist()
    (4.0, 0.5, 1.0, 1.5, [4.0, 2.0])
    >>> best_threshold([0, 1, 0, 1], [1, 2, 3, 4], method="closest_topleft").threshold
    4.0
    """
    method = check_option(method, CUTPOINT_METHODS, name="method")
    cost, prev, rw = _weights(weights)
    y, s = labels_scores(y_true, y_score)
    w = sample_weights(sample_weight, y.size)
    wp, wn = KX.class_totals(w, y)
    common = dict(method=method, cost=cost, prevalence=prev, r=rw, n_pos=float(wp[0]),
                  n_neg=float(wn[0]))
    if warn_if_one_class(float(wp[0]), float(wn[0]), "best_threshold"):
        return Cutpoint(threshold=math.nan, threshold_midpoint=math.nan, sensitivity=math.nan,
                        specificity=math.nan, criterion=math.nan, **common)
    r = K.rank(y, s)
    cols = KX.cols_from_items(w, r)
    thr, se, sp, k = KX.cutpoint(cols, r, wp, wn, method=method, weight=rw)
    cp, cn = KX.vertices(cols, r)
    # rates against the cumulated totals (as scikit-learn's roc_curve, tps / tps[-1]): the
    # curve then ends at exactly (1, 1) under fractional weights, where the class totals
    # summed in item order can differ by an ulp; integer counts give the same either way
    se_all, sp_all = cp[0] / cp[0, -1], 1.0 - cn[0] / cn[0, -1]
    if method == "youden":
        crit_all = se_all + rw * sp_all
    else:
        crit_all = -((1.0 - se_all) ** 2 + rw * (1.0 - sp_all) ** 2)
    observed = np.r_[True, (np.diff(cp[0]) + np.diff(cn[0])) > 0]
    crit_all = np.where(observed, crit_all, -np.inf)
    best = crit_all.max()
    tied = np.flatnonzero(crit_all >= best - KX._TOL * max(abs(best), 1.0))
    thresholds = np.r_[np.inf, r.score[r.starts]]
    crit = float(best) if method == "youden" else float(-best)
    return Cutpoint(threshold=float(thr[0]), threshold_midpoint=_midpoint(r, int(k[0])),
                    sensitivity=float(se[0]), specificity=float(sp[0]), criterion=crit,
                    tied_thresholds=thresholds[tied], **common)


def _order_interval(reps: NDArray[np.float64], level: float) -> tuple[float, float]:
    """Order-statistic ends over the defined replicates, ``+inf`` ones included; an end on
    ``+inf`` (the rule called nothing positive) is no threshold on the score scale: nan."""
    valid = reps[~np.isnan(reps)]
    if valid.size == 0:
        return math.nan, math.nan
    q = round(50.0 * (1.0 - level), 10)
    # method "lower"/"higher" pick order statistics (no interpolation, so +inf is harmless)
    ends = (float(np.percentile(valid, q, method="lower")),
            float(np.percentile(valid, 100.0 - q, method="higher")))
    return tuple(math.nan if math.isinf(e) else e for e in ends)  # type: ignore[return-value]


def best_threshold_ci(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    method: str = "youden",
    weights: tuple[float, float] = (1.0, 0.5),
    design: str = "within_label",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
) -> CutpointInterval:
    """Bootstrap intervals of the best threshold and of its sensitivity and specificity.

    Each replicate re-selects the threshold on its resample (the rule's own
    variability is part of the interval), reading its Se and Sp on that resample —
    the engine metrics ``cutpoint_threshold``, ``cutpoint_sensitivity`` and
    ``cutpoint_specificity`` give the same replicates through
    :func:`~medaudit.stats.bootstrap_metrics`.  To carry the threshold to another
    cohort use :func:`~medaudit.stats.threshold_transport` with ``rule=method``.

    Parameters
    ----------
    method, weights
        As in :func:`best_threshold`.
    design, cluster, strata, n_resamples, confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics` (default design within-label).

    Returns
    -------
    CutpointInterval

    Examples
    --------
    >>> y = [0, 0, 0, 0, 1, 1, 1, 1]
    >>> s = [.1, .2, .3, .6, .4, .7, .8, .9]
    >>> res = best_threshold_ci(y, s, n_resamples=200, rng=1)
    >>> res.cutpoint.threshold, res.sensitivity.estimate, res.specificity.estimate
    (0.7, 0.75, 1.0)
    >>> res.cutpoint.tied_thresholds.tolist()  # J = 1.75 at 0.7 and 0.4: the higher wins
    [0.7, 0.4]
    >>> res.threshold.ci_low <= 0.7 <= res.threshold.ci_high
    True
    """
    method = check_option(method, CUTPOINT_METHODS, name="method")
    cost, prev, rw = _weights(weights)
    n_res, level, _, batch = _common_options(n_resamples, confidence_level, "percentile", batch)
    cut = best_threshold(y_true, y_score, method=method, weights=(cost, prev))
    y, s = labels_scores(y_true, y_score)
    if math.isnan(cut.sensitivity):
        raise MedauditError("best_threshold_ci needs both positives and negatives in y_true.")
    plan = bootstrap_plan(design, y, cluster=cluster, strata=strata)
    gen, rec = as_generator(rng)
    r = K.rank(y, s)
    parts: list[list[NDArray]] = [[], [], []]
    for counts in ranked_batches(plan, r.order, n_res, gen, batch):
        tp = K._dot(counts, r.label)
        out = KX.cutpoint(KX.cols_from_ranked(counts), r, tp, K._rowsum(counts) - tp,
                          method=method, weight=rw)
        for lst, v in zip(parts, out[:3], strict=True):
            lst.append(v)
    thr_reps, se_reps, sp_reps = (np.concatenate(p) for p in parts)
    opts = {"method": method, "cost": cost, "prevalence": prev, "rng": rec}
    common = dict(level=level, ci_method="percentile", design=design, n_resamples=n_res,
                  seed=rec["seed"], n=int(y.size), n_pos=float(y.sum()),
                  n_neg=float(y.size - y.sum()), options=opts)
    se_res = _result(f"cutpoint_sensitivity[method={method}]", cut.sensitivity, se_reps, None,
                     **common)
    sp_res = _result(f"cutpoint_specificity[method={method}]", cut.specificity, sp_reps, None,
                     **common)
    lo, hi = _order_interval(thr_reps, level)
    n_inf = int(np.isinf(thr_reps).sum())
    if n_inf and (math.isnan(lo) or math.isnan(hi)):
        warn(f"best_threshold_ci: the rule called nothing positive in {n_inf} of {n_res} "
             "replicates (threshold +inf, above every score), more than the interval's tail: "
             "that end has no finite threshold and is nan; n_no_positive counts them.",
             DegenerateDataWarning)
    thr_res = BootstrapResult(
        metric=f"cutpoint_threshold[method={method}]", estimate=cut.threshold, ci_low=lo,
        ci_high=hi, confidence_level=level, ci_method="percentile-order-statistics",
        design=design, n_resamples=n_res, n_degenerate=int(np.isnan(thr_reps).sum()),
        seed=rec["seed"], n=int(y.size), n_pos=float(y.sum()), n_neg=float(y.size - y.sum()),
        options=opts, replicates=thr_reps)
    return CutpointInterval(cutpoint=cut, threshold=thr_res, sensitivity=se_res,
                            specificity=sp_res, n_no_positive=n_inf)


def cutpoint_rule(method: str, weights: tuple[float, float] = (1.0, 0.5)):
    """A threshold chooser ``choose(w_ranked, ranked, _)`` for :mod:`~medaudit.stats.transport`.

    Same signature as the kernels ``tau_sensitivity``/``tau_specificity`` (the third
    argument, a target value, is unused: these rules have none).
    """
    method = check_option(method, CUTPOINT_METHODS, name="rule")
    _, _, rw = _weights(weights)

    def choose(w_ranked, r, _x=None):
        w2 = np.atleast_2d(w_ranked)
        tp = K._dot(w2, r.label)
        tau = KX.cutpoint(KX.cols_from_ranked(w2), r, tp, K._rowsum(w2) - tp, method=method,
                          weight=rw)[0]
        return tau if np.ndim(w_ranked) == 2 else tau[0]

    return choose
