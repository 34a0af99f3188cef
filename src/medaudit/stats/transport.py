"""Source-threshold transport with its two interval designs (paper 000 M0.8, M0.10).

``design="reestimate"`` (B-THR-SRC): each replicate resamples the source within
label, re-estimates the threshold, and applies it to a target resampled
independently within label.  ``design="fixed"`` (B-THR-FIX): the threshold is
fixed at the full-source estimate and only the target is resampled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from medaudit._validation import as_generator, check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats._common import labels_scores
from medaudit.stats._results import BootstrapResult, _ToDict
from medaudit.stats.bootstrap import _batch, _n_resamples, _result
from medaudit.stats.designs import make_plan

__all__ = ["threshold_transport", "TransportResult", "THRESHOLD_RULES", "TRANSPORT_DESIGNS"]

THRESHOLD_RULES = ("sensitivity", "specificity")
TRANSPORT_DESIGNS = ("reestimate", "fixed")


@dataclass(frozen=True, slots=True, kw_only=True)
class TransportResult(_ToDict):
    """A threshold chosen on a source cohort and carried unchanged to a target.

    Retention indicators use the point estimates (paper 000 eq. 7), not a
    confidence bound.
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
    target_value: float = 0.95,
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
    rule : {"sensitivity", "specificity"}, default="sensitivity"
        ``"sensitivity"``: highest observed source score with Se >= target_value;
        ``"specificity"``: maximise Se subject to Sp >= target_value (ties to higher
        Sp, then highest threshold).
    target_value : float, default=0.95
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
    rule = check_option(rule, THRESHOLD_RULES, name="rule")
    design = check_option(design, TRANSPORT_DESIGNS, name="design")
    x = check_fraction(target_value, name="target_value", closed="both")
    level = check_fraction(confidence_level, name="confidence_level")
    n_res, batch = _n_resamples(n_resamples), _batch(batch)
    ys, ss = labels_scores(y_true_source, y_score_source, score_name="y_score_source")
    yt, st = labels_scores(y_true_target, y_score_target, score_name="y_score_target")
    for name, y in (("source", ys), ("target", yt)):
        if y.sum() == 0 or y.sum() == y.size:
            raise MedauditError(f"the {name} cohort needs both positives and negatives; "
                                f"it has {int(y.sum())} of {y.size} positive.")
    choose = K.tau_sensitivity if rule == "sensitivity" else K.tau_specificity
    rs, rt = K.rank(ys, ss), K.rank(yt, st)
    tau = float(choose(np.ones(ys.size), rs, x))
    src_se, src_sp = K.rates_at(np.ones(ys.size), rs, tau)
    tgt_se, tgt_sp = K.rates_at(np.ones(yt.size), rt, tau)
    gen, rec = as_generator(rng)
    src_plan = make_plan("within_label", ys)
    tgt_plan = make_plan("within_label", yt)
    taus, se_reps, sp_reps = [], [], []
    # independent child streams for source and target keep each draw sequence
    # independent of the batch size (and of the other cohort's size)
    g_src, g_tgt = gen.spawn(2)
    size = batch or max(1, min(n_res, (1 << 21) // max(ys.size, yt.size)))
    tgt_batches = tgt_plan.batches(n_res, g_tgt, size)
    if design == "reestimate":
        for ws in src_plan.batches(n_res, g_src, size):
            wt = next(tgt_batches)
            t_b = choose(np.take(ws, rs.order, axis=1), rs, x)
            se_b, sp_b = K.rates_at(np.take(wt, rt.order, axis=1), rt, t_b)
            taus.append(t_b), se_reps.append(se_b), sp_reps.append(sp_b)
    else:
        for wt in tgt_batches:
            t_b = np.full(wt.shape[0], tau)
            se_b, sp_b = K.rates_at(np.take(wt, rt.order, axis=1), rt, t_b)
            taus.append(t_b), se_reps.append(se_b), sp_reps.append(sp_b)
    dname = {"reestimate": "threshold_reestimate", "fixed": "threshold_fixed"}[design]
    common = dict(level=level, ci_method="percentile", design=dname, n_resamples=n_res,
                  seed=rec["seed"], n=int(yt.size), n_pos=float(yt.sum()),
                  n_neg=float(yt.size - yt.sum()),
                  options={"rule": rule, "target_value": x, "threshold": tau, "rng": rec})
    se_res = _result("target_sensitivity", tgt_se, np.concatenate(se_reps), None, **common)
    sp_res = _result("target_specificity", tgt_sp, np.concatenate(sp_reps), None, **common)
    tol = K._TOL
    return TransportResult(
        rule=rule, target_value=x, threshold=tau, source_sensitivity=float(src_se),
        source_specificity=float(src_sp), target_sensitivity=se_res, target_specificity=sp_res,
        sensitivity_retained=bool(tgt_se >= x - tol) if not math.isnan(tgt_se) else False,
        specificity_retained=bool(tgt_sp >= x - tol) if not math.isnan(tgt_sp) else False,
        design=dname, n_resamples=n_res, seed=rec["seed"],
        threshold_replicates=np.concatenate(taus))
