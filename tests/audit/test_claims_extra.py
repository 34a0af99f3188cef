"""Paper 001/002 claims read verdicts from hand-built block tables (nothing recomputed).

Every expected verdict, sign and interval below is derived by hand from the table rows
written in the test (the block's column semantics: ``error_structure.contrasts``
estimate = rate(cohort_a) - rate(cohort_b); ``agreement.family_gap`` estimate =
Brier(first) - Brier(second) of its ``"first - second"`` estimator; the
``label_uncertainty.rank_changes`` order columns are the block's own, ties included).
"""

import math

import pandas as pd
import pytest

from medaudit.audit.claims import build_claims
from medaudit.audit.spec import AuditSpec
from medaudit.blocks import BLOCKS
from medaudit.blocks.block import BlockResult
from medaudit.blocks.rows import spec_row


def _claims(block):
    """The claims of a registered block read from ``results`` (its own tables only)."""
    return lambda results, spec: BLOCKS[block].claims(results, None, None)


label_claims = _claims("label_uncertainty")
institution_claims = _claims("error_structure")
agreement_claims = _claims("agreement")


def _res(block, **tables):
    return {block: BlockResult(name=block, tables={k: pd.DataFrame(v) for k, v in tables.items()})}


def _rc(a, b, oa, ob, sa, sb, oo, os_):
    return {"model_a": a, "model_b": b, "prompt": "none", "cohort": "c", "negatives": "all",
            "criterion": "soft_roc_auc", "ordinary_criterion": "roc_auc", "ordinary_a": oa,
            "ordinary_b": ob, "soft_a": sa, "soft_b": sb, "order_ordinary": oo, "order_soft": os_}


def test_label_claim_orients_by_hard_order_and_reads_soft_order():
    rc = [_rc("A", "B", 0.70, 0.75, 0.72, 0.69, "b_higher", "a_higher"),
          _rc("A", "C", 0.70, 0.70, 0.72, 0.69, "tie", "a_higher"),  # hard tie: no claim
          _rc("B", "C", 0.75, 0.70, 0.71, 0.71, "a_higher", "tie"),
          _rc("A", "D", 0.80, 0.70, 0.75, 0.74, "a_higher", "a_higher")]
    st = [{"prompt": "none", "cohort": "c", "criterion": "soft_roc_auc",
           "ordinary_criterion": "roc_auc", "pvalue": 0.01, "significant": True, "k": 30, "n": 40,
           "stability_soft": 0.9, "stability_ordinary": 0.7, "qualification": ""},
          {"prompt": "none", "cohort": "c", "criterion": "soft_average_precision",
           "ordinary_criterion": "average_precision", "pvalue": 0.3, "significant": False,
           "k": 22, "n": 40, "stability_soft": 0.8, "stability_ordinary": 0.78,
           "qualification": ""}]
    rows = pd.DataFrame(label_claims(_res("label_uncertainty", rank_changes=rc, stability_test=st),
                                     None))
    rank = rows[rows["kind"] == "ranking"]
    assert list(dict.fromkeys(rank["claim"])) == [
        "B ranks above A on roc_auc (hard labels)", "B ranks above C on roc_auc (hard labels)",
        "A ranks above D on roc_auc (hard labels)"]
    assert (rank["source_table"] == "label_uncertainty.rank_changes").all()
    y = rank[rank["change"] == "reference"]
    # B - A under soft labels = 0.69 - 0.72 < 0: the hard-label order reverses
    assert y["verdict"].tolist() == ["reversed", "unresolved", "holds"]
    assert math.isclose(y["estimate"].iloc[0], -0.03) and math.isclose(y["estimate"].iloc[2], 0.01)
    assert (y["criterion"] == "soft_roc_auc").all()
    at_e = rank[rank["change"] == "at E"]
    assert math.isclose(at_e["estimate"].iloc[0], 0.05) and (at_e["verdict"] == "holds").all()
    stab = rows[rows["kind"] == "stability"]
    assert stab["verdict"].tolist() == ["holds", "unresolved"]
    assert math.isclose(stab["estimate"].iloc[0], 0.2)
    assert (stab["source_table"] == "label_uncertainty.stability_test").all()


def test_label_claim_follows_the_block_tie_not_last_bit_noise():
    # T: mathematically equal soft AUROCs whose float sums differ in the last bit are a tie in
    # the block (order_soft "tie"); the claim must not call that a reversal
    rc = [_rc("A", "B", 0.8, 0.7, 0.75, 0.75 + 1e-15, "a_higher", "tie"),
          _rc("A", "C", 0.7, 0.7 + 1e-15, 0.8, 0.6, "tie", "a_higher")]  # hard tie: no claim
    rows = pd.DataFrame(label_claims(_res("label_uncertainty", rank_changes=rc), None))
    assert rows["claim"].unique().tolist() == ["A ranks above B on roc_auc (hard labels)"]
    assert rows.loc[rows["change"] == "reference", "verdict"].tolist() == ["unresolved"]


def _con(a, b, est, lo, hi, p, p_adj, sig, family="bh[fpr]"):
    return {"model": "m", "prompt": "narrative", "criterion": "fpr_difference",
            "negatives": "edema", "cohort_a": a, "cohort_b": b, "family": family,
            "qualification": "", "estimate": est, "ci_low": lo, "ci_high": hi, "pvalue": p,
            "pvalue_adj": p_adj, "significant": sig}


def test_institution_claims_read_each_contrast_from_both_ends():
    # rates: x 0.30, y 0.10, z 0.29 -> contrasts (a - b): x-y 0.20, x-z 0.01, y-z -0.19
    con = [_con("x", "y", 0.2, 0.1, 0.3, 0.001, 0.002, True),
           _con("x", "z", 0.01, -0.05, 0.07, 0.6, 0.6, False),
           _con("y", "z", -0.19, -0.28, -0.1, 0.001, 0.002, True)]
    rates = [{"model": "m", "prompt": "narrative", "cohort": c, "negatives": "edema",
              "criterion": "fpr", "estimate": e, "ci_low": e - 0.05, "ci_high": e + 0.05}
             for c, e in (("x", 0.3), ("y", 0.1), ("z", 0.29))]
    rows = pd.DataFrame(institution_claims(
        _res("error_structure", contrasts=con, rates=rates), None))
    # every institution is a source; each contrast appears once from each end
    assert rows.groupby("cohort")["change"].apply(list).to_dict() == {
        "x": ["at E", "institution", "institution"], "y": ["at E", "institution", "institution"],
        "z": ["at E", "institution", "institution"]}
    cells = rows[rows["change"] == "institution"].set_index(["cohort", "changed_to"])
    assert len(cells) == 2 * len(con)
    assert (rows.loc[rows["change"] == "institution", "source_table"] == "error_structure.contrasts").all()
    # from x to y: rate(y) - rate(x) = 0.1 - 0.3 = -0.2, interval -(0.3, 0.1) = (-0.3, -0.1)
    xy = cells.loc[("x", "y")]
    assert xy["verdict"] == "does not hold" and math.isclose(xy["estimate"], -0.2)
    assert (xy["ci_low"], xy["ci_high"]) == (-0.3, -0.1)
    # from y to x: rate(x) - rate(y) = +0.2, interval as reported
    yx = cells.loc[("y", "x")]
    assert math.isclose(yx["estimate"], 0.2) and (yx["ci_low"], yx["ci_high"]) == (0.1, 0.3)
    # from z to y (z was cohort_b of y - z): rate(y) - rate(z) = -0.19, as reported
    zy = cells.loc[("z", "y")]
    assert math.isclose(zy["estimate"], -0.19) and zy["verdict"] == "does not hold"
    for key in (("x", "z"), ("z", "x")):
        assert cells.loc[key]["verdict"] == "unresolved"
        assert "equality not shown" in cells.loc[key]["qualification"]
    at_e = rows[rows["change"] == "at E"].set_index("cohort")
    assert at_e.loc["z", "estimate"] == 0.29 and (at_e["source_table"] == "error_structure.rates").all()


def test_institution_claims_outside_family_and_undefined():
    con = [_con("x", "y", 0.2, 0.1, 0.3, 0.001, math.nan, None, family="descriptive"),
           _con("x", "z", math.nan, math.nan, math.nan, math.nan, math.nan, False)]
    frame = pd.DataFrame(con)
    frame["significant"] = frame["significant"].astype("boolean")  # NA outside the family
    res = {"error_structure": BlockResult("error_structure", {"contrasts": frame})}
    rows = pd.DataFrame(institution_claims(res, None)).set_index(["cohort", "changed_to"])
    # a descriptive contrast has no BH verdict: neither "does not hold" nor "unresolved"
    assert rows.loc[("x", "y"), "verdict"] == "not assessed"
    assert "outside the BH family" in rows.loc[("x", "y"), "qualification"]
    assert rows.loc[("x", "z"), "verdict"] == "not defined"


def test_agreement_claims_coverage_and_family_gap():
    cov = [{"model": "all", "prompt": "n", "cohort": "all", "criterion": "coverage[level=0.95]",
            "analysis": "primary", "stratum": "all", "direction": "all", "estimate": 0.96, "n": 50},
           {"model": "all", "prompt": "n", "cohort": "a", "criterion": "coverage[level=0.95]",
            "analysis": "primary", "stratum": "institution", "direction": "all", "estimate": 0.90,
            "n": 20},
           {"model": "all", "prompt": "n", "cohort": "all", "criterion": "coverage[level=0.95]",
            "analysis": "primary", "stratum": "direction", "direction": "present",
            "estimate": 0.5, "n": 10},  # not a claim cell
           {"model": "all", "prompt": "n", "cohort": "all", "criterion": "coverage[level=0.95]",
            "analysis": "all_evaluable", "stratum": "all", "direction": "all", "estimate": 0.1,
            "n": 80}]  # sensitivity analysis: not a claim cell
    gap = [{"model": "all", "prompt": "n", "cohort": "all", "estimator": "hdcal - beta_binomial",
            "design": "cluster(institution)", "estimate": -0.02, "ci_low": -0.03, "ci_high": -0.01},
           {"model": "all", "prompt": "n", "cohort": "a", "estimator": "hdcal - beta_binomial",
            "design": "loio", "estimate": 0.01, "ci_low": float("nan"), "ci_high": float("nan")}]
    rows = pd.DataFrame(agreement_claims(_res("agreement", coverage=cov, family_gap=gap), None))
    c = rows[rows["kind"] == "coverage"]
    assert list(c["verdict"]) == ["holds", "does not hold"]
    assert list(c["estimate"]) == [0.96, 0.90]
    g = rows[rows["kind"] == "estimator"]
    # Brier(hdcal) - Brier(bb) < 0 with an interval below 0: hdcal is better, and it holds
    assert g["claim"].iloc[0].startswith("hdcal estimates reference agreement with lower Brier")
    assert g["verdict"].tolist() == ["holds", "reversed"]
    assert g["estimate"].tolist() == [0.02, -0.01]
    assert (g["ci_low"].iloc[0], g["ci_high"].iloc[0]) == (0.01, 0.03)
    assert set(rows["source_table"]) == {"agreement.coverage", "agreement.family_gap"}


def test_family_gap_claim_when_the_second_estimator_is_better():
    # Brier(hdcal) - Brier(bb) = +0.02 (0.005, 0.04): beta_binomial has the lower Brier
    gap = [{"model": "all", "prompt": "n", "cohort": "all", "estimator": "hdcal - beta_binomial",
            "design": "cluster(institution)", "estimate": 0.02, "ci_low": 0.005, "ci_high": 0.04},
           {"model": "all", "prompt": "n", "cohort": "a", "estimator": "hdcal - beta_binomial",
            "design": "loio", "estimate": -0.01, "ci_low": None, "ci_high": None}]
    g = pd.DataFrame(agreement_claims(_res("agreement", family_gap=gap), None))
    assert g["claim"].iloc[0] == ("beta_binomial estimates reference agreement with lower Brier "
                                  "than hdcal")
    # estimate = Brier(hdcal) - Brier(bb): positive supports the claim
    assert g["estimate"].tolist() == [0.02, -0.01]
    assert (g["ci_low"].iloc[0], g["ci_high"].iloc[0]) == (0.005, 0.04)
    assert g["verdict"].tolist() == ["holds", "reversed"]


# ------------------------------------------------------ soft-label cells of claims.py (y)
def _spec(**extra):
    return AuditSpec.model_validate({
        "name": "t", "simulate": "paper000", "primary_prompt": "p",
        "cohorts": {"A": {"role": "primary"}}, **extra})


def _diff(a, b, crit, est, lo, hi):
    return spec_row(model=f"{a} - {b}", prompt="p", cohort="A", criterion=crit,
                    design="ordinary+paired", n_resamples=100, seed=1, model_a=a, model_b=b,
                    estimate=est, ci_low=lo, ci_high=hi, qualification="")


def test_ranking_claim_soft_label_cell_oriented_as_the_claim():
    # m2 ranks above m1 (m1 - m2 = -0.04); soft m1 - m2 = +0.03 (0.01, 0.05): reversed,
    # read as better - other = m2 - m1 = -0.03 (-0.05, -0.01)
    disc = pd.DataFrame([_diff("m1", "m2", "roc_auc_difference", -0.04, -0.06, -0.02),
                         _diff("m1", "m2", "soft_roc_auc_difference", 0.03, 0.01, 0.05)])
    c = build_claims({"discrimination": BlockResult("discrimination",
                                                    {"model_differences": disc})}, _spec())
    y = c[c["change"] == "reference"].iloc[0]
    assert c["claim"].iloc[0] == "m2 ranks above m1 on AUROC"
    assert y["verdict"] == "reversed" and y["criterion"] == "soft_roc_auc"
    assert (y["estimate"], y["ci_low"], y["ci_high"]) == (-0.03, -0.05, -0.01)
    assert y["source_table"] == "discrimination.model_differences"


def test_reliability_claim_soft_label_cell_reads_its_own_prompt():
    def met(prompt, crit, est, lo, hi):
        return spec_row(model="m", prompt=prompt, cohort="A", criterion=crit, design="ordinary",
                        n_resamples=100, seed=1, estimate=est, ci_low=lo, ci_high=hi,
                        qualification="")
    metrics = pd.DataFrame([met("p", "roc_auc", 0.9, 0.85, 0.95),
                            met("q", "soft_roc_auc", 0.95, 0.93, 0.97),  # other prompt: not read
                            met("p", "soft_roc_auc", 0.82, 0.78, 0.86)])
    c = build_claims({"discrimination": BlockResult("discrimination", {"metrics": metrics})},
                     _spec(claims={"auroc_at_least": 0.8}))
    y = c[(c["kind"] == "reliability") & (c["change"] == "reference")]
    assert len(y) == 1
    # 0.78 < 0.8 <= 0.86: the interval spans the level
    assert y["verdict"].iloc[0] == "unresolved" and y["estimate"].iloc[0] == 0.82
    assert y["source_table"].iloc[0] == "discrimination.metrics"


@pytest.mark.parametrize("extra, message", [
    ({"scores": "s.csv", "cohorts": {"c": {}}, "blocks": ["label_uncertainty"]},
     "block 'label_uncertainty' needs `annotations:`"),
    ({"judgments": {"simulate": "paper002"}, "blocks": ["discrimination"]},
     "block 'discrimination' needs a score table"),
    ({"scores": "s.csv", "cohorts": {"c": {}}, "blocks": ["error_structure"]},
     "block 'error_structure' needs `judgments:`"),
    ({"judgments": {"simulate": "paper002"}, "annotations": {"path": "a.csv"}},
     "`annotations:` label the items of a score table"),
    ({"simulate": "paper000", "cohorts": {"c": {}}, "annotations": {"path": "a.csv"}},
     "a `simulate:` table has none"),
    ({"judgments": {"simulate": "paper002"}, "cohorts": {"c": {}}},
     "`cohorts:` describe"),
])
def test_spec_refuses_impossible_input_combinations(extra, message, tmp_path):
    import yaml

    from medaudit.audit.spec import load_spec
    from medaudit.exceptions import SchemaError

    p = tmp_path / "spec.yaml"
    p.write_text(yaml.safe_dump({"name": "t", **extra}), encoding="utf-8")
    with pytest.raises(SchemaError) as exc:
        load_spec(p)
    text = str(exc.value)
    assert message in text and str(p) in text
    assert "\n" not in text and "Value error" not in text  # one line, the key-less check named


def test_spec_default_blocks_follow_the_inputs():
    s = AuditSpec.model_validate({"name": "t", "judgments": {"simulate": "paper002"}})
    assert s.blocks == ["error_structure", "agreement"] and not s.has_scores
    s = AuditSpec.model_validate({"name": "t", "scores": "s.csv", "cohorts": {"c": {}},
                                  "annotations": {"path": "a.csv"}})
    assert s.has_scores and s.blocks[-1] == "label_uncertainty"
    assert "error_structure" not in s.blocks
