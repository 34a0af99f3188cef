"""Curve figures of ``operating_points``: ROC and precision-recall curves, reliability curves.

Drawn from the block tables only (the pattern of :mod:`._figures_blocks`): coordinates from
``roc_curve`` / ``pr_curve``, the pointwise band from ``roc_band``, the operating points the
audit reports from ``operating_points`` (Se at Sp >= x drawn at FPR = 1 - x with its
interval; Sp at Se >= x at TPR = x) and ``threshold_metrics`` (Se and Sp, or recall and PPV,
at each declared or rule-chosen threshold), and the binned reliability curve with its
bootstrap band from ``calibration_curve``.  Nothing is computed here but positions.
One panel per cohort, one colour (and line style) per model.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from medaudit.report._figures_blocks import (
    GREY,
    MARKERS,
    _dash,
    _model_handles,
    _one,
    _panels,
    _rows,
    _styled,
    _uniq,
    lit,
    model_styles,
)
from medaudit.report.labels import criterion_label, rule_label

__all__ = ["plot_roc_curves", "plot_pr_curves", "plot_calibration_curves"]

#: marker of each threshold source in ``threshold_metrics`` (declared first, then the rules)
_SOURCE_MARKERS = ("X", "P", "*", "h", "v", "<", ">")


def _num_col(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").to_numpy(float)


def _sources(points: pd.DataFrame | None) -> dict[str, str]:
    """Threshold source -> marker ('declared' first, then the rules in order of appearance)."""
    if points is None or points.empty or "threshold_rule" not in points:
        return {}
    names = _uniq(points["threshold_rule"].astype(str))
    names = sorted(names, key=lambda n: n != "declared")
    return {n: _SOURCE_MARKERS[i % len(_SOURCE_MARKERS)] for i, n in enumerate(names)}


def _point_rows(points: pd.DataFrame | None, cohort: Any, model: str, x: str, y: str
                ) -> list[tuple[str, float, float, float]]:
    """(source, threshold, x value, y value) of every threshold of one model on one cohort."""
    if points is None or points.empty:
        return []
    g = points[(points["cohort"].astype(str) == str(cohort)) & (points["model"] == model)
               & (points["prevalence"].astype(str) == "observed")]
    out = []
    for (src, thr), h in g.groupby(["threshold_rule", "threshold"], sort=False, dropna=False):
        vals = dict(zip(h["criterion"].astype(str), pd.to_numeric(h["estimate"], errors="coerce"),
                        strict=True))
        if x in vals and y in vals:
            out.append((str(src), float(thr), vals[x], vals[y]))
    return out


def _mark_thresholds(a: Any, points: pd.DataFrame | None, cohort: Any, model: str, x: str, y: str,
                     sources: dict[str, str], color: str, *, flip_x: bool = False) -> None:
    """One large marker per threshold of one model (shape by threshold source)."""
    for src, _, xv, yv in _point_rows(points, cohort, model, x, y):
        a.plot([1.0 - xv if flip_x else xv], [yv], linestyle="none", marker=sources[src], ms=7,
               color=color, markeredgecolor="black", markeredgewidth=0.6, zorder=5,
               label="_threshold")


def _legend_sources(sources: dict[str, str]) -> tuple[list, list[str]]:
    from matplotlib.lines import Line2D

    h = [Line2D([], [], color=GREY, marker=m, linestyle="none", markersize=7)
         for m in sources.values()]
    return h, [f"τ: {lit(rule_label(s))}" for s in sources]


_CONSTRAINT = re.compile(r"^(sensitivity_at_specificity|specificity_at_sensitivity)\[min_\w+=([0-9.]+)\]$")


def _constraints(ops: pd.DataFrame | None, cohort: Any, model: str) -> list[tuple[str, float, Any]]:
    """(kind, x, row) of the Se@Sp and Sp@Se operating points of one model on one cohort."""
    if ops is None or ops.empty:
        return []
    g = ops[(ops["cohort"].astype(str) == str(cohort)) & (ops["model"] == model)]
    out = []
    for r in g.itertuples():
        m = _CONSTRAINT.match(str(r.criterion))
        if m:
            out.append((m.group(1), float(m.group(2)), r))
    return out


def _curve_rows(table: pd.DataFrame, columns: list[str], what: str, cohort: str | None,
                threshold_metrics: pd.DataFrame | None) -> tuple[pd.DataFrame, list, dict, dict]:
    """The rows of a curve figure, its models (sorted), their styles and the threshold sources."""
    df = _rows(table, columns, what, cohort=cohort)
    models = sorted(_uniq(df["model"]))
    return df, models, model_styles(models), _sources(threshold_metrics)


# ----------------------------------------------------------------------------- ROC
@_styled
def plot_roc_curves(table: pd.DataFrame, *, ax: Any = None, band: pd.DataFrame | None = None,
                    operating_points: pd.DataFrame | None = None,
                    threshold_metrics: pd.DataFrame | None = None, cohort: str | None = None) -> Any:
    """ROC curves (``operating_points.roc_curve``) with bands and the audit's operating points.

    x = 1 − specificity, y = sensitivity.  ``band`` (``operating_points.roc_band``) is drawn
    as a shaded pointwise interval; ``operating_points`` (``operating_points.operating_points``)
    adds Se at Sp ≥ x (diamond at FPR = 1 − x, vertical interval) and Sp at Se ≥ x (square at
    TPR = x, horizontal interval); ``threshold_metrics`` adds the (1 − Sp, Se) point of every
    declared or rule-chosen threshold (one marker per threshold source).
    """
    what = "plot_roc_curves"
    df, models, styles, sources = _curve_rows(
        table, ["model", "cohort", "sensitivity", "specificity"], what, cohort, threshold_metrics)

    def draw(a: Any, key: tuple, g: pd.DataFrame) -> tuple[list, list]:
        c = key[0]
        a.plot([0, 1], [0, 1], color=GREY, lw=0.8, ls=":", zorder=1, label="_diagonal")
        for m in models:
            col = styles[m][0]
            gm = g[g["model"] == m]
            _fill_band(a, band, c, m, "specificity", col, flip=True)
            if len(gm):
                a.plot(1.0 - _num_col(gm, "specificity"), _num_col(gm, "sensitivity"), color=col,
                       lw=1.3, ls=_dash(m, models), zorder=2, label=lit(m))
            for kind, x, r in _constraints(operating_points, c, m):
                est, lo, hi = (float(pd.to_numeric(getattr(r, k), errors="coerce"))
                               for k in ("estimate", "ci_low", "ci_high"))
                if kind == "sensitivity_at_specificity":
                    a.errorbar([1.0 - x], [est], yerr=[[est - lo], [hi - est]] if np.isfinite(
                        [lo, hi]).all() else None, fmt="D", color=col, ms=5, capsize=2.2,
                        elinewidth=1.0, zorder=4, label="_se_at_sp")
                else:
                    a.errorbar([1.0 - est], [x], xerr=[[hi - est], [est - lo]] if np.isfinite(
                        [lo, hi]).all() else None, fmt="s", color=col, ms=5, capsize=2.2,
                        elinewidth=1.0, zorder=4, label="_sp_at_se")
            _mark_thresholds(a, threshold_metrics, c, m, "specificity", "sensitivity", sources,
                             col, flip_x=True)
        a.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), aspect="equal",
              xlabel="1 − specificity (false-positive rate)", ylabel="sensitivity")
        a.set_title(lit(f"{c}, prompt {_one(g, 'prompt')}"))
        return _roc_legend(styles, models, operating_points, sources)

    return _panels(df, ["cohort"], ax, draw, title="ROC curves"
                   + (" with pointwise bands" if band is not None and not band.empty else ""),
                   ncols=3, size=(3.1, 3.1), legend_w=2.3, what=what)


def _fill_band(a: Any, band: pd.DataFrame | None, cohort: Any, model: str, axis: str,
               color: Any, *, flip: bool) -> None:
    """Shade one model's pointwise band over ``axis`` (1 - ``axis`` on x when ``flip``)."""
    if band is None or band.empty:
        return
    b = band[(band["cohort"].astype(str) == str(cohort)) & (band["model"] == model)]
    if not len(b):
        return
    b = b.sort_values(axis, ascending=not flip, kind="stable")
    x = _num_col(b, axis)
    a.fill_between(1.0 - x if flip else x, _num_col(b, "ci_low"), _num_col(b, "ci_high"),
                   color=color, alpha=0.15, lw=0, zorder=1, label="_band")


def _roc_legend(styles: dict, models: list[str], ops: pd.DataFrame | None,
                sources: dict[str, str]) -> tuple[list, list[str]]:
    from matplotlib.lines import Line2D

    h, lab = _model_handles(styles, models, dashed=True)
    if ops is not None and not ops.empty:
        h += [Line2D([], [], color=GREY, marker="D", linestyle="none"),
              Line2D([], [], color=GREY, marker="s", linestyle="none")]
        lab += ["Se at Sp ≥ x (at FPR 1 − x)", "Sp at Se ≥ x (at TPR x)"]
    hs, ls = _legend_sources(sources)
    return h + hs, lab + ls


# ----------------------------------------------------------------------------- PR
@_styled
def plot_pr_curves(table: pd.DataFrame, *, ax: Any = None, band: pd.DataFrame | None = None,
                   threshold_metrics: pd.DataFrame | None = None, cohort: str | None = None) -> Any:
    """Precision-recall curves (``operating_points.pr_curve``), one panel per cohort.

    ``band`` (``operating_points.pr_band``) is drawn as a shaded pointwise interval of the
    precision at fixed recalls.  Dotted line: the cohort's prevalence (a classifier without
    skill); ``threshold_metrics`` adds the (recall, PPV) point of every declared or
    rule-chosen threshold.
    """
    what = "plot_pr_curves"
    df, models, styles, sources = _curve_rows(
        table, ["model", "cohort", "precision", "recall"], what, cohort, threshold_metrics)

    def draw(a: Any, key: tuple, g: pd.DataFrame) -> tuple[list, list]:
        c = key[0]
        for m in models:
            gm = g[g["model"] == m]
            _fill_band(a, band, c, m, "recall", styles[m][0], flip=False)
            if len(gm):
                a.plot(_num_col(gm, "recall"), _num_col(gm, "precision"), color=styles[m][0],
                       lw=1.3, ls=_dash(m, models), drawstyle="steps-post", zorder=2, label=lit(m))
            _mark_thresholds(a, threshold_metrics, c, m, "sensitivity", "ppv", sources,
                             styles[m][0])
        if {"n_pos", "tp", "fp"} <= set(g.columns):  # the lowest threshold flags every image
            last = g[g["model"] == models[0]].iloc[-1] if (g["model"] == models[0]).any() \
                else g.iloc[-1]
            n = float(last["tp"]) + float(last["fp"])
            if n > 0:
                a.axhline(float(last["n_pos"]) / n, color=GREY, lw=0.8, ls=":", zorder=1)
        a.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.05), xlabel="recall (sensitivity)",
              ylabel="precision (PPV)")
        a.set_title(lit(f"{c}, prompt {_one(g, 'prompt')}"))
        h, lab = _model_handles(styles, models, dashed=True)
        hs, ls = _legend_sources(sources)
        from matplotlib.lines import Line2D

        return h + hs + [Line2D([], [], color=GREY, lw=0.8, ls=":")], lab + ls + [
            "dotted: prevalence (no skill)"]

    return _panels(df, ["cohort"], ax, draw, title="Precision-recall curves", ncols=3,
                   size=(3.1, 2.8), legend_w=2.3, what=what)


# ----------------------------------------------------------------------------- reliability
@_styled
def plot_calibration_curves(table: pd.DataFrame, *, ax: Any = None, cohort: str | None = None) -> Any:
    """Reliability curves with bootstrap bands (``operating_points.calibration_curve``).

    Per bin: mean score (x) against the fraction of positives (y) with its bootstrap
    interval [ci_low, ci_high] as a vertical bar; one panel per cohort; dotted diagonal =
    perfect calibration.
    """
    from matplotlib.lines import Line2D

    what = "plot_calibration_curves"
    df = _rows(table, ["model", "cohort", "mean_score", "fraction_positive", "ci_low", "ci_high"],
               what, cohort=cohort)
    models = sorted(_uniq(df["model"]))
    styles = model_styles(models)

    def draw(a: Any, key: tuple, g: pd.DataFrame) -> tuple[list, list]:
        a.plot([0, 1], [0, 1], color=GREY, lw=0.8, ls=":", zorder=1, label="_diagonal")
        for j, m in enumerate(models):
            gm = g[g["model"] == m]
            if gm.empty:
                continue
            x, y = _num_col(gm, "mean_score"), _num_col(gm, "fraction_positive")
            lo, hi = _num_col(gm, "ci_low"), _num_col(gm, "ci_high")
            ok = np.isfinite(lo) & np.isfinite(hi)
            col = styles[m][0]
            if ok.any():
                a.errorbar(x[ok], (lo[ok] + hi[ok]) / 2, yerr=(hi[ok] - lo[ok]) / 2, fmt="none",
                           ecolor=col, elinewidth=1.0, capsize=2.0, alpha=0.8, zorder=2,
                           label="_band")
            a.plot(x, y, color=col, lw=1.1, ls=_dash(m, models), marker=MARKERS[j % len(MARKERS)],
                   ms=4, zorder=3, label=lit(m))
        a.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), aspect="equal", xlabel="mean score in bin",
              ylabel="fraction positive in bin")
        crit = ", ".join(criterion_label(c) for c in _uniq(g["criterion"])) if "criterion" in g else ""
        a.set_title(lit(f"{key[0]}, prompt {_one(g, 'prompt')}\n{crit}"))
        h, lab = _model_handles(styles, models, line=True)
        return h + [Line2D([], [], linestyle=":", color=GREY)], lab + [
            "diagonal: perfect calibration"]

    return _panels(df, ["cohort"], ax, draw, title="Reliability curves with bootstrap intervals",
                   ncols=3, size=(3.0, 3.2), what=what)
