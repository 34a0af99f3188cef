"""Metric registry for the resampling engine: ids, options and kernels on weights."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from medaudit._validation import check_fraction, check_option, shown
from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX
from medaudit.stats.soft import soft_metric_options


@dataclass(frozen=True)
class Prepared:
    """A labelled score vector, sorted once for ranking and once for confidence.

    ``columns`` (column -> item) is the order in which the engine wants its count
    matrices: the class-split :class:`~medaudit.stats._kernels.Layout` for hard labels
    (every hard-label metric reads it in one pass), the descending score order for soft
    labels.  ``WeightPlan.batches(columns=...)`` draws straight into it.
    """

    y: NDArray[np.float64]
    s: NDArray[np.float64]
    ranked: K.Ranked
    conf: K.ConfidenceRanked | None
    soft: bool = False
    placement: K.Placement | None = None
    layout: K.Layout | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, y, s, *, need_conf: bool, soft: bool = False) -> Prepared:
        r = K.rank(y, s)
        cr = K.rank_confidence(y, s) if need_conf else None
        if soft:
            return cls(y, s, r, cr, True)
        return cls(y, s, r, cr, False, K.placement(y, s), K.layout(y, s, r, cr))

    @property
    def columns(self) -> NDArray[np.intp]:
        return self.layout.order if self.layout is not None else self.ranked.order

    def column_of(self) -> NDArray[np.intp]:
        """item -> column of :attr:`columns` (its inverse permutation)."""
        if "column_of" not in self._cache:
            inv = np.empty(self.y.size, dtype=np.intp)
            inv[self.columns] = np.arange(self.y.size)
            self._cache["column_of"] = inv
        return self._cache["column_of"]

    def per_column(self, key, fn):
        """A per-item vector ``fn(self)`` in column order, computed once."""
        if key not in self._cache:
            self._cache[key] = np.ascontiguousarray(fn(self)[self.columns])
        return self._cache[key]


@dataclass(frozen=True)
class MetricSpec:
    """One metric with its options; ``id`` is the stable name used in result tables."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        if not self.options:
            return self.name
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return f"{self.name}[{opts}]"


def _prev(o):
    return o.get("prevalence")


def _loss_sq(p: Prepared):
    return (p.s - p.y) ** 2


def _loss_log(p: Prepared, eps: float):
    c = np.clip(p.s, eps, 1 - eps)
    return -(p.y * np.log(c) + (1 - p.y) * np.log1p(-c))


def _points(cache: dict, wr, p: Prepared):
    """ROC points of the current weight rows, computed once per evaluation."""
    if "roc_points" not in cache:
        cache["roc_points"] = K._roc_points(wr(), p.ranked)
    return cache["roc_points"]


def _rates_layout(p: Prepared, t: K.LayoutSums, tau: float):
    """Se and Sp at a fixed threshold: the classes' columns with s >= tau are prefixes."""
    lay = p.layout
    m_p = int(np.count_nonzero(lay.score[:lay.n_pos] >= tau))
    m_n = int(np.count_nonzero(lay.score[lay.n_pos:] >= tau))
    tp = t.c[:, m_p]
    fp = t.c[:, lay.n_pos + m_n] - t.w_pos
    n_pos = t.w_pos.astype(np.float64)
    n_neg = t.w_neg.astype(np.float64)
    return K._safe_div(tp, n_pos), K._safe_div(t.w_neg - fp, n_neg)


def _soft(o: Mapping[str, Any], metric: str) -> tuple[str, str]:
    return soft_metric_options(metric, variant=o.get("variant"), ties=o.get("ties"))


def _conf_fast(fn):
    """A confidence kernel on the layout, or None (general path) when the confidence
    order is not expressible as layout intervals (see ``K._confidence_cuts``)."""
    return lambda p, t, o: fn(p, t, o) if p.layout.cuts is not None else None


# name -> (needs probabilities, needs confidence sort, allowed options, kernel, layout kernel)
# kernel(prepared, w_original, w_ranked, w_conf, options, cache) -> (B,) values: any labels
# layout kernel(prepared, LayoutSums, options) -> (B,) values, or None to use the kernel
_Kernel = Callable[[Prepared, Any, Any, Any, Mapping[str, Any], dict], NDArray[np.float64]]
_LayoutKernel = Callable[[Prepared, K.LayoutSums, Mapping[str, Any]], NDArray[np.float64] | None]
REGISTRY: dict[str, tuple[bool, bool, tuple[str, ...], _Kernel, _LayoutKernel | None]] = {
    "roc_auc": (False, False, (), lambda p, w, wr, wc, o, c: (
        K.auroc_placement(w(), p.placement) if p.placement is not None else K.auroc(wr(), p.ranked)),
        lambda p, t, o: K.auroc_layout(t)),
    "average_precision": (False, False, ("ties",), lambda p, w, wr, wc, o, c: (
        K.average_precision_grouped(wr(), p.ranked) if o.get("ties", "individual") == "pooled"
        else K.average_precision_stable(wr(), p.ranked)),
        lambda p, t, o: (K.average_precision_pooled_layout(t) if o.get("ties") == "pooled"
                         else K.average_precision_layout(t))),
    "soft_roc_auc": (False, False, ("variant", "ties"), lambda p, w, wr, wc, o, c: (
        K.soft_auroc_grouped(wr(), p.ranked, _soft(o, "soft_roc_auc")[0])
        if _soft(o, "soft_roc_auc")[1] == "grouped"
        else K.soft_auroc_stable(wr(), p.ranked, _soft(o, "soft_roc_auc")[0])), None),
    "soft_average_precision": (False, False, ("variant", "ties"), lambda p, w, wr, wc, o, c: (
        K.soft_ap_grouped(wr(), p.ranked, _soft(o, "soft_average_precision")[0])
        if _soft(o, "soft_average_precision")[1] == "grouped"
        else K.average_precision_stable(wr(), p.ranked, _soft(o, "soft_average_precision")[0])),
        None),
    "brier_score": (True, False, ("prevalence",), lambda p, w, wr, wc, o, c: K.mean_loss(
        w(), p.y, _loss_sq(p), _prev(o)),
        lambda p, t, o: K.mean_loss_layout(t, p.per_column("sq", _loss_sq), _prev(o))),
    "log_loss": (True, False, ("prevalence", "eps"), lambda p, w, wr, wc, o, c: K.mean_loss(
        w(), p.y, _loss_log(p, o.get("eps", 1e-15)), _prev(o)),
        lambda p, t, o: K.mean_loss_layout(t, p.per_column(
            ("log", o.get("eps", 1e-15)), lambda q: _loss_log(q, o.get("eps", 1e-15))), _prev(o))),
    "ece": (True, False, ("n_bins", "prevalence", "binning"), lambda p, w, wr, wc, o, c: K.ece(
        wr(), p.ranked, int(o.get("n_bins", 15)), _prev(o), o.get("binning", "floor")),
        lambda p, t, o: K.ece_layout(t, int(o.get("n_bins", 15)), _prev(o),
                                     o.get("binning", "floor"))),
    "aurc": (True, True, (), lambda p, w, wr, wc, o, c: K.aurc(wc(), p.conf),
             _conf_fast(lambda p, t, o: K.aurc_layout(t))),
    "selective_risk": (True, True, ("coverage",), lambda p, w, wr, wc, o, c: K.selective_risk(
        wc(), p.conf, float(o["coverage"])),
        _conf_fast(lambda p, t, o: K.selective_risk_layout(t, float(o["coverage"])))),
    "sensitivity_at_specificity": (False, False, ("min_specificity",), lambda p, w, wr, wc, o, c:
                                   K.se_at_sp(wr(), p.ranked, float(o.get("min_specificity", 0.95)),
                                             points=_points(c, wr, p)),
                                   lambda p, t, o: K.se_at_sp_layout(
                                       t, float(o.get("min_specificity", 0.95)))),
    "specificity_at_sensitivity": (False, False, ("min_sensitivity",), lambda p, w, wr, wc, o, c:
                                   K.sp_at_se(wr(), p.ranked, float(o.get("min_sensitivity", 0.95)),
                                             points=_points(c, wr, p)),
                                   lambda p, t, o: K.sp_at_se_layout(
                                       t, float(o.get("min_sensitivity", 0.95)))),
    "sensitivity": (False, False, ("threshold",), lambda p, w, wr, wc, o, c: K.rates_at(
        wr(), p.ranked, float(o["threshold"]))[0],
        lambda p, t, o: _rates_layout(p, t, float(o["threshold"]))[0]),
    "specificity": (False, False, ("threshold",), lambda p, w, wr, wc, o, c: K.rates_at(
        wr(), p.ranked, float(o["threshold"]))[1],
        lambda p, t, o: _rates_layout(p, t, float(o["threshold"]))[1]),
}
_FLOAT_PASSES = ("brier_score", "log_loss", "ece")  # metrics reading every count once, as floats
SOFT_METRICS = ("soft_roc_auc", "soft_average_precision")
_REQUIRED = {"selective_risk": ("coverage",), "sensitivity": ("threshold",),
             "specificity": ("threshold",)}
# partial AUC, rates at a threshold and cut-points (issue 17): kernels in _kernels_extra, which
# take the weight rows in item order as an array (not the lazy getter) and have no layout kernel
REGISTRY.update({name: (prob, conf, opts, lambda p, w, wr, wc, o, c, _f=kernel: _f(p, w(), wr, wc, o, c),
                        None)
                 for name, (prob, conf, opts, kernel) in KX.REGISTRY_EXTRA.items()})
_REQUIRED.update(KX.REQUIRED_EXTRA)


#: names people write for a metric (the report's words, other tools' names), lower case:
#: refused with the id to write instead, never read silently as another metric
ALIASES = {"auroc": "roc_auc", "auc": "roc_auc", "roc": "roc_auc", "rocauc": "roc_auc",
           "roc_auc_score": "roc_auc", "c_statistic": "roc_auc", "c_index": "roc_auc",
           "ap": "average_precision", "auprc": "average_precision", "pr_auc": "average_precision",
           "average_precision_score": "average_precision", "brier": "brier_score",
           "brier_score_loss": "brier_score", "logloss": "log_loss", "cross_entropy": "log_loss",
           "se": "sensitivity", "sens": "sensitivity", "recall": "sensitivity", "tpr": "sensitivity",
           "sp": "specificity", "spec": "specificity", "tnr": "specificity",
           "precision": "ppv", "s_auroc": "soft_roc_auc", "s_ap": "soft_average_precision",
           "partial_auc": "pauc", "f1_score": "f1", "balanced_accuracy_score": "balanced_accuracy"}


def alias_error(name: str) -> None:
    """Raise, naming the id to write, where ``name`` (before any ``[options]``) is another
    tool's or the report's word for a registered metric (``AUROC``, ``auc``, ``brier``)."""
    base = name.split("[", 1)[0].strip()
    alias = ALIASES.get(base.lower().replace("-", "_").replace(" ", "_"))
    if base not in REGISTRY and (alias is not None or base.lower() in REGISTRY):
        want = alias or base.lower()
        raise MedauditError(f"metric {name[:80]!r} is written {want!r} in medaudit (the id every "
                            f"table prints); write metric: {want}.")


def _shown_metric(x: Any) -> str:
    if callable(x) and hasattr(x, "__name__"):
        return f"the function {x.__name__}"
    return f"{type(x).__name__} {x!r}"[:120]


def parse_metrics(metrics: str | Sequence[Any], *, name: str = "metrics") -> list[MetricSpec]:
    """Parse ``"roc_auc"``, ``("ece", {"n_bins": 10})`` or a list of these into specs."""
    if isinstance(metrics, (str, MetricSpec)) or (
            isinstance(metrics, tuple) and len(metrics) == 2 and isinstance(metrics[1], Mapping)):
        items = [metrics]
    elif isinstance(metrics, (Sequence, set, frozenset)) or (
            isinstance(metrics, np.ndarray) and metrics.ndim == 1):
        items = list(metrics)
    else:  # a function (scikit-learn's roc_auc_score, say), a number, None, a mapping
        raise MedauditError(
            f"{name} must be a metric name, (name, options) or a list of these; got "
            f"{_shown_metric(metrics)}. medaudit evaluates its own registered metrics inside "
            "the resampling engine: write 'roc_auc', not a function.")
    if not items:
        raise MedauditError("metrics is empty; name at least one metric.")
    out: list[MetricSpec] = []
    for item in items:
        if isinstance(item, MetricSpec):
            spec = item
        elif isinstance(item, str):
            spec = MetricSpec(str(item))  # str(): a numpy string becomes a plain one
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
            spec = MetricSpec(item[0], dict(item[1]))
        else:
            raise MedauditError(f"metrics entries must be a name or (name, options); got "
                                f"{_shown_metric(item)}.")
        if spec.name not in REGISTRY:
            alias_error(spec.name)
        check_option(spec.name, tuple(REGISTRY), name="metric")
        allowed = REGISTRY[spec.name][2]
        for key in spec.options:
            check_option(key, allowed or ("(no options)",), name=f"{spec.name} option")
        for key in _REQUIRED.get(spec.name, ()):
            if key not in spec.options:
                raise MedauditError(f"metric {spec.name!r} needs option {key!r}, e.g. "
                                    f"({spec.name!r}, {{{key!r}: 0.9}}).")
        _check_values(spec)
        out.append(spec)
    ids = [m.id for m in out]
    if len(set(ids)) != len(ids):
        raise MedauditError(f"metrics lists a metric twice: {ids}.")
    return out


def _check_values(spec: MetricSpec) -> None:
    o = spec.options
    if "prevalence" in o and o["prevalence"] is not None:
        check_fraction(o["prevalence"], name=f"{spec.name} prevalence")
    if "coverage" in o:
        check_fraction(o["coverage"], name=f"{spec.name} coverage", closed="right")
    for k in ("min_specificity", "min_sensitivity"):
        if k in o:
            check_fraction(o[k], name=f"{spec.name} {k}", closed="both")
    if spec.name in SOFT_METRICS:  # the one rule for soft options (stats.soft)
        soft_metric_options(spec.name, variant=o.get("variant"), ties=o.get("ties"))
    elif "ties" in o:
        check_option(o["ties"], ("individual", "pooled"), name=f"{spec.name} ties")
    if "binning" in o and spec.name not in KX.REGISTRY_EXTRA:  # theirs: checked by KX below
        check_option(o["binning"], K.BINNINGS, name=f"{spec.name} binning")
    if "n_bins" in o and (not isinstance(o["n_bins"], (int, np.integer)) or o["n_bins"] < 1):
        raise MedauditError(f"{spec.name} n_bins must be a positive integer; got {shown(o['n_bins'])}.")
    if spec.name in KX.REGISTRY_EXTRA:
        KX.check_values(spec)
    elif "threshold" in o:  # sensitivity / specificity at a fixed threshold
        KX.check_threshold(spec)


def needs_probabilities(specs: Sequence[MetricSpec]) -> bool:
    return any(REGISTRY[m.name][0] for m in specs)


def needs_confidence(specs: Sequence[MetricSpec]) -> bool:
    return any(REGISTRY[m.name][1] for m in specs)


def evaluate(p: Prepared, specs: Sequence[MetricSpec], w: NDArray[np.float64]
             ) -> dict[str, NDArray[np.float64]]:
    """Evaluate every metric on weight rows ``w`` (original item order)."""
    return evaluate_columns(p, specs, np.take(np.atleast_2d(w), p.columns, axis=1))


def evaluate_columns(p: Prepared, specs: Sequence[MetricSpec], wc: NDArray,
                     scratch: dict | None = None) -> dict[str, NDArray[np.float64]]:
    """Evaluate every metric on weight rows ``wc`` laid out in ``p.columns`` order.

    Hard labels: every metric with a layout kernel reads one shared cumulative sum
    (kept in ``scratch``, when given, and reused by the next batch); the others, and the soft metrics, get the
    rows gathered into the order they read, once per order.
    """
    cache: dict[str, Any] = {}

    def lazy(key, order):
        def get():
            if key not in cache:  # C order: cumsums then run along contiguous rows
                cache[key] = np.take(wc, p.column_of()[order], axis=1)
            return cache[key]
        return get

    w_orig = lazy("original", np.arange(p.y.size))
    wr = (lambda: wc) if p.layout is None else lazy("ranked", p.ranked.order)
    wconf = lazy("conf", p.conf.order) if p.conf is not None else None
    sums = None
    if p.layout is not None:
        passes = sum(m.name in _FLOAT_PASSES for m in specs)
        sums = K.LayoutSums(wc, p.layout, scratch, float_passes=passes)
    c: dict[str, Any] = {}
    out = {}
    # every kernel returns nan itself where its metric is undefined (a class with zero
    # weight), through _safe_div or an explicit class check, so no extra pass is needed
    for m in specs:
        _, _, _, general, fast = REGISTRY[m.name]
        v = fast(p, sums, m.options) if (fast is not None and sums is not None) else None
        if v is None:
            v = general(p, w_orig, wr, wconf, m.options, c)
        out[m.id] = np.asarray(v, dtype=np.float64)
    return out
