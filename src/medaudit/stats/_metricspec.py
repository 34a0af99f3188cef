"""Metric registry for the resampling engine: ids, options and kernels on weights."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from medaudit._validation import check_fraction, check_option
from medaudit.exceptions import MedauditError
from medaudit.stats import _kernels as K
from medaudit.stats import _kernels_extra as KX


@dataclass(frozen=True)
class Prepared:
    """A labelled score vector, sorted once for ranking and once for confidence."""

    y: NDArray[np.float64]
    s: NDArray[np.float64]
    ranked: K.Ranked
    conf: K.ConfidenceRanked | None
    soft: bool = False
    placement: K.Placement | None = None

    @classmethod
    def build(cls, y, s, *, need_conf: bool, soft: bool = False) -> Prepared:
        return cls(y, s, K.rank(y, s), K.rank_confidence(y, s) if need_conf else None, soft,
                   None if soft else K.placement(y, s))


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


# name -> (needs probabilities, needs confidence sort, allowed options, kernel)
# kernel(prepared, w_original, w_ranked, w_conf, options) -> (B,) values
_Kernel = Callable[[Prepared, Any, Any, Any, Mapping[str, Any], dict], NDArray[np.float64]]
REGISTRY: dict[str, tuple[bool, bool, tuple[str, ...], _Kernel]] = {
    "roc_auc": (False, False, (), lambda p, w, wr, wc, o, c: (
        K.auroc_placement(w, p.placement) if p.placement is not None else K.auroc(wr(), p.ranked))),
    "average_precision": (False, False, ("ties",), lambda p, w, wr, wc, o, c: (
        K.average_precision_grouped(wr(), p.ranked) if o.get("ties", "individual") == "pooled"
        else K.average_precision_stable(wr(), p.ranked))),
    "soft_roc_auc": (False, False, ("variant", "ties"), lambda p, w, wr, wc, o, c: (
        K.auroc(wr(), p.ranked) if o.get("ties", "stable") == "grouped"
        else K.soft_auroc_stable(wr(), p.ranked, o.get("variant", "inclusive")))),
    "soft_average_precision": (False, False, ("ties",), lambda p, w, wr, wc, o, c: (
        K.average_precision_grouped(wr(), p.ranked) if o.get("ties", "stable") == "grouped"
        else K.average_precision_stable(wr(), p.ranked))),
    "brier_score": (True, False, ("prevalence",), lambda p, w, wr, wc, o, c: K.mean_loss(
        w, p.y, _loss_sq(p), _prev(o))),
    "log_loss": (True, False, ("prevalence", "eps"), lambda p, w, wr, wc, o, c: K.mean_loss(
        w, p.y, _loss_log(p, o.get("eps", 1e-15)), _prev(o))),
    "ece": (True, False, ("n_bins", "prevalence"), lambda p, w, wr, wc, o, c: K.ece(
        wr(), p.ranked, int(o.get("n_bins", 15)), _prev(o))),
    "aurc": (True, True, (), lambda p, w, wr, wc, o, c: K.aurc(wc(), p.conf)),
    "selective_risk": (True, True, ("coverage",), lambda p, w, wr, wc, o, c: K.selective_risk(
        wc(), p.conf, float(o["coverage"]))),
    "sensitivity_at_specificity": (False, False, ("min_specificity",), lambda p, w, wr, wc, o, c:
                                   K.se_at_sp(wr(), p.ranked, float(o.get("min_specificity", 0.95)),
                                             points=_points(c, wr, p))),
    "specificity_at_sensitivity": (False, False, ("min_sensitivity",), lambda p, w, wr, wc, o, c:
                                   K.sp_at_se(wr(), p.ranked, float(o.get("min_sensitivity", 0.95)),
                                             points=_points(c, wr, p))),
    "sensitivity": (False, False, ("threshold",), lambda p, w, wr, wc, o, c: K.rates_at(
        wr(), p.ranked, float(o["threshold"]))[0]),
    "specificity": (False, False, ("threshold",), lambda p, w, wr, wc, o, c: K.rates_at(
        wr(), p.ranked, float(o["threshold"]))[1]),
}
SOFT_METRICS = ("soft_roc_auc", "soft_average_precision")
_REQUIRED = {"selective_risk": ("coverage",), "sensitivity": ("threshold",),
             "specificity": ("threshold",)}
# partial AUC, rates at a threshold and cut-points (issue 17): kernels in _kernels_extra
REGISTRY.update(KX.REGISTRY_EXTRA)
_REQUIRED.update(KX.REQUIRED_EXTRA)


def parse_metrics(metrics: str | Sequence[Any]) -> list[MetricSpec]:
    """Parse ``"roc_auc"``, ``("ece", {"n_bins": 10})`` or a list of these into specs."""
    items = [metrics] if isinstance(metrics, (str, MetricSpec)) or (
        isinstance(metrics, tuple) and len(metrics) == 2 and isinstance(metrics[1], Mapping)
    ) else list(metrics)
    if not items:
        raise MedauditError("metrics is empty; name at least one metric.")
    out: list[MetricSpec] = []
    for item in items:
        if isinstance(item, MetricSpec):
            spec = item
        elif isinstance(item, str):
            spec = MetricSpec(item)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
            spec = MetricSpec(item[0], dict(item[1]))
        else:
            raise MedauditError(f"metrics entries must be a name or (name, options); got {item!r}.")
        check_option(spec.name, tuple(REGISTRY), name="metric")
        allowed = REGISTRY[spec.name][2]
        for key in spec.options:
            check_option(key, allowed or ("(no options)",), name=f"option of metric {spec.name!r}")
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
    if "ties" in o:
        allowed = ("individual", "pooled") if spec.name == "average_precision" else (
            "stable", "grouped")
        check_option(o["ties"], allowed, name=f"{spec.name} ties")
    if "variant" in o:
        check_option(o["variant"], ("inclusive", "strict", "trapezoid"), name="variant")
    if "n_bins" in o and (not isinstance(o["n_bins"], (int, np.integer)) or o["n_bins"] < 1):
        raise MedauditError(f"{spec.name} n_bins must be a positive integer; got {o['n_bins']!r}.")
    if spec.name in KX.REGISTRY_EXTRA:
        KX.check_values(spec)


def needs_probabilities(specs: Sequence[MetricSpec]) -> bool:
    return any(REGISTRY[m.name][0] for m in specs)


def needs_confidence(specs: Sequence[MetricSpec]) -> bool:
    return any(REGISTRY[m.name][1] for m in specs)


def evaluate(p: Prepared, specs: Sequence[MetricSpec], w: NDArray[np.float64]
             ) -> dict[str, NDArray[np.float64]]:
    """Evaluate every metric on weight rows ``w`` (original item order); one gather per order."""
    w2 = np.atleast_2d(w)
    cache: dict[str, Any] = {}

    def lazy(key, order):
        def get():
            if key not in cache:  # C order: cumsums then run along contiguous rows
                cache[key] = np.take(w2, order, axis=1)
            return cache[key]
        return get

    wr = lazy("ranked", p.ranked.order)
    wc = lazy("conf", p.conf.order) if p.conf is not None else None
    c: dict[str, Any] = {}
    # every kernel returns nan itself where its metric is undefined (a class with zero
    # weight), through _safe_div or an explicit class check, so no extra pass is needed
    return {m.id: np.asarray(REGISTRY[m.name][3](p, w2, wr, wc, m.options, c), dtype=np.float64)
            for m in specs}
