"""Block `planning` (sample size and power) and :func:`plan_claims` (``medaudit plan``).

Witnesses:

* R's pROC 1.18 ``power.roc.test`` (tests/reference/power_pROC.csv, made by
  tests/reference/generate_peers_pROC.R): one curve (auc, kappa -> ncases, ncontrols) and two
  paired curves on the aSAH data shipped beside it (tests/reference/peers_pROC_data.csv);
* the exact binomial test written out with scipy.stats.binom (critical count, power per n);
* scikit-learn's roc_auc_score for the pilot AUROC;
* the resolution rule by hand (half-width ~ 1/sqrt(n) at the observed effect) and a brute-force
  search for the exact Clopper-Pearson resolution (statsmodels ``proportion_confint``);
* and, for "defaults change nothing", digests of an audit's results at the branch point
  (main 2234378; identical at 55d4e09), recomputed here on the same small spec.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from medaudit.audit.spec import AuditSpec
from medaudit.blocks import planning as P
from medaudit.blocks.block import BlockResult
from medaudit.blocks.context import Study
from tests._support import one, run
from tests.blocks.test_discrimination import _untied, make_context

REF = Path(__file__).resolve().parents[1] / "reference"


def _spec(ctx, section):
    return ctx.spec.model_copy(update={"planning": P.PlanningConfig.model_validate(section),
                                       "blocks": [*ctx.spec.blocks, "planning"]})


def _proc(question, **eq):
    t = pd.read_csv(REF / "power_pROC.csv", comment="#")
    for k, v in eq.items():
        t = t[np.isclose(t[k], v)] if isinstance(v, float) else t[t[k] == v]
    t = t[t["question"] == question]
    assert len(t) == 1, eq
    return t.iloc[0]


# ----------------------------------------------------------------------------- defaults
SPEC = {"name": "defaults", "simulate": "paper000", "simulate_scale": 0.03,
        "primary_prompt": "clinical", "seed": 2026, "n_resamples": 40, "n_permutations": 19,
        "cohorts": {"montgomery": {"role": "primary"}, "shenzhen": {"role": "primary"},
                    "tbx11k-train": {"role": "source"},
                    "vindr": {"role": "extension", "design": "within_label"}},
        "transport": [{"source": "tbx11k-train", "targets": ["shenzhen", "montgomery", "vindr"],
                       "rules": ["sensitivity", "specificity"], "fixed_targets": ["vindr"]}]}
#: results.json "blocks" (tables, columns, notes) per block, "portability" and summary.md of the
#: audit of SPEC written by main at 2234378 (this branch's base) and at 55d4e09: sha256 of
#: json.dumps(value, sort_keys=True), first 16 hex digits.  Regenerate by running the test's
#: _digests on an audit of SPEC written by the commit to compare with.


def _digests(out: Path) -> dict[str, str]:
    r = json.loads((out / "results.json").read_text())
    d = {f"blocks.{b}": hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()[:16]
         for b, v in r["blocks"].items()}
    d["portability"] = hashlib.sha256(json.dumps(r["portability"], sort_keys=True).encode()
                                      ).hexdigest()[:16]
    d["summary.md"] = hashlib.sha256((out / "summary.md").read_bytes()).hexdigest()[:16]
    return d


def test_defaults_leave_the_audit_unchanged(tmp_path):
    """New tables, metrics and the planning block appear only when the spec asks for them:
    writing every new section out at its defaults gives the same results as leaving it out."""
    from medaudit.audit.run import audit, write_outcome

    spec = AuditSpec.model_validate(SPEC)
    assert "planning" not in spec.blocks
    explicit = AuditSpec.model_validate({
        **SPEC, "planning": spec.planning.model_dump(),
        "operating_points": spec.operating_points.model_dump()})
    assert "planning" not in explicit.blocks
    out, out2 = tmp_path / "audit", tmp_path / "explicit"
    write_outcome(audit(spec), out)
    write_outcome(audit(explicit), out2)
    assert _digests(out) == _digests(out2)
    assert sorted(p.name for p in (out / "tables").glob("operating_points__*.csv")) == [
        "operating_points__operating_points.csv", "operating_points__risk_coverage.csv"]
    assert not list((out / "tables").glob("planning__*"))


def test_planning_runs_only_when_the_spec_asks():
    base = {"name": "t", "simulate": "paper000", "cohorts": {"c": {}}}
    assert "planning" not in AuditSpec.model_validate(base).blocks
    asked = AuditSpec.model_validate({**base, "planning": {"auroc": [{"at_least": 0.8}]}})
    assert asked.blocks == [*AuditSpec.model_validate(base).blocks, "planning"]
    explicit = AuditSpec.model_validate({**base, "blocks": ["planning"]})
    assert explicit.blocks == ["planning"]


def test_listed_without_questions_writes_no_table():
    rng = np.random.default_rng(3)
    y, a = _untied(rng, 10, 12, 1.0)
    ctx = make_context({"c": (y, {"m": a})}, n_resamples=20)
    res = run(P, ctx, _spec(ctx, {}))
    assert res.tables == {} and res.notes
    # probe finding: the note said "(one class, or no question)" of a cohort with both classes
    assert any("asks no question" in n for n in res.notes)
    assert not any("one class" in n for n in res.notes)


# ----------------------------------------------------------------------------- AUROC > L
@pytest.mark.parametrize("alternative", ["two-sided", "one-sided"])
def test_auroc_rows_equal_pROC_power_roc_test(alternative):
    # kappa 1.7 and 1 from the cohorts' own class ratios; the expected AUROC declared
    rng = np.random.default_rng(1)
    y1, s1 = _untied(rng, 10, 17, 1.0)
    y2, s2 = _untied(rng, 12, 12, 1.0)
    ctx = make_context({"k17": (y1, {"m": s1}), "k1": (y2, {"m": s2})}, n_resamples=20)
    res = run(P, ctx, _spec(ctx, {"alternative": alternative,
                                  "auroc": [{"at_least": 0.5, "expected": a}
                                            for a in (0.65, 0.8, 0.9)]}))
    t = res.tables["auroc"]
    assert len(t) == 6
    for cohort, kappa in (("k17", 1.7), ("k1", 1.0)):
        for auc in (0.65, 0.8, 0.9):
            ref = _proc("one_curve_n", auc=auc, kappa=kappa,
                        alternative=alternative.replace("-", "."), power=0.8)
            r = one(t, cohort=cohort, expected=auc)
            assert r["n_pos_exact"] == pytest.approx(ref["ncases"], rel=1e-9)
            assert r["n_neg_exact"] == pytest.approx(ref["ncontrols"], rel=1e-9)
            assert (r["n_pos"], r["n_neg"]) == (math.ceil(ref["ncases"]),
                                                math.ceil(ref["ncontrols"]))
            assert r["power"] >= 0.8 and r["status"] == "planned"
            assert r["kappa"] == pytest.approx(kappa) and r["expected_source"] == "declared"


def test_auroc_rows_use_the_cohort_as_the_pilot():
    from medaudit.stats import auc_sample_size

    rng = np.random.default_rng(2)
    y, a = _untied(rng, 30, 50, 1.5)
    _, b = _untied(rng, 30, 50, 0.1)
    ctx = make_context({"c": (y, {"ma": a, "mb": b})}, n_resamples=20)
    res = run(P, ctx, _spec(ctx, {"auroc": [{"at_least": 0.7},
                                            {"at_least": 0.7, "method": "hanley_mcneil"}],
                                  "prevalence": 0.1}))
    t = res.tables["auroc"]
    for m, s in (("ma", a), ("mb", b)):
        theta = roc_auc_score(y, s)
        for method in ("obuchowski", "hanley_mcneil"):
            r = one(t, model=m, method=method)
            assert r["expected"] == pytest.approx(theta, abs=1e-12)
            if theta <= 0.7:
                assert r["status"].startswith("not reachable") and np.isnan(r["n_pos"])
                continue
            want = auc_sample_size(theta, auc_null=0.7, kappa=50 / 30, method=method,
                                   prevalence=0.1)
            assert (r["n_pos"], r["n_neg"], r["n_total"]) == (want.n_pos, want.n_neg, want.n_total)
            assert r["additional_pos"] == max(want.n_pos - 30, 0)
            assert (r["pilot_n_pos"], r["pilot_n_neg"]) == (30, 50)
    assert one(t, model="mb", method="obuchowski")["status"].startswith("not reachable")


# ----------------------------------------------------------------------------- Se > x, Sp > y
def _exact_power(n, p_true, p_claim, a):
    """One-sided exact test of p <= p_claim at level a: the critical count, then the power."""
    k = next(k for k in range(n + 2) if stats.binom.sf(k - 1, n, p_claim) <= a)
    return stats.binom.sf(k - 1, n, p_true)


def test_se_sp_rows_against_the_exact_binomial_test():
    # 20 positives, 19 above the threshold (Se 0.95); 20 negatives, 18 below (Sp 0.90)
    y = np.r_[np.ones(20), np.zeros(20)]
    s = np.r_[np.linspace(0.55, 0.95, 19), [0.2], np.linspace(0.05, 0.45, 18), [0.6, 0.7]]
    ctx = make_context({"c": (y, {"m": s})}, n_resamples=20)
    res = run(P, ctx, _spec(ctx, {"prevalence": 0.2, "se_sp": [
        {"min_sensitivity": 0.85, "min_specificity": 0.80, "threshold": 0.5},
        {"min_sensitivity": 0.96, "min_specificity": 0.80, "threshold": 0.5}]}))
    t = res.tables["se_sp"]
    r = one(t, min_sensitivity=0.85)
    assert (r["expected_sensitivity"], r["expected_specificity"]) == (0.95, 0.90)
    assert (r["n_pos"], r["n_neg"], r["n_total"]) == (84, 113, 420)  # stats docstring example
    for n, p1, p0 in ((int(r["n_pos"]), 0.95, 0.85), (int(r["n_neg"]), 0.90, 0.80)):
        # the smallest n beyond which the power never falls below 0.8 again (checked to 2n)
        assert all(_exact_power(k, p1, p0, 0.025) >= 0.8 for k in range(n, 2 * n))
        assert _exact_power(n - 1, p1, p0, 0.025) < 0.8
    assert r["power_sensitivity"] == pytest.approx(_exact_power(84, 0.95, 0.85, 0.025), rel=1e-12)
    bad = one(t, min_sensitivity=0.96)
    assert bad["status"] == "not reachable: observed Se 0.95 does not exceed 0.96"
    assert np.isnan(bad["n_pos"]) and list(bad.index) == list(r.index)


def test_se_sp_at_a_rule_chosen_threshold():
    from medaudit.stats import best_threshold, operating_point, se_sp_sample_size

    rng = np.random.default_rng(4)
    y, s = _untied(rng, 40, 60, 2.0)
    ctx = make_context({"c": (y, {"m": s})}, n_resamples=20)
    res = run(P, ctx, _spec(ctx, {"se_sp": [{"min_sensitivity": 0.6, "min_specificity": 0.6,
                                             "rule": "youden", "joint": True}]}))
    r = res.tables["se_sp"].iloc[0]
    tau = best_threshold(y, s).threshold
    op = operating_point(y, s, threshold=tau)
    want = se_sp_sample_size(op.sensitivity, op.specificity, min_sensitivity=0.6,
                             min_specificity=0.6, joint=True, prevalence=0.4)
    assert (r["threshold"], r["threshold_rule"]) == (tau, "youden")
    assert (r["n_pos"], r["n_neg"], r["n_total"], r["power"]) == (
        want.n_pos, want.n_neg, want.n_total, want.power)


# ----------------------------------------------------------------------------- paired ΔAUROC
def test_paired_rows_equal_pROC_on_aSAH():
    d = pd.read_csv(REF / "peers_pROC_data.csv", comment="#")
    d = d[d["dataset"] == "aSAH"]
    y = d["y_true"].to_numpy(float)
    # scores divided by 10 to lie in [0, 1]: ranks, AUROCs and DeLong variances are unchanged
    ctx = make_context({"asah": (y, {"a": d["score_a"].to_numpy() / 10,
                                     "b": d["score_b"].to_numpy() / 10})}, n_resamples=20)
    for power in (0.8, 0.9):
        res = run(P, ctx, _spec(ctx, {"paired_auroc": True, "power": power}))
        r = res.tables["paired_auroc"].iloc[0]
        ref = _proc("two_curves_n", dataset="aSAH", alternative="two.sided", power=power)
        assert r["model"] == "a - b" and (r["model_a"], r["model_b"]) == ("a", "b")
        assert r["estimate"] == pytest.approx(ref["auc"], abs=1e-12)  # pROC: auc1 - auc2
        assert r["n_pos_exact"] == pytest.approx(ref["ncases"], rel=1e-9)
        assert r["n_neg_exact"] == pytest.approx(ref["ncontrols"], rel=1e-9)
        assert r["n_pos"] == math.ceil(ref["ncases"])


def test_paired_rows_name_equal_aurocs():
    y = np.r_[np.ones(10), np.zeros(10)]
    s = np.r_[np.linspace(0.5, 0.9, 10), np.linspace(0.1, 0.6, 10)]
    ctx = make_context({"c": (y, {"a": s, "b": s.copy()})}, n_resamples=20)
    r = run(P, ctx, _spec(ctx, {"paired_auroc": [["a", "b"]]})).tables["paired_auroc"].iloc[0]
    assert r["status"].startswith("not computable: the two pilot AUROCs are equal")
    assert np.isnan(r["n_pos"])


def test_check_names_the_unknown_cohorts_and_models():
    table = pd.DataFrame({"model": ["m1", "m2"]})
    cfg = P.PlanningConfig.model_validate({"cohorts": ["shenzen"], "models": ["m3"],
                                           "paired_auroc": [["m1", "mx"]]})
    lines = P.Planning().check(cfg, table, ["shenzhen"])
    assert len(lines) == 3
    assert "did you mean 'shenzhen'" in lines[0] and "planning.cohorts" in lines[0]
    assert "'m3'" in lines[1] and "'mx'" in lines[2]


@pytest.mark.parametrize("section, message", [
    ({"alpha": 0}, "strictly between 0 and 1"),
    ({"auroc": [{"at_least": 1.2}]}, "at_least must lie strictly between 0 and 1"),
    ({"se_sp": [{"min_sensitivity": 0.8, "min_specificity": 0.8}]}, "exactly one of threshold"),
    ({"se_sp": [{"min_sensitivity": 0.8, "min_specificity": 0.8, "threshold": 0.5,
                 "rule": "youden"}]}, "exactly one of threshold"),
    ({"pairs": True}, "pairs"),
    # probe finding: auc_sample_size(0.8, power=1e-9) needs 19 positives, power 0.5 needs 7
    ({"power": 0.01}, "power must be at least 0.5"),
])
def test_section_errors(section, message):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        P.PlanningConfig.model_validate(section)


# ----------------------------------------------------------------------------- plan_claims
def _claims(rows):
    base = {"prompt": "p", "negatives": "all", "prevalence": "observed", "threshold": None,
            "qualification": "", "other_criterion": None, "other_estimate": np.nan}
    return pd.DataFrame([{**base, **r} for r in rows])


def _results():
    metrics = pd.DataFrame([
        {"model": "m1", "prompt": "p", "cohort": "c", "negatives": "all", "criterion": "roc_auc",
         "n_pos": 60.0, "n_neg": 140.0},
        {"model": "m1", "prompt": "p", "cohort": "d", "negatives": "all", "criterion": "roc_auc",
         "n_pos": 45.0, "n_neg": 55.0}])
    diffs = pd.DataFrame([{"model": "m1 - m2", "model_a": "m1", "model_b": "m2", "prompt": "p",
                           "cohort": "c", "negatives": "all", "criterion": "brier_score_difference",
                           "n_pos": 60.0, "n_neg": 140.0}])
    return {"discrimination": BlockResult(name="discrimination", tables={
        "metrics": metrics, "model_differences": diffs})}


def test_plan_claims_by_hand():
    z = stats.norm.isf(0.025)
    rows = [
        # the docstring case: AUROC 0.83 [0.78, 0.88], 60/140, claim AUROC >= 0.8
        {"claim_id": "L01", "claim": "m1 separates positives from controls with AUROC ≥ 0.8",
         "kind": "reliability", "change": "at E", "changed_to": "", "model": "m1", "cohort": "c",
         "criterion": "roc_auc", "estimate": 0.83, "ci_low": 0.78, "ci_high": 0.88,
         "verdict": "unresolved", "source_table": "discrimination.metrics"},
        # a lower-is-better ranking cell (Brier): the claim holds when the difference is < 0
        {"claim_id": "R01", "claim": "m1 ranks above m2 on AUROC", "kind": "ranking",
         "change": "r", "changed_to": "brier_score", "model": "m1 vs m2", "cohort": "c",
         "criterion": "brier_score", "estimate": -0.02, "ci_low": -0.05, "ci_high": 0.01,
         "verdict": "unresolved", "source_table": "discrimination.model_differences"},
        {"claim_id": "L02", "claim": "m1 ... AUROC ≥ 0.8", "kind": "reliability", "change": "C",
         "changed_to": "d", "model": "m1", "cohort": "d", "criterion": "roc_auc",
         "estimate": 0.8, "ci_low": np.nan, "ci_high": np.nan, "verdict": "unresolved",
         "source_table": "discrimination.metrics"},
        {"claim_id": "X01", "claim": "something else", "kind": "novel", "change": "at E",
         "changed_to": "", "model": "m1", "cohort": "c", "criterion": "roc_auc",
         "estimate": 0.5, "ci_low": 0.4, "ci_high": 0.6, "verdict": "unresolved",
         "source_table": "discrimination.metrics"},
        {"claim_id": "L03", "claim": "m1 ... AUROC ≥ 0.8", "kind": "reliability", "change": "C",
         "changed_to": "e", "model": "m1", "cohort": "e", "criterion": "roc_auc",
         "estimate": 0.82, "ci_low": 0.7, "ci_high": 0.9, "verdict": "unresolved",
         "source_table": "discrimination.metrics"},
        {"claim_id": "L04", "claim": "m1 ... AUROC ≥ 0.8", "kind": "reliability", "change": "at E",
         "changed_to": "", "model": "m1", "cohort": "c", "criterion": "roc_auc",
         "estimate": 0.95, "ci_low": 0.9, "ci_high": 0.99, "verdict": "holds",
         "source_table": "discrimination.metrics"},
    ]
    study = Study(auroc_at_least=0.9)
    even = P.plan_claims(_claims(rows), _results(), study, power=None)
    assert list(even.columns) == list(P.PLAN_COLUMNS)
    assert list(even["claim_id"]) == ["L01", "R01", "L02", "X01", "L03"]  # unresolved only
    r = even.iloc[0]
    # f = (0.05 / 0.03)^2: 60 -> ceil(166.67) = 167 and 140 -> ceil(388.9) = 389
    assert (r["claim_value"], r["claim_side"], r["status"], r["resolves_to"]) == (
        0.8, "greater", "unresolved", "holds")
    assert (r["additional_pos"], r["additional_neg"]) == (107, 249)
    assert r["factor"] == pytest.approx((0.05 / 0.03) ** 2)
    b = even.iloc[1]
    assert (b["claim_side"], b["resolves_to"], b["claim_value"]) == ("less", "holds", 0.0)
    f = (0.03 / 0.02) ** 2
    assert (b["additional_pos"], b["additional_neg"]) == (math.ceil(f * 60) - 60,
                                                          math.ceil(f * 140) - 140)
    assert even.iloc[2]["status"] == "no interval"
    assert even.iloc[3]["status"] == "no rule" and "'novel'" in even.iloc[3]["note"]
    assert even.iloc[4]["status"] == "counts unknown"
    # with power 0.8 the half-width must shrink by a further (z + z_0.8) / z
    pw = P.plan_claims(_claims(rows[:1]), _results(), study, power=0.8).iloc[0]
    f = (0.05 / 0.03) ** 2 * ((z + stats.norm.ppf(0.8)) / z) ** 2
    assert (pw["additional_pos"], pw["additional_neg"]) == (math.ceil(f * 60) - 60,
                                                            math.ceil(f * 140) - 140)


@pytest.mark.parametrize("power, message", [
    (0.3, "power = 0.3 is below 0.5"), (1e-9, "power = 1e-09 is below 0.5"),
    (0.0, "power must lie strictly between 0 and 1"), (1.0, "power must lie strictly between 0"),
    (True, "power must lie strictly between 0 and 1; got True"),
    ("0.8", "power must lie strictly between 0 and 1; got '0.8'"),
])
def test_plan_claims_refuses_a_power_below_even_odds(power, message):
    # probe finding: the factor ((z + z_power) / z)^2 falls to 0 near power = 0.025 and then
    # grows again, so power 1e-9 asked for more cases than 0.5 (226 -> 1011 on one claim)
    rows = [{"claim_id": "L01", "claim": "m1 AUROC ≥ 0.8", "kind": "reliability",
             "change": "at E", "changed_to": "", "model": "m1", "cohort": "c",
             "criterion": "roc_auc", "estimate": 0.83, "ci_low": 0.78, "ci_high": 0.88,
             "verdict": "unresolved", "source_table": "discrimination.metrics"}]
    with pytest.raises(P.MedauditError, match=re.escape(message)):
        P.plan_claims(_claims(rows), _results(), Study(), power=power)
    assert P.check_plan_power(0.5) == 0.5 and P.check_plan_power(None) is None


def test_an_interval_that_decides_but_is_not_trusted_gets_no_number():
    """An unresolved claim whose interval already excludes the claimed value (its verdict
    was capped: one positive, replicates without a class) is not "+0 cases would show it"."""
    rows = [{"claim_id": "L01", "claim": "m1 AUROC ≥ 0.7", "kind": "reliability",
             "change": "at E", "changed_to": "", "model": "m1", "cohort": "c",
             "criterion": "roc_auc", "estimate": 1.0, "ci_low": 1.0, "ci_high": 1.0,
             "verdict": "unresolved", "source_table": "discrimination.metrics"}]
    r = P.plan_claims(_claims(rows), _results(), Study(auroc_at_least=0.7), power=None).iloc[0]
    assert r["status"] == "interval not trusted" and "'holds'" in r["note"]
    assert math.isnan(r["additional_pos"]) and math.isnan(r["additional_neg"])
    assert r["resolves_to"] is None


def test_plan_claims_institution_and_exact_rates():
    from statsmodels.stats.proportion import proportion_confint

    rates = pd.DataFrame([{"model": "m1", "prompt": "p", "cohort": "c", "negatives": "all",
                           "criterion": "sensitivity", "n_pos": 50.0, "n_neg": 70.0}])
    results = {"x": BlockResult(name="x", tables={"rates": rates})}
    rows = [
        {"claim_id": "S01", "claim": "m1 keeps sensitivity ≥ 0.8", "kind": "operating constraint",
         "change": "C", "changed_to": "c", "model": "m1", "cohort": "c",
         "criterion": "sensitivity", "estimate": 0.9, "ci_low": 0.78, "ci_high": 0.96,
         "verdict": "unresolved", "source_table": "x.rates"},
        {"claim_id": "I01", "claim": "m1's FPR carries over", "kind": "institution", "change": "C",
         "changed_to": "c", "model": "m1", "cohort": "c", "criterion": "fpr",
         "estimate": -0.04, "ci_low": -0.09, "ci_high": 0.01, "verdict": "unresolved",
         "source_table": "x.rates"},
    ]
    out = P.plan_claims(_claims(rows), results, Study(), power=None)
    s = out.iloc[0]
    # a sensitivity scales with the positives only
    assert s["additional_neg"] == 0 and s["additional_pos"] > 0
    # exact: the smallest n' >= 50 whose Clopper-Pearson lower end at 0.9 n' exceeds 0.8
    n = next(n for n in range(50, 10_000)
             if proportion_confint(0.9 * n, n, method="beta")[0] > 0.8)
    assert s["exact_additional"] == n - 50
    i = out.iloc[1]
    assert (i["claim_value"], i["resolves_to"]) == (0.0, "does not hold")
    assert i["additional_pos"] == math.ceil((0.05 / 0.04) ** 2 * 50) - 50


def test_a_declared_pair_may_name_models_outside_models():
    from medaudit.stats import paired_auc_sample_size

    rng = np.random.default_rng(6)
    y, a = _untied(rng, 25, 35, 1.5)
    _, b = _untied(rng, 25, 35, 0.5)
    ctx = make_context({"c": (y, {"ma": a, "mb": b})}, n_resamples=20)
    res = run(P, ctx, _spec(ctx, {"models": ["ma"], "auroc": [{"at_least": 0.6}],
                                  "paired_auroc": [["mb", "ma"]]}))
    assert set(res.tables["auroc"]["model"]) == {"ma"}
    r = res.tables["paired_auroc"].iloc[0]
    want = paired_auc_sample_size(y, b, a, prevalence=25 / 60)
    assert r["model"] == "mb - ma" and (r["n_pos"], r["n_neg"]) == (want.n_pos, want.n_neg)
    assert r["estimate"] == pytest.approx(roc_auc_score(y, b) - roc_auc_score(y, a), abs=1e-12)


def test_a_subgroup_cell_is_planned_from_its_own_counts():
    """Probe finding: the cell "L02 subgroup sex = M" was planned from the whole cohort's
    counts (the "(all)" row, 95/205) instead of the subgroup's own (42/99)."""
    rows = [{"model": "m1", "prompt": "p", "cohort": "c", "negatives": "all", "criterion": "roc_auc",
             "subgroup": "sex", "group": g, "n_pos": npos, "n_neg": nneg}
            for g, npos, nneg in (("(all)", 95.0, 205.0), ("F", 53.0, 106.0), ("M", 42.0, 99.0))]
    results = {"subgroups": BlockResult(name="subgroups", tables={"metrics": pd.DataFrame(rows)})}
    claim = {"claim_id": "L02", "claim": "m1 separates positives from controls with AUROC ≥ 0.8",
             "kind": "reliability", "change": "subgroup", "changed_to": "sex = M", "model": "m1",
             "cohort": "c", "prompt": "p", "negatives": "all", "criterion": "roc_auc",
             "estimate": 0.83, "ci_low": 0.78, "ci_high": 0.88, "verdict": "unresolved",
             "source_table": "subgroups.metrics"}
    r = P.plan_claims(_claims([claim]), results, Study(auroc_at_least=0.8), power=None).iloc[0]
    assert (r["n_pos"], r["n_neg"]) == (42.0, 99.0)
    f = (0.05 / 0.03) ** 2  # as the docstring case, on the subgroup's counts (f * 99 = 275)
    assert (r["additional_pos"], r["additional_neg"]) == (math.ceil(f * 42 - 1e-9) - 42,
                                                          math.ceil(f * 99 - 1e-9) - 99)


def test_a_perfect_model_or_an_unreachable_effect_is_a_row_not_the_end_of_the_audit():
    """Probe finding: a pilot AUROC of 1, or an effect too small for the solvers, raised out
    of the planning block and stopped the audit (after every block before it had run)."""
    rng = np.random.default_rng(5)
    y = np.r_[np.ones(30), np.zeros(40)]
    perfect = np.r_[rng.uniform(0.6, 1.0, 30), rng.uniform(0.0, 0.4, 40)]
    ctx = make_context({"c": (y, {"m": perfect})}, n_resamples=20)
    res = run(P, ctx, _spec(ctx, {"auroc": [{"at_least": 0.9}]}))
    au = res.tables["auroc"].iloc[0]
    assert au["status"].startswith("not computable: the pilot AUROC is 1 (perfect separation)")
    assert np.isnan(au["n_pos"])
    # Se 29/30 = 0.96667 against a claim of 0.9666: no n up to the search's limit shows it
    near = perfect.copy()
    near[0] = 0.45
    ctx = make_context({"c": (y, {"m": near})}, n_resamples=20)
    res = run(P, ctx, _spec(ctx, {"se_sp": [{"threshold": 0.5, "min_sensitivity": 0.9666,
                                             "min_specificity": 0.5}]}))
    ss = res.tables["se_sp"].iloc[0]
    assert ss["status"] == "not computable: no n up to n_max=1000000 reaches power 0.8"
    assert np.isnan(ss["n_pos"])
