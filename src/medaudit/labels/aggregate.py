"""Per-item aggregation of ratings into soft and hard labels (paper 001, M1.1).

Soft label: the mean of the ratings normalised to [0, 1] (default), or the posterior
P(positive) of a crowd model through crowd-kit, an optional extra imported only when
asked for (binary ratings only): Dawid–Skene, GLAD, MACE, Wawa, ZeroBasedSkill, or a
majority vote weighted by declared reader weights (``annotator_weights``).  Hard label: strict
majority of the normalised mean with a declared tie rule, a threshold on the raw
mean (ENHANCE: mean > 1), or the crowd posterior > 1/2.  Hedged ratings follow a
declared policy (negative, positive, exclude, half).  The rules themselves are
:func:`medaudit.stats.annotation_bootstrap.labels_from_sums`, the same code the
annotation bootstrap rebuilds its labels with.  Every item dropped (all its ratings
excluded, or an excluded tie) is listed in ``dropped`` with its reason and counted.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import MedauditError, SchemaError
from medaudit.labels.scale import RatingScale
from medaudit.stats.annotation_bootstrap import labels_from_sums, resolve_hedges

__all__ = ["AggregatedLabels", "aggregate_labels", "aggregate_with_spec", "SOFT_RULES",
           "HARD_RULES", "CROWD_MODELS"]

SOFT_RULES = ("mean", "dawid_skene", "glad", "mace", "wawa", "zero_based_skill", "majority_vote")
CROWD_MODELS = SOFT_RULES[1:]
HARD_RULES = ("majority", "threshold", "posterior")
REASON_EXCLUDED = "every rating excluded (hedge: exclude)"
REASON_TIE = "hard label is a tie (tie: exclude)"


@dataclass(frozen=True)
class AggregatedLabels:
    """Soft and hard labels per item, the items dropped and why, and the counts.

    ``labels`` has one row per kept item (``cohort`` when the annotations have one):
    ``item_id, n_ratings, n_hedged, n_used, mean_raw, label_soft, label``.  ``dropped``
    lists ``item_id, reason`` (+ ``cohort``).
    """

    labels: pd.DataFrame
    dropped: pd.DataFrame
    counts: dict[str, Any]
    rules: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"counts": self.counts, "rules": self.rules,
                "dropped": self.dropped.to_dict("records")}


def _check(value: str, allowed: tuple[str, ...], name: str) -> str:
    if value not in allowed:
        raise MedauditError(f"{name}={value!r} is not a valid option; choose one of {list(allowed)}.")
    return value


def _crowd_estimator(model: str, n_iter: int):
    """The crowd-kit aggregator of ``model`` (lazy import; MACE seeded with 0, crowd-kit's default)."""
    try:
        from crowdkit.aggregation import (
            GLAD,
            MACE,
            DawidSkene,
            MajorityVote,
            Wawa,
            ZeroBasedSkill,
        )
    except ImportError as exc:  # pragma: no cover - optional extra
        raise MedauditError(f"soft: {model} needs the optional package crowd-kit "
                            "(pip install crowd-kit); soft: mean needs nothing.") from exc
    build = {"dawid_skene": lambda: DawidSkene(n_iter=n_iter), "glad": lambda: GLAD(n_iter=n_iter),
             "mace": lambda: MACE(n_iter=n_iter, random_state=0), "wawa": Wawa,
             "zero_based_skill": lambda: ZeroBasedSkill(n_iter=n_iter),
             "majority_vote": MajorityVote}
    return build[model]()


def _skills(weights: Any, annot: np.ndarray) -> pd.Series:
    """Declared reader weights as crowd-kit ``skills`` (every reader needs one, all >= 0)."""
    given = {str(k): v for k, v in dict(weights).items()}
    readers = pd.unique(annot)
    missing = sorted(str(a) for a in readers if str(a) not in given)
    if missing:
        raise MedauditError(f"annotator_weights lacks reader(s) {missing[:5]}"
                            f"{' ...' if len(missing) > 5 else ''}; give every reader a weight.")
    try:
        w = pd.Series([float(given[str(a)]) for a in readers], index=readers, dtype=np.float64)
    except (TypeError, ValueError):
        raise MedauditError("annotator_weights must map reader ids to numbers.") from None
    if not np.isfinite(w.to_numpy()).all() or (w < 0).any() or not (w > 0).any():
        raise MedauditError("annotator_weights must be finite, non-negative and not all zero.")
    return w  # indexed by the reader ids as they appear in the table


def _crowd_posterior(keys: pd.DataFrame, votes: np.ndarray, annot: np.ndarray, item_code: np.ndarray,
                     n_items: int, model: str, n_iter: int, weights: Any = None) -> np.ndarray:
    """P(label = 1) per item from a crowd-kit aggregator (lazy import)."""
    est = _crowd_estimator(model, n_iter)
    data = pd.DataFrame({"task": item_code, "worker": annot, "label": votes.astype(np.int64)})
    extra = {"skills": _skills(weights, annot)} if weights is not None else {}
    with warnings.catch_warnings():
        # crowd-kit 1.4 calls pandas APIs that pandas 3 deprecates; the numbers are unaffected
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"crowdkit(\.|$)")
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"crowdkit(\.|$)")
        if model in ("wawa", "zero_based_skill"):
            # crowd-kit 1.4.2's predict step calls sklearn's check_is_fitted, which sklearn >= 1.6
            # refuses for estimators that are not sklearn's; do what that step does (a majority
            # vote weighted by the fitted skills) with crowd-kit's own MajorityVote
            from crowdkit.aggregation import MajorityVote

            proba = MajorityVote().fit(data, skills=est.fit(data).skills_).probas_
        else:
            proba = est.fit_predict_proba(data, **extra)
    col = 1 if 1 in proba.columns else None
    post = np.zeros(n_items)
    if col is not None:
        post[proba.index.to_numpy(dtype=np.intp)] = proba[col].to_numpy(dtype=np.float64)
    # crowd-kit's EM can overshoot [0, 1] by rounding; anything more is a real error
    if (post < -1e-9).any() or (post > 1 + 1e-9).any():
        raise MedauditError(f"{model} returned posteriors outside [0, 1]; report this as a bug.")
    return np.clip(post, 0.0, 1.0)


def coded_ratings(annotations: pd.DataFrame, *, scale: Any, hedge: Any
                  ) -> tuple[float, float, np.ndarray, np.ndarray, np.ndarray, pd.DataFrame]:
    """Ratings with hedges resolved, and one integer code per item (sorted key order).

    Shared by :func:`aggregate_labels` and :func:`medaudit.labels.label_stability`, so
    both code items and apply the hedge policy the same way.

    Returns
    -------
    lo, hi : the rating scale; values, keep : per-rating value after the hedge policy and
    whether it counts; item_code : per-rating item index; keys : the item keys
    (``cohort, item_id`` or ``item_id``) in code order.
    """
    lo, hi = (scale.low, scale.high) if isinstance(scale, RatingScale) else map(float, scale)
    for c in ("item_id", "annotator", "value", "hedged"):
        if c not in annotations.columns:
            raise SchemaError(f"annotations lack column {c!r}; validate them first with "
                              "medaudit.labels.validate_annotations.")
    key = ["cohort", "item_id"] if "cohort" in annotations.columns else ["item_id"]
    values, keep = resolve_hedges(annotations["value"].to_numpy(dtype=np.float64),
                                  annotations["hedged"].to_numpy(dtype=bool), policy=hedge,
                                  scale=(lo, hi))
    # one code per item, in sorted key order (deterministic whatever the input order)
    groups = annotations.groupby(key, sort=True)
    item_code = groups.ngroup().to_numpy(dtype=np.intp)
    keys = groups.size().reset_index()[key]
    return lo, hi, values, keep, item_code, keys


def aggregate_labels(
    annotations: pd.DataFrame, *, scale: RatingScale | tuple[float, float],
    soft: str = "mean", hard: str = "majority", tie: str = "negative",
    threshold: float | None = None, threshold_rule: str = ">", hedge: str | None = None,
    crowd_iterations: int = 100, annotator_weights: Any = None,
) -> AggregatedLabels:
    """Aggregate a validated annotation table to one soft and one hard label per item.

    Parameters
    ----------
    annotations : DataFrame
        From :func:`~medaudit.labels.validate_annotations` (columns ``item_id,
        annotator, value, hedged`` and optionally ``cohort``).
    scale : RatingScale or (min, max)
    soft : {"mean", "dawid_skene", "glad", "mace", "wawa", "zero_based_skill", "majority_vote"}
        Default ``"mean"``.  The others are crowd-kit's aggregators (binary ratings):
        ``"mace"`` (Hovy et al. 2013; ``random_state=0``), ``"wawa"`` (majority weighted
        by each reader's agreement with the majority), ``"zero_based_skill"``, and
        ``"majority_vote"`` with ``annotator_weights`` (a plain vote share without).
    hard : {"majority", "threshold", "posterior"}, default="majority"
        ``"posterior"`` (crowd models only): posterior > 1/2, ties by ``tie``.
    tie : {"negative", "positive", "exclude"}, default="negative"
        A normalised mean (or posterior) of exactly 1/2; ``"negative"`` is the strict
        majority ``mean > 0.5`` of M1.1.
    threshold, threshold_rule
        For ``hard="threshold"``: positive when the raw mean is ``> threshold``.
    hedge : {"negative", "positive", "exclude", "half"}, optional
        Required when any rating is hedged.
    crowd_iterations : int, default=100
        EM / gradient iterations of Dawid–Skene, GLAD, MACE and ZeroBasedSkill.
    annotator_weights : mapping of reader id to weight, optional
        Only with ``soft="majority_vote"``: crowd-kit ``MajorityVote`` ``skills``.

    Returns
    -------
    AggregatedLabels

    Examples
    --------
    Three readers on two items, a tie on the second (ratings 1, 0):

    >>> t = pd.DataFrame({"item_id": ["x", "x", "x", "y", "y"],
    ...                   "annotator": ["a", "b", "c", "a", "b"],
    ...                   "value": [1.0, 1.0, 0.0, 1.0, 0.0], "hedged": [False] * 5})
    >>> agg = aggregate_labels(t, scale=(0, 1))
    >>> agg.labels[["item_id", "label_soft", "label"]].round(4).values.tolist()
    [['x', 0.6667, 1], ['y', 0.5, 0]]
    >>> aggregate_labels(t, scale=(0, 1), tie="exclude").dropped["item_id"].tolist()
    ['y']
    """
    soft = _check(soft, SOFT_RULES, "soft")
    hard = _check(hard, HARD_RULES, "hard")
    if hard == "posterior" and soft == "mean":
        raise MedauditError(f"hard='posterior' needs a crowd model (soft one of {list(CROWD_MODELS)}).")
    if annotator_weights is not None and soft != "majority_vote":
        raise MedauditError(f"annotator_weights are used by soft='majority_vote' only, not {soft!r}.")
    lo, hi, values, keep, item_code, keys = coded_ratings(annotations, scale=scale, hedge=hedge)
    n_items = len(keys)
    n_ratings = np.bincount(item_code, minlength=n_items)
    n_hedged = np.bincount(item_code, weights=annotations["hedged"].to_numpy(dtype=np.float64),
                           minlength=n_items).astype(np.int64)
    n_used = np.bincount(item_code[keep], minlength=n_items)
    sums = np.bincount(item_code[keep], weights=values[keep], minlength=n_items)
    rules = dict(scale=(lo, hi), tie=tie)
    if hard == "threshold":
        rules.update(hard_rule="threshold", threshold=threshold, threshold_rule=threshold_rule)
    elif threshold is not None:
        raise MedauditError(f"threshold is only used with hard='threshold', not {hard!r}.")
    soft_mean, hard_label = labels_from_sums(sums, n_used, **rules)
    label_soft = soft_mean
    if soft != "mean":
        v = values[keep]
        binary = (v == lo) | (v == hi)
        if not binary.all():
            raise MedauditError(f"soft={soft!r} needs binary ratings (the scale ends {lo:g} or "
                                f"{hi:g}); {int((~binary).sum())} usable rating(s) lie between.")
        n_annot = pd.unique(annotations["annotator"].to_numpy()[keep]).size
        if soft != "majority_vote" and (n_annot < 2 or n_used.max(initial=0) < 2):
            # a crowd model learns each annotator's reliability from their agreement with the
            # others: with one annotator, or one rating per item, there is none to learn from,
            # and its posteriors are artefacts of the initialisation (probe finding)
            raise MedauditError(
                f"soft={soft!r} learns annotator reliability from agreement between annotators, "
                f"but the annotations have {n_annot} annotator(s) and at most "
                f"{int(n_used.max(initial=0))} usable rating(s) per item; use soft='mean'.")
        post = _crowd_posterior(keys, (v == hi).astype(np.int64),
                                annotations["annotator"].to_numpy()[keep], item_code[keep],
                                n_items, soft, crowd_iterations, annotator_weights)
        label_soft = np.where(n_used > 0, post, np.nan)
        if hard == "posterior":
            # the posterior is already on [0, 1]: majority on the (0, 1) scale, sum = p, count = 1
            _, hard_label = labels_from_sums(label_soft, np.where(n_used > 0, 1.0, 0.0), tie=tie)
    table = keys.copy()
    table["n_ratings"] = n_ratings
    table["n_hedged"] = n_hedged
    table["n_used"] = n_used
    with np.errstate(divide="ignore", invalid="ignore"):
        table["mean_raw"] = np.where(n_used > 0, sums / np.maximum(n_used, 1), np.nan)
    table["label_soft"] = label_soft
    table["label"] = hard_label
    reason = np.where(n_used == 0, REASON_EXCLUDED, np.where(np.isnan(hard_label), REASON_TIE, ""))
    drop = reason != ""
    dropped = keys[drop].copy()
    dropped["reason"] = reason[drop]
    out = table[~drop].reset_index(drop=True)
    out["label"] = out["label"].astype(np.int64)
    counts = {"n_items": int(n_items), "n_items_labelled": int(len(out)),
              "n_items_dropped": int(drop.sum()),
              "dropped_by_reason": {r: int((reason == r).sum()) for r in (REASON_EXCLUDED, REASON_TIE)
                                    if (reason == r).any()},
              "n_ratings": int(len(annotations)), "n_hedged": int(n_hedged.sum()),
              "n_ratings_excluded": int((~keep).sum()),
              "n_positive": int(out["label"].sum()), "n_negative": int((out["label"] == 0).sum())}
    rule_record = {"soft": soft, "hard": hard, "tie": tie, "hedge": hedge, "scale": [lo, hi],
                   "threshold": threshold, "threshold_rule": threshold_rule if hard == "threshold"
                   else None, "crowd_iterations": crowd_iterations if soft != "mean" else None,
                   "annotator_weights": ({str(k): float(v) for k, v in dict(annotator_weights).items()}
                                         if annotator_weights is not None else None)}
    return AggregatedLabels(labels=out, dropped=dropped.reset_index(drop=True), counts=counts,
                            rules=rule_record)


def aggregate_with_spec(annotations: pd.DataFrame, spec: Any) -> AggregatedLabels:
    """:func:`aggregate_labels` with the rules of an :class:`~medaudit.labels.spec.AnnotationsSpec`."""
    return aggregate_labels(annotations, scale=RatingScale.from_spec(spec.scale), soft=spec.soft,
                            hard=spec.hard, tie=spec.tie, threshold=spec.threshold,
                            threshold_rule=spec.threshold_rule, hedge=spec.hedge,
                            crowd_iterations=spec.crowd_iterations)
