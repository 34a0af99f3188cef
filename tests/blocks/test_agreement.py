"""The agreement block: tables, provenance columns, determinism, errors."""

from __future__ import annotations

import pandas as pd
import pytest

from medaudit.agreement.judgments import validate_judgments
from medaudit.agreement.simulate import simulate_paper002
from medaudit.blocks import agreement
from medaudit.blocks._base import AuditContext
from medaudit.exceptions import SchemaError
from medaudit.io.spec import AuditSpec

FAST = {"repeats": 2, "budgets": [0, 25, 50], "glmm": False, "n_resamples": 500,
        "estimators": ["naive", "additive", "hdcal", "has", "has_no_offset", "target_only",
                       "beta_binomial"],
        "candidates": ["naive", "additive", "hdcal", "target_only", "beta_binomial"]}


def _ctx(**agreement) -> AuditContext:
    spec = AuditSpec.model_validate({"name": "t", "judgments": {"simulate": "paper002"},
                                     "blocks": ["agreement"], "agreement": {**FAST, **agreement}})
    ev, _ = validate_judgments(simulate_paper002(rng=spec.seed, scale=0.05), source="sim")
    return AuditContext(scores=pd.DataFrame(), spec=spec, judgments=ev)


@pytest.fixture(scope="module")
def result():
    return agreement.run(_ctx())


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
    again = agreement.run(_ctx())
    for k, v in result.tables.items():
        pd.testing.assert_frame_equal(v, again.tables[k])


def test_errors():
    with pytest.raises(SchemaError, match="protocol"):
        agreement.run(_ctx(protocol="chat"))
    with pytest.raises(SchemaError, match="llava"):
        agreement.run(_ctx(models=["llava-med"]))
    ctx = _ctx()
    with pytest.raises(SchemaError, match="judgment table"):
        agreement.run(AuditContext(scores=pd.DataFrame(), spec=ctx.spec))
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
