"""Source-threshold transport (paper 000 M0.8, M0.10; Tables 14-17).

For every entry of the spec's ``transport:`` list (source, targets, rules, target_value, design,
fixed_targets), every rule and every model at the primary prompt, a threshold tau is
chosen on the source cohort and carried unchanged to each target.  Rules:

* ``sensitivity``: the highest observed source score with Se >= x (``target_value``);
* ``specificity``: maximise Se subject to Sp >= x, ties to higher Sp then highest tau;
* ``youden`` / ``closest_topleft``: Youden's J or closest-to-(0, 1) on the source
  (:func:`~medaudit.stats.best_threshold`, ties to the highest tau), written by name or as
  ``{rule: youden, cost: 2, prevalence: 0.1}`` with pROC's ``best.weights``; these take no
  target value (``target_value`` is NaN in their rows) and a rate is *retained* when the
  target's point estimate is at least the source's at the same tau (both Se and Sp for the
  one ``retained`` flag).

Intervals of the target Se and Sp come from :func:`medaudit.stats.threshold_transport`
with the B-THR-SRC design (``reestimate``: tau re-estimated on a within-label source
resample, target resampled independently) or, for the entry's ``fixed_targets``,
B-THR-FIX (``fixed``: tau fixed, target resampled only).

Tables
------
``thresholds``
    One row per entry x rule x model: tau on the source (``threshold``) with the
    source Se and Sp; criterion ``threshold[rule=<rule>,target=<x>]`` (cut-point rules:
    ``threshold[rule=youden]``, with ``cost`` and ``prevalence`` when weighted).
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
``threshold_metrics`` (only for entries with ``threshold_metrics: true`` or
``threshold_metrics: {prevalence: 0.1, proportion_methods: [wilson]}``)
    Every rate at the transported tau on each target (sensitivity, specificity, ppv, npv,
    lr_positive, lr_negative, f1, accuracy, balanced_accuracy; ppv and npv also at the
    declared prevalence): the bootstrap interval with tau held fixed (the target resampled
    in its cohort's design, column ``design`` = ``threshold_fixed[<that design>]``; tau's own
    variability is in ``transport``'s re-estimating design) and the exact/score intervals of
    the counts, as in ``operating_points``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from medaudit.blocks import claimkit as ck
from medaudit.blocks._at_threshold import (
    CutpointRule,
    ProportionMethod,
    as_rule,
    rate_metrics,
    rate_rows,
)
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.cells import BootstrapCell, run_cells
from medaudit.blocks.context import AuditContext, Resampling, Study, cell_rng
from medaudit.blocks.notes import exposure_note, join
from medaudit.blocks.rows import interval, spec_row
from medaudit.io.specfile import fraction
from medaudit.stats import operating_point
from medaudit.stats.transport import transport_grid

__all__ = ["Transport", "TransportEntry", "TransportCell", "run_transport"]

NAME = "transport"

#: specificity below this against a named negative group makes the threshold useless for it
USELESS_SPECIFICITY = 0.05
#: the data-driven rules (no target value; pROC's coords(x = "best"))
CUT_RULES = ("youden", "closest_topleft")


class AtThreshold(BlockConfig):
    """Every rate at the transported threshold (``threshold_metrics:`` of an entry)."""

    #: PPV and NPV also re-expressed at this prevalence
    prevalence: float | None = None
    proportion_methods: list[ProportionMethod] = Field(
        default_factory=lambda: ["wilson", "clopper_pearson", "agresti_coull"])

    @field_validator("prevalence")
    @classmethod
    def _prev(cls, v: float | None) -> float | None:
        return None if v is None else fraction(v, "prevalence")


class TransportEntry(BlockConfig):
    """Thresholds chosen on ``source`` by each rule and carried unchanged to ``targets``."""

    source: str
    targets: list[str] = Field(min_length=1)
    rules: list[Literal["sensitivity", "specificity", "youden", "closest_topleft"] | CutpointRule
                ] = Field(default_factory=lambda: ["sensitivity"])
    #: the declared Se or Sp of the sensitivity and specificity rules
    target_value: float = 0.95
    design: Literal["reestimate", "fixed"] = "reestimate"
    #: targets whose intervals use the fixed-threshold design instead (paper 000: VinDr)
    fixed_targets: list[str] = Field(default_factory=list)
    #: every rate at the transported threshold on each target (table threshold_metrics)
    threshold_metrics: bool | AtThreshold = False

    @field_validator("target_value")
    @classmethod
    def _tv(cls, v: float) -> float:
        return fraction(v, "target_value")

    @field_validator("targets")
    @classmethod
    def _not_the_source(cls, v: list[str], info: Any) -> list[str]:
        # a threshold carried back to the cohort it was chosen on is "retained" by
        # construction: reported beside real transports it would read as evidence
        source = info.data.get("source")
        if source is not None and source in v:
            raise ValueError(f"targets list the source {source!r}: a threshold chosen on a cohort "
                             "is retained there by construction; list only other cohorts (the "
                             "source's own Se/Sp are in operating_points)")
        return v

    @property
    def rule_list(self) -> list[tuple[str, str, tuple[float, float] | None]]:
        """``(rule name, label, weights)`` of every distinct rule, in declared order."""
        out: dict[str, tuple[str, str, tuple[float, float] | None]] = {}
        for r in self.rules:
            if isinstance(r, str) and r not in CUT_RULES:
                out.setdefault(r, (r, r, None))
            else:
                c = as_rule(r)
                out.setdefault(c.label, (c.rule, c.label, c.weights))
        return list(out.values())

    @property
    def at_threshold(self) -> AtThreshold | None:
        return AtThreshold() if self.threshold_metrics is True else (self.threshold_metrics or None)


@dataclasses.dataclass(frozen=True, eq=False)
class TransportCell:
    """One entry: every model's source threshold by every rule, carried to every target.

    One draw of the source and of each target per replicate serves every model and rule
    (the draws do not depend on either), so the cell costs one resampling, not one per
    model x rule.
    """

    key: tuple[Any, ...]
    source_label: np.ndarray
    #: model -> source scores
    source_scores: Mapping[str, np.ndarray]
    #: target cohort -> (labels, model -> scores)
    targets: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]]
    #: rule label -> (rule, target value or None for the cut-point rules, (cost, prevalence))
    rules: Mapping[str, tuple[str, float | None, tuple[float, float] | None]]
    #: target cohort -> "reestimate" or "fixed"
    design: Mapping[str, str]


def run_transport(cell: TransportCell, resampling: Resampling) -> dict:
    """``{(model, rule label): {target: TransportResult}}`` from one set of draws.

    Module level so that a backend can ship it to a worker; it draws only from
    ``cell_rng(seed, *key)``.
    """
    return transport_grid(cell.source_label, dict(cell.source_scores),
                          {t: (y, dict(s)) for t, (y, s) in cell.targets.items()},
                          rules=dict(cell.rules), design=dict(cell.design),
                          n_resamples=resampling.n_resamples,
                          confidence_level=resampling.confidence_level,
                          rng=cell_rng(resampling.seed, *cell.key))


def _criterion(rule: str, x: float, weights: tuple[float, float] | None = None) -> str:
    if rule in CUT_RULES:
        w = "" if weights in (None, (1.0, 0.5)) else f",cost={weights[0]:g},prevalence={weights[1]:g}"
        return f"threshold[rule={rule}{w}]"
    return f"threshold[rule={rule},target={x:g}]"


class Transport(Block):
    """Source thresholds carried unchanged to target cohorts (paper 000 Tables 14-17)."""

    name = NAME
    title = "Threshold transport"
    summary = ("95 %-Se and 95 %-Sp (or Youden / closest-to-(0, 1)) source thresholds carried to "
               "targets, re-estimating or fixed-threshold intervals, retention, specificity per "
               "named control group (paper 000 Tables 14-17); on request every rate at tau")
    config = TransportEntry
    many = True
    no_entries = "no `transport:` entries are declared (a source cohort, its targets and rules)"
    tables = (
        TableSchema("thresholds", "one row per entry x rule x model: tau on the source",
                    ("source_sensitivity", "source_specificity", "rule", "target_value")),
        TableSchema("transport", "target Se and Sp at the source threshold, with intervals",
                    ("estimate", "ci_low", "ci_high", "retained", "rule", "source", "target_value")),
        TableSchema("named_groups", "specificity at tau against each named negative group",
                    ("estimate", "n_true_negative", "n_neg", "fraction", "rule", "source")),
        TableSchema("retention_counts", "per source x rule: how many (target, model) retain",
                    ("rule", "source", "target_value", "n_retained", "n_total", "estimate")),
        TableSchema("threshold_metrics", "every rate at the transported threshold on each target",
                    ("estimate", "ci_low", "ci_high", "rule", "source", "count", "nobs",
                     "qualification")),
    )
    figures = ("fig6_transport",)
    claim_kinds = ("operating constraint",)

    def check(self, config: list[TransportEntry], table: pd.DataFrame, cohorts) -> list[str]:
        from medaudit.blocks.checks import unknown

        return [e for i, tr in enumerate(config)
                for e in unknown("cohort", [tr.source, *tr.targets, *tr.fixed_targets], cohorts,
                                 f"transport[{i}]")]


    def run(self, ctx: AuditContext, config: list[TransportEntry]) -> BlockResult:
        thr_rows: list[dict[str, Any]] = []
        tr_rows: list[dict[str, Any]] = []
        ng_rows: list[dict[str, Any]] = []
        tm_rows: list[dict[str, Any]] = []
        notes: list[str] = []
        rank = {c: i for i, c in enumerate(ctx.cohorts)}
        plans = []
        for entry in config:
            targets = sorted(dict.fromkeys(entry.targets), key=lambda c: rank.get(c, 1 << 30))
            plans.append((entry, targets, _cell(ctx, entry, targets)))
        # every entry's cell in one map, so that the entries run side by side
        ctx.tick(f"{NAME}: thresholds from {', '.join(dict.fromkeys(e.source for e in config))}")
        grids = ctx.map(functools.partial(run_transport, resampling=ctx.resampling),
                        [c for *_, c in plans])
        for (entry, targets, _), grid in zip(plans, grids, strict=True):
            _entry(ctx, entry, targets, grid, thr_rows, tr_rows, ng_rows, tm_rows)
            fixed = [t for t in targets if t in entry.fixed_targets]
            rules = [r if isinstance(r, str) else r.label for r in entry.rules]
            notes.append(f"transport from {entry.source} to {targets} (rules {rules}, "
                         f"target {float(entry.target_value):g}): design {entry.design}"
                         + (f", fixed-threshold design for {fixed}" if fixed else "")
                         + "; retention on the point estimate (eq. 7)."
                         + (" Cut-point rules (youden, closest_topleft) take no target value: "
                            "retained when the target's Se and Sp are at least the source's."
                            if any(r[0] in CUT_RULES for r in entry.rule_list) else "")
                         + (" threshold_metrics: every rate at tau on each target, tau held "
                            "fixed, with exact/score intervals of the counts."
                            if entry.at_threshold is not None else ""))
        transport = pd.DataFrame(tr_rows)
        thresholds = pd.DataFrame(thr_rows)
        if not thresholds.empty:  # entries sharing a source and rule give the same tau once
            thresholds = thresholds.drop_duplicates(["model", "cohort", "criterion"],
                                                    ignore_index=True)
        return BlockResult(name=NAME, tables={"thresholds": thresholds,
                                              "transport": transport,
                                              "named_groups": pd.DataFrame(ng_rows),
                                              "retention_counts": _retention(ctx, transport,
                                                                             thresholds),
                                              **({"threshold_metrics": pd.DataFrame(tm_rows)}
                                                 if tm_rows else {})},
                           notes=tuple(notes))

    def claims(self, results: Mapping[str, BlockResult], study: Study,
               config: list[TransportEntry]) -> list[dict[str, Any]]:
        return _threshold_claims(results, study, config)


def _cell(ctx: AuditContext, entry: TransportEntry, targets: list[str]) -> TransportCell:
    """The entry's one cell: the source and each target are drawn once per replicate for
    every model and rule (key: the cohorts, whose draws these are)."""
    prompt, models = ctx.primary_prompt, ctx.models()
    keys = [(m, prompt) for m in models]
    src = ctx.wide(entry.source, keys=keys)
    wides = {t: ctx.wide(t, keys=keys) for t in targets}
    return TransportCell(
        key=(NAME, entry.source, *targets), source_label=src.label,
        source_scores={m: src.scores[f"{m}|{prompt}"] for m in models},
        targets={t: (wides[t].label, {m: wides[t].scores[f"{m}|{prompt}"] for m in models})
                 for t in targets},
        rules={rule: (name, None if name in CUT_RULES else float(entry.target_value), weights)
               for name, rule, weights in entry.rule_list},
        design={t: "fixed" if t in entry.fixed_targets else entry.design for t in targets})


def _entry(ctx: AuditContext, entry: TransportEntry, targets: list[str], grid: dict,
           thr_rows: list, tr_rows: list, ng_rows: list, tm_rows: list) -> None:
    prompt, models = ctx.primary_prompt, ctx.models()
    keys = [(m, prompt) for m in models]
    src = ctx.wide(entry.source, keys=keys)
    wides = {t: ctx.wide(t, keys=keys) for t in targets}
    at = entry.at_threshold
    rule_list = entry.rule_list
    for name, rule, weights in rule_list:
        cut = name in CUT_RULES
        x = math.nan if cut else float(entry.target_value)
        crit = _criterion(name, x, weights)
        seen: set[str] = set()
        by_model = {m: grid[(m, rule)] for m in models}
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
                        source_sensitivity=r.source_sensitivity,
                        source_specificity=r.source_specificity, rule=rule,
                        target_value=x, n=int(ys.size), n_pos=float(ys.sum()),
                        n_neg=float(ys.size - ys.sum()),
                        qualification=exposure_note(ctx, m, entry.source, label="{cohort}: ")))
                # a cut-point rule keeps its threshold when both rates are kept
                retained = (r.sensitivity_retained and r.specificity_retained if cut
                            else r.sensitivity_retained if name == "sensitivity"
                            else r.specificity_retained)
                qual = exposure_note(ctx, m, (entry.source, t), label="{cohort}: ")
                for what, b in (("sensitivity", r.target_sensitivity),
                                ("specificity", r.target_specificity)):
                    tr_rows.append(spec_row(
                        model=m, prompt=prompt, cohort=t, threshold=r.threshold,
                        criterion=what, design=b.design, n_resamples=b.n_resamples,
                        **interval(b), retained=bool(retained), rule=rule,
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
                        estimate=op.specificity, n_true_negative=n_tn,
                        n_pos=float(pos.size), n_neg=int(neg.size),
                        fraction=f"{n_tn}/{neg.size}", rule=rule, source=entry.source,
                        target_value=x, qualification=join(useless, qual)))
        if at is not None:
            tm_rows += _rates_at_tau(ctx, entry, at, rule, x, targets, wides, by_model)


def _rates_at_tau(ctx: AuditContext, entry: TransportEntry, at: AtThreshold, rule: str, x: float,
                  targets: list[str], wides: dict, by_model: dict) -> list[dict[str, Any]]:
    """Every rate at each model's transported tau on each target (tau fixed; target resampled)."""
    prompt, models = ctx.primary_prompt, ctx.models()
    jobs, cells = [], []
    for t in targets:
        w = wides[t]
        for m in models:
            tau = by_model[m][t].threshold
            specs = tuple(rate_metrics(tau, at.prevalence))
            jobs.append((t, m, tau, specs))
            cells.append(BootstrapCell(key=(NAME, "threshold_metrics", entry.source, rule, x, t, m),
                                       label=w.label, scores={m: w.scores[f"{m}|{prompt}"]},
                                       metrics=specs, design=ctx.cohort_design(t)))
    rows: list[dict[str, Any]] = []
    for (t, m, tau, specs), res in zip(jobs, run_cells(ctx, cells), strict=True):
        boot = {(n, o.get("prevalence")): res.marginal[(m, mid)]
                for (n, o), mid in zip(specs, res.metric_ids, strict=True)}
        qual = exposure_note(ctx, m, (entry.source, t), label="{cohort}: ")

        def row(*, prevalence: Any, criterion: str, undefined: str, degenerate: str, m: str = m,
                t: str = t, tau: float = tau, boot: dict = boot, qual: str = qual,
                **v: Any) -> dict[str, Any]:
            r = boot[(criterion, None if prevalence == "observed" else prevalence)]
            # the design used: tau fixed at the source estimate (B-THR-FIX), the target resampled
            # in its cohort's design (one model per cell, so the engine's "+paired" says nothing)
            design = f"threshold_fixed[{r.design.removesuffix('+paired')}]"
            return spec_row(model=m, prompt=prompt, cohort=t, prevalence=prevalence, threshold=tau,
                            criterion=criterion, design=design, n_resamples=r.n_resamples,
                            rule=rule, source=entry.source, target_value=x, **v,
                            qualification=join(qual, undefined, degenerate))

        rows += rate_rows(wides[t].label, wides[t].scores[f"{m}|{prompt}"], tau, at.prevalence,
                          boot, methods=list(at.proportion_methods),
                          level=ctx.resampling.confidence_level, row=row)
    return rows


def _retention(ctx: AuditContext, transport: pd.DataFrame, thresholds: pd.DataFrame) -> pd.DataFrame:
    """Per source x rule (x target value): how many (target, model) retain the rule."""
    ret_rows: list[dict[str, Any]] = []
    if transport.empty:
        return pd.DataFrame(ret_rows)
    one = transport[transport["criterion"] == "sensitivity"]
    for (source, rule, x), g in one.groupby(["source", "rule", "target_value"], sort=False,
                                            dropna=False):
        # a (target, model) listed by two entries counts once (retention is a point estimate)
        g = g.drop_duplicates(["cohort", "model"])
        n_ret, n_tot = int(g["retained"].sum()), int(len(g))
        ret_rows.append(spec_row(
            model="all", prompt=ctx.primary_prompt, cohort=source, threshold=None,
            criterion=_rule_criterion(thresholds, source, rule, x), design="point_estimate",
            n_resamples=None,
            rule=rule, source=source, target_value=x,
            targets="|".join(dict.fromkeys(g["cohort"])), n_retained=n_ret, n_total=n_tot,
            estimate=n_ret / n_tot, fraction=f"{n_ret}/{n_tot}"))
    return pd.DataFrame(ret_rows)


def _same(values: pd.Series, x: Any) -> pd.Series:
    """``values == x`` with NaN equal to NaN (the cut-point rules have no target value)."""
    return (values == x) | (values.isna() & pd.isna(x))


def _rule_criterion(thresholds: pd.DataFrame, source: str, rule: str, x: float) -> str:
    """The criterion of the source threshold of ``rule`` (as written in ``thresholds``)."""
    t = thresholds[(thresholds["cohort"] == source) & (thresholds["rule"] == rule)
                   & _same(thresholds["target_value"], x)]
    return str(t["criterion"].iloc[0]) if len(t) else _criterion(rule, x)


def _is_cut(rule: Any) -> bool:
    return str(rule).split("[", 1)[0] in CUT_RULES


# ----------------------------------------------------------------------------- claims
def _threshold_claims(results: Mapping[str, BlockResult], study: Study,
                      config: list[TransportEntry]) -> list[dict[str, Any]]:
    """"tau chosen on S for Se (Sp) >= x keeps Se (Sp) >= x" per source x rule x model
    (a cut-point rule: "keeps the source's Se and Sp", judged on the sensitivity row)."""
    rows: list[dict[str, Any]] = []
    tr = ck.table(results, NAME, "transport")
    named = ck.table(results, NAME, "named_groups")
    if tr.empty:
        return rows
    n = 0
    by = ["source", "rule", "model", "threshold"] + (["target_value"] if "target_value" in tr.columns
                                                    else [])
    keys = tr[by].drop_duplicates()
    for _, k in keys.iterrows():
        sub = tr[(tr["source"] == k["source"]) & (tr["rule"] == k["rule"]) & (tr["model"] == k["model"])]
        if "target_value" in tr.columns:
            sub = sub[_same(sub["target_value"], k["target_value"])]
        cut = _is_cut(k["rule"])
        crit = "sensitivity" if k["rule"] == "sensitivity" or cut else "specificity"
        tv = float(sub["target_value"].iloc[0]) if "target_value" in sub.columns else next(
            (t.target_value for t in config if t.source == k["source"]), 0.95)
        n += 1
        text = (f"{k['model']}: τ chosen on {k['source']} by {k['rule']} keeps the source's "
                "sensitivity and specificity" if cut else
                f"{k['model']}: τ chosen on {k['source']} for {crit} ≥ {tv:g} keeps {crit} ≥ {tv:g}")
        claim = {"claim_id": f"T{n:02d}", "claim": text,
                 "kind": "operating constraint", "model": k["model"], "prompt": study.primary_prompt,
                 "cohort": k["source"], "negatives": "all", "prevalence": "observed",
                 "threshold": k["threshold"], "criterion": crit}
        # chosen on the source to meet the rule there: true by construction, not evidence
        rows.append({**claim, "change": "at E", "changed_to": "", "estimate": math.nan,
                     "ci_low": math.nan, "ci_high": math.nan, "verdict": "by construction",
                     "qualification": "the threshold is chosen on the source to meet the rule",
                     "source_table": "transport.thresholds"})
        for _, t in sub[sub["criterion"] == crit].iterrows():
            other = sub[(sub["cohort"] == t["cohort"]) & (sub["criterion"] != crit)]
            note = ck.qualify_sorted(t.get("qualification", ""))
            other_crit, other_est = None, math.nan
            if len(other):
                o = other.iloc[0]
                other_crit, other_est = o["criterion"], float(o["estimate"])
                if o["estimate"] < 0.05:  # the constraint is met by flagging (almost) everyone
                    note = ck.qualify_sorted(
                        note, f"flagged: useless operating point ({o['criterion']} < 0.05)")
            verdict = "holds" if bool(t["retained"]) else "does not hold"
            rows.append({**claim, "change": ck.cohort_axis(study, t["cohort"]),
                         "changed_to": t["cohort"], "cohort": t["cohort"],
                         "estimate": t["estimate"],
                         "ci_low": t["ci_low"], "ci_high": t["ci_high"], "verdict": verdict,
                         "qualification": note, "source_table": "transport.transport",
                         "other_criterion": other_crit, "other_estimate": other_est})
        if not named.empty:
            ng = named[(named["source"] == k["source"]) & (named["rule"] == k["rule"])
                       & (named["model"] == k["model"])]
            for _, g in ng.iterrows():
                rows.append({**claim, "change": "negatives",
                             "changed_to": f"{g['cohort']}: {g['negatives']}",
                             "cohort": g["cohort"], "negatives": g["negatives"],
                             "criterion": "specificity",
                             "estimate": g["estimate"], "ci_low": math.nan, "ci_high": math.nan,
                             "verdict": "specificity only",
                             "qualification": ck.qualify_sorted(g.get("qualification", "")),
                             "source_table": "transport.named_groups"})
    return rows
