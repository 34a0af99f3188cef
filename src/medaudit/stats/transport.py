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
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import RNGLike, as_generator, check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats._common import check_batch, check_n_resamples, labels_scores
from medaudit.stats._results import BootstrapResult, _ToDict
from medaudit.stats.bootstrap import _result
from medaudit.stats.cutpoints import cutpoint_rule
from medaudit.stats.designs import _BATCH_ELEMENTS, make_plan

__all__ = ["threshold_transport", "transport_to_targets", "transport_grid", "TransportResult",
           "THRESHOLD_RULES", "TRANSPORT_DESIGNS"]

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
    rng: RNGLike = None,
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
    rng: RNGLike = None,
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
    rules = {"": _check_rule(rule, target_value, weights)}
    if not isinstance(targets, Mapping) or not targets:
        raise MedauditError("targets must be a non-empty mapping of name -> (y_true, y_score).")
    designs = _designs(design, targets)
    ys, ss = labels_scores(y_true_source, y_score_source, score_name="y_score_source")
    tgt = {}
    for k, pair in targets.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise MedauditError(f"targets[{k!r}] must be a (y_true, y_score) pair.")
        y, st = labels_scores(pair[0], pair[1], score_name=f"y_score_target[{k!r}]")
        tgt[k] = (y, {"": st})
    out = _transport(ys, {"": ss}, tgt, rules, designs, n_resamples=n_resamples,
                     confidence_level=confidence_level, rng=rng, batch=batch)
    return out[("", "")]


def transport_grid(
    y_true_source: ArrayLike,
    source_scores: Mapping[str, ArrayLike],
    targets: Mapping[str, tuple[ArrayLike, Mapping[str, ArrayLike]]],
    *,
    rules: Mapping[str, tuple[str, float | None, tuple[float, float] | None]],
    design: str | Mapping[str, str] = "reestimate",
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
) -> dict[tuple[str, str], dict[str, TransportResult]]:
    """:func:`transport_to_targets` for several score vectors and rules on one set of draws.

    The draws of a transport do not depend on the scores or the rule: the source and
    each target are resampled within label from their own child streams
    (``rng.spawn(1 + len(targets))``, source first).  Here one draw per replicate and
    cohort serves every score vector (model) and every rule, so the result for a
    (model, rule) is exactly :func:`transport_to_targets` of that model and rule with the
    same ``rng`` — at the cost of one draw instead of one per pair.

    Parameters
    ----------
    y_true_source : array-like
        Source labels.
    source_scores : mapping of str to array-like
        Source scores by name (the models), aligned with ``y_true_source``.
    targets : mapping of str to (y_true, mapping of str to array-like)
        Each target's labels and its scores under the same names as ``source_scores``.
    rules : mapping of str to (rule, target_value, weights)
        Rules by label: ``rule`` and ``target_value``/``weights`` as in
        :func:`threshold_transport` (None for the default / not applicable).
    design, n_resamples, confidence_level, rng, batch
        As in :func:`transport_to_targets`.

    Returns
    -------
    dict of (name, rule label) to dict of target to TransportResult

    Examples
    --------
    >>> ys, yt = [1, 1, 1, 1, 0, 0], [1, 1, 0, 0]
    >>> res = transport_grid(ys, {"m": [.9, .8, .7, .6, .3, .65], "k": [.6, .9, .5, .8, .2, .1]},
    ...                      {"t": (yt, {"m": [.95, .5, .2, .7], "k": [.9, .8, .1, .2]})},
    ...                      rules={"se": ("sensitivity", 0.9, None),
    ...                             "sp": ("specificity", 0.9, None)}, n_resamples=40, rng=3)
    >>> one = transport_to_targets(ys, [.6, .9, .5, .8, .2, .1], {"t": (yt, [.9, .8, .1, .2])},
    ...                            rule="specificity", target_value=0.9, n_resamples=40, rng=3)
    >>> bool((res[("k", "sp")]["t"].target_sensitivity.replicates
    ...       == one["t"].target_sensitivity.replicates).all())
    True
    """
    if not isinstance(rules, Mapping) or not rules:
        raise MedauditError("rules must be a non-empty mapping of label -> (rule, target_value, "
                            "weights).")
    checked = {}
    for label, spec in rules.items():
        if not (isinstance(spec, (tuple, list)) and len(spec) == 3):
            raise MedauditError(f"rules[{label!r}] must be a (rule, target_value, weights) triple.")
        checked[str(label)] = _check_rule(*spec)
    if not isinstance(source_scores, Mapping) or not source_scores:
        raise MedauditError("source_scores must be a non-empty mapping of name -> scores.")
    if not isinstance(targets, Mapping) or not targets:
        raise MedauditError("targets must be a non-empty mapping of name -> (y_true, scores).")
    designs = _designs(design, targets)
    names = [str(k) for k in source_scores]
    ys = None
    src = {}
    for k, v in source_scores.items():
        ys, src[str(k)] = labels_scores(y_true_source, v, score_name=f"source_scores[{k!r}]")
    tgt = {}
    for t, pair in targets.items():
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[1], Mapping)):
            raise MedauditError(f"targets[{t!r}] must be a (y_true, mapping of name -> scores) pair.")
        if sorted(map(str, pair[1])) != sorted(names):
            raise MedauditError(f"targets[{t!r}] must score the names of source_scores {names}; "
                                f"got {sorted(map(str, pair[1]))}.")
        scores, yt = {}, None
        for k, v in pair[1].items():
            yt, scores[str(k)] = labels_scores(pair[0], v, score_name=f"targets[{t!r}][{k!r}]")
        tgt[t] = (yt, {k: scores[k] for k in names})
    return _transport(ys, src, tgt, checked, designs, n_resamples=n_resamples,
                      confidence_level=confidence_level, rng=rng, batch=batch)


def _check_rule(rule: str, target_value: float | None, weights: tuple[float, float] | None
                ) -> tuple[str, float, tuple[float, float] | None]:
    """(rule, target value or nan, weights) after the checks of one rule."""
    rule = check_option(rule, THRESHOLD_RULES, name="rule")
    if rule in _CUT_RULES:
        if target_value is not None:
            raise MedauditError(f"rule={rule!r} chooses its threshold from the data and takes no "
                                "target_value; drop it (or use rule='sensitivity'/'specificity').")
        return rule, math.nan, weights
    if weights is not None:
        raise MedauditError(f"weights (cost, prevalence) are for the cut-point rules 'youden' "
                            f"and 'closest_topleft', not rule={rule!r}.")
    x = check_fraction(0.95 if target_value is None else target_value, name="target_value",
                       closed="both")
    return rule, x, None


def _designs(design: str | Mapping[str, str], targets: Any) -> dict[str, str]:
    if isinstance(design, str):
        design = check_option(design, TRANSPORT_DESIGNS, name="design")
        return dict.fromkeys(targets, design)
    unknown = [k for k in design if k not in set(targets)]
    if unknown:  # a misspelt target would silently leave the real one on the default
        raise MedauditError(f"design names target(s) {unknown!r} that are not among the targets "
                            f"{list(targets)!r}.")
    return {k: check_option(design.get(k, "reestimate"), TRANSPORT_DESIGNS,
                            name=f"design[{k!r}]") for k in targets}


class _Cohort:
    """One cohort of a transport: labels, each name's ranking and class-split layout, and its
    draws, counted straight into the first name's layout (the others gather from it)."""

    def __init__(self, y: NDArray[np.float64], scores: Mapping[str, NDArray[np.float64]]):
        self.y = y
        self.ranked = {k: K.rank(y, s) for k, s in scores.items()}
        self.layouts = {k: K.layout(y, s, self.ranked[k], None) for k, s in scores.items()}
        first = next(iter(self.layouts.values()))
        self.columns = first.column
        self.moves = {k: (None if lay is first else first.column[lay.order])
                      for k, lay in self.layouts.items()}
        # work buffers per name, reused across batches (fresh (b, n) arrays would pay their
        # page faults on every batch)
        self.scratch: dict[str, dict] = {k: {} for k in scores}

    def sums(self, w: NDArray) -> dict[str, K.LayoutSums]:
        """Per name, the layout sums of the draw ``w`` (counts in the first name's layout)."""
        out = {}
        for k, lay in self.layouts.items():
            move, scratch = self.moves[k], self.scratch[k]
            if move is None:
                wk = w
            else:
                buf = scratch.get("w")
                if buf is None or buf.shape[0] < w.shape[0] or buf.dtype != w.dtype:
                    buf = scratch["w"] = np.empty(w.shape, dtype=w.dtype)
                # every index is in range: mode="clip" only skips the bounds check and the
                # defensive copy numpy makes of `out` under the default mode
                wk = np.take(w, move, axis=1, out=buf[:w.shape[0]], mode="clip")
            out[k] = K.LayoutSums(wk, lay, scratch)
        return out


def _choose(rule: str, x: float, weights, t: K.LayoutSums, r: K.Ranked) -> NDArray[np.float64]:
    """Each row's threshold by ``rule`` on the source sums ``t`` (ranking ``r``)."""
    if rule == "sensitivity":
        return K.tau_sensitivity_layout(t, r, x)
    if rule == "specificity":
        return K.tau_specificity_layout(t, r, x)
    choose = cutpoint_rule(rule, (1.0, 0.5) if weights is None else weights)
    return choose(K._ranked_rows(t, r, np.arange(t.w.shape[0])), r, x)


def _transport(ys, src: Mapping[str, NDArray[np.float64]], tgt: Mapping[str, tuple],
               rules: Mapping[str, tuple], designs: Mapping[str, str], *, n_resamples, confidence_level,
               rng, batch) -> dict[tuple[str, str], dict[str, TransportResult]]:
    """The transports of every (name, rule) on one set of draws (inputs validated)."""
    level = check_fraction(confidence_level, name="confidence_level")
    n_res, batch = check_n_resamples(n_resamples), check_batch(batch)
    labels = {k: "target" if k == "target" else f"target {k!r}" for k in tgt}
    for name, y in (("source", ys), *((labels[k], v[0]) for k, v in tgt.items())):
        if y.sum() == 0 or y.sum() == y.size:
            raise MedauditError(f"the {name} cohort needs both positives and negatives; "
                                f"it has {int(y.sum())} of {y.size} positive.")
    names = list(src)
    source = _Cohort(ys, src)
    cohorts = {k: _Cohort(y, scores) for k, (y, scores) in tgt.items()}
    ones_src = np.ones(ys.size)
    taus, src_rates = {}, {}
    for m in names:
        for label, (rule, x, weights) in rules.items():
            choose = (cutpoint_rule(rule, (1.0, 0.5) if weights is None else weights)
                      if rule in _CUT_RULES
                      else K.tau_sensitivity if rule == "sensitivity" else K.tau_specificity)
            taus[(m, label)] = tau = float(choose(ones_src, source.ranked[m], x))
            src_rates[(m, label)] = K.rates_at(ones_src, source.ranked[m], tau)
    gen, rec = as_generator(rng)
    # independent child streams for the source and each target keep every draw sequence
    # independent of the batch size (and of the other cohorts' sizes)
    g_src, *g_tgts = gen.spawn(1 + len(tgt))
    n_max = max([ys.size, *(v[0].size for v in tgt.values())])
    size = min(batch, n_res) if batch else max(1, min(n_res, _BATCH_ELEMENTS // n_max))
    tgt_batches = {k: make_plan("within_label", c.y).batches(n_res, g, size, columns=c.columns)
                   for (k, c), g in zip(cohorts.items(), g_tgts, strict=True)}
    keys = [(m, label) for m in names for label in rules]
    reps: dict[tuple[str, str, str], tuple[list, list, list]] = {
        (m, label, k): ([], [], []) for m, label in keys for k in tgt}
    need_source = any(d == "reestimate" for d in designs.values())
    src_batches = (make_plan("within_label", ys).batches(n_res, g_src, size, columns=source.columns)
                   if need_source else None)
    done = 0
    while done < n_res:
        b = min(size, n_res - done)
        t_src: dict[tuple[str, str], NDArray[np.float64]] = {}
        if need_source:
            for m, t in source.sums(next(src_batches)).items():
                for label, (rule, x, weights) in rules.items():
                    t_src[(m, label)] = _choose(rule, x, weights, t, source.ranked[m])
        for k, cohort in cohorts.items():
            for m, t in cohort.sums(next(tgt_batches[k])).items():
                for label in rules:
                    t_b = (t_src[(m, label)] if designs[k] == "reestimate"
                           else np.full(b, taus[(m, label)]))
                    se_b, sp_b = K.rates_at_layout(t, t_b)
                    for lst, v in zip(reps[(m, label, k)], (t_b, se_b, sp_b), strict=True):
                        lst.append(v)
        done += b
    out: dict[tuple[str, str], dict[str, TransportResult]] = {}
    tol = K._TOL
    for m, label in keys:
        rule, x, weights = rules[label]
        tau = taus[(m, label)]
        src_se, src_sp = src_rates[(m, label)]
        res = out.setdefault((m, label), {})
        for k, (yt, _st) in tgt.items():
            tgt_se, tgt_sp = K.rates_at(np.ones(yt.size), cohorts[k].ranked[m], tau)
            dname = {"reestimate": "threshold_reestimate", "fixed": "threshold_fixed"}[designs[k]]
            common = dict(level=level, ci_method="percentile", design=dname, n_resamples=n_res,
                          seed=rec["seed"], n=int(yt.size), n_pos=float(yt.sum()),
                          n_neg=float(yt.size - yt.sum()),
                          options={"rule": rule, "target_value": x, "threshold": tau, "rng": rec,
                                   "target": k, **({"weights": list(weights or (1.0, 0.5))}
                                                   if rule in _CUT_RULES else {})})
            t_reps, se_reps, sp_reps = (np.concatenate(v) for v in reps[(m, label, k)])
            se_res = _result("target_sensitivity", tgt_se, se_reps, None, **common)
            sp_res = _result("target_specificity", tgt_sp, sp_reps, None, **common)
            # the declared level, or for a cut-point rule the source's own rate at tau
            need_se = float(src_se) if rule in _CUT_RULES else x
            need_sp = float(src_sp) if rule in _CUT_RULES else x
            res[k] = TransportResult(
                rule=rule, target_value=x, threshold=tau, source_sensitivity=float(src_se),
                source_specificity=float(src_sp), target_sensitivity=se_res,
                target_specificity=sp_res,
                sensitivity_retained=bool(tgt_se >= need_se - tol) if not math.isnan(tgt_se)
                else False,
                specificity_retained=bool(tgt_sp >= need_sp - tol) if not math.isnan(tgt_sp)
                else False,
                design=dname, n_resamples=n_res, seed=rec["seed"], threshold_replicates=t_reps)
    return out
