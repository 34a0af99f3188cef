"""Source-threshold transport (paper 000 M0.8, M0.10; Tables 14-17).

For every entry of ``spec.transport`` (source, targets, rules, target_value, design,
fixed_targets), every rule and every model at the primary prompt, a threshold tau is
chosen on the source cohort (95%-sensitivity rule: the highest observed source score
with Se >= x; 95%-specificity rule: maximise Se subject to Sp >= x, ties to higher Sp
then highest tau) and carried unchanged to each target.  Intervals of the target
Se and Sp come from :func:`medaudit.stats.threshold_transport` with the B-THR-SRC
design (``reestimate``: tau re-estimated on a within-label source resample, target
resampled independently) or, for the entry's ``fixed_targets``, B-THR-FIX (``fixed``:
tau fixed, target resampled only).

Tables
------
``thresholds``
    One row per entry x rule x model: tau on the source (``threshold``) with the
    source Se and Sp; criterion ``threshold[rule=<rule>,target=<x>]``.
``transport``
    One row per entry x rule x target x model x {sensitivity, specificity}: estimate and
    interval at tau, ``retained`` (the rule's retention indicator on the point
    estimate, eq. 7: Se >= x for the sensitivity rule, Sp >= x for the specificity rule;
    the same flag on both rows), ``rule``, ``source``, ``target_value``.
``named_groups``
    For targets whose negatives carry named groups: specificity at tau against each
    group (``estimate``, ``n_true_negative``, ``n_neg`` and ``fraction`` such as
    ``"1/210"``), qualified "threshold useless for this group (Sp < 0.05)" when Sp < 0.05.
``retention_counts``
    Per source x rule (x target value): ``n_retained``, ``n_total``, ``estimate``
    (their ratio) and ``fraction`` (e.g. ``"4/16"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from medaudit.blocks._base import AuditContext, BlockResult, cell_rng, spec_row
from medaudit.stats import operating_point, transport_to_targets

NAME = "transport"

#: specificity below this against a named negative group makes the threshold useless for it
USELESS_SPECIFICITY = 0.05


def _qual(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _exposure(ctx: AuditContext, model: str, *cohorts: str) -> str:
    return _qual(*(f"{c}: {ctx.exposure(model, c)}" for c in dict.fromkeys(cohorts)
                   if ctx.exposure(model, c)))


def _criterion(rule: str, x: float) -> str:
    return f"threshold[rule={rule},target={x:g}]"


def _transport_cell(cell: dict[str, Any]) -> dict:
    """One entry x rule x model: the source threshold carried to every target (independent cell).

    Module level so that a backend can ship it to a worker; the source is resampled once
    and each re-estimated threshold applied to every target, all from
    ``cell_rng(seed, *key)``.
    """
    return transport_to_targets(cell["source_label"], cell["source_score"], cell["targets"],
                                rule=cell["rule"], target_value=cell["target_value"],
                                design=cell["design"], n_resamples=cell["n_resamples"],
                                confidence_level=cell["confidence_level"],
                                rng=cell_rng(cell["seed"], *cell["key"]))


def run(ctx: AuditContext) -> BlockResult:
    spec = ctx.spec
    prompt = spec.primary_prompt
    models = ctx.models()
    keys = [(m, prompt) for m in models]
    cohort_rank = {c: i for i, c in enumerate(spec.cohorts)}

    def in_spec_order(cs):
        return sorted(dict.fromkeys(cs), key=lambda c: cohort_rank.get(c, 1 << 30))

    thr_rows: list[dict[str, Any]] = []
    tr_rows: list[dict[str, Any]] = []
    ng_rows: list[dict[str, Any]] = []
    notes: list[str] = []

    for entry in spec.transport:
        ctx.tick(f"{NAME}: from {entry.source}")
        src = ctx.wide(entry.source, keys=keys)
        x = float(entry.target_value)
        targets = in_spec_order(entry.targets)
        wides = {t: ctx.wide(t, keys=keys) for t in targets}
        for rule in dict.fromkeys(entry.rules):
            crit = _criterion(rule, x)
            seen: set[str] = set()
            designs = {t: "fixed" if t in entry.fixed_targets else entry.design for t in targets}
            # one call per model: the source is resampled once and each re-estimated
            # threshold is applied to every target, each resampled independently
            cells = [{"source_label": src.label, "source_score": src.scores[f"{m}|{prompt}"],
                      "targets": {t: (wides[t].label, wides[t].scores[f"{m}|{prompt}"])
                                  for t in targets},
                      "rule": rule, "target_value": x, "design": designs,
                      "n_resamples": spec.n_resamples, "confidence_level": spec.confidence_level,
                      "seed": ctx.seed, "key": (NAME, entry.source, m, rule, x, *targets)}
                     for m in models]
            by_model = dict(zip(models, ctx.map(_transport_cell, cells), strict=True))
            for t in targets:
                w = wides[t]
                groups = sorted(set(w.negative_group[w.label == 0]) - {""})
                for m in models:
                    k = f"{m}|{prompt}"
                    ys = src.label
                    r = by_model[m][t]
                    if m not in seen:
                        seen.add(m)
                        thr_rows.append(spec_row(
                            model=m, prompt=prompt, cohort=entry.source, threshold=r.threshold,
                            criterion=crit, design="point_estimate", n_resamples=None,
                            seed=ctx.seed, source_sensitivity=r.source_sensitivity,
                            source_specificity=r.source_specificity, rule=rule,
                            target_value=x, n=int(ys.size), n_pos=float(ys.sum()),
                            n_neg=float(ys.size - ys.sum()),
                            qualification=_exposure(ctx, m, entry.source)))
                    retained = (r.sensitivity_retained if rule == "sensitivity"
                                else r.specificity_retained)
                    qual = _exposure(ctx, m, entry.source, t)
                    for what, b in (("sensitivity", r.target_sensitivity),
                                    ("specificity", r.target_specificity)):
                        tr_rows.append(spec_row(
                            model=m, prompt=prompt, cohort=t, threshold=r.threshold,
                            criterion=what, design=b.design, n_resamples=b.n_resamples,
                            seed=ctx.seed, estimate=b.estimate, ci_low=b.ci_low,
                            ci_high=b.ci_high, n_degenerate=b.n_degenerate, n=b.n,
                            n_pos=b.n_pos, n_neg=b.n_neg, retained=bool(retained), rule=rule,
                            source=entry.source, target_value=x, qualification=qual))
                    pos = w.scores[k][w.label == 1]
                    for g in groups:
                        neg = w.scores[k][(w.label == 0) & (w.negative_group == g)]
                        op = operating_point(np.r_[np.ones(pos.size), np.zeros(neg.size)],
                                             np.r_[pos, neg], threshold=r.threshold)
                        n_tn = int(round(op.specificity * neg.size))
                        useless = ("threshold useless for this group (Sp < 0.05)"
                                   if op.specificity < USELESS_SPECIFICITY else "")
                        ng_rows.append(spec_row(
                            model=m, prompt=prompt, cohort=t, negatives=g, threshold=r.threshold,
                            criterion="specificity", design="point_estimate", n_resamples=None,
                            seed=ctx.seed, estimate=op.specificity, n_true_negative=n_tn,
                            n_pos=float(pos.size), n_neg=int(neg.size),
                            fraction=f"{n_tn}/{neg.size}", rule=rule, source=entry.source,
                            target_value=x,
                            qualification=_qual(useless, qual)))
        fixed = [t for t in targets if t in entry.fixed_targets]
        notes.append(f"transport from {entry.source} to {targets} (rules {list(entry.rules)}, "
                     f"target {x:g}): design {entry.design}"
                     + (f", fixed-threshold design for {fixed}" if fixed else "")
                     + "; retention on the point estimate (eq. 7).")

    transport = pd.DataFrame(tr_rows)
    ret_rows: list[dict[str, Any]] = []
    if not transport.empty:
        one = transport[transport["criterion"] == "sensitivity"]
        for (source, rule, x), g in one.groupby(["source", "rule", "target_value"], sort=False):
            # a (target, model) listed by two entries counts once (retention is a point estimate)
            g = g.drop_duplicates(["cohort", "model"])
            n_ret, n_tot = int(g["retained"].sum()), int(len(g))
            ret_rows.append(spec_row(
                model="all", prompt=prompt, cohort=source, threshold=None,
                criterion=_criterion(rule, x), design="point_estimate", n_resamples=None,
                seed=ctx.seed, rule=rule, source=source, target_value=x,
                targets="|".join(dict.fromkeys(g["cohort"])), n_retained=n_ret, n_total=n_tot,
                estimate=n_ret / n_tot, fraction=f"{n_ret}/{n_tot}"))
    thresholds = pd.DataFrame(thr_rows)
    if not thresholds.empty:  # entries sharing a source and rule give the same tau once
        thresholds = thresholds.drop_duplicates(["model", "cohort", "criterion"],
                                                ignore_index=True)
    return BlockResult(name=NAME, tables={"thresholds": thresholds,
                                          "transport": transport,
                                          "named_groups": pd.DataFrame(ng_rows),
                                          "retention_counts": pd.DataFrame(ret_rows)},
                       notes=tuple(notes))
