"""Source-threshold transport with its two interval designs (paper 000 M0.8, M0.10).

``design="reestimate"`` (B-THR-SRC): each replicate resamples the source within
label, re-estimates the threshold, and applies it to a target resampled
independently within label.  ``design="fixed"`` (B-THR-FIX): the threshold is
fixed at the full-source estimate and only the target is resampled.

Rules: ``"sensitivity"`` and ``"specificity"`` (paper 000 M0.8, with a declared
``target_value``) and the data-driven cut-points ``"youden"`` and
``"closest_topleft"`` of :mod:`medaudit.stats.cutpoints` (pROC's ``coords(x =
"best")``, with ``weights = (cost, prevalence)``), which have no target value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import as_generator, check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats._common import check_batch, check_n_resamples, labels_scores
from medaudit.stats._results import BootstrapResult, _ToDict
from medaudit.stats.bootstrap import _result
from medaudit.stats.cutpoints import cutpoint_rule
from medaudit.stats.designs import make_plan

__all__ = ["threshold_transport", "transport_to_targets", "TransportResult", "THRESHOLD_RULES",
           "TRANSPORT_DESIGNS"]

THRESHOLD_RULES = ("sensitivity", "specificity", "youden", "closest_topleft")
_CUT_RULES = ("youden", "closest_topleft")
TRANSPORT_DESIGNS = ("reestimate", "fixed")


@dataclass(frozen=True, slots=True, kw_only=True)
class TransportResult(_ToDict):
    """A threshold chosen on a source cohort and carried unchanged to a target.

    Retention indicators use the point estimates (paper 000 eq. 7), not a
    confidence bound.  For the cut-point rules (``youden``, ``closest_topleft``), which
    declare no target value (``target_value`` is nan), a rate is retained when the
    target's point estimate is at least the source's at the same threshold.
    """

    rule: str
    target_value: float
    threshold: float
    source_sensitivity: float
    source_specificity: float
    target_sensitivity: BootstrapResult
    target_specificity: BootstrapResult
    sensitivity_retained: bool
    specificity_retained: bool
    design: str
    n_resamples: int
    seed: int | None
    threshold_replicates: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))

    _array_fields = ("threshold_replicates",)


def threshold_transport(
    y_true_source: ArrayLike,
    y_score_source: ArrayLike,
    y_true_target: ArrayLike,
    y_score_target: ArrayLike,
    *,
    rule: str = "sensitivity",
    target_value: float | None = None,
    weights: tuple[float, float] | None = None,
    design: str = "reestimate",
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: Any = None,
    batch: int | None = None,
) -> TransportResult:
    """Choose a threshold on the source, carry it to the target, and interval its Se and Sp.

    Parameters
    ----------
    y_true_source, y_score_source : array-like
        Source cohort labels and scores (the threshold is chosen here).
    y_true_target, y_score_target : array-like
        Target cohort labels and scores.
    rule : {"sensitivity", "specificity", "youden", "closest_topleft"}, default="sensitivity"
        ``"sensitivity"``: highest observed source score with Se >= target_value;
        ``"specificity"``: maximise Se subject to Sp >= target_value (ties to higher
        Sp, then highest threshold); ``"youden"`` / ``"closest_topleft"``:
        :func:`~medaudit.stats.best_threshold` on the source (ties to the highest
        threshold).
    target_value : float, optional
        The declared Se or Sp of the first two rules (default 0.95); not accepted by
        the cut-point rules.
    weights : (cost, prevalence), optional
        pROC's ``best.weights`` for the cut-point rules (default ``(1, 0.5)``).
    design : {"reestimate", "fixed"}, default="reestimate"
    n_resamples, confidence_level, rng, batch
        As in :func:`~medaudit.stats.bootstrap_metrics`.

    Returns
    -------
    TransportResult

    Examples
    --------
    >>> r = threshold_transport([1, 1, 1, 1, 0, 0], [.9, .8, .7, .6, .3, .65],
    ...                         [1, 1, 0, 0], [.95, .5, .2, .7], n_resamples=50, rng=0)
    >>> r.threshold, r.target_sensitivity.estimate, r.target_specificity.estimate
    (0.6, 0.5, 0.5)
    >>> r.sensitivity_retained
    False
    """
    return transport_to_targets(
        y_true_source, y_score_source, {"target": (y_true_target, y_score_target)}, rule=rule,
        target_value=target_value, weights=weights, design=design, n_resamples=n_resamples,
        confidence_level=confidence_level, rng=rng, batch=batch)["target"]


def transport_to_targets(
    y_true_source: ArrayLike,
    y_score_source: ArrayLike,
    targets: Mapping[str, tuple[ArrayLike, ArrayLike]],
    *,
    rule: str = "sensitivity",
    target_value: float | None = None,
    weights: tuple[float, float] | None = None,
    design: str | Mapping[str, str] = "reestimate",
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: Any = None,
    batch: int | None = None,
) -> dict[str, TransportResult]:
    """:func:`threshold_transport` to several targets, sharing one set of source replicates.

    Each source replicate's re-estimated threshold is applied to every target, each
    target resampled independently (its own child stream), so the source is resampled
    once rather than once per target.  ``design`` may map target names to
    ``"reestimate"``/``"fixed"``.  Child streams are spawned in the order of
    ``targets``: ``rng.spawn(1 + len(targets))``, the first for the source.

    Examples
    --------
    >>> res = transport_to_targets([1, 1, 1, 1, 0, 0], [.9, .8, .7, .6, .3, .65],
    ...                            {"a": ([1, 1, 0, 0], [.95, .5, .2, .7]),
    ...                             "b": ([1, 0], [.7, .1])}, n_resamples=50, rng=0)
    >>> res["a"].threshold, res["b"].target_sensitivity.estimate
    (0.6, 1.0)
    """
    rule = check_option(rule, THRESHOLD_RULES, name="rule")
    if isinstance(design, str):
        design = check_option(design, TRANSPORT_DESIGNS, name="design")
        designs = dict.fromkeys(targets, design)
    else:
        designs = {k: check_option(design.get(k, "reestimate"), TRANSPORT_DESIGNS,
                                   name=f"design[{k!r}]") for k in targets}
    if rule in _CUT_RULES:
        if target_value is not None:
            raise MedauditError(f"rule={rule!r} chooses its threshold from the data and takes no "
                                "target_value; drop it (or use rule='sensitivity'/'specificity').")
        x = math.nan
    else:
        if weights is not None:
            raise MedauditError(f"weights (cost, prevalence) are for the cut-point rules 'youden' "
                                f"and 'closest_topleft', not rule={rule!r}.")
        x = check_fraction(0.95 if target_value is None else target_value, name="target_value",
                           closed="both")
    level = check_fraction(confidence_level, name="confidence_level")
    n_res, batch = check_n_resamples(n_resamples), check_batch(batch)
    if not isinstance(targets, Mapping) or not targets:
        raise MedauditError("targets must be a non-empty mapping of name -> (y_true, y_score).")
    ys, ss = labels_scores(y_true_source, y_score_source, score_name="y_score_source")
    tgt = {}
    for k, pair in targets.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise MedauditError(f"targets[{k!r}] must be a (y_true, y_score) pair.")
        tgt[k] = labels_scores(pair[0], pair[1], score_name=f"y_score_target[{k!r}]")
    labels = {k: "target" if k == "target" else f"target {k!r}" for k in tgt}
    for name, y in (("source", ys), *((labels[k], v[0]) for k, v in tgt.items())):
        if y.sum() == 0 or y.sum() == y.size:
            raise MedauditError(f"the {name} cohort needs both positives and negatives; "
                                f"it has {int(y.sum())} of {y.size} positive.")
    if rule in _CUT_RULES:
        choose = cutpoint_rule(rule, (1.0, 0.5) if weights is None else weights)
    else:
        choose = K.tau_sensitivity if rule == "sensitivity" else K.tau_specificity
    rs = K.rank(ys, ss)
    rts = {k: K.rank(*v) for k, v in tgt.items()}
    tau = float(choose(np.ones(ys.size), rs, x))
    src_se, src_sp = K.rates_at(np.ones(ys.size), rs, tau)
    gen, rec = as_generator(rng)
    # independent child streams for the source and each target keep every draw sequence
    # independent of the batch size (and of the other cohorts' sizes)
    g_src, *g_tgts = gen.spawn(1 + len(tgt))
    n_max = max([ys.size, *(v[0].size for v in tgt.values())])
    size = batch or max(1, min(n_res, (1 << 21) // n_max))
    tgt_batches = {k: make_plan("within_label", v[0]).batches(n_res, g, size)
                   for (k, v), g in zip(tgt.items(), g_tgts, strict=True)}
    reps: dict[str, tuple[list, list, list]] = {k: ([], [], []) for k in tgt}
    need_source = any(d == "reestimate" for d in designs.values())
    src_batches = (make_plan("within_label", ys).batches(n_res, g_src, size) if need_source
                   else None)
    done = 0
    while done < n_res:
        b = min(size, n_res - done)
        t_src = choose(np.take(next(src_batches), rs.order, axis=1), rs, x) if need_source else None
        for k, rt in rts.items():
            wt = next(tgt_batches[k])
            t_b = t_src if designs[k] == "reestimate" else np.full(b, tau)
            se_b, sp_b = K.rates_at(np.take(wt, rt.order, axis=1), rt, t_b)
            for lst, v in zip(reps[k], (t_b, se_b, sp_b), strict=True):
                lst.append(v)
        done += b
    out = {}
    tol = K._TOL
    for k, (yt, _st) in tgt.items():
        tgt_se, tgt_sp = K.rates_at(np.ones(yt.size), rts[k], tau)
        dname = {"reestimate": "threshold_reestimate", "fixed": "threshold_fixed"}[designs[k]]
        common = dict(level=level, ci_method="percentile", design=dname, n_resamples=n_res,
                      seed=rec["seed"], n=int(yt.size), n_pos=float(yt.sum()),
                      n_neg=float(yt.size - yt.sum()),
                      options={"rule": rule, "target_value": x, "threshold": tau, "rng": rec,
                               "target": k, **({"weights": list(weights or (1.0, 0.5))}
                                               if rule in _CUT_RULES else {})})
        taus, se_reps, sp_reps = (np.concatenate(v) for v in reps[k])
        se_res = _result("target_sensitivity", tgt_se, se_reps, None, **common)
        sp_res = _result("target_specificity", tgt_sp, sp_reps, None, **common)
        # the declared level, or for a cut-point rule the source's own rate at tau
        need_se = float(src_se) if rule in _CUT_RULES else x
        need_sp = float(src_sp) if rule in _CUT_RULES else x
        out[k] = TransportResult(
            rule=rule, target_value=x, threshold=tau, source_sensitivity=float(src_se),
            source_specificity=float(src_sp), target_sensitivity=se_res,
            target_specificity=sp_res,
            sensitivity_retained=bool(tgt_se >= need_se - tol) if not math.isnan(tgt_se)
            else False,
            specificity_retained=bool(tgt_sp >= need_sp - tol) if not math.isnan(tgt_sp)
            else False,
            design=dname, n_resamples=n_res, seed=rec["seed"], threshold_replicates=taus)
    return out
