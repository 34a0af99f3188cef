"""Drawing functions of the report figures: one block table in, one matplotlib ``Axes`` out.

Every ``plot_x(table, *, ax=None, ...)`` draws only what the table holds (point estimates
and intervals are read from ``estimate``, ``ci_low``, ``ci_high`` and friends; nothing is
computed here but positions and colours).  matplotlib is imported inside the functions and
figures are built from :class:`matplotlib.figure.Figure` with an Agg canvas, so no pyplot
and no global backend are involved.  User strings (model, cohort, prompt names) are passed
to matplotlib as data: ``$`` is escaped so that no name is read as mathtext.

A table whose rows span several panels (cohorts, spectrum entries, transport rules) gives
one panel per value when ``ax`` is None (the returned Axes is the first panel; the others
are ``ax.figure.axes``); drawing into a given ``ax`` needs a one-panel selection, e.g.
``cohort="shenzhen"``.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from medaudit.report.format import fmt_signed
from medaudit.report.labels import criterion_label, design_label, rule_label

__all__ = ["plot_discrimination", "plot_prompt_heatmap", "plot_spectrum", "plot_reliability",
           "plot_prevalence", "plot_transport", "plot_risk_coverage", "style", "figure_bytes", "DPI"]

DPI = 110
#: matplotlib's tab10 qualitative palette: ten distinct colours, so up to ten models or
#: estimators never share one; its grey goes last (grey also draws the reference lines,
#: always dotted or dashed)
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
           "#17becf", "#7f7f7f")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h")
GREY = "#7f7f7f"
_EST = ("estimate", "ci_low", "ci_high")
EXPOSURE_LABEL = "hollow marker: exposure qualification"
_RC = {
    "font.size": 8.5, "axes.titlesize": 8.5, "axes.labelsize": 8.5, "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5, "legend.fontsize": 7.5, "figure.titlesize": 10,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.25,
    "grid.linewidth": 0.6, "svg.hashsalt": "medaudit-figures", "svg.fonttype": "none",
    "figure.dpi": DPI, "savefig.dpi": DPI, "hatch.linewidth": 0.6,
}


@contextlib.contextmanager
def style() -> Iterator[None]:
    """matplotlib defaults plus the report style, restored on exit (no lasting global state)."""
    import warnings

    import matplotlib.style

    with matplotlib.style.context(["default", _RC]), warnings.catch_warnings():
        # a name in a script the font lacks (CJK, say) is drawn as boxes, and a very long
        # one leaves the layout as it is: matplotlib says so once per glyph and per figure,
        # which buries the audit's own warnings; the page's text shows every name in full
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        warnings.filterwarnings("ignore", message=r"constrained_layout not applied",
                                category=UserWarning)
        yield


def figure_bytes(fig: Any) -> tuple[bytes, str]:
    """The PNG bytes (dpi :data:`DPI`) and SVG text of a drawn figure, without dates or
    software names, so the same figure gives the same bytes."""
    import io

    with style():
        png, svg = io.BytesIO(), io.BytesIO()
        fig.savefig(png, format="png", dpi=DPI, metadata={"Software": None})
        # keep the layout just computed, so the SVG matches the PNG: no engine at all (None),
        # as "none" leaves a placeholder engine for which savefig draws the figure twice
        fig.set_layout_engine(None)
        fig.savefig(svg, format="svg", metadata={"Date": None})
    return png.getvalue(), svg.getvalue().decode("utf-8")


def _styled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Apply :func:`style` when the function builds its own figure (``ax`` is None)."""
    @functools.wraps(fn)
    def wrapper(table: pd.DataFrame, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("ax") is not None:
            return fn(table, *args, **kwargs)
        with style():
            return fn(table, *args, **kwargs)
    return wrapper


# ----------------------------------------------------------------------------- small helpers
def lit(s: Any) -> str:
    """A user string as literal matplotlib text (``$`` would otherwise start mathtext)."""
    return str(s).replace("$", r"\$")


def _f(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _num(s: Any, spec: str = "g") -> str:
    """``s`` formatted as a number when it is one (``"800.0"`` -> ``"800"``), else as given."""
    return format(_f(s), spec) if _finite(s) else str(s)


def _finite(*xs: Any) -> bool:
    return all(math.isfinite(_f(x)) for x in xs)


def _flag(x: Any) -> bool:
    """True for True / 1 / "true" (also as read back from JSON or CSV); False for NA."""
    return str(x).strip().lower() in ("true", "1", "1.0")


def _exposed(row: Any) -> bool:
    return "exposure" in str(getattr(row, "qualification", "") or "").lower()


def _uniq(values: Any) -> list:
    """Distinct values in order of first appearance, NaN/None dropped."""
    return [v for v in dict.fromkeys(values) if v is not None and not (isinstance(v, float) and v != v)]


def _one(df: pd.DataFrame, col: str) -> str:
    vals = _uniq(df[col]) if col in df.columns else []
    return ", ".join(str(v) for v in vals)


def _wrap(text: str, width: int = 22) -> str:
    """``text`` broken at spaces into lines of about ``width`` characters (tick labels)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def _design(df: pd.DataFrame) -> str:
    """The resampling design(s) of ``df`` in words (the ``design`` column holds ids)."""
    vals = _uniq(df["design"]) if "design" in df.columns else []
    return "; ".join(design_label(v) for v in vals)


def _rows(table: pd.DataFrame | None, cols: Sequence[str], what: str, **eq: Any) -> pd.DataFrame:
    """The table's rows with ``column == value`` for every ``eq`` value given (not None)."""
    if table is None or table.empty:
        raise ValueError(f"{what}: the table is empty; nothing to draw.")
    if missing := [c for c in cols if c not in table.columns]:
        raise ValueError(f"{what}: the table lacks column(s) {missing}; pass the block table "
                         f"itself (columns present: {list(table.columns)}).")
    sel = {k: v for k, v in eq.items() if v is not None}
    for col, val in sel.items():
        table = table[table[col].astype(str) == str(val)] if col in table.columns else table
    if table.empty:
        raise ValueError(f"{what}: no rows for {', '.join(f'{k}={v!r}' for k, v in sel.items())}.")
    return table


def model_styles(models: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Colour and marker of each model (sorted names; distinct pairs up to 64 models)."""
    ms = sorted({str(m) for m in models})
    return {m: (PALETTE[i % len(PALETTE)], MARKERS[(i + i // len(PALETTE)) % len(MARKERS)])
            for i, m in enumerate(ms)}


def _dash(m: str, models: Sequence[str]) -> Any:
    """A line style per model (with colour, so that lines differ without colour too)."""
    return ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)))[sorted(models).index(m) % 5]


def _offsets(n: int, width: float = 0.72) -> list[float]:
    return [(j - (n - 1) / 2) * width / max(n, 1) for j in range(n)]


class _Points:
    """Point estimates with intervals, collected and then drawn with one error-bar call and one
    marker call per style (fast, and one ``ErrorbarContainer`` per model).  Intervals are drawn
    as given, even where they exclude the estimate; hollow markers flag an exposure."""

    def __init__(self) -> None:
        self.items: dict[tuple, list[tuple[float, float, float, float, bool]]] = {}

    def add(self, x: float, est: Any, lo: Any, hi: Any, color: str, marker: str,
            hollow: bool = False, ms: float = 5.5) -> None:
        self.items.setdefault((color, marker, ms), []).append((x, _f(est), _f(lo), _f(hi), hollow))

    def draw(self, ax: Any) -> None:
        for (color, marker, ms), pts in self.items.items():
            x, est, lo, hi, hollow = (np.array(v) for v in zip(*pts, strict=True))
            ok = np.isfinite(lo) & np.isfinite(hi)
            if ok.any():
                ax.errorbar(x[ok], (lo[ok] + hi[ok]) / 2, yerr=(hi[ok] - lo[ok]) / 2, fmt="none",
                            ecolor=color, elinewidth=1.1, capsize=2.2, label="_nolegend_", zorder=2)
            for h in (False, True):
                sel = np.isfinite(est) & (hollow == h)
                if sel.any():
                    ax.plot(x[sel], est[sel], linestyle="none", marker=marker, markersize=ms,
                            color=color, markerfacecolor="white" if h else color,
                            markeredgecolor=color, markeredgewidth=1.2, label="_nolegend_", zorder=3)


def _model_handles(styles: dict[str, tuple[str, str]], models: Sequence[str], *, line: bool = False,
                   exposure: bool = False, dashed: bool = False) -> tuple[list, list[str]]:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=styles[m][0], marker="none" if dashed else styles[m][1], markersize=5,
                      linestyle=_dash(m, models) if dashed else "-" if line else "none") for m in models]
    labels = [lit(m) for m in models]
    if exposure:
        handles.append(Line2D([], [], color=GREY, marker="o", markerfacecolor="white", linestyle="none"))
        labels.append(EXPOSURE_LABEL)
    return handles, labels


def _new_figure(w: float, h: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _panels(df: pd.DataFrame, keys: Sequence[str], ax: Any, draw: Callable[..., tuple[list, list]], *,
            title: str, ncols: int = 3, size: tuple[float, float] = (3.6, 3.0),
            legend_w: float = 1.9, what: str, sharey: bool = True) -> Any:
    """One panel per distinct value of ``keys`` (order of appearance); ``draw(ax, key, sub)``
    returns legend handles and labels.  Returns the first panel's Axes."""
    groups = [(k if isinstance(k, tuple) else (k,), g)
              for k, g in df.groupby(list(keys), sort=False, dropna=False)]
    n = len(groups)
    if n > 1 and ax is not None:
        raise ValueError(f"{what}: the table spans {n} panels ({', '.join(keys)}); select one "
                         f"(e.g. {keys[-1]}=...) to draw into a given ax, or pass ax=None.")
    if n == 1:  # one panel: the legend goes beside it (and the figure title above, if ours)
        if own := ax is None:
            ax = _new_figure(size[0] + legend_w + 0.4, size[1] + 0.6).add_subplot()
        handles, labels = draw(ax, groups[0][0], groups[0][1])
        if handles:
            ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                      borderaxespad=0.0, frameon=False)
        if own:
            ax.figure.suptitle(lit(title))
        return ax
    nc = min(ncols, n)
    nr = math.ceil(n / nc)
    fig = _new_figure(size[0] * nc + legend_w, size[1] * nr + 0.45)
    axes = fig.subplots(nr, nc, squeeze=False, sharey=sharey)
    flat = list(axes.flat)
    handles, labels = [], []
    for a, (key, g) in zip(flat, groups, strict=False):
        h, lab = draw(a, key, g)
        for hh, ll in zip(h, lab, strict=True):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
        if sharey:
            a.yaxis.set_tick_params(labelleft=True)
    for a in flat[n:]:
        fig.delaxes(a)
    if handles:
        fig.legend(handles, labels, loc="outside right upper", frameon=False)
    fig.suptitle(lit(title))
    return flat[0]


def _group_axis(ax: Any, names: Sequence[str], sub: Sequence[str] | None = None) -> None:
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([lit(n) + (f"\n{lit(s)}" if sub and s else "") for n, s in
                        zip(names, sub or [""] * len(names), strict=True)])
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.grid(False, axis="x")


def _ylim_from(ax: Any, df: pd.DataFrame, floor: float, ceil: float) -> None:
    vals = pd.to_numeric(pd.concat([df[c] for c in ("estimate", "ci_low", "ci_high") if c in df]),
                         errors="coerce").dropna()
    lo = min(floor, float(vals.min())) if len(vals) else floor
    hi = max(ceil, float(vals.max())) if len(vals) else ceil
    pad = 0.03 * (hi - lo)
    ax.set_ylim(lo - pad, hi + pad)


# ----------------------------------------------------------------------------- Fig. 1
@_styled
def plot_discrimination(table: pd.DataFrame, *, ax: Any = None, criterion: str = "roc_auc",
                        prompt: str | None = None) -> Any:
    """AUROC (or another ``criterion``) with its interval per model, grouped by cohort.

    Reads ``discrimination.metrics``.  Hollow markers: rows whose ``qualification`` names a
    pretraining exposure.  The x tick labels give each cohort's resampling ``design``.
    """
    what = "plot_discrimination"
    df = _rows(table, ["model", "cohort", "criterion", *_EST], what, criterion=criterion, prompt=prompt)
    cohorts, models = _uniq(df["cohort"]), sorted(_uniq(df["model"]))
    styles, offs = model_styles(models), _offsets(len(models))
    label = criterion_label(criterion)
    if ax is None:
        ax = _new_figure(max(5.5, 1.0 * len(cohorts) + 3.2), 3.6).add_subplot()
    exposure, pts = False, _Points()
    for j, m in enumerate(models):
        for i, c in enumerate(cohorts):
            for r in df[(df["cohort"] == c) & (df["model"] == m)].itertuples():
                exposure |= _exposed(r)
                pts.add(i + offs[j], r.estimate, r.ci_low, r.ci_high, *styles[m], hollow=_exposed(r))
    pts.draw(ax)
    designs = [_design(df[df["cohort"] == c]) for c in cohorts]
    _group_axis(ax, cohorts, [_wrap(d) for d in designs] if len(set(designs)) > 1 else None)
    if criterion == "roc_auc":
        ax.axhline(0.5, color=GREY, lw=0.8, ls=":", zorder=1)
        _ylim_from(ax, df, 0.45, 1.0)
    ax.set(ylabel=f"{label} with interval",
           xlabel="cohort" + ("" if len(set(designs)) > 1 else f" ({lit(designs[0])})"))
    ax.set_title(lit(f"{label} by cohort and model, prompt {_one(df, 'prompt')}"))
    handles, labels = _model_handles(styles, models, exposure=exposure)
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              frameon=False)
    return ax


# ----------------------------------------------------------------------------- Fig. 2
@_styled
def plot_prompt_heatmap(table: pd.DataFrame, *, ax: Any = None,
                        criterion: str = "roc_auc_difference") -> Any:
    """Heatmap of metric(alternative) - metric(primary) per model x cohort (rows) and family.

    Reads ``prompts.contrasts``: cell value ``estimate``; ``*`` where ``significant`` is
    True (BH within the declared family); hatched cells are descriptive (outside the tested
    family, ``family == "descriptive"``).  Diverging colour map centred at 0.
    """
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    what = "plot_prompt_heatmap"
    df = _rows(table, ["model", "cohort", "prompt_a", "prompt_b", "estimate"], what, criterion=criterion)
    cohorts, models, cols = _uniq(df["cohort"]), sorted(_uniq(df["model"])), _uniq(df["prompt_a"])
    rows = [(c, m) for c in cohorts for m in models
            if ((df["cohort"] == c) & (df["model"] == m)).any()]
    z = np.full((len(rows), len(cols)), np.nan)
    cell: dict[tuple[int, int], Any] = {}
    for r in df.itertuples():
        i, j = rows.index((r.cohort, r.model)), cols.index(r.prompt_a)
        z[i, j] = _f(r.estimate)
        cell[(i, j)] = r
    if ax is None:
        ax = _new_figure(2.6 + 1.0 * len(cols) + 1.6, 1.3 + 0.27 * len(rows)).add_subplot()
    vmax = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    norm = Normalize(-(vmax or 1.0), vmax or 1.0)
    mesh = ax.pcolormesh(np.arange(len(cols) + 1), np.arange(len(rows) + 1), np.ma.masked_invalid(z),
                         cmap="PuOr", norm=norm, edgecolors="white", linewidth=0.6)
    descriptive = False
    for (i, j), r in sorted(cell.items()):
        v = _f(r.estimate)
        if str(getattr(r, "family", "")) == "descriptive":
            descriptive = True
            ax.add_patch(Rectangle((j, i), 1, 1, fill=False, hatch="////", edgecolor="#9a9a9a",
                                   linewidth=0, zorder=2))
        star = "*" if _flag(getattr(r, "significant", None)) else ""
        txt = "n/a" if not math.isfinite(v) else f"{fmt_signed(v)}{star}"
        dark = math.isfinite(v) and abs(norm(v) - 0.5) > 0.32
        ax.text(j + 0.5, i + 0.5, txt, ha="center", va="center", fontsize=6.8, zorder=3,
                color="white" if dark else "black",
                fontweight="bold" if star else "normal")
    for k in range(1, len(rows)):
        if rows[k][0] != rows[k - 1][0]:
            ax.axhline(k, color="black", lw=1.2)
    ax.set(xlim=(0, len(cols)), ylim=(len(rows), 0), xticks=np.arange(len(cols)) + 0.5,
           yticks=np.arange(len(rows)) + 0.5, xlabel="alternative prompt family", ylabel="cohort · model")
    ax.set_xticklabels([lit(c) for c in cols])
    ax.set_yticklabels([lit(f"{c} · {m}") for c, m in rows])
    ax.tick_params(length=0)
    ax.grid(False)
    for s in ax.spines.values():
        s.set_visible(False)
    primary = _one(df, "prompt_b")
    metric = criterion_label(criterion.removesuffix("_difference"))
    ax.set_title(lit(f"Δ{metric} vs primary prompt {primary} ({_design(df)})"))
    cb = ax.figure.colorbar(mesh, ax=ax, shrink=0.8, pad=0.02)
    cb.set_label(lit(f"{metric}: alternative − {primary}"))
    handles: list = [Line2D([], [], linestyle="none", marker="$*$", color="black", markersize=6,
                            label="significant after BH")]
    if descriptive:
        handles.append(Patch(facecolor="white", edgecolor="#9a9a9a", hatch="////",
                             label="hatched: descriptive (not tested)"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, -0.06 - 0.5 / max(len(rows), 1)),
              ncols=2, frameon=False, handlelength=1.2)
    return ax


# ----------------------------------------------------------------------------- Fig. 3
@_styled
def plot_spectrum(table: pd.DataFrame, *, ax: Any = None, criterion: str = "roc_auc",
                  entry: Any = None, cohort: str | None = None) -> Any:
    """AUROC of the shared positives against each negative group, per model (``spectrum.groups``).

    One panel per spectrum entry; lines connect the groups of one model (they share the
    positives); intervals per point; the x labels give each group's ``n_neg``.
    """
    what = "plot_spectrum"
    df = _rows(table, ["model", "cohort", "group", "criterion", *_EST], what, criterion=criterion,
               entry=entry, cohort=cohort)
    models = sorted(_uniq(df["model"]))
    styles, offs = model_styles(models), _offsets(len(models), 0.4)
    keys = [k for k in ("entry", "cohort") if k in df.columns]
    exposure = any(_exposed(r) for r in df.itertuples())

    def draw(a: Any, key: tuple, g: pd.DataFrame) -> tuple[list, list]:
        groups, pts = _uniq(g["group"]), _Points()
        for j, m in enumerate(models):
            gm = g[g["model"] == m].set_index("group")
            xs = [i + offs[j] for i, grp in enumerate(groups) if grp in gm.index]
            ys = [_f(gm.loc[grp, "estimate"]) for grp in groups if grp in gm.index]
            a.plot(xs, ys, color=styles[m][0], lw=1.1, alpha=0.8, label=lit(m), zorder=2)
            for i, grp in enumerate(groups):
                if grp in gm.index:
                    r = gm.loc[[grp]].iloc[0]
                    pts.add(i + offs[j], r["estimate"], r["ci_low"], r["ci_high"], *styles[m],
                            hollow="exposure" in str(r.get("qualification", "")).lower())
        pts.draw(a)
        nneg = [_one(g[g["group"] == grp], "n_neg") if "n_neg" in g else "" for grp in groups]
        _group_axis(a, groups, [f"{_num(n)} negatives" for n in nneg] if any(nneg) else None)
        if criterion == "roc_auc":
            a.axhline(0.5, color=GREY, lw=0.8, ls=":", zorder=1)
        a.set(ylim=(-0.03, 1.03), xlabel="negative (control) group",
              ylabel=f"{criterion_label(criterion)} (positives vs group)")
        a.set_title(lit(f"{_one(g, 'cohort')}\nprompt {_one(g, 'prompt')} · {_design(g)}"))
        return _model_handles(styles, models, line=True, exposure=exposure)

    return _panels(df, keys, ax, draw, title=f"{criterion_label(criterion)} by negative group "
                   "(shared positives)", ncols=2, size=(4.2, 3.2), what=what)


# ----------------------------------------------------------------------------- Fig. 4
@_styled
def plot_reliability(table: pd.DataFrame, *, ax: Any = None, cohort: str | None = None,
                     max_marker_area: float = 180.0) -> Any:
    """Reliability diagram: mean score vs fraction positive per bin (``discrimination.reliability``).

    One panel per cohort, one colour per model; marker area proportional to ``count``
    within a panel (the panel's largest bin gets ``max_marker_area`` pt^2; its count is in
    the panel title); bins absent from the table (empty) are not drawn; dotted diagonal =
    perfect calibration.
    """
    from matplotlib.lines import Line2D

    what = "plot_reliability"
    df = _rows(table, ["model", "cohort", "mean_score", "fraction_positive", "count"], what, cohort=cohort)
    models = sorted(_uniq(df["model"]))
    styles = model_styles(models)

    def draw(a: Any, key: tuple, g: pd.DataFrame) -> tuple[list, list]:
        nmax = max(float(pd.to_numeric(g["count"], errors="coerce").max()), 1.0)
        a.plot([0, 1], [0, 1], color=GREY, lw=0.8, ls=":", zorder=1, label="_diagonal")
        for m in models:
            gm = g[g["model"] == m]
            if gm.empty:
                continue
            x = pd.to_numeric(gm["mean_score"], errors="coerce").to_numpy(float)
            y = pd.to_numeric(gm["fraction_positive"], errors="coerce").to_numpy(float)
            n = pd.to_numeric(gm["count"], errors="coerce").to_numpy(float)
            a.plot(x, y, color=styles[m][0], lw=0.9, alpha=0.7, zorder=2, label="_nolegend_")
            a.scatter(x, y, s=n * (max_marker_area / nmax), color=styles[m][0], marker=styles[m][1],
                      alpha=0.7, edgecolors=styles[m][0], linewidths=0.6, zorder=3, label=lit(m))
        a.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), aspect="equal", xlabel="mean score in bin",
              ylabel="fraction positive in bin")
        a.set_title(lit(f"{_one(g, 'cohort')}, prompt {_one(g, 'prompt')}\n"
                        f"largest marker: {nmax:.0f} images"))
        h, lab = _model_handles(styles, models)
        h.append(Line2D([], [], linestyle=":", color=GREY))
        lab.append("diagonal: perfect calibration")
        return h, lab

    crit = ", ".join(criterion_label(c) for c in _uniq(df["criterion"])) if "criterion" in df else ""
    return _panels(df, ["cohort"], ax, draw, title=f"Reliability diagram, {crit}; marker area ∝ images in "
                   "bin (per panel)", ncols=3, size=(2.9, 3.1), what=what)


# ----------------------------------------------------------------------------- Fig. 5
@_styled
def plot_prevalence(table: pd.DataFrame, *, ax: Any = None, cohort: str | None = None,
                    criterion: str = "brier_score", family: str | None = None) -> Any:
    """Prevalence-weighted metric vs pi with interval bands per model (``prevalence.metrics``).

    One panel per cohort (and prevalence entry); the entry's primary pi is dotted.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    what = "plot_prevalence"
    df = _rows(table, ["model", "cohort", "prevalence", "criterion", *_EST], what, criterion=criterion,
               cohort=cohort, family=family)
    models = sorted(_uniq(df["model"]))
    styles = model_styles(models)
    keys = [k for k in ("family", "cohort") if k in df.columns]

    def draw(a: Any, key: tuple, g: pd.DataFrame) -> tuple[list, list]:
        pis = sorted({_f(p) for p in g["prevalence"] if _finite(p)})
        for m in models:
            gm = g[g["model"] == m].assign(_pi=lambda d: pd.to_numeric(d["prevalence"], errors="coerce"))
            gm = gm.sort_values("_pi", kind="stable")
            x = gm["_pi"].to_numpy(float)
            lo, hi = (pd.to_numeric(gm[c], errors="coerce").to_numpy(float) for c in ("ci_low", "ci_high"))
            a.fill_between(x, lo, hi, color=styles[m][0], alpha=0.15, linewidth=0, label="_nolegend_")
            a.plot(x, pd.to_numeric(gm["estimate"], errors="coerce").to_numpy(float), color=styles[m][0],
                   marker=styles[m][1], markersize=4, lw=1.3, label=lit(m))
        if "primary" in g.columns:
            for p in _uniq(g.loc[g["primary"].map(_flag), "prevalence"]):
                a.axvline(_f(p), color=GREY, lw=0.9, ls=":", zorder=1)
        a.set_xticks(pis)
        a.set_xticklabels([f"{p:g}" for p in pis])
        a.set(xlabel="π (weight of the positives)", ylabel=f"{criterion_label(criterion)} at π")
        a.set_title(lit(f"{_one(g, 'cohort')}\nprompt {_one(g, 'prompt')} · {_design(g)}"))
        h, lab = _model_handles(styles, models, line=True)
        h += [Patch(color=GREY, alpha=0.3), Line2D([], [], color=GREY, ls=":")]
        lab += ["band: interval", "dotted: primary π"]
        return h, lab

    return _panels(df, keys, ax, draw, title=f"Prevalence-weighted {criterion_label(criterion)} "
                   "across π", ncols=3, size=(3.2, 2.9), what=what)


# ----------------------------------------------------------------------------- Fig. 6
@_styled
def plot_transport(table: pd.DataFrame, *, ax: Any = None, source: str | None = None,
                   rule: str | None = None, criterion: str | None = None) -> Any:
    """Target sensitivity and specificity at the transported source threshold (``transport.transport``).

    One panel per source x rule x metric; x = target cohort, one offset point with interval
    per model; dashed line: the rule's constraint ``target_value`` on the constrained metric;
    targets resampled with tau fixed (design ``threshold_fixed``) are labelled.
    """
    from matplotlib.lines import Line2D

    what = "plot_transport"
    df = _rows(table, ["model", "cohort", "criterion", "estimate", "ci_low", "ci_high", "rule",
                       "source", "target_value"], what, source=source, rule=rule, criterion=criterion)
    models = sorted(_uniq(df["model"]))
    styles, offs = model_styles(models), _offsets(len(models))
    exposure = any(_exposed(r) for r in df.itertuples())

    def draw(a: Any, key: tuple, g: pd.DataFrame) -> tuple[list, list]:
        src, rl, tv, crit = key
        targets, pts = _uniq(g["cohort"]), _Points()
        for j, m in enumerate(models):
            for i, t in enumerate(targets):
                for r in g[(g["cohort"] == t) & (g["model"] == m)].itertuples():
                    pts.add(i + offs[j], r.estimate, r.ci_low, r.ci_high, *styles[m], hollow=_exposed(r))
        pts.draw(a)
        fixed = ["τ held fixed" if "fixed" in _one(g[g["cohort"] == t], "design") else "" for t in targets]
        _group_axis(a, targets, fixed if any(fixed) else None)
        if str(crit) == str(rl) and _finite(tv):
            a.axhline(_f(tv), color="black", lw=0.9, ls="--", zorder=1)
        metric = criterion_label(crit)
        a.set(ylim=(-0.03, 1.05), xlabel="target cohort", ylabel=f"target {lit(metric)}")
        # a cut-point rule (youden, closest_topleft) has no target value to state
        rule_text = (f"{rule_label(rl)} rule ({criterion_label(rl)} ≥ {_f(tv):g})" if _finite(tv)
                     else f"{rule_label(rl)} rule")
        a.set_title(lit(f"{metric} on the targets\nτ from {src}, {rule_text}"))
        h, lab = _model_handles(styles, models, exposure=exposure)
        return h + [Line2D([], [], color="black", lw=0.9, ls="--")], lab + ["dashed: the rule's constraint"]

    return _panels(df, ["source", "rule", "target_value", "criterion"], ax, draw,
                   title="Source threshold carried to each target cohort", ncols=2, size=(3.9, 2.7),
                   what=what)


# ----------------------------------------------------------------------------- Fig. 8
@_styled
def plot_risk_coverage(table: pd.DataFrame, *, ax: Any = None, cohort: str | None = None) -> Any:
    """Selective risk vs coverage per model (``operating_points.risk_coverage``), one panel per cohort."""
    what = "plot_risk_coverage"
    df = _rows(table, ["model", "cohort", "coverage", "estimate"], what, cohort=cohort)
    models = sorted(_uniq(df["model"]))
    styles = model_styles(models)

    def draw(a: Any, key: tuple, g: pd.DataFrame) -> tuple[list, list]:
        for m in models:
            gm = g[g["model"] == m]
            a.plot(pd.to_numeric(gm["coverage"], errors="coerce").to_numpy(float),
                   pd.to_numeric(gm["estimate"], errors="coerce").to_numpy(float),
                   color=styles[m][0], lw=1.3, ls=_dash(m, models), label=lit(m))
        a.set(xlim=(0, 1.01), xlabel="coverage (fraction of images accepted)",
              ylabel="selective risk (error rate)")
        a.set_ylim(bottom=0)
        thr = _one(g, "threshold")
        a.set_title(lit(f"{_one(g, 'cohort')}\nprompt {_one(g, 'prompt')}"
                        + (f" · decision s ≥ {_num(thr)}" if thr else "")))
        return _model_handles(styles, models, dashed=True)

    return _panels(df, ["cohort"], ax, draw, title="Risk-coverage curves (confidence max(s, 1 − s))",
                   ncols=3, size=(3.1, 2.7), what=what)
