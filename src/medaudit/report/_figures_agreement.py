"""Figures of the reference-agreement blocks (paper 002), drawn from block tables only.

:func:`plot_error_rates` draws paper 002's Fig. 3: FPR and FNR per finding, one marker per
institution with its study-clustered interval, from ``error_structure.rates``.  Nothing is
computed here but positions and colours (the pattern of :mod:`._figures_blocks`).
:func:`build_error_rates` returns ``(axes, title, caption)`` for the report's figure list.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from medaudit.report._figures_blocks import (
    MARKERS,
    PALETTE,
    _f,
    _new_figure,
    _rows,
    _styled,
    _uniq,
    lit,
)
from medaudit.report.labels import criterion_label

__all__ = ["plot_error_rates", "build_error_rates", "error_rates_caption", "ERROR_RATES_TITLE"]

_COLS = ("model", "cohort", "negatives", "criterion", "estimate", "ci_low", "ci_high")


def _draw(ax: Any, sub: pd.DataFrame, cohorts: list[str], findings: list[str]) -> None:
    width = 0.7
    for j, c in enumerate(cohorts):
        g = sub[sub["cohort"].astype(str) == c]
        off = (j - (len(cohorts) - 1) / 2) * width / max(len(cohorts), 1)
        x, est, lo, hi = [], [], [], []
        for r in g.itertuples():
            x.append(findings.index(str(r.negatives)) + off)
            est.append(_f(r.estimate))
            lo.append(_f(r.ci_low))
            hi.append(_f(r.ci_high))
        x, est, lo, hi = (np.asarray(v, dtype=float) for v in (x, est, lo, hi))
        color, marker = PALETTE[j % len(PALETTE)], MARKERS[j % len(MARKERS)]
        ok = np.isfinite(lo) & np.isfinite(hi)
        if ok.any():
            ax.errorbar(x[ok], (lo[ok] + hi[ok]) / 2, yerr=(hi[ok] - lo[ok]) / 2, fmt="none",
                        ecolor=color, elinewidth=1.1, capsize=2.2, zorder=2)
        sel = np.isfinite(est)
        ax.plot(x[sel], est[sel], linestyle="none", marker=marker, markersize=5.5, color=color,
                label=lit(c), zorder=3)
    ax.set_xticks(range(len(findings)))
    ax.set_xticklabels([lit(f) for f in findings], rotation=30, ha="right")
    ax.set_xlim(-0.6, len(findings) - 0.4)
    ax.set_ylim(-0.03, 1.03)
    ax.grid(False, axis="x")


@_styled
def plot_error_rates(table: pd.DataFrame, *, ax: Any = None, model: str | None = None,
                     criterion: str | None = None) -> Any:
    """FPR and FNR by finding and institution with intervals (paper 002 Fig. 3).

    Parameters
    ----------
    table : DataFrame
        ``error_structure.rates`` (columns model, cohort, negatives, criterion, estimate,
        ci_low, ci_high).
    ax : matplotlib Axes, optional
        Draw into it; needs a one-panel selection (``model`` and ``criterion``).
    model, criterion : str, optional
        Restrict to one model / one of ``"fpr"``, ``"fnr"``.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per (criterion, model): rows FPR then FNR, columns models (sorted).
    """
    t = _rows(table, _COLS, "plot_error_rates", model=model, criterion=criterion)
    cohorts = [str(c) for c in _uniq(t["cohort"])]
    findings = sorted({str(f) for f in t["negatives"]})
    crits = [c for c in ("fpr", "fnr") if c in set(t["criterion"])] or sorted(set(t["criterion"]))
    models = sorted({str(m) for m in t["model"]})
    if ax is not None:
        if len(crits) * len(models) != 1:
            raise ValueError(f"plot_error_rates: the selection spans {len(crits)} criteria x "
                             f"{len(models)} models; pass model= and criterion= to draw into ax.")
        _draw(ax, t, cohorts, findings)
        ax.set_ylabel(criterion_label(crits[0]))
        ax.set_title(lit(models[0]))
        ax.legend(frameon=False, title="institution")
        return ax.figure
    fig = _new_figure(0.6 + 2.9 * len(models) + 1.3, 0.6 + 2.6 * len(crits))
    axes = fig.subplots(len(crits), len(models), squeeze=False, sharey=True)
    for i, crit in enumerate(crits):
        for j, m in enumerate(models):
            a = axes[i][j]
            sub = t[(t["criterion"] == crit) & (t["model"].astype(str) == m)]
            _draw(a, sub, cohorts, findings)
            if i == 0:
                a.set_title(lit(m))
            if j == 0:
                a.set_ylabel(criterion_label(crit))
            if i < len(crits) - 1:
                a.set_xticklabels([])
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", frameon=False, title="institution")
    fig.suptitle("Error rates by institution")
    return fig


def error_rates_caption(t: pd.DataFrame) -> str:
    """The caption of the error-rate figure drawn from ``error_structure.rates`` table ``t``."""
    designs = ", ".join(str(d) for d in _uniq(t["design"])) if "design" in t else ""
    b = ", ".join(str(int(_f(x))) for x in _uniq(t["n_resamples"])) if "n_resamples" in t else ""
    return ("False-positive rate #{ŷ=1, y=0}/#{y=0} and false-negative rate #{ŷ=0, y=1}/#{y=1} "
            "per finding (criteria fpr, fnr), one marker per institution, with percentile "
            f"intervals [ci_low, ci_high] from table error_structure.rates (design {designs}, "
            f"B = {b}).")


#: the title of the error-rate figure in the report
ERROR_RATES_TITLE = "False-positive and false-negative rates by institution"


def build_error_rates(tables: dict[str, dict[str, pd.DataFrame]]) -> tuple[Any, str, str] | None:
    """``(axes, title, caption)`` of the error-rate figure; None when the table is absent."""
    t = (tables.get("error_structure") or {}).get("rates")
    if t is None or len(t) == 0:
        return None
    t = t if isinstance(t, pd.DataFrame) else pd.DataFrame(t)
    return plot_error_rates(t).axes[0], ERROR_RATES_TITLE, error_rates_caption(t)
