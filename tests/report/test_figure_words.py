"""Figures a colleague can read (issue 16 item 6): words instead of table ids, one y scale where
panels are compared, ten distinct colours, no "-0.000".

Witnesses: the block tables themselves (every id a figure could leak is collected from the
``criterion``, ``design``, ``estimator`` and ``rule`` columns it was drawn from), the text of
the rendered SVG files and the matplotlib artists, and matplotlib's own ``tab10`` colours.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from medaudit.blocks import agreement as agreement_block  # noqa: E402
from medaudit.blocks import error_structure as es  # noqa: E402
from medaudit.report import figures as F  # noqa: E402
from medaudit.report._figures_blocks import plot_prevalence, plot_prompt_heatmap, plot_risk_coverage  # noqa: E402
from medaudit.report._figures_estimators import plot_estimator_budget  # noqa: E402
from medaudit.report.labels import ESTIMATORS, criterion_label, design_label  # noqa: E402
from tests._support import run  # noqa: E402
from tests.blocks.test_agreement import _ctx as agreement_ctx  # noqa: E402
from tests.blocks.test_error_structure import make_ctx as error_ctx  # noqa: E402
from tests.report.test_figures import tables  # noqa: E402,F401 - the shared fixture

#: ids the issue names; each must be among the ids the fixture tables hold (so the check bites)
NAMED = ("ordinary+paired", "reliability[n_bins=10]", "roc_auc_difference",
         "soft_roc_auc[ties=grouped]")
NEG_ZERO = re.compile(r"(?<![0-9.])[-−]0\.0+(?![0-9])")


def _label_uncertainty_tables() -> dict[str, pd.DataFrame]:
    gen = np.random.default_rng(3)
    crits = ("roc_auc", "average_precision[ties=pooled]", "soft_roc_auc[ties=grouped]",
             "soft_average_precision[ties=grouped]")
    metrics = pd.DataFrame([{"cohort": c, "model": m, "criterion": k, "estimate": gen.uniform(.5, .9),
                             "design": "point_estimate"}
                            for c in ("border", "colour") for m in ("m1", "m2", "m3") for k in crits])
    stab = pd.DataFrame([{"cohort": c, "criterion": k, "correlation": r, "estimate": 0.7,
                          "ci_low": 0.5, "ci_high": 0.9, "design": "annotation_bootstrap",
                          "n_resamples": 50}
                         for c in ("border", "colour") for k in crits for r in ("spearman", "kendall")])
    agree = pd.DataFrame([{"cohort": c, "criterion": k, "r2": 0.4}
                          for c in ("border", "colour") for k in crits[2:]])
    return {"metrics": metrics, "stability": stab, "agreement": agree}


@pytest.fixture(scope="module")
def all_tables(tables):  # noqa: F811 - the fixture imported above
    out = {b: dict(t) for b, t in tables.items()}
    out["label_uncertainty"] = _label_uncertainty_tables()
    out["agreement"] = dict(run(agreement_block, agreement_ctx()).tables)
    out["error_structure"] = dict(run(es, error_ctx(n_resamples=50)).tables)
    return out


def _ids(by_block) -> set[str]:
    """Every id the drawn tables hold in an id column (words without '_', '[', '+' excluded)."""
    out = set()
    for block in by_block.values():
        for t in block.values():
            for col in ("criterion", "design", "estimator", "rule", "threshold_rule", "policy"):
                if col in t.columns:
                    out |= {str(v) for v in t[col].dropna().unique() if re.search(r"[_\[+(]", str(v))}
    return out


def _svg_text(svg: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", x).strip() for x in re.findall(r"<text\b[^>]*>(.*?)</text>", svg, re.S)]


def _artist_text(fig) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_no_table_id_in_any_title_axis_legend_or_tick(all_tables):
    ids = _ids(all_tables)
    assert set(NAMED) <= ids, set(NAMED) - ids
    figures = F.render_all(all_tables)
    assert {f.name for f in figures} >= {"fig1_discrimination", "fig2_prompt_contrasts",
                                         "fig4_reliability", "fig9_soft_vs_ordinary",
                                         "fig11_error_rates", "fig12_estimator_budget"}
    for f in figures:
        texts = _svg_text(f.svg)
        assert texts, f.name  # svg.fonttype none: the words are text, readable here
        leaked = sorted({i for i in ids for t in texts if i in t})
        assert not leaked, (f.name, leaked)
        assert not [t for t in texts if NEG_ZERO.search(t)], f.name


def test_words_come_from_one_mapping(all_tables):
    """The words drawn are the mapping's words (so tables' tooltips and figures agree)."""
    ax = F.plot_discrimination(all_tables["discrimination"]["metrics"])
    assert ax.get_title().startswith(criterion_label("roc_auc") + " by cohort")
    ticks = " ".join(t.get_text() for t in ax.get_xticklabels()).replace("\n", " ")
    assert design_label("ordinary+paired") in ticks and "ordinary+paired" not in ticks
    fig = F.plot_reliability(all_tables["discrimination"]["reliability"]).figure
    assert "Reliability diagram, reliability (10 bins)" in fig.get_suptitle()


def test_heatmap_prints_no_negative_zero(all_tables):
    t = all_tables["prompts"]["contrasts"].copy()
    t["estimate"] = t["estimate"].astype(float)
    t.iloc[0, t.columns.get_loc("estimate")] = -0.0002
    t.iloc[1, t.columns.get_loc("estimate")] = 0.0002
    t.iloc[2, t.columns.get_loc("estimate")] = -0.0123
    ax = plot_prompt_heatmap(t)
    cells = [x.get_text().rstrip("*") for x in ax.texts]
    assert "-0.000" not in cells and "+0.000" not in cells and cells.count("0.000") >= 2
    assert "-0.012" in cells
    assert not [s for s in _artist_text(ax.figure) if NEG_ZERO.search(s)]


def _panels(fig):
    return [a for a in fig.axes if a.get_visible() and a.get_label() != "<colorbar>"]


@pytest.mark.parametrize("what", ["prevalence", "risk_coverage", "estimator_budget"])
def test_compared_panels_share_one_y_scale(all_tables, what):
    if what == "prevalence":
        fig = plot_prevalence(all_tables["prevalence"]["metrics"]).figure
    elif what == "risk_coverage":
        fig = plot_risk_coverage(all_tables["operating_points"]["risk_coverage"]).figure
    else:
        fig = plot_estimator_budget(all_tables["agreement"]["fixed_policy_summary"])
    axes = _panels(fig)
    assert len(axes) >= 2
    for a in axes[1:]:
        assert axes[0].get_shared_y_axes().joined(axes[0], a)
        assert a.get_ylim() == axes[0].get_ylim()
        # every panel still shows its own tick labels (it is read on its own too)
        assert any(t.get_text() for t in a.get_yticklabels())


def test_ten_estimators_get_ten_distinct_colours():
    from matplotlib import colormaps

    keys = sorted(ESTIMATORS)
    assert len(keys) == 10
    rows = [{"model": "m", "cohort": "c", "criterion": "ece[n_bins=10]", "budget": b, "estimator": e,
             "estimate": 0.1 + 0.01 * i + 0.001 * b, "std": 0.01, "estimator_family": "iii"}
            for i, e in enumerate(keys) for b in (0, 25, 50)]
    fig = plot_estimator_budget(pd.DataFrame(rows))
    lines = [ln for ln in fig.axes[0].get_lines() if ln.get_label() in keys]
    colours = {to_hex(ln.get_color()) for ln in lines}
    assert len(lines) == 10 and len(colours) == 10
    assert colours == {to_hex(c) for c in colormaps["tab10"].colors}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == [ESTIMATORS[k] for k in keys]  # words, in table order


def test_words_keep_figures_byte_identical(all_tables):
    a = F.render_figure("fig12_estimator_budget", all_tables)
    b = F.render_figure("fig12_estimator_budget", all_tables)
    assert a.png == b.png and a.svg == b.svg
