"""Sample size and power for the receiving site's questions, with the cohort as the pilot.

The block runs only when the spec has a ``planning:`` section (or lists it in ``blocks:``)::

    planning:
      cohorts: [shenzhen]          # default: every declared cohort
      models: [m1, m2]             # default: every model
      alpha: 0.05                  # two-sided unless alternative: one-sided
      power: 0.8
      prevalence: 0.1              # for n_total (default: the cohort's own)
      auroc:                       # show AUROC > L, the cohort's AUROC as the expected value
        - {at_least: 0.85}         # method: obuchowski (pROC power.roc.test) | hanley_mcneil
      se_sp:                       # show Se > x and Sp > y at a threshold (exact binomial)
        - {min_sensitivity: 0.85, min_specificity: 0.80, threshold: 0.5}
        - {min_sensitivity: 0.85, min_specificity: 0.80, rule: youden, joint: true}
      paired_auroc: true           # or [[m1, m2]]: cases to detect the pilot's paired ΔAUROC

Tables (point computations, no resampling; ``design`` is ``point_estimate``):

``auroc``
    One row per cohort x model x target: positives and negatives needed to show AUROC > L
    (:func:`~medaudit.stats.auc_sample_size`) at the expected AUROC (the cohort's observed
    one unless ``expected`` is declared) with the cohort's negatives-per-positive ratio,
    rounded up (``n_pos``, ``n_neg``) and exact (``n_pos_exact``), ``n_total`` at the
    prevalence, the power the rounded sizes attain, and ``additional_pos``/``additional_neg``
    beyond the cohort's own counts.
``se_sp``
    One row per cohort x model x target: the exact binomial plan of
    :func:`~medaudit.stats.se_sp_sample_size` at the cohort's own Se and Sp at the declared
    threshold (or at the threshold the rule picks on the cohort).
``paired_auroc``
    One row per cohort x model pair ``A - B``: the cases to detect the pilot's paired AUROC
    difference with the DeLong variances of the pilot
    (:func:`~medaudit.stats.paired_auc_sample_size`, pROC's ``power.roc.test(roc1, roc2)``).

``status`` is ``planned``, or says why there is no plan (``not reachable``: the pilot's
value does not exceed the claimed one, so no sample shows the claim at that value).

:func:`plan_claims` answers the other question, for a finished audit: for every claim of
the portability matrix whose verdict is ``unresolved``, how many more positives and
negatives would resolve it at the observed effect (``medaudit plan AUDIT_DIR``).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from medaudit.blocks._at_threshold import CutpointRule, RuleName, as_rule
from medaudit.blocks.block import Block, BlockConfig, BlockResult, TableSchema
from medaudit.blocks.context import AuditContext, Study
from medaudit.blocks.notes import exposure_note, join
from medaudit.blocks.rows import spec_row
from medaudit.exceptions import MedauditError
from medaudit.io.specfile import fraction
from medaudit.stats import (
    auc_sample_size,
    best_threshold,
    cases_to_resolve,
    cases_to_resolve_proportion,
    operating_point,
    paired_auc_sample_size,
    roc_auc,
    se_sp_sample_size,
)
from medaudit.stats.power import MIN_POWER

__all__ = ["Planning", "PlanningConfig", "plan_claims", "check_plan_power", "PLAN_COLUMNS"]

NAME = "planning"


class AurocTarget(BlockConfig):
    """Show AUROC > ``at_least`` (the claimed level L)."""

    at_least: float
    method: Literal["obuchowski", "hanley_mcneil"] = "obuchowski"
    #: the AUROC expected at the receiving site (default: the cohort's observed AUROC)
    expected: float | None = None

    @field_validator("at_least", "expected")
    @classmethod
    def _frac(cls, v: float | None, info: Any) -> float | None:
        return None if v is None else fraction(v, info.field_name)


class SeSpTarget(BlockConfig):
    """Show Se > ``min_sensitivity`` and Sp > ``min_specificity`` at a threshold."""

    min_sensitivity: float
    min_specificity: float
    threshold: float | None = None
    rule: RuleName | CutpointRule | None = None
    #: plan each rate at power sqrt(power), so that both claims succeed together with it
    joint: bool = False

    @field_validator("min_sensitivity", "min_specificity")
    @classmethod
    def _frac(cls, v: float, info: Any) -> float:
        return fraction(v, info.field_name)

    @model_validator(mode="after")
    def _one(self) -> SeSpTarget:
        if (self.threshold is None) == (self.rule is None):
            raise ValueError("give exactly one of threshold: (a score) or rule: youden / "
                             "closest_topleft")
        if self.threshold is not None and (math.isnan(self.threshold)
                                           or self.threshold == -math.inf):
            raise ValueError(f"threshold must be a number (or .inf); got {self.threshold!r}")
        return self


class PlanningConfig(BlockConfig):
    """The ``planning:`` section (see the module docstring)."""

    cohorts: list[str] | None = None
    models: list[str] | None = None
    alpha: float = 0.05
    power: float = 0.8
    alternative: Literal["two-sided", "one-sided"] = "two-sided"
    #: prevalence for ``n_total`` (default: each cohort's own)
    prevalence: float | None = None
    auroc: list[AurocTarget] = Field(default_factory=list)
    se_sp: list[SeSpTarget] = Field(default_factory=list)
    paired_auroc: bool | list[tuple[str, str]] = False

    @field_validator("alpha", "power")
    @classmethod
    def _frac(cls, v: float, info: Any) -> float:
        v = fraction(v, info.field_name)
        if info.field_name == "power" and v < MIN_POWER:  # sizes grow again below it
            raise ValueError(f"power must be at least 0.5 (even odds) for a sample size; got {v!r}")
        return v

    @field_validator("prevalence")
    @classmethod
    def _prev(cls, v: float | None) -> float | None:
        return None if v is None else fraction(v, "prevalence")


# ----------------------------------------------------------------------------- the block
class Planning(Block):
    """Sample sizes and power for AUROC, Se/Sp and paired-AUROC claims, the cohort as the pilot."""

    name = NAME
    title = "Planning: sample size and power"
    summary = ("positives and negatives needed to show AUROC > L, Se > x and Sp > y, or the pilot's "
               "paired AUROC difference, with the cohort as the pilot (pROC power.roc.test)")
    config = PlanningConfig
    tables = (
        TableSchema("auroc", "cases to show AUROC > L per cohort x model x target",
                    ("question", "n_pos", "n_neg", "n_total", "power", "status")),
        TableSchema("se_sp", "cases to show Se > x and Sp > y per cohort x model x target",
                    ("question", "n_pos", "n_neg", "n_total", "power", "status")),
        TableSchema("paired_auroc", "cases to detect the pilot's paired AUROC difference",
                    ("model_a", "model_b", "estimate", "n_pos", "n_neg", "power", "status")),
    )

    def enabled(self, config: PlanningConfig) -> bool:
        # planning answers declared questions: run by default only when the spec asks some
        return config != self.default_config()

    def check(self, config: PlanningConfig, table: pd.DataFrame, cohorts: Sequence[str]
              ) -> list[str]:
        from medaudit.blocks.checks import unknown

        models = sorted(table["model"].unique())
        pairs = config.paired_auroc if isinstance(config.paired_auroc, list) else []
        return (unknown("cohort", config.cohorts or [], cohorts, "planning.cohorts")
                + unknown("model", config.models or [], models, "planning.models")
                + unknown("model", [m for p in pairs for m in p], models, "planning.paired_auroc"))

    def run(self, ctx: AuditContext, config: PlanningConfig) -> BlockResult:
        prompt = ctx.primary_prompt
        models = list(config.models or ctx.models())
        pairs = _pairs(config.paired_auroc, models)
        keys = list(dict.fromkeys([*models, *(m for p in pairs for m in p)]))
        cohorts = [c for c in ctx.cohorts if config.cohorts is None or c in config.cohorts]
        rows: dict[str, list] = {"auroc": [], "se_sp": [], "paired_auroc": []}
        one_class = []
        for cohort in cohorts:
            ctx.tick(f"{NAME}: {cohort}")
            w = ctx.wide(cohort, keys=[(m, prompt) for m in keys])
            n_pos, n_neg = float(w.label.sum()), float(w.label.size - w.label.sum())
            if n_pos == 0 or n_neg == 0:
                one_class.append(cohort)  # no pilot (said in the notes)
                continue
            prev = config.prevalence or n_pos / (n_pos + n_neg)
            pilot = {"pilot_n_pos": n_pos, "pilot_n_neg": n_neg}
            for m in models:
                s = w.scores[f"{m}|{prompt}"]
                base = dict(model=m, prompt=prompt, cohort=cohort,
                            design="point_estimate")
                qual = exposure_note(ctx, m, cohort)
                for t in config.auroc:
                    rows["auroc"].append(_auroc_row(t, w.label, s, n_pos, n_neg, prev, config,
                                                    base, pilot, qual))
                for t in config.se_sp:
                    rows["se_sp"].append(_se_sp_row(t, w.label, s, prev, config, base, pilot,
                                                    qual))
            for a, b in pairs:
                rows["paired_auroc"].append(_paired_row(
                    w.label, w.scores[f"{a}|{prompt}"], w.scores[f"{b}|{prompt}"], a, b, prev,
                    config, dict(prompt=prompt, cohort=cohort,
                                 design="point_estimate"), pilot,
                    exposure_note(ctx, [a, b], cohort, label="{model}: ")))
        notes = [f"Sample sizes at alpha {config.alpha:g} ({config.alternative}) and power "
                 f"{config.power:g}, each cohort's observed values as the pilot; n_total at "
                 + (f"prevalence {config.prevalence:g}" if config.prevalence is not None
                    else "each cohort's own prevalence") + "; additional_* beyond the cohort's "
                 "own cases."]
        if one_class:
            notes.append(f"cohort(s) {one_class}: nothing planned (one class: no pilot).")
        if not any(rows.values()) and len(one_class) < len(cohorts):
            notes.append("nothing planned: `planning:` asks no question (auroc, se_sp or "
                         "paired_auroc).")
        return BlockResult(name=NAME, tables={k: pd.DataFrame(v) for k, v in rows.items() if v},
                           notes=tuple(notes))


def _pairs(paired: bool | list[tuple[str, str]], models: list[str]) -> list[tuple[str, str]]:
    if paired is True:
        return list(itertools.combinations(sorted(models), 2))
    return [tuple(p) for p in paired] if paired else []


def _common(config: PlanningConfig) -> dict[str, Any]:
    return {"alpha": config.alpha, "power_target": config.power, "alternative": config.alternative}


def _plan(size: Any, pilot: dict[str, float], **extra: Any) -> dict[str, Any]:
    """The columns of a sample size, with the cases beyond the pilot's own."""
    return {"n_pos": float(size.n_pos), "n_neg": float(size.n_neg),
            "n_pos_exact": size.n_pos_exact, "n_neg_exact": size.n_neg_exact,
            "n_total": math.nan if size.n_total is None else float(size.n_total),
            "power": size.power, **extra, "method": size.method, **pilot,
            "additional_pos": max(float(size.n_pos) - pilot["pilot_n_pos"], 0.0),
            "additional_neg": max(float(size.n_neg) - pilot["pilot_n_neg"], 0.0),
            "status": "planned"}


def _no_plan(method: str, pilot: dict[str, float], status: str, *extra: str) -> dict[str, Any]:
    """The same columns when there is no plan, and why."""
    nan = math.nan
    return {"n_pos": nan, "n_neg": nan, "n_pos_exact": nan, "n_neg_exact": nan, "n_total": nan,
            "power": nan, **dict.fromkeys(extra, nan), "method": method, **pilot,
            "additional_pos": nan, "additional_neg": nan, "status": status}


def _auroc_row(t: AurocTarget, y, s, n_pos, n_neg, prev, config, base, pilot, qual) -> dict:
    theta = roc_auc(y, s) if t.expected is None else t.expected
    kappa = n_neg / n_pos
    values = dict(question=f"AUROC > {t.at_least:g}", target=t.at_least, expected=theta,
                  expected_source="observed" if t.expected is None else "declared", kappa=kappa,
                  **_common(config))
    if not theta > t.at_least:
        return spec_row(**base, criterion="roc_auc", **values, **_no_plan(
            t.method, pilot, f"not reachable: expected AUROC {theta:.6g} does not exceed "
            f"{t.at_least:g}"), qualification=qual)
    if theta >= 1.0:
        return spec_row(**base, criterion="roc_auc", **values, **_no_plan(
            t.method, pilot, "not computable: the pilot AUROC is 1 (perfect separation), which "
            "leaves the variance formula nothing to plan with; declare `expected:` below 1"),
            qualification=qual)
    try:
        size = auc_sample_size(theta, auc_null=t.at_least, alpha=config.alpha, power=config.power,
                               kappa=kappa, alternative=config.alternative, method=t.method,
                               prevalence=prev)
    except MedauditError as exc:
        # an effect too small to reach in any sample the solver tries: a row that says so,
        # not the end of the audit (probe finding: one perfect model, or such an effect,
        # stopped every block after it)
        return spec_row(**base, criterion="roc_auc", **values, **_no_plan(
            t.method, pilot, f"not computable: {str(exc).rstrip('.')}"), qualification=qual)
    return spec_row(**base, criterion="roc_auc", **values, **_plan(size, pilot), qualification=qual)


def _se_sp_row(t: SeSpTarget, y, s, prev, config, base, pilot, qual) -> dict:
    if t.rule is not None:
        rule = as_rule(t.rule)
        tau, source = best_threshold(y, s, method=rule.rule, weights=rule.weights).threshold, \
            rule.label
    else:
        tau, source = float(t.threshold), "declared"
    op = operating_point(y, s, threshold=tau)
    values = dict(question=f"Se > {t.min_sensitivity:g} and Sp > {t.min_specificity:g}",
                  threshold_rule=source, expected_sensitivity=op.sensitivity,
                  expected_specificity=op.specificity, min_sensitivity=t.min_sensitivity,
                  min_specificity=t.min_specificity, joint=t.joint, **_common(config))
    short = [f"{k} {v:.6g} does not exceed {x:g}" for k, v, x in (
        ("Se", op.sensitivity, t.min_sensitivity), ("Sp", op.specificity, t.min_specificity))
        if not v > x]
    row = dict(**base, threshold=tau, criterion="sensitivity,specificity", **values)
    if short:
        return spec_row(**row, **_no_plan("exact binomial", pilot, "not reachable: observed "
                                          + "; ".join(short), "power_sensitivity",
                                          "power_specificity"), qualification=qual)
    try:
        size = se_sp_sample_size(op.sensitivity, op.specificity, min_sensitivity=t.min_sensitivity,
                                 min_specificity=t.min_specificity, alpha=config.alpha,
                                 power=config.power, alternative=config.alternative,
                                 joint=t.joint, prevalence=prev)
    except MedauditError as exc:  # an effect too small for any n the exact search tries
        return spec_row(**row, **_no_plan("exact binomial", pilot,
                                          f"not computable: {str(exc).rstrip('.')}",
                                          "power_sensitivity", "power_specificity"),
                        qualification=qual)
    return spec_row(**row, **_plan(size, pilot, power_sensitivity=size.inputs["power_sensitivity"],
                                   power_specificity=size.inputs["power_specificity"]),
                    qualification=qual)


def _paired_row(y, a_s, b_s, a, b, prev, config, base, pilot, qual) -> dict:
    delta = roc_auc(y, a_s) - roc_auc(y, b_s)
    row = dict(model=f"{a} - {b}", **base, criterion="roc_auc_difference", model_a=a, model_b=b,
               estimate=delta, question="paired AUROC difference", **_common(config))
    try:
        size = paired_auc_sample_size(y, a_s, b_s, alpha=config.alpha, power=config.power,
                                      alternative=config.alternative, prevalence=prev)
    except (MedauditError, ZeroDivisionError) as exc:  # equal AUROCs, or a zero DeLong variance
        return spec_row(**row, **_no_plan("delong", pilot,
                                          f"not computable: {str(exc).rstrip('.')}"),
                        qualification=qual)
    return spec_row(**row, **_plan(size, pilot), qualification=qual)


# ----------------------------------------------------------------------------- medaudit plan
#: criteria where a lower value is better (a ranking claim on them holds when A - B < 0)
LOWER_IS_BETTER = ("brier_score", "log_loss", "ece", "aurc", "selective_risk", "ece_equal_mass",
                   "debiased_l2_ce")
PLAN_COLUMNS = ("claim_id", "claim", "kind", "change", "changed_to", "model", "prompt", "cohort",
                "negatives", "criterion", "estimate", "ci_low", "ci_high", "verdict", "source_table",
                "claim_value", "claim_side", "n_pos", "n_neg", "status", "resolves_to", "factor",
                "additional_pos", "additional_neg", "exact_additional", "rule", "note")


def _base(criterion: Any) -> str:
    return str(criterion).split("[", 1)[0]


def _claim_value(row: Mapping[str, Any], study: Study) -> tuple[float, str, str] | str:
    """``(claim value, side, what resolving it means)``, or why the claim has no plan.

    Differences (``ranking``, ``estimator``) are claimed against 0, on the side where the
    criterion is better; level claims ("... ≥ L", ``reliability``) against L (the claim's own
    text, else the study's ``auroc_at_least``); an ``institution`` claim ("carries over") is
    resolved only by detecting the difference, so it would not hold.
    """
    kind = str(row.get("kind"))
    value, side = pd.to_numeric(row.get("claim_value"), errors="coerce"), row.get("claim_side")
    if np.isfinite(value) and side in ("greater", "less"):  # a declared claim says it itself
        return float(value), str(side), ""
    if kind in ("ranking", "estimator"):
        return 0.0, "less" if _base(row.get("criterion")) in LOWER_IS_BETTER else "greater", ""
    if kind == "institution":
        return 0.0, "greater" if float(row["estimate"]) > 0 else "less", "does not hold"
    m = re.search(r"≥\s*([0-9]*\.?[0-9]+)", str(row.get("claim", "")))
    if m:
        return float(m.group(1)), "greater", ""
    if kind == "reliability" and study.auroc_at_least is not None:
        return float(study.auroc_at_least), "greater", ""
    return f"no rule for claims of kind {kind!r}"


def _counts(row: Mapping[str, Any], results: Mapping[str, BlockResult]) -> tuple[float, float] | None:
    """Positives and negatives behind the claim's cell: its own, else read from its source table."""
    own = [pd.to_numeric(row.get(k), errors="coerce") for k in ("n_pos", "n_neg")]
    if all(np.isfinite(own)):
        return float(own[0]), float(own[1])
    block, _, tname = str(row.get("source_table", "")).partition(".")
    res = results.get(block)
    t = res.tables.get(tname) if res is not None else None
    if t is None or t.empty or not {"n_pos", "n_neg"} <= set(t.columns):
        return None
    sel = pd.Series(True, index=t.index)
    for col in ("cohort", "prompt", "negatives"):
        if col in t.columns and not pd.isna(row.get(col)):
            sel &= t[col].astype(str) == str(row[col])
    if row.get("change") == "subgroup" and {"subgroup", "group"} <= set(t.columns):
        # the subgroup's own counts ("sex = M"), not the whole cohort's "(all)" row
        name, _, level = str(row.get("changed_to", "")).partition(" = ")
        sel &= (t["subgroup"].astype(str) == name) & (t["group"].astype(str) == level)
    models = [p.strip() for p in str(row.get("model", "")).split(" vs ")]
    if len(models) == 2 and {"model_a", "model_b"} <= set(t.columns):
        by_model = sel & t["model_a"].isin(models) & t["model_b"].isin(models)
    else:
        by_model = sel & (t["model"].astype(str) == str(row.get("model"))) if "model" in t else sel
    got = t[by_model] if by_model.any() else t[sel]
    got = got[pd.to_numeric(got["n_pos"], errors="coerce").notna()]
    if got.empty:
        return None
    return float(got["n_pos"].iloc[0]), float(got["n_neg"].iloc[0])


def check_plan_power(power: Any, *, name: str = "power") -> float | None:
    """Return the power of a plan of cases (None: even odds) or raise naming ``name``.

    A plan asks for at least even odds that the resolved interval excludes the claimed
    value: below 0.5 the half-width factor ``((z + z_beta) / z)^2`` first shrinks to 0 and
    then grows again (``power = 1e-9`` asked for more cases than ``0.5``), so such a
    power is refused rather than planned.

    Examples
    --------
    >>> check_plan_power(0.8), check_plan_power(None)
    (0.8, None)
    """
    if power is None:
        return None
    if isinstance(power, bool) or not isinstance(power, (int, float, np.integer, np.floating)) \
            or not 0.0 < float(power) < 1.0:
        raise MedauditError(f"{name} must lie strictly between 0 and 1; got {power!r}.")
    if float(power) < MIN_POWER:
        raise MedauditError(f"{name} = {float(power):g} is below 0.5: a plan asks for at least even "
                            "odds that the interval excludes the claimed value; give a power in "
                            "[0.5, 1) (0.5: the expected interval just excludes it).")
    return float(power)


def plan_claims(claims: pd.DataFrame, results: Mapping[str, BlockResult], study: Study, *,
                power: float | None = 0.8, confidence_level: float = 0.95) -> pd.DataFrame:
    """How many more positives and negatives would resolve each unresolved claim.

    Parameters
    ----------
    claims : DataFrame
        The portability matrix (``AuditOutcome.claims``); rows whose ``verdict`` is
        ``unresolved`` are planned.
    results : mapping of block name to BlockResult
        The block tables the claims were read from (the counts come from ``source_table``).
    study : Study
        The audit's study (the level of reliability claims).
    power : float, optional
        The chance that the interval excludes the claimed value at the planned size, in
        [0.5, 1) (:func:`check_plan_power`); None (or 0.5) asks for the expected interval to
        just exclude it.
    confidence_level : float, default=0.95
        The level of the audit's intervals.

    Returns
    -------
    DataFrame
        One row per unresolved claim cell with :data:`PLAN_COLUMNS`: ``status``
        ``unresolved`` with ``additional_pos``/``additional_neg`` (the half-width rule of
        :func:`~medaudit.stats.cases_to_resolve`), and ``exact_additional`` for rates
        (sensitivity, specificity: :func:`~medaudit.stats.cases_to_resolve_proportion`,
        Clopper-Pearson at the observed rate); other statuses say why there is no number.

    Examples
    --------
    AUROC 0.83 [0.78, 0.88] on 60 positives and 140 negatives, claimed ≥ 0.8: the lower
    half-width 0.05 must shrink to 0.03, f = (0.05 / 0.03)^2, at even odds (``power=None``):

    >>> claims = pd.DataFrame([{"claim_id": "L01", "claim": "m AUROC ≥ 0.8", "kind": "reliability",
    ...                         "model": "m", "cohort": "c", "criterion": "roc_auc",
    ...                         "estimate": 0.83, "ci_low": 0.78, "ci_high": 0.88,
    ...                         "verdict": "unresolved", "source_table": "b.t"}])
    >>> t = pd.DataFrame([{"model": "m", "cohort": "c", "n_pos": 60, "n_neg": 140}])
    >>> r = plan_claims(claims, {"b": BlockResult(name="b", tables={"t": t})}, Study(),
    ...                 power=None).iloc[0]
    >>> r["status"], r["resolves_to"], int(r["additional_pos"]), int(r["additional_neg"])
    ('unresolved', 'holds', 107, 249)
    """
    rows = []
    power = check_plan_power(power)
    pw = None if power is None or power == 0.5 else float(power)
    todo = claims[claims["verdict"].astype(str) == "unresolved"] if len(claims) else claims
    for _, r in todo.iterrows():
        out = {k: r.get(k) for k in PLAN_COLUMNS if k in r.index}
        rows.append({**dict.fromkeys(PLAN_COLUMNS), **out, **_resolve(r, results, study, pw,
                                                                       confidence_level)})
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


def _resolve(r: pd.Series, results: Mapping[str, BlockResult], study: Study, power: float | None,
             level: float) -> dict[str, Any]:
    est, lo, hi = (pd.to_numeric(r.get(k), errors="coerce") for k in ("estimate", "ci_low",
                                                                        "ci_high"))
    if not all(np.isfinite([est, lo, hi])) or not lo <= est <= hi:
        return {"status": "no interval", "note": "the cell has no interval to narrow"}
    rule = _claim_value(r, study)
    if isinstance(rule, str):
        return {"status": "no rule", "note": rule}
    value, side, meaning = rule
    counts = _counts(r, results)
    if counts is None:
        return {"claim_value": value, "claim_side": side, "status": "counts unknown",
                "note": f"{r.get('source_table')} gives no n_pos/n_neg for this cell"}
    n_pos, n_neg = counts
    crit = _base(r.get("criterion"))
    scales = {"sensitivity": "positives", "specificity": "negatives"}.get(crit, "both")
    try:
        res = cases_to_resolve(est, lo, hi, claim_value=value, claim=side, n_pos=round(n_pos),
                               n_neg=round(n_neg), scales_with=scales, power=power,
                               confidence_level=level)
    except MedauditError as exc:  # a class without a case in this cell: nothing to scale
        return {"claim_value": value, "claim_side": side, "n_pos": n_pos, "n_neg": n_neg,
                "status": "counts unknown", "note": str(exc)}
    out = {"claim_value": value, "claim_side": side, "n_pos": n_pos, "n_neg": n_neg,
           "status": res.status, "resolves_to": meaning or res.direction, "factor": res.factor,
           "additional_pos": float(res.additional_pos), "additional_neg": float(res.additional_neg),
           "exact_additional": math.nan, "rule": res.rule, "note": ""}
    if res.status == "never":
        out.update(additional_pos=math.nan, additional_neg=math.nan,
                   note="the estimate equals the claimed value: no sample size resolves it at "
                        "this effect")
    elif res.status in ("holds", "does not hold"):
        # the interval already decides; the verdict is unresolved only because that interval
        # is not trusted (too few images, replicates without a class: claimkit.verdict_untrusted),
        # which narrowing it cannot mend: no half-width number, rather than "+0 would show it"
        out.update(status="interval not trusted", resolves_to=None, additional_pos=math.nan,
                   additional_neg=math.nan,
                   note=f"the interval already says {res.status!r} but is not trusted here "
                        "(too few images or replicates without a class); the half-width rule "
                        "gives no number")
    if crit in ("sensitivity", "specificity") and 0.0 <= est <= 1.0:
        nobs = n_pos if crit == "sensitivity" else n_neg
        exact = cases_to_resolve_proportion(round(est * nobs), round(nobs), claim_value=value,
                                            claim=side, confidence_level=level)
        out["exact_additional"] = float(exact.additional_pos)
        out["note"] = join(out["note"], "exact_additional: Clopper-Pearson at the observed rate "
                                        "(even odds)")
    return out
