"""The resampling engine: bootstrap intervals for one or several score vectors.

Sort once, draw replicate weights in memory-bounded batches, evaluate every metric
on the weights with cumulative sums (see :mod:`medaudit.stats._kernels`).  The
point estimate is always the statistic on the full sample; the interval uses the
non-degenerate replicates, and their count is reported (never silently dropped).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from medaudit._validation import (
    RNGLike,
    as_binary_labels,
    as_generator,
    as_probabilities,
    as_scores,
    as_soft_labels,
    check_batch,
    check_fraction,
    check_n_resamples,
    check_option,
    check_same_length,
)
from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import _metricspec as MS
from medaudit.stats._common import warn
from medaudit.stats._docs import fill_doc
from medaudit.stats._results import BootstrapResult
from medaudit.stats.designs import WeightPlan, make_plan

__all__ = [
    "bootstrap_ci",
    "bootstrap_metrics",
    "paired_bootstrap",
    "concat_paired",
    "shared_positive_bootstrap",
    "PairedBootstrapResult",
    "CI_METHODS",
    "percentile_interval",
]

CI_METHODS = ("percentile", "bca")
_BCA_MAX_UNITS = 20_000


def percentile_interval(replicates: NDArray[np.float64], confidence_level: float
                        ) -> tuple[float, float]:
    """Percentile interval (numpy's linear interpolation) of the finite replicates."""
    valid = replicates[~np.isnan(replicates)]
    if valid.size == 0:
        return math.nan, math.nan
    # round so that level 0.95 asks for exactly the 2.5th and 97.5th percentiles
    q = round(50.0 * (1.0 - confidence_level), 10)
    if np.isfinite(valid).all():
        lo, hi = np.percentile(valid, [q, 100.0 - q])
        return float(lo), float(hi)
    # infinite replicates (a threshold rule that called nothing positive: +inf): numpy's
    # interpolation computes inf - inf between two of them (nan and a RuntimeWarning); the
    # same linear rule, by hand, gives inf there and between an infinite and a finite end
    v = np.sort(valid)
    ends = []
    for p in (q, 100.0 - q):
        h = (v.size - 1) * p / 100.0
        i = int(math.floor(h))
        a, b, t = float(v[i]), float(v[min(i + 1, v.size - 1)]), h - i
        ends.append(a if (a == b or t == 0.0) else b if t == 1.0 else
                    (a if math.isinf(a) else b) if (math.isinf(a) or math.isinf(b)) else a + (b - a) * t)
    return ends[0], ends[1]


def _bca_interval(replicates, estimate, jack, confidence_level, strata=None
                  ) -> tuple[float, float]:
    """BCa endpoints (Efron 1987) as ``scipy.stats.bootstrap`` computes them.

    ``z0`` is the normal quantile of the estimate's percentile among the replicates
    (ties count one half).  The acceleration comes from the leave-one-unit-out values
    ``jack``; with ``strata`` (the stratum of each value: the classes of
    ``within_label``, the strata of a stratified design) every stratum is one of
    scipy's samples: ``U = (n_j - 1)(mean_j - jack)`` within stratum ``j`` and
    ``a = sum U^3 / n_j^3 / (6 (sum U^2 / n_j^2)^1.5)``.  One stratum reduces to
    ``sum d^3 / (6 (sum d^2)^1.5)`` with ``d = mean - jack``, computed so.  Undefined
    leave-one-out values (nan) are left out.
    """
    valid = replicates[~np.isnan(replicates)]
    keep = ~np.isnan(jack)
    jack = jack[keep]
    groups = None if strata is None else np.asarray(strata)[keep]
    if valid.size == 0 or jack.size < 2 or math.isnan(estimate):
        return math.nan, math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        # scipy's percentile-of-score: ties with the estimate count one half
        z0 = special.ndtri((np.sum(valid < estimate) + np.sum(valid <= estimate)) / (2 * valid.size))
        ids = None if groups is None else np.unique(groups)
        if ids is None or ids.size < 2:
            d = jack.mean() - jack
            den = 6.0 * np.sum(d**2) ** 1.5
            a = np.sum(d**3) / den if den > 0 else 0.0
        else:
            num = den = 0.0
            for g in ids:
                x = jack[groups == g]
                u = (x.size - 1) * (x.mean() - x)
                num += np.sum(u**3) / x.size**3
                den += np.sum(u**2) / x.size**2
            a = num / (6.0 * den**1.5) if den > 0 else 0.0
        alpha = (1.0 - confidence_level) / 2.0
        out = []
        for q in (alpha, 1 - alpha):
            zq = special.ndtri(q)
            out.append(special.ndtr(z0 + (z0 + zq) / (1 - a * (z0 + zq))))
    if not np.all(np.isfinite(out)):
        warn("BCa interval is undefined (all replicates on one side of the estimate); "
             "returning nan. Use ci_method='percentile'.", DegenerateDataWarning)
        return math.nan, math.nan
    lo, hi = np.percentile(valid, [100 * out[0], 100 * out[1]])
    return float(lo), float(hi)


@dataclass(frozen=True, slots=True, kw_only=True)
class PairedBootstrapResult:
    """Marginal intervals per score vector and intervals of their paired differences.

    ``marginal[(name, metric_id)]`` and ``differences[(a, b, metric_id)]`` (the
    estimate of a difference is ``metric(a) - metric(b)`` on the full sample; its
    replicates are differences within each shared replicate).
    """

    marginal: dict[tuple[str, str], BootstrapResult]
    differences: dict[tuple[str, str, str], BootstrapResult]
    design: str
    n_resamples: int
    seed: int | None
    options: dict[str, Any] = field(default_factory=dict)



# ----------------------------------------------------------------------------- core
class _Engine:
    """Runs one weight plan over several prepared score vectors and collects replicates."""

    def __init__(self, plan: WeightPlan, prepared: Mapping[str, MS.Prepared],
                 specs: Sequence[MS.MetricSpec]):
        self.plan, self.prepared, self.specs = plan, prepared, specs

    def _eval_all(self, w) -> dict[tuple[str, str], NDArray[np.float64]]:
        out = {}
        for name, p in self.prepared.items():
            for mid, vals in MS.evaluate(p, self.specs, w).items():
                out[(name, mid)] = vals
        return out

    def point(self) -> dict[tuple[str, str], float]:
        return {k: float(v[0]) for k, v in self._eval_all(self.plan.base[None, :]).items()}

    def replicates(self, n_resamples, rng, batch, start: int = 0
                   ) -> dict[tuple[str, str], NDArray[np.float64]]:
        """Replicates ``start`` to ``n_resamples - 1`` of a run of ``n_resamples`` (the
        generator skips the first ``start``: the same draws as the whole run)."""
        if start:
            self.plan.skip(rng, start)
            n_resamples -= start
        name, p = next(iter(self.prepared.items()))
        if (len(self.prepared) == 1 and p.placement is not None
                and self.plan.unit_of_item is None and [m.id for m in self.specs] == ["roc_auc"]):
            # the hard-label AUROC of one score vector alone needs only per-segment counts:
            # draw them binned (the same draws, so the same replicates) and skip every
            # gather; with several score vectors or metrics each needs its own order, and
            # cluster counts are per cluster, so those take the general path below
            pl = p.placement
            return {(name, "roc_auc"): np.concatenate([
                K.auroc_binned(w, pl)
                for w in self.plan.batches(n_resamples, rng, batch, columns=pl.bins)])}
        # the counts are drawn straight into the first score vector's column layout (the
        # same draws, so the same replicates); the others gather from it, and cluster
        # counts, which are per cluster, are gathered from item order
        first = p
        cols = first.column_of() if self.plan.unit_of_item is None else None
        moves = {k: (None if q is first else first.column_of()[q.columns])
                 for k, q in self.prepared.items()}
        # one set of work buffers for every score vector: each is evaluated in turn and
        # keeps nothing of them, so 20 models cost the memory of one
        scratch: dict = {}
        chunks: dict[tuple[str, str], list] = {}
        for w in self.plan.batches(n_resamples, rng, batch, columns=cols):
            for k, q in self.prepared.items():
                if cols is None:
                    wc = np.take(w, q.columns, axis=1)
                else:
                    wc = w if moves[k] is None else np.take(w, moves[k], axis=1)
                for mid, vals in MS.evaluate_columns(q, self.specs, wc, scratch).items():
                    chunks.setdefault((k, mid), []).append(vals)
        return {k: np.concatenate(v) for k, v in chunks.items()}

    def jackknife(self, batch) -> dict[tuple[str, str], NDArray[np.float64]]:
        n_units = self.plan.n_units
        if n_units > _BCA_MAX_UNITS:
            raise MedauditError(
                f"ci_method='bca' needs a jackknife over {n_units} units (O(n^2)); use "
                f"ci_method='percentile' above {_BCA_MAX_UNITS} units.")
        chunks: dict[tuple[str, str], list] = {}
        for w in self.plan.jackknife(batch):
            for k, v in self._eval_all(w).items():
                chunks.setdefault(k, []).append(v)
        return {k: np.concatenate(v) for k, v in chunks.items()}


def _result(metric_id, estimate, reps, jack, *, level, ci_method, design, n_resamples, seed,
            n, n_pos, n_neg, options, jack_strata=None) -> BootstrapResult:
    if ci_method == "bca":
        lo, hi = _bca_interval(reps, estimate, jack, level, jack_strata)
    else:
        lo, hi = percentile_interval(reps, level)
    if metric_id.startswith("cutpoint_threshold") and (math.isinf(lo) or math.isinf(hi)):
        # +inf is "called nothing positive", no threshold on the score scale (as in
        # cutpoints.best_threshold_ci): that end of the interval is nan
        warn(f"{metric_id}: the rule called nothing positive in {int(np.isinf(reps).sum())} of "
             f"{n_resamples} replicates (threshold +inf, above every score), more than the "
             "interval's tail: that end has no finite threshold and is nan.", DegenerateDataWarning)
        lo, hi = (math.nan if math.isinf(lo) else lo), (math.nan if math.isinf(hi) else hi)
    n_deg = int(np.isnan(reps).sum())
    if n_deg:
        warn(f"{metric_id}: {n_deg} of {n_resamples} replicates were degenerate (metric "
             "undefined, e.g. a single class); the interval uses the remaining "
             f"{n_resamples - n_deg} and the count is recorded in n_degenerate.",
             DegenerateDataWarning)
    return BootstrapResult(metric=metric_id, estimate=float(estimate), ci_low=lo, ci_high=hi,
                           confidence_level=level, ci_method=ci_method, design=design,
                           n_resamples=n_resamples, n_degenerate=n_deg, seed=seed, n=n,
                           n_pos=n_pos, n_neg=n_neg, options=options, replicates=reps)


def _common_options(n_resamples, confidence_level, ci_method, batch):
    return (check_n_resamples(n_resamples),
            check_fraction(confidence_level, name="confidence_level"),
            check_option(ci_method, CI_METHODS, name="ci_method"),
            check_batch(batch))


def _labels(y_true, specs, name="y_true"):
    soft = [m.name in MS.SOFT_METRICS for m in specs]
    if any(soft) and not all(soft):
        raise MedauditError("soft metrics (soft_roc_auc, soft_average_precision) take soft labels "
                            "and cannot share one call with hard-label metrics; call twice.")
    if all(soft):
        return as_soft_labels(y_true, name="p_true"), True
    return as_binary_labels(y_true, name=name), False


def _scores(s, specs, name):
    return as_probabilities(s, name=name) if MS.needs_probabilities(specs) else as_scores(s, name=name)


@fill_doc
def bootstrap_metrics(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    metrics: str | Sequence[Any] = ("roc_auc",),
    design: str = "ordinary",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    ci_method: str = "percentile",
    rng: RNGLike = None,
    batch: int | None = None,
) -> dict[str, BootstrapResult]:
    """Bootstrap intervals for several metrics of one score vector, from one draw.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels (soft labels in [0, 1] for the soft metrics).
    y_score : array-like of shape (n_samples,)
        Scores; probabilities in [0, 1] when a probability metric is requested.
    metrics : str or sequence, default=("roc_auc",)
        Names from the registry (``roc_auc``, ``average_precision``,
        ``brier_score``, ``ece``, ``log_loss``, ``aurc``, ``selective_risk``,
        ``sensitivity_at_specificity``, ``specificity_at_sensitivity``,
        ``sensitivity``, ``specificity``, ``soft_roc_auc``,
        ``soft_average_precision``), or ``(name, options)`` pairs such as
        ``("brier_score", {"prevalence": 0.5})`` or ``("selective_risk", {"coverage": 0.8})``.
    design : {"ordinary", "within_label", "cluster"}, default="ordinary"
        See :mod:`medaudit.stats.designs`.
    cluster : array-like of shape (n_samples,), optional
        Cluster ids for ``design="cluster"``.
    strata : array-like of shape (n_samples,), optional
        Resample within these strata (e.g. institution).
    n_resamples : int, default=2000
    confidence_level : float, default=0.95
        Percentile endpoints at (1 - level)/2 and (1 + level)/2.
    ci_method : {"percentile", "bca"}, default="percentile"
        ``"bca"``: bias-corrected and accelerated, as ``scipy.stats.bootstrap`` computes it,
        each resampled stratum (the two classes of ``within_label``) one of its samples.
    {rng}
    {batch}

    Returns
    -------
    dict of str to BootstrapResult
        Keyed by metric id (e.g. ``"brier_score[prevalence=0.5]"``).

    Examples
    --------
    >>> res = bootstrap_metrics([0, 0, 1, 1, 0, 1], [.1, .4, .35, .8, .2, .9],
    ...                         metrics=["roc_auc"], design="within_label",
    ...                         n_resamples=200, rng=2026)
    >>> r = res["roc_auc"]
    >>> r.estimate, r.design, r.n_resamples, r.seed, r.n_degenerate
    (0.8888888888888888, 'within_label', 200, 2026, 0)
    """
    n_res, level, ci_method, batch = _common_options(n_resamples, confidence_level, ci_method, batch)
    specs = MS.parse_metrics(metrics)
    y, soft = _labels(y_true, specs)
    s = _scores(y_score, specs, "y_score")
    check_same_length(y_true=y, y_score=s)
    if design == "shared_positive":
        raise MedauditError("design='shared_positive' is run by shared_positive_bootstrap().")
    plan = make_plan(design, (y > 0.5).astype(np.float64) if soft else y,
                     cluster=cluster, strata=strata)
    gen, rec = as_generator(rng)
    prepared = {"": MS.Prepared.build(y, s, need_conf=MS.needs_confidence(specs),
                                      soft=soft)}
    eng = _Engine(plan, prepared, specs)
    point = eng.point()
    reps = eng.replicates(n_res, gen, batch)
    jack = eng.jackknife(batch) if ci_method == "bca" else {}
    jack_strata = plan.jackknife_strata() if jack else None
    out = {}
    for m in specs:
        k = ("", m.id)
        out[m.id] = _result(m.id, point[k], reps[k], jack.get(k), level=level, ci_method=ci_method,
                            design=design, n_resamples=n_res, seed=rec["seed"], n=int(y.size),
                            n_pos=float(y.sum()), n_neg=float(y.size - y.sum()),
                            options={**dict(m.options), "rng": rec}, jack_strata=jack_strata)
    return out


def bootstrap_ci(y_true: ArrayLike, y_score: ArrayLike, *, metric: Any = "roc_auc",
                 **kwargs: Any) -> BootstrapResult:
    """Bootstrap interval of one metric; keywords as for :func:`bootstrap_metrics`.

    Examples
    --------
    >>> r = bootstrap_ci([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], design="within_label",
    ...                  n_resamples=100, rng=0)
    >>> r.metric, r.estimate, r.ci_low <= r.estimate <= r.ci_high
    ('roc_auc', 0.75, True)
    """
    specs = MS.parse_metrics(metric, name="metric")
    if len(specs) != 1:
        raise MedauditError("bootstrap_ci takes one metric; use bootstrap_metrics for several.")
    return bootstrap_metrics(y_true, y_score, metrics=specs, **kwargs)[specs[0].id]


def _differences(marg_point, marg_reps, jack, contrasts, specs, *, level, ci_method, design,
                 n_res, seed, n, n_pos, n_neg, rec, jack_strata=None):
    diffs = {}
    for a, b in contrasts:
        for m in specs:
            est = marg_point[(a, m.id)] - marg_point[(b, m.id)]
            reps = marg_reps[(a, m.id)] - marg_reps[(b, m.id)]
            jk = (jack[(a, m.id)] - jack[(b, m.id)]) if jack else None
            diffs[(a, b, m.id)] = _result(
                f"{m.id}:{a}-{b}", est, reps, jk, level=level, ci_method=ci_method,
                design=design, n_resamples=n_res, seed=seed, n=n, n_pos=n_pos, n_neg=n_neg,
                options={**dict(m.options), "contrast": [a, b], "rng": rec},
                jack_strata=jack_strata)
    return diffs


def _contrasts(names: Sequence[str], contrasts, what: str) -> list[tuple[str, str]]:
    if contrasts is None:
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    out = []
    for c in contrasts:
        if not (isinstance(c, (tuple, list)) and len(c) == 2):
            raise MedauditError(f"contrasts entries must be (a, b) pairs; got {c!r}.")
        for x in c:
            check_option(x, names, name=f"contrast {what}")
        if c[0] == c[1]:
            raise MedauditError(f"contrast {tuple(c)!r} compares a {what} with itself: its "
                                "difference is 0 in every replicate; list pairs of two "
                                f"different {what}s.")
        out.append((c[0], c[1]))
    return out


def paired_bootstrap(
    y_true: ArrayLike,
    scores: Mapping[str, ArrayLike],
    *,
    metrics: str | Sequence[Any] = ("roc_auc",),
    contrasts: Sequence[tuple[str, str]] | None = None,
    design: str = "ordinary",
    cluster: ArrayLike | None = None,
    strata: ArrayLike | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    ci_method: str = "percentile",
    rng: RNGLike = None,
    batch: int | None = None,
    replicate_range: tuple[int, int] | None = None,
) -> PairedBootstrapResult:
    """Paired bootstrap: one draw of images shared by several score vectors.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels shared by every score vector (the same images, same order).
    scores : mapping of str to array-like of shape (n_samples,)
        Score vectors by name (models, prompt families, ensembles).
    contrasts : sequence of (a, b), optional
        Differences ``metric(a) - metric(b)`` to report; default all pairs in order.
    design, cluster, strata, n_resamples, confidence_level, ci_method, rng, batch
        As in :func:`bootstrap_metrics`.
    replicate_range : (start, stop), optional
        Only replicates ``start`` to ``stop - 1`` of the ``n_resamples``-replicate run: the
        generator skips the draws of the first ``start`` (so they are the very replicates
        of the whole run), and each result carries those ``stop - start`` replicates with
        an interval of its own.  :func:`concat_paired` joins consecutive ranges into the
        result of the whole run, to the last bit; a long run can so be cut over workers.
        Percentile intervals only.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1]
    >>> s = [.1, .4, .35, .8, .2, .9]
    >>> r = paired_bootstrap(y, {"a": s, "b": s}, design="within_label", n_resamples=50, rng=1)
    >>> d = r.differences[("a", "b", "roc_auc")]
    >>> d.estimate, d.ci_low, d.ci_high
    (0.0, 0.0, 0.0)
    """
    n_res, level, ci_method, batch = _common_options(n_resamples, confidence_level, ci_method, batch)
    start, stop = _replicate_range(replicate_range, n_res, ci_method)
    specs = MS.parse_metrics(metrics)
    if not isinstance(scores, Mapping) or len(scores) < 1:
        raise MedauditError("scores must be a non-empty mapping of name -> score vector.")
    y, soft = _labels(y_true, specs)
    arrays = {str(k): _scores(v, specs, f"scores[{k!r}]") for k, v in scores.items()}
    for k, v in arrays.items():
        check_same_length(y_true=y, **{f"scores[{k!r}]": v})
    names = list(arrays)
    pairs = _contrasts(names, contrasts, "name")
    if design == "shared_positive":
        raise MedauditError("design='shared_positive' is run by shared_positive_bootstrap().")
    plan = make_plan(design, (y > 0.5).astype(np.float64) if soft else y,
                     cluster=cluster, strata=strata)
    gen, rec = as_generator(rng)
    need_conf = MS.needs_confidence(specs)
    prepared = {k: MS.Prepared.build(y, v, need_conf=need_conf, soft=soft)
                for k, v in arrays.items()}
    eng = _Engine(plan, prepared, specs)
    point, reps = eng.point(), eng.replicates(stop, gen, batch, start=start)
    jack = eng.jackknife(batch) if ci_method == "bca" else {}
    jack_strata = plan.jackknife_strata() if jack else None
    dname = f"{design}+paired"
    n_res = stop - start
    common = dict(level=level, ci_method=ci_method, design=dname, n_resamples=n_res,
                  seed=rec["seed"], n=int(y.size), n_pos=float(y.sum()),
                  n_neg=float(y.size - y.sum()), jack_strata=jack_strata)
    marginal = {(k, m.id): _result(m.id, point[(k, m.id)], reps[(k, m.id)], jack.get((k, m.id)),
                                   options={**dict(m.options), "score": k, "rng": rec}, **common)
                for k in names for m in specs}
    diffs = _differences(point, reps, jack, pairs, specs, level=level, ci_method=ci_method,
                         design=dname, n_res=n_res, seed=rec["seed"], n=int(y.size),
                         n_pos=float(y.sum()), n_neg=float(y.size - y.sum()), rec=rec,
                         jack_strata=jack_strata)
    return PairedBootstrapResult(marginal=marginal, differences=diffs, design=dname,
                                 n_resamples=n_res, seed=rec["seed"],
                                 options={"metrics": [m.id for m in specs], "rng": rec})


def _replicate_range(replicate_range, n_res: int, ci_method: str) -> tuple[int, int]:
    if replicate_range is None:
        return 0, n_res
    try:
        pair = tuple(replicate_range)
        # int() would truncate 0.5 to 0 and read True as 1: whole numbers only
        if len(pair) != 2 or any(isinstance(v, (bool, np.bool_)) or v != int(v) for v in pair):
            raise ValueError
        start, stop = (int(v) for v in pair)
    except (TypeError, ValueError, OverflowError):
        raise MedauditError(f"replicate_range must be a (start, stop) pair of integers; got "
                            f"{replicate_range!r}.") from None
    if not 0 <= start < stop <= n_res:
        raise MedauditError(f"replicate_range must satisfy 0 <= start < stop <= n_resamples "
                            f"({n_res}); got {replicate_range!r}.")
    if ci_method != "percentile":
        raise MedauditError("replicate_range needs ci_method='percentile' (a BCa interval needs "
                            "the jackknife of the whole run).")
    return start, stop


def _concat_results(parts: Sequence[BootstrapResult]) -> BootstrapResult:
    first = parts[0]
    for r in parts[1:]:
        if (r.metric, r.design, r.confidence_level, r.ci_method) != (
                first.metric, first.design, first.confidence_level, first.ci_method) or (
                not (r.estimate == first.estimate or (math.isnan(r.estimate)
                                                      and math.isnan(first.estimate)))):
            raise MedauditError(f"concat_paired: the parts of {first.metric!r} come from different "
                                "runs (metric, design, level or estimate differ).")
    reps = np.concatenate([r.replicates for r in parts])
    return _result(first.metric, first.estimate, reps, None, level=first.confidence_level,
                   ci_method=first.ci_method, design=first.design, n_resamples=int(reps.size),
                   seed=first.seed, n=first.n, n_pos=first.n_pos, n_neg=first.n_neg,
                   options=first.options)


def concat_paired(parts: Sequence[PairedBootstrapResult]) -> PairedBootstrapResult:
    """Join the results of consecutive replicate ranges into the result of the whole run.

    ``parts`` are :func:`paired_bootstrap` results of the same call with
    ``replicate_range`` ``(0, b1), (b1, b2), ...`` in order; the joined result is the one
    the call without ``replicate_range`` returns, to the last bit (same replicates, so the
    same percentile interval and degenerate count).

    Examples
    --------
    >>> y, s = [0, 0, 1, 1, 0, 1], {"a": [.1, .4, .35, .8, .2, .9], "b": [.2, .1, .5, .7, .3, .6]}
    >>> whole = paired_bootstrap(y, s, n_resamples=60, rng=4)
    >>> cut = concat_paired([paired_bootstrap(y, s, n_resamples=60, rng=4, replicate_range=r)
    ...                      for r in ((0, 25), (25, 60))])
    >>> d, e = whole.differences[("a", "b", "roc_auc")], cut.differences[("a", "b", "roc_auc")]
    >>> bool((d.replicates == e.replicates).all()), (d.ci_low, d.ci_high) == (e.ci_low, e.ci_high)
    (True, True)
    """
    parts = list(parts)
    if not parts:
        raise MedauditError("concat_paired needs at least one part.")
    first = parts[0]
    if len(parts) == 1:
        return first
    for r in parts[1:]:
        if set(r.marginal) != set(first.marginal) or set(r.differences) != set(first.differences):
            raise MedauditError("concat_paired: the parts have different score vectors, metrics "
                                "or contrasts; join ranges of one call only.")
    marginal = {k: _concat_results([r.marginal[k] for r in parts]) for k in first.marginal}
    diffs = {k: _concat_results([r.differences[k] for r in parts]) for k in first.differences}
    n_res = sum(r.n_resamples for r in parts)
    return PairedBootstrapResult(marginal=marginal, differences=diffs, design=first.design,
                                 n_resamples=n_res, seed=first.seed, options=first.options)


def _soft_shared(p_true_pos, p_true_negatives, pos, groups, soft_specs
                 ) -> NDArray[np.float64] | None:
    """Soft labels of the shared-positive layout (positives, then each group), or None.

    Membership stays as given (positives and the declared groups); the soft labels only
    enter the soft metrics, so both keywords come together and only with a soft metric.
    """
    given = (p_true_pos is not None, p_true_negatives is not None)
    names = [m.name for m in soft_specs]
    if not any(given):
        if soft_specs:
            raise MedauditError(
                f"soft metrics {names} need p_true_pos and p_true_negatives (the soft labels of "
                "the positives and of each negative group); membership stays hard.")
        return None
    if not all(given):
        missing = "p_true_negatives" if given[0] else "p_true_pos"
        raise MedauditError(f"soft labels come in pairs: {missing} is missing (give both "
                            "p_true_pos and p_true_negatives, or neither).")
    if not soft_specs:
        raise MedauditError("p_true_pos/p_true_negatives were given but no soft metric was asked "
                            "for; add soft_roc_auc or soft_average_precision to metrics, or drop "
                            "the soft labels.")
    if not isinstance(p_true_negatives, Mapping):
        raise MedauditError("p_true_negatives must be a mapping of group -> soft labels, with the "
                            "groups of negatives.")
    soft_neg = {str(k): v for k, v in p_true_negatives.items()}
    if set(soft_neg) != set(groups):
        raise MedauditError(
            f"p_true_negatives must have the groups of negatives: missing "
            f"{sorted(set(groups) - set(soft_neg))}, unknown {sorted(set(soft_neg) - set(groups))}.")
    pp = as_soft_labels(p_true_pos, name="p_true_pos")
    check_same_length(y_score_pos=pos, p_true_pos=pp)
    parts = [pp]
    for g, sg in groups.items():
        pg = as_soft_labels(soft_neg[g], name=f"p_true_negatives[{g!r}]")
        check_same_length(**{f"negatives[{g!r}]": sg, f"p_true_negatives[{g!r}]": pg})
        parts.append(pg)
    return np.concatenate(parts)


class _SharedPositive:
    """Evaluates every group of a shared-positive draw on its own items only.

    The metric of group ``G`` is the metric of ``P ∪ G``: its items are the positives and
    the group, in that input order (so ties break as in the concatenated vectors).  The
    counts are drawn into one column order, the positives by descending score and then
    each group's negatives by descending score (:attr:`column`, item -> column); a
    group's class-split layout is then the positives' columns followed by its own run of
    columns, read without touching the other groups' columns.  Each (group, label kind)
    has its work buffers, reused across batches.
    """

    def __init__(self, y, s, p_soft, strata, names, hard_specs, soft_specs):
        self.specs = [(kind, sp) for kind, sp in (("hard", hard_specs), ("soft", soft_specs)) if sp]
        n_pos = int(np.sum(strata == 0))
        # positives by descending score (stable: input order), then each group likewise
        by_score = K.argsort_stable(s, descending=True)
        order = np.concatenate([by_score[strata[by_score] == k] for k in range(len(names) + 1)])
        self.column = np.empty(s.size, dtype=np.intp)
        self.column[order] = np.arange(s.size)
        self.groups = []
        for i, g in enumerate(names):
            items = np.flatnonzero((strata == 0) | (strata == i + 1))
            yg, sg = y[items], s[items]
            preps = []
            for kind, sp in self.specs:
                if kind == "hard":
                    p = MS.Prepared.build(yg, sg, need_conf=MS.needs_confidence(sp))
                else:
                    p = MS.Prepared.build(p_soft[items], sg, need_conf=False, soft=True)
                cols = self.column[items[p.columns]]
                lo = int(cols[n_pos]) if cols.size > n_pos else 0
                # the group's layout is two runs of the drawn columns: copied, not gathered
                runs = (n_pos, lo, cols.size - n_pos) if np.array_equal(
                    cols, np.r_[np.arange(n_pos), np.arange(lo, lo + cols.size - n_pos)]) else None
                preps.append((p, sp, items[p.columns], cols, runs, {}))
            self.groups.append((g, preps))

    def __call__(self, w: NDArray, out: dict, *, drawn: bool = False) -> None:
        """Append every (group, metric) value of the rows ``w`` to ``out``; ``w`` holds
        counts in item order, or with ``drawn`` in :attr:`column` order."""
        for g, preps in self.groups:
            for p, sp, items, cols, runs, scratch in preps:
                if not drawn:
                    wc = np.take(w, items, axis=1)
                elif runs is not None:
                    n_pos, lo, n_g = runs
                    buf = scratch.get("w")
                    if buf is None or buf.shape[0] < w.shape[0] or buf.dtype != w.dtype:
                        buf = scratch["w"] = np.empty((w.shape[0], n_pos + n_g), dtype=w.dtype)
                    wc = buf[:w.shape[0]]
                    wc[:, :n_pos] = w[:, :n_pos]
                    wc[:, n_pos:] = w[:, lo:lo + n_g]
                else:
                    wc = np.take(w, cols, axis=1)
                for mid, v in MS.evaluate_columns(p, sp, wc, scratch).items():
                    out.setdefault((g, mid), []).append(v)


def shared_positive_bootstrap(
    y_score_pos: ArrayLike,
    negatives: Mapping[str, ArrayLike],
    *,
    metrics: str | Sequence[Any] = ("roc_auc",),
    contrasts: Sequence[tuple[str, str]] | None = None,
    p_true_pos: ArrayLike | None = None,
    p_true_negatives: Mapping[str, ArrayLike] | None = None,
    n_resamples: int = 2000,
    confidence_level: float = 0.95,
    ci_method: str = "percentile",
    rng: RNGLike = None,
    batch: int | None = None,
) -> PairedBootstrapResult:
    """Shared-positive bootstrap for negative-spectrum contrasts (paper 000, B-SHAREDPOS).

    Each replicate resamples the positives once (shared by every contrast) and each
    negative group independently within itself; the metric for group ``G`` is
    computed on ``P ∪ G``.

    Parameters
    ----------
    y_score_pos : array-like of shape (n_pos,)
        Scores of the shared positives.
    negatives : mapping of str to array-like
        Scores of each negative (control) group, e.g. ``{"healthy": ..., "sick": ...}``.
    metrics : str or sequence, default=("roc_auc",)
        As in :func:`bootstrap_metrics`.  ``soft_roc_auc`` and ``soft_average_precision``
        need ``p_true_pos`` and ``p_true_negatives`` and may share the call with hard-label
        metrics: every metric is evaluated on the same replicate weights.
    contrasts : sequence of (a, b), optional
        Group differences ``metric(P, a) - metric(P, b)``; default all pairs.
    p_true_pos : array-like of shape (n_pos,), optional
        Soft labels (in [0, 1]) of the positives, for the soft metrics only.
    p_true_negatives : mapping of str to array-like, optional
        Soft labels of each negative group (the keys of ``negatives``), for the soft
        metrics only.  Membership stays hard: the strata resampled are the positives
        and each declared group whatever the soft labels say, and the hard-label
        metrics keep labels 1 (positives) and 0 (groups); inside ``P ∪ G`` each item
        then carries its own soft label in the soft metrics.  Soft results report the
        soft positive mass of their items as ``n_pos`` (``n_neg = n - n_pos``), as
        :func:`bootstrap_metrics` does for soft labels.
    n_resamples, confidence_level, ci_method, rng, batch
        As in :func:`bootstrap_metrics`.

    Examples
    --------
    >>> r = shared_positive_bootstrap([0.9, 0.8, 0.7], {"healthy": [0.1, 0.2],
    ...                               "sick": [0.75, 0.85]}, n_resamples=100, rng=3)
    >>> r.marginal[("healthy", "roc_auc")].estimate, r.marginal[("sick", "roc_auc")].estimate
    (1.0, 0.5)
    >>> r.differences[("healthy", "sick", "roc_auc")].estimate
    0.5
    >>> q = shared_positive_bootstrap([0.9, 0.8, 0.7], {"healthy": [0.1, 0.2],
    ...                               "sick": [0.75, 0.85]}, metrics=["roc_auc", "soft_roc_auc"],
    ...                               p_true_pos=[1, 1, 1], p_true_negatives={"healthy": [0, 0],
    ...                               "sick": [0, 0]}, n_resamples=100, rng=3)
    >>> bool((q.differences[("healthy", "sick", "soft_roc_auc")].replicates
    ...       == r.differences[("healthy", "sick", "roc_auc")].replicates).all())
    True
    """
    n_res, level, ci_method, batch = _common_options(n_resamples, confidence_level, ci_method, batch)
    specs = MS.parse_metrics(metrics)
    hard_specs = [m for m in specs if m.name not in MS.SOFT_METRICS]
    soft_specs = [m for m in specs if m.name in MS.SOFT_METRICS]
    if not isinstance(negatives, Mapping) or len(negatives) < 1:
        raise MedauditError("negatives must be a non-empty mapping of group -> scores.")
    def conv(v, n):
        return _scores(v, specs, n)

    pos = conv(y_score_pos, "y_score_pos")
    groups = {str(k): conv(v, f"negatives[{k!r}]") for k, v in negatives.items()}
    names = list(groups)
    pairs = _contrasts(names, contrasts, "group")
    p_soft = _soft_shared(p_true_pos, p_true_negatives, pos, groups, soft_specs)
    s = np.concatenate([pos, *groups.values()])
    y = np.concatenate([np.ones(pos.size), np.zeros(s.size - pos.size)])
    strata = np.concatenate([np.zeros(pos.size, dtype=np.intp)] + [
        np.full(v.size, i + 1, dtype=np.intp) for i, v in enumerate(groups.values())])
    plan = make_plan("shared_positive", y, strata=strata)
    gen, rec = as_generator(rng)
    masks = {g: ((strata == 0) | (strata == i + 1)).astype(np.float64) for i, g in enumerate(names)}
    evaluate = _SharedPositive(y, s, p_soft, strata, names, hard_specs, soft_specs)

    base: dict[tuple[str, str], list] = {}
    evaluate(np.ones((1, s.size)), base)
    point = {k: float(v[0][0]) for k, v in base.items()}
    reps: dict[tuple[str, str], list] = {}
    for w in plan.batches(n_res, gen, batch, columns=evaluate.column):
        evaluate(w, reps, drawn=True)
    rep_arr = {k: np.concatenate(v) for k, v in reps.items()}
    jack: dict = {}
    if ci_method == "bca":
        for w in plan.jackknife(batch):
            evaluate(w, jack)
        jack = {k: np.concatenate(v) for k, v in jack.items()}
    jack_strata = plan.jackknife_strata() if jack else None
    soft_ids = {m.id for m in soft_specs}

    def counts(keep: NDArray[np.bool_], m) -> tuple[float, float]:
        """(n_pos, n_neg) of the items ``keep``: image counts, or the soft mass."""
        n_pos = float(p_soft[keep].sum()) if m.id in soft_ids else float(y[keep].sum())
        return n_pos, float(keep.sum()) - n_pos

    marginal = {}
    for g in names:
        keep = masks[g] > 0
        for m in specs:
            n_pos, n_neg = counts(keep, m)
            marginal[(g, m.id)] = _result(
                m.id, point[(g, m.id)], rep_arr[(g, m.id)], jack.get((g, m.id)), level=level,
                ci_method=ci_method, design="shared_positive", n_resamples=n_res,
                seed=rec["seed"], n=int(keep.sum()), n_pos=n_pos, n_neg=n_neg,
                options={**dict(m.options), "negative_group": g, "rng": rec},
                jack_strata=jack_strata)
    diffs = {}
    everything = np.ones(s.size, dtype=bool)
    for part in (hard_specs, soft_specs):
        if not part:
            continue
        n_pos, n_neg = counts(everything, part[0])
        diffs.update(_differences(point, rep_arr, jack, pairs, part, level=level,
                                  ci_method=ci_method, design="shared_positive", n_res=n_res,
                                  seed=rec["seed"], n=int(s.size), n_pos=n_pos, n_neg=n_neg,
                                  rec=rec, jack_strata=jack_strata))
    diffs = {(a, b, m.id): diffs[(a, b, m.id)] for a, b in pairs for m in specs}
    return PairedBootstrapResult(marginal=marginal, differences=diffs, design="shared_positive",
                                 n_resamples=n_res, seed=rec["seed"],
                                 options={"metrics": [m.id for m in specs], "groups": names,
                                          "rng": rec})
