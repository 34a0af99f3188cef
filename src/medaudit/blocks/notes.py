"""The qualifications and notes every block writes, with one argument order.

A row's ``qualification`` joins short caveats with "; " (the report splits them again):
documented exposure of a model to a cohort, degenerate bootstrap replicates, small
groups.  Each caveat has one builder here, so every block words it the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["join", "exposure_note", "degenerate_note", "degenerate_cells_note", "count_degenerate",
           "tied_items", "constant_scores_note", "below_chance_note", "clustered_images_note",
           "outside_interval_note"]


def join(*parts: str) -> str:
    """Join the non-empty caveats with "; "."""
    return "; ".join(p for p in parts if p)


def outside_interval_note(estimate: float, ci_low: float, ci_high: float) -> str:
    """The caveat of an estimate that lies outside its own percentile interval ('' if inside).

    A plug-in calibration error (ECE) is biased upward in resamples, since noise only adds
    to ``|mean(p) - mean(y)|`` in each bin: all its replicates can lie above the estimate,
    and the percentile interval then shows their spread, not a range around the estimate.
    """
    if not (np.isfinite(estimate) and np.isfinite(ci_low) and np.isfinite(ci_high)):
        return ""
    if ci_low <= estimate <= ci_high:
        return ""
    side = "below" if estimate < ci_low else "above"
    return (f"the estimate lies {side} its percentile interval (the resampled values are "
            "shifted from it, as a plug-in calibration error's are: read the interval as "
            "their spread)")


def exposure_note(ctx: Any, models: str | Sequence[str], cohorts: str | Sequence[str], *,
                  label: str = "exposure ({model}): ") -> str:
    """Documented exposure of ``models`` to ``cohorts``, one caveat per (model, cohort) ('' if none).

    ``label`` is prefixed to each note, with ``{model}`` and ``{cohort}`` filled in: a row
    about several models or cohorts says whose exposure it is (``"{model}: "``,
    ``"{cohort}: "``); a row about one model may give the bare note (``""``).
    """
    models = [models] if isinstance(models, str) else list(dict.fromkeys(models))
    cohorts = [cohorts] if isinstance(cohorts, str) else list(dict.fromkeys(cohorts))
    return join(*(label.format(model=m, cohort=c) + e for m in models for c in cohorts
                  if (e := ctx.exposure(m, c))))


def degenerate_note(n_degenerate: int, n_resamples: int, *, noun: str = "bootstrap replicates"
                    ) -> str:
    """How many replicates were degenerate ('' when none)."""
    return (f"{n_degenerate} of {n_resamples} {noun} degenerate (metric undefined); "
            "interval from the rest") if n_degenerate else ""


def degenerate_cells_note(n_cells: int) -> list[str]:
    """The block note counting cells with degenerate replicates ([] when none)."""
    return ([f"{n_cells} cell(s) had degenerate bootstrap replicates; see n_degenerate and "
             "qualification."] if n_cells else [])


def count_degenerate(results: Iterable[Any]) -> int:
    """The number of results with at least one degenerate replicate."""
    return sum(r.n_degenerate > 0 for r in results)


def tied_items(scores: dict[str, np.ndarray]) -> dict[str, int]:
    """Per model, the number of items whose score another item shares (0 omitted)."""
    out = {}
    for m, s in scores.items():
        _, inv, cnt = np.unique(s, return_inverse=True, return_counts=True)
        n = int((cnt[inv] > 1).sum())
        if n:
            out[m] = n
    return out


def constant_scores_note(scores: np.ndarray, criterion: str) -> str:
    """The caveat for a rank metric of a model that gave every image one score ('' otherwise).

    Such a model ranks no image above another: its AUROC is 0.5 from ties alone (every
    positive-negative pair counts one half) in every replicate, so the interval has no width
    and reads as certainty; average precision and AURC then measure only the order in which
    tied images are taken.  Said on the row, so nobody reads the 0.5 as a measured chance-level
    ranking.  Brier score and ECE of a constant forecast are meaningful and get no caveat.
    """
    s = np.asarray(scores, dtype=float)
    if criterion not in ("roc_auc", "average_precision", "aurc") or s.size < 2 or not np.all(s == s[0]):
        return ""
    what = ("so AUROC is 0.5 from ties alone and its interval has no width" if criterion == "roc_auc"
            else "so this value reflects only the order in which the tied images are taken")
    return f"constant scores (all {s.size} images scored {float(s[0])!r}): the model ranks no image " \
           f"above another, {what}"


def below_chance_note(metrics: Any, *, probabilities: bool, criterion: str = "roc_auc") -> list[str]:
    """The block note for rows of ``criterion`` whose whole interval lies below 0.5 ([] if none).

    An AUROC significantly below chance means that higher scores go with the negatives: the
    score direction is probably inverted.  medaudit never flips scores and the spec has no
    direction option, so the note names each model and cohort and says how to invert the
    scores in the input (``1 - s`` for probabilities, ``-s`` for logits).
    """
    if metrics is None or len(metrics) == 0 or "ci_high" not in metrics:
        return []
    rows = metrics[(metrics["criterion"] == criterion) & (metrics["ci_high"] < 0.5)]
    if rows.empty:
        return []
    where = "; ".join(f"{r.model} in {r.cohort} ({criterion} {float(r.estimate)!r}, interval "
                      f"[{float(r.ci_low)!r}, {float(r.ci_high)!r}])" for r in rows.itertuples())
    how = ("replace every score s by 1 - s" if probabilities
           else "negate every score (s -> -s)")
    return [f"Below chance: {where}. The whole interval lies below 0.5, so higher scores go with "
            "the negatives: the score direction is probably inverted. medaudit never flips scores "
            "(pROC's direction='auto' would) and the spec has no direction option: if the model's "
            f"score means 'negative', {how} for that model in the score table (or its wide "
            "prediction file) and rerun; its AUROC becomes 1 - AUROC, and its rankings, thresholds "
            "and calibration change with it."]


def clustered_images_note(scores: Any, *, column: str = "patient_id") -> list[str]:
    """The block note for cohorts where ``column`` (patient_id) repeats ([] where it does not).

    Every interval of an audit resamples images (or images within each class) as if they
    were independent.  Several images of one patient are usually correlated, and then those
    intervals are too narrow; the audit has no patient-level design, so this is said, with
    where a patient-level interval can be had (the statistics core's cluster design).
    """
    if scores is None or column not in getattr(scores, "columns", ()):
        return []
    rows = scores[["cohort", "image_id", column]].drop_duplicates(["cohort", "image_id"])
    rows = rows[rows[column].notna() & (rows[column].astype(str).str.strip() != "")]
    parts = []
    for cohort, g in rows.groupby("cohort", sort=True):
        n_img, n_pat = len(g), int(g[column].astype(str).nunique())
        if n_pat < n_img:
            parts.append(f"{cohort}: {n_img} images of {n_pat} patients")
    if not parts:
        return []
    return [f"{column} repeats ({'; '.join(parts)}): every interval here resamples images as if "
            "they were independent, and images of one patient are usually correlated, so these "
            "intervals can be too narrow. The audit has no patient-level design; for a "
            "patient-level interval use medaudit.stats (e.g. bootstrap_ci(..., "
            f"design='cluster', cluster={column}))."]
