"""The Markdown summary of an audit, led by the portability matrix (rounding happens here)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from medaudit.blocks.claimkit import AXES, NOT_EVIDENCE, POINT_MARK
from medaudit.report._common import data_sources, simulations
from medaudit.report.format import fmt_ci, fmt_estimate, md_table, md_text

__all__ = ["audit_summary", "portability_pivot"]

_ORDER = list(AXES)


def _cell_text(rows: Any) -> str:
    parts = []
    for r in rows:
        v = r.verdict
        tag = f"{r.changed_to}: {v}" if r.changed_to else v
        if isinstance(r.estimate, float) and r.estimate == r.estimate:
            ci = fmt_ci(r.estimate, r.ci_low, r.ci_high) if r.ci_low == r.ci_low else fmt_estimate(
                r.estimate)
            tag += f" ({ci})"
        if r.qualification:
            tag += f" [{r.qualification}]"
        parts.append(tag)
    return "<br>".join(parts)


def portability_pivot(claims: pd.DataFrame) -> pd.DataFrame:
    """One row per claim, one column per changed element (cells summarise verdicts).

    Declared claims first, in declared order; then the generated claims by id.
    """
    if claims.empty:
        return pd.DataFrame()
    # one pass over the rows, bucketed by claim and change in row order (what a groupby and
    # a filter per change give, without a frame per cell)
    by_claim: dict[Any, dict[Any, list]] = {}
    first_row: dict[Any, Any] = {}
    for r in claims.itertuples():
        if r.claim_id != r.claim_id:  # a missing id: groupby leaves such rows out
            continue
        first_row.setdefault(r.claim_id, r)
        by_claim.setdefault(r.claim_id, {}).setdefault(r.change, []).append(r)
    rows = []
    origin = claims["origin"] if "origin" in claims.columns else pd.Series("", index=claims.index)
    declared = [c for c in dict.fromkeys(claims.loc[origin == "declared", "claim_id"]) if c in by_claim]
    rest = sorted(set(by_claim) - set(declared), key=str)
    for cid in declared + rest:
        cells = by_claim[cid]
        first = first_row[cid]
        row: dict[str, Any] = {"claim": f"{cid}: {first.claim} ({first.cohort}, "
                                        f"{first.prompt}, {first.negatives})"}
        for ch in _ORDER + sorted(set(cells) - set(_ORDER), key=str):
            if ch in cells:
                row[ch] = _cell_text(cells[ch])
        rows.append(row)
    df = pd.DataFrame(rows)
    present = set(claims["change"])
    extra = sorted(c for c in present if c not in _ORDER)
    return df[["claim", *[c for c in _ORDER + extra if c in df.columns]]]


def audit_summary(outcome: Any) -> str:
    """Markdown: simulated-data banner, portability matrix, block notes, provenance."""
    prov = outcome.provenance
    lines = [f"# medaudit audit: {md_text(outcome.spec.name)}", ""]
    if sims := simulations(prov["inputs"]):
        lines += ["> **Simulated data.** " + "; ".join(
            f"{'The' if i == 0 else 'the'} {s['what']} comes from a seeded simulation "
            f"(`{s['generator']}`, seed {s['seed']})" for i, s in enumerate(sims))
            + ". No real model or patient is involved.", ""]
    if sources := data_sources(prov["inputs"]):
        lines += ["**Data.**", ""] + [f"- {d['name']}. {d['citation']}. Licence: {d['licence']}. "
                                      f"<{d['url']}>" for d in sources] + [""]
    lines += ["## Portability matrix", "",
              "Each claim at its specification E, then with one element of E changed (one "
              "column per kind of change: cohort, institution, task or finding; prompt; "
              "negatives; prevalence; threshold; subgroup; reference standard; criterion). "
              "A claim has a cell only for the changes that can affect it. Verdicts from the "
              "interval: holds / reversed / unresolved (interval spans the boundary) / does not "
              "hold / not attainable (the level is above the reference's achievable ceiling) / "
              "not defined; by construction (true because of how E was chosen: not counted as "
              "holding).", ""]
    claims = outcome.claims
    origin = claims["origin"] if "origin" in claims.columns else pd.Series("", index=claims.index)
    if not claims.empty and ((claims["kind"] == "operating constraint") & (origin != "declared")).any():
        # said only where such claims are in the matrix (a declared operating point is judged
        # by its interval, like every declared claim)
        lines[-2] += (" Generated threshold claims are judged on the point estimate as in paper "
                      "000 eq. 7 (specificity only for named control groups; the interval is "
                      "shown for context).")
    if not claims.empty and "qualification" in claims.columns and claims["qualification"].astype(
            str).str.contains(POINT_MARK, regex=False).any():
        lines[-2] += (" A cell qualified as a point estimate is judged on that estimate alone: "
                      "its change has no interval.")
    if not claims.empty:
        at_e = claims[claims["change"] == "at E"]
        n_built = int(at_e["verdict"].isin(NOT_EVIDENCE).sum())
        if n_built:
            lines += [f"{n_built} of {at_e['claim_id'].nunique()} claims are true by construction "
                      "at E and are not counted as holding.", ""]
    lines += md_table(portability_pivot(claims))
    for name, res in outcome.results.items():
        if res.notes:
            lines += ["", f"## {name}: notes", ""] + [f"- {md_text(n)}" for n in res.notes]
    v = prov["versions"]
    lines += ["", "## Provenance", "",
              f"- seed {prov['seed']}; B = {prov['n_resamples']}; {prov['n_permutations']} "
              f"permutations; {prov['ci_method']}",
              f"- bootstrap design per cohort: {md_text(prov['designs'])}",
              f"- multiplicity: {md_text(prov['multiplicity'])}",
              f"- inputs: {md_text(prov['inputs'])}",
              "- versions: " + ", ".join(f"{k} {val}" for k, val in sorted(v.items())),
              "- every table (CSV and Parquet) is under `tables/`; full precision in `results.json`.",
              ""]
    return "\n".join(lines)
