"""Claims and the portability matrix: verdict logic on hand-made block tables."""

from __future__ import annotations

import math

import pandas as pd

from medaudit.audit.claims import build_claims
from medaudit.audit.spec import AuditSpec
from medaudit.blocks.block import BlockResult
from medaudit.blocks.claimkit import verdict_difference as _verdict_diff
from medaudit.blocks.rows import spec_row


def test_verdicts():
    assert _verdict_diff(0.04, 0.02, 0.06, 1) == "holds"
    assert _verdict_diff(-0.04, -0.06, -0.02, 1) == "reversed"
    assert _verdict_diff(0.01, -0.01, 0.03, 1) == "unresolved"
    assert _verdict_diff(-0.04, -0.06, -0.02, -1) == "holds"  # lower is better (Brier)
    assert _verdict_diff(math.nan, 0, 1, 1) == "not defined"


def _spec():
    return AuditSpec.model_validate({
        "name": "t", "simulate": "paper000", "primary_prompt": "clinical",
        "cohorts": {"A": {"role": "primary"}, "B": {"role": "primary"}}})


def _diff(cohort, a, b, crit, est, lo, hi, **kw):
    return spec_row(model=f"{a} - {b}", prompt=kw.pop("prompt", "clinical"), cohort=cohort,
                    negatives=kw.pop("negatives", "all"), criterion=crit, design="ordinary+paired",
                    n_resamples=100, seed=1, model_a=a, model_b=b, estimate=est, ci_low=lo,
                    ci_high=hi, qualification=kw.pop("qualification", ""), **kw)


def test_ranking_claim_portability():
    disc = pd.DataFrame([
        _diff("A", "m1", "m2", "roc_auc_difference", -0.04, -0.06, -0.02),  # m2 above m1 in A
        _diff("B", "m1", "m2", "roc_auc_difference", -0.01, -0.03, 0.01),  # unresolved in B
        _diff("A", "m1", "m2", "brier_score_difference", -0.05, -0.07, -0.03),  # m1 lower Brier
        _diff("B", "m1", "m2", "brier_score_difference", 0.02, 0.01, 0.03),
    ])
    by_prompt = pd.DataFrame([
        _diff("A", "m1", "m2", "roc_auc_difference", -0.03, -0.05, -0.01, prompt="photo"),
        _diff("A", "m1", "m2", "roc_auc_difference", 0.03, 0.01, 0.05, prompt="report"),
    ])
    results = {"discrimination": BlockResult("discrimination", {"model_differences": disc}),
               "prompts": BlockResult("prompts", {"model_differences_by_prompt": by_prompt})}
    claims = build_claims(results, _spec())
    c = claims[claims.claim_id == "R01"]
    assert c.iloc[0]["claim"] == "m2 ranks above m1 on AUROC"
    v = dict(zip(c.change + ":" + c.changed_to, c.verdict, strict=True))
    assert v["at E:"] == "holds"
    assert v["cohort:B"] == "unresolved"
    assert v["prompt:photo"] == "holds" and v["prompt:report"] == "reversed"
    assert not any(k.startswith("prevalence") for k in v)  # AUROC: no filler cell
    assert v["criterion:brier_score"] == "reversed"  # m1 has the lower Brier in A
    # each cell names its own E: the criterion changes with r, the cohort with C
    assert c[c.change == "criterion"].criterion.iloc[0] == "brier_score"
    assert c[c.change == "cohort"].cohort.iloc[0] == "B"
    assert c[c.change == "prompt"].prompt.tolist() == ["photo", "report"]
    base = c[c.change == "at E"].iloc[0]
    # oriented as better - other: m2 - m1 = +0.04 [0.02, 0.06]
    assert (base.estimate, base.ci_low, base.ci_high) == (0.04, 0.02, 0.06)
    # claim R02 is cohort B's (unresolved at E)
    assert claims[(claims.claim_id == "R02") & (claims.change == "at E")].verdict.iloc[0] == "unresolved"


def test_threshold_claims():
    tr = pd.DataFrame([
        spec_row(model="m1", prompt="clinical", cohort="B", threshold=0.3, criterion="sensitivity",
                 estimate=0.96, ci_low=0.9, ci_high=1.0, retained=True, rule="sensitivity",
                 source="A", qualification=""),
        spec_row(model="m1", prompt="clinical", cohort="B", threshold=0.3, criterion="specificity",
                 estimate=0.40, ci_low=0.3, ci_high=0.5, retained=True, rule="sensitivity",
                 source="A", qualification=""),
    ])
    claims = build_claims({"transport": BlockResult("transport", {"transport": tr})}, _spec())
    row = claims[(claims.change == "cohort")].iloc[0]
    assert row.verdict == "holds" and row.changed_to == "B" and row.cohort == "B"
    assert claims[claims.change == "at E"].cohort.iloc[0] == "A"  # τ chosen on the source
    assert row.other_criterion == "specificity" and row.other_estimate == 0.40


def test_no_blocks_no_claims():
    assert build_claims({}, _spec()).empty


def test_reliability_claims():
    metrics = pd.DataFrame([
        spec_row(model="m1", prompt="clinical", cohort="A", criterion="roc_auc", estimate=0.95,
                 ci_low=0.92, ci_high=0.97, qualification=""),
        spec_row(model="m1", prompt="clinical", cohort="B", criterion="roc_auc", estimate=0.91,
                 ci_low=0.85, ci_high=0.95, qualification=""),
        spec_row(model="m2", prompt="clinical", cohort="A", criterion="roc_auc", estimate=0.70,
                 ci_low=0.65, ci_high=0.75, qualification=""),
    ])
    groups = pd.DataFrame([
        spec_row(model="m1", prompt="clinical", cohort="A", negatives="sick", criterion="roc_auc",
                 estimate=0.65, ci_low=0.6, ci_high=0.7, qualification=""),
    ])
    results = {"discrimination": BlockResult("discrimination", {"metrics": metrics}),
               "spectrum": BlockResult("spectrum", {"groups": groups})}
    claims = build_claims(results, _spec())
    rel = claims[claims.claim_id.str.startswith("L")]
    assert set(rel.claim_id) == {"L01", "L02"}  # m1 in A (0.95) and in B (0.91); m2 never
    a = rel[rel.claim_id == "L01"]
    v = dict(zip(a.change + ":" + a.changed_to, a.verdict, strict=True))
    assert v == {"at E:": "holds", "cohort:B": "unresolved", "negatives:sick": "does not hold"}
    assert a[a.change == "negatives"].negatives.iloc[0] == "sick"
