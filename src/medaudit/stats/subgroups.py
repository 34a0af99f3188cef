"""Subgroup disaggregation from one resampling of the whole sample (fairlearn's MetricFrame, with intervals).

:func:`subgroup_bootstrap` gives a metric on the whole sample and on each group of one
grouping (sex, age band, scanner), the difference and ratio of each group to the whole
and between every two groups, and fairlearn's ``difference()`` / ``ratio()`` summaries
(``between_groups`` and ``to_overall``), every one with a percentile interval.

The design: one draw, evaluated on the whole and on each group's part
------------------------------------------------------------------------
A group is part of the whole sample, so a group's metric and the whole sample's metric
are not independent, and resampling them separately would get the interval of their
difference wrong.  Each replicate therefore draws the items **once** with the sample's
design (``ordinary``: n items with replacement; ``within_label``: positives and
negatives separately, class sizes fixed) and evaluates the metric

* on the whole draw (the replicate weights of every item), and
* on group ``g``'s part of the same draw (the same weights, restricted to the items of
  ``g``: each group is sorted once and reads its columns of the weight matrix).

Every difference and ratio is then formed *within* a replicate (``g - all``, ``g / all``,
``a - b``, ``a / b``, ``max - min``, ...), so its interval carries the dependence between
the group and the whole and the covariation of the groups in one draw.  Group membership
is a covariate of an item, not a sampling stratum: the number of items of a group drawn
varies between replicates, as it would between samples of the same population.  A
replicate in which a group's metric is undefined (no positive or no negative drawn for a
rank metric) is NaN and counted in ``n_degenerate``; a group whose metric is undefined on
the full sample (no positives at all) has NaN estimate and interval and is left out of the
summaries, as fairlearn's ``group_min``/``group_max`` skip NaN.

The point estimate is always the statistic on the full sample (the group's metric on the
group's items), which is what ``fairlearn.metrics.MetricFrame`` reports per group.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit._validation import (
    RNGLike,
    as_generator,
    check_number,
    check_same_length,
    missing_mask,
    value_kind,
)
from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import _metricspec as MS
from medaudit.stats._docs import fill_doc
from medaudit.stats._results import BootstrapResult
from medaudit.stats.bootstrap import _common_options, _labels, _result, _scores
from medaudit.stats.designs import make_plan

__all__ = ["SubgroupBootstrapResult", "subgroup_bootstrap", "bootstrap_pvalue", "SUMMARIES"]

#: fairlearn's summaries: (statistic, method)
SUMMARIES = (("difference", "between_groups"), ("ratio", "between_groups"),
             ("difference", "to_overall"), ("ratio", "to_overall"))
_DESIGNS = ("ordinary", "within_label")


@dataclass(frozen=True, slots=True, kw_only=True)
class SubgroupBootstrapResult:
    """Per-group metrics, their contrasts and summaries, all from one set of replicates.

    Keys: ``overall[(score, metric)]``, ``by_group[(score, level, metric)]``,
    ``to_overall[(score, level, metric, stat)]`` (``stat`` "difference" is ``g - all``,
    "ratio" is ``g / all``), ``between[(score, a, b, metric, stat)]`` (``a - b``, ``a / b``
    with ``a`` before ``b`` in ``levels``), ``summary[(score, metric, stat, method)]`` for
    the four :data:`SUMMARIES`.  Every value is a :class:`BootstrapResult` whose
    ``replicates`` come from the same draws.
    """

    levels: tuple[str, ...]
    overall: dict[tuple[str, str], BootstrapResult]
    by_group: dict[tuple[str, str, str], BootstrapResult]
    to_overall: dict[tuple[str, str, str, str], BootstrapResult]
    between: dict[tuple[str, str, str, str, str], BootstrapResult]
    summary: dict[tuple[str, str, str, str], BootstrapResult]
    design: str
    n_resamples: int
    seed: int | None
    options: dict[str, Any] = field(default_factory=dict)


def _ratio(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a / b``, NaN where ``b`` is 0 or either side is NaN (never a RuntimeWarning)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = a / b
    return np.where((b != 0) & np.isfinite(a) & np.isfinite(b), out, np.nan)


def _summaries(groups: NDArray[np.float64], overall: NDArray[np.float64]
               ) -> dict[tuple[str, str], NDArray[np.float64]]:
    """fairlearn's four summaries of ``groups`` (k, B) against ``overall`` (B,); NaN propagates."""
    if groups.shape[0] == 0:
        nan = np.full(overall.shape, np.nan)
        return {s: nan for s in SUMMARIES}
    hi, lo = groups.max(axis=0), groups.min(axis=0)
    rel = _ratio(groups, overall[None, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        # fairlearn's ratio_sub_one: a ratio above 1 is inverted
        sub_one = np.where(rel > 1, 1.0 / rel, rel)
    return {("difference", "between_groups"): hi - lo,
            ("ratio", "between_groups"): _ratio(lo, hi),
            ("difference", "to_overall"): np.abs(groups - overall[None, :]).max(axis=0),
            ("ratio", "to_overall"): sub_one.min(axis=0)}


def bootstrap_pvalue(replicates: ArrayLike, null: float = 0.0) -> float:
    """Two-sided bootstrap p-value of ``statistic = null`` by inverting the percentile interval.

    ``p = min(1, 2 (1 + min(#{r <= null}, #{r >= null})) / (B' + 1))`` over the ``B'``
    finite replicates: ``p < alpha`` exactly when ``null`` lies (about) outside the
    ``1 - alpha`` percentile interval of the same replicates; the ``+1`` keeps it above 0.
    NaN when no replicate is finite.

    Examples
    --------
    >>> bootstrap_pvalue([0.1, 0.2, 0.3, -0.1])
    0.8
    >>> bootstrap_pvalue([0.1, 0.2, 0.3, 0.4])
    0.4
    """
    # a nan null: every comparison is False, the count 0 and p its minimum
    null = check_number(null, name="null")
    r = np.asarray(replicates, dtype=np.float64)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return math.nan
    k = min(int(np.sum(r <= null)), int(np.sum(r >= null)))
    return float(min(1.0, 2.0 * (1 + k) / (r.size + 1)))


def _levels(groups: ArrayLike, n: int) -> tuple[NDArray[Any], tuple[str, ...]]:
    dtype = getattr(groups, "dtype", None)
    typed = isinstance(dtype, np.dtype) and dtype.kind != "O"
    g = np.asarray(groups, dtype=object)
    if g.ndim != 1:
        raise MedauditError(f"groups must be one-dimensional (one level per item); got shape {g.shape}.")
    check_same_length(y_true=np.empty(n), groups=g)
    missing = missing_mask(g)
    if missing.any():
        raise MedauditError(f"groups has {int(missing.sum())} missing level(s) (first at item "
                            f"{int(np.flatnonzero(missing)[0])}); give missing values a level of "
                            "their own (e.g. '(missing)') or drop those items.")
    if not typed:  # a typed array (or Series) holds one kind; a list or object array may mix
        _one_kind_of_level(g)
    g = g.astype(str)
    return g, tuple(sorted(set(g.tolist())))


def _one_kind_of_level(g: NDArray[Any]) -> None:
    """Levels are named by their text, so every level must be of one kind: 1 and "1" would
    merge into one group, 1 and 1.0 (one value to pandas) would split into two."""
    kinds: dict[str, Any] = {}
    for v in g.tolist():
        kinds.setdefault(value_kind(v), v)
        if len(kinds) > 1:
            shown_ = ", ".join(f"{k} ({v!r})" for k, v in kinds.items())
            raise MedauditError(f"groups mixes kinds of level: {shown_}; levels are named by "
                                "their text, so give every item the same kind (e.g. all text: "
                                "groups.astype(str)).")


@fill_doc
def subgroup_bootstrap(
    y_true: ArrayLike,
    scores: Mapping[str, ArrayLike],
    groups: ArrayLike,
    *,
    metrics: str | Sequence[Any] = ("roc_auc",),
    design: str = "ordinary",
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    rng: RNGLike = None,
    batch: int | None = None,
) -> SubgroupBootstrapResult:
    """Metrics per group of one grouping, with contrasts, from one draw of the whole sample.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels shared by every score vector.
    scores : mapping of str to array-like of shape (n_samples,)
        Score vectors by name (models), on the same items.
    groups : array-like of shape (n_samples,)
        The level of each item (text; a missing value is an error: give it a level).
    metrics : str or sequence, default=("roc_auc",)
        Hard-label metrics of :func:`~medaudit.stats.bootstrap_metrics`.
    design : {"ordinary", "within_label"}, default="ordinary"
        How the whole sample is resampled (see the module docstring).
    n_resamples : int, default=2000
    confidence_level : float, default=0.95
        Percentile endpoints at (1 - level)/2 and (1 + level)/2.
    {rng}
    {batch}

    Returns
    -------
    SubgroupBootstrapResult

    Examples
    --------
    >>> y = [0, 1, 0, 1, 0, 1, 0, 1]
    >>> s = [.1, .9, .2, .8, .6, .4, .3, .7]
    >>> g = ["a", "a", "a", "a", "b", "b", "b", "b"]
    >>> r = subgroup_bootstrap(y, {"m": s}, g, n_resamples=50, rng=0)
    >>> r.levels, r.overall[("m", "roc_auc")].estimate
    (('a', 'b'), 0.9375)
    >>> r.by_group[("m", "a", "roc_auc")].estimate, r.by_group[("m", "b", "roc_auc")].estimate
    (1.0, 0.75)
    >>> r.between[("m", "a", "b", "roc_auc", "difference")].estimate
    0.25
    >>> r.summary[("m", "roc_auc", "ratio", "between_groups")].estimate
    0.75
    """
    n_res, level, _, batch = _common_options(n_resamples, confidence_level, "percentile", batch)
    specs = MS.parse_metrics(metrics)
    y, soft = _labels(y_true, specs)
    if soft:
        raise MedauditError("subgroup_bootstrap takes hard-label metrics; soft metrics are not "
                            "disaggregated by subgroup.")
    if design not in _DESIGNS:
        raise MedauditError(f"design must be one of {list(_DESIGNS)} for subgroup_bootstrap; got "
                            f"{design!r}.")
    if not isinstance(scores, Mapping) or len(scores) < 1:
        raise MedauditError("scores must be a non-empty mapping of name -> score vector.")
    arrays = {str(k): _scores(v, specs, f"scores[{k!r}]") for k, v in scores.items()}
    for k, v in arrays.items():
        check_same_length(y_true=y, **{f"scores[{k!r}]": v})
    g, levels = _levels(groups, y.size)
    index = {lv: np.flatnonzero(g == lv) for lv in levels}
    need_conf = MS.needs_confidence(specs)
    # sort once: the whole sample and each group's items, per score vector
    prepared = {(k, None): MS.Prepared.build(y, v, need_conf=need_conf) for k, v in arrays.items()}
    prepared.update({(k, lv): MS.Prepared.build(y[ix], v[ix], need_conf=need_conf)
                     for k, v in arrays.items() for lv, ix in index.items()})
    plan = make_plan(design, y)
    gen, rec = as_generator(rng)

    def evaluate(w: NDArray[np.float64], out: dict) -> None:
        for (k, lv), p in prepared.items():
            # np.take keeps C order (w[:, ix] is Fortran-ordered, and the row sums would
            # round differently: a level holding every item would not equal the whole)
            part = w if lv is None else np.take(w, index[lv], axis=1)
            for mid, vals in MS.evaluate(p, specs, part).items():
                out.setdefault((k, lv, mid), []).append(vals)

    base: dict = {}
    evaluate(plan.base[None, :], base)
    point = {key: float(v[0][0]) for key, v in base.items()}
    chunks: dict = {}
    for w in plan.batches(n_res, gen, batch):
        evaluate(w, chunks)
    reps = {key: np.concatenate(v) for key, v in chunks.items()}

    dname = f"{design}+subgroup"
    n_degenerate = 0

    def result(metric_id, est, rep, *, n, n_pos, options) -> BootstrapResult:
        nonlocal n_degenerate
        with warnings.catch_warnings():
            # counted once for the whole call below, not once per result
            warnings.simplefilter("ignore", DegenerateDataWarning)
            r = _result(metric_id, est, rep, None, level=level, ci_method="percentile",
                        design=dname, n_resamples=n_res, seed=rec["seed"], n=int(n),
                        n_pos=float(n_pos), n_neg=float(n - n_pos),
                        options={**options, "rng": rec})
        n_degenerate += r.n_degenerate > 0
        return r

    counts = {lv: (ix.size, float(y[ix].sum())) for lv, ix in index.items()}
    counts[None] = (y.size, float(y.sum()))
    overall, by_group, to_overall, between, summary = {}, {}, {}, {}, {}
    for k in arrays:
        for m in specs:
            opts = dict(m.options)
            po, ro = point[(k, None, m.id)], reps[(k, None, m.id)]
            overall[(k, m.id)] = result(m.id, po, ro, n=counts[None][0], n_pos=counts[None][1],
                                        options={**opts, "score": k})
            for lv in levels:
                pg, rg = point[(k, lv, m.id)], reps[(k, lv, m.id)]
                n, n_pos = counts[lv]
                by_group[(k, lv, m.id)] = result(m.id, pg, rg, n=n, n_pos=n_pos,
                                                 options={**opts, "score": k, "group": lv})
                for stat, est, rep in (("difference", pg - po, rg - ro),
                                       ("ratio", float(_ratio(pg, po)), _ratio(rg, ro))):
                    to_overall[(k, lv, m.id, stat)] = result(
                        f"{m.id}:{lv}-all" if stat == "difference" else f"{m.id}:{lv}/all", est, rep,
                        n=n, n_pos=n_pos, options={**opts, "score": k, "contrast": [lv, "all"]})
            for i, a in enumerate(levels):
                for b in levels[i + 1:]:
                    pa, ra = point[(k, a, m.id)], reps[(k, a, m.id)]
                    pb, rb = point[(k, b, m.id)], reps[(k, b, m.id)]
                    n = counts[a][0] + counts[b][0]
                    n_pos = counts[a][1] + counts[b][1]
                    for stat, est, rep in (("difference", pa - pb, ra - rb),
                                           ("ratio", float(_ratio(pa, pb)), _ratio(ra, rb))):
                        between[(k, a, b, m.id, stat)] = result(
                            f"{m.id}:{a}{'-' if stat == 'difference' else '/'}{b}", est, rep, n=n,
                            n_pos=n_pos, options={**opts, "score": k, "contrast": [a, b]})
            # fairlearn's summaries over the groups whose metric is defined on the full sample
            eligible = [lv for lv in levels if np.isfinite(point[(k, lv, m.id)])]
            pts = _summaries(np.array([[point[(k, lv, m.id)]] for lv in eligible]).reshape(
                len(eligible), 1), np.array([po]))
            rps = _summaries(np.array([reps[(k, lv, m.id)] for lv in eligible]).reshape(
                len(eligible), n_res), ro)
            for stat, method in SUMMARIES:
                summary[(k, m.id, stat, method)] = result(
                    f"{m.id}:{stat}[{method}]", float(pts[(stat, method)][0]), rps[(stat, method)],
                    n=counts[None][0], n_pos=counts[None][1],
                    options={**opts, "score": k, "groups": eligible})
    if n_degenerate:
        warnings.warn(f"subgroup_bootstrap: {n_degenerate} result(s) have degenerate replicates "
                      "(metric undefined in a group's part of a draw, e.g. no positive drawn); "
                      "their intervals use the rest and the counts are in n_degenerate.",
                      DegenerateDataWarning, stacklevel=2)
    return SubgroupBootstrapResult(levels=levels, overall=overall, by_group=by_group,
                                   to_overall=to_overall, between=between, summary=summary,
                                   design=dname, n_resamples=n_res, seed=rec["seed"],
                                   options={"metrics": [m.id for m in specs], "rng": rec})
