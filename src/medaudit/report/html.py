"""The self-contained HTML report of an audit (``report.html``).

One file: inline CSS, figures embedded as PNG data URIs, inline JavaScript only
for sorting tables and opening detail rows, and no request of any kind (a
Content-Security-Policy forbids every external load).  The first screen is the
portability matrix; then one section per block (notes, figures, tables), the
provenance, and a reporting checklist after paper 000's Table 21 whose answers
are read from the outcome.

The page is a pure function of the outcome: no clock, no host name, no path of
the output directory, so the same outcome gives byte-identical HTML and
``medaudit report DIR`` reproduces the ``report.html`` that ``medaudit audit``
wrote.  Rounding happens in :mod:`medaudit.report.format`; nothing here computes a
statistic, it only counts and quotes what the blocks returned.
"""

from __future__ import annotations

import base64
import functools
import html as _html
import importlib
import json
import logging
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from medaudit._words import plural
from medaudit.blocks import BLOCKS
from medaudit.blocks import claimkit as ck
from medaudit.io.output import FileKind, file_starts_with
from medaudit.report import format as fmt
from medaudit.report._common import (
    QUALIFICATIONS,
    data_sources,
    label_text,
    outcome_tables,
    plain_text,
    simulations,
    split_qualifications,
    unique_texts,
)
from medaudit.report._types import RenderedFigure
from medaudit.report.checklist import checklist

__all__ = ["Report", "render_figures", "start_figures", "write_report", "rerender", "MAX_ROWS",
           "REPORT_PAGE", "is_report_page"]

log = logging.getLogger("medaudit")

#: rows of one table shown in the page (the full table is in tables/ and results.json)
MAX_ROWS = 300

_E = ("model", "prompt", "cohort", "negatives", "prevalence", "threshold", "criterion")
_PROV = ("design", "n_resamples", "seed", "family")

#: changed element of E -> (symbol, element, what it changes to): the one vocabulary of the blocks
CHANGES: dict[str, tuple[str, str, str]] = dict(ck.AXES)

#: verdict -> css class of its badge
_CSS = {"holds": "v-holds", "reversed": "v-reversed", "unresolved": "v-unresolved",
        "does not hold": "v-fails", "not attainable": "v-unattainable",
        "by construction": "v-construction", "not defined": "v-undefined",
        "unaffected": "v-unaffected", "specificity only": "v-sponly", "not assessed": "v-na"}
#: verdict -> (css class, meaning); the legend lists those of the matrix in this order
VERDICTS: dict[str, tuple[str, str]] = {
    **{v: (_CSS[v], d) for v, d in ck.VERDICTS.items()},
    # results.json files written before the matrix dropped its filler cells
    "unaffected": ("v-unaffected", "the criterion does not depend on this element"),
}
_NOT_SURVIVING = {"reversed", "unresolved", "does not hold", "not attainable", "not defined",
                  "not assessed"}
#: the order of the matrix's groups: declared claims first, then the generated kinds
_GROUP_TITLES = {"declared": "Declared claims"}


def _png_size(png: bytes) -> tuple[int, int] | None:
    if len(png) >= 24 and png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR":
        return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    return None


# --------------------------------------------------------------------------- matrix

def _entry(r: dict[str, Any]) -> dict[str, Any]:
    verdict = label_text(r.get("verdict")) or "not assessed"
    cls = VERDICTS.get(verdict, ("v-na", ""))[0]
    change = label_text(r.get("change"))
    defined = fmt.as_float(r.get("estimate")) is not None
    est = fmt.fmt_ci(r.get("estimate"), r.get("ci_low"), r.get("ci_high")) if defined else ""
    point = fmt.fmt_estimate(r.get("estimate")) if defined else ""
    interval = fmt.fmt_interval(r.get("ci_low"), r.get("ci_high")) if defined else ""
    crit = label_text(r.get("criterion"))
    if label_text(r.get("kind")) == "ranking":
        what = f"{crit} difference ({label_text(r.get('model')).replace(' vs ', ' - ')})"
    else:
        what = crit
    quals = split_qualifications(r.get("qualification"))
    marks = "".join(dict.fromkeys(q["mark"] for q in quals if q["mark"]))
    # degenerate replicates are common in small strata: named on the claim and in its details,
    # not on every badge
    cell_marks = "".join(m for m in marks if m != QUALIFICATIONS["degenerate"][0])
    label = " ".join(x for x in CHANGES.get(change, (change, "", ""))[:2] if x)
    shown = label_text(r.get("changed_to"))
    m = re.fullmatch(r"(.+) at (π=.+)", shown) if change == "criterion at prevalence" else None
    if m:  # the criterion is the r column's; the cell names the prevalence
        shown = m.group(2)
    group = ""
    if change == "negatives" and ": " in shown:  # "cohort: negative group" -> grouped by cohort
        group, shown = shown.split(": ", 1)
    head = f"{label}: {label_text(r.get('changed_to'))}" if label_text(r.get("changed_to")) else label
    lines = [f"{head} → {verdict}"]
    if est:
        lines.append(f"{what}: {est}")
    ceiling = fmt.as_float(r.get("ceiling"))
    if ceiling is not None:
        lines.append(f"achievable ceiling under this reference: {fmt.fmt_estimate(ceiling)}")
    if fmt.as_float(r.get("other_estimate")) is not None and label_text(r.get("other_criterion")):
        other = fmt.fmt_ci(r.get("other_estimate"), r.get("other_ci_low"), r.get("other_ci_high")) \
            if fmt.as_float(r.get("other_ci_low")) is not None else fmt.fmt_estimate(r.get("other_estimate"))
        lines.append(f"{label_text(r.get('other_criterion'))}: {other}")
    lines += [f"• {q['text']}" for q in quals]
    if label_text(r.get("source_table")):
        lines.append(f"from {label_text(r.get('source_table'))}")
    return {"change": change, "changed_to": label_text(r.get("changed_to")), "shown": shown,
            "group": group, "verdict": verdict, "cls": cls, "estimate": est, "point": point,
            "interval": interval, "what": what, "quals": quals, "marks": marks,
            "cell_marks": cell_marks,
            "title": "\n".join(lines), "source": label_text(r.get("source_table")),
            "ceiling": "" if ceiling is None else fmt.fmt_estimate(ceiling),
            "inline": bool(est) and change == "at E"}


def _columns(present: Sequence[str]) -> list[dict[str, str]]:
    order = [c for c in CHANGES if c in present] + [c for c in present if c not in CHANGES]
    return [{"key": c, "sym": CHANGES.get(c, (c, "", ""))[0], "word": CHANGES.get(c, (c, "", ""))[1],
             "help": CHANGES.get(c, ("", "", c))[2]} for c in order]


def _claim_row(cid: str, recs: list[dict[str, Any]], order: list[str]) -> dict[str, Any]:
    at_e = next((r for r in recs if label_text(r.get("change")) == "at E"), recs[0])
    entries = [_entry(r) for r in recs]
    thr = fmt.as_float(at_e.get("threshold"))
    e = [("m", "model", label_text(at_e.get("model"))),
         ("p", "prompt", label_text(at_e.get("prompt"))),
         ("C", "cohort", label_text(at_e.get("cohort"))),
         ("N", "negatives", label_text(at_e.get("negatives"))),
         ("π", "prevalence", label_text(at_e.get("prevalence"))),
         ("τ", "threshold", "none" if thr is None else fmt.fmt_estimate(thr)),
         ("r", "criterion", label_text(at_e.get("criterion")))]
    if label_text(at_e.get("task")):
        e.insert(3, ("k", "task", label_text(at_e.get("task"))))
    verdict_e = next((x["verdict"] for x in entries if x["change"] == "at E"), "not assessed")
    others = [x["verdict"] for x in entries if x["change"] != "at E"]
    if verdict_e in ck.NOT_EVIDENCE:
        status = "construction"
    elif verdict_e != "holds":
        status = "not-at-e"
    elif any(v in _NOT_SURVIVING for v in others):
        status = "changes"
    else:
        status = "survives"
    return {"id": cid, "claim": label_text(at_e.get("claim")), "kind": label_text(at_e.get("kind")),
            "origin": label_text(at_e.get("origin")), "e": e, "status": status,
            "verdict_e": verdict_e, "cells": [[x for x in entries if x["change"] == c] for c in order],
            "entries": entries,
            "marks": "".join(dict.fromkeys(m for x in entries for m in x["marks"]))}


def _group_key(r: dict[str, Any]) -> str:
    return "declared" if label_text(r.get("origin")) == "declared" else label_text(r.get("kind"))


def _matrix(claims: pd.DataFrame) -> dict[str, Any]:
    """The matrix as groups of claims (declared first, then each generated kind), each with
    the columns of the changes that can affect its claims (no filler columns)."""
    if claims is None or claims.empty:
        return {"groups": [], "rows": [], "n_claims": 0, "summary": [], "verdicts_present": [],
                "point_only": False}
    records = claims.to_dict("records")
    by_claim: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_claim.setdefault(label_text(r.get("claim_id")), []).append(r)
    groups: dict[str, list[str]] = {}
    for cid, recs in by_claim.items():
        groups.setdefault(_group_key(recs[0]), []).append(cid)
    keys = (["declared"] if "declared" in groups else []) + [k for k in groups if k != "declared"]
    out_groups, rows = [], []
    for i, k in enumerate(keys):
        present = unique_texts(label_text(r.get("change")) for cid in groups[k] for r in by_claim[cid])
        columns = _columns(present)
        order = [c["key"] for c in columns]
        g_rows = [_claim_row(cid, by_claim[cid], order) for cid in groups[k]]
        rows += g_rows
        title = _GROUP_TITLES.get(k, f"{k[:1].upper()}{k[1:]} claims (generated)")
        out_groups.append({"key": k, "title": title, "columns": columns, "rows": g_rows,
                           "id": "portability-matrix" if i == 0 else f"portability-matrix-{_safe_id(k)}"})
    status = Counter(r["status"] for r in rows)
    at_e = Counter(r["verdict_e"] for r in rows)
    excluded = sum(at_e[v] for v in ck.NOT_EVIDENCE)
    summary = [f"{plural(len(rows), 'claim')}"
               + (f" ({plural(len(groups['declared']), 'declared claim')} first)"
                  if "declared" in groups else "") + "; at E: "
               + ", ".join(f"{n} {v}" for v, n in sorted(at_e.items(), key=lambda kv: (-kv[1], kv[0])))
               + "."]
    if excluded:
        summary.append(f"{plural(excluded, 'claim')} true by construction (a threshold chosen on "
                       "its own source, a rate measured where it is claimed) "
                       f"{'is' if excluded == 1 else 'are'} not counted as holding.")
    if at_e["holds"]:
        summary.append(f"Of the {at_e['holds']} holding at E, {status['survives']} survive every "
                       f"change assessed and {status['changes']} become reversed, unresolved, "
                       "failed, unattainable or undefined under at least one.")
    kinds = Counter(r["kind"] for r in rows)
    seen = {x["verdict"] for r in rows for x in r["entries"]}
    quals = claims["qualification"] if "qualification" in claims.columns else pd.Series([], dtype=object)
    return {"groups": out_groups, "rows": rows, "n_claims": len(rows), "summary": summary,
            "status": dict(status), "kinds": sorted(kinds.items()),
            "verdicts_present": [v for v in VERDICTS if v in seen],
            "point_only": bool(quals.astype(str).str.contains(ck.POINT_MARK, regex=False).any())}


# --------------------------------------------------------------------------- tables

#: criteria whose values lie in [0, 1]; a normal-theory (DeLong) interval of one can pass 1
_AUROC_CRITERIA = ("roc_auc", "soft_roc_auc")


def _clip_auroc_bounds(cols: list[str], values: list[list[Any]]) -> None:
    """Clip, for display only, the interval bounds of AUROC rows to [0, 1] (in place).

    A DeLong interval ``AUC ± z sqrt(var)`` is not clipped where it is computed (the tables
    and results.json keep the formula's numbers, pROC's clipped ones are recoverable from
    them), but a page showing an AUROC interval up to 1.009 reads as an error.
    """
    if "criterion" not in cols:
        return
    crit = values[cols.index("criterion")]
    rows = [i for i, c in enumerate(crit) if isinstance(c, str) and c.split("[", 1)[0]
            in _AUROC_CRITERIA]
    for name in ("ci_low", "ci_high"):
        if name in cols and rows:
            col = values[cols.index(name)]
            for i in rows:
                v = fmt.as_float(col[i])
                if v is not None and not 0.0 <= v <= 1.0 and math.isfinite(v):
                    col[i] = min(max(v, 0.0), 1.0)


def _table_view(block: str, name: str, df: pd.DataFrame, max_rows: int) -> dict[str, Any]:
    cols = [str(c) for c in df.columns]
    n = len(df)
    # each column read out once (Python scalars, as iterating the frame gives them); each
    # shown cell formatted once, its number flag reused for the column's alignment
    values = [df.iloc[:, j].tolist() for j in range(len(cols))]
    _clip_auroc_bounds(cols, values)
    constant: list[tuple[str, str]] = []
    extra = set()
    for c, vals in zip(cols, values, strict=True):
        if c in _PROV:
            extra.add(c)
        if (c in _E or c in _PROV) and n and len({fmt.full_precision(v) for v in vals}) == 1:
            extra.add(c)
            constant.append((c, fmt.fmt_cell(vals[0], c)[0]))
    n_shown = min(n, max_rows)
    cells = [[fmt.fmt_cell(v, c) for v in vals[:n_shown]] for c, vals in zip(cols, values,
                                                                            strict=True)]
    # the body is written here, not by the template: a loop over every cell in Jinja cost
    # more than the rest of the page (the same markup, escaped by the same markupsafe)
    from markupsafe import Markup, escape

    is_x = [c in extra for c in cols]
    lines = []
    for i in range(n_shown):
        tds = []
        for x, col in zip(is_x, cells, strict=True):
            text, full, is_num = col[i]
            cls = ("x " if x else "") + ("long " if len(text) > 48 else "") + (
                "na " if text == fmt.MISSING else "") + ("num" if is_num else "")
            attrs = f' class="{cls}"' if cls else ""
            if is_num:
                v = escape(full)
                attrs += f' data-v="{v}" title="{v}"'
            tds.append(f"<td{attrs}>{escape(text)}</td>")
        lines.append(f"        <tr>{''.join(tds)}</tr>\n")
    columns = [{"name": c, "x": c in extra, "e": c in _E,
                "num": any(is_num for _, _, is_num in col)}
               for c, col in zip(cols, cells, strict=True)]
    return {"id": f"t-{block}-{name}", "name": name, "file": f"tables/{block}__{name}.csv",
            "n_rows": n, "n_shown": n_shown, "columns": columns, "body": Markup("".join(lines)),
            "constant": constant, "has_extra": bool(extra), "n_extra": len(extra)}


# --------------------------------------------------------------------------- provenance

def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _families(outcome: Any) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for block, res in outcome.results.items():
        for tname, df in res.tables.items():
            if "family" not in df.columns or df.empty:
                continue
            for fam, k in Counter(label_text(v) for v in df["family"] if label_text(v)).items():
                d = found.setdefault(fam, {"family": fam, "tables": [], "rows": 0, "adjusted": 0})
                d["tables"].append(f"{block}.{tname}")
                d["rows"] += k
                if "pvalue_adj" in df.columns:
                    sub = df[df["family"].map(label_text) == fam]
                    d["adjusted"] += sum(fmt.as_float(v) is not None for v in sub["pvalue_adj"])
    return [found[k] for k in sorted(found)]


def _provenance(outcome: Any) -> dict[str, Any]:
    o = outcome
    prov = outcome.provenance
    spec = outcome.spec
    inputs = prov.get("inputs", {}) or {}
    files = []
    other_inputs = []
    for k in sorted(inputs):
        v = inputs[k]
        if k == "data_source":  # named under the page header, in words
            continue
        if k == "scores_wide" and isinstance(v, list):
            files += [{"path": plain_text(x.get("path")), "cohort": plain_text(x.get("cohort")),
                       "sha256": plain_text(x.get("sha256"))} for x in v]
        else:
            other_inputs.append((k, plain_text(v)))
    if "scores" in inputs and "sha256" in inputs:
        files.append({"path": plain_text(inputs["scores"]), "cohort": "all",
                      "sha256": plain_text(inputs["sha256"])})
        other_inputs = [(k, v) for k, v in other_inputs if k not in ("scores", "sha256")]
    cohorts = []
    counts = prov.get("cohorts", {}) or {}
    designs = prov.get("designs", {}) or {}
    for c in list(spec.cohorts) + sorted(set(counts) - set(spec.cohorts)):
        d = counts.get(c, {}) or {}
        groups = d.get("negative_groups") or {}
        cohorts.append({"cohort": c, "role": spec.cohorts[c].role if c in spec.cohorts else "",
                        "design": plain_text(designs.get(c, "")), "n": fmt.fmt_int(d.get("n")),
                        "n_pos": fmt.fmt_int(d.get("n_pos")), "n_neg": fmt.fmt_int(d.get("n_neg")),
                        "groups": ", ".join(f"{g} {fmt.fmt_int(n)}" for g, n in sorted(groups.items()))})
    cards = [{"name": m.name, "checkpoint": m.checkpoint or "", "revision": m.revision or "",
              "processor": m.processor or "", "score_rule": m.score_rule or "",
              "learned_scale": "" if m.learned_scale is None else fmt.fmt_grid(m.learned_scale),
              "exposure": [f"{c}: {note}" for c, note in sorted(m.exposure.items())]}
             for m in spec.models]
    randomness = [(k, plain_text(prov[k])) for k in ("seed", "seed_derivation", "n_resamples",
                                                "n_permutations", "confidence_level", "ci_method")
                  if k in prov]
    known = {"spec", "inputs", "cohorts", "versions", "designs", "multiplicity", "seed",
             "seed_derivation", "n_resamples", "n_permutations", "confidence_level", "ci_method"}
    return {"files": files, "inputs": other_inputs, "cohorts": cohorts, "cards": cards,
            "versions": sorted((k, plain_text(v)) for k, v in (prov.get("versions") or {}).items()),
            "randomness": randomness,
            "multiplicity": sorted((k, plain_text(v) + (" (block not run in this audit)"
                                                   if k in BLOCKS and k not in o.results else ""))
                                   for k, v in (prov.get("multiplicity") or {}).items()),
            "families": _families(outcome),
            "other": [(k, plain_text(prov[k])) for k in sorted(prov) if k not in known],
            "spec_json": _json(prov.get("spec", {}))}


# --------------------------------------------------------------------------- figures

def render_figures(outcome: Any, *, workers: int | None = None) -> list[RenderedFigure]:
    """The audit's figures, as :func:`medaudit.report.figures.render_all` draws them ([]
    without matplotlib); ``workers`` as for :func:`start_figures`."""
    return start_figures(outcome, workers=workers)()


#: the tables the figure workers draw from; set only while the pool forks them
_FORK_TABLES: dict[str, Any] | None = None
#: matplotlib modules the figures import lazily: imported before a fork, so that every
#: worker inherits them (and the font list) instead of importing them again
_MATPLOTLIB = ("matplotlib.style", "matplotlib.figure", "matplotlib.lines", "matplotlib.colors",
               "matplotlib.patches", "matplotlib.backends.backend_agg",
               "matplotlib.backends.backend_svg")


def _render_forked(stem: str) -> RenderedFigure | None:
    """One figure in a forked worker, from the tables it inherited."""
    return importlib.import_module("medaudit.report.figures").render_figure(stem, _FORK_TABLES)


def start_figures(outcome: Any, *, workers: int | None = None
                  ) -> Callable[[], list[RenderedFigure]]:
    """Start drawing the audit's figures; returns the function that waits for them.

    Each figure is a pure function of the block tables, drawn whole by one process, so
    drawing them side by side gives the bytes of drawing them in turn.  ``workers``:
    processes drawing at once (None: the usable cores); with fewer than two, or where
    processes cannot be forked from this one, they are drawn here, now.  The caller may
    do other work (the page's tables, summary.md) before calling the returned function,
    which gives the figures in the order of :data:`medaudit.report.figures.FIGURES`.
    """
    global _FORK_TABLES
    from medaudit.backends.local import fork_pool, usable_cores

    try:
        _figures = importlib.import_module("medaudit.report.figures")
        for name in _MATPLOTLIB:
            importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name not in ("medaudit.report.figures", "matplotlib") and not (
                exc.name or "").startswith("matplotlib"):
            raise
        log.info("no figures: %s", exc)
        return list
    tables = outcome_tables(outcome)
    stems = [f.stem for f in _figures.FIGURES]
    n = min(usable_cores() if workers is None else int(workers), len(stems))
    pool = fork_pool(n) if n >= 2 else None
    if pool is None:
        figs = list(_figures.render_all(tables))
        return lambda: figs
    _FORK_TABLES = tables
    try:
        futures = [pool.submit(_render_forked, stem) for stem in stems]  # forks the workers
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        _FORK_TABLES = None

    return _Drawing(pool, futures)


class _Drawing:
    """Figures being drawn by worker processes: call to wait for them (in report order)."""

    def __init__(self, pool: Any, futures: list[Any]):
        self._pool, self._futures = pool, futures

    def __call__(self) -> list[RenderedFigure]:
        try:
            figs = [f for f in (fut.result() for fut in self._futures) if f is not None]
        except BaseException:
            self.close()
            raise
        self._pool.shutdown(wait=True)  # every figure is in: the workers are idle
        return figs

    def close(self) -> None:
        """Stop the workers now (figures not yet drawn are dropped); idempotent.

        Called when the run fails or is interrupted.  A Ctrl-C reaches the workers too
        (one process group), and a pool whose worker died mid-task can leave
        ``shutdown(wait=True)`` waiting for ever on its pipes; the workers only draw in
        memory, so they are terminated, then the pool is let go without waiting.
        """
        for proc in list((getattr(self._pool, "_processes", None) or {}).values()):
            if proc.is_alive():
                proc.terminate()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _block_resampling(res: Any, prov: dict[str, Any]) -> str:
    """"B = ..." of one block: its own B where it has one (its provenance), else the run's."""
    own = (res.provenance or {}).get("n_resamples")
    if own is None:
        return f"B = {plain_text(prov.get('n_resamples', ''))}"
    if isinstance(own, dict):
        return "; ".join(f"B = {plain_text(v)} ({k})" for k, v in own.items())
    return f"B = {plain_text(own)}"


def _figure_view(f: RenderedFigure) -> dict[str, Any]:
    size = _png_size(f.png)
    return {"id": f"fig-{f.name}", "name": f.name, "title": f.title, "caption": f.caption,
            "src": "data:image/png;base64," + base64.b64encode(f.png).decode("ascii"),
            "width": size[0] if size else None, "height": size[1] if size else None}


# --------------------------------------------------------------------------- the report

@functools.lru_cache(maxsize=1)
def _jinja_env() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("medaudit.report", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def _safe_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", name)


class Report:
    """The HTML report of one audit outcome.

    Parameters
    ----------
    outcome : AuditOutcome
        What :func:`medaudit.audit.run.audit` returned, or :func:`~medaudit.audit.run.load_outcome`
        rebuilt from ``results.json``.
    figures : list of RenderedFigure, optional
        Figures to embed; by default :func:`render_figures` draws them from the block tables.
    max_rows : int, default=MAX_ROWS
        Rows of one table shown in the page (all rows stay in ``tables/`` and ``results.json``).
    """

    def __init__(self, outcome: Any, *,
                 figures: Sequence[RenderedFigure] | Callable[[], Sequence[RenderedFigure]] | None
                 = None, max_rows: int = MAX_ROWS):
        self.outcome = outcome
        # a callable (start_figures' collector) is called once the page's tables are built
        self._pending = figures if callable(figures) else None
        self._figures = None if figures is None or callable(figures) else list(figures)
        self.max_rows = int(max_rows)
        self._html: str | None = None

    @property
    def figures(self) -> list[RenderedFigure]:
        if self._figures is None:
            self._figures = list(self._pending() if self._pending is not None
                                 else render_figures(self.outcome))
            self._pending = None
        return self._figures

    def context(self) -> dict[str, Any]:
        """Everything the template shows (plain data; the template escapes every string)."""
        o = self.outcome
        prov = o.provenance
        # the tables first: figures being drawn elsewhere are collected only after them
        tables = {name: [_table_view(name, t, df, self.max_rows) for t, df in res.tables.items()]
                  for name, res in o.results.items()}
        figs: dict[str, list[dict[str, Any]]] = {}
        for f in self.figures:
            figs.setdefault(f.block, []).append(_figure_view(f))
        blocks = []
        for name, res in o.results.items():
            blocks.append({"name": name, "id": f"block-{_safe_id(name)}",
                           "title": BLOCKS[name].title if name in BLOCKS else name.replace("_", " "),
                           "resampling": _block_resampling(res, prov),
                           "notes": list(res.notes), "figures": figs.pop(name, []),
                           "tables": tables[name]})
        orphans = [f for name in sorted(figs) for f in figs[name]]
        inputs = prov.get("inputs", {}) or {}
        matrix = _matrix(o.claims)
        return {
            "name": o.spec.name, "simulations": simulations(inputs),
            "data_sources": data_sources(inputs),
            "medaudit_version": plain_text((prov.get("versions") or {}).get("medaudit", "")),
            "seed": plain_text(prov.get("seed", "")),
            "n_resamples": "; ".join(dict.fromkeys(b["resampling"] for b in blocks))
            or f"B = {plain_text(prov.get('n_resamples', ''))}",
            "level": fmt.fmt_pct(prov.get("confidence_level"), 0),
            "matrix": matrix, "verdicts": [(v, *VERDICTS[v]) for v in matrix["verdicts_present"]],
            "qual_legend": [(m, d) for m, d, _k in QUALIFICATIONS.values()],
            "blocks": blocks, "orphan_figures": orphans,
            "provenance": _provenance(o), "checklist": checklist(o), "max_rows": self.max_rows,
        }

    def render(self) -> str:
        """The whole page as one string (deterministic for a given outcome and figures)."""
        if self._html is None:
            self._html = _jinja_env().get_template("report.html.j2").render(**self.context())
        return self._html

    def save(self, path: str | os.PathLike[str], *, html: str | None = None) -> Path:
        """Write the page (``html`` if already rendered) to ``path`` atomically (``~`` is
        the home folder, as the checks of :mod:`medaudit.io.output` read it)."""
        from medaudit.io.output import atomic_write_bytes

        path = Path(path).expanduser()
        data = (self.render() if html is None else html).encode("utf-8")
        atomic_write_bytes(path, data, prefix=f".{path.name}.tmp-")
        return path

    def _repr_html_(self) -> str:
        """For notebooks: the page in an isolated iframe (its CSS and script stay inside)."""
        return ('<iframe style="width:100%;height:720px;border:1px solid #ccc" '
                f'srcdoc="{_html.escape(self.render(), quote=True)}"></iframe>')


def is_report_page(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an HTML page medaudit wrote: its head carries medaudit's generator tag.

    Every page medaudit writes (the audit's report, a port or monitor report) has
    ``<meta name="generator" content="medaudit VERSION">`` in its first lines.
    """
    return file_starts_with(Path(path), b'<meta name="generator" content="medaudit ')


#: what ``medaudit report DIR --out FILE --overwrite`` may replace
REPORT_PAGE = FileKind("an HTML report medaudit wrote", is_report_page)


def write_report(outcome: Any, directory: str | os.PathLike[str], *,
                 figures: Callable[[], Sequence[RenderedFigure]] | None = None) -> Path:
    """Write ``report.html`` and ``figures/<name>.png|svg`` into ``directory``.

    Each file is replaced atomically; the figures folder is swapped in whole.
    ``figures``: the collector :func:`start_figures` returned for this outcome (figures
    already being drawn); by default they are drawn here (in worker processes when the
    machine has two or more usable cores), while the page's tables are built.
    """
    from medaudit.io.output import atomic_directory, record_written

    directory = Path(directory)
    drawing = figures if figures is not None else start_figures(outcome)
    report = Report(outcome, figures=drawing)
    try:
        html = report.render()  # render first: a failure leaves the old page and figures intact
    except BaseException:
        getattr(drawing, "close", lambda: None)()
        raise
    figs = report.figures
    for f in figs:
        if _safe_id(f.name) != f.name:
            raise ValueError(f"figure name {f.name!r} is not a plain file stem")
    # the figures folder is swapped in whole (emptied when no figure applies, so no stale
    # figure survives a re-render), then the page that embeds the same figures
    with atomic_directory(directory / "figures", overwrite=True, within_output=True) as tmp:
        for f in figs:
            (tmp / f"{f.name}.png").write_bytes(f.png)
            (tmp / f"{f.name}.svg").write_text(f.svg, encoding="utf-8")
    page = report.save(directory / "report.html", html=html)
    record_written(directory, ["report.html"])  # a finished folder's manifest lists the new page
    return page


def _check_in_place(directory: Path) -> None:
    """Refuse a re-render in place that would replace what medaudit did not write; touch nothing.

    ``figures/`` is swapped in whole, so it may hold only the files the folder's manifest
    lists; ``report.html`` must be a page medaudit wrote.  Refusing (rather than carrying a
    foreign file over) keeps the rule of every output folder: medaudit's files are replaced,
    the user's are neither deleted nor mixed with a new output.
    """
    from medaudit.io.output import OutputPathError, foreign_files, named_paths

    figures, page = directory / "figures", directory / "report.html"
    elsewhere = f"or write the page elsewhere with `medaudit report {directory} --out page.html`"
    if figures.is_dir() and not figures.is_symlink():
        foreign = foreign_files(figures)
        if foreign is None:
            raise OutputPathError(
                f"{str(directory)!r} was written by an earlier medaudit whose .medaudit-output "
                "does not list the files it wrote, so re-rendering figures/ in place could "
                f"replace files of yours; rerun the audit into a new folder, {elsewhere}.")
        if foreign:
            raise OutputPathError(
                f"{str(figures)!r} holds files medaudit did not write: {named_paths(foreign)}; "
                f"re-rendering replaces that folder whole. Move them out of it, {elsewhere} "
                "(nothing was written).")
    if os.path.lexists(page) and (page.is_symlink() or not is_report_page(page)):
        raise OutputPathError(f"{str(page)!r} is not an HTML report medaudit wrote; re-rendering "
                              f"would replace it. Move it away, {elsewhere} (nothing was written).")


def rerender(directory: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
             overwrite: bool = False) -> Path:
    """Re-render the report of a finished audit from its ``results.json`` (no recomputation).

    Without ``out``: ``report.html`` and ``figures/`` are rewritten inside ``directory``,
    only where medaudit wrote them (a foreign file in ``figures/`` is refused, nothing
    written).  With ``out``: only the self-contained page is written, to ``out``; an
    existing file only with ``overwrite`` and only when it is a page medaudit wrote, never
    an input of the audit (:func:`medaudit.io.output.recorded_inputs`).
    """
    from medaudit.audit.outcome import load_outcome
    from medaudit.io.output import check_output_file, recorded_inputs

    directory = Path(directory)
    results = directory / "results.json"
    if out is not None:  # never over the results (or any input) being re-rendered
        paths, digests = recorded_inputs(directory)
        # the page goes where the check looked (the path it returns: ~ expanded)
        out = check_output_file(out, inputs={"results being re-rendered": results, **paths},
                                overwrite=overwrite, kind=REPORT_PAGE, digests=digests)
    else:
        _check_in_place(directory)
    # edited numbers would be drawn as medaudit's: load_outcome refuses a changed results.json
    outcome = load_outcome(directory)
    if out is None:
        return write_report(outcome, directory)
    return Report(outcome).save(out)
