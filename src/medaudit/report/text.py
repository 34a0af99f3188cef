"""Plain-text presentation of block results: terminal tables and a Markdown summary.

All rounding goes through :mod:`medaudit.report.format`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from medaudit.report.format import fmt_ci, fmt_estimate, fmt_interval, fmt_p, md_table

__all__ = ["fmt_ci", "markdown_summary", "print_table"]  # fmt_ci re-exported from format


def _metric_rows(metrics: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    crits = list(dict.fromkeys(metrics["criterion"]))
    header = ["cohort", "prompt", "model", *crits]
    rows = []
    for (cohort, prompt, model), g in metrics.groupby(["cohort", "prompt", "model"], sort=True):
        cells = {r.criterion: fmt_ci(r.estimate, r.ci_low, r.ci_high) for r in g.itertuples()}
        rows.append([cohort, prompt, model, *[cells.get(c, "") for c in crits]])
    return header, rows


def print_table(metrics: pd.DataFrame) -> None:
    """Print the metric table, one row per model x metric (rich when available)."""
    header = ["cohort", "prompt", "model", "metric", "estimate [95% CI]", "degenerate"]
    rows = [[str(r.cohort), str(r.prompt), str(r.model), str(r.criterion),
             fmt_ci(r.estimate, r.ci_low, r.ci_high), str(r.n_degenerate)]
            for r in metrics.itertuples()]
    try:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is part of the audit extra
        print(" | ".join(header))
        for r in rows:
            print(" | ".join(r))
        return
    table = Table(title="medaudit: estimate [95% CI]")
    for h in header:
        table.add_column(escape(h))
    for r in rows:
        table.add_row(*[escape(c) for c in r])
    Console(width=120).print(table)


def markdown_summary(res: Any, provenance: dict[str, Any]) -> str:
    """A short Markdown report of a :class:`~medaudit.blocks.CohortSummary`."""
    header, rows = _metric_rows(res.metrics)
    lines = ["# medaudit summary", ""]
    if provenance.get("inputs", {}).get("simulated"):
        lines += ["> **Simulated data.** These numbers come from a seeded simulation, not from "
                  "any real model or patient.", ""]
    lines += ["## Metrics: estimate [95% percentile CI]", ""]
    lines += md_table(pd.DataFrame(rows, columns=header))
    if not res.comparisons.empty:
        lines += ["", "## Paired model comparisons (AUROC difference, DeLong)", ""]
        lines += md_table(pd.DataFrame([{
            "cohort": r.cohort, "prompt": r.prompt, "models": r.model,
            "ΔAUROC [DeLong CI]": fmt_ci(r.estimate, r.delong_ci_low, r.delong_ci_high),
            "bootstrap CI": fmt_interval(r.boot_ci_low, r.boot_ci_high),
            "p": fmt_p(r.pvalue), "p (Holm)": fmt_p(r.pvalue_holm)}
            for r in res.comparisons.itertuples()]))
    if not res.spectrum.empty:
        lines += ["", "## Negative spectrum (shared positives)", ""]
        lines += md_table(pd.DataFrame([{
            "cohort": r.cohort, "prompt": r.prompt, "model": r.model, "controls": r.negatives,
            "AUROC a": fmt_estimate(r.auroc_a), "AUROC b": fmt_estimate(r.auroc_b),
            "Δ [CI]": fmt_ci(r.estimate, r.ci_low, r.ci_high), "perm p": fmt_p(r.perm_pvalue),
            "p (Holm)": fmt_p(r.pvalue_holm)} for r in res.spectrum.itertuples()]))
    v = provenance["versions"]
    lines += ["", "## Provenance", "",
              f"- seed {provenance['seed']}, B = {provenance['n_resamples']}, "
              f"{provenance['n_permutations']} permutations, percentile intervals",
              f"- designs: {provenance['designs']}",
              f"- multiplicity: {provenance['multiplicity']}",
              "- versions: " + ", ".join(f"{k} {val}" for k, val in sorted(v.items())), ""]
    return "\n".join(lines)
