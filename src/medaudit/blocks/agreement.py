"""Reliability estimators across institutions (paper 002, M2.4-M2.8, M2.10).

Reads ``ctx.judgments`` (the evaluable JudgmentTable) at ``agreement.protocol`` and runs
:func:`medaudit.agreement.design.run_design`: every estimator on every
leave-one-institution-out fold with nested label budgets, the strict institution-excluded
selector, the Set-B per-cell oracle, the Beta-Binomial interval audit and the
institution-cluster bootstrap of the family Brier gap.  E columns: ``model``, ``prompt`` =
protocol, ``cohort`` = target (receiving) institution, ``criterion`` (``brier_score``,
``ece[n_bins=10]``, ``coverage[level=0.95]``, ``brier_score_difference``), ``design``
(``loio[budget=25,repeat=3]``, ``loio[budget=25]``, ``strict_selection[...]``, ...).
Tables:

``fixed_policy``
    One row per fold x estimator x criterion (``estimate``; ``n`` test judgments,
    ``n_shot``; ``fallback`` when a logistic fit fell back to the constant; ``software``).
``fixed_policy_summary``
    Set A: per setting (model x target x budget) the mean over repeats (``estimate``,
    ``std``, ``n_repeats``) and ``worse_than_naive``.
``selection``
    The strict selector's decisions (paper: 240): mean development Brier of each candidate
    (``dev_brier[<estimator>]``), ``best``, ``selected``, ``gate_returned_naive``, and the
    test ``estimate`` (Brier), ``ece``, ``oracle_brier`` on the receiving institution.
``selection_summary``
    Mean test Brier over the decisions of the selector, of each always-the-same candidate
    (identical folds) and of the Set-B per-cell oracle; ``relative_excess`` of the selector
    over the oracle; selection counts and gate returns.
``coverage`` / ``coverage_cells``
    The M2.8 audit: coverage and mean width of the 95% posterior-predictive interval,
    primary (``N_train >= 1``, ``N_test >= 20``) and sensitivity (every evaluable cell),
    overall, by institution and by direction; and the per-cell evaluations.
``family_gap``
    Per institution the mean Brier gap ``hdcal - beta_binomial`` over its models x non-zero
    budgets, and their mean with the institution-cluster bootstrap percentile interval.
``comparisons``
    Within-family counts over the settings (model x target x non-zero budget): HD-Cal
    below additive, Beta-Binomial below HD-Cal, and every estimator worse than the
    constant, per criterion (M2.12-M2.13).  :func:`uncertain_sensitivity` repeats them
    under each uncertain-label policy (M2.12) given the three evaluable tables.
``settings``
    Solver, settings and library versions of every estimator (they move under separation).
``robustness`` / ``robustness_summary``
    The M2.12 analyses of ``agreement.robustness`` (:mod:`medaudit.agreement.robustness`:
    ``uncertain_labels``, ``one_study_per_patient`` with its size-matched control,
    ``leave_one_finding_out``, ``subsample``, ``study_disjoint``, ``hdcal_penalty_oracle``,
    ``binary_matched``).  Every row names what changed: ``analysis``, ``parameter``
    (``name=value`` pairs, e.g. ``finding=edema``, ``C=0.01``, ``rule=random``),
    ``changed`` (in words), ``change_seed``, ``n_judgments``, ``n_studies``; analysis
    ``primary`` is the unchanged design.  ``robustness``: the :func:`comparisons` rows
    (``comparison``, ``n_holds`` of ``n_settings``) and the family gap (criteria
    ``brier_score_difference``, ``ece[n_bins=10]_difference``; per institution and
    ``cohort = "all"``, point estimates).  ``robustness_summary``: the changed design's
    ``fixed_policy_summary`` (the oracle adds ``hdcal[C=oracle]`` with ``chosen_C``).

``logistic_C`` passes the inverse L2 strength to logistic-family estimators (M2.4: 1).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from medaudit.agreement._base import ESTIMATORS, LOGISTIC, SET_B, family_of
from medaudit.agreement.design import (
    DesignResult,
    coverage_records,
    institution_cluster_bootstrap,
    relative_excess,
    run_design,
)
from medaudit.agreement.robustness import RobustnessConfig, judgment_data, run_variants, variants
from medaudit.blocks import claimkit as ck
from medaudit.blocks._agreement_rows import (
    COMPARISONS,
    comparisons,
    fixed_rows,
    gap_points,
    robustness_tables,
    software,
    summary_rows,
)
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.context import AuditContext, Study
from medaudit.blocks.rows import spec_row
from medaudit.exceptions import SchemaError
from medaudit.io.limits import NResamples, Seed
from medaudit.io.specfile import fraction

__all__ = ["Agreement", "AgreementConfig", "comparisons", "uncertain_sensitivity", "COMPARISONS"]

NAME = "agreement"
#: an estimator key of the one table in :mod:`medaudit.agreement._base`
Estimator = Literal[ESTIMATORS]  # type: ignore[valid-type]


class AgreementConfig(BlockConfig):
    """Settings of the agreement (estimator) block."""

    #: protocol whose verdicts the estimators are compared on (paper: narrative)
    protocol: str = "narrative"
    #: models to run (None = every model of the judgment table)
    models: list[str] | None = None
    #: Set A, fitted on every leave-one-institution-out fold
    estimators: list[Estimator] = Field(default_factory=lambda: list(ESTIMATORS), min_length=1)
    #: label budgets in finding-level judgments (nested within a repeat)
    budgets: list[int] = Field(default_factory=lambda: [0, 25, 50, 100, 200], min_length=1)
    #: repeat r draws its shots (and seeds its GLMM) with first_seed + r (paper: 42..51)
    repeats: int = Field(10, ge=1)
    first_seed: Seed = 42
    #: fit the NumPyro GLMM (optional extra); false drops it from Set A and Set B
    glmm: bool = True
    glmm_steps: int = Field(3000, ge=1)
    glmm_step_size: float = Field(0.02, gt=0.0)
    #: run the strict institution-excluded selector on every non-zero budget
    selection: bool = True
    #: Set B in its fixed tie-break order (must contain naive, the gate)
    candidates: list[Estimator] = Field(default_factory=lambda: list(SET_B), min_length=1)
    #: equal-width ECE bins
    n_bins: int = Field(10, ge=1)
    #: Beta-Binomial posterior-predictive interval level and the N_test eligibility floor
    interval_level: float = 0.95
    min_test: int = Field(20, ge=1)
    #: institution-cluster bootstrap of the family Brier gap (hdcal - beta_binomial)
    n_resamples: NResamples = 10_000
    gap_estimators: list[Estimator] = Field(default_factory=lambda: ["hdcal", "beta_binomial"],
                                            min_length=2, max_length=2)
    #: M2.12: refit the fixed policies under each uncertain-label policy (exclude, negative,
    #: positive) and count where the within-family comparisons hold (table
    #: ``uncertain_sensitivity``); the primary analysis keeps ``judgments.uncertain``
    uncertain_sensitivity: bool = False
    #: inverse L2 strength C of logistic-family estimators (M2.4 fixes C = 1 for all), e.g.
    #: ``{hdcal: 0.1}``; the ``settings`` and ``fixed_policy`` tables record the C used
    logistic_C: dict[Estimator, float] = Field(default_factory=dict)
    #: M2.12 robustness analyses (tables ``robustness``, ``robustness_summary``): a list of
    #: analysis names, or the full section (:class:`~medaudit.agreement.robustness.RobustnessConfig`)
    robustness: RobustnessConfig = Field(default_factory=RobustnessConfig)

    @field_validator("robustness", mode="before")
    @classmethod
    def _robustness_list(cls, v: Any) -> Any:
        # shorthand: `robustness: [subsample, study_disjoint]` = those analyses at their defaults
        return {"analyses": v} if isinstance(v, (list, tuple)) else v

    @field_validator("logistic_C")
    @classmethod
    def _penalties(cls, v: dict[str, float]) -> dict[str, float]:
        bad = sorted(k for k in v if k not in LOGISTIC)
        if bad:
            raise ValueError(f"logistic_C names {bad}, which have no L2 penalty; the logistic "
                             f"family is {list(LOGISTIC)}")
        if any(not (math.isfinite(c) and c > 0) for c in v.values()):
            raise ValueError(f"logistic_C values must be positive numbers; got {v}")
        return v

    @field_validator("budgets")
    @classmethod
    def _budgets(cls, v: list[int]) -> list[int]:
        if any(b < 0 for b in v) or len(set(v)) != len(v):
            raise ValueError(f"budgets must be distinct non-negative integers; got {v}")
        return sorted(v)

    @field_validator("interval_level")
    @classmethod
    def _level(cls, v: float) -> float:
        return fraction(v, "interval_level")

    @model_validator(mode="after")
    def _consistent(self) -> AgreementConfig:
        for name in ("estimators", "candidates", "gap_estimators"):
            vals = getattr(self, name)
            if len(set(vals)) != len(vals):
                # a gap of an estimator with itself is 0 by construction (probe finding)
                raise ValueError(f"agreement.{name} repeat a name: {vals}")
        if self.selection and not any(b > 0 for b in self.budgets):
            # the selector chooses on labelled development cases: at budget 0 it has none,
            # and there would be no decision to score (probe finding: a nan oracle Brier)
            raise ValueError(f"agreement.selection needs a budget above 0 (budgets: "
                             f"{self.budgets}); add one, or set `selection: false`")
        if self.selection:
            if "naive" not in self.candidates:
                raise ValueError("agreement.candidates must include 'naive' (the gate baseline)")
            has = [c for c in self.candidates if c.startswith("has")]
            if has:
                raise ValueError(f"agreement.candidates cannot include {has}: the HAS estimators "
                                 "need two sources and a development fold has one (Set B)")
            missing = [c for c in self.candidates if c not in self.estimators
                       and not (c == "glmm" and not self.glmm)]
            if missing:
                raise ValueError(f"agreement.candidates {missing} must also be in "
                                 "agreement.estimators (the choice is scored as that fixed policy)")
        return self

    def active_estimators(self) -> list[str]:
        """Set A as run (the GLMM dropped when ``glmm`` is false)."""
        return [e for e in self.estimators if self.glmm or e != "glmm"]

    def active_candidates(self) -> list[str]:
        """Set B as run (the GLMM dropped when ``glmm`` is false)."""
        return [c for c in self.candidates if self.glmm or c != "glmm"]

    def estimator_options(self) -> dict[str, dict[str, float]]:
        """Options passed to the design: ``{estimator: {"C": value}}`` from ``logistic_C``."""
        return {k: {"C": float(c)} for k, c in sorted(self.logistic_C.items())}


def _selection(ctx: AuditContext, res: DesignResult, protocol: str
               ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    d = res.data
    cands = res.settings["candidates"]
    rows = []
    for x in res.decisions:
        rows.append(spec_row(
            model=d.models[x.model], prompt=protocol, cohort=d.institutions[x.target],
            criterion="brier_score", design=f"strict_selection[budget={x.budget},repeat={x.rep}]",
            seed=res.settings["first_seed"] + x.rep, budget=x.budget, repeat=x.rep, best=x.best,
            selected=x.selected, gate_returned_naive=x.gate_returned_naive, estimate=x.test_brier,
            ece=x.test_ece, oracle_brier=x.oracle_brier,
            **{f"dev_brier[{c}]": x.dev_brier[c] for c in cands}))
    sel = pd.DataFrame(rows)
    n = len(res.decisions)
    policies = {"selector": [x.test_brier for x in res.decisions],
                "oracle[set_b,per_cell]": [x.oracle_brier for x in res.decisions]}
    by_key = {(f.key.model, f.key.target, f.key.budget, f.key.rep): f for f in res.loio}
    for c in cands:
        policies[f"always[{c}]"] = [by_key[(x.model, x.target, x.budget, x.rep)].brier[c]
                                    for x in res.decisions]
    oracle = float(np.mean(policies["oracle[set_b,per_cell]"]))
    summ = []
    for p, vals in policies.items():
        m = float(np.mean(vals))
        # an oracle Brier of 0 (a model every verdict of which is right, or wrong and so
        # inverted by the fixed policies): the relative excess divides by it, undefined
        excess = (relative_excess(m, oracle) if oracle > 0 else math.nan) if p == "selector" \
            else None
        # (a qualification column only where one is said: the table keeps its columns)
        said = ({"qualification": "relative excess undefined: the oracle's Brier is 0"}
                if p == "selector" and not oracle > 0 else {})
        summ.append(spec_row(model="all", prompt=protocol, cohort="all", criterion="brier_score",
                             design="strict_selection", seed=res.settings["first_seed"], policy=p,
                             estimate=m, n=n, **said,
                             relative_excess=excess,
                             n_gate_returned_naive=(sum(x.gate_returned_naive
                                                        for x in res.decisions)
                                                    if p == "selector" else None)))
    counts = Counter(x.selected for x in res.decisions)
    cnt = pd.DataFrame([spec_row(model="all", prompt=protocol, cohort="all", criterion="selected",
                                 design="strict_selection", seed=res.settings["first_seed"],
                                 estimator=c, estimate=int(counts.get(c, 0)), n=n) for c in cands])
    return sel, pd.DataFrame(summ), cnt


def _coverage(res: DesignResult, protocol: str, level: float, min_test: int
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    d = res.data
    recs = coverage_records(res, confidence_level=level, min_test=min_test)
    if not recs:
        return pd.DataFrame(), pd.DataFrame()
    cells = pd.DataFrame(recs)
    cells["model"] = [d.models[i] for i in cells["model"]]
    cells["cohort"] = [d.institutions[i] for i in cells["target"]]
    cells["finding"] = [d.findings[i] for i in cells["finding"]]
    cells["direction"] = np.where(cells["direction"] == 1, "present", "absent")
    cells = cells.drop(columns="target")
    crit = f"coverage[level={level:g}]"
    rows = []
    for analysis, sub in (("primary", cells[cells["eligible"]]), ("all_evaluable", cells)):
        strata = [("all", "all", sub)]
        strata += [("institution", c, g) for c, g in sub.groupby("cohort", sort=True)]
        strata += [("direction", r, g) for r, g in sub.groupby("direction", sort=True)]
        for kind, value, g in strata:
            rows.append(spec_row(
                model="all", prompt=protocol, cohort=value if kind == "institution" else "all",
                criterion=crit, design="loio[budget>0]", seed=res.settings["first_seed"],
                analysis=analysis, stratum=kind,
                direction=value if kind == "direction" else "all",
                estimate=float(g["covered"].mean()) if len(g) else np.nan, n=len(g),
                mean_width=float(g["width"].mean()) if len(g) else np.nan))
    lead = ["model", "cohort", "budget", "rep", "finding", "direction"]
    return pd.DataFrame(rows), cells[lead + [c for c in cells.columns if c not in lead]]


def _family_gap(ctx: AuditContext, a: AgreementConfig, summary: pd.DataFrame, protocol: str
                ) -> pd.DataFrame:
    hi, lo = a.gap_estimators
    gap, n_settings = gap_points(summary, hi, lo, "brier_score")
    if gap.empty:
        return pd.DataFrame()
    crit = "brier_score_difference"
    name = f"{hi} - {lo}"
    rows = [spec_row(model="all", prompt=protocol, cohort=c, criterion=crit, design="loio[budget>0]",
                     estimator=name, estimate=float(v), ci_low=None, ci_high=None,
                     n=int(n_settings[c])) for c, v in gap.items()]
    if gap.size >= 2:
        b = institution_cluster_bootstrap(gap.to_numpy(), n_resamples=a.n_resamples,
                                          confidence_level=ctx.resampling.confidence_level,
                                          rng=ctx.rng(NAME, "family_gap"))
        rows.append(spec_row(model="all", prompt=protocol, cohort="all", criterion=crit,
                             design="cluster(institution)", n_resamples=a.n_resamples,
                             # drawn from the run seed in a table of the repeats' seeds
                             seed=ctx.resampling.seed, estimator=name, estimate=b["estimate"],
                             ci_low=b["ci_low"], ci_high=b["ci_high"], n=int(gap.size)))
    return pd.DataFrame(rows)


def uncertain_sensitivity(variants: dict[str, pd.DataFrame], spec: Any, *,
                          estimators: tuple[str, ...] = ("naive", "additive", "hdcal",
                                                         "beta_binomial"),
                          progress: Any = None, map: Any = None) -> pd.DataFrame:
    """M2.12 uncertain-label sensitivity: the within-family counts under each policy.

    Parameters
    ----------
    variants : dict policy -> DataFrame
        Evaluable judgment tables of the *same* raw table validated with
        ``uncertain="exclude"``, ``"negative"`` and/or ``"positive"``.
    spec : AgreementConfig
        Protocol, models, budgets, repeats, seeds and ECE bins (selection and the GLMM
        are not rerun: the comparison is between fixed policies).
    estimators : tuple of str
        The fixed policies refitted (those of :data:`COMPARISONS` plus the constant).
    progress, map : callable, optional
        Passed to :func:`~medaudit.agreement.design.run_design` (``map`` runs its fold cells).

    Returns
    -------
    DataFrame
        :func:`comparisons` of each policy, with an ``uncertain`` column.
    """
    out = []
    ests = [e for e in estimators if e in spec.active_estimators()] or list(estimators)
    for policy in sorted(variants):
        t = variants[policy]
        t = t[t["protocol"] == spec.protocol]
        if spec.models is not None:
            t = t[t["model"].isin(spec.models)]
        if t.empty:
            raise SchemaError(f"uncertain sensitivity ({policy!r}): no {spec.protocol!r} judgments "
                              "of the selected models.")
        res = run_design(judgment_data(t), estimators=ests, budgets=spec.budgets,
                         repeats=spec.repeats, first_seed=spec.first_seed, selection=False,
                         n_bins=spec.n_bins, options=spec.estimator_options(),
                         progress=progress, map=map)
        fixed = pd.DataFrame(fixed_rows(res, spec.protocol, f"ece[n_bins={spec.n_bins}]"))
        c = comparisons(summary_rows(fixed, spec.first_seed))
        c.insert(0, "uncertain", policy)
        c["n_judgments"] = len(t)
        out.append(c)
    return pd.concat(out, ignore_index=True)


def _settings(res: DesignResult) -> pd.DataFrame:
    rows = []
    first = {}
    for f in res.loio:
        for est, info in f.info.items():
            if est not in first and not info.get("fallback", False):
                first[est] = info
    for est in res.settings["estimators"]:
        info = first.get(est) or res.loio[0].info[est]
        keep = {k: v for k, v in info.items() if k not in ("tau2", "delta", "rate", "mu", "v",
                                                            "kappa", "alpha", "beta", "n_iter",
                                                            "converged", "tau2_delta",
                                                            "n_features", "fallback", "seed")}
        rows.append({"estimator": est, "estimator_family": family_of(est),
                     "software": software({**info, "fallback": False}),
                     "settings": json.dumps(keep, sort_keys=True, default=str)})
    return pd.DataFrame(rows)


def _run(ctx: AuditContext, a: AgreementConfig) -> BlockResult:
    """Set A, the strict selector, the oracle, the interval audit and the family gap."""
    if ctx.judgments is None:
        raise SchemaError("block 'agreement' needs a judgment table (`judgments:` in the spec).")
    t = ctx.judgments[ctx.judgments["protocol"] == a.protocol]
    if t.empty:
        raise SchemaError(f"agreement.protocol is {a.protocol!r}, but the judgment table has "
                          f"protocols {sorted(ctx.judgments['protocol'].unique())}; set "
                          "`agreement: {protocol: ...}` in the spec.")
    present = sorted(t["model"].unique())
    if a.models is not None:
        missing = [m for m in a.models if m not in present]
        if missing:
            raise SchemaError(f"agreement.models names {missing} with no {a.protocol!r} "
                              f"judgments; models present: {present}.")
        t = t[t["model"].isin(a.models)]
    ctx.tick("agreement: coding judgments")
    res = run_design(judgment_data(t), estimators=a.active_estimators(), budgets=a.budgets,
                     repeats=a.repeats, first_seed=a.first_seed, selection=a.selection,
                     candidates=a.active_candidates(), glmm_steps=a.glmm_steps,
                     glmm_step_size=a.glmm_step_size, n_bins=a.n_bins,
                     options=a.estimator_options(), progress=ctx.tick,
                     map=ctx.map)  # the fold cells run on the configured backend
    ece_id = f"ece[n_bins={a.n_bins}]"
    fixed = pd.DataFrame(fixed_rows(res, a.protocol, ece_id))
    summary = summary_rows(fixed, a.first_seed)
    tables = {"fixed_policy": fixed, "fixed_policy_summary": summary}
    notes = [f"Agreement estimators on {a.protocol!r} verdicts: leave-one-institution-out, "
             f"budgets {a.budgets}, {a.repeats} repeats (seeds {a.first_seed}.."
             f"{a.first_seed + a.repeats - 1}); Set A = {res.settings['estimators']}."]
    if not a.glmm and "glmm" in a.estimators:
        notes.append("The GLMM was switched off (`agreement.glmm: false`); it is in neither set.")
    n_fb = int(fixed.loc[fixed["criterion"] == "brier_score", "fallback"].sum())
    if n_fb:
        notes.append(f"{n_fb} estimator fits fell back to the pooled-rate constant "
                     "(single-class fitting pool or shot).")
    return _more_tables(ctx, a, res, summary, tables, notes)


def _more_tables(ctx: AuditContext, a: AgreementConfig, res: DesignResult, summary: pd.DataFrame,
                 tables: dict[str, pd.DataFrame], notes: list[str]) -> BlockResult:
    """Selection, interval coverage, the family gap, the M2.12 sensitivity and comparisons."""
    if a.selection:
        ctx.tick("agreement: selection tables")
        sel, summ, cnt = _selection(ctx, res, a.protocol)
        tables.update(selection=sel, selection_summary=summ, selection_counts=cnt)
        notes.append(f"Strict institution-excluded selection: {len(res.decisions)} decisions over "
                     f"Set B = {res.settings['candidates']} (fixed tie-break order); the gate keeps "
                     "the pooled-rate constant unless the best mean development Brier is strictly "
                     "lower.  The 'oracle' is the Set-B per-cell lower bound, not a policy.")
    if "beta_binomial" in res.settings["estimators"]:
        cov, cells = _coverage(res, a.protocol, a.interval_level, a.min_test)
        tables.update(coverage=cov, coverage_cells=cells)
    gap = _family_gap(ctx, a, summary, a.protocol)
    if not gap.empty:
        tables["family_gap"] = gap
        if len(gap) <= 4:
            notes.append("Family Brier gap: with three institutions the cluster-bootstrap "
                         "percentile interval equals the smallest and largest institution gaps.")
    if a.uncertain_sensitivity:
        variants = getattr(ctx, "judgment_variants", None)
        if not variants:
            raise SchemaError(
                "agreement.uncertain_sensitivity needs the judgment table under every uncertain "
                "policy (AuditContext.judgment_variants, built by "
                "medaudit.agreement.judgments.judgment_variants); this context has none.")
        ctx.tick("agreement: uncertain-label sensitivity")
        tables["uncertain_sensitivity"] = uncertain_sensitivity(variants, a, progress=ctx.tick,
                                                                map=ctx.map)
        notes.append("Uncertain-label sensitivity (M2.12): naive, additive, HD-Cal and "
                     "Beta-Binomial refitted with uncertain references excluded, mapped to "
                     "negative and mapped to positive; counts of the settings where each "
                     "within-family comparison holds.")
    if a.robustness.analyses:
        rob, rob_summary = _robustness(ctx, a, summary)
        tables.update(robustness=rob, robustness_summary=rob_summary)
        notes.append(f"Robustness (M2.12): {', '.join(a.robustness.analyses)}; each changed design "
                     "refits the fixed policies (no selection) with the primary shots and seeds; "
                     "rows name the analysis, its parameter and what changed.  Analysis "
                     "'primary' is the unchanged design, read from the primary fits.")
    comp = comparisons(summary)
    if not comp.empty:
        tables["comparisons"] = comp
    tables["settings"] = _settings(res)
    return BlockResult(name=NAME, tables=tables, notes=tuple(notes))


def _robustness(ctx: AuditContext, a: AgreementConfig, summary: pd.DataFrame
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The M2.12 analyses: changed designs refitted, read against the primary design."""
    import dataclasses

    from medaudit.agreement.robustness import Variant

    r = a.robustness
    ctx.tick("agreement: robustness analyses")
    items = variants(ctx.judgments, protocol=a.protocol, config=r, models=a.models, glmm=a.glmm,
                     uncertain_tables=getattr(ctx, "judgment_variants", None)
                     if "uncertain_labels" in r.analyses else None)
    results = run_variants(items, budgets=a.budgets, repeats=a.repeats, first_seed=a.first_seed,
                           n_bins=a.n_bins, options=a.estimator_options(), progress=ctx.tick,
                           map=ctx.map)
    t = ctx.judgments[ctx.judgments["protocol"] == a.protocol]
    if a.models is not None:
        t = t[t["model"].isin(a.models)]
    ests = set(r.estimators) | (set(r.matched_estimators) if "binary_matched" in r.analyses else set())
    primary = Variant(analysis="primary", parameter="", changed="none (the primary design)",
                      table=t, protocol=a.protocol, estimators=tuple(sorted(ests)))
    s = summary[summary["estimator"].isin(ests)].reset_index(drop=True)
    if "hdcal_penalty_oracle" in r.analyses and "hdcal" in a.logistic_C:
        primary = dataclasses.replace(primary, changed=f"none (HD-Cal at C = {a.logistic_C['hdcal']:g})")
    return robustness_tables(results, (primary, s), ece_id=f"ece[n_bins={a.n_bins}]",
                             first_seed=a.first_seed, gap=tuple(a.gap_estimators))


class Agreement(Block):
    """Ten reliability estimators, LOIO label budgets, gated selection, coverage (paper 002)."""

    name = NAME
    title = "Reference agreement across institutions"
    summary = ("paper 002: ten reliability estimators, LOIO label budgets, gated selection, "
               "interval coverage")
    config = AgreementConfig
    requires = ("judgments",)
    tables = (
        TableSchema("fixed_policy", "one row per fold x estimator x criterion", ("estimator", "estimate")),
        TableSchema("fixed_policy_summary", "Set A: mean over repeats per setting",
                    ("estimator", "estimate")),
        TableSchema("selection", "the strict selector's decisions", ("selected", "estimate")),
        TableSchema("selection_summary", "the selector against fixed candidates and the oracle",
                    ("estimate",)),
        TableSchema("selection_counts", "how often each candidate was selected", ()),
        TableSchema("coverage", "coverage of the Beta-Binomial predictive intervals", ("estimate",)),
        TableSchema("coverage_cells", "the per-cell interval evaluations", (), e_columns=False),
        TableSchema("family_gap", "the family Brier gap with its institution-cluster interval",
                    ("estimator", "estimate"), run_seed=False),
        TableSchema("uncertain_sensitivity", "M2.12: comparisons under each uncertain-label policy",
                    (), e_columns=False, run_seed=False),
        TableSchema("comparisons", "within-family counts over the settings", ("estimate",),
                    run_seed=False),
        TableSchema("robustness", "M2.12: within-family counts and the family gap under each "
                    "changed design", ("analysis", "parameter", "changed", "comparison",
                                       "estimate"), run_seed=False),
        TableSchema("robustness_summary", "M2.12: Set A per setting under each changed design",
                    ("analysis", "parameter", "changed", "estimator", "estimate"), run_seed=False),
        TableSchema("settings", "solver, settings and library versions of every estimator", (),
                    e_columns=False),
    )
    figures = ("fig12_estimator_budget",)
    claim_kinds = ("coverage", "estimator")

    def wants(self, config: AgreementConfig) -> frozenset[str]:
        # M2.12: the judgment table under every uncertain-label policy
        want = config.uncertain_sensitivity or "uncertain_labels" in config.robustness.analyses
        return frozenset({"judgment_variants"}) if want else frozenset()

    def provenance(self, ctx: AuditContext, config: AgreementConfig) -> dict[str, Any]:
        out = {"n_resamples": config.n_resamples,
               "resampled": "the family Brier gap (institution-cluster bootstrap)",
               "seeds": f"repeats draw shots with seeds {config.first_seed}.."
                        f"{config.first_seed + config.repeats - 1}"}
        if config.robustness.analyses:  # what the changed designs depend on (M2.12)
            out["robustness"] = config.robustness.model_dump(mode="json")
        if config.logistic_C:
            out["logistic_C"] = dict(sorted(config.logistic_C.items()))
        return out

    def run(self, ctx: AuditContext, config: AgreementConfig) -> BlockResult:
        return _run(ctx, config)

    def claims(self, results: Mapping[str, BlockResult], study: Study,
               config: AgreementConfig) -> list[dict[str, Any]]:
        return _agreement_claims(results)


# ----------------------------------------------------------------------------- claims
def _agreement_claims(results: Mapping[str, BlockResult]) -> list[dict[str, Any]]:
    """Predictive-interval coverage per held-out institution; the family Brier gap."""
    rows: list[dict[str, Any]] = []
    cov = ck.table(results, NAME, "coverage")
    n = 0
    if not cov.empty:
        prim = cov[(cov.get("analysis", "primary") == "primary")] if "analysis" in cov else cov
        overall = prim[(prim["cohort"] == "all") & (prim.get("direction", "all") == "all")]
        by_inst = prim[(prim["cohort"] != "all") & (prim.get("stratum", "") == "institution")]
        for _, r in overall.iterrows():
            crit = str(r["criterion"])
            level = ck.to_float(crit.split("level=")[-1].rstrip("]")) if "level=" in crit else 0.95
            n += 1
            claim = ck.claim_base(f"A{n:02d}", f"Beta–Binomial {level:g} predictive intervals for held-out "
                          "agreement counts reach their nominal coverage", "coverage",
                          model=str(r["model"]), prompt=r["prompt"], cohort="all", criterion=crit)

            def cell(change: str, to: str, row: pd.Series, _claim=claim, _level=level,
                     **e: Any) -> dict[str, Any]:
                est = ck.to_float(row["estimate"])
                v = "not defined" if not math.isfinite(est) else (
                    "holds" if est >= _level else "does not hold")
                return ck.claim_cell(_claim, change, to, verdict=v, estimate=est,
                             note=ck.qualify(f"point estimate over {int(ck.to_float(row['n']))} "
                                             "held-out cells",
                                     row.get("qualification")),
                             source="agreement.coverage", **e)

            rows.append(cell("at E", "", r))
            for _, o in by_inst[(by_inst["model"] == r["model"])
                                & (by_inst["criterion"] == r["criterion"])].iterrows():
                rows.append(cell("institution", str(o["cohort"]), o, cohort=o["cohort"]))
    gap = ck.table(results, NAME, "family_gap")
    if not gap.empty:
        for est_pair, g in gap.groupby("estimator", sort=True):
            top = g[g["cohort"] == "all"]
            if top.empty:
                continue
            t = top.iloc[0]
            a, b = (s.strip() for s in str(est_pair).split(" - ", 1))
            d = ck.to_float(t["estimate"])  # Brier(a) - Brier(b): lower is better
            better, worse, sign = (b, a, -1.0) if d > 0 else (a, b, 1.0)
            n += 1
            claim = ck.claim_base(f"A{n:02d}", f"{better} estimates reference agreement with lower Brier "
                          f"than {worse}", "estimator", model=str(t["model"]), prompt=t["prompt"],
                          cohort="all", criterion="brier_score")
            lo, hi = sorted((-sign * ck.to_float(t["ci_low"]), -sign * ck.to_float(t["ci_high"])))
            est = -sign * d
            v = ("not defined" if not (math.isfinite(lo) and math.isfinite(hi)) else
                 "holds" if lo > 0 else "reversed" if hi < 0 else "unresolved")
            rows.append(ck.claim_cell(claim, "at E", "", verdict=v, estimate=est, ci_low=lo, ci_high=hi,
                              note=f"design {t['design']}", source="agreement.family_gap"))
            for _, o in g[g["cohort"] != "all"].sort_values("cohort").iterrows():
                e = -sign * ck.to_float(o["estimate"])
                v = "not defined" if not math.isfinite(e) else (
                    "holds" if e > 0 else "reversed" if e < 0 else "unresolved")
                rows.append(ck.claim_cell(claim, "institution", str(o["cohort"]), verdict=v, estimate=e,
                                  note="point estimate at one held-out institution",
                                  source="agreement.family_gap", cohort=o["cohort"]))
    return rows
