"""Partial area under the ROC curve over a specificity or sensitivity range (pROC's ``partial.auc``).

The area is taken under the empirical ROC curve, whose tie blocks are diagonal
segments (so the full range gives the mid-rank AUROC), with linear interpolation where
a bound falls inside a segment — pROC's ``auc(roc, partial.auc = c(hi, lo),
partial.auc.focus = ...)``.  McClish's standardisation maps the area onto [0.5, 1] for
curves above the chance diagonal (pROC's ``partial.auc.correct = TRUE``; over the FPR
range ``[0, max_fpr]`` it is scikit-learn's ``roc_auc_score(max_fpr=)``).

As an engine metric its id is ``pauc[sp=lo:hi]`` or ``pauc[se=lo:hi]`` (plus
``correct=True``); :func:`~medaudit.stats.bootstrap_metrics` and
:func:`~medaudit.stats.paired_bootstrap` accept ``("pauc", {"sp": "0.9:1"})``, and
:func:`partial_roc_auc_ci` draws the same replicates without gathering the weights.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import RNGLike, as_generator, check_option
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX
from medaudit.stats._common import labels_scores, unit_scaled, warn_if_one_class
from medaudit.stats._docs import fill_doc
from medaudit.stats._ranked import bootstrap_plan, ranked_batches, sample_weights
from medaudit.stats._results import BootstrapResult
from medaudit.stats.bootstrap import _common_options, _result, bootstrap_metrics

__all__ = ["partial_roc_auc", "partial_roc_auc_ci", "pauc_metric", "PAUC_FOCUS"]

PAUC_FOCUS = ("specificity", "sensitivity")
_SHORT = {"specificity": "sp", "sensitivity": "se"}


def pauc_metric(bounds: Any = (0.9, 1.0), *, focus: str = "specificity",
                correct: bool = False) -> tuple[str, dict[str, Any]]:
    """The engine metric ``(name, options)`` of a partial AUC, in canonical form.

    Examples
    --------
    >>> pauc_metric((0.9, 1))
    ('pauc', {'sp': '0.9:1'})
    >>> from medaudit.stats._metricspec import MetricSpec
    >>> MetricSpec(*pauc_metric("0.8:1", focus="sensitivity", correct=True)).id
    'pauc[correct=True,se=0.8:1]'
    """
    focus = check_option(focus, PAUC_FOCUS, name="focus")
    lo, hi = KX.parse_range(bounds, name="bounds")
    # shortest round-trip form: "0.9:1", and never a rounded bound
    opts: dict[str, Any] = {_SHORT[focus]: f"{_num(lo)}:{_num(hi)}"}
    if correct:
        opts["correct"] = True
    KX.pauc_options(opts)
    return "pauc", opts


@fill_doc
def partial_roc_auc(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    bounds: Any = (0.9, 1.0),
    focus: str = "specificity",
    correct: bool = False,
    sample_weight: ArrayLike | None = None,
) -> float:
    r"""Partial AUC over a specificity (or sensitivity) range, optionally McClish-standardised.

    Parameters
    ----------
    {y_true}
    y_score : array-like of shape (n_samples,)
        Scores, higher meaning more likely positive (never flipped).
    bounds : (lo, hi) or "lo:hi", default=(0.9, 1.0)
        The range of ``focus`` in [0, 1]; order does not matter.
    focus : {"specificity", "sensitivity"}, default="specificity"
        ``"specificity"``: :math:`\int_{lo}^{hi} Se\,dSp`, the area over the FPR range
        ``[1 - hi, 1 - lo]``.  ``"sensitivity"``: :math:`\int_{lo}^{hi} Sp\,dSe`, the
        horizontal strip of the ROC plot between those sensitivities.
    correct : bool, default=False
        McClish standardisation :math:`\frac12\big(1 + \frac{A - A_{min}}{A_{max} -
        A_{min}}\big)`, :math:`A_{min} = (hi - lo)(1 - \frac{lo + hi}{2})` (the chance
        diagonal), :math:`A_{max} = hi - lo`.  Unlike pROC, a curve below the diagonal
        is not refused: the formula is applied and the value falls below 0.5
        (pROC's ``allow.invalid.partial.auc.correct = TRUE``; scikit-learn does the same).
    sample_weight : array-like of shape (n_samples,), optional
        Case weights (a weight ``k`` counts the case ``k`` times).

    Returns
    -------
    float
        ``nan`` with :class:`~medaudit.exceptions.UndefinedMetricWarning` when a class
        is absent (or has zero weight).

    Notes
    -----
    Verified against pROC 1.18 ``auc(..., partial.auc, partial.auc.focus,
    partial.auc.correct)`` (tests/reference/pauc_pROC.csv) and, over ``sp = [1 -
    max_fpr, 1]`` with ``correct=True``, against ``sklearn.metrics.roc_auc_score(...,
    max_fpr=max_fpr, sample_weight=)``.  The full range gives :func:`roc_auc`.

    Examples
    --------
    >>> y, s = [0, 0, 0, 0, 1, 1, 1, 1], [.1, .2, .3, .6, .4, .7, .8, .9]
    >>> partial_roc_auc(y, s, bounds=(0, 1))  # the full AUROC, 15/16
    0.9375
    >>> partial_roc_auc(y, s, bounds=(0.75, 1))  # Se = 3/4 over Sp in [0.75, 1]
    0.1875
    >>> partial_roc_auc(y, s, bounds=(0.75, 1), correct=True)  # (1 + (3/16 - 1/32)/(7/32))/2
    0.8571428571428572
    """
    name, opts = pauc_metric(bounds, focus=focus, correct=correct)
    f, lo, hi, corr = KX.pauc_options(opts)
    y, s = labels_scores(y_true, y_score)
    w = unit_scaled(sample_weights(sample_weight, y.size))  # the same area at any weight scale
    wp, wn = KX.class_totals(w, y)
    if warn_if_one_class(float(wp[0]), float(wn[0]), "partial_roc_auc"):
        return math.nan
    r = K.rank(y, s)
    out = KX.pauc(KX.cols_from_items(w, r), KX.cols_from_items(w, KX.dual(r)), r, wp, wn,
                  focus=f, lo=lo, hi=hi, correct=corr)
    return float(out[0])


def partial_roc_auc_ci(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    bounds: Any = (0.9, 1.0),
    focus: str = "specificity",
    correct: bool = False,
    design: str = "within_label",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    ci_method: str = "percentile",
    rng: RNGLike = None,
    batch: int | None = None,
) -> BootstrapResult:
    """Bootstrap interval of a partial AUC (the engine's weights, drawn in rank order).

    The replicates are bit-identical to those of ``bootstrap_ci(y_true, y_score,
    metric=pauc_metric(bounds, focus=focus, correct=correct), design=design, rng=rng)``;
    this function only skips the gather of each weight batch into score order, which
    dominates the cost at large n.  Paired differences between score vectors come from
    :func:`~medaudit.stats.paired_bootstrap` with the same metric.

    Parameters
    ----------
    bounds, focus, correct
        As in :func:`partial_roc_auc`.
    design : {"within_label", "ordinary", "cluster"}, default="within_label"
        pROC's ``ci.auc`` default is the stratified (within-label) bootstrap.
    cluster, strata, n_resamples, confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics`.
    ci_method : {"percentile", "bca"}, default="percentile"
        ``"bca"`` is computed through :func:`~medaudit.stats.bootstrap_metrics` (it
        needs a jackknife).

    Returns
    -------
    BootstrapResult
        ``metric`` is the criterion id, e.g. ``"pauc[sp=0.9:1]"``.

    Examples
    --------
    >>> y, s = [0, 0, 0, 0, 1, 1, 1, 1], [.1, .2, .3, .6, .4, .7, .8, .9]
    >>> r = partial_roc_auc_ci(y, s, bounds=(0.75, 1), n_resamples=200, rng=7)
    >>> r.metric, r.estimate, r.ci_low <= r.estimate <= r.ci_high
    ('pauc[sp=0.75:1]', 0.1875, True)
    """
    name, opts = pauc_metric(bounds, focus=focus, correct=correct)
    n_res, level, ci_method, batch = _common_options(n_resamples, confidence_level, ci_method,
                                                     batch)
    if ci_method == "bca":
        return bootstrap_metrics(y_true, y_score, metrics=[(name, opts)], design=design,
                                 cluster=cluster, strata=strata, n_resamples=n_res,
                                 confidence_level=level, ci_method="bca", rng=rng,
                                 batch=batch)[next(iter(_ids(name, opts)))]
    f, lo, hi, corr = KX.pauc_options(opts)
    y, s = labels_scores(y_true, y_score)
    plan = bootstrap_plan(design, y, cluster=cluster, strata=strata)
    gen, rec = as_generator(rng)
    r = K.rank(y, s)
    ones = np.ones(y.size)
    wp, wn = KX.class_totals(ones, y)
    point = float(KX.pauc(KX.cols_from_items(ones, r), KX.cols_from_items(ones, KX.dual(r)), r,
                          wp, wn, focus=f, lo=lo, hi=hi, correct=corr)[0])
    ru = r if f == "sp" else KX.dual(r)
    # within-label draws keep both class sizes, so their totals need no pass over the counts
    fixed = plan.design == "within_label"
    chunks = []
    for counts in ranked_batches(plan, ru.order, n_res, gen, batch):
        cols = KX.cols_from_ranked(counts)
        if fixed:
            wp_b, wn_b = (np.full(counts.shape[0], v) for v in (wp[0], wn[0]))
        else:
            tp = K._dot(counts, ru.label)
            tn = K._rowsum(counts) - tp
            wp_b, wn_b = (tp, tn) if f == "sp" else (tn, tp)
        chunks.append(KX.pauc(cols, cols, r, wp_b, wn_b, focus=f, lo=lo, hi=hi, correct=corr,
                              r_dual=ru if f == "se" else None))
    reps = np.concatenate(chunks)
    mid = next(iter(_ids(name, opts)))
    return _result(mid, point, reps, None, level=level, ci_method="percentile", design=design,
                   n_resamples=n_res, seed=rec["seed"], n=int(y.size), n_pos=float(y.sum()),
                   n_neg=float(y.size - y.sum()), options={**opts, "rng": rec})


def _num(x: float) -> str:
    return np.format_float_positional(x, trim="-")


def _ids(name, opts):
    from medaudit.stats._metricspec import MetricSpec

    return [MetricSpec(name, opts).id]
