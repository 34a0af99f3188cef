"""Paper 001 figures drawn from the ``label_uncertainty`` block's tables (nothing is computed).

* :func:`plot_soft_vs_ordinary` — ordinary vs soft metric per model (paper 001 Fig. 1):
  one panel per cohort x metric pair, the models as points, the R^2 read from the
  block's ``agreement`` table in the panel title.
* :func:`plot_rank_stability` — annotation-bootstrap stability: the mean Spearman rho
  and Kendall tau-b with the original ranking per metric (``stability`` table), with the
  spread of the replicates (``ci_low``/``ci_high``) as a bar.

Both take an optional ``ax`` (then the selection must give one panel) and return the
:class:`~matplotlib.figure.Figure`.  They follow ``_figures_blocks``: Agg canvas, no
pyplot, user strings passed through :func:`lit`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from medaudit.report._figures_blocks import (
    GREY,
    PALETTE,
    _f,
    _finite,
    _model_handles,
    _new_figure,
    _rows,
    _styled,
    _uniq,
    lit,
    model_styles,
)
from medaudit.report.labels import criterion_label

__all__ = ["plot_soft_vs_ordinary", "plot_rank_stability"]

#: paper 001's short names (tick labels side by side); other metrics by their usual name
_SHORT = {"roc_auc": "AUROC", "average_precision": "AP", "soft_roc_auc": "s-AUROC",
          "soft_average_precision": "s-AP"}


def _metric_name(criterion: Any) -> str:
    """The metric's name without its options (the panel compares the metric, not its settings)."""
    base = str(criterion).split("[", 1)[0]
    return _SHORT.get(base) or criterion_label(base)


def _soft_for(ordinary: str) -> str:
    return "soft_roc_auc" if ordinary.startswith("roc_auc") else "soft_average_precision"


@_styled
def plot_soft_vs_ordinary(metrics: pd.DataFrame, agreement: pd.DataFrame | None = None, *,
                          ax: Any = None, cohort: str | None = None, pair: str | None = None) -> Any:
    """Ordinary (x) vs soft (y) metric of each model, one panel per cohort x metric pair.

    Parameters
    ----------
    metrics : DataFrame
        ``label_uncertainty.metrics`` (``cohort, model, criterion, estimate``).
    agreement : DataFrame, optional
        ``label_uncertainty.agreement``; its ``r2`` (Pearson R^2 across models) is shown in
        each panel title.
    ax : matplotlib Axes, optional
        Draw into it; then ``cohort`` and ``pair`` must select a single panel.
    cohort : str, optional
    pair : {"roc_auc", "average_precision"}, optional
        Which metric pair (by its ordinary metric); default both.
    """
    what = "plot_soft_vs_ordinary"
    df = _rows(metrics, ["cohort", "model", "criterion", "estimate"], what, cohort=cohort)
    crit = df["criterion"].astype(str)
    ordinary = [c for c in _uniq(crit) if not c.startswith("soft_")]
    if pair is not None:
        ordinary = [c for c in ordinary if c.split("[", 1)[0] == pair]
    if not ordinary:
        raise ValueError(f"{what}: no ordinary metric {pair!r} in the table.")
    cohorts, models = _uniq(df["cohort"]), sorted(str(m) for m in _uniq(df["model"]))
    panels = [(c, o) for c in cohorts for o in ordinary]
    if ax is not None and len(panels) > 1:
        raise ValueError(f"{what}: {len(panels)} panels (cohort x metric); select one with "
                         "cohort=... and pair=... to draw into a given ax.")
    styles = model_styles(models)
    if ax is None:
        nc = min(len(ordinary) * 2, max(len(ordinary), 2), len(panels))
        nr = -(-len(panels) // nc)
        fig = _new_figure(3.1 * nc + 1.9, 2.9 * nr + 0.5)
        axes = list(fig.subplots(nr, nc, squeeze=False).flat)
        for a in axes[len(panels):]:
            fig.delaxes(a)
        fig.suptitle("Ordinary vs soft metric per model (paper 001 Fig. 1)")
    else:
        fig, axes = ax.figure, [ax]
    for a, (c, o) in zip(axes, panels, strict=False):
        s_id = _soft_for(o)
        sub = df[df["cohort"] == c]
        x = sub[sub["criterion"].astype(str) == o].set_index("model")["estimate"]
        y = sub[sub["criterion"].astype(str).str.split("[").str[0] == s_id].set_index("model")["estimate"]
        for m in models:
            if m in x.index and m in y.index and _finite(x[m], y[m]):
                color, marker = styles[m]
                a.plot([_f(x[m])], [_f(y[m])], linestyle="none", marker=marker, color=color,
                       markersize=6, label="_nolegend_")
        r2 = ""
        if agreement is not None and not agreement.empty:
            g = agreement[(agreement["cohort"].astype(str) == str(c))
                          & (agreement["criterion"].astype(str).str.split("[").str[0] == s_id)]
            if len(g) and _finite(g["r2"].iloc[0]):
                r2 = f", R² = {_f(g['r2'].iloc[0]):.3f}"
        a.set_title(lit(f"{c}: {_metric_name(o)}{r2}"))
        a.set_xlabel(_metric_name(o))
        a.set_ylabel(_metric_name(s_id))
        a.margins(0.15)
    handles, labels = _model_handles(styles, models)
    if ax is None:
        fig.legend(handles, labels, loc="outside right upper", frameon=False)
    else:
        ax.legend(handles, labels, loc="best", frameon=False)
    return fig


@_styled
def plot_rank_stability(stability: pd.DataFrame, *, ax: Any = None, cohort: str | None = None) -> Any:
    """Mean rank correlation with the original ranking per metric (annotation bootstrap).

    Reads ``label_uncertainty.stability`` (``cohort, criterion, correlation, estimate,
    ci_low, ci_high``): one panel per cohort, the four metrics on the x axis, Spearman and
    Kendall side by side; the bar spans the replicates' percentile range.
    """
    what = "plot_rank_stability"
    df = _rows(stability, ["cohort", "criterion", "correlation", "estimate", "ci_low", "ci_high"],
               what, cohort=cohort)
    cohorts = _uniq(df["cohort"])
    if ax is not None and len(cohorts) > 1:
        raise ValueError(f"{what}: {len(cohorts)} cohorts; select one with cohort=... to draw into "
                         "a given ax.")
    if ax is None:
        nc = min(3, len(cohorts))
        nr = -(-len(cohorts) // nc)
        fig = _new_figure(3.4 * nc + 1.6, 2.9 * nr + 0.5)
        axes = list(fig.subplots(nr, nc, squeeze=False, sharey=True).flat)
        for a in axes[len(cohorts):]:
            fig.delaxes(a)
        fig.suptitle("Annotation-bootstrap rank stability (paper 001 Fig. 3)")
    else:
        fig, axes = ax.figure, [ax]
    kinds = {"spearman": (PALETTE[0], "o", -0.12), "kendall": (PALETTE[1], "s", 0.12)}
    for a, c in zip(axes, cohorts, strict=False):
        sub = df[df["cohort"] == c]
        crits = _uniq(sub["criterion"].astype(str))
        for i, crit in enumerate(crits):
            for kind, (color, marker, dx) in kinds.items():
                r = sub[(sub["criterion"].astype(str) == crit) & (sub["correlation"] == kind)]
                if r.empty:
                    continue
                est, lo, hi = (_f(r[k].iloc[0]) for k in ("estimate", "ci_low", "ci_high"))
                if _finite(lo, hi):
                    a.vlines(i + dx, lo, hi, color=color, lw=1.2)
                if _finite(est):
                    a.plot([i + dx], [est], marker=marker, color=color, linestyle="none")
        a.set_xticks(range(len(crits)))
        a.set_xticklabels([_metric_name(c_) for c_ in crits])
        a.set_xlim(-0.6, len(crits) - 0.4)
        a.axhline(1.0, color=GREY, lw=0.8, ls=":")
        a.set_title(lit(str(c)))
        a.set_ylabel("rank correlation with original")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=v[0], marker=v[1], linestyle="-") for v in kinds.values()]
    labels = ["Spearman ρ (mean, percentile interval)", "Kendall τ-b (mean, percentile interval)"]
    if ax is None:
        fig.legend(handles, labels, loc="outside right upper", frameon=False)
    else:
        ax.legend(handles, labels, loc="best", frameon=False)
    return fig
