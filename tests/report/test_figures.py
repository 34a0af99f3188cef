"""Report figures: structure (not pixels) of each plot, determinism, skipping, escaping.

Witnesses: the block tables themselves.  Every count and value asserted here is read
from the table the figure was drawn from (rows, significant flags, bin counts), so a
figure that drew anything it did not read from its table would fail.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.collections import PathCollection, PolyCollection  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from medaudit.audit.context import ensemble_seeds  # noqa: E402
from medaudit.audit.run import run_blocks  # noqa: E402
from medaudit.audit.spec import AuditSpec  # noqa: E402
from medaudit.blocks import retained  # noqa: E402
from medaudit.io.schema import validate_score_table  # noqa: E402
from medaudit.report import figures as F  # noqa: E402
from medaudit.report._figures_blocks import model_styles  # noqa: E402
from tests._support import context, run
from tests.blocks.conftest import small_context  # noqa: E402

SCRIPT = "<script>alert(1)</script>"
CURVE_FIGURES = ("fig13_roc_curves", "fig14_pr_curves", "fig15_calibration_curves")


# ----------------------------------------------------------------------------- fixtures
def _seed_tables() -> dict[str, pd.DataFrame]:
    """retained.seeds / .comparisons from a tiny per-seed table (2 models x 3 seeds x 2 cohorts)."""
    gen = np.random.default_rng(11)
    rows = []
    for cohort, n in (("c1", 14), ("c2", 12)):
        y = np.r_[np.ones(n // 2), np.zeros(n - n // 2)].astype(int)
        for k, m in enumerate(("orig", "retr")):
            for s in (1, 2, 3):
                score = (gen.uniform(size=n) + (0.3 + 0.2 * k) * y) / (1.3 + 0.2 * k)
                rows += [dict(image_id=f"{cohort}-{j:02d}", cohort=cohort, model=m, prompt="p", seed=s,
                              score=float(score[j]), label=int(y[j])) for j in range(n)]
    table = validate_score_table(pd.DataFrame(rows), key=("model", "prompt", "cohort", "image_id", "seed"))
    spec = AuditSpec.model_validate({"name": "t", "scores": "t.csv", "primary_prompt": "p",
                                     "n_resamples": 50, "cohorts": {"c1": {}, "c2": {}},
                                     "retained": [{"a": "orig", "b": "retr", "cohorts": ["c1", "c2"]}]})
    ctx = context(scores=ensemble_seeds(table), spec=spec, seed_scores=table)
    return run(retained, ctx).tables


@pytest.fixture(scope="module")
def tables() -> dict[str, dict[str, pd.DataFrame]]:
    ctx = small_context()
    out = {b: dict(r.tables) for b, r in run_blocks(ctx.spec, ctx).items()}
    out["retained"] = _seed_tables()
    return out


@pytest.fixture(scope="module")
def rendered(tables):
    return F.render_all(tables)


def new_ax():
    fig = Figure(figsize=(5, 4))
    FigureCanvasAgg(fig)
    return fig.add_subplot()


def n_segments(ax) -> int:
    """Number of interval bars over all error-bar containers of an Axes."""
    return sum(len(c.lines[2][0].get_segments()) for c in ax.containers
               if isinstance(c, ErrorbarContainer) and c.lines[2])


def labelled(ax) -> None:
    assert ax.get_title() or ax.figure.get_suptitle()
    assert ax.get_xlabel() and ax.get_ylabel()


def finite_ci(df: pd.DataFrame) -> int:
    return int((np.isfinite(df["ci_low"].astype(float)) & np.isfinite(df["ci_high"].astype(float))).sum())


# ----------------------------------------------------------------------------- Fig. 1
def test_discrimination_one_interval_per_model_and_cohort(tables):
    t = tables["discrimination"]["metrics"]
    auc = t[t["criterion"] == "roc_auc"]
    models, cohorts = auc["model"].nunique(), auc["cohort"].nunique()
    ax = F.plot_discrimination(t)
    labelled(ax)
    assert "AUROC" in ax.get_title() and "clinical" in ax.get_title()
    assert len(auc) == models * cohorts and n_segments(ax) == finite_ci(auc) == models * cohorts
    assert len([c for c in ax.containers if isinstance(c, ErrorbarContainer)]) == models
    # the drawn markers are exactly the table's estimates
    ys = sorted(float(v) for line in ax.lines if line.get_marker() not in ("None", "", None, "_")
                and line.get_linestyle() == "None" for v in line.get_ydata())
    assert ys == pytest.approx(sorted(auc["estimate"].astype(float)))
    hollow = [line for line in ax.lines if line.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0))]
    exposed = auc["qualification"].str.contains("exposure")
    assert sum(len(line.get_xdata()) for line in hollow) == int(exposed.sum()) >= 1
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == list(dict.fromkeys(auc["cohort"]))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(auc["model"].unique()) == legend[:models] and any("exposure" in s for s in legend)


# ----------------------------------------------------------------------------- Fig. 2
def test_heatmap_values_stars_and_hatching(tables):
    t = tables["prompts"]["contrasts"].copy()
    tested = t.index[t["family"] != "descriptive"]
    t.loc[tested[[0, 5, 9]], "significant"] = True  # the small study has none; mark three
    ax = F.plot_prompt_heatmap(t)
    labelled(ax)
    stars = [x for x in ax.texts if x.get_text().endswith("*")]
    assert len(stars) == int((t["significant"] == True).sum()) == 3  # noqa: E712
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == int((t["family"] == "descriptive").sum())
    mesh = ax.collections[0]
    rows = [(c, m) for c in dict.fromkeys(t["cohort"]) for m in sorted(t["model"].unique())]
    cols = list(dict.fromkeys(t["prompt_a"]))
    want = t.set_index(["cohort", "model", "prompt_a"])["estimate"]
    z = np.asarray(mesh.get_array()).reshape(len(rows), len(cols))
    for i, (c, m) in enumerate(rows):
        for j, p in enumerate(cols):
            assert z[i, j] == pytest.approx(float(want[(c, m, p)]))
    norm = mesh.norm
    assert norm.vmin == -norm.vmax  # diverging map centred at 0
    assert len(ax.texts) == len(t)


def test_heatmap_without_significance_has_no_star(tables):
    ax = F.plot_prompt_heatmap(tables["prompts"]["contrasts"], ax=new_ax())
    n_sig = int((tables["prompts"]["contrasts"]["significant"] == True).sum())  # noqa: E712
    assert sum(x.get_text().endswith("*") for x in ax.texts) == n_sig


# ----------------------------------------------------------------------------- Fig. 3
def test_spectrum_lines_and_intervals_per_panel(tables):
    t = tables["spectrum"]["groups"]
    auc = t[t["criterion"] == "roc_auc"]
    ax = F.plot_spectrum(t)
    labelled(ax)
    entries = list(dict.fromkeys(auc["entry"]))
    panels = ax.figure.axes
    assert len(panels) == len(entries)
    for a, e in zip(panels, entries, strict=True):
        g = auc[auc["entry"] == e]
        models = sorted(g["model"].unique())
        lines = [line for line in a.lines if line.get_label() in models]
        assert len(lines) == len(models)
        assert n_segments(a) == finite_ci(g) == len(models) * g["group"].nunique()
        assert g["cohort"].iloc[0] in a.get_title()


# ----------------------------------------------------------------------------- Fig. 4
def test_reliability_marker_area_proportional_to_count(tables):
    t = tables["discrimination"]["reliability"]
    ax = F.plot_reliability(t)
    labelled(ax)
    cohorts = list(dict.fromkeys(t["cohort"]))
    assert len(ax.figure.axes) == len(cohorts)
    for a, c in zip(ax.figure.axes, cohorts, strict=True):
        g = t[t["cohort"] == c]
        scat = [col for col in a.collections if isinstance(col, PathCollection)]
        assert len(scat) == g["model"].nunique()
        ratios = []
        for col in scat:
            rows = g[g["model"] == col.get_label()]
            assert len(col.get_offsets()) == len(rows)  # one marker per non-empty bin
            np.testing.assert_allclose(np.asarray(col.get_offsets()),
                                       rows[["mean_score", "fraction_positive"]].to_numpy(float))
            ratios += list(col.get_sizes() / rows["count"].to_numpy(float))
        np.testing.assert_allclose(ratios, ratios[0])
        assert any(list(line.get_xdata()) == [0, 1] for line in a.lines)  # the diagonal


# ----------------------------------------------------------------------------- Fig. 5
def test_prevalence_bands_per_model(tables):
    t = tables["prevalence"]["metrics"]
    brier = t[t["criterion"] == "brier_score"]
    ax = F.plot_prevalence(t)
    labelled(ax)
    assert len(ax.figure.axes) == brier.groupby(["family", "cohort"]).ngroups
    first = brier[brier["cohort"] == brier["cohort"].iloc[0]]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == first["model"].nunique()
    for m in sorted(first["model"].unique()):
        line = next(line for line in ax.lines if line.get_label() == m)
        want = first[first["model"] == m].sort_values("prevalence")
        np.testing.assert_allclose(line.get_ydata(), want["estimate"].astype(float))
    primary = float(first.loc[first["primary"], "prevalence"].iloc[0])
    assert any(list(line.get_xdata()) == [primary, primary] for line in ax.lines)


# ----------------------------------------------------------------------------- Fig. 6
def test_transport_panels_intervals_and_constraint(tables):
    t = tables["transport"]["transport"]
    ax = F.plot_transport(t)
    labelled(ax)
    keys = list(t.groupby(["source", "rule", "target_value", "criterion"], sort=False).groups)
    panels = ax.figure.axes
    assert len(panels) == len(keys)
    for a, (src, rule, tv, crit) in zip(panels, keys, strict=True):
        g = t[(t["source"] == src) & (t["rule"] == rule) & (t["criterion"] == crit)]
        assert n_segments(a) == finite_ci(g)
        dashed = [line for line in a.lines if line.get_linestyle() == "--"]
        assert len(dashed) == (1 if crit == rule else 0)
        if dashed:
            assert list(dashed[0].get_ydata()) == [tv, tv]
        assert src in a.get_title() and rule in a.get_title()


# ----------------------------------------------------------------------------- Fig. 7
def test_seeds_points_summary_and_ensemble(tables):
    seeds, comp = tables["retained"]["seeds"], tables["retained"]["comparisons"]
    auc = seeds[seeds["criterion"] == "roc_auc"]
    ax = F.plot_seeds(seeds, comparisons=comp)
    labelled(ax)
    assert len(ax.figure.axes) == 2
    dots = sum(len(line.get_xdata()) for line in ax.lines if line.get_marker() == ".")
    assert dots == int((auc["kind"] == "seed").sum())
    summaries = auc[auc["kind"] == "seed_summary"]
    ens = auc[auc["kind"] == "ensemble"]
    assert n_segments(ax) == len(summaries) + finite_ci(ens)
    delta = ax.figure.axes[1]
    assert n_segments(delta) >= len(comp)
    with pytest.raises(ValueError, match="second panel"):
        F.plot_seeds(seeds, comparisons=comp, ax=new_ax())


# ----------------------------------------------------------------------------- Fig. 8
def test_risk_coverage_curves(tables):
    t = tables["operating_points"]["risk_coverage"]
    ax = F.plot_risk_coverage(t)
    labelled(ax)
    c0 = t["cohort"].iloc[0]
    g = t[t["cohort"] == c0]
    assert len(ax.figure.axes) == t["cohort"].nunique()
    assert len(ax.lines) == g["model"].nunique()
    for line in ax.lines:
        want = g[g["model"] == line.get_label()]
        np.testing.assert_allclose(line.get_xdata(), want["coverage"].astype(float))
        np.testing.assert_allclose(line.get_ydata(), want["estimate"].astype(float))


# ----------------------------------------------------------------------------- drawing into a given ax
def test_every_function_draws_into_the_given_ax(tables):
    t = tables
    calls = [
        (F.plot_discrimination, t["discrimination"]["metrics"], {}),
        (F.plot_prompt_heatmap, t["prompts"]["contrasts"], {}),
        (F.plot_spectrum, t["spectrum"]["groups"], {"cohort": "vindr"}),
        (F.plot_reliability, t["discrimination"]["reliability"], {"cohort": "shenzhen"}),
        (F.plot_prevalence, t["prevalence"]["metrics"], {"cohort": "shenzhen"}),
        (F.plot_transport, t["transport"]["transport"],
         {"source": "shenzhen", "rule": "sensitivity", "criterion": "specificity"}),
        (F.plot_seeds, t["retained"]["seeds"], {}),
        (F.plot_retained_delta, t["retained"]["comparisons"], {}),
        (F.plot_risk_coverage, t["operating_points"]["risk_coverage"], {"cohort": "montgomery"}),
    ]
    for fn, table, kw in calls:
        ax = new_ax()
        assert fn(table, ax=ax, **kw) is ax, fn.__name__
        assert ax.figure.get_suptitle() == ""  # a given ax's figure is left alone
        assert ax.has_data() or ax.collections, fn.__name__


def test_several_panels_into_one_ax_is_refused(tables):
    with pytest.raises(ValueError, match="panels"):
        F.plot_reliability(tables["discrimination"]["reliability"], ax=new_ax())
    with pytest.raises(ValueError, match="no rows"):
        F.plot_risk_coverage(tables["operating_points"]["risk_coverage"], cohort="nowhere")
    with pytest.raises(ValueError, match="empty"):
        F.plot_discrimination(pd.DataFrame())


# ----------------------------------------------------------------------------- render_all
def test_render_all_order_formats_and_captions(rendered, tmp_path):
    names = [f.name for f in rendered]
    # the eight paper-000 figures, in fixed order (figures 9-12 need paper 001/002 blocks,
    # which this audit does not run: tests/report/test_papers_report.py draws them)
    # (figures 13-15 draw tables operating_points writes only when the spec asks for them)
    assert names == [f.stem for f in F.FIGURES
                     if f.block not in ("label_uncertainty", "error_structure", "agreement")
                     and f.stem not in CURVE_FIGURES]
    for f in rendered:
        assert f.png.startswith(b"\x89PNG\r\n\x1a\n") and len(f.png) > 5000
        assert f.svg.lstrip().startswith("<?xml") and "</svg>" in f.svg
        assert f.title.startswith("Figure ") and "table " in f.caption
    cap = {f.name: f.caption for f in rendered}
    assert "discrimination.metrics" in cap["fig1_discrimination"] and "B = 200" in cap["fig1_discrimination"]
    assert "roc_auc" in cap["fig1_discrimination"] and "ordinary+paired" in cap["fig1_discrimination"]
    assert "prompts.contrasts" in cap["fig2_prompt_contrasts"]
    paths = F.save_figures(rendered, tmp_path / "figs")
    assert sorted(p.name for p in paths) == sorted(f"{n}.{e}" for n in names for e in ("png", "svg"))
    assert (tmp_path / "figs" / "fig1_discrimination.png").read_bytes() == rendered[0].png


def test_render_all_is_byte_identical_on_a_second_run(tables, rendered):
    again = F.render_all(tables)
    assert [f.name for f in again] == [f.name for f in rendered]
    for a, b in zip(rendered, again, strict=True):
        assert a.png == b.png, a.name
        assert a.svg == b.svg, a.name
    assert "<dc:date>" not in rendered[0].svg and b"Software" not in rendered[0].png


def test_absent_or_empty_tables_give_no_figure():
    assert F.render_all({}) == []
    assert F.render_all({"retained": {"seeds": pd.DataFrame(), "comparisons": pd.DataFrame()},
                         "discrimination": {"metrics": pd.DataFrame(columns=["model", "criterion"])}}) == []
    assert F.render_figure("fig7_seeds", {"retained": {"seeds": []}}) is None
    with pytest.raises(ValueError, match="unknown figure"):
        F.render_figure("fig99", {})


def test_tables_as_records_from_results_json(tables):
    records = tables["discrimination"]["metrics"].astype(object).where(
        tables["discrimination"]["metrics"].notna(), None).to_dict("records")
    fig = F.render_figure("fig1_discrimination", {"discrimination": {"metrics": records}})
    assert fig is not None and fig.png.startswith(b"\x89PNG")


# ----------------------------------------------------------------------------- user strings are data
def test_model_names_are_escaped_text_in_svg(tables):
    t = tables["discrimination"]["metrics"].copy()
    first = sorted(t["model"].unique())[0]
    t["model"] = t["model"].replace({first: SCRIPT})
    fig = F.render_figure("fig1_discrimination", {"discrimination": {"metrics": t}})
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in fig.svg
    assert "<script" not in fig.svg


def test_dollar_signs_are_not_mathtext(tables):
    t = tables["operating_points"]["risk_coverage"]
    t = t[t["cohort"] == "montgomery"].replace({"model": {sorted(t["model"].unique())[0]: "a$x^2$b"},
                                                "cohort": {"montgomery": "c_{1}$"}})
    fig = F.render_figure("fig8_risk_coverage", {"operating_points": {"risk_coverage": t}})
    assert "a$x^2$b" in fig.svg and "c_{1}$" in fig.svg


def test_library_code_uses_no_pyplot_and_no_global_backend():
    src = Path(F.__file__).parent
    for name in ("figures.py", "_figures_blocks.py", "_figures_curves.py"):
        text = (src / name).read_text(encoding="utf-8")
        assert "matplotlib.pyplot" not in text and "matplotlib.use(" not in text
        assert not any(line.startswith(("import matplotlib", "from matplotlib"))
                       for line in text.splitlines())  # lazy: imported inside functions only


def test_colours_are_tab10_and_do_not_depend_on_order(tables):
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    models = sorted(tables["discrimination"]["metrics"]["model"].unique())
    a, b = model_styles(models), model_styles(list(reversed(models)))
    assert a == b and len(set(a.values())) == len(models)
    # matplotlib's own tab10 is the witness: ten distinct colours, the first ten models get them all
    tab10 = {to_hex(c) for c in colormaps["tab10"].colors}
    ten = model_styles([f"m{i}" for i in range(10)])
    assert {c for c, _ in ten.values()} == tab10
    many = model_styles([f"m{i:02d}" for i in range(20)])
    assert len(set(many.values())) == 20  # colour x marker pairs stay distinct


# ----------------------------------------------------------------------------- Figs. 13-15 (issue 17)
@pytest.fixture(scope="module")
def curve_tables():
    """operating_points with every table a spec may ask for, on two small cohorts."""
    from medaudit.blocks import operating_points as OP
    from medaudit.blocks.operating_points import OperatingPointsConfig
    from tests.blocks.test_discrimination import _untied, make_context

    rng = np.random.default_rng(8)
    y1, a1 = _untied(rng, 20, 30, 1.5)
    _, b1 = _untied(rng, 20, 30, 0.5)
    y2, a2 = _untied(rng, 15, 45, 2.0)
    _, b2 = _untied(rng, 15, 45, 1.0)
    ctx = make_context({"c1": (y1, {"ma": a1, "mb": b1}), "c2": (y2, {"ma": a2, "mb": b2})},
                       n_resamples=60)
    spec = ctx.spec.model_copy(update={"operating_points": OperatingPointsConfig.model_validate(
        {"thresholds": [0.5], "rules": ["youden"], "curves": {"grid": 11}, "calibration": True})})
    return run(OP, ctx, spec).tables


def _model_lines(ax, models):
    return {line.get_label(): line for line in ax.lines if line.get_label() in models}


def test_roc_curves_bands_and_operating_points(curve_tables):
    t = curve_tables
    roc, band, tm = t["roc_curve"], t["roc_band"], t["threshold_metrics"]
    ax = F.plot_roc_curves(roc, band=band, operating_points=t["operating_points"],
                           threshold_metrics=tm)
    labelled(ax)
    cohorts = list(dict.fromkeys(roc["cohort"]))
    assert len(ax.figure.axes) == len(cohorts)
    for a, c in zip(ax.figure.axes, cohorts, strict=True):
        g = roc[roc["cohort"] == c]
        models = sorted(g["model"].unique())
        lines = _model_lines(a, models)
        assert sorted(lines) == models
        for m, line in lines.items():
            want = g[g["model"] == m]
            np.testing.assert_allclose(line.get_xdata(), 1 - want["specificity"].astype(float))
            np.testing.assert_allclose(line.get_ydata(), want["sensitivity"].astype(float))
        fills = [p for p in a.collections if isinstance(p, PolyCollection)]
        assert len(fills) == len(models)  # one band per model
        # the band's polygon spans exactly the table's interval at each grid specificity
        b = band[(band["cohort"] == c) & (band["model"] == models[0])]
        ys = fills[0].get_paths()[0].vertices[:, 1]
        assert np.nanmax(ys) == pytest.approx(b["ci_high"].astype(float).max())
        assert np.nanmin(ys) == pytest.approx(b["ci_low"].astype(float).min())
        # one large marker per (model, threshold): declared 0.5 and the Youden threshold
        marks = [line for line in a.lines if line.get_label() == "_threshold"]
        rows = tm[(tm["cohort"] == c) & (tm["prevalence"] == "observed")]
        assert len(marks) == rows.groupby(["model", "threshold_rule"]).ngroups == 2 * len(models)
        for line in marks:
            x, y = line.get_xdata()[0], line.get_ydata()[0]
            hit = rows.pivot_table(index=["model", "threshold_rule"], columns="criterion",
                                   values="estimate", aggfunc="first")
            assert any(np.isclose(1 - r["specificity"], x) and np.isclose(r["sensitivity"], y)
                       for _, r in hit.iterrows())
        # Se at Sp >= 0.95 and Sp at Se >= 0.95, each with its interval
        ebars = [cont for cont in a.containers if isinstance(cont, ErrorbarContainer)]
        assert len(ebars) == 2 * len(models)


def test_pr_curves_and_threshold_points(curve_tables):
    pr, tm = curve_tables["pr_curve"], curve_tables["threshold_metrics"]
    ax = F.plot_pr_curves(pr, threshold_metrics=tm)
    labelled(ax)
    c = pr["cohort"].iloc[0]
    g = pr[pr["cohort"] == c]
    lines = _model_lines(ax, sorted(g["model"].unique()))
    for m, line in lines.items():
        want = g[g["model"] == m]
        np.testing.assert_allclose(line.get_xdata(), want["recall"].astype(float))
        np.testing.assert_allclose(line.get_ydata(), want["precision"].astype(float))
    prevalence = [line for line in ax.lines if line.get_linestyle() == ":"]
    y = tm[tm["cohort"] == c]["n_pos"].iloc[0] / tm[tm["cohort"] == c]["n"].iloc[0]
    assert len(prevalence) == 1 and prevalence[0].get_ydata()[0] == pytest.approx(y)
    marks = [line for line in ax.lines if line.get_label() == "_threshold"]
    assert len(marks) == 2 * len(lines)


def test_pr_curves_with_their_band(curve_tables):
    pr, band = curve_tables["pr_curve"], curve_tables["pr_band"]
    ax = F.plot_pr_curves(pr, band=band)
    labelled(ax)
    for a, c in zip(ax.figure.axes, list(dict.fromkeys(pr["cohort"])), strict=True):
        models = sorted(pr.loc[pr["cohort"] == c, "model"].unique())
        fills = [p for p in a.collections if isinstance(p, PolyCollection)]
        assert len(fills) == len(models)  # one band per model
        b = band[(band["cohort"] == c) & (band["model"] == models[0])]
        ys = fills[0].get_paths()[0].vertices[:, 1]
        assert np.nanmax(ys) == pytest.approx(b["ci_high"].astype(float).max())
        assert np.nanmin(ys) == pytest.approx(b["ci_low"].astype(float).min())
    fig = F.render_figure("fig14_pr_curves", {"operating_points": curve_tables})
    assert "operating_points.pr_band" in fig.caption and fig.title.endswith("with bands")


def test_calibration_curves_with_bands(curve_tables):
    cc = curve_tables["calibration_curve"]
    ax = F.plot_calibration_curves(cc)
    labelled(ax)
    assert len(ax.figure.axes) == cc["cohort"].nunique()
    c = cc["cohort"].iloc[0]
    g = cc[cc["cohort"] == c]
    lines = _model_lines(ax, sorted(g["model"].unique()))
    for m, line in lines.items():
        want = g[g["model"] == m]
        np.testing.assert_allclose(line.get_xdata(), want["mean_score"].astype(float))
        np.testing.assert_allclose(line.get_ydata(), want["fraction_positive"].astype(float))
    assert n_segments(ax) == finite_ci(g)
    assert "equal-mass" in ax.get_title()


def test_curve_figures_render_deterministically_from_records(curve_tables):
    tables = {"operating_points": curve_tables}
    figs = [F.render_figure(n, tables) for n in CURVE_FIGURES]
    assert [f.name for f in figs] == list(CURVE_FIGURES)
    assert "operating_points.roc_band" in figs[0].caption and "Diamonds" in figs[0].caption
    records = {k: v.astype(object).where(v.notna(), None).to_dict("records")
               for k, v in curve_tables.items()}
    again = [F.render_figure(n, {"operating_points": records}) for n in CURVE_FIGURES]
    for a, b in zip(figs, again, strict=True):
        assert a.png == b.png and a.svg == b.svg, a.name
    # without the optional tables the ROC figure still draws, and says less
    bare = F.render_figure("fig13_roc_curves", {"operating_points": {"roc_curve": curve_tables[
        "roc_curve"]}})
    assert bare is not None and "roc_band" not in bare.caption
    assert F.render_figure("fig15_calibration_curves", {"operating_points": {}}) is None


def test_transport_panel_of_a_cut_point_rule_states_no_target(tables):
    t = tables["transport"]["transport"].copy()
    t = t[t["rule"] == "sensitivity"].assign(rule="youden", target_value=np.nan)
    ax = F.plot_transport(t, source="shenzhen", criterion="sensitivity", ax=new_ax())
    assert "nan" not in ax.get_title() and "Youden rule" in ax.get_title()
    assert not [line for line in ax.lines if line.get_linestyle() == "--"]
