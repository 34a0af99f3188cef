"""Within-cohort operating points per model and cohort (paper 000 M0.7, Table 5), and what
pROC / scikit-learn / statsmodels users read at a threshold, on a curve and about calibration.

Always (the section may be empty, ``operating_points: {}``): at the primary prompt, for
every cohort and model, sensitivity at specificity >= 0.95 and specificity at sensitivity
>= 0.95 on the cohort's own ROC curve (decision ``s >= t``, t over the observed scores and
+inf; these are NOT transported thresholds), and selective risk at coverage 0.8 and 0.9
(confidence ``max(s, 1 - s)``, decision ``s >= 0.5``, k = ceil(c n)).  Intervals come from
one :func:`~medaudit.stats.paired_bootstrap` call per cohort shared by all models (design
``ctx.cohort_design(cohort)``); the operating point is re-chosen in every replicate.

Table ``operating_points``: one row per cohort x model x criterion
(``sensitivity_at_specificity[min_specificity=0.95]``,
``specificity_at_sensitivity[min_sensitivity=0.95]``, ``selective_risk[coverage=0.8]``,
``selective_risk[coverage=0.9]``).  ``threshold`` is ``None`` for the two ROC operating
points (chosen within the cohort) and 0.5 (the decision threshold) for selective risk.
Table ``risk_coverage``: the risk-coverage curves at about 101 coverages.

When the spec asks (each key off by default, so an audit that does not ask writes exactly
the tables above)::

    operating_points:
      thresholds: [0.5]                  # declared thresholds (score units; .inf allowed)
      rules: [youden, {rule: closest_topleft, cost: 2, prevalence: 0.1}]
      prevalence: 0.1                    # PPV and NPV also re-expressed at this prevalence
      proportion_methods: [wilson, clopper_pearson, agresti_coull]
      partial_auc: [{specificity: [0.9, 1]}, {sensitivity: [0.9, 1], correct: true}]
      curves: true                       # or {grid: 101, band: true, drop_intermediate: false}
      calibration: true                  # or {bins: equal_mass, n_bins: 10, slope: true, eps: null}

* ``thresholds`` / ``rules`` -> table ``threshold_metrics``: at every declared threshold and
  at the threshold each rule chooses on the cohort itself (:func:`~medaudit.stats.best_threshold`:
  Youden's J or closest-to-(0, 1), ``cost``/``prevalence`` = pROC's ``best.weights``; ties go
  to the highest threshold), one row per cohort x model x threshold x rate: sensitivity,
  specificity, ppv, npv, lr_positive, lr_negative, f1, accuracy, balanced_accuracy (and ppv,
  npv with E's ``prevalence`` set to the declared one).  ``estimate`` and the bootstrap
  interval come from the cohort's paired cell (the threshold held fixed in every replicate);
  beside them ``count``/``nobs`` and the exact or score interval of each
  ``proportion_methods`` entry (``wilson_low``, ``wilson_high``, ...) for the rates that are
  proportions of counts (Se, Sp, accuracy, PPV and NPV at the sample's prevalence; NaN for
  the others).  Column ``threshold_rule``: ``declared`` or the rule's label.
* ``rules`` -> table ``cutpoints``: the chosen threshold with its interval (every replicate
  re-applies the rule; order-statistic ends, as :func:`~medaudit.stats.best_threshold_ci`) and
  the Se and Sp at the re-chosen threshold (criteria ``cutpoint_threshold[...]``,
  ``cutpoint_sensitivity[...]``, ``cutpoint_specificity[...]``), with ``tied_thresholds``.
* ``partial_auc`` -> tables ``partial_auc`` (criterion ``pauc[sp=0.9:1]`` etc., McClish's
  standardisation with ``correct: true``) and ``partial_auc_differences`` (every model pair
  ``A - B`` from the same paired draws, criterion ``pauc_difference[sp=0.9:1]``, ``verdict``).
* ``curves`` -> tables ``roc_curve`` and ``pr_curve`` (coordinates at every observed
  threshold, point estimates) and ``roc_band`` (sensitivity at ``grid`` specificities from 0
  to 1 with pointwise percentile bands, pROC's ``ci.se``; design the cohort's) and
  ``pr_band`` (precision at ``grid`` recalls, :func:`~medaudit.stats.precision_recall_band`,
  read by ``pr_method``: the threshold rule, or interpolated precision).
* ``calibration`` (probabilities only) -> table ``calibration``: equal-mass ECE
  (``ece_equal_mass[n_bins=10]``) and debiased l2 calibration error
  (``debiased_l2_ce[binning=auto,n_bins=15]``) from the cohort's paired cell, and with
  ``slope`` the calibration slope, calibration intercept and joint intercept (logistic
  recalibration; bootstrap interval in ``ci_low``/``ci_high``, Wald interval in
  ``wald_low``/``wald_high``); table ``calibration_curve``: the reliability curve per bin with
  its bootstrap band (``ci_low``/``ci_high``) and Wilson interval (``prop_low``/``prop_high``);
  ``bins: equal_mass`` takes the bin edges at score quantiles (scikit-learn's
  ``calibration_curve(strategy="quantile")``), ``uniform`` equal widths.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from medaudit.blocks._at_threshold import (
    CutpointRule,
    ProportionMethod,
    RuleName,
    as_rule,
    rate_metrics,
    rate_rows,
)
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.cells import BootstrapCell, run_cells
from medaudit.blocks.context import AuditContext, Resampling, cell_rng
from medaudit.blocks.notes import degenerate_cells_note, degenerate_note, exposure_note, join
from medaudit.blocks.rows import E_COLUMNS, PROVENANCE_COLUMNS, interval, spec_row, verdict
from medaudit.exceptions import DegenerateDataWarning, MedauditError
from medaudit.io.specfile import fraction
from medaudit.stats import (
    best_threshold,
    best_threshold_ci,
    calibration_slope_intercept,
    calibration_slope_intercept_ci,
    pauc_metric,
    precision_recall_band,
    precision_recall_curve,
    reliability_curve,
    risk_coverage_curve,
    roc_curve,
    roc_curve_band,
)

__all__ = ["OperatingPoints", "OperatingPointsConfig", "PartialAUC", "Curves", "Calibration",
           "VectorCell", "run_vector", "METRICS"]

NAME = "operating_points"
METRICS = (
    ("sensitivity_at_specificity", {"min_specificity": 0.95}),
    ("specificity_at_sensitivity", {"min_sensitivity": 0.95}),
    ("selective_risk", {"coverage": 0.8}),
    ("selective_risk", {"coverage": 0.9}),
)
#: coverage points kept for the risk-coverage curves (the full curve has n points)
CURVE_POINTS = 101
class PartialAUC(BlockConfig):
    """A partial AUC over a specificity or a sensitivity range (pROC's ``partial.auc``)."""

    specificity: tuple[float, float] | None = None
    sensitivity: tuple[float, float] | None = None
    #: McClish standardisation (pROC's ``partial.auc.correct``)
    correct: bool = False

    @model_validator(mode="after")
    def _one_range(self) -> PartialAUC:
        if (self.specificity is None) == (self.sensitivity is None):
            raise ValueError("give exactly one of specificity: [lo, hi] or sensitivity: [lo, hi]")
        self.metric()  # the range is checked where the metric is defined
        return self

    def metric(self) -> tuple[str, dict[str, Any]]:
        focus = "specificity" if self.specificity is not None else "sensitivity"
        return pauc_metric(self.specificity or self.sensitivity, focus=focus, correct=self.correct)


class Curves(BlockConfig):
    """ROC and precision-recall curve tables."""

    #: specificities of the ROC band (and recalls of the PR band), evenly spaced from 0 to 1
    grid: int = Field(101, ge=2, le=1001)
    band: bool = True
    #: how the PR band reads precision at a recall: at the highest threshold reaching it
    #: (``threshold``), or the largest precision over those thresholds (``interpolated``)
    pr_method: Literal["threshold", "interpolated"] = "threshold"
    #: drop the thresholds scikit-learn's ``drop_intermediate=True`` drops (same curve)
    drop_intermediate: bool = False


class Calibration(BlockConfig):
    """Calibration tables: equal-mass ECE, debiased l2 error, reliability curve, slope."""

    bins: Literal["equal_mass", "uniform"] = "equal_mass"
    n_bins: int = Field(10, ge=2, le=100)
    slope: bool = True
    #: clip probabilities to [eps, 1 - eps] for the slope fit (needed when some are 0 or 1)
    eps: float | None = Field(None, gt=0.0, lt=0.5)
    proportion_method: ProportionMethod = "wilson"


class OperatingPointsConfig(BlockConfig):
    """The ``operating_points:`` section (every key optional; see the module docstring)."""

    thresholds: list[float] = Field(default_factory=list)
    rules: list[RuleName | CutpointRule] = Field(default_factory=list)
    prevalence: float | None = None
    proportion_methods: list[ProportionMethod] = Field(
        default_factory=lambda: ["wilson", "clopper_pearson", "agresti_coull"])
    partial_auc: list[PartialAUC] = Field(default_factory=list)
    curves: bool | Curves = False
    calibration: bool | Calibration = False

    @field_validator("thresholds")
    @classmethod
    def _thresholds(cls, v: list[float]) -> list[float]:
        for t in v:
            if math.isnan(t) or t == -math.inf:
                raise ValueError(f"thresholds must be numbers (or .inf); got {t!r}")
        if len(set(v)) != len(v):
            raise ValueError(f"thresholds lists a value twice: {v}")
        return v

    @field_validator("prevalence")
    @classmethod
    def _prev(cls, v: float | None) -> float | None:
        return None if v is None else fraction(v, "prevalence")

    @model_validator(mode="after")
    def _unique(self) -> OperatingPointsConfig:
        labels = [as_rule(r).label for r in self.rules]
        if len(set(labels)) != len(labels):
            raise ValueError(f"rules lists a rule twice: {labels}")
        ids = [e.metric() for e in self.partial_auc]
        if len({repr(i) for i in ids}) != len(ids):
            raise ValueError("partial_auc lists a range twice")
        if len(set(self.proportion_methods)) != len(self.proportion_methods):
            raise ValueError(f"proportion_methods lists a method twice: {self.proportion_methods}")
        return self

    @property
    def curves_config(self) -> Curves | None:
        return Curves() if self.curves is True else (self.curves or None)

    @property
    def calibration_config(self) -> Calibration | None:
        return Calibration() if self.calibration is True else (self.calibration or None)


def _difference_id(metric_id: str) -> str:
    """``pauc[sp=0.9:1]`` -> ``pauc_difference[sp=0.9:1]``."""
    name, _, rest = metric_id.partition("[")
    return f"{name}_difference" + (f"[{rest}" if rest else "")


# ----------------------------------------------------------------------------- cells of one vector
@dataclass(frozen=True, eq=False)
class VectorCell:
    """One score vector on one cohort: a cut-point with intervals, a ROC band, a reliability
    curve or a calibration-slope fit, each with its own generator (from ``key``)."""

    key: tuple[Any, ...]
    kind: Literal["cutpoint", "roc_band", "pr_band", "reliability", "slope"]
    label: np.ndarray
    score: np.ndarray
    design: str
    options: Mapping[str, Any] = field(default_factory=dict)


def _cutpoint(cell: VectorCell, rs: Resampling, rng: np.random.Generator) -> Any:
    return best_threshold_ci(cell.label, cell.score, method=cell.options["rule"],
                             weights=(cell.options["cost"], cell.options["prevalence"]),
                             design=cell.design, n_resamples=rs.n_resamples,
                             confidence_level=rs.confidence_level, rng=rng)


def _roc_band(cell: VectorCell, rs: Resampling, rng: np.random.Generator) -> Any:
    return roc_curve_band(cell.label, cell.score,
                          specificities=np.linspace(0.0, 1.0, int(cell.options["grid"])),
                          design=cell.design, n_resamples=rs.n_resamples,
                          confidence_level=rs.confidence_level, rng=rng, keep_replicates=False)


def _pr_band(cell: VectorCell, rs: Resampling, rng: np.random.Generator) -> Any:
    return precision_recall_band(cell.label, cell.score,
                                 recalls=np.linspace(0.0, 1.0, int(cell.options["grid"])),
                                 method=cell.options["method"], design=cell.design,
                                 n_resamples=rs.n_resamples, confidence_level=rs.confidence_level,
                                 rng=rng, keep_replicates=False)


def _reliability(cell: VectorCell, rs: Resampling, rng: np.random.Generator) -> Any:
    o = cell.options
    return reliability_curve(cell.label, cell.score, n_bins=int(o["n_bins"]),
                             strategy="quantile" if o["bins"] == "equal_mass" else "uniform",
                             proportion_method=o["proportion_method"], design=cell.design,
                             n_resamples=rs.n_resamples, confidence_level=rs.confidence_level,
                             rng=rng)


def _slope(cell: VectorCell, rs: Resampling, rng: np.random.Generator) -> Any:
    """The bootstrap fit, or the (nan) Wald fit alone when the full-sample fit does not exist."""
    fit = calibration_slope_intercept(cell.label, cell.score, confidence_level=rs.confidence_level,
                                      eps=cell.options.get("eps"))
    if math.isnan(fit.slope):
        return fit
    return calibration_slope_intercept_ci(cell.label, cell.score, design=cell.design,
                                          n_resamples=rs.n_resamples,
                                          confidence_level=rs.confidence_level, rng=rng,
                                          eps=cell.options.get("eps"))


_VECTOR_KINDS = {"cutpoint": _cutpoint, "roc_band": _roc_band, "pr_band": _pr_band,
                 "reliability": _reliability, "slope": _slope}


def run_vector(cell: VectorCell, resampling: Resampling) -> Any:
    """Run one :class:`VectorCell` with the generator of its key (module level for backends).

    Degenerate replicates are counted in the results (``n_degenerate``, ``n_empty``) and
    qualified in the rows, not warned about once per cell.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateDataWarning)
        return _VECTOR_KINDS[cell.kind](cell, resampling, cell_rng(resampling.seed, *cell.key))


# ----------------------------------------------------------------------------- the block
class OperatingPoints(Block):
    """Se at Sp >= 0.95, Sp at Se >= 0.95 and selective risk per model and cohort; on request
    rates at thresholds, cut-points, partial AUC, curves and calibration."""

    name = NAME
    title = "Operating points and selective risk"
    summary = ("Se at Sp >= 0.95, Sp at Se >= 0.95, selective risk at 80/90 % coverage "
               "(paper 000 Table 5); on request PPV/NPV/LR/F1 at thresholds and cut-points, "
               "partial AUC, ROC/PR curves with bands, calibration")
    config = OperatingPointsConfig
    tables = (
        TableSchema("operating_points", "one row per cohort x model x criterion, with its interval",
                    ("estimate", "ci_low", "ci_high", "n_degenerate", "n", "n_pos", "n_neg",
                     "qualification")),
        TableSchema("risk_coverage", "risk-coverage curves at about 101 coverages (point estimates)",
                    ("coverage", "k", "estimate")),
        TableSchema("threshold_metrics", "every rate at each declared or rule-chosen threshold",
                    ("estimate", "ci_low", "ci_high", "n_degenerate", "threshold_rule", "count",
                     "nobs", "qualification")),
        TableSchema("cutpoints", "threshold chosen by each rule, with its Se and Sp (re-chosen "
                    "in every replicate)", ("estimate", "ci_low", "ci_high", "rule",
                                            "tied_thresholds", "qualification")),
        TableSchema("partial_auc", "partial AUC per cohort x model x range",
                    ("estimate", "ci_low", "ci_high", "n_degenerate", "qualification")),
        TableSchema("partial_auc_differences", "paired partial-AUC differences A - B",
                    ("model_a", "model_b", "estimate", "ci_low", "ci_high", "verdict")),
        TableSchema("roc_curve", "ROC coordinates at every observed threshold (point estimates)",
                    ("sensitivity", "specificity", "tp", "fp")),
        TableSchema("roc_band", "sensitivity at fixed specificities with pointwise bands",
                    ("specificity", "estimate", "ci_low", "ci_high", "n_degenerate")),
        TableSchema("pr_curve", "precision-recall coordinates at every observed threshold",
                    ("precision", "recall", "tp", "fp")),
        TableSchema("pr_band", "precision at fixed recalls with pointwise bands",
                    ("recall", "estimate", "ci_low", "ci_high", "n_degenerate")),
        TableSchema("calibration", "equal-mass ECE, debiased l2 error, calibration slope and "
                    "intercepts", ("estimate", "ci_low", "ci_high", "qualification")),
        TableSchema("calibration_curve", "reliability curve per bin with bootstrap and "
                    "proportion intervals", ("bin_low", "bin_high", "count", "mean_score",
                                             "fraction_positive", "ci_low", "ci_high")),
    )
    figures = ("fig8_risk_coverage", "fig13_roc_curves", "fig14_pr_curves",
               "fig15_calibration_curves")

    def run(self, ctx: AuditContext, config: OperatingPointsConfig) -> BlockResult:
        prompt, models = ctx.primary_prompt, ctx.models()
        # selective prediction needs probabilities (confidence max(s, 1-s), decision s >= 0.5)
        base = METRICS if ctx.probabilities else METRICS[:2]
        cal = config.calibration_config if ctx.probabilities else None
        wides, cells, extras = {}, [], {}
        for cohort in ctx.cohorts:
            ctx.tick(f"{NAME}: bootstrap {cohort}")
            w = wides[cohort] = ctx.wide(cohort, keys=[(m, prompt) for m in models])
            extras[cohort] = _Extra.build(w, models, prompt, config, cal)
            cells.append(BootstrapCell(key=(NAME, cohort, prompt), label=w.label,
                                       scores=w.vectors(models, prompt),
                                       metrics=base + extras[cohort].specs,
                                       design=ctx.cohort_design(cohort)))
        # rates at each model's own thresholds, one cell per model with the cohort cell's key:
        # the same resampled images (the draws depend on the key, labels and design only),
        # without evaluating every model at every other model's thresholds
        rate_cells = [(cohort, m, BootstrapCell(key=(NAME, cohort, prompt), label=wides[cohort].label,
                                                scores={m: wides[cohort].scores[f"{m}|{prompt}"]},
                                                metrics=extras[cohort].rates[m],
                                                design=ctx.cohort_design(cohort)))
                      for cohort in ctx.cohorts for m in models if extras[cohort].rates.get(m)]
        done = run_cells(ctx, cells + [c for _, _, c in rate_cells])
        results = done[:len(cells)]
        for (cohort, m, _), res in zip(rate_cells, done[len(cells):], strict=True):
            extras[cohort].rate_results[m] = res
        rows: list[dict] = []
        for cohort, res in zip(ctx.cohorts, results, strict=True):
            for m in models:
                for spec_, mid in zip(base, res.metric_ids, strict=False):
                    r = res.marginal[(m, mid)]
                    rows.append(spec_row(
                        model=m, prompt=prompt, cohort=cohort,
                        threshold=0.5 if spec_[0] == "selective_risk" else None, criterion=mid,
                        design=r.design, n_resamples=r.n_resamples, **interval(r),
                        qualification=join(exposure_note(ctx, m, cohort),
                                           degenerate_note(r.n_degenerate, r.n_resamples))))
        notes = [
            f"Within-cohort operating points (not transported thresholds); percentile intervals, "
            f"level {ctx.resampling.confidence_level}, B = {ctx.resampling.n_resamples}, one paired "
            "bootstrap per cohort with the operating point re-chosen in "
            "each replicate (design per cohort in column `design`).",
            "Selective risk: confidence max(s, 1-s), decision s >= 0.5, k = ceil(coverage * n)."
            if ctx.probabilities else "score_scale is 'logits': selective risk needs probabilities "
            "and is not reported.",
        ]
        notes += degenerate_cells_note(sum(int(r["n_degenerate"] > 0) for r in rows))
        tables = {"operating_points": pd.DataFrame(rows),
                  "risk_coverage": _risk_coverage(ctx, prompt, models)}
        more = _requested(ctx, config, cal, wides, extras, results, len(base))
        tables.update(more)
        notes += _notes(ctx, config, cal, more, extras)
        return BlockResult(name=NAME, tables=tables, notes=tuple(notes))


@dataclass
class _Extra:
    """The requested metrics of one cohort's cell and the thresholds they are read at."""

    specs: tuple[Any, ...] = ()
    #: (model, threshold source: "declared" or a rule label, threshold), in row order
    thresholds: list[tuple[str, str, float]] = field(default_factory=list)
    #: (model, rule label) -> best_threshold result
    cuts: dict[tuple[str, str], Any] = field(default_factory=dict)
    #: model -> the rate metrics at its thresholds (run on the cohort cell's draws)
    rates: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    rate_results: dict[str, Any] = field(default_factory=dict)
    one_class: bool = False

    @staticmethod
    def key(name: str, opts: Mapping[str, Any]) -> str:
        return repr((name, sorted(opts.items())))

    @classmethod
    def build(cls, w: Any, models: list[str], prompt: str, config: OperatingPointsConfig,
              cal: Calibration | None) -> _Extra:
        n_pos = float(w.label.sum())
        ex = cls(one_class=n_pos in (0.0, float(w.label.size)))
        specs: dict[str, Any] = {}
        for m in models:
            ex.thresholds += [(m, "declared", float(t)) for t in config.thresholds]
            for rule in map(as_rule, config.rules if not ex.one_class else ()):
                cut = best_threshold(w.label, w.scores[f"{m}|{prompt}"], method=rule.rule,
                                     weights=rule.weights)
                ex.cuts[(m, rule.label)] = cut
                ex.thresholds.append((m, rule.label, cut.threshold))
        for m in models:  # one metric per id: a model's rules may share a threshold
            want = [sp for mm, _, t in ex.thresholds if mm == m
                    for sp in rate_metrics(t, config.prevalence)]
            ex.rates[m] = tuple({cls.key(*sp): sp for sp in want}.values())
        wanted = [e.metric() for e in config.partial_auc]
        if cal is not None:
            wanted += [("ece_equal_mass", {"n_bins": 10}),
                       ("debiased_l2_ce", {"binning": "auto", "n_bins": 15})]
        for name, opts in wanted:
            specs.setdefault(cls.key(name, opts), (name, opts))
        ex.specs = tuple(specs.values())
        return ex


def _requested(ctx: AuditContext, config: OperatingPointsConfig, cal: Calibration | None,
               wides: dict, extras: dict[str, _Extra], results: list, n_base: int
               ) -> dict[str, pd.DataFrame]:
    """The tables the section asks for (none when it asks for nothing)."""
    prompt, models, level = ctx.primary_prompt, ctx.models(), ctx.resampling.confidence_level
    rows: dict[str, list] = {k: [] for k in ("threshold_metrics", "cutpoints", "partial_auc",
                                             "partial_auc_differences", "calibration")}
    pauc_ids = set()
    for cohort, res in zip(ctx.cohorts, results, strict=True):
        ex, w = extras[cohort], wides[cohort]
        ids = {_Extra.key(n, o): mid for (n, o), mid in zip(ex.specs, res.metric_ids[n_base:],
                                                             strict=True)}
        for m in models:
            s, qual = w.scores[f"{m}|{prompt}"], exposure_note(ctx, m, cohort)

            def row(r: Any, m: str = m, cohort: str = cohort, **e: Any) -> dict[str, Any]:
                return spec_row(model=m, prompt=prompt, cohort=cohort, design=r.design,
                                n_resamples=r.n_resamples, **e)

            rres = ex.rate_results.get(m)
            rids = {} if rres is None else {_Extra.key(n, o): mid for (n, o), mid in zip(
                ex.rates[m], rres.metric_ids, strict=True)}
            for mm, src, t in ex.thresholds:
                if mm != m:
                    continue
                boot = {(n, o.get("prevalence")): rres.marginal[(m, rids[_Extra.key(n, o)])]
                        for n, o in rate_metrics(t, config.prevalence)}

                def rate_row(*, prevalence: Any, criterion: str, undefined: str, degenerate: str,
                             t: float = t, src: str = src, boot: dict = boot, qual: str = qual,
                             row: Callable[..., dict] = row, **v: Any) -> dict[str, Any]:
                    r = boot[(criterion, None if prevalence == "observed" else prevalence)]
                    return row(r, prevalence=prevalence, threshold=t, criterion=criterion,
                               threshold_rule=src, **v,
                               qualification=join(qual, undefined, degenerate))

                rows["threshold_metrics"] += rate_rows(
                    w.label, s, t, config.prevalence, boot, methods=config.proportion_methods,
                    level=level, row=rate_row)
            for e in config.partial_auc:
                mid = ids[_Extra.key(*e.metric())]
                pauc_ids.add(mid)
                r = res.marginal[(m, mid)]
                rows["partial_auc"].append(row(r, criterion=mid, **interval(r), qualification=join(
                    qual, degenerate_note(r.n_degenerate, r.n_resamples))))
            if cal is not None:
                for n, o in (("ece_equal_mass", {"n_bins": 10}),
                             ("debiased_l2_ce", {"binning": "auto", "n_bins": 15})):
                    r = res.marginal[(m, ids[_Extra.key(n, o)])]
                    rows["calibration"].append(row(r, criterion=r.metric, **interval(r),
                                                   qualification=qual))
        for (a, b, mid), d in res.differences.items():
            if mid in pauc_ids:
                rows["partial_auc_differences"].append(spec_row(
                    model=f"{a} - {b}", prompt=prompt, cohort=cohort,
                    criterion=_difference_id(mid), design=d.design, n_resamples=d.n_resamples,
                    model_a=a, model_b=b, **interval(d),
                    verdict=verdict(d.ci_low, d.ci_high, +1, n_degenerate=d.n_degenerate),
                    qualification=join(exposure_note(ctx, [a, b], cohort, label="{model}: "),
                                       degenerate_note(d.n_degenerate, d.n_resamples))))
    out = {k: pd.DataFrame(v) for k, v in rows.items() if v}
    out.update(_vector_tables(ctx, config, cal, wides, extras))
    if "calibration" in out and "calibration_slope" in out:
        out["calibration"] = pd.concat([out["calibration"], out.pop("calibration_slope")],
                                       ignore_index=True)
    out.pop("calibration_slope", None)
    return out


_E_KEYS = (*E_COLUMNS, *PROVENANCE_COLUMNS)


def _frame(n: int, arrays: dict[str, Any], **kw: Any) -> pd.DataFrame:
    """Rows of one (cohort, model) curve: E and provenance, the arrays, then other scalars."""
    e = {k: v for k, v in kw.items() if k in _E_KEYS}
    base = spec_row(**e, **dict.fromkeys(arrays), **{k: v for k, v in kw.items() if k not in e})
    return pd.DataFrame({k: (np.asarray(arrays[k]) if k in arrays else [v] * n)
                         for k, v in base.items()})


def _vector_tables(ctx: AuditContext, config: OperatingPointsConfig, cal: Calibration | None,
                   wides: dict, extras: dict[str, _Extra]) -> dict[str, pd.DataFrame]:
    """Cut-points, ROC/PR coordinates, ROC bands, reliability curves and calibration slopes."""
    if config.curves_config is None and cal is None and not config.rules:
        return {}
    cells, frames = _vector_cells(ctx, config, cal, wides, extras)
    out = {k: pd.concat(v, ignore_index=True) for k, v in frames.items() if v}
    done = ctx.map(functools.partial(run_vector, resampling=ctx.resampling), cells)
    out.update(_vector_rows(ctx, cells, done))
    return out


def _vector_cells(ctx: AuditContext, config: OperatingPointsConfig, cal: Calibration | None,
                  wides: dict, extras: dict[str, _Extra]
                  ) -> tuple[list[VectorCell], dict[str, list[pd.DataFrame]]]:
    """The resampled curves as cells, and the point-estimate ROC/PR coordinates as frames."""
    curves = config.curves_config
    prompt, models = ctx.primary_prompt, ctx.models()
    cells, frames = [], {k: [] for k in ("roc_curve", "pr_curve")}
    for cohort in ctx.cohorts:
        w, design = wides[cohort], ctx.cohort_design(cohort)
        if extras[cohort].one_class:
            continue
        for m in models:
            s = w.scores[f"{m}|{prompt}"]
            if cal is not None and cal.slope and cal.eps is None and ((s == 0) | (s == 1)).any():
                raise MedauditError(
                    f"operating_points.calibration: model {m!r} on cohort {cohort!r} has "
                    "probabilities of exactly 0 or 1, which have no logit; set calibration.eps "
                    "(e.g. 1e-6) to clip them for the slope and intercept fit.")
            e = dict(model=m, prompt=prompt, cohort=cohort, design="point_estimate")
            for rule in map(as_rule, config.rules):
                cells.append(VectorCell(key=(NAME, cohort, prompt, "cutpoint", rule.label, m),
                                        kind="cutpoint", label=w.label, score=s, design=design,
                                        options=rule.model_dump()))
            if curves is not None:
                roc = roc_curve(w.label, s, drop_intermediate=curves.drop_intermediate)
                frames["roc_curve"].append(_frame(roc.thresholds.size, {
                    "threshold": roc.thresholds, "sensitivity": roc.tpr,
                    "specificity": 1.0 - roc.fpr, "tp": roc.tp, "fp": roc.fp}, **e,
                    criterion="roc_curve", n_pos=roc.n_pos, n_neg=roc.n_neg))
                pr = precision_recall_curve(w.label, s, drop_intermediate=curves.drop_intermediate)
                frames["pr_curve"].append(_frame(pr.thresholds.size, {
                    "threshold": pr.thresholds, "precision": pr.precision, "recall": pr.recall,
                    "tp": pr.tp, "fp": pr.fp}, **e, criterion="pr_curve", n_pos=pr.n_pos))
                if curves.band:
                    cells.append(VectorCell(key=(NAME, cohort, prompt, "roc_band", m),
                                           kind="roc_band", label=w.label, score=s, design=design,
                                           options={"grid": curves.grid}))
                    # its own key: adding the PR band leaves the ROC band's draws as they were
                    cells.append(VectorCell(key=(NAME, cohort, prompt, "pr_band", m),
                                           kind="pr_band", label=w.label, score=s, design=design,
                                           options={"grid": curves.grid,
                                                    "method": curves.pr_method}))
            if cal is not None:
                cells.append(VectorCell(key=(NAME, cohort, prompt, "reliability", m),
                                       kind="reliability", label=w.label, score=s, design=design,
                                       options=cal.model_dump()))
                if cal.slope:
                    cells.append(VectorCell(key=(NAME, cohort, prompt, "slope", m), kind="slope",
                                           label=w.label, score=s, design=design,
                                           options={"eps": cal.eps}))
    return cells, frames


def _vector_rows(ctx: AuditContext, cells: list[VectorCell], done: list[Any]
                 ) -> dict[str, pd.DataFrame]:
    """The tables of the finished vector cells, one kind of cell to a table."""
    prompt = ctx.primary_prompt
    parts: dict[str, list] = {"cutpoints": [], "roc_band": [], "pr_band": [],
                              "calibration_curve": [], "calibration_slope": []}
    for cell, r in zip(cells, done, strict=True):
        cohort, m = cell.key[1], cell.key[-1]
        e = dict(model=m, prompt=prompt, cohort=cohort)
        qual = exposure_note(ctx, m, cohort)
        if cell.kind == "cutpoint":
            parts["cutpoints"] += _cutpoint_rows(r, e, as_rule(CutpointRule(**cell.options)), qual)
        elif cell.kind == "roc_band":
            parts["roc_band"].append(_band_frame(r, "specificity", r.specificity, r.sensitivity,
                                                 "sensitivity_at_specificity", e, qual))
        elif cell.kind == "pr_band":
            parts["pr_band"].append(_band_frame(r, "recall", r.recall, r.precision,
                                                f"precision_at_recall[method={r.method}]", e, qual))
        elif cell.kind == "reliability":
            parts["calibration_curve"].append(_frame(r.count.size, {
                "bin_low": r.bin_low, "bin_high": r.bin_high, "count": r.count,
                "mean_score": r.mean_score, "fraction_positive": r.fraction_positive,
                "ci_low": r.ci_low, "ci_high": r.ci_high, "prop_low": r.prop_low,
                "prop_high": r.prop_high, "n_empty": r.n_empty}, **e,
                criterion=f"reliability[bins={cell.options['bins']},n_bins={r.n_bins}]",
                design=r.design, n_resamples=r.n_resamples, proportion_method=r.proportion_method,
                qualification=qual))
        else:
            parts["calibration_slope"] += _slope_rows(r, e, cell, qual)
    return {k: (pd.DataFrame(v) if k in ("cutpoints", "calibration_slope")
                else pd.concat(v, ignore_index=True)) for k, v in parts.items() if v}


def _band_frame(r: Any, axis: str, at: np.ndarray, estimate: np.ndarray, criterion: str,
                e: dict[str, Any], qual: str) -> pd.DataFrame:
    """A pointwise band (ROC or PR) as rows: the grid ``axis``, the estimate and its interval."""
    return _frame(at.size, {axis: at, "estimate": estimate, "ci_low": r.ci_low,
                            "ci_high": r.ci_high}, **e, criterion=criterion, design=r.design,
                  n_resamples=r.n_resamples, n_degenerate=r.n_degenerate, n_pos=r.n_pos,
                  n_neg=r.n_neg, qualification=join(qual, degenerate_note(r.n_degenerate,
                                                                          r.n_resamples)))


def _cutpoint_rows(r: Any, e: dict[str, Any], rule: CutpointRule, qual: str) -> list[dict[str, Any]]:
    """The chosen threshold (order-statistic interval) and its Se and Sp, rule re-applied."""
    cut = r.cutpoint
    return [spec_row(**e, threshold=cut.threshold, criterion=b.metric, design=b.design,
                     n_resamples=b.n_resamples, **interval(b), rule=rule.label, cost=rule.cost,
                     weight_prevalence=rule.prevalence, threshold_midpoint=cut.threshold_midpoint,
                     criterion_value=cut.criterion,
                     tied_thresholds="|".join(repr(float(x)) for x in cut.tied_thresholds),
                     qualification=join(qual, degenerate_note(b.n_degenerate, b.n_resamples)))
            for b in (r.threshold, r.sensitivity, r.specificity)]


def _slope_rows(r: Any, e: dict[str, Any], cell: VectorCell, qual: str) -> list[dict[str, Any]]:
    """Slope, calibration intercept and joint intercept: bootstrap and Wald intervals."""
    fit = getattr(r, "fit", r)
    none = "" if hasattr(r, "fit") else ("logit(p) separates the classes: the recalibration "
                                         "model has no finite fit")
    out = []
    for what, wald in (("slope", "slope"), ("intercept", "intercept"),
                       ("intercept_joint", "intercept_joint")):
        b = getattr(r, what, None) if hasattr(r, "fit") else None
        vals = interval(b) if b is not None else {
            "estimate": getattr(fit, wald), "ci_low": math.nan, "ci_high": math.nan,
            "n_degenerate": 0, "n": fit.n, "n_pos": fit.n_pos, "n_neg": fit.n - fit.n_pos}
        out.append(spec_row(**e, criterion=f"calibration_{what}",
                            design=cell.design if b is None else b.design,
                            n_resamples=None if b is None else b.n_resamples, **vals,
                            wald_low=getattr(fit, f"{wald}_ci_low"),
                            wald_high=getattr(fit, f"{wald}_ci_high"), eps=fit.eps,
                            qualification=join(qual, none, "" if b is None else degenerate_note(
                                b.n_degenerate, b.n_resamples))))
    return out


def _notes(ctx: AuditContext, config: OperatingPointsConfig, cal: Calibration | None,
           tables: dict[str, pd.DataFrame], extras: dict[str, _Extra]) -> list[str]:
    """What the requested tables are, in words (nothing when nothing was requested)."""
    out = []
    if "threshold_metrics" in tables:
        out.append("threshold_metrics: every rate at each declared threshold and at each "
                   "rule-chosen threshold (chosen on the cohort itself, ties to the highest), the "
                   "threshold held fixed in the cohort's paired bootstrap; exact/score intervals "
                   f"({', '.join(config.proportion_methods)}) on the 2x2 counts beside them"
                   + (f"; ppv/npv also at the declared prevalence {config.prevalence:g}"
                      if config.prevalence is not None else "") + ".")
    if "cutpoints" in tables:
        out.append("cutpoints: the rule re-applied in every replicate; threshold interval from "
                   "order statistics (ends are thresholds some replicate chose), Se and Sp "
                   "percentile intervals at the re-chosen threshold.")
        out += _no_finite_threshold_note(tables["cutpoints"])
    if "partial_auc" in tables:
        out.append("partial_auc: area under the empirical ROC curve over the declared range "
                   "(McClish-standardised where correct=True); differences A - B from the same "
                   "paired draws.")
    if config.curves_config is not None:
        out.append("roc_curve / pr_curve: coordinates at every observed threshold (s >= t); "
                   "roc_band: sensitivity at fixed specificities, pointwise percentile band "
                   "(pROC ci.se); pr_band: precision at fixed recalls, the same kind of band "
                   "(precision read at the highest threshold reaching the recall, or the "
                   "largest precision there with pr_method: interpolated).")
    if config.calibration_config is not None:
        out.append("calibration: equal-mass ECE (10 bins) and debiased l2 error (Kumar et al.) from "
                   "the paired cell; slope and intercepts of the logistic recalibration (bootstrap "
                   "and Wald intervals); calibration_curve: reliability curve with bootstrap band."
                   if cal is not None else "score_scale is 'logits': calibration needs "
                   "probabilities and is not reported.")
    skipped = [c for c, ex in extras.items() if ex.one_class]
    if skipped and (config.rules or config.curves_config or cal is not None):
        out.append(f"cohort(s) {skipped} have one class: no cut-points, curves or calibration fit.")
    return out


def _no_finite_threshold_note(cut: pd.DataFrame) -> list[str]:
    """Which chosen thresholds have an interval end that is no threshold (the rule called
    nothing positive, tau = +inf, in more than the interval's tail of replicates)."""
    thr = cut[cut["criterion"].str.startswith("cutpoint_threshold")
              & (cut["ci_low"].isna() | cut["ci_high"].isna())
              & (cut["n_degenerate"] < cut["n_resamples"])]
    if thr.empty:
        return []
    where = ", ".join(f"{r.model} in {r.cohort} ({r.rule})" for r in thr.itertuples())
    return [f"cutpoints: the threshold interval has no finite end for {where}: in more than the "
            "interval's tail of replicates the rule called nothing positive (threshold +inf, "
            "above every score; Se 0 and Sp 1 there, inside their intervals), so the scores "
            "separate the classes too weakly for the rule to pin a threshold; that end is NaN."]


def _risk_coverage(ctx: AuditContext, prompt: str, models: list[str]) -> pd.DataFrame:
    """Risk-coverage curves (point estimates) at ~101 coverages k/n, for figures."""
    if not ctx.probabilities:
        return pd.DataFrame()
    rows = []
    for cohort in ctx.cohorts:
        w = ctx.wide(cohort, keys=[(m, prompt) for m in models])
        n = w.label.size
        keep = np.unique(np.ceil(np.linspace(1, n, min(n, CURVE_POINTS))).astype(int)) - 1
        for m in models:
            curve = risk_coverage_curve(w.label, w.scores[f"{m}|{prompt}"])
            for i in keep:
                rows.append(spec_row(
                    model=m, prompt=prompt, cohort=cohort, threshold=0.5,
                    criterion="selective_risk", design="point_estimate",
                    coverage=float(curve.coverage[i]), k=int(i + 1), estimate=float(curve.risk[i])))
    return pd.DataFrame(rows)
