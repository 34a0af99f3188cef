"""The Markdown summary of an audit, led by the portability matrix (rounding happens here)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from medaudit.report.format import fmt_ci, fmt_estimate, md_table

__all__ = ["audit_summary", "portability_pivot"]

_ORDER = ["at E", "C", "p", "N", "π", "r", "r, π", "y"]


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
    """One row per claim, one column per changed element (cells summarise verdicts)."""
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
    for cid in sorted(by_claim):
        cells = by_claim[cid]
        first = first_row[cid]
        row: dict[str, Any] = {"claim": f"{cid}: {first.claim} ({first.cohort}, "
                                        f"{first.prompt}, {first.negatives})"}
        for ch in _ORDER:
            if ch in cells:
                row[ch] = _cell_text(cells[ch])
        rows.append(row)
    df = pd.DataFrame(rows)
    return df[["claim", *[c for c in _ORDER if c in df.columns]]]


def audit_summary(outcome: Any) -> str:
    """Markdown: simulated-data banner, portability matrix, block notes, provenance."""
    prov = outcome.provenance
    lines = [f"# medaudit audit: {outcome.spec.name}", ""]
    if prov["inputs"].get("simulated"):
        lines += ["> **Simulated data.** Every score in this audit comes from a seeded simulation "
                  "shaped like paper 000; no real model or patient is involved.", ""]
    lines += ["## Portability matrix", "",
              "Each claim at its specification E, then with one element of E changed "
              "(C cohort or institution, p prompt, N negative class, π prevalence, r criterion, "
              "y reference labels). Verdicts from the "
              "interval: holds / reversed / unresolved (interval spans the boundary) / not defined "
              "/ unaffected; threshold claims are judged on the point estimate as in paper 000 "
              "eq. 7 (holds / does not hold; specificity only for named control groups; the "
              "interval is shown for context).", ""]
    lines += md_table(portability_pivot(outcome.claims))
    for name, res in outcome.results.items():
        if res.notes:
            lines += ["", f"## {name}: notes", ""] + [f"- {n}" for n in res.notes]
    v = prov["versions"]
    lines += ["", "## Provenance", "",
              f"- seed {prov['seed']}; B = {prov['n_resamples']}; {prov['n_permutations']} "
              f"permutations; {prov['ci_method']}",
              f"- bootstrap design per cohort: {prov['designs']}",
              f"- multiplicity: {prov['multiplicity']}",
              f"- inputs: {prov['inputs']}",
              "- versions: " + ", ".join(f"{k} {val}" for k, val in sorted(v.items())),
              "- every table (CSV and Parquet) is under `tables/`; full precision in `results.json`.",
              ""]
    return "\n".join(lines)
