"""How stable are the labels themselves?  The annotation bootstrap without model scores.

Paper 001 (M1.7) resamples each item's annotations with replacement and rebuilds the
soft and hard labels; :func:`label_stability` keeps that resampling but asks about the
labels, not about a model ranking — which is all that can be asked of a data set without
model scores (LIDC's per-reader 1-5 ratings, issue 4).  Per item it reports the soft
label's bootstrap spread (percentile interval and standard deviation) and how often the
hard label comes out positive, excluded (a tie under ``tie: exclude``) or different from
the original hard label (``flip_rate``); per cohort, and per number of ratings, it
summarises those and the number of hard labels that flip in a replicate.

The draws are :func:`medaudit.stats.annotation_bootstrap.resampled_item_sums` (the same
contract as the model-ranking bootstrap) and the label rules are
:func:`~medaudit.stats.annotation_bootstrap.labels_from_sums`, so the original labels are
exactly those of :func:`medaudit.labels.aggregate_labels`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from medaudit._validation import RNGLike, as_generator, check_batch, check_fraction, check_n_resamples
from medaudit.exceptions import SchemaError
from medaudit.labels.aggregate import coded_ratings
from medaudit.labels.scale import RatingScale
from medaudit.stats.annotation_bootstrap import label_rule, labels_from_sums, resampled_item_sums

__all__ = ["LabelStability", "label_stability", "label_stability_with_spec"]


@dataclass(frozen=True)
class LabelStability:
    """Per-item and summary label stability under the annotation bootstrap.

    ``items``: ``[cohort,] item_id, n_ratings, label_soft, label, soft_ci_low, soft_ci_high,
    soft_sd, p_positive, p_excluded, flip_rate`` (``label`` NaN and ``flip_rate`` NaN for
    an item whose original hard label is an excluded tie).  ``summary``: per cohort
    (``"all"`` when the table has none) and ``n_ratings`` (``"all"`` plus each count):
    ``n_items, mean_flip_rate, share_ever_flipped, share_flip_ge_25, mean_soft_ci_width,
    mean_soft_sd`` and, over replicates, ``flips_mean, flips_ci_low, flips_ci_high`` (hard
    labels flipped per replicate).  ``dropped``: items with no usable rating.
    """

    items: pd.DataFrame
    summary: pd.DataFrame
    dropped: pd.DataFrame
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"options": self.options, "summary": self.summary.to_dict("records"),
                "dropped": self.dropped.to_dict("records")}


def label_stability(
    annotations: pd.DataFrame, *, scale: RatingScale | tuple[float, float],
    hard: str = "majority", threshold: float | None = None, threshold_rule: str = ">",
    tie: str = "negative", hedge: str | None = None, n_resamples: int = 1000, rng: RNGLike = None,
    confidence_level: float = 0.95, batch: int | None = None,
) -> LabelStability:
    """Annotation-bootstrap stability of each item's soft and hard label (no model scores).

    Parameters
    ----------
    annotations : DataFrame
        Validated annotations (:func:`~medaudit.labels.validate_annotations`): ``item_id,
        annotator, value, hedged`` and optionally ``cohort``.
    scale : RatingScale or (min, max)
    hard : {"majority", "threshold"}, default="majority"
    threshold, threshold_rule, tie
        The hard-label rule, as in :func:`~medaudit.labels.aggregate_labels` (LIDC
        malignancy: ``hard="threshold", threshold=3``: a mean rating above 3).
    hedge : {"negative", "positive", "exclude", "half"}, optional
        Required when any rating is hedged.
    n_resamples : int, default=1000
    rng : int, SeedSequence or Generator, optional
    confidence_level : float, default=0.95
        Level of the percentile intervals.
    batch : int, optional
        Replicates per batch (memory bound); the results do not depend on it.

    Returns
    -------
    LabelStability

    Examples
    --------
    Item ``x`` has votes 1, 1, 0: a resample is positive with probability 20/27.

    >>> t = pd.DataFrame({"item_id": ["x"] * 3 + ["y"] * 2, "annotator": list("abcab"),
    ...                   "value": [1.0, 1.0, 0.0, 1.0, 1.0], "hedged": [False] * 5})
    >>> st = label_stability(t, scale=(0, 1), n_resamples=2000, rng=0)
    >>> st.items[["item_id", "label", "flip_rate"]].round(2).values.tolist()
    [['x', 1.0, 0.26], ['y', 1.0, 0.0]]
    """
    n_res, batch = check_n_resamples(n_resamples), check_batch(batch)
    level = check_fraction(confidence_level, name="confidence_level")
    lo, hi, values, keep, code, keys = coded_ratings(annotations, scale=scale, hedge=hedge)
    if hard not in ("majority", "threshold"):
        raise SchemaError(f"hard={hard!r}: label stability rebuilds mean-vote labels; use "
                          "'majority' or 'threshold'.")
    rules = dict(scale=(lo, hi), hard_rule=hard, threshold=threshold,
                 threshold_rule=threshold_rule, tie=tie)
    to_labels = label_rule(**rules)  # checks the rule options up front, once
    used = np.bincount(code[keep], minlength=len(keys))
    dropped = keys[used == 0].assign(reason="every rating excluded (hedge: exclude)")
    # only items with a usable rating take part; codes renumbered 0..n-1 in key order
    live = np.flatnonzero(used > 0)
    if live.size == 0:
        raise SchemaError(f"no item has a usable rating ({len(keys)} item(s), every rating "
                          "excluded by hedge: exclude).")
    remap = np.full(len(keys), -1, dtype=np.intp)
    remap[live] = np.arange(live.size)
    item = remap[code[keep]]
    by_item = np.argsort(item, kind="stable")
    r, k = values[keep][by_item], used[live]
    soft0, hard0 = labels_from_sums(np.bincount(item, weights=values[keep], minlength=live.size),
                                    k, **rules)
    items = keys.iloc[live].reset_index(drop=True)
    cohorts = (items["cohort"].astype(str).to_numpy() if "cohort" in items.columns
               else np.full(live.size, "all", dtype=object))
    # summary groups (cohort, number of ratings): flips per replicate are counted per group
    grp_keys = sorted(set(zip(cohorts.tolist(), k.tolist(), strict=True)))
    where = {g: j for j, g in enumerate(grp_keys)}
    grp = np.array([where[g] for g in zip(cohorts.tolist(), k.tolist(), strict=True)],
                   dtype=np.intp)
    onehot = np.zeros((live.size, len(grp_keys)))
    onehot[np.arange(live.size), grp] = 1.0
    gen, rec = as_generator(rng)
    soft_reps = np.empty((n_res, live.size))
    n_pos = np.zeros(live.size)
    n_excl = np.zeros(live.size)
    n_flip = np.zeros(live.size)
    flips_per_rep = np.empty((n_res, len(grp_keys)))
    done = 0
    for sums in resampled_item_sums(r, k, n_resamples=n_res, rng=gen, batch=batch):
        b = sums.shape[0]
        soft, hard_b = to_labels(sums, k[None, :])
        soft_reps[done:done + b] = soft
        n_pos += (hard_b == 1.0).sum(axis=0)
        n_excl += np.isnan(hard_b).sum(axis=0)
        # a flip: both the replicate's and the original hard label are defined and differ
        flipped = (hard_b != hard0[None, :]) & ~np.isnan(hard_b) & ~np.isnan(hard0[None, :])
        n_flip += flipped.sum(axis=0)
        flips_per_rep[done:done + b] = flipped @ onehot
        done += b
    q = round(50.0 * (1.0 - level), 10)
    ci_lo, ci_hi = np.percentile(soft_reps, [q, 100.0 - q], axis=0)
    sd = soft_reps.std(axis=0, ddof=1) if n_res > 1 else np.full(live.size, np.nan)
    defined = n_res - n_excl  # replicates where the hard label is defined
    with np.errstate(divide="ignore", invalid="ignore"):
        flip_rate = np.where(np.isnan(hard0) | (defined == 0), np.nan, n_flip / defined)
    items = items.assign(n_ratings=k, label_soft=soft0, label=hard0, soft_ci_low=ci_lo,
                         soft_ci_high=ci_hi, soft_sd=sd, p_positive=n_pos / n_res,
                         p_excluded=n_excl / n_res, flip_rate=flip_rate)
    rows = []
    for c in sorted(set(cohorts.tolist())):
        in_c = cohorts == c
        for kk in ["all", *sorted(set(k[in_c].tolist()))]:
            sel = in_c if kk == "all" else in_c & (k == kk)
            cols = [j for j, g in enumerate(grp_keys) if g[0] == c and kk in ("all", g[1])]
            per_rep = flips_per_rep[:, cols].sum(axis=1)
            f_lo, f_hi = np.percentile(per_rep, [q, 100.0 - q])
            fr = flip_rate[sel]
            fr = fr[~np.isnan(fr)]
            rows.append({"cohort": c, "n_ratings": str(kk), "n_items": int(sel.sum()),
                         "mean_flip_rate": float(fr.mean()) if fr.size else np.nan,
                         "share_ever_flipped": float((fr > 0).mean()) if fr.size else np.nan,
                         "share_flip_ge_25": float((fr >= 0.25).mean()) if fr.size else np.nan,
                         "mean_soft_ci_width": float((ci_hi - ci_lo)[sel].mean()),
                         "mean_soft_sd": float(sd[sel].mean()) if n_res > 1 else np.nan,
                         "flips_mean": float(per_rep.mean()), "flips_ci_low": float(f_lo),
                         "flips_ci_high": float(f_hi)})
    options = {**{k_: v for k_, v in rules.items() if k_ != "scale"}, "scale": [lo, hi],
               "hedge": hedge, "n_resamples": n_res, "confidence_level": level, "rng": rec,
               "resampling": "annotations within item, with replacement",
               "n_items": int(live.size), "n_ratings": int(r.size),
               "n_ratings_excluded": int((~keep).sum())}
    return LabelStability(items=items, summary=pd.DataFrame(rows),
                          dropped=dropped.reset_index(drop=True), options=options)


def label_stability_with_spec(annotations: pd.DataFrame, spec: Any, *, n_resamples: int = 1000,
                              rng: RNGLike = None, confidence_level: float = 0.95) -> LabelStability:
    """:func:`label_stability` with the rules of an :class:`~medaudit.labels.spec.AnnotationsSpec`."""
    if spec.soft != "mean" or spec.hard == "posterior":
        raise SchemaError(f"label stability rebuilds mean-vote labels; soft: {spec.soft}, hard: "
                          f"{spec.hard} cannot be resampled that way.")
    return label_stability(annotations, scale=RatingScale.from_spec(spec.scale), hard=spec.hard,
                           threshold=spec.threshold, threshold_rule=spec.threshold_rule,
                           tie=spec.tie, hedge=spec.hedge, n_resamples=n_resamples, rng=rng,
                           confidence_level=confidence_level)
