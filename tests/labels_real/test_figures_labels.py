"""Paper 001 figures: drawn from label_uncertainty tables only; PNGs written and non-blank.

Structural witnesses: number of panels (cohorts x metric pairs), one point per model per
panel at the (ordinary, soft) values of the table, the R^2 of the agreement table in the
title, error bars spanning the table's ci_low..ci_high.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from medaudit.report._figures_labels import plot_rank_stability, plot_soft_vs_ordinary

MODELS = ("m1", "m2", "m3")
CRIT = ("roc_auc", "average_precision[ties=pooled]", "soft_roc_auc", "soft_average_precision")


def _tables():
    rng = np.random.default_rng(0)
    rows, st, ag = [], [], []
    for c in ("asymmetry", "border"):
        for m in MODELS:
            for k in CRIT:
                rows.append({"cohort": c, "model": m, "criterion": k,
                             "estimate": float(rng.uniform(0.5, 0.9))})
        for k in CRIT:
            for corr in ("spearman", "kendall"):
                e = float(rng.uniform(0.3, 0.9))
                st.append({"cohort": c, "criterion": k, "correlation": corr, "estimate": e,
                           "ci_low": e - 0.2, "ci_high": min(1.0, e + 0.2)})
        for k in ("soft_roc_auc", "soft_average_precision"):
            ag.append({"cohort": c, "criterion": k, "r2": 0.123 if k == "soft_roc_auc" else 0.456})
    return pd.DataFrame(rows), pd.DataFrame(st), pd.DataFrame(ag)


def _png(fig) -> np.ndarray:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    from matplotlib.image import imread

    buf.seek(0)
    return imread(buf)


def test_soft_vs_ordinary_panels_points_and_r2(tmp_path):
    metrics, _, agreement = _tables()
    fig = plot_soft_vs_ordinary(metrics, agreement)
    assert len(fig.axes) == 2 * 2  # cohorts x metric pairs
    titles = [a.get_title() for a in fig.axes]
    assert "asymmetry: AUROC, R² = 0.123" in titles and "border: AP, R² = 0.456" in titles
    ax = fig.axes[0]
    pts = {(float(line.get_xdata()[0]), float(line.get_ydata()[0])) for line in ax.lines}
    sub = metrics[metrics["cohort"] == "asymmetry"].pivot(index="model", columns="criterion",
                                                            values="estimate")
    assert pts == {(sub.loc[m, "roc_auc"], sub.loc[m, "soft_roc_auc"]) for m in MODELS}
    img = _png(fig)
    assert img.std() > 0.01  # not blank
    path = tmp_path / "fig_soft.png"
    fig.savefig(path)
    assert path.stat().st_size > 5000


def test_rank_stability_bars_follow_table():
    _, stability, _ = _tables()
    fig = plot_rank_stability(stability)
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    segs = [s for coll in ax.collections for s in coll.get_segments()]
    spans = sorted((round(float(s[0][1]), 9), round(float(s[1][1]), 9)) for s in segs)
    sub = stability[stability["cohort"] == "asymmetry"]
    assert spans == sorted(zip(sub["ci_low"].round(9), sub["ci_high"].round(9), strict=True))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["AUROC", "AP", "s-AUROC", "s-AP"]
    assert _png(fig).std() > 0.01


def test_given_ax_needs_one_panel():
    metrics, stability, agreement = _tables()
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    with pytest.raises(ValueError, match="select one"):
        plot_soft_vs_ordinary(metrics, agreement, ax=ax)
    fig = plot_soft_vs_ordinary(metrics, agreement, ax=ax, cohort="border", pair="roc_auc")
    assert fig is ax.figure and len(ax.lines) == len(MODELS)
    fig = plot_rank_stability(stability, ax=ax, cohort="border")
    assert fig is ax.figure
