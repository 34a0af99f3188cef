"""The agreement block's M2.12 robustness tables, each analysis against an independent route.

Every changed design is rebuilt outside the robustness code -- the judgment table filtered
or deduplicated with pandas, then the block's primary path run on it (or on the other
protocol) -- and its within-family counts must equal the ``robustness`` rows; HD-Cal at
C = 1 must equal the primary HD-Cal; the penalty oracle is recomputed from the per-C
summaries; the uncertain-label rows equal ``uncertain_sensitivity``.  The GLMM is off.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from medaudit.agreement.judgments import validate_judgments
from medaudit.audit.spec import AuditSpec
from medaudit.blocks import agreement
from medaudit.exceptions import SchemaError
from medaudit.simulate import simulate_paper002
from tests._support import context, run

ESTS = ["naive", "additive", "hdcal", "hdcal_weighted", "target_only", "beta_binomial"]
BASE = {"repeats": 1, "budgets": [0, 25], "glmm": False, "selection": False, "n_resamples": 50,
        "estimators": ESTS, "models": ["chexagent", "medgemma"]}
ROB = {"analyses": ["uncertain_labels", "one_study_per_patient", "leave_one_finding_out",
                    "subsample", "study_disjoint", "hdcal_penalty_oracle", "binary_matched"],
       "control_draws": 1, "subsample_draws": 1, "penalty_grid": [0.1, 1.0, 10.0]}
KEY = ["criterion", "comparison", "cohort"]


@pytest.fixture(scope="module")
def tables():
    raw = simulate_paper002(rng=7, scale=0.03)
    return {p: validate_judgments(raw, uncertain=p, source="sim")[0]
            for p in ("exclude", "negative", "positive")}


def _spec(**agreement_kw) -> AuditSpec:
    return AuditSpec.model_validate({"name": "r", "judgments": {"simulate": "paper002"},
                                     "blocks": ["agreement"],
                                     "agreement": {**BASE, **agreement_kw}})


def _run(judgments: pd.DataFrame, variants=None, **agreement_kw):
    ctx = context(scores=pd.DataFrame(), spec=_spec(**agreement_kw), judgments=judgments)
    if variants is not None:
        ctx = dataclasses.replace(ctx, judgment_variants=variants)
    return run(agreement, ctx)


@pytest.fixture(scope="module")
def result(tables):
    return _run(tables["exclude"], variants=tables, robustness=ROB)


def _rows(result, analysis: str, parameter: str) -> pd.DataFrame:
    rob = result.tables["robustness"]
    g = rob[(rob["analysis"] == analysis) & (rob["parameter"] == parameter)]
    assert len(g), (analysis, parameter)
    return g


def _counts(rows: pd.DataFrame) -> pd.DataFrame:
    c = rows[rows["n_holds"].notna()] if "n_holds" in rows else rows
    return (c.set_index(["criterion", "comparison"])[["n_holds", "n_settings"]]
            .astype(int).sort_index())


def _primary_counts(res) -> pd.DataFrame:
    return _counts(res.tables["comparisons"])


def _same_gap(rows: pd.DataFrame, res) -> None:
    """The Brier family gap per institution of ``rows`` equals the ``family_gap`` of ``res``."""
    g = rows[(rows["criterion"] == "brier_score_difference") & (rows["cohort"] != "all")]
    fg = res.tables["family_gap"]
    fg = fg[fg["cohort"] != "all"]
    pd.testing.assert_series_equal(g.set_index("cohort")["estimate"].sort_index(),
                                   fg.set_index("cohort")["estimate"].sort_index(),
                                   check_names=False, rtol=1e-12)


def test_tables_columns_and_what_changed(result):
    rob, summ = result.tables["robustness"], result.tables["robustness_summary"]
    for col in ("model", "prompt", "cohort", "criterion", "design", "seed", "analysis", "parameter",
                "changed", "change_seed", "n_judgments", "n_studies", "comparison", "estimate"):
        assert col in rob.columns
    assert list(rob["analysis"].drop_duplicates()) == ["primary", *ROB["analyses"]]
    assert rob["changed"].str.len().gt(0).all()
    assert set(rob.loc[rob["analysis"] == "study_disjoint", "design"]) == {"loio[budget>0,split=study]"}
    gap = rob[rob["criterion"] == "brier_score_difference"]
    for _, g in gap.groupby(["analysis", "parameter"]):  # overall = mean of institutions
        inst = g[g["cohort"] != "all"]["estimate"]
        assert g[g["cohort"] == "all"]["estimate"].iloc[0] == pytest.approx(inst.mean(), rel=1e-12)
        assert len(inst) == 3
    assert {"analysis", "parameter", "changed", "estimator", "estimate"} <= set(summ.columns)


def test_primary_rows_are_the_block_comparisons_and_family_gap(result):
    prim = _rows(result, "primary", "")
    pd.testing.assert_frame_equal(_counts(prim), _primary_counts(result))
    fg = result.tables["family_gap"].set_index("cohort")["estimate"]
    g = prim[prim["criterion"] == "brier_score_difference"].set_index("cohort")["estimate"]
    pd.testing.assert_series_equal(g.sort_index(), fg.sort_index(), check_names=False, rtol=1e-12)


def test_penalty_grid_at_C_1_is_the_primary_hdcal(result):
    at1 = _rows(result, "hdcal_penalty_oracle", "C=1")
    prim = _rows(result, "primary", "")
    cols = ["estimate", "n_holds", "n_settings"]
    pd.testing.assert_frame_equal(at1.set_index(KEY)[cols].sort_index(),
                                  prim.set_index(KEY)[cols].sort_index(), rtol=1e-12)
    s = result.tables["robustness_summary"]
    pen = s[s["analysis"] == "hdcal_penalty_oracle"].set_index(
        ["model", "cohort", "criterion", "budget", "estimator"])["estimate"]
    main = result.tables["fixed_policy_summary"].set_index(
        ["model", "cohort", "criterion", "budget", "estimator"])["estimate"]
    for (m, c, crit, b, e), v in main.items():
        if e == "hdcal":
            assert pen.loc[(m, c, crit, b, "hdcal[C=1]")] == v


def test_penalty_oracle_recomputed_from_the_grid(result):
    s = result.tables["robustness_summary"]
    pen = s[s["analysis"] == "hdcal_penalty_oracle"]
    grid = pen[pen["estimator"].str.startswith("hdcal[C=") & (pen["estimator"] != "hdcal[C=oracle]")]
    keys = ["model", "cohort", "criterion", "budget"]
    best = grid.groupby(keys)["estimate"].min()
    orc = pen[pen["estimator"] == "hdcal[C=oracle]"].set_index(keys)
    pd.testing.assert_series_equal(orc["estimate"].sort_index(), best.sort_index(), check_names=False)
    for k, row in orc.iterrows():  # the chosen C is the label whose mean is that minimum
        assert grid.set_index([*keys, "estimator"]).loc[(*k, row["chosen"]), "estimate"] == row["estimate"]
    # Beta-Binomial below the oracle HD-Cal, counted by hand over the non-zero budgets
    bb = pen[pen["estimator"] == "beta_binomial"].set_index(keys)["estimate"]
    for crit in ("brier_score", "ece[n_bins=10]"):
        o = orc["estimate"].xs(crit, level="criterion")
        o = o[o.index.get_level_values("budget") > 0]
        b = bb.xs(crit, level="criterion").loc[o.index]
        row = _rows(result, "hdcal_penalty_oracle", "C=oracle")
        row = row[(row["criterion"] == crit) & (row["comparison"] == "beta_binomial < hdcal")].iloc[0]
        assert (row["n_holds"], row["n_settings"]) == (int((b < o).sum()), len(o))


def test_leave_one_finding_out_equals_the_block_on_the_filtered_table(result, tables):
    t = tables["exclude"]
    f = "edema"
    alone = _run(t[t["finding"] != f].reset_index(drop=True))
    pd.testing.assert_frame_equal(_counts(_rows(result, "leave_one_finding_out", f"finding={f}")),
                                  _primary_counts(alone))
    _same_gap(_rows(result, "leave_one_finding_out", f"finding={f}"), alone)
    assert _rows(result, "leave_one_finding_out", f"finding={f}")["n_judgments"].iloc[0] == \
        int(((t["finding"] != f) & (t["protocol"] == "narrative")).sum())


def test_one_study_per_patient_first_equals_a_pandas_deduplication(result, tables):
    t = tables["exclude"]
    nar = t[t["protocol"] == "narrative"]
    mimic = nar[nar["institution"] == "mimic"]
    keep = mimic.groupby("patient_id")["study_id"].min()  # the first study by id
    kept = set(keep.tolist()) | set(nar.loc[nar["institution"] != "mimic", "study_id"])
    dedup = t[t["study_id"].isin(kept)].reset_index(drop=True)
    alone = _run(dedup)
    rows = _rows(result, "one_study_per_patient", "institution=mimic,rule=first")
    pd.testing.assert_frame_equal(_counts(rows), _primary_counts(alone))
    _same_gap(rows, alone)
    assert rows["n_studies"].iloc[0] == dedup[dedup["protocol"] == "narrative"]["study_id"].nunique()
    ctrl = _rows(result, "one_study_per_patient",
                 "institution=mimic,rule=size_matched_control,draw=0")
    assert ctrl["n_studies"].iloc[0] == rows["n_studies"].iloc[0]  # size-matched
    assert ctrl["change_seed"].iloc[0] == 42


def test_binary_matched_equals_the_block_on_binary_verdicts(result, tables):
    alone = _run(tables["exclude"], protocol="binary")
    rows = _rows(result, "binary_matched", "protocol=binary")
    pd.testing.assert_frame_equal(_counts(rows), _primary_counts(alone))
    _same_gap(rows, alone)
    assert set(rows["prompt"]) == {"binary"}


def test_study_disjoint_changes_only_the_shots(result):
    s = result.tables["robustness_summary"]
    keys = ["model", "cohort", "criterion", "budget", "estimator"]
    sd = s[s["analysis"] == "study_disjoint"].set_index(keys)["estimate"]
    main = result.tables["fixed_policy_summary"].set_index(keys)["estimate"]
    b0 = main[main.index.get_level_values("budget") == 0]
    pd.testing.assert_series_equal(sd.loc[b0.index], b0)  # no shot: the same folds
    b25 = main[main.index.get_level_values("budget") == 25]
    assert (sd.loc[b25.index] != b25).any()


def test_uncertain_rows_equal_uncertain_sensitivity(result, tables):
    ref = agreement.uncertain_sensitivity(tables, _spec().agreement, estimators=tuple(ESTS))
    for policy, g in ref.groupby("uncertain"):
        rows = _rows(result, "uncertain_labels", f"uncertain={policy}")
        pd.testing.assert_frame_equal(_counts(rows), _counts(g))


def test_deterministic_and_selectable_by_list(tables, result):
    again = _run(tables["exclude"], variants=tables, robustness=ROB)
    for name in ("robustness", "robustness_summary"):
        pd.testing.assert_frame_equal(result.tables[name], again.tables[name])
    short = _run(tables["exclude"], robustness=["study_disjoint"])
    pd.testing.assert_frame_equal(
        _counts(_rows(short, "study_disjoint", "split=study")),
        _counts(_rows(result, "study_disjoint", "split=study")))
    assert "robustness" not in _run(tables["exclude"]).tables


def test_provenance_records_the_analyses():
    from medaudit.blocks import BLOCKS

    cfg = _spec(robustness=["subsample"], logistic_C={"hdcal": 2.0}).agreement
    prov = BLOCKS["agreement"].provenance(None, cfg)
    assert prov["robustness"]["analyses"] == ["subsample"] and prov["robustness"]["seed"] == 42
    assert prov["logistic_C"] == {"hdcal": 2.0}
    assert "robustness" not in BLOCKS["agreement"].provenance(None, _spec().agreement)


def test_logistic_C_reaches_the_primary_fits(tables, result):
    res = _run(tables["exclude"], logistic_C={"hdcal": 10.0})
    fixed = res.tables["fixed_policy"]
    assert fixed.loc[fixed["estimator"] == "hdcal", "software"].str.contains("C=10,").all()
    assert fixed.loc[fixed["estimator"] == "additive", "software"].str.contains("C=1,").all()
    keys = ["model", "cohort", "criterion", "budget"]
    got = res.tables["fixed_policy_summary"].query("estimator == 'hdcal'").set_index(keys)["estimate"]
    s = result.tables["robustness_summary"]
    want = s[(s["analysis"] == "hdcal_penalty_oracle") & (s["estimator"] == "hdcal[C=10]")]
    pd.testing.assert_series_equal(got.sort_index(), want.set_index(keys)["estimate"].sort_index(),
                                   check_names=False)


def test_errors_name_the_analysis(tables):
    with pytest.raises(SchemaError, match="judgment_variants"):
        _run(tables["exclude"], robustness=["uncertain_labels"])
    from medaudit.agreement.robustness import Variant, run_variants

    t = tables["exclude"]
    t = t[(t["protocol"] == "narrative") & t["study_id"].isin(
        t.groupby("institution")["study_id"].agg(lambda s: sorted(set(s))[:3]).explode())]
    v = Variant(analysis="subsample", parameter="fraction=0.1", changed="tiny", table=t,
                protocol="narrative", estimators=("naive",))
    with pytest.raises(SchemaError, match=r"robustness analysis 'subsample' \[fraction=0.1\]: "
                                          r"label budget 25 exceeds"):
        run_variants([v], budgets=[0, 25], repeats=1, first_seed=42, n_bins=10)


def test_uncertain_labels_load_their_variants_through_the_audit(tmp_path):
    """`robustness: [uncertain_labels]` asks build_context for the three policies (wants)."""
    from medaudit.audit.run import audit

    spec = AuditSpec.model_validate({
        "name": "u", "seed": 5, "blocks": ["agreement"],
        "judgments": {"simulate": "paper002", "simulate_scale": 0.03},
        "agreement": {**BASE, "robustness": ["uncertain_labels"]}})
    out = audit(spec, tmp_path)
    rob = out.results["agreement"].tables["robustness"]
    assert set(rob.loc[rob["analysis"] == "uncertain_labels", "parameter"]) == {
        "uncertain=exclude", "uncertain=negative", "uncertain=positive"}
    assert out.provenance["inputs"]["judgments"]["uncertain_variants"]
