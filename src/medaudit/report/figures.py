"""Figures of an audit report, drawn from the block tables only (paper 000 Figures 1-7 and more).

Each ``plot_x(table, *, ax=None, ...)`` takes one tidy block table and returns a
matplotlib ``Axes``; it reads point estimates and intervals from the table and computes
no statistic.  :func:`render_all` renders every figure whose table is present and
non-empty, in a fixed order, to PNG (dpi 110) and SVG with a caption that names the
source table, the criterion, the resampling design and B; :func:`save_figures` writes
them as ``<name>.png`` and ``<name>.svg``.

Rendering is deterministic: fixed figure sizes (a function of the table's shape only),
the matplotlib default style plus a fixed report style, ``svg.hashsalt`` set and no
dates or software strings in the files, so the same tables give byte-identical output
(with the same matplotlib and fonts).  matplotlib is imported lazily and used through
:class:`~matplotlib.figure.Figure` with an Agg canvas: no pyplot, no global backend.

Colours come from one qualitative palette of ten (matplotlib's tab10, with markers and
line styles varying too), so up to ten models or estimators never share a colour; the
heatmap uses the diverging ``PuOr`` map centred at 0.  Titles, axes and legends name
metrics, designs, rules and estimators in words (:mod:`medaudit.report.labels`), never by
their table ids; panels that are compared share one y scale.  Captions keep the ids, as
they point the reader at the table rows.  Captions contain user strings (model and cohort
names) verbatim: HTML output must escape them (the SVG writer escapes text itself).

Figures, their source tables and drawing functions:

* ``fig1_discrimination``: ``discrimination.metrics`` (roc_auc), :func:`plot_discrimination`
* ``fig2_prompt_contrasts``: ``prompts.contrasts``, :func:`plot_prompt_heatmap`
* ``fig3_spectrum``: ``spectrum.groups`` (roc_auc), :func:`plot_spectrum`
* ``fig4_reliability``: ``discrimination.reliability``, :func:`plot_reliability`
* ``fig5_prevalence``: ``prevalence.metrics`` (brier_score), :func:`plot_prevalence`
* ``fig6_transport``: ``transport.transport``, :func:`plot_transport`
* ``fig7_seeds``: ``retained.seeds`` and ``retained.comparisons``, :func:`plot_seeds`
  (with :func:`plot_retained_delta`; both drawn in this module, the others in
  ``_figures_blocks``)
* ``fig8_risk_coverage``: ``operating_points.risk_coverage``, :func:`plot_risk_coverage`
* ``fig13_roc_curves``: ``operating_points.roc_curve`` (with ``roc_band``, ``operating_points``
  and ``threshold_metrics``), :func:`plot_roc_curves`
* ``fig14_pr_curves``: ``operating_points.pr_curve`` (with ``threshold_metrics``),
  :func:`plot_pr_curves`
* ``fig15_calibration_curves``: ``operating_points.calibration_curve``,
  :func:`plot_calibration_curves` (the curve figures are drawn in ``_figures_curves``)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit.report._figures_blocks import (
    DPI,
    GREY,
    PALETTE,
    _design,
    _exposed,
    _group_axis,
    _model_handles,
    _new_figure,
    _offsets,
    _one,
    _Points,
    _rows,
    _styled,
    _uniq,
    _ylim_from,
    figure_bytes,
    lit,
    model_styles,
    plot_discrimination,
    plot_prevalence,
    plot_prompt_heatmap,
    plot_reliability,
    plot_risk_coverage,
    plot_spectrum,
    plot_transport,
    style,
)
from medaudit.report._figures_curves import (
    plot_calibration_curves,
    plot_pr_curves,
    plot_roc_curves,
)
from medaudit.report._types import RenderedFigure, Tables
from medaudit.report.labels import criterion_label

__all__ = ["plot_discrimination", "plot_prompt_heatmap", "plot_spectrum", "plot_reliability",
           "plot_prevalence", "plot_transport", "plot_seeds", "plot_retained_delta",
           "plot_risk_coverage", "plot_roc_curves", "plot_pr_curves", "plot_calibration_curves",
           "render_all", "render_figure", "save_figures", "FIGURES", "FigureSpec", "DPI"]


# ----------------------------------------------------------------------------- Fig. 7 (drawing)
# (figures 1-6 and 8 are drawn in _figures_blocks, with the helpers used here)
@_styled
def plot_seeds(table: pd.DataFrame, *, ax: Any = None, comparisons: pd.DataFrame | None = None,
               criterion: str = "roc_auc") -> Any:
    """Per-seed AUROC (small points), mean ± SD over seeds and the seed ensemble with its interval.

    Reads ``retained.seeds`` (``kind`` = seed / seed_summary / ensemble).  With ``ax=None``
    and a non-empty ``comparisons`` table (``retained.comparisons``), or seed-paired
    difference rows, a second panel shows the retained-target difference (see
    :func:`plot_retained_delta`).
    """
    from matplotlib.lines import Line2D

    what = "plot_seeds"
    diffs = _rows(table, ["model", "cohort", "criterion", "kind", "estimate"], what)
    df = _rows(diffs, [], what, criterion=criterion)
    diffs = diffs[diffs["criterion"] != criterion]
    has_delta = (comparisons is not None and not comparisons.empty) or not diffs.empty
    own = ax is None
    if ax is None:
        fig = _new_figure(9.2 if has_delta else 6.2, 3.8)
        axes = fig.subplots(1, 2, width_ratios=[2, 1]) if has_delta else [fig.add_subplot()]
        ax = axes[0]
        if has_delta:
            plot_retained_delta(comparisons if comparisons is not None else pd.DataFrame(),
                                ax=axes[1], seeds=diffs)
    elif comparisons is not None and not comparisons.empty:
        raise ValueError(f"{what}: comparisons need a second panel; pass ax=None or call "
                         "plot_retained_delta(comparisons, ax=...).")
    cohorts, models = _uniq(df["cohort"]), sorted(_uniq(df["model"]))
    styles, offs = model_styles(models), _offsets(len(models))
    xpos = {c: i for i, c in enumerate(cohorts)}
    pts = _Points()
    for j, m in enumerate(models):
        g = df[df["model"] == m]
        _seed_marks(ax, g, [xpos[c] + offs[j] for c in g["cohort"]], styles[m][0])
        for r in g[g["kind"] == "ensemble"].itertuples():
            pts.add(xpos[r.cohort] + offs[j] + 0.08, r.estimate, getattr(r, "ci_low", None),
                    getattr(r, "ci_high", None), styles[m][0], "D", hollow=_exposed(r), ms=4.5)
    pts.draw(ax)
    _group_axis(ax, cohorts)
    _ylim_from(ax, df, 0.5, 1.0)
    ax.set_xlabel("cohort")
    ax.set_ylabel(f"{criterion_label(criterion)} at prompt {lit(_one(df, 'prompt'))}")
    ens_design = _design(df[df["kind"] == "ensemble"])
    ax.set_title(lit(f"{criterion_label(criterion)} per optimisation seed and of the seed ensemble\n"
                     f"prompt {_one(df, 'prompt')} · ensemble interval: {ens_design}"))
    h, lab = _model_handles(styles, models)
    h += [Line2D([], [], color=GREY, marker=".", linestyle="none"),
          Line2D([], [], color=GREY, marker="|", markersize=11, markeredgewidth=4, alpha=0.5,
                 linestyle="none"),
          Line2D([], [], color=GREY, marker="D", markersize=4.5)]
    lab += ["one seed", "mean ± SD over seeds", "ensemble with interval"]
    if own and has_delta:
        ax.figure.legend(h, lab, loc="outside right upper", frameon=False)
        ax.figure.suptitle("Optimisation seeds and retained-target comparison")
    else:
        ax.legend(h, lab, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
    return ax


def _seed_marks(ax: Any, g: pd.DataFrame, x: Sequence[float], color: str) -> None:
    """Rows of kind ``seed`` as small dots left of x, ``seed_summary`` as a bar mean ± ``sd``."""
    x = np.asarray(x, dtype=float)
    est = pd.to_numeric(g["estimate"], errors="coerce").to_numpy(float)
    kind = g["kind"].astype(str).to_numpy()
    seed = kind == "seed"
    if seed.any():
        ax.plot(x[seed] - 0.06, est[seed], linestyle="none", marker=".", markersize=4, color=color,
                alpha=0.6, label="_nolegend_")
    sd = pd.to_numeric(g["sd"], errors="coerce").to_numpy(float) if "sd" in g else np.full(len(g), np.nan)
    summ = (kind == "seed_summary") & np.isfinite(est) & np.isfinite(sd)
    if summ.any():
        ax.errorbar(x[summ], est[summ], yerr=sd[summ], fmt="_", color=color, markersize=10, capsize=0,
                    elinewidth=4, alpha=0.5, label="_nolegend_")


@_styled
def plot_retained_delta(table: pd.DataFrame, *, ax: Any = None, seeds: pd.DataFrame | None = None) -> Any:
    """AUROC(b) - AUROC(a) on the retained targets per cohort (``retained.comparisons``), with the
    bootstrap interval, and the seed-paired differences (``retained.seeds`` rows with
    ``criterion == "roc_auc_difference"``) as small points with mean ± SD."""
    parts = [t for t in (table, seeds) if t is not None and not t.empty]
    if not parts:
        raise ValueError("plot_retained_delta: the tables are empty; nothing to draw.")
    if ax is None:
        ax = _new_figure(3.8, 3.4).add_subplot()
    cohorts = _uniq(pd.concat([p["cohort"] for p in parts]))
    pairs = sorted(_uniq(pd.concat([p["model"] for p in parts])))
    # differences get their own colours (black first, then the palette from its end), not
    # those of the first models they compare
    colours = ("#000000", *PALETTE[::-1])
    styles = {p: (colours[i % len(colours)], "D") for i, p in enumerate(pairs)}
    offs = _offsets(len(pairs), 0.5)
    xpos, pts = {c: i for i, c in enumerate(cohorts)}, _Points()
    for j, pr in enumerate(pairs):
        if table is not None and not table.empty:
            for r in table[table["model"] == pr].itertuples():
                pts.add(xpos[r.cohort] + offs[j] + 0.04, r.estimate, r.ci_low, r.ci_high, styles[pr][0],
                        "D", ms=4.5)
        if seeds is not None and not seeds.empty:
            g = seeds[seeds["model"] == pr]
            _seed_marks(ax, g, [xpos[c] + offs[j] - 0.1 for c in g["cohort"]], styles[pr][0])
    pts.draw(ax)
    ax.axhline(0.0, color=GREY, lw=0.8, ls=":")
    _group_axis(ax, cohorts)
    ax.set_xlabel("cohort (retained targets)")
    ax.set_ylabel("ΔAUROC (b − a)")
    design = _design(table) if table is not None and not table.empty else "paired by seed"
    ax.set_title(lit(f"ΔAUROC on the retained targets\n{', '.join(pairs)} · {design}"))
    return ax


# ----------------------------------------------------------------------------- caption parts
def _table(tables: Tables, block: str, name: str) -> pd.DataFrame | None:
    t = (tables.get(block) or {}).get(name)
    if t is None:
        return None
    if not isinstance(t, pd.DataFrame):  # records, as read back from results.json
        t = pd.DataFrame(t)
    return None if t.empty else t


def _where(t: pd.DataFrame | None, **eq: Any) -> pd.DataFrame | None:
    if t is None:
        return None
    for col, val in eq.items():
        if col not in t.columns:
            return None
        t = t[t[col].astype(str) == str(val)]
    return None if t.empty else t


def _names(values: Any) -> list[str]:
    return [str(v) for v in dict.fromkeys(values)
            if v is not None and not (isinstance(v, float) and math.isnan(v))]


def _designs(df: pd.DataFrame, by: str = "cohort") -> str:
    """``design ordinary+paired (montgomery, shenzhen); within_label+paired (vindr)``."""
    if "design" not in df.columns:
        return ""
    groups: dict[str, list[str]] = {}
    for d, c in zip(df["design"], df[by] if by in df.columns else [""] * len(df), strict=True):
        if d is None or (isinstance(d, float) and math.isnan(d)):
            continue
        groups.setdefault(str(d), [])
        if str(c) and str(c) not in groups[str(d)]:
            groups[str(d)].append(str(c))
    if not groups:
        return ""
    if len(groups) == 1:
        return f"Design: {next(iter(groups))}."
    return "Design: " + "; ".join(f"{d} ({', '.join(cs)})" for d, cs in groups.items()) + "."


def _b(df: pd.DataFrame) -> str:
    if "n_resamples" not in df.columns:
        return ""
    bs = sorted({int(v) for v in pd.to_numeric(df["n_resamples"], errors="coerce").dropna()})
    return f"B = {', '.join(str(b) for b in bs)} resamples." if bs else ""


def _exposure_note(df: pd.DataFrame) -> str:
    if "qualification" not in df.columns:
        return ""
    q = df[df["qualification"].astype(str).str.lower().str.contains("exposure", regex=False)]
    cells = _names(f"{m} on {c}" for m, c in zip(q["model"], q["cohort"], strict=True))
    return (f"Hollow markers: exposure qualification ({', '.join(cells)}); see the table's "
            "qualification column.") if cells else ""


def _caption(*parts: str) -> str:
    return " ".join(p for p in parts if p)


# ----------------------------------------------------------------------------- the figures
@dataclass(frozen=True, slots=True)
class FigureSpec:
    """One report figure as data: the table it is drawn from, how, and what its caption says.

    Attributes
    ----------
    stem : str
        File stem, ``fig<number>_<what>``; the number is the figure's number in the report.
    block, table : str
        The source table ``tables[block][table]``; the figure is left out when it is absent
        or empty.
    title : str or callable
        The title after ``Figure <number>.``; a callable gets the tables (a title that
        depends on which companion tables are present).
    draw : callable
        ``draw(rows, tables) -> Axes`` (an axes of the figure to save).
    caption : callable
        ``caption(rows, tables) -> str``: what is drawn, from which table, design and B.
    criterion : str, optional
        Keep only the rows of this criterion (no such rows, or no ``criterion`` column: no
        figure).
    needs : callable, optional
        ``needs(rows) -> bool``: a further condition on the rows for the figure to be drawn.
    """

    stem: str
    block: str
    table: str
    title: str | Callable[[Tables], str]
    draw: Callable[[pd.DataFrame, Tables], Any]
    caption: Callable[[pd.DataFrame, Tables], str]
    criterion: str | None = None
    needs: Callable[[pd.DataFrame], bool] | None = None

    def rows(self, tables: Tables) -> pd.DataFrame | None:
        """The rows the figure is drawn from; None when it is not drawn."""
        t = _table(tables, self.block, self.table)
        if self.criterion is not None:
            t = _where(t, criterion=self.criterion)
        return None if t is None or (self.needs is not None and not self.needs(t)) else t

    def render(self, tables: Tables) -> RenderedFigure | None:
        """Draw the figure to PNG and SVG; None when its rows are absent."""
        with style():
            t = self.rows(tables)
            if t is None:
                return None
            ax = self.draw(t, tables)
            title = self.title if isinstance(self.title, str) else self.title(tables)
            caption = self.caption(t, tables)
        number = self.stem.split("_", 1)[0].removeprefix("fig")
        png, svg = figure_bytes(ax.figure)
        return RenderedFigure(name=self.stem, block=self.block, title=f"Figure {number}. {title}",
                              caption=caption, png=png, svg=svg)


def _prompts(t: pd.DataFrame) -> str:
    return ", ".join(_names(t["prompt"]))


def _fig2_caption(t: pd.DataFrame, _: Tables) -> str:
    fams = _names(f for f in t["family"] if str(f) != "descriptive") if "family" in t else []
    n_sig = int(t["significant"].map(lambda v: v is True or str(v).lower() == "true").sum()) \
        if "significant" in t else 0
    return _caption(
        f"AUROC(alternative) − AUROC({', '.join(_names(t['prompt_b']))}) per cohort and model "
        "(criterion roc_auc_difference, column estimate) from table prompts.contrasts.",
        _designs(t, by="family"),
        f"* = significant after Benjamini-Hochberg within family {', '.join(fams) or 'n/a'} "
        f"({n_sig} cell(s)); hatched cells are descriptive (not in the tested family).")


def _fig7_draw(t: pd.DataFrame, tables: Tables) -> Any:
    return plot_seeds(t, comparisons=_table(tables, "retained", "comparisons"))


def _fig7_caption(t: pd.DataFrame, tables: Tables) -> str:
    comp = _table(tables, "retained", "comparisons")
    extra = ""
    if comp is not None:
        extra = _caption("Right: AUROC(b) − AUROC(a) on the retained targets with interval "
                         "[ci_low, ci_high] from table retained.comparisons (diamonds) and the "
                         "seed-paired differences with mean ± SD.", _designs(comp), _b(comp))
    return _caption(
        "AUROC (criterion roc_auc) of each optimisation seed (dots), mean ± SD over seeds "
        "(bar; the SD describes optimisation variability, not a confidence interval) and the "
        "seed ensemble with its interval (diamond), from table retained.seeds.",
        _designs(t[t["kind"] == "ensemble"]) if "kind" in t else "", extra)


# the paper 001/002 figures import their drawing modules when drawn, not with the report
def _fig9_draw(t: pd.DataFrame, tables: Tables) -> Any:
    from medaudit.report._figures_labels import plot_soft_vs_ordinary

    return plot_soft_vs_ordinary(t, _table(tables, "label_uncertainty", "agreement")).axes[0]


def _fig10_draw(t: pd.DataFrame, _: Tables) -> Any:
    from medaudit.report._figures_labels import plot_rank_stability

    return plot_rank_stability(t).axes[0]


def _fig11_draw(t: pd.DataFrame, _: Tables) -> Any:
    from medaudit.report._figures_agreement import plot_error_rates

    return plot_error_rates(t).axes[0]


def _fig11_caption(t: pd.DataFrame, _: Tables) -> str:
    from medaudit.report._figures_agreement import error_rates_caption

    return error_rates_caption(t)


def _fig12_draw(t: pd.DataFrame, _: Tables) -> Any:
    from medaudit.report._figures_estimators import plot_estimator_budget

    return plot_estimator_budget(t, criterion=_BUDGET_CRITERION).axes[0]


_BUDGET_CRITERION = "ece[n_bins=10]"


def _threshold_note(tm: pd.DataFrame | None, what: str) -> str:
    if tm is None:
        return ""
    srcs = ", ".join(_names(tm["threshold_rule"])) if "threshold_rule" in tm else ""
    return (f"Large markers: {what} at each threshold of table operating_points.threshold_metrics "
            f"(threshold source {srcs}; one marker shape per source).")


def _ops(tables: Tables, name: str) -> pd.DataFrame | None:
    return _table(tables, "operating_points", name)


def _band_note(band: pd.DataFrame | None, what: str) -> str:
    return "" if band is None else _caption(what, _designs(band), _b(band))


def _fig13_caption(t: pd.DataFrame, tables: Tables) -> str:
    band, ops = _ops(tables, "roc_band"), _ops(tables, "operating_points")
    return _caption(
        "Empirical ROC curve (1 − specificity against sensitivity at every observed threshold, "
        f"decision s ≥ threshold) of every model at prompt {_prompts(t)}, "
        "from table operating_points.roc_curve.",
        _band_note(band, "Shaded: pointwise interval of the sensitivity at fixed specificities "
                   "(table operating_points.roc_band, pROC's ci.se)."),
        "Diamonds: sensitivity at specificity ≥ x drawn at FPR = 1 − x with its interval; "
        "squares: specificity at sensitivity ≥ x drawn at TPR = x (table "
        "operating_points.operating_points)." if ops is not None else "",
        _threshold_note(_ops(tables, "threshold_metrics"), "(1 − specificity, sensitivity)"),
        "Dotted diagonal: chance.")


def _fig14_caption(t: pd.DataFrame, tables: Tables) -> str:
    band = _ops(tables, "pr_band")
    return _caption(
        "Precision (PPV) against recall (sensitivity) at every observed threshold of every model "
        f"at prompt {_prompts(t)}, from table "
        "operating_points.pr_curve; dotted line: the cohort's prevalence.",
        _band_note(band, "Shaded: pointwise interval of the precision at fixed recalls (table "
                   "operating_points.pr_band)."),
        _threshold_note(_ops(tables, "threshold_metrics"), "(recall, PPV at the cohort's prevalence)"))


#: every report figure, in report order
FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(
        "fig1_discrimination", "discrimination", "metrics", "AUROC by cohort and model",
        lambda t, _: plot_discrimination(t), criterion="roc_auc",
        caption=lambda t, _: _caption(
            f"AUROC (criterion roc_auc) of every model on every cohort at prompt {_prompts(t)}: "
            "point estimate and interval [ci_low, ci_high] from table discrimination.metrics.",
            _designs(t), _b(t), _exposure_note(t), "Dotted line: AUROC 0.5.")),
    FigureSpec(
        "fig2_prompt_contrasts", "prompts", "contrasts", "ΔAUROC vs the primary prompt family",
        lambda t, _: plot_prompt_heatmap(t), _fig2_caption, criterion="roc_auc_difference"),
    FigureSpec(
        "fig3_spectrum", "spectrum", "groups", "AUROC by negative group",
        lambda t, _: plot_spectrum(t), criterion="roc_auc",
        caption=lambda t, _: _caption(
            "AUROC of the positives against each negative (control) group, per model (criterion "
            "roc_auc), with intervals [ci_low, ci_high], from table spectrum.groups; lines join "
            "the groups of one model, which share the positives.",
            _designs(t), _b(t), _exposure_note(t))),
    FigureSpec(
        "fig4_reliability", "discrimination", "reliability", "Reliability diagrams",
        lambda t, _: plot_reliability(t),
        lambda t, _: _caption(
            "Mean score vs observed fraction positive per equal-width bin "
            f"({', '.join(_names(t['criterion'])) if 'criterion' in t else 'reliability'}) at "
            f"prompt {_prompts(t)}, from table discrimination.reliability; marker area "
            "proportional to the number of images in the bin; empty bins omitted; dotted "
            "diagonal = perfect calibration.", _designs(t))),
    FigureSpec(
        "fig5_prevalence", "prevalence", "metrics", "Prevalence-weighted Brier score across π",
        lambda t, _: plot_prevalence(t), criterion="brier_score",
        caption=lambda t, _: _caption(
            "Brier score with positives weighted π and negatives 1 − π (criterion brier_score; "
            "scores unchanged), per model, with interval bands [ci_low, ci_high], from table "
            "prevalence.metrics; dotted line: the entry's primary π.", _designs(t), _b(t))),
    FigureSpec(
        "fig6_transport", "transport", "transport",
        "Transported thresholds: target sensitivity and specificity",
        lambda t, _: plot_transport(t),
        lambda t, _: _caption(
            "Sensitivity and specificity on each target cohort at the threshold τ chosen on the "
            "source cohort (criterion sensitivity / specificity, rule in the panel title), with "
            "intervals [ci_low, ci_high], from table transport.transport; dashed line: the "
            "rule's constraint (target_value) on the constrained metric; 'τ fixed' marks targets "
            "resampled with τ held fixed.", _designs(t), _b(t), _exposure_note(t))),
    FigureSpec(
        "fig7_seeds", "retained", "seeds", "Optimisation seeds", _fig7_draw, _fig7_caption,
        needs=lambda t: _where(t, criterion="roc_auc") is not None),
    FigureSpec(
        "fig8_risk_coverage", "operating_points", "risk_coverage", "Risk-coverage curves",
        lambda t, _: plot_risk_coverage(t),
        lambda t, _: _caption(
            "Selective risk (error rate of the decision s ≥ threshold among the most confident "
            "images, confidence max(s, 1 − s)) against coverage k/n, per model (criterion "
            f"{', '.join(_names(t['criterion']))}; point estimates), from table "
            "operating_points.risk_coverage.", _designs(t))),
    FigureSpec(
        "fig9_soft_vs_ordinary", "label_uncertainty", "metrics",
        "Ordinary vs soft metrics across models", _fig9_draw,
        lambda t, _: _caption(
            "Each model's ordinary metric against the aggregated hard label (x) and its soft "
            "counterpart against the soft label (y), one panel per cohort and metric pair, from "
            "table label_uncertainty.metrics; R² in each title is the Pearson R² across models "
            "from table label_uncertainty.agreement (paper 001 Fig. 1).", _designs(t), _b(t))),
    FigureSpec(
        "fig10_rank_stability", "label_uncertainty", "stability",
        "Ranking stability under annotation resampling", _fig10_draw,
        lambda t, _: _caption(
            "Mean (marker) and percentile range (bar) over the annotation-bootstrap replicates "
            "of the rank correlation (Spearman ρ, Kendall τ-b) between each replicate's model "
            "ranking and the original ranking, per metric (ordinary vs soft), from table "
            "label_uncertainty.stability (each item's annotations resampled with replacement).",
            _designs(t), _b(t))),
    FigureSpec(
        "fig11_error_rates", "error_structure", "rates",
        "False-positive and false-negative rates by institution", _fig11_draw, _fig11_caption),
    FigureSpec(
        "fig12_estimator_budget", "agreement", "fixed_policy_summary",
        "Estimator calibration error against the target label budget", _fig12_draw,
        lambda t, _: _caption(
            "ECE (10 equal-width bins) of each reliability estimator's predicted agreement on "
            "the held-out target rows against the number of target labels used "
            "(leave-one-institution-out; mean over repeats with ± one SD band), per model and "
            "target institution, from table agreement.fixed_policy_summary (paper 002 Figs. 1-2).",
            "Budgets: " + ", ".join(_names(t["budget"])) + "." if "budget" in t else ""),
        needs=lambda t: _BUDGET_CRITERION in set(t["criterion"].astype(str))),
    FigureSpec(
        "fig13_roc_curves", "operating_points", "roc_curve",
        "ROC curves with bands and operating points",
        lambda t, tables: plot_roc_curves(t, band=_ops(tables, "roc_band"),
                                          operating_points=_ops(tables, "operating_points"),
                                          threshold_metrics=_ops(tables, "threshold_metrics")),
        _fig13_caption),
    FigureSpec(
        "fig14_pr_curves", "operating_points", "pr_curve",
        lambda tables: "Precision-recall curves" + (
            " with bands" if _ops(tables, "pr_band") is not None else ""),
        lambda t, tables: plot_pr_curves(t, band=_ops(tables, "pr_band"),
                                         threshold_metrics=_ops(tables, "threshold_metrics")),
        _fig14_caption),
    FigureSpec(
        "fig15_calibration_curves", "operating_points", "calibration_curve",
        "Reliability curves with bootstrap intervals", lambda t, _: plot_calibration_curves(t),
        lambda t, _: _caption(
            "Mean score against the observed fraction of positives per bin "
            f"({', '.join(_names(t['criterion']))}; equal_mass: bin edges at score quantiles) "
            "with the bootstrap interval of the fraction (bars; bins fixed on the full sample), "
            "from table operating_points.calibration_curve; the Wilson interval of each bin is "
            "in the table (prop_low, prop_high); dotted diagonal: perfect calibration.",
            _designs(t), _b(t))),
)


def render_figure(name: str, tables: Tables) -> RenderedFigure | None:
    """Render one figure of :data:`FIGURES` by name; None when its table is absent or empty."""
    for spec in FIGURES:
        if spec.stem == name:
            return spec.render(tables)
    raise ValueError(f"unknown figure {name!r}; expected one of {[f.stem for f in FIGURES]}.")


def render_all(tables: Tables) -> list[RenderedFigure]:
    """Every figure whose source table is present and non-empty, in the order of :data:`FIGURES`.

    Parameters
    ----------
    tables : dict of block name -> table name -> DataFrame
        The block tables (``{b: r.tables for b, r in results.items()}``); tables given as
        lists of records (as in ``results.json``) are accepted.

    Returns
    -------
    list of RenderedFigure
        PNG bytes (dpi 110) and SVG text with title and caption; figures whose table is
        absent or empty are left out (names keep their fixed number).
    """
    return [f for f in (spec.render(tables) for spec in FIGURES) if f is not None]


def save_figures(figs: Sequence[RenderedFigure], directory: str | Path) -> list[Path]:
    """Write ``<name>.png`` and ``<name>.svg`` for each figure; returns the paths written."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in figs:
        png, svg = d / f"{f.name}.png", d / f"{f.name}.svg"
        png.write_bytes(f.png)
        svg.write_text(f.svg, encoding="utf-8")
        paths += [png, svg]
    return paths


__all__ += ["criterion_label"]
