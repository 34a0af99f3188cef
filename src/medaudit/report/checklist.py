"""The "Reporting checklist" of paper 000 (Table 21), answered from an audit's results.

Every answer is computed from the outcome (blocks, claims, provenance); nothing is
hard-coded.  The questions are paper 000's, so the answers read the paper-000 blocks'
sections and tables by name; the page itself (:mod:`medaudit.report.html`) reads every
block generically from :data:`medaudit.blocks.BLOCKS`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from medaudit._words import plural
from medaudit.blocks import BLOCKS
from medaudit.report import format as fmt
from medaudit.report._common import (
    TABLE21,
    and_list,
    block_table,
    label_text,
    plain_text,
    provenance_files,
    split_qualifications,
    unique_texts,
)


def _models(outcome: Any) -> list[str]:
    """Model names: the spec's cards plus the ``model`` column of the per-model tables."""
    names: set[str] = {m.name for m in outcome.spec.models}
    for block, table in (("discrimination", "metrics"), ("prompts", "auroc_matrix"),
                         ("operating_points", "operating_points"), ("transport", "thresholds"),
                         ("retained", "seeds")):
        names |= set(unique_texts(block_table(outcome, block, table).get("model", [])))
    return sorted(names - {"all"})


def _verdicts(claims: pd.DataFrame, change: str, kind: str | None = None) -> Counter:
    if claims.empty:
        return Counter()
    sub = claims[claims["change"].map(label_text) == change]
    if kind is not None:
        sub = sub[sub["kind"].map(label_text) == kind]
    return Counter(label_text(v) for v in sub["verdict"])


def _counts_text(c: Counter) -> str:
    return ", ".join(f"{n} {v}" for v, n in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def _qual_parts(claims: pd.DataFrame, kind: str) -> list[str]:
    if claims.empty:
        return []
    return sorted({q["text"] for v in claims["qualification"] for q in split_qualifications(v)
                   if q["kind"] == kind})


def checklist(outcome: Any) -> list[dict[str, Any]]:
    """The six Table 21 components, each with its question and answers read from ``outcome``."""
    spec, prov, claims = outcome.spec, outcome.provenance, outcome.claims
    blocks = set(outcome.results)
    items: list[dict[str, Any]] = []

    # Implementation
    a = []
    cards = {m.name: m for m in spec.models}
    models = _models(outcome)
    for m in models:
        c = cards.get(m)
        if c is None:
            a.append(f"{m}: no model card; checkpoint, revision, processor and score rule are not "
                     "recorded.")
            continue
        parts = [f"checkpoint {c.checkpoint or 'not recorded'}",
                 f"revision {c.revision or 'not recorded'}",
                 f"processor {c.processor or 'not recorded'}",
                 f"score rule {c.score_rule or 'not recorded'}"]
        if c.learned_scale is not None:
            parts.append(f"learned scale {fmt.fmt_grid(c.learned_scale)}")
        a.append(f"{m}: " + "; ".join(parts) + ".")
    no_rev = [m for m in models if not (cards.get(m) and cards[m].revision)]
    if no_rev:
        a.append(f"No immutable revision recorded for {and_list(no_rev)}.")
    prompts = unique_texts(block_table(outcome, "prompts", "auroc_matrix").get("prompt", []))
    if prompts:
        a.append(f"Prompt families: {and_list(prompts)} (primary: {spec.primary_prompt}). Only family "
                 "identifiers are recorded in the results; the exact positive and negative texts "
                 "must be reported beside them.")
    else:
        a.append(f"One prompt / score rule ({spec.primary_prompt}); prompt variation was not "
                 "audited (no prompts block).")
    a.append(f"Scores are read as {spec.score_scale}.")
    items.append({"links": [("#block-prompts", "prompts")] if "prompts" in blocks else [],
                  "answers": a})

    # Population and endpoint
    a = []
    inputs = prov.get("inputs", {}) or {}
    if inputs.get("simulated"):
        a.append(f"Simulated data from {plain_text(inputs.get('generator'))} (seed "
                 f"{plain_text(inputs.get('generator_seed'))}, scale {plain_text(inputs.get('scale'))}); no "
                 "real population or reference standard is involved.")
    else:
        for f in provenance_files(inputs):
            a.append(f"Scores read from {f}.")
    counts = prov.get("cohorts", {}) or {}
    for c, cs in spec.cohorts.items():
        d = counts.get(c, {}) or {}
        a.append(f"{c} ({cs.role}): {fmt.fmt_int(d.get('n'))} images, {fmt.fmt_int(d.get('n_pos'))} "
                 f"positive, {fmt.fmt_int(d.get('n_neg'))} negative; bootstrap design {cs.design}.")
    a.append("Reference labels are the `label` column of the score table; the spec does not "
             "describe the reference standard behind them.")
    vc = _verdicts(claims, "cohort", "ranking") + _verdicts(claims, "institution", "ranking")
    if vc:
        a.append(f"Ranking claims with the cohort changed (C): {_counts_text(vc)}.")
    items.append({"links": [("#provenance-cohorts", "cohorts")], "answers": a})

    # Negative spectrum
    a = []
    for c in spec.cohorts:
        groups = (counts.get(c, {}) or {}).get("negative_groups") or {}
        if groups:
            a.append(f"{c} controls: " + ", ".join(f"{g} ({fmt.fmt_int(n)})"
                                                     for g, n in sorted(groups.items())) + ".")
    for s in spec.block_config("spectrum"):
        ref = f", reference {s.reference}" if s.reference else ""
        a.append(f"Spectrum analysis on {s.cohort}: groups {and_list(s.groups)}{ref}; test {s.test}.")
    con = block_table(outcome, "spectrum", "contrasts")
    if not con.empty:
        excl = sum(1 for lo, hi in zip(con["ci_low"], con["ci_high"], strict=True)
                   if fmt.as_float(lo) is not None and fmt.as_float(hi) is not None
                   and (fmt.as_float(lo) > 0 or fmt.as_float(hi) < 0))
        a.append(f"Group contrasts of AUROC: {excl} of {len(con)} intervals exclude 0.")
        if "significant" in con.columns:
            tested = [v for v in con["significant"] if not fmt.is_missing(v)]
            if tested:
                a.append(f"Permutation tests significant after adjustment: "
                         f"{sum(bool(v) for v in tested)} of {len(tested)}.")
    vc = _verdicts(claims, "negatives", "ranking")
    if vc:
        a.append(f"Ranking claims with the negative class changed (N): {_counts_text(vc)}.")
    small = _qual_parts(claims, "small")
    if small:
        a.append("Small strata flagged: " + "; ".join(small) + ".")
    if not a:
        a.append("No negative groups are named in the score table; controls are not described.")
    items.append({"links": [("#block-spectrum", "spectrum")] if "spectrum" in blocks else [],
                  "answers": a})

    # Score interpretation
    a = []
    for p in spec.block_config("prevalence"):
        a.append(f"{and_list(p.cohorts)}: prevalence grid π ∈ {{"
                 + ", ".join(fmt.fmt_grid(x) for x in p.grid)
                 + f"}}, primary {fmt.fmt_grid(p.primary)}; other results at the observed prevalence.")
    if not spec.block_config("prevalence"):
        a.append("Every result is at the observed prevalence of its cohort (no grid declared).")
    crits = unique_texts(c for block in ("discrimination", "prevalence")
                    for c in block_table(outcome, block, "metrics").get("criterion", []))
    if crits:
        a.append("Criteria reported: " + ", ".join(crits) + ".")
    rev = block_table(outcome, "prevalence", "reversals")
    if not rev.empty and "reversed" in rev.columns:
        k = sum(bool(v) for v in rev["reversed"] if not fmt.is_missing(v))
        a.append(f"Model pairs whose score-error order reverses across the grid: {k} of {len(rev)}.")
    vc = _verdicts(claims, "criterion at prevalence", "ranking")
    if vc:
        a.append(f"Ranking claims judged by score error at each π (r + π): {_counts_text(vc)}.")
    items.append({"links": [("#block-prevalence", "prevalence")] if "prevalence" in blocks else [],
                  "answers": a})

    # Operating rule
    a = []
    for t in spec.block_config("transport"):
        fixed = f"; fixed-threshold design for {and_list(t.fixed_targets)}" if t.fixed_targets else ""
        a.append(f"Thresholds chosen on {t.source} for {and_list(t.rules)} ≥ {fmt.fmt_grid(t.target_value)}, "
                 f"carried unchanged to {and_list(t.targets)} (design {t.design}{fixed}).")
    rc = block_table(outcome, "transport", "retention_counts")
    for r in rc.to_dict("records"):
        a.append(f"{label_text(r.get('rule'))} rule from {label_text(r.get('source'))}: "
                 f"{fmt.fmt_int(r.get('n_retained'))} "
                 f"of {fmt.fmt_int(r.get('n_total'))} target constraints retained by point estimate.")
    useless = [] if claims.empty else [
        r for r in claims.to_dict("records")
        if any(q["kind"] == "useless" for q in split_qualifications(r.get("qualification")))]
    if useless:
        a.append(f"{plural(len(useless), 'matrix cell')} flagged as a useless operating point "
                 "(the other rate near zero): "
                 + "; ".join(f"{label_text(r['claim_id'])} {label_text(r['changed_to'])}"
                             for r in useless[:8])
                 + ("; …" if len(useless) > 8 else "."))
    if not spec.block_config("transport"):
        a.append("No threshold transport was declared; no operating-rule claim is made.")
    items.append({"links": [("#block-transport", "transport")] if "transport" in blocks else [],
                  "answers": a})

    # Uncertainty and provenance
    a = [f"Percentile intervals at level {fmt.fmt_grid(prov.get('confidence_level'))} from B = "
         f"{plain_text(prov.get('n_resamples'))} resamples ({plain_text(prov.get('ci_method'))}); "
         f"{plain_text(prov.get('n_permutations'))} permutations; run seed {plain_text(prov.get('seed'))}, "
         f"{plain_text(prov.get('seed_derivation'))}."]
    designs = prov.get("designs", {}) or {}
    if designs:
        a.append("Images are resampled within each cohort by its design: " + ", ".join(
            f"{c} {plain_text(designs[c])}" for c in dict.fromkeys([*spec.cohorts, *sorted(designs)])
            if c in designs) + ".")
    fixed = [f"{t.source} → {and_list(t.fixed_targets if t.design == 'reestimate' else t.targets)}"
             for t in spec.block_config("transport") if t.design == "fixed" or t.fixed_targets]
    a.append("Held fixed: the models and their scores (no model is refit), the prompts"
             + (f", and the source threshold for {'; '.join(fixed)}" if fixed else "") + ".")
    for k, v in sorted((prov.get("multiplicity") or {}).items()):
        if k in BLOCKS and k not in outcome.results:
            continue  # a family of a block this audit did not run
        a.append(f"Multiplicity ({k}): {plain_text(v)}.")
    n_deg = 0
    for res in outcome.results.values():
        for df in res.tables.values():
            if "n_degenerate" in df.columns:
                n_deg += sum(1 for v in df["n_degenerate"] if (fmt.as_float(v) or 0) > 0)
    a.append(f"{plural(n_deg, 'result row')} had degenerate bootstrap replicates (counted in "
             "n_degenerate, interval from the rest).")
    exp = [f"{m.name} on {c}: {note}" for m in spec.models for c, note in sorted(m.exposure.items())]
    if exp:
        a.append("Documented exposure: " + "; ".join(exp) + ".")
        n_exp = 0 if claims.empty else sum(
            any(q["kind"] == "exposure" for q in split_qualifications(v)) for v in claims["qualification"])
        a.append(f"{plural(n_exp, 'matrix cell')} carry an exposure qualification.")
    else:
        a.append("No exposure is documented in the model cards; undocumented is not the same as "
                 "independent.")
    seeds = block_table(outcome, "retained", "seeds")
    if not seeds.empty:
        n_models = len(unique_texts(seeds.get("model", [])))
        a.append(f"Training-seed variability reported for {plural(n_models, 'model')}.")
    items.append({"links": [("#provenance", "provenance")], "answers": a})

    return [{"component": comp, "question": q, **it} for (comp, q), it in zip(TABLE21, items,
                                                                               strict=True)]
