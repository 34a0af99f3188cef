"""Recurring local validation: a published audit's claims checked at every period (``medaudit monitor``).

``monitor(source, local, *, spec=None, correction="confseq", ...) -> MonitorRun``: the site
appends batches over time (a ``period`` column, or one file per period); every source
claim a site can keep checking — AUROC ≥ L, Se ≥ x or Sp ≥ y at the source's fixed τ — is
re-stated as in :func:`medaudit.port.port` and evaluated at every period, cumulatively and
per period, by :func:`medaudit.stats.monitor.monitor_claims` with the declared correction
for repeated looks (``confseq``: anytime-valid confidence sequences; ``alpha_spending``
over ``planned_looks`` declared in advance; ``none``).  Beside it, the drift of the score
distribution per period (:func:`medaudit.stats.drift.score_drift`: two-sample KS and PSI,
positives and negatives separately), an early signal where labels arrive late (rows whose
label is empty count for drift only).

Outputs (:meth:`MonitorRun.write`): ``monitor__claims.csv`` (one row per source claim, the
site's verdict at the last look, cumulative), ``monitor__series.csv``,
``monitor__changes.csv`` (the verdict change log: "Se at τ = 0.42 ≥ 0.85 stopped holding in
2026-07"), ``monitor__drift.csv``, a figure per claim under ``figures/``, ``monitor.json``,
``source.claims.json``, ``summary.md`` and ``report.html``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["monitor", "MonitorRun", "read_period_files"]


_SHORT = {"sensitivity": "Se", "specificity": "Sp"}


def read_period_files(paths: Sequence[str | os.PathLike[str]], *, period: str = "period"
                      ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """One score table per period: the files concatenated, each row's period its file's stem.

    Returns the table and the files' provenance (path, period, SHA-256).  Refused with one
    line: two files with the same stem, a table that already has a ``period`` column, and a
    file without rows or without the columns every period needs (``image_id``, ``model``,
    ``score``, ``label``), which would otherwise add nothing and be dropped unseen.  The
    table's messages name each row's file and line (:func:`medaudit.io.schema.stack_files`).
    """
    from medaudit.exceptions import MedauditError
    from medaudit.io import file_sha256
    from medaudit.io.schema import (
        FILLED_COLUMNS,
        OPTIONAL_COLUMNS,
        SCORE_COLUMNS,
        require_columns,
        stack_files,
    )
    from medaudit.io.tables import read_table

    needed = [c for c in SCORE_COLUMNS if c not in FILLED_COLUMNS]
    frames, record, seen = [], [], set()
    for raw in paths:
        path = Path(raw)
        name = path.stem
        if name in seen:
            raise MedauditError(f"{path}: two period files are named {name!r}; a period is a "
                                "file's name without its suffix, so give each period its own name.")
        seen.add(name)
        t = read_table(path)
        if period in t.columns:
            raise MedauditError(f"{path}: has a {period!r} column already; give one table with that "
                                "column, or one file per period without it.")
        require_columns(t, needed, source=str(path), what="period file",
                        optional=[*FILLED_COLUMNS, *OPTIONAL_COLUMNS], noun="period file")
        frames.append(t.assign(**{period: name}))
        record.append({"path": str(path), "period": name, "sha256": file_sha256(path)})
    if not frames:
        raise MedauditError("no period files given; name one file per period.")
    names = [r["path"] for r in record]
    source = f"period files {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"
    return stack_files(frames, names, source=source), record


@dataclass(frozen=True, eq=False)
class MonitorRun:
    """A monitoring run: the site's verdicts, the time series, the change log and the drift."""

    claims: pd.DataFrame = field(repr=False)
    series: pd.DataFrame = field(repr=False)
    changes: pd.DataFrame = field(repr=False)
    drift: pd.DataFrame = field(repr=False)
    source: dict[str, Any] = field(repr=False)
    provenance: dict[str, Any] = field(repr=False)
    _inputs: dict[str, list[Path]] = field(repr=False, default_factory=dict)

    @property
    def note(self) -> str:
        """How the series was computed, in one sentence."""
        o = self.provenance["monitor"]
        return (f"Correction for repeated looks: {o['correction']}"
                + (f" ({o['spending']} spending over {o['planned_looks']} planned looks)"
                   if o["correction"] == "alpha_spending" else
                   f" (rate sequences tuned for {o['planned_looks']} planned looks)"
                   if o["correction"] == "confseq" and o.get("planned_looks") else "")
                + f"; confidence level {o['confidence_level']:g}; decision rule score ≥ τ; "
                  "cumulative = every labelled case so far, period = that period's cases alone.")

    def figures(self) -> list[Any]:
        """One figure per monitored claim (estimate, interval and claimed level per period)."""
        from medaudit.report.port import file_safe, monitor_figure

        ids = list(dict.fromkeys(self.series["claim_id"])) if len(self.series) else []
        # ids that differ only in case (SE, se) would share a file where case is ignored
        folded = [file_safe(i).lower() for i in ids]
        return [monitor_figure(self.series, claim_id=i,
                               file_name=file_safe(i, hashed=folded.count(f) > 1))
                for i, f in zip(ids, folded, strict=True)]

    def _sections(self) -> dict[str, Any]:
        return {"series": self.series, "changes": self.changes, "drift": self.drift,
                "figures": self.figures(), "note": self.note}

    def write(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the run's tables, figures, summary and report atomically (see the module notes)."""
        from medaudit.io.output import json_text
        from medaudit.port import SiteFile, write_site_folder
        from medaudit.report.port import port_page, port_summary

        def files() -> dict[str, SiteFile]:
            sections = self._sections()  # the figures are drawn once, for the files and the page
            tables = {"claims": self.claims, "series": self.series, "changes": self.changes,
                      "drift": self.drift}
            out: dict[str, SiteFile] = {f"monitor__{name}.csv": df for name, df in tables.items()}
            for f in sections["figures"]:
                out[f"figures/{f.name}.png"] = f.png
                out[f"figures/{f.name}.svg"] = f.svg
            out["monitor.json"] = json_text({**{name: df.to_dict("records") for name, df in tables.items()},
                                             "provenance": self.provenance}) + "\n"
            out["summary.md"] = port_summary(self.claims, self.provenance, monitor=sections)
            out["report.html"] = port_page(self.claims, self.provenance, monitor=sections)
            return out

        return write_site_folder(directory, files, what="monitor", source=self.source,
                                 provenance=self.provenance, inputs=self._inputs, overwrite=overwrite,
                                 folders=("figures",))

    @property
    def headline(self) -> str:
        """``11 source claims, 3 monitored over 6 periods, 4 verdict changes after the first
        look`` (the repr and the command's last line)."""
        from medaudit._words import plural
        from medaudit.stats.monitor import count_changes

        monitored = (self.provenance.get("monitor") or {}).get("monitored_claims") or ()
        periods = (self.provenance.get("local") or {}).get("periods") or ()
        return (f"{plural(len(self.claims), 'source claim')}, {len(monitored)} monitored over "
                f"{plural(len(periods), 'period')}, "
                f"{plural(count_changes(self.changes), 'verdict change')} after the first look")

    def __repr__(self) -> str:
        return f"<medaudit MonitorRun: {self.headline}>"


def _monitor_claims(c: Mapping[str, Any], d: Mapping[str, Any], origin: str = "") -> list[Any] | str:
    """The :class:`~medaudit.stats.monitor.MonitorClaim` of a re-stated claim, or why none.

    ``origin`` is how the source's threshold was carried (:func:`medaudit.port.restate`):
    a τ moved to the site's score scale says from what, so "τ = 0.0" reads as the logit of
    the source's 0.5.
    """
    from medaudit.stats.monitor import MonitorClaim

    col = f"{d['model']}|{d['prompt']}"
    if d.get("kind") == "level":
        metric = str(d.get("metric"))
        if metric.split("[", 1)[0] != "roc_auc" or d.get("at_least") is None or d.get("options"):
            return (f"monitor checks AUROC ≥ L and Se/Sp ≥ x at a fixed τ; {metric} "
                    f"{'≤' if d.get('at_least') is None else '≥'} {d.get('at_least') or d.get('at_most')}"
                    " is checked once with `medaudit port`")
        return [MonitorClaim(claim_id=c["id"], criterion="roc_auc", level=float(d["at_least"]),
                             score=col, text=c["text"] or None)]
    if d.get("kind") == "operating_point" and isinstance(d.get("threshold"), (int, float)):
        tau = float(d["threshold"])
        parts = [(r, float(d[f"{r}_at_least"])) for r in ("sensitivity", "specificity")
                 if d.get(f"{r}_at_least") is not None]
        moved = ""
        if "logit(τ)" in origin or "expit(τ)" in origin:
            # port's origin reads "τ = <source τ> on <scale>, logit(τ) ..." (expit of a logit
            # of -1000 is 0.0, which has no logit to invert back)
            source_tau = origin.split("τ = ", 1)[1].split(" on ", 1)[0]
            moved = f" ({'logit' if 'logit(τ)' in origin else 'expit'} of the source's {source_tau})"
        return [MonitorClaim(claim_id=c["id"] if len(parts) == 1 else f"{c['id']}.{_SHORT[r]}",
                             criterion=r, level=lvl, threshold=tau, score=col,
                             text=f"{d['model']}: {_SHORT[r]} at τ = {tau!r}{moved} ≥ {lvl!r}")
                for r, lvl in parts]
    return (f"monitor checks AUROC ≥ L and Se/Sp ≥ x at a fixed τ; a {c['kind']} claim is checked "
            "once with `medaudit port`")


def _combined(rows: list[Mapping[str, Any]]) -> str:
    """The verdict of a claim whose constraints are monitored separately (intersection-union)."""
    vs = [r["verdict"] for r in rows]
    if "not assessable" in vs:
        return "not assessable here"
    if all(v == "holds" for v in vs):
        return "holds"
    return "does not hold" if "does not hold" in vs else "unresolved"


def monitor(source: str | os.PathLike[str], local: Any = None, /, *, spec: Any = None,
            period: str = "period", period_files: Sequence[str | os.PathLike[str]] | None = None,
            periods: Sequence[Any] | None = None, correction: str = "confseq",
            planned_looks: int | None = None, spending: str | None = None,
            cohort: str | None = None, **options: Any) -> MonitorRun:
    """Check a published audit's claims at every period of the local data.

    Parameters
    ----------
    source : path
        An audit folder, its ``results.json``, or a claims file.
    local : DataFrame or path, optional
        The site's score table with a ``period`` column (labels may be empty: not known yet).
    spec : path or mapping, optional
        An audit spec of the local data (cohorts, primary prompt, ...).
    period : str, default="period"
        The period column.
    period_files : sequence of paths, optional
        One score table per period instead (the period is each file's name without suffix).
    periods : sequence, optional
        The periods in order.  Default: the order of ``period_files`` as given; of an
        ordered categorical column; numbered periods (a numeric column) in number order;
        otherwise sorted as text where that is time order (ISO months such as "2026-07";
        month names, "10/15/2025" or "p10" beside "p2" are refused: give ``periods``).
    correction : {"confseq", "alpha_spending", "none"}, default="confseq"
    planned_looks : int, optional
        Looks declared in advance: required by ``alpha_spending``; with ``confseq`` it tunes
        the rate sequences (Se, Sp) to be tightest at that horizon (anytime-valid either way,
        but the intervals and verdicts change with it, so declare it before the first look).
    spending : {"pocock", "obrien_fleming"}, optional
        The spending function of ``alpha_spending`` (default pocock); refused with any other
        correction, where it would be silently ignored.
    cohort : str, optional
        The site's cohort when the local data has several.
    **options
        Spec keys of the local data (``confidence_level``, ``primary_prompt``, ...).

    Returns
    -------
    MonitorRun
    """
    from medaudit import __version__
    from medaudit.audit.context import spec_inputs
    from medaudit.blocks.claimkit import deciding_part
    from medaudit.blocks.context import cell_rng
    from medaudit.exceptions import MedauditError
    from medaudit.io.claimsfile import read_claims_source
    from medaudit.io.schema import OPTIONAL_COLUMNS, SCORE_COLUMNS
    from medaudit.port import (
        PORT_COLUMNS,
        load_local,
        no_claims_option,
        present_models,
        restate,
        site_cohort,
        source_provenance,
        source_row,
        with_keys,
    )
    from medaudit.stats.drift import ordered_categories, period_order, score_drift, warn_if_out_of_time_order

    if spending is not None and correction != "alpha_spending":
        raise MedauditError(f"spending={spending!r} applies only with correction='alpha_spending' "
                            f"(given: correction={correction!r}); drop it or use alpha_spending.")
    spending = "pocock" if spending is None else spending
    from medaudit.stats.monitor import monitor_claims

    no_claims_option(options)
    doc, source_file = read_claims_source(source)
    files = None
    if period_files:
        if local is not None:
            raise MedauditError("give the local data once: a table with a period column, or "
                                "period files, not both.")
        local, files = read_period_files(period_files, period=period)
    loc = load_local(local, spec=spec, keep_unlabelled=True, **options)
    site = site_cohort(loc, cohort)
    labelled = loc.scores[loc.scores["cohort"] == site]
    late = loc.unlabelled
    if late is not None and len(late):
        late = with_keys(late, prompt=loc.primary_prompt, cohort=site)
        late = late[late["cohort"].astype(str) == site]
    long = pd.concat([labelled, late], ignore_index=True) if late is not None and len(late) else labelled
    if period not in long.columns:
        raise MedauditError(f"the local data has no {period!r} column; add one (e.g. 2026-07 for each "
                            "row's month) or give one file per period (--period-files).")
    if period in (*SCORE_COLUMNS, *OPTIONAL_COLUMNS):  # the score table's own columns
        raise MedauditError(f"period={period!r} names a column of the score table itself; name the "
                            "column that says when each image was read (e.g. period=\"month\").")
    blank = long[period].isna() | (long[period].astype(str).str.strip() == "")
    if blank.any():
        # the rows were filtered and joined from the local files, so a row number would not
        # be the file's line: the image names the row wherever the user looks for it
        first = long.loc[blank].iloc[0]
        which = (f"image_id {str(first['image_id'])!r}" if "image_id" in long.columns
                 else f"row {int(long.index[blank][0]) + 1}")
        raise MedauditError(f"the {period!r} column is empty for {int(blank.sum())} row(s) of the "
                            f"local data (first: {which}); give every row its period.")
    if periods is None and (declared := ordered_categories(long[period])) is not None:
        # an ordered categorical says the order itself: as text, "Feb" would come before "Jan"
        periods = [str(c) for c in declared]
    if isinstance(periods, (str, bytes)):
        raise MedauditError(f"periods must be a list of the periods in order; got the text "
                            f"{periods!r} (write periods=[{periods!r}, ...]).")
    if periods is None and files is not None:
        periods = [r["period"] for r in files]  # the order the files were given in, not A-Z
    elif periods is None and pd.api.types.is_numeric_dtype(long[period]) and \
            not pd.api.types.is_bool_dtype(long[period]):
        # numbered periods in number order: as text, "10" would come before "2"
        periods = [str(v) for v in sorted(long[period].unique().tolist())]
    long = long.assign(**{period: long[period].astype(str)})
    order = period_order(long[period].to_numpy(dtype=object),
                         None if periods is None else [str(p) for p in periods], warn_empty=True)
    if periods is not None:
        warn_if_out_of_time_order(order, stacklevel=2)
    images = labelled.drop_duplicates("image_id")
    n_pos, n_neg = int((images["label"] == 1).sum()), int((images["label"] == 0).sum())
    present = present_models(loc.scores, site)
    groups = {str(g) for g in images.get("negative_group", pd.Series(dtype=object)).dropna() if str(g)}
    level = float(loc.spec.confidence_level)
    series, changes, drift_rows, rows = [], [], [], []
    monitored: list[str] = []  # the source claims monitored (an operating point is one claim)
    drifted: set[str] = set()
    for c in doc["claims"]:
        d, origin = restate(c, cohort=site, present=present, primary_prompt=loc.primary_prompt,
                            negative_groups=groups, n_pos=n_pos, n_neg=n_neg,
                            local_scale=loc.spec.score_scale,
                            source_scale=(doc.get("source") or {}).get("score_scale"))
        row = source_row(c, site=site, origin=origin, confidence_level=level,
                         changes=f"cohort {c['E'].get('cohort')} → {site} (the site), every period"
                                 + (f"; threshold: {origin}" if origin else ""))
        mcs = _monitor_claims(c, d, origin) if not isinstance(d, str) else d
        if isinstance(mcs, str):
            row.update(verdict="not assessable here", reason=mcs, local_n_pos=n_pos,
                       local_n_neg=n_neg)
            rows.append(row)
            continue
        col = mcs[0].score
        model, prompt = col.split("|", 1)
        # one order whatever the order of the rows given: sums in the intervals and the drift
        # tests' permutations then give the same bytes when the same rows come shuffled
        sub = long[(long["model"] == model) & (long["prompt"] == prompt)].sort_values(
            "image_id", kind="stable")
        table = {"period": sub[period].to_numpy(dtype=object),
                 "label": pd.to_numeric(sub["label"], errors="coerce").to_numpy(dtype=float),
                 col: sub["score"].to_numpy(dtype=float)}
        res = monitor_claims(table, mcs, periods=order, correction=correction,
                             confidence_level=level, spending=spending, planned_looks=planned_looks)
        series += res.series_records()
        changes += res.change_records()
        if col not in drifted:
            # the drift tests' permutations: a stream keyed by model|prompt, from the spec's
            # seed, so that other claims (or their order) do not move it
            dr = score_drift(table["period"], table[col], y_true=table["label"], periods=order,
                             rng=cell_rng(loc.spec.seed, "drift", col))
            drifted.add(col)
            drift_rows += [{"model": model, "prompt": prompt, **r} for r in dr.records()]
        last = [r for r in res.series if r["scope"] == "cumulative" and r["look"] == len(order)]
        # the row shows the constraint that decides the verdict, as the claims table does
        verdict = _combined(last)
        part = "not assessable" if verdict == "not assessable here" else verdict
        deciding = last[deciding_part([r["verdict"] for r in last], part)]
        row.update(local_estimate=deciding["estimate"], local_ci_low=deciding["ci_low"],
                   local_ci_high=deciding["ci_high"], verdict=verdict,
                   reason=f"judged on the cumulative interval at {deciding['period']} "
                          f"({deciding['method']})",
                   local_n_pos=deciding["n_pos"], local_n_neg=deciding["n_neg"],
                   criterion=deciding["criterion"], design=deciding["design"],
                   family=deciding["family"])
        other = next((r for r in last if r is not deciding), None)
        if other is not None:
            # an operating point's second constraint, beside the one that decides (as port)
            row.update(other_criterion=other["criterion"], other_estimate=other["estimate"],
                       other_ci_low=other["ci_low"], other_ci_high=other["ci_high"])
        monitored.append(str(c["id"]))
        if row["verdict"] == "unresolved":
            # port's plan sizes a one-look interval; these verdicts come from intervals
            # corrected for every look, whose width at a later look depends on how many come
            # before it, so a one-look count would promise too little
            row.update(plan_rule="not sized here: the monitored interval is corrected for "
                                 "repeated looks, so a one-look sample size would be too small; "
                                 "medaudit port on the pooled periods sizes a single look")
        rows.append(row)
    from medaudit.stats.drift import DRIFT_COLUMNS
    from medaudit.stats.monitor import CHANGE_COLUMNS, SERIES_COLUMNS

    provenance = {
        "source": source_provenance(doc, source_file),
        "local": {"inputs": {**loc.inputs, **({"period_files": files} if files else {})},
                  "spec": loc.spec.model_dump(mode="json", exclude={"execution"}),
                  "cohort": site, "n_pos": n_pos, "n_neg": n_neg,
                  "n_unlabelled": 0 if late is None else int(late["image_id"].nunique()),
                  "periods": order, "seed": None, "n_resamples": None,
                  "note": "no resampling for the claims: closed-form sequences and intervals (the "
                          "drift PSI p-values permute, from monitor.drift_seed)"},
        "monitor": {"medaudit": __version__, "cohort": site, "monitored_claims": monitored,
                    "correction": correction,
                    "planned_looks": planned_looks,
                    "spending": spending if correction == "alpha_spending" else None,
                    "confidence_level": level, "period_column": period,
                    "drift": "two-sample KS (scipy ks_2samp) and PSI against the first period, "
                             "all / positives / negatives; PSI p-value by 999 permutations of the "
                             "pooled scores (blocks.context.cell_rng(seed, 'drift', 'model|prompt')), "
                             "or by its chi-square approximation where every bin expects 100 "
                             "scores of each period",
                    "drift_seed": int(loc.spec.seed)},
    }
    inputs = spec_inputs(loc.spec, loc.base, loc.spec_path)
    inputs["source"] = [source_file.parent if source_file.name == "results.json" else source_file]
    if files:
        inputs["period files"] = [Path(f["path"]) for f in files]
    return MonitorRun(claims=pd.DataFrame(rows, columns=list(PORT_COLUMNS)),
                      series=pd.DataFrame(series, columns=list(SERIES_COLUMNS)),
                      changes=pd.DataFrame(changes, columns=list(CHANGE_COLUMNS)),
                      drift=pd.DataFrame(drift_rows, columns=["model", "prompt", *DRIFT_COLUMNS]),
                      source=doc, provenance=provenance, _inputs=inputs)

