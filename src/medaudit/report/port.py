"""The report of a receiving-site run (``medaudit port`` / ``medaudit monitor``): page and summary.md.

Both open on the claims table with the site's verdicts (one row per source claim: source
estimate [CI] beside the local one, the verdict and its reason, the local positives and
negatives that would resolve an unresolved claim); a monitor run then shows the verdict
change log, one figure per claim (estimate, interval and claimed level per period), the
time series and the score drift per period; last, the two provenances side by side
(source audit, local data).

The page is self-contained (inline CSS from ``templates/report.css``, figures as PNG data
URIs, no script, a Content-Security-Policy forbidding every load) and a pure function of
its inputs: the same tables give the same bytes.  Rounding happens in
:mod:`medaudit.report.format`; nothing here computes a statistic.
"""

from __future__ import annotations

import base64
import html as _html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit._words import plural
from medaudit.io.claimsfile import SITE_VERDICTS
from medaudit.report import format as fmt
from medaudit.report._common import plain_text, simulations
from medaudit.report._types import RenderedFigure
from medaudit.stats.monitor import count_changes

__all__ = ["port_summary", "port_page", "claims_view", "monitor_figure", "verdict_counts",
           "PORT_SHOWN"]

#: verdict -> css class of its badge (report.css)
_CSS = {"holds": "v-holds", "does not hold": "v-fails", "reversed": "v-reversed",
        "unresolved": "v-unresolved", "not attainable": "v-unattainable",
        "by construction": "v-construction", "not assessable here": "v-na",
        "not assessable": "v-na"}
#: the claims table as shown (the CSV has every column at full precision)
PORT_SHOWN = ("claim_id", "claim", "E", "changes", "source", "local", "verdict", "reason",
              "to resolve")
_EXTRA_CSS = """
.site-verdicts td, .site-verdicts th { vertical-align: top; }
.site-verdicts td.claim { max-width: 26rem; }
.prov-pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.prov-pair pre { white-space: pre-wrap; word-break: break-all; background: var(--panel);
  padding: 0.5rem; border: 1px solid var(--line); max-height: 28rem; overflow: auto; }
section { margin: 1.2rem 0; }
figure.claim-fig img { max-width: 400px; height: auto; }
"""


def _ci(est: Any, lo: Any, hi: Any) -> str:
    return fmt.fmt_ci(est, lo, hi) if fmt.as_float(est) is not None else fmt.MISSING


def _e_text(r: Mapping[str, Any]) -> str:
    parts = [plain_text(r.get("model")), f"prompt {plain_text(r.get('prompt'))}",
             plain_text(r.get("criterion"))]
    if fmt.as_float(r.get("threshold")) is not None:
        parts.append(f"τ = {fmt.full_precision(r.get('threshold'))}")
    if fmt.as_float(r.get("level")) is not None:
        op = "≤" if r.get("side") == "less" else "≥"
        parts.append(f"claimed {op} {fmt.fmt_grid(r.get('level'))}")
    return "; ".join(p for p in parts if p)


def _resolve_text(r: Mapping[str, Any]) -> str:
    if r.get("verdict") != "unresolved":
        return ""
    n_pos, n_neg = fmt.as_float(r.get("resolve_n_pos")), fmt.as_float(r.get("resolve_n_neg"))
    if n_pos is None or n_neg is None:
        return plain_text(r.get("plan_rule"))
    text = (f"{fmt.fmt_int(n_pos)} positives and {fmt.fmt_int(n_neg)} negatives "
            f"(+{fmt.fmt_int(r.get('additional_pos'))} / +{fmt.fmt_int(r.get('additional_neg'))})"
            f" would show it {plain_text(r.get('resolves_to'))}")
    exact = fmt.as_float(r.get("exact_additional"))
    if exact == 0:
        # "+0" beside an unresolved verdict read as a contradiction: the two intervals differ
        text += ("; the exact binomial (Clopper–Pearson) interval already resolves it at this "
                 "sample, the bootstrap interval the verdict is read from does not")
    elif exact is not None:
        text += f"; exact binomial: +{fmt.fmt_int(r.get('exact_additional'))}"
    return text


def _other(r: Mapping[str, Any]) -> str:
    """An operating point's second constraint, as its local estimate [CI]."""
    crit = r.get("other_criterion")
    if not isinstance(crit, str) or not crit:
        return ""
    return f"; {crit}: {_ci(r.get('other_estimate'), r.get('other_ci_low'), r.get('other_ci_high'))}"


def _change_count(changes: pd.DataFrame) -> str:
    """The change log's first sentence: how many entries change a verdict (the first
    verdict of each claim and scope starts the log; it is listed, not counted)."""
    if not len(changes):
        return "No claim was monitored, so no verdict was logged."
    k = count_changes(changes)
    first = len(changes) - k
    head = (f"{plural(k, 'verdict change')} after the first look" if k
            else "No verdict changed after the first look")
    return (f"{head}; the log starts with the first verdict of each claim and scope "
            f"({plural(first, 'entry', 'entries')}, marked 'at the first look').")


def claims_view(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims table as display text (:data:`PORT_SHOWN`), one row per source claim."""
    rows = []
    for r in claims.to_dict("records"):
        rows.append({
            "claim_id": plain_text(r.get("claim_id")), "claim": plain_text(r.get("claim")),
            "E": _e_text(r), "changes": plain_text(r.get("changes")),
            "source": f"{_ci(r.get('source_estimate'), r.get('source_ci_low'), r.get('source_ci_high'))}"
                      f" ({plain_text(r.get('source_verdict'))}; {plain_text(r.get('source_cohort'))})",
            "local": _local_text(r),
            "verdict": plain_text(r.get("verdict")), "reason": plain_text(r.get("reason")),
            "to resolve": _resolve_text(r)})
    return pd.DataFrame(rows, columns=list(PORT_SHOWN))


def _local_text(r: Mapping[str, Any]) -> str:
    """The local estimate [CI] and its counts; where nothing was computed locally the
    counts are those of the local data, and say so (no estimate stands on them)."""
    n = f"{fmt.fmt_int(r.get('local_n_pos'))} + {fmt.fmt_int(r.get('local_n_neg'))}"
    if fmt.as_float(r.get("local_estimate")) is None:
        return f"{fmt.MISSING} (not computed; local data n = {n}; {plain_text(r.get('local_cohort'))})"
    return (f"{_ci(r.get('local_estimate'), r.get('local_ci_low'), r.get('local_ci_high'))}"
            f" (n = {n}; {plain_text(r.get('local_cohort'))})" + _other(r))


#: the verdicts whose legend differs on a monitor page (no one-look sample is sized there)
_MONITOR_VERDICTS = {
    "unresolved": "the local interval spans the claimed level: more local cases would tell "
                  "(under repeated looks no one-look sample is given)"}


def verdict_counts(claims: pd.DataFrame) -> str:
    """``holds: 2, does not hold: 1`` in :data:`SITE_VERDICTS` order (the page, summary.md
    and the commands' last lines)."""
    if claims.empty:
        return "no claims"
    counts = claims["verdict"].value_counts()
    order = [v for v in SITE_VERDICTS if v in counts] + sorted(set(counts.index) - set(SITE_VERDICTS))
    # "does not hold: 3", not "3 does not hold": a verdict is not a noun to count
    return ", ".join(f"{v}: {int(counts[v])}" for v in order)


def _simulated(provenance: Mapping[str, Any]) -> list[str]:
    out = []
    src = (provenance.get("source") or {}).get("data_source") or {}
    loc = (provenance.get("local") or {}).get("inputs") or {}
    for who, inputs in (("source audit", src), ("local data", loc)):
        for s in simulations(inputs if isinstance(inputs, dict) else {}):
            out.append(f"the {who}'s {s['what']} comes from a seeded simulation ({s['generator']}, "
                       f"seed {s['seed']})")
    return out


def _text_table(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    cols = [c for c in columns if c in df.columns]
    return df[cols].apply(lambda col: [fmt.fmt_cell(v, col.name)[0] for v in col]) if len(df) else \
        df[cols]


SERIES_SHOWN = ("claim_id", "scope", "period", "n_pos", "n_neg", "n_unlabelled", "estimate",
                "ci_low", "ci_high", "level", "verdict", "alpha_look")
CHANGES_SHOWN = ("claim_id", "scope", "period", "verdict_before", "verdict", "text")
DRIFT_SHOWN = ("model", "period", "subset", "reference", "n_reference", "n", "ks_statistic",
               "ks_pvalue", "psi", "psi_band", "psi_pvalue", "psi_critical", "psi_reading", "status")


def _drift_view(drift: pd.DataFrame) -> pd.DataFrame:
    """The drift table as display text; a permutation PSI p-value at its floor 1/(1+B)
    reads ``≤ 0.001`` (no split was as far apart), not ``0.001``."""
    view = _text_table(drift, DRIFT_SHOWN)
    if len(drift) and "psi_pvalue" in view.columns and "psi_n_resamples" in drift.columns:
        view = view.assign(psi_pvalue=[
            fmt.fmt_p_floor(p, b) for p, b in zip(drift["psi_pvalue"], drift["psi_n_resamples"],
                                                  strict=True)])
    return view


def port_summary(claims: pd.DataFrame, provenance: Mapping[str, Any], *,
                 monitor: Mapping[str, Any] | None = None) -> str:
    """summary.md of a port (or monitor) run: the claims table first, then series, drift, provenance."""
    kind = "monitor" if monitor is not None else "port"
    src, loc = provenance.get("source") or {}, provenance.get("local") or {}
    lines = [f"# medaudit {kind}: {fmt.md_text(plain_text(src.get('name')))} → "
             f"{fmt.md_text(plain_text(loc.get('cohort')))}", ""]
    if sims := _simulated(provenance):
        lines += ["> **Simulated data.** " + "; ".join(sims) + ". No real model or patient is "
                  "involved.", ""]
    lines += ["## The source's claims at this site", "",
              f"{plural(len(claims), 'source claim')}: {verdict_counts(claims)}. Each claim "
              "re-stated on the local data with the change explicit (cohort → the site; π → the site's, for "
              "prevalence-dependent metrics; thresholds carried as fixed numbers).", ""]
    lines += fmt.md_table(claims_view(claims))
    if monitor is not None:
        lines += ["", "## Verdict changes", "", _change_count(monitor["changes"]), ""]
        lines += [f"- {fmt.md_text(t)}" for t in monitor["changes"]["text"]]
        lines += ["", "## Time series", "", monitor.get("note", ""), ""]
        lines += fmt.md_table(_text_table(monitor["series"], SERIES_SHOWN))
        lines += ["", "## Score drift per period", "",
                  "Two-sample KS and PSI of each period's scores against the reference period, "
                  "positives and negatives separately (descriptive: no correction for the number "
                  "of periods). A PSI band (0.1 moderate, 0.25 major) is read only where the "
                  "PSI's p-value says the shift is beyond chance: with few scores a period "
                  "reaches those values with no drift at all (a PSI above psi_critical is "
                  "beyond chance at 5 %).", ""]
        lines += fmt.md_table(_drift_view(monitor["drift"]))
    lines += ["", "## Provenance", ""]
    run = provenance.get("port") or provenance.get("monitor") or {}
    for title, record in (("Source audit", src), ("Local data", loc), ("Run", run)):
        # folded: the whole record (the local spec included) is for whoever checks, not for
        # every reader of the summary; GitHub and most viewers render <details>
        lines += [f"### {title}", "", f"<details><summary>{title.lower()}: the full record</summary>",
                  "", "```json", json.dumps(record, sort_keys=True, indent=1, ensure_ascii=False,
                                            default=str), "```", "", "</details>", ""]
    return "\n".join(lines)


def file_safe(name: Any, *, hashed: bool = False) -> str:
    """``name`` as a file name on every system: letters, digits, ``.``, ``_`` and ``-`` kept;
    anything else (``/``, ``<``, ``:``, spaces, non-ASCII), a name over 100 characters, or
    ``hashed`` (names that differ only in case, for macOS and Windows) makes it the kept
    characters and a short hash of the whole, so two ids never share a file
    (``Se/τ`` → ``Se___d7cf8764``)."""
    import hashlib
    import re

    text = str(name)
    kept = re.sub(r"[^A-Za-z0-9._-]", "_", text)
    if kept == text and not text.startswith(".") and len(text) <= 100 and not hashed:
        return text
    return f"{kept.lstrip('.')[:40]}_{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


def _esc(v: Any) -> str:
    return _html.escape(str(v), quote=True)


def _html_table(df: pd.DataFrame, *, table_id: str, cls: str = "", verdicts: bool = False) -> str:
    if df.empty:
        return "<p>(none)</p>"
    head = "".join(f"<th>{_esc(c)}</th>" for c in df.columns)
    body = []
    for r in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, r, strict=True):
            text = "" if fmt.is_missing(v) else str(v)
            if verdicts and c == "verdict":
                cells.append(f'<td><span class="badge {_CSS.get(text, "v-na")}">{_esc(text)}</span></td>')
            else:
                cells.append(f'<td class="{_esc(c)}">{_esc(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<table id="{table_id}" class="{cls}"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + "</tbody></table>")


def _css() -> str:
    return (Path(__file__).with_name("templates") / "report.css").read_text(encoding="utf-8")


def port_page(claims: pd.DataFrame, provenance: Mapping[str, Any], *,
              monitor: Mapping[str, Any] | None = None) -> str:
    """report.html of a port (or monitor) run; opens on the claims table with the site's verdicts."""
    from medaudit import __version__

    kind = "monitor" if monitor is not None else "port"
    src, loc = provenance.get("source") or {}, provenance.get("local") or {}
    title = f"{plain_text(src.get('name'))} → {plain_text(loc.get('cohort'))}"
    nav = ['<a href="#claims">Claims at this site</a>']
    if monitor is not None:
        nav += ['<a href="#changes">Changes</a>', '<a href="#series">Time series</a>',
                '<a href="#drift">Drift</a>']
    nav.append('<a href="#provenance">Provenance</a>')
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
           'style-src \'unsafe-inline\'; base-uri \'none\'; form-action \'none\'">',
           '<meta name="referrer" content="no-referrer">',
           f'<meta name="generator" content="medaudit {_esc(__version__)}">',
           '<link rel="icon" href="data:,">', f"<title>medaudit {kind}: {_esc(title)}</title>",
           "<style>", _css(), _EXTRA_CSS, "</style>", "</head>", "<body>",
           '<header class="top"><div class="title">',
           f'<h1><span class="brand">medaudit {kind}</span> {_esc(title)}</h1>',
           f'<p class="meta">{len(claims)} source claims · {_esc(verdict_counts(claims))} · '
           + (f'seed {_esc(loc.get("seed"))} · B = {_esc(loc.get("n_resamples"))}'
              if loc.get("n_resamples") is not None else
              "claims by closed-form intervals; drift PSI p-values by permutation or chi-square"
              if monitor is not None else "no resampling (closed-form intervals)")
           + f' · medaudit {_esc(__version__)}</p></div>',
           '<nav aria-label="sections">' + " ".join(nav) + "</nav></header>"]
    if sims := _simulated(provenance):
        out.append('<div class="banner" role="note"><strong>Simulated data.</strong> '
                   + _esc("; ".join(sims)) + ". No real model or patient is involved.</div>")
    out += ["<main>", '<section id="claims">', "<h2>The source's claims at this site</h2>",
            f"<p>Each claim of the source audit <code>{_esc(src.get('name'))}</code> re-stated on the "
            f"local data (cohort <code>{_esc(loc.get('cohort'))}</code>) with the change explicit: "
            "cohort → the site; prevalence → the site's for prevalence-dependent metrics; source "
            "thresholds carried as fixed numbers. "
            + ("An unresolved claim says why no local sample is sized: its interval is corrected "
               "for repeated looks (a single look is sized by <code>medaudit port</code>).</p>"
               if monitor is not None else
               "For an unresolved claim, the local positives and negatives that would resolve it "
               "at the observed effect.</p>"),
            _html_table(claims_view(claims), table_id="port-claims", cls="site-verdicts",
                        verdicts=True),
            "<h3>Verdicts</h3><dl>" + "".join(
                f"<dt>{_esc(v)}</dt><dd>{_esc(m)}</dd>" for v, m in (
                    {**SITE_VERDICTS, **_MONITOR_VERDICTS} if monitor is not None
                    else SITE_VERDICTS).items()) + "</dl>",
            "</section>"]
    if monitor is not None:
        ch = monitor["changes"]
        out += ['<section id="changes">', "<h2>Verdict changes</h2>",
                f"<p>{_esc(_change_count(ch))}</p>",
                "<ul>" + "".join(f"<li>{_esc(t)}</li>" for t in ch["text"]) + "</ul>" if len(ch)
                else "", "</section>",
                '<section id="series">', "<h2>Time series</h2>", f"<p>{_esc(monitor.get('note', ''))}</p>"]
        for f in monitor.get("figures") or []:
            uri = base64.b64encode(f.png).decode("ascii")
            out.append(f'<figure class="claim-fig" id="fig-{_esc(f.name)}"><img alt="{_esc(f.caption)}" '
                       f'src="data:image/png;base64,{uri}"><figcaption><strong>{_esc(f.title)}</strong> '
                       f"{_esc(f.caption)}</figcaption></figure>")
        out += [_html_table(_text_table(monitor["series"], SERIES_SHOWN), table_id="monitor-series",
                            verdicts=True), "</section>",
                '<section id="drift">', "<h2>Score drift per period</h2>",
                "<p>Two-sample KS and PSI of each period's scores against the reference period, "
                "positives and negatives separately: an early signal where labels arrive late "
                "(descriptive, no correction for the number of periods). A PSI band (0.1 moderate, "
                "0.25 major) is read only where the PSI's p-value says the shift is beyond "
                "chance: with few scores a period reaches those values with no drift at all "
                "(a PSI above psi_critical is beyond chance at 5 %).</p>",
                _html_table(_drift_view(monitor["drift"]), table_id="monitor-drift"),
                "</section>"]
    run = provenance.get("port") or provenance.get("monitor") or {}
    out += ['<section id="provenance">', "<h2>Provenance</h2>", '<div class="prov-pair">',
            "<div><h3>Source audit</h3><pre>" + _esc(json.dumps(src, sort_keys=True, indent=1,
                                                                 ensure_ascii=False, default=str))
            + "</pre></div>",
            "<div><h3>Local data</h3><pre>" + _esc(json.dumps(loc, sort_keys=True, indent=1,
                                                               ensure_ascii=False, default=str))
            + "</pre></div>", "</div>",
            "<h3>Run</h3><pre>" + _esc(json.dumps(run, sort_keys=True, indent=1, ensure_ascii=False,
                                                  default=str)) + "</pre>",
            "</section>", "</main>", "</body>", "</html>", ""]
    return "\n".join(out)


# ----------------------------------------------------------------------------- figures
def monitor_figure(series: pd.DataFrame, *, claim_id: str, file_name: str | None = None
                   ) -> RenderedFigure:
    """One claim's time series: estimate and interval per period (cumulative and per period),
    and the claimed level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from medaudit.report._figures_blocks import figure_bytes, style

    g = series[series["claim_id"] == claim_id]
    periods = list(dict.fromkeys(g["period"].astype(str)))
    x = {p: i for i, p in enumerate(periods)}
    with style():
        fig, ax = plt.subplots(figsize=(5.2, 3.2))
        for off, (scope, colour, marker) in zip((-0.12, 0.12), (("cumulative", "#1f5f99", "o"),
                                                              ("period", "#8a5a00", "s")), strict=True):
            s = g[g["scope"] == scope]
            if s.empty:
                continue
            xs = [x[str(p)] + off for p in s["period"]]
            est = s["estimate"].to_numpy(dtype=float)
            lo, hi = s["ci_low"].to_numpy(dtype=float), s["ci_high"].to_numpy(dtype=float)
            # an interval that misses its estimate by rounding must not make a negative bar
            yerr = [np.maximum(est - lo, 0.0), np.maximum(hi - est, 0.0)]
            ax.errorbar(xs, est, yerr=yerr, fmt=marker, color=colour, ms=4,
                        capsize=2, lw=1, label=f"{scope}")
        level = float(g["level"].iloc[0])
        ax.axhline(level, color="#b4231b", lw=1, ls="--", label=f"claimed level {level:g}")
        ax.set_xticks(range(len(periods)), periods, rotation=45, ha="right", fontsize=7)
        ax.set_ylabel(str(g["criterion"].iloc[0]))
        ax.set_ylim(max(0.0, min(float(g["ci_low"].min()), level) - 0.05), 1.0)
        ax.legend(fontsize=7, loc="lower left")
        fig.tight_layout()
        png, svg = figure_bytes(fig)
        plt.close(fig)
    first = g.iloc[0]
    caption = (f"{first['claim']}: estimate and interval at each period, cumulative (all cases so "
               f"far) and per period, correction {first['correction']} ({first['method']}); dashed: "
               "the claimed level. A look without the class the claim needs has no point.")
    return RenderedFigure(name=f"monitor_{file_name or file_safe(claim_id)}", block="monitor",
                          title=f"Claim {claim_id} over time", caption=caption,
                          png=png, svg=svg)
