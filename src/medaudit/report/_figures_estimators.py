"""Estimator calibration error against the label budget (paper 002 Figs. 1-2), from block tables.

Reads the agreement block's ``fixed_policy_summary`` table only (mean over repeats per
setting; the shaded band is +- one standard deviation over repeats, as stored in ``std``).
Nothing is computed here but positions and colours.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from medaudit.report._figures_blocks import PALETTE, _new_figure, lit, style
from medaudit.report.labels import criterion_label, estimator_label

__all__ = ["plot_estimator_budget"]

_LINES = {"i": ":", "ii": "--", "iii": "-"}


def plot_estimator_budget(table: pd.DataFrame, *, criterion: str = "ece[n_bins=10]",
                          model: str | None = None, cohort: str | None = None,
                          estimators: list[str] | None = None, ax: Any = None) -> Any:
    """Draw each estimator's mean ``criterion`` against the label budget, per deployment.

    Parameters
    ----------
    table : DataFrame
        The agreement block's ``fixed_policy_summary``.
    criterion : str, default="ece[n_bins=10]"
    model, cohort : str, optional
        Restrict to one model / target institution.
    estimators : list of str, optional
        Estimators to draw (default: all in the table, in table order).
    ax : matplotlib Axes, optional
        Draw into it (needs exactly one deployment after the selection).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per (model, target institution); line style gives the estimator family
        (dotted: constant, dashed: cross-institution, solid: target counts).
    """
    need = {"model", "cohort", "criterion", "budget", "estimator", "estimate", "std",
            "estimator_family"}
    missing = need - set(table.columns)
    if missing:
        raise ValueError(f"plot_estimator_budget needs the fixed_policy_summary table; missing "
                         f"columns {sorted(missing)}")
    df = table[table["criterion"] == criterion]
    if model is not None:
        df = df[df["model"] == model]
    if cohort is not None:
        df = df[df["cohort"] == cohort]
    if df.empty:
        raise ValueError(f"no rows for criterion={criterion!r}, model={model!r}, cohort={cohort!r}")
    ests = estimators or list(dict.fromkeys(df["estimator"]))
    panels = list(dict.fromkeys(zip(df["model"], df["cohort"], strict=False)))
    if ax is not None and len(panels) != 1:
        raise ValueError(f"drawing into a given ax needs one deployment; the selection has "
                         f"{len(panels)} (pass model= and cohort=)")
    if ax is None:
        with style():
            ncols = min(3, len(panels))
            nrows = int(np.ceil(len(panels) / ncols))
            fig = _new_figure(3.4 * ncols, 2.8 * nrows + 0.6)
            # one y scale: the deployments are compared with each other
            axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True).ravel()
            _draw(df, panels, axes, ests, criterion)
            for extra in axes[len(panels):]:
                extra.set_visible(False)
            handles, labels = axes[0].get_legend_handles_labels()
            # the lines keep the estimator ids as labels (what the table holds); the legend
            # names them in words
            fig.legend(handles, [lit(estimator_label(x)) for x in labels], loc="outside lower center",
                       ncols=min(5, len(labels)))
            fig.suptitle(f"{criterion_label(criterion)} against the label budget")
        return fig
    _draw(df, panels, [ax], ests, criterion)
    return ax.figure


def _draw(df: pd.DataFrame, panels: list, axes: Any, ests: list[str], criterion: str) -> None:
    for (m, c), ax in zip(panels, axes, strict=False):
        sub = df[(df["model"] == m) & (df["cohort"] == c)]
        for i, e in enumerate(ests):
            g = sub[sub["estimator"] == e].sort_values("budget")
            if g.empty:
                continue
            x, y = g["budget"].to_numpy(float), g["estimate"].to_numpy(float)
            sd = np.nan_to_num(g["std"].to_numpy(float))
            colour = PALETTE[i % len(PALETTE)]
            ax.plot(x, y, color=colour, linestyle=_LINES.get(g["estimator_family"].iloc[0], "-"),
                    marker="o", markersize=3, label=str(e))
            ax.fill_between(x, y - sd, y + sd, color=colour, alpha=0.12, linewidth=0)
        ax.set_title(f"{lit(m)} at {lit(c)}")
        ax.set_xlabel("label budget (judgments)")
        ax.set_ylabel(criterion_label(criterion))
        ax.yaxis.set_tick_params(labelleft=True)
