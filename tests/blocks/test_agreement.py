"""The agreement block: tables, provenance columns, determinism, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from medaudit.agreement.judgments import validate_judgments
from medaudit.audit.spec import AuditSpec
from medaudit.blocks import agreement
from medaudit.exceptions import SchemaError
from medaudit.simulate import simulate_paper002
from tests._support import SpecContext, context, run

FAST = {"repeats": 2, "budgets": [0, 25, 50], "glmm": False, "n_resamples": 500,
        "estimators": ["naive", "additive", "hdcal", "has", "has_no_offset", "target_only",
                       "beta_binomial"],
        "candidates": ["naive", "additive", "hdcal", "target_only", "beta_binomial"]}


def _ctx(**agreement) -> SpecContext:
    spec = AuditSpec.model_validate({"name": "t", "judgments": {"simulate": "paper002"},
                                     "blocks": ["agreement"], "agreement": {**FAST, **agreement}})
    ev, _ = validate_judgments(simulate_paper002(rng=spec.seed, scale=0.05), source="sim")
    return context(scores=pd.DataFrame(), spec=spec, judgments=ev)


@pytest.fixture(scope="module")
def result():
    return run(agreement, _ctx())


def test_tables_and_counts(result):
    t = result.tables
    fixed = t["fixed_policy"]
    # 2 models x 3 institutions x 3 budgets x 2 repeats x 7 estimators x 2 criteria
    assert len(fixed) == 2 * 3 * 3 * 2 * 7 * 2
    assert set(fixed["criterion"]) == {"brier_score", "ece[n_bins=10]"}
    assert fixed["design"].str.match(r"loio\[budget=\d+,repeat=\d\]").all()
    assert set(fixed["prompt"]) == {"narrative"}
    assert fixed["software"].str.len().gt(0).all()
    assert len(t["selection"]) == 2 * 3 * 2 * 2  # decisions: models x institutions x budgets>0 x reps
    summ = t["selection_summary"].set_index("policy")
    assert summ.loc["oracle[set_b,per_cell]", "estimate"] <= summ["estimate"].min() + 1e-15
    sel = summ.loc["selector", "estimate"]
    orc = summ.loc["oracle[set_b,per_cell]", "estimate"]
    assert summ.loc["selector", "relative_excess"] == pytest.approx((sel - orc) / orc)
    assert t["selection_counts"]["estimate"].sum() == len(t["selection"])
    gap = t["family_gap"]
    overall = gap[gap["cohort"] == "all"].iloc[0]
    per = gap[gap["cohort"] != "all"]["estimate"]
    assert overall["estimate"] == pytest.approx(per.mean())
    assert (overall["ci_low"], overall["ci_high"]) == (pytest.approx(per.min()), pytest.approx(per.max()))
    cov = t["coverage"]
    assert set(cov["analysis"]) == {"primary", "all_evaluable"}
    assert len(t["settings"]) == 7


def test_summary_is_the_mean_over_repeats(result):
    fixed, summ = result.tables["fixed_policy"], result.tables["fixed_policy_summary"]
    keys = ["model", "cohort", "criterion", "budget", "estimator"]
    by_hand = fixed.groupby(keys)["estimate"].mean()
    got = summ.set_index(keys)["estimate"]
    pd.testing.assert_series_equal(got.sort_index(), by_hand.sort_index(), check_names=False)


def test_deterministic(result):
    again = run(agreement, _ctx())
    for k, v in result.tables.items():
        pd.testing.assert_frame_equal(v, again.tables[k])


def test_errors():
    with pytest.raises(SchemaError, match="protocol"):
        run(agreement, _ctx(protocol="chat"))
    with pytest.raises(SchemaError, match="llava"):
        run(agreement, _ctx(models=["llava-med"]))
    ctx = _ctx()
    with pytest.raises(SchemaError, match="judgment table"):
        run(agreement, context(scores=pd.DataFrame(), spec=ctx.spec))
    with pytest.raises(ValueError, match="naive"):
        AuditSpec.model_validate({"name": "t", "judgments": {"simulate": "paper002"},
                                  "agreement": {"candidates": ["hdcal"]}})


def test_budget_figure_draws_the_table(result):
    from medaudit.report._figures_estimators import plot_estimator_budget

    summ = result.tables["fixed_policy_summary"]
    fig = plot_estimator_budget(summ)
    assert len([a for a in fig.axes if a.get_visible()]) == 6  # deployments
    fig1 = plot_estimator_budget(summ, model="medgemma", cohort="openi", criterion="brier_score")
    ax = fig1.axes[0]
    line = next(ln for ln in ax.get_lines() if ln.get_label() == "beta_binomial")
    want = summ[(summ["model"] == "medgemma") & (summ["cohort"] == "openi")
                & (summ["criterion"] == "brier_score") & (summ["estimator"] == "beta_binomial")
                ].sort_values("budget")
    assert list(line.get_xdata()) == want["budget"].tolist()
    assert list(line.get_ydata()) == want["estimate"].tolist()
    with pytest.raises(ValueError, match="one deployment"):
        plot_estimator_budget(summ, ax=ax)


@pytest.mark.parametrize("policy", ["exclude", "negative", "positive"])
def test_uncertain_policy_switch_is_wired_through_the_audit(tmp_path, policy):
    """judgments.uncertain reaches the filters and both blocks' denominators (M2.1, M2.12)."""
    from medaudit.audit.run import audit
    from tests.blocks.test_error_structure import raw_table

    raw = raw_table(4, 20)
    unc = (raw["finding"] == "edema") & (raw["study_id"].str.endswith(("1", "5")))
    raw.loc[unc, "reference"] = -1
    raw.to_csv(tmp_path / "j.csv", index=False)
    spec = AuditSpec.model_validate({
        "name": "u", "judgments": {"path": "j.csv", "uncertain": policy},
        "blocks": ["error_structure", "agreement"],
        "error_structure": {"n_resamples": 20, "family_models": ["m1", "m2"]},
        "agreement": {**FAST, "estimators": ["naive", "hdcal", "beta_binomial"],
                      "candidates": ["naive", "hdcal", "beta_binomial"], "budgets": [0, 25],
                      "repeats": 1, "models": ["m1", "m2"]}})
    out = audit(spec, tmp_path)
    filt = out.provenance["inputs"]["judgments"]["filters"]
    n_unc = int(unc.sum())
    assert filt["uncertain"] == policy
    step = next(s for s in filt["steps"] if s["name"] == "uncertain")
    assert (step["rows_removed"], step["rows_mapped"]) == \
        ((n_unc, 0) if policy == "exclude" else (0, n_unc))
    # edema denominators counted straight from the raw table under the policy
    nar = raw[(raw["protocol"] == "narrative") & (raw["model"] == "m1") & (raw["finding"] == "edema")]
    ref = nar["reference"].replace(-1, {"exclude": np.nan, "negative": 0, "positive": 1}[policy])
    rates = out.results["error_structure"].tables["rates"]
    got = rates[(rates["model"] == "m1") & (rates["negatives"] == "edema")].groupby("criterion")["n"].sum()
    assert (got["fpr"], got["fnr"]) == (int((ref == 0).sum()), int((ref == 1).sum()))
    fixed = out.results["agreement"].tables["fixed_policy"]
    n_test0 = fixed[(fixed["budget"] == 0) & (fixed["estimator"] == "naive")
                    & (fixed["criterion"] == "brier_score")].groupby("cohort")["n"].sum()
    nar_all = raw[(raw["protocol"] == "narrative") & raw["model"].isin(["m1", "m2"])]
    kept = nar_all if policy != "exclude" else nar_all[nar_all["reference"] != -1]
    assert n_test0.to_dict() == kept.groupby("institution").size().to_dict()


def test_comparisons_count_settings_by_hand():
    # two settings x two criteria; values chosen so each count is evident
    rows = []
    vals = {("brier_score", 25): {"naive": .20, "additive": .18, "hdcal": .17, "beta_binomial": .16},
            ("brier_score", 50): {"naive": .20, "additive": .15, "hdcal": .21, "beta_binomial": .14},
            ("ece[n_bins=10]", 25): {"naive": .10, "additive": .05, "hdcal": .05, "beta_binomial": .02},
            ("ece[n_bins=10]", 50): {"naive": .10, "additive": .06, "hdcal": .04, "beta_binomial": .05}}
    for (crit, b), v in vals.items():
        for est, x in v.items():
            rows.append({"model": "m", "prompt": "narrative", "cohort": "A", "criterion": crit,
                         "budget": b, "estimator": est, "estimate": x})
    rows.append({**rows[0], "budget": 0, "estimate": 9.0})  # budget 0 is not a setting
    c = agreement.comparisons(pd.DataFrame(rows)).set_index(["criterion", "comparison"])
    # Brier: hdcal < additive in 1/2 (0.17 < 0.18; 0.21 > 0.15); bb < hdcal in 2/2;
    # hdcal worse than naive in 1/2 (0.21 > 0.20)
    assert c.loc[("brier_score", "hdcal < additive"), ["n_holds", "n_settings"]].tolist() == [1, 2]
    assert c.loc[("brier_score", "beta_binomial < hdcal"), "n_holds"] == 2
    assert c.loc[("brier_score", "hdcal > naive"), "n_holds"] == 1
    # ECE: an exact tie (0.05 vs 0.05) is not "lower"
    assert c.loc[("ece[n_bins=10]", "hdcal < additive"), "n_holds"] == 1
    assert c.loc[("ece[n_bins=10]", "beta_binomial < hdcal"), "estimate"] == 0.5
    assert c.loc[("ece[n_bins=10]", "additive > naive"), "n_holds"] == 0


def test_block_reports_comparisons(result):
    c = result.tables["comparisons"]
    summ = result.tables["fixed_policy_summary"]
    s = summ[(summ["budget"] > 0) & (summ["criterion"] == "brier_score")]
    w = s.pivot_table(index=["model", "cohort", "budget"], columns="estimator", values="estimate")
    row = c[(c["criterion"] == "brier_score") & (c["comparison"] == "hdcal < additive")].iloc[0]
    assert row["n_settings"] == len(w) == 2 * 3 * 2
    assert row["n_holds"] == int((w["hdcal"] < w["additive"]).sum())


def test_uncertain_sensitivity_reruns_each_policy():
    raw = simulate_paper002(rng=11, scale=0.04, protocols=("narrative",))
    variants = {p: validate_judgments(raw, uncertain=p, source="sim")[0]
                for p in ("exclude", "negative", "positive")}
    spec = AuditSpec.model_validate({"name": "t", "judgments": {"simulate": "paper002"},
                                     "agreement": {**FAST, "budgets": [0, 25], "repeats": 1}})
    out = agreement.uncertain_sensitivity(variants, spec.agreement)
    assert set(out["uncertain"]) == {"exclude", "negative", "positive"}
    n = out.groupby("uncertain")["n_judgments"].first()
    # mapping keeps the uncertain rows; excluding drops them (MIMIC has uncertain labels)
    assert n["negative"] == n["positive"] > n["exclude"]
    for p, t in variants.items():  # each policy's counts = the block run on that table
        ctx = context(scores=pd.DataFrame(), judgments=t, spec=spec.model_copy(update={
            "agreement": spec.agreement.model_copy(update={
                "estimators": ["naive", "additive", "hdcal", "beta_binomial"],
                "selection": False})}))
        want = run(agreement, ctx).tables["comparisons"]
        got = out[out["uncertain"] == p].drop(columns=["uncertain", "n_judgments"])
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))


def test_block_uncertain_sensitivity_table_and_missing_variants():
    raw = simulate_paper002(rng=5, scale=0.04, protocols=("narrative",))
    variants = {p: validate_judgments(raw, uncertain=p, source="sim")[0]
                for p in ("exclude", "negative", "positive")}
    ctx = _ctx(uncertain_sensitivity=True, budgets=[0, 25], repeats=1)
    ctx = context(scores=pd.DataFrame(), spec=ctx.spec, judgments=variants["exclude"])
    with pytest.raises(SchemaError, match="judgment_variants"):
        run(agreement, ctx)
    import dataclasses

    ctx = dataclasses.replace(ctx, judgment_variants=variants)
    t = run(agreement, ctx).tables["uncertain_sensitivity"]
    assert t.equals(agreement.uncertain_sensitivity(variants, ctx.spec.agreement))
    assert set(t["uncertain"]) == {"exclude", "negative", "positive"}


def test_simulated_example_spec_small():
    """examples/paper002_simulated.yaml, shrunk: degenerate llava-med flagged, kept out of the
    BH families and the estimators."""
    from pathlib import Path

    from medaudit.audit.run import audit
    from medaudit.audit.spec import load_spec

    spec, base = load_spec(Path(__file__).resolve().parents[2] / "examples" / "paper002_simulated.yaml")
    spec = spec.model_copy(update={
        "judgments": spec.judgments.model_copy(update={"simulate_scale": 0.03}),
        "error_structure": spec.error_structure.model_copy(update={"n_resamples": 20}),
        "agreement": spec.agreement.model_copy(update={**FAST, "models": ["medgemma", "chexagent"],
                                                       "budgets": [0, 25], "repeats": 1})})
    out = audit(spec, base)
    es_t = out.results["error_structure"].tables
    a = es_t["assertion"]
    summ = a[(a["model"] == "llava-med") & (a["negatives"] == "all")].set_index("prompt")
    assert summ["degenerate"].all()
    assert set(summ.loc["narrative", "kind"]) == {"never_present"}
    assert set(summ.loc["binary", "kind"]) == {"always_present"}
    con = es_t["contrasts"]
    assert set(con.loc[con["model"] == "llava-med", "family"]) == {"descriptive"}
    assert set(out.results["agreement"].tables["fixed_policy"]["model"]) == {"medgemma", "chexagent"}
    assert out.provenance["inputs"]["judgments"]["degenerate_model"] is True


def test_uncertain_sensitivity_runs_from_the_spec_through_audit():
    """`agreement.uncertain_sensitivity: true` loads the three policies in build_context."""
    from medaudit.audit.run import audit
    from medaudit.audit.spec import AuditSpec

    spec = AuditSpec.model_validate({
        "name": "u", "seed": 5, "blocks": ["agreement"],
        "judgments": {"simulate": "paper002", "simulate_scale": 0.04},
        "agreement": {**FAST, "uncertain_sensitivity": True, "budgets": [0, 25], "repeats": 1,
                      "protocol": "narrative"}})
    out = audit(spec, ".")
    t = out.results["agreement"].tables["uncertain_sensitivity"]
    assert set(t["uncertain"]) == {"exclude", "negative", "positive"}
    prov = out.provenance["inputs"]["judgments"]["uncertain_variants"]
    assert prov  # the three policies' filter counts reach results.json


def test_a_model_always_right_leaves_the_relative_excess_undefined_not_the_run():
    """Probe finding: with every prediction equal to the reference, every Brier is 0 and the
    block aborted at the end ("the oracle Brier must be positive; got 0.0")."""
    spec = AuditSpec.model_validate({"name": "t", "judgments": {"simulate": "paper002"},
                                     "blocks": ["agreement"], "agreement": FAST})
    sim = simulate_paper002(rng=spec.seed, scale=0.05)
    known = sim["reference"].notna()
    sim.loc[known, "prediction"] = np.where(sim.loc[known, "reference"] == 1, "present", "absent")
    ev, _ = validate_judgments(sim, source="sim")
    res = run(agreement, context(scores=pd.DataFrame(), spec=spec, judgments=ev))
    summ = res.tables["selection_summary"].set_index("policy")
    assert (summ["estimate"] == 0.0).all()
    assert np.isnan(summ.loc["selector", "relative_excess"])
    assert summ.loc["selector", "qualification"] == ("relative excess undefined: the oracle's "
                                                     "Brier is 0")


@pytest.mark.parametrize("section, message", [
    ({"budgets": [0]}, r"agreement.selection needs a budget above 0 \(budgets: \[0\]\); add one, "
                       r"or set `selection: false`"),
    ({"gap_estimators": ["hdcal", "hdcal"]}, r"agreement.gap_estimators repeat a name"),
])
def test_sections_that_could_only_give_nan_or_zero_are_refused(section, message):
    # probe findings: budgets [0] with selection ran to a nan oracle Brier; a gap of hdcal
    # with itself was reported as 0 [0, 0]
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        AuditSpec.model_validate({"name": "t", "judgments": {"simulate": "paper002"},
                                  "blocks": ["agreement"], "agreement": {**FAST, **section}})
    AuditSpec.model_validate({"name": "t", "judgments": {"simulate": "paper002"},
                              "blocks": ["agreement"],
                              "agreement": {**FAST, "budgets": [0], "selection": False}})
